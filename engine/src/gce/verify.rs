//! The GCE verifier: AK certificate → Google's pinned CA roots, AK certificate key = the AK, every quote
//! under the AK with the nonce, PCR digests, the event log replayed, then policy.
//!
//! ```text
//!  ak_pub (TPMT_PUBLIC) ──parse──► restricted signing key? ─────────────────────────────┐
//!  ak_cert ──verify_path (evidence + pinned intermediates) ──► pinned Google root at `time`
//!          └─ SubjectPublicKeyInfo == ak_pub ── instance-info extension ──► InstanceInfo │
//!  every quote: one bank = Pcrs.hash, presented PCRs = selected, signature under the AK ◄┘
//!               extraData == nonce, pcrDigest over the presented values
//!  event log ──replay each usable bank──► == quoted PCRs ──► PCR 0 platform facts
//!  policy: production, project allow-list, technology allow-list
//! ```
//!
//! **Nonces.** The caller states the nonce the quotes must carry ([`ExpectedNonce::Exactly`], non-empty)
//! or explicitly accepts quotes without one ([`ExpectedNonce::DangerousNone`]: replayable evidence, recorded
//! as a waived nonce check). An empty `Exactly` is a caller mistake, never "no nonce".
//!
//! **SHA-1.** Every quote present is verified completely (signature, nonce, PCR digest: a SHA-1 *bank* is
//! still quoted with the AK's SHA-256 scheme), so no quote of the evidence can be altered unnoticed. The
//! values of a SHA-1 bank are then used — exposed, replayed, given to policy — only when the policy allows
//! SHA-1; otherwise they are set aside, and evidence with nothing but SHA-1 banks is refused
//! ([`Error::Sha1Refused`]). SHA-1 signature hashes are never accepted.
//!
//! **Intermediates.** The roots are pinned (`roots.rs`, generated and checked by a codegen test). Google's
//! intermediates known at generation time are pinned as path candidates too, so evidence without them (as
//! go-tpm-tools often sends) verifies offline; intermediates in the evidence (field 7) are candidates as
//! well — they are not trusted by being sent, they must chain to a pinned root like everything else.

use super::evidence::{GceEvidence, MAX_INTERMEDIATES, MAX_QUOTES, TeeAttestationKind};
use super::instance::{INSTANCE_INFO_OID, InstanceInfo};
use super::platform::{ConfidentialTechnology, PlatformState, platform_state};
use super::roots;
use crate::crypto::{CryptoProvider, HashAlgorithm, default_provider};
use crate::error::{Bytes, Error, Value};
use crate::policy::Outcome;
use crate::time::UnixTime;
use crate::tpm::attest::{Attest, PCR_COUNT};
use crate::tpm::eventlog::EventLog;
use crate::tpm::{AkPublic, QuoteRequest, QuoteSignature, TpmtPublic, VerifiedQuote, verify_quote};
use crate::x509::{Certificate, verify_path};
use core::fmt;

