//! The TDX variants (`azure-tdx`, `qemu-tdx`) through the one [`Validator`]: positive paths against the
//! generated Intel-like PKI and software TPM, one negative per binding, launch pinning, and the real Azure
//! TDX evidence (trustee-az-tdx-vtpm), whose platform has no collateral in any source here.

mod common;

use attest_engine::UnixTime;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::error::{Bytes, Error};
use attest_engine::policy::LaunchPinning;
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tdx::{Collateral, TdQuote, TdxCheck, TdxPolicy, TdxVerifier, ccel};
use attest_engine::tpm::{PcrValues, QuoteSignature};
use attest_engine::variant::tdx::qemu_report_data;
use attest_engine::variant::{AkBasis, Document, PcrExpectation, PcrPolicy, TpmEvidence, Validator, Variant};
use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec, hcl_report_tdx, qe_identity_json, tcb_info_json};
use attest_test_support::tpm::{self, PcrBank, QuoteSpec as TpmQuoteSpec, SoftAk, runtime_json};
use std::sync::{Arc, LazyLock};

const NONCE: &[u8] = b"verifier nonce";
const USER_DATA: &[u8] = b"spki digest";
const INSTANCE_INFO: &[u8] = b"{\"vm\":\"td-1\"}";
const NOW: &str = "2024-01-15T00:00:00Z";

static PKI: LazyLock<IntelPki> = LazyLock::new(IntelPki::new);
static AK: LazyLock<SoftAk> = LazyLock::new(SoftAk::rsa);

fn comps(prefix: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..prefix.len()].copy_from_slice(prefix);
    c
}

fn verifier() -> Arc<TdxVerifier> {
    let window = ("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z");
    let tcb = tcb_info_json(
        PckSpec::default().fmspc,
        window,
        &[(comps(&[5, 5, 2, 2, 3, 1, 0, 3]), 11, comps(&[3, 0, 5]), "UpToDate", &[])],
        &[(4, "UpToDate")],
    );
    let qe = qe_identity_json(window, &[(4, "UpToDate")]);
    let v = TdxVerifier::dangerous_with_root(default_provider(), PKI.root_der().to_vec());
    let bundle = PKI.bundle(&tcb, &qe, (1_704_067_200, 1_706_745_600), &[], &[]);
    v.set_collateral(&Collateral::from_bundle_json(bundle.as_bytes()).unwrap()).unwrap();
    Arc::new(v)
}

/// A policy that pins the synthetic TDs' MRTD (the test PKI's quotes carry 0x11 × 48).
fn pinned() -> TdxPolicy {
    let mut policy = TdxPolicy::default();
    policy.mrtd.push(attest_engine::policy::Hex([0x11; 48]));
    policy
}

/// The one validator type, for a TDX variant.
fn tdx_validator(variant: Variant, tdx: Arc<TdxVerifier>, policy: TdxPolicy, pcrs: PcrPolicy) -> Validator {
    Validator::new(variant, Arc::new(SnpVerifier::new()), SnpPolicy::default(), pcrs).with_tdx(tdx, policy)
}

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

fn pcrs() -> PcrBank {
    let mut p = [[0u8; 32]; 24];
    for (i, v) in p.iter_mut().enumerate() {
        *v = tpm::sha256(&[b"pcr", &[i as u8]]);
    }
    p
}

/// An azure-tdx document's parts.
struct Azure {
    hcl: Vec<u8>,
    td_quote: Vec<u8>,
    attest: Vec<u8>,
    signature: Vec<u8>,
    pcrs: PcrBank,
}

