//! The SEV-SNP verifier: report → leaf (VCEK/VLEK) → ASK/ASVK → pinned ARK → signature → policy.
//!
//! ```text
//!  report bytes ──parse──► Report ─────────────────────────────────────────────┐
//!  leaf DER ──sha256──► cache hit? ──no──► verify_chain (cold, RSA ×1–2) ──► VerifiedLeaf
//!                           │yes                                                │
//!                           └──────────────► bindings (product, signer, TCB, chip id)
//!                                                     │
//!                         ECDSA P-384 over report[0..0x2A0] with the prepared key
//!                                                     │
//!                                     policy checks ──► VerifiedReport + Verdict
//! ```
//!
//! Trust anchors (ARK self-signature, ASK/ASVK under ARK) are verified once per verifier and product. The
//! verifier is `Send + Sync`; share one across threads.

use super::cache::{DEFAULT_CACHE_CAPACITY, LeafCache, VerifiedLeaf};
use super::crls::{CrlScope, CrlSet, InstalledCrl};
use super::policy::{self, Check, SnpPolicy, Verdict, violation};
use super::report::Report;
use super::tcb::TcbVersion;
use crate::amd::{Product, TrustAnchors};
use crate::crypto::{CryptoProvider, default_provider};
use crate::error::{Bytes, CertRole, Error, ProductSource, Value};
use crate::policy::{Outcome, Revocation};
use crate::time::UnixTime;
use crate::x509::{Certificate, PublicKey};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

/// One verification's input. All slices are borrowed; nothing is retained after the call.
#[derive(Clone, Copy, Debug)]
pub struct SnpRequest<'a> {
    /// The 0x4A0-byte report as received.
    pub report: &'a [u8],
    /// The VCEK or VLEK, DER.
    pub leaf: &'a [u8],
    /// The ASK or ASVK, DER (optional: the pinned one is used when absent).
    pub intermediate: Option<&'a [u8]>,
    /// The ARK, DER (optional; when given it must be the pinned ARK).
    pub root: Option<&'a [u8]>,
    /// The product, when the caller knows it.
    pub product: Option<Product>,
    /// The expected REPORT_DATA (exactly 64 bytes), e.g. a hash of a nonce.
    pub report_data: Option<&'a [u8]>,
    /// The trusted time for validity and CRL checks.
    pub time: UnixTime,
}

impl<'a> SnpRequest<'a> {
    /// A request with just a report, a leaf certificate and a time.
    pub fn new(report: &'a [u8], leaf: &'a [u8], time: UnixTime) -> Self {
        Self { report, leaf, intermediate: None, root: None, product: None, report_data: None, time }
    }
}

/// A certificate-chain verification without a report (e.g. to vet a VCEK before storing it).
#[derive(Clone, Copy, Debug)]
pub struct ChainRequest<'a> {
    /// The VCEK or VLEK, DER.
    pub leaf: &'a [u8],
    /// The ASK or ASVK, DER (optional).
    pub intermediate: Option<&'a [u8]>,
    /// The ARK, DER (optional; must be the pinned one).
    pub root: Option<&'a [u8]>,
    /// The product, when known.
    pub product: Option<Product>,
    /// The trusted time.
    pub time: UnixTime,
}

/// What a verified VCEK/VLEK says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifiedChain {
    /// The product.
    pub product: Product,
    /// VCEK or VLEK.
    pub role: CertRole,
    /// The TCB in the leaf's SPL extensions.
    pub tcb: TcbVersion,
    /// Whether revocation was checked against a fresh CRL (false: no installed CRL covers the chain, or only
    /// a stale one accepted under `allow_stale_crl`).
    pub crl_checked: bool,
    /// When the verification stops being valid (earliest notAfter / CRL nextUpdate).
    pub expires: UnixTime,
}

/// A report whose signature, chain and policy have been verified.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedReport<'a> {
    report: Report<'a>,
    product: Product,
    signer: CertRole,
    reported_tcb: TcbVersion,
    verdict: Verdict,
    cache_hit: bool,
}

