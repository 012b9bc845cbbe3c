//! CRLs: cached until nextUpdate and never beyond; stale and unavailable CRLs are explicit outcomes that the
//! caller's policy decides (fail closed by default). AMD's real CRLs are not in testdata, so these tests use
//! the generated AMD-like PKI of `attest-test-support` as trust anchors; the KDS is still the local server.

mod kds_support;

use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::snp::{OwnedTrustAnchors, Product, SnpVerifier};
use attest_kds::{
    CRL_REFRESH_MARGIN, ChainKind, Clock, CrlKeeper, CrlPolicy, CrlStatus, CrlWanted, Kds, KdsConfig, KdsError,
    MAX_CRL_REFRESH_INTERVAL, MIN_CRL_REFRESH_INTERVAL, RevocationState,
};
use attest_test_support::{CrlSpec, SigningKeyKind, TestPki};
use kds_support::{Fault, KdsServer, assert_store_clean, dead_base_url, fast_config, temp_store};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const T0: i64 = 1_750_000_000; // 2025-06-15
const DAY: i64 = 86_400;

fn secs(t: i64) -> u64 {
    u64::try_from(t).unwrap()
}

fn pki() -> TestPki {
    TestPki::new(attest_test_support::Product::Milan, SigningKeyKind::Vcek)
}

fn anchors(pki: &TestPki) -> Vec<OwnedTrustAnchors> {
    vec![OwnedTrustAnchors {
        product: Product::Milan,
        ark: Cow::Owned(pki.ark_der().to_vec()),
        ask: Some(Cow::Owned(pki.ask_der().to_vec())),
        asvk: None,
    }]
}

fn crl(pki: &TestPki, this_update: i64, next_update: i64) -> Vec<u8> {
    pki.issue_crl(&CrlSpec::new().this_update(this_update).next_update(next_update))
}

struct World {
    server: KdsServer,
    store: std::path::PathBuf,
    clock: Arc<AtomicU64>,
    pki: TestPki,
}

impl World {
    async fn new(name: &str, served: Option<Vec<u8>>) -> Option<Self> {
        Self::with_pki(name, pki(), served).await
    }

    async fn with_pki(name: &str, pki: TestPki, served: Option<Vec<u8>>) -> Option<Self> {
        let data = kds_support::testdata()?;
        let extra: HashMap<String, Vec<u8>> = served.map(|c| ("crl|Milan".to_owned(), c)).into_iter().collect();
        let server = KdsServer::start_with(&data, extra).await;
        Some(Self { server, store: temp_store(name), clock: Arc::new(AtomicU64::new(secs(T0))), pki })
    }

    fn kds(&self, base_url: Option<String>) -> Kds {
        let clock = Arc::clone(&self.clock);
        Kds::new(KdsConfig {
            base_url,
            trust_anchors: Some(anchors(&self.pki)),
            clock: Clock::from_fn(move || UnixTime::from_secs(clock.load(Ordering::SeqCst))),
            ..fast_config("http://127.0.0.1:1", &self.store)
        })
        .unwrap()
    }

    fn online(&self) -> Kds {
        self.kds(Some(self.server.base_url.clone()))
    }

    fn set_time(&self, t: i64) {
        self.clock.store(secs(t), Ordering::SeqCst);
    }

