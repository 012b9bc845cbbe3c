//! The SNP and Azure issuers' document builders, without hardware: documents assembled from a software AK
//! (`attest_test_support::tpm::SoftAk`) and a generated AMD-like PKI validate in the engine, the same way the
//! device-backed issuers assemble them; and a replayed SNP report next to a fresh quote is refused. The
//! device paths run against simulated hardware in `attest-hwsim`'s tests and on real devices in `hwtests`.

use attest_attester::issuer::azure::{VtpmQuote, azure_document, tpmt_signature_rsassa_sha256};
use attest_attester::issuer::snp::{SnpCertificates, report_data, snp_document};
use attest_attester::issuer::{HwIssuerError, document, pcr_values};
use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::policy::Hex;
use attest_engine::snp::{CertKind, OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier, encode_cert_table};
use attest_engine::tpm::TpmSignature;
use attest_engine::tpm::alg::TPM_ALG_SHA256;
use attest_engine::variant::{AkBasis, PcrPolicy, Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, hcl_report, hcl_report_data, runtime_json};
use attest_test_support::{LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki};
use std::borrow::Cow;
use std::sync::Arc;

const NONCE: &[u8] = b"verifier nonce";
const USER_DATA: &[u8] = &[0x5A; 32];
const INSTANCE_INFO: &[u8] = b"instance";

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap()
}

fn pcrs() -> PcrBank {
    core::array::from_fn(|i| [i as u8; 32])
}

fn validator(pki: &TestPki, variant: Variant) -> Validator {
    let verifier = SnpVerifier::with_trust_anchors(
        default_provider(),
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(pki.ark_der().to_vec()),
            ask: Some(Cow::Owned(pki.ask_der().to_vec())),
            asvk: None,
        }],
    );
    // The launch is pinned, as the SNP variants require.
    let policy = SnpPolicy { measurements: vec![Hex(MEASUREMENT)], ..SnpPolicy::default() };
    Validator::new(variant, Arc::new(verifier), policy, PcrPolicy::default())
}

/// The launch measurement of the guest the test reports come from.
const MEASUREMENT: [u8; 48] = [0x4D; 48];

fn report_builder(leaf: &attest_test_support::Leaf) -> ReportBuilder {
    ReportBuilder::for_leaf(leaf).measurement(MEASUREMENT)
}

fn validate(v: &Validator, doc: &AttestationDocument) -> Result<AkBasis, attest_engine::Error> {
    let pcrs = pcr_values(doc).unwrap();
    v.validate(&document(doc, &pcrs), NONCE, now()).map(|ok| ok.ak_basis.expect("vTPM variants carry an AK"))
}

fn quote_nonce(nonce: &[u8]) -> [u8; 32] {
    Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, nonce)
}

/// What the `qemu-vtpm` issuer returns for `ak`: its TPM2B_PUBLIC and a quote of all 24 PCRs for `nonce`.
fn tpm_document_for(ak: &SoftAk, nonce: &[u8]) -> AttestationDocument {
    let values = pcrs();
    let extra = quote_nonce(nonce);
    let q = ak.quote(&QuoteSpec::new(&extra, &values, 0x00FF_FFFF));
    AttestationDocument {
        variant: Variant::QemuVtpm.name().to_owned(),
        tpm: Some(TpmEvidence {
            ak_public: ak.tpm2b_public(),
            quote_attest: q.attest,
            quote_signature: q.signature,
            pcrs: (0u32..)
                .zip(values)
                .map(|(index, v)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index, value: v.to_vec() })
                .collect(),
            ..TpmEvidence::default()
        }),
        instance_info: INSTANCE_INFO.to_vec(),
        user_data: USER_DATA.to_vec(),
        ..AttestationDocument::default()
    }
}

fn tpm_document(ak: &SoftAk) -> AttestationDocument {
    tpm_document_for(ak, NONCE)
}

