//! The warm verification path allocates nothing: a counting global allocator (`stats_alloc`, wrapping
//! `System`) sees zero heap allocations during a cached `SnpVerifier::verify` of a real report, and some
//! during the cold one (which proves the counter works).
//!
//! Only allocations made through Rust's global allocator are counted. aws-lc-rs's C code (aws-lc) calls
//! `malloc` directly — e.g. for the `ECDSA_SIG` and digest contexts of each P-384 verification — and those
//! calls are invisible here. The ring provider (feature `ring`) does no C heap allocation at all, so its
//! zero is the whole truth. The counter is process-wide, so this binary holds a single test.

mod common;

use attest_engine::crypto::CryptoProvider;
use attest_engine::snp::REPORT_SIZE;
use attest_engine::{SnpPolicy, SnpRequest, SnpVerifier, UnixTime};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Runs `f` and returns its result with the number of allocations (and reallocations) made meanwhile.
fn counting<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let region = Region::new(GLOBAL);
    let r = f();
    let c = region.change();
    (r, c.allocations + c.reallocations)
}

fn warm_verify_allocates_nothing_with(provider: &'static CryptoProvider) {
    let Some(dir) = common::testdata() else { return };
    let report = common::read(&dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec();
    let vcek = common::read(&dir, "constellation-azure-snp/vcek.cert");
    let runtime = common::read(&dir, "constellation-azure-snp/runtimedata.bin");
    let mut expected = [0u8; 64];
    expected[..32].copy_from_slice(&provider.digests.sha256(&runtime));
    let verifier = SnpVerifier::with_provider(provider);
    let policy = SnpPolicy::default();
    let mut req = SnpRequest::new(&report, &vcek, UnixTime::parse("2025-06-01").unwrap());
    req.report_data = Some(&expected);

    // The counter works: the cold path parses, verifies the chain and caches (it allocates).
    let (cold, n) = counting(|| verifier.verify(&req, &policy).map(|v| v.cache_hit()));
    assert_eq!(cold, Ok(false), "{}", provider.name);
    assert!(n > 0, "{}: the cold path allocated nothing: is the counting allocator installed?", provider.name);
    let (_, n) = counting(|| Box::new(1u8));
    assert_eq!(n, 1);

    // Warm: zero, every time.
    for i in 0..100 {
        let (warm, n) = counting(|| verifier.verify(&req, &policy).map(|v| v.cache_hit()));
        assert_eq!(warm, Ok(true), "{} #{i}", provider.name);
        assert_eq!(n, 0, "{}: warm verify #{i} made {n} heap allocation(s)", provider.name);
    }
}

#[test]
fn warm_verify_allocates_nothing() {
    warm_verify_allocates_nothing_with(&attest_engine::crypto::aws_lc_rs::PROVIDER);
    #[cfg(feature = "ring")]
    warm_verify_allocates_nothing_with(&attest_engine::crypto::ring::PROVIDER);
}
