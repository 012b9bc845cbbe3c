//! `tpm::Attest::parse` (TPMS_ATTEST of a quote); when it parses, every accessor and every selected bank.
#![no_main]

use attest_engine::tpm::Attest;
use attest_engine::tpm::attest::PCR_COUNT;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(a) = Attest::parse(data) else { return };
    black_box(format!("{a:?}"));
    assert_eq!(a.as_bytes(), data, "Attest borrows exactly its input");
    black_box((a.qualified_signer(), a.extra_data(), a.clock(), a.reset_count(), a.restart_count()));
    black_box((a.safe(), a.firmware_version(), a.pcr_digest()));
    let sel = a.pcr_selection();
    black_box((sel.len(), sel.is_empty()));
    let mut n = 0;
    for (bank, bits) in sel.banks() {
        assert!(bits >> PCR_COUNT == 0, "a bank selects a PCR above 23: {bits:#x}");
        black_box((bank.name(), bank.output_len(), bits));
        n += 1;
    }
    assert_eq!(n, sel.len(), "banks() and len() disagree");
});
