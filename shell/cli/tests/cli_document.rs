//! `attest document verify` on this project's own attestation documents (a `qemu-vtpm` document of a
//! software AK, bare and inside an aTLS certificate as a node sends it), and `--format ear`: the EAR token
//! is verified by PyJWT (a standard JWT library from PyPI, in `.venv`; scripts/setup-python.sh) and its
//! claims are checked. Without the venv the EAR check prints a NOTICE and passes, except under CI=true.

mod common;

use attest_engine::crypto::default_provider;
use attest_engine::tpm::alg::TPM_ALG_SHA256;
use attest_engine::variant::{AkBasis, Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_registration::{FileAkRegistry, ak_digest};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk};
use common::{attest, scratch};
use prost::Message as _;
use std::path::{Path, PathBuf};

const NONCE: [u8; 32] = [0x4E; 32];

struct Fixture {
    ak: SoftAk,
    pcrs: PcrBank,
    measurements: PathBuf,
    registry: PathBuf,
}

impl Fixture {
    fn new(tag: &str) -> Self {
        let ak = SoftAk::ecc_p256();
        let pcrs: PcrBank = core::array::from_fn(|i| [i as u8 + 1; 32]);
        let measurements = scratch(&format!("{tag}-measurements.json"));
        std::fs::write(
            &measurements,
            format!(r#"{{"4": {{"expected": "{}", "warnOnly": false}}}}"#, hex::encode(pcrs[4])),
        )
        .unwrap();
        let registry = scratch(&format!("{tag}-aks.json"));
        let _ = std::fs::remove_file(&registry);
        let reg = FileAkRegistry::open(&registry).unwrap();
        reg.register(ak_digest(&ak.tpm2b_public()).unwrap(), AkBasis::Pinned).unwrap();
        Self { ak, pcrs, measurements, registry }
    }

    /// A document binding `user_data` for `nonce`, quoting `pcrs`.
    fn document(&self, user_data: &[u8], nonce: &[u8], pcrs: &PcrBank) -> AttestationDocument {
        let extra = Validator::quote_nonce(default_provider(), &[], user_data, nonce);
        let q = self.ak.quote(&QuoteSpec::new(&extra, pcrs, 0x00FF_FFFF));
        AttestationDocument {
            variant: Variant::QemuVtpm.name().to_owned(),
            tpm: Some(TpmEvidence {
                ak_public: self.ak.tpm2b_public(),
                quote_attest: q.attest,
                quote_signature: q.signature,
                pcrs: (0u32..)
                    .zip(self.pcrs)
                    .map(|(index, v)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index, value: v.to_vec() })
                    .collect(),
                ..TpmEvidence::default()
            }),
            user_data: user_data.to_vec(),
            ..AttestationDocument::default()
        }
    }

    /// An aTLS certificate (PEM) carrying a document made for its key.
    fn certificate(&self, doc_for_other_key: bool) -> Vec<u8> {
        let key = attest_atls::cert::fresh_key().unwrap();
        let other = attest_atls::cert::fresh_key().unwrap();
        let spki = if doc_for_other_key { &other } else { &key }.public_key_to_der().unwrap();
        let doc = self.document(&openssl::sha::sha256(&spki), &NONCE, &self.pcrs);
        let cert = attest_atls::cert::build(&key, Some((Variant::QemuVtpm.oid(), &doc.encode_to_vec()))).unwrap();
        cert.to_pem().unwrap()
    }

    fn verify(&self, file: &Path, nonce: &[u8], extra: &[&str]) -> common::Run {
        let (file, m, r, n) = (
            file.display().to_string(),
            self.measurements.display().to_string(),
            self.registry.display().to_string(),
            hex::encode(nonce),
        );
        let mut args =
            vec!["document", "verify", &file, "--measurements", &m, "--ak-registry", &r, "--nonce", &n, "--json"];
        args.extend_from_slice(extra);
        attest(Path::new("."), &args)
    }
}

#[test]
fn documents_and_atls_certificates_verify_and_tampering_is_refused() {
    let f = Fixture::new("doc");
    // A bare document.
    let doc = scratch("doc.pb");
    std::fs::write(&doc, f.document(&[0x11; 32], &NONCE, &f.pcrs).encode_to_vec()).unwrap();
    let run = f.verify(&doc, &NONCE, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    assert_eq!(v["accepted"], true, "{v}");
    assert_eq!(v["checks"]["pcr_policy"], "passed", "{v}");
    let accepted = scratch("doc-accepted.json");
    std::fs::write(&accepted, &run.stdout).unwrap();
    // Another nonce: refused.
    let run = f.verify(&doc, &[0x4F; 32], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    let v = run.json();
    assert_eq!((v["verifier"].as_str(), v["failure"]["check"].as_str()), (Some("document"), Some("nonce")), "{v}");
    let refused = scratch("doc-refused.json");
    std::fs::write(&refused, &run.stdout).unwrap();
    common::validate_results(&[accepted.clone(), refused.clone()]);
    let _ = (std::fs::remove_file(accepted), std::fs::remove_file(refused));
    // A tampered document: the quote no longer matches the presented PCR 4.
    let mut pcrs = f.pcrs;
    pcrs[4][0] ^= 1;
    let mut tampered = f.document(&[0x11; 32], &NONCE, &f.pcrs);
    tampered.tpm.as_mut().unwrap().pcrs[4].value = pcrs[4].to_vec();
    std::fs::write(&doc, tampered.encode_to_vec()).unwrap();
    let run = f.verify(&doc, &NONCE, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.json()["failure"]["reason"].as_str().unwrap().contains("pcrDigest"), "{run:?}");

    // The aTLS certificate form: the document must bind this certificate's key.
    let cert = scratch("doc-cert.pem");
    std::fs::write(&cert, f.certificate(false)).unwrap();
    let run = f.verify(&cert, &NONCE, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.json()["evidence"].as_str().unwrap().contains("aTLS certificate"), "{run:?}");
    std::fs::write(&cert, f.certificate(true)).unwrap();
    let run = f.verify(&cert, &NONCE, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.json()["failure"]["reason"].as_str().unwrap().contains("certificate's key"), "{run:?}");
    // The certificate names its variant: asking for another is a usage error.
    let run = f.verify(&cert, &NONCE, &["--variant", "aws-sev-snp"]);
    assert_eq!(run.code, 2, "{run:?}");

    // An AK the registry does not know.
    let other = Fixture::new("doc-other");
    std::fs::write(&doc, other.document(&[0x11; 32], &NONCE, &other.pcrs).encode_to_vec()).unwrap();
    let run = f.verify(&doc, &NONCE, &[]);
    assert_eq!(run.code, 1, "{run:?}");
}

fn venv_python() -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let ok = py.is_file()
        && std::process::Command::new(&py).args(["-c", "import jwt, cryptography"]).status().is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "no .venv with PyJWT (run scripts/setup-python.sh); required under CI=true"
    );
    eprintln!("NOTICE: skipping the EAR check with PyJWT: no .venv with PyJWT (run scripts/setup-python.sh)");
    None
}

