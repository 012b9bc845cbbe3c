//! OVMF firmware metadata: the GUIDed footer table at the end of the image and the SEV and TDVF metadata
//! it points to (EDK2 `OvmfPkg/ResetVector`: `ResetVectorVtf0.asm`, `X64/OvmfSevMetadata.asm`,
//! `X64/IntelTdxMetadata.asm`).
//!
//! ```text
//!  … firmware … │ entry data ‖ u16 size ‖ GUID │ … │ u16 table size ‖ footer GUID │ 32 bytes (reset vector)
//!               └── entries, read backwards from the footer; each size counts its 18-byte header ──┘
//! ```
//!
//! Entries used here: the SEV metadata offset (`dc886566-…`; "ASEV" header and {gpa, size, type} items
//! the hypervisor must populate before launch), the SEV-ES reset block (`00f771de-…`; the APs' reset
//! EIP), the SEV hashes table (`7255371f-…`; where QEMU puts the kernel/initrd/cmdline hashes in AmdSev
//! builds) and the TDVF metadata offset (`e9eaf9f3-…`; "TDVF" descriptor and its sections). All offsets
//! are checked against the image and the named limits.

use crate::error::Error;
use crate::pe::slice;

/// Most bytes of footer table read (OVMF's holds fewer than 10 entries, ≈ 200 bytes).
pub const MAX_FOOTER_TABLE_LEN: usize = 4096;
/// Most entries read from the footer table.
pub const MAX_FOOTER_ENTRIES: usize = 32;
/// Most SEV or TDVF metadata sections accepted (OVMF declares fewer than 10).
pub const MAX_METADATA_SECTIONS: usize = 64;
/// Largest firmware image accepted (64 MiB; OVMF builds are 1–4 MiB, and the image must fit below 4 GiB).
pub const MAX_FIRMWARE_SIZE: usize = 64 << 20;

/// The footer table's own GUID, `96b582de-1fb2-45f7-baea-a366c55a082d`, in its on-disk byte order.
const FOOTER_GUID: [u8; 16] = guid(0x96b5_82de, 0x1fb2, 0x45f7, [0xba, 0xea, 0xa3, 0x66, 0xc5, 0x5a, 0x08, 0x2d]);
/// SEV metadata offset entry, `dc886566-984a-4798-a75e-5585a7bf67cc`.
pub(crate) const SEV_METADATA_GUID: [u8; 16] =
    guid(0xdc88_6566, 0x984a, 0x4798, [0xa7, 0x5e, 0x55, 0x85, 0xa7, 0xbf, 0x67, 0xcc]);
/// SEV-ES reset block, `00f771de-1a7e-4fcb-890e-68c77e2fb44e`.
pub(crate) const SEV_ES_RESET_BLOCK_GUID: [u8; 16] =
    guid(0x00f7_71de, 0x1a7e, 0x4fcb, [0x89, 0x0e, 0x68, 0xc7, 0x7e, 0x2f, 0xb4, 0x4e]);
/// SEV hashes table location, `7255371f-3a3b-4b04-927b-1da6efa8d454`.
pub(crate) const SEV_HASH_TABLE_GUID: [u8; 16] =
    guid(0x7255_371f, 0x3a3b, 0x4b04, [0x92, 0x7b, 0x1d, 0xa6, 0xef, 0xa8, 0xd4, 0x54]);
/// TDVF metadata offset, `e9eaf9f3-168e-44d5-a8eb-7f4d8738f6ae`.
pub(crate) const TDVF_METADATA_GUID: [u8; 16] =
    guid(0xe9ea_f9f3, 0x168e, 0x44d5, [0xa8, 0xeb, 0x7f, 0x4d, 0x87, 0x38, 0xf6, 0xae]);

/// A GUID in the mixed-endian byte order EFI stores it in.
pub(crate) const fn guid(a: u32, b: u16, c: u16, d: [u8; 8]) -> [u8; 16] {
    let a = a.to_le_bytes();
    let (b, c) = (b.to_le_bytes(), c.to_le_bytes());
    [a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]
}

