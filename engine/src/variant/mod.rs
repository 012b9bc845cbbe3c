//! Attestation variants: how an attestation document is validated, and how its attestation key (AK) is
//! trusted — as in Constellation, the variant decides the AK's root of trust.
//!
//! Every fact about a variant is one row of [`TABLE`] ([`VariantInfo`]: name, OID, Constellation entry,
//! hardware, AK trust, nonce carrier, launch pin, measured registers, node lock register, C code); the [`Validator`] branches on
//! those columns, never on a variant's name:
//!
//! | [`AkTrust`] | the AK is trusted because | variants today |
//! |---|---|---|
//! | [`AkTrust::Registry`] | registered by credential activation against an EK certificate, or pinned (trust on first use) — looked up in an [`AkRegistry`]; never trusted unconditionally | `qemu-vtpm` |
//! | [`AkTrust::HclRuntimeData`] | the hardware evidence (an SNP report signed by the row's signer, or a TD quote) binds the HCL runtime data that carries it ("HCLAkPub") ([`tdx`] for TDX) | `azure-sev-snp`, `azure-tdx` |
//! | [`AkTrust::FreshReportBinding`] | a fresh SNP report, signed by the row's signer (VLEK or VCEK), whose REPORT_DATA binds the AK **and this attestation's nonce** ([`binding`]) | `aws-sev-snp`, `gcp-sev-snp` |
//! | [`AkTrust::ProviderCertificate`] | an AK certificate from Google's EK/AK CA (pinned roots), naming the VM (the `gce` module's docs) | `gcp-shielded-vm` |
//! | [`AkTrust::NoAk`] | — (no vTPM: the TD quote itself binds the nonce; MRTD and RTMR0–3 are the measurements) ([`tdx`]) | `qemu-tdx` |
//!
//! Freshness: `extra = SHA-256(user_data ‖ nonce)`, and the quote's extraData must equal
//! `SHA-256(instance_info ‖ extra)` ([`Validator::quote_nonce`]). Where the vTPM runs outside the TEE
//! ([`NonceCarrier::QuoteAndReport`]) the quote alone proves nothing — the host holds the AK — so the
//! hardware-signed report must carry the same value ([`binding::snp_vtpm_report_data`]); the module
//! [`binding`] says why the others need no more than the quote. The quoted SHA-256 PCRs are then compared
//! with the expected measurements ([`PcrPolicy`]); an event log, when present, must replay to the quoted
//! values.
//!
//! Launch ([`LaunchPin`]): the SNP-based variants refuse to validate unless their SNP policy pins the guest's
//! launch (MEASUREMENT or ID_KEY_DIGEST allow-list) or sets the named waiver `dangerous_allow_unpinned_launch`
//! ([`Validator::launch_pinning`], [`crate::snp::policy`]); PCRs of a host-controlled TPM prove nothing on their
//! own. The TDX variants likewise need an MRTD allow-list in their [`TdxPolicy`] (or the same waiver).
//! Every [`Validated`] says how the launch was pinned.
//!
//! One [`Validator`] serves every variant: SNP verification through its [`SnpVerifier`], TD quotes through its
//! [`TdxVerifier`] ([`Validator::with_tdx`]), GCE AK certificates through its GCE verifier. A variant without
//! a vTPM has no quote and no AK, so a [`Validated`] carries the TPM parts (`quote`, `ak_basis`) as options:
//! `None` only there; every other variant fails without them.

mod gce;
mod identity;
pub mod lock;
mod table;

pub mod tdx;

use crate::azure::{HclReport, RuntimeData};
use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::{Bytes, Error};
use crate::policy::LaunchPinning;
use crate::snp::{SnpPolicy, SnpRequest, SnpVerifier, VerifiedReport};
use crate::tdx::ccel::RtmrReplay;
use crate::tdx::{TdxPolicy, TdxVerifier, VerifiedTdQuote};
use crate::time::UnixTime;
use crate::tpm::{AkPublic, PcrValues, QuoteRequest, QuoteSignature, TpmtPublic, VerifiedQuote, verify_quote};
use core::fmt;
use std::sync::Arc;

