//! proptest: every parser entry point never panics on arbitrary input or on mutations (byte changes,
//! truncations, extensions) of valid input, and a parser that succeeds has consumed exactly its input.
//!
//! Valid seeds: AMD's embedded ARK/ASK/ASVK certificates (always available), the real VCEKs/VLEKs, PEM files
//! and HCL report from `../shared/testdata` when present, and a CRL generated with the test PKI.

mod common;

use attest_engine::azure::HclReport;
use attest_engine::snp::{Product, REPORT_SIZE, Report, SnpPolicy};
use attest_engine::x509::pem::parse_pem;
use attest_engine::x509::{Certificate, Crl};
use attest_test_support::{CrlSpec, Product as TsProduct, SigningKeyKind, TestPki};
use proptest::prelude::*;
use std::sync::LazyLock;

struct Seeds {
    certs: Vec<Vec<u8>>,
    crls: Vec<Vec<u8>>,
    pems: Vec<Vec<u8>>,
    reports: Vec<Vec<u8>>,
    hcl: Vec<Vec<u8>>,
    policies: Vec<String>,
}

static SEEDS: LazyLock<Seeds> = LazyLock::new(|| {
    let mut certs: Vec<Vec<u8>> = Product::ALL
        .iter()
        .flat_map(|p| {
            let a = p.trust_anchors();
            [a.ark.to_vec(), a.ask.to_vec(), a.asvk.to_vec()]
        })
        .collect();
    let pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let crls = vec![
        pki.issue_crl(&CrlSpec::new()),
        pki.issue_crl(&CrlSpec::new().revoke([1, 0, 1], 1_600_000_000).revoke([0x80, 0, 0, 7], 1_700_000_000)),
        pki.issue_crl(&CrlSpec::new().no_next_update().crl_number(None).authority_key_identifier(false)),
    ];
    let mut pems = vec![pki.chain_pem().into_bytes()];
    let mut reports = Vec::new();
    let mut hcl = Vec::new();
    if let Some(dir) = common::testdata() {
        for f in [
            "constellation-azure-snp/vcek.cert",
            "virtee-sev/vcek_milan.der",
            "virtee-sev/vcek_turin.der",
            "go-sev-guest/vcek.testcer",
            "trustee-snp/test-vcek-invalid-legacy.der",
            "trustee-snp/test-vcek-invalid-new.der",
        ] {
            certs.push(common::read(&dir, f));
        }
        certs.extend(common::certs(&dir, "constellation-aws-snp/vlek.pem"));
        for f in
            ["constellation-azure-snp/certchain.pem", "constellation-aws-snp/vlek.pem", "azure-cvm-tooling/certs.pem"]
        {
            pems.push(common::read(&dir, f));
        }
        let hcl_report = common::read(&dir, "trustee-az-snp-vtpm/hcl-report.bin");
        reports.push(hcl_report[32..32 + REPORT_SIZE].to_vec());
        reports.push(common::read(&dir, "constellation-aws-snp/report.bin")[..REPORT_SIZE].to_vec());
        reports.push(common::read(&dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec());
        hcl.push(hcl_report);
        hcl.push(common::read(&dir, "azure-cvm-tooling/hcl-report-snp.bin"));
        hcl.push(common::read(&dir, "azure-cvm-tooling/hcl-report-tdx.bin"));
    }
    reports.push(attest_test_support::ReportBuilder::new().version(2).build_unsigned().to_vec());
    let policies = vec![
        String::new(),
        r#"
        measurements = ["5677f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841"]
        allow_provisional_firmware = true
        revocation = "require"
        min_reported_tcb = { bl = 2, tee = 0, snp = 6, ucode = 93 }
        products = ["Milan"]
        required_platform_info = ["smt_enabled"]
        min_abi = { major = 1, minor = 51 }
        vmpl = 0
        "#
        .to_owned(),
        r#"{"products": ["Genoa"], "allow_debug": true, "min_guest_svn": 3,
            "host_data": "0000000000000000000000000000000000000000000000000000000000000001",
            "forbidden_platform_info": ["tsme_enabled"], "min_current_tcb": {"fmc": 1, "bl": 3, "tee": 0, "snp": 4, "ucode": 72}}"#
            .to_owned(),
    ];
    Seeds { certs, crls, pems, reports, hcl, policies }
});

use common::mutation;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..1600)
}

