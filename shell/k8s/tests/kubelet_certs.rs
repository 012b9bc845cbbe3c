//! The kubelet certificate path without OpenSSL (`attest_k8s::kubelet`), checked against OpenSSL:
//!
//! - **differential**: for cluster CAs with P-256, P-384 and RSA-2048 keys and kubelet keys of each kind, the
//!   certificate parses with OpenSSL, re-encodes to the same bytes (it is canonical DER), verifies under the
//!   CA (signature, and a chain check with the TLS-client purpose), parses with the engine and passes its
//!   path check with clientAuth and with serverAuth required, and carries exactly the subject, key,
//!   subjectAltName (the node name) and extensions the module documents;
//! - **negative**: flipping any bit of the CSR's signed `certificationRequestInfo` or of its signature gets
//!   the CSR refused — never a certificate for bytes the node's key did not sign.

use std::path::Path;

use attest_engine::x509::{Certificate, ExtKeyUsage, KeyPurposeId, PathOptions, verify_path_with};
use attest_k8s::{CaError, ClusterCa, generate_pki};
use attest_test_support::TempDir;
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::stack::Stack;
use openssl::x509::extension::{BasicConstraints, KeyUsage, SubjectKeyIdentifier};
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::{X509, X509NameBuilder, X509PurposeId, X509ReqBuilder, X509StoreContext};

fn ec(nid: Nid) -> PKey<Private> {
    PKey::from_ec_key(EcKey::generate(&EcGroup::from_curve_name(nid).unwrap()).unwrap()).unwrap()
}

fn rsa(bits: u32) -> PKey<Private> {
    PKey::from_rsa(openssl::rsa::Rsa::generate(bits).unwrap()).unwrap()
}

fn digest_for(key: &PKey<Private>) -> MessageDigest {
    if key.ec_key().is_ok_and(|k| k.group().curve_name() == Some(Nid::SECP384R1)) {
        MessageDigest::sha384()
    } else {
        MessageDigest::sha256()
    }
}

/// A kubeadm-layout PKI whose cluster CA has `ca_key` (the other files as `generate_pki` writes them).
fn pki_with_ca(dir: &Path, ca_key: &PKey<Private>) -> ClusterCa {
    generate_pki(dir).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, "kubernetes").unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    let mut serial = BigNum::new().unwrap();
    serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
    b.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(ca_key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(3650).unwrap()).unwrap();
    b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
    b.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().digital_signature().build().unwrap())
        .unwrap();
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None)).unwrap();
    b.append_extension(ski).unwrap();
    b.sign(ca_key, MessageDigest::sha256()).unwrap();
    std::fs::write(dir.join("ca.crt"), b.build().to_pem().unwrap()).unwrap();
    std::fs::write(dir.join("ca.key"), ca_key.private_key_to_pem_pkcs8().unwrap()).unwrap();
    ClusterCa::load(dir).unwrap()
}

fn node_csr(key: &PKey<Private>, node: &str) -> Vec<u8> {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "system:nodes").unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, &format!("system:node:{node}")).unwrap();
    let mut b = X509ReqBuilder::new().unwrap();
    b.set_subject_name(&name.build()).unwrap();
    b.set_pubkey(key).unwrap();
    b.sign(key, digest_for(key)).unwrap();
    b.build().to_der().unwrap()
}

fn now() -> attest_engine::UnixTime {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    attest_engine::UnixTime::from_secs(secs)
}

