//! The contracts a script, a CI pipeline or a relying party builds on, for every verifier subcommand
//! (`snp`, `tdx`, `tpm`, `azure`, `gce` here on real evidence from `$ATTEST_TESTDATA`; `document` in
//! `cli_document.rs` on generated documents):
//!
//! - **the result schema**: every `--json` result, accepted and refused, validates against
//!   `schemas/result-v1.schema.json` with the `jsonschema` library (in `.venv`), and a refusal keeps
//!   `checks`, marks the failed check `failed` and names the policy key that governs it;
//! - **EAR**: every `--format ear` token, accepted and refused, verifies with PyJWT and carries per verifier
//!   the status and trustworthiness claims its checks back, `iat` = the time of issue (not `--at`), and
//!   `eat_nonce` only within EAT's 8–64 bytes;
//! - **messages**: a text refusal names the input, the failed check and the policy key with the example
//!   policy that shows it;
//! - **exit statuses**: random and truncated inputs through every verifier subcommand exit 2 (malformed),
//!   never 1 or 0, and never panic.

mod common;

use common::{attest, scratch, validate_results, venv};
use serde_json::Value;
use std::path::Path;

const AT: &str = "2025-06-01";
/// trustee-tpm's extraData: 48 bytes and 16 zero bytes.
const TRUSTEE_TPM_NONCE: &str = "a04182b506878d4f29b91ee606a71a0d3361ccf1b22db20c98adcaa537bea393ef0e41a18b3569ab678f1497fbc5c12000000000000000000000000000000000";
const TDX_REPORT_DATA: &str = "7c71fe2c86eff65a7cf8dbc22b3275689fd0464a267baced1bf94fc1324656aeb755da3d44d098c0c87382f3a5f85b45c8a28fee1d3bdb38342bf96671501429";
const TDX_MRTD: &str =
    "705ee9381b8633a9fbe532b52345e8433343d2868959f57889d84ca377c395b689cac1599ccea1b7d420483a9ce5f031";

/// One verifier's accepted and refused runs, and what their results must say.
struct Case {
    verifier: &'static str,
    submod: &'static str,
    accept: Vec<String>,
    refuse: Vec<String>,
    /// The accepted result's EAR status.
    status: &'static str,
    /// Trustworthiness claims the accepted result must make (`Some(2)`) or must not make (`None`).
    vector: &'static [(&'static str, Option<i64>)],
    /// The refusal: failed check, policy key, the example policy the message names.
    failed: &'static str,
    policy_key: Option<&'static str>,
    example: Option<&'static str>,
    /// The nonce (for `eat_nonce`), if any.
    nonce: Option<&'static [u8]>,
}

fn args(dir: &Path, a: &[&str]) -> Vec<String> {
    a.iter()
        .map(|s| s.strip_prefix('@').map_or_else(|| (*s).to_owned(), |rel| dir.join(rel).display().to_string()))
        .collect()
}

