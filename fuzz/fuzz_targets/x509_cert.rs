//! `Certificate::from_der`, then the AMD extensions and every extension.
#![no_main]

use attest_engine::x509::Certificate;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(c) = Certificate::from_der(data) else { return };
    black_box((c.der(), c.tbs(), c.signature_algorithm(), c.signature(), c.serial(), c.spki(), c.public_key()));
    black_box((c.issuer().common_name(), c.subject().common_name(), c.not_before(), c.not_after()));
    black_box((c.is_ca(), c.key_usage(), c.may_sign_certificates(), c.may_sign_crls(), c.path_len_constraint()));
    if let Some(eku) = c.extended_key_usage() {
        black_box(eku.purposes().count());
    }
    let _ = black_box(c.amd_extensions());
    for ext in c.extensions() {
        let _ = black_box(ext);
    }
});