pub mod binding;

pub use binding::{SNP_VTPM_REPORT_DATA_LABEL, snp_vtpm_report_data};
pub use identity::{MAX_IDENTITY_TEXT, NodeIdentity};
pub use lock::LockRegister;
pub use table::{
    AkTrust, ConstellationEntry, Hardware, IdentitySource, LaunchPin, Measured, NonceCarrier, TABLE, UnknownVariant,
    Variant, VariantInfo,
};

/// TPM evidence of a document, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct TpmEvidence<'a> {
    /// TPM2B_PUBLIC of the AK (may be empty for Azure, whose AK comes from the HCL runtime data).
    pub ak_public: &'a [u8],
    /// TPMS_ATTEST.
    pub attest: &'a [u8],
    /// The signature.
    pub signature: QuoteSignature<'a>,
    /// Quoted PCR values.
    pub pcrs: &'a PcrValues<'a>,
    /// TCG event log (empty when absent).
    pub event_log: &'a [u8],
    /// The AK certificate (DER), optionally followed by its intermediates (DER, concatenated); empty
    /// when absent. Required by `gcp-shielded-vm`.
    pub ak_certificate: &'a [u8],
}

/// SNP evidence of a document, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct SnpEvidence<'a> {
    /// The report.
    pub report: &'a [u8],
    /// VCEK or VLEK (DER).
    pub leaf: &'a [u8],
    /// ASK/ASVK (DER), optional.
    pub intermediate: Option<&'a [u8]>,
    /// ARK (DER), optional.
    pub root: Option<&'a [u8]>,
}

/// A decoded attestation document, borrowed (the shell decodes the protobuf and builds this).
#[derive(Clone, Copy, Debug)]
pub struct Document<'a> {
    /// The variant string as sent.
    pub variant: &'a str,
    /// TPM evidence.
    pub tpm: Option<TpmEvidence<'a>>,
    /// SNP evidence.
    pub snp: Option<SnpEvidence<'a>>,
    /// Azure HCL report (empty when absent).
    pub hcl_report: &'a [u8],
    /// Instance information.
    pub instance_info: &'a [u8],
    /// User data (aTLS: SHA-256 of the certificate's SPKI).
    pub user_data: &'a [u8],
    /// Intel TDX quote (DCAP v4/v5), as received (empty when absent); TDX variants ([`tdx`]).
    pub td_quote: &'a [u8],
    /// TDX CC event log (CCEL log area), replayed against the quote's RTMRs (empty when absent).
    pub td_event_log: &'a [u8],
}

/// Why an AK is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AkBasis {
    /// Registered after a successful credential activation against a certified EK.
    CredentialActivation,
    /// Pinned when first seen (trust on first use) and recorded.
    TrustOnFirstUse,
    /// Pinned by configuration.
    Pinned,
    /// Bound by a verified hardware report (SNP variants).
    HardwareReport,
    /// Certified by the cloud provider's CA, chained to pinned roots (`gcp-shielded-vm`: Google's EK/AK CA).
    CertifiedByProvider,
}

impl AkBasis {
    /// Every basis.
    pub const ALL: [AkBasis; 5] = [
        AkBasis::CredentialActivation,
        AkBasis::TrustOnFirstUse,
        AkBasis::Pinned,
        AkBasis::HardwareReport,
        AkBasis::CertifiedByProvider,
    ];

    /// The basis's name in verdicts, registries and the C ABI (kebab-case, as serialized).
    pub fn name(self) -> &'static str {
        match self {
            Self::CredentialActivation => "credential-activation",
            Self::TrustOnFirstUse => "trust-on-first-use",
            Self::Pinned => "pinned",
            Self::HardwareReport => "hardware-report",
            Self::CertifiedByProvider => "certified-by-provider",
        }
    }

    /// Parses a basis name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// The set of AKs a `qemu-vtpm` validator trusts, keyed by SHA-256 of the AK's TPMT_PUBLIC.
pub trait AkRegistry: Send + Sync + fmt::Debug {
    /// How `ak_digest` came to be trusted, or `None` when it is not.
    fn lookup(&self, ak_digest: &[u8; 32]) -> Option<AkBasis>;
}

