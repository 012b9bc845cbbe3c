//! What the evidence-verifying subcommands share (`attest tpm verify`, `attest azure verify`,
//! `attest gce verify`, `attest document verify`): the expected nonce, the trusted time, and one way of
//! reporting a verdict — text, JSON, or an EAR token — built from the engine's EAR appraisal
//! (`attest_engine::ear::Appraisal`: every check by its stable name, and the verdict's facts), so that the
//! three formats can never disagree.
//!
//! | format | accepted (exit 0) | rejected (exit 1) |
//! |---|---|---|
//! | text | `ACCEPTED: …`, the facts, every check, on stdout | `REJECTED: …` on stderr |
//! | `--json` / `--format json` | `{"accepted": true, "evidence", "checks", "claims", "time"}` | `{"accepted": false, "evidence", "error", "check", "time"}` |
//! | `--format ear --ear-key KEY` | a JWT (ES256/ES384) whose submodule is `affirming` | a JWT whose submodule is `contraindicated` |
//!
//! Usage errors (unreadable files, malformed arguments) exit with 2 before anything is verified.

use super::ear::EarKey;
use super::{Status, UsageError, input};
use attest_engine::ear::{Appraisal, VerifierId, claims};
use attest_engine::{Error, UnixTime};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The nonce the evidence must carry (exactly one of the three).
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct NonceArgs {
    /// The expected nonce (the quote's extraData), hex.
    #[arg(long, value_name = "HEX")]
    pub nonce: Option<String>,
    /// The expected nonce as text, e.g. `challenge`.
    #[arg(long, value_name = "TEXT")]
    pub nonce_text: Option<String>,
    /// Accept evidence without a nonce: it can be a replay (recorded as a waived check).
    #[arg(long)]
    pub dangerous_no_nonce: bool,
}

impl NonceArgs {
    /// The nonce bytes; `None` for `--dangerous-no-nonce`. An empty nonce is a usage error (it would mean
    /// "no nonce" without saying so).
    pub fn bytes(&self) -> Result<Option<Vec<u8>>, UsageError> {
        let n = match (&self.nonce, &self.nonce_text) {
            (Some(h), _) => {
                let h = h.trim();
                hex::decode(h.strip_prefix("0x").unwrap_or(h))
                    .map_err(|e| UsageError::new(format!("--nonce: not hex: {e}")))?
            }
            (None, Some(t)) => t.as_bytes().to_vec(),
            (None, None) => return Ok(None),
        };
        if n.is_empty() {
            return Err(UsageError::new("an empty nonce: to accept evidence without one, say --dangerous-no-nonce"));
        }
        Ok(Some(n))
    }
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// One JSON object.
    Json,
    /// An EAR token (IETF RATS EAT Attestation Results) as a JWT signed with --ear-key.
    Ear,
}

/// The trusted time and the output.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// Trusted time: RFC 3339 (2025-06-01T00:00:00Z), a date (2025-06-01) or Unix seconds. Default: the
    /// system clock now.
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// Print one JSON object (same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The EC private key (PEM; P-256 signs ES256, P-384 ES384) that signs the EAR token.
    #[arg(long, value_name = "KEY")]
    pub ear_key: Option<PathBuf>,
}

/// The resolved output settings.
#[derive(Debug)]
pub struct Output {
    /// The trusted time.
    pub time: UnixTime,
    format: Format,
    key: Option<EarKey>,
}

impl OutputArgs {
    /// Resolves the time, the format and the EAR key (usage errors before any verification).
    pub fn resolve(&self) -> Result<Output, UsageError> {
        let format = match (self.json, self.format) {
            (true, Format::Ear) => return Err(UsageError::new("--json and --format ear exclude each other")),
            (true, _) => Format::Json,
            (false, f) => f,
        };
        let key = match (format, &self.ear_key) {
            (Format::Ear, Some(path)) => Some(EarKey::from_pem_file(path)?),
            (Format::Ear, None) => return Err(UsageError::new("--format ear needs --ear-key")),
            (_, Some(_)) => return Err(UsageError::new("--ear-key goes with --format ear")),
            (_, None) => None,
        };
        Ok(Output { time: input::trusted_time(self.at.as_deref())?, format, key })
    }
}

