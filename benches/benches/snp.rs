//! SEV-SNP verification benchmarks on a real report (Constellation, Azure Milan-B0) with its VCEK.
//!
//! Groups:
//! - `snp_engine`: `parse`, `warm_verify` (leaf cache hit), `cold_verify` (no leaf cache: the VCEK chain
//!   is verified every time; the ARK/ASK anchors stay verified in the verifier), `warm_verify_ring`.
//! - `snp_peer`: the virtee `sev` crate end to end (report parse, chain build from PEM/DER, chain and
//!   report verification on OpenSSL).
//! - `snp_floor`: one raw ECDSA P-384/SHA-384 verification of the report signature (aws-lc-rs, ring).
//!
//! Inputs come from `$ATTEST_TESTDATA` (default `../shared/testdata` next to the repository). Without them
//! the benchmarks are skipped with a NOTICE, and fail under `CI=true`.

use attest_engine::UnixTime;
use attest_engine::crypto::{aws_lc_rs as aws_lc_rs_provider, ring as ring_provider};
use attest_engine::snp::{REPORT_SIZE, Report, SIGNED_LEN, SnpPolicy, SnpRequest, SnpVerifier};
use attest_engine::x509::pem::parse_pem;
use attest_engine::x509::{Certificate, PublicKey};
use attest_test_support::testdata::{dir as testdata, read};
use criterion::Criterion;
use sev::certs::snp::{Certificate as SevCertificate, Chain as SevChain, Verifiable as _, ca as sev_ca};
use sev::firmware::guest::AttestationReport;
use sev::parser::ByteParser as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

/// The real evidence every benchmark runs on.
struct Vector {
    /// The 0x4A0-byte report.
    report: Vec<u8>,
    /// The VCEK, DER.
    vcek: Vec<u8>,
    /// The VCEK's uncompressed P-384 point.
    vcek_point: Vec<u8>,
    /// sha256(runtimedata.bin) ‖ 32 zero bytes.
    report_data: [u8; 64],
    /// The ARK and ASK as separate PEM texts (for the `sev` crate).
    ark_pem: Vec<u8>,
    ask_pem: Vec<u8>,
    /// The report signature as big-endian `r ‖ s`.
    signature_fixed: [u8; 96],
    time: UnixTime,
}

/// SEV-SNP signature component (72 bytes little-endian, 48 significant) to 48 bytes big-endian.
fn le72_to_be48(le: &[u8]) -> [u8; 48] {
    let mut out = [0u8; 48];
    for (dst, src) in out.iter_mut().zip(le[..48].iter().rev()) {
        *dst = *src;
    }
    out
}

impl Vector {
    fn load(dir: &Path) -> Self {
        let report = read(dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec();
        let vcek = read(dir, "constellation-azure-snp/vcek.cert");
        let runtime = read(dir, "constellation-azure-snp/runtimedata.bin");
        let report_data = attest_engine::azure::hcl_report_data(&aws_lc_rs_provider::PROVIDER, &runtime);
        // ask_ark_milan.pem holds the ASK, then the ARK.
        let chain = read(dir, "amd-kds-roots/ask_ark_milan.pem");
        let blocks = parse_pem(&chain).expect("ask_ark_milan.pem");
        assert_eq!(blocks.len(), 2, "ask_ark_milan.pem: expected ASK and ARK");
        assert_eq!(blocks[1].der, attest_engine::snp::Product::Milan.trust_anchors().ark);
        // The `sev` peer reads PEM: each certificate alone, as OpenSSL writes it (setup, not measured).
        let pem = |der: &[u8]| openssl::x509::X509::from_der(der).and_then(|c| c.to_pem()).expect("PEM");
        let (ask_pem, ark_pem) = (pem(&blocks[0].der), pem(&blocks[1].der));
        let vcek_point = match Certificate::from_der(&vcek).expect("VCEK").public_key() {
            PublicKey::EcP384 { point } => point.to_vec(),
            other => panic!("VCEK key is not P-384: {other:?}"),
        };
        let mut signature_fixed = [0u8; 96];
        signature_fixed[..48].copy_from_slice(&le72_to_be48(&report[0x2A0..0x2E8]));
        signature_fixed[48..].copy_from_slice(&le72_to_be48(&report[0x2E8..0x330]));
        let time = UnixTime::parse("2025-06-01T00:00:00Z").expect("time");
        Self { report, vcek, vcek_point, report_data, ark_pem, ask_pem, signature_fixed, time }
    }

    fn request(&self) -> SnpRequest<'_> {
        let mut req = SnpRequest::new(&self.report, &self.vcek, self.time);
        req.report_data = Some(&self.report_data);
        req
    }