/// A fixed AK registry.
#[derive(Clone, Debug, Default)]
pub struct StaticAkRegistry(pub Vec<([u8; 32], AkBasis)>);

impl AkRegistry for StaticAkRegistry {
    fn lookup(&self, ak_digest: &[u8; 32]) -> Option<AkBasis> {
        self.0.iter().find(|(d, _)| d == ak_digest).map(|(_, b)| *b)
    }
}

/// One expected PCR value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcrExpectation {
    /// PCR index (0..=23).
    pub index: u8,
    /// Expected SHA-256 value.
    pub expected: [u8; 32],
    /// Report a mismatch without rejecting.
    pub warn_only: bool,
}

/// Expected SHA-256 PCR values (from a measurements file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PcrPolicy {
    /// The expectations.
    pub entries: Vec<PcrExpectation>,
}

/// The outcome of one expected PCR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcrOutcome {
    /// Matched.
    Match,
    /// Mismatched but warn-only.
    MismatchWarnOnly,
}

/// A validated document.
#[derive(Clone, Debug)]
pub struct Validated<'a> {
    /// The variant.
    pub variant: Variant,
    /// The verified vTPM quote; `None` only for a variant without a vTPM ([`Variant::has_vtpm`]).
    pub quote: Option<VerifiedQuote<'a>>,
    /// The verified SNP report (SNP variants).
    pub snp: Option<VerifiedReport<'a>>,
    /// The verified TD quote (TDX variants): TCB status, advisory IDs and every TDX check's outcome.
    pub td: Option<VerifiedTdQuote<'a>>,
    /// The CC event log's replay against the TD quote's RTMRs, when the document carries one (TDX variants).
    pub ccel: Option<RtmrReplay>,
    /// Why the AK is trusted; `None` only for `qemu-tdx`, which has no AK.
    pub ak_basis: Option<AkBasis>,
    /// Each expected PCR's outcome.
    pub pcrs: Vec<(u8, PcrOutcome)>,
    /// Whether an event log was replayed against the quote and matched at least one quoted PCR.
    pub event_log_replayed: bool,
    /// The user data bound by the quote.
    pub user_data: &'a [u8],
    /// The VM as the provider's CA certified it (`gcp-shielded-vm`).
    pub instance: Option<crate::gce::InstanceInfo<'a>>,
    /// How the guest's launch is pinned ([`Validator::launch_pinning`]); services log
    /// [`LaunchPinning::DangerouslyUnpinned`] with every verdict.
    pub launch: LaunchPinning,
    /// Which accepted measurement set the document met: 0 for the validator's own, `i` for the `i`-th of
    /// [`Validator::with_alternatives`] (rolling upgrades).
    pub measurement_set: usize,
    /// SHA-256 of the AK's TPMT_PUBLIC, for the variants whose document carries it (every vTPM variant but the
    /// Azure ones, whose AK comes as a JWK in the runtime data).
    pub ak_digest: Option<[u8; 32]>,
    /// Azure's `vmUniqueId` from the runtime data the hardware report binds (Azure variants), 16 bytes in text
    /// order.
    pub vm_id: Option<[u8; 16]>,
}

/// Validates documents of one variant.
#[derive(Clone, Debug)]
pub struct Validator {
    variant: Variant,
    snp: Arc<SnpVerifier>,
    snp_policy: SnpPolicy,
    pcrs: PcrPolicy,
    ak_registry: Option<Arc<dyn AkRegistry>>,
    gce: Arc<crate::gce::GceVerifier>,
    gce_policy: crate::gce::GcePolicy,
    tdx: Arc<TdxVerifier>,
    tdx_policy: TdxPolicy,
    /// Rolling upgrades: further accepted measurement sets, see [`Validator::with_alternatives`].
    alternatives: Alternatives,
}

/// Further accepted measurement sets of a [`Validator`]: PCRs (vTPM variants) and TD policies (`qemu-tdx`).
#[derive(Clone, Debug, Default)]
struct Alternatives {
    pcrs: Vec<PcrPolicy>,
    tdx: Vec<TdxPolicy>,
}

