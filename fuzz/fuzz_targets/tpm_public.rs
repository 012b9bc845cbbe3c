//! `tpm::TpmtPublic::parse` and `parse_tpm2b` (the same bytes as a TPMT_PUBLIC and as a TPM2B_PUBLIC), then
//! every accessor and `check_attestation_key`.
#![no_main]

use attest_engine::tpm::{AkPublic, TpmtPublic};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fn exercise(p: &TpmtPublic<'_>) {
    black_box(format!("{p:?}"));
    black_box((p.as_bytes(), p.name_alg(), p.attributes(), p.scheme(), p.key_bits()));
    match p.key() {
        AkPublic::Rsa { modulus, exponent } => {
            assert_eq!(modulus.len() * 8, usize::from(p.key_bits()), "RSA modulus size vs keyBits");
            black_box(exponent);
        }
        AkPublic::Ecc { curve, x, y } => {
            assert_eq!((x.len(), y.len()), (curve.coordinate_len(), curve.coordinate_len()), "ECC coordinates");
        }
    }
    let _ = black_box(p.check_attestation_key());
}

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = TpmtPublic::parse(data) {
        assert_eq!(p.as_bytes(), data, "TpmtPublic borrows exactly its input");
        exercise(&p);
    }
    if let Ok(p) = TpmtPublic::parse_tpm2b(data) {
        assert_eq!(p.as_bytes(), &data[2..], "TPM2B_PUBLIC holds exactly one TPMT_PUBLIC");
        exercise(&p);
    }
});