/// Exercises every accessor of a parsed certificate; none may panic.
fn touch_certificate(input: &[u8], c: &Certificate<'_>) {
    assert_eq!(c.der(), input, "a parsed certificate spans its whole input");
    assert!(c.tbs().len() < input.len());
    let _ = (c.serial(), c.issuer().common_name(), c.subject().common_name(), c.not_before(), c.not_after());
    let _ = (c.public_key(), c.is_ca(), c.key_usage(), c.may_sign_certificates(), c.may_sign_crls());
    let _ = c.path_len_constraint();
    if let Some(eku) = c.extended_key_usage() {
        assert!(eku.purposes().count() >= 1);
    }
    let _ = (c.signature_algorithm(), c.signature(), c.spki());
    for e in c.extensions() {
        let _ = e;
    }
    let _ = c.amd_extensions();
    let mut longer = input.to_vec();
    longer.push(0);
    assert!(matches!(Certificate::from_der(&longer), Err(attest_engine::Error::TrailingData { extra: 1, .. })));
}

fn touch_crl(input: &[u8], c: &Crl<'_>) {
    let _ = (c.issuer().common_name(), c.this_update(), c.next_update(), c.signature_algorithm(), c.signature());
    assert_eq!(c.revoked_serials().count(), c.len());
    assert_eq!(c.is_empty(), c.revoked_serials().next().is_none());
    assert!(c.tbs().len() < input.len());
    let _ = c.is_revoked(&[1, 0, 1]);
    let mut longer = input.to_vec();
    longer.push(0);
    assert!(matches!(Crl::from_der(&longer), Err(attest_engine::Error::TrailingData { extra: 1, .. })));
}

fn touch_report(input: &[u8], r: &Report<'_>) {
    assert_eq!(input.len(), REPORT_SIZE);
    assert_eq!(r.as_bytes(), input);
    let _ = (r.version(), r.guest_svn(), r.policy(), r.signing_key(), r.cpuid_product(), r.signature_fixed());
    let _ = (r.current_version(), r.committed_version(), r.launch_mit_vector(), r.current_mit_vector());
    for tcb in [r.reported_tcb(), r.current_tcb(), r.committed_tcb(), r.launch_tcb()] {
        for p in Product::ALL {
            if let Ok(t) = attest_engine::snp::TcbVersion::decode(tcb, p) {
                assert_eq!(t.encode(p), tcb, "TCB round trip");
            }
        }
    }
}

fn touch_hcl(input: &[u8], h: &HclReport<'_>) {
    assert_eq!(h.hardware_report().len(), REPORT_SIZE);
    assert!(h.variable_data().len() <= input.len());
    if let Some(r) = h.snp_report()
        && let Ok(report) = Report::parse(r)
    {
        touch_report(r, &report);
    }
    let _ = h.check_binding(attest_engine::crypto::default_provider());
}

