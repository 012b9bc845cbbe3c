//! A zero-copy PE/COFF reader and the Authenticode image hash, as UEFI firmware computes it before it
//! runs an image and extends PCR 4 (TCG PC Client Platform Firmware Profile §10.4.4, EV_EFI_BOOT_SERVICES_APPLICATION).
//!
//! ```text
//!  bytes ─► DOS header (MZ, e_lfanew) ─► "PE\0\0" ─► COFF header ─► optional header (PE32 / PE32+,
//!          data directories) ─► section table ─► bounds, overlap and certificate-table checks ─► PeImage<'a>
//! ```
//!
//! Every offset and size in the file is attacker-controlled: each is checked against the input length and
//! the named limits below before a slice is taken, so parsing never panics and never allocates more than
//! the section table. The checks are stricter than a loader's on purpose — sections overlapping in the file
//! or in memory, raw data inside the headers, a certificate table that is not the file's tail — because
//! the values computed here must be the values a firmware and a stub compute, and an image that different
//! readers could read differently has no single answer.
//!
//! The Authenticode hash (Microsoft, *Windows Authenticode Portable Executable Signature Format*,
//! "Calculating the PE Image Hash") covers the headers without the CheckSum field and the certificate
//! table's directory entry, then every section with raw data in file order, then whatever follows the
//! bytes hashed so far — counted, as the specification and EDK2 do, from `SizeOfHeaders + Σ SizeOfRawData`,
//! not from the end of the last section — up to the certificate table.

use crate::error::{Error, SectionName};
use attest_engine::crypto::{CryptoProvider, Digest, HashAlgorithm};

/// Most sections accepted (the PE/COFF specification: "the Windows loader limits the number of sections
/// to 96").
pub const MAX_SECTIONS: usize = 96;
/// Largest `e_lfanew` (offset of the PE signature) accepted. Real images put it below 0x100; the limit only
/// keeps a bogus value from pointing the reader into a multi-gigabyte file.
pub const MAX_PE_OFFSET: u32 = 64 * 1024;
/// Most data directories (the specification defines 16; more have no meaning).
pub const MAX_DATA_DIRECTORIES: u32 = 16;
/// Largest VirtualSize of one section (1 GiB). A loader zero-fills past the raw data up to VirtualSize and a
/// stub measures the section as mapped, so this bounds how many zero bytes a computation may hash.
pub const MAX_SECTION_VIRTUAL_SIZE: u32 = 1 << 30;
/// Most WIN_CERTIFICATE entries walked in the certificate table (a signed image has one or two).
pub const MAX_CERTIFICATES: usize = 32;

/// Size of a section header (PE/COFF §4).
const SECTION_HEADER_LEN: usize = 40;
/// Size of the COFF file header (PE/COFF §3.3).
const COFF_HEADER_LEN: usize = 20;
/// Data directory index of the certificate table (PE/COFF §3.4.3).
const CERTIFICATE_DIRECTORY: u32 = 4;

/// A zero page to feed zero-fill to a hash without allocating.
static ZERO_PAGE: [u8; 4096] = [0; 4096];

/// One section of a [`PeImage`], borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    name: SectionName,
    virtual_size: u32,
    virtual_address: u32,
    raw_offset: u32,
    raw: &'a [u8],
}

impl<'a> Section<'a> {
    /// The name (8 bytes, NUL-padded).
    pub fn name(&self) -> SectionName {
        self.name
    }

    /// VirtualSize: how many bytes the loader maps (0 means SizeOfRawData).
    pub fn virtual_size(&self) -> u32 {
        self.virtual_size
    }

    /// VirtualAddress (RVA of the mapped section).
    pub fn virtual_address(&self) -> u32 {
        self.virtual_address
    }

    /// PointerToRawData.
    pub fn raw_offset(&self) -> u32 {
        self.raw_offset
    }

