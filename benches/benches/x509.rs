//! Certificate path building, CRL set installation and the SNP freshness binding, each next to its floor.
//!
//! Groups:
//! - `x509_path`: `verify_path/chain3` (leaf → intermediate → root, generated ECDSA P-256 PKI),
//!   `verify_path_with_eku/chain3` (the same with a required extended key usage),
//!   `verify_path/backtrack` (an impostor root and an expired twin of the intermediate offered first),
//!   `verify_path/gce_ak` (the real GCE AK certificate → tpm_ek_intermediate_2 → tpm_ek_root_1, testdata).
//! - `x509_floor`: `p256_verify_x2`: the two raw aws-lc-rs ECDSA P-256 verifications `chain3` needs.
//! - `crl`: `replace_crls/2` (`SnpVerifier::replace_crls` with two ARK-signed RSA-2048 test CRLs) and its
//!   floor `rsa_pss_verify_x2`.
//! - `binding`: `snp_vtpm_report_data` (SHA-512 over the label, an RSA-2048 AK's TPM2B_PUBLIC and a nonce).
//!
//! The generated PKIs come from `attest_test_support` (fresh keys per run); the GCE chain needs
//! `$ATTEST_TESTDATA` (skipped with a NOTICE when absent).

use attest_engine::UnixTime;
use attest_engine::crypto::aws_lc_rs::PROVIDER;
use attest_engine::snp::{CrlScope, OwnedTrustAnchors, Product, SnpVerifier};
use attest_engine::variant::snp_vtpm_report_data;
use attest_engine::x509::{Certificate, KeyPurposeId, PathOptions, PublicKey, verify_path, verify_path_with};
use attest_test_support::tpm::SoftAk;
use attest_test_support::x509::{CertSpec, TestCa};
use attest_test_support::{CrlSpec, Product as TsProduct, SigningKeyKind, TestPki, unix_time};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1, RSA_PSS_2048_8192_SHA384, UnparsedPublicKey};
use criterion::Criterion;
use std::borrow::Cow;
use std::hint::black_box;

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).expect("a valid date")
}

fn p256_point<'a>(c: &Certificate<'a>) -> &'a [u8] {
    match c.public_key() {
        PublicKey::EcP256 { point } => point,
        _ => panic!("a P-256 key"),
    }
}

fn bench_paths(c: &mut Criterion) {
    let root = TestCa::root("Root", &CertSpec::ca());
    let inter = root.issue_ca("CA", &CertSpec::ca().path_len(0));
    let leaf = inter.issue_leaf("leaf", &CertSpec::leaf().eku(&["2.23.133.8.3"]));
    let expired_twin = root.certify(
        &inter,
        &CertSpec::ca().serial(2).validity(unix_time(2020, 1, 1, 0, 0, 0), unix_time(2021, 1, 1, 0, 0, 0)),
    );
    let impostor = TestCa::root("Root", &CertSpec::ca());
    verify_path(&PROVIDER, &leaf, &[&inter.der], &[&root.der], now()).expect("the chain verifies");

    let mut g = c.benchmark_group("x509_path");
    g.bench_function("verify_path/chain3", |b| {
        b.iter(|| verify_path(&PROVIDER, black_box(&leaf), &[&inter.der], &[&root.der], now()).expect("valid"));
    });
    let options = PathOptions { required_eku: Some(KeyPurposeId::TCG_AIK_CERTIFICATE) };
    g.bench_function("verify_path_with_eku/chain3", |b| {
        b.iter(|| {
            verify_path_with(&PROVIDER, black_box(&leaf), &[&inter.der], &[&root.der], now(), &options).expect("valid")
        });
    });
    g.bench_function("verify_path/backtrack", |b| {
        b.iter(|| {
            verify_path(&PROVIDER, black_box(&leaf), &[&expired_twin, &inter.der], &[&impostor.der, &root.der], now())
                .expect("valid")
        });
    });
    if let Some(dir) = attest_test_support::testdata::dir() {
        let read = |rel: &str| std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let certs =
            |rel: &str| attest_engine::x509::pem::certificates_from_pem_or_der(&read(rel)).expect("certificates");
        let ak_cert = gce_ak_certificate(&read("go-tpm-tools/gce-cos-85-no-nonce.pb"));
        let inter2 = certs("go-tpm-tools/ca-certs/tpm_ek_intermediate_2.crt").remove(0);
        let root1 = read("go-tpm-tools/ca-certs/tpm_ek_root_1.cer");
        g.bench_function("verify_path/gce_ak", |b| {
            b.iter(|| verify_path(&PROVIDER, black_box(&ak_cert), &[&inter2], &[&root1], now()).expect("valid"));
        });
    }
    g.finish();

    // Floor: the two P-256 signatures of chain3 (leaf under the intermediate, intermediate under the root).
    let (leaf_c, inter_c, root_c) = (
        Certificate::from_der(&leaf).expect("leaf"),
        Certificate::from_der(&inter.der).expect("intermediate"),
        Certificate::from_der(&root.der).expect("root"),
    );
    let mut g = c.benchmark_group("x509_floor");
    g.bench_function("p256_verify_x2", |b| {
        b.iter(|| {
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, p256_point(&inter_c))
                .verify(black_box(leaf_c.tbs()), leaf_c.signature())
                .expect("leaf signature");
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, p256_point(&root_c))
                .verify(black_box(inter_c.tbs()), inter_c.signature())
                .expect("intermediate signature");
        });
    });
    g.finish();
}

