//! `attest gce verify`: a GCE Shielded VM / Confidential VM attestation as go-tpm-tools produces it (the
//! `Attestation` protobuf): the AK certificate → Google's pinned EK/AK CA roots, the certificate's key = the
//! AK, every quote (signature, nonce, PCR digest), the event log replayed, Google's instance extension, and
//! the GCE policy (production VM by default; SHA-1 banks' values unused unless allowed).
//!
//! The nonce is the one the attester was asked to quote with (go-tpm-tools puts it in extraData as is);
//! evidence made without one verifies only with `--dangerous-no-nonce` (recorded as waived).

use super::evidence::{NonceArgs, OutputArgs, Rejection, Subject};
use super::{Status, UsageError, input};
use attest_engine::ear::{Appraisal, CheckOutcome};
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerdict, GceVerifier};
use serde_json::json;
use std::path::PathBuf;

/// `attest gce` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum GceCommand {
    /// Verify a go-tpm-tools Attestation (GCE Shielded VM / Confidential VM vTPM).
    Verify(VerifyArgs),
}

/// Arguments of `attest gce verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The encoded go-tpm-tools `Attestation` (protobuf).
    pub attestation: PathBuf,
    /// GCE policy, TOML or JSON (commented example: examples/policies/gce.toml; `allow_sha1`, `require_event_log`, `require_production`,
    /// `allowed_projects`, `allowed_technologies`). Default: production VM, event log required.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The expected nonce.
    #[command(flatten)]
    pub nonce: NonceArgs,
    /// Time and output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs an `attest gce` subcommand.
pub fn run(cmd: GceCommand) -> Result<Status, UsageError> {
    match cmd {
        GceCommand::Verify(a) => verify(&a),
    }
}

fn policy(path: Option<&std::path::Path>) -> Result<GcePolicy, UsageError> {
    let Some(path) = path else { return Ok(GcePolicy::default()) };
    let bad = |e: String| UsageError::new(format!("--policy {}: {e}", path.display()));
    let text = String::from_utf8(input::read_file(path, "--policy")?).map_err(|_| bad("not UTF-8".into()))?;
    if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).map_err(|e| bad(e.to_string()))
    } else {
        toml::from_str(&text).map_err(|e| bad(e.to_string().trim().to_owned()))
    }
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    let output = a.output.resolve()?;
    let nonce = a.nonce.bytes()?;
    let policy = policy(a.policy.as_deref())?;
    let bytes = input::read_file(&a.attestation, "ATTESTATION")?;
    let mut subject = Subject::new(
        "gce",
        "gcp-shielded-vm",
        "GCE vTPM attestation (go-tpm-tools)",
        format!("ATTESTATION {}", a.attestation.display()),
    );
    subject.structure_check = "attestation_structure";
    subject.policy_example = Some("examples/policies/gce.toml");
    if nonce.is_none() {
        subject.facts.insert("nonce".into(), json!("none (DANGEROUS: the attestation can be a replay)"));
    }
    let expected = match &nonce {
        Some(n) => ExpectedNonce::Exactly(n),
        None => ExpectedNonce::DangerousNone,
    };
    // A protobuf that does not decode is malformed input (exit 2).
    let mut verdict = GceVerdict::default();
    let result = attest_proto::gce::decode(&bytes).and_then(|att| {
        let ev = attest_proto::gce::evidence(&att)?;
        let req = GceRequest { nonce: expected, time: output.time };
        GceVerifier::new().verify_recording(&ev, &req, &policy, &mut verdict).map(|v| Appraisal::from_gce(&v))
    });
    let result = result.map_err(|error| Rejection {
        error,
        checks: verdict.iter().map(|(c, o)| (c.name(), CheckOutcome::from(o))).collect(),
    });
    output.report(&subject, result, nonce.as_deref())
}
