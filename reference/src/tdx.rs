//! The TDX MRTD of a TD booted from a TDVF (the Intel TDX firmware, OVMF's `IntelTdx` build), as the TDX
//! module accumulates it while the VMM builds the TD (Intel TDX Module ABI, TDH.MEM.PAGE.ADD and
//! TDH.MR.EXTEND; the TDVF design guide's metadata):
//!
//! ```text
//!  MRTD = SHA-384 over, for each TDVF section in order (sections with PAGE_AUG are added later and not
//!  measured), for each 4 KiB page of the section's memory:
//!     "MEM.PAGE.ADD" ‖ 0⁴ ‖ u64 GPA ‖ 0¹⁰⁴                                   (128 bytes)
//!     and, when the section has MR_EXTEND, for each 256-byte chunk of the page (image data, zero-padded):
//!     "MR.EXTEND" ‖ 0⁷ ‖ u64 GPA ‖ 0¹⁰⁴ ‖ the 256 bytes
//! ```
//!
//! This follows the TDX module's and QEMU/KVM's documented order (page added, then its chunks extended).
//! No TDX machine was available to check it against a real TD, so the value is offered as computed, and
//! the RTMRs (whose RTMR0 depends on the TD's configuration and HOB) are not predicted here.

use crate::error::Error;
use crate::ovmf::Ovmf;
use attest_engine::crypto::{CryptoProvider, HashAlgorithm};

/// TDVF section attribute: the section's contents are extended into MRTD.
const MR_EXTEND: u32 = 1;
/// TDVF section attribute: the pages are added after the TD runs (not measured).
const PAGE_AUG: u32 = 2;
const PAGE: u64 = 4096;
/// Most pages added to MRTD (64 MiB of TD memory from metadata; a TDVF build and its TD HOB and temporary
/// memory are a few MiB). The whole hash input is described at once (128-byte headers, borrowed chunks), so
/// this also bounds the memory used: ≈ 2.2 KiB per page.
pub const MAX_MEASURED_PAGES: u64 = 1 << 14;

/// A chunk of zeros (data beyond a section's raw data).
static ZERO_CHUNK: [u8; 256] = [0; 256];

fn header(op: &[u8], gpa: u64) -> [u8; 128] {
    let mut h = [0u8; 128];
    h[..op.len()].copy_from_slice(op);
    h[16..24].copy_from_slice(&gpa.to_le_bytes());
    h
}

