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

/// `attest measurements sign` stamps a monotonic version (and an expiry) into the signed bytes; `show` and
/// `verify` print them; a version not above the file's own is refused; `attest admission issue` signs a
/// one-time admission for exactly one identity and name.
#[test]
fn sign_versions_and_admissions() {
    let dir = std::env::temp_dir().join(format!("attest-meas-sign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).to_string_lossy().into_owned();
    std::fs::write(dir.join("a.json"), A).unwrap();
    openssl(&dir, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"]);
    openssl(&dir, &["ec", "-in", "key.pem", "-pubout", "-out", "pub.pem"]);

    let (code, _, err) = attest(&[
        "measurements",
        "sign",
        &p("a.json"),
        "--key",
        &p("key.pem"),
        "--version",
        "3",
        "--valid-for",
        "1d",
        "-o",
        &p("a3.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = attest(&[
        "measurements",
        "verify",
        &p("a3.json"),
        "--signature",
        &p("a3.json.sig"),
        "--public-key",
        &p("pub.pem"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["freshness"]["measurementsVersion"], 3);
    assert!(v["freshness"]["expires"].as_str().unwrap().ends_with('Z'));
    let (code, out, _) = attest(&["measurements", "show", &p("a3.json")]);
    assert_eq!(code, 0);
    assert!(out.starts_with("version 3, expires "), "{out}");
    // Without --version: the next one. With a version not above the file's: refused.
    assert_eq!(attest(&["measurements", "sign", &p("a3.json"), "--key", &p("key.pem"), "-o", &p("a4.json")]).0, 0);
    assert!(std::fs::read_to_string(dir.join("a4.json")).unwrap().contains("\"measurementsVersion\": 4"));
    let (code, _, err) =
        attest(&["measurements", "sign", &p("a4.json"), "--key", &p("key.pem"), "--version", "4", "-o", &p("x.json")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not above"), "{err}");
    // A past expiry, or a key that is not P-256: refused.
    let (code, _, _) = attest(&[
        "measurements",
        "sign",
        &p("a.json"),
        "--key",
        &p("key.pem"),
        "--expires",
        "2020-01-01T00:00:00Z",
        "-o",
        &p("x.json"),
    ]);
    assert_eq!(code, 2);
    openssl(&dir, &["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "p384.pem"]);
    assert_eq!(attest(&["measurements", "sign", &p("a.json"), "--key", &p("p384.pem"), "-o", &p("x.json")]).0, 2);
    // Changing the version of a signed file breaks its signature.
    let text = std::fs::read_to_string(dir.join("a4.json"))
        .unwrap()
        .replace("\"measurementsVersion\": 4", "\"measurementsVersion\": 9");
    std::fs::write(dir.join("a9.json"), text).unwrap();
    let (code, _, _) = attest(&[
        "measurements",
        "verify",
        &p("a9.json"),
        "--signature",
        &p("a4.json.sig"),
        "--public-key",
        &p("pub.pem"),
    ]);
    assert_eq!(code, 1);

    // An admission: for one identity and name, signed, verifiable with the public key.
    let id = format!("ak:{}", "ab".repeat(32));
    let (code, _, err) = attest(&[
        "admission",
        "issue",
        "--key",
        &p("key.pem"),
        "--identity",
        &id,
        "--node-name",
        "node-4",
        "--valid-for",
        "1h",
        "-o",
        &p("node-4.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let envelope: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("node-4.json")).unwrap()).unwrap();
    let payload =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, envelope["payload"].as_str().unwrap())
            .unwrap();
    let payload: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(payload["identity"], id.as_str());
    assert_eq!(payload["nodeName"], "node-4");
    assert_eq!(payload["type"], "attest.control-plane-admission.v1");
    let (key, out) = (p("key.pem"), p("bad.json"));
    for (identity, name) in [("node-4", "node-4"), (id.as_str(), "Node_4")] {
        let args = ["admission", "issue", "--key", &key, "--identity", identity, "--node-name", name, "-o", &out];
        assert_eq!(attest(&args).0, 2, "{identity} {name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
