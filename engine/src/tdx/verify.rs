//! The TDX verifier: quote → PCK certificate (cached) → QE report → quote signature → TCB → policy.
//!
//! ```text
//!  collateral ──set_collateral──► signatures, chains, CRLs verified once ──► per FMSPC (Arc, generation)
//!
//!  quote bytes ──parse──► TdQuote ──sha256(PCK chain PEM)──► cache hit? ──no──► PEM → PCK leaf → PCK CA →
//!                                                  │yes         pinned root, CRLs, SGX extension (cold, 1 P-256)
//!                                                  ▼
//!    collateral times · QE report signature (prepared PCK key) · QE report data = SHA-256(key ‖ auth data)
//!    · quote signature (attestation key) · QE identity, TDX module identity, TCB level · policy
//! ```
//!
//! A warm verification — PCK chain and collateral already verified — does two P-256 verifications, two
//! SHA-256 computations and integer comparisons, and allocates nothing. Cache entries are keyed by the
//! SHA-256 of the PCK chain as it appears in the quote, bounded in number, and expire with the PCK
//! certificate and its CA; replacing the collateral of an FMSPC retires the entries verified under the old
//! CRLs. The verifier is `Send + Sync`; share one across threads.

use super::collateral::{Collateral, VerifiedCa, VerifiedCollateral, verify_ca_issued};
use super::pck::SgxExtensions;
use super::policy::{self, TdxCheck, TdxPolicy, TdxVerdict, TrailingBytes, violation};
use super::quote::{TdQuote, Trailing};
use super::status::TcbStatus;
use super::tcb::{self, TcbEvaluation};
use crate::crypto::{CryptoProvider, HashAlgorithm, PreparedEcdsaKey, default_provider};
use crate::error::{Bytes, CertRole, Error, Value};
use crate::policy::{Outcome, Revocation};
use crate::snp::DEFAULT_CACHE_CAPACITY;
use crate::snp::cache::{CacheEntry, LeafCache};
use crate::time::UnixTime;
use crate::x509::{Certificate, PublicKey};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// Most certificates in the quote's PCK chain (leaf, PCK CA, root).
pub const MAX_PCK_CHAIN_CERTS: usize = 3;
/// Most PCK CAs remembered as verified (Intel has two: Platform CA and Processor CA).
pub const MAX_VERIFIED_PCK_CAS: usize = 16;
/// Most FMSPCs with installed collateral.
pub const MAX_COLLATERAL_ENTRIES: usize = 1024;

/// One verification's input. Nothing is retained after the call; the verified quote borrows `quote` only.
#[derive(Clone, Copy, Debug)]
pub struct TdxRequest<'a, 'r> {
    /// The quote as received (bytes after its end are judged by `TdxPolicy::trailing_bytes`).
    pub quote: &'a [u8],
    /// The expected REPORTDATA (exactly 64 bytes), e.g. a hash of a nonce.
    pub report_data: Option<&'r [u8]>,
    /// The trusted time for certificate, CRL and collateral validity.
    pub time: UnixTime,
}

impl<'a> TdxRequest<'a, '_> {
    /// A request with a quote and a time.
    pub fn new(quote: &'a [u8], time: UnixTime) -> Self {
        Self { quote, report_data: None, time }
    }
}

/// What installed collateral covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollateralInfo {
    /// The FMSPC of the TCB Info.
    pub fmspc: [u8; 6],
    /// tcbEvaluationDataNumber of the TCB Info.
    pub tcb_evaluation_data_number: u32,
    /// The latest start of the collateral's validity windows.
    pub valid_from: UnixTime,
    /// The earliest end of the collateral's validity windows.
    pub expires: UnixTime,
    /// Whether both CRLs are present.
    pub has_crls: bool,
}

/// A verified PCK certificate: what the warm path needs.
struct PckEntry {
    key: Box<dyn PreparedEcdsaKey>,
    ext: SgxExtensions,
    not_before: UnixTime,
    expires: UnixTime,
    generation: u64,
    crl_checked: bool,
}

