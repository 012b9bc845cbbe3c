//! Real TPM quotes from testdata: Azure vTPM (bincode bundles), trustee's swtpm-like evidence, and the GCE
//! Shielded VM attestation from go-tpm-tools.

mod common;

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::Error;
use attest_engine::tpm::{AkPublic, PcrValues, QuoteRequest, QuoteSignature, SigScheme, TpmtPublic, verify_quote};
use attest_test_support::testdata::AzureQuote;
use base64::Engine as _;

fn sha256_bank<V: AsRef<[u8]>>(values: &[V]) -> PcrValues<'_> {
    let mut p = PcrValues::new();
    for (i, v) in values.iter().enumerate() {
        p.set(HashAlgorithm::Sha256, i, v.as_ref()).unwrap();
    }
    p
}

#[test]
fn azure_cvm_tooling_quote() {
    let Some(dir) = common::testdata() else { return };
    let q = AzureQuote::from_bincode(&common::read(&dir, "azure-cvm-tooling/quote.bin"));
    let ak_der =
        &attest_engine::x509::pem::parse_pem(&common::read(&dir, "azure-cvm-tooling/akpub.pem")).unwrap()[0].der;
    let ak = AkPublic::from_spki_der(ak_der).unwrap();
    let pcrs = sha256_bank(&q.pcrs);
    let scheme = SigScheme::RsaSsa(HashAlgorithm::Sha256);
    let req = QuoteRequest {
        attest: &q.attest,
        signature: QuoteSignature::RsaRaw { scheme, sig: &q.sig },
        ak,
        ak_scheme: None,
        pcrs: &pcrs,
        nonce: b"challenge",
        allow_sha1: false,
    };
    let ok = verify_quote(default_provider(), &req).unwrap();
    assert_eq!(ok.attest().firmware_version(), 0x2020_0312_0012_0003);
    assert_eq!(
        hex::encode(ok.pcr(HashAlgorithm::Sha256, 0).unwrap()),
        "f3a7e99a5f819a034386bce753a48a73cfdaa0bea0ecfc124bedbf5a8c4799be"
    );
    assert_eq!(
        hex::encode(ok.attest().pcr_digest()),
        "04fabd988106412e438c1b93ad3b4b046c760f8f99ec557d87adf2ab02b7a4a0"
    );
    // Upstream negatives: reversed signature; nonce 01 02 03 04; a flipped PCR bit.
    let rev: Vec<u8> = q.sig.iter().rev().copied().collect();
    let bad = QuoteRequest { signature: QuoteSignature::RsaRaw { scheme, sig: &rev }, ..req };
    assert_eq!(verify_quote(default_provider(), &bad).unwrap_err(), Error::QuoteSignatureInvalid);
    let bad = QuoteRequest { nonce: &[1, 2, 3, 4], ..req };
    assert!(matches!(verify_quote(default_provider(), &bad), Err(Error::NonceMismatch { .. })));
    let bad = QuoteRequest { nonce: b"challeng", ..req };
    assert!(matches!(verify_quote(default_provider(), &bad), Err(Error::NonceMismatch { .. })), "no prefix matching");
    let mut flipped = q.pcrs.clone();
    flipped[0][0] ^= 1;
    let flipped_pcrs = sha256_bank(&flipped);
    let bad = QuoteRequest { pcrs: &flipped_pcrs, ..req };
    assert!(matches!(verify_quote(default_provider(), &bad), Err(Error::PcrDigestMismatch { .. })));
    // A missing PCR value.
    let partial = sha256_bank(&q.pcrs[..23]);
    let bad = QuoteRequest { pcrs: &partial, ..req };
    assert!(matches!(verify_quote(default_provider(), &bad), Err(Error::PcrValueMissing { pcr: 23, .. })));
    // Every bit of the signed TPMS_ATTEST, and of the signature.
    for i in 0..q.attest.len() * 8 {
        let mut a = q.attest.clone();
        a[i / 8] ^= 1 << (i % 8);
        let bad = QuoteRequest { attest: &a, ..req };
        assert!(verify_quote(default_provider(), &bad).is_err(), "attest bit {i}");
    }
    for i in 0..q.sig.len() * 8 {
        let mut sig = q.sig.clone();
        sig[i / 8] ^= 1 << (i % 8);
        let bad = QuoteRequest { signature: QuoteSignature::RsaRaw { scheme, sig: &sig }, ..req };
        assert_eq!(verify_quote(default_provider(), &bad).unwrap_err(), Error::QuoteSignatureInvalid, "sig bit {i}");
    }
}

