//! Synthetic SEV-SNP reports: layout, and signatures checked independently.

mod common;

use attest_test_support::aws_lc_rs::signature::{ECDSA_P384_SHA384_FIXED, UnparsedPublicKey};
use attest_test_support::{
    LeafSpec, Product, REPORT_LEN, ReportBuilder, SIGNED_LEN, SigningKeyKind, Tcb, der, tcb_milan_genoa, tcb_turin,
};
use common::{TempDir, openssl};

/// Big-endian fixed-width `r || s` (96 bytes) from the report's little-endian R and S fields.
fn fixed_signature(report: &[u8; REPORT_LEN]) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    for field in [0x2A0, 0x2E8] {
        out.extend(report[field..field + 48].iter().rev());
    }
    out
}

fn u32_at(report: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(report[offset..offset + 4].try_into().unwrap())
}

fn u64_at(report: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(report[offset..offset + 8].try_into().unwrap())
}

#[test]
fn signed_report_verifies_with_aws_lc_rs() {
    for (product, kind) in [
        (Product::Milan, SigningKeyKind::Vcek),
        (Product::Turin, SigningKeyKind::Vcek),
        (Product::Genoa, SigningKeyKind::Vlek),
    ] {
        let leaf = common::pki(product, kind).issue_leaf(&LeafSpec::new());
        let report = ReportBuilder::for_leaf(&leaf).report_data([0x5A; 64]).measurement([0x11; 48]).sign(&leaf);

        // The padding of R and S and the tail are zero.
        assert!(report[0x2A0 + 48..0x2E8].iter().all(|&b| b == 0));
        assert!(report[0x2E8 + 48..0x330].iter().all(|&b| b == 0));
        assert!(report[0x330..].iter().all(|&b| b == 0));

        let key = UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, leaf.public_key_point());
        key.verify(&report[..SIGNED_LEN], &fixed_signature(&report)).expect("report signature verifies");

        // Any change to the signed bytes breaks it.
        let mut tampered = report;
        tampered[0x50] ^= 1;
        assert!(key.verify(&tampered[..SIGNED_LEN], &fixed_signature(&tampered)).is_err());

        // Signing the same bytes twice gives two valid (randomised) signatures.
        let again = ReportBuilder::for_leaf(&leaf).report_data([0x5A; 64]).measurement([0x11; 48]).sign(&leaf);
        assert_eq!(report[..SIGNED_LEN], again[..SIGNED_LEN]);
        key.verify(&again[..SIGNED_LEN], &fixed_signature(&again)).unwrap();
    }
}

#[test]
fn signed_report_verifies_with_openssl() {
    let leaf = common::pki(Product::Milan, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).report_data([3; 64]).sign(&leaf);
    let sig = fixed_signature(&report);
    let der_sig = der::sequence(&[&der::integer_unsigned(&sig[..48]), &der::integer_unsigned(&sig[48..])]);
    let dir = TempDir::new("report");
    let cert = dir.write("vcek.pem", leaf.pem());
    let data = dir.write("report.bin", &report[..SIGNED_LEN]);
    let sig_path = dir.write("sig.der", &der_sig);
    let out = openssl(&["x509", "-in", &cert, "-noout", "-pubkey"]);
    let pubkey = dir.write("pub.pem", &out.stdout);
    let out = openssl(&["dgst", "-sha384", "-verify", &pubkey, "-signature", &sig_path, &data]);
    assert!(out.success && out.stdout.contains("Verified OK"), "{}", out.all());
}

#[test]
fn defaults() {
    let r = ReportBuilder::new().build_unsigned();
    assert_eq!(u32_at(&r, 0x00), 3);
    assert_eq!(u64_at(&r, 0x08), 0x3_0000);
    assert_eq!(u32_at(&r, 0x34), 1);
    assert!(r[0x0C..0x34].iter().all(|&b| b == 0));
    assert!(r[0x38..].iter().all(|&b| b == 0));
}

