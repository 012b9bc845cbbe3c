//! The same real evidence through both crypto providers: aws-lc-rs (default) and ring (engine feature
//! `ring`; run with `cargo test -p attest-engine --features ring --test providers`). Both must accept the
//! genuine reports and reject the same single-bit changes with the same error.

mod common;

use attest_engine::crypto::CryptoProvider;
use attest_engine::error::{CertRole, Error};
use attest_engine::snp::{Check, Product, REPORT_SIZE, SnpPolicy, SnpRequest, SnpVerifier};
use attest_engine::{Outcome, UnixTime};
use std::path::Path;

struct Vector {
    name: &'static str,
    report: Vec<u8>,
    leaf: Vec<u8>,
    policy: SnpPolicy,
    report_data: Option<[u8; 64]>,
    product: Product,
    signer: CertRole,
    tcb: &'static str,
}

fn time() -> UnixTime {
    UnixTime::parse("2025-06-01").unwrap()
}

fn vectors(dir: &Path) -> Vec<Vector> {
    let runtime = common::read(dir, "constellation-azure-snp/runtimedata.bin");
    let azure_rd = attest_engine::azure::hcl_report_data(attest_engine::crypto::default_provider(), &runtime);
    let aws_rd: [u8; 64] = hex::decode(
        "87ab7caf510e1b3520dc3cceb64ee44128e10976fb0d3fc5e274699d8aaf506154af4c1de0a026b49fdf861e9ac75551551b3534d1c61369a3b08f5baed0db2f",
    )
    .unwrap()
    .try_into()
    .unwrap();
    let virtee_hex = String::from_utf8(common::read(dir, "virtee-sev/report_milan.hex")).unwrap();
    vec![
        Vector {
            name: "constellation-azure-snp",
            report: common::read(dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec(),
            leaf: common::read(dir, "constellation-azure-snp/vcek.cert"),
            policy: SnpPolicy::default(),
            report_data: Some(azure_rd),
            product: Product::Milan,
            signer: CertRole::Vcek,
            tcb: "bl=2 tee=0 snp=6 ucode=93",
        },
        Vector {
            name: "virtee-sev",
            report: hex::decode(virtee_hex.trim()).unwrap(),
            leaf: common::read(dir, "virtee-sev/vcek_milan.der"),
            policy: SnpPolicy::default(),
            report_data: None,
            product: Product::Milan,
            signer: CertRole::Vcek,
            tcb: "bl=3 tee=0 snp=8 ucode=115",
        },
        Vector {
            name: "constellation-aws-snp",
            report: common::read(dir, "constellation-aws-snp/report.bin")[..REPORT_SIZE].to_vec(),
            leaf: common::certs(dir, "constellation-aws-snp/vlek.pem").remove(0),
            policy: SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() },
            report_data: Some(aws_rd),
            product: Product::Milan,
            signer: CertRole::Vlek,
            tcb: "bl=4 tee=0 snp=24 ucode=217",
        },
    ]
}

impl Vector {
    fn request<'a>(&'a self, report: &'a [u8], leaf: &'a [u8]) -> SnpRequest<'a> {
        let mut r = SnpRequest::new(report, leaf, time());
        r.report_data = self.report_data.as_ref().map(|d| &d[..]);
        r
    }
}

/// Accepts every vector (cold, then warm), and rejects bit flips in the signed region, in R and S, and in the
/// leaf's signature. Returns every outcome, for comparison across providers.
fn run(provider: &'static CryptoProvider) -> Vec<String> {
    let Some(dir) = common::testdata() else { return Vec::new() };
    let verifier = SnpVerifier::with_provider(provider);
    assert_eq!(verifier.provider().name, provider.name);
    let mut log = Vec::new();
    for v in vectors(&dir) {
        let ctx = format!("{} via {}", v.name, provider.name);
        for warm in [false, true] {
            let ok =
                verifier.verify(&v.request(&v.report, &v.leaf), &v.policy).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(ok.cache_hit(), warm, "{ctx}");
            assert_eq!((ok.product(), ok.signer()), (v.product, v.signer), "{ctx}");
            assert_eq!(ok.reported_tcb().to_string(), v.tcb, "{ctx}");
            assert_eq!(ok.verdict().outcome(Check::ReportSignature), Outcome::Passed, "{ctx}");
            assert!(ok.verdict().iter().all(|(_, o)| o != Outcome::NotRun), "{ctx}");
            log.push(format!("{ctx}: {:?}", ok.verdict()));
        }
        // Signed bytes (one bit in every 16th byte), then R and S (every byte).
        let offsets = (0..0x2A0).step_by(16).chain(0x2A0..0x2A0 + 48).chain(0x2E8..0x2E8 + 48);
        for (i, byte) in offsets.enumerate() {
            let mut bad = v.report.clone();
            bad[byte] ^= 1 << (i % 8);
            let err = verifier.verify(&v.request(&bad, &v.leaf), &v.policy).map(|_| ()).unwrap_err();
            if byte >= 0x2A0 {
                assert_eq!(err, Error::ReportSignatureInvalid, "{ctx}: byte {byte:#x}");
            }
            log.push(format!("{ctx} byte {byte:#x}: {err:?}"));
        }
        // The leaf's own signature (the last byte of the DER is inside it).
        let mut leaf = v.leaf.clone();
        *leaf.last_mut().unwrap() ^= 1;
        let err = verifier.verify(&v.request(&v.report, &leaf), &v.policy).map(|_| ()).unwrap_err();
        assert_eq!(err, Error::CertSignatureInvalid { role: v.signer }, "{ctx}");
        log.push(format!("{ctx} leaf: {err:?}"));
    }
    // A Turin chain (no report): RSA-PSS under the Turin ARK/ASK.
    let vcek = common::read(&dir, "virtee-sev/vcek_turin.der");
    let chain =
        attest_engine::snp::ChainRequest { leaf: &vcek, intermediate: None, root: None, product: None, time: time() };
    let c = verifier.verify_chain_only(&chain, &SnpPolicy::default()).unwrap();
    assert_eq!((c.product, c.tcb.to_string().as_str()), (Product::Turin, "fmc=0 bl=0 tee=0 snp=0 ucode=9"));
    log
}

