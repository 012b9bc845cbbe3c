//! Azure SNP vTPM bundles ([`verify_azure_snp`]) built from a generated AMD-like PKI and a software AK: the one
//! HCL binding (all 64 REPORT_DATA bytes), the VCEK requirement, and every bit of what the bundle's trust rests
//! on — the HCL report's signed SNP region (and its signature), the runtime data the report binds, and the
//! quote (TPMS_ATTEST and signature).

use attest_engine::UnixTime;
use attest_engine::azure::{AzureSnpRequest, HclReport, hcl_report_data, verify_azure_snp};
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::{Bytes, Error, PolicyViolation, Value};
use attest_engine::snp::{Check, OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_test_support::tpm::{self, PcrBank, QuoteSpec, SoftAk, hcl_report, runtime_json};
use attest_test_support::{
    IntermediateSpec, Leaf, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki,
};
use std::borrow::Cow;
use std::sync::LazyLock;

static AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::rsa);
static MILAN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));
static MILAN_VLEK: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek));
static VCEK: LazyLock<Leaf> = LazyLock::new(|| MILAN.issue_leaf(&LeafSpec::new()));
static VLEK: LazyLock<Leaf> = LazyLock::new(|| MILAN_VLEK.issue_leaf(&LeafSpec::new()));
/// One Milan anchor with the ASK and (re-certified by the same ARK) the ASVK.
static VERIFIER: LazyLock<SnpVerifier> = LazyLock::new(|| {
    let asvk = MILAN_VLEK.issue_intermediate_signed_by(&IntermediateSpec::new(), &MILAN);
    SnpVerifier::with_trust_anchors(
        default_provider(),
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(MILAN.ark_der().to_vec()),
            ask: Some(Cow::Owned(MILAN.ask_der().to_vec())),
            asvk: Some(Cow::Owned(asvk)),
        }],
    )
});

const NONCE: &[u8; 32] = b"bundle nonce 0123456789abcdef!!!";
/// Offsets in the HCL report: the SNP report, its signed part, and the runtime (variable) data.
const SNP: usize = 0x20;
const SNP_SIGNED_END: usize = SNP + 0x2A0;
const SNP_END: usize = SNP + 0x4A0;
const RUNTIME: usize = 0x4D4;

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap()
}

fn pcrs() -> PcrBank {
    core::array::from_fn(|i| tpm::sha256(&[b"azure pcr", &[i as u8]]))
}

/// A bundle: HCL report (binding `AK`'s runtime data, signed by `leaf`), the leaf, and a quote for `NONCE`.
#[derive(Clone)]
struct Bundle {
    hcl: Vec<u8>,
    leaf: Vec<u8>,
    attest: Vec<u8>,
    signature: Vec<u8>,
    pcrs: PcrBank,
}

impl Bundle {
    fn new(leaf: &Leaf, report: ReportBuilder, report_data: Option<[u8; 64]>) -> Self {
        let json = runtime_json(&[&AK.jwk()]);
        let rd = report_data.unwrap_or_else(|| hcl_report_data(default_provider(), &json));
        let report = report.report_data(rd).sign(leaf);
        let pcrs = pcrs();
        let q = AK.quote(&QuoteSpec::new(NONCE, &pcrs, 0xFF_FFFF));
        Self { hcl: hcl_report(&report, &json), leaf: leaf.der.clone(), attest: q.attest, signature: q.signature, pcrs }
    }

    fn vcek() -> Self {
        Self::new(&VCEK, ReportBuilder::for_leaf(&VCEK), None)
    }

    fn verify(&self) -> Result<(), Error> {
        let mut values = PcrValues::new();
        for (i, v) in self.pcrs.iter().enumerate() {
            values.set(HashAlgorithm::Sha256, i, v).unwrap();
        }
        let req = AzureSnpRequest {
            hcl_report: &self.hcl,
            vcek: &self.leaf,
            intermediate: None,
            attest: &self.attest,
            signature: QuoteSignature::Tpmt(&self.signature),
            pcrs: &values,
            quote_nonce: NONCE,
            time: now(),
        };
        verify_azure_snp(&VERIFIER, &req, &SnpPolicy::default()).map(|_| ())
    }
}