#[test]
fn every_field_lands_at_its_offset() {
    let r = ReportBuilder::new()
        .version(5)
        .guest_svn(0x0102_0304)
        .policy(0x1122_3344_5566_7788)
        .family_id([0xF1; 16])
        .image_id([0xF2; 16])
        .vmpl(2)
        .signature_algo(7)
        .current_tcb(0xA1)
        .platform_info(0xA2)
        .author_key_en(true)
        .mask_chip_key(true)
        .signing_key(SigningKeyKind::Vlek)
        .report_data([0xF3; 64])
        .measurement([0xF4; 48])
        .host_data([0xF5; 32])
        .id_key_digest([0xF6; 48])
        .author_key_digest([0xF7; 48])
        .report_id([0xF8; 32])
        .report_id_ma([0xF9; 32])
        .reported_tcb(0xA3)
        .cpuid(0x19, 0x11, 0x01)
        .chip_id([0xFA; 64])
        .committed_tcb(0xA4)
        .current_version(1, 55, 21)
        .committed_version(1, 54, 3)
        .launch_tcb(0xA5)
        .launch_mit_vector(0xA6)
        .current_mit_vector(0xA7)
        .build_unsigned();
    assert_eq!(u32_at(&r, 0x00), 5);
    assert_eq!(u32_at(&r, 0x04), 0x0102_0304);
    assert_eq!(u64_at(&r, 0x08), 0x1122_3344_5566_7788);
    assert_eq!(r[0x10..0x20], [0xF1; 16]);
    assert_eq!(r[0x20..0x30], [0xF2; 16]);
    assert_eq!(u32_at(&r, 0x30), 2);
    assert_eq!(u32_at(&r, 0x34), 7);
    assert_eq!(u64_at(&r, 0x38), 0xA1);
    assert_eq!(u64_at(&r, 0x40), 0xA2);
    assert_eq!(u32_at(&r, 0x48), 0b0_0111);
    assert_eq!(u32_at(&r, 0x4C), 0);
    assert_eq!(r[0x50..0x90], [0xF3; 64]);
    assert_eq!(r[0x90..0xC0], [0xF4; 48]);
    assert_eq!(r[0xC0..0xE0], [0xF5; 32]);
    assert_eq!(r[0xE0..0x110], [0xF6; 48]);
    assert_eq!(r[0x110..0x140], [0xF7; 48]);
    assert_eq!(r[0x140..0x160], [0xF8; 32]);
    assert_eq!(r[0x160..0x180], [0xF9; 32]);
    assert_eq!(u64_at(&r, 0x180), 0xA3);
    assert_eq!(r[0x188..0x18C], [0x19, 0x11, 0x01, 0x00]);
    assert!(r[0x18C..0x1A0].iter().all(|&b| b == 0));
    assert_eq!(r[0x1A0..0x1E0], [0xFA; 64]);
    assert_eq!(u64_at(&r, 0x1E0), 0xA4);
    assert_eq!(r[0x1E8..0x1F0], [21, 55, 1, 0, 3, 54, 1, 0]);
    assert_eq!(u64_at(&r, 0x1F0), 0xA5);
    assert_eq!(u64_at(&r, 0x1F8), 0xA6);
    assert_eq!(u64_at(&r, 0x200), 0xA7);
    assert!(r[0x208..].iter().all(|&b| b == 0));
}

