//! `EventLog::parse`; on success every event and digest is read, every bank the log declares is replayed
//! (SHA-1 allowed), and the replay must check against its own touched values.
#![no_main]

use attest_engine::crypto::default_provider;
use attest_engine::tpm::eventlog::{EventLog, PCR_COUNT};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let Ok(log) = EventLog::parse(data) else { return };
    black_box((log.format(), log.len(), log.is_empty(), log.startup_locality(), log.as_bytes().len()));
    if let Some(spec) = log.spec_id() {
        black_box((spec.platform_class(), spec.spec_version(), spec.uintn_size(), spec.vendor_info()));
        black_box(spec.algorithms().collect::<Vec<_>>());
    }
    let mut n = 0;
    for event in log.events() {
        assert_eq!(event.index(), n, "event index");
        assert!((event.pcr_index() as usize) < PCR_COUNT, "pcrIndex above 23 after validation");
        black_box((event.offset(), event.event_type().to_string(), event.is_extended(), event.data()));
        for (alg, digest) in event.digests() {
            black_box((format!("{alg:?}"), digest));
            assert_eq!(event.digest(alg).map(<[u8]>::len), Some(digest.len()), "digest lookup");
        }
        n += 1;
    }
    assert_eq!(n, log.len(), "events() and len() disagree");
    for (alg, size) in log.algorithms() {
        black_box(size);
        let Some(bank) = alg.hash_algorithm() else { continue };
        assert!(log.has_bank(bank), "a declared bank is not found");
        let Ok(replayed) = log.replay(default_provider(), bank, true) else { continue };
        black_box(format!("{replayed:?}"));
        let quoted: Vec<(u8, &[u8])> = replayed.touched().collect();
        assert_eq!(quoted.len(), replayed.touched_mask().count_ones() as usize, "touched() vs touched_mask()");
        log.check_against(default_provider(), bank, &quoted, true).expect("a replay checks against itself");
    }
});