macro_rules! gce_checks {
    ($($(#[$doc:meta])* $name:ident => $label:literal,)*) => {
        /// Every check the GCE verifier performs, in the order it runs them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum GceCheck { $($(#[$doc])* $name,)* }

        impl GceCheck {
            /// All checks, in order.
            pub const ALL: &'static [GceCheck] = &[$(GceCheck::$name,)*];
            /// Number of checks.
            pub const COUNT: usize = Self::ALL.len();
            /// A stable, snake_case name.
            pub fn name(self) -> &'static str {
                match self { $(GceCheck::$name => $label,)* }
            }
        }
    };
}

gce_checks! {
    /// The AK is a restricted signing key (TPM 2.0 Part 1 §25.2.3), RSA 2048/3072 or ECC P-256/P-384.
    AkAttributes => "ak_attributes",
    /// The AK certificate chains to a pinned Google root, every certificate valid at the trusted time.
    AkCertificateChain => "ak_certificate_chain",
    /// The AK certificate certifies exactly the AK (SubjectPublicKeyInfo = ak_pub).
    AkCertificateKey => "ak_certificate_key",
    /// The Google instance-information extension decodes (and equals the unsigned copy, when sent).
    InstanceInfo => "instance_info",
    /// Every quote's qualifiedSigner is the AK's qualified name as a primary key of the endorsement or
    /// owner hierarchy (TPM 2.0 Part 1 §16): the TPM itself names the AK, so every bit of ak_pub is bound.
    AkQualifiedName => "ak_qualified_name",
    /// Every quote's signature verifies under the AK with the AK's scheme.
    QuoteSignature => "quote_signature",
    /// Every quote's extraData equals the expected nonce (waived only by an explicit request).
    Nonce => "nonce",
    /// Every quote's pcrDigest equals the digest of its presented PCR values.
    PcrDigest => "pcr_digest",
    /// No SHA-1 bank's values are used (waived when the policy allows SHA-1 and one is used).
    Sha1Banks => "sha1_banks",
    /// The event log replays to the quoted PCRs of every usable bank it carries.
    EventLogReplay => "event_log_replay",
    /// Google's CA marks the instance as a production VM.
    Production => "production",
    /// The project is in the policy's allow-list.
    Project => "project",
    /// The confidential technology from the log is in the policy's allow-list.
    ConfidentialTechnology => "confidential_technology",
}

impl fmt::Display for GceCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The record of every check of one GCE verification. Fixed-size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GceVerdict {
    outcomes: [Outcome; GceCheck::COUNT],
}

impl Default for GceVerdict {
    fn default() -> Self {
        Self { outcomes: [Outcome::NotRun; GceCheck::COUNT] }
    }
}

impl GceVerdict {
    /// The outcome of `check`.
    pub fn outcome(&self, check: GceCheck) -> Outcome {
        self.outcomes[check as usize]
    }
    fn set(&mut self, check: GceCheck, outcome: Outcome) {
        self.outcomes[check as usize] = outcome;
    }
    /// Every check with its outcome, in order.
    pub fn iter(&self) -> impl Iterator<Item = (GceCheck, Outcome)> + '_ {
        GceCheck::ALL.iter().copied().zip(self.outcomes.iter().copied())
    }
}

/// What the GCE verifier requires beyond the cryptographic checks. Secure by default: SHA-1 banks are
/// not used, an event log is required, and the instance must be a production VM.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GcePolicy {
    /// Use the values of SHA-1 PCR banks (their quotes are verified either way).
    pub allow_sha1: bool,
    /// Refuse evidence without a TCG event log.
    pub require_event_log: bool,
    /// Require Google's CA to mark the instance as production (securityProperties.isProduction).
    pub require_production: bool,
    /// Allowed project ids; empty = not checked (recorded as waived).
    pub allowed_projects: Vec<String>,
    /// Allowed confidential technologies (from the log's NonHostInfo event); empty = not checked.
    pub allowed_technologies: Vec<ConfidentialTechnology>,
}

impl Default for GcePolicy {
    fn default() -> Self {
        Self {
            allow_sha1: false,
            require_event_log: true,
            require_production: true,
            allowed_projects: Vec::new(),
            allowed_technologies: Vec::new(),
        }
    }
}

/// The nonce the quotes must carry in extraData.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedNonce<'a> {
    /// extraData must equal these bytes exactly (non-empty).
    Exactly(&'a [u8]),
    /// The caller accepts quotes without a nonce (empty extraData): the evidence can be a replay. Recorded
    /// as a waived nonce check.
    DangerousNone,
}

impl<'a> ExpectedNonce<'a> {
    /// The extraData the quotes must carry.
    pub(crate) fn extra_data(self) -> Result<&'a [u8], Error> {
        match self {
            Self::Exactly([]) => Err(Error::Misuse {
                reason: "an empty expected nonce; to accept quotes without a nonce, say ExpectedNonce::DangerousNone",
            }),
            Self::Exactly(n) => Ok(n),
            Self::DangerousNone => Ok(&[]),
        }
    }
}

/// One GCE verification's request.
#[derive(Clone, Copy, Debug)]
pub struct GceRequest<'a> {
    /// The nonce.
    pub nonce: ExpectedNonce<'a>,
    /// The trusted time for certificate validity.
    pub time: UnixTime,
}

#[derive(Clone, Debug)]
enum Anchors {
    Pinned,
    Owned { roots: Vec<Vec<u8>>, intermediates: Vec<Vec<u8>> },
}

/// Verifies GCE vTPM attestations. Cheap to create, `Send + Sync`; holds the trust anchors.
#[derive(Clone, Debug)]
pub struct GceVerifier {
    provider: &'static CryptoProvider,
    anchors: Anchors,
}

impl Default for GceVerifier {
    fn default() -> Self {
        Self::new()
    }
}

