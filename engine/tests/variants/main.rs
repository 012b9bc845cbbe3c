//! The attestation variants (`qemu-vtpm`, `aws-sev-snp`, `gcp-sev-snp`, `azure-sev-snp`) end to end against a
//! software "TPM" (`attest_test_support::tpm`) and a generated AMD-like PKI: for each variant a document that
//! validates, then one negative per check, each asserting the exact `Error`.
//!
//! Keys and PKIs are generated once per test binary.

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::{Bytes, CertRole, Error, PolicyViolation, Value};
use attest_engine::policy::Hex;
use attest_engine::snp::{Check, OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::tpm::{PcrValues, QuoteSignature, SigScheme};
use attest_engine::variant::{
    AkBasis, Document, PcrExpectation, PcrOutcome, PcrPolicy, SnpEvidence, StaticAkRegistry, TpmEvidence, Validator,
    Variant, snp_vtpm_report_data,
};
use attest_engine::{LaunchPinning, UnixTime};
use attest_test_support::tpm::{
    self, AK_ATTRIBUTES, EventLogBuilder, PcrBank, QuoteSpec, SoftAk, attributes, hcl_report, hcl_report_data,
    runtime_json,
};
use attest_test_support::{
    IntermediateSpec, Leaf, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki,
};
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

mod freshness;
mod launch;

// ---- Fixtures ------------------------------------------------------------------------------------------

static RSA_AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::rsa);
static ECC_AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::ecc_p256);
/// An RSA key nobody trusts.
static OTHER_RSA_AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::rsa);

static MILAN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));
static MILAN_VLEK: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek));
/// The VLEK PKI's ASVK re-certified by `MILAN`'s ARK, so one Milan anchor holds both intermediates.
static MILAN_ASVK: LazyLock<Vec<u8>> =
    LazyLock::new(|| MILAN_VLEK.issue_intermediate_signed_by(&IntermediateSpec::new(), &MILAN));
static VCEK: LazyLock<Leaf> = LazyLock::new(|| MILAN.issue_leaf(&LeafSpec::new()));
static VLEK: LazyLock<Leaf> = LazyLock::new(|| MILAN_VLEK.issue_leaf(&LeafSpec::new()));

static VERIFIER: LazyLock<Arc<SnpVerifier>> = LazyLock::new(|| {
    Arc::new(SnpVerifier::with_trust_anchors(
        default_provider(),
        vec![OwnedTrustAnchors {
            product: Product::Milan,
            ark: Cow::Owned(MILAN.ark_der().to_vec()),
            ask: Some(Cow::Owned(MILAN.ask_der().to_vec())),
            asvk: Some(Cow::Owned(MILAN_ASVK.clone())),
        }],
    ))
});

/// A typical UEFI boot log; its replay gives PCRs 0–7.
static BOOT_LOG: LazyLock<EventLogBuilder> = LazyLock::new(EventLogBuilder::typical_boot);

const NONCE: &[u8] = b"verifier nonce 0123456789abcdef!";
const OTHER_NONCE: &[u8] = b"verifier nonce 0123456789abcdef?";
/// aTLS: SHA-256 of the certificate's SPKI.
const USER_DATA: &[u8] = &[0x5A; 32];
const INSTANCE_INFO: &[u8] = br#"{"instance":"vm-1","zone":"test-a"}"#;
/// The PCRs every quote selects unless a test says otherwise: 0–15.
const SELECTION: u32 = 0xFFFF;

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap()
}

/// PCRs 0–7 from the boot log's replay, 8–23 arbitrary but distinct.
fn boot_pcrs() -> PcrBank {
    let mut pcrs = *BOOT_LOG.pcrs();
    for (i, pcr) in pcrs.iter_mut().enumerate().skip(8) {
        *pcr = tpm::sha256(&[b"pcr", &[i as u8]]);
    }
    pcrs
}

fn quote_nonce(instance_info: &[u8], user_data: &[u8], nonce: &[u8]) -> [u8; 32] {
    Validator::quote_nonce(default_provider(), instance_info, user_data, nonce)
}

/// The REPORT_DATA an `aws-sev-snp` / `gcp-sev-snp` report carries for an AK in the attestation for `NONCE`.
fn snp_binding(tpm2b_public: &[u8]) -> [u8; 64] {
    snp_binding_for(tpm2b_public, NONCE)
}

/// [`snp_binding`] for the attestation with `nonce`.
fn snp_binding_for(tpm2b_public: &[u8], nonce: &[u8]) -> [u8; 64] {
    snp_vtpm_report_data(default_provider(), tpm2b_public, &quote_nonce(INSTANCE_INFO, USER_DATA, nonce))
}

/// A PCR policy expecting `pcrs`' values at `indices`, enforced.
fn expect(pcrs: &PcrBank, indices: &[u8]) -> PcrPolicy {
    PcrPolicy {
        entries: indices
            .iter()
            .map(|&i| PcrExpectation { index: i, expected: pcrs[usize::from(i)], warn_only: false })
            .collect(),
    }
}

fn registry() -> StaticAkRegistry {
    StaticAkRegistry(vec![
        (RSA_AK.tpmt_digest(), AkBasis::CredentialActivation),
        (ECC_AK.tpmt_digest(), AkBasis::Pinned),
    ])
}

/// The test reports' MEASUREMENT: the report builder's default (zero).
const LAUNCH: [u8; 48] = [0; 48];

/// The default SNP policy with the test reports' launch measurement pinned (SNP variants refuse to
/// validate without one).
fn pinned_policy() -> SnpPolicy {
    SnpPolicy { measurements: vec![Hex(LAUNCH)], ..SnpPolicy::default() }
}

fn validator(variant: Variant, pcrs: PcrPolicy) -> Validator {
    Validator::new(variant, Arc::clone(&VERIFIER), pinned_policy(), pcrs)
}

fn qemu_validator(registry: StaticAkRegistry, pcrs: PcrPolicy) -> Validator {
    validator(Variant::QemuVtpm, pcrs).with_ak_registry(Arc::new(registry))
}

// ---- Evidence ------------------------------------------------------------------------------------------

/// An attestation document's parts, owned.
#[derive(Clone, Debug)]
struct Evidence {
    variant: String,
    ak_public: Vec<u8>,
    attest: Vec<u8>,
    signature: Vec<u8>,
    /// Present the signature as bare RSA bytes (`QuoteSignature::RsaRaw`) instead of a TPMT_SIGNATURE.
    raw_rsa: bool,
    pcrs: PcrBank,
    event_log: Vec<u8>,
    /// SNP report and leaf (no SNP evidence when `leaf` is empty).
    snp_report: Vec<u8>,
    leaf: Vec<u8>,
    hcl_report: Vec<u8>,
    instance_info: Vec<u8>,
    user_data: Vec<u8>,
}

