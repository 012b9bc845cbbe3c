//! Differential test against an independent TDX verifier, the `dcap-qvl` crate (Phala's pure-Rust port of
//! Intel's QVL; the oracle the testdata's expected outcomes came from), on every real quote and the shipped
//! collateral: both must accept or refuse alike, for the same reason class, and agree on the TCB status and
//! advisory IDs when they accept. Tampered copies (each byte of the signed region) are refused by both.

mod common;

use attest_engine::Error;
use attest_engine::UnixTime;
use attest_engine::tdx::{Collateral, TdxPolicy, TdxRequest, TdxVerifier};
use dcap_qvl::QuoteCollateralV3;
use std::path::Path;

/// dcap-qvl's collateral from the shared JSON bundle (its serde form expects raw bytes, the files carry hex).
fn oracle_collateral(dir: &Path, bundle: &str) -> QuoteCollateralV3 {
    let v: serde_json::Value = serde_json::from_slice(&common::read(dir, bundle)).unwrap();
    let s = |k: &str| v[k].as_str().unwrap().to_owned();
    let h = |k: &str| hex::decode(v[k].as_str().unwrap()).unwrap();
    QuoteCollateralV3 {
        pck_crl_issuer_chain: s("pck_crl_issuer_chain"),
        root_ca_crl: h("root_ca_crl"),
        pck_crl: h("pck_crl"),
        tcb_info_issuer_chain: s("tcb_info_issuer_chain"),
        tcb_info: s("tcb_info"),
        tcb_info_signature: h("tcb_info_signature"),
        qe_identity_issuer_chain: s("qe_identity_issuer_chain"),
        qe_identity: s("qe_identity"),
        qe_identity_signature: h("qe_identity_signature"),
        pck_certificate_chain: None,
    }
}

/// A reason class both verifiers can be mapped to.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Class {
    Accept,
    QuoteSignature,
    NoTcbLevel,
    CollateralExpired,
    CollateralNotYetValid,
    WrongPlatform,
    Debug,
    ServiceTd,
    Other,
}

fn ours(e: &Error) -> Class {
    match e {
        Error::TdQuoteSignatureInvalid => Class::QuoteSignature,
        Error::TcbLevelNotFound { .. } => Class::NoTcbLevel,
        Error::CollateralExpired { .. } | Error::CrlStale { .. } | Error::CertExpired { .. } => {
            Class::CollateralExpired
        }
        Error::CollateralNotYetValid { .. } | Error::CrlNotYetValid { .. } | Error::CertNotYetValid { .. } => {
            Class::CollateralNotYetValid
        }
        Error::CollateralMissing { .. } | Error::CollateralMismatch { .. } => Class::WrongPlatform,
        e if e.check_tdx() == Some(attest_engine::tdx::TdxCheck::Debug) => Class::Debug,
        e if e.check_tdx() == Some(attest_engine::tdx::TdxCheck::ServiceTd) => Class::ServiceTd,
        _ => Class::Other,
    }
}

fn theirs(msg: &str) -> Class {
    let m = msg.to_ascii_lowercase();
    if m.contains("isv enclave report signature") {
        Class::QuoteSignature
    } else if m.contains("no matching tcb level") {
        Class::NoTcbLevel
    } else if m.contains("expired") {
        Class::CollateralExpired
    } else if m.contains("in the future") || m.contains("not yet valid") || m.contains("notvalidyet") {
        Class::CollateralNotYetValid
    } else if m.contains("fmspc mismatch") {
        Class::WrongPlatform
    } else if m.contains("debug mode") {
        Class::Debug
    } else if m.contains("service td") {
        Class::ServiceTd
    } else {
        Class::Other
    }
}

struct Case {
    quote: &'static str,
    bundle: &'static str,
    time: &'static str,
    allow_debug: bool,
    /// Whether the reasons must agree. Quotes of platforms without collateral here are refused by both,
    /// at different steps: this verifier looks collateral up by the PCK certificate's FMSPC first
    /// ("no collateral for this platform"), dcap-qvl checks the given collateral's and the PCK chain's
    /// times first and the FMSPC last.
    same_reason: bool,
}

const CASES: &[Case] = &[
    Case {
        quote: "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-10T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-20T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "go-tdx-guest/tdx_prod_quote_SPR_E4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-06-10T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "trustee-tdx/tdx_quote_4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "trustee-tdx/tdx_quote_4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: true,
        same_reason: true,
    },
    Case {
        quote: "trustee-tdx/tdx_quote_4.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-20T00:00:00Z",
        allow_debug: true,
        same_reason: true,
    },
    Case {
        quote: "go-tdx-guest/quote_v5_sample.dat",
        bundle: "go-tdx-guest/collateral_v5_sample.json",
        time: "2026-02-20T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "go-tdx-guest/quote_v5_sample.dat",
        bundle: "go-tdx-guest/collateral_v5_sample.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: true,
    },
    Case {
        quote: "trustee-tdx/tdx_quote_5.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: false,
    },
    Case {
        quote: "trustee-tdx/tdx_quote_6.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: false,
    },
    Case {
        quote: "go-tdx-guest/ccel/cos-113-tdx-quote.dat",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: false,
    },
    Case {
        quote: "trustee-az-tdx-vtpm/td-quote.bin",
        bundle: "go-tdx-guest/collateral_SPR_E4.json",
        time: "2023-07-01T00:00:00Z",
        allow_debug: false,
        same_reason: false,
    },
];

