//! PKCS #10 certification requests (`x509::CertificationRequest`): the parser never panics on arbitrary
//! input or on mutations of valid requests, a request that parses has consumed exactly its input, and the
//! self-signature fails when any bit of the signed `certificationRequestInfo` or of the signature is flipped.
//!
//! Seeds are built here with the test-support DER writer and aws-lc-rs keys: P-256 and P-384 requests with
//! the kubelet subject (`O=system:nodes, CN=system:node:<name>`), with and without an extensionRequest
//! attribute, and an RSA-2048 one (signed with aws-lc-rs: the test needs the `aws-lc-rs` feature).
#![cfg(feature = "aws-lc-rs")]

use attest_engine::crypto::{CryptoError, default_provider};
use attest_engine::x509::{CertificationRequest, PublicKey, SignatureAlgorithm};
use attest_test_support::der::{self, tag};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use proptest::prelude::*;

mod common;
use common::mutation;
use std::sync::LazyLock;

fn subject(node: &str) -> Vec<u8> {
    let rdn = |oid: &str, value: &str| der::set(&[&der::sequence(&[&der::oid(oid), &der::utf8_string(value)])]);
    der::sequence(&[&rdn("2.5.4.10", "system:nodes"), &rdn("2.5.4.3", &format!("system:node:{node}"))])
}

fn ec_spki(curve: &str, point: &[u8]) -> Vec<u8> {
    der::sequence(&[&der::sequence(&[&der::oid("1.2.840.10045.2.1"), &der::oid(curve)]), &der::bit_string(point)])
}

/// A request over `info` (the whole `CertificationRequestInfo` TLV) signed by `sign` under `alg`.
fn request(info: &[u8], alg: &[u8], sign: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    der::sequence(&[info, alg, &der::bit_string(&sign(info))])
}

fn info(spki: &[u8], attributes: &[&[u8]]) -> Vec<u8> {
    der::sequence(&[&der::integer_u64(0), &subject("load-node-1"), spki, &der::implicit(0, true, &attributes.concat())])
}

/// `extensionRequest` with a subjectAltName DNS entry (what OpenSSL writes for `-addext`).
fn extension_request() -> Vec<u8> {
    let san = der::sequence(&[&der::tlv(0x82, b"load-node-1")]);
    let ext = der::sequence(&[&der::oid("2.5.29.17"), &der::octet_string(&san)]);
    der::sequence(&[&der::oid("1.2.840.113549.1.9.14"), &der::set(&[&der::sequence(&[&ext])])])
}

struct Seeds {
    requests: Vec<Vec<u8>>,
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| {
    let rng = SystemRandom::new();
    let mut requests = Vec::new();
    for (alg, curve, oid) in [
        (&signature::ECDSA_P256_SHA256_ASN1_SIGNING, "1.2.840.10045.3.1.7", "1.2.840.10045.4.3.2"),
        (&signature::ECDSA_P384_SHA384_ASN1_SIGNING, "1.3.132.0.34", "1.2.840.10045.4.3.3"),
    ] {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref()).unwrap();
        let spki = ec_spki(curve, key.public_key().as_ref());
        let sign = |m: &[u8]| key.sign(&rng, m).unwrap().as_ref().to_vec();
        let alg_id = der::sequence(&[&der::oid(oid)]);
        requests.push(request(&info(&spki, &[]), &alg_id, sign));
        requests.push(request(&info(&spki, &[&extension_request()]), &alg_id, sign));
    }
    let rsa = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let spki = der::sequence(&[
        &der::sequence(&[&der::oid("1.2.840.113549.1.1.1"), &der::null()]),
        &der::bit_string(rsa.public_key().as_ref()),
    ]);
    let sign = |m: &[u8]| {
        let mut sig = vec![0; rsa.public_modulus_len()];
        rsa.sign(&signature::RSA_PKCS1_SHA256, &rng, m, &mut sig).unwrap();
        sig
    };
    let alg_id = der::sequence(&[&der::oid("1.2.840.113549.1.1.11"), &der::null()]);
    requests.push(request(&info(&spki, &[]), &alg_id, sign));
    Seeds { requests }
});

/// Every accessor of a parsed request, which must describe exactly `input`.
fn touch(input: &[u8], csr: &CertificationRequest<'_>) {
    assert_eq!(csr.der(), input);
    let _ = (csr.public_key(), csr.signature_algorithm(), csr.signature(), csr.attributes());
    csr.subject().for_each_attribute(|a| {
        let _ = (a.oid, a.tag, a.value);
    });
    assert!(csr.info().len() < input.len() && input.windows(csr.info().len()).any(|w| w == csr.info()));
    let _ = csr.verify_signature(default_provider());
}

#[test]
fn seeds_parse_and_verify() {
    for (i, der) in SEEDS.requests.iter().enumerate() {
        let csr = CertificationRequest::from_der(der).unwrap();
        csr.verify_signature(default_provider()).unwrap_or_else(|_| panic!("seed {i}"));
        let mut names = Vec::new();
        csr.subject().for_each_attribute(|a| names.push((a.oid.to_vec(), a.tag, a.value.to_vec())));
        assert_eq!(names[1], (vec![0x55, 0x04, 0x03], tag::UTF8_STRING, b"system:node:load-node-1".to_vec()));
        match (i, csr.public_key().unwrap(), csr.signature_algorithm().unwrap()) {
            (0 | 1, PublicKey::EcP256 { .. }, SignatureAlgorithm::EcdsaSha256)
            | (2 | 3, PublicKey::EcP384 { .. }, SignatureAlgorithm::EcdsaSha384) => {}
            (4, key @ PublicKey::Rsa { .. }, SignatureAlgorithm::RsaPkcs1Sha256) => {
                assert_eq!(key.rsa_modulus_bits(), Some(2048));
            }
            other => panic!("seed {i}: {other:?}"),
        }
        assert_eq!(csr.attributes().is_empty(), i % 2 == 0 || i == 4);
    }
}

/// Flipping any bit of what the signature covers, or of the signature, makes verification fail (or the
/// request unparsable): never a request accepted for bytes its key did not sign.
#[test]
fn every_signed_bit_and_signature_bit_matters() {
    for seed in &SEEDS.requests[..3] {
        let csr = CertificationRequest::from_der(seed).unwrap();
        let info_start = seed.windows(csr.info().len()).position(|w| w == csr.info()).unwrap();
        let signed = info_start..info_start + csr.info().len();
        let sig_start = seed.len() - csr.signature().len();
        for pos in signed.chain(sig_start..seed.len()) {
            for bit in 0..8 {
                let mut m = seed.clone();
                m[pos] ^= 1 << bit;
                if let Ok(parsed) = CertificationRequest::from_der(&m) {
                    assert_eq!(parsed.verify_signature(default_provider()), Err(CryptoError), "byte {pos} bit {bit}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(csr) = CertificationRequest::from_der(&b) {
            touch(&b, &csr);
        }
    }

    #[test]
    fn mutated_requests(m in mutation()) {
        let input = m.apply(&SEEDS.requests);
        if let Ok(csr) = CertificationRequest::from_der(&input) {
            touch(&input, &csr);
        }
    }
}
