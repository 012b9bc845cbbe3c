//! Every SEV-SNP report, VCEK/VLEK and chain in `../shared/testdata` gets the outcome its README states.

mod common;

use attest_engine::azure::HclReport;
use attest_engine::error::{CertRole, Error};
use attest_engine::snp::{ChainRequest, Check, Product, REPORT_SIZE, Report, SnpPolicy, SnpRequest, SnpVerifier};
use attest_engine::{Outcome, UnixTime};
use std::path::Path;

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

fn lenient() -> SnpPolicy {
    SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() }
}

struct Vector {
    report: Vec<u8>,
    certs: Vec<Vec<u8>>,
}

fn load(dir: &Path, report: &str, certs: &[&str]) -> Vector {
    let raw = common::read(dir, report);
    let report = if Path::new(report).extension().is_some_and(|e| e.eq_ignore_ascii_case("hex")) {
        hex::decode(String::from_utf8(raw).unwrap().trim()).unwrap()
    } else if HclReport::looks_like(&raw) {
        HclReport::parse(&raw).unwrap().snp_report().unwrap().to_vec()
    } else {
        raw[..REPORT_SIZE].to_vec()
    };
    let certs = certs.iter().flat_map(|c| common::certs(dir, c)).collect();
    Vector { report, certs }
}

impl Vector {
    fn request(&self, time: UnixTime) -> SnpRequest<'_> {
        let mut r = SnpRequest::new(&self.report, &self.certs[0], time);
        r.intermediate = self.certs.get(1).map(Vec::as_slice);
        r.root = self.certs.get(2).map(Vec::as_slice);
        r
    }
}