impl<'a> VerifiedReport<'a> {
    /// The report's fields.
    pub fn report(&self) -> &Report<'a> {
        &self.report
    }
    /// The product.
    pub fn product(&self) -> Product {
        self.product
    }
    /// VCEK or VLEK.
    pub fn signer(&self) -> CertRole {
        self.signer
    }
    /// REPORTED_TCB decoded for the product (equal to the leaf's SPLs).
    pub fn reported_tcb(&self) -> TcbVersion {
        self.reported_tcb
    }
    /// Every check and its outcome.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }
    /// Whether the leaf came from the verified-leaf cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }
    /// Requires the report to be signed by a `want` key ([`CertRole::Vcek`] or [`CertRole::Vlek`]): a
    /// violation of the [`Check::SigningKey`] check otherwise. Azure and GCP sign with VCEKs, AWS with VLEKs;
    /// accepting the other kind would let a report from another platform stand in.
    pub fn check_signer(&self, want: CertRole) -> Result<(), Error> {
        if self.signer == want {
            return Ok(());
        }
        Err(violation(Check::SigningKey, Value::Text(want.name()), Value::Text(self.signer.name())))
    }
}

/// A product's trust anchors, owned or static.
#[derive(Clone, Debug)]
pub struct OwnedTrustAnchors {
    /// The product.
    pub product: Product,
    /// ARK DER.
    pub ark: Cow<'static, [u8]>,
    /// ASK DER.
    pub ask: Option<Cow<'static, [u8]>>,
    /// ASVK DER.
    pub asvk: Option<Cow<'static, [u8]>>,
}

impl From<TrustAnchors> for OwnedTrustAnchors {
    fn from(a: TrustAnchors) -> Self {
        Self {
            product: a.product,
            ark: Cow::Borrowed(a.ark),
            ask: Some(Cow::Borrowed(a.ask)),
            asvk: Some(Cow::Borrowed(a.asvk)),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct IntermediateInfo {
    role: CertRole,
    sha256: [u8; 32],
    not_before: UnixTime,
    not_after: UnixTime,
}

#[derive(Debug)]
struct AnchorInfo {
    ark_not_before: UnixTime,
    ark_not_after: UnixTime,
    intermediates: Vec<IntermediateInfo>,
}

#[derive(Debug)]
struct Anchor {
    owned: OwnedTrustAnchors,
    verified: OnceLock<Result<AnchorInfo, Error>>,
}

impl Anchor {
    fn intermediate(&self, role: CertRole) -> Option<&[u8]> {
        match role {
            CertRole::Ask => self.owned.ask.as_deref(),
            CertRole::Asvk => self.owned.asvk.as_deref(),
            _ => None,
        }
    }
}

/// Verifies SEV-SNP reports against pinned AMD roots with a bounded cache of verified leaves.
pub struct SnpVerifier {
    provider: &'static CryptoProvider,
    anchors: Vec<Anchor>,
    cache: LeafCache,
    crls: RwLock<Arc<CrlSet>>,
}

impl core::fmt::Debug for SnpVerifier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SnpVerifier").field("provider", &self.provider.name).finish_non_exhaustive()
    }
}

impl Default for SnpVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl SnpVerifier {
    /// A verifier with AMD's embedded Milan, Genoa and Turin roots and the default crypto provider.
    pub fn new() -> Self {
        Self::with_provider(default_provider())
    }

    /// A verifier with AMD's embedded roots and `provider`.
    pub fn with_provider(provider: &'static CryptoProvider) -> Self {
        Self::with_trust_anchors(provider, Product::ALL.iter().map(|p| p.trust_anchors().into()).collect())
    }

    /// A verifier trusting exactly `anchors` (for pinned copies of AMD's roots, or a test PKI).
    pub fn with_trust_anchors(provider: &'static CryptoProvider, anchors: Vec<OwnedTrustAnchors>) -> Self {
        Self {
            provider,
            anchors: anchors.into_iter().map(|owned| Anchor { owned, verified: OnceLock::new() }).collect(),
            cache: LeafCache::new(DEFAULT_CACHE_CAPACITY),
            crls: RwLock::new(Arc::default()),
        }
    }

    /// Sets the number of cached leaves (0 disables the cache).
    pub fn with_cache_capacity(mut self, capacity: usize) -> Self {
        self.cache = LeafCache::new(capacity);
        self
    }

    /// The crypto provider.
    pub fn provider(&self) -> &'static CryptoProvider {
        self.provider
    }

    /// Number of cached leaves.
    pub fn cached_leaves(&self) -> usize {
        self.cache.len()
    }

