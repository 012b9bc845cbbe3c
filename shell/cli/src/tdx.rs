//! `attest tdx …`: verify Intel TDX quotes (DCAP v4/v5) against Intel's collateral (`verify`), and print a
//! quote's fields with a signatures-only check that is **not** a verdict (`show`).
//!
//! ```text
//! attest tdx verify QUOTE --collateral FILE [--policy FILE] [--at TIME] [--report-data HEX] [--event-log FILE]
//!                        [--json | --format text|json|ear [--ear-key KEY]]
//! attest tdx show QUOTE [--at TIME] [--json]
//! ```
//!
//! `--collateral` is the JSON bundle several verifiers share (`pck_crl_issuer_chain`, `root_ca_crl`,
//! `pck_crl`, `tcb_info_issuer_chain`, `tcb_info`, `tcb_info_signature`, `qe_identity_issuer_chain`,
//! `qe_identity`, `qe_identity_signature`), as `attest pcs fetch --bundle` writes it. A quote is read as
//! binary, or as hex or base64 text of it. Exit status: 0 accepted, 1 rejected (the quote, its collateral or
//! the policy said no — a collateral whose signatures do not verify is a rejection too, as is an event log
//! that replays to other RTMRs), 2 malformed input or usage (bytes that are not a TD quote — truncated,
//! oversized, inconsistent lengths —, unreadable files, a collateral file that is not a bundle, an event log
//! that does not parse, a malformed policy or argument).
//!
//! `verify` reports through [`super::evidence`]: text, one result object (`--json`, schema
//! `attest-result/1`) or an EAR token (`--format ear`), rejections included. `input.micros` times the
//! engine call only.

use super::evidence::{OutputArgs, Rejection, Subject};
use super::input;
use super::snp::{micros, out, print_json};
use super::{Status, UsageError};
use attest_engine::ear::{Appraisal, CheckOutcome};
use attest_engine::tdx::{Collateral, SgxExtensions, TdQuote, TdxCheck, TdxPolicy, TdxRequest, TdxVerifier, Trailing};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `attest tdx` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TdxCommand {
    /// Verify a TD quote: PCK chain to Intel's pinned root, QE report, signatures, collateral, TCB, policy.
    Verify(VerifyArgs),
    /// Print every field of a quote and check its signatures only — NOT a verdict.
    Show(ShowArgs),
}

/// Arguments of `attest tdx verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The quote: binary, or hex or base64 text of it.
    pub quote: PathBuf,
    /// The collateral: the shared JSON bundle (as `attest pcs fetch --bundle` writes it).
    #[arg(long, value_name = "FILE")]
    pub collateral: PathBuf,
    /// Policy file, TOML or JSON (commented example: examples/policies/tdx.toml). Default: the engine's
    /// strict default TDX policy (UpToDate only, no advisories, no debug TDs, CRLs required).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The expected REPORTDATA: exactly 64 bytes as 128 hex digits.
    #[arg(long, value_name = "HEX")]
    pub report_data: Option<String>,
    /// A CC event log (the CCEL log area, or its written part) to replay against the quote's RTMRs: a log
    /// that does not parse is a usage error (exit 2), one that replays to other RTMRs a rejection (exit 1).
    #[arg(long, value_name = "FILE")]
    pub event_log: Option<PathBuf>,
    /// The trusted time and the output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `attest tdx show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The quote (same formats as `attest tdx verify`).
    pub quote: PathBuf,
    /// The time for the signatures-only check of the PCK chain (default: now).
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs an `attest tdx` subcommand.
pub fn run(cmd: TdxCommand) -> Result<Status, UsageError> {
    match cmd {
        TdxCommand::Verify(a) => verify(&a),
        TdxCommand::Show(a) => show(&a),
    }
}

/// Reads a quote: binary when it starts like one (version 4 or 5, little-endian), else hex or base64 text of
/// it; anything else is handed to the engine as it is (which then says why it is no quote).
pub fn read_quote(path: &Path) -> Result<Vec<u8>, UsageError> {
    let bytes = input::read_file(path, "QUOTE")?;
    if matches!(bytes.get(..2), Some([4 | 5, 0])) {
        return Ok(bytes);
    }
    let Ok(text) = std::str::from_utf8(&bytes) else { return Ok(bytes) };
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let decoded = hex::decode(&compact)
        .ok()
        .or_else(|| base64::engine::general_purpose::STANDARD.decode(&compact).ok())
        .filter(|d| matches!(d.get(..2), Some([4 | 5, 0])));
    Ok(decoded.unwrap_or(bytes))
}

fn read_collateral(path: &Path) -> Result<Collateral, UsageError> {
    let bytes = input::read_file(path, "--collateral")?;
    Collateral::from_bundle_json(&bytes).map_err(|e| UsageError(format!("--collateral {}: {e}", path.display())))
}

