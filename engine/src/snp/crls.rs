//! The verifier-wide set of AMD CRLs, replaced atomically at run time.
//!
//! AMD's KDS publishes, per product, one ARK-signed CRL per key kind (AMD's VCEK and VLEK certificate
//! specifications, "KDS interface"): `/vcek/v1/{product}/crl` covers the ASK and the VCEKs it issued,
//! `/vlek/v1/{product}/crl` the ASVK and the VLEKs. The verifier holds a set of them ([`CrlScope`] says which
//! chains each covers). A service replaces the whole set at once ([`super::SnpVerifier::replace_crls`]) — at
//! start from its offline store, then again before the earliest nextUpdate
//! ([`super::SnpVerifier::crl_refresh_due`]).
//!
//! ```text
//!   replace_crls([...]) ──verify every CRL under its product's pinned ARK──► all good? ──► swap the set (generation + 1)
//!                                                                            └─ any bad ──► error, old set stays
//!   verify (cold) ── snapshot of the set ──► every CRL that covers the chain: thisUpdate ≤ t, t ≤ nextUpdate
//!                                            (stale: error unless allow_stale_crl), serials of intermediate and leaf
//!   verify (warm) ── cached leaf usable only if verified under the current generation
//! ```
//!
//! A verification that started before a swap finishes with the set it began with; its result is never
//! reused after the swap (cache entries carry the generation they were verified under).

use super::SnpPolicy;
use crate::amd::Product;
use crate::error::{Bytes, CertRole, Error};
use crate::policy::Revocation;
use crate::time::UnixTime;
use crate::x509::{Certificate, Crl};

/// Most CRLs one verifier holds (three products × two key kinds today; the rest is headroom).
pub const MAX_INSTALLED_CRLS: usize = 16;

/// Which of a product's chains an ARK-signed CRL covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrlScope {
    /// KDS `/vcek/v1/{product}/crl`: the ASK and VCEKs.
    Vcek,
    /// KDS `/vlek/v1/{product}/crl`: the ASVK and VLEKs.
    Vlek,
    /// Both chains of the product ([`super::SnpVerifier::set_crl`], for callers holding one CRL per product).
    Product,
}

impl CrlScope {
    /// Whether a CRL of this scope covers a chain whose leaf is `leaf`.
    fn covers(self, leaf: CertRole) -> bool {
        match self {
            Self::Product => true,
            Self::Vcek => leaf == CertRole::Vcek,
            Self::Vlek => leaf == CertRole::Vlek,
        }
    }

    fn overlaps(self, other: Self) -> bool {
        self == other || self == Self::Product || other == Self::Product
    }
}

/// What an installed CRL is (for status pages and refresh scheduling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstalledCrl {
    /// The product whose ARK signed it.
    pub product: Product,
    /// The chains it covers.
    pub scope: CrlScope,
    /// thisUpdate.
    pub this_update: UnixTime,
    /// nextUpdate (a CRL without one is stale at every time, RFC 5280 §5.1.2.5).
    pub next_update: Option<UnixTime>,
    /// Number of revoked entries.
    pub entries: usize,
    /// SHA-256 of the DER.
    pub sha256: [u8; 32],
}

#[derive(Debug)]
struct StoredCrl {
    info: InstalledCrl,
    der: Box<[u8]>,
}

/// One installed set; never modified, only replaced.
#[derive(Debug, Default)]
pub(crate) struct CrlSet {
    pub(crate) generation: u64,
    crls: Vec<StoredCrl>,
}

/// What revocation checking concluded for one chain.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CrlOutcome {
    /// At least one CRL covering the chain was checked.
    pub(crate) checked: bool,
    /// Earliest nextUpdate of the CRLs used (when fresh).
    pub(crate) expires: Option<UnixTime>,
    /// Latest thisUpdate of the CRLs used.
    pub(crate) not_before: Option<UnixTime>,
    /// A stale CRL was accepted under the policy's waiver `allow_stale_crl`: the verdict records revocation
    /// as waived, and the result must not be cached (another policy may not waive it).
    pub(crate) stale_waived: bool,
}

