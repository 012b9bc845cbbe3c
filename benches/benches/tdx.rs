//! Intel TDX verification benchmarks on a real quote (trustee `tdx_quote_4.dat`, Sapphire Rapids, quote v4)
//! with the shipped PCS collateral for its FMSPC (`go-tdx-guest/collateral_SPR_E4.json`), trusted time
//! 2023-07-01, a policy that allows the quote's debug attribute (otherwise the default `TdxPolicy`).
//!
//! Groups, all in one run so the ratios compare like with like:
//! - `tdx_engine`: `parse`, `warm_verify` (collateral installed, PCK chain cached), `cold_verify` (no PCK
//!   cache: PEM chain decode, PCK certificate parse and signature under the already-verified PCK CA, SGX
//!   extension, CRL lookups, key preparation, every time; the collateral stays installed).
//! - `tdx_floor`: the raw aws-lc-rs P-256 verifications those paths need: `warm_raw` = QE report signature
//!   with a prepared PCK key + quote signature with the attestation key; `cold_raw` = the PCK certificate's
//!   ECDSA signature under the PCK CA key + PCK key preparation + `warm_raw`.
//! - `tdx_peer`: `dcap_qvl_verify`, dcap-qvl 0.7.1's `QuoteVerifier::verify` on the same quote and collateral
//!   (it verifies the collateral and the whole chain on every call, as it keeps no state).

use attest_engine::UnixTime;
use attest_engine::tdx::{Collateral, TdQuote, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::x509::{Certificate, PublicKey};
use aws_lc_rs::signature::{self, ParsedPublicKey, UnparsedPublicKey};
use criterion::Criterion;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn testdata() -> Option<PathBuf> {
    attest_test_support::testdata::dir()
}

fn read(dir: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

struct Vector {
    quote: Vec<u8>,
    collateral: Collateral,
    oracle: dcap_qvl::QuoteCollateralV3,
    time: UnixTime,
    policy: TdxPolicy,
    /// PCK leaf point, PCK CA point, the leaf's TBS and DER signature.
    pck_point: Vec<u8>,
    ca_point: Vec<u8>,
    leaf_tbs: Vec<u8>,
    leaf_sig: Vec<u8>,
}

impl Vector {
    fn load(dir: &Path) -> Self {
        let quote = read(dir, "trustee-tdx/tdx_quote_4.dat");
        let bundle = read(dir, "go-tdx-guest/collateral_SPR_E4.json");
        let collateral = Collateral::from_bundle_json(&bundle).expect("bundle");
        let v: serde_json::Value = serde_json::from_slice(&bundle).expect("bundle JSON");
        let s = |k: &str| v[k].as_str().expect("string field").to_owned();
        let h = |k: &str| hex::decode(v[k].as_str().expect("hex field")).expect("hex");
        let oracle = dcap_qvl::QuoteCollateralV3 {
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
        };
        let q = TdQuote::parse(&quote).expect("quote");
        let chain = attest_engine::x509::pem::certificates_from_pem_or_der(q.pck_chain_pem()).expect("PCK chain");
        let leaf = Certificate::from_der(&chain[0]).expect("PCK");
        let ca = Certificate::from_der(&chain[1]).expect("PCK CA");
        let point = |c: &Certificate<'_>| match c.public_key() {
            PublicKey::EcP256 { point } => point.to_vec(),
            other => panic!("not P-256: {other:?}"),
        };
        Self {
            pck_point: point(&leaf),
            ca_point: point(&ca),
            leaf_tbs: leaf.tbs().to_vec(),
            leaf_sig: leaf.signature().to_vec(),
            quote,
            collateral,
            oracle,
            time: UnixTime::parse("2023-07-01T00:00:00Z").expect("time"),
            policy: TdxPolicy::from_toml("allow_debug = true").expect("policy"),
        }
    }
}

/// The two verifications of a warm path, with aws-lc-rs directly.
fn warm_raw(q: &TdQuote<'_>, pck: &ParsedPublicKey) {
    pck.verify_sig(q.qe_report().as_bytes(), q.qe_report_signature()).expect("QE report signature");
    let mut point = [0x04u8; 65];
    point[1..].copy_from_slice(q.attestation_key());
    UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(q.signed_bytes(), q.signature())
        .expect("quote signature");
}

fn main() {
    let Some(dir) = testdata() else { return };
    let v = Vector::load(&dir);
    let mut c = Criterion::default().configure_from_args();
    let req = TdxRequest::new(&v.quote, v.time);

    let mut g = c.benchmark_group("tdx_engine");
    g.bench_function("parse", |b| b.iter(|| TdQuote::parse(black_box(&v.quote)).unwrap()));
    let warm = TdxVerifier::new();
    warm.set_collateral(&v.collateral).expect("collateral");
    assert!(!warm.verify(&req, &v.policy).expect("cold verify").cache_hit());
    assert!(warm.verify(&req, &v.policy).expect("warm verify").cache_hit());
    g.bench_function("warm_verify", |b| b.iter(|| warm.verify(black_box(&req), &v.policy).unwrap()));
    let cold = TdxVerifier::new().with_cache_capacity(0);
    cold.set_collateral(&v.collateral).expect("collateral");
    assert!(!cold.verify(&req, &v.policy).expect("cold verify").cache_hit());
    g.bench_function("cold_verify", |b| b.iter(|| cold.verify(black_box(&req), &v.policy).unwrap()));
    g.finish();

    let quote = TdQuote::parse(&v.quote).expect("quote");
    let pck = ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &v.pck_point).expect("PCK key");
    let ca = UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &v.ca_point);
    ca.verify(&v.leaf_tbs, &v.leaf_sig).expect("PCK certificate signature");
    let mut g = c.benchmark_group("tdx_floor");
    g.bench_function("warm_raw", |b| b.iter(|| warm_raw(black_box(&quote), &pck)));
    g.bench_function("cold_raw", |b| {
        b.iter(|| {
            black_box(&ca).verify(black_box(&v.leaf_tbs), black_box(&v.leaf_sig)).unwrap();
            let key = ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, black_box(&v.pck_point)).unwrap();
            warm_raw(black_box(&quote), &key);
        });
    });
    g.finish();

    let peer = dcap_qvl::verify::QuoteVerifier::new_prod().allow_debug(true);
    let report = peer.verify(&v.quote, &v.oracle, v.time.as_secs()).expect("dcap-qvl verify");
    assert_eq!(report.status, "UpToDate");
    let mut g = c.benchmark_group("tdx_peer");
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("dcap_qvl_verify", |b| {
        b.iter(|| peer.verify(black_box(&v.quote), &v.oracle, v.time.as_secs()).unwrap());
    });
    g.finish();
    c.final_summary();
}