    /// The `sev` crate, end to end: parse the report, build the chain, verify chain and report.
    fn sev_verify(&self) -> std::io::Result<()> {
        let report = AttestationReport::from_bytes(&self.report)?;
        let chain = SevChain {
            ca: sev_ca::Chain::from_pem(&self.ark_pem, &self.ask_pem)?,
            vek: SevCertificate::from_der(&self.vcek)?,
        };
        (&chain, &report).verify()
    }
}

fn bench_engine(c: &mut Criterion, v: &Vector) {
    let policy = SnpPolicy::default();
    let req = v.request();
    let mut g = c.benchmark_group("snp_engine");

    g.bench_function("parse", |b| b.iter(|| Report::parse(black_box(&v.report)).unwrap()));

    let warm = SnpVerifier::with_provider(&aws_lc_rs_provider::PROVIDER);
    assert!(!warm.verify(&req, &policy).expect("cold verify").cache_hit());
    assert!(warm.verify(&req, &policy).expect("warm verify").cache_hit());
    g.bench_function("warm_verify", |b| b.iter(|| warm.verify(black_box(&req), &policy).unwrap()));

    // No leaf cache: VCEK parse + RSA-PSS under the ASK + key preparation on every call. The first call
    // verifies the ARK/ASK anchors, which the verifier keeps.
    let cold = SnpVerifier::with_provider(&aws_lc_rs_provider::PROVIDER).with_cache_capacity(0);
    cold.verify(&req, &policy).expect("cold verify");
    assert!(!cold.verify(&req, &policy).unwrap().cache_hit());
    g.bench_function("cold_verify", |b| b.iter(|| cold.verify(black_box(&req), &policy).unwrap()));

    let warm_ring = SnpVerifier::with_provider(&ring_provider::PROVIDER);
    warm_ring.verify(&req, &policy).expect("cold verify (ring)");
    assert!(warm_ring.verify(&req, &policy).unwrap().cache_hit());
    g.bench_function("warm_verify_ring", |b| b.iter(|| warm_ring.verify(black_box(&req), &policy).unwrap()));
    g.finish();
}

fn bench_peer(c: &mut Criterion, v: &Vector) {
    v.sev_verify().expect("sev crate rejects the report");
    let mut g = c.benchmark_group("snp_peer");
    // ≈2 ms per iteration: give criterion's 100 samples the time they need.
    g.measurement_time(Duration::from_secs(12));
    g.bench_function("sev_end_to_end", |b| b.iter(|| black_box(v).sev_verify().unwrap()));
    g.finish();
}

fn bench_floor(c: &mut Criterion, v: &Vector) {
    let msg = &v.report[..SIGNED_LEN];
    let aws =
        aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::ECDSA_P384_SHA384_FIXED, &v.vcek_point);
    aws.verify(msg, &v.signature_fixed).expect("aws-lc-rs rejects the report signature");
    let ring_key = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P384_SHA384_FIXED, &v.vcek_point);
    ring_key.verify(msg, &v.signature_fixed).expect("ring rejects the report signature");

    let mut g = c.benchmark_group("snp_floor");
    g.bench_function("p384_verify_aws_lc_rs", |b| {
        b.iter(|| black_box(&aws).verify(black_box(msg), black_box(&v.signature_fixed)).unwrap());
    });
    g.bench_function("p384_verify_ring", |b| {
        b.iter(|| black_box(&ring_key).verify(black_box(msg), black_box(&v.signature_fixed)).unwrap());
    });
    g.finish();
}

fn main() {
    let Some(dir) = testdata() else { return };
    let v = Vector::load(&dir);
    let mut c = Criterion::default().configure_from_args();
    bench_engine(&mut c, &v);
    bench_peer(&mut c, &v);
    bench_floor(&mut c, &v);
    c.final_summary();
}
