//! Every shared real TPM, Azure and GCE vector (`../shared/testdata`) through `attest tpm verify`,
//! `attest azure verify` and `attest gce verify`, as a table: each row gets the verdict its README
//! documents (exit 0 accepted / 1 rejected, with the JSON verdict), and a tampered copy of each accepted
//! input — one byte of what is signed or bound changed, the file still well-formed — is refused (exit 1).

mod common;

use common::{attest, scratch};
use serde_json::Value;
use std::path::Path;

/// The trusted time of every row: inside every certificate's validity.
const AT: &str = "2025-06-01";
/// The 48-byte nonce of trustee's Genoa evidence.
const GENOA_NONCE: &str =
    "0218488bae25d2509232bf676f1a66a30d7372add909109b36016ef136f2938ca05475f8b46094de6b64270ea35d950f";
/// trustee-tpm's extraData: 48 bytes and 16 zero bytes.
const TRUSTEE_TPM_NONCE: &str = "a04182b506878d4f29b91ee606a71a0d3361ccf1b22db20c98adcaa537bea393ef0e41a18b3569ab678f1497fbc5c12000000000000000000000000000000000";

/// The quote signature array of trustee's v0 layout (pretty-printed), and the same with a byte prepended.
const SIG_ARRAY: &str = "\"signature\": [\n      ";
const SIG_ARRAY_PLUS_ONE: &str = "\"signature\": [\n      7,\n      ";

/// `attest tpm verify` of a quote under an AK (`--ak FILE` or `--ak-from-hcl FILE`) with a nonce (`--nonce HEX` or
/// `--nonce-text TEXT`); `hcl HCL, QUOTE` is the AK from an HCL report with the nonce text `challenge`.
macro_rules! tpm_verify {
    (hcl $hcl:literal, $quote:literal) => {
        tpm_verify!("--ak-from-hcl", $hcl, $quote, "--nonce-text", "challenge")
    };
    ($ak_flag:literal, $ak:literal, $quote:literal, $nonce_flag:literal, $nonce:literal) => {
        &["tpm", "verify", $ak_flag, $ak, "--quote", $quote, $nonce_flag, $nonce]
    };
}

/// Rows that `verdict_facts` looks at more closely.
const GCE_NO_NONCE: &[&str] = &["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb", "--dangerous-no-nonce"];
const AZURE_V0: &[&str] =
    &["azure", "verify", "--evidence", "@trustee-az-snp-vtpm/evidence-v0.json", "--nonce-text", "challenge"];
const AKPUB_QUOTE: &[&str] =
    tpm_verify!("--ak", "@azure-cvm-tooling/akpub.pem", "@azure-cvm-tooling/quote.bin", "--nonce-text", "challenge");

