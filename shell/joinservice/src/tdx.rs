//! TDX collateral for the join service's `qemu-tdx` / `azure-tdx` validators: loaded from the Intel PCS
//! store (`attest-kds`'s [`Pcs`]: the on-disk store first, Intel's PCS second) for every configured platform
//! before the service starts, and refreshed ahead of its nextUpdate.
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

use std::sync::Arc;
use std::time::Duration;

use attest_engine::UnixTime;
use attest_engine::tdx::{CollateralInfo, TdxVerifier};
use attest_kds::{KdsError, PckCa, Pcs};

/// How long before a collateral set's end of validity the refresh task asks for the next set (Intel publishes
/// TCB Info and QE Identity for about 30 days and issues new ones well before nextUpdate).
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(2 * 86_400);
/// Delay before retrying a refresh that failed.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(600);

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
    pub fn parse(text: &str) -> Result<Self, String> {
        let (fmspc, ca) = text.split_once(':').unwrap_or((text, "platform"));
        let ca = PckCa::from_name(ca).ok_or_else(|| format!("{text:?}: the PCK CA is platform or processor"))?;
        let fmspc = hex::decode(fmspc)
            .ok()
            .and_then(|b| <[u8; 6]>::try_from(b).ok())
            .ok_or_else(|| format!("{text:?}: an FMSPC is 6 bytes as 12 hex digits"))?;
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
pub enum CollateralError {
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
            Self::Supply { platform, source } => write!(f, "TDX collateral for {platform}: {source}"),
            Self::Install { platform, source } => write!(f, "TDX collateral for {platform}: cannot install: {source}"),
        }
    }
}

impl std::error::Error for CollateralError {}

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
