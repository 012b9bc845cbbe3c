//! A KDS that misbehaves on purpose: 429 with and without Retry-After, 5xx, slow heads and bodies,
//! truncated DER, oversized bodies, wrong certificates for the key, 404s. Throughout: no wrong certificate
//! is accepted or stored, and the store only ever holds complete, verified files.

mod kds_support;

use attest_engine::snp::{Product, TcbVersion};
use attest_kds::{ChainKind, HwId, Kds, KdsConfig, KdsError, Phase, Source, VcekKey};
use kds_support::{
    Fault, KdsServer, assert_store_clean, fast_config, first_cert, now, read, temp_store, vcek_id, vcek_route,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

struct Setup {
    server: KdsServer,
    store: PathBuf,
    kds: Kds,
    key: VcekKey,
    route: String,
    der: Vec<u8>,
    data: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

async fn setup(name: &str, tweak: impl FnOnce(KdsConfig) -> KdsConfig) -> Option<Setup> {
    let data = kds_support::testdata()?;
    let server = KdsServer::start(&data).await;
    let store = temp_store(name);
    let kds = Kds::new(tweak(fast_config(&server.base_url, &store))).unwrap();
    let der = first_cert(&data, "virtee-sev/vcek_milan.der");
    let id = vcek_id(&der);
    let key = VcekKey::new(id.product, HwId::from_hex(id.product, &id.hw_id_hex).unwrap(), id.tcb).unwrap();
    Some(Setup { server, store, kds, key, route: vcek_route(&id), der, data })
}

#[track_caller]
fn assert_empty_store(store: &Path) {
    assert_eq!(assert_store_clean(store, now()), Vec::<String>::new(), "nothing may be stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_in_seconds_and_as_http_date_is_honoured() {
    let Some(s) = setup("retry-after", |c| c).await else { return };
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(1));
    s.server.push_faults([Fault::TooMany(Some("1".into())), Fault::TooMany(Some(date))]);
    let got = s.kds.vcek(&s.key).await.unwrap();
    assert_eq!((got.bytes, got.source), (s.der.clone(), Source::Kds));
    assert_eq!(s.server.count(&s.route), 3);
    assert_store_clean(&s.store, now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_without_retry_after_backs_off_then_succeeds() {
    let Some(s) = setup("429-plain", |c| c).await else { return };
    s.server.push_faults([Fault::TooMany(None), Fault::TooMany(None)]);
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().bytes, s.der);
    assert_eq!(s.server.count(&s.route), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_retry_after_fails_fast_and_holds_back_later_requests() {
    let Some(s) = setup("429-long", |c| c).await else { return };
    s.server.push_faults([Fault::TooMany(Some("3600".into()))]);
    let e = s.kds.vcek(&s.key).await.unwrap_err();
    assert_eq!(e, KdsError::RateLimited { retry_after: Some(Duration::from_secs(3600)) });
    // The gate is shared: the next request (for another object, too) does not reach the server.
    let e = s.kds.cert_chain(Product::Genoa, ChainKind::Vcek).await.unwrap_err();
    assert!(matches!(e, KdsError::RateLimited { .. }), "{e}");
    assert_eq!(s.server.total(), 1);
    assert_empty_store(&s.store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_429_and_5xx_exhaust_the_attempts_and_store_nothing() {
    let Some(s) = setup("5xx", |c| c).await else { return };
    s.server.set_always(Some(Fault::TooMany(None)));
    let e = s.kds.vcek(&s.key).await.unwrap_err();
    assert!(
        matches!(&e, KdsError::RetriesExhausted { attempts: 3, last } if matches!(**last, KdsError::RateLimited { .. })),
        "{e}"
    );
    for status in [500, 502, 503] {
        s.server.set_always(Some(Fault::Status(status)));
        let e = s.kds.vcek(&s.key).await.unwrap_err();
        assert!(
            matches!(&e, KdsError::RetriesExhausted { last, .. } if **last == KdsError::HttpStatus { status }),
            "{e}"
        );
    }
    assert_eq!(s.server.count(&s.route), 12);
    assert_empty_store(&s.store);
    // Transient 5xx: recovered within the attempts.
    s.server.set_always(None);
    s.server.push_faults([Fault::Status(503), Fault::Status(500)]);
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().source, Source::Kds);
    // A non-retryable status is not retried.
    let genoa = s.kds.cert_chain(Product::Genoa, ChainKind::Vcek);
    s.server.push_faults([Fault::Status(403)]);
    assert_eq!(genoa.await.unwrap_err(), KdsError::HttpStatus { status: 403 });
    assert_store_clean(&s.store, now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_bodies_time_out() {
    let Some(s) = setup("slow", |c| c).await else { return };
    s.server.set_always(Some(Fault::SlowHeaders(Duration::from_secs(3))));
    let e = s.kds.vcek(&s.key).await.unwrap_err();
    assert!(
        matches!(&e, KdsError::RetriesExhausted { last, .. } if **last == KdsError::Timeout { phase: Phase::Headers }),
        "{e}"
    );
    s.server.set_always(Some(Fault::SlowBody(Duration::from_secs(3))));
    let e = s.kds.vcek(&s.key).await.unwrap_err();
    assert!(
        matches!(&e, KdsError::RetriesExhausted { last, .. } if **last == KdsError::Timeout { phase: Phase::Body }),
        "{e}"
    );
    assert_empty_store(&s.store);
    // A slow body within the timeout is fine.
    s.server.set_always(None);
    s.server.push_faults([Fault::SlowBody(Duration::from_millis(50))]);
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().bytes, s.der);
    assert_store_clean(&s.store, now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_der_is_never_accepted_nor_stored() {
    let Some(s) = setup("truncated", |c| c).await else { return };
    for n in [0, 1, 2, 4, 100, s.der.len() / 2, s.der.len() - 1] {
        s.server.push_faults([Fault::Truncate(n)]);
        let e = s.kds.vcek(&s.key).await.unwrap_err();
        assert!(matches!(e, KdsError::Verification { object: "VCEK", .. }), "{n}: {e}");
        assert_empty_store(&s.store);
    }
    // A bad body is not negatively cached: the next try succeeds.
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().source, Source::Kds);
    // A truncated cert_chain neither.
    let chain = read(&s.data, "amd-kds-roots/ask_ark_genoa.pem");
    s.server.push_faults([Fault::Truncate(chain.len() - 40)]);
    assert!(s.kds.cert_chain(Product::Genoa, ChainKind::Vcek).await.is_err());
    assert_eq!(assert_store_clean(&s.store, now()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_certificates_for_the_key_are_refused() {
    let Some(s) = setup("wrong", |c| c).await else { return };
    // Another chip's (valid, AMD-signed) VCEK.
    s.server.push_faults([Fault::Replace(first_cert(&s.data, "go-sev-guest/vcek.testcer"))]);
    assert_eq!(s.kds.vcek(&s.key).await.unwrap_err(), KdsError::HwIdMismatch);
    // The right chip, the wrong TCB: ask for a TCB the server is made to answer with the chip's other VCEK.
    let other_tcb = VcekKey { tcb: TcbVersion { microcode: 116, ..s.key.tcb }, ..s.key };
    s.server.push_faults([Fault::Replace(s.der.clone())]);
    assert!(matches!(s.kds.vcek(&other_tcb).await.unwrap_err(), KdsError::TcbMismatch { .. }));
    // A Genoa VCEK for a Milan request.
    s.server.push_faults([Fault::Replace(first_cert(&s.data, "trustee-az-snp-vtpm/vcek-genoa.pem"))]);
    let e = s.kds.vcek(&s.key).await.unwrap_err();
    assert!(matches!(e, KdsError::ProductMismatch { .. } | KdsError::Verification { .. }), "{e}");
    // VCEK-shaped certificates with the right fields but not signed by AMD.
    for bad in ["trustee-snp/test-vcek-invalid-legacy.der", "trustee-snp/test-vcek-invalid-new.der"] {
        s.server.push_faults([Fault::Replace(read(&s.data, bad))]);
        assert!(matches!(s.kds.vcek(&s.key).await.unwrap_err(), KdsError::Verification { .. }), "{bad}");
    }
    // A chain of the wrong product, and the VLEK chain for the VCEK one.
    s.server.push_faults([Fault::Replace(read(&s.data, "amd-kds-roots/ask_ark_genoa.pem"))]);
    assert!(matches!(s.kds.cert_chain(Product::Milan, ChainKind::Vcek).await.unwrap_err(), KdsError::BadChain { .. }));
    s.server.push_faults([Fault::Replace(read(&s.data, "amd-kds-roots/ask_ark_milan_vlek.pem"))]);
    assert!(matches!(s.kds.cert_chain(Product::Milan, ChainKind::Vcek).await.unwrap_err(), KdsError::BadChain { .. }));
    assert_empty_store(&s.store);
    // Wrong files in the store (hand-copied, or corrupted) are skipped and replaced by verified ones.
    let path = s.kds.store().unwrap().vcek_path(&s.key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, first_cert(&s.data, "go-sev-guest/vcek.testcer")).unwrap();
    let got = s.kds.vcek(&s.key).await.unwrap();
    assert_eq!((got.bytes, got.source), (s.der.clone(), Source::Kds));
    assert_eq!(std::fs::read(&path).unwrap(), s.der);
    std::fs::write(&path, &s.der[..10]).unwrap();
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().source, Source::Kds);
    assert_store_clean(&s.store, now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_responses_are_refused() {
    let Some(s) = setup("oversized", |c| KdsConfig { max_response_size: 4096, ..c }).await else { return };
    s.server.push_faults([Fault::Replace(vec![0x30; 100_000])]);
    assert_eq!(s.kds.vcek(&s.key).await.unwrap_err(), KdsError::ResponseTooLarge { limit: 4096 });
    assert_eq!(s.server.total(), 1, "not retried");
    assert_empty_store(&s.store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_is_cached_negatively() {
    let Some(s) = setup("404", |c| c).await else { return };
    let unknown = VcekKey { tcb: TcbVersion { snp: 99, ..s.key.tcb }, ..s.key };
    assert_eq!(s.kds.vcek(&unknown).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(s.kds.vcek(&unknown).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(s.server.total(), 1, "the second miss is answered from the negative cache");
    // Other keys are unaffected.
    assert_eq!(s.kds.vcek(&s.key).await.unwrap().source, Source::Kds);
    // With a zero TTL nothing is remembered.
    let Some(z) = setup("404-ttl0", |c| KdsConfig { negative_ttl: Duration::ZERO, ..c }).await else { return };
    assert_eq!(z.kds.vcek(&unknown).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(z.kds.vcek(&unknown).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(z.server.total(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_waiters_share_a_failure_too() {
    let Some(s) = setup("shared-failure", |c| c).await else { return };
    s.server.set_always(Some(Fault::Status(500)));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (kds, key) = (s.kds.clone(), s.key);
            tokio::spawn(async move { kds.vcek(&key).await })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().is_err());
    }
    // One flight of at most max_attempts requests; stragglers may start one more flight after it ends.
    assert!(s.server.total() <= 6, "{} requests", s.server.total());
    assert_empty_store(&s.store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn upstream_concurrency_is_bounded() {
    let Some(s) = setup("bounded", |c| KdsConfig { max_concurrent_requests: 2, ..c }).await else { return };
    s.server.set_always(Some(Fault::SlowHeaders(Duration::from_millis(60))));
    let tasks: Vec<_> = Product::ALL
        .into_iter()
        .flat_map(|p| [(p, ChainKind::Vcek), (p, ChainKind::Vlek)])
        .map(|(p, kind)| {
            let kds = s.kds.clone();
            tokio::spawn(async move { kds.cert_chain(p, kind).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(s.server.total(), 6);
    assert!(s.server.max_inflight() <= 2, "{} requests at once", s.server.max_inflight());
    assert_store_clean(&s.store, now());
}
