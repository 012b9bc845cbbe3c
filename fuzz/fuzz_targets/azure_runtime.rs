//! `azure::RuntimeData::parse` (the HCL runtime-data JSON with the "HCLAkPub" JWK).
#![no_main]

use attest_engine::azure::RuntimeData;
use attest_engine::tpm::AkPublic;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = RuntimeData::parse(data) else { return };
    black_box(format!("{r:?}"));
    match r.ak().ak_public() {
        AkPublic::Rsa { modulus, exponent } => {
            assert!(matches!(modulus.len(), 256 | 384 | 512) && modulus[0] != 0, "modulus size");
            assert!(exponent != 0, "zero exponent");
        }
        AkPublic::Ecc { .. } => panic!("HCLAkPub decoded as an ECC key"),
    }
    black_box(r.user_data());
});
