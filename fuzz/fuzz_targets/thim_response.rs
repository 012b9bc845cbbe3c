//! Azure's THIM certificate document (`attest_kds::parse_thim`): never panics; what it accepts carries a VCEK
//! and at most the ASK and ARK.
#![no_main]

#[path = "shims/kds.rs"]
mod kds;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(carried) = kds::thim::parse_thim(data) else { return };
    assert!(data.len() <= kds::thim::MAX_THIM_SIZE);
    assert!(carried.vcek.is_some(), "an accepted THIM document carries its VCEK");
    assert!(carried.vlek.is_none());
});
