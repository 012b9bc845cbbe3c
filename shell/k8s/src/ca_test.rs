//! Tests of the cluster CA with a generated kubeadm-layout PKI.

use super::*;
use attest_test_support::TempDir;
use openssl::ec::EcGroup;
use openssl::pkey::Id;
use openssl::stack::Stack;
use openssl::x509::X509Req;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::{X509PurposeId, X509ReqBuilder, X509StoreContext, X509StoreContextRef};

fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("ca-{tag}"))
}

struct Pki {
    dir: TempDir,
    ca: ClusterCa,
}

#[track_caller]
fn pki(tag: &str) -> Pki {
    let dir = temp_dir(tag);
    generate_pki(dir.path()).unwrap();
    let ca = ClusterCa::load(dir.path()).unwrap();
    Pki { dir, ca }
}

fn ec_key(nid: Nid) -> PKey<Private> {
    PKey::from_ec_key(EcKey::generate(&EcGroup::from_curve_name(nid).unwrap()).unwrap()).unwrap()
}

fn csr(key: &PKey<Private>, subject: &[(Nid, &str)]) -> Vec<u8> {
    let mut name = X509NameBuilder::new().unwrap();
    for (nid, v) in subject {
        name.append_entry_by_nid(*nid, v).unwrap();
    }
    let mut b = X509ReqBuilder::new().unwrap();
    b.set_subject_name(&name.build()).unwrap();
    b.set_pubkey(key).unwrap();
    // The hash a kubelet (Go's x509) pairs with each key: SHA-384 for P-384, SHA-256 otherwise.
    let p384 = key.ec_key().is_ok_and(|k| k.group().curve_name() == Some(Nid::SECP384R1));
    let md = match key.id() {
        Id::ED25519 => MessageDigest::null(),
        _ if p384 => MessageDigest::sha384(),
        _ => MessageDigest::sha256(),
    };
    b.sign(key, md).unwrap();
    b.build().to_der().unwrap()
}

fn node_csr(key: &PKey<Private>, node: &str) -> Vec<u8> {
    csr(key, &[(Nid::ORGANIZATIONNAME, NODES_GROUP), (Nid::COMMONNAME, &format!("system:node:{node}"))])
}

#[test]
fn discovery_hash_is_the_spki_sha256() {
    let p = pki("hash");
    let der = p.ca.certificate().to_der().unwrap();
    // Independently: the SPKI bytes as they appear in the certificate, by the engine's DER reader.
    let parsed = attest_engine::x509::Certificate::from_der(&der).unwrap();
    let want = format!("sha256:{}", hex::encode(openssl::sha::sha256(parsed.spki())));
    assert_eq!(p.ca.discovery_hash(), want);
    assert_eq!(p.ca.discovery_hash().len(), "sha256:".len() + 64);
}

#[track_caller]
fn verify_kubelet(p: &Pki, der: &[u8], node: &str) -> X509 {
    let cert = X509::from_der(der).unwrap();
    let mut store = X509StoreBuilder::new().unwrap();
    store.add_cert(p.ca.certificate().clone()).unwrap();
    store.set_purpose(X509PurposeId::SSL_CLIENT).unwrap();
    let store = store.build();
    let mut ctx = X509StoreContext::new().unwrap();
    let ok = ctx.init(&store, &cert, &Stack::new().unwrap(), X509StoreContextRef::verify_cert).unwrap();
    assert!(ok, "chain: {}", ctx.error());
    let subject: Vec<_> =
        cert.subject_name().entries().map(|e| (e.object().nid(), e.data().to_string().unwrap())).collect();
    assert_eq!(
        subject,
        [(Nid::ORGANIZATIONNAME, NODES_GROUP.to_owned()), (Nid::COMMONNAME, format!("system:node:{node}"))]
    );
    cert
}