/// An AK certified by Google's CA.
#[derive(Clone, Debug)]
pub struct CertifiedAk<'a> {
    /// The AK certificate.
    pub certificate: Certificate<'a>,
    /// Its instance information.
    pub instance: InstanceInfo<'a>,
    /// Certificates in the verified path, root included.
    pub path_depth: usize,
}

impl GceVerifier {
    /// A verifier with Google's pinned roots and intermediates and the default crypto provider.
    pub fn new() -> Self {
        Self::with_provider(default_provider())
    }

    /// A verifier with Google's pinned anchors and `provider`.
    pub fn with_provider(provider: &'static CryptoProvider) -> Self {
        Self { provider, anchors: Anchors::Pinned }
    }

    /// A verifier that trusts `roots` (DER) instead of Google's, with `intermediates` as pinned path
    /// candidates: for tests with a generated CA and private deployments. Never Google's evidence.
    pub fn with_trust_anchors(
        provider: &'static CryptoProvider,
        roots: Vec<Vec<u8>>,
        intermediates: Vec<Vec<u8>>,
    ) -> Self {
        Self { provider, anchors: Anchors::Owned { roots, intermediates } }
    }

    /// The crypto provider.
    pub fn provider(&self) -> &'static CryptoProvider {
        self.provider
    }

    /// Verifies the AK certificate `cert` for `ak`: a path through `extra_intermediates` and the pinned
    /// intermediates to a trusted root at `time`, the certified key equal to the AK, and the instance
    /// information decoded.
    pub fn verify_ak_certificate<'a>(
        &self,
        ak: &TpmtPublic<'_>,
        cert: &'a [u8],
        extra_intermediates: &[&[u8]],
        time: UnixTime,
    ) -> Result<CertifiedAk<'a>, Error> {
        if cert.is_empty() {
            return Err(Error::MissingEvidence { what: "the AK certificate" });
        }
        if extra_intermediates.len() > MAX_INTERMEDIATES {
            return Err(Error::LimitExceeded {
                what: "GCE intermediate certificates",
                limit: MAX_INTERMEDIATES,
                found: extra_intermediates.len(),
            });
        }
        let (roots, pinned): (Vec<&[u8]>, Vec<&[u8]>) = match &self.anchors {
            Anchors::Pinned => (roots::ROOTS.to_vec(), roots::INTERMEDIATES.to_vec()),
            Anchors::Owned { roots, intermediates } => {
                (roots.iter().map(Vec::as_slice).collect(), intermediates.iter().map(Vec::as_slice).collect())
            }
        };
        let mut candidates: Vec<&[u8]> = extra_intermediates.to_vec();
        candidates.extend(pinned);
        let path = verify_path(self.provider, cert, &candidates, &roots, time)?;
        let path_depth = path.depth;
        // The path borrows the anchors; the certificate itself is re-read to borrow only the evidence.
        let certificate = Certificate::from_der(cert)?;
        let certified = AkPublic::from_spki_der(certificate.spki())?;
        if certified != ak.key() {
            return Err(Error::AkCertificateKeyMismatch);
        }
        let mut instance = None;
        for ext in certificate.extensions() {
            let ext = ext?;
            if ext.oid == INSTANCE_INFO_OID {
                instance = Some(InstanceInfo::from_der(ext.value)?);
            }
        }
        let instance = instance
            .ok_or(Error::MissingEvidence { what: "the GCE instance-information extension in the AK certificate" })?;
        Ok(CertifiedAk { certificate, instance, path_depth })
    }

    /// Verifies a GCE attestation (see the module docs for every step).
    pub fn verify<'a>(
        &self,
        ev: &'a GceEvidence<'a>,
        req: &GceRequest<'_>,
        policy: &GcePolicy,
    ) -> Result<VerifiedGce<'a>, Error> {
        self.verify_recording(ev, req, policy, &mut GceVerdict::default())
    }

    /// [`Self::verify`], recording every check's outcome in `verdict` as it goes (on a rejection: the
    /// checks that ran before the failure).
    pub fn verify_recording<'a>(
        &self,
        ev: &'a GceEvidence<'a>,
        req: &GceRequest<'_>,
        policy: &GcePolicy,
        verdict: &mut GceVerdict,
    ) -> Result<VerifiedGce<'a>, Error> {
        let provider = self.provider;
        *verdict = GceVerdict::default();
        let nonce = req.nonce.extra_data()?;

        let ak = TpmtPublic::parse(ev.ak_public)?;
        ak.check_attestation_key()?;
        verdict.set(GceCheck::AkAttributes, Outcome::Passed);

        let certified = self.verify_ak_certificate(&ak, ev.ak_certificate, ev.intermediates(), req.time)?;
        verdict.set(GceCheck::AkCertificateChain, Outcome::Passed);
        verdict.set(GceCheck::AkCertificateKey, Outcome::Passed);
        if let Some(claimed) = &ev.unsigned_instance_info {
            let signed = &certified.instance;
            if (claimed.zone, claimed.project_id, claimed.project_number, claimed.instance_name, claimed.instance_id)
                != (signed.zone, signed.project_id, signed.project_number, signed.instance_name, signed.instance_id)
            {
                return Err(Error::GceInstanceInfo {
                    reason: "the unsigned instance_info differs from the AK certificate's",
                });
            }
        }
        verdict.set(GceCheck::InstanceInfo, Outcome::Passed);

        // Every quote, completely.
        let mut quotes: [Option<(VerifiedQuote<'a>, bool)>; MAX_QUOTES] = [None; MAX_QUOTES];
        let mut banks_seen: u8 = 0;
        let mut sha1_used = false;
        for (slot, q) in quotes.iter_mut().zip(ev.quotes.iter()) {
            let Some(q) = q else { continue };
            let bit = 1u8 << bank_index(q.bank);
            if banks_seen & bit != 0 {
                return Err(Error::Tpm { structure: "GCE quotes", offset: 0, reason: "two quotes of the same bank" });
            }
            banks_seen |= bit;
            let parsed = check_selection(q.attest, q.bank, q.presented)?;
            let verified = verify_quote(
                provider,
                &QuoteRequest {
                    attest: q.attest,
                    signature: QuoteSignature::Tpmt(q.signature),
                    ak: ak.key(),
                    ak_scheme: ak.scheme(),
                    pcrs: &q.pcrs,
                    nonce,
                    allow_sha1: true,
                },
            )?;
            check_qualified_signer(provider, &ak, parsed.qualified_signer())?;
            let usable = q.bank != HashAlgorithm::Sha1 || policy.allow_sha1;
            sha1_used |= usable && q.bank == HashAlgorithm::Sha1;
            *slot = Some((verified, usable));
        }
        if banks_seen == 0 {
            return Err(Error::MissingEvidence { what: "a quote" });
        }
        if !quotes.iter().flatten().any(|(_, usable)| *usable) {
            return Err(Error::Sha1Refused);
        }
        verdict.set(GceCheck::AkQualifiedName, Outcome::Passed);
        verdict.set(GceCheck::QuoteSignature, Outcome::Passed);
        verdict.set(GceCheck::Nonce, if nonce.is_empty() { Outcome::Waived } else { Outcome::Passed });
        verdict.set(GceCheck::PcrDigest, Outcome::Passed);
        verdict.set(GceCheck::Sha1Banks, if sha1_used { Outcome::Waived } else { Outcome::Passed });

        // The event log against every usable bank it carries.
        let mut platform = None;
        let mut replayed_banks: u8 = 0;
        if ev.event_log.is_empty() {
            if policy.require_event_log {
                return Err(Error::MissingEvidence { what: "the TCG event log" });
            }
            verdict.set(GceCheck::EventLogReplay, Outcome::Waived);
        } else {
            let log = EventLog::parse(ev.event_log)?;
            let mut strongest: Option<HashAlgorithm> = None;
            for (quote, _) in quotes.iter().flatten().filter(|(_, usable)| *usable) {
                let bank = bank_of(quote);
                if !log.has_bank(bank) {
                    continue;
                }
                let mut quoted: [(u8, &[u8]); PCR_COUNT] = [(0, &[]); PCR_COUNT];
                let mut n = 0;
                for i in 0..PCR_COUNT {
                    if let Some(v) = quote.pcr(bank, i) {
                        quoted[n] = (i as u8, v);
                        n += 1;
                    }
                }
                let replay = log.replay(provider, bank, policy.allow_sha1)?;
                if !quoted[..n].iter().any(|(i, _)| replay.is_touched(usize::from(*i))) {
                    return Err(Error::EventLog { offset: 0, reason: "the log touches none of the quoted PCRs" });
                }
                log.check_against(provider, bank, &quoted[..n], policy.allow_sha1)?;
                replayed_banks |= 1 << bank_index(bank);
                if strongest.is_none_or(|s| bank.output_len() > s.output_len()) {
                    strongest = Some(bank);
                }
            }
            let strongest =
                strongest.ok_or(Error::EventLog { offset: 0, reason: "the log carries no bank of a usable quote" })?;
            platform = Some(platform_state(provider, &log, strongest)?);
            verdict.set(GceCheck::EventLogReplay, Outcome::Passed);
        }

        // Policy.
        check_instance_policy(policy, &certified.instance)?;
        verdict.set(GceCheck::Production, if policy.require_production { Outcome::Passed } else { Outcome::Waived });
        verdict
            .set(GceCheck::Project, if policy.allowed_projects.is_empty() { Outcome::Waived } else { Outcome::Passed });
        if policy.allowed_technologies.is_empty() {
            verdict.set(GceCheck::ConfidentialTechnology, Outcome::Waived);
        } else {
            check_technology(policy, platform.as_ref().and_then(|p: &PlatformState<'_>| p.technology))?;
            verdict.set(GceCheck::ConfidentialTechnology, Outcome::Passed);
        }

        Ok(VerifiedGce {
            ak,
            certified,
            quotes,
            platform,
            replayed_banks,
            tee_attestation: ev.tee_attestation,
            verdict: *verdict,
        })
    }
}

/// The policy checks on the certified instance: production VM, project allow-list.
pub(crate) fn check_instance_policy(policy: &GcePolicy, instance: &InstanceInfo<'_>) -> Result<(), Error> {
    let security = instance.security.unwrap_or_default();
    if policy.require_production && security.is_production != Some(true) {
        return Err(Error::PlatformPolicy {
            check: GceCheck::Production.name(),
            expected: Value::Bool(true),
            found: security.is_production.map_or(Value::Text("absent"), Value::Bool),
        });
    }
    if !policy.allowed_projects.is_empty() && !policy.allowed_projects.iter().any(|p| p == instance.project_id) {
        return Err(Error::PlatformPolicy {
            check: GceCheck::Project.name(),
            expected: Value::OneOf(policy.allowed_projects.len()),
            found: Value::Str(instance.project_id.into()),
        });
    }
    Ok(())
}

/// The technology allow-list (callers skip it when the list is empty).
pub(crate) fn check_technology(policy: &GcePolicy, found: Option<ConfidentialTechnology>) -> Result<(), Error> {
    if found.is_some_and(|t| policy.allowed_technologies.contains(&t)) {
        return Ok(());
    }
    Err(Error::PlatformPolicy {
        check: GceCheck::ConfidentialTechnology.name(),
        expected: Value::OneOf(policy.allowed_technologies.len()),
        found: Value::Text(found.map_or("no NonHostInfo event", ConfidentialTechnology::name)),
    })
}

fn bank_index(bank: HashAlgorithm) -> u8 {
    match bank {
        HashAlgorithm::Sha1 => 0,
        HashAlgorithm::Sha256 => 1,
        HashAlgorithm::Sha384 => 2,
        HashAlgorithm::Sha512 => 3,
    }
}

fn bank_of(q: &VerifiedQuote<'_>) -> HashAlgorithm {
    // Checked by `check_selection`: exactly one bank.
    q.attest().pcr_selection().banks().next().map_or(HashAlgorithm::Sha256, |(b, _)| b)
}

/// A GCE quote covers exactly one bank, the one its PCR map is in, and the map holds exactly the selected
/// PCRs (go-tpm-tools' rule: no unquoted values travel as evidence).
fn check_selection(attest: &[u8], bank: HashAlgorithm, presented: u32) -> Result<Attest<'_>, Error> {
    let parsed = Attest::parse(attest)?;
    let mut banks = parsed.pcr_selection().banks();
    match (banks.next(), banks.next()) {
        (Some((b, bits)), None) if b == bank => {
            if bits != presented {
                return Err(Error::Tpm {
                    structure: "GCE quote",
                    offset: 0,
                    reason: "the presented PCRs differ from the quoted selection",
                });
            }
            Ok(parsed)
        }
        _ => Err(Error::Tpm {
            structure: "GCE quote",
            offset: 0,
            reason: "the quote must select exactly the bank of its PCR map",
        }),
    }
}

/// TPM_RH_ENDORSEMENT and TPM_RH_OWNER (TPM 2.0 Part 2 §7.4): the hierarchies GCE's and go-tpm-tools'
/// attestation keys are primary keys of.
const AK_HIERARCHIES: [u32; 2] = [0x4000_000B, 0x4000_0001];

/// Checks that `qualified_signer` is the qualified name of `ak` as a primary key of one of
/// [`AK_HIERARCHIES`]: `QN = nameAlg ‖ H(hierarchy handle ‖ Name)`, `Name = nameAlg ‖ H(TPMT_PUBLIC)`
/// (TPM 2.0 Part 1 §16 "Names"). SHA-1 name algorithms are refused.
pub(crate) fn check_qualified_signer(
    provider: &CryptoProvider,
    ak: &TpmtPublic<'_>,
    qualified_signer: &[u8],
) -> Result<(), Error> {
    let hash = crate::tpm::alg::hash_from_tpm(ak.name_alg(), "AK nameAlg")?;
    if hash == HashAlgorithm::Sha1 {
        return Err(Error::Sha1Refused);
    }
    let alg = ak.name_alg().to_be_bytes();
    let name = provider.digests.digest(hash, &[ak.as_bytes()]);
    for handle in AK_HIERARCHIES {
        let qn = provider.digests.digest(hash, &[&handle.to_be_bytes(), &alg, name.as_bytes()]);
        if qualified_signer.len() == 2 + qn.as_bytes().len()
            && qualified_signer[..2] == alg
            && &qualified_signer[2..] == qn.as_bytes()
        {
            return Ok(());
        }
    }
    Err(Error::QualifiedSignerMismatch { found: Bytes::new(qualified_signer) })
}

/// A verified GCE attestation.
#[derive(Clone, Debug)]
pub struct VerifiedGce<'a> {
    ak: TpmtPublic<'a>,
    certified: CertifiedAk<'a>,
    quotes: [Option<(VerifiedQuote<'a>, bool)>; MAX_QUOTES],
    platform: Option<PlatformState<'a>>,
    replayed_banks: u8,
    tee_attestation: Option<TeeAttestationKind>,
    verdict: GceVerdict,
}

impl<'a> VerifiedGce<'a> {
    /// The attestation key.
    pub fn ak(&self) -> &TpmtPublic<'a> {
        &self.ak
    }
    /// The AK certificate.
    pub fn ak_certificate(&self) -> &Certificate<'a> {
        &self.certified.certificate
    }
    /// Certificates in the verified path, root included.
    pub fn path_depth(&self) -> usize {
        self.certified.path_depth
    }
    /// The VM, as Google's CA certified it.
    pub fn instance(&self) -> &InstanceInfo<'a> {
        &self.certified.instance
    }
    /// The platform facts from the verified log (`None` without a log).
    pub fn platform(&self) -> Option<&PlatformState<'a>> {
        self.platform.as_ref()
    }
    /// The usable banks (verified, and SHA-1 only when allowed), strongest first.
    pub fn banks(&self) -> impl Iterator<Item = HashAlgorithm> + '_ {
        [HashAlgorithm::Sha512, HashAlgorithm::Sha384, HashAlgorithm::Sha256, HashAlgorithm::Sha1]
            .into_iter()
            .filter(|b| self.usable_quote(*b).is_some())
    }
    /// Whether the event log was replayed against `bank`.
    pub fn log_replayed(&self, bank: HashAlgorithm) -> bool {
        self.replayed_banks & (1 << bank_index(bank)) != 0
    }
    fn usable_quote(&self, bank: HashAlgorithm) -> Option<&VerifiedQuote<'a>> {
        self.quotes.iter().flatten().find(|(q, usable)| *usable && bank_of(q) == bank).map(|(q, _)| q)
    }
    /// A quoted PCR value of a usable bank.
    pub fn pcr(&self, bank: HashAlgorithm, index: usize) -> Option<&'a [u8]> {
        self.usable_quote(bank).and_then(|q| q.pcr(bank, index))
    }
    /// The verified quote of a usable bank.
    pub fn quote(&self, bank: HashAlgorithm) -> Option<&VerifiedQuote<'a>> {
        self.usable_quote(bank)
    }
    /// The TEE attestation that came along, unverified by this verifier.
    pub fn tee_attestation(&self) -> Option<TeeAttestationKind> {
        self.tee_attestation
    }
    /// Every check and its outcome.
    pub fn verdict(&self) -> &GceVerdict {
        &self.verdict
    }
}
