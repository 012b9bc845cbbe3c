//! `attest measurements`: files signed by the `openssl` command-line tool (a third-party signer), shown,
//! compared and verified through the built binary.

use std::path::Path;
use std::process::Command;

const A: &str = r#"{"4": {"expected": "1111111111111111111111111111111111111111111111111111111111111111", "warnOnly": false},
 "9": {"expected": "2222222222222222222222222222222222222222222222222222222222222222", "warnOnly": true}}"#;
const B: &str = r#"{"4": {"expected": "1111111111111111111111111111111111111111111111111111111111111111", "warnOnly": false},
 "9": {"expected": "3333333333333333333333333333333333333333333333333333333333333333", "warnOnly": true}}"#;

fn attest(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_attest")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn openssl(dir: &Path, args: &[&str]) {
    let st = Command::new("openssl").current_dir(dir).args(args).status().unwrap();
    assert!(st.success(), "openssl {args:?}");
}

#[test]
fn show_diff_verify() {
    let dir = std::env::temp_dir().join(format!("attest-meas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_string_lossy().into_owned();
    std::fs::write(dir.join("a.json"), A).unwrap();
    std::fs::write(dir.join("b.json"), B).unwrap();
    std::fs::write(dir.join("a.yaml"), "4:\n  expected: \"1111111111111111111111111111111111111111111111111111111111111111\"\n  warnOnly: false\n9:\n  expected: \"2222222222222222222222222222222222222222222222222222222222222222\"\n  warnOnly: true\n").unwrap();

    let (code, out, _) = attest(&["measurements", "show", &p("a.json")]);
    assert_eq!(code, 0);
    assert!(out.contains("warn-only") && out.contains("enforced"), "{out}");
    // JSON and YAML forms of the same map are identical; A and B differ in PCR 9 only.
    assert_eq!(attest(&["measurements", "diff", &p("a.json"), &p("a.yaml")]).0, 0);
    let (code, out, _) = attest(&["measurements", "diff", &p("a.json"), &p("b.json"), "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["identical"], false);
    assert_eq!(v["pcrs"][1]["status"], "value-differs");

    // A P-256 key and a detached signature made by OpenSSL.
    openssl(&dir, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"]);
    openssl(&dir, &["ec", "-in", "key.pem", "-pubout", "-out", "pub.pem"]);
    openssl(&dir, &["dgst", "-sha256", "-sign", "key.pem", "-out", "a.json.sig", "a.json"]);
    let (code, out, _) = attest(&[
        "measurements",
        "verify",
        &p("a.json"),
        "--signature",
        &p("a.json.sig"),
        "--public-key",
        &p("pub.pem"),
    ]);
    assert_eq!(code, 0, "{out}");
    // The signature does not cover b.json.
    let (code, _, err) = attest(&[
        "measurements",
        "verify",
        &p("b.json"),
        "--signature",
        &p("a.json.sig"),
        "--public-key",
        &p("pub.pem"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--signature") && err.contains("failed check: signature"), "{err}");
    // Inputs that are not what their flag needs are usage errors naming the flag: a private key given as
    // the public key, a signature that is not DER.
    let verify = |sig: &str, key: &str| {
        attest(&["measurements", "verify", &p("a.json"), "--signature", &p(sig), "--public-key", &p(key)])
    };
    let (code, _, err) = verify("a.json.sig", "key.pem");
    assert!(code == 2 && err.contains("--public-key") && err.contains("key.pem"), "{err}");
    assert!(!err.contains("a.json:"), "{err}");
    std::fs::write(dir.join("junk.sig"), b"\x01\x02 not a signature").unwrap();
    let (code, _, err) = verify("junk.sig", "pub.pem");
    assert!(code == 2 && err.contains("--signature") && err.contains("junk.sig"), "{err}");

    // Compare actual values: PCR 4 matches; PCR 9 differs but is warn-only → accepted; PCR 4 differing → rejected.
    std::fs::write(
        dir.join("ok.json"),
        r#"{"4": "1111111111111111111111111111111111111111111111111111111111111111", "9": "00"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("bad.json"),
        r#"{"4": "4444444444444444444444444444444444444444444444444444444444444444"}"#,
    )
    .unwrap();
    let args = |against: &str| {
        vec![
            "measurements".to_owned(),
            "verify".into(),
            p("a.json"),
            "--signature".into(),
            p("a.json.sig"),
            "--public-key".into(),
            p("pub.pem"),
            "--against".into(),
            p(against),
            "--json".into(),
        ]
    };
    let run = |a: Vec<String>| attest(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, out, _) = run(args("ok.json"));
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run(args("bad.json"));
    assert_eq!(code, 1, "{out}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["accepted"], false);

    // Unusable input: exit 2.
    assert_eq!(attest(&["measurements", "show", &p("missing.json")]).0, 2);
    std::fs::write(dir.join("short.json"), r#"{"4": {"expected": "11", "warnOnly": false}}"#).unwrap();
    assert_eq!(attest(&["measurements", "show", &p("short.json")]).0, 2);
    std::fs::remove_dir_all(&dir).ok();
}