impl Evidence {
    /// TPM evidence of `variant`: `ak`'s TPM2B_PUBLIC and its quote of the boot PCRs for `NONCE`.
    fn tpm(variant: Variant, ak: &SoftAk) -> Self {
        let pcrs = boot_pcrs();
        let extra = quote_nonce(INSTANCE_INFO, USER_DATA, NONCE);
        let q = ak.quote(&QuoteSpec::new(&extra, &pcrs, SELECTION));
        Self {
            variant: variant.name().to_owned(),
            ak_public: ak.tpm2b_public(),
            attest: q.attest,
            signature: q.signature,
            raw_rsa: false,
            pcrs,
            event_log: Vec::new(),
            snp_report: Vec::new(),
            leaf: Vec::new(),
            hcl_report: Vec::new(),
            instance_info: INSTANCE_INFO.to_vec(),
            user_data: USER_DATA.to_vec(),
        }
    }

    /// Re-quotes with `ak` (keeping the presented AK public) for `extra` over `pcrs` selected by `selection`.
    fn requote(mut self, ak: &SoftAk, extra: &[u8], selection: u32) -> Self {
        let q = ak.quote(&QuoteSpec::new(extra, &self.pcrs, selection));
        self.attest = q.attest;
        self.signature = q.signature;
        self
    }

    fn with_snp(mut self, report: &[u8], leaf: &Leaf) -> Self {
        self.snp_report = report.to_vec();
        self.leaf.clone_from(&leaf.der);
        self
    }

    fn pcr_values(&self) -> PcrValues<'_> {
        let mut values = PcrValues::new();
        for (i, v) in self.pcrs.iter().enumerate() {
            values.set(HashAlgorithm::Sha256, i, v).unwrap();
        }
        values
    }

    fn document<'a>(&'a self, pcrs: &'a PcrValues<'a>) -> Document<'a> {
        let signature = if self.raw_rsa {
            QuoteSignature::RsaRaw { scheme: SigScheme::RsaSsa(HashAlgorithm::Sha256), sig: &self.signature }
        } else {
            QuoteSignature::Tpmt(&self.signature)
        };
        Document {
            variant: &self.variant,
            tpm: Some(TpmEvidence {
                ak_public: &self.ak_public,
                attest: &self.attest,
                signature,
                pcrs,
                event_log: &self.event_log,
                ak_certificate: &[],
            }),
            snp: (!self.leaf.is_empty()).then_some(SnpEvidence {
                report: &self.snp_report,
                leaf: &self.leaf,
                intermediate: None,
                root: None,
            }),
            hcl_report: &self.hcl_report,
            instance_info: &self.instance_info,
            user_data: &self.user_data,
            td_quote: &[],
            td_event_log: &[],
        }
    }

    /// Validates for `nonce` and keeps what the result says, owned.
    fn validate(&self, v: &Validator, nonce: &[u8]) -> Result<Summary, Error> {
        let pcrs = self.pcr_values();
        let doc = self.document(&pcrs);
        let ok = v.validate(&doc, nonce, now())?;
        let quote = ok.quote.as_ref().expect("every vTPM variant has a quote");
        Ok(Summary {
            variant: ok.variant,
            ak_basis: ok.ak_basis.expect("every vTPM variant has an AK"),
            pcrs: ok.pcrs,
            event_log_replayed: ok.event_log_replayed,
            snp_signer: ok.snp.as_ref().map(attest_engine::snp::VerifiedReport::signer),
            report_data: ok.snp.as_ref().map(|s| *s.report().report_data()),
            extra_data: quote.attest().extra_data().to_vec(),
            quoted: (0..24).map(|i| quote.pcr(HashAlgorithm::Sha256, i).map(<[u8]>::to_vec)).collect(),
            user_data: ok.user_data.to_vec(),
            launch: ok.launch,
            measurement_check: ok.snp.as_ref().map(|s| s.verdict().outcome(Check::Measurement)),
        })
    }

    #[track_caller]
    fn reject(&self, v: &Validator, nonce: &[u8]) -> Error {
        match self.validate(v, nonce) {
            Ok(ok) => panic!("accepted, expected a rejection: {ok:?}"),
            Err(e) => e,
        }
    }
}

/// What a `Validated` said, owned.
#[derive(Debug)]
struct Summary {
    variant: Variant,
    ak_basis: AkBasis,
    pcrs: Vec<(u8, PcrOutcome)>,
    event_log_replayed: bool,
    snp_signer: Option<CertRole>,
    report_data: Option<[u8; 64]>,
    extra_data: Vec<u8>,
    /// The quoted SHA-256 PCRs by index (`None` when not selected).
    quoted: Vec<Option<Vec<u8>>>,
    user_data: Vec<u8>,
    launch: LaunchPinning,
    /// The SNP verdict's MEASUREMENT outcome (SNP variants).
    measurement_check: Option<attest_engine::Outcome>,
}

// ---- The software TPM's structures, as the engine reads them ---------------------------------------------

#[test]
fn soft_tpm_structures_parse_as_the_engine_expects() {
    use attest_engine::azure::{HclReport, RuntimeData};
    use attest_engine::tpm::{AkPublic, Attest, EccCurve, TpmSignature, TpmtPublic};
    let (rsa_public, ecc_public) = (RSA_AK.tpm2b_public(), ECC_AK.tpm2b_public());
    let rsa = TpmtPublic::parse_tpm2b(&rsa_public).unwrap();
    assert_eq!((rsa.name_alg(), rsa.attributes(), rsa.key_bits()), (0x000B, 0x0005_0072, 2048));
    assert_eq!(rsa.scheme(), Some(SigScheme::RsaSsa(HashAlgorithm::Sha256)));
    assert_eq!(rsa.key(), AkPublic::Rsa { modulus: RSA_AK.modulus().unwrap(), exponent: 65_537 });
    rsa.check_attestation_key().unwrap();
    let ecc = TpmtPublic::parse_tpm2b(&ecc_public).unwrap();
    let (x, y) = ECC_AK.point().unwrap();
    assert_eq!(ecc.key(), AkPublic::Ecc { curve: EccCurve::P256, x, y });
    assert_eq!(ecc.scheme(), Some(SigScheme::Ecdsa(HashAlgorithm::Sha256)));
    ecc.check_attestation_key().unwrap();

    let pcrs = boot_pcrs();
    let q = ECC_AK.quote(&QuoteSpec::new(&[7; 32], &pcrs, 0x0080_0081));
    let a = Attest::parse(&q.attest).unwrap();
    assert_eq!(a.qualified_signer(), ECC_AK.name());
    assert_eq!(a.extra_data(), [7; 32]);
    assert_eq!((a.clock(), a.reset_count(), a.restart_count(), a.safe()), (1_234_567, 3, 0, true));
    assert_eq!(a.pcr_selection().banks().collect::<Vec<_>>(), [(HashAlgorithm::Sha256, 0x0080_0081)]);
    assert_eq!(a.pcr_digest(), tpm::sha256(&[&pcrs[0], &pcrs[7], &pcrs[23]]));
    assert!(
        matches!(TpmSignature::parse(&q.signature).unwrap(), TpmSignature::Ecdsa { r, s, .. } if r.len() == 32 && s.len() == 32)
    );
    let rsa_sig = RSA_AK.sign(b"m");
    assert!(matches!(TpmSignature::parse(&rsa_sig).unwrap(), TpmSignature::Rsa { sig, .. } if sig.len() == 256));

    let json = runtime_json(&[&RSA_AK.jwk()]);
    let rt = RuntimeData::parse(&json).unwrap();
    assert_eq!(rt.ak().ak_public(), AkPublic::Rsa { modulus: RSA_AK.modulus().unwrap(), exponent: 65_537 });
    let report = ReportBuilder::for_leaf(&VCEK).report_data(hcl_report_data(&json)).sign(&VCEK);
    let hcl_bytes = hcl_report(&report, &json);
    let hcl = HclReport::parse(&hcl_bytes).unwrap();
    assert_eq!((hcl.version(), hcl.hash_type()), (1, 1));
    assert_eq!(hcl.variable_data(), &json[..]);
    assert_eq!(hcl.snp_report(), Some(&report[..]));
    hcl.check_binding(default_provider()).unwrap();
}