/// The MRTD of a TD launched from `tdvf`.
pub fn mrtd(provider: &CryptoProvider, tdvf: &Ovmf<'_>) -> Result<[u8; 48], Error> {
    let sections = tdvf.tdvf_sections()?;
    let image = tdvf.bytes();
    let pages: u64 = sections.iter().filter(|s| s.attributes & PAGE_AUG == 0).map(|s| s.memory_data_size / PAGE).sum();
    if pages > MAX_MEASURED_PAGES {
        return Err(Error::LimitExceeded { what: "TDVF measured pages", limit: MAX_MEASURED_PAGES, found: pages });
    }
    // Headers first (the parts below borrow them), then the hash input in order.
    let mut headers: Vec<[u8; 128]> = Vec::new();
    // The one chunk per section that straddles the end of its raw data, zero-padded.
    let mut partial: Vec<[u8; 256]> = Vec::new();
    for s in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0) {
        let raw = &image[s.data_offset as usize..(s.data_offset + s.raw_data_size) as usize];
        let mut chunk = [0u8; 256];
        let tail = raw.len() % 256;
        chunk[..tail].copy_from_slice(&raw[raw.len() - tail..]);
        partial.push(chunk);
        for p in 0..s.memory_data_size / PAGE {
            let gpa = s.memory_address + p * PAGE;
            headers.push(header(b"MEM.PAGE.ADD", gpa));
            if s.attributes & MR_EXTEND != 0 {
                for c in 0..16 {
                    headers.push(header(b"MR.EXTEND", gpa + c * 256));
                }
            }
        }
    }
    let mut parts: Vec<&[u8]> = Vec::with_capacity(headers.len() * 2);
    let mut h = headers.iter();
    for (s, straddling) in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0).zip(&partial) {
        let raw = &image[s.data_offset as usize..(s.data_offset + s.raw_data_size) as usize];
        for p in 0..(s.memory_data_size / PAGE) as usize {
            parts.extend(h.next().map(<[u8; 128]>::as_slice));
            if s.attributes & MR_EXTEND != 0 {
                for c in 0..16 {
                    parts.extend(h.next().map(<[u8; 128]>::as_slice));
                    let at = p * 4096 + c * 256;
                    parts.push(match raw.get(at..at + 256) {
                        Some(chunk) => chunk,
                        None if at < raw.len() => straddling.as_slice(),
                        None => &ZERO_CHUNK,
                    });
                }
            }
        }
    }
    let d = provider.digests.digest(HashAlgorithm::Sha384, &parts);
    let mut out = [0u8; 48];
    out.copy_from_slice(d.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ovmf::TDVF_METADATA_GUID;
    use crate::ovmf::tests::image_with;

    /// A 4-page image with TDVF metadata at its second page: (data offset, raw size, GPA, memory size,
    /// type, attributes) per section.
    fn tdvf(sections: &[(u32, u32, u64, u64, u32, u32)]) -> Vec<u8> {
        let mut img = image_with(4, &[(TDVF_METADATA_GUID, (3 * 4096u32).to_le_bytes().to_vec())]);
        let mut meta = Vec::new();
        meta.extend_from_slice(b"TDVF");
        meta.extend_from_slice(&(16 + 32 * sections.len() as u32).to_le_bytes());
        meta.extend_from_slice(&1u32.to_le_bytes());
        meta.extend_from_slice(&(sections.len() as u32).to_le_bytes());
        for &(off, raw, gpa, mem, kind, attr) in sections {
            meta.extend_from_slice(&off.to_le_bytes());
            meta.extend_from_slice(&raw.to_le_bytes());
            meta.extend_from_slice(&gpa.to_le_bytes());
            meta.extend_from_slice(&mem.to_le_bytes());
            meta.extend_from_slice(&kind.to_le_bytes());
            meta.extend_from_slice(&attr.to_le_bytes());
        }
        img[4096..4096 + meta.len()].copy_from_slice(&meta);
        for (i, b) in img[..4096].iter_mut().enumerate() {
            *b = (i % 253) as u8;
        }
        img
    }

    /// The MRTD input written out naively: every page's padded data copied.
    fn naive(image: &[u8], sections: &[(u32, u32, u64, u64, u32, u32)]) -> [u8; 48] {
        let mut stream = Vec::new();
        for &(off, raw, gpa, mem, _, attr) in sections.iter().filter(|s| s.5 & PAGE_AUG == 0) {
            let mut data = image[off as usize..(off + raw) as usize].to_vec();
            data.resize(mem as usize, 0);
            for p in 0..mem / PAGE {
                stream.extend_from_slice(&header(b"MEM.PAGE.ADD", gpa + p * PAGE));
                if attr & MR_EXTEND != 0 {
                    for c in 0..16u64 {
                        stream.extend_from_slice(&header(b"MR.EXTEND", gpa + p * PAGE + c * 256));
                        let at = (p * PAGE + c * 256) as usize;
                        stream.extend_from_slice(&data[at..at + 256]);
                    }
                }
            }
        }
        attest_engine::crypto::default_provider().digests.sha384(&stream)
    }

    #[test]
    fn mrtd_covers_added_pages_and_extended_data() {
        let provider = attest_engine::crypto::default_provider();
        // BFV measured (raw data ends mid-chunk), TD_HOB added only, TempMem added only, a PAGE_AUG section.
        let sections = [
            (0, 4096 - 100, 0xFFFF_C000, 2 * 4096, 0, MR_EXTEND),
            (0, 0, 0x80_9000, 4096, 2, 0),
            (0, 0, 0x80_0000, 2 * 4096, 3, 0),
            (0, 0, 0x90_0000, 4096, 4, PAGE_AUG),
        ];
        let img = tdvf(&sections);
        let o = Ovmf::parse(&img).unwrap();
        let got = mrtd(provider, &o).unwrap();
        assert_eq!(got, naive(&img, &sections));
        // Not extending the firmware's contents, or measuring the PAGE_AUG section, changes the value.
        let mut unextended = sections;
        unextended[0].5 = 0;
        assert_ne!(mrtd(provider, &Ovmf::parse(&tdvf(&unextended)).unwrap()).unwrap(), got);
        let mut augmented = sections;
        augmented[3].5 = 0;
        assert_ne!(mrtd(provider, &Ovmf::parse(&tdvf(&augmented)).unwrap()).unwrap(), got);
        // Too many pages: a typed error, nothing allocated for them.
        let huge = [(0, 0, 0, (MAX_MEASURED_PAGES + 1) * PAGE, 3, 0)];
        assert!(matches!(mrtd(provider, &Ovmf::parse(&tdvf(&huge)).unwrap()), Err(Error::LimitExceeded { .. })));
    }
}