impl Azure {
    /// Runtime data with the AK; a TD quote binding `bound_json` (normally the same runtime data); the HCL
    /// report's TD report with `hcl_mrtd`; a vTPM quote for `extra`.
    fn new(bound_json: Option<&[u8]>, hcl_mrtd: [u8; 48], extra: &[u8]) -> Self {
        let json = runtime_json(&[&AK.jwk()]);
        let mut rd = [0u8; 64];
        rd[..32].copy_from_slice(&tpm::sha256(&[bound_json.unwrap_or(&json)]));
        let pck = PKI.issue_pck(&PckSpec::default());
        let td_quote = PKI.quote(&pck, &QuoteSpec { report_data: rd, trailing: vec![0; 70], ..QuoteSpec::default() });
        let mut hcl_rd = [0u8; 64];
        hcl_rd[..32].copy_from_slice(&tpm::sha256(&[&json]));
        let hcl = hcl_report_tdx(&hcl_rd, &hcl_mrtd, &json);
        let pcrs = pcrs();
        let q = AK.quote(&TpmQuoteSpec::new(extra, &pcrs, 0xFF_FFFF));
        Self { hcl, td_quote, attest: q.attest, signature: q.signature, pcrs }
    }

    fn good() -> Self {
        let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
        Self::new(None, [0x11; 48], &extra)
    }

    fn validate(&self, validator: &Validator) -> Result<(AkBasis, usize), Error> {
        let mut values = PcrValues::new();
        for (i, v) in self.pcrs.iter().enumerate() {
            values.set(HashAlgorithm::Sha256, i, v).unwrap();
        }
        let doc = Document {
            variant: "azure-tdx",
            tpm: Some(TpmEvidence {
                ak_public: &[],
                attest: &self.attest,
                signature: QuoteSignature::Tpmt(&self.signature),
                pcrs: &values,
                event_log: &[],
                ak_certificate: &[],
            }),
            snp: None,
            hcl_report: &self.hcl,
            instance_info: INSTANCE_INFO,
            user_data: USER_DATA,
            td_quote: &self.td_quote,
            td_event_log: &[],
        };
        let ok = validator.validate(&doc, NONCE, at(NOW))?;
        assert_eq!(ok.variant, Variant::AzureTdx);
        assert!(ok.quote.is_some() && ok.td.is_some() && ok.snp.is_none());
        assert_eq!(ok.launch, LaunchPinning::Measurement);
        Ok((ok.ak_basis.unwrap(), ok.pcrs.len()))
    }
}

fn azure_validator() -> Validator {
    let p = pcrs();
    let expect = PcrPolicy {
        entries: (0..8).map(|i| PcrExpectation { index: i, expected: p[usize::from(i)], warn_only: false }).collect(),
    };
    tdx_validator(Variant::AzureTdx, verifier(), pinned(), expect)
}

#[test]
fn variant_names_and_oids() {
    for v in Variant::ALL {
        assert_eq!(Variant::from_name(v.name()), Some(v));
        assert_eq!(Variant::from_oid(v.oid()), Some(v));
    }
    assert_eq!(Variant::AzureTdx.oid(), "1.3.9900.4.3");
    assert_eq!(Variant::QemuTdx.oid(), "1.3.9900.5.99");
    assert!(Variant::AzureTdx.is_tdx() && Variant::QemuTdx.is_tdx() && !Variant::QemuVtpm.is_tdx());
    assert!(!Variant::QemuTdx.has_vtpm() && Variant::AzureTdx.has_vtpm());
}