// ---- qemu-vtpm -----------------------------------------------------------------------------------------

#[test]
fn qemu_registered_aks_validate_with_the_registry_basis() {
    let pcrs = boot_pcrs();
    let v = qemu_validator(registry(), expect(&pcrs, &[0, 4, 7, 15]));
    for (ak, basis) in [(&*RSA_AK, AkBasis::CredentialActivation), (&*ECC_AK, AkBasis::Pinned)] {
        let ok =
            Evidence::tpm(Variant::QemuVtpm, ak).validate(&v, NONCE).unwrap_or_else(|e| panic!("{:?}: {e}", ak.kind()));
        assert_eq!(ok.variant, Variant::QemuVtpm);
        assert_eq!(ok.ak_basis, basis);
        assert_eq!(
            ok.pcrs,
            [(0, PcrOutcome::Match), (4, PcrOutcome::Match), (7, PcrOutcome::Match), (15, PcrOutcome::Match)]
        );
        assert!(!ok.event_log_replayed);
        assert_eq!(ok.snp_signer, None);
        assert_eq!(ok.extra_data, quote_nonce(INSTANCE_INFO, USER_DATA, NONCE));
        assert_eq!(ok.user_data, USER_DATA);
        for (i, q) in ok.quoted.iter().enumerate() {
            assert_eq!(q.as_deref(), (i < 16).then_some(&pcrs[i][..]), "PCR {i}");
        }
    }
}

#[test]
fn qemu_unknown_ak_is_not_trusted() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    let ev = Evidence::tpm(Variant::QemuVtpm, &OTHER_RSA_AK);
    assert_eq!(ev.reject(&v, NONCE), Error::AkNotTrusted { ak_digest: Bytes::new(&OTHER_RSA_AK.tpmt_digest()) });
    // Without a registry no AK is trusted, whatever it is.
    let bare = validator(Variant::QemuVtpm, PcrPolicy::default());
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    assert_eq!(ev.reject(&bare, NONCE), Error::AkNotTrusted { ak_digest: Bytes::new(&RSA_AK.tpmt_digest()) });
    // An empty registry neither.
    let empty = qemu_validator(StaticAkRegistry::default(), PcrPolicy::default());
    assert!(matches!(ev.reject(&empty, NONCE), Error::AkNotTrusted { .. }));
}

#[test]
fn qemu_registry_is_keyed_by_the_whole_tpmt_public() {
    // The same key with other attributes is another TPMT_PUBLIC, hence another AK.
    let v = qemu_validator(registry(), PcrPolicy::default());
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    let attrs = AK_ATTRIBUTES & !attributes::USER_WITH_AUTH;
    let tpmt = RSA_AK.tpmt_public_with(attrs);
    ev.ak_public = RSA_AK.tpm2b_public_with(attrs);
    assert_eq!(ev.reject(&v, NONCE), Error::AkNotTrusted { ak_digest: Bytes::new(&tpm::sha256(&[&tpmt])) });
}

#[test]
fn qemu_ak_attributes_must_be_a_restricted_signing_key() {
    use attributes::{DECRYPT, FIXED_PARENT, FIXED_TPM, RESTRICTED, SENSITIVE_DATA_ORIGIN, SIGN};
    let cases = [
        (AK_ATTRIBUTES & !RESTRICTED, "not restricted"),
        (AK_ATTRIBUTES & !SIGN, "not a signing key"),
        (AK_ATTRIBUTES | DECRYPT, "also a decryption key"),
        (AK_ATTRIBUTES & !FIXED_TPM, "not fixedTPM and fixedParent"),
        (AK_ATTRIBUTES & !FIXED_PARENT, "not fixedTPM and fixedParent"),
        (AK_ATTRIBUTES & !SENSITIVE_DATA_ORIGIN, "not generated in the TPM (sensitiveDataOrigin clear)"),
    ];
    for ak in [&*RSA_AK, &*ECC_AK] {
        for (attrs, reason) in cases {
            // Registered, so the attributes are the only reason to refuse.
            let mut reg = registry();
            reg.0.push((tpm::sha256(&[&ak.tpmt_public_with(attrs)]), AkBasis::Pinned));
            let v = qemu_validator(reg, PcrPolicy::default());
            let mut ev = Evidence::tpm(Variant::QemuVtpm, ak);
            ev.ak_public = ak.tpm2b_public_with(attrs);
            assert_eq!(ev.reject(&v, NONCE), Error::AkAttributes { attributes: attrs, reason }, "{attrs:#x}");
        }
    }
    assert_eq!(AK_ATTRIBUTES & !RESTRICTED, 0x0004_0072);
}

#[test]
fn qemu_malformed_ak_public_is_a_parse_error() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    // The TPMT_PUBLIC without its TPM2B size.
    ev.ak_public = RSA_AK.tpmt_public();
    assert!(matches!(ev.reject(&v, NONCE), Error::Tpm { .. } | Error::Truncated { .. } | Error::TrailingData { .. }));
    ev.ak_public.clear();
    assert!(matches!(ev.reject(&v, NONCE), Error::Truncated { .. } | Error::Tpm { .. }));
}

