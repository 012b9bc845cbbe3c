//! Attestation variants: how an attestation document is validated, and how its attestation key (AK) is
//! trusted — as in Constellation, the variant decides the AK's root of trust.
//!
//! | variant | AK trusted because | hardware evidence |
//! |---|---|---|
//! | `qemu-vtpm` | registered by credential activation against an EK certificate, or pinned (trust on first use) — looked up in an [`AkRegistry`]; never trusted unconditionally | none |
//! | `azure-sev-snp` | the SNP report binds the HCL runtime data that carries it ("HCLAkPub") | HCL report + VCEK |
//! | `aws-sev-snp` | REPORT_DATA = SHA-512(TPM2B_PUBLIC of the AK) in a VLEK-signed report | SNP report + VLEK |
//! | `gcp-sev-snp` | REPORT_DATA = SHA-512(TPM2B_PUBLIC of the AK) in a VCEK-signed report | SNP report + VCEK |
//!
//! Freshness (`docs/ARCHITECTURE.md`, "Evidence"): `extra = SHA-256(user_data ‖ nonce)`, and the quote's extraData must equal
//! `SHA-256(instance_info ‖ extra)`. The quoted SHA-256 PCRs are then compared with the expected
//! measurements ([`PcrPolicy`]); an event log, when present, must replay to the quoted values.

use crate::azure::{HclReport, RuntimeData};
use crate::crypto::{CryptoProvider, Digest, HashAlgorithm};
use crate::error::{Bytes, Error};
use crate::policy::SnpPolicy;
use crate::snp::{SnpRequest, SnpVerifier, VerifiedReport};
use crate::time::UnixTime;
use crate::tpm::{AkPublic, PcrValues, QuoteRequest, QuoteSignature, TpmtPublic, VerifiedQuote, verify_quote};
use core::fmt;
use std::sync::Arc;

/// An attestation variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// QEMU/swtpm vTPM without confidential hardware.
    QemuVtpm,
    /// Azure SEV-SNP confidential VM with the paravisor's vTPM.
    AzureSevSnp,
    /// AWS SEV-SNP instance (VLEK) with a vTPM.
    AwsSevSnp,
    /// GCP SEV-SNP instance (VCEK) with a vTPM.
    GcpSevSnp,
}

impl Variant {
    /// All variants.
    pub const ALL: [Variant; 4] = [Variant::QemuVtpm, Variant::AzureSevSnp, Variant::AwsSevSnp, Variant::GcpSevSnp];

    /// The variant's name in documents and configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::QemuVtpm => "qemu-vtpm",
            Self::AzureSevSnp => "azure-sev-snp",
            Self::AwsSevSnp => "aws-sev-snp",
            Self::GcpSevSnp => "gcp-sev-snp",
        }
    }

    /// Parses a variant name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The X.509 extension OID that carries this variant's document in aTLS certificates, as dotted text
    /// (the arcs Constellation assigned per variant).
    pub fn oid(self) -> &'static str {
        match self {
            Self::QemuVtpm => "1.3.9900.5.1",
            Self::AzureSevSnp => "1.3.9900.3.1",
            Self::AwsSevSnp => "1.3.9900.4.2",
            Self::GcpSevSnp => "1.3.9900.2.2",
        }
    }

    /// The variant whose OID is `dotted`.
    pub fn from_oid(dotted: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.oid() == dotted)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
    /// The verified quote.
    pub quote: VerifiedQuote<'a>,
    /// The verified SNP report (SNP variants).
    pub snp: Option<VerifiedReport<'a>>,
    /// Why the AK is trusted.
    pub ak_basis: AkBasis,
    /// Each expected PCR's outcome.
    pub pcrs: Vec<(u8, PcrOutcome)>,
    /// Whether an event log was replayed against the quote and matched at least one quoted PCR.
    pub event_log_replayed: bool,
    /// The user data bound by the quote.
    pub user_data: &'a [u8],
}

/// Validates documents of one variant.
#[derive(Clone, Debug)]
pub struct Validator {
    variant: Variant,
    snp: Arc<SnpVerifier>,
    snp_policy: SnpPolicy,
    pcrs: PcrPolicy,
    ak_registry: Option<Arc<dyn AkRegistry>>,
}