fn digests_agree_with_known_answers(provider: &'static CryptoProvider) {
    // FIPS 180-2 "abc".
    assert_eq!(
        hex::encode(provider.digests.sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hex::encode(provider.digests.sha384(b"abc")),
        "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
    );
}

#[cfg(feature = "aws-lc-rs")]
#[test]
fn aws_lc_rs_provider() {
    let p = &attest_engine::crypto::aws_lc_rs::PROVIDER;
    assert_eq!(p.name, "aws-lc-rs");
    digests_agree_with_known_answers(p);
    run(p);
}

#[cfg(feature = "ring")]
#[test]
fn ring_provider() {
    let p = &attest_engine::crypto::ring::PROVIDER;
    assert_eq!(p.name, "ring");
    digests_agree_with_known_answers(p);
    run(p);
}

#[cfg(all(feature = "ring", feature = "aws-lc-rs"))]
#[test]
fn providers_agree_on_every_outcome() {
    let a = run(&attest_engine::crypto::aws_lc_rs::PROVIDER);
    let r = run(&attest_engine::crypto::ring::PROVIDER);
    assert_eq!(a.len(), r.len());
    for (x, y) in a.iter().zip(&r) {
        let (x, y) = (x.replace("aws-lc-rs", "P"), y.replace("ring", "P"));
        assert_eq!(x, y);
    }
}

/// TDX: a real quote with its collateral through each provider, and the same refusals of tampered copies
/// (quote signature, QE report signature, QE binding) — outcomes as strings, compared across providers.
fn run_tdx(p: &'static CryptoProvider) -> Vec<String> {
    use attest_engine::tdx::{Collateral, TdxPolicy, TdxRequest, TdxVerifier};
    let Some(dir) = common::testdata() else { return Vec::new() };
    let quote = common::read(&dir, "trustee-tdx/tdx_quote_4.dat");
    let collateral = Collateral::from_bundle_json(&common::read(&dir, "go-tdx-guest/collateral_SPR_E4.json")).unwrap();
    let verifier = TdxVerifier::with_provider(p);
    verifier.set_collateral(&collateral).unwrap();
    let policy = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let t = UnixTime::parse("2023-07-01T00:00:00Z").unwrap();
    let mut out = Vec::new();
    // Genuine, MRTD byte, QE report byte, attestation key byte, QE report signature byte.
    for at in [None, Some(184), Some(632 + 4 + 128 + 6 + 0x40), Some(632 + 4 + 64), Some(632 + 4 + 128 + 6 + 384)] {
        let mut q = quote.clone();
        if let Some(i) = at {
            q[i] ^= 1;
        }
        out.push(match verifier.verify(&TdxRequest::new(&q, t), &policy) {
            Ok(v) => format!("ok {} {}", v.tcb_status(), v.cache_hit()),
            Err(e) => format!("{e}"),
        });
    }
    assert!(out[0].starts_with("ok UpToDate"), "{}: {out:?}", p.name);
    assert!(out[1..].iter().all(|o| !o.starts_with("ok")), "{}: {out:?}", p.name);
    out
}

#[cfg(all(feature = "ring", feature = "aws-lc-rs"))]
#[test]
fn providers_agree_on_tdx() {
    assert_eq!(run_tdx(&attest_engine::crypto::aws_lc_rs::PROVIDER), run_tdx(&attest_engine::crypto::ring::PROVIDER));
}

#[cfg(not(all(feature = "ring", feature = "aws-lc-rs")))]
#[test]
fn tdx_with_the_default_provider() {
    run_tdx(attest_engine::crypto::default_provider());
}