/// How a row's input is tampered: the file (an argument given as `@rel`) and what to change.
#[derive(Clone, Copy)]
enum Tamper {
    /// XOR one byte at this offset.
    Byte(&'static str, usize),
    /// Replace the first occurrence of a text by another (JSON evidence).
    Text(&'static str, &'static str, &'static str),
}

struct Row {
    name: &'static str,
    args: &'static [&'static str],
    /// The documented verdict: `Ok(())` accepted, `Err(text)` rejected with an error containing `text`.
    verdict: Result<(), &'static str>,
    tamper: Option<Tamper>,
}

const ROWS: &[Row] = &[
    Row {
        name: "azure-cvm-tooling quote.bin under akpub.pem",
        args: AKPUB_QUOTE,
        verdict: Ok(()),
        tamper: Some(Tamper::Byte("azure-cvm-tooling/quote.bin", 40)),
    },
    Row {
        name: "azure-cvm-tooling quote.bin, upstream's wrong nonce",
        args: tpm_verify!(
            "--ak",
            "@azure-cvm-tooling/akpub.pem",
            "@azure-cvm-tooling/quote.bin",
            "--nonce",
            "01020304"
        ),
        verdict: Err("extraData"),
        tamper: None,
    },
    Row {
        name: "azure-cvm-tooling quote.bin is not signed by trustee's HCLAkPub",
        args: tpm_verify!(hcl "@trustee-az-snp-vtpm/hcl-report.bin", "@azure-cvm-tooling/quote.bin"),
        verdict: Err("signature"),
        tamper: None,
    },
    Row {
        name: "trustee-tpm tpm_evidence.json",
        args: &["tpm", "verify", "--evidence", "@trustee-tpm/tpm_evidence.json", "--nonce", TRUSTEE_TPM_NONCE],
        verdict: Ok(()),
        // PCR 0's value (the quote's pcrDigest no longer matches).
        tamper: Some(Tamper::Text("trustee-tpm/tpm_evidence.json", "\"0000000000000000", "\"0100000000000000")),
    },
    Row {
        name: "trustee-az-snp-vtpm quote.bin under its HCLAkPub",
        args: tpm_verify!(hcl "@trustee-az-snp-vtpm/hcl-report.bin", "@trustee-az-snp-vtpm/quote.bin"),
        verdict: Ok(()),
        tamper: Some(Tamper::Byte("trustee-az-snp-vtpm/quote.bin", 300)),
    },
    Row {
        name: "trustee-az-snp-vtpm tpm-quote-v1.json (hex) under its HCLAkPub",
        args: tpm_verify!(hcl "@trustee-az-snp-vtpm/hcl-report.bin", "@trustee-az-snp-vtpm/tpm-quote-v1.json"),
        verdict: Ok(()),
        tamper: Some(Tamper::Text(
            "trustee-az-snp-vtpm/tpm-quote-v1.json",
            "\"signature\": \"2a",
            "\"signature\": \"2b",
        )),
    },
    Row {
        name: "trustee-az-tdx-vtpm quote.bin under its HCLAkPub (TDX HCL report)",
        args: tpm_verify!(hcl "@trustee-az-tdx-vtpm/hcl-report.bin", "@trustee-az-tdx-vtpm/quote.bin"),
        verdict: Ok(()),
        tamper: Some(Tamper::Byte("trustee-az-tdx-vtpm/quote.bin", 1000)),
    },
    Row {
        name: "trustee-az-tdx-vtpm tpm-quote-v1.json under its HCLAkPub",
        args: tpm_verify!(hcl "@trustee-az-tdx-vtpm/hcl-report.bin", "@trustee-az-tdx-vtpm/tpm-quote-v1.json"),
        verdict: Ok(()),
        tamper: Some(Tamper::Text(
            "trustee-az-tdx-vtpm/tpm-quote-v1.json",
            "\"signature\": \"a2",
            "\"signature\": \"a3",
        )),
    },
    Row {
        name: "trustee-az-snp-vtpm evidence-v0.json (Milan)",
        args: AZURE_V0,
        verdict: Ok(()),
        // A byte of the quote's signature (a JSON number array).
        tamper: Some(Tamper::Text("trustee-az-snp-vtpm/evidence-v0.json", SIG_ARRAY, SIG_ARRAY_PLUS_ONE)),
    },
    Row {
        name: "trustee-az-snp-vtpm evidence-v1.json (Milan, v1 layout)",
        args: &["azure", "verify", "--evidence", "@trustee-az-snp-vtpm/evidence-v1.json", "--nonce-text", "challenge"],
        verdict: Ok(()),
        // PCR 0 of the hex quote.
        tamper: Some(Tamper::Text(
            "trustee-az-snp-vtpm/evidence-v1.json",
            "\"e15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced\"",
            "\"f15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced\"",
        )),
    },
    Row {
        name: "trustee-az-snp-vtpm evidence-genoa.json (Genoa)",
        args: &["azure", "verify", "--evidence", "@trustee-az-snp-vtpm/evidence-genoa.json", "--nonce", GENOA_NONCE],
        verdict: Ok(()),
        tamper: Some(Tamper::Text("trustee-az-snp-vtpm/evidence-genoa.json", SIG_ARRAY, SIG_ARRAY_PLUS_ONE)),
    },
    Row {
        name: "trustee-az-snp-vtpm raw parts: provisional firmware, refused by the strict default policy",
        args: &[
            "azure",
            "verify",
            "--hcl-report",
            "@trustee-az-snp-vtpm/hcl-report.bin",
            "--vcek",
            "@trustee-az-snp-vtpm/vcek.pem",
            "--quote",
            "@trustee-az-snp-vtpm/tpm-quote-v1.json",
            "--nonce-text",
            "challenge",
        ],
        verdict: Err("provisional firmware"),
        tamper: None,
    },
    Row {
        name: "trustee-az-snp-vtpm raw parts, provisional firmware allowed",
        args: &[
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
            "--policy",
            "@@provisional.toml",
        ],
        verdict: Ok(()),
        // Upstream's negative: byte 0x06e0 of the HCL report (the runtime data) → REPORT_DATA binding fails.
        tamper: Some(Tamper::Byte("trustee-az-snp-vtpm/hcl-report.bin", 0x06e0)),
    },
    Row {
        name: "go-tpm-tools gce-cos-85-no-nonce.pb without a nonce",
        args: GCE_NO_NONCE,
        verdict: Ok(()),
        // The first quote's TPMS_ATTEST starts at byte 288 (its magic): a byte of its clock info.
        tamper: Some(Tamper::Byte("go-tpm-tools/gce-cos-85-no-nonce.pb", 288 + 50)),
    },
    Row {
        name: "go-tpm-tools gce-cos-85-no-nonce.pb with a nonce (upstream: any nonce fails)",
        args: &["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb", "--nonce-text", "9009"],
        verdict: Err("extraData"),
        tamper: None,
    },
];

/// Resolves `@rel` to testdata (or to `swap`'s path for its file) and `@@name` to this test's scratch files.
fn resolve(testdata: &Path, row: &[&str], swap: Option<(&str, &Path)>) -> Vec<String> {
    row.iter()
        .map(|a| {
            if let Some(name) = a.strip_prefix("@@") {
                scratch(name).display().to_string()
            } else if let Some(rel) = a.strip_prefix('@') {
                match swap {
                    Some((file, path)) if file == rel => path.display().to_string(),
                    _ => testdata.join(rel).display().to_string(),
                }
            } else {
                (*a).to_owned()
            }
        })
        .collect()
}

/// [`resolve`], then the trusted time and JSON output.
fn args(testdata: &Path, row: &[&str], swap: Option<(&str, &Path)>) -> Vec<String> {
    let mut out = resolve(testdata, row, swap);
    out.extend(["--at".to_owned(), AT.to_owned(), "--json".to_owned()]);
    out
}

fn run(args: &[String]) -> common::Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    attest(Path::new("."), &refs)
}