/// Both TDX variants refuse to validate under a policy that pins no MRTD, before anything is verified;
/// the named waiver lets them through and is reported.
#[test]
fn tdx_launch_must_be_pinned() {
    let rd = qemu_report_data(default_provider(), USER_DATA, NONCE);
    let pck = PKI.issue_pck(&PckSpec::default());
    let quote = PKI.quote(&pck, &QuoteSpec { report_data: rd, ..QuoteSpec::default() });
    for variant in [Variant::QemuTdx, Variant::AzureTdx] {
        let v = tdx_validator(variant, verifier(), TdxPolicy::default(), PcrPolicy::default());
        assert_eq!(v.launch_pinning(), Err(Error::LaunchUnpinned), "{variant}");
        let mut doc = qemu_doc(&quote, &[]);
        doc.variant = variant.name();
        assert_eq!(v.validate(&doc, NONCE, at(NOW)).unwrap_err(), Error::LaunchUnpinned, "{variant}");
    }
    let waived = TdxPolicy::from_toml("dangerous_allow_unpinned_launch = true").unwrap();
    let v = tdx_validator(Variant::QemuTdx, verifier(), waived, PcrPolicy::default());
    let ok = v.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap();
    assert_eq!(ok.launch, LaunchPinning::DangerouslyUnpinned);
    assert_eq!(ok.td.unwrap().verdict().outcome(TdxCheck::Mrtd), attest_engine::policy::Outcome::Waived);
    // Another MRTD than the pinned one.
    let mut other = TdxPolicy::default();
    other.mrtd.push(attest_engine::policy::Hex([0x22; 48]));
    let v = tdx_validator(Variant::QemuTdx, verifier(), other, PcrPolicy::default());
    assert_eq!(v.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap_err().check_tdx(), Some(TdxCheck::Mrtd));
}

/// qemu-tdx has no vTPM: expected PCRs are a configuration error, never silently unchecked.
#[test]
fn qemu_tdx_refuses_pcr_expectations() {
    let rd = qemu_report_data(default_provider(), USER_DATA, NONCE);
    let pck = PKI.issue_pck(&PckSpec::default());
    let quote = PKI.quote(&pck, &QuoteSpec { report_data: rd, ..QuoteSpec::default() });
    let pcrs = PcrPolicy { entries: vec![PcrExpectation { index: 0, expected: [0; 32], warn_only: true }] };
    let v = tdx_validator(Variant::QemuTdx, verifier(), pinned(), pcrs);
    assert!(matches!(v.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)), Err(Error::Misuse { .. })));
}

#[test]
fn azure_tdx_validates_and_each_binding_matters() {
    let v = azure_validator();
    assert_eq!(Azure::good().validate(&v), Ok((AkBasis::HardwareReport, 8)));
    // The TD quote binds other runtime data.
    let extra = Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, NONCE);
    let other = Azure::new(Some(b"{\"keys\":[]}"), [0x11; 48], &extra);
    assert!(matches!(other.validate(&v), Err(Error::AkBindingMismatch { .. })));
    // The HCL report's TD report is another TD's.
    let other_td = Azure::new(None, [0x22; 48], &extra);
    assert!(matches!(other_td.validate(&v), Err(Error::AkBindingMismatch { .. })));
    // The vTPM quote is for another nonce.
    let stale =
        Azure::new(None, [0x11; 48], &Validator::quote_nonce(default_provider(), INSTANCE_INFO, USER_DATA, b"old"));
    assert!(matches!(stale.validate(&v), Err(Error::NonceMismatch { .. })));
    // Runtime data altered after the quote: the binding breaks.
    let mut altered = Azure::good();
    let pos = 0x20 + 0x4A0 + 20 + 10;
    altered.hcl[pos] ^= 0x20;
    assert!(altered.validate(&v).is_err());
    // No TD quote; no TPM evidence; wrong variant.
    let mut none = Azure::good();
    none.td_quote.clear();
    assert_eq!(none.validate(&v), Err(Error::MissingEvidence { what: "a TD quote" }));
    let good = Azure::good();
    let doc = Document {
        variant: "azure-tdx",
        tpm: None,
        snp: None,
        hcl_report: &good.hcl,
        instance_info: INSTANCE_INFO,
        user_data: USER_DATA,
        td_quote: &good.td_quote,
        td_event_log: &[],
    };
    assert_eq!(v.validate(&doc, NONCE, at(NOW)).unwrap_err(), Error::MissingEvidence { what: "TPM evidence" });
    let qemu = tdx_validator(Variant::QemuTdx, verifier(), pinned(), PcrPolicy::default());
    assert!(matches!(Azure::good().validate(&qemu), Err(Error::VariantMismatch { expected: "qemu-tdx", .. })));
    // A PCR expectation not met.
    let mut wrong = PcrPolicy::default();
    wrong.entries.push(PcrExpectation { index: 4, expected: [0; 32], warn_only: false });
    let strict = tdx_validator(Variant::AzureTdx, verifier(), pinned(), wrong);
    assert!(matches!(Azure::good().validate(&strict), Err(Error::PcrMismatch { pcr: 4, .. })));
}

