//! `attest tdx verify|show` run as a process on every TDX vector of the shared testdata: each gets the
//! verdict its README states (oracle: dcap-qvl 0.7.1, at the README's times; `engine/tests/tdx_vectors.rs`
//! checks the same at the engine level), tampered copies of quotes and collateral are refused, and usage
//! errors exit with 2. Exit statuses: 0 accepted, 1 rejected, 2 usage.

mod common;

use common::{attest, scratch};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

const SPR: &str = "go-tdx-guest/collateral_SPR_E4.json";
const V5: &str = "go-tdx-guest/collateral_v5_sample.json";
const JULY: &str = "2023-07-01T00:00:00Z";

/// What a run must say.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Exit 0 with this TCB status and no advisory ID.
    Accept(&'static str),
    /// Exit 1; the error contains the text, and names this policy check (or none).
    Reject(&'static str, Option<&'static str>),
}

/// How the inputs are altered before the run.
#[derive(Clone, Copy, Debug)]
enum Tamper {
    None,
    /// Flip the low bit of this quote byte.
    Quote(usize),
    /// One space inserted after the first comma of the signed tcbInfo text (same JSON meaning).
    TcbInfoText,
    /// Flip a bit of the QE Identity signature.
    QeIdentitySignature,
}

struct Case {
    label: &'static str,
    quote: &'static str,
    collateral: &'static str,
    at: &'static str,
    policy: &'static str,
    tamper: Tamper,
    expect: Expect,
}

/// Offsets in a v4 quote: MRTD (48 + 136), the quote signature (48 + 584 + 4), the QE report's ATTRIBUTES
/// (signature data 4 + 64 + 64 + certification header 6, then QE report offset 0x30).
const MRTD_V4: usize = 184;
const QUOTE_SIG_V4: usize = 636;
const QE_ATTRIBUTES_V4: usize = 48 + 584 + 4 + 64 + 64 + 6 + 0x30;

