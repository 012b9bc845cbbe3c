//! Measurements files (`attest_measurements`): the parsers and the signed-file path; must never panic.
//!
//! The first byte picks the entry point, the rest is the input:
//! - even: `parse_any` (JSON or YAML, map / legacy / one-entry release list) and `parse_document`; on success
//!   every accessor, and decode∘encode is the identity (`to_json`, and `to_yaml` for a non-empty map);
//! - odd: `SignedMeasurements::verify_then_parse_with` under a fixed P-256 key, the input split as
//!   `sig_len (u8) ‖ signature ‖ file` (DER or base64 signature decoding, size limits; no input the fuzzer
//!   makes carries a valid signature, so a success is a finding), and `VerifyingKey::from_pem` of the
//!   signature bytes (the PEM/SPKI reader).
#![no_main]

use attest_engine::crypto::default_provider;
use attest_measurements::{Document, SignedMeasurements, VerifyingKey, parse_any, parse_document};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::LazyLock;

/// A P-256 public key whose private half was thrown away (generated once with
/// `openssl ecparam -name prime256v1 -genkey | openssl ec -pubout`).
const KEY_PEM: &[u8] = b"-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELd6ij/yqVPqx8rAct3aGW+kKYkcI
knDotB+EXj3e+8B71yUrjz2U3Is/3MoNCbGelWouJZfDmSq/7toESVwmSQ==
-----END PUBLIC KEY-----
";

static KEY: LazyLock<VerifyingKey> = LazyLock::new(|| VerifyingKey::from_pem(KEY_PEM).unwrap());

fn check_document(doc: &Document) {
    match doc {
        Document::Map(m) => {
            for (i, v) in m.iter() {
                black_box((i.get(), v.expected(), v.is_warn_only()));
            }
            black_box(m.digest_len());
            assert_eq!(Document::Map(m.clone()).into_single().as_ref(), Ok(m));
            assert_eq!(parse_any(m.to_json().as_bytes()).as_ref(), Ok(m), "JSON round trip");
            if !m.is_empty() {
                assert_eq!(parse_any(m.to_yaml().as_bytes()).as_ref(), Ok(m), "YAML round trip");
            }
        }
        Document::List(l) => {
            for e in l.entries() {
                black_box((e.csp, e.variant, e.measurements.len()));
                let _ = black_box(doc.select(e.csp, e.variant));
            }
            black_box((l.version(), l.reference(), l.stream()));
            assert_eq!(parse_document(l.to_json().as_bytes()).as_ref(), Ok(doc), "release list round trip");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else { return };
    if mode & 1 == 0 {
        if let Ok(doc) = parse_document(input) {
            check_document(&doc);
            let single = doc.clone().into_single();
            assert_eq!(single, parse_any(input));
        } else {
            assert!(parse_any(input).is_err());
        }
        return;
    }
    let Some((&sig_len, rest)) = input.split_first() else { return };
    let (signature, file) = rest.split_at(usize::from(sig_len).min(rest.len()));
    let r = SignedMeasurements::verify_then_parse_with(default_provider(), &KEY, file, signature);
    assert!(r.is_err(), "a signature under a key nobody holds verified");
    if let Ok(key) = VerifyingKey::from_pem(rest) {
        black_box(key.point());
    }
});
