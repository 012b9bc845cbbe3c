//! What the evidence-verifying subcommands share (`attest snp verify`, `attest tdx verify`, `attest tpm
//! verify`, `attest azure verify`, `attest gce verify`, `attest document verify`): the expected nonce, the
//! trusted time, and one way of reporting a verdict — text, JSON, or an EAR token — built from the engine's
//! appraisal (`attest_engine::ear::Appraisal`: every check by its stable name, the verdict's facts, and for
//! a rejection the failed check, its class and the policy key that governs it), so that the three formats
//! can never disagree.
//!
//! | format | accepted (exit 0) | refused (exit 1) / malformed (exit 2) |
//! |---|---|---|
//! | text | `ACCEPTED: …`, the facts, every check, on stdout | `REJECTED: …` / `MALFORMED: …` on stderr: the input, the reason, the failed check, the policy key |
//! | `--json` / `--format json` | one result object (schema `attest-result/1`, `schemas/result-v1.schema.json`) on stdout | the same schema, `accepted: false`, `checks` and `failure` |
//! | `--format ear --ear-key KEY` | a JWT (ES256/ES384), `ear.status` `affirming` or `warning` | a JWT whose submodule is `contraindicated` (and the reason on stderr) |
//!
//! Exit statuses: `crate::exit` (printed by `attest --help`). Usage errors (unreadable files, malformed arguments) exit with 2 before
//! anything is verified.

use super::ear::EarKey;
use super::{Status, UsageError, input};
use attest_engine::Error;
use attest_engine::UnixTime;
use attest_engine::ear::{Appraisal, CheckOutcome, Issue, VerifierId, claims};
use attest_engine::error::ErrorClass;
use serde_json::{Map, Value};
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
    /// One result object (schema `attest-result/1`).
    Json,
    /// An EAR token (IETF RATS EAT Attestation Results) as a JWT signed with --ear-key.
    Ear,
}

/// The output format flags.
#[derive(Debug, clap::Args)]
pub struct FormatArgs {
    /// Print one JSON result object (same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Output format (default: text).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// The EC private key (PEM; P-256 signs ES256, P-384 ES384) that signs the EAR token.
    #[arg(long, value_name = "KEY")]
    pub ear_key: Option<PathBuf>,
}

/// The trusted time and the output.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// Trusted time: RFC 3339 (2025-06-01T00:00:00Z), a date (2025-06-01) or Unix seconds. Default: the
    /// system clock now.
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// The output format.
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The resolved output settings.
#[derive(Debug)]
pub struct Output {
    /// The trusted time.
    pub time: UnixTime,
    format: Format,
    key: Option<EarKey>,
}

impl FormatArgs {
    /// Resolves the format and the EAR key for evidence judged at `time` (usage errors before any
    /// verification).
    pub fn resolve(&self, time: UnixTime) -> Result<Output, UsageError> {
        let format = match (self.json, self.format) {
            (true, Some(Format::Json) | None) => Format::Json,
            (true, Some(f)) => {
                return Err(UsageError::new(format!(
                    "--json and --format {} exclude each other (--json is --format json)",
                    if f == Format::Ear { "ear" } else { "text" }
                )));
            }
            (false, f) => f.unwrap_or(Format::Text),
        };
        let key = match (format, &self.ear_key) {
            (Format::Ear, Some(path)) => Some(EarKey::from_pem_file(path)?),
            (Format::Ear, None) => {
                return Err(UsageError::new(
                    "--format ear needs --ear-key KEY (an EC P-256 or P-384 private key, PEM)",
                ));
            }
            (_, Some(_)) => return Err(UsageError::new("--ear-key goes with --format ear")),
            (_, None) => None,
        };
        Ok(Output { time, format, key })
    }

    /// Whether the output is one JSON object.
    pub fn is_json(&self) -> bool {
        self.json || self.format == Some(Format::Json)
    }
}

impl OutputArgs {
    /// Resolves the time, the format and the EAR key (usage errors before any verification).
    pub fn resolve(&self) -> Result<Output, UsageError> {
        self.format.resolve(input::trusted_time(self.at.as_deref())?)
    }
}

/// What was verified.
#[derive(Debug)]
pub struct Subject {
    /// The verifier (`snp`, `tdx`, `tpm`, `azure`, `gce`, `document`): the result object's `verifier`.
    pub verifier: &'static str,
    /// The EAR submodule (`sev-snp`, `tdx`, `tpm-quote`, …, or a variant name).
    pub submod: String,
    /// E.g. "TPM quote", "Azure SNP vTPM evidence (trustee v1)".
    pub what: String,
    /// Where it came from, as the user named it: `REPORT report.bin`, `--evidence ev.json`.
    pub input: String,
    /// The check that malformed input fails (`report_structure`, `quote_structure`, …).
    pub structure_check: &'static str,
    /// The commented example policy for this evidence (`examples/policies/snp.toml`), when it has a policy.
    pub policy_example: Option<&'static str>,
    /// Facts about the input (its format, warnings): the result object's `input`.
    pub facts: Map<String, Value>,
}

impl Subject {
    /// A subject with no facts yet.
    pub fn new(verifier: &'static str, submod: &str, what: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            verifier,
            submod: submod.to_owned(),
            what: what.into(),
            input: input.into(),
            structure_check: "evidence_structure",
            policy_example: None,
            facts: Map::new(),
        }
    }
}