fn le32(b: &[u8], at: usize, what: &'static str) -> Result<u32, Error> {
    let s = slice(b, at, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn le64(b: &[u8], at: usize, what: &'static str) -> Result<u64, Error> {
    let s = slice(b, at, 8, what)?;
    Ok(u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
}

/// An OVMF image with its footer table, borrowed.
#[derive(Clone, Debug)]
pub struct Ovmf<'a> {
    bytes: &'a [u8],
    entries: Vec<([u8; 16], &'a [u8])>,
}

/// The kind of a SEV metadata section (OvmfSevMetadata.asm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SevSectionType {
    /// Memory the firmware uses before it validates memory itself: zero pages (unmeasured on GCE).
    SnpSecMem,
    /// The SNP secrets page.
    SnpSecrets,
    /// The CPUID page.
    Cpuid,
    /// The SVSM calling-area page.
    SvsmCaa,
    /// Where QEMU places the kernel/initrd/cmdline hashes table (AmdSev builds).
    SnpKernelHashes,
}

/// One SEV metadata section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SevSection {
    /// Guest-physical address (page-aligned).
    pub gpa: u64,
    /// Size in bytes (a multiple of 4 KiB).
    pub size: u64,
    /// What the hypervisor puts there.
    pub kind: SevSectionType,
}

/// One TDVF metadata section (TDVF design guide, "TDVF_SECTION").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdvfSection {
    /// Offset of the section's data in the image.
    pub data_offset: u32,
    /// Bytes of data in the image.
    pub raw_data_size: u32,
    /// Guest-physical address.
    pub memory_address: u64,
    /// Bytes of guest memory.
    pub memory_data_size: u64,
    /// Section type (0 BFV, 1 CFV, 2 TD_HOB, 3 TempMem, 4 PermMem, 5 Payload, 6 PayloadParam, 7 TD_INFO).
    pub section_type: u32,
    /// Attributes (bit 0 MR_EXTEND, bit 1 PAGE_AUG).
    pub attributes: u32,
}

