//! Every shared TDX vector gets the verdict its README states (oracle: dcap-qvl 0.7.1, at the stated
//! times), and tampered copies are refused.
//!
//! | vector | collateral | expected |
//! |---|---|---|
//! | go-tdx-guest SPR_E4 (v4, 39 junk bytes) | collateral_SPR_E4.json, 2023-07-01 | no matching platform TCB level; expired / not-yet-valid collateral at other times |
//! | trustee tdx_quote_4 (v4, debug TD) | collateral_SPR_E4.json, 2023-07-01 | refused (debug); UpToDate with debug allowed |
//! | go-tdx-guest quote_v5_sample (v5, TDX 1.5) | collateral_v5_sample.json | refused at any time (no common window); UpToDate against its own TCB Info |
//! | trustee tdx_quote_5 (v5, MRSERVICETD ≠ 0) | — | signatures valid; no matching TCB level against the FMSPC's TCB Info |
//! | trustee tdx_quote_6 (v4, 70 zero bytes) | trustee tcbInfo.json + enclaveIdentity.json | signatures valid; OutOfDate (PCESVN 11 < 13) |
//! | go-tdx-guest ccel/cos-113 (v4, 3065 zero bytes) | none for its FMSPC | signatures valid; no collateral |
//! | trustee-az-tdx-vtpm td-quote (v4, 70 zero bytes) | none for its FMSPC | signatures valid; no collateral |

mod common;

use attest_engine::error::Error;
use attest_engine::policy::Outcome;
use attest_engine::tdx::{
    Collateral, PcsResponses, QeIdentity, SgxExtensions, TcbInfo, TcbStatus, TdQuote, TdxCheck, TdxPolicy, TdxRequest,
    TdxVerifier, Trailing, tcb,
};
use attest_engine::{CertRole, UnixTime};
use std::path::Path;

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

fn verifier(dir: &Path, bundle: &str) -> TdxVerifier {
    let verifier = TdxVerifier::new();
    let collateral = Collateral::from_bundle_json(&common::read(dir, bundle)).unwrap();
    verifier.set_collateral(&collateral).unwrap();
    verifier
}

fn verify(verifier: &TdxVerifier, quote: &[u8], time: &str, policy: &TdxPolicy) -> Result<TcbStatus, Error> {
    verifier.verify(&TdxRequest::new(quote, at(time)), policy).map(|q| q.tcb_status())
}

fn any_trailing() -> TdxPolicy {
    TdxPolicy::from_toml("trailing_bytes = \"any\"").unwrap()
}

/// The exact quote, without what followed it.
fn exact(bytes: &[u8]) -> &[u8] {
    TdQuote::parse_prefix(bytes).unwrap().as_bytes()
}

/// Evaluates a quote's TCB against decoded (not time-checked) collateral, after checking its signatures.
fn appraise(
    dir: &Path,
    quote: &str,
    time: &str,
    tcb_info: &[u8],
    qe_identity: &[u8],
) -> Result<(TcbStatus, Vec<String>), Error> {
    let bytes = common::read(dir, quote);
    let (q, pck): (TdQuote<'_>, SgxExtensions) =
        TdxVerifier::new().dangerous_verify_signatures_only(&bytes, at(time))?;
    let tcb_info = TcbInfo::from_json(tcb_info)?;
    let qe = QeIdentity::from_json(qe_identity)?;
    let eval = tcb::evaluate(&tcb_info, &qe, &pck, &q.body(), &q.qe_report())?;
    Ok((eval.status, eval.advisory_ids(&tcb_info, &qe).map(str::to_owned).collect()))
}

/// The signed object of a PCS response body, as text.
fn pcs_object(body: &[u8], key: &str) -> Vec<u8> {
    let text = std::str::from_utf8(body).unwrap();
    let start = text.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    let end = text.rfind(",\"signature\"").unwrap();
    text.as_bytes()[start..end].to_vec()
}

#[test]
fn spr_e4_no_matching_tcb_level() {
    let Some(dir) = common::testdata() else { return };
    let verifier = verifier(&dir, "go-tdx-guest/collateral_SPR_E4.json");
    let quote = common::read(&dir, "go-tdx-guest/tdx_prod_quote_SPR_E4.dat");
    let t = "2023-07-01T00:00:00Z";
    assert_eq!(verify(&verifier, &quote, t, &any_trailing()), Err(Error::TcbLevelNotFound { what: "platform" }));
    // Its 39 trailing bytes are not zero: the default policy refuses them before anything else.
    assert_eq!(TdQuote::parse_prefix(&quote).unwrap().trailing(), Trailing::Other(39));
    let e = verify(&verifier, &quote, t, &TdxPolicy::default()).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::TrailingBytes), "{e}");
    assert!(matches!(TdQuote::parse(&quote), Err(Error::TrailingData { extra: 39, .. })));
    let quote = exact(&quote);
    assert_eq!(verify(&verifier, quote, t, &TdxPolicy::default()), Err(Error::TcbLevelNotFound { what: "platform" }));
    // The oracle's time outcomes.
    let p = TdxPolicy::default();
    assert!(matches!(
        verify(&verifier, quote, "2023-07-10T00:00:00Z", &p),
        Err(Error::CollateralExpired { what: "QE Identity", .. })
    ));
    assert!(matches!(
        verify(&verifier, quote, "2023-07-20T00:00:00Z", &p),
        Err(Error::CollateralExpired { what: "TCB Info", .. })
    ));
    assert!(matches!(
        verify(&verifier, quote, "2023-06-10T00:00:00Z", &p),
        Err(Error::CollateralNotYetValid { what: "TCB Info", .. })
    ));
    // One flipped MRTD byte (offset 184).
    let mut t2 = quote.to_vec();
    t2[184] ^= 1;
    assert_eq!(verify(&verifier, &t2, t, &p), Err(Error::TdQuoteSignatureInvalid));
}