    /// Installs an ARK-signed CRL (DER) for the product whose ARK issued it, covering both of its chains
    /// ([`CrlScope::Product`]) and replacing that product's CRLs; the other products' CRLs stay. The CRL's
    /// signature is verified here, once; its freshness is checked at each verification against the trusted
    /// time. Services that hold AMD's per-kind CRLs use [`SnpVerifier::replace_crls`] instead.
    pub fn set_crl(&self, der: &[u8]) -> Result<Product, Error> {
        let next = CrlSet::build(self.provider, &self.arks(), &[(CrlScope::Product, der)])?;
        let product = next.products().next().ok_or(Error::CrlSignatureInvalid)?;
        let mut slot = self.crls.write().unwrap_or_else(PoisonError::into_inner);
        next.keeping_other_products(&slot).install(&mut slot);
        drop(slot);
        self.cache.clear();
        Ok(product)
    }

    /// Replaces the verifier's whole CRL set, atomically: every CRL is verified under the pinned ARK of its
    /// product first, and only when all are good does the new set take the old one's place (on error the old
    /// set stays, whole). An empty slice removes every CRL. Two CRLs for overlapping scopes of one product
    /// are refused; at most [`super::MAX_INSTALLED_CRLS`]. Verifications already running finish with the set
    /// they started with; no result verified under the old set is reused afterwards.
    ///
    /// ```text
    /// verifier.replace_crls(&[(CrlScope::Vcek, milan_vcek_crl), (CrlScope::Vlek, milan_vlek_crl)])?;
    /// let refresh_at = verifier.crl_refresh_due(); // earliest nextUpdate: fetch new CRLs before it
    /// ```
    pub fn replace_crls(&self, crls: &[(CrlScope, &[u8])]) -> Result<Vec<InstalledCrl>, Error> {
        let next = CrlSet::build(self.provider, &self.arks(), crls)?;
        let installed = next.installed();
        let mut slot = self.crls.write().unwrap_or_else(PoisonError::into_inner);
        next.install(&mut slot);
        drop(slot);
        self.cache.clear();
        Ok(installed)
    }

    /// The installed CRLs.
    pub fn installed_crls(&self) -> Vec<InstalledCrl> {
        self.crl_set().installed()
    }

    /// When the installed CRLs need replacing: the earliest nextUpdate among them (`None` when none is
    /// installed). Past it, verifications fail with [`Error::CrlStale`] unless the policy waives staleness.
    pub fn crl_refresh_due(&self) -> Option<UnixTime> {
        self.crl_set().refresh_due()
    }

    fn crl_set(&self) -> Arc<CrlSet> {
        Arc::clone(&self.crls.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn arks(&self) -> impl Iterator<Item = (Product, &[u8])> + Clone {
        self.anchors.iter().map(|a| (a.owned.product, &*a.owned.ark))
    }

    /// Verifies a report with its certificates against `policy`.
    pub fn verify<'a>(&self, req: &SnpRequest<'a>, policy: &SnpPolicy) -> Result<VerifiedReport<'a>, Error> {
        self.verify_recording(req, policy, &mut Verdict::default())
    }

