//! The SEV-SNP extended-report certificate table (`attest_engine::snp::CertTable::parse`): never panics, borrows
//! every entry from inside the buffer, and re-encoding what it accepted parses back to the same entries.
#![no_main]

use attest_engine::snp::{CertTable, MAX_CERT_LEN, MAX_CERT_TABLE_ENTRIES, encode_cert_table};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(table) = CertTable::parse(data) else { return };
    let entries = table.entries();
    assert!(entries.len() <= MAX_CERT_TABLE_ENTRIES);
    let range = data.as_ptr_range();
    for (_, der) in entries {
        assert!(der.len() <= MAX_CERT_LEN);
        assert!(range.contains(&der.as_ptr()) || der.is_empty(), "an entry outside the buffer");
    }
    let again = encode_cert_table(entries);
    let reparsed = CertTable::parse(&again).expect("a re-encoded table parses");
    assert_eq!(reparsed.entries(), entries);
    let _ = table.carried();
});