impl Validator {
    /// A validator for `variant` with expected PCRs; SNP variants use `snp` and `snp_policy`.
    pub fn new(variant: Variant, snp: Arc<SnpVerifier>, snp_policy: SnpPolicy, pcrs: PcrPolicy) -> Self {
        Self {
            variant,
            snp,
            snp_policy,
            pcrs,
            ak_registry: None,
            gce: Arc::new(crate::gce::GceVerifier::new()),
            gce_policy: crate::gce::GcePolicy::default(),
            tdx: Arc::new(TdxVerifier::new()),
            tdx_policy: TdxPolicy::default().with_waived(variant.info().td_waivers),
            alternatives: Alternatives::default(),
        }
    }

    /// Rolling upgrades: accepts a document that meets the validator's own measurements **or** any of these
    /// sets, tried in order — `pcrs` for the variants with a vTPM (each a whole [`PcrPolicy`], so values of
    /// two images are never mixed), `tdx` for `qemu-tdx` (each a whole [`TdxPolicy`], which must pin the
    /// launch like the main one: [`Validator::launch_pinning`] checks them all). When no set matches, the
    /// error of the validator's own set is returned. [`Validated::measurement_set`] says which set matched.
    pub fn with_alternatives(mut self, pcrs: Vec<PcrPolicy>, tdx: Vec<TdxPolicy>) -> Self {
        // Each alternative TD policy gets the variant's platform waivers, as the main one does (`with_tdx`).
        let waived = self.variant.info().td_waivers;
        let tdx = tdx.into_iter().map(|p| p.with_waived(waived)).collect();
        self.alternatives = Alternatives { pcrs, tdx };
        self
    }

    /// Sets the GCE verifier (trust anchors) and policy of `gcp-shielded-vm` (default: Google's pinned
    /// roots, [`crate::gce::GcePolicy::default`]).
    pub fn with_gce(mut self, verifier: Arc<crate::gce::GceVerifier>, policy: crate::gce::GcePolicy) -> Self {
        self.gce = verifier;
        self.gce_policy = policy;
        self
    }

    /// Sets the TDX verifier (Intel's pinned root and the installed collateral) and the TD quote policy of
    /// the TDX variants (default: a verifier without collateral, which refuses every quote, and
    /// [`TdxPolicy::default`], which pins no launch and so refuses to validate). For `qemu-tdx`, `policy`
    /// holds the measurements (MRTD, RTMR0–3); for `azure-tdx` they are the vTPM PCRs of the [`PcrPolicy`].
    ///
    /// The TD-attribute checks the variant's platform cannot pass (its row's `td_waivers`) are waived in
    /// `policy` here, whatever it says, and every verdict records them as waived.
    pub fn with_tdx(mut self, verifier: Arc<TdxVerifier>, policy: TdxPolicy) -> Self {
        self.tdx = verifier;
        self.tdx_policy = policy.with_waived(self.variant.info().td_waivers);
        self
    }

    /// Sets the AK registry (required for `qemu-vtpm`).
    pub fn with_ak_registry(mut self, registry: Arc<dyn AkRegistry>) -> Self {
        self.ak_registry = Some(registry);
        self
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The TDX verifier (TDX variants verify TD quotes with it; services install collateral into it).
    pub fn tdx_verifier(&self) -> &Arc<TdxVerifier> {
        &self.tdx
    }

    /// The crypto provider of the variant's hardware verifier.
    fn provider(&self) -> &'static CryptoProvider {
        match self.variant.info().hardware {
            Hardware::Tdx => self.tdx.provider(),
            Hardware::None | Hardware::SevSnp { .. } => self.snp.provider(),
        }
    }