/// Verifies `token` with PyJWT; the claims, or `None` when PyJWT refuses it.
fn pyjwt(py: &Path, token: &str, public_pem: &[u8], alg: &str) -> Option<serde_json::Value> {
    let (t, k) = (scratch(&format!("ear-{alg}.jwt")), scratch(&format!("ear-{alg}.pub.pem")));
    std::fs::write(&t, token).unwrap();
    std::fs::write(&k, public_pem).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ear/verify_ear.py");
    let out = std::process::Command::new(py).arg(script).arg(&t).arg(&k).arg(alg).output().unwrap();
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn ear_tokens_verify_with_pyjwt_and_carry_the_verdict() {
    let fixture = Fixture::new("ear");
    let doc = scratch("ear-doc.pb");
    std::fs::write(&doc, fixture.document(&[0x22; 32], &NONCE, &fixture.pcrs).encode_to_vec()).unwrap();
    for (nid, alg) in [(openssl::nid::Nid::X9_62_PRIME256V1, "ES256"), (openssl::nid::Nid::SECP384R1, "ES384")] {
        let key = openssl::ec::EcKey::generate(&openssl::ec::EcGroup::from_curve_name(nid).unwrap()).unwrap();
        let key_file = scratch(&format!("ear-{alg}.key.pem"));
        std::fs::write(&key_file, key.private_key_to_pem().unwrap()).unwrap();
        let public = openssl::pkey::PKey::from_ec_key(key).unwrap().public_key_to_pem().unwrap();
        let key_path = key_file.display().to_string();

        // Accepted: an affirming token, exit 0.
        let (doc_path, measurements, registry, nonce) = (
            doc.display().to_string(),
            fixture.measurements.display().to_string(),
            fixture.registry.display().to_string(),
            hex::encode(NONCE),
        );
        let base = [
            "document",
            "verify",
            &doc_path,
            "--measurements",
            &measurements,
            "--ak-registry",
            &registry,
            "--format",
            "ear",
            "--ear-key",
            &key_path,
        ];
        let run = attest(Path::new("."), &[&base[..], &["--nonce", &nonce]].concat());
        assert_eq!(run.code, 0, "{run:?}");
        let token = run.stdout.trim().to_owned();
        assert_eq!(token.split('.').count(), 3, "{run:?}");
        // Rejected (another nonce): a contraindicated token, exit 1.
        let other = hex::encode([0x4F; 32]);
        let rejected = attest(Path::new("."), &[&base[..], &["--nonce", &other]].concat());
        assert_eq!(rejected.code, 1, "{rejected:?}");

        let Some(py) = venv_python() else { return };
        let claims = pyjwt(&py, &token, &public, alg).expect("PyJWT verifies the token");
        assert_eq!(claims["eat_profile"], "tag:github.com,2023:veraison/ear", "{claims}");
        assert_eq!(claims["eat_nonce"], "Tk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk4", "{claims}");
        let sub = &claims["submods"]["qemu-vtpm"];
        assert_eq!(sub["ear.status"], "affirming", "{claims}");
        assert_eq!(sub["ear.trustworthiness-vector"]["instance-identity"], 2, "{claims}");
        assert_eq!(sub["attest.checks"]["quote_signature"], "passed", "{claims}");
        assert!(claims["iat"].as_u64().is_some(), "{claims}");
        let claims = pyjwt(&py, rejected.stdout.trim(), &public, alg).expect("PyJWT verifies the rejection");
        assert_eq!(claims["submods"]["qemu-vtpm"]["ear.status"], "contraindicated", "{claims}");

        // PyJWT refuses a token whose claims were changed, and a token checked with another key.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let flipped = if &parts[1][10..11] == "A" { "B" } else { "A" };
        parts[1].replace_range(10..11, flipped);
        assert!(pyjwt(&py, &parts.join("."), &public, alg).is_none());
        let stranger = openssl::ec::EcKey::generate(&openssl::ec::EcGroup::from_curve_name(nid).unwrap()).unwrap();
        let stranger = openssl::pkey::PKey::from_ec_key(stranger).unwrap().public_key_to_pem().unwrap();
        assert!(pyjwt(&py, &token, &stranger, alg).is_none());
    }
}