    /// [`Self::verify`], recording every check's outcome in `verdict` as it goes: on a rejection `verdict`
    /// holds the checks that ran before the failure (the rest stay `NotRun`), for result objects that say
    /// how far a rejected verification got.
    pub fn verify_recording<'a>(
        &self,
        req: &SnpRequest<'a>,
        policy: &SnpPolicy,
        verdict: &mut Verdict,
    ) -> Result<VerifiedReport<'a>, Error> {
        *verdict = Verdict::default();
        let report = Report::parse(req.report)?;
        verdict.set(Check::ReportStructure, Outcome::Passed);
        if let Some(rd) = req.report_data
            && rd.len() != 64
        {
            return Err(Error::Misuse { reason: "expected REPORT_DATA must be exactly 64 bytes" });
        }

        let leaf_key = self.provider.digests.sha256(req.leaf);
        let (leaf, cache_hit) = match self.cache.get(&leaf_key, req.time) {
            Some(leaf) if self.warm_entry_usable(&leaf, req, policy) => (leaf, true),
            _ => {
                let chain = ChainRequest {
                    leaf: req.leaf,
                    intermediate: req.intermediate,
                    root: req.root,
                    product: req.product,
                    time: req.time,
                };
                let cpuid = report.cpuid_product().transpose()?;
                let role = report.signing_key().role();
                let leaf = Arc::new(self.verify_chain(&chain, cpuid, role, policy, verdict)?);
                if leaf.cacheable {
                    self.cache.insert(leaf_key, Arc::clone(&leaf));
                }
                (leaf, false)
            }
        };
        verdict.set(Check::CertificateChain, Outcome::Passed);
        verdict.set(Check::CertificateValidity, Outcome::Passed);
        verdict.set(Check::Revocation, if leaf.crl_checked { Outcome::Passed } else { Outcome::Waived });

        // Product: every available source must agree with the leaf's.
        check_product(req.product, &report, leaf.product)?;
        if !policy.products.is_empty() && !policy.products.contains(&leaf.product) {
            return Err(violation(
                Check::Product,
                Value::OneOf(policy.products.len()),
                Value::Text(leaf.product.name()),
            ));
        }
        verdict.set(Check::Product, Outcome::Passed);

        // The leaf kind must be what the report says signed it.
        let signer = report.signing_key().role();
        if signer != leaf.role {
            return Err(Error::SigningKeyMismatch { report: signer, certificate: leaf.role });
        }
        verdict.set(Check::SigningKey, Outcome::Passed);

        // REPORTED_TCB == the leaf's SPLs.
        let reported_tcb = TcbVersion::decode_field(report.reported_tcb(), leaf.product, "REPORTED_TCB", 0x180)?;
        for (component, cert) in leaf.tcb.components() {
            let found = reported_tcb.get(component).unwrap_or(0);
            if found != cert {
                return Err(Error::TcbMismatch { component, report: found, certificate: cert });
            }
        }
        verdict.set(Check::TcbBinding, Outcome::Passed);

        // hwID == CHIP_ID (VCEK only; Turin hwIDs are the first 8 bytes).
        match (&leaf.hw_id, report.mask_chip_key()) {
            (Some((hw, n)), false) => {
                let chip = &report.chip_id()[..*n];
                // Turin hwIDs are 8 bytes; the rest of CHIP_ID must then be zero.
                if chip != &hw[..*n] || report.chip_id()[*n..].iter().any(|b| *b != 0) {
                    return Err(Error::ChipIdMismatch { report: Bytes::new(chip), certificate: Bytes::new(&hw[..*n]) });
                }
                verdict.set(Check::ChipIdBinding, Outcome::Passed);
            }
            _ => verdict.set(Check::ChipIdBinding, Outcome::Waived),
        }

        // The signature, over the received bytes 0..0x2A0.
        leaf.key
            .verify_fixed(report.signed_bytes(), &report.signature_fixed())
            .map_err(|_| Error::ReportSignatureInvalid)?;
        verdict.set(Check::ReportSignature, Outcome::Passed);

        check_policy(&report, leaf.product, reported_tcb, req, policy, verdict)?;
        Ok(VerifiedReport { report, product: leaf.product, signer, reported_tcb, verdict: *verdict, cache_hit })
    }

    /// Verifies a VCEK or VLEK up to the pinned ARK (signatures, names, validity, revocation, AMD
    /// extensions) without a report. The leaf's kind follows from its issuer.
    pub fn verify_chain_only(&self, req: &ChainRequest<'_>, policy: &SnpPolicy) -> Result<VerifiedChain, Error> {
        let leaf = Certificate::from_der(req.leaf)?;
        let role = if leaf.subject().common_name() == Some("SEV-VLEK") { CertRole::Vlek } else { CertRole::Vcek };
        let mut verdict = Verdict::default();
        let v = self.verify_chain(req, None, role, policy, &mut verdict)?;
        Ok(VerifiedChain {
            product: v.product,
            role: v.role,
            tcb: v.tcb,
            crl_checked: v.crl_checked,
            expires: v.expires,
        })
    }

    /// Whether a cached leaf may stand in for a full chain verification of `req`.
    fn warm_entry_usable(&self, leaf: &VerifiedLeaf, req: &SnpRequest<'_>, policy: &SnpPolicy) -> bool {
        if policy.revocation == Revocation::Require && !leaf.crl_checked {
            return false;
        }
        // Verified under another CRL set than the installed one: revocation must be checked again.
        if leaf.crl_generation != self.crls.read().unwrap_or_else(PoisonError::into_inner).generation {
            return false;
        }
        let Some(anchor) = self.anchors.iter().find(|a| a.owned.product == leaf.product) else {
            return false;
        };
        if req.root.is_some_and(|r| r != &*anchor.owned.ark) {
            return false;
        }
        let inter_role = if leaf.role == CertRole::Vlek { CertRole::Asvk } else { CertRole::Ask };
        match req.intermediate {
            None => true,
            Some(d) if anchor.intermediate(inter_role) == Some(d) => true,
            Some(d) => self.provider.digests.sha256(d) == leaf.intermediate_sha256,
        }
    }

    fn anchor_info<'s>(&self, anchor: &'s Anchor) -> Result<&'s AnchorInfo, Error> {
        anchor.verified.get_or_init(|| verify_anchor(self.provider, &anchor.owned)).as_ref().map_err(Clone::clone)
    }

    /// The cold path: verifies the leaf up to the pinned ARK and prepares its key.
    fn verify_chain(
        &self,
        req: &ChainRequest<'_>,
        cpuid: Option<Product>,
        expected_role: CertRole,
        policy: &SnpPolicy,
        verdict: &mut Verdict,
    ) -> Result<VerifiedLeaf, Error> {
        let leaf = Certificate::from_der(req.leaf)?;
        let ext = leaf.amd_extensions()?;
        let cert_product = ext.product_name.map(Product::from_product_name).transpose()?;
        let product = determine_product(req.product, cpuid, cert_product)?;
        let anchor = self
            .anchors
            .iter()
            .find(|a| a.owned.product == product)
            .ok_or(Error::UntrustedCertificate { role: CertRole::Ark, product })?;
        let info = self.anchor_info(anchor)?;
        let ark = Certificate::from_der(&anchor.owned.ark)?;
        if req.root.is_some_and(|r| r != &*anchor.owned.ark) {
            return Err(Error::UntrustedCertificate { role: CertRole::Ark, product });
        }

        // Which intermediate issued the leaf decides its kind: ASK → VCEK, ASVK → VLEK.
        let mut chosen = None;
        for inter in &info.intermediates {
            let der = anchor.intermediate(inter.role).unwrap_or_default();
            let pinned = Certificate::from_der(der)?;
            if pinned.subject() == leaf.issuer() {
                chosen = Some((inter.role, der));
            }
        }
        let supplied = match req.intermediate {
            Some(d) if chosen.is_none_or(|(_, pinned)| pinned != d) => Some(d),
            _ => None,
        };
        let (inter_role, inter_der, inter_info) = if let Some(d) = supplied {
            // A supplied intermediate that is not the pinned one: verify it under the pinned ARK.
            let cert = Certificate::from_der(d)?;
            if cert.subject() != leaf.issuer() {
                return Err(Error::IssuerMismatch { role: expected_role });
            }
            // AMD names ASVKs "SEV-VLEK-<product>" and ASKs "SEV-<product>".
            let role = if cert.subject().common_name().is_some_and(|cn| cn.starts_with("SEV-VLEK-")) {
                CertRole::Asvk
            } else {
                CertRole::Ask
            };
            let i = verify_intermediate(self.provider, &ark, &cert, role)?;
            (role, d, i)
        } else {
            let (role, der) = chosen.ok_or(Error::IssuerMismatch { role: expected_role })?;
            let i = *info.intermediates.iter().find(|i| i.role == role).ok_or(Error::IssuerMismatch { role })?;
            (role, der, i)
        };
        let leaf_role = if inter_role == CertRole::Asvk { CertRole::Vlek } else { CertRole::Vcek };
        let inter = Certificate::from_der(inter_der)?;

        // Signatures and names.
        leaf.signature_algorithm()
            .verify(self.provider, &inter.public_key(), leaf.tbs(), leaf.signature())
            .map_err(|_| Error::CertSignatureInvalid { role: leaf_role })?;
        verdict.set(Check::CertificateChain, Outcome::Passed);

        // Validity at the trusted time.
        let t = req.time;
        check_window(CertRole::Ark, info.ark_not_before, info.ark_not_after, t)?;
        check_window(inter_role, inter_info.not_before, inter_info.not_after, t)?;
        leaf.check_validity(t, leaf_role)?;
        verdict.set(Check::CertificateValidity, Outcome::Passed);

        // Revocation.
        let mut expires = leaf.not_after().min(inter_info.not_after).min(info.ark_not_after);
        let mut not_before = leaf.not_before().max(inter_info.not_before).max(info.ark_not_before);
        let crls = self.crl_set();
        let crl = crls.check(product, (inter_role, inter.serial()), (leaf_role, leaf.serial()), t, policy)?;
        if let Some(n) = crl.expires {
            expires = expires.min(n);
        }
        if let Some(n) = crl.not_before {
            not_before = not_before.max(n);
        }

        // The leaf's key and AMD extensions.
        let PublicKey::EcP384 { point } = leaf.public_key() else {
            return Err(Error::LeafKeyNotP384 { role: leaf_role });
        };
        let key =
            self.provider.ecdsa_p384_sha384.prepare(point).map_err(|_| Error::LeafKeyNotP384 { role: leaf_role })?;
        let missing = |extension| Error::MissingAmdExtension { role: leaf_role, extension };
        let tcb = TcbVersion {
            fmc: match product {
                Product::Turin => Some(ext.fmc_spl.ok_or(missing("fmcSPL"))?),
                Product::Milan | Product::Genoa => None,
            },
            bootloader: ext.bl_spl.ok_or(missing("blSPL"))?,
            tee: ext.tee_spl.ok_or(missing("teeSPL"))?,
            snp: ext.snp_spl.ok_or(missing("snpSPL"))?,
            microcode: ext.ucode_spl.ok_or(missing("ucodeSPL"))?,
        };
        let hw_id = match leaf_role {
            CertRole::Vcek => {
                let hw = ext.hw_id.ok_or(missing("hwID"))?;
                let want = if product == Product::Turin { 8 } else { 64 };
                if hw.len() != want {
                    return Err(Error::AmdExtension { extension: "hwID", reason: "wrong length for the product" });
                }
                let mut buf = [0u8; 64];
                buf[..hw.len()].copy_from_slice(hw);
                Some((buf, hw.len()))
            }
            _ => None,
        };
        Ok(VerifiedLeaf {
            product,
            role: leaf_role,
            key,
            tcb,
            hw_id,
            not_before,
            expires,
            intermediate_sha256: inter_info.sha256,
            crl_checked: crl.checked && !crl.stale_waived,
            cacheable: !crl.stale_waived,
            crl_generation: crls.generation,
        })
    }
}

