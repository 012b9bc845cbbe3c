//! `attest snp verify|chain|show` run as a process on the real vectors in `../shared/testdata`: each gets
//! the outcome its README states, with exit statuses 0 (accept), 1 (reject) and 2 (usage error).

mod common;

use common::{attest, example_policy, scratch};
use serde_json::Value;

fn cloud() -> String {
    example_policy("snp-cloud.toml").display().to_string()
}

#[track_caller]
fn assert_accepted(run: &common::Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(v["accepted"], true, "{v}");
    let checks = v["checks"].as_object().unwrap();
    assert!(checks.values().all(|o| o == "passed" || o == "waived"), "{v}");
    assert!(v["input"]["micros"].as_u64().is_some(), "{v}");
    v
}

#[track_caller]
fn assert_rejected(run: &common::Run, error: &str, check: Option<&str>) -> Value {
    assert_eq!(run.code, 1, "{run:?}");
    let v = run.json();
    assert_eq!(v["accepted"], false, "{v}");
    assert!(v["failure"]["reason"].as_str().unwrap().contains(error), "{v}");
    if let Some(check) = check {
        assert_eq!(v["failure"]["check"].as_str(), Some(check), "{v}");
        assert_eq!(v["checks"][check], "failed", "{v}");
    }
    v
}

#[test]
fn constellation_azure_accepts_with_runtime_data_and_strict_policy() {
    let Some(dir) = common::testdata() else { return };
    let rd = common::constellation_report_data(&dir);
    let base = [
        "snp",
        "verify",
        "@constellation-azure-snp/attestation.bin",
        "--vcek",
        "@constellation-azure-snp/vcek.pem",
        "--chain",
        "@constellation-azure-snp/certchain.pem",
        "--at",
        "2025-06-01",
        "--report-data",
        &rd,
        "--json",
    ];
    let v = assert_accepted(&attest(&dir, &base));
    assert_eq!(v["input"]["format"], "raw+igvm-header");
    assert_eq!(v["input"]["encoding"], "binary");
    assert_eq!(v["claims"]["product"], "Milan");
    assert_eq!(v["claims"]["signer"], "VCEK");
    assert_eq!(v["claims"]["version"], 2);
    assert_eq!(v["claims"]["reported_tcb"], serde_json::json!({"bootloader": 2, "tee": 0, "snp": 6, "microcode": 93}));
    assert_eq!(
        v["claims"]["measurement"],
        "5677f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841"
    );
    assert_eq!(v["claims"]["report_data"], rd.as_str());
    assert!(v["claims"]["chip_id"].as_str().unwrap().starts_with("9e44aaef"));
    assert_eq!(v["checks"]["report_signature"], "passed");
    assert_eq!(v["checks"]["chip_id_binding"], "passed");
    assert_eq!(v["checks"]["report_data"], "passed");
    assert_eq!(v["checks"]["measurement"], "waived");

    // The strict example pins measurement, ID key, IDs and minimum TCBs.
    let strict = example_policy("snp.toml").display().to_string();
    let mut args = base.to_vec();
    args.extend(["--policy", &strict]);
    let v = assert_accepted(&attest(&dir, &args));
    for c in ["measurement", "id_key_digest", "family_id", "image_id", "min_launch_tcb", "platform_info"] {
        assert_eq!(v["checks"][c], "passed", "{c}: {v}");
    }

    // The DER VCEK from KDS works the same; a wrong nonce is refused naming the check.
    let mut args = base.to_vec();
    args[4] = "@constellation-azure-snp/vcek.cert";
    let wrong = "11".repeat(64);
    args[10] = &wrong;
    assert_rejected(&attest(&dir, &args), "report_data", Some("report_data"));
}

#[test]
fn virtee_milan_hex_accepts_and_text_mode_summary() {
    let Some(dir) = common::testdata() else { return };
    let args = [
        "snp",
        "verify",
        "@virtee-sev/report_milan.hex",
        "--vcek",
        "@virtee-sev/vcek_milan.der",
        "--chain",
        "@virtee-sev/cert_chain_milan",
        "--at",
        "2025-01-01T00:00:00Z",
    ];
    let mut json = args.to_vec();
    json.push("--json");
    let v = assert_accepted(&attest(&dir, &json));
    assert_eq!(v["input"]["encoding"], "hex");
    assert_eq!(v["input"]["format"], "raw");
    assert_eq!(v["claims"]["reported_tcb"]["microcode"], 115);
    // Text mode: a readable summary with every check, the format only with --verbose.
    let mut verbose = args.to_vec();
    verbose.push("--verbose");
    let run = attest(&dir, &verbose);
    assert_eq!(run.code, 0, "{run:?}");
    for needle in ["ACCEPTED", "Milan", "VCEK", "microcode", "115", "report_signature", "passed", "waived"] {
        assert!(run.stdout.contains(needle), "{needle}: {}", run.stdout);
    }
    assert!(run.stdout.contains("hex"), "{}", run.stdout);
}

