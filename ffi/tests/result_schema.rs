//! The C ABI's result objects (`attest_verdict_json`, `attest_verifier_last_result_json`) conform to the
//! repository's JSON Schema (`schemas/result-v1.schema.json`, checked with the `jsonschema` library through
//! `schemas/validate_result.py`), accepted, refused and malformed, for SNP reports, TD quotes and GCE
//! attestations on real evidence; a refusal names its failed check and class as the CLI's do.
//!
//! Needs `$ATTEST_TESTDATA` and the `.venv` with `jsonschema` (scripts/setup-python.sh): without them a
//! NOTICE and a skip; under `CI=true` a failure.

use attest_ffi::verifier::attest_verifier_verify_gce;
use attest_ffi::{
    ATTEST_VERIFY_ALLOW_EMPTY_NONCE, attest_result, attest_verdict, attest_verdict_free, attest_verdict_json,
    attest_verifier, attest_verifier_free, attest_verifier_last_result_json, attest_verifier_new,
    attest_verifier_set_tdx_collateral, attest_verifier_set_tdx_policy_json, attest_verifier_verify_snp,
    attest_verifier_verify_td_quote,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const T_2025_06_01: u64 = 1_748_736_000;
const T_2023_07_01: u64 = 1_688_169_600;

/// The text a getter writes (sized first, as a C caller does).
fn text(get: impl Fn(*mut std::ffi::c_char, usize, *mut usize) -> attest_result) -> String {
    let mut n = 0usize;
    match get(std::ptr::null_mut(), 0, &raw mut n) {
        attest_result::Ok if n == 0 => return String::new(),
        rc => assert_eq!(rc, attest_result::InsufficientSize),
    }
    let mut buf = vec![0u8; n];
    assert_eq!(get(buf.as_mut_ptr().cast(), buf.len(), &raw mut n), attest_result::Ok);
    buf.truncate(n);
    String::from_utf8(buf).expect("result objects are UTF-8")
}

/// One verification's outcome: its result code and result object (the verdict's when accepted, the
/// verifier's last result otherwise — they are the same object for an accepted verdict).
/// An accepted verdict is freed and `*vd` reset to null, as C callers do.
fn result(v: *const attest_verifier, rc: attest_result, vd: &mut *mut attest_verdict) -> (attest_result, Value) {
    let last = text(|b, l, n| attest_verifier_last_result_json(v, b, l, n));
    if rc == attest_result::Ok {
        let own = text(|b, l, n| attest_verdict_json(*vd, b, l, n));
        assert_eq!(own, last, "the verdict's result object is the verifier's last");
        attest_verdict_free(*vd);
        *vd = std::ptr::null_mut();
    } else {
        assert!(vd.is_null(), "no verdict for a refusal");
    }
    // No result object: the call judged no evidence (a parameter error); Null, which no check accepts.
    (rc, if last.is_empty() { Value::Null } else { serde_json::from_str(&last).expect("a result object is JSON") })
}

fn new_verifier() -> *mut attest_verifier {
    let mut v = std::ptr::null_mut();
    assert_eq!(attest_verifier_new(&raw mut v), attest_result::Ok);
    v
}

/// The `.venv` interpreter with `jsonschema` (a NOTICE and `None` without it; a failure under CI).
fn venv() -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let ok = py.is_file() && Command::new(&py).args(["-c", "import jsonschema"]).status().is_ok_and(|s| s.success());
    assert!(
        ok || !std::env::var("CI").is_ok_and(|v| v == "true"),
        "no .venv with jsonschema (scripts/setup-python.sh)"
    );
    if !ok {
        eprintln!("NOTICE: skipping the schema validation: no .venv with jsonschema (run scripts/setup-python.sh)");
    }
    ok.then_some(py)
}