#[test]
fn constellation_azure_milan_accepts() {
    let Some(dir) = common::testdata() else { return };
    let v = load(
        &dir,
        "constellation-azure-snp/attestation.bin",
        &["constellation-azure-snp/vcek.cert", "constellation-azure-snp/certchain.pem"],
    );
    // The PEM from THIM and the DER from KDS are the same certificate.
    assert_eq!(common::certs(&dir, "constellation-azure-snp/vcek.pem")[0], v.certs[0]);
    let runtime = common::read(&dir, "constellation-azure-snp/runtimedata.bin");
    let expected_rd = attest_engine::azure::hcl_report_data(attest_engine::crypto::default_provider(), &runtime);
    let mut req = v.request(at("2025-06-01"));
    req.report_data = Some(&expected_rd);
    let verifier = SnpVerifier::new();
    let ok = verifier.verify(&req, &SnpPolicy::default()).unwrap();
    assert_eq!(ok.product(), Product::Milan);
    assert_eq!(ok.signer(), CertRole::Vcek);
    assert_eq!(ok.reported_tcb().to_string(), "bl=2 tee=0 snp=6 ucode=93");
    assert_eq!(ok.verdict().outcome(Check::ReportSignature), Outcome::Passed);
    assert_eq!(ok.verdict().outcome(Check::ChipIdBinding), Outcome::Passed);
    assert_eq!(ok.verdict().outcome(Check::ReportData), Outcome::Passed);
    assert_eq!(ok.verdict().outcome(Check::Measurement), Outcome::Waived);
    assert!(!ok.cache_hit());
    assert!(ok.verdict().iter().all(|(_, o)| o != Outcome::NotRun), "{:?}", ok.verdict());
    // Warm: served from the cache.
    assert!(verifier.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
    // Constellation's own expectations.
    let p = SnpPolicy::from_toml(
        r#"
        measurements = ["5677f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841"]
        id_key_digests = ["57e229e0ffe5fa92d0faddff6cae0e61c926fc9ef9afd20a8b8cfcf7129db9338cbe5bf3f6987733a2bf65d06dc38fc1"]
        min_launch_tcb = { bl = 2, tee = 0, snp = 6, ucode = 93 }
        "#,
    )
    .unwrap();
    let ok = verifier.verify(&req, &p).unwrap();
    assert_eq!(ok.verdict().outcome(Check::Measurement), Outcome::Passed);
    assert_eq!(ok.verdict().outcome(Check::IdKeyDigest), Outcome::Passed);
    // A wrong nonce is refused with the field named.
    let wrong = [1u8; 64];
    req.report_data = Some(&wrong);
    let err = verifier.verify(&req, &SnpPolicy::default()).unwrap_err();
    assert_eq!(err.check(), Some(Check::ReportData), "{err}");
    // An expected value of the wrong length is a caller error, never padded.
    req.report_data = Some(&wrong[..32]);
    assert!(matches!(verifier.verify(&req, &SnpPolicy::default()), Err(Error::Misuse { .. })));
}

#[test]
fn constellation_azure_runtime_data_binding() {
    let Some(dir) = common::testdata() else { return };
    let raw = common::read(&dir, "constellation-azure-snp/attestation.bin");
    let runtime = common::read(&dir, "constellation-azure-snp/runtimedata.bin");
    let report = Report::parse(&raw[..REPORT_SIZE]).unwrap();
    let digest = attest_engine::crypto::default_provider().digests.sha256(&runtime);
    assert_eq!(&report.report_data()[..32], &digest);
    assert_eq!(&report.report_data()[32..], &[0u8; 32]);
    // The engine's one definition of the binding says the same, all 64 bytes.
    assert_eq!(
        report.report_data(),
        &attest_engine::azure::hcl_report_data(attest_engine::crypto::default_provider(), &runtime)
    );
}

#[test]
fn virtee_milan_accepts_and_rejects_policy_bit_flip() {
    let Some(dir) = common::testdata() else { return };
    let v = load(&dir, "virtee-sev/report_milan.hex", &["virtee-sev/vcek_milan.der", "virtee-sev/cert_chain_milan"]);
    let verifier = SnpVerifier::new();
    let ok = verifier.verify(&v.request(at("2025-01-01")), &SnpPolicy::default()).unwrap();
    assert_eq!(ok.reported_tcb().to_string(), "bl=3 tee=0 snp=8 ucode=115");
    // Upstream negative: bit 7 of byte 21 (inside POLICY).
    let mut bad = v.report.clone();
    bad[21] ^= 0x80;
    let mut req = v.request(at("2025-01-01"));
    req.report = &bad;
    assert_eq!(verifier.verify(&req, &SnpPolicy::default()).unwrap_err(), Error::ReportSignatureInvalid);
    // Upstream negative: byte 40 of the VCEK flipped → chain fails.
    let mut vcek = v.certs[0].clone();
    vcek[40] ^= 0xff;
    let mut req = v.request(at("2025-01-01"));
    req.leaf = &vcek;
    assert!(verifier.verify(&req, &SnpPolicy::default()).is_err());
}

#[test]
fn go_sev_guest_debug_guest_needs_waiver() {
    let Some(dir) = common::testdata() else { return };
    let v = load(&dir, "go-sev-guest/attestation.bin", &["go-sev-guest/vcek.testcer"]);
    let verifier = SnpVerifier::new();
    let t = at("2022-09-24T01:00:00Z");
    let err = verifier.verify(&v.request(t), &SnpPolicy::default()).unwrap_err();
    assert_eq!(err.check(), Some(Check::Debug), "{err}");
    let p = SnpPolicy { allow_debug: true, ..SnpPolicy::default() };
    let mut req = v.request(t);
    let mut rd = [0u8; 64];
    rd[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
    req.report_data = Some(&rd);
    let ok = verifier.verify(&req, &p).unwrap();
    assert_eq!(ok.reported_tcb().to_string(), "bl=2 tee=0 snp=5 ucode=68");
    assert_eq!(ok.verdict().outcome(Check::Debug), Outcome::Waived);
    // Before the VCEK's notBefore.
    let err = verifier.verify(&v.request(at("2022-09-23")), &p).unwrap_err();
    assert!(matches!(err, Error::CertNotYetValid { role: CertRole::Vcek, .. }), "{err}");
}

#[test]
fn aws_vlek_report_expired_unless_time_inside_validity() {
    let Some(dir) = common::testdata() else { return };
    let v = load(
        &dir,
        "constellation-aws-snp/report.bin",
        &["constellation-aws-snp/vlek.pem", "constellation-aws-snp/certchain.pem"],
    );
    assert_eq!(common::read(&dir, "constellation-aws-snp/report.txt").len(), 1581);
    let verifier = SnpVerifier::new();
    let err = verifier.verify(&v.request(at("2026-01-01")), &lenient()).unwrap_err();
    assert!(matches!(err, Error::CertExpired { role: CertRole::Vlek, .. }), "{err}");
    let ak_digest = hex::decode("87ab7caf510e1b3520dc3cceb64ee44128e10976fb0d3fc5e274699d8aaf506154af4c1de0a026b49fdf861e9ac75551551b3534d1c61369a3b08f5baed0db2f").unwrap();
    let mut req = v.request(at("2025-06-01"));
    req.report_data = Some(&ak_digest);
    let ok = verifier.verify(&req, &lenient()).unwrap();
    assert_eq!(ok.signer(), CertRole::Vlek);
    assert_eq!(ok.product(), Product::Milan);
    assert_eq!(ok.reported_tcb().to_string(), "bl=4 tee=0 snp=24 ucode=217");
    assert_eq!(ok.verdict().outcome(Check::ChipIdBinding), Outcome::Waived);
    // The firmware is provisional (current ucode 220, committed 219): the default policy says so.
    let err = verifier.verify(&req, &SnpPolicy::default()).unwrap_err();
    assert_eq!(err.check(), Some(Check::ProvisionalFirmware), "{err}");
    // Upstream negatives: zeroed report_data, signature[0]++.
    let mut bad = v.report.clone();
    bad[0x50..0x90].fill(0);
    req.report = &bad;
    assert_eq!(verifier.verify(&req, &lenient()).unwrap_err(), Error::ReportSignatureInvalid);
    let mut bad = v.report.clone();
    bad[0x2A0] = bad[0x2A0].wrapping_add(1);
    req.report = &bad;
    assert_eq!(verifier.verify(&req, &lenient()).unwrap_err(), Error::ReportSignatureInvalid);
    // A VCEK chain (ASK) for a VLEK-signed report is refused.
    let ask = common::certs(&dir, "amd-kds-roots/ask_ark_milan.pem");
    let mut req = v.request(at("2025-06-01"));
    req.intermediate = Some(&ask[0]);
    assert!(verifier.verify(&req, &lenient()).is_err());
}

#[test]
fn constellation_vlek_report_does_not_verify() {
    let Some(dir) = common::testdata() else { return };
    let v = load(
        &dir,
        "constellation-snp-vlek/vlek-report.bin",
        &["constellation-snp-vlek/vlek.pem", "constellation-snp-vlek/vlekcertchain.pem"],
    );
    let verifier = SnpVerifier::new();
    let err = verifier.verify(&v.request(at("2024-01-01")), &lenient()).unwrap_err();
    assert_eq!(err, Error::ReportSignatureInvalid);
    let err = verifier.verify(&v.request(at("2026-01-01")), &lenient()).unwrap_err();
    assert!(matches!(err, Error::CertExpired { role: CertRole::Vlek, .. }), "{err}");
    let r = Report::parse(&v.report).unwrap();
    assert_eq!(r.id_key_digest(), &[0u8; 48]);
}

#[test]
fn trustee_azure_hcl_report_accepts() {
    let Some(dir) = common::testdata() else { return };
    let v = load(&dir, "trustee-az-snp-vtpm/hcl-report.bin", &["trustee-az-snp-vtpm/vcek.pem"]);
    let verifier = SnpVerifier::new();
    let ok = verifier.verify(&v.request(at("2025-01-01")), &lenient()).unwrap();
    assert_eq!(ok.report().guest_svn(), 5);
    let hcl_bytes = common::read(&dir, "trustee-az-snp-vtpm/hcl-report.bin");
    let hcl = HclReport::parse(&hcl_bytes).unwrap();
    hcl.check_binding(attest_engine::crypto::default_provider()).unwrap();
    // Upstream negative: byte 0x06e0 += 1 (inside the variable data) breaks the binding.
    let mut bad = hcl_bytes.clone();
    bad[0x06e0] = bad[0x06e0].wrapping_add(1);
    assert!(HclReport::parse(&bad).unwrap().check_binding(attest_engine::crypto::default_provider()).is_err());
    // Upstream negative: byte 0x01a6 (report VERSION area, inside the SNP report) set to 0.
    let mut bad = hcl_bytes.clone();
    bad[0x01a6] = 0;
    let inner = HclReport::parse(&bad).unwrap().snp_report().unwrap().to_vec();
    let mut req = v.request(at("2025-01-01"));
    req.report = &inner;
    assert!(verifier.verify(&req, &lenient()).is_err());
}

fn json_field<'a>(v: &'a serde_json::Value, k: &str) -> &'a serde_json::Value {
    v.get(k).unwrap_or_else(|| panic!("missing {k}"))
}