#[test]
fn trustee_hcl_report_accepts_with_cloud_policy() {
    let Some(dir) = common::testdata() else { return };
    let policy = cloud();
    let mut args = vec![
        "snp",
        "verify",
        "@trustee-az-snp-vtpm/hcl-report.bin",
        "--vcek",
        "@trustee-az-snp-vtpm/vcek.pem",
        "--at",
        "2025-01-01",
        "--json",
    ];
    // The default policy refuses the provisional firmware (current ucode 210, committed 115).
    assert_rejected(&attest(&dir, &args), "provisional", Some("provisional_firmware"));
    args.extend(["--policy", &policy]);
    let v = assert_accepted(&attest(&dir, &args));
    assert_eq!(v["input"]["format"], "azure-hcl");
    assert_eq!(v["checks"]["hcl_runtime_data_binding"], "passed");
    assert_eq!(v["checks"]["provisional_firmware"], "waived");
    assert_eq!(v["claims"]["reported_tcb"]["snp"], 8);
}

#[test]
fn aws_vlek_accepts_inside_validity_and_expires() {
    let Some(dir) = common::testdata() else { return };
    let policy = cloud();
    let ak = "87ab7caf510e1b3520dc3cceb64ee44128e10976fb0d3fc5e274699d8aaf506154af4c1de0a026b49fdf861e9ac75551551b3534d1c61369a3b08f5baed0db2f";
    for (report, encoding) in
        [("@constellation-aws-snp/report.bin", "binary"), ("@constellation-aws-snp/report.txt", "base64")]
    {
        let args = [
            "snp",
            "verify",
            report,
            "--vcek",
            "@constellation-aws-snp/vlek.pem",
            "--chain",
            "@constellation-aws-snp/certchain.pem",
            "--policy",
            &policy,
            "--report-data",
            ak,
            "--at",
            "2025-06-01",
            "--json",
        ];
        let v = assert_accepted(&attest(&dir, &args));
        assert_eq!(v["claims"]["signer"], "VLEK");
        assert_eq!(v["claims"]["version"], 3);
        assert_eq!(v["checks"]["chip_id_binding"], "waived");
        assert_eq!(v["input"]["encoding"], encoding);
        // After the VLEK's notAfter (2025-12-10).
        let mut late = args.to_vec();
        late[12] = "2026-01-01";
        let v = assert_rejected(&attest(&dir, &late), "VLEK expired", None);
        assert_eq!(v["time"], "2026-01-01T00:00:00Z");
    }
}

#[test]
fn negative_vectors_reject_with_exit_1() {
    let Some(dir) = common::testdata() else { return };
    let policy = cloud();
    // A VLEK report whose signature does not verify under the shipped VLEK.
    let run = attest(
        &dir,
        &[
            "snp",
            "verify",
            "@constellation-snp-vlek/vlek-report.bin",
            "--vcek",
            "@constellation-snp-vlek/vlek.pem",
            "--chain",
            "@constellation-snp-vlek/vlekcertchain.pem",
            "--policy",
            &policy,
            "--at",
            "2024-01-01",
            "--json",
        ],
    );
    assert_rejected(&run, "report signature does not verify", None);
    // A debuggable guest under the default policy.
    let args = [
        "snp",
        "verify",
        "@go-sev-guest/attestation.bin",
        "--vcek",
        "@go-sev-guest/vcek.testcer",
        "--at",
        "2025-01-01",
    ];
    let mut json = args.to_vec();
    json.push("--json");
    assert_rejected(&attest(&dir, &json), "policy check debug", Some("debug"));
    // Text mode: nothing on stdout, the reason on stderr.
    let run = attest(&dir, &args);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(run.stderr.contains("REJECTED") && run.stderr.contains("debug"), "{run:?}");
    // An HCL report from another chip than the VCEK.
    let run = attest(
        &dir,
        &[
            "snp",
            "verify",
            "@azure-cvm-tooling/hcl-report-snp.bin",
            "--vcek",
            "@azure-cvm-tooling/certs.pem",
            "--policy",
            &policy,
            "--at",
            "2025-01-01",
            "--json",
        ],
    );
    assert_rejected(&run, "CHIP_ID", None);
}

