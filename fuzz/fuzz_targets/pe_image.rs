//! `attest_reference::PeImage::parse` (the PE/COFF reader behind every UKI computation), then the
//! Authenticode parts and hash, every section as mapped, and the UKI reader with its stub detection.
#![no_main]

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_reference::{PeImage, StubVersion, Uki};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    if let Ok(pe) = PeImage::parse(data) {
        let parts = pe.authenticode_parts();
        let hashed: usize = parts.iter().map(|p| p.len()).sum();
        assert!(hashed <= data.len(), "the Authenticode hash covers file bytes only, each at most once");
        black_box(pe.authenticode(default_provider(), HashAlgorithm::Sha256));
        for s in pe.sections() {
            let loaded = s.loaded();
            assert!(loaded.data.len() <= s.raw_data().len());
            black_box(loaded.parts().len());
        }
        black_box(pe.certificate_table());
    }
    if let Ok(uki) = Uki::parse(data, None) {
        black_box((uki.stub(), uki.cmdline(), uki.measured_sections().len()));
    }
    let _ = black_box(Uki::parse(data, Some(StubVersion::Systemd252)));
});
