//! Instruction counts of the TDX verification paths and their raw floors (load-independent, unlike wall
//! time on a shared machine). Each path runs `N` times (default 200) in a function of its own, so that
//! callgrind's inclusive cost of that function divided by `N` is the cost of one verification:
//!
//! ```sh
//! cargo build --release -p attest-benches --example tdx_icount
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/tdx.cg target/release/examples/tdx_icount 200
//! callgrind_annotate --inclusive=yes /tmp/tdx.cg | grep -E 'tdx_icount::(warm|cold|dcap)'
//! ```
//!
//! Inputs as `benches/tdx.rs`: trustee `tdx_quote_4.dat` with `go-tdx-guest/collateral_SPR_E4.json`,
//! 2023-07-01, debug allowed. The cold paths run after one warm-up call each (the verifier then holds the
//! verified collateral and PCK CA, as in the criterion `cold_verify`).

use attest_engine::UnixTime;
use attest_engine::tdx::{Collateral, TdQuote, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::x509::{Certificate, PublicKey};
use aws_lc_rs::signature::{self, ParsedPublicKey, UnparsedPublicKey};
use std::hint::black_box;

#[inline(never)]
fn warm_verify(v: &TdxVerifier, req: &TdxRequest<'_, '_>, policy: &TdxPolicy, n: usize) {
    for _ in 0..n {
        assert!(black_box(v.verify(black_box(req), policy)).unwrap().cache_hit());
    }
}

#[inline(never)]
fn cold_verify(v: &TdxVerifier, req: &TdxRequest<'_, '_>, policy: &TdxPolicy, n: usize) {
    for _ in 0..n {
        assert!(!black_box(v.verify(black_box(req), policy)).unwrap().cache_hit());
    }
}

fn raw_pair(q: &TdQuote<'_>, pck: &ParsedPublicKey) {
    pck.verify_sig(q.qe_report().as_bytes(), q.qe_report_signature()).unwrap();
    let mut point = [0x04u8; 65];
    point[1..].copy_from_slice(q.attestation_key());
    UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(q.signed_bytes(), q.signature())
        .unwrap();
}

#[inline(never)]
fn warm_raw(q: &TdQuote<'_>, pck: &ParsedPublicKey, n: usize) {
    for _ in 0..n {
        raw_pair(black_box(q), pck);
    }
}

#[inline(never)]
fn cold_raw(q: &TdQuote<'_>, ca: &UnparsedPublicKey<&[u8]>, tbs: &[u8], sig: &[u8], point: &[u8], n: usize) {
    for _ in 0..n {
        ca.verify(black_box(tbs), black_box(sig)).unwrap();
        let pck = ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, black_box(point)).unwrap();
        raw_pair(black_box(q), &pck);
    }
}

#[inline(never)]
fn dcap_qvl(quote: &[u8], c: &dcap_qvl::QuoteCollateralV3, now: u64, n: usize) {
    let peer = dcap_qvl::verify::QuoteVerifier::new_prod().allow_debug(true);
    for _ in 0..n {
        black_box(peer.verify(black_box(quote), c, now)).unwrap();
    }
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(200, |a| a.parse().expect("N"));
    let Some(dir) = attest_test_support::testdata::dir() else { return };
    let read = |rel: &str| std::fs::read(dir.join(rel)).unwrap();
    let quote = read("trustee-tdx/tdx_quote_4.dat");
    let bundle = read("go-tdx-guest/collateral_SPR_E4.json");
    let collateral = Collateral::from_bundle_json(&bundle).unwrap();
    let time = UnixTime::parse("2023-07-01T00:00:00Z").unwrap();
    let policy = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let req = TdxRequest::new(&quote, time);

    let warm = TdxVerifier::new();
    warm.set_collateral(&collateral).unwrap();
    warm.verify(&req, &policy).unwrap();
    warm_verify(&warm, &req, &policy, n);
    let cold = TdxVerifier::new().with_cache_capacity(0);
    cold.set_collateral(&collateral).unwrap();
    cold.verify(&req, &policy).unwrap();
    cold_verify(&cold, &req, &policy, n);

    let q = TdQuote::parse(&quote).unwrap();
    let chain = attest_engine::x509::pem::certificates_from_pem_or_der(q.pck_chain_pem()).unwrap();
    let leaf = Certificate::from_der(&chain[0]).unwrap();
    let ca = Certificate::from_der(&chain[1]).unwrap();
    let point = |c: &Certificate<'_>| match c.public_key() {
        PublicKey::EcP256 { point } => point.to_vec(),
        other => panic!("not P-256: {other:?}"),
    };
    let (pck_point, ca_point) = (point(&leaf), point(&ca));
    let pck = ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &pck_point).unwrap();
    warm_raw(&q, &pck, n);
    let ca_key = UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, &ca_point[..]);
    cold_raw(&q, &ca_key, leaf.tbs(), leaf.signature(), &pck_point, n);

    let json: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
    let text = |k: &str| json[k].as_str().unwrap().to_owned();
    let bytes = |k: &str| hex::decode(json[k].as_str().unwrap()).unwrap();
    let oracle = dcap_qvl::QuoteCollateralV3 {
        pck_crl_issuer_chain: text("pck_crl_issuer_chain"),
        root_ca_crl: bytes("root_ca_crl"),
        pck_crl: bytes("pck_crl"),
        tcb_info_issuer_chain: text("tcb_info_issuer_chain"),
        tcb_info: text("tcb_info"),
        tcb_info_signature: bytes("tcb_info_signature"),
        qe_identity_issuer_chain: text("qe_identity_issuer_chain"),
        qe_identity: text("qe_identity"),
        qe_identity_signature: bytes("qe_identity_signature"),
        pck_certificate_chain: None,
    };
    dcap_qvl(&quote, &oracle, time.as_secs(), n / 10);
    println!("ran each path {n} times (dcap-qvl {} times)", n / 10);
}
