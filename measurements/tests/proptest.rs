//! Property tests: the parsers never panic, and what we write reads back identically.

use attest_engine::UnixTime;
use attest_measurements::{
    Document, Freshness, MAX_MEASUREMENTS_VERSION, Measurement, Measurements, PcrIndex, parse_any, parse_document,
    parse_versioned,
};
use proptest::prelude::*;

fn measurements() -> impl Strategy<Value = Measurements> {
    (
        prop_oneof![Just(32usize), Just(48usize)],
        prop::collection::btree_map(0u32..24, (any::<u8>(), any::<bool>()), 1..24),
    )
        .prop_flat_map(|(len, entries)| {
            let n = entries.len();
            (Just(len), Just(entries), prop::collection::vec(prop::collection::vec(any::<u8>(), len), n))
        })
        .prop_map(|(_, entries, values)| {
            let mut m = Measurements::new();
            for ((index, (_, warn)), value) in entries.into_iter().zip(values) {
                m.insert(PcrIndex::new(index).unwrap(), Measurement::new(&value, warn).unwrap()).unwrap();
            }
            m
        })
}

/// Strings built from the tokens that matter to the parsers, so the fuzzing reaches deep states.
fn tokenish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("- ".to_owned()),
        Just("\"4\"".to_owned()),
        Just("23".to_owned()),
        Just("\"expected\"".to_owned()),
        Just("\"warnOnly\"".to_owned()),
        Just("true".to_owned()),
        Just("\"list\"".to_owned()),
        Just("\"version\"".to_owned()),
        Just("\"measurementsVersion\"".to_owned()),
        Just("\"expires\"".to_owned()),
        Just("\"csp\"".to_owned()),
        Just("&a *a".to_owned()),
        Just("!!binary".to_owned()),
        "\"[0-9a-fA-F]{0,96}\"",
        "[ -~]{0,8}",
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,300}") {
        let _ = parse_any(s.as_bytes());
        let _ = parse_document(s.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_any(&b);
    }

    #[test]
    fn token_soup_never_panics(s in tokenish()) {
        let _ = parse_any(s.as_bytes());
        if let Ok(doc) = parse_document(s.as_bytes()) {
            // Whatever parses is non-empty and single-bank.
            if let Ok(m) = doc.into_single() {
                prop_assert!(!m.is_empty());
                let len = m.digest_len().unwrap();
                prop_assert!(m.iter().all(|(_, v)| v.expected().len() == len));
            }
        }
    }

    #[test]
    fn json_round_trip(m in measurements()) {
        prop_assert_eq!(Measurements::from_json(m.to_json().as_bytes()).unwrap(), m.clone());
        prop_assert_eq!(parse_any(m.to_json().as_bytes()).unwrap(), m);
    }

    #[test]
    fn versioned_round_trip(m in measurements(), version in 0..=MAX_MEASUREMENTS_VERSION,
                            expires in prop::option::of(0u64..4_102_444_800)) {
        let freshness = Freshness::new(version, expires.map(UnixTime::from_secs)).unwrap();
        let doc = Document::Map(m);
        let text = doc.to_json_with(&freshness);
        prop_assert_eq!(parse_versioned(text.as_bytes()).unwrap(), (doc, freshness));
    }

    #[test]
    fn yaml_round_trip(m in measurements()) {
        prop_assert_eq!(Measurements::from_yaml(m.to_yaml().as_bytes()).unwrap(), m.clone());
        prop_assert_eq!(parse_any(m.to_yaml().as_bytes()).unwrap(), m);
    }

    #[test]
    fn merge_is_later_wins(a in measurements(), b in measurements()) {
        if let Ok(merged) = a.merge(&b) {
            for index in PcrIndex::all() {
                let want = b.get(index).or(a.get(index));
                prop_assert_eq!(merged.get(index), want);
            }
        } else {
            prop_assert_ne!(a.digest_len(), b.digest_len());
        }
        if a.digest_len() == b.digest_len() {
            prop_assert!(a.merge(&b).is_ok());
        }
    }

    #[test]
    fn self_compare_accepts(m in measurements()) {
        let actual = m.iter().map(|(i, v)| (u32::from(i), v.expected().to_vec())).collect();
        let report = m.compare(&actual);
        prop_assert!(report.is_accepted());
        prop_assert_eq!(report.checks().len(), m.len());
    }
}