#[test]
fn qemu_wrong_nonce_is_a_nonce_mismatch() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    assert_eq!(
        ev.reject(&v, b"another nonce"),
        Error::NonceMismatch {
            expected: Bytes::new(&quote_nonce(INSTANCE_INFO, USER_DATA, b"another nonce")),
            found: Bytes::new(&quote_nonce(INSTANCE_INFO, USER_DATA, NONCE)),
        }
    );
    // The raw nonce itself in extraData (a quote not bound to user data / instance info).
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK).requote(&RSA_AK, NONCE, SELECTION);
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { .. }));
    // No prefix or truncation games: the first 31 bytes of the right value.
    let right = quote_nonce(INSTANCE_INFO, USER_DATA, NONCE);
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK).requote(&RSA_AK, &right[..31], SELECTION);
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { .. }));
}

#[test]
fn qemu_quote_bound_to_other_user_data_or_instance_info_is_a_nonce_mismatch() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    // Quoted for another TLS key (user data) than the document presents.
    let other_user = quote_nonce(INSTANCE_INFO, &[0xA5; 32], NONCE);
    let ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK).requote(&ECC_AK, &other_user, SELECTION);
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { found, .. } if found.as_slice() == other_user));
    // Quoted for other instance info.
    let other_info = quote_nonce(b"{}", USER_DATA, NONCE);
    let ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK).requote(&ECC_AK, &other_info, SELECTION);
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { found, .. } if found.as_slice() == other_info));
    // The document's user data / instance info swapped after quoting.
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK);
    ev.user_data = vec![0xA5; 32];
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { .. }));
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK);
    ev.instance_info = b"{}".to_vec();
    assert!(matches!(ev.reject(&v, NONCE), Error::NonceMismatch { .. }));
}

#[test]
fn qemu_replayed_document_under_a_new_nonce_is_a_nonce_mismatch() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    ev.validate(&v, NONCE).unwrap();
    assert_eq!(
        ev.reject(&v, OTHER_NONCE),
        Error::NonceMismatch {
            expected: Bytes::new(&quote_nonce(INSTANCE_INFO, USER_DATA, OTHER_NONCE)),
            found: Bytes::new(&quote_nonce(INSTANCE_INFO, USER_DATA, NONCE)),
        }
    );
}

#[test]
fn qemu_altered_pcr_value_is_a_pcr_digest_mismatch() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    for ak in [&*RSA_AK, &*ECC_AK] {
        let mut ev = Evidence::tpm(Variant::QemuVtpm, ak);
        let quoted = tpm::pcr_digest(&ev.pcrs, SELECTION);
        ev.pcrs[4][31] ^= 1;
        assert_eq!(
            ev.reject(&v, NONCE),
            Error::PcrDigestMismatch {
                computed: Bytes::new(&tpm::pcr_digest(&ev.pcrs, SELECTION)),
                quoted: Bytes::new(&quoted),
            }
        );
        // Swapping two selected values also changes the ordered digest.
        let mut ev = Evidence::tpm(Variant::QemuVtpm, ak);
        ev.pcrs.swap(1, 2);
        assert!(matches!(ev.reject(&v, NONCE), Error::PcrDigestMismatch { .. }));
        // An unselected PCR may carry anything: it is not part of the quote.
        let mut ev = Evidence::tpm(Variant::QemuVtpm, ak);
        ev.pcrs[20] = [0xEE; 32];
        ev.validate(&v, NONCE).unwrap();
    }
}

#[test]
fn qemu_tampered_quote_or_foreign_signature_is_refused() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    // Signed by another key than the registered AK presented.
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    let forged = Evidence { signature: OTHER_RSA_AK.sign(&ev.attest), ..ev.clone() };
    assert_eq!(forged.reject(&v, NONCE), Error::QuoteSignatureInvalid);
    // A byte of the signed TPMS_ATTEST changed (firmwareVersion's last byte sits before the selection).
    let mut tampered = ev.clone();
    let at = tampered.attest.len() - 2 - 32 - 10 - 1;
    tampered.attest[at] ^= 1;
    assert_eq!(tampered.reject(&v, NONCE), Error::QuoteSignatureInvalid);
    // An ECDSA signature over the right bytes by the wrong (ECC) key.
    let ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK);
    let other_ecc = SoftAk::ecc_p256();
    let forged = Evidence { signature: other_ecc.sign(&ev.attest), ..ev.clone() };
    assert_eq!(forged.reject(&v, NONCE), Error::QuoteSignatureInvalid);
    // An RSA key's TPMT_SIGNATURE presented with the ECC AK.
    let forged = Evidence { signature: RSA_AK.sign(&ev.attest), ..ev };
    assert!(matches!(forged.reject(&v, NONCE), Error::UnsupportedTpmAlgorithm { .. } | Error::QuoteSignatureInvalid));
}

#[test]
fn qemu_enforced_pcr_mismatch_names_the_pcr() {
    let pcrs = boot_pcrs();
    let mut policy = expect(&pcrs, &[0, 4, 7]);
    policy.entries[1].expected = [0x44; 32];
    let v = qemu_validator(registry(), policy);
    assert_eq!(
        Evidence::tpm(Variant::QemuVtpm, &RSA_AK).reject(&v, NONCE),
        Error::PcrMismatch { pcr: 4, expected: Bytes::new(&[0x44; 32]), found: Bytes::new(&pcrs[4]) }
    );
}

#[test]
fn qemu_warn_only_mismatch_is_reported_not_rejected() {
    let pcrs = boot_pcrs();
    let mut policy = expect(&pcrs, &[0, 4, 7]);
    policy.entries[1] = PcrExpectation { index: 4, expected: [0x44; 32], warn_only: true };
    // A warn-only entry that matches is a plain match.
    policy.entries.push(PcrExpectation { index: 9, expected: pcrs[9], warn_only: true });
    let v = qemu_validator(registry(), policy);
    let ok = Evidence::tpm(Variant::QemuVtpm, &RSA_AK).validate(&v, NONCE).unwrap();
    assert_eq!(
        ok.pcrs,
        [(0, PcrOutcome::Match), (4, PcrOutcome::MismatchWarnOnly), (7, PcrOutcome::Match), (9, PcrOutcome::Match)]
    );
}

#[test]
fn qemu_expected_pcr_outside_the_quote_is_a_mismatch_with_nothing_found() {
    let pcrs = boot_pcrs();
    // PCR 16 is presented with exactly the expected value, but the quote does not select it.
    let v = qemu_validator(registry(), expect(&pcrs, &[0, 16]));
    assert_eq!(
        Evidence::tpm(Variant::QemuVtpm, &RSA_AK).reject(&v, NONCE),
        Error::PcrMismatch { pcr: 16, expected: Bytes::new(&pcrs[16]), found: Bytes::new(&[]) }
    );
    // A quote of PCRs 0–7 only leaves PCR 8 uncovered.
    let v = qemu_validator(registry(), expect(&pcrs, &[8]));
    let extra = quote_nonce(INSTANCE_INFO, USER_DATA, NONCE);
    let ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK).requote(&ECC_AK, &extra, 0xFF);
    assert!(matches!(ev.reject(&v, NONCE), Error::PcrMismatch { pcr: 8, found, .. } if found.as_slice().is_empty()));
    // Warn-only: reported as a mismatch, not a match.
    let v = qemu_validator(
        registry(),
        PcrPolicy { entries: vec![PcrExpectation { index: 8, expected: pcrs[8], warn_only: true }] },
    );
    assert_eq!(ev.validate(&v, NONCE).unwrap().pcrs, [(8, PcrOutcome::MismatchWarnOnly)]);
}