#[test]
fn ffi_result_objects_conform_to_the_schema() {
    let Some(dir) = attest_test_support::testdata::dir() else { return };
    let read = |rel: &str| attest_test_support::testdata::read(&dir, rel);
    let mut results: Vec<(&str, attest_result, Value)> = Vec::new();
    let v = new_verifier();
    let mut vd: *mut attest_verdict = std::ptr::null_mut();

    // SNP: accepted (the report as the CLI reads it, with its IGVM request-data header), refused (another
    // REPORT_DATA), malformed (random bytes of a report's length).
    let report = read("constellation-azure-snp/attestation.bin");
    let vcek = read("constellation-azure-snp/vcek.cert");
    let snp = |report: &[u8], rd: &[u8], vd: &mut *mut attest_verdict| {
        let (rd_ptr, rd_len) = if rd.is_empty() { (std::ptr::null(), 0) } else { (rd.as_ptr(), rd.len()) };
        attest_verifier_verify_snp(
            v,
            report.as_ptr(),
            report.len(),
            vcek.as_ptr(),
            vcek.len(),
            std::ptr::null(),
            0,
            rd_ptr,
            rd_len,
            T_2025_06_01,
            vd,
        )
    };
    let rc = snp(&report, &[], &mut vd);
    results.push(("snp accepted", rc, result(v, rc, &mut vd).1));
    let rc = snp(&report, &[1; 64], &mut vd);
    results.push(("snp refused", rc, result(v, rc, &mut vd).1));
    let rc = snp(&attest_test_support::noise(0x4A0, 4), &[], &mut vd);
    results.push(("snp malformed", rc, result(v, rc, &mut vd).1));

    // TDX: refused by the strict default (a debug TD), accepted with allow_debug, malformed (truncated).
    let bundle = read("go-tdx-guest/collateral_SPR_E4.json");
    assert_eq!(
        attest_verifier_set_tdx_collateral(v, bundle.as_ptr(), bundle.len(), std::ptr::null_mut()),
        attest_result::Ok
    );
    let quote = read("trustee-tdx/tdx_quote_4.dat");
    let tdx = |q: &[u8], vd: &mut *mut attest_verdict| {
        attest_verifier_verify_td_quote(v, q.as_ptr(), q.len(), std::ptr::null(), 0, T_2023_07_01, vd)
    };
    let rc = tdx(&quote, &mut vd);
    results.push(("tdx refused", rc, result(v, rc, &mut vd).1));
    let debug = br#"{"allow_debug": true}"#;
    assert_eq!(attest_verifier_set_tdx_policy_json(v, debug.as_ptr(), debug.len()), attest_result::Ok);
    let rc = tdx(&quote, &mut vd);
    results.push(("tdx accepted", rc, result(v, rc, &mut vd).1));
    let rc = tdx(&quote[..700], &mut vd);
    results.push(("tdx malformed", rc, result(v, rc, &mut vd).1));

    // GCE: accepted without a nonce (waived, by flag), refused with a nonce it was not made for, malformed.
    let att = read("go-tpm-tools/gce-cos-85-no-nonce.pb");
    let gce = |a: &[u8], nonce: &[u8], flags: u32, vd: &mut *mut attest_verdict| {
        let (n_ptr, n_len) = if nonce.is_empty() { (std::ptr::null(), 0) } else { (nonce.as_ptr(), nonce.len()) };
        attest_verifier_verify_gce(v, a.as_ptr(), a.len(), n_ptr, n_len, T_2025_06_01, flags, vd)
    };
    let rc = gce(&att, &[], ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &mut vd);
    results.push(("gce accepted", rc, result(v, rc, &mut vd).1));
    let rc = gce(&att, b"9009", 0, &mut vd);
    results.push(("gce refused", rc, result(v, rc, &mut vd).1));
    let rc = gce(&att[..att.len() / 3], b"9009", 0, &mut vd);
    results.push(("gce malformed", rc, result(v, rc, &mut vd).1));
    attest_verifier_free(v);

    let scratch = std::env::temp_dir().join(format!("attest-ffi-results-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut files = Vec::new();
    for (name, rc, json) in &results {
        let outcome = name.rsplit(' ').next().unwrap();
        assert_eq!(json["schema"], "attest-result/1", "{name}: {json}");
        assert_eq!(json["accepted"], outcome == "accepted", "{name}: {json}");
        assert_eq!(*rc == attest_result::Ok, outcome == "accepted", "{name}: {rc:?}");
        let failure = &json["failure"];
        match outcome {
            "accepted" => assert!(failure.is_null(), "{name}: {json}"),
            class => {
                assert_eq!(failure["class"], class, "{name}: {json}");
                assert!(failure["check"].as_str().is_some_and(|c| !c.is_empty()), "{name}: {json}");
                // Rejections keep their checks, the failed one marked.
                let checks = json["checks"].as_object().expect("checks");
                assert_eq!(checks.get(failure["check"].as_str().unwrap()), Some(&"failed".into()), "{name}: {json}");
            }
        }
        let f = scratch.join(format!("{}.json", name.replace(' ', "-")));
        std::fs::write(&f, json.to_string()).unwrap();
        files.push(f);
    }
    // Which checks fail, and the policy key that waives the TDX debug refusal.
    let by = |n: &str| &results.iter().find(|r| r.0 == n).unwrap().2;
    assert_eq!(by("snp refused")["failure"]["check"], "report_data");
    assert_eq!(by("tdx refused")["failure"]["policy_key"], "allow_debug");
    assert_eq!(by("gce refused")["failure"]["check"], "nonce");
    // Refusals keep the checks that ran before them, as the CLI's results do: SNP and GCE their partial
    // verdicts, TDX every check (not-run but the failed one).
    assert_eq!(by("snp refused")["checks"]["report_signature"], "passed", "{}", by("snp refused"));
    assert_eq!(by("gce refused")["checks"]["ak_certificate_chain"], "passed", "{}", by("gce refused"));
    let tdx_checks = by("tdx refused")["checks"].as_object().unwrap();
    assert_eq!(tdx_checks.len(), attest_engine::tdx::TdxCheck::ALL.len(), "{tdx_checks:?}");
    assert_eq!(tdx_checks.values().filter(|o| *o == "failed").count(), 1, "{tdx_checks:?}");
    if let Some(py) = venv() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = Command::new(py)
            .arg(root.join("schemas/validate_result.py"))
            .arg(root.join("schemas/result-v1.schema.json"))
            .args(&files)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "result objects do not conform to the schema:\n{stderr}");
    }
    std::fs::remove_dir_all(&scratch).ok();
}