#[test]
fn trustee_tpm_evidence() {
    let Some(dir) = common::testdata() else { return };
    let ev: serde_json::Value = serde_json::from_slice(&common::read(&dir, "trustee-tpm/tpm_evidence.json")).unwrap();
    let b64 = |v: &serde_json::Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
    let ak_der = b64(&ev["ak_public"]);
    let attest = b64(&ev["tpm_quote"]["message"]);
    let sig = b64(&ev["tpm_quote"]["signature"]);
    let values: Vec<Vec<u8>> =
        ev["tpm_quote"]["pcrs"].as_array().unwrap().iter().map(|v| hex::decode(v.as_str().unwrap()).unwrap()).collect();
    let pcrs = sha256_bank(&values);
    let parsed = attest_engine::tpm::Attest::parse(&attest).unwrap();
    assert_eq!(parsed.firmware_version(), 0x2019_1023_0016_3636);
    assert_eq!(parsed.extra_data().len(), 64);
    let nonce = parsed.extra_data().to_vec();
    let req = QuoteRequest {
        attest: &attest,
        signature: QuoteSignature::Tpmt(&sig),
        ak: AkPublic::from_spki_der(&ak_der).unwrap(),
        ak_scheme: None,
        pcrs: &pcrs,
        nonce: &nonce,
        allow_sha1: false,
    };
    verify_quote(default_provider(), &req).unwrap();
    // Every bit of the TPMS_ATTEST and of the TPMT_SIGNATURE (header and signature bytes).
    for i in 0..attest.len() * 8 {
        let mut a = attest.clone();
        a[i / 8] ^= 1 << (i % 8);
        assert!(verify_quote(default_provider(), &QuoteRequest { attest: &a, ..req }).is_err(), "attest bit {i}");
    }
    for i in 0..sig.len() * 8 {
        let mut s = sig.clone();
        s[i / 8] ^= 1 << (i % 8);
        assert!(
            verify_quote(default_provider(), &QuoteRequest { signature: QuoteSignature::Tpmt(&s), ..req }).is_err(),
            "sig bit {i}"
        );
    }
    // The nonce must match exactly: dropping the 16 trailing zero bytes is not the same nonce.
    let bad = QuoteRequest { nonce: &nonce[..48], ..req };
    assert!(matches!(verify_quote(default_provider(), &bad), Err(Error::NonceMismatch { .. })));
}

/// Minimal protobuf reading for go-tpm-tools' `attest.Attestation` (field numbers from its attest.proto).
fn fields(mut b: &[u8]) -> Vec<(u64, Vec<u8>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => out.push((key >> 3, varint(&mut b).to_le_bytes().to_vec())),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((key >> 3, b[..n].to_vec()));
                b = &b[n..];
            }
            t => panic!("wire type {t}"),
        }
    }
    out
}

#[test]
fn gce_attestation_quotes() {
    let Some(dir) = common::testdata() else { return };
    let pb = common::read(&dir, "go-tpm-tools/gce-cos-85-no-nonce.pb");
    let top = fields(&pb);
    let ak_pub = &top.iter().find(|(f, _)| *f == 1).unwrap().1;
    let ak = TpmtPublic::parse(ak_pub).unwrap();
    ak.check_attestation_key().unwrap();
    assert_eq!(ak.attributes(), 0x0005_0072);
    assert_eq!(ak.scheme(), Some(SigScheme::RsaSsa(HashAlgorithm::Sha256)));
    let quotes: Vec<_> = top.iter().filter(|(f, _)| *f == 2).map(|(_, v)| fields(v)).collect();
    assert_eq!(quotes.len(), 3);
    let mut banks_seen = Vec::new();
    for q in &quotes {
        let get = |n| &q.iter().find(|(f, _)| *f == n).unwrap().1;
        let pcrs_msg = fields(get(3));
        let hash =
            match u64::from_le_bytes(pcrs_msg.iter().find(|(f, _)| *f == 1).unwrap().1.clone().try_into().unwrap()) {
                4 => HashAlgorithm::Sha1,
                11 => HashAlgorithm::Sha256,
                12 => HashAlgorithm::Sha384,
                h => panic!("hash {h}"),
            };
        banks_seen.push(hash);
        let entries: Vec<(usize, Vec<u8>)> = pcrs_msg
            .iter()
            .filter(|(f, _)| *f == 2)
            .map(|(_, e)| {
                let kv = fields(e);
                let k = kv
                    .iter()
                    .find(|(f, _)| *f == 1)
                    .map_or(0, |(_, v)| u64::from_le_bytes(v.clone().try_into().unwrap()) as usize);
                (k, kv.iter().find(|(f, _)| *f == 2).unwrap().1.clone())
            })
            .collect();
        let mut pcrs = PcrValues::new();
        for (k, v) in &entries {
            pcrs.set(hash, *k, v).unwrap();
        }
        let req = QuoteRequest {
            attest: get(1),
            signature: QuoteSignature::Tpmt(get(2)),
            ak: ak.key(),
            ak_scheme: ak.scheme(),
            pcrs: &pcrs,
            nonce: &[],
            allow_sha1: hash == HashAlgorithm::Sha1,
        };
        let ok = verify_quote(default_provider(), &req).unwrap_or_else(|e| panic!("{hash:?}: {e}"));
        if hash == HashAlgorithm::Sha256 {
            assert_eq!(
                hex::encode(ok.pcr(hash, 0).unwrap()),
                "0f35c214608d93c7a6e68ae7359b4a8be5a0e99eea9107ece427c4dea4e439cf"
            );
            assert_eq!(
                hex::encode(ok.pcr(hash, 7).unwrap()),
                "3365d7fa2b024c852913c06e04ffbfa6ea5289f743bbf1a76f7ffdf21ed84793"
            );
        }
        // Every bit of the signed TPMS_ATTEST and of the TPMT_SIGNATURE.
        for i in 0..get(1).len() * 8 {
            let mut a = get(1).clone();
            a[i / 8] ^= 1 << (i % 8);
            assert!(
                verify_quote(default_provider(), &QuoteRequest { attest: &a, ..req }).is_err(),
                "{hash:?} attest bit {i}"
            );
        }
        for i in 0..get(2).len() * 8 {
            let mut sig = get(2).clone();
            sig[i / 8] ^= 1 << (i % 8);
            let bad = QuoteRequest { signature: QuoteSignature::Tpmt(&sig), ..req };
            assert!(verify_quote(default_provider(), &bad).is_err(), "{hash:?} signature bit {i}");
        }
        // Any non-empty nonce fails.
        assert!(matches!(
            verify_quote(default_provider(), &QuoteRequest { nonce: b"x", ..req }),
            Err(Error::NonceMismatch { .. })
        ));
        // SHA-1 bank refused unless allowed.
        if hash == HashAlgorithm::Sha1 {
            assert_eq!(
                verify_quote(default_provider(), &QuoteRequest { allow_sha1: false, ..req }).unwrap_err(),
                Error::Sha1Refused
            );
        }
    }
    banks_seen.sort_by_key(|h| h.output_len());
    assert_eq!(banks_seen, [HashAlgorithm::Sha1, HashAlgorithm::Sha256, HashAlgorithm::Sha384]);
}