/// The extensions as OpenSSL's CLI prints them.
fn extension_text(der: &[u8]) -> String {
    let dir = temp_dir("ext");
    let path = dir.path().join("c.der");
    std::fs::write(&path, der).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["x509", "-inform", "DER", "-noout", "-text", "-in"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn kubelet_certificates_are_client_and_serving_certificates() {
    let p = pki("sign");
    for (key, rsa) in [
        (ec_key(Nid::X9_62_PRIME256V1), false),
        (ec_key(Nid::SECP384R1), false),
        (PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap(), true),
    ] {
        let checked = p.ca.check_kubelet_csr(&node_csr(&key, "worker-1.example")).unwrap();
        assert_eq!(checked.node_name, "worker-1.example");
        let der = p.ca.sign_kubelet(&checked).unwrap();
        let cert = verify_kubelet(&p, &der, "worker-1.example");
        assert!(cert.public_key().unwrap().public_eq(&key));
        let text = extension_text(&der);
        assert!(text.contains("TLS Web Client Authentication"), "{text}");
        assert!(text.contains("TLS Web Server Authentication"), "{text}");
        assert!(text.contains("DNS:worker-1.example") && !text.contains("IP Address"), "{text}");
        assert!(text.contains("CA:FALSE"), "{text}");
        assert!(text.contains("Digital Signature"), "{text}");
        assert_eq!(text.contains("Key Encipherment"), rsa, "{text}");
        assert!(text.contains("X509v3 Subject Key Identifier") && text.contains("X509v3 Authority Key Identifier"));
        // About one year, starting a little in the past.
        let now = Asn1Time::days_from_now(0).unwrap();
        let days = now.diff(cert.not_after()).unwrap().days;
        assert!((364..=365).contains(&days), "{days}");
        assert!(cert.not_before() < now);
    }
    // PEM works too, and serials differ.
    let key = ec_key(Nid::X9_62_PRIME256V1);
    let pem = X509Req::from_der(&node_csr(&key, "n")).unwrap().to_pem().unwrap();
    let a = X509::from_der(&p.ca.sign_kubelet(&p.ca.check_kubelet_csr(&pem).unwrap()).unwrap()).unwrap();
    let b = X509::from_der(&p.ca.sign_kubelet(&p.ca.check_kubelet_csr(&pem).unwrap()).unwrap()).unwrap();
    assert_ne!(a.serial_number().to_bn().unwrap(), b.serial_number().to_bn().unwrap());
}

#[test]
fn validity_is_configurable_within_bounds() {
    let dir = temp_dir("validity");
    generate_pki(dir.path()).unwrap();
    let ca = ClusterCa::load(dir.path()).unwrap().with_kubelet_cert_validity(Duration::from_secs(7 * 86_400)).unwrap();
    let p = Pki { dir, ca };
    let key = ec_key(Nid::X9_62_PRIME256V1);
    let der = p.ca.sign_kubelet(&p.ca.check_kubelet_csr(&node_csr(&key, "n1")).unwrap()).unwrap();
    let cert = X509::from_der(&der).unwrap();
    assert_eq!(Asn1Time::days_from_now(0).unwrap().diff(cert.not_after()).unwrap().days, 7);
    let again = ClusterCa::load(p.dir.path()).unwrap();
    assert!(matches!(again.with_kubelet_cert_validity(Duration::from_secs(60)), Err(CaError::InvalidValidity { .. })));
}

#[test]
fn bad_csrs_are_refused() {
    let p = pki("refuse");
    let key = ec_key(Nid::X9_62_PRIME256V1);
    let check = |der: &[u8]| p.ca.check_kubelet_csr(der).unwrap_err();
    let subject_cases: [&[(Nid, &str)]; 6] = [
        &[(Nid::COMMONNAME, "system:node:a")],
        &[(Nid::ORGANIZATIONNAME, "system:masters"), (Nid::COMMONNAME, "system:node:a")],
        &[(Nid::ORGANIZATIONNAME, NODES_GROUP), (Nid::COMMONNAME, "admin")],
        &[
            (Nid::ORGANIZATIONNAME, NODES_GROUP),
            (Nid::ORGANIZATIONNAME, "system:masters"),
            (Nid::COMMONNAME, "system:node:a"),
        ],
        &[(Nid::ORGANIZATIONNAME, NODES_GROUP), (Nid::ORGANIZATIONALUNITNAME, "x"), (Nid::COMMONNAME, "system:node:a")],
        &[(Nid::ORGANIZATIONNAME, NODES_GROUP), (Nid::COMMONNAME, "system:node:a"), (Nid::COMMONNAME, "system:node:b")],
    ];
    for subject in subject_cases {
        let e = check(&csr(&key, subject));
        assert!(matches!(e, CaError::BadSubject { .. }), "{subject:?}: {e}");
        assert!(e.is_bad_request());
    }
    // (Longer names cannot be built: OpenSSL caps a CommonName at 64 characters; `dns1123` covers them.)
    for bad in ["", "Node1", "-a", "a-", "a..b", "a_b", "a.-b", "ü"] {
        let e = check(&node_csr(&key, bad));
        assert!(matches!(e, CaError::BadNodeName { .. } | CaError::BadSubject { .. }), "{bad:?}: {e}");
    }
    let weak = PKey::from_rsa(openssl::rsa::Rsa::generate(1024).unwrap()).unwrap();
    assert!(matches!(check(&node_csr(&weak, "n")), CaError::UnsupportedKey { .. }));
    assert!(matches!(check(&node_csr(&ec_key(Nid::SECP521R1), "n")), CaError::UnsupportedKey { .. }));
    let ed = PKey::generate_ed25519().unwrap();
    assert!(matches!(check(&node_csr(&ed, "n")), CaError::UnsupportedKey { .. }));
    // A flipped bit in the signature (the last bytes of the DER).
    let mut der = node_csr(&key, "n");
    let last = der.len() - 3;
    der[last] ^= 1;
    assert!(matches!(check(&der), CaError::BadCsrSignature | CaError::MalformedCsr { .. }));
    assert!(matches!(check(b"garbage"), CaError::MalformedCsr { .. }));
    assert!(matches!(check(&vec![0x30; MAX_CSR_SIZE + 1]), CaError::CsrTooLarge { .. }));
}

#[test]
fn control_plane_files_are_kubeadms_set() {
    let p = pki("cp");
    let files = p.ca.control_plane_files().unwrap();
    let names: Vec<_> = files.iter().map(|f| f.name).collect();
    assert_eq!(names, CONTROL_PLANE_FILES);
    for f in files {
        assert_eq!(&f.data[..], &std::fs::read(p.dir.path().join(f.name)).unwrap()[..], "{}", f.name);
    }
    std::fs::remove_file(p.dir.path().join("etcd/ca.key")).unwrap();
    let partial = ClusterCa::load(p.dir.path()).unwrap();
    assert!(matches!(
        partial.control_plane_files(),
        Err(CaError::MissingControlPlaneFiles { missing }) if missing == ["etcd/ca.key"]
    ));
    // The CA itself is required, and its key must match.
    std::fs::copy(p.dir.path().join("front-proxy-ca.key"), p.dir.path().join("ca.key")).unwrap();
    assert!(matches!(ClusterCa::load(p.dir.path()), Err(CaError::BadPkiFile { .. })));
    std::fs::remove_file(p.dir.path().join("ca.key")).unwrap();
    assert!(matches!(ClusterCa::load(p.dir.path()), Err(CaError::Io { .. })));
}

#[test]
fn dns1123() {
    for ok in ["a", "node-1", "n1.cluster.local", "0", &"a".repeat(63)] {
        assert!(is_dns1123_subdomain(ok), "{ok}");
    }
    for bad in ["", "A", "a.", ".a", "a b", "ü", &"a".repeat(64)] {
        assert!(!is_dns1123_subdomain(bad), "{bad}");
    }
}