fn qemu_doc<'a>(td_quote: &'a [u8], log: &'a [u8]) -> Document<'a> {
    Document {
        variant: "qemu-tdx",
        tpm: None,
        snp: None,
        hcl_report: &[],
        instance_info: &[],
        user_data: USER_DATA,
        td_quote,
        td_event_log: log,
    }
}

#[test]
fn qemu_tdx_validates_with_its_event_log() {
    let Some(dir) = common::testdata() else { return };
    let log = common::read(&dir, "go-tdx-guest/ccel/ccel_data.dat");
    let replay = ccel::replay(default_provider(), &log).unwrap();
    let rd = qemu_report_data(default_provider(), USER_DATA, NONCE);
    let pck = PKI.issue_pck(&PckSpec::default());
    let quote = PKI.quote(&pck, &QuoteSpec { report_data: rd, rtmrs: replay.rtmrs, ..QuoteSpec::default() });
    let v = tdx_validator(Variant::QemuTdx, verifier(), pinned(), PcrPolicy::default());
    let ok = v.validate(&qemu_doc(&quote, &log), NONCE, at(NOW)).unwrap();
    assert_eq!(ok.ccel.unwrap().touched, 0b0111);
    assert!(ok.quote.is_none() && ok.ak_basis.is_none() && ok.snp.is_none() && !ok.event_log_replayed);
    assert_eq!(ok.launch, LaunchPinning::Measurement);
    assert_eq!(ok.td.as_ref().unwrap().verdict().outcome(TdxCheck::ReportData), attest_engine::policy::Outcome::Passed);
    assert_eq!(ok.td.as_ref().unwrap().verdict().outcome(TdxCheck::Mrtd), attest_engine::policy::Outcome::Passed);
    // The EAR appraisal of a qemu-tdx verdict comes from the TD quote.
    let ear = attest_engine::ear::Appraisal::from_validated(&ok);
    assert_eq!(ear.submod, "qemu-tdx");
    assert_eq!(ear.vector.hardware, Some(attest_engine::ear::AFFIRMING));
    // Without the log: valid, nothing replayed.
    assert!(v.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap().ccel.is_none());
    // Another nonce: REPORTDATA does not bind it.
    assert_eq!(
        v.validate(&qemu_doc(&quote, &[]), b"other", at(NOW)).unwrap_err().check_tdx(),
        Some(TdxCheck::ReportData)
    );
    // A log that does not replay to the quote's RTMRs.
    let mut rtmrs = replay.rtmrs;
    rtmrs[1][0] ^= 1;
    let q2 = PKI.quote(&pck, &QuoteSpec { report_data: rd, rtmrs, ..QuoteSpec::default() });
    assert!(matches!(v.validate(&qemu_doc(&q2, &log), NONCE, at(NOW)), Err(Error::RtmrReplayMismatch { rtmr: 1, .. })));
}