#[test]
fn gce_ak_certificate_chains_to_gce_ek_root() {
    let Some(dir) = common::testdata() else { return };
    let pb = common::read(&dir, "go-tpm-tools/gce-cos-85-no-nonce.pb");
    let top = fields(&pb);
    let ak_cert = &top.iter().find(|(f, _)| *f == 6).unwrap().1;
    let ak_pub = &top.iter().find(|(f, _)| *f == 1).unwrap().1;
    let inter2 = common::certs(&dir, "go-tpm-tools/ca-certs/tpm_ek_intermediate_2.crt");
    let inter3 = common::certs(&dir, "go-tpm-tools/ca-certs/tpm_ek_intermediate_3.crt");
    let root = common::read(&dir, "go-tpm-tools/ca-certs/tpm_ek_root_1.cer");
    let gcp_root = common::certs(&dir, "go-tpm-tools/ca-certs/gcp_ek_ak_ca_root.crt");
    let t = attest_engine::UnixTime::parse("2025-06-01").unwrap();
    let path = attest_engine::x509::verify_path(
        default_provider(),
        ak_cert,
        &[&inter3[0], &inter2[0]],
        &[&gcp_root[0], &root],
        t,
    )
    .unwrap();
    assert_eq!(path.depth, 3);
    assert_eq!(path.root.der(), &root[..]);
    // The certified key is the AK.
    let ak = TpmtPublic::parse(ak_pub).unwrap();
    let AkPublic::Rsa { modulus, .. } = ak.key() else { panic!("RSA AK") };
    let attest_engine::x509::PublicKey::Rsa { pkcs1 } = path.leaf.public_key() else { panic!("RSA cert") };
    let from_cert = AkPublic::from_spki_der(path.leaf.spki()).unwrap();
    assert_eq!(from_cert, AkPublic::Rsa { modulus, exponent: 65_537 });
    assert!(!pkcs1.is_empty());
    // Without the right intermediate, or against the other Google root, there is no path.
    assert!(matches!(
        attest_engine::x509::verify_path(default_provider(), ak_cert, &[&inter3[0]], &[&root], t),
        Err(Error::UnknownIssuer { depth: 0 })
    ));
    assert!(attest_engine::x509::verify_path(default_provider(), ak_cert, &[&inter2[0]], &[&gcp_root[0]], t).is_err());
    // Every bit of the AK certificate's TBS matters.
    let cert = attest_engine::x509::Certificate::from_der(ak_cert).unwrap();
    let tbs_start = cert.tbs().as_ptr() as usize - ak_cert.as_ptr() as usize;
    for i in (tbs_start * 8..(tbs_start + cert.tbs().len()) * 8).step_by(7) {
        let mut c = ak_cert.clone();
        c[i / 8] ^= 1 << (i % 8);
        assert!(
            attest_engine::x509::verify_path(default_provider(), &c, &[&inter2[0]], &[&root], t).is_err(),
            "bit {i}"
        );
    }
}