/// Field 6 (the AK certificate) of go-tpm-tools' GCE attestation protobuf.
fn gce_ak_certificate(mut b: &[u8]) -> Vec<u8> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    while !b.is_empty() {
        let key = varint(&mut b);
        let len = match key & 7 {
            0 => {
                varint(&mut b);
                continue;
            }
            2 => usize::try_from(varint(&mut b)).expect("length"),
            w => panic!("wire type {w}"),
        };
        let (value, rest) = b.split_at(len);
        if key >> 3 == 6 {
            return value.to_vec();
        }
        b = rest;
    }
    panic!("no AK certificate")
}

fn bench_crls(c: &mut Criterion) {
    let pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let verifier = SnpVerifier::with_trust_anchors(
        &PROVIDER,
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(pki.ark_der().to_vec()),
            ask: Some(Cow::Owned(pki.ask_der().to_vec())),
            asvk: None,
        }],
    );
    let t = unix_time(2025, 6, 1, 0, 0, 0);
    let crl = pki.issue_crl(&CrlSpec::new().this_update(t - 86_400).next_update(t + 86_400).revoke([7], t - 10));
    let set = [(CrlScope::Vcek, crl.as_slice()), (CrlScope::Vlek, crl.as_slice())];
    let mut g = c.benchmark_group("crl");
    g.bench_function("replace_crls/2", |b| b.iter(|| verifier.replace_crls(black_box(&set)).expect("installs")));
    let parsed = attest_engine::x509::Crl::from_der(&crl).expect("CRL");
    let ark = Certificate::from_der(pki.ark_der()).expect("ARK");
    let PublicKey::Rsa { pkcs1 } = ark.public_key() else { panic!("an RSA ARK") };
    g.bench_function("rsa_pss_verify_x2", |b| {
        b.iter(|| {
            for _ in 0..2 {
                UnparsedPublicKey::new(&RSA_PSS_2048_8192_SHA384, pkcs1)
                    .verify(black_box(parsed.tbs()), parsed.signature())
                    .expect("CRL signature");
            }
        });
    });
    g.finish();
}

fn bench_binding(c: &mut Criterion) {
    let ak = SoftAk::rsa().tpm2b_public();
    let nonce = [0x5A; 32];
    c.bench_function("binding/snp_vtpm_report_data", |b| {
        b.iter(|| snp_vtpm_report_data(&PROVIDER, black_box(&ak), black_box(&nonce)));
    });
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_paths(&mut c);
    bench_crls(&mut c);
    bench_binding(&mut c);
    c.final_summary();
}