fn check_window(role: CertRole, not_before: UnixTime, not_after: UnixTime, time: UnixTime) -> Result<(), Error> {
    if time < not_before {
        return Err(Error::CertNotYetValid { role, time, not_before });
    }
    if time > not_after {
        return Err(Error::CertExpired { role, time, not_after });
    }
    Ok(())
}

/// Verifies a product's anchors once: the ARK is self-signed and a CA; each intermediate is a CA signed by
/// the ARK.
fn verify_anchor(provider: &CryptoProvider, owned: &OwnedTrustAnchors) -> Result<AnchorInfo, Error> {
    let ark = Certificate::from_der(&owned.ark)?;
    if ark.issuer() != ark.subject() {
        return Err(Error::IssuerMismatch { role: CertRole::Ark });
    }
    if ark.is_ca() != Some(true) || !ark.may_sign_certificates() {
        return Err(Error::NotACa { role: CertRole::Ark });
    }
    ark.signature_algorithm()
        .verify(provider, &ark.public_key(), ark.tbs(), ark.signature())
        .map_err(|_| Error::CertSignatureInvalid { role: CertRole::Ark })?;
    let mut intermediates = Vec::new();
    for (role, der) in [(CertRole::Ask, &owned.ask), (CertRole::Asvk, &owned.asvk)] {
        if let Some(der) = der {
            let cert = Certificate::from_der(der)?;
            intermediates.push(verify_intermediate(provider, &ark, &cert, role)?);
        }
    }
    Ok(AnchorInfo { ark_not_before: ark.not_before(), ark_not_after: ark.not_after(), intermediates })
}