impl Validator {
    /// A validator for `variant` with expected PCRs; SNP variants use `snp` and `snp_policy`.
    pub fn new(variant: Variant, snp: Arc<SnpVerifier>, snp_policy: SnpPolicy, pcrs: PcrPolicy) -> Self {
        Self { variant, snp, snp_policy, pcrs, ak_registry: None }
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

    /// The extraData a quote must carry for `nonce`: SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce)).
    pub fn quote_nonce(provider: &CryptoProvider, instance_info: &[u8], user_data: &[u8], nonce: &[u8]) -> [u8; 32] {
        let extra = provider.digests.digest(HashAlgorithm::Sha256, &[user_data, nonce]);
        let n = provider.digests.digest(HashAlgorithm::Sha256, &[instance_info, extra.as_bytes()]);
        let mut out = [0u8; 32];
        out.copy_from_slice(n.as_bytes());
        out
    }

    /// SHA-512 of the AK's TPM2B_PUBLIC: what SNP variants put in REPORT_DATA.
    pub fn ak_binding(provider: &CryptoProvider, ak_public: &[u8]) -> Digest {
        provider.digests.digest(HashAlgorithm::Sha512, &[ak_public])
    }

    /// Validates `doc` for `nonce` at the trusted `time`.
    pub fn validate<'a>(&self, doc: &Document<'a>, nonce: &[u8], time: UnixTime) -> Result<Validated<'a>, Error> {
        if doc.variant != self.variant.name() {
            return Err(Error::VariantMismatch {
                expected: self.variant.name(),
                found: Bytes::new(&doc.variant.as_bytes()[..doc.variant.len().min(64)]),
            });
        }
        let provider = self.snp.provider();
        let tpm = doc.tpm.as_ref().ok_or(Error::MissingEvidence { what: "TPM evidence" })?;
        let tpm_nonce = Self::quote_nonce(provider, doc.instance_info, doc.user_data, nonce);

        // Establish the AK.
        let runtime;
        let tpmt;
        let (ak, ak_scheme, ak_basis, snp): (AkPublic<'_>, _, AkBasis, Option<VerifiedReport<'a>>) = match self.variant
        {
            Variant::QemuVtpm => {
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
            Variant::AzureSevSnp => {
                let hcl = HclReport::parse(doc.hcl_report)?;
                let report =
                    hcl.snp_report().ok_or(Error::MissingEvidence { what: "an SNP report in the HCL report" })?;
                let snp_ev = doc.snp.as_ref().ok_or(Error::MissingEvidence { what: "the VCEK" })?;
                if hcl.hash_type() != 1 {
                    return Err(Error::UnsupportedAlgorithm { what: "HCL runtime-data hash (need SHA-256)" });
                }
                let verified = self.snp.verify(&snp_request(report, snp_ev, time), &self.snp_policy)?;
                require_signer(&verified, crate::CertRole::Vcek)?;
                let mut expected = [0u8; 64];
                expected[..32].copy_from_slice(&provider.digests.sha256(hcl.variable_data()));
                if verified.report().report_data() != &expected {
                    return Err(Error::AkBindingMismatch {
                        expected: Bytes::new(&expected),
                        found: Bytes::new(verified.report().report_data()),
                    });
                }
                runtime = RuntimeData::parse(hcl.variable_data())?;
                (runtime.ak().ak_public(), None, AkBasis::HardwareReport, Some(verified))
            }
            Variant::AwsSevSnp | Variant::GcpSevSnp => {
                tpmt = TpmtPublic::parse_tpm2b(tpm.ak_public)?;
                tpmt.check_attestation_key()?;
                let snp_ev = doc.snp.as_ref().ok_or(Error::MissingEvidence { what: "SNP evidence" })?;
                let verified = self.snp.verify(&snp_request(snp_ev.report, snp_ev, time), &self.snp_policy)?;
                let want =
                    if self.variant == Variant::AwsSevSnp { crate::CertRole::Vlek } else { crate::CertRole::Vcek };
                require_signer(&verified, want)?;
                let binding = Self::ak_binding(provider, tpm.ak_public);
                if verified.report().report_data() != binding.as_bytes() {
                    return Err(Error::AkBindingMismatch {
                        expected: Bytes::new(binding.as_bytes()),
                        found: Bytes::new(verified.report().report_data()),
                    });
                }
                (tpmt.key(), tpmt.scheme(), AkBasis::HardwareReport, Some(verified))
            }
        };

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

        let mut pcrs = Vec::with_capacity(self.pcrs.entries.len());
        for e in &self.pcrs.entries {
            let found = quote.pcr(HashAlgorithm::Sha256, usize::from(e.index));
            if found == Some(&e.expected[..]) {
                pcrs.push((e.index, PcrOutcome::Match));
            } else if e.warn_only {
                pcrs.push((e.index, PcrOutcome::MismatchWarnOnly));
            } else {
                return Err(Error::PcrMismatch {
                    pcr: e.index,
                    expected: Bytes::new(&e.expected),
                    found: Bytes::new(found.unwrap_or_default()),
                });
            }
        }
        Ok(Validated {
            variant: self.variant,
            quote,
            snp,
            ak_basis,
            pcrs,
            event_log_replayed,
            user_data: doc.user_data,
        })
    }
}

/// The variant's required signer (AWS: VLEK; Azure and GCP: VCEK), as a policy check on the signing key.
fn require_signer(verified: &VerifiedReport<'_>, want: crate::CertRole) -> Result<(), Error> {
    if verified.signer() == want {
        return Ok(());
    }
    Err(crate::policy::violation(
        crate::policy::Check::SigningKey,
        crate::error::Value::Text(want.name()),
        crate::error::Value::Text(verified.signer().name()),
    ))
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
fn check_event_log(provider: &CryptoProvider, log: &[u8], quote: &VerifiedQuote<'_>) -> Result<bool, Error> {
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
