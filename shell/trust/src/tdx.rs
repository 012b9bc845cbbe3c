//! TDX collateral for the `qemu-tdx` / `azure-tdx` validators of a long-running verifier — the join service
//! (joining TDs) and the bootstrapper (a TDX node's join service): loaded from the Intel PCS store
//! (`attest-kds`'s [`Pcs`]: the on-disk store first, Intel's PCS second) for every configured platform
//! before the verifier starts, and refreshed ahead of its nextUpdate. [`TdxArgs`] are the flags.
//!
//! ```text
//!  start ──► for each platform (FMSPC, PCK CA): Pcs::collateral ──► TdxVerifier::set_collateral
//!        │ no verified set for a platform: the service does not start
//!        ▼
//!  refresh task: sleep until the earliest (expires − margin) ──► Pcs::refresh(margin) ──► set_collateral
//!        │ PCS unreachable / refused: keep the installed set, retry after RETRY_INTERVAL (logged)
//! ```
//!
//! The installed collateral lives in the one [`TdxVerifier`] every validator set shares, so a measurements
//! reload never loses it and a refresh reaches every validator at once. A quote from a platform that has no
//! collateral installed is refused by the engine (`CollateralMissing`); one verified after the collateral's
//! nextUpdate is refused as expired — the refresh task exists so that neither happens to configured
//! platforms.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use attest_engine::UnixTime;
use attest_engine::tdx::{CollateralInfo, TdxPolicy, TdxVerifier};
use attest_kds::{KdsError, PckCa, Pcs};

/// The flags of a verifier of TD quotes: the platforms whose collateral it keeps installed, its TDX policy
/// and the PCS supply.
#[derive(Clone, Debug, clap::Args)]
pub struct TdxArgs {
    /// A TDX platform whose quotes are accepted (repeatable; TDX variants): FMSPC in hex, optionally with
    /// `:platform` (default) or `:processor`, the CA of its PCK certificates.
    #[arg(long = "tdx-platform", value_name = "FMSPC[:CA]", value_parser = TdxPlatform::parse)]
    pub tdx_platforms: Vec<TdxPlatform>,
    /// TDX policy file (TOML or JSON) for the TDX variants; the engine's strict defaults otherwise.
    #[arg(long, value_name = "FILE")]
    pub tdx_policy: Option<PathBuf>,
    /// The Intel PCS store directory (as `attest pcs prefill` fills it).
    #[arg(long, value_name = "DIR", default_value = "pcs-store")]
    pub pcs_store: PathBuf,
    /// Intel PCS base URL.
    #[arg(long, value_name = "URL", default_value = attest_kds::DEFAULT_PCS_BASE_URL)]
    pub pcs_url: String,
    /// Use the PCS store only; never contact Intel.
    #[arg(long)]
    pub pcs_offline: bool,
}

impl TdxArgs {
    /// The PCS supply of `--pcs-*`.
    pub fn pcs(&self) -> Result<Pcs, KdsError> {
        let online = !self.pcs_offline;
        Pcs::new(attest_kds::PcsConfig {
            store: Some(self.pcs_store.clone()),
            base_url: online.then(|| self.pcs_url.clone()),
            certs_url: online.then(|| attest_kds::DEFAULT_INTEL_CERTS_URL.to_owned()),
            ..attest_kds::PcsConfig::default()
        })
    }

    /// Installs the collateral of every `--tdx-platform` into `verifier` now (the store, then Intel's PCS),
    /// returning the supply and what was installed for [`TdxArgs::keep_fresh`]; `None` when no platform is
    /// configured.
    pub async fn install(&self, verifier: &TdxVerifier) -> Result<Option<InstalledCollateral>, CollateralError> {
        if self.tdx_platforms.is_empty() {
            return Ok(None);
        }
        let pcs = self.pcs().map_err(CollateralError::Pcs)?;
        let installed = install(&pcs, verifier, &self.tdx_platforms).await?;
        Ok(Some(InstalledCollateral { pcs, installed }))
    }