    /// The SizeOfRawData bytes in the file.
    pub fn raw_data(&self) -> &'a [u8] {
        self.raw
    }

    /// The section as a loader maps it: the raw data cut to VirtualSize, or zero-extended to it.
    pub fn loaded(&self) -> Loaded<'a> {
        let size = if self.virtual_size == 0 { self.raw.len() } else { self.virtual_size as usize };
        let data = &self.raw[..size.min(self.raw.len())];
        Loaded { data, zeros: (size - data.len()) as u64 }
    }

    fn extent(&self) -> u64 {
        u64::from(if self.virtual_size == 0 { self.raw.len() as u32 } else { self.virtual_size })
    }
}

/// A section's bytes as mapped: file data followed by zero fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded<'a> {
    /// The bytes taken from the file.
    pub data: &'a [u8],
    /// Zero bytes after them (VirtualSize beyond SizeOfRawData).
    pub zeros: u64,
}

impl<'a> Loaded<'a> {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.data.len() as u64 + self.zeros
    }

    /// Whether the section maps no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as hash input parts (the zero fill from a static page).
    pub fn parts(&self) -> Vec<&'a [u8]> {
        let mut parts = vec![self.data];
        let mut left = self.zeros;
        while left > 0 {
            let n = left.min(ZERO_PAGE.len() as u64) as usize;
            parts.push(&ZERO_PAGE[..n]);
            left -= n as u64;
        }
        parts
    }

    /// The bytes, contiguous: borrowed without zero fill, copied with it.
    pub fn to_contiguous(&self) -> std::borrow::Cow<'a, [u8]> {
        if self.zeros == 0 {
            std::borrow::Cow::Borrowed(self.data)
        } else {
            let mut v = self.data.to_vec();
            v.resize(v.len() + self.zeros as usize, 0);
            std::borrow::Cow::Owned(v)
        }
    }
}

/// A parsed PE/COFF image, borrowing the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeImage<'a> {
    bytes: &'a [u8],
    machine: u16,
    pe32_plus: bool,
    time_date_stamp: u32,
    checksum_offset: usize,
    /// File offset of data directory 4 (the certificate table entry), when the header has one.
    certificate_entry_offset: Option<usize>,
    size_of_headers: usize,
    sections: Vec<Section<'a>>,
    /// (file offset, size) of the certificate table, when it is non-empty.
    certificate_table: Option<(usize, usize)>,
}

