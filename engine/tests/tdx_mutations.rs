//! Every bit of what a TD quote signs, and of its signatures, matters: flipping any one of them in a real
//! quote makes verification fail. Covered per quote: the signed region (header ‖ body), the quote
//! signature, the attestation key, the QE report, the QE report signature and the QE authentication data.
//! Collateral: every bit of both collateral signatures and every byte of both signed JSON texts.

mod common;

use attest_engine::tdx::{Collateral, TdQuote, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::{Error, UnixTime};

const QUOTES: &[(&str, &str)] = &[
    ("go-tdx-guest/tdx_prod_quote_SPR_E4.dat", "2023-07-01T00:00:00Z"),
    ("go-tdx-guest/quote_v5_sample.dat", "2026-03-01T00:00:00Z"),
    ("go-tdx-guest/ccel/cos-113-tdx-quote.dat", "2025-01-01T00:00:00Z"),
    ("trustee-tdx/tdx_quote_5.dat", "2026-03-01T00:00:00Z"),
    ("trustee-tdx/tdx_quote_6.dat", "2025-11-01T00:00:00Z"),
    ("trustee-az-tdx-vtpm/td-quote.bin", "2025-01-01T00:00:00Z"),
];

/// The byte ranges of `quote` that must each be covered by a signature or a binding.
fn regions(quote: &[u8]) -> Vec<(&'static str, core::ops::Range<usize>)> {
    let q = TdQuote::parse_prefix(quote).unwrap();
    let base = quote.as_ptr() as usize;
    let span = |s: &[u8]| {
        let start = s.as_ptr() as usize - base;
        start..start + s.len()
    };
    vec![
        ("signed region", span(q.signed_bytes())),
        ("quote signature", span(q.signature())),
        ("attestation key", span(q.attestation_key())),
        ("QE report", span(q.qe_report().as_bytes())),
        ("QE report signature", span(q.qe_report_signature())),
        ("QE authentication data", span(q.qe_auth_data())),
    ]
}

#[test]
fn every_bit_of_every_quote() {
    let Some(dir) = common::testdata() else { return };
    let verifier = TdxVerifier::new();
    for (file, time) in QUOTES {
        let quote = common::read(&dir, file);
        let t = UnixTime::parse(time).unwrap();
        verifier.dangerous_verify_signatures_only(&quote, t).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut m = quote.clone();
        for (what, range) in regions(&quote) {
            for i in range {
                for bit in 0..8 {
                    m[i] ^= 1 << bit;
                    assert!(
                        verifier.dangerous_verify_signatures_only(&m, t).is_err(),
                        "{file}: flipping bit {bit} of byte {i} ({what}) went unnoticed"
                    );
                    m[i] ^= 1 << bit;
                }
            }
        }
    }
}

/// The full verifier (warm path) refuses every flip of the signed region of a quote it accepts.
#[test]
fn every_bit_through_the_warm_path() {
    let Some(dir) = common::testdata() else { return };
    let verifier = TdxVerifier::new();
    verifier
        .set_collateral(
            &Collateral::from_bundle_json(&common::read(&dir, "go-tdx-guest/collateral_SPR_E4.json")).unwrap(),
        )
        .unwrap();
    let policy = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let t = UnixTime::parse("2023-07-01T00:00:00Z").unwrap();
    verifier.verify(&TdxRequest::new(&quote, t), &policy).unwrap();
    let mut m = quote.clone();
    for (what, range) in regions(&quote) {
        for i in range {
            for bit in 0..8 {
                m[i] ^= 1 << bit;
                assert!(
                    verifier.verify(&TdxRequest::new(&m, t), &policy).is_err(),
                    "flipping bit {bit} of byte {i} ({what}) went unnoticed"
                );
                m[i] ^= 1 << bit;
            }
        }
    }
}

#[test]
fn every_bit_of_the_collateral_signatures() {
    let Some(dir) = common::testdata() else { return };
    let provider = attest_engine::crypto::default_provider();
    let collateral = Collateral::from_bundle_json(&common::read(&dir, "go-tdx-guest/collateral_SPR_E4.json")).unwrap();
    collateral.verify(provider).unwrap();
    let tcb = Error::CollateralSignatureInvalid { what: "TCB Info" };
    let qe = Error::CollateralSignatureInvalid { what: "QE Identity" };
    for i in 0..64 {
        for bit in 0..8 {
            let mut c = collateral.clone();
            c.tcb_info_signature[i] ^= 1 << bit;
            assert_eq!(c.verify(provider).unwrap_err(), tcb, "tcb_info_signature byte {i} bit {bit}");
            let mut c = collateral.clone();
            c.qe_identity_signature[i] ^= 1 << bit;
            assert_eq!(c.verify(provider).unwrap_err(), qe, "qe_identity_signature byte {i} bit {bit}");
        }
    }
    for i in 0..collateral.tcb_info.len() {
        let mut c = collateral.clone();
        c.tcb_info[i] ^= 1;
        assert_eq!(c.verify(provider).unwrap_err(), tcb, "tcb_info byte {i}");
    }
    for i in 0..collateral.qe_identity.len() {
        let mut c = collateral.clone();
        c.qe_identity[i] ^= 1;
        assert_eq!(c.verify(provider).unwrap_err(), qe, "qe_identity byte {i}");
    }
    // The CRLs' signatures (the trailing ECDSA-Sig-Value BIT STRING, ≤ 72 bytes).
    for (name, crl) in
        [("root CA CRL", collateral.root_ca_crl.clone().unwrap()), ("PCK CRL", collateral.pck_crl.clone().unwrap())]
    {
        for i in crl.len() - 64..crl.len() {
            let mut c = collateral.clone();
            let mut m = crl.clone();
            m[i] ^= 1;
            if name == "PCK CRL" {
                c.pck_crl = Some(m);
            } else {
                c.root_ca_crl = Some(m);
            }
            assert!(c.verify(provider).is_err(), "{name} byte {i}");
        }
    }
}
