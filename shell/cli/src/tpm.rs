//! `attest tpm verify`: a TPM 2.0 quote checked under an attestation key the user supplies — the signature
//! over TPMS_ATTEST as received, extraData against the expected nonce, pcrDigest against the presented PCR
//! values (SHA-1 banks refused).
//!
//! **What this does not prove:** that the AK belongs to a TPM, or to which machine. The key is the user's
//! statement (the verdict says so: EAR `instance-identity` makes no claim); use the variant commands
//! (`attest azure verify`, `attest gce verify`, `attest document verify`) where the AK is certified.
//!
//! Inputs (detected by structure, never guessed):
//!
//! | argument | accepted forms |
//! |---|---|
//! | `--evidence` | trustee's TPM evidence JSON (`{ak_public, tpm_quote: {message, signature, pcrs}}`): AK and quote in one |
//! | `--ak` | PEM / DER SubjectPublicKeyInfo, TPM2B_PUBLIC, TPMT_PUBLIC |
//! | `--ak-from-hcl` | an Azure HCL report (SNP or TDX): its runtime data's `HCLAkPub` (the HCL report itself is **not** verified here) |
//! | `--quote` | az-cvm-vtpm's bincode quote (signature, TPMS_ATTEST, SHA-256 PCRs), trustee's hex JSON `{signature, message, pcrs}`, or a raw TPMS_ATTEST (then `--signature` and `--pcrs`) |
//! | `--signature` | TPMT_SIGNATURE, or a bare RSASSA-PKCS1-v1_5/SHA-256 signature |
//! | `--pcrs` | JSON array of hex values (PCR 0 first) or object `{"index": hex}`, or raw concatenated 32-byte values |

use super::evidence::{NonceArgs, OutputArgs, Rejection, Subject};
use super::input::read_file;
use super::{Status, UsageError};
use attest_engine::azure::{HclReport, RuntimeData};
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::ear::Appraisal;
use attest_engine::formats::tpm::{AkKey, AzureQuoteBin, HexQuote, TpmQuoteParts, TrusteeTpmEvidence};
use attest_engine::tpm::{AkPublic, QuoteRequest, SigScheme, TpmSignature, verify_quote};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `attest tpm` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TpmCommand {
    /// Verify a TPM quote under a given attestation key (signature, nonce, PCR digest).
    Verify(VerifyArgs),
}

/// Arguments of `attest tpm verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// trustee's TPM evidence JSON (AK and quote together).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ak", "ak_from_hcl", "quote"])]
    pub evidence: Option<PathBuf>,
    /// The attestation key: PEM/DER SubjectPublicKeyInfo, TPM2B_PUBLIC or TPMT_PUBLIC.
    #[arg(long, value_name = "FILE", conflicts_with = "ak_from_hcl")]
    pub ak: Option<PathBuf>,
    /// Take the AK from an Azure HCL report's runtime data (the HCL report is not verified here).
    #[arg(long, value_name = "FILE")]
    pub ak_from_hcl: Option<PathBuf>,
    /// The quote and, for a raw TPMS_ATTEST, its signature and PCRs.
    #[command(flatten)]
    pub quote: QuoteFiles,
    /// The expected nonce.
    #[command(flatten)]
    pub nonce: NonceArgs,
    /// Time and output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A quote given as files (`attest tpm verify`, `attest azure verify`).
#[derive(Debug, clap::Args)]
pub struct QuoteFiles {
    /// The quote: az-cvm-vtpm bincode, trustee hex JSON, or a raw TPMS_ATTEST with --signature and --pcrs.
    #[arg(long, value_name = "FILE")]
    pub quote: Option<PathBuf>,
    /// The signature of a raw TPMS_ATTEST quote.
    #[arg(long, value_name = "FILE")]
    pub signature: Option<PathBuf>,
    /// The PCR values of a raw TPMS_ATTEST quote (SHA-256 bank).
    #[arg(long, value_name = "FILE")]
    pub pcrs: Option<PathBuf>,
}