fn cases() -> Vec<Case> {
    use Expect::{Accept, Reject};
    let debug = "allow_debug = true";
    let any = "trailing_bytes = \"any\"";
    let c = |label, quote, collateral, at, policy, tamper, expect| Case {
        label,
        quote,
        collateral,
        at,
        policy,
        tamper,
        expect,
    };
    vec![
        // go-tdx-guest SPR_E4: 39 junk bytes after the quote; below every TCB level.
        c(
            "SPR_E4, default policy",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            JULY,
            "",
            Tamper::None,
            Reject("found 39", Some("trailing_bytes")),
        ),
        c(
            "SPR_E4, junk waived",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            JULY,
            any,
            Tamper::None,
            Reject("no platform TCB level of the collateral is met", None),
        ),
        c(
            "SPR_E4 at 2023-07-10",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            "2023-07-10",
            any,
            Tamper::None,
            Reject("QE Identity expired", None),
        ),
        c(
            "SPR_E4 at 2023-07-20",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            "2023-07-20",
            any,
            Tamper::None,
            Reject("TCB Info expired", None),
        ),
        c(
            "SPR_E4 at 2023-06-10",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            "2023-06-10",
            any,
            Tamper::None,
            Reject("TCB Info not yet valid", None),
        ),
        c(
            "SPR_E4, MRTD flipped",
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            SPR,
            JULY,
            any,
            Tamper::Quote(MRTD_V4),
            Reject("TD quote signature does not verify", None),
        ),
        // trustee tdx_quote_4: a debug TD on the same platform, UpToDate.
        c(
            "quote_4, default policy",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            "",
            Tamper::None,
            Reject("debug", Some("debug")),
        ),
        c("quote_4, debug allowed", "trustee-tdx/tdx_quote_4.dat", SPR, JULY, debug, Tamper::None, Accept("UpToDate")),
        c(
            "quote_4, MRTD flipped",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            debug,
            Tamper::Quote(MRTD_V4),
            Reject("TD quote signature does not verify", None),
        ),
        c(
            "quote_4, quote signature flipped",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            debug,
            Tamper::Quote(QUOTE_SIG_V4),
            Reject("TD quote signature does not verify", None),
        ),
        c(
            "quote_4, QE report flipped",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            debug,
            Tamper::Quote(QE_ATTRIBUTES_V4),
            Reject("QE report signature does not verify", None),
        ),
        c(
            "quote_4 at 2023-07-20",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            "2023-07-20",
            debug,
            Tamper::None,
            Reject("TCB Info expired", None),
        ),
        c(
            "quote_4, tcbInfo text re-spaced",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            debug,
            Tamper::TcbInfoText,
            Reject("TCB Info: signature does not verify", None),
        ),
        c(
            "quote_4, QE Identity signature flipped",
            "trustee-tdx/tdx_quote_4.dat",
            SPR,
            JULY,
            debug,
            Tamper::QeIdentitySignature,
            Reject("QE Identity: signature does not verify", None),
        ),
        // The v5 vectors: their shipped collateral has no common validity window.
        c(
            "v5 sample at 2026-02-20",
            "go-tdx-guest/quote_v5_sample.dat",
            V5,
            "2026-02-20",
            "",
            Tamper::None,
            Reject("CRL is stale", None),
        ),
        c(
            "v5 sample at 2023-07-01",
            "go-tdx-guest/quote_v5_sample.dat",
            V5,
            JULY,
            "",
            Tamper::None,
            Reject("TCB Info not yet valid", None),
        ),
        c(
            "quote_5 at 2026-02-20",
            "trustee-tdx/tdx_quote_5.dat",
            V5,
            "2026-02-20",
            "",
            Tamper::None,
            Reject("CRL is stale", None),
        ),
        // Platforms with no TCB Info in any source here.
        c(
            "quote_6 (fmspc 00a06d080000)",
            "trustee-tdx/tdx_quote_6.dat",
            SPR,
            JULY,
            "",
            Tamper::None,
            Reject("no TDX collateral installed for FMSPC", None),
        ),
        c(
            "cos-113 (fmspc 00806f050000)",
            "go-tdx-guest/ccel/cos-113-tdx-quote.dat",
            SPR,
            JULY,
            "",
            Tamper::None,
            Reject("no TDX collateral installed for FMSPC", None),
        ),
        c(
            "Azure TD quote (fmspc 00806f050000)",
            "trustee-az-tdx-vtpm/td-quote.bin",
            SPR,
            JULY,
            "",
            Tamper::None,
            Reject("no TDX collateral installed for FMSPC", None),
        ),
        // Not a quote at all (go-tdx-guest's report.dat): bad input, exit 2 (`bad_tdx_input_exits_2`).
    ]
}

/// Writes the case's (possibly tampered) inputs and returns the argument list.
fn inputs(dir: &Path, case: &Case, n: usize) -> Vec<String> {
    let mut quote = std::fs::read(dir.join(case.quote)).unwrap();
    let mut collateral: Value = serde_json::from_slice(&std::fs::read(dir.join(case.collateral)).unwrap()).unwrap();
    match case.tamper {
        Tamper::None => {}
        Tamper::Quote(at) => quote[at] ^= 1,
        Tamper::TcbInfoText => {
            let text = collateral["tcb_info"].as_str().unwrap().replacen(',', ", ", 1);
            collateral["tcb_info"] = Value::String(text);
        }
        Tamper::QeIdentitySignature => {
            let sig = collateral["qe_identity_signature"].as_str().unwrap();
            let flipped = format!("{}{}", if sig.starts_with('0') { '1' } else { '0' }, &sig[1..]);
            collateral["qe_identity_signature"] = Value::String(flipped);
        }
    }
    let q = scratch(&format!("tdx-{n}.quote"));
    let c = scratch(&format!("tdx-{n}.json"));
    let p = scratch(&format!("tdx-{n}.toml"));
    std::fs::write(&q, &quote).unwrap();
    std::fs::write(&c, collateral.to_string()).unwrap();
    std::fs::write(&p, case.policy).unwrap();
    let mut args: Vec<String> = ["tdx", "verify"].map(str::to_owned).into();
    args.push(q.display().to_string());
    for (flag, v) in [("--collateral", c.display().to_string()), ("--at", case.at.to_owned())] {
        args.push(flag.to_owned());
        args.push(v);
    }
    if !case.policy.is_empty() {
        args.push("--policy".to_owned());
        args.push(p.display().to_string());
    }
    args.push("--json".to_owned());
    args
}

