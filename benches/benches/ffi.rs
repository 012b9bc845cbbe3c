//! FFI call overhead on a warm SEV-SNP verify: the engine called directly vs the same verification through
//! the C ABI (`attest_ffi`'s `extern "C"` functions, called from Rust exactly as C calls them: raw pointers
//! in, verdict handle out, `attest_verdict_free`). Both run in one criterion group, so they share the
//! machine's load. The C program `ffi/bench/bench_snp.c` and the Go benchmark `ffi/go` measure the same
//! call from C and through cgo (benches/README.md, "FFI").
//!
//! Input: `constellation-azure-snp/attestation.bin` (first 0x4A0 bytes) with `vcek.cert`, expected
//! REPORT_DATA = sha256(`runtimedata.bin`) ‖ 0³², trusted time 2025-06-01, default policy, leaf cache warm.

use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::snp::{SnpPolicy, SnpRequest, SnpVerifier};
use attest_ffi::{
    attest_result, attest_verdict, attest_verdict_free, attest_verifier, attest_verifier_free, attest_verifier_new,
    attest_verifier_verify_snp,
};
use attest_test_support::testdata::dir as testdata;
use criterion::Criterion;
use std::hint::black_box;

/// One warm verify through the C ABI; the verdict is freed as a C caller would.
fn ffi_verify(v: *const attest_verifier, report: &[u8], vcek: &[u8], rd: &[u8; 64], time: u64) {
    let mut verdict: *mut attest_verdict = std::ptr::null_mut();
    let rc = attest_verifier_verify_snp(
        v,
        report.as_ptr(),
        report.len(),
        vcek.as_ptr(),
        vcek.len(),
        std::ptr::null(),
        0,
        rd.as_ptr(),
        rd.len(),
        time,
        &raw mut verdict,
    );
    assert_eq!(rc, attest_result::Ok);
    attest_verdict_free(black_box(verdict));
}

fn main() {
    let Some(dir) = testdata() else { return };
    let read = |rel: &str| std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"));
    let report = read("constellation-azure-snp/attestation.bin")[..0x4A0].to_vec();
    let vcek = read("constellation-azure-snp/vcek.cert");
    let rd =
        attest_engine::azure::hcl_report_data(default_provider(), &read("constellation-azure-snp/runtimedata.bin"));
    let time = UnixTime::parse("2025-06-01").unwrap();

    let direct = SnpVerifier::new();
    let policy = SnpPolicy::default();
    let mut req = SnpRequest::new(&report, &vcek, time);
    req.report_data = Some(&rd);
    assert!(!direct.verify(&req, &policy).unwrap().cache_hit());

    let mut v: *mut attest_verifier = std::ptr::null_mut();
    assert_eq!(attest_verifier_new(&raw mut v), attest_result::Ok);
    ffi_verify(v, &report, &vcek, &rd, time.as_secs()); // warm the chain cache

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("snp_ffi");
    g.bench_function("direct_warm_verify", |b| b.iter(|| direct.verify(black_box(&req), &policy).unwrap()));
    g.bench_function("c_abi_warm_verify", |b| b.iter(|| ffi_verify(v, black_box(&report), &vcek, &rd, time.as_secs())));
    g.finish();
    c.final_summary();
    attest_verifier_free(v);
}