impl QuoteFiles {
    /// Reads the quote at `quote` (this struct's `--quote`, once the caller has required it) with the
    /// `--signature` and `--pcrs` given ([`read_quote`]).
    pub(crate) fn read(&self, quote: &Path) -> Result<Parsed<(TpmQuoteParts, &'static str)>, UsageError> {
        read_quote(quote, self.signature.as_deref(), self.pcrs.as_deref())
    }
}

/// Runs an `attest tpm` subcommand.
pub fn run(cmd: TpmCommand) -> Result<Status, UsageError> {
    match cmd {
        TpmCommand::Verify(a) => verify(&a),
    }
}

/// Where the AK comes from.
enum Ak {
    Key(AkKey),
    Hcl(Box<RuntimeData>),
}

impl Ak {
    fn public(&self) -> Result<(AkPublic<'_>, Option<SigScheme>), attest_engine::Error> {
        match self {
            Self::Key(k) => Ok((k.public()?, k.scheme()?)),
            Self::Hcl(r) => Ok((r.ak().ak_public(), None)),
        }
    }
}

fn bad(path: &Path, what: &str, e: impl std::fmt::Display) -> UsageError {
    UsageError::new(format!("{what} {}: {e}", path.display()))
}

/// Evidence read from a file the user gave: its parsed form, or the engine's reason it is not that
/// structure (reported as a malformed result, exit 2, in every output format, as the C library reports it).
pub(crate) type Parsed<T> = Result<T, attest_engine::Error>;

/// The subject of `attest tpm verify` for a quote of form `what` from `input`.
fn quote_subject(what: &str, input: String) -> Subject {
    let mut subject = Subject::new("tpm", "tpm-quote", format!("TPM quote ({what})"), input);
    subject.structure_check = "quote_structure";
    subject
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    let output = a.output.resolve()?;
    let nonce = a.nonce.bytes()?;
    let (ak, parts, what, input) = if let Some(path) = &a.evidence {
        let input = format!("--evidence {}", path.display());
        let ev = match TrusteeTpmEvidence::from_json(&read_file(path, "--evidence")?) {
            Ok(ev) => ev,
            Err(e) => {
                let subject = quote_subject("trustee TPM evidence", input);
                return output.report(&subject, Err(e.into()), nonce.as_deref());
            }
        };
        (Ak::Key(ev.ak), ev.quote, "trustee TPM evidence", input)
    } else {
        let ak = match (&a.ak, &a.ak_from_hcl) {
            (Some(p), _) => Ak::Key(AkKey::parse(&read_file(p, "--ak")?).map_err(|e| bad(p, "--ak", e))?),
            (None, Some(p)) => Ak::Hcl(Box::new(ak_from_hcl(p)?)),
            (None, None) => return Err(UsageError::new("give --evidence, or --ak (or --ak-from-hcl) and --quote")),
        };
        let quote = a.quote.quote.as_deref().ok_or_else(|| UsageError::new("--quote is required with --ak"))?;
        let input = format!("--quote {}", quote.display());
        let (parts, what) = match a.quote.read(quote)? {
            Ok(read) => read,
            Err(e) => {
                return output.report(&quote_subject("unrecognized form", input), Err(e.into()), nonce.as_deref());
            }
        };
        (ak, parts, what, input)
    };
    let mut subject = quote_subject(what, input);
    subject.facts.insert(
        "ak".into(),
        json!(match &ak {
            Ak::Key(_) => "as given (--ak): NOT certified here",
            Ak::Hcl(_) => "HCLAkPub of the HCL report's runtime data (the HCL report is NOT verified here)",
        }),
    );
    if nonce.is_none() {
        subject.facts.insert("nonce".into(), json!("none (DANGEROUS: the quote can be a replay)"));
    }
    let pcrs = parts.pcr_values().map_err(|e| UsageError::new(format!("PCR values: {e}")))?;
    let result = ak.public().and_then(|(key, scheme)| {
        let req = QuoteRequest {
            attest: &parts.attest,
            signature: parts.signature(),
            ak: key,
            ak_scheme: scheme,
            pcrs: &pcrs,
            nonce: nonce.as_deref().unwrap_or_default(),
            allow_sha1: false,
        };
        verify_quote(default_provider(), &req).map(|q| Appraisal::from_quote(&q, false, nonce.is_some()))
    });
    output.report(&subject, result.map_err(Rejection::from), nonce.as_deref())
}

