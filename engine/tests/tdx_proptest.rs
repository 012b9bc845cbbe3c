//! proptest for the TDX parsers: `TdQuote::parse_prefix` / `parse`, the PCK SGX extension, TCB Info, QE
//! Identity and the collateral readers never panic on arbitrary input or on mutations of valid input, and a
//! quote that parses has consumed exactly its own bytes (what follows is classified, never read).
//!
//! Valid seeds: synthetic quotes built here (v4; v5 with TDX 1.0 and 1.5 bodies) with arbitrary field
//! contents, and the real quotes and collateral of the test data (`$ATTEST_TESTDATA`) when present.

mod common;

use attest_engine::tdx::{Collateral, QeIdentity, SgxExtensions, TcbInfo, TdQuote, Trailing};
use proptest::prelude::*;
use std::sync::LazyLock;

/// A structurally valid quote: `version`, v5 `body_type`, body bytes, QE auth data and a PEM chain as given.
fn quote(version: u16, body_type: Option<u16>, body: &[u8], auth: &[u8], chain: &[u8]) -> Vec<u8> {
    let mut q = Vec::new();
    q.extend(version.to_le_bytes());
    q.extend(2u16.to_le_bytes());
    q.extend(0x81u32.to_le_bytes());
    q.extend([0u8; 4]);
    q.extend(hex::decode("939a7233f79c4ca9940a0db3957f0607").unwrap());
    q.extend([7u8; 20]);
    let len = if body_type == Some(3) { 648 } else { 584 };
    if let Some(t) = body_type {
        q.extend(t.to_le_bytes());
        q.extend((len as u32).to_le_bytes());
    }
    q.extend(body.iter().copied().cycle().take(len));
    if body.is_empty() {
        q.extend(vec![0u8; len]);
    }
    let cert_len = 384 + 64 + 2 + auth.len() + 6 + chain.len();
    q.extend(((128 + 6 + cert_len) as u32).to_le_bytes());
    q.extend([3u8; 128]);
    q.extend(6u16.to_le_bytes());
    q.extend((cert_len as u32).to_le_bytes());
    q.extend([4u8; 384 + 64]);
    q.extend((auth.len() as u16).to_le_bytes());
    q.extend(auth);
    q.extend(5u16.to_le_bytes());
    q.extend((chain.len() as u32).to_le_bytes());
    q.extend(chain);
    q
}

struct Seeds {
    quotes: Vec<Vec<u8>>,
    json: Vec<Vec<u8>>,
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| {
    let mut quotes = vec![
        quote(4, None, &[], &[1; 32], b"chain"),
        quote(5, Some(2), &[9], &[], b""),
        quote(5, Some(3), &[1, 2, 3], &[5; 32], b"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"),
    ];
    let mut json = Vec::new();
    if let Some(dir) = common::testdata() {
        for f in [
            "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
            "go-tdx-guest/quote_v5_sample.dat",
            "trustee-tdx/tdx_quote_4.dat",
            "trustee-tdx/tdx_quote_6.dat",
        ] {
            quotes.push(common::read(&dir, f));
        }
        for f in [
            "go-tdx-guest/collateral_SPR_E4.json",
            "go-tdx-guest/sample_tcbInfo_response",
            "go-tdx-guest/sample_qeIdentity_response",
            "trustee-tdx/tcbInfo.json",
        ] {
            json.push(common::read(&dir, f));
        }
    }
    Seeds { quotes, json }
});