/// The real Azure TDX evidence: every binding holds (runtime data ↔ TD quote REPORTDATA, HCL TD report ↔
/// quote, vTPM quote under HCLAkPub with trustee's nonce), and the full validation stops where the shipped
/// data ends: no Intel collateral exists here for its platform (FMSPC 00806f050000).
#[test]
fn real_azure_tdx_evidence() {
    let Some(dir) = common::testdata() else { return };
    let provider = default_provider();
    let hcl_bytes = common::read(&dir, "trustee-az-tdx-vtpm/hcl-report.bin");
    let td_quote = common::read(&dir, "trustee-az-tdx-vtpm/td-quote.bin");
    let hcl = attest_engine::azure::HclReport::parse(&hcl_bytes).unwrap();
    assert_eq!(hcl.report_type(), attest_engine::azure::hcl::HardwareReportType::Tdx);
    let verifier = TdxVerifier::new();
    let (q, pck) = verifier.dangerous_verify_signatures_only(&td_quote, at("2025-01-01T00:00:00Z")).unwrap();
    assert_eq!(hex::encode(pck.fmspc), "00806f050000");
    let mut expected = [0u8; 64];
    expected[..32].copy_from_slice(&provider.digests.sha256(hcl.variable_data()));
    assert_eq!(q.body().report_data(), &expected);
    assert_eq!(&hcl.hardware_report()[128..192], q.body().report_data());
    assert_eq!(&hcl.hardware_report()[528..576], q.body().mr_td());
    // The vTPM quote verifies under HCLAkPub for trustee's nonce "challenge".
    let bundle = common::read(&dir, "trustee-az-tdx-vtpm/quote.bin");
    let word = |at: usize| u64::from_le_bytes(bundle[at..at + 8].try_into().unwrap()) as usize;
    let sig_len = word(0);
    let sig = &bundle[8..8 + sig_len];
    let attest_len = word(8 + sig_len);
    let attest = &bundle[16 + sig_len..16 + sig_len + attest_len];
    let base = 24 + sig_len + attest_len;
    let mut values = PcrValues::new();
    for i in 0..word(base - 8) {
        values.set(HashAlgorithm::Sha256, i, &bundle[base + 32 * i..base + 32 * (i + 1)]).unwrap();
    }
    let runtime = attest_engine::azure::RuntimeData::parse(hcl.variable_data()).unwrap();
    let req = attest_engine::tpm::QuoteRequest {
        attest,
        signature: QuoteSignature::RsaRaw { scheme: attest_engine::tpm::SigScheme::RsaSsa(HashAlgorithm::Sha256), sig },
        ak: runtime.ak().ak_public(),
        ak_scheme: None,
        pcrs: &values,
        nonce: b"challenge",
        allow_sha1: false,
    };
    attest_engine::tpm::verify_quote(provider, &req).unwrap();
    // Upstream's negative: HCL byte 0x880 + 1 (inside the runtime data) breaks the REPORTDATA binding.
    let mut tampered = hcl_bytes.clone();
    tampered[0x880] = tampered[0x880].wrapping_add(1);
    let t = attest_engine::azure::HclReport::parse(&tampered).unwrap();
    assert_ne!(provider.digests.sha256(t.variable_data())[..], q.body().report_data()[..32]);
    // The validator: the TD quote cannot be appraised (no collateral for its FMSPC).
    let doc = Document {
        variant: "azure-tdx",
        tpm: Some(TpmEvidence {
            ak_public: &[],
            attest,
            signature: QuoteSignature::RsaRaw {
                scheme: attest_engine::tpm::SigScheme::RsaSsa(HashAlgorithm::Sha256),
                sig,
            },
            pcrs: &values,
            event_log: &[],
            ak_certificate: &[],
        }),
        snp: None,
        hcl_report: &hcl_bytes,
        instance_info: &[],
        user_data: &[],
        td_quote: &td_quote,
        td_event_log: &[],
    };
    let mut policy = TdxPolicy::default();
    policy.mrtd.push(attest_engine::policy::Hex(q.body().mr_td().to_owned()));
    let v = tdx_validator(Variant::AzureTdx, Arc::new(verifier), policy, PcrPolicy::default());
    let e = v.validate(&doc, b"challenge", at("2025-01-01T00:00:00Z")).unwrap_err();
    assert_eq!(e, Error::CollateralMissing { fmspc: Bytes::new(&pck.fmspc) });
    let _ = TdQuote::parse_prefix(&td_quote).unwrap();
}