fn u16_at(b: &[u8], off: usize, what: &'static str) -> Result<u16, Error> {
    let s = slice(b, off, 2, what)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: usize, what: &'static str) -> Result<u32, Error> {
    let s = slice(b, off, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// `b[off..off + len]`, or [`Error::Truncated`].
pub(crate) fn slice<'a>(b: &'a [u8], off: usize, len: usize, what: &'static str) -> Result<&'a [u8], Error> {
    off.checked_add(len).and_then(|end| b.get(off..end)).ok_or(Error::Truncated {
        what,
        offset: off as u64,
        needed: len as u64,
        len: b.len() as u64,
    })
}

impl<'a> PeImage<'a> {
    /// Parses `bytes` as a PE/COFF image (PE32 or PE32+), checking every offset and size.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        if slice(bytes, 0, 64, "DOS header")?[..2] != *b"MZ" {
            return Err(Error::BadMagic { what: "DOS header (MZ)" });
        }
        let pe_offset = u32_at(bytes, 0x3c, "DOS header")?;
        if pe_offset > MAX_PE_OFFSET {
            return Err(Error::LimitExceeded {
                what: "PE header offset (e_lfanew)",
                limit: u64::from(MAX_PE_OFFSET),
                found: u64::from(pe_offset),
            });
        }
        let pe = pe_offset as usize;
        if slice(bytes, pe, 4, "PE signature")? != b"PE\0\0" {
            return Err(Error::BadMagic { what: "PE signature (PE\\0\\0)" });
        }
        let coff = pe + 4;
        slice(bytes, coff, COFF_HEADER_LEN, "COFF header")?;
        let machine = u16_at(bytes, coff, "COFF header")?;
        let section_count = usize::from(u16_at(bytes, coff + 2, "COFF header")?);
        let time_date_stamp = u32_at(bytes, coff + 4, "COFF header")?;
        let optional_size = usize::from(u16_at(bytes, coff + 16, "COFF header")?);
        if section_count > MAX_SECTIONS {
            return Err(Error::LimitExceeded {
                what: "PE sections",
                limit: MAX_SECTIONS as u64,
                found: section_count as u64,
            });
        }

        let opt = coff + COFF_HEADER_LEN;
        let optional = slice(bytes, opt, optional_size, "optional header")?;
        let (pe32_plus, directories_at) = match u16_at(optional, 0, "optional header")? {
            0x10b => (false, 96),
            0x20b => (true, 112),
            _ => return Err(Error::BadMagic { what: "optional header (0x10B or 0x20B)" }),
        };
        let directory_count = u32_at(optional, directories_at - 4, "optional header")?;
        if directory_count > MAX_DATA_DIRECTORIES {
            return Err(Error::LimitExceeded {
                what: "data directories",
                limit: u64::from(MAX_DATA_DIRECTORIES),
                found: u64::from(directory_count),
            });
        }
        if optional_size < directories_at + 8 * directory_count as usize {
            return Err(Error::BadHeader { what: "SizeOfOptionalHeader", reason: "smaller than its data directories" });
        }
        let size_of_headers = u32_at(optional, 60, "optional header")? as usize;
        let checksum_offset = opt + 64;

        let table = opt + optional_size;
        let table_len = section_count * SECTION_HEADER_LEN;
        slice(bytes, table, table_len, "section table")?;
        if size_of_headers > bytes.len() {
            return Err(Error::Truncated {
                what: "headers (SizeOfHeaders)",
                offset: 0,
                needed: size_of_headers as u64,
                len: bytes.len() as u64,
            });
        }
        if table + table_len > size_of_headers {
            return Err(Error::BadHeader { what: "SizeOfHeaders", reason: "the section table ends after it" });
        }

        let mut sections = Vec::with_capacity(section_count);
        for i in 0..section_count {
            let h = &bytes[table + i * SECTION_HEADER_LEN..table + (i + 1) * SECTION_HEADER_LEN];
            let mut name = [0u8; 8];
            name.copy_from_slice(&h[..8]);
            let name = SectionName(name);
            let field = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
            let (virtual_size, virtual_address, raw_size, raw_offset) = (field(8), field(12), field(16), field(20));
            if virtual_size > MAX_SECTION_VIRTUAL_SIZE {
                return Err(Error::LimitExceeded {
                    what: "section VirtualSize",
                    limit: u64::from(MAX_SECTION_VIRTUAL_SIZE),
                    found: u64::from(virtual_size),
                });
            }
            let raw = if raw_size == 0 {
                &bytes[..0]
            } else {
                let out_of_bounds = || Error::SectionOutOfBounds {
                    section: name,
                    offset: u64::from(raw_offset),
                    size: u64::from(raw_size),
                    len: bytes.len() as u64,
                };
                if (raw_offset as usize) < size_of_headers {
                    return Err(out_of_bounds());
                }
                (raw_offset as usize)
                    .checked_add(raw_size as usize)
                    .and_then(|end| bytes.get(raw_offset as usize..end))
                    .ok_or_else(out_of_bounds)?
            };
            sections.push(Section { name, virtual_size, virtual_address, raw_offset, raw });
        }
        check_overlaps(&sections)?;

        let certificate_entry_offset = (directory_count > CERTIFICATE_DIRECTORY)
            .then_some(opt + directories_at + 8 * CERTIFICATE_DIRECTORY as usize);
        let certificate_table = match certificate_entry_offset {
            Some(at) => {
                let (offset, size) = (u32_at(bytes, at, "data directory")?, u32_at(bytes, at + 4, "data directory")?);
                check_certificate_table(bytes, &sections, size_of_headers, offset as usize, size as usize)?
            }
            None => None,
        };

        Ok(Self {
            bytes,
            machine,
            pe32_plus,
            time_date_stamp,
            checksum_offset,
            certificate_entry_offset,
            size_of_headers,
            sections,
            certificate_table,
        })
    }

    /// The file bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// COFF Machine (0x8664 x86-64, 0xAA64 ARM64, …).
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// Whether the optional header is PE32+ (64-bit).
    pub fn is_pe32_plus(&self) -> bool {
        self.pe32_plus
    }

    /// COFF TimeDateStamp (covered by the Authenticode hash: a build tool writing the current time makes
    /// the image irreproducible).
    pub fn time_date_stamp(&self) -> u32 {
        self.time_date_stamp
    }

    /// The sections in table order.
    pub fn sections(&self) -> &[Section<'a>] {
        &self.sections
    }

    /// The first section named `name` (without NUL padding, e.g. `b".linux"`).
    pub fn section(&self, name: &[u8]) -> Option<&Section<'a>> {
        self.sections.iter().find(|s| s.name.as_bytes() == name)
    }

    /// (file offset, size) of the certificate table, when the image is signed.
    pub fn certificate_table(&self) -> Option<(usize, usize)> {
        self.certificate_table
    }

    /// The byte ranges the Authenticode hash covers, in order (see the module docs). The firmware's
    /// measurement of this image into PCR 4 is the hash of their concatenation.
    pub fn authenticode_parts(&self) -> Vec<&'a [u8]> {
        let b = self.bytes;
        let ck = self.checksum_offset;
        let mut parts = Vec::with_capacity(self.sections.len() + 4);
        parts.push(&b[..ck]);
        match self.certificate_entry_offset {
            Some(entry) => {
                parts.push(&b[ck + 4..entry]);
                parts.push(&b[entry + 8..self.size_of_headers]);
            }
            None => parts.push(&b[ck + 4..self.size_of_headers]),
        }
        let mut by_offset: Vec<&Section<'a>> = self.sections.iter().filter(|s| !s.raw.is_empty()).collect();
        by_offset.sort_by_key(|s| s.raw_offset);
        let mut hashed = self.size_of_headers;
        for s in by_offset {
            parts.push(s.raw);
            hashed += s.raw.len();
        }
        let certificate_size = self.certificate_table.map_or(0, |(_, size)| size);
        if b.len() > hashed + certificate_size {
            parts.push(&b[hashed..b.len() - certificate_size]);
        }
        parts
    }

    /// The Authenticode hash of the image with `alg`.
    pub fn authenticode(&self, provider: &CryptoProvider, alg: HashAlgorithm) -> Digest {
        provider.digests.digest(alg, &self.authenticode_parts())
    }
}

