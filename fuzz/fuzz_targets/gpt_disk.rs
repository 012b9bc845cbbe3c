//! `attest_reference::gpt::event_data`: the GPT of a raw disk image as the firmware measures it (header at
//! LBA 1, the partition entry array where the header says, both CRC32-checked). The input is placed after
//! one zero block, so its first bytes are the header.
#![no_main]

use attest_reference::gpt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut disk = vec![0u8; 512];
    disk.extend_from_slice(data);
    if let Ok(event) = gpt::event_data(&disk) {
        // The header's 92 bytes, a count, whole entries of at least 128 bytes each.
        let used = u64::from_le_bytes(event[92..100].try_into().unwrap());
        assert!(event.len() >= 100 && (event.len() - 100) as u64 >= used * 128);
    }
});
