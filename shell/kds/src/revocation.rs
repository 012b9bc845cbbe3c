//! Keeping a verifier's CRLs current: loaded at start, replaced before they expire.
//!
//! A service that verifies SEV-SNP evidence holds one [`SnpVerifier`] whose CRL set decides revocation. The
//! [`CrlKeeper`] fills it from the supply ([`Kds::crl_of`]: the store first, AMD's KDS second) for every
//! (product, key kind) the service's variants need, and replaces the whole set again
//! [`CRL_REFRESH_MARGIN`] before the earliest nextUpdate — all or nothing
//! ([`SnpVerifier::replace_crls`]), so a half-refreshed set never exists.
//!
//! ```text
//!  start ──► refresh(): per wanted CRL ── Kds::crl_of(product, kind, margin) ──► Fresh ─────────► use
//!                                                                           ├─► Stale ──────────► error, or use under AllowStale (logged)
//!                                                                           └─► Unavailable ────► error, or skip under BestEffort (logged)
//!            └─► SnpVerifier::replace_crls(all of them) ──► installed; state() says fresh / stale-waived / missing-waived
//!  run() ──► sleep until (earliest nextUpdate − margin), clamped to [MIN, MAX] ──► refresh() ──► error: logged, old set kept,
//!                                                                                              retried after MIN
//! ```
//!
//! Fail closed: under [`CrlPolicy::RequireFresh`] (the default) a service whose CRLs are stale or missing at
//! start does not start, and one whose refresh keeps failing keeps the old set — which the engine refuses to
//! use once its nextUpdate has passed ([`attest_engine::Error::CrlStale`]), unless the policy's
//! `allow_stale_crl` waiver is set as well. The waivers are reported by [`CrlKeeper::state`], which services
//! put into every verdict.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use attest_engine::UnixTime;
use attest_engine::snp::{CrlScope, InstalledCrl, Product, SnpVerifier};

use super::{ChainKind, CrlPolicy, CrlStatus, Kds, KdsError};

/// How long before the earliest nextUpdate the keeper fetches new CRLs.
pub const CRL_REFRESH_MARGIN: Duration = Duration::from_secs(6 * 3600);
/// Shortest wait between two refreshes (also the retry delay after a failed one).
pub const MIN_CRL_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// Longest wait between two refreshes (AMD may publish a new CRL long before the old one expires).
pub const MAX_CRL_REFRESH_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// One CRL a verifier needs: a product and the key kind whose chains it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrlWanted {
    /// The product whose ARK signs it.
    pub product: Product,
    /// VCEK (ASK and VCEKs) or VLEK (ASVK and VLEKs).
    pub kind: ChainKind,
}

impl CrlWanted {
    fn scope(self) -> CrlScope {
        match self.kind {
            ChainKind::Vcek => CrlScope::Vcek,
            ChainKind::Vlek => CrlScope::Vlek,
        }
    }
}

impl std::fmt::Display for CrlWanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} CRL", self.product, self.kind.segment())
    }
}

/// What revocation checking rests on, as the last refresh left it (for logs, verdicts and metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevocationState {
    /// No CRL is needed (no SNP variant), or none has been loaded yet.
    NotLoaded,
    /// Every wanted CRL is installed and fresh.
    Fresh,
    /// At least one installed CRL is past its nextUpdate, accepted under [`CrlPolicy::AllowStale`].
    StaleWaived,
    /// At least one wanted CRL is missing, skipped under [`CrlPolicy::BestEffort`]: chains it would cover are
    /// not checked for revocation (the engine's verdict records revocation as waived).
    MissingWaived,
}

impl RevocationState {
    /// A stable name: `not-loaded`, `fresh`, `stale-waived`, `missing-waived`.
    pub fn name(self) -> &'static str {
        match self {
            Self::NotLoaded => "not-loaded",
            Self::Fresh => "fresh",
            Self::StaleWaived => "stale-waived",
            Self::MissingWaived => "missing-waived",
        }
    }

    /// Whether a waiver is in effect.
    pub fn is_waived(self) -> bool {
        matches!(self, Self::StaleWaived | Self::MissingWaived)
    }
}

/// Loads a verifier's CRLs at start, fail closed, and replaces the whole set before the earliest nextUpdate
/// ([`CRL_REFRESH_MARGIN`] ahead), all or nothing; [`CrlKeeper::state`] reports the waivers in effect.
#[derive(Debug)]
pub struct CrlKeeper {
    kds: Kds,
    verifier: Arc<SnpVerifier>,
    wanted: Vec<CrlWanted>,
    policy: CrlPolicy,
    state: Mutex<RevocationState>,
}