    fn verifier(&self) -> SnpVerifier {
        SnpVerifier::with_trust_anchors(default_provider(), anchors(&self.pki))
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_crl_is_cached_until_next_update_and_installs() {
    let pki = pki();
    let first = crl(&pki, T0 - DAY, T0 + 7 * DAY);
    let Some(w) = World::with_pki("crl-fresh", pki, None).await else { return };
    w.server.set_always(Some(Fault::Replace(first.clone())));
    let kds = w.online();
    let status = kds.crl(Product::Milan).await;
    assert_eq!(status, CrlStatus::Fresh { der: first.clone(), next_update: UnixTime::from_secs(secs(T0 + 7 * DAY)) });
    assert_eq!(status.install(&w.verifier(), CrlPolicy::default()).unwrap(), Some(Product::Milan));
    assert_eq!(std::fs::read(w.store.join("Milan/crl.der")).unwrap(), first);
    // Cached: no second request, also from a new process with the same store.
    assert!(kds.crl(Product::Milan).await.is_fresh());
    assert!(w.online().crl(Product::Milan).await.is_fresh());
    assert_eq!(w.server.total(), 1);
    // Past nextUpdate the cache is not used: a newer CRL is fetched and replaces it.
    let second = crl(&w.pki, T0 + 7 * DAY, T0 + 14 * DAY);
    w.server.set_always(Some(Fault::Replace(second.clone())));
    w.set_time(T0 + 8 * DAY);
    assert_eq!(kds.crl(Product::Milan).await.crl_for_policy(CrlPolicy::RequireFresh).unwrap(), Some(second.clone()));
    assert_eq!(w.server.total(), 2);
    assert_eq!(std::fs::read(w.store.join("Milan/crl.der")).unwrap(), second);
    assert_eq!(kds_support::files(&w.store).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_crl_is_never_served_as_fresh_and_policy_decides() {
    let pki = pki();
    let c = crl(&pki, T0 - DAY, T0 + DAY);
    let Some(w) = World::with_pki("crl-stale", pki, None).await else { return };
    w.server.set_always(Some(Fault::Replace(c.clone())));
    assert!(w.online().crl(Product::Milan).await.is_fresh());
    // nextUpdate passes while KDS is down (or offline): stale, with the date.
    w.set_time(T0 + 2 * DAY);
    let next_update = Some(UnixTime::from_secs(secs(T0 + DAY)));
    for kds in [w.kds(Some(dead_base_url())), w.kds(None)] {
        let status = kds.crl(Product::Milan).await;
        assert_eq!(status, CrlStatus::Stale { der: c.clone(), next_update });
        assert_eq!(status.crl_for_policy(CrlPolicy::RequireFresh), Err(KdsError::CrlStale { next_update }));
        assert_eq!(status.crl_for_policy(CrlPolicy::AllowStale), Ok(Some(c.clone())));
        assert_eq!(status.crl_for_policy(CrlPolicy::BestEffort), Ok(Some(c.clone())));
        assert!(status.install(&w.verifier(), CrlPolicy::default()).is_err(), "fail closed by default");
    }
    // KDS answers 5xx: stale as well; KDS serving the same stale CRL: stale.
    w.server.set_always(Some(Fault::Status(503)));
    assert!(matches!(w.online().crl(Product::Milan).await, CrlStatus::Stale { .. }));
    w.server.set_always(Some(Fault::Replace(c.clone())));
    assert!(matches!(w.online().crl(Product::Milan).await, CrlStatus::Stale { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_and_wrong_crls() {
    let Some(w) = World::new("crl-none", None).await else { return };
    // 404 (the server has no CRL route content): unavailable.
    let status = w.online().crl(Product::Milan).await;
    assert_eq!(status, CrlStatus::Unavailable { reason: KdsError::NotFound });
    assert!(matches!(status.crl_for_policy(CrlPolicy::RequireFresh), Err(KdsError::CrlUnavailable { .. })));
    assert!(matches!(status.crl_for_policy(CrlPolicy::AllowStale), Err(KdsError::CrlUnavailable { .. })));
    assert_eq!(status.crl_for_policy(CrlPolicy::BestEffort), Ok(None));
    assert_eq!(status.install(&w.verifier(), CrlPolicy::BestEffort), Ok(None));
    // A CRL signed by another ARK, a truncated one, one from the future: refused, nothing stored.
    let other = crl(&pki(), T0 - DAY, T0 + DAY);
    let mine = crl(&w.pki, T0 - DAY, T0 + DAY);
    let future = crl(&w.pki, T0 + DAY, T0 + 2 * DAY);
    for (what, body) in [("other ARK", other), ("truncated", mine[..mine.len() - 7].to_vec()), ("future", future)] {
        w.server.set_always(Some(Fault::Replace(body)));
        let status = w.online().crl(Product::Milan).await;
        assert!(matches!(status, CrlStatus::Unavailable { .. }), "{what}: {status:?}");
    }
    assert!(kds_support::files(&w.store).is_empty());
    // A garbage file in the store is not used either.
    std::fs::create_dir_all(w.store.join("Milan")).unwrap();
    std::fs::write(w.store.join("Milan/crl.der"), b"junk").unwrap();
    assert!(matches!(w.kds(None).crl(Product::Milan).await, CrlStatus::Unavailable { reason: KdsError::Offline }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_crl_refreshes_share_one_request() {
    let pki = pki();
    let c = crl(&pki, T0 - DAY, T0 + DAY);
    let Some(w) = World::with_pki("crl-flight", pki, Some(c)).await else { return };
    w.server.push_faults([Fault::SlowHeaders(std::time::Duration::from_millis(100))]);
    let kds = w.kds(Some(w.server.base_url.clone()));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let kds = kds.clone();
            tokio::spawn(async move { kds.crl(Product::Milan).await })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().is_fresh());
    }
    assert_eq!(w.server.total(), 1);
    assert_store_clean(&w.store, UnixTime::from_secs(secs(T0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vlek_crls_have_their_own_url_and_store_path() {
    let pki = pki();
    let c = crl(&pki, T0 - DAY, T0 + 7 * DAY);
    let Some(w) = World::with_pki("crl-vlek", pki, None).await else { return };
    let extra: HashMap<String, Vec<u8>> = [("crl-vlek|Milan".to_owned(), c.clone())].into_iter().collect();
    let server = KdsServer::start_with(&kds_support::testdata().unwrap(), extra).await;
    let kds = w.kds(Some(server.base_url.clone()));
    let status = kds.crl_of(Product::Milan, ChainKind::Vlek, std::time::Duration::ZERO).await;
    assert!(status.is_fresh(), "{status:?}");
    assert_eq!(std::fs::read(w.store.join("Milan/vlek/crl.der")).unwrap(), c);
    assert_eq!(server.count("crl-vlek|Milan"), 1);
    // The VCEK CRL is another object: not found on this server, and not confused with the VLEK one.
    let vcek = kds.crl_of(Product::Milan, ChainKind::Vcek, std::time::Duration::ZERO).await;
    assert_eq!(vcek, CrlStatus::Unavailable { reason: KdsError::NotFound });
    // Offline, from the store.
    assert!(w.kds(None).crl_of(Product::Milan, ChainKind::Vlek, std::time::Duration::ZERO).await.is_fresh());
    assert_store_clean(&w.store, UnixTime::from_secs(secs(T0)));
}

/// Writes `der` as the store's VCEK CRL of Milan (a pre-filled offline store).
fn prefill(w: &World, der: &[u8]) {
    std::fs::create_dir_all(w.store.join("Milan")).unwrap();
    std::fs::write(w.store.join("Milan/crl.der"), der).unwrap();
}

fn milan_vcek() -> Vec<CrlWanted> {
    vec![CrlWanted { product: Product::Milan, kind: ChainKind::Vcek }]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keeper_loads_from_the_offline_store_and_refreshes_before_next_update() {
    let pki = pki();
    let first = crl(&pki, T0 - DAY, T0 + 7 * DAY);
    let Some(w) = World::with_pki("crl-keeper", pki, None).await else { return };
    prefill(&w, &first);
    let verifier = Arc::new(w.verifier());
    // Offline: the store is enough.
    let keeper = CrlKeeper::new(w.kds(None), Arc::clone(&verifier), milan_vcek(), CrlPolicy::RequireFresh);
    assert_eq!(keeper.state(), RevocationState::NotLoaded);
    let installed = keeper.refresh().await.unwrap();
    assert_eq!(installed.len(), 1);
    assert_eq!(keeper.state(), RevocationState::Fresh);
    assert_eq!(verifier.installed_crls()[0].this_update, UnixTime::from_secs(secs(T0 - DAY)));
    // The next refresh is due the margin before nextUpdate (but at least once a day).
    assert_eq!(keeper.next_refresh_in(UnixTime::from_secs(secs(T0))), MAX_CRL_REFRESH_INTERVAL);
    let expected = std::time::Duration::from_secs(secs(DAY)).checked_sub(CRL_REFRESH_MARGIN).unwrap();
    assert_eq!(keeper.next_refresh_in(UnixTime::from_secs(secs(T0 + 6 * DAY))), expected);
    // Within the margin, KDS is asked (the store copy is still fresh but about to expire) and its newer CRL
    // replaces the installed one.
    let second = crl(&w.pki, T0 + 6 * DAY, T0 + 14 * DAY);
    w.server.set_always(Some(Fault::Replace(second.clone())));
    w.set_time(T0 + 7 * DAY - 3600);
    let keeper = CrlKeeper::new(w.online(), Arc::clone(&verifier), milan_vcek(), CrlPolicy::RequireFresh);
    keeper.refresh().await.unwrap();
    assert_eq!(verifier.installed_crls()[0].this_update, UnixTime::from_secs(secs(T0 + 6 * DAY)));
    assert_eq!(std::fs::read(w.store.join("Milan/crl.der")).unwrap(), second);
    // Refreshing never waits less than the minimum interval, even when due.
    assert_eq!(keeper.next_refresh_in(UnixTime::from_secs(secs(T0 + 14 * DAY))), MIN_CRL_REFRESH_INTERVAL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keeper_fails_closed_and_reports_every_waiver() {
    let pki = pki();
    let stale = crl(&pki, T0 - 2 * DAY, T0 - DAY);
    let Some(w) = World::with_pki("crl-keeper-closed", pki, None).await else { return };
    // No CRL at all: refused by default, nothing installed; the best-effort waiver proceeds and says so.
    let verifier = Arc::new(w.verifier());
    let strict = CrlKeeper::new(w.kds(None), Arc::clone(&verifier), milan_vcek(), CrlPolicy::RequireFresh);
    assert!(matches!(strict.refresh().await, Err(KdsError::CrlUnavailable { .. })));
    assert!(verifier.installed_crls().is_empty());
    assert_eq!(strict.state(), RevocationState::NotLoaded);
    let lax = CrlKeeper::new(w.kds(None), Arc::clone(&verifier), milan_vcek(), CrlPolicy::BestEffort);
    assert!(lax.refresh().await.unwrap().is_empty());
    assert_eq!(lax.state(), RevocationState::MissingWaived);
    assert!(lax.state().is_waived());
    // A stale CRL in the store (offline): refused by default; installed under the stale waiver, reported.
    prefill(&w, &stale);
    assert!(matches!(strict.refresh().await, Err(KdsError::CrlStale { .. })));
    assert!(verifier.installed_crls().is_empty(), "a refused refresh installs nothing");
    let allow = CrlKeeper::new(w.kds(None), Arc::clone(&verifier), milan_vcek(), CrlPolicy::AllowStale);
    assert_eq!(allow.refresh().await.unwrap().len(), 1);
    assert_eq!(allow.state(), RevocationState::StaleWaived);
    // A failed refresh keeps the set that is installed.
    std::fs::write(w.store.join("Milan/crl.der"), b"junk").unwrap();
    let again = CrlKeeper::new(w.kds(None), Arc::clone(&verifier), milan_vcek(), CrlPolicy::AllowStale);
    assert!(again.refresh().await.is_err());
    assert_eq!(verifier.installed_crls().len(), 1);
}