#[test]
fn trustee_quote_4_debug_td() {
    let Some(dir) = common::testdata() else { return };
    let verifier = verifier(&dir, "go-tdx-guest/collateral_SPR_E4.json");
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let t = "2023-07-01T00:00:00Z";
    let e = verify(&verifier, &quote, t, &TdxPolicy::default()).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::Debug), "{e}");
    let debug = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let ok = verifier.verify(&TdxRequest::new(&quote, at(t)), &debug).unwrap();
    assert_eq!(ok.tcb_status(), TcbStatus::UpToDate);
    assert_eq!(ok.advisory_ids().count(), 0);
    assert!(ok.cache_hit(), "the refused verification already verified and cached the PCK chain");
    assert_eq!(ok.pck().fmspc, [0x50, 0x80, 0x6f, 0, 0, 0]);
    assert_eq!(ok.pck().pce_svn, 11);
    assert_eq!(&ok.pck().tcb_components[..8], &[5, 5, 13, 2, 3, 1, 0, 3]);
    assert_eq!(ok.verdict().outcome(TdxCheck::Debug), Outcome::Waived);
    assert_eq!(ok.verdict().outcome(TdxCheck::Revocation), Outcome::Passed);
    assert_eq!(ok.verdict().outcome(TdxCheck::Mrtd), Outcome::Waived);
    assert!(ok.verdict().iter().all(|(_, o)| o != Outcome::NotRun), "{:?}", ok.verdict());
    // Warm.
    assert!(verifier.verify(&TdxRequest::new(&quote, at(t)), &debug).unwrap().cache_hit());
    // Policy: MRTD and REPORT_DATA, exact.
    let mrtd = "705ee9381b8633a9fbe532b52345e8433343d2868959f57889d84ca377c395b689cac1599ccea1b7d420483a9ce5f031";
    let p = TdxPolicy::from_toml(&format!("allow_debug = true\nmrtd = [\"{mrtd}\"]")).unwrap();
    assert_eq!(
        verifier.verify(&TdxRequest::new(&quote, at(t)), &p).unwrap().verdict().outcome(TdxCheck::Mrtd),
        Outcome::Passed
    );
    let p = TdxPolicy::from_toml(&format!("allow_debug = true\nmrtd = [\"{}\"]", "00".repeat(48))).unwrap();
    assert_eq!(verify(&verifier, &quote, t, &p).unwrap_err().check_tdx(), Some(TdxCheck::Mrtd));
    let body_rd = *TdQuote::parse(&quote).unwrap().body().report_data();
    let mut req = TdxRequest::new(&quote, at(t));
    req.report_data = Some(&body_rd);
    assert!(verifier.verify(&req, &debug).is_ok());
    let short = &body_rd[..63];
    req.report_data = Some(short);
    assert!(matches!(verifier.verify(&req, &debug), Err(Error::Misuse { .. })), "never padded");
    let mut wrong = body_rd;
    wrong[63] ^= 1;
    req.report_data = Some(&wrong);
    assert_eq!(verifier.verify(&req, &debug).unwrap_err().check_tdx(), Some(TdxCheck::ReportData));
    // Status policy: OutOfDate-only is refused.
    let p = TdxPolicy::from_toml("allow_debug = true\naccepted_tcb_statuses = [\"OutOfDate\"]").unwrap();
    assert_eq!(verify(&verifier, &quote, t, &p).unwrap_err().check_tdx(), Some(TdxCheck::TcbStatus));
    // Tampered copies.
    let mut mrtd_flip = quote.clone();
    mrtd_flip[184] ^= 1;
    assert_eq!(verify(&verifier, &mrtd_flip, t, &debug), Err(Error::TdQuoteSignatureInvalid));
    assert!(matches!(
        verify(&verifier, &quote, "2023-07-20T00:00:00Z", &debug),
        Err(Error::CollateralExpired { what: "TCB Info", .. })
    ));
}