/// The CLI's exit-status table (`shell/cli/tests/cli_contracts.rs`) through the C ABI: random and truncated
/// inputs to every evidence call are refused with a result object of class `malformed` (the CLI's exit 2),
/// never accepted and never a verdict.
#[test]
fn random_and_truncated_inputs_are_malformed_through_the_c_abi() {
    let Some(dir) = attest_test_support::testdata::dir() else { return };
    let read = |rel: &str| attest_test_support::testdata::read(&dir, rel);
    let v = new_verifier();
    let bundle = read("go-tdx-guest/collateral_SPR_E4.json");
    assert_eq!(
        attest_verifier_set_tdx_collateral(v, bundle.as_ptr(), bundle.len(), std::ptr::null_mut()),
        attest_result::Ok
    );
    let vcek = read("constellation-azure-snp/vcek.cert");
    let measurements = format!(r#"{{"4": {{"expected": "{}", "warnOnly": false}}}}"#, "11".repeat(32));
    let measurements = measurements.as_bytes();
    type Call<'a> = Box<dyn Fn(&[u8], &mut *mut attest_verdict) -> attest_result + 'a>;
    let rows: Vec<(&str, Vec<u8>, Call<'_>)> = vec![
        (
            "snp",
            read("constellation-azure-snp/attestation.bin"),
            Box::new(|r: &[u8], vd: &mut *mut attest_verdict| {
                let (c, cl) = (vcek.as_ptr(), vcek.len());
                let n = std::ptr::null();
                attest_verifier_verify_snp(v, r.as_ptr(), r.len(), c, cl, n, 0, n, 0, T_2025_06_01, vd)
            }),
        ),
        (
            "tdx",
            read("trustee-tdx/tdx_quote_4.dat"),
            Box::new(|q: &[u8], vd: &mut *mut attest_verdict| {
                attest_verifier_verify_td_quote(v, q.as_ptr(), q.len(), std::ptr::null(), 0, T_2023_07_01, vd)
            }),
        ),
        (
            "gce",
            read("go-tpm-tools/gce-cos-85-no-nonce.pb"),
            Box::new(|a: &[u8], vd: &mut *mut attest_verdict| {
                let flags = ATTEST_VERIFY_ALLOW_EMPTY_NONCE;
                attest_verifier_verify_gce(v, a.as_ptr(), a.len(), std::ptr::null(), 0, T_2025_06_01, flags, vd)
            }),
        ),
        (
            "document",
            attest_test_support::noise(300, 9),
            Box::new(|d: &[u8], vd: &mut *mut attest_verdict| {
                let variant = b"gcp-shielded-vm";
                attest_ffi::attest_verifier_verify_document(
                    v,
                    variant.as_ptr(),
                    variant.len(),
                    d.as_ptr(),
                    d.len(),
                    measurements.as_ptr(),
                    measurements.len(),
                    std::ptr::null(),
                    0,
                    T_2025_06_01,
                    ATTEST_VERIFY_ALLOW_EMPTY_NONCE,
                    vd,
                )
            }),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, original, call) in &rows {
        let inputs = attest_test_support::malformed_inputs(original);
        for (what, bytes) in inputs {
            let mut vd = std::ptr::null_mut();
            let rc = call(&bytes, &mut vd);
            let (rc, json) = result(v, rc, &mut vd);
            if rc == attest_result::Ok || json["failure"]["class"] != "malformed" {
                wrong.push(format!("{name} {what}: {rc:?} {json}"));
            }
        }
    }
    attest_verifier_free(v);
    assert!(wrong.is_empty(), "malformed input must be refused as malformed:\n{}", wrong.join("\n"));
}