fn run_ours(
    verifier: &TdxVerifier,
    quote: &[u8],
    time: UnixTime,
    allow_debug: bool,
) -> (Class, Option<(String, Vec<String>)>) {
    // dcap-qvl ignores bytes after the quote; so does this side's policy here.
    let mut policy = TdxPolicy::from_toml("trailing_bytes = \"any\"").unwrap();
    policy.allow_debug = allow_debug;
    // dcap-qvl reports every status and leaves acceptance to the caller: accept them all here too.
    policy.accepted_tcb_statuses = vec![
        attest_engine::tdx::TcbStatus::UpToDate,
        attest_engine::tdx::TcbStatus::SWHardeningNeeded,
        attest_engine::tdx::TcbStatus::ConfigurationNeeded,
        attest_engine::tdx::TcbStatus::ConfigurationAndSWHardeningNeeded,
        attest_engine::tdx::TcbStatus::OutOfDate,
        attest_engine::tdx::TcbStatus::OutOfDateConfigurationNeeded,
    ];
    let first = verifier.verify(&TdxRequest::new(quote, time), &policy).map(|v| v.advisory_ids().count());
    if let Err(Error::TdxPolicy(p)) = &first
        && p.check == attest_engine::tdx::TdxCheck::AdvisoryIds
    {
        // The oracle reports advisories and leaves judging them to the caller: allow the ones found.
        let (q, pck) = verifier.dangerous_verify_signatures_only(quote, time).unwrap();
        let c = verifier.collateral(&pck.fmspc).unwrap();
        let eval =
            attest_engine::tdx::tcb::evaluate(c.tcb_info(), c.qe_identity(), &pck, &q.body(), &q.qe_report()).unwrap();
        policy.allowed_advisory_ids = eval.advisory_ids(c.tcb_info(), c.qe_identity()).map(str::to_owned).collect();
    }
    match verifier.verify(&TdxRequest::new(quote, time), &policy) {
        Ok(v) => {
            (Class::Accept, Some((v.tcb_status().name().to_owned(), v.advisory_ids().map(str::to_owned).collect())))
        }
        Err(e) => (ours(&e), None),
    }
}

fn run_theirs(
    collateral: &QuoteCollateralV3,
    quote: &[u8],
    time: UnixTime,
    allow_debug: bool,
) -> (Class, Option<(String, Vec<String>)>) {
    let v = dcap_qvl::verify::QuoteVerifier::new_prod().allow_debug(allow_debug);
    match v.verify(quote, collateral, time.as_secs()) {
        Ok(r) => (Class::Accept, Some((r.status, r.advisory_ids))),
        Err(e) => (theirs(&format!("{e:#}")), None),
    }
}

#[test]
fn agrees_with_dcap_qvl_on_every_vector() {
    let Some(dir) = common::testdata() else { return };
    for case in CASES {
        let quote = common::read(&dir, case.quote);
        let time = UnixTime::parse(case.time).unwrap();
        let verifier = TdxVerifier::new();
        verifier.set_collateral(&Collateral::from_bundle_json(&common::read(&dir, case.bundle)).unwrap()).unwrap();
        let oracle = oracle_collateral(&dir, case.bundle);
        let a = run_ours(&verifier, &quote, time, case.allow_debug);
        let b = run_theirs(&oracle, &quote, time, case.allow_debug);
        let what = format!("{} at {} (debug allowed: {})", case.quote, case.time, case.allow_debug);
        if case.same_reason {
            assert_eq!(a, b, "{what}");
            assert_ne!(a.0, Class::Other, "{what}: unclassified outcome");
        } else {
            assert_ne!(a.0, Class::Accept, "{what}");
            assert_ne!(b.0, Class::Accept, "{what}: dcap-qvl");
            assert_eq!(a.0, Class::WrongPlatform, "{what}");
        }
    }
}

#[test]
fn both_refuse_every_tampered_byte() {
    let Some(dir) = common::testdata() else { return };
    let bundle = "go-tdx-guest/collateral_SPR_E4.json";
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let time = UnixTime::parse("2023-07-01T00:00:00Z").unwrap();
    let verifier = TdxVerifier::new();
    verifier.set_collateral(&Collateral::from_bundle_json(&common::read(&dir, bundle)).unwrap()).unwrap();
    let oracle = oracle_collateral(&dir, bundle);
    assert_eq!(run_ours(&verifier, &quote, time, true).0, Class::Accept);
    assert_eq!(run_theirs(&oracle, &quote, time, true).0, Class::Accept);
    let signed = attest_engine::tdx::TdQuote::parse(&quote).unwrap().signed_bytes().len();
    for i in 0..signed {
        let mut m = quote.clone();
        m[i] ^= 0x01;
        assert_ne!(run_ours(&verifier, &m, time, true).0, Class::Accept, "byte {i}");
        assert_ne!(run_theirs(&oracle, &m, time, true).0, Class::Accept, "dcap-qvl, byte {i}");
    }
}