#[test]
fn v5_sample() {
    let Some(dir) = common::testdata() else { return };
    let verifier = verifier(&dir, "go-tdx-guest/collateral_v5_sample.json");
    let q = "go-tdx-guest/quote_v5_sample.dat";
    let quote = common::read(&dir, q);
    let p = TdxPolicy::default();
    // No common validity window in the shipped collateral.
    assert!(matches!(
        verify(&verifier, &quote, "2026-02-20T00:00:00Z", &p),
        Err(Error::CertExpired { role: CertRole::TcbSigning, .. } | Error::CrlStale { .. })
    ));
    assert!(matches!(
        verify(&verifier, &quote, "2023-07-01T00:00:00Z", &p),
        Err(Error::CollateralNotYetValid { what: "TCB Info", .. })
    ));
    // Against its FMSPC's TCB Info (the oracle's "UpToDate at 2026-02-20 with sample_tcbinfo_response_v5").
    let tcb_info = pcs_object(&common::read(&dir, "go-tdx-guest/sample_tcbinfo_response_v5"), "tcbInfo");
    let qe = pcs_object(&common::read(&dir, "go-tdx-guest/sample_qeIdentity_response"), "enclaveIdentity");
    let (status, advisories) = appraise(&dir, q, "2026-02-20T00:00:00Z", &tcb_info, &qe).unwrap();
    assert_eq!(status, TcbStatus::UpToDate);
    assert!(advisories.is_empty());
    let parsed = TdQuote::parse(&quote).unwrap();
    assert_eq!(parsed.version(), 5);
    assert_eq!(&parsed.body().mr_td()[..8], &hex::decode("7348651a34b2d2d3").unwrap()[..]);
    assert!(parsed.body().tee_tcb_svn2().is_some());
}

#[test]
fn trustee_quote_5_no_matching_level() {
    let Some(dir) = common::testdata() else { return };
    let tcb_info = pcs_object(&common::read(&dir, "go-tdx-guest/sample_tcbinfo_response_v5"), "tcbInfo");
    let qe = pcs_object(&common::read(&dir, "go-tdx-guest/sample_qeIdentity_response"), "enclaveIdentity");
    let r = appraise(&dir, "trustee-tdx/tdx_quote_5.dat", "2026-03-01T00:00:00Z", &tcb_info, &qe);
    assert_eq!(r, Err(Error::TcbLevelNotFound { what: "platform" }));
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_5.dat");
    let q = TdQuote::parse(&quote).unwrap();
    assert!(q.body().mr_service_td().unwrap().iter().any(|b| *b != 0));
}

#[test]
fn trustee_quote_6_out_of_date() {
    let Some(dir) = common::testdata() else { return };
    let tcb_info = common::read(&dir, "trustee-tdx/tcbInfo.json");
    let qe = common::read(&dir, "trustee-tdx/enclaveIdentity.json");
    // The PCS bodies' signatures verify under Intel's TCB Signing key (structure and signatures only: no CRL
    // of their time exists in the shipped data, and the shipped TCB Signing copy expired in May 2025).
    let chain = common::read(&dir, "go-tdx-guest/tcb_info_issuer_chain.pem");
    let collateral = Collateral::from_pcs(&PcsResponses {
        tcb_info: &tcb_info,
        tcb_info_issuer_chain: &chain,
        qe_identity: &qe,
        qe_identity_issuer_chain: &chain,
        pck_crl: None,
        pck_crl_issuer_chain: &common::read(&dir, "go-tdx-guest/pck_crl_issuer_chain.pem"),
        root_ca_crl: None,
    })
    .unwrap();
    let provider = attest_engine::crypto::default_provider();
    let verified = collateral.verify(provider).unwrap();
    assert!(!verified.has_crls());
    assert!(matches!(
        verified.check_time(at("2025-11-01T00:00:00Z")),
        Err(Error::CertExpired { role: CertRole::TcbSigning, .. })
    ));
    let (status, advisories) = appraise(
        &dir,
        "trustee-tdx/tdx_quote_6.dat",
        "2025-11-01T00:00:00Z",
        &collateral.tcb_info,
        &collateral.qe_identity,
    )
    .unwrap();
    assert_eq!(status, TcbStatus::OutOfDate);
    assert!(advisories.is_empty());
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_6.dat");
    assert_eq!(TdQuote::parse_prefix(&quote).unwrap().trailing(), Trailing::ZeroPadding(70));
}

