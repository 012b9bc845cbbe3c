//! GCE attestation verification and the evidence-format readers.
//!
//! Groups:
//! - `gce`: `decode` (`attest_proto::gce::decode` + `evidence`: prost decoding of go-tpm-tools' 29.6 KB
//!   `Attestation` and the borrowed view), `verify` (`GceVerifier::verify` on the view: AK certificate path
//!   to Google's root with two RSA signature checks, three quotes, the 24 KB event log replayed in two
//!   banks, platform facts, policy), `verify_ring` (the same with the ring provider), `end_to_end`
//!   (decode + verify), `result_json` (the verdict as the result object `attest-result/1` every output
//!   path prints: `Appraisal::from_gce` + `result_json`, serialized), and the floor
//!   `quote_signatures_aws_lc_rs` (the three RSA-2048 quote signatures alone, raw aws-lc-rs).
//! - `formats`: `trustee_tpm_json`, `azure_evidence_v0_json` (number arrays), `azure_evidence_v1_json`
//!   (hex/base64), `azure_quote_bincode` (zero-copy): one parse each.
//!
//! Inputs come from `$ATTEST_TESTDATA`; without them the benchmarks are skipped with a NOTICE.

use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, aws_lc_rs, ring};
use attest_engine::formats::azure::AzureVtpmEvidence;
use attest_engine::formats::tpm::{AzureQuoteBin, TrusteeTpmEvidence};
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest, GceVerifier};
use attest_engine::tpm::{AkPublic, TpmSignature, TpmtPublic};
use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::path::Path;

fn read(dir: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

fn bench_gce(c: &mut Criterion, dir: &Path) {
    let pb = read(dir, "go-tpm-tools/gce-cos-85-no-nonce.pb");
    let att = attest_proto::gce::decode(&pb).expect("decodes");
    let ev = attest_proto::gce::evidence(&att).expect("view");
    let req = GceRequest { nonce: ExpectedNonce::DangerousNone, time: UnixTime::parse("2025-06-01").unwrap() };
    let policy = GcePolicy::default();
    let verifier = GceVerifier::with_provider(&aws_lc_rs::PROVIDER);
    let ring_verifier = GceVerifier::with_provider(&ring::PROVIDER);
    verifier.verify(&ev, &req, &policy).expect("verifies");
    ring_verifier.verify(&ev, &req, &policy).expect("verifies with ring");

    // Floor: the quote signatures with aws-lc-rs directly.
    let ak = TpmtPublic::parse(&att.ak_pub).expect("AK");
    let AkPublic::Rsa { modulus, exponent } = ak.key() else { panic!("RSA AK") };
    let e = exponent.to_be_bytes();
    let e = &e[e.iter().position(|b| *b != 0).unwrap_or(3)..];
    let sigs: Vec<(Vec<u8>, Vec<u8>)> = att
        .quotes
        .iter()
        .map(|q| {
            let TpmSignature::Rsa { sig, .. } = TpmSignature::parse(&q.raw_sig).expect("signature") else {
                panic!("RSA")
            };
            (q.quote.clone(), sig.to_vec())
        })
        .collect();
    let key = ::aws_lc_rs::signature::RsaPublicKeyComponents { n: modulus, e };

    let mut g = c.benchmark_group("gce");
    g.throughput(Throughput::Bytes(pb.len() as u64));
    g.bench_function("decode", |b| {
        b.iter(|| {
            let att = attest_proto::gce::decode(black_box(&pb)).unwrap();
            black_box(attest_proto::gce::evidence(&att).unwrap().quotes().count())
        });
    });
    g.bench_function("verify", |b| {
        b.iter(|| black_box(verifier.verify(black_box(&ev), &req, &policy).unwrap().path_depth()));
    });
    g.bench_function("verify_ring", |b| {
        b.iter(|| black_box(ring_verifier.verify(black_box(&ev), &req, &policy).unwrap().path_depth()));
    });
    g.bench_function("end_to_end", |b| {
        b.iter(|| {
            let att = attest_proto::gce::decode(black_box(&pb)).unwrap();
            let ev = attest_proto::gce::evidence(&att).unwrap();
            black_box(verifier.verify(&ev, &req, &policy).unwrap().path_depth())
        });
    });
    let ok = verifier.verify(&ev, &req, &policy).expect("verifies");
    let input = serde_json::Map::new();
    g.bench_function("result_json", |b| {
        b.iter(|| {
            let a = attest_engine::ear::Appraisal::from_gce(black_box(&ok));
            black_box(a.result_json("gce", "GCE vTPM attestation", &input, req.time).to_string().len())
        });
    });
    g.bench_function("quote_signatures_aws_lc_rs", |b| {
        b.iter(|| {
            for (msg, sig) in &sigs {
                key.verify(&::aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256, msg, sig).unwrap();
            }
        });
    });
    g.finish();
    let _ = HashAlgorithm::Sha256;
}

fn bench_formats(c: &mut Criterion, dir: &Path) {
    let trustee_tpm = read(dir, "trustee-tpm/tpm_evidence.json");
    let v0 = read(dir, "trustee-az-snp-vtpm/evidence-v0.json");
    let v1 = read(dir, "trustee-az-snp-vtpm/evidence-v1.json");
    let bin = read(dir, "azure-cvm-tooling/quote.bin");
    let mut g = c.benchmark_group("formats");
    for (name, input) in
        [("trustee_tpm_json", &trustee_tpm), ("azure_evidence_v0_json", &v0), ("azure_evidence_v1_json", &v1)]
    {
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                if name == "trustee_tpm_json" {
                    black_box(TrusteeTpmEvidence::from_json(black_box(input)).unwrap().quote.pcrs.len())
                } else {
                    black_box(AzureVtpmEvidence::from_json(black_box(input)).unwrap().quote.pcrs.len())
                }
            });
        });
    }
    g.throughput(Throughput::Bytes(bin.len() as u64));
    g.bench_function("azure_quote_bincode", |b| {
        b.iter(|| black_box(AzureQuoteBin::parse(black_box(&bin)).unwrap().pcrs().len()));
    });
    g.finish();
}

fn main() {
    let Some(dir) = attest_test_support::testdata::dir() else { return };
    let mut c = Criterion::default().configure_from_args();
    bench_gce(&mut c, &dir);
    bench_formats(&mut c, &dir);
    c.final_summary();
}
