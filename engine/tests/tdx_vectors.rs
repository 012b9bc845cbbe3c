//! Every shared TDX vector gets the verdict its README states (oracle: dcap-qvl 0.7.1, at the stated
//! times), and tampered copies are refused.

#![allow(clippy::many_single_char_names)]

mod common;

use attest_engine::error::Error;
use attest_engine::policy::Outcome;
use attest_engine::tdx::{Collateral, TcbStatus, TdQuote, TdxCheck, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::{CertRole, UnixTime};
use std::path::Path;

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

fn verifier(dir: &Path, bundle: &str) -> TdxVerifier {
    let v = TdxVerifier::new();
    let c = Collateral::from_bundle_json(&common::read(dir, bundle)).unwrap();
    v.set_collateral(&c).unwrap();
    v
}

fn verify(v: &TdxVerifier, quote: &[u8], time: &str, policy: &TdxPolicy) -> Result<TcbStatus, Error> {
    v.verify(&TdxRequest::new(quote, at(time)), policy).map(|q| q.tcb_status())
}

#[test]
fn spr_e4_no_matching_tcb_level() {
    let Some(dir) = common::testdata() else { return };
    let v = verifier(&dir, "go-tdx-guest/collateral_SPR_E4.json");
    let q = common::read(&dir, "go-tdx-guest/tdx_prod_quote_SPR_E4.dat");
    let p = TdxPolicy::from_toml("trailing_bytes = \"any\"").unwrap();
    assert_eq!(verify(&v, &q, "2023-07-01T00:00:00Z", &p), Err(Error::TcbLevelNotFound { what: "platform" }));
    // Its 39 trailing bytes are not zero: the default policy refuses them before anything else.
    let e = verify(&v, &q, "2023-07-01T00:00:00Z", &TdxPolicy::default()).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::TrailingBytes), "{e}");
    let exact = &q[..TdQuote::parse_prefix(&q).unwrap().as_bytes().len()];
    assert_eq!(q.len() - exact.len(), 39);
    assert_eq!(
        verify(&v, exact, "2023-07-01T00:00:00Z", &TdxPolicy::default()),
        Err(Error::TcbLevelNotFound { what: "platform" })
    );
    // Times.
    assert!(matches!(
        verify(&v, exact, "2023-07-10T00:00:00Z", &p),
        Err(Error::CollateralExpired { what: "QE Identity", .. })
    ));
    assert!(matches!(
        verify(&v, exact, "2023-07-20T00:00:00Z", &p),
        Err(Error::CollateralExpired { what: "TCB Info", .. })
    ));
    assert!(matches!(
        verify(&v, exact, "2023-06-10T00:00:00Z", &p),
        Err(Error::CollateralNotYetValid { what: "TCB Info", .. })
    ));
    // MRTD flipped.
    let mut t = exact.to_vec();
    t[184] ^= 1;
    assert_eq!(verify(&v, &t, "2023-07-01T00:00:00Z", &p), Err(Error::TdQuoteSignatureInvalid));
}

#[test]
fn trustee_quote_4_debug() {
    let Some(dir) = common::testdata() else { return };
    let v = verifier(&dir, "go-tdx-guest/collateral_SPR_E4.json");
    let q = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let e = verify(&v, &q, "2023-07-01T00:00:00Z", &TdxPolicy::default()).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::Debug), "{e}");
    let p = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let ok = v.verify(&TdxRequest::new(&q, at("2023-07-01T00:00:00Z")), &p).unwrap();
    assert_eq!(ok.tcb_status(), TcbStatus::UpToDate);
    assert_eq!(ok.advisory_ids().count(), 0);
    assert_eq!(ok.verdict().outcome(TdxCheck::Debug), Outcome::Waived);
    assert_eq!(ok.verdict().outcome(TdxCheck::Revocation), Outcome::Passed);
    assert!(ok.verdict().iter().all(|(_, o)| o != Outcome::NotRun), "{:?}", ok.verdict());
    let mut t = q.clone();
    t[184] ^= 1;
    assert_eq!(verify(&v, &t, "2023-07-01T00:00:00Z", &p), Err(Error::TdQuoteSignatureInvalid));
    assert!(matches!(
        verify(&v, &q, "2023-07-20T00:00:00Z", &p),
        Err(Error::CollateralExpired { what: "TCB Info", .. })
    ));
}

#[test]
fn v5_sample_has_no_common_window() {
    let Some(dir) = common::testdata() else { return };
    let v = verifier(&dir, "go-tdx-guest/collateral_v5_sample.json");
    let q = common::read(&dir, "go-tdx-guest/quote_v5_sample.dat");
    let p = TdxPolicy::default();
    assert!(matches!(
        verify(&v, &q, "2026-02-20T00:00:00Z", &p),
        Err(Error::CertExpired { role: CertRole::TcbSigning, .. } | Error::CrlStale { .. })
    ));
    assert!(matches!(
        verify(&v, &q, "2023-07-01T00:00:00Z", &p),
        Err(Error::CollateralNotYetValid { what: "TCB Info", .. })
    ));
}
