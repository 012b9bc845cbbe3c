//! Differential test: every real SEV-SNP report in `../shared/testdata` parsed by
//! [`attest_engine::snp::Report::parse`] and by the virtee `sev` crate (8.0) must agree field by field.
//!
//! `sev` decodes TCB_VERSION by a generation it guesses from the report (CPUID for version 3+, the shape
//! of CHIP_ID for version 2) and has no way to be told the generation. For a version-2 report with an
//! all-zero CHIP_ID (VLEK-signed reports zero it) it refuses with `MaskedChipId`; for those the test
//! asserts that refusal, then parses a copy whose CHIP_ID is replaced by a non-Turin-looking placeholder
//! and compares every other field.

mod common;

use attest_engine::snp::{Product, REPORT_SIZE, Report, SigningKey, TcbVersion};
use sev::firmware::guest::AttestationReport;
use sev::firmware::host::TcbVersion as SevTcb;
use sev::parser::ByteParser as _;
use std::path::Path;

/// Offset of the SNP report inside an HCL report.
const HCL_REPORT_OFFSET: usize = 32;

/// `(name, report bytes)` for every real SNP report in the testdata.
fn reports(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let hcl = |bytes: &[u8]| bytes[HCL_REPORT_OFFSET..HCL_REPORT_OFFSET + REPORT_SIZE].to_vec();
    let evidence = |rel: &str| {
        let json: serde_json::Value = serde_json::from_slice(&common::read(dir, rel)).unwrap();
        let bytes: Vec<u8> = json["report"]
            .as_array()
            .unwrap_or_else(|| panic!("{rel}: no \"report\" array"))
            .iter()
            .map(|b| u8::try_from(b.as_u64().unwrap()).unwrap())
            .collect();
        assert_eq!(bytes.len(), 2600, "{rel}: HCL report size");
        hcl(&bytes)
    };
    let hex_report = hex::decode(String::from_utf8(common::read(dir, "virtee-sev/report_milan.hex")).unwrap().trim())
        .expect("report_milan.hex");
    vec![
        (
            "constellation-azure-snp",
            common::read(dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec(),
        ),
        ("constellation-aws-snp", common::read(dir, "constellation-aws-snp/report.bin")),
        ("constellation-snp-vlek", common::read(dir, "constellation-snp-vlek/vlek-report.bin")),
        ("go-sev-guest", common::read(dir, "go-sev-guest/attestation.bin")),
        ("virtee-sev", hex_report),
        ("trustee-az-snp-vtpm/hcl-report.bin", hcl(&common::read(dir, "trustee-az-snp-vtpm/hcl-report.bin"))),
        ("azure-cvm-tooling/hcl-report-snp.bin", hcl(&common::read(dir, "azure-cvm-tooling/hcl-report-snp.bin"))),
        ("trustee-az-snp-vtpm/evidence-v0.json", evidence("trustee-az-snp-vtpm/evidence-v0.json")),
        ("trustee-az-snp-vtpm/evidence-genoa.json", evidence("trustee-az-snp-vtpm/evidence-genoa.json")),
    ]
}

/// Parses with `sev`. Version-2 reports with a zero CHIP_ID must be refused; they are re-parsed with a
/// placeholder CHIP_ID. Returns the parsed report and whether CHIP_ID was substituted.
fn sev_parse(name: &str, bytes: &[u8]) -> (AttestationReport, bool) {
    match AttestationReport::from_bytes(bytes) {
        Ok(r) => (r, false),
        Err(e) => {
            let version = u32::from_le_bytes(bytes[..4].try_into().unwrap());
            assert!(
                version == 2 && bytes[0x1A0..0x1E0].iter().all(|b| *b == 0),
                "{name}: sev refused a report it should parse: {e}"
            );
            assert!(e.to_string().contains("MASK_CHIP_ID"), "{name}: unexpected sev error: {e}");
            let mut patched = bytes.to_vec();
            patched[0x1A0..0x1E0].fill(0xA5);
            (AttestationReport::from_bytes(&patched).unwrap_or_else(|e| panic!("{name} (patched): {e}")), true)
        }
    }
}

/// Our reading of a TCB_VERSION, in `sev`'s shape.
fn tcb_tuple(t: TcbVersion) -> (Option<u8>, u8, u8, u8, u8) {
    (t.fmc, t.bootloader, t.tee, t.snp, t.microcode)
}

fn sev_tcb_tuple(t: SevTcb) -> (Option<u8>, u8, u8, u8, u8) {
    (t.fmc, t.bootloader, t.tee, t.snp, t.microcode)
}

/// An independent decode of the raw u64 (SNP ABI Table 3): Milan/Genoa `BL TEE 0 0 0 0 SNP UCODE`,
/// Turin `FMC BL TEE SNP 0 0 0 UCODE`.
fn own_decode(raw: u64, product: Product) -> (Option<u8>, u8, u8, u8, u8) {
    let b = raw.to_le_bytes();
    match product {
        Product::Turin => (Some(b[0]), b[1], b[2], b[3], b[7]),
        Product::Milan | Product::Genoa => (None, b[0], b[1], b[6], b[7]),
    }
}

fn compare(name: &str, ours: &Report<'_>, theirs: &AttestationReport, chip_id_patched: bool) {
    let raw = ours.raw();
    assert_eq!(ours.version(), theirs.version, "{name}: version");
    assert_eq!(ours.guest_svn(), theirs.guest_svn, "{name}: guest_svn");

    // POLICY, bit by bit (sev's `u64::from(GuestPolicy)` forces the must-be-one bit 17).
    let (gp, sp) = (ours.policy(), theirs.policy);
    assert_eq!(gp.0 | 1 << 17, u64::from(sp), "{name}: policy raw");
    assert_eq!(u64::from(gp.abi_minor()), sp.abi_minor(), "{name}: policy abi_minor");
    assert_eq!(u64::from(gp.abi_major()), sp.abi_major(), "{name}: policy abi_major");
    assert_eq!(gp.smt(), sp.smt_allowed(), "{name}: policy smt");
    assert_eq!(gp.migrate_ma(), sp.migrate_ma_allowed(), "{name}: policy migrate_ma");
    assert_eq!(gp.debug(), sp.debug_allowed(), "{name}: policy debug");
    assert_eq!(gp.single_socket(), sp.single_socket_required(), "{name}: policy single_socket");
    assert_eq!(gp.cxl_allow(), sp.cxl_allowed(), "{name}: policy cxl_allow");
    assert_eq!(gp.mem_aes_256_xts(), sp.mem_aes_256_xts(), "{name}: policy mem_aes_256_xts");
    assert_eq!(gp.rapl_dis(), sp.rapl_dis(), "{name}: policy rapl_dis");
    assert_eq!(gp.ciphertext_hiding(), sp.ciphertext_hiding(), "{name}: policy ciphertext_hiding");
    assert_eq!(gp.page_swap_disable(), sp.page_swap_disabled(), "{name}: policy page_swap_disable");

    assert_eq!(ours.family_id(), &theirs.family_id, "{name}: family_id");
    assert_eq!(ours.image_id(), &theirs.image_id, "{name}: image_id");
    assert_eq!(ours.vmpl(), theirs.vmpl, "{name}: vmpl");
    assert_eq!(raw.signature_algo.get(), theirs.sig_algo, "{name}: signature_algo");

    // PLATFORM_INFO.
    let (pi, sp) = (ours.platform_info(), theirs.plat_info);
    assert_eq!(pi.0, u64::from(sp), "{name}: platform_info raw");
    assert_eq!(pi.smt_enabled(), sp.smt_enabled(), "{name}: platform smt_enabled");
    assert_eq!(pi.tsme_enabled(), sp.tsme_enabled(), "{name}: platform tsme_enabled");
    assert_eq!(pi.ecc_enabled(), sp.ecc_enabled(), "{name}: platform ecc_enabled");
    assert_eq!(pi.rapl_disabled(), sp.rapl_disabled(), "{name}: platform rapl_disabled");
    assert_eq!(pi.ciphertext_hiding_enabled(), sp.ciphertext_hiding_enabled(), "{name}: platform ciphertext_hiding");
    assert_eq!(pi.alias_check_complete(), sp.alias_check_complete(), "{name}: platform alias_check_complete");

    // Key info.
    let ki = theirs.key_info;
    assert_eq!(raw.key_info.get(), u32::from(ki), "{name}: key_info raw");
    assert_eq!(ours.author_key_en(), ki.author_key_en(), "{name}: author_key_en");
    assert_eq!(ours.mask_chip_key(), ki.mask_chip_key(), "{name}: mask_chip_key");
    let signing_key = match ours.signing_key() {
        SigningKey::Vcek => 0,
        SigningKey::Vlek => 1,
    };
    assert_eq!(signing_key, ki.signing_key(), "{name}: signing_key");

    assert_eq!(ours.report_data(), &theirs.report_data, "{name}: report_data");
    assert_eq!(ours.measurement(), &theirs.measurement, "{name}: measurement");
    assert_eq!(ours.host_data(), &theirs.host_data, "{name}: host_data");
    assert_eq!(ours.id_key_digest(), &theirs.id_key_digest, "{name}: id_key_digest");
    assert_eq!(ours.author_key_digest(), &theirs.author_key_digest, "{name}: author_key_digest");
    assert_eq!(ours.report_id(), &theirs.report_id, "{name}: report_id");
    assert_eq!(ours.report_id_ma(), &theirs.report_id_ma, "{name}: report_id_ma");
    if !chip_id_patched {
        assert_eq!(ours.chip_id(), &theirs.chip_id, "{name}: chip_id");
    }

    // CPUID (version 3+), and the product it names. Version 2 carries no product; every version-2 vector
    // in the testdata is Milan, and Milan and Genoa share the TCB layout.
    let cpuid = theirs.cpuid_fam_id.zip(theirs.cpuid_mod_id).zip(theirs.cpuid_step).map(|((f, m), s)| (f, m, s));
    assert_eq!(ours.cpuid(), cpuid, "{name}: cpuid");
    let product = ours.cpuid_product().transpose().unwrap_or_else(|e| panic!("{name}: cpuid product: {e}"));
    let product = product.unwrap_or(Product::Milan);

    // TCBs: raw u64 → the engine's decode, an independent decode, and sev's decode must all agree.
    for (field, raw_tcb, sev_tcb) in [
        ("current_tcb", ours.current_tcb(), theirs.current_tcb),
        ("reported_tcb", ours.reported_tcb(), theirs.reported_tcb),
        ("committed_tcb", ours.committed_tcb(), theirs.committed_tcb),
        ("launch_tcb", ours.launch_tcb(), theirs.launch_tcb),
    ] {
        let engine =
            TcbVersion::decode(raw_tcb, product).unwrap_or_else(|e| panic!("{name}: {field} {raw_tcb:#018x}: {e}"));
        assert_eq!(tcb_tuple(engine), own_decode(raw_tcb, product), "{name}: {field} (engine vs own decode)");
        assert_eq!(tcb_tuple(engine), sev_tcb_tuple(sev_tcb), "{name}: {field} (engine vs sev)");
        assert_eq!(engine.encode(product), raw_tcb, "{name}: {field} re-encode");
    }

    let (cur, com) = (ours.current_version(), ours.committed_version());
    assert_eq!((cur.major, cur.minor, cur.build), (theirs.current.major, theirs.current.minor, theirs.current.build));
    assert_eq!(
        (com.major, com.minor, com.build),
        (theirs.committed.major, theirs.committed.minor, theirs.committed.build)
    );

    assert_eq!(ours.launch_mit_vector(), theirs.launch_mit_vector, "{name}: launch_mit_vector");
    assert_eq!(ours.current_mit_vector(), theirs.current_mit_vector, "{name}: current_mit_vector");

    // Signature: raw little-endian components, and our big-endian fixed form.
    assert_eq!(&raw.signature_r, theirs.signature.r(), "{name}: signature r");
    assert_eq!(&raw.signature_s, theirs.signature.s(), "{name}: signature s");
    let fixed = ours.signature_fixed();
    let be = |le: &[u8; 72]| le[..48].iter().rev().copied().collect::<Vec<u8>>();
    assert_eq!(fixed[..48], be(theirs.signature.r())[..], "{name}: signature r (big-endian)");
    assert_eq!(fixed[48..], be(theirs.signature.s())[..], "{name}: signature s (big-endian)");
}

#[test]
fn engine_and_sev_agree_on_every_real_report() {
    let Some(dir) = common::testdata() else { return };
    let all = reports(&dir);
    assert_eq!(all.len(), 9);
    let mut patched = Vec::new();
    for (name, bytes) in &all {
        assert_eq!(bytes.len(), REPORT_SIZE, "{name}: size");
        let ours = Report::parse(bytes).unwrap_or_else(|e| panic!("{name}: engine parse: {e}"));
        let (theirs, chip_id_patched) = sev_parse(name, bytes);
        compare(name, &ours, &theirs, chip_id_patched);
        if chip_id_patched {
            patched.push(*name);
        }
    }
    // Exactly the VLEK-signed version-2 report has a zero CHIP_ID that sev cannot parse.
    assert_eq!(patched, ["constellation-snp-vlek"]);
}

/// The parsers also agree on what they reject: sev has no reserved-field checks, so everything it
/// refuses the engine must refuse too (version 0/1, truncation).
#[test]
fn engine_rejects_what_sev_rejects() {
    let Some(dir) = common::testdata() else { return };
    let good = common::read(&dir, "go-sev-guest/attestation.bin");
    for version in [0u32, 1] {
        let mut b = good.clone();
        b[..4].copy_from_slice(&version.to_le_bytes());
        assert!(AttestationReport::from_bytes(&b).is_err(), "sev accepted version {version}");
        assert!(Report::parse(&b).is_err(), "engine accepted version {version}");
    }
    for len in [0, 4, REPORT_SIZE - 1, REPORT_SIZE + 1] {
        let mut b = good.clone();
        b.resize(len, 0);
        assert!(AttestationReport::from_bytes(&b).is_err(), "sev accepted {len} bytes");
        assert!(Report::parse(&b).is_err(), "engine accepted {len} bytes");
    }
}