#[test]
fn qemu_missing_pcr_value_for_a_selected_pcr_is_refused() {
    let v = qemu_validator(registry(), PcrPolicy::default());
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    let mut partial = PcrValues::new();
    for i in (0..24).filter(|i| *i != 5) {
        partial.set(HashAlgorithm::Sha256, i, &ev.pcrs[i]).unwrap();
    }
    let doc = ev.document(&partial);
    assert_eq!(
        v.validate(&doc, NONCE, now()).unwrap_err(),
        Error::PcrValueMissing { bank: HashAlgorithm::Sha256, pcr: 5 }
    );
}

#[test]
fn document_for_another_variant_is_a_variant_mismatch() {
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    ev.variant = "azure-sev-snp".to_owned();
    let v = qemu_validator(registry(), PcrPolicy::default());
    assert_eq!(
        ev.reject(&v, NONCE),
        Error::VariantMismatch { expected: "qemu-vtpm", found: Bytes::new(b"azure-sev-snp") }
    );
    // Every ordered pair of distinct variants, and near-misses of the names.
    for a in Variant::ALL {
        let v = validator(a, PcrPolicy::default());
        for b in Variant::ALL.into_iter().filter(|b| *b != a) {
            ev.variant = b.name().to_owned();
            assert!(matches!(ev.reject(&v, NONCE), Error::VariantMismatch { expected, .. } if expected == a.name()));
        }
        for near in [a.name().to_uppercase(), format!("{} ", a.name()), String::new()] {
            ev.variant.clone_from(&near);
            assert!(matches!(ev.reject(&v, NONCE), Error::VariantMismatch { .. }), "{near:?}");
        }
    }
    // A long variant string is truncated to 64 bytes in the error.
    ev.variant = "x".repeat(300);
    assert_eq!(ev.reject(&v, NONCE), Error::VariantMismatch { expected: "qemu-vtpm", found: Bytes::new(&[b'x'; 64]) });
}

#[test]
fn document_without_tpm_evidence_is_missing_evidence() {
    let ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    let pcrs = ev.pcr_values();
    let doc = Document { tpm: None, ..ev.document(&pcrs) };
    let v = qemu_validator(registry(), PcrPolicy::default());
    assert_eq!(v.validate(&doc, NONCE, now()).unwrap_err(), Error::MissingEvidence { what: "TPM evidence" });
}

// ---- Event log -----------------------------------------------------------------------------------------

#[test]
fn event_log_replaying_to_the_quote_validates() {
    let pcrs = boot_pcrs();
    let mut ev = Evidence::tpm(Variant::QemuVtpm, &RSA_AK);
    ev.event_log = BOOT_LOG.bytes().to_vec();
    let v = qemu_validator(registry(), expect(&pcrs, &[0, 1, 2, 3, 4, 5, 6, 7]));
    let ok = ev.validate(&v, NONCE).unwrap();
    assert!(ok.event_log_replayed);
    assert!(ok.pcrs.iter().all(|(_, o)| *o == PcrOutcome::Match));
    // The EV_NO_ACTION event in PCR 3 was not extended: PCR 3 is the separator alone.
    let mut pcr3 = [0u8; 32];
    tpm::extend(&mut pcr3, &tpm::sha256(&[&[0u8; 4]]));
    assert_eq!(pcrs[3], pcr3);
    // The engine's own parser agrees with the builder.
    let log = attest_engine::tpm::eventlog::EventLog::parse(BOOT_LOG.bytes()).unwrap();
    assert_eq!(log.len(), 1 + BOOT_LOG.events().len());
    let replayed = log.replay(default_provider(), HashAlgorithm::Sha256, false).unwrap();
    assert_eq!(replayed.touched_mask(), 0xFF);
    for (i, pcr) in pcrs.iter().enumerate().take(8) {
        assert_eq!(replayed.get(i), Some(&pcr[..]), "PCR {i}");
    }
}

#[test]
fn event_log_with_an_altered_entry_is_a_replay_mismatch() {
    let pcrs = boot_pcrs();
    let v = qemu_validator(registry(), PcrPolicy::default());
    let base = {
        let mut ev = Evidence::tpm(Variant::QemuVtpm, &ECC_AK);
        ev.event_log = BOOT_LOG.bytes().to_vec();
        ev
    };
    // Event 6 is the boot application in PCR 4: flip a bit of its digest.
    let at = BOOT_LOG.events()[6];
    let mut ev = base.clone();
    ev.event_log[at.digest_offset] ^= 0x80;
    match ev.reject(&v, NONCE) {
        Error::EventLogReplayMismatch { bank, pcr, expected, replayed } => {
            assert_eq!((bank, pcr), (HashAlgorithm::Sha256, 4));
            assert_eq!(expected.as_slice(), pcrs[4]);
            assert_ne!(replayed.as_slice(), pcrs[4]);
        }
        e => panic!("{e:?}"),
    }
    // The same event moved to PCR 5.
    let mut ev = base.clone();
    ev.event_log[at.offset] = 5;
    assert!(matches!(ev.reject(&v, NONCE), Error::EventLogReplayMismatch { pcr: 4, .. }));
    // The last event (PCR 7's separator) dropped.
    let mut ev = base.clone();
    let last = *BOOT_LOG.events().last().unwrap();
    ev.event_log.truncate(last.offset);
    assert!(matches!(ev.reject(&v, NONCE), Error::EventLogReplayMismatch { pcr: 7, .. }));
    // An extra event appended to PCR 0.
    let mut ev = base.clone();
    ev.event_log = BOOT_LOG.clone().event(0, tpm::event_type::EV_POST_CODE, b"injected").into_bytes();
    assert!(matches!(ev.reject(&v, NONCE), Error::EventLogReplayMismatch { pcr: 0, .. }));
    // The EV_NO_ACTION event turned into an extended one.
    let mut ev = base.clone();
    let no_action = BOOT_LOG.events()[4];
    ev.event_log[no_action.offset + 4] = 0x01;
    assert!(matches!(ev.reject(&v, NONCE), Error::EventLogReplayMismatch { pcr: 3, .. }));
    // A malformed log is a parse error, not silently ignored.
    let mut ev = base;
    ev.event_log.truncate(ev.event_log.len() - 1);
    assert!(matches!(ev.reject(&v, NONCE), Error::Truncated { .. } | Error::EventLog { .. }));
}