#[test]
fn trustee_evidence_v0_v1_and_genoa_accept() {
    let Some(dir) = common::testdata() else { return };
    let verifier = SnpVerifier::new();
    // v0: {report: [bytes], vcek: PEM}
    for (file, product, tcb) in [
        ("trustee-az-snp-vtpm/evidence-v0.json", Product::Milan, "bl=4 tee=0 snp=24 ucode=219"),
        ("trustee-az-snp-vtpm/evidence-genoa.json", Product::Genoa, "bl=10 tee=0 snp=23 ucode=84"),
    ] {
        let ev: serde_json::Value = serde_json::from_slice(&common::read(&dir, file)).unwrap();
        let hcl: Vec<u8> =
            json_field(&ev, "report").as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
        let vcek = attest_engine::x509::pem::certificates_from_pem_or_der(
            json_field(&ev, "vcek").as_str().unwrap().as_bytes(),
        )
        .unwrap();
        let report = HclReport::parse(&hcl).unwrap().snp_report().unwrap().to_vec();
        let req = SnpRequest::new(&report, &vcek[0], at("2025-06-01"));
        let ok = verifier.verify(&req, &lenient()).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(ok.product(), product, "{file}");
        assert_eq!(ok.report().version(), 3);
        assert_eq!(ok.reported_tcb().to_string(), tcb);
        HclReport::parse(&hcl).unwrap().check_binding(verifier.provider()).unwrap();
    }
    // The Genoa VCEK file equals the one inside the evidence, and the product must match: a Genoa report
    // with a caller-asserted Milan is refused.
    let genoa_vcek = common::certs(&dir, "trustee-az-snp-vtpm/vcek-genoa.pem");
    let ev: serde_json::Value =
        serde_json::from_slice(&common::read(&dir, "trustee-az-snp-vtpm/evidence-genoa.json")).unwrap();
    let hcl: Vec<u8> =
        json_field(&ev, "report").as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
    let report = HclReport::parse(&hcl).unwrap().snp_report().unwrap().to_vec();
    let mut req = SnpRequest::new(&report, &genoa_vcek[0], at("2025-06-01"));
    req.product = Some(Product::Milan);
    assert!(matches!(verifier.verify(&req, &lenient()), Err(Error::ProductMismatch { .. })));
    // v1: {hcl_report: base64url, vcek: base64 DER}
    use base64::Engine as _;
    let ev: serde_json::Value =
        serde_json::from_slice(&common::read(&dir, "trustee-az-snp-vtpm/evidence-v1.json")).unwrap();
    let hcl = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(json_field(&ev, "hcl_report").as_str().unwrap().trim_end_matches('='))
        .unwrap();
    let vcek = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(json_field(&ev, "vcek").as_str().unwrap().trim_end_matches('='))
        .unwrap();
    let report = HclReport::parse(&hcl).unwrap().snp_report().unwrap().to_vec();
    let ok = verifier.verify(&SnpRequest::new(&report, &vcek, at("2025-06-01")), &lenient()).unwrap();
    assert_eq!(ok.report().guest_svn(), 10);
}