/// The AK in an HCL report's runtime data.
fn ak_from_hcl(path: &Path) -> Result<RuntimeData, UsageError> {
    let bytes = read_file(path, "--ak-from-hcl")?;
    let hcl = HclReport::parse(&bytes).map_err(|e| bad(path, "--ak-from-hcl", e))?;
    RuntimeData::parse(hcl.variable_data()).map_err(|e| bad(path, "--ak-from-hcl", e))
}

/// Reads a quote in any of the forms of the module docs; returns the parts and the form's name.
fn read_quote(
    path: &Path,
    signature: Option<&Path>,
    pcrs: Option<&Path>,
) -> Result<Parsed<(TpmQuoteParts, &'static str)>, UsageError> {
    let bytes = read_file(path, "--quote")?;
    let raw_attest = bytes.starts_with(&attest_engine::tpm::attest::TPM_GENERATED_VALUE.to_be_bytes());
    if !raw_attest && (signature.is_some() || pcrs.is_some()) {
        return Err(UsageError::new("--signature and --pcrs go with a raw TPMS_ATTEST --quote"));
    }
    if raw_attest {
        let (Some(sig_path), Some(pcr_path)) = (signature, pcrs) else {
            return Err(UsageError::new("a raw TPMS_ATTEST --quote needs --signature and --pcrs"));
        };
        let sig = read_file(sig_path, "--signature")?;
        let values = read_pcrs(pcr_path)?;
        let tpmt = TpmSignature::parse(&sig).is_ok();
        let form = if tpmt { "TPMS_ATTEST + TPMT_SIGNATURE" } else { "TPMS_ATTEST + RSA signature" };
        return Ok(TpmQuoteParts::new(bytes, sig, HashAlgorithm::Sha256, values).map(|mut parts| {
            if !tpmt {
                parts.raw_rsa = Some(SigScheme::RsaSsa(HashAlgorithm::Sha256));
            }
            (parts, form)
        }));
    }
    if bytes.trim_ascii_start().starts_with(b"{") {
        return Ok(HexQuote::from_json(&bytes).map(|p| (p, "trustee hex JSON")));
    }
    // Anything else is read as az-cvm-vtpm bincode, the C library's ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE.
    Ok(AzureQuoteBin::parse(&bytes).and_then(|q| q.to_parts()).map(|p| (p, "az-cvm-vtpm bincode")))
}

/// SHA-256 PCR values: a JSON array (PCR 0 first) or object, or raw concatenated 32-byte values.
fn read_pcrs(path: &Path) -> Result<Vec<Vec<u8>>, UsageError> {
    let bytes = read_file(path, "--pcrs")?;
    let err = |m: &str| bad(path, "--pcrs", m);
    let text = bytes.trim_ascii_start();
    if text.starts_with(b"[") || text.starts_with(b"{") {
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| err("not JSON"))?;
        let hex_of = |v: &serde_json::Value| -> Result<Vec<u8>, UsageError> {
            let s = v.as_str().ok_or_else(|| err("a value is not a hex string"))?;
            hex::decode(s.trim().trim_start_matches("0x")).map_err(|_| err("a value is not hex"))
        };
        return match v {
            serde_json::Value::Array(a) if a.len() <= 24 => a.iter().map(hex_of).collect(),
            serde_json::Value::Object(m) => {
                let mut out = vec![Vec::new(); 24];
                for (k, v) in &m {
                    let i: usize = k.parse().ok().filter(|i| *i < 24).ok_or_else(|| err("a PCR index is not 0..23"))?;
                    out[i] = hex_of(v)?;
                }
                while out.last().is_some_and(Vec::is_empty) {
                    out.pop();
                }
                Ok(out)
            }
            _ => Err(err("expected an array of at most 24 values or an object")),
        };
    }
    if bytes.is_empty() || bytes.len() % 32 != 0 || bytes.len() > 24 * 32 {
        return Err(err("raw PCR values must be 1..24 concatenated 32-byte SHA-256 values"));
    }
    Ok(bytes.chunks(32).map(<[u8]>::to_vec).collect())
}
