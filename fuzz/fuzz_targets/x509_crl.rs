//! `Crl::from_der`, then every revoked serial.
#![no_main]

use attest_engine::x509::Crl;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(crl) = Crl::from_der(data) else { return };
    black_box((crl.tbs(), crl.signature_algorithm(), crl.signature(), crl.issuer().common_name()));
    black_box((crl.this_update(), crl.next_update(), crl.len(), crl.is_empty()));
    let mut n = 0;
    for serial in crl.revoked_serials() {
        black_box(crl.is_revoked(serial));
        n += 1;
    }
    assert_eq!(n, crl.len(), "revoked_serials() and len() disagree");
});