#[test]
fn key_info_bits_are_independent() {
    let info = |b: ReportBuilder| u32_at(&b.build_unsigned(), 0x48);
    assert_eq!(info(ReportBuilder::new().signing_key(SigningKeyKind::Vlek)), 1 << 2);
    assert_eq!(info(ReportBuilder::new().signing_key_raw(7)), 7 << 2);
    assert_eq!(info(ReportBuilder::new().signing_key_raw(7).signing_key(SigningKeyKind::Vcek)), 0);
    assert_eq!(info(ReportBuilder::new().author_key_en(true).mask_chip_key(true)), 3);
    assert_eq!(info(ReportBuilder::new().author_key_en(true).author_key_en(false)), 0);
    assert_eq!(info(ReportBuilder::new().key_info_raw(0xFFFF_FFFF).signing_key(SigningKeyKind::Vcek)), 0xFFFF_FFE3);
    assert_eq!(ReportBuilder::new().raw(0x4C, &[1, 2, 3, 4]).build_unsigned()[0x4C..0x50], [1, 2, 3, 4]);
}

#[test]
fn tcb_encodings() {
    // The real Azure Milan report's TCB (bl 2, snp 6, ucode 93).
    assert_eq!(tcb_milan_genoa(2, 0, 6, 93), 0x5D06_0000_0000_0002);
    assert_eq!(tcb_turin(1, 2, 3, 4, 5), 0x0500_0000_0403_0201);
    let t = Tcb { bl: 9, tee: 8, snp: 7, ucode: 6, fmc: Some(5) };
    assert_eq!(t.encode(Product::Genoa), tcb_milan_genoa(9, 8, 7, 6));
    assert_eq!(t.encode(Product::Turin), tcb_turin(5, 9, 8, 7, 6));
    assert_eq!(Tcb::decode(t.encode(Product::Turin), Product::Turin), t);
    assert_eq!(Tcb::decode(t.encode(Product::Milan), Product::Milan), Tcb { fmc: None, ..t });
}

#[test]
fn for_leaf_matches_the_certificate() {
    let turin =
        common::pki(Product::Turin, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new().hwid([1, 2, 3, 4, 5, 6, 7, 8]));
    let r = ReportBuilder::for_leaf(&turin).build_unsigned();
    let tcb = turin.tcb.encode(Product::Turin);
    for offset in [0x38, 0x180, 0x1E0, 0x1F0] {
        assert_eq!(u64_at(&r, offset), tcb);
    }
    assert_eq!(r[0x1A0..0x1A8], [1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(r[0x1A8..0x1E0].iter().all(|&b| b == 0));
    assert_eq!(r[0x188..0x18B], [0x1A, 0x02, 0x01]);
    assert_eq!(u32_at(&r, 0x48), 0);

    // Version 2 has no CPUID fields: for_leaf leaves them zero, unless set explicitly.
    let r = ReportBuilder::for_leaf(&turin).version(2).build_unsigned();
    assert_eq!(r[0x188..0x18B], [0, 0, 0]);
    let r = ReportBuilder::for_leaf(&turin).version(2).cpuid(1, 2, 3).build_unsigned();
    assert_eq!(r[0x188..0x18B], [1, 2, 3]);
    let r = ReportBuilder::for_leaf(&turin).cpuid(1, 2, 3).version(5).build_unsigned();
    assert_eq!(r[0x188..0x18B], [1, 2, 3]);

    let vlek = common::pki(Product::Milan, SigningKeyKind::Vlek).issue_leaf(&LeafSpec::new());
    let r = ReportBuilder::for_leaf(&vlek).build_unsigned();
    assert_eq!(u32_at(&r, 0x48), 1 << 2);
    assert!(r[0x1A0..0x1E0].iter().all(|&b| b == 0));

    // A reused key gives a second certificate for the same key (e.g. a different TCB).
    let milan = common::pki(Product::Milan, SigningKeyKind::Vcek).issue_leaf(&LeafSpec::new());
    let reissued = common::pki(Product::Milan, SigningKeyKind::Vcek)
        .issue_leaf(&LeafSpec::new().key_pkcs8(milan.pkcs8()).tcb(Tcb { snp: 1, ..milan.tcb }));
    assert_eq!(milan.public_key_point(), reissued.public_key_point());
    assert_eq!(milan.public_key_point().len(), 97);
    assert_ne!(milan.der, reissued.der);
}
