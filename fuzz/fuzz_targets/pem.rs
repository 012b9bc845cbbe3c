//! PEM decoding.
#![no_main]

use attest_engine::x509::pem::{certificates_from_pem_or_der, parse_pem};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let _ = black_box(parse_pem(data));
    let _ = black_box(certificates_from_pem_or_der(data));
});