/// Every real Azure TDX HCL report binds its runtime data: TDREPORT type 0x81 and REPORTDATA =
/// SHA-256(runtime data) ‖ 0³², with an HCLAkPub in the runtime data; one changed runtime-data byte breaks it.
#[test]
fn real_azure_tdx_hcl_reports_bind_their_runtime_data() {
    let Some(dir) = common::testdata() else { return };
    let provider = default_provider();
    for (file, first) in [
        ("trustee-az-tdx-vtpm/hcl-report.bin", "9734504f161d104c"),
        ("constellation-azure-tdx/hclreport.bin", "1b2d148a60baa979"),
        ("azure-cvm-tooling/hcl-report-tdx.bin", ""),
    ] {
        let bytes = common::read(&dir, file);
        let hcl = attest_engine::azure::HclReport::parse(&bytes).unwrap();
        let rd = attest_engine::variant::tdx::hcl_report_data(provider, &hcl).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(hex::encode(rd).starts_with(first), "{file}");
        assert_eq!(rd[32..], [0u8; 32]);
        attest_engine::azure::RuntimeData::parse(hcl.variable_data()).unwrap_or_else(|e| panic!("{file}: {e}"));
        let var_start = 0x20 + 0x4A0 + 20;
        let mut tampered = bytes.clone();
        tampered[var_start + 1] ^= 0x01;
        let t = attest_engine::azure::HclReport::parse(&tampered).unwrap();
        assert!(
            matches!(attest_engine::variant::tdx::hcl_report_data(provider, &t), Err(Error::AkBindingMismatch { .. })),
            "{file}"
        );
    }
    // An SNP HCL report is not an azure-tdx one.
    let snp = common::read(&dir, "azure-cvm-tooling/hcl-report-snp.bin");
    let hcl = attest_engine::azure::HclReport::parse(&snp).unwrap();
    assert!(matches!(attest_engine::variant::tdx::hcl_report_data(provider, &hcl), Err(Error::MissingEvidence { .. })));
}

/// Rolling upgrades: a `qemu-tdx` validator admits a TD meeting its own TD policy or any of its
/// alternatives, says which, refuses one meeting none with the main policy's reason, and refuses to run at
/// all when an alternative pins no launch.
#[test]
fn qemu_tdx_accepts_any_of_its_policies_and_each_must_pin_the_launch() {
    let rd = qemu_report_data(default_provider(), USER_DATA, NONCE);
    let pck = PKI.issue_pck(&PckSpec::default());
    let quote = PKI.quote(&pck, &QuoteSpec { report_data: rd, ..QuoteSpec::default() });
    let mut other = TdxPolicy::default();
    other.mrtd.push(attest_engine::policy::Hex([0x22; 48]));
    let only_other = tdx_validator(Variant::QemuTdx, verifier(), other.clone(), PcrPolicy::default());
    let refused = only_other.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap_err();
    assert_eq!(refused.check_tdx(), Some(TdxCheck::Mrtd));
    let rollout = only_other.clone().with_alternatives(Vec::new(), vec![pinned()]);
    let ok = rollout.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap();
    assert_eq!(ok.measurement_set, 1, "admitted under the alternative");
    let own = tdx_validator(Variant::QemuTdx, verifier(), pinned(), PcrPolicy::default())
        .with_alternatives(Vec::new(), vec![other]);
    assert_eq!(own.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).unwrap().measurement_set, 0);
    // An alternative without MRTD would admit any launch: the validator refuses to validate anything.
    let unpinned = only_other.with_alternatives(Vec::new(), vec![TdxPolicy::default()]);
    assert!(unpinned.launch_pinning().is_err());
    assert!(unpinned.validate(&qemu_doc(&quote, &[]), NONCE, at(NOW)).is_err());
}
