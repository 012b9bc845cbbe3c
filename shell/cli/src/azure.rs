//! `attest azure verify`: an Azure SEV-SNP confidential VM's vTPM evidence — SNP report (in the HCL report)
//! → VCEK → AMD's pinned ARK, SNP policy, REPORT_DATA = SHA-256(HCL runtime data), the runtime data's
//! `HCLAkPub` → the vTPM quote's signature, extraData = the nonce, pcrDigest; for trustee's v2 layout also
//! the runtime `user-data` (`--user-data`, or the explicit waiver).
//!
//! Inputs: `--evidence` (trustee's `az-snp-vtpm` JSON, layouts v0, v1 and v2), or the raw parts
//! `--hcl-report` + `--vcek` + `--quote` (the quote in any form `attest tpm verify` reads). Azure TDX
//! evidence is refused here: its TD quote needs Intel's collateral (verify the vTPM quote with
//! `attest tpm verify --ak-from-hcl`).

use super::evidence::{NonceArgs, OutputArgs, Rejection, Subject};
use super::{Status, UsageError, input};
use attest_engine::ear::Appraisal;
use attest_engine::formats::azure::{AzureHardware, AzureVtpmEvidence, UserData, verify_azure_snp_evidence};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use serde_json::json;
use std::path::PathBuf;

/// `attest azure` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AzureCommand {
    /// Verify Azure SEV-SNP vTPM evidence (trustee JSON layouts v0/v1/v2, or the raw parts).
    Verify(VerifyArgs),
}

/// Arguments of `attest azure verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// trustee's az-snp-vtpm evidence JSON (v0, v1 or v2).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["hcl_report", "vcek", "quote"])]
    pub evidence: Option<PathBuf>,
    /// The HCL report (vTPM NV index 0x01400001).
    #[arg(long, value_name = "FILE", requires_all = ["vcek", "quote"])]
    pub hcl_report: Option<PathBuf>,
    /// The VCEK (PEM or DER; a PEM with the chain is fine: the first certificate is used).
    #[arg(long, value_name = "FILE")]
    pub vcek: Option<PathBuf>,
    /// The vTPM quote and, for a raw TPMS_ATTEST, its signature and PCRs.
    #[command(flatten)]
    pub quote: super::tpm::QuoteFiles,
    /// v2 evidence: the 64 bytes (hex) the runtime data's user-data must hold.
    #[arg(long, value_name = "HEX", conflicts_with = "dangerous_ignore_user_data")]
    pub user_data: Option<String>,
    /// v2 evidence: do not check the runtime data's user-data.
    #[arg(long)]
    pub dangerous_ignore_user_data: bool,
    /// SNP policy file, TOML or JSON (commented example: examples/policies/azure.toml). Default: the
    /// engine's strict default policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// An ARK-signed CRL (DER or PEM) to check revocation against.
    #[arg(long, value_name = "CRL")]
    pub crl: Option<PathBuf>,
    /// The expected nonce (the vTPM quote's extraData).
    #[command(flatten)]
    pub nonce: NonceArgs,
    /// Time and output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs an `attest azure` subcommand.
