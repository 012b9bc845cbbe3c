//! CRL outcomes and the policy that decides about them.
//!
//! A CRL is served from the store only until its nextUpdate, never beyond. After that the supply asks KDS;
//! if KDS cannot deliver, the old CRL comes back as [`CrlStatus::Stale`], and with no CRL at all as
//! [`CrlStatus::Unavailable`]. Neither is silently turned into "no revocation check": the caller's
//! [`CrlPolicy`] decides, and the default ([`CrlPolicy::RequireFresh`]) fails closed.

use super::KdsError;
use attest_engine::UnixTime;
use attest_engine::snp::{Product, SnpVerifier};

/// What the supply could obtain for a product's CRL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrlStatus {
    /// A verified CRL whose nextUpdate is still ahead.
    Fresh {
        /// The CRL (DER).
        der: Vec<u8>,
        /// Its nextUpdate.
        next_update: UnixTime,
    },
    /// A verified CRL past its nextUpdate (or without one), because no newer one could be obtained.
    Stale {
        /// The CRL (DER).
        der: Vec<u8>,
        /// Its nextUpdate.
        next_update: Option<UnixTime>,
    },
    /// No verified CRL at all.
    Unavailable {
        /// Why.
        reason: KdsError,
    },
}

/// How to treat stale or missing CRLs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrlPolicy {
    /// Only a fresh CRL is acceptable; stale or unavailable is an error (fail closed).
    #[default]
    RequireFresh,
    /// A stale CRL is acceptable (the engine's policy must then also set `allow_stale_crl`); unavailable is
    /// an error.
    AllowStale,
    /// Use whatever is there; proceed without a CRL when none is available (revocation is then waived, and
    /// the engine's verdict records it as such).
    BestEffort,
}

impl CrlStatus {
    /// The CRL to use under `policy`: `Ok(Some(der))`, `Ok(None)` (proceed without one; only under
    /// [`CrlPolicy::BestEffort`]), or the typed refusal.
    pub fn crl_for_policy(&self, policy: CrlPolicy) -> Result<Option<Vec<u8>>, KdsError> {
        match (self, policy) {
            (Self::Fresh { der, .. }, _) | (Self::Stale { der, .. }, CrlPolicy::AllowStale | CrlPolicy::BestEffort) => {
                Ok(Some(der.clone()))
            }
            (Self::Stale { next_update, .. }, CrlPolicy::RequireFresh) => {
                Err(KdsError::CrlStale { next_update: *next_update })
            }
            (Self::Unavailable { .. }, CrlPolicy::BestEffort) => Ok(None),
            (Self::Unavailable { reason }, _) => Err(KdsError::CrlUnavailable { reason: Box::new(reason.clone()) }),
        }
    }

    /// Installs the CRL that `policy` accepts into `verifier` ([`SnpVerifier::set_crl`]). Returns the product
    /// it was installed for, `None` when the policy allowed proceeding without one.
    pub fn install(&self, verifier: &SnpVerifier, policy: CrlPolicy) -> Result<Option<Product>, KdsError> {
        let Some(der) = self.crl_for_policy(policy)? else { return Ok(None) };
        verifier.set_crl(&der).map(Some).map_err(|error| KdsError::Verification { object: "CRL", error })
    }

    /// Whether the CRL is fresh.
    pub fn is_fresh(&self) -> bool {
        matches!(self, Self::Fresh { .. })
    }
}