#[test]
fn every_vector_gets_its_verdict() {
    let Some(dir) = common::testdata() else { return };
    let mut table = String::new();
    let mut wrong = Vec::new();
    for (n, case) in cases().iter().enumerate() {
        let args = inputs(&dir, case, n);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = attest(&dir, &args);
        let v = run.json();
        let verdict = match case.expect {
            Expect::Accept(status) => {
                let ok = run.code == 0
                    && v["accepted"] == true
                    && v["claims"]["tcb_status"] == status
                    && v["claims"]["advisory_ids"].as_array().is_some_and(Vec::is_empty)
                    && v["checks"].as_object().unwrap().values().all(|o| o == "passed" || o == "waived");
                (ok, format!("ACCEPT {}", v["claims"]["tcb_status"]))
            }
            Expect::Reject(error, check) => {
                let e = v["failure"]["reason"].as_str().unwrap_or_default();
                let code = if v["failure"]["class"] == "refused" { 1 } else { 2 };
                let ok = run.code == code
                    && v["accepted"] == false
                    && e.contains(error)
                    && check.is_none_or(|c| v["failure"]["check"] == c);
                (ok, format!("REJECT {e}"))
            }
        };
        let _ = writeln!(table, "{:<40} {:<10} {}", case.label, case.at, verdict.1);
        if !verdict.0 {
            wrong.push(format!("{}: expected {:?}, got exit {} {v}", case.label, case.expect, run.code));
        }
    }
    println!("{table}");
    assert!(wrong.is_empty(), "verdicts differ from the READMEs:\n{}", wrong.join("\n"));
}

#[test]
fn accepted_verdict_lists_every_check_and_the_platform() {
    let Some(dir) = common::testdata() else { return };
    let p = scratch("tdx-debug.toml");
    std::fs::write(&p, "allow_debug = true\nmrtd = [\"705ee9381b8633a9fbe532b52345e8433343d2868959f57889d84ca377c395b689cac1599ccea1b7d420483a9ce5f031\"]\n").unwrap();
    let rd = "7c71fe2c86eff65a7cf8dbc22b3275689fd0464a267baced1bf94fc1324656aeb755da3d44d098c0c87382f3a5f85b45c8a28fee1d3bdb38342bf96671501429";
    let policy = p.display().to_string();
    let base =
        ["tdx", "verify", "@trustee-tdx/tdx_quote_4.dat", "--collateral", &format!("@{SPR}"), "--at", "2023-07-01"];
    let mut args = base.to_vec();
    args.extend(["--policy", &policy, "--report-data", rd, "--json"]);
    let run = attest(&dir, &args);
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(v["claims"]["pck"]["fmspc"], "50806f000000");
    assert_eq!(v["claims"]["pck"]["pce_svn"], 11);
    assert_eq!(v["input"]["collateral"]["tcb_evaluation_data_number"], 15);
    assert_eq!(v["claims"]["quote"]["version"], 4);
    assert_eq!(v["claims"]["quote"]["debug"], true);
    for (check, outcome) in
        [("mrtd", "passed"), ("report_data", "passed"), ("debug", "waived"), ("revocation", "passed")]
    {
        assert_eq!(v["checks"][check], outcome, "{check}: {v}");
    }
    assert_eq!(v["checks"].as_object().unwrap().len(), attest_engine::tdx::TdxCheck::COUNT);
    // Another REPORTDATA: refused by the report_data check.
    let mut other = rd.to_owned();
    other.replace_range(..2, "00");
    let mut args = base.to_vec();
    args.extend(["--policy", &policy, "--report-data", &other, "--json"]);
    let run = attest(&dir, &args);
    assert_eq!((run.code, run.json()["failure"]["check"].as_str()), (1, Some("report_data")), "{run:?}");
    // Text mode: the verdict on stdout, a rejection on stderr.
    let mut args = base.to_vec();
    args.extend(["--policy", &policy]);
    let run = attest(&dir, &args);
    assert!(run.stdout.starts_with("ACCEPTED: TDX quote verified") && run.stdout.contains("UpToDate"), "{run:?}");
    let run = attest(&dir, &base);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("REJECTED") && run.stderr.contains("failed check: debug"), "{run:?}");
}

