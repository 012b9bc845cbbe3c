//! CC event log (CCEL) replay against TD quote RTMRs, on the real logs: go-tdx-guest's COS-113 log
//! replays to its quote's RTMR0–2 (RTMR3 untouched and zero); trustee's TD-shim and OVMF logs parse but
//! match no quote here; tampered logs and quotes are refused.

mod common;

use attest_engine::Error;
use attest_engine::tdx::TdQuote;
use attest_engine::tdx::ccel::{check_against, replay};

#[test]
fn cos_113_log_replays_to_its_quote() {
    let Some(dir) = common::testdata() else { return };
    let provider = attest_engine::crypto::default_provider();
    let log = common::read(&dir, "go-tdx-guest/ccel/ccel_data.dat");
    let quote = common::read(&dir, "go-tdx-guest/ccel/cos-113-tdx-quote.dat");
    let q = TdQuote::parse_prefix(&quote).unwrap();
    let r = check_against(provider, &log, &q.body()).unwrap();
    assert_eq!(r.touched, 0b0111);
    assert_eq!(r.events, 44, "the Spec ID event and 43 events");
    assert_eq!(r.log_len, 18101);
    assert_eq!(q.body().rtmrs()[3], [0u8; 48]);
    // One flipped digest byte in an extended event → mismatch; a flipped RTMR in the quote → mismatch.
    let mut bad = log.clone();
    let first_extend = 18101 / 2;
    bad[first_extend] ^= 1;
    assert!(check_against(provider, &bad, &q.body()).is_err());
    let mut other = quote.clone();
    other[48 + 0x148] ^= 1; // RTMR0
    let q2 = TdQuote::parse_prefix(&other).unwrap();
    assert!(matches!(check_against(provider, &log, &q2.body()), Err(Error::RtmrReplayMismatch { rtmr: 0, .. })));
    // The log against another quote.
    let spr = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    assert!(matches!(
        check_against(provider, &log, &TdQuote::parse(&spr).unwrap().body()),
        Err(Error::RtmrReplayMismatch { .. })
    ));
    // Truncated inside an event.
    assert!(replay(provider, &log[..18101 - 3]).is_err());
    assert!(replay(provider, &[]).is_err());
}

#[test]
fn trustee_logs_parse_but_match_no_quote() {
    let Some(dir) = common::testdata() else { return };
    let provider = attest_engine::crypto::default_provider();
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let body = TdQuote::parse(&quote).unwrap();
    for (file, events) in [("trustee-tdx/CCEL_data", 5), ("trustee-tdx/CCEL_data_ovmf", 20)] {
        let log = common::read(&dir, file);
        let r = replay(provider, &log).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(r.events, events + 1, "{file}: events after the Spec ID event");
        assert!(r.touched != 0, "{file}");
        assert!(matches!(check_against(provider, &log, &body.body()), Err(Error::RtmrReplayMismatch { .. })), "{file}");
    }
}

#[test]
fn the_acpi_table_and_the_written_log() {
    use attest_engine::tdx::ccel::{CCEL_TABLE_SIZE, CcelTable, written_log};
    let Some(dir) = common::testdata() else { return };
    let provider = attest_engine::crypto::default_provider();
    let table_bytes = common::read(&dir, "go-tdx-guest/ccel/ccel_table.dat");
    let table = CcelTable::parse(&table_bytes).unwrap();
    assert_eq!((table.cc_type, table.log_area_min_len), (2, 262_144));
    let area = common::read(&dir, "go-tdx-guest/ccel/ccel_data.dat");
    assert_eq!(written_log(provider, &table, &area).unwrap().len(), 18101);
    // Every truncation and an extension of the table are typed errors; so is a bad checksum or signature.
    for n in 0..CCEL_TABLE_SIZE {
        assert!(matches!(CcelTable::parse(&table_bytes[..n]), Err(Error::Truncated { .. })), "{n}");
    }
    let mut longer = table_bytes.clone();
    longer.push(0);
    assert!(matches!(CcelTable::parse(&longer), Err(Error::TrailingData { .. })));
    for i in 0..CCEL_TABLE_SIZE {
        let mut t = table_bytes.clone();
        t[i] ^= 0x40;
        assert!(CcelTable::parse(&t).is_err(), "byte {i}: the checksum covers it");
    }
    // A log area larger than LAML, and one whose log does not parse.
    let mut big = area.clone();
    big.push(0xFF);
    assert!(matches!(written_log(provider, &table, &big), Err(Error::LimitExceeded { .. })));
    assert!(written_log(provider, &table, &area[..100]).is_err());
}