#[test]
fn chain_command() {
    let Some(dir) = common::testdata() else { return };
    let run = attest(
        &dir,
        &[
            "snp",
            "chain",
            "--vcek",
            "@virtee-sev/vcek_turin.der",
            "--chain",
            "@virtee-sev/cert_chain_turin",
            "--at",
            "2025-06-01",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(v["accepted"], true);
    assert_eq!(v["product"], "Turin");
    assert_eq!(v["tcb"], serde_json::json!({"fmc": 0, "bootloader": 0, "tee": 0, "snp": 0, "microcode": 9}));
    // Claimed as Milan: refused.
    let run = attest(&dir, &["snp", "chain", "--vcek", "@virtee-sev/vcek_turin.der", "--product", "milan", "--json"]);
    assert_rejected(&run, "product mismatch", None);
    for file in ["@trustee-snp/test-vcek-invalid-legacy.der", "@trustee-snp/test-vcek-invalid-new.der"] {
        let run = attest(&dir, &["snp", "chain", "--vcek", file, "--at", "2025-01-01", "--json"]);
        assert_rejected(&run, "VCEK signature does not verify", None);
    }
}

#[test]
fn show_prints_fields_unverified() {
    let Some(dir) = common::testdata() else { return };
    let run = attest(&dir, &["snp", "show", "@constellation-aws-snp/report.bin", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(v["verified"], false);
    assert_eq!(v["signing_key"], "VLEK");
    assert_eq!(v["tcb_product"], "Milan");
    assert_eq!(v["current_tcb"]["raw"], "0xdc18000000000004");
    assert_eq!(v["reported_tcb"]["text"], "bl=4 tee=0 snp=24 ucode=217");
    assert_eq!(v["cpuid"]["family"], "0x19");
    assert_eq!(v["current_version"], "1.55 build 29");
    let run = attest(&dir, &["snp", "show", "@trustee-az-snp-vtpm/hcl-report.bin"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("UNVERIFIED"), "{}", run.stdout);
    assert!(run.stdout.contains("report_data_binds_variable_data"), "{}", run.stdout);
    assert!(run.stdout.contains("measurement"), "{}", run.stdout);
}

#[test]
fn usage_errors_exit_2() {
    let Some(dir) = common::testdata() else { return };
    let verify = |report: &str, extra: &[&str]| {
        let mut a = vec!["snp", "verify", report, "--vcek", "@go-sev-guest/vcek.testcer", "--json"];
        a.extend_from_slice(extra);
        let run = attest(&dir, &a);
        assert_eq!(run.code, 2, "{a:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{run:?}");
        run.stderr
    };
    let missing = dir.join("no-such-file.bin").display().to_string();
    assert!(verify(&missing, &[]).contains("cannot read REPORT"));
    let e = verify("@go-sev-guest/attestation.bin", &["--report-data", "0102030405"]);
    assert!(e.contains("exactly 64 bytes"), "{e}");
    let e = verify("@go-sev-guest/attestation.bin", &["--report-data", &"zz".repeat(64)]);
    assert!(e.contains("not hex"), "{e}");
    let e = verify("@go-sev-guest/attestation.bin", &["--at", "next tuesday"]);
    assert!(e.contains("--at"), "{e}");
    let e = verify("@go-sev-guest/attestation.bin", &["--policy", &missing]);
    assert!(e.contains("--policy"), "{e}");

    // A report in none of the forms: the engine judges the bytes as given (as the C library does), so even
    // `--json` gets a result object, malformed (exit 2), with the CLI's reason in `input.format_error`.
    let malformed = |report: &str| {
        let run = attest(&dir, &["snp", "verify", report, "--vcek", "@go-sev-guest/vcek.testcer", "--json"]);
        assert_eq!(run.code, 2, "{run:?}");
        let v = run.json();
        assert_eq!((&v["failure"]["class"], &v["failure"]["check"]), (&"malformed".into(), &"report_structure".into()));
        v["input"]["format_error"].as_str().unwrap().to_owned()
    };
    let garbage = scratch("garbage.bin");
    std::fs::write(&garbage, [0xA5u8; 1000]).unwrap();
    let e = malformed(garbage.to_str().unwrap());
    assert!(e.contains("not a recognized report format"), "{e}");
    let text = scratch("garbage.txt");
    std::fs::write(&text, "this is not a report!\n").unwrap();
    let e = malformed(text.to_str().unwrap());
    assert!(e.contains("neither hex nor base64"), "{e}");
    let tdx = "@azure-cvm-tooling/hcl-report-tdx.bin";
    assert!(malformed(tdx).contains("TDX"));
    // In text, the engine's reason and the CLI's.
    let run = attest(&dir, &["snp", "verify", garbage.to_str().unwrap(), "--vcek", "@go-sev-guest/vcek.testcer"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.starts_with("MALFORMED: SEV-SNP report REPORT "), "{run:?}");
    assert!(run.stderr.contains("input:        1000 bytes: not a recognized report format"), "{run:?}");
    // A certificate file that is neither PEM nor DER.
    let run = attest(&dir, &["snp", "verify", "@go-sev-guest/attestation.bin", "--vcek", text.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    // A bad policy key.
    let bad_policy = scratch("bad-policy.toml");
    std::fs::write(&bad_policy, "allow_everything = true\n").unwrap();
    let e = verify("@go-sev-guest/attestation.bin", &["--policy", bad_policy.to_str().unwrap()]);
    assert!(e.contains("allow_everything"), "{e}");
    // clap's own usage errors.
    let run = attest(&dir, &["snp", "verify", "@go-sev-guest/attestation.bin"]);
    assert_eq!(run.code, 2, "{run:?}");
    let run = attest(&dir, &["snp", "verify", "@go-sev-guest/attestation.bin", "--vcek", "x", "--product", "rome"]);
    assert_eq!(run.code, 2, "{run:?}");
    for p in [garbage, text, bad_policy] {
        let _ = std::fs::remove_file(p);
    }
}
