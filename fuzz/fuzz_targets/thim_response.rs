//! Azure's THIM certificate document (`attest_engine::azure::parse_thim`): never panics; what it accepts
//! carries a VCEK and at most the ASK and ARK.
#![no_main]

use attest_engine::azure::{MAX_THIM_SIZE, parse_thim};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(carried) = parse_thim(data) else { return };
    assert!(data.len() <= MAX_THIM_SIZE);
    assert!(carried.vcek.is_some(), "an accepted THIM document carries its VCEK");
    assert!(carried.vlek.is_none());
});