#[test]
fn usage_errors_exit_2() {
    let Some(dir) = common::testdata() else { return };
    let q = "@trustee-tdx/tdx_quote_4.dat";
    let bad_policy = scratch("tdx-bad.toml");
    std::fs::write(&bad_policy, "accepted_tcb_statuses = [\"Revoked\"]").unwrap();
    let bad_policy = bad_policy.display().to_string();
    for args in [
        vec!["tdx", "verify", q, "--collateral", "@go-tdx-guest/does-not-exist.json"],
        vec!["tdx", "verify", q, "--collateral", "@go-tdx-guest/pckcrl"],
        vec!["tdx", "verify", q, "--collateral", &format!("@{SPR}"), "--policy", &bad_policy],
        vec!["tdx", "verify", q, "--collateral", &format!("@{SPR}"), "--at", "yesterday"],
        vec!["tdx", "verify", q, "--collateral", &format!("@{SPR}"), "--report-data", "00"],
        vec!["tdx", "verify", q],
        vec!["tdx", "show", "@go-tdx-guest/report.dat"],
    ] {
        let run = attest(&dir, &args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
    }
}

/// `attest tdx show` prints every quote's fields and a signatures-only check labelled as no verdict; every
/// real quote's signatures verify, a tampered copy's do not (and show still exits 0: it judges nothing).
#[test]
fn show_prints_fields_and_a_signatures_only_check() {
    let Some(dir) = common::testdata() else { return };
    for (file, version, fmspc, trailing) in [
        ("go-tdx-guest/tdx_prod_quote_SPR_E4.dat", 4, "50806f000000", "other"),
        ("go-tdx-guest/quote_v5_sample.dat", 5, "90c06f000000", "none"),
        ("go-tdx-guest/ccel/cos-113-tdx-quote.dat", 4, "00806f050000", "zero-padding"),
        ("trustee-tdx/tdx_quote_4.dat", 4, "50806f000000", "none"),
        ("trustee-tdx/tdx_quote_5.dat", 5, "90c06f000000", "none"),
        ("trustee-tdx/tdx_quote_6.dat", 4, "00a06d080000", "zero-padding"),
        ("trustee-az-tdx-vtpm/td-quote.bin", 4, "00806f050000", "zero-padding"),
    ] {
        let run = attest(&dir, &["tdx", "show", &format!("@{file}"), "--at", "2026-03-01", "--json"]);
        assert_eq!(run.code, 0, "{file}: {run:?}");
        let v = run.json();
        assert_eq!(v["version"], version, "{file}");
        assert_eq!(v["pck"]["fmspc"], fmspc, "{file}");
        assert_eq!(v["trailing"]["kind"], trailing, "{file}");
        assert_eq!(v["signatures_only"]["passed"], true, "{file}: {v}");
        assert!(v["signatures_only"]["note"].as_str().unwrap().contains("NOT a verdict"), "{file}");
    }
    let mut quote = std::fs::read(dir.join("trustee-tdx/tdx_quote_4.dat")).unwrap();
    quote[MRTD_V4] ^= 1;
    let tampered = scratch("tdx-show-tampered.quote");
    std::fs::write(&tampered, &quote).unwrap();
    let run = attest(&dir, &["tdx", "show", &tampered.display().to_string(), "--at", "2026-03-01"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("NOT a verdict") && run.stdout.contains("FAILED: TD quote signature"), "{run:?}");
    // Hex text of a quote reads the same as the binary.
    let hex_file = scratch("tdx-show.hex");
    std::fs::write(&hex_file, hex::encode(std::fs::read(dir.join("trustee-tdx/tdx_quote_4.dat")).unwrap())).unwrap();
    let run = attest(&dir, &["tdx", "show", &hex_file.display().to_string(), "--at", "2026-03-01", "--json"]);
    assert_eq!(run.json()["mr_td"].as_str().unwrap()[..16], *"705ee9381b8633a9", "{run:?}");
}

/// Bad input is exit 2, never a panic or a verdict: a quote truncated at many lengths, padded past the
/// engine's limit, or with an inconsistent signature-data length; a truncated or empty collateral bundle; a
/// CC event log that does not parse. A log that parses but replays to other RTMRs is a rejection (exit 1).
#[test]
fn bad_tdx_input_exits_2() {
    let Some(dir) = common::testdata() else { return };
    let quote = std::fs::read(dir.join("trustee-tdx/tdx_quote_4.dat")).unwrap();
    let collateral = format!("@{SPR}");
    let file = |name: &str, data: &[u8]| {
        let p = scratch(name);
        std::fs::write(&p, data).unwrap();
        p.display().to_string()
    };
    let mut bad_quotes = Vec::new();
    for n in [0, 1, 47, 48, 100, 631, 632, 636, 700, quote.len() / 2, quote.len() - 1] {
        bad_quotes.push(file(&format!("tdx-trunc-{n}"), &quote[..n]));
    }
    let mut oversized = quote.clone();
    oversized.resize(attest_engine::tdx::quote::MAX_QUOTE_INPUT_SIZE + 1, 0);
    bad_quotes.push(file("tdx-oversized", &oversized));
    let mut inconsistent = quote.clone();
    inconsistent[632..636].copy_from_slice(&u32::MAX.to_le_bytes()); // signature data length (v4: 48 + 584)
    bad_quotes.push(file("tdx-inconsistent", &inconsistent));
    bad_quotes.push(dir.join("go-tdx-guest/report.dat").display().to_string());
    for q in &bad_quotes {
        let run = attest(&dir, &["tdx", "verify", q, "--collateral", &collateral, "--at", JULY]);
        assert_eq!(run.code, 2, "{q}: {run:?}");
        assert!(run.stderr.contains("MALFORMED: TDX quote"), "{q}: {run:?}");
    }
    let bundle = std::fs::read(dir.join(SPR)).unwrap();
    for (name, data) in [("tdx-coll-half", &bundle[..bundle.len() / 2]), ("tdx-coll-empty", &b""[..])] {
        let c = file(name, data);
        let run = attest(&dir, &["tdx", "verify", "@trustee-tdx/tdx_quote_4.dat", "--collateral", &c, "--at", JULY]);
        assert_eq!(run.code, 2, "{name}: {run:?}");
    }
    let policy = file("tdx-debug.toml", b"allow_debug = true");
    let with_log = |log: &str| {
        let q = "@trustee-tdx/tdx_quote_4.dat";
        attest(
            &dir,
            &["tdx", "verify", q, "--collateral", &collateral, "--at", JULY, "--policy", &policy, "--event-log", log],
        )
    };
    let log = std::fs::read(dir.join("go-tdx-guest/ccel/ccel_data.dat")).unwrap();
    for (name, data) in [("tdx-log-trunc", &log[..18101 - 3]), ("tdx-log-junk", &b"\x01\x02\x03"[..])] {
        let run = with_log(&file(name, data));
        assert_eq!(run.code, 2, "{name}: {run:?}");
        assert!(run.stderr.contains("not a CC event log"), "{name}: {run:?}");
    }
    // Another TD's log: parses, replays to other RTMRs.
    let run = with_log("@go-tdx-guest/ccel/ccel_data.dat");
    assert_eq!(run.code, 1, "{run:?}");
}
