//! `CertificationRequest::from_der` (the kubelet CSR reader), then every accessor, the subject's attributes
//! and the self-signature check.
#![no_main]

use attest_engine::crypto::default_provider;
use attest_engine::x509::CertificationRequest;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(c) = CertificationRequest::from_der(data) else { return };
    black_box((c.der(), c.info(), c.spki(), c.attributes(), c.signature(), c.subject().common_name()));
    let _ = black_box(c.public_key().map(|k| k.rsa_modulus_bits()));
    let _ = black_box(c.signature_algorithm());
    c.subject().for_each_attribute(|a| {
        black_box(a);
    });
    let _ = black_box(c.verify_signature(default_provider()));
});