impl CrlSet {
    /// Verifies every CRL under the pinned ARK of the product that signed it and builds the next set. Fails
    /// (installing nothing) on the first bad CRL, on two CRLs for overlapping scopes of one product, and
    /// beyond [`MAX_INSTALLED_CRLS`].
    pub(crate) fn build<'a>(
        provider: &crate::crypto::CryptoProvider,
        arks: &(impl Iterator<Item = (Product, &'a [u8])> + Clone),
        crls: &[(CrlScope, &[u8])],
    ) -> Result<Self, Error> {
        if crls.len() > MAX_INSTALLED_CRLS {
            return Err(Error::LimitExceeded { what: "installed CRLs", limit: MAX_INSTALLED_CRLS, found: crls.len() });
        }
        let mut out: Vec<StoredCrl> = Vec::with_capacity(crls.len());
        for &(scope, der) in crls {
            let product = signer(provider, arks.clone(), der)?;
            if out.iter().any(|c| c.info.product == product && c.info.scope.overlaps(scope)) {
                return Err(Error::Misuse { reason: "two CRLs for the same product and key kind" });
            }
            let crl = Crl::from_der(der)?;
            out.push(StoredCrl {
                info: InstalledCrl {
                    product,
                    scope,
                    this_update: crl.this_update(),
                    next_update: crl.next_update(),
                    entries: crl.len(),
                    sha256: provider.digests.sha256(der),
                },
                der: der.into(),
            });
        }
        Ok(Self { generation: 0, crls: out })
    }

    /// The products of the set's CRLs.
    pub(crate) fn products(&self) -> impl Iterator<Item = Product> + '_ {
        self.crls.iter().map(|c| c.info.product)
    }

    /// `self` plus the CRLs of `current` for other products than `self`'s (what `set_crl` installs).
    pub(crate) fn keeping_other_products(mut self, current: &Self) -> Self {
        let ours: Vec<Product> = self.products().collect();
        let kept = current.crls.iter().filter(|c| !ours.contains(&c.info.product));
        self.crls.extend(kept.map(|c| StoredCrl { info: c.info, der: c.der.clone() }));
        self
    }

    /// Installs `self` in `slot` as the next generation.
    pub(crate) fn install(mut self, slot: &mut std::sync::Arc<Self>) {
        self.generation = slot.generation + 1;
        *slot = std::sync::Arc::new(self);
    }

    pub(crate) fn installed(&self) -> Vec<InstalledCrl> {
        self.crls.iter().map(|c| c.info).collect()
    }

    /// The earliest nextUpdate of the set (`Some(thisUpdate)` for a CRL without one: it is stale already).
    pub(crate) fn refresh_due(&self) -> Option<UnixTime> {
        self.crls.iter().map(|c| c.info.next_update.unwrap_or(c.info.this_update)).min()
    }

    /// Checks the chain (`intermediate` → `leaf` of `product`) against every CRL covering it, at `time`.
    pub(crate) fn check(
        &self,
        product: Product,
        (inter_role, inter_serial): (CertRole, &[u8]),
        (leaf_role, leaf_serial): (CertRole, &[u8]),
        time: UnixTime,
        policy: &SnpPolicy,
    ) -> Result<CrlOutcome, Error> {
        let mut out = CrlOutcome { checked: false, expires: None, not_before: None, stale_waived: false };
        for stored in self.crls.iter().filter(|c| c.info.product == product && c.info.scope.covers(leaf_role)) {
            let crl = Crl::from_der(&stored.der)?;
            if time < crl.this_update() {
                return Err(Error::CrlNotYetValid { time, this_update: crl.this_update() });
            }
            out.not_before = Some(out.not_before.map_or(crl.this_update(), |n| n.max(crl.this_update())));
            match crl.next_update() {
                Some(n) if time <= n => out.expires = Some(out.expires.map_or(n, |e| e.min(n))),
                next_update => {
                    if !policy.allow_stale_crl {
                        return Err(Error::CrlStale { time, next_update });
                    }
                    out.stale_waived = true;
                }
            }
            for (role, serial) in [(inter_role, inter_serial), (leaf_role, leaf_serial)] {
                if crl.is_revoked(serial) {
                    return Err(Error::Revoked { role, serial: Bytes::new(serial) });
                }
            }
            out.checked = true;
        }
        if !out.checked && policy.revocation == Revocation::Require {
            return Err(Error::CrlMissing);
        }
        Ok(out)
    }
}

/// The product whose pinned ARK signed `der`.
fn signer<'a>(
    provider: &crate::crypto::CryptoProvider,
    arks: impl Iterator<Item = (Product, &'a [u8])>,
    der: &[u8],
) -> Result<Product, Error> {
    let crl = Crl::from_der(der)?;
    for (product, ark) in arks {
        let ark = Certificate::from_der(ark)?;
        if ark.subject() != crl.issuer() {
            continue;
        }
        if !ark.may_sign_crls() {
            return Err(Error::NotACa { role: CertRole::Ark });
        }
        if crl.signature_algorithm().verify(provider, &ark.public_key(), crl.tbs(), crl.signature()).is_ok() {
            return Ok(product);
        }
    }
    Err(Error::CrlSignatureInvalid)
}