#[test]
fn certificates_agree_with_openssl_and_the_engine_for_every_key_type() {
    let dir = TempDir::new("kubelet-certs");
    for (ca_name, ca_key) in [("P-256", ec(Nid::X9_62_PRIME256V1)), ("P-384", ec(Nid::SECP384R1)), ("RSA", rsa(2048))] {
        let ca_dir = dir.path().join(ca_name);
        std::fs::create_dir_all(&ca_dir).unwrap();
        let ca = pki_with_ca(&ca_dir, &ca_key);
        let ca_der = ca.certificate().to_der().unwrap();
        let ca_parsed = Certificate::from_der(&ca_der).unwrap();
        let ca_ski = ca_parsed.extensions().map(Result::unwrap).find(|e| e.oid == [0x55, 0x1D, 0x0E]).unwrap().value;
        for (key_name, key, rsa_key) in [
            ("P-256", ec(Nid::X9_62_PRIME256V1), false),
            ("P-384", ec(Nid::SECP384R1), false),
            ("RSA-2048", rsa(2048), true),
        ] {
            let what = format!("CA {ca_name}, kubelet key {key_name}");
            let csr = node_csr(&key, "worker-3.cluster.local");
            let checked = ca.check_kubelet_csr(&csr).unwrap();
            assert_eq!(checked.node_name, "worker-3.cluster.local");
            assert_eq!(checked.spki(), key.public_key_to_der().unwrap(), "{what}");
            let der = ca.sign_kubelet(&checked).unwrap();

            // OpenSSL: parses, canonical, signed by the CA, a TLS client certificate under it.
            let cert = X509::from_der(&der).unwrap();
            assert_eq!(cert.to_der().unwrap(), der, "{what}: not canonical DER");
            assert!(cert.verify(&ca.certificate().public_key().unwrap()).unwrap(), "{what}");
            assert!(cert.public_key().unwrap().public_eq(&key), "{what}");
            let mut store = X509StoreBuilder::new().unwrap();
            store.add_cert(ca.certificate().clone()).unwrap();
            store.set_purpose(X509PurposeId::SSL_CLIENT).unwrap();
            let store = store.build();
            let mut ctx = X509StoreContext::new().unwrap();
            let chain_ok = ctx
                .init(&store, &cert, &Stack::new().unwrap(), openssl::x509::X509StoreContextRef::verify_cert)
                .unwrap();
            assert!(chain_ok, "{what}: {}", ctx.error());
            let subject: Vec<_> =
                cert.subject_name().entries().map(|e| (e.object().nid(), e.data().to_string().unwrap())).collect();
            assert_eq!(
                subject,
                [
                    (Nid::ORGANIZATIONNAME, "system:nodes".to_owned()),
                    (Nid::COMMONNAME, "system:node:worker-3.cluster.local".to_owned())
                ],
                "{what}"
            );
            assert_eq!(cert.issuer_name().to_der().unwrap(), ca.certificate().subject_name().to_der().unwrap());
            assert_eq!(cert.serial_number().to_bn().unwrap().num_bytes(), 16, "{what}");
            let days = Asn1Time::days_from_now(0).unwrap().diff(cert.not_after()).unwrap().days;
            assert!((364..=365).contains(&days), "{what}: {days}");

            // The engine: parses, chains to the CA with clientAuth required; the extensions as documented.
            let parsed = Certificate::from_der(&der).unwrap();
            for eku in [KeyPurposeId::CLIENT_AUTH, KeyPurposeId::SERVER_AUTH] {
                let options = PathOptions { required_eku: Some(eku) };
                verify_path_with(attest_engine::crypto::default_provider(), &der, &[], &[&ca_der[..]], now(), &options)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            assert_eq!(parsed.is_ca(), Some(false));
            let ku = if rsa_key { 0x8000 | 0x2000 } else { 0x8000 };
            assert_eq!(parsed.key_usage(), Some(ku), "{what}");
            let eku: ExtKeyUsage<'_> = parsed.extended_key_usage().unwrap();
            assert_eq!(eku.purposes().collect::<Vec<_>>(), [KeyPurposeId::CLIENT_AUTH, KeyPurposeId::SERVER_AUTH]);
            let ext: Vec<_> = parsed.extensions().map(Result::unwrap).collect();
            let by_oid = |oid: &[u8]| ext.iter().find(|e| e.oid == oid).unwrap_or_else(|| panic!("{what}: {oid:?}"));
            assert!(by_oid(&[0x55, 0x1D, 0x13]).critical && by_oid(&[0x55, 0x1D, 0x0F]).critical);
            let spki_bits = &parsed.spki()[parsed.spki().len() - key_bits_len(&key)..];
            let ski = openssl::sha::sha1(spki_bits);
            assert_eq!(by_oid(&[0x55, 0x1D, 0x0E]).value, [&[0x04, 0x14][..], &ski].concat(), "{what}");
            let aki = by_oid(&[0x55, 0x1D, 0x23]).value;
            assert_eq!(&aki[4..], &ca_ski[2..], "{what}: the AKI names the CA's SKI");
            // subjectAltName: exactly one dNSName, the node name.
            assert_eq!(
                by_oid(&[0x55, 0x1D, 0x11]).value,
                [&[0x30, 24, 0x82, 22][..], b"worker-3.cluster.local"].concat()
            );
            let names: Vec<_> =
                cert.subject_alt_names().unwrap().iter().map(|n| n.dnsname().map(str::to_owned)).collect();
            assert_eq!(names, [Some("worker-3.cluster.local".to_owned())], "{what}");
            assert_eq!(ext.len(), 6, "{what}: exactly the documented extensions");
        }
    }
}

/// Length of the subjectPublicKey bits of `key` (the BIT STRING contents after the unused-bits octet).
fn key_bits_len(key: &PKey<Private>) -> usize {
    match key.ec_key() {
        Ok(ec) if ec.group().curve_name() == Some(Nid::SECP384R1) => 97,
        Ok(_) => 65,
        Err(_) => key.rsa().unwrap().public_key_to_der_pkcs1().unwrap().len(),
    }
}

#[test]
fn every_flipped_bit_of_the_signed_request_or_its_signature_is_refused() {
    let dir = TempDir::new("kubelet-flip");
    generate_pki(dir.path()).unwrap();
    let ca = ClusterCa::load(dir.path()).unwrap();
    let csr = node_csr(&ec(Nid::X9_62_PRIME256V1), "n1");
    ca.check_kubelet_csr(&csr).unwrap();
    let parsed = attest_engine::x509::CertificationRequest::from_der(&csr).unwrap();
    let info = parsed.info();
    let info_start = csr.windows(info.len()).position(|w| w == info).unwrap();
    let sig_start = csr.len() - parsed.signature().len();
    let mut refused = 0;
    for pos in (info_start..info_start + info.len()).chain(sig_start..csr.len()) {
        for bit in 0..8 {
            let mut m = csr.clone();
            m[pos] ^= 1 << bit;
            match ca.check_kubelet_csr(&m) {
                Ok(c) => panic!("byte {pos} bit {bit} flipped: accepted for {:?}", c.node_name),
                Err(e) => {
                    assert!(e.is_bad_request(), "byte {pos} bit {bit}: {e}");
                    refused += 1;
                }
            }
        }
    }
    assert_eq!(refused, (info.len() + parsed.signature().len()) * 8);
}

#[test]
fn requests_a_kubelet_would_not_send_are_refused_with_their_reason() {
    let dir = TempDir::new("kubelet-refuse");
    generate_pki(dir.path()).unwrap();
    let ca = ClusterCa::load(dir.path()).unwrap();
    // P-384 signed with SHA-256 (not what Go's x509 pairs with the key): the algorithm is named.
    let key = ec(Nid::SECP384R1);
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "system:nodes").unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, "system:node:n").unwrap();
    let mut b = X509ReqBuilder::new().unwrap();
    b.set_subject_name(&name.build()).unwrap();
    b.set_pubkey(&key).unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    let e = ca.check_kubelet_csr(&b.build().to_der().unwrap()).unwrap_err();
    assert!(matches!(&e, CaError::MalformedCsr { reason } if reason.contains("does not fit the key")), "{e}");
    // PEM with another label.
    let pem = b"-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n";
    assert!(matches!(ca.check_kubelet_csr(pem), Err(CaError::MalformedCsr { .. })));
}