impl core::fmt::Debug for PckEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PckEntry").field("fmspc", &self.ext.fmspc).finish_non_exhaustive()
    }
}

impl CacheEntry for PckEntry {
    fn not_before(&self) -> UnixTime {
        self.not_before
    }
    fn expires(&self) -> UnixTime {
        self.expires
    }
}

#[derive(Clone, Debug)]
struct Installed {
    generation: u64,
    collateral: Arc<VerifiedCollateral>,
}

/// A quote whose signatures, certificates, collateral, TCB and policy have been verified.
#[derive(Clone, Debug)]
pub struct VerifiedTdQuote<'a> {
    quote: TdQuote<'a>,
    collateral: Arc<VerifiedCollateral>,
    pck: SgxExtensions,
    tcb: TcbEvaluation,
    verdict: TdxVerdict,
    cache_hit: bool,
}

impl<'a> VerifiedTdQuote<'a> {
    /// The quote.
    pub fn quote(&self) -> &TdQuote<'a> {
        &self.quote
    }
    /// The TD report body.
    pub fn body(&self) -> super::TdReport<'a> {
        self.quote.body()
    }
    /// The PCK certificate's SGX extension (FMSPC, TCB components, PCESVN, …).
    pub fn pck(&self) -> &SgxExtensions {
        &self.pck
    }
    /// The TCB status.
    pub fn tcb_status(&self) -> TcbStatus {
        self.tcb.status
    }
    /// The matched TCB levels.
    pub fn tcb(&self) -> &TcbEvaluation {
        &self.tcb
    }
    /// The advisory IDs of the matched TCB levels, each once.
    pub fn advisory_ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.tcb.advisory_ids(self.collateral.tcb_info(), self.collateral.qe_identity())
    }
    /// The collateral the quote was verified against.
    pub fn collateral(&self) -> &VerifiedCollateral {
        &self.collateral
    }
    /// Every check and its outcome.
    pub fn verdict(&self) -> &TdxVerdict {
        &self.verdict
    }
    /// Whether the PCK certificate came from the cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }
}

/// Verifies TD quotes against the pinned Intel SGX Root CA and installed collateral.
pub struct TdxVerifier {
    provider: &'static CryptoProvider,
    root: Vec<u8>,
    collateral: RwLock<HashMap<[u8; 6], Installed>>,
    generation: AtomicU64,
    cas: RwLock<Vec<VerifiedCa>>,
    cache: LeafCache<PckEntry>,
}

impl core::fmt::Debug for TdxVerifier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TdxVerifier").field("provider", &self.provider.name).finish_non_exhaustive()
    }
}

impl Default for TdxVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl TdxVerifier {
    /// A verifier with the embedded Intel SGX Root CA and the default crypto provider.
    pub fn new() -> Self {
        Self::with_provider(default_provider())
    }

    /// A verifier with the embedded Intel SGX Root CA and `provider`.
    pub fn with_provider(provider: &'static CryptoProvider) -> Self {
        Self::with_root(provider, crate::intel::SGX_ROOT_CA.to_vec())
    }

    fn with_root(provider: &'static CryptoProvider, root: Vec<u8>) -> Self {
        Self {
            provider,
            root,
            collateral: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(1),
            cas: RwLock::new(Vec::new()),
            cache: LeafCache::new(DEFAULT_CACHE_CAPACITY),
        }
    }

    /// A verifier that trusts `root_der` instead of Intel's root — for a test PKI only; never use it for
    /// real evidence.
    pub fn dangerous_with_root(provider: &'static CryptoProvider, root_der: Vec<u8>) -> Self {
        Self::with_root(provider, root_der)
    }

    /// Sets the number of cached PCK certificates (0 disables the cache).
    pub fn with_cache_capacity(mut self, capacity: usize) -> Self {
        self.cache = LeafCache::new(capacity);
        self
    }