    /// How this validator pins the guest's launch: [`LaunchPinning::NotApplicable`] for `qemu-vtpm` and
    /// `gcp-shielded-vm`, [`SnpPolicy::launch_pinning`] for the SNP variants and [`TdxPolicy::launch_pinning`]
    /// for the TDX variants — an error when the policy pins no launch and does not set the waiver
    /// `dangerous_allow_unpinned_launch`. Services call this at start and refuse to start on error (and log a
    /// warning for [`LaunchPinning::DangerouslyUnpinned`]); [`Validator::validate`] checks it every time.
    pub fn launch_pinning(&self) -> Result<LaunchPinning, Error> {
        match self.variant.info().launch {
            LaunchPin::NotApplicable => Ok(LaunchPinning::NotApplicable),
            LaunchPin::SnpPolicy => self.snp_policy.launch_pinning(),
            LaunchPin::TdxMrtd => {
                // Every accepted TD policy must pin the launch; the main one decides how it is reported.
                for alternative in &self.alternatives.tdx {
                    alternative.launch_pinning()?;
                }
                self.tdx_policy.launch_pinning()
            }
        }
    }

    /// The extraData a quote must carry for `nonce`: SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce)).
    pub fn quote_nonce(provider: &CryptoProvider, instance_info: &[u8], user_data: &[u8], nonce: &[u8]) -> [u8; 32] {
        let extra = provider.digests.digest(HashAlgorithm::Sha256, &[user_data, nonce]);
        let n = provider.digests.digest(HashAlgorithm::Sha256, &[instance_info, extra.as_bytes()]);
        let mut out = [0u8; 32];
        out.copy_from_slice(n.as_bytes());
        out
    }