#[test]
fn azure_cvm_tooling_report_has_no_matching_vcek() {
    let Some(dir) = common::testdata() else { return };
    let v = load(&dir, "azure-cvm-tooling/hcl-report-snp.bin", &["azure-cvm-tooling/certs.pem"]);
    let verifier = SnpVerifier::new();
    let err = verifier.verify(&v.request(at("2025-01-01")), &lenient()).unwrap_err();
    assert!(matches!(err, Error::ChipIdMismatch { .. }), "{err}");
    // The chain itself is valid; using the ASK as the ARK is not.
    let chain = ChainRequest {
        leaf: &v.certs[0],
        intermediate: Some(&v.certs[1]),
        root: Some(&v.certs[2]),
        product: None,
        time: at("2025-01-01"),
    };
    let c = verifier.verify_chain_only(&chain, &SnpPolicy::default()).unwrap();
    assert_eq!(c.tcb.to_string(), "bl=3 tee=0 snp=8 ucode=115");
    let bad = ChainRequest { root: Some(&v.certs[1]), ..chain };
    assert!(matches!(
        verifier.verify_chain_only(&bad, &SnpPolicy::default()),
        Err(Error::UntrustedCertificate { role: CertRole::Ark, .. })
    ));
}

#[test]
fn turin_vcek_chain_is_valid() {
    let Some(dir) = common::testdata() else { return };
    let vcek = common::read(&dir, "virtee-sev/vcek_turin.der");
    let chain = common::certs(&dir, "virtee-sev/cert_chain_turin");
    assert_eq!(chain, common::certs(&dir, "amd-kds-roots/ask_ark_turin_vcek.pem"));
    let verifier = SnpVerifier::new();
    let req = ChainRequest {
        leaf: &vcek,
        intermediate: Some(&chain[0]),
        root: Some(&chain[1]),
        product: None,
        time: at("2025-06-01"),
    };
    let c = verifier.verify_chain_only(&req, &SnpPolicy::default()).unwrap();
    assert_eq!(c.product, Product::Turin);
    assert_eq!(c.tcb.to_string(), "fmc=0 bl=0 tee=0 snp=0 ucode=9");
    let ext = attest_engine::x509::Certificate::from_der(&vcek).unwrap().amd_extensions().unwrap();
    assert_eq!(ext.hw_id.unwrap(), hex::decode("1e550a8ee5cf9f4d").unwrap());
    // Cross-product: a Turin VCEK claimed as Milan.
    let bad = ChainRequest { product: Some(Product::Milan), ..req };
    assert!(matches!(verifier.verify_chain_only(&bad, &SnpPolicy::default()), Err(Error::ProductMismatch { .. })));
}