fn touch_policy(p: &SnpPolicy) {
    // Round trips through both encodings.
    let json = serde_json::to_string(p).unwrap();
    assert_eq!(&SnpPolicy::from_json(&json).unwrap(), p, "{json}");
    let toml_text = toml::to_string(p).unwrap();
    assert_eq!(&SnpPolicy::from_toml(&toml_text).unwrap(), p, "{toml_text}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn report_parse_arbitrary(b in proptest::collection::vec(any::<u8>(), REPORT_SIZE - 2..REPORT_SIZE + 2)) {
        if let Ok(r) = Report::parse(&b) {
            touch_report(&b, &r);
        }
    }

    #[test]
    fn report_parse_mutated(m in mutation()) {
        let input = m.apply(&SEEDS.reports);
        match Report::parse(&input) {
            Ok(r) => touch_report(&input, &r),
            Err(e) => {
                let by_length =
                    matches!(e, attest_engine::Error::Truncated { .. } | attest_engine::Error::TrailingData { .. });
                prop_assert!(input.len() == REPORT_SIZE || by_length, "{}", e);
            }
        }
    }

    #[test]
    fn certificate_arbitrary(b in bytes()) {
        if let Ok(c) = Certificate::from_der(&b) {
            touch_certificate(&b, &c);
        }
    }

    #[test]
    fn certificate_mutated(m in mutation()) {
        let input = m.apply(&SEEDS.certs);
        if let Ok(c) = Certificate::from_der(&input) {
            touch_certificate(&input, &c);
        }
    }

    #[test]
    fn certificate_strict_prefixes_fail(pick in any::<usize>(), cut in any::<usize>()) {
        let der = &SEEDS.certs[pick % SEEDS.certs.len()];
        prop_assert!(Certificate::from_der(&der[..cut % der.len()]).is_err());
    }

    #[test]
    fn crl_arbitrary(b in bytes()) {
        if let Ok(c) = Crl::from_der(&b) {
            touch_crl(&b, &c);
        }
    }

    #[test]
    fn crl_mutated(m in mutation()) {
        let input = m.apply(&SEEDS.crls);
        if let Ok(c) = Crl::from_der(&input) {
            touch_crl(&input, &c);
        }
    }

    #[test]
    fn crl_strict_prefixes_fail(pick in any::<usize>(), cut in any::<usize>()) {
        let der = &SEEDS.crls[pick % SEEDS.crls.len()];
        prop_assert!(Crl::from_der(&der[..cut % der.len()]).is_err());
    }

    #[test]
    fn pem_arbitrary(b in bytes()) {
        let _ = parse_pem(&b);
        let _ = attest_engine::x509::pem::certificates_from_pem_or_der(&b);
    }

    #[test]
    fn pem_arbitrary_text(s in "(-----(BEGIN|END) [A-Z ]{0,12}-----\n|[A-Za-z0-9+/=: \r\t]{0,80}\n){0,12}") {
        if let Ok(blocks) = parse_pem(s.as_bytes()) {
            prop_assert!(blocks.len() <= attest_engine::x509::pem::MAX_PEM_BLOCKS);
        }
    }

    #[test]
    fn pem_mutated(m in mutation()) {
        let input = m.apply(&SEEDS.pems);
        if let Ok(blocks) = parse_pem(&input) {
            for b in blocks.iter().filter(|b| b.label == "CERTIFICATE") {
                if let Ok(c) = Certificate::from_der(&b.der) {
                    touch_certificate(&b.der, &c);
                }
            }
        }
    }

    #[test]
    fn pem_round_trip(pick in any::<usize>()) {
        let der = &SEEDS.certs[pick % SEEDS.certs.len()];
        let blocks = parse_pem(attest_test_support::pem("CERTIFICATE", der).as_bytes()).unwrap();
        prop_assert_eq!(blocks.len(), 1);
        prop_assert_eq!(&blocks[0].der, der);
    }

    #[test]
    fn hcl_arbitrary(b in proptest::collection::vec(any::<u8>(), 0..3000), magic in any::<bool>()) {
        let mut b = b;
        if magic && b.len() >= 4 {
            b[..4].copy_from_slice(b"HCLA");
        }
        if let Ok(h) = HclReport::parse(&b) {
            touch_hcl(&b, &h);
        }
    }

    #[test]
    fn hcl_mutated(m in mutation()) {
        prop_assume!(!SEEDS.hcl.is_empty());
        let input = m.apply(&SEEDS.hcl);
        if let Ok(h) = HclReport::parse(&input) {
            touch_hcl(&input, &h);
        }
    }

    #[test]
    fn policy_arbitrary_text(s in "\\PC{0,200}") {
        let _ = SnpPolicy::from_toml(&s);
        let _ = SnpPolicy::from_json(&s);
        let _ = SnpPolicy::from_text(&s);
    }

    #[test]
    fn policy_mutated(m in mutation()) {
        let seeds: Vec<Vec<u8>> = SEEDS.policies.iter().map(|p| p.clone().into_bytes()).collect();
        let input = m.apply(&seeds);
        let text = String::from_utf8_lossy(&input);
        for p in [SnpPolicy::from_toml(&text), SnpPolicy::from_json(&text)].into_iter().flatten() {
            touch_policy(&p);
        }
    }
}

#[test]
fn seeds_are_valid() {
    let s = &*SEEDS;
    for c in &s.certs {
        Certificate::from_der(c).unwrap();
    }
    for c in &s.crls {
        Crl::from_der(c).unwrap();
    }
    for p in &s.pems {
        assert!(!parse_pem(p).unwrap().is_empty());
    }
    for r in &s.reports {
        Report::parse(r).unwrap();
    }
    for h in &s.hcl {
        HclReport::parse(h).unwrap();
    }
    for p in &s.policies {
        touch_policy(&SnpPolicy::from_text(p).unwrap());
    }
}
