//! The CC event log readers (`tdx::ccel`): the ACPI CCEL table parser and, for a table that parses, the
//! written part of a log area; then the replay. Never a panic; what is accepted is consistent: the written
//! log is a prefix of the area and replays to the same registers.
//!
//! Input: the first 56 bytes are the table, the rest the log area (a short input is a table alone).
#![no_main]

use attest_engine::tdx::ccel::{CCEL_TABLE_SIZE, CcelTable, replay, written_log};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let provider = attest_engine::crypto::default_provider();
    let (table, area) = data.split_at(data.len().min(CCEL_TABLE_SIZE));
    if let Ok(t) = CcelTable::parse(table) {
        assert!(t.log_area_min_len > 0);
        if let Ok(log) = written_log(provider, &t, area) {
            assert!(log.len() <= area.len());
            assert_eq!(log.as_ptr(), area.as_ptr(), "the written log is a prefix of the area");
            let whole = replay(provider, area).expect("the area replayed once");
            let again = replay(provider, log).expect("its written part replays");
            assert_eq!(whole.rtmrs, again.rtmrs);
            assert_eq!(whole.events, again.events);
        }
    }
    // The log area alone, as a document carries it.
    let _ = replay(provider, data);
});