fn verify_intermediate(
    provider: &CryptoProvider,
    ark: &Certificate<'_>,
    cert: &Certificate<'_>,
    role: CertRole,
) -> Result<IntermediateInfo, Error> {
    if cert.issuer() != ark.subject() {
        return Err(Error::IssuerMismatch { role });
    }
    if cert.is_ca() != Some(true) || !cert.may_sign_certificates() {
        return Err(Error::NotACa { role });
    }
    cert.signature_algorithm()
        .verify(provider, &ark.public_key(), cert.tbs(), cert.signature())
        .map_err(|_| Error::CertSignatureInvalid { role })?;
    Ok(IntermediateInfo {
        role,
        sha256: provider.digests.sha256(cert.der()),
        not_before: cert.not_before(),
        not_after: cert.not_after(),
    })
}

/// Combines the product sources; all that are present must agree, and at least one must be present.
fn determine_product(caller: Option<Product>, cpuid: Option<Product>, cert: Option<Product>) -> Result<Product, Error> {
    let sources = [
        (caller, ProductSource::Caller),
        (cpuid, ProductSource::ReportCpuid),
        (cert, ProductSource::CertificateProductName),
    ];
    let mut found: Option<(Product, ProductSource)> = None;
    for (p, src) in sources {
        let Some(p) = p else { continue };
        match found {
            None => found = Some((p, src)),
            Some((q, qsrc)) if q != p => {
                return Err(Error::ProductMismatch { expected: q, expected_source: qsrc, found: p, found_source: src });
            }
            Some(_) => {}
        }
    }
    found.map(|(p, _)| p).ok_or(Error::ProductUnknown)
}