impl<'a> Ovmf<'a> {
    /// Reads the footer table of a firmware image (an image without one is still accepted: it then has no
    /// entries, and asking for SEV or TDVF metadata fails with [`Error::MissingFirmwareEntry`]).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        if bytes.len() > MAX_FIRMWARE_SIZE {
            return Err(Error::LimitExceeded {
                what: "firmware image bytes",
                limit: MAX_FIRMWARE_SIZE as u64,
                found: bytes.len() as u64,
            });
        }
        if bytes.is_empty() || !bytes.len().is_multiple_of(4096) {
            return Err(Error::BadFirmwareMetadata { reason: "the image is not a whole number of 4 KiB pages" });
        }
        let mut entries = Vec::new();
        let Some(footer_at) = bytes.len().checked_sub(32 + 18) else { return Ok(Self { bytes, entries }) };
        if bytes[footer_at + 2..footer_at + 18] != FOOTER_GUID {
            return Ok(Self { bytes, entries });
        }
        let table_size = usize::from(u16::from_le_bytes([bytes[footer_at], bytes[footer_at + 1]]));
        if !(18..=MAX_FOOTER_TABLE_LEN).contains(&table_size) || table_size - 18 > footer_at {
            return Err(Error::BadFirmwareMetadata { reason: "footer table size out of range" });
        }
        let table = &bytes[footer_at - (table_size - 18)..footer_at];
        let mut end = table.len();
        while end > 0 {
            if entries.len() == MAX_FOOTER_ENTRIES {
                return Err(Error::LimitExceeded {
                    what: "footer table entries",
                    limit: MAX_FOOTER_ENTRIES as u64,
                    found: MAX_FOOTER_ENTRIES as u64 + 1,
                });
            }
            if end < 18 {
                return Err(Error::BadFirmwareMetadata { reason: "footer table entry header truncated" });
            }
            let size = usize::from(u16::from_le_bytes([table[end - 18], table[end - 17]]));
            if size < 18 || size > end {
                return Err(Error::BadFirmwareMetadata { reason: "footer table entry size out of range" });
            }
            let mut id = [0u8; 16];
            id.copy_from_slice(&table[end - 16..end]);
            entries.push((id, &table[end - size..end - 18]));
            end -= size;
        }
        Ok(Self { bytes, entries })
    }

    /// The image bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The guest-physical address the image is mapped at (it ends at 4 GiB).
    pub fn gpa(&self) -> u64 {
        (1u64 << 32) - self.bytes.len() as u64
    }

    /// The data of the footer entry with GUID `id`.
    pub(crate) fn entry(&self, id: &[u8; 16]) -> Option<&'a [u8]> {
        self.entries.iter().find(|(g, _)| g == id).map(|(_, d)| *d)
    }

    /// The SEV-ES reset block's AP reset EIP.
    pub fn sev_es_reset_eip(&self) -> Result<u32, Error> {
        let data =
            self.entry(&SEV_ES_RESET_BLOCK_GUID).ok_or(Error::MissingFirmwareEntry { what: "SEV-ES reset block" })?;
        le32(data, 0, "SEV-ES reset block")
    }

    /// The guest-physical address of the SEV hashes table, when the build has one (AmdSev builds).
    pub fn sev_hashes_table_gpa(&self) -> Option<u64> {
        let data = self.entry(&SEV_HASH_TABLE_GUID)?;
        le32(data, 0, "SEV hashes table").ok().filter(|&g| g != 0).map(u64::from)
    }

    /// The SEV metadata sections, in declaration order.
    pub fn sev_sections(&self) -> Result<Vec<SevSection>, Error> {
        let data = self.entry(&SEV_METADATA_GUID).ok_or(Error::MissingFirmwareEntry { what: "SEV metadata" })?;
        let header = self.metadata_header(data, *b"ASEV", "SEV metadata")?;
        let (count, items_at) = (header.0, header.1);
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let at = items_at + 12 * i;
            let gpa = u64::from(le32(self.bytes, at, "SEV metadata section")?);
            let size = u64::from(le32(self.bytes, at + 4, "SEV metadata section")?);
            let kind = match le32(self.bytes, at + 8, "SEV metadata section")? {
                1 => SevSectionType::SnpSecMem,
                2 => SevSectionType::SnpSecrets,
                3 => SevSectionType::Cpuid,
                4 => SevSectionType::SvsmCaa,
                0x10 => SevSectionType::SnpKernelHashes,
                _ => return Err(Error::BadFirmwareMetadata { reason: "unknown SEV metadata section type" }),
            };
            if gpa % 4096 != 0 || size % 4096 != 0 || size == 0 || gpa + size > 1 << 32 {
                return Err(Error::BadFirmwareMetadata {
                    reason: "SEV metadata section not page-aligned or beyond 4 GiB",
                });
            }
            out.push(SevSection { gpa, size, kind });
        }
        let mut sorted = out.clone();
        sorted.sort_by_key(|s| s.gpa);
        if sorted.windows(2).any(|w| w[0].gpa + w[0].size > w[1].gpa) {
            return Err(Error::BadFirmwareMetadata { reason: "SEV metadata sections overlap" });
        }
        Ok(out)
    }

    /// The TDVF metadata sections, in declaration order.
    pub fn tdvf_sections(&self) -> Result<Vec<TdvfSection>, Error> {
        let data = self.entry(&TDVF_METADATA_GUID).ok_or(Error::MissingFirmwareEntry { what: "TDVF metadata" })?;
        let (count, items_at) = self.metadata_header(data, *b"TDVF", "TDVF metadata")?;
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let at = items_at + 32 * i;
            let s = TdvfSection {
                data_offset: le32(self.bytes, at, "TDVF section")?,
                raw_data_size: le32(self.bytes, at + 4, "TDVF section")?,
                memory_address: le64(self.bytes, at + 8, "TDVF section")?,
                memory_data_size: le64(self.bytes, at + 16, "TDVF section")?,
                section_type: le32(self.bytes, at + 24, "TDVF section")?,
                attributes: le32(self.bytes, at + 28, "TDVF section")?,
            };
            let data_end = u64::from(s.data_offset) + u64::from(s.raw_data_size);
            if data_end > self.bytes.len() as u64
                || u64::from(s.raw_data_size) > s.memory_data_size
                || !s.memory_address.is_multiple_of(4096)
                || !s.memory_data_size.is_multiple_of(4096)
                || s.memory_data_size > MAX_FIRMWARE_SIZE as u64 * 4
                || s.section_type > 7
                || s.attributes & !0b11 != 0
            {
                return Err(Error::BadFirmwareMetadata { reason: "TDVF section out of range" });
            }
            out.push(s);
        }
        Ok(out)
    }

    /// Reads a metadata header (`signature`, u32 length, u32 version = 1, u32 count) at the offset from the
    /// end of the image that `entry` holds; returns the count and the offset of the first item.
    fn metadata_header(&self, entry: &[u8], signature: [u8; 4], what: &'static str) -> Result<(usize, usize), Error> {
        let from_end = le32(entry, 0, what)? as usize;
        let at = self
            .bytes
            .len()
            .checked_sub(from_end)
            .ok_or(Error::BadFirmwareMetadata { reason: "metadata offset beyond the image" })?;
        if slice(self.bytes, at, 4, what)? != signature.as_slice() {
            return Err(Error::BadMagic { what });
        }
        let length = le32(self.bytes, at + 4, what)? as usize;
        let version = le32(self.bytes, at + 8, what)?;
        let count = le32(self.bytes, at + 12, what)? as usize;
        if version != 1 {
            return Err(Error::BadFirmwareMetadata { reason: "unknown metadata version" });
        }
        if count > MAX_METADATA_SECTIONS {
            return Err(Error::LimitExceeded {
                what: "metadata sections",
                limit: MAX_METADATA_SECTIONS as u64,
                found: count as u64,
            });
        }
        let item = if &signature == b"ASEV" { 12 } else { 32 };
        if length != 16 + item * count {
            return Err(Error::BadFirmwareMetadata { reason: "metadata length does not match its section count" });
        }
        slice(self.bytes, at, length, what)?;
        Ok((count, at + 16))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A synthetic image of `pages` pages whose footer table holds `entries` (GUID, data).
    pub(crate) fn image_with(pages: usize, entries: &[([u8; 16], Vec<u8>)]) -> Vec<u8> {
        let mut table = Vec::new();
        for (id, data) in entries {
            table.extend_from_slice(data);
            table.extend_from_slice(&((data.len() + 18) as u16).to_le_bytes());
            table.extend_from_slice(id);
        }
        table.extend_from_slice(&((table.len() + 18) as u16).to_le_bytes());
        table.extend_from_slice(&FOOTER_GUID);
        let mut b = vec![0xAB; pages * 4096];
        let end = b.len() - 32;
        b[end - table.len()..end].copy_from_slice(&table);
        b
    }

    #[test]
    fn entries_and_missing_metadata() {
        let img = image_with(4, &[(SEV_ES_RESET_BLOCK_GUID, vec![0x04, 0xb0, 0x80, 0x00, 0, 0])]);
        let o = Ovmf::parse(&img).unwrap();
        assert_eq!(o.sev_es_reset_eip().unwrap(), 0x0080_b004);
        assert_eq!(o.sev_sections(), Err(Error::MissingFirmwareEntry { what: "SEV metadata" }));
        assert_eq!(o.gpa(), (1 << 32) - 4 * 4096);
        assert!(Ovmf::parse(&img[..100]).is_err());
        assert!(Ovmf::parse(&vec![0u8; 4096]).unwrap().entries.is_empty());
    }
}