/// What was verified: a one-line description and extra facts for people and JSON.
#[derive(Debug, Default)]
pub struct Subject {
    /// E.g. "TPM quote", "Azure SNP vTPM evidence (trustee v1)".
    pub what: String,
    /// Facts beyond the appraisal's claims (input format, warnings).
    pub facts: Map<String, Value>,
}

impl Output {
    /// Reports `result` (the appraisal of an accepted verification, or the error of a rejected one under the
    /// EAR submodule `submod`) for evidence carrying `nonce`.
    pub fn report(
        &self,
        subject: &Subject,
        submod: &str,
        result: Result<Appraisal, Error>,
        nonce: Option<&[u8]>,
    ) -> Result<Status, UsageError> {
        let (status, appraisal, error) = match result {
            Ok(a) => (Status::Accepted, a, None),
            Err(e) => (Status::Rejected, Appraisal::failed(submod, &e), Some(e)),
        };
        match self.format {
            Format::Ear => {
                let key = self.key.as_ref().ok_or_else(|| UsageError::new("--format ear needs --ear-key"))?;
                let verifier = VerifierId { developer: "attest", build: concat!("attest ", env!("CARGO_PKG_VERSION")) };
                let claims = claims(std::slice::from_ref(&appraisal), &verifier, self.time, nonce, None);
                out(&format!("{}\n", key.sign(&claims)?));
                if let Some(e) = &error {
                    eprintln!("REJECTED: {e}");
                }
            }
            Format::Json => {
                let mut m = Map::new();
                m.insert("accepted".into(), json!(error.is_none()));
                m.insert("evidence".into(), json!(subject.what));
                if let Some(e) = &error {
                    m.insert("error".into(), json!(e.to_string()));
                    m.insert("check".into(), e.check().map_or(Value::Null, |c| json!(c.name())));
                } else {
                    m.insert("status".into(), json!(appraisal.vector.status()));
                    let checks: Map<String, Value> =
                        appraisal.checks.iter().map(|(n, o)| ((*n).to_owned(), json!(outcome(*o)))).collect();
                    m.insert("checks".into(), Value::Object(checks));
                    m.insert("claims".into(), Value::Object(appraisal.claims.clone()));
                }
                m.extend(subject.facts.clone());
                m.insert("time".into(), json!(self.time.to_string()));
                out(&format!("{}\n", serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default()));
            }
            Format::Text => {
                if let Some(e) = &error {
                    eprintln!("REJECTED: {}: {e}", subject.what);
                    if let Some(c) = e.check() {
                        eprintln!("  failed policy check: {}", c.name());
                    }
                } else {
                    let mut s = format!("ACCEPTED: {} verified\n", subject.what);
                    let _ = writeln!(s, "  {:<25} {}", "EAR status", appraisal.vector.status());
                    for (k, v) in subject.facts.iter().chain(appraisal.claims.iter()) {
                        super::snp::print_value(&mut s, k, v, 2);
                    }
                    let _ = writeln!(s, "  {:<25} {}", "trusted time", self.time);
                    s.push_str("checks:\n");
                    for (n, o) in &appraisal.checks {
                        let _ = writeln!(s, "  {n:<25} {}", outcome(*o));
                    }
                    out(&s);
                }
            }
        }
        Ok(status)
    }
}

fn outcome(o: attest_engine::Outcome) -> &'static str {
    match o {
        attest_engine::Outcome::Passed => "passed",
        attest_engine::Outcome::Waived => "waived",
        attest_engine::Outcome::NotRun => "not run",
    }
}

/// Writes to stdout, ignoring errors (a closed pipe must not panic).
fn out(s: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(s.as_bytes()).and_then(|()| stdout.flush());
}
