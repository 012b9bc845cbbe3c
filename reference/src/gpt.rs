//! The boot disk's GPT as the firmware measures it before it starts the first application from that disk
//! (EDK2's measured-boot library; TCG PC Client Platform Firmware Profile §10.4.4 `UEFI_GPT_DATA`):
//!
//! ```text
//!  EV_EFI_GPT_EVENT (PCR 5; in a TD, RTMR1)  H(event data), event data =
//!      the primary GPT header's first 92 bytes (EFI_PARTITION_TABLE_HEADER)
//!    ‖ u64 number of used entries
//!    ‖ every used partition entry (type GUID not zero), SizeOfPartitionEntry bytes each, in table order
//! ```
//!
//! The table is read from a raw disk image with 512-byte logical blocks (the header at LBA 1, the entries
//! at the header's PartitionEntryLBA). A table the firmware's partition driver would reject — a bad
//! signature, header or entry-array CRC32, an entry size below 128 bytes — is refused, since the firmware
//! would not measure it either.

use crate::error::Error;

/// The logical block size assumed for a disk image.
pub const BLOCK_SIZE: u64 = 512;
/// Size of EFI_PARTITION_TABLE_HEADER, the part of the header the firmware measures.
const HEADER_LEN: usize = 92;
/// Most partition entries read (UEFI requires room for at least 128; partitioning tools write 128).
pub const MAX_PARTITION_ENTRIES: u32 = 4096;
/// Largest partition entry accepted (UEFI: 128 × 2ⁿ; tools write 128).
pub const MAX_PARTITION_ENTRY_LEN: u32 = 4096;

/// CRC-32 (IEEE 802.3, reflected), as the GPT uses it.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & 0u32.wrapping_sub(crc & 1));
        }
    }
    !crc
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn bad(reason: &'static str) -> Error {
    Error::BadHeader { what: "GPT header", reason }
}

/// The `EV_EFI_GPT_EVENT` data of the GPT on `disk` (a raw disk image).
pub fn event_data(disk: &[u8]) -> Result<Vec<u8>, Error> {
    let start = BLOCK_SIZE as usize;
    let truncated = |what, offset: u64, needed: u64| Error::Truncated { what, offset, needed, len: disk.len() as u64 };
    let block = disk.get(start..start + BLOCK_SIZE as usize).ok_or(truncated("GPT header", BLOCK_SIZE, BLOCK_SIZE))?;
    if &block[..8] != b"EFI PART" {
        return Err(Error::BadMagic { what: "GPT header (EFI PART at LBA 1)" });
    }
    let header_size = u32_at(block, 12) as usize;
    if !(HEADER_LEN..=BLOCK_SIZE as usize).contains(&header_size) {
        return Err(bad("HeaderSize outside 92..=512"));
    }
    let stated = u32_at(block, 16);
    if crc32(&[&block[..16], &[0; 4], &block[20..header_size]]) != stated {
        return Err(bad("header CRC32 mismatch (the firmware would not use this table)"));
    }
    let entry_lba = u64::from_le_bytes(block[72..80].try_into().unwrap_or_default());
    let count = u32_at(block, 80);
    let entry_len = u32_at(block, 84);
    if count > MAX_PARTITION_ENTRIES {
        return Err(Error::LimitExceeded {
            what: "GPT partition entries",
            limit: u64::from(MAX_PARTITION_ENTRIES),
            found: u64::from(count),
        });
    }
    if !(128..=MAX_PARTITION_ENTRY_LEN).contains(&entry_len) || !entry_len.is_power_of_two() {
        return Err(bad("SizeOfPartitionEntry is not 128 × 2ⁿ (at most 4096)"));
    }
    let offset = entry_lba.checked_mul(BLOCK_SIZE).ok_or(bad("PartitionEntryLBA beyond any disk"))?;
    let len = u64::from(count) * u64::from(entry_len);
    let array = usize::try_from(offset)
        .ok()
        .and_then(|o| disk.get(o..o.checked_add(len as usize)?))
        .ok_or(truncated("GPT partition entries", offset, len))?;
    if crc32(&[array]) != u32_at(block, 88) {
        return Err(bad("partition entry array CRC32 mismatch (the firmware would not use this table)"));
    }
    let used: Vec<&[u8]> = array.chunks_exact(entry_len as usize).filter(|e| e[..16] != [0; 16]).collect();
    let mut data = Vec::with_capacity(HEADER_LEN + 8 + used.len() * entry_len as usize);
    data.extend_from_slice(&block[..HEADER_LEN]);
    data.extend_from_slice(&(used.len() as u64).to_le_bytes());
    for e in used {
        data.extend_from_slice(e);
    }
    Ok(data)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A disk image of `blocks` blocks whose GPT holds `entries` (128 bytes each; the array has room for
    /// 128 at LBA 2), with valid CRCs.
    pub(crate) fn disk_with(entries: &[[u8; 128]], blocks: usize) -> Vec<u8> {
        let mut disk = vec![0u8; blocks * 512];
        let mut array = vec![0u8; 128 * 128];
        for (i, e) in entries.iter().enumerate() {
            array[i * 128..(i + 1) * 128].copy_from_slice(e);
        }
        let mut h = [0u8; 92];
        h[..8].copy_from_slice(b"EFI PART");
        h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&1u64.to_le_bytes());
        h[72..80].copy_from_slice(&2u64.to_le_bytes());
        h[80..84].copy_from_slice(&128u32.to_le_bytes());
        h[84..88].copy_from_slice(&128u32.to_le_bytes());
        h[88..92].copy_from_slice(&crc32(&[&array]).to_le_bytes());
        let crc = crc32(&[&h]);
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        disk[512..604].copy_from_slice(&h);
        disk[1024..1024 + array.len()].copy_from_slice(&array);
        disk
    }

    proptest::proptest! {
        #[test]
        fn mutated_tables_never_panic(at in 0usize..4096, value in proptest::prelude::any::<u8>(), cut in 0usize..20000) {
            let mut disk = disk_with(&[[7u8; 128]], 40);
            disk[512 + at] = value;
            disk.truncate(cut);
            if let Ok(data) = event_data(&disk) {
                proptest::prop_assert_eq!((data.len() - 100) % 128, 0);
            }
        }
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(&[b"123456789"]), 0xCBF4_3926);
    }

    #[test]
    fn used_entries_only_and_bad_tables_refused() {
        let mut esp = [0u8; 128];
        esp[..16].copy_from_slice(&[
            0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b,
        ]);
        let disk = disk_with(&[esp, [0; 128], esp], 64);
        let data = event_data(&disk).unwrap();
        assert_eq!(data.len(), 92 + 8 + 2 * 128);
        assert_eq!(&data[92..100], &2u64.to_le_bytes());
        assert_eq!(&data[..92], &disk[512..604]);
        let mut flipped = disk.clone();
        flipped[1024 + 200] ^= 1;
        assert!(matches!(event_data(&flipped), Err(Error::BadHeader { .. })));
        let mut header = disk.clone();
        header[512 + 40] ^= 1;
        assert!(matches!(event_data(&header), Err(Error::BadHeader { .. })));
        assert!(matches!(event_data(&disk[..4000]), Err(Error::Truncated { .. })));
        assert!(matches!(event_data(&vec![0; 2048]), Err(Error::BadMagic { .. })));
    }
}
