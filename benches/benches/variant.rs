//! Attestation documents through the engine's `Validator`, per variant: what a verifier spends on one node's
//! document after parsing (the SNP chain warm in the verifier's cache, as in a running service).
//!
//! Group `variant_validate`: `qemu-vtpm` (P-256 AK from the registry), `aws-sev-snp` (VLEK-signed report
//! binding the AK and the nonce, P-256 AK), `azure-sev-snp` (HCL report under a VCEK, RSA-2048 AK from the
//! runtime data). Their cryptographic floors are the `tpm_floor`, `snp_floor` and `azure_floor` groups of the
//! other benches (one P-256 quote signature; plus one P-384 report signature; P-384 + RSA-2048).
//!
//! Inputs are generated (a software TPM and an AMD-like test PKI from `attest-test-support`), so the
//! benchmark needs no testdata and measures the same work on any machine.

use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::policy::Hex;
use attest_engine::snp::{OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::{
    AkBasis, Document, PcrPolicy, SnpEvidence, StaticAkRegistry, TpmEvidence, Validator, Variant, snp_vtpm_report_data,
};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, hcl_report, hcl_report_data, runtime_json, sha256};
use attest_test_support::{IntermediateSpec, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki};
use criterion::Criterion;
use std::borrow::Cow;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const NONCE: &[u8] = b"verifier nonce 0123456789abcdef!";
const USER_DATA: &[u8] = &[0x5A; 32];
const INSTANCE_INFO: &[u8] = br#"{"instance":"vm-1"}"#;

/// A document's parts, owned.
struct Evidence {
    variant: Variant,
    ak_public: Vec<u8>,
    attest: Vec<u8>,
    signature: Vec<u8>,
    pcrs: PcrBank,
    snp_report: Vec<u8>,
    leaf: Vec<u8>,
    hcl_report: Vec<u8>,
}

impl Evidence {
    fn quote(variant: Variant, ak: &SoftAk, pcrs: &PcrBank) -> Self {
        let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
        let q = ak.quote(&QuoteSpec::new(&extra, pcrs, 0xFFFF));
        Evidence {
            variant,
            ak_public: ak.tpm2b_public(),
            attest: q.attest,
            signature: q.signature,
            pcrs: *pcrs,
            snp_report: Vec::new(),
            leaf: Vec::new(),
            hcl_report: Vec::new(),
        }
    }

    fn validate(&self, v: &Validator, pcrs: &PcrValues<'_>, time: UnixTime) {
        let doc = Document {
            variant: self.variant.name(),
            tpm: Some(TpmEvidence {
                ak_public: &self.ak_public,
                attest: &self.attest,
                signature: QuoteSignature::Tpmt(&self.signature),
                pcrs,
                event_log: &[],
                ak_certificate: &[],
            }),
            snp: (!self.leaf.is_empty()).then_some(SnpEvidence {
                report: &self.snp_report,
                leaf: &self.leaf,
                intermediate: None,
                root: None,
            }),
            hcl_report: &self.hcl_report,
            instance_info: INSTANCE_INFO,
            user_data: USER_DATA,
            td_quote: &[],
            td_event_log: &[],
        };
        v.validate(black_box(&doc), NONCE, time).unwrap();
    }

    fn pcr_values(&self) -> PcrValues<'_> {
        let mut values = PcrValues::new();
        for (i, v) in self.pcrs.iter().enumerate() {
            values.set(HashAlgorithm::Sha256, i, v).unwrap();
        }
        values
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}

fn bench(c: &mut Criterion) {
    let time = UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap();
    let mut pcrs: PcrBank = [[0; 32]; 24];
    for (i, p) in pcrs.iter_mut().enumerate() {
        *p = sha256(&[b"pcr", &[i as u8]]);
    }
    let ecc = SoftAk::ecc_p256();
    let rsa = SoftAk::rsa();

    // One Milan anchor holding both intermediates (VCEK and VLEK chains).
    let vcek_pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek);
    let vlek_pki = TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek);
    let asvk = vlek_pki.issue_intermediate_signed_by(&IntermediateSpec::new(), &vcek_pki);
    let vcek = vcek_pki.issue_leaf(&LeafSpec::new());
    let vlek = vlek_pki.issue_leaf(&LeafSpec::new());
    let snp = Arc::new(SnpVerifier::with_trust_anchors(
        default_provider(),
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(vcek_pki.ark_der().to_vec()),
            ask: Some(Cow::Owned(vcek_pki.ask_der().to_vec())),
            asvk: Some(Cow::Owned(asvk)),
        }],
    ));
    let policy = SnpPolicy { measurements: vec![Hex([0; 48])], ..SnpPolicy::default() };
    let registry = Arc::new(StaticAkRegistry(vec![(ecc.tpmt_digest(), AkBasis::Pinned)]));

    let qemu = Evidence::quote(Variant::QemuVtpm, &ecc, &pcrs);
    let qemu_v = Validator::new(Variant::QemuVtpm, Arc::clone(&snp), policy.clone(), PcrPolicy::default())
        .with_ak_registry(registry);

    let mut aws = Evidence::quote(Variant::AwsSevSnp, &ecc, &pcrs);
    let quote_nonce = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
    let binding = snp_vtpm_report_data(default_provider(), &aws.ak_public, &quote_nonce);
    aws.snp_report = ReportBuilder::for_leaf(&vlek).report_data(binding).sign(&vlek).to_vec();
    aws.leaf.clone_from(&vlek.der);
    let aws_v = Validator::new(Variant::AwsSevSnp, Arc::clone(&snp), policy.clone(), PcrPolicy::default());

    let mut azure = Evidence::quote(Variant::AzureSevSnp, &rsa, &pcrs);
    let json = runtime_json(&[&rsa.jwk()]);
    let report = ReportBuilder::for_leaf(&vcek).report_data(hcl_report_data(&json)).sign(&vcek);
    azure.hcl_report = hcl_report(&report, &json);
    azure.leaf.clone_from(&vcek.der);
    azure.ak_public = Vec::new();
    let azure_v = Validator::new(Variant::AzureSevSnp, Arc::clone(&snp), policy, PcrPolicy::default());

    let mut g = c.benchmark_group("variant_validate");
    g.measurement_time(Duration::from_secs(5));
    for (name, ev, v) in
        [("qemu-vtpm", &qemu, &qemu_v), ("aws-sev-snp", &aws, &aws_v), ("azure-sev-snp", &azure, &azure_v)]
    {
        let values = ev.pcr_values();
        ev.validate(v, &values, time); // warms the SNP chain cache
        g.bench_function(name, |b| b.iter(|| ev.validate(v, &values, time)));
    }
    g.finish();
}