    /// Keeps `installed` fresh in `verifier` ([`spawn_refresh`], [`DEFAULT_REFRESH_MARGIN`]) until `stop`.
    pub fn keep_fresh(
        &self,
        installed: InstalledCollateral,
        verifier: Arc<TdxVerifier>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let InstalledCollateral { pcs, installed } = installed;
        spawn_refresh(pcs, verifier, self.tdx_platforms.clone(), installed, DEFAULT_REFRESH_MARGIN, stop)
    }

    /// The TDX policy of `--tdx-policy` (the engine's strict defaults without one).
    pub fn policy(&self) -> Result<TdxPolicy, crate::TrustError> {
        self.tdx_policy.as_deref().map_or_else(
            || Ok(TdxPolicy::default()),
            |path| crate::args::policy_file("TDX policy", path, TdxPolicy::from_text),
        )
    }
}

/// How long before a collateral set's end of validity the refresh task asks for the next set (Intel publishes
/// TCB Info and QE Identity for about 30 days and issues new ones well before nextUpdate).
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(2 * 86_400);
/// Delay before retrying a refresh that failed.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(600);

/// Collateral installed at start ([`TdxArgs::install`]) and the supply it came from.
#[derive(Debug)]
pub struct InstalledCollateral {
    /// The supply.
    pub pcs: Pcs,
    /// One set per platform, in `--tdx-platform` order.
    pub installed: Vec<CollateralInfo>,
}

/// A platform whose collateral the service keeps installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdxPlatform {
    /// FMSPC (of the platform's PCK certificates).
    pub fmspc: [u8; 6],
    /// The CA that issues those PCK certificates.
    pub ca: PckCa,
}

impl TdxPlatform {
    /// Parses `FMSPC` or `FMSPC:platform|processor` (12 hex digits; the CA defaults to `platform`).
    pub fn parse(text: &str) -> Result<Self, crate::TrustError> {
        let bad = |reason| crate::TrustError::TdxPlatform { text: text.to_owned(), reason };
        let (fmspc, ca) = text.split_once(':').unwrap_or((text, "platform"));
        let ca = PckCa::from_name(ca).ok_or_else(|| bad("the PCK CA is platform or processor"))?;
        let fmspc = hex::decode(fmspc)
            .ok()
            .and_then(|b| <[u8; 6]>::try_from(b).ok())
            .ok_or_else(|| bad("an FMSPC is 6 bytes as 12 hex digits"))?;
        Ok(Self { fmspc, ca })
    }
}

impl std::fmt::Display for TdxPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", hex::encode(self.fmspc), self.ca)
    }
}

/// Why collateral could not be installed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CollateralError {
    /// The PCS supply could not be set up (its store directory, its HTTP client).
    Pcs(KdsError),
    /// The supply could not deliver a verified set.
    Supply {
        /// The platform.
        platform: TdxPlatform,
        /// Why.
        source: KdsError,
    },
    /// The engine refused the set (it verified in the supply under the same root, so this means the supply
    /// and the verifier trust different roots).
    Install {
        /// The platform.
        platform: TdxPlatform,
        /// Why.
        source: attest_engine::Error,
    },
}

impl std::fmt::Display for CollateralError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pcs(e) => write!(f, "PCS supply: {e}"),
            Self::Supply { platform, source } => write!(f, "TDX collateral for {platform}: {source}"),
            Self::Install { platform, source } => write!(f, "TDX collateral for {platform}: cannot install: {source}"),
        }
    }
}

impl std::error::Error for CollateralError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Pcs(e) | Self::Supply { source: e, .. } => Some(e),
            Self::Install { source, .. } => Some(source),
        }
    }
}

/// Obtains and installs the collateral of one platform; `margin` as in [`Pcs::refresh`].
async fn install_one(
    pcs: &Pcs,
    verifier: &TdxVerifier,
    platform: TdxPlatform,
    margin: Duration,
) -> Result<CollateralInfo, CollateralError> {
    let got = pcs
        .refresh(platform.fmspc, platform.ca, margin)
        .await
        .map_err(|source| CollateralError::Supply { platform, source })?;
    let info =
        verifier.set_collateral(&got.collateral).map_err(|source| CollateralError::Install { platform, source })?;
    if got.fresh {
        tracing::info!(%platform, source = got.source.name(), expires = %info.expires, "TDX collateral installed");
    } else {
        tracing::warn!(
            %platform,
            valid_from = %info.valid_from,
            expires = %info.expires,
            "TDX collateral installed but NOT valid now: this platform's quotes are refused until it is refreshed"
        );
    }
    Ok(info)
}