/// Flips every bit of `bundle.<field>[range]` in turn; each flip must be refused.
#[track_caller]
fn every_bit_refused(bundle: &Bundle, field: fn(&mut Bundle) -> &mut Vec<u8>, range: core::ops::Range<usize>) {
    let mut b = bundle.clone();
    for bit in range.start * 8..range.end * 8 {
        field(&mut b)[bit / 8] ^= 1 << (bit % 8);
        assert!(b.verify().is_err(), "bit {bit} (byte {:#x}) accepted", bit / 8);
        field(&mut b)[bit / 8] ^= 1 << (bit % 8);
    }
    b.verify().unwrap();
}

#[test]
fn a_bundle_from_the_test_pki_verifies() {
    Bundle::vcek().verify().unwrap();
    // The engine's binding and the test PKI's independent one agree.
    let json = runtime_json(&[&AK.jwk()]);
    assert_eq!(hcl_report_data(default_provider(), &json), tpm::hcl_report_data(&json));
}

#[test]
fn a_vlek_signed_hcl_report_is_refused() {
    let b = Bundle::new(&VLEK, ReportBuilder::for_leaf(&VLEK).mask_chip_key(true), None);
    assert_eq!(
        b.verify().unwrap_err(),
        Error::Policy(PolicyViolation {
            check: Check::SigningKey,
            expected: Value::Text("VCEK"),
            found: Value::Text("VLEK")
        })
    );
}

/// REPORT_DATA = SHA-256(runtime data) ‖ 32 zero bytes, compared whole: a right first half with anything else
/// in the second half is refused by the bundle verifier and by `HclReport::check_binding` alike.
#[test]
fn the_hcl_binding_compares_all_64_bytes() {
    let json = runtime_json(&[&AK.jwk()]);
    let right = hcl_report_data(default_provider(), &json);
    for at in [32, 47, 63] {
        let mut rd = right;
        rd[at] = 0x01;
        let b = Bundle::new(&VCEK, ReportBuilder::for_leaf(&VCEK), Some(rd));
        assert_eq!(
            b.verify().unwrap_err(),
            Error::AkBindingMismatch { expected: Bytes::new(&right), found: Bytes::new(&rd) },
            "byte {at}"
        );
        let hcl = HclReport::parse(&b.hcl).unwrap();
        assert!(matches!(hcl.check_binding(default_provider()), Err(Error::AkBindingMismatch { .. })), "byte {at}");
        assert!(hcl.check_report_data(default_provider(), &rd).is_err());
        hcl.check_report_data(default_provider(), &right).unwrap();
    }
    // The digest in the second half, or SHA-256 of something else: refused.
    let mut swapped = [0u8; 64];
    swapped[32..].copy_from_slice(&right[..32]);
    let b = Bundle::new(&VCEK, ReportBuilder::for_leaf(&VCEK), Some(swapped));
    assert!(matches!(b.verify(), Err(Error::AkBindingMismatch { .. })));
    HclReport::parse(&Bundle::vcek().hcl).unwrap().check_binding(default_provider()).unwrap();
}

#[test]
fn every_bit_of_the_signed_snp_region_and_its_signature_matters() {
    let b = Bundle::vcek();
    every_bit_refused(&b, |b| &mut b.hcl, SNP..SNP_SIGNED_END);
    // The signature (R, S) and the reserved rest of the signature area.
    every_bit_refused(&b, |b| &mut b.hcl, SNP_SIGNED_END..SNP_END);
}

#[test]
fn every_bit_of_the_runtime_data_matters() {
    let b = Bundle::vcek();
    let len = HclReport::parse(&b.hcl).unwrap().variable_data().len();
    every_bit_refused(&b, |b| &mut b.hcl, RUNTIME..RUNTIME + len);
}

#[test]
fn every_bit_of_the_quote_matters() {
    let b = Bundle::vcek();
    every_bit_refused(&b, |b| &mut b.attest, 0..b.attest.len());
    every_bit_refused(&b, |b| &mut b.signature, 0..b.signature.len());
}
