//! Cross-checks of the generated PKI against OpenSSL's command-line tool.

mod common;

use attest_test_support::{
    CrlSpec, HwIdEncoding, IntermediateSpec, LeafSpec, Product, SigningKeyKind, Tcb, TestPki, der, pem, unix_time,
};
use common::{TempDir, openssl, other_milan};

const ALL: [(Product, SigningKeyKind); 6] = [
    (Product::Milan, SigningKeyKind::Vcek),
    (Product::Genoa, SigningKeyKind::Vcek),
    (Product::Turin, SigningKeyKind::Vcek),
    (Product::Milan, SigningKeyKind::Vlek),
    (Product::Genoa, SigningKeyKind::Vlek),
    (Product::Turin, SigningKeyKind::Vlek),
];

/// Writes ark.pem / ask.pem and returns their paths.
fn write_chain(dir: &TempDir, pki: &TestPki) -> (String, String) {
    (dir.write("ark.pem", pki.ark_pem()), dir.write("ask.pem", pki.ask_pem()))
}

fn verify(ark: &str, ask: &str, target: &str, extra: &[&str]) -> common::Output {
    let mut args = vec!["verify", "-CAfile", ark, "-untrusted", ask];
    args.extend_from_slice(extra);
    args.push(target);
    openssl(&args)
}

fn assert_verify_ok(out: &common::Output, target: &str) {
    assert!(out.success && out.stdout.contains(&format!("{target}: OK")), "openssl verify failed: {}", out.all());
}

#[test]
fn ark_ask_and_leaf_verify_for_every_product_and_kind() {
    for (product, kind) in ALL {
        let pki = common::pki(product, kind);
        let dir = TempDir::new("chain");
        let (ark, ask) = write_chain(&dir, pki);
        let leaf = pki.issue_leaf(&LeafSpec::new());
        let leaf_path = dir.write("leaf.pem", leaf.pem());
        for target in [&ark, &ask, &leaf_path] {
            let out = verify(&ark, &ask, target, &[]);
            assert_verify_ok(&out, target);
        }
        // The KDS-style chain file (intermediate first) works as a bundle too.
        let chain = dir.write("chain.pem", pki.chain_pem());
        let out = openssl(&["verify", "-CAfile", &ark, "-untrusted", &chain, &leaf_path]);
        assert_verify_ok(&out, &leaf_path);
    }
}

#[test]
fn x509_text_shows_amd_names_and_pss_parameters() {
    let pki = common::pki(Product::Genoa, SigningKeyKind::Vlek);
    let dir = TempDir::new("text");
    let (ark, ask) = write_chain(&dir, pki);

    let text = openssl(&["x509", "-in", &ark, "-noout", "-text"]).stdout;
    assert!(
        text.contains(
            "Issuer: OU = Engineering, C = US, L = Santa Clara, ST = CA, O = Advanced Micro Devices, CN = ARK-Genoa"
        ),
        "{text}"
    );
    assert!(text.contains("Serial Number: 131072 (0x20000)"), "{text}");
    assert!(text.contains("Not Before: Jan  1 00:00:00 2020 GMT"), "{text}");
    assert!(text.contains("Not After : Jan  1 00:00:00 2049 GMT"), "{text}");
    assert!(text.contains("Hash Algorithm: sha384"), "{text}");
    assert!(text.contains("Mask Algorithm: mgf1 with sha384"), "{text}");
    assert!(text.contains("Salt Length: 0x30"), "{text}");
    assert!(text.contains("Trailer Field: 0x01\n"), "{text}");
    assert!(text.contains("Certificate Sign, CRL Sign"), "{text}");
    assert!(text.contains("URI:https://kdsintf.amd.com/vcek/v1/Genoa/crl"), "{text}");

    let text = openssl(&["x509", "-in", &ask, "-noout", "-text"]).stdout;
    assert!(text.contains("CN = SEV-VLEK-Genoa"), "{text}");
    assert!(text.contains("Serial Number: 131329 (0x20101)"), "{text}");
    assert!(text.contains("CA:TRUE, pathlen:0"), "{text}");
    assert!(text.contains("URI:https://kdsintf.amd.com/vlek/v1/Genoa/crl"), "{text}");

    let leaf = pki.issue_leaf(&LeafSpec::new());
    let leaf_path = dir.write("leaf.pem", leaf.pem());
    let text = openssl(&["x509", "-in", &leaf_path, "-noout", "-text"]).stdout;
    assert!(text.contains("Serial Number: 0 (0x0)"), "{text}");
    assert!(text.contains("CN = SEV-VLEK\n"), "{text}");
    assert!(text.contains("ASN1 OID: secp384r1"), "{text}");
    assert!(text.contains("Trailer Field: 0x01 (default)"), "{text}");
    for oid in ["1.3.6.1.4.1.3704.1.1:", "1.3.6.1.4.1.3704.1.3.8:", "1.3.6.1.4.1.3704.1.5:"] {
        assert!(text.contains(oid), "missing {oid}: {text}");
    }
}

