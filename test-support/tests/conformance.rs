//! Structural comparison with real AMD certificates: generated certificates with the same
//! parameters must have byte-identical TBSCertificates, except for the public key and the
//! key identifiers derived from it.
//!
//! The real certificates are read from `../../shared/testdata` relative to this crate (or
//! `$ATTEST_TESTDATA`); the tests are skipped with a note when they are absent.

mod common;

use std::path::Path;

use attest_test_support::{
    IntermediateSpec, LeafSpec, Product, SigningKeyKind, Tcb, TestPki, amd_name, der, rsa_pss_sha384_alg_id,
};
use common::{children, extension_value, extensions, parse_time, pem_to_der_all, read_one, tbs_fields};

const AMD: &str = "1.3.6.1.4.1.3704.1";

fn load(dir: &Path, rel: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    if bytes.starts_with(b"-----BEGIN") {
        pem_to_der_all(std::str::from_utf8(&bytes).expect("PEM is text"))
    } else {
        vec![bytes]
    }
}

fn small_int(content: &[u8]) -> u8 {
    let tlv = read_one(content);
    assert_eq!(tlv.tag, 0x02);
    let v = tlv.content.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    u8::try_from(v).expect("SPL fits in a byte")
}

fn ia5(content: &[u8]) -> String {
    let tlv = read_one(content);
    assert_eq!(tlv.tag, 0x16);
    String::from_utf8(tlv.content.to_vec()).expect("ASCII")
}

fn amd_ext<'a>(cert: &'a [u8], suffix: &str) -> Option<&'a [u8]> {
    extension_value(cert, &format!("{AMD}.{suffix}"))
}

/// A LeafSpec reproducing the real certificate's contents.
fn spec_like(real: &[u8]) -> LeafSpec {
    let fields = tbs_fields(real);
    let validity = children(fields[4].content);
    let alg = read_one(fields[2].full);
    let mut spec = LeafSpec::new()
        .serial(read_one(fields[1].full).content.to_vec())
        .validity(parse_time(validity[0]), parse_time(validity[1]))
        .struct_version(u64::from(small_int(amd_ext(real, "1").expect("structVersion"))))
        .product_name(ia5(amd_ext(real, "2").expect("productName")))
        .tcb(Tcb {
            bl: small_int(amd_ext(real, "3.1").expect("blSPL")),
            tee: small_int(amd_ext(real, "3.2").expect("teeSPL")),
            snp: small_int(amd_ext(real, "3.3").expect("snpSPL")),
            ucode: small_int(amd_ext(real, "3.8").expect("ucodeSPL")),
            fmc: amd_ext(real, "3.9").map(small_int),
        })
        .pss_trailer_field(alg.full == rsa_pss_sha384_alg_id(true).as_slice());
    spec = match amd_ext(real, "4") {
        Some(hwid) => spec.hwid(hwid.to_vec()),
        None => spec.no_hwid(),
    };
    match amd_ext(real, "5") {
        Some(csp) => spec.csp_id(ia5(csp)),
        None => spec.no_csp_id(),
    }
}