    /// The crypto provider.
    pub fn provider(&self) -> &'static CryptoProvider {
        self.provider
    }

    /// Number of cached PCK certificates.
    pub fn cached_pck_certificates(&self) -> usize {
        self.cache.len()
    }

    /// Verifies `collateral` (signatures, chains to the pinned root, CRL signatures, structure) and installs it
    /// for its FMSPC, replacing what was installed for that FMSPC. Validity times are checked at each
    /// verification, against its trusted time.
    pub fn set_collateral(&self, collateral: &Collateral) -> Result<CollateralInfo, Error> {
        let verified = collateral.verify_under(self.provider, &self.root)?;
        let info = CollateralInfo {
            fmspc: verified.tcb_info().fmspc,
            tcb_evaluation_data_number: verified.tcb_info().tcb_evaluation_data_number,
            valid_from: verified.valid_from(),
            expires: verified.expires(),
            has_crls: verified.has_crls(),
        };
        self.remember_ca(verified.pck_ca.clone());
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let mut map = self.collateral.write().unwrap_or_else(PoisonError::into_inner);
        if !map.contains_key(&info.fmspc) && map.len() >= MAX_COLLATERAL_ENTRIES {
            return Err(Error::LimitExceeded {
                what: "FMSPCs with collateral",
                limit: MAX_COLLATERAL_ENTRIES,
                found: map.len() + 1,
            });
        }
        map.insert(info.fmspc, Installed { generation, collateral: Arc::new(verified) });
        Ok(info)
    }

    /// The verified collateral installed for `fmspc`.
    pub fn collateral(&self, fmspc: &[u8; 6]) -> Option<Arc<VerifiedCollateral>> {
        self.installed(*fmspc).map(|i| i.collateral)
    }

    fn installed(&self, fmspc: [u8; 6]) -> Option<Installed> {
        self.collateral.read().unwrap_or_else(PoisonError::into_inner).get(&fmspc).cloned()
    }

    fn remember_ca(&self, ca: VerifiedCa) {
        let mut cas = self.cas.write().unwrap_or_else(PoisonError::into_inner);
        if !cas.iter().any(|c| c.der == ca.der) {
            if cas.len() >= MAX_VERIFIED_PCK_CAS {
                cas.remove(0);
            }
            cas.push(ca);
        }
    }

    /// Verifies a quote against the installed collateral for its platform and `policy`.
    pub fn verify<'a>(&self, req: &TdxRequest<'a, '_>, policy: &TdxPolicy) -> Result<VerifiedTdQuote<'a>, Error> {
        let mut v = TdxVerdict::default();
        let quote = TdQuote::parse_prefix(req.quote)?;
        v.set(TdxCheck::QuoteStructure, Outcome::Passed);
        let trailing = match (quote.trailing(), policy.trailing_bytes) {
            (Trailing::None, _) | (Trailing::ZeroPadding(_), TrailingBytes::ZeroPadding | TrailingBytes::Any) => {
                Outcome::Passed
            }
            (Trailing::Other(_), TrailingBytes::Any) => Outcome::Waived,
            (t, _) => {
                return Err(violation(
                    TdxCheck::TrailingBytes,
                    Value::Text(match policy.trailing_bytes {
                        TrailingBytes::None => "no bytes after the quote",
                        _ => "only zero bytes after the quote",
                    }),
                    Value::Int(t.len() as u64),
                ));
            }
        };
        v.set(TdxCheck::TrailingBytes, trailing);
        if req.report_data.is_some_and(|rd| rd.len() != 64) {
            return Err(Error::Misuse { reason: "expected REPORT_DATA must be exactly 64 bytes" });
        }

        let t = req.time;
        let key = self.provider.digests.sha256(quote.pck_chain_pem());
        let warm = self.cache.get(&key, t).and_then(|e| {
            let installed = self.installed(e.ext.fmspc)?;
            let usable =
                installed.generation == e.generation && (policy.revocation != Revocation::Require || e.crl_checked);
            usable.then_some((e, installed.collateral))
        });
        let (entry, collateral, cache_hit) = if let Some((e, c)) = warm {
            (e, c, true)
        } else {
            let (e, c) = self.verify_pck(&quote, t, Some(policy))?;
            let c = c.ok_or(Error::Misuse { reason: "collateral disappeared during verification" })?;
            let e = Arc::new(e);
            self.cache.insert(key, Arc::clone(&e));
            (e, c, false)
        };
        collateral.check_time(t)?;
        v.set(TdxCheck::CollateralSignature, Outcome::Passed);
        v.set(TdxCheck::CollateralValidity, Outcome::Passed);
        if t < entry.not_before || t > entry.expires {
            // The cache never returns such an entry; a cold entry is checked in `verify_pck`.
            return Err(Error::CertExpired { role: CertRole::Pck, time: t, not_after: entry.expires });
        }
        v.set(TdxCheck::CertificateChain, Outcome::Passed);
        v.set(TdxCheck::CertificateValidity, Outcome::Passed);
        if !entry.crl_checked && policy.revocation == Revocation::Require {
            return Err(Error::CrlMissing);
        }
        v.set(TdxCheck::Revocation, if entry.crl_checked { Outcome::Passed } else { Outcome::Waived });

        self.verify_quote_signatures(&quote, &*entry.key, &mut v)?;
        let qe = quote.qe_report();

        // TCB.
        let body = quote.body();
        let tcb = tcb::evaluate(collateral.tcb_info(), collateral.qe_identity(), &entry.ext, &body, &qe)?;
        v.set(TdxCheck::PlatformBinding, Outcome::Passed);
        v.set(TdxCheck::QeIdentity, Outcome::Passed);
        v.set(TdxCheck::TdxModuleIdentity, Outcome::Passed);
        if !policy.accepted_tcb_statuses.contains(&tcb.status) {
            return Err(violation(
                TdxCheck::TcbStatus,
                Value::OneOf(policy.accepted_tcb_statuses.len()),
                Value::Text(tcb.status.name()),
            ));
        }
        v.set(TdxCheck::TcbStatus, Outcome::Passed);
        let advisories = tcb.advisory_ids(collateral.tcb_info(), collateral.qe_identity());
        for id in advisories {
            if !policy.allowed_advisory_ids.iter().any(|a| a == id) {
                return Err(violation(
                    TdxCheck::AdvisoryIds,
                    Value::OneOf(policy.allowed_advisory_ids.len()),
                    Value::Name(id.into()),
                ));
            }
        }
        v.set(TdxCheck::AdvisoryIds, Outcome::Passed);

        check_policy(&body, req, policy, &mut v)?;
        Ok(VerifiedTdQuote { quote, collateral, pck: entry.ext, tcb, verdict: v, cache_hit })
    }

    /// The QE report signature (PCK key), the QE report data binding, and the quote signature.
    fn verify_quote_signatures(
        &self,
        quote: &TdQuote<'_>,
        pck_key: &dyn PreparedEcdsaKey,
        v: &mut TdxVerdict,
    ) -> Result<(), Error> {
        // The QE report, signed by the PCK key, binds the attestation key.
        let qe = quote.qe_report();
        pck_key
            .verify_fixed(qe.as_bytes(), quote.qe_report_signature())
            .map_err(|_| Error::QeReportSignatureInvalid)?;
        v.set(TdxCheck::QeReportSignature, Outcome::Passed);
        let binding =
            self.provider.digests.digest(HashAlgorithm::Sha256, &[quote.attestation_key(), quote.qe_auth_data()]);
        let rd = qe.report_data();
        if rd[..32] != *binding.as_bytes() || rd[32..].iter().any(|b| *b != 0) {
            let mut expected = [0u8; 64];
            expected[..32].copy_from_slice(binding.as_bytes());
            return Err(Error::QeReportDataMismatch { expected: Bytes::new(&expected), found: Bytes::new(rd) });
        }
        v.set(TdxCheck::QeReportData, Outcome::Passed);

        // The quote, signed by the attestation key over the received header ‖ body.
        let mut point = [0x04u8; 65];
        point[1..].copy_from_slice(quote.attestation_key());
        self.provider
            .ecdsa_p256_sha256
            .verify_fixed(&point, quote.signed_bytes(), quote.signature())
            .map_err(|_| Error::TdQuoteSignatureInvalid)?;
        v.set(TdxCheck::QuoteSignature, Outcome::Passed);
        Ok(())
    }

    /// Verifies what a quote proves **without collateral**: the PCK chain up to the pinned root (names,
    /// signatures, validity at `time`; no revocation), the QE report signature, the QE report data binding
    /// and the quote signature. This is not an attestation verdict — no TCB status, no revocation, no QE
    /// identity, no policy — and is meant for inspection (`attest tdx show`) and for quotes whose collateral
    /// is unavailable. Trailing bytes are accepted and reported by [`TdQuote::trailing`].
    pub fn dangerous_verify_signatures_only<'a>(
        &self,
        quote: &'a [u8],
        time: UnixTime,
    ) -> Result<(TdQuote<'a>, SgxExtensions), Error> {
        let quote = TdQuote::parse_prefix(quote)?;
        // Any cached entry serves (this path checks no revocation); a new one is cached with generation 0,
        // which no installed collateral has, so it never serves a full verification.
        let key = self.provider.digests.sha256(quote.pck_chain_pem());
        let entry = if let Some(e) = self.cache.get(&key, time) {
            e
        } else {
            let e = Arc::new(self.verify_pck(&quote, time, None)?.0);
            self.cache.insert(key, Arc::clone(&e));
            e
        };
        self.verify_quote_signatures(&quote, &*entry.key, &mut TdxVerdict::default())?;
        Ok((quote, entry.ext))
    }

    /// The cold path: the PCK chain from the quote up to the pinned root, its CRLs and its SGX extension.
    /// With `policy` `None`, no collateral is used: no revocation check, and the entry's generation is 0.
    fn verify_pck(
        &self,
        quote: &TdQuote<'_>,
        t: UnixTime,
        policy: Option<&TdxPolicy>,
    ) -> Result<(PckEntry, Option<Arc<VerifiedCollateral>>), Error> {
        let certs = crate::x509::pem::certificates_from_pem_or_der(quote.pck_chain_pem())?;
        if certs.len() > MAX_PCK_CHAIN_CERTS {
            return Err(Error::LimitExceeded {
                what: "certificates in the PCK chain",
                limit: MAX_PCK_CHAIN_CERTS,
                found: certs.len(),
            });
        }
        let (leaf_der, ca_der) = match certs.as_slice() {
            [leaf, ca] => (leaf, ca),
            [leaf, ca, root] if *root == self.root => (leaf, ca),
            [_, _, _] => return Err(Error::UntrustedIntelRoot),
            _ => {
                return Err(Error::TdxQuote {
                    structure: "PCK certificate chain",
                    offset: 0,
                    reason: "need the PCK certificate and its CA",
                });
            }
        };
        let leaf = Certificate::from_der(leaf_der)?;
        let ext = SgxExtensions::from_cert(&leaf)?;
        let installed = match policy {
            Some(_) => {
                let i = self.installed(ext.fmspc).ok_or(Error::CollateralMissing { fmspc: Bytes::new(&ext.fmspc) })?;
                // The collateral's times first (as Intel's QVL orders the checks): expired collateral is
                // reported as such even when the PCK certificate is out of its window too.
                i.collateral.check_time(t)?;
                Some(i)
            }
            None => None,
        };

        // The PCK CA: verified once under the pinned root.
        let known =
            self.cas.read().unwrap_or_else(PoisonError::into_inner).iter().find(|c| *c.der == **ca_der).cloned();
        let ca = if let Some(ca) = known {
            ca
        } else {
            let cert = Certificate::from_der(ca_der)?;
            let root = Certificate::from_der(&self.root)?;
            verify_ca_issued(self.provider, &cert, &root, CertRole::PckCa)?;
            if cert.is_ca() != Some(true) || !cert.may_sign_certificates() {
                return Err(Error::NotACa { role: CertRole::PckCa });
            }
            let ca = VerifiedCa::from_cert(&cert)?;
            self.remember_ca(ca.clone());
            ca
        };
        if leaf.issuer().as_der() != &*ca.subject {
            return Err(Error::IssuerMismatch { role: CertRole::Pck });
        }
        leaf.signature_algorithm()
            .verify(self.provider, &PublicKey::EcP256 { point: &ca.point }, leaf.tbs(), leaf.signature())
            .map_err(|_| Error::CertSignatureInvalid { role: CertRole::Pck })?;

        if t < ca.not_before {
            return Err(Error::CertNotYetValid { role: CertRole::PckCa, time: t, not_before: ca.not_before });
        }
        if t > ca.not_after {
            return Err(Error::CertExpired { role: CertRole::PckCa, time: t, not_after: ca.not_after });
        }
        leaf.check_validity(t, CertRole::Pck)?;

        let PublicKey::EcP256 { point } = leaf.public_key() else {
            return Err(Error::UnsupportedAlgorithm { what: "PCK key (need ECDSA P-256)" });
        };
        let key = self
            .provider
            .ecdsa_p256_sha256
            .prepare(point)
            .map_err(|_| Error::UnsupportedAlgorithm { what: "PCK key (invalid P-256 point)" })?;
        let mut entry = PckEntry {
            key,
            ext,
            not_before: leaf.not_before().max(ca.not_before),
            expires: leaf.not_after().min(ca.not_after),
            generation: 0,
            crl_checked: false,
        };
        let (Some(installed), Some(policy)) = (installed, policy) else { return Ok((entry, None)) };
        let collateral = installed.collateral;
        entry.generation = installed.generation;

        // Revocation: the PCK CA on the root CA CRL, the PCK certificate on its CA's CRL.
        let mut crl_checked = true;
        match &collateral.root_revoked {
            Some(revoked) if revoked.iter().any(|s| **s == *ca.serial) => {
                return Err(Error::Revoked { role: CertRole::PckCa, serial: Bytes::new(&ca.serial) });
            }
            Some(_) => {}
            None => crl_checked = false,
        }
        match &collateral.pck_crl {
            Some(crl) if *crl.issuer != *ca.subject => {
                return Err(Error::CollateralMismatch {
                    field: "PCK CRL issuer",
                    evidence: Bytes::new(&ca.subject),
                    collateral: Bytes::new(&crl.issuer),
                });
            }
            Some(crl) if crl.revoked.iter().any(|s| **s == *leaf.serial()) => {
                return Err(Error::Revoked { role: CertRole::Pck, serial: Bytes::new(leaf.serial()) });
            }
            Some(_) => {}
            None => crl_checked = false,
        }
        if !crl_checked && policy.revocation == Revocation::Require {
            return Err(Error::CrlMissing);
        }

        entry.crl_checked = crl_checked;
        Ok((entry, Some(collateral)))
    }
}