/// The fact (`input.format_error`) naming why the CLI recognized none of an input's forms; the engine's
/// verdict on the bytes as given is then the result, and a text rejection prints this reason too.
pub const FORMAT_ERROR: &str = "format_error";

/// A refused verification: the error and the checks the verifier recorded before it stopped.
#[derive(Debug)]
pub struct Rejection {
    /// Why.
    pub error: Error,
    /// The checks that ran (empty when the verifier records none).
    pub checks: Vec<(&'static str, CheckOutcome)>,
}

impl From<Error> for Rejection {
    fn from(error: Error) -> Self {
        Self { error, checks: Vec::new() }
    }
}

/// The `ear.verifier-id` build: name, version and commit.
pub fn build_id() -> &'static str {
    concat!("attest ", env!("CARGO_PKG_VERSION"), " (commit ", env!("ATTEST_GIT_COMMIT"), ")")
}

impl Output {
    /// Reports `result` for evidence carrying `nonce`; the exit status: 0 accepted, 1 refused, 2 malformed
    /// (`crate::exit`).
    pub fn report(
        &self,
        subject: &Subject,
        result: Result<Appraisal, Rejection>,
        nonce: Option<&[u8]>,
    ) -> Result<Status, UsageError> {
        let (status, mut appraisal) = match result {
            Ok(a) => (Status::Accepted, a),
            Err(r) => (
                super::exit::status_of(&r.error),
                Appraisal::failed(&subject.submod, &r.error, subject.structure_check, r.checks),
            ),
        };
        appraisal.submod.clone_from(&subject.submod);
        match self.format {
            Format::Ear => {
                let key = self.key.as_ref().ok_or_else(|| UsageError::new("--format ear needs --ear-key"))?;
                let issue = Issue {
                    verifier: VerifierId { developer: "attest", build: build_id() },
                    issued_at: now(),
                    trusted_time: self.time,
                    nonce,
                    policy_id: None,
                };
                let claims = claims(std::slice::from_ref(&appraisal), &issue);
                out(&format!("{}\n", key.sign(&claims)?));
                if appraisal.failure.is_some() {
                    eprint!("{}", rejection_text(subject, &appraisal));
                }
            }
            Format::Json => {
                let v = appraisal.result_json(subject.verifier, &subject.what, &subject.facts, self.time);
                out(&format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()));
            }
            Format::Text if appraisal.failure.is_some() => eprint!("{}", rejection_text(subject, &appraisal)),
            Format::Text => {
                let mut s = format!("ACCEPTED: {} verified ({})\n", subject.what, subject.input);
                let _ = writeln!(s, "  {:<25} {}", "EAR status", appraisal.status());
                for (k, v) in subject.facts.iter().chain(appraisal.claims.iter()) {
                    print_value(&mut s, k, v, 2);
                }
                let _ = writeln!(s, "  {:<25} {}", "trusted time", self.time);
                s.push_str("checks:\n");
                for (n, o) in &appraisal.checks {
                    let _ = writeln!(s, "  {n:<25} {}", o.name());
                }
                out(&s);
            }
        }
        Ok(status)
    }
}

/// The text of a rejection: the input, the reason, the failed check and the policy key that governs it.
fn rejection_text(subject: &Subject, appraisal: &Appraisal) -> String {
    let Some(f) = &appraisal.failure else { return String::new() };
    let head = if f.class == ErrorClass::Refused { "REJECTED" } else { "MALFORMED" };
    let mut s = format!("{head}: {} {}: {}\n", subject.what, subject.input, f.reason);
    if let Some(Value::String(e)) = subject.facts.get(FORMAT_ERROR) {
        let _ = writeln!(s, "  input:        {e}");
    }
    let _ = writeln!(s, "  failed check: {}", f.check);
    if let Some(key) = f.policy_key {
        let _ =
            write!(s, "  policy key:   {key} — set it in the file given to --policy to accept such evidence knowingly");
        match subject.policy_example {
            Some(example) => {
                let _ = writeln!(s, " (commented example: {example})");
            }
            None => s.push('\n'),
        }
    }
    s
}

/// The issuer's clock (EAR `iat`); the Unix epoch if the clock is before it.
fn now() -> UnixTime {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UnixTime::from_secs(secs)
}

/// Prints `k: val` for people, objects as indented blocks (a decoded TCB as its one-line text).
pub(crate) fn print_value(s: &mut String, k: &str, val: &Value, indent: usize) {
    let w = 27usize.saturating_sub(indent);
    match val {
        Value::Object(m) => {
            let _ = writeln!(s, "{:indent$}{k}:", "");
            for (k2, v2) in m {
                // A decoded TCB is also shown as one line ("text"); skip the nested object in text mode.
                if k2 == "decoded" && m.contains_key("text") {
                    continue;
                }
                print_value(s, k2, v2, indent + 2);
            }
        }
        Value::Null => {
            let _ = writeln!(s, "{:indent$}{k:<w$} -", "");
        }
        Value::String(v) => {
            let _ = writeln!(s, "{:indent$}{k:<w$} {v}", "");
        }
        other => {
            let _ = writeln!(s, "{:indent$}{k:<w$} {other}", "");
        }
    }
}

/// Writes to stdout, ignoring errors (a closed pipe must not panic).
fn out(s: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(s.as_bytes()).and_then(|()| stdout.flush());
}