/// `(oid, extnValue hex)` pairs from `openssl asn1parse` of a certificate, in order.
fn amd_extensions_via_openssl(path: &str) -> Vec<(String, String)> {
    let out = openssl(&["asn1parse", "-in", path]);
    assert!(out.success, "{}", out.all());
    let lines: Vec<&str> = out.stdout.lines().collect();
    let mut result = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(pos) = line.find(":1.3.6.1.4.1.3704.1.") {
            let oid = line[pos + 1..].trim().to_owned();
            let next = if lines[i + 1].contains("BOOLEAN") { i + 2 } else { i + 1 };
            let value =
                lines[next].split("[HEX DUMP]:").nth(1).expect("extnValue hex dump").trim().to_ascii_lowercase();
            result.push((oid, value));
        }
    }
    result
}

#[test]
fn amd_extensions_have_the_requested_values() {
    let dir = TempDir::new("ext");

    // Milan VCEK: KDS order (.3.3 after the reserved SPLs), raw 64-byte hwID.
    let pki = common::pki(Product::Milan, SigningKeyKind::Vcek);
    let hwid: Vec<u8> = (0..64).collect();
    let tcb = Tcb { bl: 3, tee: 0, snp: 8, ucode: 115, fmc: None };
    let leaf = pki.issue_leaf(&LeafSpec::new().tcb(tcb).hwid(hwid.clone()));
    let path = dir.write("milan.pem", leaf.pem());
    let hwid_hex = common::hex(&hwid);
    let expected = [
        ("1.3.6.1.4.1.3704.1.1", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.2", "16084d696c616e2d4230".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.1", "020103".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.2", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.4", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.5", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.6", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.7", "020100".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.3", "020108".to_owned()),
        ("1.3.6.1.4.1.3704.1.3.8", "020173".to_owned()),
        ("1.3.6.1.4.1.3704.1.4", hwid_hex.clone()),
    ];
    let got = amd_extensions_via_openssl(&path);
    let expected: Vec<(String, String)> = expected.iter().map(|(o, v)| ((*o).to_owned(), v.clone())).collect();
    assert_eq!(got, expected);

    // Turin VCEK: fmcSPL first, no .3.4, structVersion 1, 8-byte hwID.
    let pki = common::pki(Product::Turin, SigningKeyKind::Vcek);
    let tcb = Tcb { bl: 1, tee: 2, snp: 3, ucode: 9, fmc: Some(4) };
    let leaf = pki.issue_leaf(&LeafSpec::new().tcb(tcb).hwid([0x1E, 0x55, 0x0A, 0x8E, 0xE5, 0xCF, 0x9F, 0x4D]));
    let path = dir.write("turin.pem", leaf.pem());
    let got: Vec<(String, String)> = amd_extensions_via_openssl(&path);
    let want = [
        ("1.3.6.1.4.1.3704.1.1", "020101"),
        ("1.3.6.1.4.1.3704.1.2", "1605547572696e"),
        ("1.3.6.1.4.1.3704.1.3.9", "020104"),
        ("1.3.6.1.4.1.3704.1.3.1", "020101"),
        ("1.3.6.1.4.1.3704.1.3.2", "020102"),
        ("1.3.6.1.4.1.3704.1.3.3", "020103"),
        ("1.3.6.1.4.1.3704.1.3.5", "020100"),
        ("1.3.6.1.4.1.3704.1.3.6", "020100"),
        ("1.3.6.1.4.1.3704.1.3.7", "020100"),
        ("1.3.6.1.4.1.3704.1.3.8", "020109"),
        ("1.3.6.1.4.1.3704.1.4", "1e550a8ee5cf9f4d"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(o, v)| ((*o).to_owned(), (*v).to_owned())).collect();
    assert_eq!(got, want);

    // Milan VLEK: csp_id, no hwID, ucode 0xd9 needs the leading zero byte.
    let pki = common::pki(Product::Milan, SigningKeyKind::Vlek);
    let tcb = Tcb { bl: 4, tee: 0, snp: 24, ucode: 0xD9, fmc: None };
    let leaf = pki.issue_leaf(&LeafSpec::new().tcb(tcb).csp_id("CN=cc-eu-west-1.amazonaws.com"));
    let path = dir.write("vlek.pem", leaf.pem());
    let got = amd_extensions_via_openssl(&path);
    assert_eq!(got[1], ("1.3.6.1.4.1.3704.1.2".to_owned(), "16054d696c616e".to_owned()));
    assert_eq!(got[9], ("1.3.6.1.4.1.3704.1.3.8".to_owned(), "020200d9".to_owned()));
    assert_eq!(
        got[10],
        (
            "1.3.6.1.4.1.3704.1.5".to_owned(),
            "161d434e3d63632d65752d776573742d312e616d617a6f6e6177732e636f6d".to_owned()
        )
    );
    assert_eq!(got.len(), 11);

    // Options: forced 2-byte SPLs, OCTET STRING hwID, a dropped and an extra extension.
    let pki = common::pki(Product::Genoa, SigningKeyKind::Vcek);
    let leaf = pki.issue_leaf(
        &LeafSpec::new()
            .spl_integer_width(2)
            .hwid(vec![0xAB; 64])
            .hwid_encoding(HwIdEncoding::OctetString)
            .without_extension("1.3.6.1.4.1.3704.1.3.2")
            .extra_extension("1.3.6.1.4.1.3704.1.99", true, der::null()),
    );
    let path = dir.write("genoa.pem", leaf.pem());
    let got = amd_extensions_via_openssl(&path);
    assert_eq!(got[1].1, "160547656e6f61");
    assert_eq!(got[2], ("1.3.6.1.4.1.3704.1.3.1".to_owned(), "0202000a".to_owned()));
    assert_eq!(got[3].0, "1.3.6.1.4.1.3704.1.3.4");
    assert_eq!(got[9].0, "1.3.6.1.4.1.3704.1.4");
    assert_eq!(got[9].1, format!("0440{}", "ab".repeat(64)));
    assert_eq!(got[10].0, "1.3.6.1.4.1.3704.1.99");
    // A critical unknown extension makes OpenSSL refuse the chain, which shows it was critical.
    let dir2 = TempDir::new("crit");
    let (ark, ask) = write_chain(&dir2, pki);
    let out = verify(&ark, &ask, &path, &[]);
    assert!(!out.success && out.all().contains("unhandled critical extension"), "{}", out.all());
}

#[test]
fn expired_or_not_yet_valid_certificates_fail() {
    let pki = common::pki(Product::Milan, SigningKeyKind::Vcek);
    let dir = TempDir::new("expiry");
    let ark = dir.write("ark.pem", pki.ark_pem());

    // Expired ASK, same key: the leaf signature still checks, only the date fails.
    let expired_ask = pki.issue_intermediate(
        &IntermediateSpec::new().validity(unix_time(2020, 1, 1, 0, 0, 0), unix_time(2021, 1, 1, 0, 0, 0)),
    );
    let ask = dir.write("ask-expired.pem", pem("CERTIFICATE", &expired_ask));
    let leaf = dir.write("leaf.pem", pki.issue_leaf(&LeafSpec::new()).pem());
    let out = verify(&ark, &ask, &leaf, &[]);
    assert!(!out.success && out.all().contains("certificate has expired"), "{}", out.all());
    // ...and verifies at a time inside its validity.
    let at = unix_time(2020, 6, 1, 0, 0, 0).to_string();
    let out = verify(&ark, &ask, &leaf, &["-attime", &at]);
    assert_verify_ok(&out, &leaf);

    // Expired leaf.
    let good_ask = dir.write("ask.pem", pki.ask_pem());
    let old = pki.issue_leaf(&LeafSpec::new().validity(unix_time(2021, 1, 1, 0, 0, 0), unix_time(2022, 1, 1, 0, 0, 0)));
    let old = dir.write("old.pem", old.pem());
    let out = verify(&ark, &good_ask, &old, &[]);
    assert!(!out.success && out.all().contains("certificate has expired"), "{}", out.all());

    // Leaf not yet valid, with GeneralizedTime dates.
    let future =
        pki.issue_leaf(&LeafSpec::new().validity(unix_time(2051, 1, 1, 0, 0, 0), unix_time(2060, 1, 1, 0, 0, 0)));
    let future = dir.write("future.pem", future.pem());
    let out = verify(&ark, &good_ask, &future, &[]);
    assert!(!out.success && out.all().contains("certificate is not yet valid"), "{}", out.all());
    let dates = openssl(&["x509", "-in", &future, "-noout", "-dates"]).stdout;
    assert!(dates.contains("notBefore=Jan  1 00:00:00 2051 GMT"), "{dates}");
    let parsed = openssl(&["asn1parse", "-in", &future]).stdout;
    assert!(parsed.contains("GENERALIZEDTIME   :20510101000000Z"), "{parsed}");
    assert!(parsed.contains("GENERALIZEDTIME   :20600101000000Z"), "{parsed}");
}

#[test]
fn intermediates_signed_by_the_wrong_ark_fail() {
    let milan = common::pki(Product::Milan, SigningKeyKind::Vcek);
    let genoa = common::pki(Product::Genoa, SigningKeyKind::Vcek);
    let dir = TempDir::new("wrong-ark");
    let ark = dir.write("ark.pem", milan.ark_pem());
    let leaf = dir.write("leaf.pem", milan.issue_leaf(&LeafSpec::new()).pem());

    // SEV-Milan certified by ARK-Genoa: no path to ARK-Milan.
    let cross = milan.issue_intermediate_signed_by(&IntermediateSpec::new(), genoa);
    let ask = dir.write("ask-genoa.pem", pem("CERTIFICATE", &cross));
    let out = verify(&ark, &ask, &leaf, &[]);
    assert!(!out.success, "{}", out.all());
    // ...but it does chain to ARK-Genoa.
    let genoa_ark = dir.write("genoa-ark.pem", genoa.ark_pem());
    let out = verify(&genoa_ark, &ask, &leaf, &[]);
    assert_verify_ok(&out, &leaf);

    // Same names, different ARK key. OpenSSL matches the ASK's authority key identifier
    // against the ARK's subject key identifier and finds no issuer at all.
    let forged = milan.issue_intermediate_signed_by(&IntermediateSpec::new(), other_milan());
    let ask = dir.write("ask-forged.pem", pem("CERTIFICATE", &forged));
    let out = verify(&ark, &ask, &leaf, &[]);
    assert!(!out.success && out.all().contains("unable to get local issuer certificate"), "{}", out.all());

    // A leaf of another Milan PKI under this chain: signature failure at the leaf.
    let good_ask = dir.write("ask.pem", milan.ask_pem());
    let foreign = dir.write("foreign.pem", other_milan().issue_leaf(&LeafSpec::new()).pem());
    let out = verify(&ark, &good_ask, &foreign, &[]);
    assert!(!out.success && out.all().contains("certificate signature failure"), "{}", out.all());
}

#[test]
fn crl_verifies_and_lists_revocations() {
    let pki = common::pki(Product::Milan, SigningKeyKind::Vcek);
    let dir = TempDir::new("crl");
    let (ark, ask) = write_chain(&dir, pki);
    let revoked_at = unix_time(2024, 5, 6, 7, 8, 9);
    let crl = pki.issue_crl(
        &CrlSpec::new()
            .this_update(unix_time(2025, 1, 1, 0, 0, 0))
            .next_update(unix_time(2048, 1, 1, 0, 0, 0))
            .revoke(pki.ask_serial(), revoked_at)
            .revoke([0x00], revoked_at)
            .crl_number(Some(7)),
    );
    let crl_der = dir.write("crl.der", &crl);
    let out = openssl(&["crl", "-inform", "DER", "-in", &crl_der, "-CAfile", &ark, "-noout"]);
    assert!(out.success && out.all().contains("verify OK"), "{}", out.all());

    let text = openssl(&["crl", "-inform", "DER", "-in", &crl_der, "-noout", "-text"]).stdout;
    assert!(text.contains("Version 2 (0x1)"), "{text}");
    assert!(text.contains("Signature Algorithm: rsassaPss"), "{text}");
    assert!(text.contains("CN = ARK-Milan"), "{text}");
    assert!(text.contains("Last Update: Jan  1 00:00:00 2025 GMT"), "{text}");
    assert!(text.contains("Next Update: Jan  1 00:00:00 2048 GMT"), "{text}");
    assert!(text.contains("Serial Number: 010001"), "{text}");
    assert!(text.contains("Serial Number: 00"), "{text}");
    assert!(text.contains("Revocation Date: May  6 07:08:09 2024 GMT"), "{text}");
    assert!(text.contains("X509v3 CRL Number: \n                7"), "{text}");

    // OpenSSL's own revocation check rejects the revoked ASK, and accepts it with an empty CRL.
    let crl_pem = dir.write("crl.pem", pem("X509 CRL", &crl));
    let out = verify(&ark, &ask, &ask, &["-crl_check", "-CRLfile", &crl_pem]);
    assert!(!out.success && out.all().contains("certificate revoked"), "{}", out.all());
    let empty = pki.issue_crl(&CrlSpec::new());
    let empty_pem = dir.write("empty.pem", pem("X509 CRL", &empty));
    let out = verify(&ark, &ask, &ask, &["-crl_check", "-CRLfile", &empty_pem]);
    assert_verify_ok(&out, &ask);
    let text = openssl(&["crl", "-in", &empty_pem, "-noout", "-text"]).stdout;
    assert!(text.contains("No Revoked Certificates."), "{text}");

    // A CRL from another PKI with the same issuer name does not verify under this ARK.
    let foreign = other_milan().issue_crl(&CrlSpec::new());
    let foreign_der = dir.write("foreign.der", &foreign);
    let out = openssl(&["crl", "-inform", "DER", "-in", &foreign_der, "-CAfile", &ark, "-noout"]);
    assert!(!out.all().contains("verify OK"), "{}", out.all());
}

#[test]
fn rsa_4096_like_amd() {
    let pki = TestPki::with_rsa_bits(Product::Turin, SigningKeyKind::Vcek, 4096);
    let dir = TempDir::new("rsa4096");
    let (ark, ask) = write_chain(&dir, &pki);
    let leaf = dir.write("leaf.pem", pki.issue_leaf(&LeafSpec::new()).pem());
    assert_verify_ok(&verify(&ark, &ask, &leaf, &[]), &leaf);
    let text = openssl(&["x509", "-in", &ark, "-noout", "-text"]).stdout;
    assert!(text.contains("Public-Key: (4096 bit)"), "{text}");
}

#[test]
fn reissued_ark_and_custom_validity() {
    let pki = TestPki::builder(Product::Genoa, SigningKeyKind::Vcek)
        .validity(unix_time(2022, 1, 26, 15, 34, 37), unix_time(2047, 1, 26, 15, 34, 37))
        .build();
    let dir = TempDir::new("reissue");
    let (ark, ask) = write_chain(&dir, &pki);
    let dates = openssl(&["x509", "-in", &ark, "-noout", "-dates"]).stdout;
    assert!(dates.contains("notBefore=Jan 26 15:34:37 2022 GMT"), "{dates}");
    assert!(dates.contains("notAfter=Jan 26 15:34:37 2047 GMT"), "{dates}");

    let expired_ark = pki.reissue_ark(unix_time(2020, 1, 1, 0, 0, 0), unix_time(2021, 1, 1, 0, 0, 0));
    let expired = dir.write("ark-expired.pem", pem("CERTIFICATE", &expired_ark));
    let out = verify(&expired, &ask, &ask, &[]);
    assert!(!out.success && out.all().contains("certificate has expired"), "{}", out.all());
    let leaf = dir.write("leaf.pem", pki.issue_leaf(&LeafSpec::new()).pem());
    assert_verify_ok(&verify(&ark, &ask, &leaf, &[]), &leaf);
}
