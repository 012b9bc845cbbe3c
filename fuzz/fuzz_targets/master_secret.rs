//! The master-secret file (`attest_keys::MasterSecret::from_file_contents`: a KMS URI, Constellation JSON or
//! raw bytes) and the KMS URI of an init request: never panics, never accepts a key shorter than the floor,
//! and what it accepts round-trips through both encodings it writes. `attest-keys` carries no service stack.
#![no_main]

use attest_keys::{MIN_MASTER_SECRET_LENGTH, MasterSecret};
use libfuzzer_sys::fuzz_target;

fn check(s: &MasterSecret) {
    assert!(s.key().len() >= MIN_MASTER_SECRET_LENGTH);
    let json = MasterSecret::from_json(&s.to_json()).expect("to_json round-trips");
    assert_eq!((json.key(), json.salt()), (s.key(), s.salt()));
    let uri = MasterSecret::from_kms_uri(&s.to_kms_uri()).expect("to_kms_uri round-trips");
    assert_eq!((uri.key(), uri.salt()), (s.key(), s.salt()));
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = MasterSecret::from_file_contents(data) {
        check(&s);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = MasterSecret::from_kms_uri(text) {
            check(&s);
        }
    }
});