fn cases(dir: &Path) -> Vec<Case> {
    let rd = common::constellation_report_data(dir);
    let snp_policy = common::example_policy("snp.toml").display().to_string();
    let snp = [
        "snp",
        "verify",
        "@constellation-azure-snp/attestation.bin",
        "--vcek",
        "@constellation-azure-snp/vcek.pem",
        "--chain",
        "@constellation-azure-snp/certchain.pem",
        "--at",
        AT,
        "--policy",
        &snp_policy,
        "--report-data",
    ];
    let tdx_policy = scratch("contracts-tdx.toml");
    std::fs::write(&tdx_policy, format!("allow_debug = true\nmrtd = [\"{TDX_MRTD}\"]\n")).unwrap();
    let tdx_policy = tdx_policy.display().to_string();
    let tdx = [
        "tdx",
        "verify",
        "@trustee-tdx/tdx_quote_4.dat",
        "--collateral",
        "@go-tdx-guest/collateral_SPR_E4.json",
        "--at",
        "2023-07-01",
    ];
    let tpm = ["tpm", "verify", "--ak", "@azure-cvm-tooling/akpub.pem", "--quote", "@azure-cvm-tooling/quote.bin"];
    let azure_raw = [
        "azure",
        "verify",
        "--hcl-report",
        "@trustee-az-snp-vtpm/hcl-report.bin",
        "--vcek",
        "@trustee-az-snp-vtpm/vcek.pem",
        "--quote",
        "@trustee-az-snp-vtpm/quote.bin",
        "--nonce-text",
        "challenge",
        "--at",
        AT,
    ];
    let gce = ["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb", "--at", AT];
    let azure_policy = common::example_policy("azure.toml").display().to_string();
    vec![
        Case {
            verifier: "snp",
            submod: "sev-snp",
            accept: args(dir, &[&snp[..], &[&rd]].concat()),
            refuse: args(dir, &[&snp[..], &[&"11".repeat(64)]].concat()),
            status: "affirming",
            vector: &[("hardware", Some(2)), ("executables", Some(2)), ("instance-identity", Some(2))],
            failed: "report_data",
            policy_key: Some("report_data"),
            example: Some("examples/policies/snp.toml"),
            nonce: None,
        },
        Case {
            verifier: "tdx",
            submod: "tdx",
            accept: args(dir, &[&tdx[..], &["--policy", &tdx_policy, "--report-data", TDX_REPORT_DATA]].concat()),
            refuse: args(dir, &tdx),
            status: "affirming",
            vector: &[("hardware", Some(2)), ("executables", Some(2)), ("runtime-opaque", Some(2))],
            failed: "debug",
            policy_key: Some("allow_debug"),
            example: Some("examples/policies/tdx.toml"),
            nonce: None,
        },
        Case {
            verifier: "tpm",
            submod: "tpm-quote",
            accept: args(dir, &[&tpm[..], &["--nonce-text", "challenge", "--at", AT]].concat()),
            refuse: args(dir, &[&tpm[..], &["--nonce", "0102030405060708", "--at", AT]].concat()),
            // A key given by the user: genuine signature, nothing certifies the key or approves the PCRs.
            status: "warning",
            vector: &[("instance-identity", None), ("hardware", None), ("executables", None)],
            failed: "nonce",
            policy_key: None,
            example: None,
            nonce: Some(b"challenge"),
        },
        Case {
            verifier: "azure",
            submod: "azure-sev-snp-vtpm",
            accept: args(dir, &[&azure_raw[..], &["--policy", &azure_policy]].concat()),
            refuse: args(dir, &azure_raw),
            // No launch measurement pinned: genuine, fresh, but not approved.
            status: "warning",
            vector: &[("hardware", Some(2)), ("instance-identity", Some(2)), ("executables", None)],
            failed: "provisional_firmware",
            policy_key: Some("allow_provisional_firmware"),
            example: Some("examples/policies/azure.toml"),
            nonce: Some(b"challenge"),
        },
        Case {
            verifier: "gce",
            submod: "gcp-shielded-vm",
            accept: args(dir, &[&gce[..], &["--dangerous-no-nonce"]].concat()),
            refuse: args(dir, &[&gce[..], &["--nonce-text", "9009"]].concat()),
            // No nonce, no reference values: no identity or executables claim (claiming them would over-claim).
            status: "warning",
            vector: &[("hardware", Some(2)), ("instance-identity", None), ("executables", None)],
            failed: "nonce",
            policy_key: None,
            example: Some("examples/policies/gce.toml"),
            nonce: None,
        },
    ]
}

fn run(a: &[String], extra: &[&str]) -> common::Run {
    let all: Vec<&str> = a.iter().map(String::as_str).chain(extra.iter().copied()).collect();
    attest(Path::new("."), &all)
}

