//! `SnpVerifier::verify` on `report (0x4A0 bytes) ‖ leaf DER` at a fixed time; must never panic.
//!
//! One verifier is shared across inputs (the ARK/ASK anchors are verified once). Each input is verified
//! twice so that a leaf that verifies also exercises the warm (cached) path; only genuinely AMD-signed
//! leaves enter the cache, so a crash reproduces from its input alone.
#![no_main]

use attest_engine::UnixTime;
use attest_engine::snp::{REPORT_SIZE, SnpPolicy, SnpRequest, SnpVerifier};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use std::sync::LazyLock;

static VERIFIER: LazyLock<SnpVerifier> = LazyLock::new(SnpVerifier::new);
static POLICY: LazyLock<SnpPolicy> = LazyLock::new(SnpPolicy::default);
static TIME: LazyLock<UnixTime> = LazyLock::new(|| UnixTime::parse("2025-06-01T00:00:00Z").unwrap());

fuzz_target!(|data: &[u8]| {
    let split = data.len().min(REPORT_SIZE);
    let (report, leaf) = data.split_at(split);
    let req = SnpRequest::new(report, leaf, *TIME);
    for _ in 0..2 {
        let _ = black_box(VERIFIER.verify(&req, &POLICY).map(|v| (v.product(), v.reported_tcb(), v.cache_hit())));
    }
});