fn check_product(caller: Option<Product>, report: &Report<'_>, leaf: Product) -> Result<(), Error> {
    let product = determine_product(caller, report.cpuid_product().transpose()?, Some(leaf))?;
    debug_assert_eq!(product, leaf);
    Ok(())
}

fn flag(verdict: &mut Verdict, check: Check, allowed: bool, set: bool) -> Result<(), Error> {
    if allowed {
        verdict.set(check, Outcome::Waived);
        Ok(())
    } else if set {
        Err(violation(check, Value::Bool(false), Value::Bool(true)))
    } else {
        verdict.set(check, Outcome::Passed);
        Ok(())
    }
}

fn min_tcb(verdict: &mut Verdict, check: Check, min: Option<&TcbVersion>, have: TcbVersion) -> Result<(), Error> {
    let Some(min) = min else {
        verdict.set(check, Outcome::Waived);
        return Ok(());
    };
    if let Some((c, want, found)) = have.first_below(min) {
        return Err(violation(check, Value::ComponentAtLeast(c, want), Value::Component(c, found)));
    }
    verdict.set(check, Outcome::Passed);
    Ok(())
}

fn not_above(check: Check, lower: TcbVersion, upper: TcbVersion) -> Result<(), Error> {
    for (c, v) in lower.components() {
        let max = upper.get(c).unwrap_or(0);
        if v > max {
            return Err(violation(check, Value::ComponentAtMost(c, max), Value::Component(c, v)));
        }
    }
    Ok(())
}