#[test]
fn gcp_snp_document_validates() {
    let pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let vcek = pki.issue_leaf(&LeafSpec::new());
    for ak in [SoftAk::rsa(), SoftAk::ecc_p256()] {
        let report =
            report_builder(&vcek).report_data(report_data(&ak.tpm2b_public(), &quote_nonce(NONCE))).sign(&vcek);
        // The host's certificate table: the VCEK as DER, the ASK as PEM, plus a VLEK the GCP variant ignores.
        let ask_pem = attest_test_support::pem("CERTIFICATE", pki.ask_der());
        let table = encode_cert_table(&[
            (CertKind::Ask, ask_pem.as_bytes()),
            (CertKind::Vcek, &vcek.der),
            (CertKind::Vlek, b"not a certificate"),
        ]);
        let certs = SnpCertificates::from_cert_table(Variant::GcpSevSnp, &table).unwrap();
        assert_eq!(certs.leaf, vcek.der);
        assert_eq!(certs.intermediate, pki.ask_der());
        assert!(certs.root.is_empty());
        let doc = snp_document(Variant::GcpSevSnp, tpm_document(&ak), report.to_vec(), certs.clone()).unwrap();
        assert_eq!(doc.variant, "gcp-sev-snp");
        assert_eq!(validate(&validator(&pki, Variant::GcpSevSnp), &doc).unwrap(), AkBasis::HardwareReport);

        // A report that binds another AK is refused.
        let other = report_builder(&vcek)
            .report_data(report_data(&SoftAk::rsa().tpm2b_public(), &quote_nonce(NONCE)))
            .sign(&vcek);
        let doc = snp_document(Variant::GcpSevSnp, tpm_document(&ak), other.to_vec(), certs.clone()).unwrap();
        assert!(matches!(
            validate(&validator(&pki, Variant::GcpSevSnp), &doc),
            Err(attest_engine::Error::FreshnessBindingMismatch { .. })
        ));

        // Replay: a genuine report of an earlier attestation (another nonce) next to a fresh quote for this
        // nonce by the same AK — what a host holding the vTPM could produce — is refused.
        let earlier = report_builder(&vcek)
            .report_data(report_data(&ak.tpm2b_public(), &quote_nonce(b"an earlier nonce")))
            .sign(&vcek);
        let doc = snp_document(Variant::GcpSevSnp, tpm_document(&ak), earlier.to_vec(), certs.clone()).unwrap();
        assert!(matches!(
            validate(&validator(&pki, Variant::GcpSevSnp), &doc),
            Err(attest_engine::Error::FreshnessBindingMismatch { .. })
        ));
        // The same earlier report with its own, earlier quote validates only for the earlier nonce.
        let doc = snp_document(Variant::GcpSevSnp, tpm_document_for(&ak, b"an earlier nonce"), earlier.to_vec(), certs)
            .unwrap();
        assert!(validate(&validator(&pki, Variant::GcpSevSnp), &doc).is_err());
    }
}

#[test]
fn snp_document_needs_a_leaf_and_an_snp_variant() {
    let ak = SoftAk::ecc_p256();
    // AWS needs the VLEK: a table with only a VCEK has no leaf for it.
    let table = encode_cert_table(&[(CertKind::Vcek, &[0x30, 0x00])]);
    let certs = SnpCertificates::from_cert_table(Variant::AwsSevSnp, &table).unwrap();
    assert!(certs.leaf.is_empty());
    assert!(matches!(
        snp_document(Variant::AwsSevSnp, tpm_document(&ak), vec![0; 0x4A0], certs),
        Err(HwIssuerError::MissingLeafCertificate { want: "VLEK" })
    ));
    assert!(matches!(
        snp_document(Variant::AzureSevSnp, tpm_document(&ak), vec![], SnpCertificates::default()),
        Err(HwIssuerError::UnsupportedVariant(Variant::AzureSevSnp))
    ));
}

#[test]
fn azure_document_validates() {
    let pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let vcek = pki.issue_leaf(&LeafSpec::new());
    let ak = SoftAk::rsa();
    let json = runtime_json(&[&ak.jwk()]);
    let report = report_builder(&vcek).report_data(hcl_report_data(&json)).sign(&vcek);
    let hcl = hcl_report(&report, &json);
    let values = pcrs();
    let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
    let attest = ak.attest(&QuoteSpec::new(&extra, &values, 0x00FF_FFFF));
    let quote = VtpmQuote {
        signature: tpmt_signature_rsassa_sha256(&ak.sign_raw(&attest)).unwrap(),
        attest,
        pcrs: values.to_vec(),
    };
    assert!(quote.pcrs_match().unwrap());
    let doc = azure_document(hcl.clone(), vcek.der.clone(), quote.clone(), INSTANCE_INFO, USER_DATA).unwrap();
    let v = validator(&pki, Variant::AzureSevSnp);
    assert_eq!(validate(&v, &doc).unwrap(), AkBasis::HardwareReport);

    // PCRs read after a concurrent extend no longer match the quote.
    let mut stale = quote.clone();
    stale.pcrs[3][0] ^= 1;
    assert!(!stale.pcrs_match().unwrap());
    // Not an HCL report.
    assert!(matches!(
        azure_document(vec![0; 16], vcek.der.clone(), quote, INSTANCE_INFO, USER_DATA),
        Err(HwIssuerError::Engine(_))
    ));
}

#[test]
fn tpmt_signature_wrapping() {
    let sig = [0xA5; 256];
    let tpmt = tpmt_signature_rsassa_sha256(&sig).unwrap();
    match TpmSignature::parse(&tpmt).unwrap() {
        TpmSignature::Rsa { scheme, sig: s } => {
            assert_eq!(scheme.hash(), HashAlgorithm::Sha256);
            assert_eq!(s, &sig[..]);
        }
        other @ TpmSignature::Ecdsa { .. } => panic!("{other:?}"),
    }
}
