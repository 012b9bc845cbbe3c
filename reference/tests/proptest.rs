//! The parsers never panic, whatever the bytes: arbitrary input and single-byte mutations of valid PE
//! images and firmware footers.

mod common;

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_reference::{Ovmf, PeImage, Uki};
use proptest::prelude::*;

fn small_pe() -> Vec<u8> {
    let mut b = vec![0u8; 0x300];
    b[..2].copy_from_slice(b"MZ");
    b[0x3c] = 0x80;
    b[0x80..0x84].copy_from_slice(b"PE\0\0");
    b[0x86] = 1;
    b[0x94] = 240;
    b[0x98..0x9a].copy_from_slice(&0x20bu16.to_le_bytes());
    b[0x98 + 60..0x98 + 64].copy_from_slice(&0x200u32.to_le_bytes());
    b[0x98 + 108] = 16;
    let h = 0x98 + 240;
    b[h..h + 6].copy_from_slice(b".linux");
    b[h + 8..h + 12].copy_from_slice(&0x100u32.to_le_bytes());
    b[h + 12..h + 16].copy_from_slice(&0x1000u32.to_le_bytes());
    b[h + 16..h + 20].copy_from_slice(&0x100u32.to_le_bytes());
    b[h + 20..h + 24].copy_from_slice(&0x200u32.to_le_bytes());
    b
}

fn exercise_pe(bytes: &[u8]) {
    if let Ok(pe) = PeImage::parse(bytes) {
        let parts = pe.authenticode_parts();
        assert!(parts.iter().map(|p| p.len()).sum::<usize>() <= bytes.len());
        let _ = pe.authenticode(default_provider(), HashAlgorithm::Sha256);
        for s in pe.sections() {
            let _ = s.loaded().parts();
        }
    }
    let _ = Uki::parse(bytes, Some(attest_reference::StubVersion::Systemd252));
}

proptest! {
    #[test]
    fn pe_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        exercise_pe(&bytes);
    }

    #[test]
    fn mutated_pe_never_panics(at in 0usize..0x300, value in any::<u8>(), cut in 0usize..0x301) {
        let mut b = small_pe();
        prop_assert!(PeImage::parse(&b).is_ok());
        b[at] = value;
        exercise_pe(&b[..cut.min(b.len())]);
        exercise_pe(&b);
    }

    #[test]
    fn firmware_reader_never_panics(at in 0usize..8192, value in any::<u8>(), pages in 1usize..3) {
        let mut b = common::synthetic_ovmf(2 * 4096, &common::amdsev_sections(), 0x80_bc00);
        b[at] = value;
        b.truncate(pages * 4096);
        if let Ok(o) = Ovmf::parse(&b) {
            let _ = o.sev_sections();
            let _ = o.tdvf_sections();
            let _ = o.sev_es_reset_eip();
            let _ = attest_reference::tdx::mrtd(default_provider(), &o);
        }
    }
}