/// Installs the collateral of every platform (at start); the first platform without a verified set is an
/// error.
pub async fn install(
    pcs: &Pcs,
    verifier: &TdxVerifier,
    platforms: &[TdxPlatform],
) -> Result<Vec<CollateralInfo>, CollateralError> {
    let mut out = Vec::with_capacity(platforms.len());
    for p in platforms {
        out.push(install_one(pcs, verifier, *p, Duration::ZERO).await?);
    }
    Ok(out)
}

/// When a set expiring at `expires` is to be refreshed: `margin` before, but not before `now` (sets that
/// are already within the margin are refreshed at once, then every [`RETRY_INTERVAL`] until PCS has a newer
/// one).
fn refresh_at(now: UnixTime, expires: UnixTime, margin: Duration) -> Duration {
    let due = expires.as_secs().saturating_sub(margin.as_secs());
    Duration::from_secs(due.saturating_sub(now.as_secs()))
}

fn now() -> UnixTime {
    UnixTime::from_secs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// Keeps every platform's collateral installed: refreshes each `margin` before its end of validity, until
/// `stop` turns true. `installed` are the sets [`install`] returned, in `platforms` order.
pub fn spawn_refresh(
    pcs: Pcs,
    verifier: Arc<TdxVerifier>,
    platforms: Vec<TdxPlatform>,
    installed: Vec<CollateralInfo>,
    margin: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // When each platform is next due.
        let mut due: Vec<Duration> = installed.iter().map(|i| refresh_at(now(), i.expires, margin)).collect();
        let mut started = tokio::time::Instant::now();
        loop {
            let elapsed = started.elapsed();
            let wait = due
                .iter()
                .map(|d| d.saturating_sub(elapsed))
                .min()
                .unwrap_or(RETRY_INTERVAL)
                .max(Duration::from_secs(1));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let elapsed = started.elapsed();
            let mut next = Vec::with_capacity(platforms.len());
            for (platform, d) in platforms.iter().zip(&due) {
                if d.saturating_sub(elapsed) > Duration::ZERO {
                    next.push(d.saturating_sub(elapsed));
                    continue;
                }
                match install_one(&pcs, &verifier, *platform, margin).await {
                    Ok(info) if refresh_at(now(), info.expires, margin) > Duration::ZERO => {
                        next.push(refresh_at(now(), info.expires, margin));
                    }
                    Ok(info) => {
                        tracing::warn!(%platform, expires = %info.expires, "no newer TDX collateral yet: retrying later");
                        next.push(RETRY_INTERVAL);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "TDX collateral refresh failed: keeping the installed set, retrying later");
                        next.push(RETRY_INTERVAL);
                    }
                }
            }
            due = next;
            started = tokio::time::Instant::now();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_parse() {
        let p = TdxPlatform::parse("50806f000000").unwrap();
        assert_eq!((p.fmspc, p.ca), ([0x50, 0x80, 0x6f, 0, 0, 0], PckCa::Platform));
        assert_eq!(TdxPlatform::parse("50806F000000:processor").unwrap().ca, PckCa::Processor);
        assert_eq!(p.to_string(), "50806f000000:platform");
        assert!(TdxPlatform::parse("50806f").is_err());
        assert!(TdxPlatform::parse("50806f000000:other").is_err());
    }

    #[test]
    fn refresh_is_due_a_margin_before_the_end() {
        let t = |s| UnixTime::from_secs(s);
        let day = Duration::from_secs(86_400);
        assert_eq!(refresh_at(t(0), t(10 * 86_400), 2 * day), 8 * day);
        assert_eq!(refresh_at(t(9 * 86_400), t(10 * 86_400), 2 * day), Duration::ZERO);
        assert_eq!(refresh_at(t(20 * 86_400), t(10 * 86_400), 2 * day), Duration::ZERO);
    }
}