#[test]
fn trustee_invalid_vceks_parse_but_fail_the_chain() {
    let Some(dir) = common::testdata() else { return };
    let verifier = SnpVerifier::new();
    for (file, ucode) in
        [("trustee-snp/test-vcek-invalid-legacy.der", 0xa9), ("trustee-snp/test-vcek-invalid-new.der", 0x1e)]
    {
        let der = common::read(&dir, file);
        let cert = attest_engine::x509::Certificate::from_der(&der).unwrap();
        let ext = cert.amd_extensions().unwrap();
        let want: Vec<u8> = (0u8..64).collect();
        assert_eq!(ext.hw_id.unwrap(), &want[..], "{file}");
        assert_eq!(ext.ucode_spl, Some(ucode));
        let req = ChainRequest { leaf: &der, intermediate: None, root: None, product: None, time: at("2025-01-01") };
        let err = verifier.verify_chain_only(&req, &SnpPolicy::default()).unwrap_err();
        assert_eq!(err, Error::CertSignatureInvalid { role: CertRole::Vcek }, "{file}");
    }
}

#[test]
fn kds_root_chains_verify_and_cross_product_fails() {
    let Some(dir) = common::testdata() else { return };
    let verifier = SnpVerifier::new();
    for (p, vcek_file, vlek_file) in [
        (Product::Milan, "ask_ark_milan.pem", "ask_ark_milan_vlek.pem"),
        (Product::Genoa, "ask_ark_genoa.pem", "ask_ark_genoa_vlek.pem"),
        (Product::Turin, "ask_ark_turin_vcek.pem", "ask_ark_turin_vlek.pem"),
    ] {
        let a = p.trust_anchors();
        assert_eq!(common::certs(&dir, &format!("amd-kds-roots/{vcek_file}")), vec![a.ask.to_vec(), a.ark.to_vec()]);
        assert_eq!(common::certs(&dir, &format!("amd-kds-roots/{vlek_file}")), vec![a.asvk.to_vec(), a.ark.to_vec()]);
    }
    // The AWS VLEK with the Genoa ARK as root is refused.
    let vlek = common::certs(&dir, "constellation-aws-snp/vlek.pem");
    let genoa = Product::Genoa.trust_anchors();
    let req = ChainRequest {
        leaf: &vlek[0],
        intermediate: None,
        root: Some(genoa.ark),
        product: None,
        time: at("2025-06-01"),
    };
    assert!(verifier.verify_chain_only(&req, &SnpPolicy::default()).is_err());
}