#[test]
fn results_conform_to_the_schema_and_refusals_name_check_and_key() {
    let Some(dir) = common::testdata() else { return };
    let mut files = Vec::new();
    for c in cases(&dir) {
        let ok = run(&c.accept, &["--json"]);
        assert_eq!(ok.code, 0, "{}: {ok:?}", c.verifier);
        let v = ok.json();
        assert_eq!((v["schema"].as_str(), v["verifier"].as_str()), (Some("attest-result/1"), Some(c.verifier)), "{v}");
        assert_eq!(
            (v["accepted"].as_bool(), v["status"].as_str()),
            (Some(true), Some(c.status)),
            "{}: {v}",
            c.verifier
        );
        assert!(v["failure"].is_null(), "{v}");
        for (claim, value) in c.vector {
            assert_eq!(v["trustworthiness_vector"][claim].as_i64(), *value, "{} {claim}: {v}", c.verifier);
        }

        let no = run(&c.refuse, &["--json"]);
        assert_eq!(no.code, 1, "{}: {no:?}", c.verifier);
        let r = no.json();
        assert_eq!((r["accepted"].as_bool(), r["status"].as_str()), (Some(false), Some("contraindicated")), "{r}");
        assert_eq!(r["failure"]["check"], c.failed, "{}: {r}", c.verifier);
        assert_eq!(r["failure"]["class"], "refused", "{r}");
        assert_eq!(r["failure"]["policy_key"].as_str(), c.policy_key, "{}: {r}", c.verifier);
        assert_eq!(r["checks"][c.failed], "failed", "the refusal keeps its checks: {r}");

        // Text: the input, the reason, the check, the key and the example policy.
        let text = run(&c.refuse, &[]);
        assert_eq!((text.code, text.stdout.as_str()), (1, ""), "{text:?}");
        assert!(text.stderr.starts_with("REJECTED: "), "{text:?}");
        assert!(text.stderr.contains(&format!("failed check: {}", c.failed)), "{text:?}");
        let named = c.refuse.iter().filter(|a| a.contains('/')).any(|a| text.stderr.contains(a.as_str()));
        assert!(named, "names the input: {text:?}");
        if let Some(key) = c.policy_key {
            assert!(text.stderr.contains(&format!("policy key:   {key}")), "{text:?}");
        }
        if let (Some(example), Some(_)) = (c.example, c.policy_key) {
            assert!(text.stderr.contains(example), "{text:?}");
            assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(example).is_file(), "{example}");
        }
        assert!(!text.stderr.contains("::") && !text.stderr.contains("Some("), "no Rust names: {text:?}");

        for (name, r) in [("accept", &ok), ("refuse", &no)] {
            let f = scratch(&format!("contracts-{}-{name}.json", c.verifier));
            std::fs::write(&f, &r.stdout).unwrap();
            files.push(f);
        }
    }
    validate_results(&files);
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn ear_tokens_verify_with_pyjwt_for_every_verifier() {
    let Some(dir) = common::testdata() else { return };
    let key = openssl::ec::EcKey::generate(
        &openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap(),
    )
    .unwrap();
    let key_file = scratch("contracts-ear.key.pem");
    std::fs::write(&key_file, key.private_key_to_pem().unwrap()).unwrap();
    let public = scratch("contracts-ear.pub.pem");
    std::fs::write(&public, openssl::pkey::PKey::from_ec_key(key).unwrap().public_key_to_pem().unwrap()).unwrap();
    let key_path = key_file.display().to_string();
    let ear = ["--format", "ear", "--ear-key", &key_path];
    let Some(py) = venv("jwt") else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ear/verify_ear.py");
    let verify = |token: &str, name: &str| -> Value {
        let t = scratch(&format!("contracts-{name}.jwt"));
        std::fs::write(&t, token).unwrap();
        let out = std::process::Command::new(&py).arg(&script).arg(&t).arg(&public).arg("ES256").output().unwrap();
        let _ = std::fs::remove_file(&t);
        assert!(out.status.success(), "{name}: PyJWT refuses: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    for c in cases(&dir) {
        let before = now();
        let ok = run(&c.accept, &ear);
        assert_eq!(ok.code, 0, "{}: {ok:?}", c.verifier);
        let claims = verify(ok.stdout.trim(), c.verifier);
        let after = now();
        let iat = claims["iat"].as_u64().unwrap();
        assert!((before..=after).contains(&iat), "{}: iat {iat} is the time of issue, not --at", c.verifier);
        assert_eq!(claims["eat_profile"], "tag:github.com,2023:veraison/ear", "{claims}");
        let build = claims["ear.verifier-id"]["build"].as_str().unwrap();
        assert!(build.contains(env!("CARGO_PKG_VERSION")) && build.contains("commit"), "{claims}");
        match c.nonce {
            Some(n) => {
                use base64::Engine as _;
                let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(n);
                assert_eq!(claims["eat_nonce"].as_str(), Some(b64.as_str()), "{claims}");
            }
            None => assert!(claims.get("eat_nonce").is_none(), "{claims}"),
        }
        let sub = &claims["submods"][c.submod];
        assert_eq!(sub["ear.status"], c.status, "{}: {claims}", c.verifier);
        for (claim, value) in c.vector {
            assert_eq!(sub["ear.trustworthiness-vector"][claim].as_i64(), *value, "{} {claim}: {claims}", c.verifier);
        }
        assert!(sub["attest.checks"].as_object().is_some_and(|m| !m.is_empty()), "{claims}");

        let no = run(&c.refuse, &ear);
        assert_eq!(no.code, 1, "{}: {no:?}", c.verifier);
        let claims = verify(no.stdout.trim(), &format!("{}-refused", c.verifier));
        let sub = &claims["submods"][c.submod];
        assert_eq!(sub["ear.status"], "contraindicated", "{claims}");
        assert_eq!(sub["attest.failure"]["check"], c.failed, "{claims}");
        assert_eq!(sub["attest.checks"][c.failed], "failed", "{claims}");
        assert!(no.stderr.contains("REJECTED"), "{no:?}");
    }
    // EAT's minimum nonce length: a 4-byte nonce is carried as attest.nonce only.
    let short = [
        "tpm",
        "verify",
        "--ak",
        "@azure-cvm-tooling/akpub.pem",
        "--quote",
        "@azure-cvm-tooling/quote.bin",
        "--nonce",
        "01020304",
        "--at",
        AT,
    ];
    let r = run(&args(&dir, &short), &ear);
    assert_eq!(r.code, 1, "{r:?}");
    let claims = verify(r.stdout.trim(), "short-nonce");
    assert!(claims.get("eat_nonce").is_none() && claims["attest.nonce"] == "01020304", "{claims}");
    for f in [key_file, public] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn random_and_truncated_inputs_exit_2_through_every_verifier() {
    let Some(dir) = common::testdata() else { return };
    // (subcommand template with {} for the input, the real input it is derived from)
    let rows: &[(&[&str], &str)] = &[
        (
            &["snp", "verify", "{}", "--vcek", "@constellation-azure-snp/vcek.pem", "--at", AT],
            "constellation-azure-snp/attestation.bin",
        ),
        (
            &["tdx", "verify", "{}", "--collateral", "@go-tdx-guest/collateral_SPR_E4.json", "--at", "2023-07-01"],
            "trustee-tdx/tdx_quote_4.dat",
        ),
        (
            &["tpm", "verify", "--ak", "@azure-cvm-tooling/akpub.pem", "--quote", "{}", "--nonce-text", "challenge"],
            "azure-cvm-tooling/quote.bin",
        ),
        (&["tpm", "verify", "--evidence", "{}", "--nonce", TRUSTEE_TPM_NONCE], "trustee-tpm/tpm_evidence.json"),
        (&["azure", "verify", "--evidence", "{}", "--nonce-text", "challenge"], "trustee-az-snp-vtpm/evidence-v1.json"),
        (
            &[
                "azure",
                "verify",
                "--hcl-report",
                "{}",
                "--vcek",
                "@trustee-az-snp-vtpm/vcek.pem",
                "--quote",
                "@trustee-az-snp-vtpm/quote.bin",
                "--nonce-text",
                "challenge",
            ],
            "trustee-az-snp-vtpm/hcl-report.bin",
        ),
        (&["gce", "verify", "{}", "--dangerous-no-nonce", "--at", AT], "go-tpm-tools/gce-cos-85-no-nonce.pb"),
        (
            &[
                "document",
                "verify",
                "{}",
                "--variant",
                "gcp-shielded-vm",
                "--measurements",
                "@@measurements.json",
                "--dangerous-no-nonce",
            ],
            "",
        ),
    ];
    let measurements = scratch("contracts-measurements.json");
    // A valid measurements file: the document row must fail on the document, not on its measurements.
    std::fs::write(&measurements, format!(r#"{{"4": {{"expected": "{}", "warnOnly": false}}}}"#, "11".repeat(32)))
        .unwrap();
    let mut table = String::new();
    let mut wrong = Vec::new();
    for (row, real) in rows {
        let original =
            if real.is_empty() { attest_test_support::noise(300, 9) } else { std::fs::read(dir.join(real)).unwrap() };
        // A text file's trailing newline is not part of its structure; cut inside the structure.
        let inputs = attest_test_support::malformed_inputs(original.trim_ascii_end());
        for (what, bytes) in inputs {
            let f = scratch("contracts-input.bin");
            std::fs::write(&f, &bytes).unwrap();
            let a: Vec<String> = row
                .iter()
                .map(|s| match *s {
                    "{}" => f.display().to_string(),
                    "@@measurements.json" => measurements.display().to_string(),
                    s => s.strip_prefix('@').map_or_else(|| s.to_owned(), |rel| dir.join(rel).display().to_string()),
                })
                .collect();
            let r = run(&a, &[]);
            let line = format!("{:<18} {:<22} exit {}", format!("{} {}", row[0], row[1]), what, r.code);
            table.push_str(&line);
            table.push('\n');
            // Exit 2, and the message names the input that is malformed (not another flag's file).
            let names_input = r.stderr.contains(&f.display().to_string());
            if r.code != 2 || r.stderr.contains("panicked") || !names_input {
                wrong.push(format!("{line} ({real}): {}", r.stderr.trim()));
            }
        }
    }
    println!("{table}");
    assert!(wrong.is_empty(), "malformed input must exit 2 with a message naming it:\n{}", wrong.join("\n"));
    let _ = std::fs::remove_file(measurements);
}

#[test]
fn help_version_and_messages() {
    let help = attest(Path::new("."), &["--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    for needle in
        ["Exit status:", "  0  accepted", "  1  refused", "  2  malformed input or wrong usage", "examples/policies/"]
    {
        assert!(help.stdout.contains(needle), "{needle}: {}", help.stdout);
    }
    let version = attest(Path::new("."), &["--version"]);
    let want = format!("attest {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(version.code == 0 && version.stdout.starts_with(&want), "{version:?}");
    // A document that cannot be read: exit 2, the message names the input (and no Rust paths).
    let r = attest(
        Path::new("."),
        &["document", "verify", "x", "--measurements", "m", "--variant", "qemu-tdx", "--dangerous-no-nonce"],
    );
    assert!(r.code == 2 && r.stderr.contains("DOCUMENT x") && !r.stderr.contains("::"), "{r:?}");

    let Some(dir) = common::testdata() else { return };
    let tdx = args(
        &dir,
        &["tdx", "verify", "@trustee-tdx/tdx_quote_4.dat", "--collateral", "@go-tdx-guest/collateral_SPR_E4.json"],
    );
    let r = run(&tdx, &["--json", "--format", "text"]);
    assert!(r.code == 2 && r.stderr.contains("--json and --format text exclude each other"), "{r:?}");
    // Evidence that carries a nonce, verified with --dangerous-no-nonce: the message says so plainly.
    let r = run(
        &args(&dir, &["tpm", "verify", "--evidence", "@trustee-tpm/tpm_evidence.json", "--dangerous-no-nonce"]),
        &[],
    );
    assert!(r.code == 1 && r.stderr.contains("expected no nonce (empty), found the nonce a041"), "{r:?}");
}