#[test]
fn event_log_is_checked_for_snp_variants_too() {
    let mut ev = gcp_evidence(&ECC_AK, ReportBuilder::for_leaf(&VCEK));
    ev.event_log = BOOT_LOG.bytes().to_vec();
    let v = validator(Variant::GcpSevSnp, PcrPolicy::default());
    assert!(ev.validate(&v, NONCE).unwrap().event_log_replayed);
    ev.event_log[BOOT_LOG.events()[0].digest_offset] ^= 1;
    assert!(matches!(ev.reject(&v, NONCE), Error::EventLogReplayMismatch { pcr: 0, .. }));
}

// ---- aws-sev-snp / gcp-sev-snp -------------------------------------------------------------------------

/// TPM evidence of `ak` with an SNP report signed by `leaf`, whose REPORT_DATA binds `ak`.
fn snp_evidence(variant: Variant, ak: &SoftAk, leaf: &Leaf, report: ReportBuilder) -> Evidence {
    let report = report.report_data(snp_binding(&ak.tpm2b_public())).sign(leaf);
    Evidence::tpm(variant, ak).with_snp(&report, leaf)
}

fn aws_evidence(ak: &SoftAk, report: ReportBuilder) -> Evidence {
    snp_evidence(Variant::AwsSevSnp, ak, &VLEK, report.mask_chip_key(true))
}

fn gcp_evidence(ak: &SoftAk, report: ReportBuilder) -> Evidence {
    snp_evidence(Variant::GcpSevSnp, ak, &VCEK, report)
}

#[test]
fn aws_vlek_report_binding_the_ak_validates() {
    let pcrs = boot_pcrs();
    let v = validator(Variant::AwsSevSnp, expect(&pcrs, &[0, 7]));
    for ak in [&*RSA_AK, &*ECC_AK] {
        let ev = aws_evidence(ak, ReportBuilder::for_leaf(&VLEK));
        let ok = ev.validate(&v, NONCE).unwrap_or_else(|e| panic!("{:?}: {e}", ak.kind()));
        assert_eq!(ok.variant, Variant::AwsSevSnp);
        assert_eq!(ok.ak_basis, AkBasis::HardwareReport);
        assert_eq!(ok.snp_signer, Some(CertRole::Vlek));
        assert_eq!(ok.report_data, Some(snp_binding(&ak.tpm2b_public())));
        assert_eq!(ok.pcrs, [(0, PcrOutcome::Match), (7, PcrOutcome::Match)]);
        assert_eq!(ok.extra_data, quote_nonce(INSTANCE_INFO, USER_DATA, NONCE));
    }
    // No registry is needed, and one would not be consulted.
    let v = validator(Variant::AwsSevSnp, PcrPolicy::default())
        .with_ak_registry(Arc::new(StaticAkRegistry(vec![(RSA_AK.tpmt_digest(), AkBasis::Pinned)])));
    let ok = aws_evidence(&RSA_AK, ReportBuilder::for_leaf(&VLEK)).validate(&v, NONCE).unwrap();
    assert_eq!(ok.ak_basis, AkBasis::HardwareReport);
}

#[test]
fn gcp_vcek_report_binding_the_ak_validates() {
    let v = validator(Variant::GcpSevSnp, expect(&boot_pcrs(), &[4]));
    for ak in [&*RSA_AK, &*ECC_AK] {
        let ok = gcp_evidence(ak, ReportBuilder::for_leaf(&VCEK)).validate(&v, NONCE).unwrap();
        assert_eq!(ok.variant, Variant::GcpSevSnp);
        assert_eq!(ok.ak_basis, AkBasis::HardwareReport);
        assert_eq!(ok.snp_signer, Some(CertRole::Vcek));
        assert_eq!(ok.report_data, Some(snp_binding(&ak.tpm2b_public())));
        assert_eq!(ok.pcrs, [(4, PcrOutcome::Match)]);
    }
}

