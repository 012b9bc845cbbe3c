//! `tpm::TpmSignature::parse` (TPMT_SIGNATURE: RSASSA, RSAPSS, ECDSA).
#![no_main]

use attest_engine::tpm::TpmSignature;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(sig) = TpmSignature::parse(data) else { return };
    black_box((sig.scheme(), sig.scheme().hash()));
    match sig {
        TpmSignature::Rsa { sig, .. } => assert!(sig.len() + 6 == data.len(), "RSA signature length"),
        TpmSignature::Ecdsa { r, s, .. } => assert!(r.len() + s.len() + 8 == data.len(), "ECDSA r/s lengths"),
    }
});