#[test]
fn quotes_without_collateral() {
    let Some(dir) = common::testdata() else { return };
    let verifier = verifier(&dir, "go-tdx-guest/collateral_SPR_E4.json");
    for (file, fmspc, padding, mrtd) in [
        ("go-tdx-guest/ccel/cos-113-tdx-quote.dat", "00806f050000", 3065, "dae67181d3d65e07"),
        ("trustee-az-tdx-vtpm/td-quote.bin", "00806f050000", 70, "024a32b070383331"),
    ] {
        let quote = common::read(&dir, file);
        let t = at("2025-01-01T00:00:00Z");
        let (q, pck) = verifier.dangerous_verify_signatures_only(&quote, t).unwrap();
        assert_eq!(hex::encode(pck.fmspc), fmspc, "{file}");
        assert_eq!(q.trailing(), Trailing::ZeroPadding(padding), "{file}");
        assert_eq!(hex::encode(&q.body().mr_td()[..8]), mrtd, "{file}");
        // No TCB Info for this FMSPC exists in any source here.
        let e = verifier.verify(&TdxRequest::new(&quote, t), &TdxPolicy::default()).unwrap_err();
        assert!(matches!(e, Error::CollateralMissing { .. }), "{file}: {e}");
        let mut flipped = quote.clone();
        flipped[184] ^= 1;
        assert_eq!(verifier.dangerous_verify_signatures_only(&flipped, t).unwrap_err(), Error::TdQuoteSignatureInvalid);
    }
    // go-tdx-guest's report.dat is a mock device buffer, not a quote.
    assert!(TdQuote::parse_prefix(&common::read(&dir, "go-tdx-guest/report.dat")).is_err());
}

#[test]
fn pcs_responses_equal_the_bundle() {
    let Some(dir) = common::testdata() else { return };
    let bundle = Collateral::from_bundle_json(&common::read(&dir, "go-tdx-guest/collateral_SPR_E4.json")).unwrap();
    let pcs = Collateral::from_pcs(&PcsResponses {
        tcb_info: &common::read(&dir, "go-tdx-guest/sample_tcbInfo_response"),
        tcb_info_issuer_chain: &common::read(&dir, "go-tdx-guest/tcb_info_issuer_chain.pem"),
        qe_identity: &common::read(&dir, "go-tdx-guest/sample_qeIdentity_response"),
        qe_identity_issuer_chain: &common::read(&dir, "go-tdx-guest/qe_identity_issuer_chain.pem"),
        pck_crl: Some(&common::read(&dir, "go-tdx-guest/pckcrl")),
        pck_crl_issuer_chain: &common::read(&dir, "go-tdx-guest/pck_crl_issuer_chain.pem"),
        root_ca_crl: Some(&common::read(&dir, "go-tdx-guest/rootcrl.der")),
    })
    .unwrap();
    assert_eq!(pcs, bundle);
    // The bundle writer round-trips.
    assert_eq!(Collateral::from_bundle_json(pcs.to_bundle_json().as_bytes()).unwrap(), bundle);
    // One extra space inside the signed tcbInfo text: semantically identical, signature invalid.
    let mut spaced = bundle.clone();
    let pos = spaced.tcb_info.iter().position(|b| *b == b',').unwrap();
    spaced.tcb_info.insert(pos + 1, b' ');
    let provider = attest_engine::crypto::default_provider();
    assert_eq!(spaced.verify(provider).unwrap_err(), Error::CollateralSignatureInvalid { what: "TCB Info" });
    let info = TdxVerifier::new().set_collateral(&bundle).unwrap();
    assert_eq!(info.fmspc, [0x50, 0x80, 0x6f, 0, 0, 0]);
    assert!(info.has_crls);
    assert_eq!(info.valid_from, at("2023-06-18T08:42:58Z"));
    assert_eq!(info.expires, at("2023-07-08T07:24:59Z"));
}

#[test]
fn revocation_policy() {
    let Some(dir) = common::testdata() else { return };
    let mut collateral =
        Collateral::from_bundle_json(&common::read(&dir, "go-tdx-guest/collateral_SPR_E4.json")).unwrap();
    collateral.pck_crl = None;
    let verifier = TdxVerifier::new();
    verifier.set_collateral(&collateral).unwrap();
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let t = "2023-07-01T00:00:00Z";
    let debug = TdxPolicy::from_toml("allow_debug = true").unwrap();
    assert_eq!(verify(&verifier, &quote, t, &debug), Err(Error::CrlMissing));
    let waive = TdxPolicy::from_toml("allow_debug = true\nrevocation = \"check-if-present\"").unwrap();
    let ok = verifier.verify(&TdxRequest::new(&quote, at(t)), &waive).unwrap();
    assert_eq!(ok.verdict().outcome(TdxCheck::Revocation), Outcome::Waived);
    // A warm entry verified without CRLs never serves a policy that requires them.
    assert_eq!(verify(&verifier, &quote, t, &debug), Err(Error::CrlMissing));
}
