//! `SnpPolicy::from_text` (TOML or JSON) on UTF-8 input.
#![no_main]

use attest_engine::snp::SnpPolicy;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = black_box(SnpPolicy::from_text(text));
});