/// Asserts that two certificates' TBS are identical except for the SPKI key bits and the
/// values (not the presence, position or size) of the key identifier extensions.
fn assert_same_structure(real: &[u8], ours: &[u8], what: &str) {
    let real_fields = tbs_fields(real);
    let our_fields = tbs_fields(ours);
    assert_eq!(real_fields.len(), our_fields.len(), "{what}: TBS field count");
    for (i, (r, o)) in real_fields.iter().zip(&our_fields).enumerate() {
        match i {
            6 => {
                // SubjectPublicKeyInfo: same algorithm; key sizes may differ for RSA.
                let r = children(r.content);
                let o = children(o.content);
                assert_eq!(r[0].full, o[0].full, "{what}: SPKI algorithm");
            }
            7 => {
                let real_exts = extensions(real);
                let our_exts = extensions(ours);
                let oids = |e: &[(Vec<u8>, common::Tlv<'_>)]| e.iter().map(|(o, _)| o.clone()).collect::<Vec<_>>();
                assert_eq!(oids(&real_exts), oids(&our_exts), "{what}: extension OIDs and order");
                for ((oid, r), (_, o)) in real_exts.iter().zip(&our_exts) {
                    let is_key_id = *oid == der::oid("2.5.29.14") || *oid == der::oid("2.5.29.35");
                    if is_key_id {
                        assert_eq!(r.full.len(), o.full.len(), "{what}: key identifier size");
                    } else {
                        assert_eq!(r.full, o.full, "{what}: extension {oid:02x?}");
                    }
                }
            }
            _ => assert_eq!(r.full, o.full, "{what}: TBS field {i}"),
        }
    }
    // Outer signature algorithm too.
    let r = children(read_one(real).content);
    let o = children(read_one(ours).content);
    assert_eq!(r[1].full, o[1].full, "{what}: signatureAlgorithm");
}

#[test]
fn leaves_match_real_vceks_and_vleks() {
    let Some(dir) = common::real_testdata() else {
        return;
    };
    let cases = [
        ("constellation-azure-snp/vcek.cert", Product::Milan, SigningKeyKind::Vcek),
        ("virtee-sev/vcek_milan.der", Product::Milan, SigningKeyKind::Vcek),
        ("go-sev-guest/vcek.testcer", Product::Milan, SigningKeyKind::Vcek),
        ("trustee-az-snp-vtpm/vcek-genoa.pem", Product::Genoa, SigningKeyKind::Vcek),
        ("virtee-sev/vcek_turin.der", Product::Turin, SigningKeyKind::Vcek),
        ("constellation-aws-snp/vlek.pem", Product::Milan, SigningKeyKind::Vlek),
        ("constellation-snp-vlek/vlek.pem", Product::Milan, SigningKeyKind::Vlek),
    ];
    for (rel, product, kind) in cases {
        if !dir.join(rel).exists() {
            eprintln!("note: {rel} missing, skipped");
            continue;
        }
        let real = load(&dir, rel).remove(0);
        let pki = common::pki(product, kind);
        let ours = pki.issue_leaf(&spec_like(&real));
        assert_same_structure(&real, &ours.der, rel);
    }
}

#[test]
fn leaf_defaults_match_kds_conventions() {
    // Without the real files: the defaults already have the real certificates' shape.
    let milan = common::pki(Product::Milan, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new());
    assert_eq!(ia5(amd_ext(&milan.der, "2").unwrap()), "Milan-B0");
    assert_eq!(amd_ext(&milan.der, "4").unwrap().len(), 64);
    assert!(amd_ext(&milan.der, "3.9").is_none());
    assert!(amd_ext(&milan.der, "5").is_none());
    let fields = tbs_fields(&milan.der);
    assert_eq!(fields[1].full, [0x02, 0x01, 0x00]);
    assert_eq!(fields[3].full, amd_name("SEV-Milan").as_slice());
    assert_eq!(fields[5].full, amd_name("SEV-VCEK").as_slice());

    let genoa = common::pki(Product::Genoa, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new());
    assert_eq!(ia5(amd_ext(&genoa.der, "2").unwrap()), "Genoa");

    let turin = common::pki(Product::Turin, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new());
    assert_eq!(ia5(amd_ext(&turin.der, "2").unwrap()), "Turin");
    assert_eq!(small_int(amd_ext(&turin.der, "1").unwrap()), 1);
    assert_eq!(amd_ext(&turin.der, "4").unwrap().len(), 8);
    assert!(amd_ext(&turin.der, "3.9").is_some());
    assert!(amd_ext(&turin.der, "3.4").is_none());

    let vlek = common::pki(Product::Milan, SigningKeyKind::Vlek).issue_leaf(&LeafSpec::new());
    assert_eq!(ia5(amd_ext(&vlek.der, "2").unwrap()), "Milan");
    assert!(amd_ext(&vlek.der, "4").is_none());
    assert_eq!(ia5(amd_ext(&vlek.der, "5").unwrap()), attest_test_support::DEFAULT_CSP_ID);
    assert_eq!(tbs_fields(&vlek.der)[3].full, amd_name("SEV-VLEK-Milan").as_slice());
    assert_eq!(tbs_fields(&vlek.der)[5].full, amd_name("SEV-VLEK").as_slice());
}

#[test]
fn ca_certificates_match_real_ark_ask_and_asvk() {
    let Some(dir) = common::real_testdata() else {
        return;
    };
    let cases = [
        ("amd-kds-roots/ask_ark_milan.pem", Product::Milan, SigningKeyKind::Vcek),
        ("amd-kds-roots/ask_ark_milan_vlek.pem", Product::Milan, SigningKeyKind::Vlek),
        ("amd-kds-roots/ask_ark_genoa.pem", Product::Genoa, SigningKeyKind::Vcek),
        ("amd-kds-roots/ask_ark_genoa_vlek.pem", Product::Genoa, SigningKeyKind::Vlek),
        ("amd-kds-roots/ask_ark_turin_vcek.pem", Product::Turin, SigningKeyKind::Vcek),
        ("amd-kds-roots/ask_ark_turin_vlek.pem", Product::Turin, SigningKeyKind::Vlek),
    ];
    for (rel, product, kind) in cases {
        let chain = load(&dir, rel);
        let (real_ask, real_ark) = (&chain[0], &chain[1]);
        let pki: &TestPki = common::pki(product, kind);

        let validity = |cert: &[u8]| {
            let v = children(tbs_fields(cert)[4].content);
            (parse_time(v[0]), parse_time(v[1]))
        };
        let (nb, na) = validity(real_ark);
        let ark = pki.reissue_ark(nb, na);
        assert_same_structure(real_ark, &ark, &format!("{rel} ARK"));

        let (nb, na) = validity(real_ask);
        let ask = pki.issue_intermediate(&IntermediateSpec::new().validity(nb, na));
        assert_same_structure(real_ask, &ask, &format!("{rel} intermediate"));
    }
}