pub fn run(cmd: AzureCommand) -> Result<Status, UsageError> {
    match cmd {
        AzureCommand::Verify(a) => verify(&a),
    }
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    let output = a.output.resolve()?;
    let nonce = a.nonce.bytes()?;
    let (ev, what, source) = match (&a.evidence, &a.hcl_report, &a.vcek, &a.quote.quote) {
        (Some(path), ..) => {
            let source = format!("--evidence {}", path.display());
            let ev = match AzureVtpmEvidence::from_json(&input::read_file(path, "--evidence")?) {
                Ok(ev) => ev,
                // Not trustee's evidence: a malformed result (exit 2), as the C library reports it.
                Err(e) => {
                    let mut subject = Subject::new("azure", "azure-sev-snp-vtpm", "Azure SNP vTPM evidence", source);
                    subject.structure_check = "evidence_structure";
                    return output.report(&subject, Err(e.into()), nonce.as_deref());
                }
            };
            let what = format!("Azure SNP vTPM evidence (trustee v{})", ev.version);
            (ev, what, source)
        }
        (None, Some(hcl), Some(vcek), Some(quote)) => {
            let (quote, form) =
                a.quote.read(quote)?.map_err(|e| UsageError::new(format!("--quote {}: {e}", quote.display())))?;
            let vcek = input::read_certificates(vcek, "--vcek")?
                .into_iter()
                .next()
                .ok_or_else(|| UsageError::new("--vcek: no certificate"))?;
            let ev = AzureVtpmEvidence {
                version: 0,
                hardware: AzureHardware::Snp,
                hcl_report: input::read_file(hcl, "--hcl-report")?,
                vcek,
                td_quote: Vec::new(),
                quote,
            };
            (
                ev,
                format!("Azure SNP vTPM evidence (HCL report + VCEK + {form} quote)"),
                format!("--hcl-report {}", hcl.display()),
            )
        }
        _ => return Err(UsageError::new("give --evidence, or --hcl-report, --vcek and --quote")),
    };
    if ev.hardware != AzureHardware::Snp {
        return Err(UsageError::new(
            "Azure TDX evidence: the TD quote needs Intel's collateral; verify the vTPM quote with \
             `attest tpm verify --ak-from-hcl`",
        ));
    }
    let user_data = match (&a.user_data, a.dangerous_ignore_user_data) {
        (Some(h), _) => Some(input::parse_report_data(h).map_err(|e| UsageError::new(format!("--user-data: {e}")))?),
        (None, _) => None,
    };
    if ev.version >= 2 && user_data.is_none() && !a.dangerous_ignore_user_data {
        return Err(UsageError::new(format!(
            "{source}: v{} evidence binds its REPORT_DATA in the runtime user-data: give --user-data HEX (the 64 \
             bytes the attester was asked to bind), or --dangerous-ignore-user-data to skip that check",
            ev.version
        )));
    }
    let want = match (&user_data, a.dangerous_ignore_user_data) {
        (Some(u), _) => UserData::Exactly(u),
        (None, true) => UserData::DangerousIgnore,
        (None, false) => UserData::NotRequired,
    };
    let policy = match &a.policy {
        None => SnpPolicy::default(),
        Some(p) => {
            let text = String::from_utf8(input::read_file(p, "--policy")?)
                .map_err(|_| UsageError::new(format!("--policy {}: not UTF-8", p.display())))?;
            SnpPolicy::from_text(&text).map_err(|e| UsageError::new(format!("--policy {}: {e}", p.display())))?
        }
    };
    let verifier = SnpVerifier::new();
    if let Some(crl) = &a.crl {
        verifier
            .set_crl(&input::read_crl(crl)?)
            .map_err(|e| UsageError::new(format!("--crl {}: cannot install: {e}", crl.display())))?;
    }
    let mut subject = Subject::new("azure", "azure-sev-snp-vtpm", what, source);
    subject.structure_check = "evidence_structure";
    subject.policy_example = Some("examples/policies/azure.toml");
    if matches!(want, UserData::DangerousIgnore) {
        subject.facts.insert("user-data".into(), json!("not checked (DANGEROUS waiver)"));
    }
    let pcrs = ev.quote.pcr_values().map_err(|e| UsageError::new(format!("PCR values: {e}")))?;
    let result = verify_azure_snp_evidence(
        &verifier,
        &ev,
        &pcrs,
        nonce.as_deref().unwrap_or_default(),
        want,
        output.time,
        &policy,
    )
    .map(|ok| Appraisal::from_azure_snp(&ok, nonce.is_some()));
    output.report(&subject, result.map_err(Rejection::from), nonce.as_deref())
}