    /// Validates `doc` for `nonce` at the trusted `time`.
    pub fn validate<'a>(&self, doc: &Document<'a>, nonce: &[u8], time: UnixTime) -> Result<Validated<'a>, Error> {
        if doc.variant != self.variant.name() {
            return Err(Error::VariantMismatch {
                expected: self.variant.name(),
                found: Bytes::new(&doc.variant.as_bytes()[..doc.variant.len().min(64)]),
            });
        }
        let launch = self.launch_pinning()?;
        let info = self.variant.info();
        if info.ak == AkTrust::NoAk {
            return self.validate_td_only(doc, nonce, time, launch);
        }
        let provider = self.provider();
        let tpm = doc.tpm.as_ref().ok_or(Error::MissingEvidence { what: "TPM evidence" })?;
        let tpm_nonce = Self::quote_nonce(provider, doc.instance_info, doc.user_data, nonce);

        // Establish the AK, as the variant's row says it is trusted.
        let runtime;
        let tpmt;
        let mut instance = None;
        let mut gce_ak = None;
        let mut td = None;
        let mut vm_id = None;
        let (ak, ak_scheme, ak_basis, snp): (AkPublic<'_>, _, AkBasis, Option<VerifiedReport<'a>>) =
            match (info.ak, info.hardware) {
                (AkTrust::Registry, _) => {
                    tpmt = TpmtPublic::parse_tpm2b(tpm.ak_public)?;
                    tpmt.check_attestation_key()?;
                    let digest = provider.digests.sha256(tpmt.as_bytes());
                    let basis = self
                        .ak_registry
                        .as_ref()
                        .and_then(|r| r.lookup(&digest))
                        .ok_or(Error::AkNotTrusted { ak_digest: Bytes::new(&digest) })?;
                    (tpmt.key(), tpmt.scheme(), basis, None)
                }
                (AkTrust::HclRuntimeData, Hardware::SevSnp { signer }) => {
                    let hcl = HclReport::parse(doc.hcl_report)?;
                    let report =
                        hcl.snp_report().ok_or(Error::MissingEvidence { what: "an SNP report in the HCL report" })?;
                    let snp_ev = doc.snp.as_ref().ok_or(Error::MissingEvidence { what: "the VCEK" })?;
                    hcl.expected_report_data(provider)?;
                    let verified = self.snp.verify(&snp_request(report, snp_ev, time), &self.snp_policy)?;
                    verified.check_signer(signer.role())?;
                    hcl.check_report_data(provider, verified.report().report_data())?;
                    runtime = RuntimeData::parse(hcl.variable_data())?;
                    vm_id = runtime.vm_unique_id().copied();
                    (runtime.ak().ak_public(), None, AkBasis::HardwareReport, Some(verified))
                }
                (AkTrust::HclRuntimeData, Hardware::Tdx) => {
                    let hcl = HclReport::parse(doc.hcl_report)?;
                    td = Some(tdx::verify_azure_td(&self.tdx, &self.tdx_policy, doc, &hcl, time)?);
                    runtime = RuntimeData::parse(hcl.variable_data())?;
                    vm_id = runtime.vm_unique_id().copied();
                    (runtime.ak().ak_public(), None, AkBasis::HardwareReport, None)
                }
                (AkTrust::FreshReportBinding, Hardware::SevSnp { signer }) => {
                    tpmt = TpmtPublic::parse_tpm2b(tpm.ak_public)?;
                    tpmt.check_attestation_key()?;
                    let snp_ev = doc.snp.as_ref().ok_or(Error::MissingEvidence { what: "SNP evidence" })?;
                    let verified = self.snp.verify(&snp_request(snp_ev.report, snp_ev, time), &self.snp_policy)?;
                    verified.check_signer(signer.role())?;
                    // Freshness inside the TEE: the report binds the AK and this attestation's quote nonce.
                    let binding = snp_vtpm_report_data(provider, tpm.ak_public, &tpm_nonce);
                    if verified.report().report_data() != &binding {
                        return Err(Error::FreshnessBindingMismatch {
                            expected: Bytes::new(&binding),
                            found: Bytes::new(verified.report().report_data()),
                        });
                    }
                    (tpmt.key(), tpmt.scheme(), AkBasis::HardwareReport, Some(verified))
                }
                (AkTrust::ProviderCertificate, _) => {
                    tpmt = TpmtPublic::parse_tpm2b(tpm.ak_public)?;
                    tpmt.check_attestation_key()?;
                    let certified = gce::certify_ak(&self.gce, &self.gce_policy, &tpmt, tpm.ak_certificate, time)?;
                    instance = Some(certified.instance);
                    gce_ak = Some(tpmt);
                    (tpmt.key(), tpmt.scheme(), AkBasis::CertifiedByProvider, None)
                }
                (AkTrust::HclRuntimeData | AkTrust::FreshReportBinding, Hardware::None)
                | (AkTrust::FreshReportBinding, Hardware::Tdx)
                | (AkTrust::NoAk, _) => {
                    return Err(Error::Misuse {
                        reason: "the variant table pairs this AK trust with hardware that cannot carry it",
                    });
                }
            };

        // The AK's digest (every AK that came as a TPMT_PUBLIC): the node identity of the AK-named variants.
        let ak_digest = (!tpm.ak_public.is_empty() && info.ak != AkTrust::HclRuntimeData)
            .then(|| TpmtPublic::parse_tpm2b(tpm.ak_public).map(|t| provider.digests.sha256(t.as_bytes())))
            .transpose()?;
        let quote = verify_quote(
            provider,
            &QuoteRequest {
                attest: tpm.attest,
                signature: tpm.signature,
                ak,
                ak_scheme,
                pcrs: tpm.pcrs,
                nonce: &tpm_nonce,
                allow_sha1: false,
            },
        )?;

        let event_log_replayed = !tpm.event_log.is_empty() && check_event_log(provider, tpm.event_log, &quote)?;
        if let Some(ak) = &gce_ak {
            gce::check_quote(provider, &self.gce_policy, ak, &quote, tpm.event_log)?;
        }
        // The first accepted set the quoted PCRs meet; the main set's error when none does.
        let (measurement_set, pcrs) = match self.pcrs.evaluate(&quote) {
            Ok(pcrs) => (0, pcrs),
            Err(e) => self
                .alternatives
                .pcrs
                .iter()
                .enumerate()
                .find_map(|(i, p)| p.evaluate(&quote).ok().map(|pcrs| (i + 1, pcrs)))
                .ok_or(e)?,
        };
        let ccel = match &td {
            Some(td) => tdx::replay_ccel(provider, doc, td)?,
            None => None,
        };
        Ok(Validated {
            variant: self.variant,
            quote: Some(quote),
            snp,
            td,
            ccel,
            ak_basis: Some(ak_basis),
            pcrs,
            event_log_replayed,
            user_data: doc.user_data,
            instance,
            launch,
            measurement_set,
            ak_digest,
            vm_id,
        })
    }

    /// A variant without a vTPM (`qemu-tdx`): the TD quote alone, its REPORTDATA binding the user data and the
    /// nonce; MRTD and the RTMRs are judged by the [`TdxPolicy`]. A TPM part in the document is not looked at.
    fn validate_td_only<'a>(
        &self,
        doc: &Document<'a>,
        nonce: &[u8],
        time: UnixTime,
        launch: LaunchPinning,
    ) -> Result<Validated<'a>, Error> {
        if !self.pcrs.entries.is_empty() {
            return Err(Error::Misuse {
                reason: "qemu-tdx has no vTPM: its measurements are MRTD and RTMR0-3 in the TdxPolicy, not PCRs",
            });
        }
        // The first accepted TD policy the quote meets (rolling upgrades); the main policy's error otherwise.
        let (measurement_set, td) = match tdx::verify_qemu_td(&self.tdx, &self.tdx_policy, doc, nonce, time) {
            Ok(td) => (0, td),
            Err(e) => self
                .alternatives
                .tdx
                .iter()
                .enumerate()
                .find_map(|(i, p)| tdx::verify_qemu_td(&self.tdx, p, doc, nonce, time).ok().map(|td| (i + 1, td)))
                .ok_or(e)?,
        };
        let ccel = tdx::replay_ccel(self.tdx.provider(), doc, &td)?;
        Ok(Validated {
            variant: self.variant,
            quote: None,
            snp: None,
            td: Some(td),
            ccel,
            ak_basis: None,
            pcrs: Vec::new(),
            event_log_replayed: false,
            user_data: doc.user_data,
            instance: None,
            launch,
            measurement_set,
            ak_digest: None,
            vm_id: None,
        })
    }
}

