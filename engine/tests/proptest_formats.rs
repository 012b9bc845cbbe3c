//! Property tests for the evidence-format readers and the GCE views: arbitrary input never panics, and
//! what parses reads back exactly what was encoded.

use attest_engine::crypto::HashAlgorithm;
use attest_engine::formats::azure::AzureVtpmEvidence;
use attest_engine::formats::tpm::{AkKey, AzureQuoteBin, HexQuote, TrusteeTpmEvidence};
use attest_engine::gce::{GceEvidence, GceQuote, InstanceInfo};
use proptest::prelude::*;

fn bincode(sig: &[u8], attest: &[u8], pcrs: &[[u8; 32]]) -> Vec<u8> {
    let mut b = Vec::new();
    for field in [sig, attest] {
        b.extend_from_slice(&(field.len() as u64).to_le_bytes());
        b.extend_from_slice(field);
    }
    b.extend_from_slice(&(pcrs.len() as u64).to_le_bytes());
    for p in pcrs {
        b.extend_from_slice(p);
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn binary_readers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = AkKey::parse(&data);
        let _ = AzureQuoteBin::parse(&data);
        let _ = InstanceInfo::from_der(&data);
    }

    #[test]
    fn json_readers_never_panic(text in "[\\[\\]{}\":,0-9a-fA-F ]{0,400}", raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        for input in [text.as_bytes(), &raw[..]] {
            let _ = TrusteeTpmEvidence::from_json(input);
            let _ = HexQuote::from_json(input);
            let _ = AzureVtpmEvidence::from_json(input);
        }
    }

    #[test]
    fn azure_quote_bincode_round_trips(
        sig in proptest::collection::vec(any::<u8>(), 0..600),
        attest in proptest::collection::vec(any::<u8>(), 0..300),
        pcrs in proptest::collection::vec(any::<[u8; 32]>(), 0..=24),
        cut in any::<usize>(),
    ) {
        let b = bincode(&sig, &attest, &pcrs);
        let q = AzureQuoteBin::parse(&b).unwrap();
        prop_assert_eq!(q.signature, &sig[..]);
        prop_assert_eq!(q.attest, &attest[..]);
        prop_assert_eq!(q.pcrs().collect::<Vec<_>>(), pcrs.iter().map(|p| &p[..]).collect::<Vec<_>>());
        // Every truncation and any trailing byte is refused.
        let n = cut % b.len();
        prop_assert!(AzureQuoteBin::parse(&b[..n]).is_err());
        let mut longer = b.clone();
        longer.push(0);
        prop_assert!(AzureQuoteBin::parse(&longer).is_err());
    }

    #[test]
    fn hex_quote_json_round_trips(
        sig in proptest::collection::vec(any::<u8>(), 1..300),
        attest in proptest::collection::vec(any::<u8>(), 1..200),
        pcrs in proptest::collection::vec(any::<[u8; 32]>(), 0..=24),
    ) {
        let json = format!(
            r#"{{"signature":"{}","message":"{}","pcrs":[{}]}}"#,
            hex::encode(&sig),
            hex::encode(&attest),
            pcrs.iter().map(|p| format!("\"{}\"", hex::encode(p))).collect::<Vec<_>>().join(",")
        );
        let parts = HexQuote::from_json(json.as_bytes()).unwrap();
        prop_assert_eq!(&parts.signature, &sig);
        prop_assert_eq!(&parts.attest, &attest);
        prop_assert_eq!(parts.pcrs.len(), pcrs.len());
        prop_assert!(parts.pcr_values().is_ok());
    }

    #[test]
    fn gce_views_enforce_their_limits(indices in proptest::collection::vec(0u32..40, 0..40), quotes in 0usize..8) {
        let value = [7u8; 32];
        let mut q = GceQuote::new(&[], &[], HashAlgorithm::Sha256);
        let mut seen = std::collections::BTreeSet::new();
        for i in indices {
            let r = q.set_pcr(i, &value);
            prop_assert_eq!(r.is_ok(), i < 24 && seen.insert(i));
        }
        let mut ev = GceEvidence::new(&[], &[]);
        for n in 0..quotes {
            prop_assert_eq!(ev.push_quote(q).is_ok(), n < attest_engine::gce::MAX_QUOTES);
        }
    }
}
