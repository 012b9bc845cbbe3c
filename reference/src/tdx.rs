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
/// Most pages measured (1 GiB of TD memory from metadata).
pub const MAX_MEASURED_PAGES: u64 = 1 << 18;

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
    let mut padded: Vec<Vec<u8>> = Vec::new();
    for s in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0) {
        let mut data = image[s.data_offset as usize..(s.data_offset + s.raw_data_size) as usize].to_vec();
        data.resize(s.memory_data_size as usize, 0);
        padded.push(data);
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
    for (s, data) in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0).zip(&padded) {
        for p in 0..(s.memory_data_size / PAGE) as usize {
            parts.extend(h.next().map(<[u8; 128]>::as_slice));
            if s.attributes & MR_EXTEND != 0 {
                for c in 0..16 {
                    parts.extend(h.next().map(<[u8; 128]>::as_slice));
                    parts.push(&data[p * 4096 + c * 256..p * 4096 + (c + 1) * 256]);
                }
            }
        }
    }
    let d = provider.digests.digest(HashAlgorithm::Sha384, &parts);
    let mut out = [0u8; 48];
    out.copy_from_slice(d.as_bytes());
    Ok(out)
}
