//! Writes the synthetic seed corpus of the `attestation_document` fuzz target: attestation documents of every
//! variant made with software AKs (`attest_test_support::tpm::SoftAk`) and a generated AMD-like PKI, for the
//! target's nonce and time. Nothing in them comes from real evidence, so they are committed under
//! `fuzz/corpus/attestation_document/`.
//!
//! ```sh
//! cargo run -p attest-attester --example fuzz_documents -- fuzz/corpus/attestation_document
//! ```
//!
//! Every document is validated before it is written: the `qemu-vtpm` ones with a registry that trusts their
//! AK (the fuzz target has such a validator), the SNP ones against the generated PKI (the fuzz target uses
//! AMD's real roots, so those get as far as the certificate chain).

use attest_attester::issuer::azure::{VtpmQuote, azure_document};
use attest_attester::issuer::snp::{SnpCertificates, report_data, snp_document};
use attest_attester::issuer::{document, pcr_values};
use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::snp::{OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::tpm::alg::TPM_ALG_SHA256;
use attest_engine::variant::{AkBasis, PcrExpectation, PcrPolicy, StaticAkRegistry, Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_test_support::tpm::{
    EventLogBuilder, PcrBank, QuoteSpec, SoftAk, hcl_report, hcl_report_data, runtime_json, sha256,
};
use attest_test_support::{IntermediateSpec, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki};
use prost::Message as _;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

/// The fuzz target's nonce (`fuzz/fuzz_targets/attestation_document.rs`).
const NONCE: &[u8] = b"attest-fuzz-nonce";
const USER_DATA: &[u8] = &[0x5A; 32];
const INSTANCE_INFO: &[u8] = br#"{"instance":"fuzz-seed"}"#;

/// PCRs 0–7 from `log`'s replay, 8–23 distinct.
fn pcrs(log: &EventLogBuilder) -> PcrBank {
    let mut pcrs = *log.pcrs();
    for (i, pcr) in pcrs.iter_mut().enumerate().skip(8) {
        *pcr = sha256(&[b"pcr", &[i as u8]]);
    }
    pcrs
}

fn tpm_document(variant: Variant, ak: &SoftAk, values: &PcrBank, selection: u32, log: &[u8]) -> AttestationDocument {
    let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
    let q = ak.quote(&QuoteSpec::new(&extra, values, selection));
    AttestationDocument {
        variant: variant.name().to_owned(),
        tpm: Some(TpmEvidence {
            ak_public: ak.tpm2b_public(),
            quote_attest: q.attest,
            quote_signature: q.signature,
            pcrs: (0u32..24)
                .filter(|i| selection & (1 << i) != 0)
                .map(|i| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index: i, value: values[i as usize].to_vec() })
                .collect(),
            event_log: log.to_vec(),
            ..TpmEvidence::default()
        }),
        instance_info: INSTANCE_INFO.to_vec(),
        user_data: USER_DATA.to_vec(),
        ..AttestationDocument::default()
    }
}

fn check(v: &Validator, doc: &AttestationDocument) {
    let pcrs = pcr_values(doc).expect("PCR values");
    let time = UnixTime::from_civil(2025, 6, 1, 0, 0, 0).expect("time");
    let ok = v.validate(&document(doc, &pcrs), NONCE, time).unwrap_or_else(|e| panic!("{}: {e}", doc.variant));
    assert_eq!(ok.event_log_replayed, !doc.tpm.as_ref().is_some_and(|t| t.event_log.is_empty()));
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus/attestation_document".into()));
    std::fs::create_dir_all(&out).expect("output directory");
    let boot = EventLogBuilder::typical_boot();
    let values = pcrs(&boot);
    let rsa = SoftAk::rsa();
    let ecc = SoftAk::ecc_p256();

    let milan = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let milan_vlek = TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek);
    let asvk = milan_vlek.issue_intermediate_signed_by(&IntermediateSpec::new(), &milan);
    let vcek = milan.issue_leaf(&LeafSpec::new());
    let vlek = milan_vlek.issue_leaf(&LeafSpec::new());
    let verifier = Arc::new(SnpVerifier::with_trust_anchors(
        default_provider(),
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(milan.ark_der().to_vec()),
            ask: Some(Cow::Owned(milan.ask_der().to_vec())),
            asvk: Some(Cow::Owned(asvk)),
        }],
    ));
    let validator =
        // Seeds: the launch measurement is not what the target explores, so it is waived explicitly.
        |variant| {
            let policy = SnpPolicy { dangerous_allow_unpinned_launch: true, ..SnpPolicy::default() };
            Validator::new(variant, Arc::clone(&verifier), policy, PcrPolicy::default())
        };
    let trusted = StaticAkRegistry(vec![(rsa.tpmt_digest(), AkBasis::Pinned), (ecc.tpmt_digest(), AkBasis::Pinned)]);
    // The fuzz target's PCR policy: PCR 0 warn-only (mismatching), PCR 8 enforced.
    let policy = PcrPolicy {
        entries: vec![
            PcrExpectation { index: 0, expected: [0; 32], warn_only: true },
            PcrExpectation { index: 8, expected: sha256(&[b"pcr", &[8]]), warn_only: false },
        ],
    };
    let qemu = Validator::new(Variant::QemuVtpm, Arc::clone(&verifier), SnpPolicy::default(), policy)
        .with_ak_registry(Arc::new(trusted));

    let mut docs: Vec<(&str, AttestationDocument)> = Vec::new();
    let doc = tpm_document(Variant::QemuVtpm, &rsa, &values, 0x00FF_FFFF, &[]);
    check(&qemu, &doc);
    docs.push(("synthetic-qemu-rsa", doc));
    let doc = tpm_document(Variant::QemuVtpm, &ecc, &values, 0x0000_FFFF, boot.bytes());
    check(&qemu, &doc);
    docs.push(("synthetic-qemu-ecc-eventlog", doc));

    for (name, variant, ak, leaf) in [
        ("synthetic-gcp-sev-snp", Variant::GcpSevSnp, &ecc, &vcek),
        ("synthetic-aws-sev-snp", Variant::AwsSevSnp, &rsa, &vlek),
    ] {
        let quote_nonce = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
        let report =
            ReportBuilder::for_leaf(leaf).report_data(report_data(&ak.tpm2b_public(), &quote_nonce)).sign(leaf);
        let certs = SnpCertificates { leaf: leaf.der.clone(), ..SnpCertificates::default() };
        let tpm = tpm_document(Variant::QemuVtpm, ak, &values, 0x00FF_FFFF, boot.bytes());
        let doc = snp_document(variant, tpm, report.to_vec(), certs).expect("SNP document");
        check(&validator(variant), &doc);
        docs.push((name, doc));
    }

    let json = runtime_json(&[&rsa.jwk()]);
    let report = ReportBuilder::for_leaf(&vcek).report_data(hcl_report_data(&json)).sign(&vcek);
    let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
    let attest = rsa.attest(&QuoteSpec::new(&extra, &values, 0x00FF_FFFF));
    let quote = VtpmQuote { signature: rsa.sign(&attest), attest, pcrs: values.to_vec() };
    let doc = azure_document(hcl_report(&report, &json), vcek.der.clone(), quote, INSTANCE_INFO, USER_DATA)
        .expect("Azure document");
    check(&validator(Variant::AzureSevSnp), &doc);
    docs.push(("synthetic-azure-sev-snp", doc));

    for (name, doc) in docs {
        let path = out.join(name);
        std::fs::write(&path, doc.encode_to_vec()).expect("write seed");
        println!("{}", path.display());
    }
}