impl CrlKeeper {
    /// A keeper installing `wanted` CRLs from `kds` into `verifier` under `policy`. Nothing is fetched before
    /// [`CrlKeeper::refresh`].
    pub fn new(kds: Kds, verifier: Arc<SnpVerifier>, wanted: Vec<CrlWanted>, policy: CrlPolicy) -> CrlKeeper {
        let mut wanted = wanted;
        wanted.sort_by_key(|w| (w.product.name(), w.kind.segment()));
        wanted.dedup();
        CrlKeeper { kds, verifier, wanted, policy, state: Mutex::new(RevocationState::NotLoaded) }
    }

    /// The CRLs it keeps.
    pub fn wanted(&self) -> &[CrlWanted] {
        &self.wanted
    }

    /// The verifier it fills.
    pub fn verifier(&self) -> &Arc<SnpVerifier> {
        &self.verifier
    }

    /// What the last successful refresh installed.
    pub fn state(&self) -> RevocationState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Obtains every wanted CRL and replaces the verifier's set with them, all at once. Fails — installing
    /// nothing, the old set staying — when a CRL is stale or unavailable and the policy does not waive it,
    /// or when the engine refuses one (not signed by the product's pinned ARK).
    pub async fn refresh(&self) -> Result<Vec<InstalledCrl>, KdsError> {
        if self.wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut ders: Vec<(CrlScope, Vec<u8>)> = Vec::with_capacity(self.wanted.len());
        let mut state = RevocationState::Fresh;
        for &w in &self.wanted {
            let status = self.kds.crl_of(w.product, w.kind, CRL_REFRESH_MARGIN).await;
            match (&status, self.policy) {
                (CrlStatus::Stale { next_update, .. }, CrlPolicy::AllowStale | CrlPolicy::BestEffort) => {
                    tracing::warn!(crl = %w, next_update = ?next_update.map(|t| t.to_string()), waiver = "allow-stale-crl",
                        "REVOCATION WAIVED IN PART: using a stale CRL");
                    state = RevocationState::StaleWaived;
                }
                (CrlStatus::Unavailable { reason }, CrlPolicy::BestEffort) => {
                    tracing::warn!(crl = %w, reason = %reason, waiver = "best-effort",
                        "REVOCATION WAIVED IN PART: no CRL; chains it covers are not checked for revocation");
                    state = RevocationState::MissingWaived;
                }
                _ => {}
            }
            match status.crl_for_policy(self.policy) {
                Ok(Some(der)) => ders.push((w.scope(), der)),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(crl = %w, error = %e, "CRL refused");
                    return Err(e);
                }
            }
        }
        let refs: Vec<(CrlScope, &[u8])> = ders.iter().map(|(s, d)| (*s, d.as_slice())).collect();
        let installed =
            self.verifier.replace_crls(&refs).map_err(|error| KdsError::Verification { object: "CRL", error })?;
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
        for c in &installed {
            tracing::info!(product = %c.product, scope = ?c.scope, this_update = %c.this_update,
                next_update = ?c.next_update.map(|t| t.to_string()), revoked_entries = c.entries, "CRL installed");
        }
        Ok(installed)
    }

    /// How long to wait before the next refresh, at `now`: until [`CRL_REFRESH_MARGIN`] before the earliest
    /// installed nextUpdate, clamped to [`MIN_CRL_REFRESH_INTERVAL`]..=[`MAX_CRL_REFRESH_INTERVAL`].
    pub fn next_refresh_in(&self, now: UnixTime) -> Duration {
        let due = self
            .verifier
            .crl_refresh_due()
            .map(|t| t.as_secs().saturating_sub(CRL_REFRESH_MARGIN.as_secs()).saturating_sub(now.as_secs()));
        let wait = due.map_or(MAX_CRL_REFRESH_INTERVAL, Duration::from_secs);
        wait.clamp(MIN_CRL_REFRESH_INTERVAL, MAX_CRL_REFRESH_INTERVAL)
    }

    /// Refreshes in the background until `stop` turns true: at [`CrlKeeper::next_refresh_in`], and
    /// [`MIN_CRL_REFRESH_INTERVAL`] after a failed attempt (logged; the old set stays).
    pub fn spawn(self: &Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            if this.wanted.is_empty() {
                return;
            }
            let mut wait = this.next_refresh_in(this.kds.now());
            loop {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                wait = match this.refresh().await {
                    Ok(_) => this.next_refresh_in(this.kds.now()),
                    Err(e) => {
                        tracing::error!(error = %e, "CRL refresh failed: keeping the installed CRLs");
                        MIN_CRL_REFRESH_INTERVAL
                    }
                };
            }
        })
    }
}