fn load_policy(path: Option<&Path>) -> Result<TdxPolicy, UsageError> {
    let Some(path) = path else { return Ok(TdxPolicy::default()) };
    let bytes = input::read_file(path, "--policy")?;
    let text =
        String::from_utf8(bytes).map_err(|_| UsageError(format!("--policy {}: not UTF-8 text", path.display())))?;
    TdxPolicy::from_text(&text).map_err(|e| UsageError(format!("--policy {}: {e}", path.display())))
}

fn trailing_json(t: Trailing) -> Value {
    match t {
        Trailing::None => json!({"kind": "none", "bytes": 0}),
        Trailing::ZeroPadding(n) => json!({"kind": "zero-padding", "bytes": n}),
        Trailing::Other(n) => json!({"kind": "other", "bytes": n}),
    }
}

/// The header and TD report body of a quote.
fn quote_json(q: &TdQuote<'_>) -> Map<String, Value> {
    let h = q.header();
    let b = q.body();
    let mut m = Map::new();
    m.insert("version".into(), q.version().into());
    m.insert("body".into(), if b.tee_tcb_svn2().is_some() { "TDX 1.5" } else { "TDX 1.0" }.into());
    m.insert("qe_svn".into(), h.qe_svn().into());
    m.insert("pce_svn".into(), h.pce_svn().into());
    m.insert("qe_vendor_id".into(), hex::encode(h.qe_vendor_id()).into());
    m.insert("tee_tcb_svn".into(), hex::encode(b.tee_tcb_svn()).into());
    m.insert("mr_seam".into(), hex::encode(b.mr_seam()).into());
    m.insert("mr_signer_seam".into(), hex::encode(b.mr_signer_seam()).into());
    m.insert("seam_attributes".into(), hex::encode(b.seam_attributes()).into());
    m.insert("td_attributes".into(), hex::encode(b.td_attributes().to_le_bytes()).into());
    m.insert("debug".into(), b.is_debug().into());
    m.insert("xfam".into(), hex::encode(b.xfam().to_le_bytes()).into());
    m.insert("mr_td".into(), hex::encode(b.mr_td()).into());
    m.insert("mr_config_id".into(), hex::encode(b.mr_config_id()).into());
    m.insert("mr_owner".into(), hex::encode(b.mr_owner()).into());
    m.insert("mr_owner_config".into(), hex::encode(b.mr_owner_config()).into());
    let rtmrs: Vec<Value> = b.rtmrs().iter().map(|r| hex::encode(r).into()).collect();
    m.insert("rtmrs".into(), rtmrs.into());
    m.insert("report_data".into(), hex::encode(b.report_data()).into());
    if let (Some(svn2), Some(service)) = (b.tee_tcb_svn2(), b.mr_service_td()) {
        m.insert("tee_tcb_svn2".into(), hex::encode(svn2).into());
        m.insert("mr_service_td".into(), hex::encode(service).into());
    }
    m.insert("trailing".into(), trailing_json(q.trailing()));
    m
}

fn pck_json(p: &SgxExtensions) -> Value {
    json!({
        "fmspc": hex::encode(p.fmspc),
        "pce_id": hex::encode(p.pce_id),
        "pce_svn": p.pce_svn,
        "cpu_svn": hex::encode(p.cpu_svn),
        "tcb_components": p.tcb_components.to_vec(),
        "sgx_type": p.sgx_type,
    })
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    // Everything that can be a usage error is resolved before the engine runs.
    let quote = read_quote(&a.quote)?;
    let collateral = read_collateral(&a.collateral)?;
    let event_log = match &a.event_log {
        None => None,
        Some(path) => {
            let log = input::read_file(path, "--event-log")?;
            attest_engine::tdx::ccel::replay(attest_engine::crypto::default_provider(), &log)
                .map_err(|e| UsageError(format!("--event-log {}: not a CC event log: {e}", path.display())))?;
            Some(log)
        }
    };
    let policy = load_policy(a.policy.as_deref())?;
    let report_data = a.report_data.as_deref().map(input::parse_report_data).transpose()?;
    let output = a.output.resolve()?;
    let time = output.time;

    let mut subject = Subject::new("tdx", "tdx", "TDX quote", format!("QUOTE {}", a.quote.display()));
    subject.structure_check = TdxCheck::QuoteStructure.name();
    subject.policy_example = Some("examples/policies/tdx.toml");
    // A quote that does not even parse (truncated, oversized, inconsistent lengths) is malformed input
    // (exit 2, a result object of class `malformed` with --json), not a verdict.
    if let Err(e) = TdQuote::parse_prefix(&quote) {
        return output.report(&subject, Err(Rejection::from(e)), None);
    }
    let req = TdxRequest { quote: &quote, report_data: report_data.as_ref().map(<[u8; 64]>::as_slice), time };
    let verifier = TdxVerifier::new();
    let start = Instant::now();
    let result = judge(&verifier, &collateral, &req, &policy, event_log.as_deref(), &mut subject);
    subject.facts.insert("micros".into(), micros(start).into());
    output.report(&subject, result, None)
}

