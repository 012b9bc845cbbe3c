//! `HclReport::parse`, its accessors, the REPORT_DATA binding check and the embedded SNP report.
#![no_main]

use attest_engine::azure::HclReport;
use attest_engine::crypto::default_provider;
use attest_engine::snp::Report;
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = HclReport::parse(data) else { return };
    black_box((h.version(), h.report_type(), h.hash_type(), h.hardware_report(), h.variable_data()));
    let _ = black_box(h.check_binding(default_provider()));
    if let Some(snp) = h.snp_report() {
        let _ = black_box(Report::parse(snp));
    }
});