#[test]
fn snp_report_binding_another_ak_is_a_freshness_binding_mismatch() {
    for (variant, leaf) in [(Variant::AwsSevSnp, &*VLEK), (Variant::GcpSevSnp, &*VCEK)] {
        let v = validator(variant, PcrPolicy::default());
        // The report binds OTHER_RSA_AK; the document presents (and quotes with) RSA_AK.
        let report = ReportBuilder::for_leaf(leaf)
            .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
            .report_data(snp_binding(&OTHER_RSA_AK.tpm2b_public()))
            .sign(leaf);
        let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&report, leaf);
        assert_eq!(
            ev.reject(&v, NONCE),
            Error::FreshnessBindingMismatch {
                expected: Bytes::new(&snp_binding(&RSA_AK.tpm2b_public())),
                found: Bytes::new(&snp_binding(&OTHER_RSA_AK.tpm2b_public())),
            },
            "{variant}"
        );
        // Presenting the bound AK's public while quoting with another key: the quote does not verify.
        let mut ev = Evidence::tpm(variant, &RSA_AK).with_snp(&report, leaf);
        ev.ak_public = OTHER_RSA_AK.tpm2b_public();
        assert_eq!(ev.reject(&v, NONCE), Error::QuoteSignatureInvalid, "{variant}");
        // The binding is over the TPM2B_PUBLIC, size prefix included: the TPMT_PUBLIC is not it.
        let tpmt_only = ReportBuilder::for_leaf(leaf)
            .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
            .report_data(snp_binding(&RSA_AK.tpmt_public()))
            .sign(leaf);
        let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&tpmt_only, leaf);
        assert!(matches!(ev.reject(&v, NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");
        // The former rule, SHA-512(TPM2B_PUBLIC) without the nonce, is refused.
        let former: [u8; 64] = default_provider()
            .digests
            .digest(HashAlgorithm::Sha512, &[&RSA_AK.tpm2b_public()])
            .as_bytes()
            .try_into()
            .unwrap();
        let former = ReportBuilder::for_leaf(leaf)
            .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
            .report_data(former)
            .sign(leaf);
        let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&former, leaf);
        assert!(matches!(ev.reject(&v, NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");
        // A SHA-256 binding zero-padded to 64 bytes (Azure style) is not it either.
        let mut rd = [0u8; 64];
        rd[..32].copy_from_slice(&tpm::sha256(&[&RSA_AK.tpm2b_public()]));
        let sha256_style =
            ReportBuilder::for_leaf(leaf).mask_chip_key(leaf.kind == SigningKeyKind::Vlek).report_data(rd).sign(leaf);
        let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&sha256_style, leaf);
        assert!(matches!(ev.reject(&v, NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");
    }
}

#[test]
fn aws_refuses_a_vcek_signed_report() {
    let v = validator(Variant::AwsSevSnp, PcrPolicy::default());
    let ev = snp_evidence(Variant::AwsSevSnp, &RSA_AK, &VCEK, ReportBuilder::for_leaf(&VCEK));
    // A policy violation of the signing-key check: the variant requires a VLEK.
    assert_eq!(
        ev.reject(&v, NONCE),
        Error::Policy(PolicyViolation {
            check: Check::SigningKey,
            expected: Value::Text("VLEK"),
            found: Value::Text("VCEK")
        })
    );
}

#[test]
fn gcp_refuses_a_vlek_signed_report() {
    let v = validator(Variant::GcpSevSnp, PcrPolicy::default());
    let ev = snp_evidence(Variant::GcpSevSnp, &ECC_AK, &VLEK, ReportBuilder::for_leaf(&VLEK).mask_chip_key(true));
    assert_eq!(
        ev.reject(&v, NONCE),
        Error::Policy(PolicyViolation {
            check: Check::SigningKey,
            expected: Value::Text("VCEK"),
            found: Value::Text("VLEK")
        })
    );
}

#[test]
fn snp_policy_failures_propagate() {
    for (variant, leaf) in [(Variant::AwsSevSnp, &*VLEK), (Variant::GcpSevSnp, &*VCEK)] {
        let v = validator(variant, PcrPolicy::default());
        let base = ReportBuilder::for_leaf(leaf).mask_chip_key(leaf.kind == SigningKeyKind::Vlek);
        // Guest policy bit 19: debugging allowed.
        let ev = snp_evidence(variant, &RSA_AK, leaf, base.clone().policy(0x3_0000 | (1 << 19)));
        assert!(
            matches!(ev.reject(&v, NONCE), Error::Policy(PolicyViolation { check: Check::Debug, .. })),
            "{variant}"
        );
        // VMPL 1 where the default policy requires 0.
        let ev = snp_evidence(variant, &RSA_AK, leaf, base.clone().vmpl(1));
        assert!(matches!(ev.reject(&v, NONCE), Error::Policy(PolicyViolation { check: Check::Vmpl, .. })), "{variant}");
        // A policy that allows debugging accepts the same report.
        let lenient = Validator::new(
            variant,
            Arc::clone(&VERIFIER),
            SnpPolicy { allow_debug: true, ..pinned_policy() },
            PcrPolicy::default(),
        );
        let ev = snp_evidence(variant, &RSA_AK, leaf, base.clone().policy(0x3_0000 | (1 << 19)));
        ev.validate(&lenient, NONCE).unwrap();
        // The report's signature is checked: a REPORT_DATA rewritten after signing.
        let mut ev = snp_evidence(variant, &RSA_AK, leaf, base);
        ev.snp_report[0x50] ^= 1;
        assert_eq!(ev.reject(&v, NONCE), Error::ReportSignatureInvalid, "{variant}");
    }
}

#[test]
fn snp_variants_need_snp_evidence_and_a_restricted_ak() {
    for variant in [Variant::AwsSevSnp, Variant::GcpSevSnp] {
        let v = validator(variant, PcrPolicy::default());
        let ev = Evidence::tpm(variant, &RSA_AK);
        assert_eq!(ev.reject(&v, NONCE), Error::MissingEvidence { what: "SNP evidence" }, "{variant}");
        // A hardware-bound AK must still be a restricted signing key.
        let attrs = AK_ATTRIBUTES & !attributes::RESTRICTED;
        let leaf = if variant == Variant::AwsSevSnp { &*VLEK } else { &*VCEK };
        let mut ev = Evidence::tpm(variant, &RSA_AK);
        ev.ak_public = RSA_AK.tpm2b_public_with(attrs);
        let report = ReportBuilder::for_leaf(leaf)
            .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
            .report_data(snp_binding(&ev.ak_public))
            .sign(leaf);
        let ev = ev.with_snp(&report, leaf);
        assert_eq!(ev.reject(&v, NONCE), Error::AkAttributes { attributes: attrs, reason: "not restricted" });
        // Another nonce: the hardware binding refuses it first.
        let ev = aws_or_gcp(variant);
        assert!(matches!(ev.reject(&v, OTHER_NONCE), Error::FreshnessBindingMismatch { .. }), "{variant}");
        // A report bound to the verifier's nonce next to a quote for another: the quote's nonce is still checked.
        let report = ReportBuilder::for_leaf(leaf)
            .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
            .report_data(snp_binding_for(&RSA_AK.tpm2b_public(), OTHER_NONCE))
            .sign(leaf);
        let ev = Evidence::tpm(variant, &RSA_AK).with_snp(&report, leaf);
        assert!(matches!(ev.reject(&v, OTHER_NONCE), Error::NonceMismatch { .. }), "{variant}");
    }
}

fn aws_or_gcp(variant: Variant) -> Evidence {
    if variant == Variant::AwsSevSnp {
        aws_evidence(&RSA_AK, ReportBuilder::for_leaf(&VLEK))
    } else {
        gcp_evidence(&RSA_AK, ReportBuilder::for_leaf(&VCEK))
    }
}

// ---- azure-sev-snp -------------------------------------------------------------------------------------

/// An Azure document: runtime data with `jwks`, an HCL report whose SNP report (VCEK) binds that runtime data,
/// and a quote by `quoter`.
fn azure_evidence(jwks: &[&str], quoter: &SoftAk) -> Evidence {
    let json = runtime_json(jwks);
    let report = ReportBuilder::for_leaf(&VCEK).report_data(hcl_report_data(&json)).sign(&VCEK);
    let mut ev = Evidence::tpm(Variant::AzureSevSnp, quoter);
    // The AK comes from the runtime data; the document's AK public is not needed.
    ev.ak_public = Vec::new();
    ev.leaf.clone_from(&VCEK.der);
    ev.hcl_report = hcl_report(&report, &json);
    ev
}

#[test]
fn azure_hcl_report_binding_the_ak_validates() {
    let pcrs = boot_pcrs();
    let v = validator(Variant::AzureSevSnp, expect(&pcrs, &[0, 1, 2, 3, 4, 5, 6, 7]));
    let ev = azure_evidence(&[&RSA_AK.jwk(), &OTHER_RSA_AK.jwk_with_kid("HCLEkPub")], &RSA_AK);
    assert_eq!(ev.hcl_report.len(), tpm::HCL_REPORT_NV_SIZE);
    let ok = ev.validate(&v, NONCE).unwrap();
    assert_eq!(ok.variant, Variant::AzureSevSnp);
    assert_eq!(ok.ak_basis, AkBasis::HardwareReport);
    assert_eq!(ok.snp_signer, Some(CertRole::Vcek));
    let json = runtime_json(&[&RSA_AK.jwk(), &OTHER_RSA_AK.jwk_with_kid("HCLEkPub")]);
    assert_eq!(ok.report_data, Some(hcl_report_data(&json)));
    assert_eq!(ok.pcrs.len(), 8);
    // The signature as bare RSA bytes (Azure's quote bundles) works as well.
    let raw = Evidence { signature: RSA_AK.sign_raw(&ev.attest), raw_rsa: true, ..ev.clone() };
    raw.validate(&v, NONCE).unwrap();
    // The document's ak_public is ignored: the AK is the one in the runtime data.
    let with_other = Evidence { ak_public: OTHER_RSA_AK.tpm2b_public(), ..ev };
    with_other.validate(&v, NONCE).unwrap();
}

#[test]
fn azure_runtime_data_altered_after_signing_is_an_ak_binding_mismatch() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let ev = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    let bound = hcl_report_data(&runtime_json(&[&RSA_AK.jwk()]));
    // One byte of the runtime JSON changed in place ("secure-boot":true → "secure-boot":True).
    let mut flipped = ev.clone();
    let key = b"\"secure-boot\":true";
    let at = 0x4D4 + runtime_json(&[&RSA_AK.jwk()]).windows(key.len()).position(|w| w == key).unwrap();
    flipped.hcl_report[at + key.len() - 4] = b'T';
    assert!(matches!(flipped.reject(&v, NONCE), Error::AkBindingMismatch { found, .. } if found.as_slice() == bound));
    // The attacker's AK substituted into the runtime data, quote signed by it, same SNP report.
    let json = runtime_json(&[&OTHER_RSA_AK.jwk()]);
    let report: [u8; 0x4A0] = ev.hcl_report[0x20..0x4C0].try_into().unwrap();
    let swapped =
        Evidence { hcl_report: hcl_report(&report, &json), ..azure_evidence(&[&RSA_AK.jwk()], &OTHER_RSA_AK) };
    assert_eq!(
        swapped.reject(&v, NONCE),
        Error::AkBindingMismatch { expected: Bytes::new(&hcl_report_data(&json)), found: Bytes::new(&bound) }
    );
    // REPORT_DATA's second half must be zero.
    let json = runtime_json(&[&RSA_AK.jwk()]);
    let mut rd = hcl_report_data(&json);
    rd[63] = 1;
    let report = ReportBuilder::for_leaf(&VCEK).report_data(rd).sign(&VCEK);
    let ev = Evidence { hcl_report: hcl_report(&report, &json), ..ev };
    assert!(matches!(ev.reject(&v, NONCE), Error::AkBindingMismatch { .. }));
}

#[test]
fn azure_runtime_data_without_hclakpub_is_a_runtime_data_error() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let ev = azure_evidence(&[&RSA_AK.jwk_with_kid("HCLEkPub")], &RSA_AK);
    assert_eq!(ev.reject(&v, NONCE), Error::RuntimeData { reason: "no HCLAkPub key" });
    let ev = azure_evidence(&[], &RSA_AK);
    assert_eq!(ev.reject(&v, NONCE), Error::RuntimeData { reason: "no HCLAkPub key" });
    // Two HCLAkPub keys are ambiguous.
    let ev = azure_evidence(&[&RSA_AK.jwk(), &OTHER_RSA_AK.jwk()], &RSA_AK);
    assert_eq!(ev.reject(&v, NONCE), Error::RuntimeData { reason: "more than one HCLAkPub key" });
}

#[test]
fn azure_quote_signed_by_another_key_is_a_signature_error() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let ev = azure_evidence(&[&RSA_AK.jwk()], &OTHER_RSA_AK);
    assert_eq!(ev.reject(&v, NONCE), Error::QuoteSignatureInvalid);
    let ev = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    let raw = Evidence { signature: OTHER_RSA_AK.sign_raw(&ev.attest), raw_rsa: true, ..ev.clone() };
    assert_eq!(raw.reject(&v, NONCE), Error::QuoteSignatureInvalid);
    // An ECC quote cannot verify under the RSA HCLAkPub.
    let ecc = Evidence { signature: ECC_AK.sign(&ev.attest), ..ev };
    assert_eq!(ecc.reject(&v, NONCE), Error::QuoteSignatureInvalid);
}

#[test]
fn azure_nonce_pcrs_and_snp_policy_are_checked() {
    let pcrs = boot_pcrs();
    let ev = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    assert!(matches!(ev.reject(&v, OTHER_NONCE), Error::NonceMismatch { .. }));
    let mut altered = ev.clone();
    altered.pcrs[0][0] ^= 1;
    assert!(matches!(altered.reject(&v, NONCE), Error::PcrDigestMismatch { .. }));
    let mut policy = expect(&pcrs, &[7]);
    policy.entries[0].expected[0] ^= 1;
    let strict = validator(Variant::AzureSevSnp, policy);
    assert!(matches!(ev.reject(&strict, NONCE), Error::PcrMismatch { pcr: 7, .. }));
    // A debug guest.
    let json = runtime_json(&[&RSA_AK.jwk()]);
    let report =
        ReportBuilder::for_leaf(&VCEK).policy(0x3_0000 | (1 << 19)).report_data(hcl_report_data(&json)).sign(&VCEK);
    let debug = Evidence { hcl_report: hcl_report(&report, &json), ..ev.clone() };
    assert!(matches!(debug.reject(&v, NONCE), Error::Policy(PolicyViolation { check: Check::Debug, .. })));
    // Missing parts.
    let no_vcek = Evidence { leaf: Vec::new(), ..ev.clone() };
    assert_eq!(no_vcek.reject(&v, NONCE), Error::MissingEvidence { what: "the VCEK" });
    let no_hcl = Evidence { hcl_report: Vec::new(), ..ev };
    assert!(matches!(no_hcl.reject(&v, NONCE), Error::Truncated { structure: "HCL report", .. }));
}

#[test]
fn azure_hcl_hash_type_other_than_sha256_is_refused() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let ev = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    let json = runtime_json(&[&RSA_AK.jwk()]);
    let report: [u8; 0x4A0] = ev.hcl_report[0x20..0x4C0].try_into().unwrap();
    for hash_type in [2, 3] {
        let ev = Evidence { hcl_report: tpm::hcl_report_with_hash_type(&report, &json, hash_type), ..ev.clone() };
        assert!(matches!(ev.reject(&v, NONCE), Error::UnsupportedAlgorithm { .. }), "hash_type {hash_type}");
    }
}

#[test]
fn azure_refuses_a_vlek_signed_hcl_report() {
    let v = validator(Variant::AzureSevSnp, PcrPolicy::default());
    let json = runtime_json(&[&RSA_AK.jwk()]);
    let report = ReportBuilder::for_leaf(&VLEK).mask_chip_key(true).report_data(hcl_report_data(&json)).sign(&VLEK);
    let ev = azure_evidence(&[&RSA_AK.jwk()], &RSA_AK);
    let ev = Evidence { hcl_report: hcl_report(&report, &json), leaf: VLEK.der.clone(), ..ev };
    assert_eq!(
        ev.reject(&v, NONCE),
        Error::Policy(PolicyViolation {
            check: Check::SigningKey,
            expected: Value::Text("VCEK"),
            found: Value::Text("VLEK")
        })
    );
}