impl PcrPolicy {
    /// Each expectation's outcome against a verified quote's SHA-256 bank; an enforced mismatch is an error
    /// (the one PCR comparison every TPM-based variant uses).
    pub fn evaluate(&self, quote: &VerifiedQuote<'_>) -> Result<Vec<(u8, PcrOutcome)>, Error> {
        let mut out = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let found = quote.pcr(HashAlgorithm::Sha256, usize::from(e.index));
            if found == Some(&e.expected[..]) {
                out.push((e.index, PcrOutcome::Match));
            } else if e.warn_only {
                out.push((e.index, PcrOutcome::MismatchWarnOnly));
            } else {
                return Err(Error::PcrMismatch {
                    pcr: e.index,
                    expected: Bytes::new(&e.expected),
                    found: Bytes::new(found.unwrap_or_default()),
                });
            }
        }
        Ok(out)
    }
}

fn snp_request<'a>(report: &'a [u8], ev: &SnpEvidence<'a>, time: UnixTime) -> SnpRequest<'a> {
    SnpRequest {
        report,
        leaf: ev.leaf,
        intermediate: ev.intermediate,
        root: ev.root,
        product: None,
        report_data: None,
        time,
    }
}

/// Replays the SHA-256 bank of the event log against the quoted PCRs it touches. Returns whether the log
/// touches at least one quoted PCR (a log that touches none proves nothing, and is reported as not replayed).
pub(crate) fn check_event_log(provider: &CryptoProvider, log: &[u8], quote: &VerifiedQuote<'_>) -> Result<bool, Error> {
    let log = crate::tpm::eventlog::EventLog::parse(log)?;
    let touched = log.replay(provider, HashAlgorithm::Sha256, false)?.touched_mask();
    let mut quoted: Vec<(u8, &[u8])> = Vec::new();
    for i in 0..24u8 {
        if let Some(v) = quote.pcr(HashAlgorithm::Sha256, usize::from(i)) {
            quoted.push((i, v));
        }
    }
    log.check_against(provider, HashAlgorithm::Sha256, &quoted, false)?;
    Ok(quoted.iter().any(|(i, _)| touched & (1 << i) != 0))
}