/// Sections must not overlap in the file (raw data) or in memory (VirtualAddress .. + VirtualSize).
fn check_overlaps(sections: &[Section<'_>]) -> Result<(), Error> {
    let mut by_file: Vec<&Section<'_>> = sections.iter().filter(|s| !s.raw.is_empty()).collect();
    by_file.sort_by_key(|s| s.raw_offset);
    for pair in by_file.windows(2) {
        if u64::from(pair[0].raw_offset) + pair[0].raw.len() as u64 > u64::from(pair[1].raw_offset) {
            return Err(Error::OverlappingSections { first: pair[0].name, second: pair[1].name, space: "file" });
        }
    }
    let mut by_memory: Vec<&Section<'_>> = sections.iter().filter(|s| s.extent() > 0).collect();
    by_memory.sort_by_key(|s| s.virtual_address);
    for pair in by_memory.windows(2) {
        if u64::from(pair[0].virtual_address) + pair[0].extent() > u64::from(pair[1].virtual_address) {
            return Err(Error::OverlappingSections { first: pair[0].name, second: pair[1].name, space: "memory" });
        }
    }
    Ok(())
}

/// The certificate table (PE/COFF §5.7): a file offset (not an RVA), 8-byte aligned, after the headers and
/// every section's raw data, ending exactly at the end of the file (the Authenticode hash excludes it by
/// size from the end), and a well-formed list of WIN_CERTIFICATE entries (dwLength ≥ 8, revision 0x0100 or
/// 0x0200, each entry 8-byte aligned, the last one ending at the table's end).
fn check_certificate_table(
    bytes: &[u8],
    sections: &[Section<'_>],
    size_of_headers: usize,
    offset: usize,
    size: usize,
) -> Result<Option<(usize, usize)>, Error> {
    let bad = |reason| Err(Error::BadCertificateTable { reason });
    if size == 0 {
        return if offset == 0 { Ok(None) } else { bad("an offset without a size") };
    }
    if !offset.is_multiple_of(8) {
        return bad("not 8-byte aligned");
    }
    if offset.checked_add(size) != Some(bytes.len()) {
        return bad("does not end at the end of the file");
    }
    let sections_end =
        sections.iter().map(|s| s.raw_offset as usize + s.raw.len()).max().unwrap_or(0).max(size_of_headers);
    if offset < sections_end {
        return bad("overlaps the headers or a section");
    }
    let table = &bytes[offset..];
    let mut at = 0usize;
    let mut count = 0usize;
    while at < table.len() {
        count += 1;
        if count > MAX_CERTIFICATES {
            return Err(Error::LimitExceeded {
                what: "certificate table entries",
                limit: MAX_CERTIFICATES as u64,
                found: count as u64,
            });
        }
        let Some(header) = table.get(at..at + 8) else { return bad("truncated WIN_CERTIFICATE header") };
        let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let revision = u16::from_le_bytes([header[4], header[5]]);
        if length < 8 || length > table.len() - at {
            return bad("WIN_CERTIFICATE dwLength out of range");
        }
        if revision != 0x0100 && revision != 0x0200 {
            return bad("unknown WIN_CERTIFICATE revision");
        }
        at += length.next_multiple_of(8);
    }
    if at != table.len() {
        return bad("entries do not end at the table's end");
    }
    Ok(Some((offset, size)))
}

/// Sets the COFF TimeDateStamp of the image in `bytes` to `timestamp` and recomputes the optional header's
/// CheckSum (the 16-bit one's-complement sum of the file with the field itself taken as 0, plus the file
/// length). Build tools that write the current time (binutils' `objcopy`) make every build hash
/// differently; this makes a built image reproducible. The image is parsed first: nothing is written to
/// an input that is no valid PE image.
pub fn set_timestamp(bytes: &mut [u8], timestamp: u32) -> Result<(), Error> {
    let (pe, checksum_offset) = {
        let image = PeImage::parse(bytes)?;
        (u32_at(bytes, 0x3c, "DOS header")? as usize, image.checksum_offset)
    };
    bytes[pe + 8..pe + 12].copy_from_slice(&timestamp.to_le_bytes());
    bytes[checksum_offset..checksum_offset + 4].copy_from_slice(&[0; 4]);
    let checksum = pe_checksum(bytes);
    bytes[checksum_offset..checksum_offset + 4].copy_from_slice(&checksum.to_le_bytes());
    Ok(())
}

/// The PE CheckSum of `bytes` (whose CheckSum field must already be 0).
fn pe_checksum(bytes: &[u8]) -> u32 {
    let mut sum: u64 = 0;
    let mut words = bytes.chunks(2);
    for w in &mut words {
        let v = u64::from(w[0]) | (u64::from(*w.get(1).unwrap_or(&0)) << 8);
        sum += v;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    (sum as u32).wrapping_add(bytes.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small signed PE image (the committed fuzz seed; the integration tests build many more).
    fn signed_seed() -> Vec<u8> {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/pe_image/signed")).unwrap()
    }

    #[test]
    fn checksum_and_timestamp() {
        let mut b = signed_seed();
        let pe_at = u32_at(&b, 0x3c, "").unwrap() as usize;
        b[pe_at + 8..pe_at + 12].copy_from_slice(&0x1234_5678u32.to_le_bytes());
        set_timestamp(&mut b, 0).unwrap();
        let image = PeImage::parse(&b).unwrap();
        assert_eq!(image.time_date_stamp(), 0);
        let at = image.checksum_offset;
        let stored = u32_at(&b, at, "").unwrap();
        b[at..at + 4].copy_from_slice(&[0; 4]);
        assert_eq!(pe_checksum(&b), stored);
        assert!(set_timestamp(&mut [0u8; 10], 0).is_err());
    }

    #[test]
    fn the_hash_covers_everything_but_checksum_directory_entry_and_table() {
        let b = signed_seed();
        let pe = PeImage::parse(&b).unwrap();
        let total: usize = pe.authenticode_parts().iter().map(|p| p.len()).sum();
        assert_eq!(total, b.len() - 4 - 8 - pe.certificate_table().unwrap().1);
    }
}