#[track_caller]
fn check_verdict(name: &str, run: &common::Run, verdict: Result<(), &str>) -> Value {
    let v = run.json();
    match verdict {
        Ok(()) => {
            assert_eq!(run.code, 0, "{name}: {run:?}");
            assert_eq!(v["accepted"], true, "{name}: {v}");
            let checks = v["checks"].as_object().unwrap();
            assert!(checks.values().all(|o| o == "passed" || o == "waived" || o == "not-run"), "{name}: {v}");
        }
        Err(text) => {
            // Refused evidence exits 1, malformed evidence (a tampered structure) 2.
            let code = if v["failure"]["class"] == "refused" { 1 } else { 2 };
            assert_eq!(run.code, code, "{name}: {run:?}");
            assert_eq!(v["accepted"], false, "{name}: {v}");
            assert!(v["failure"]["reason"].as_str().unwrap().contains(text), "{name}: {v}");
        }
    }
    v
}

fn tampered(testdata: &Path, t: Tamper, n: usize) -> (&'static str, std::path::PathBuf) {
    let (file, bytes) = match t {
        Tamper::Byte(file, at) => {
            let mut b = std::fs::read(testdata.join(file)).unwrap();
            b[at] ^= 0x01;
            (file, b)
        }
        Tamper::Text(file, from, to) => {
            let text = std::fs::read_to_string(testdata.join(file)).unwrap();
            assert!(text.contains(from), "{file} has no {from:?}");
            (file, text.replacen(from, to, 1).into_bytes())
        }
    };
    let path = scratch(&format!("tampered-{n}-{}", file.replace('/', "-")));
    std::fs::write(&path, bytes).unwrap();
    (file, path)
}

#[test]
fn every_vector_gets_its_documented_verdict_and_tampered_copies_are_refused() {
    let Some(testdata) = common::testdata() else { return };
    std::fs::write(scratch("provisional.toml"), "allow_provisional_firmware = true\n").unwrap();
    let mut table = String::from("\nvector | verdict | tampered copy\n");
    for (n, row) in ROWS.iter().enumerate() {
        let result = run(&args(&testdata, row.args, None));
        let v = check_verdict(row.name, &result, row.verdict);
        let mut line = format!("{} | {}", row.name, if v["accepted"] == true { "accepted" } else { "rejected" });
        if let Some(t) = row.tamper {
            let (file, path) = tampered(&testdata, t, n);
            let result = run(&args(&testdata, row.args, Some((file, &path))));
            assert_eq!(result.code, 1, "{} (tampered {file}): {result:?}", row.name);
            let v = result.json();
            assert_eq!(v["accepted"], false, "{} (tampered): {v}", row.name);
            line.push_str(" | refused: ");
            line.push_str(v["failure"]["reason"].as_str().unwrap_or_default());
        }
        table.push_str(&line);
        table.push('\n');
    }
    println!("{table}");
}