/// Installs the collateral, verifies the quote and replays the event log against it. The TDX verifier
/// records no partial verdict: a rejection before the verdict lists every check `not-run`, the failed one
/// `failed`; an event log that replays to other RTMRs keeps the quote's checks and fails `ccel_replay`.
fn judge(
    verifier: &TdxVerifier,
    collateral: &Collateral,
    req: &TdxRequest<'_, '_>,
    policy: &TdxPolicy,
    event_log: Option<&[u8]>,
    subject: &mut Subject,
) -> Result<Appraisal, Rejection> {
    let not_run = |error| Rejection { error, checks: Appraisal::tdx_checks_not_run() };
    let installed = verifier.set_collateral(collateral).map_err(not_run)?;
    subject.facts.insert(
        "collateral".into(),
        json!({
            "fmspc": hex::encode(installed.fmspc),
            "tcb_evaluation_data_number": installed.tcb_evaluation_data_number,
            "valid_from": installed.valid_from.to_string(),
            "expires": installed.expires.to_string(),
            "crls": installed.has_crls,
        }),
    );
    let ok = verifier.verify(req, policy).map_err(not_run)?;
    let mut appraisal = Appraisal::from_tdx(&ok);
    appraisal.claims.insert("pck".into(), pck_json(ok.pck()));
    appraisal.claims.insert("quote".into(), Value::Object(quote_json(ok.quote())));
    if let Some(log) = event_log {
        match attest_engine::tdx::ccel::check_against(attest_engine::crypto::default_provider(), log, &ok.body()) {
            Ok(r) => {
                subject.facts.insert("event_log".into(), json!({"events": r.events, "rtmrs_replayed": r.touched}));
                appraisal.checks.push(("ccel_replay", CheckOutcome::Passed));
            }
            Err(error) => return Err(Rejection { error, checks: appraisal.checks }),
        }
    }
    Ok(appraisal)
}

/// The note every signatures-only result carries.
const NOT_A_VERDICT: &str =
    "signatures only, NOT a verdict: no collateral, TCB status, revocation, QE identity or policy";

fn show(a: &ShowArgs) -> Result<Status, UsageError> {
    let bytes = read_quote(&a.quote)?;
    let time = input::trusted_time(a.at.as_deref())?;
    let quote =
        TdQuote::parse_prefix(&bytes).map_err(|e| UsageError(format!("{}: not a TD quote: {e}", a.quote.display())))?;
    let mut m = quote_json(&quote);
    let qe = quote.qe_report();
    m.insert(
        "qe_report".into(),
        json!({
            "mr_enclave": hex::encode(qe.mr_enclave()),
            "mr_signer": hex::encode(qe.mr_signer()),
            "isv_prod_id": qe.isv_prod_id(),
            "isv_svn": qe.isv_svn(),
            "report_data": hex::encode(qe.report_data()),
        }),
    );
    m.insert("qe_auth_data_len".into(), quote.qe_auth_data().len().into());
    let chain = attest_engine::x509::pem::certificates_from_pem_or_der(quote.pck_chain_pem()).unwrap_or_default();
    let leaf = chain.first().and_then(|d| attest_engine::x509::Certificate::from_der(d).ok());
    if let Some(leaf) = &leaf {
        m.insert("pck_issuer".into(), leaf.issuer().common_name().unwrap_or("").into());
        m.insert("pck_not_before".into(), leaf.not_before().to_string().into());
        m.insert("pck_not_after".into(), leaf.not_after().to_string().into());
        if let Ok(ext) = SgxExtensions::from_cert(leaf) {
            m.insert("pck".into(), pck_json(&ext));
        }
    }
    m.insert("pck_chain_certificates".into(), chain.len().into());
    let check = TdxVerifier::new().dangerous_verify_signatures_only(&bytes, time);
    let signatures = match &check {
        Ok(_) => json!({"passed": true, "time": time.to_string(), "note": NOT_A_VERDICT}),
        Err(e) => json!({"passed": false, "error": e.to_string(), "time": time.to_string(), "note": NOT_A_VERDICT}),
    };
    m.insert("signatures_only".into(), signatures);
    if a.json {
        print_json(&Value::Object(m));
    } else {
        let mut text = String::new();
        let _ = writeln!(text, "TD quote (fields as received; NOTHING below is verified except the last section)");
        for (k, v) in &m {
            if k == "signatures_only" {
                continue;
            }
            let value = match v {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            let _ = writeln!(text, "  {k:<24}{value}");
        }
        let _ = writeln!(text, "signatures-only check at {time} ({NOT_A_VERDICT}):");
        match &check {
            Ok(_) => {
                let _ = writeln!(
                    text,
                    "  passed: PCK chain to Intel's pinned root, QE report signature and binding, quote signature"
                );
            }
            Err(e) => {
                let _ = writeln!(text, "  FAILED: {e}");
            }
        }
        out(&text);
    }
    Ok(Status::Accepted)
}