fn check_quote(bytes: &[u8]) {
    let exact = TdQuote::parse(bytes);
    match TdQuote::parse_prefix(bytes) {
        Ok(q) => {
            assert_eq!(q.as_bytes(), &bytes[..q.as_bytes().len()]);
            assert_eq!(q.as_bytes().len() + q.trailing().len(), bytes.len());
            assert_eq!(exact.is_ok(), q.trailing() == Trailing::None);
            let rest = &bytes[q.as_bytes().len()..];
            match q.trailing() {
                Trailing::None => assert!(rest.is_empty()),
                Trailing::ZeroPadding(_) => assert!(rest.iter().all(|b| *b == 0)),
                Trailing::Other(_) => assert!(rest.iter().any(|b| *b != 0)),
            }
        }
        Err(_) => assert!(exact.is_err()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        check_quote(&bytes);
        let _ = SgxExtensions::from_der(&bytes);
        let _ = TcbInfo::from_json(&bytes);
        let _ = QeIdentity::from_json(&bytes);
        let _ = Collateral::from_bundle_json(&bytes);
    }

    #[test]
    fn synthetic_quotes_consume_exactly(
        v5 in any::<bool>(),
        tdx15 in any::<bool>(),
        body in proptest::collection::vec(any::<u8>(), 0..64),
        auth in proptest::collection::vec(any::<u8>(), 0..64),
        chain in proptest::collection::vec(any::<u8>(), 0..256),
        tail in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let q = if v5 { quote(5, Some(if tdx15 { 3 } else { 2 }), &body, &auth, &chain) } else { quote(4, None, &body, &auth, &chain) };
        let parsed = TdQuote::parse(&q).unwrap();
        prop_assert_eq!(parsed.as_bytes().len(), q.len());
        prop_assert_eq!(parsed.qe_auth_data(), &auth[..]);
        prop_assert_eq!(parsed.pck_chain_pem(), &chain[..]);
        let mut padded = q.clone();
        padded.extend(&tail);
        let p = TdQuote::parse_prefix(&padded).unwrap();
        prop_assert_eq!(p.as_bytes(), &q[..]);
        prop_assert_eq!(p.trailing().len(), tail.len());
        check_quote(&padded);
    }

    #[test]
    fn mutated_quotes(seed in any::<prop::sample::Index>(), edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>()) {
        let mut q = seed.get(&SEEDS.quotes).clone();
        for (at, b) in edits {
            let i = at.index(q.len());
            q[i] = b;
        }
        check_quote(&q);
        check_quote(&q[..cut.index(q.len() + 1)]);
    }

    #[test]
    fn mutated_collateral(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), pick in any::<prop::sample::Index>()) {
        if SEEDS.json.is_empty() {
            return Ok(());
        }
        let mut j = pick.get(&SEEDS.json).clone();
        for (at, b) in edits {
            let i = at.index(j.len());
            j[i] = b;
        }
        let _ = Collateral::from_bundle_json(&j);
        let _ = TcbInfo::from_json(&j);
        let _ = QeIdentity::from_json(&j);
    }
}

/// A valid ACPI CCEL table for a TDX log area of `len` bytes (checksum fixed).
fn ccel_table(len: u64, oem: [u8; 6]) -> Vec<u8> {
    let mut t = b"CCEL".to_vec();
    t.extend(56u32.to_le_bytes());
    t.extend([1, 0]);
    t.extend(oem);
    t.extend([0u8; 8 + 4 + 4 + 4]);
    t.extend([2, 0, 0, 0]);
    t.extend(len.to_le_bytes());
    t.extend(0x7F00_0000u64.to_le_bytes());
    let sum = t.iter().fold(0u8, |s, b| s.wrapping_add(*b));
    t[9] = 0u8.wrapping_sub(sum);
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The ACPI CCEL table: arbitrary bytes and every byte change of a valid table are typed errors or a table
    /// that says what its bytes say; a valid table parses for any LAML within the limit.
    #[test]
    fn ccel_table_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80), len in 1u64..(1 << 24), oem in any::<[u8; 6]>(), at in 0usize..56, x in 1u8..) {
        let _ = attest_engine::tdx::ccel::CcelTable::parse(&b);
        let t = ccel_table(len, oem);
        let parsed = attest_engine::tdx::ccel::CcelTable::parse(&t).unwrap();
        prop_assert_eq!(parsed.log_area_min_len, len);
        let mut m = t.clone();
        m[at] ^= x;
        prop_assert!(attest_engine::tdx::ccel::CcelTable::parse(&m).is_err(), "the checksum covers byte {}", at);
    }

    /// The written part of a log area: never a panic, and an accepted log is a prefix of the area.
    #[test]
    fn written_log_is_a_prefix(area in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let provider = attest_engine::crypto::default_provider();
        let t = attest_engine::tdx::ccel::CcelTable::parse(&ccel_table(4096, *b"ATTEST")).unwrap();
        if let Ok(log) = attest_engine::tdx::ccel::written_log(provider, &t, &area) {
            prop_assert!(area.starts_with(log));
        }
    }

    /// TDREPORT_STRUCT: exactly 1024 bytes of type TDX, anything else a typed error.
    #[test]
    fn tdreport_never_panics(b in proptest::collection::vec(any::<u8>(), 1000..1050)) {
        use attest_engine::tdx::tdreport::{RawTdReportStruct, TDREPORT_SIZE, TDREPORT_TYPE_TDX};
        let r = RawTdReportStruct::parse(&b);
        prop_assert_eq!(r.is_ok(), b.len() == TDREPORT_SIZE && b[0] == TDREPORT_TYPE_TDX);
    }
}