fn check_policy(
    body: &super::TdReport<'_>,
    req: &TdxRequest<'_, '_>,
    policy: &TdxPolicy,
    v: &mut TdxVerdict,
) -> Result<(), Error> {
    // REPORTDATA: the request's value and the policy's, each exact.
    policy::exact(v, TdxCheck::ReportData, policy.report_data.as_ref(), body.report_data())?;
    let from_policy = v.outcome(TdxCheck::ReportData);
    if let Some(rd) = req.report_data {
        if rd != body.report_data() {
            return Err(violation(
                TdxCheck::ReportData,
                Value::Bytes(Bytes::new(rd)),
                Value::Bytes(Bytes::new(body.report_data())),
            ));
        }
        v.set(TdxCheck::ReportData, Outcome::Passed);
    } else {
        v.set(TdxCheck::ReportData, from_policy);
    }
    policy::allow_list(v, TdxCheck::Mrtd, &policy.mrtd, body.mr_td())?;
    for ((check, expected), found) in policy.rtmrs().into_iter().zip(body.rtmrs()) {
        policy::exact(v, check, expected, found)?;
    }
    policy::exact(v, TdxCheck::MrConfigId, policy.mr_config_id.as_ref(), body.mr_config_id())?;
    policy::exact(v, TdxCheck::MrOwner, policy.mr_owner.as_ref(), body.mr_owner())?;
    policy::exact(v, TdxCheck::MrOwnerConfig, policy.mr_owner_config.as_ref(), body.mr_owner_config())?;
    policy::allow_list(v, TdxCheck::MrSeam, &policy.mr_seam, body.mr_seam())?;
    policy::exact(v, TdxCheck::MrSignerSeam, policy.mr_signer_seam.as_ref(), body.mr_signer_seam())?;
    check_td_attributes(body.td_attributes(), policy, v)?;
    policy::masked(v, TdxCheck::TdAttributes, policy.td_attributes.as_ref(), body.td_attributes())?;
    policy::masked(v, TdxCheck::Xfam, policy.xfam.as_ref(), body.xfam())?;
    match &policy.min_tee_tcb_svn {
        None => v.set(TdxCheck::MinTeeTcbSvn, Outcome::Waived),
        Some(min) => {
            let found = body.tee_tcb_svn();
            if let Some(i) = (0..16).find(|i| found[*i] < min.0[*i]) {
                return Err(violation(
                    TdxCheck::MinTeeTcbSvn,
                    Value::Bytes(Bytes::new(&min.0)),
                    Value::Text(match i {
                        0 => "TEE_TCB_SVN[0] (TDX module SVN) below the minimum",
                        1 => "TEE_TCB_SVN[1] (TDX module major version) below the minimum",
                        _ => "a TEE_TCB_SVN component below the minimum",
                    }),
                ));
            }
            v.set(TdxCheck::MinTeeTcbSvn, Outcome::Passed);
        }
    }
    match body.mr_service_td() {
        Some(m) if m.iter().any(|b| *b != 0) => {
            if !policy.allow_service_td {
                return Err(violation(
                    TdxCheck::ServiceTd,
                    Value::Text("zero MRSERVICETD"),
                    Value::Bytes(Bytes::new(m)),
                ));
            }
            v.set(TdxCheck::ServiceTd, Outcome::Waived);
        }
        Some(_) => v.set(TdxCheck::ServiceTd, Outcome::Passed),
        None => v.set(TdxCheck::ServiceTd, Outcome::Waived),
    }
    Ok(())
}

/// The TD-attribute checks (DEBUG, the other TUD bits, reserved bits, SEPT_VE_DISABLE, MIGRATABLE), each
/// recorded under its own name: waived when the policy allows it, else passed or refused.
fn check_td_attributes(attributes: u64, policy: &TdxPolicy, v: &mut TdxVerdict) -> Result<(), Error> {
    for (check, allowed, bits) in policy.attribute_checks() {
        let set = attributes & bits;
        // SEPT_VE_DISABLE must be set; every other group must be clear.
        let failed = if check == TdxCheck::SeptVeDisable { set == 0 } else { set != 0 };
        if allowed {
            v.set(check, Outcome::Waived);
        } else if failed {
            return Err(match check {
                TdxCheck::Debug | TdxCheck::Migratable => violation(check, Value::Bool(false), Value::Bool(true)),
                TdxCheck::SeptVeDisable => violation(check, Value::Bool(true), Value::Bool(false)),
                _ => violation(
                    check,
                    Value::Text("these TDATTRIBUTES bits clear"),
                    Value::Bytes(Bytes::new(&set.to_le_bytes())),
                ),
            });
        } else {
            v.set(check, Outcome::Passed);
        }
    }
    Ok(())
}