#[test]
fn verdict_facts() {
    let Some(testdata) = common::testdata() else { return };
    let gce = run(&args(&testdata, GCE_NO_NONCE, None));
    let v = check_verdict("gce", &gce, Ok(()));
    assert_eq!(v["checks"]["nonce"], "waived", "{v}");
    assert_eq!(v["claims"]["instance"]["zone"], "us-central1-a", "{v}");
    // No nonce and no reference values: genuine, nothing approved what runs.
    assert_eq!(v["status"], "warning", "{v}");
    let az = run(&args(&testdata, AZURE_V0, None));
    let v = check_verdict("azure", &az, Ok(()));
    assert_eq!(
        v["claims"]["pcrs"]["sha256"]["0"], "e15c44796beabf46abcec7c57e590942041e47497e4ec27571c8b7664f48dced",
        "{v}"
    );
    // A quote's AK given by the user is not certified: EAR makes no identity claim.
    let tpm = run(&args(&testdata, AKPUB_QUOTE, None));
    let v = check_verdict("tpm", &tpm, Ok(()));
    assert!(v["input"]["ak"].as_str().unwrap().contains("NOT certified"), "{v}");
}

#[test]
fn usage_errors_exit_2() {
    let Some(testdata) = common::testdata() else { return };
    let cases: &[&[&str]] = &[
        // No nonce choice at all (clap).
        &["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb"],
        // An empty nonce is not "no nonce".
        &["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb", "--nonce", ""],
        // A raw TPMS_ATTEST needs its signature and PCRs.
        tpm_verify!("--ak", "@azure-cvm-tooling/akpub.pem", "@azure-cvm-tooling/akpub.pem", "--nonce-text", "x"),
        // EAR without a key.
        &["gce", "verify", "@go-tpm-tools/gce-cos-85-no-nonce.pb", "--dangerous-no-nonce", "--format", "ear"],
        // Azure TDX evidence is not SNP evidence.
        &["azure", "verify", "--evidence", "@trustee-az-tdx-vtpm/evidence-v1.json", "--nonce-text", "challenge"],
    ];
    for c in cases {
        let c = resolve(&testdata, c, None);
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        let r = attest(Path::new("."), &refs);
        assert_eq!(r.code, 2, "{c:?}: {r:?}");
    }
}

/// Azure evidence of version 2 binds its REPORT_DATA in the runtime data's user-data. There is no real v2
/// vector: the v1 one with its envelope's `version` set to 2 is one (the parser accepts versions 1 and 2 and
/// nothing signs the envelope; the CLI asks for the user-data right after parsing, before any signature).
#[test]
fn azure_v2_evidence_without_user_data_is_a_usage_error_naming_the_flags() {
    let Some(testdata) = common::testdata() else { return };
    let mut v2: Value =
        serde_json::from_slice(&std::fs::read(testdata.join("trustee-az-snp-vtpm/evidence-v1.json")).unwrap()).unwrap();
    assert_eq!(v2["version"], 1);
    v2["version"] = 2.into();
    let file = scratch("evidence-v2.json");
    std::fs::write(&file, serde_json::to_vec(&v2).unwrap()).unwrap();
    let path = file.display().to_string();
    let verify = |extra: &[&str]| {
        let mut a = vec!["azure", "verify", "--evidence", &path, "--nonce-text", "challenge", "--at", "2025-06-01"];
        a.extend_from_slice(extra);
        attest(Path::new("."), &a)
    };
    for extra in [&[][..], &["--json"]] {
        let r = verify(extra);
        assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{r:?}");
        for needle in ["v2 evidence", "--user-data", "--dangerous-ignore-user-data", &path] {
            assert!(r.stderr.contains(needle), "{needle}: {r:?}");
        }
        assert!(!r.stderr.contains("::") && !r.stderr.contains("UserData"), "no Rust names: {r:?}");
    }
    // The waiver verifies it (the user-data unchecked, said so); other user-data is a refusal.
    let r = verify(&["--dangerous-ignore-user-data", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("not checked (DANGEROUS waiver)"), "{r:?}");
    let r = verify(&["--user-data", &"11".repeat(64)]);
    assert_eq!(r.code, 1, "{r:?}");
    let _ = std::fs::remove_file(file);
}