fn check_policy(
    report: &Report<'_>,
    product: Product,
    reported: TcbVersion,
    req: &SnpRequest<'_>,
    policy: &SnpPolicy,
    verdict: &mut Verdict,
) -> Result<(), Error> {
    let v = report.version();
    if v < policy.min_report_version || v > policy.max_report_version {
        return Err(violation(
            Check::ReportVersion,
            Value::Range(u64::from(policy.min_report_version), u64::from(policy.max_report_version)),
            Value::Int(u64::from(v)),
        ));
    }
    verdict.set(Check::ReportVersion, Outcome::Passed);

    // REPORT_DATA: the request's value and the policy's, each exact.
    let request_rd: Option<&[u8; 64]> = req.report_data.and_then(|r| r.try_into().ok());
    policy::exact(verdict, Check::ReportData, policy.report_data.as_ref().map(|h| &h.0), report.report_data())?;
    let policy_outcome = verdict.outcome(Check::ReportData);
    policy::exact(verdict, Check::ReportData, request_rd, report.report_data())?;
    if policy_outcome == Outcome::Passed {
        verdict.set(Check::ReportData, Outcome::Passed);
    }

    policy::allow_list(verdict, Check::Measurement, &policy.measurements, report.measurement())?;
    policy::exact(verdict, Check::HostData, policy.host_data.as_ref().map(|h| &h.0), report.host_data())?;
    policy::allow_list(verdict, Check::IdKeyDigest, &policy.id_key_digests, report.id_key_digest())?;
    policy::allow_list(verdict, Check::AuthorKeyDigest, &policy.author_key_digests, report.author_key_digest())?;
    policy::exact(verdict, Check::FamilyId, policy.family_id.as_ref().map(|h| &h.0), report.family_id())?;
    policy::exact(verdict, Check::ImageId, policy.image_id.as_ref().map(|h| &h.0), report.image_id())?;

    match policy.min_guest_svn {
        None => verdict.set(Check::GuestSvn, Outcome::Waived),
        Some(min) if report.guest_svn() >= min => verdict.set(Check::GuestSvn, Outcome::Passed),
        Some(min) => {
            return Err(violation(
                Check::GuestSvn,
                Value::AtLeast(u64::from(min)),
                Value::Int(u64::from(report.guest_svn())),
            ));
        }
    }

    let gp = report.policy();
    flag(verdict, Check::Debug, policy.allow_debug, gp.debug())?;
    flag(verdict, Check::MigrationAgent, policy.allow_migration_agent, gp.migrate_ma())?;
    flag(verdict, Check::Smt, policy.allow_smt, gp.smt())?;
    if policy.require_single_socket {
        if !gp.single_socket() {
            return Err(violation(Check::SingleSocket, Value::Bool(true), Value::Bool(false)));
        }
        verdict.set(Check::SingleSocket, Outcome::Passed);
    } else {
        verdict.set(Check::SingleSocket, Outcome::Waived);
    }
    match policy.min_abi {
        None => verdict.set(Check::AbiVersion, Outcome::Waived),
        Some(min) if (gp.abi_major(), gp.abi_minor()) >= (min.major, min.minor) => {
            verdict.set(Check::AbiVersion, Outcome::Passed);
        }
        Some(min) => {
            return Err(violation(
                Check::AbiVersion,
                Value::AtLeast(u64::from(min.major) << 8 | u64::from(min.minor)),
                Value::Int(u64::from(gp.abi_major()) << 8 | u64::from(gp.abi_minor())),
            ));
        }
    }
    match policy.vmpl {
        None => verdict.set(Check::Vmpl, Outcome::Waived),
        Some(want) if report.vmpl() == want => verdict.set(Check::Vmpl, Outcome::Passed),
        Some(want) => {
            return Err(violation(Check::Vmpl, Value::Int(u64::from(want)), Value::Int(u64::from(report.vmpl()))));
        }
    }
    policy::platform_flags(verdict, policy, report.platform_info().0)?;
    policy::allow_list(verdict, Check::ChipId, &policy.chip_ids, report.chip_id())?;

    let current = TcbVersion::decode_field(report.current_tcb(), product, "CURRENT_TCB", 0x38)?;
    let committed = TcbVersion::decode_field(report.committed_tcb(), product, "COMMITTED_TCB", 0x1E0)?;
    let launch = TcbVersion::decode_field(report.launch_tcb(), product, "LAUNCH_TCB", 0x1F0)?;
    not_above(Check::TcbConsistency, reported, current)?;
    not_above(Check::TcbConsistency, committed, current)?;
    verdict.set(Check::TcbConsistency, Outcome::Passed);
    min_tcb(verdict, Check::MinReportedTcb, policy.min_reported_tcb.as_ref(), reported)?;
    min_tcb(verdict, Check::MinCommittedTcb, policy.min_committed_tcb.as_ref(), committed)?;
    min_tcb(verdict, Check::MinLaunchTcb, policy.min_launch_tcb.as_ref(), launch)?;
    min_tcb(verdict, Check::MinCurrentTcb, policy.min_current_tcb.as_ref(), current)?;

    let provisional = current != committed || report.current_version() != report.committed_version();
    if policy.allow_provisional_firmware {
        verdict.set(Check::ProvisionalFirmware, Outcome::Waived);
    } else if provisional {
        return Err(violation(
            Check::ProvisionalFirmware,
            Value::Text("current TCB and firmware version equal to the committed ones"),
            Value::Text("provisional firmware (current differs from committed)"),
        ));
    } else {
        verdict.set(Check::ProvisionalFirmware, Outcome::Passed);
    }
    Ok(())
}
