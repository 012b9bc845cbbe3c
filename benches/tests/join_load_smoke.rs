//! The load path in CI: `join-load`'s fixture, software-AK issuers and load generator against an in-process
//! join service built as `join-service` builds it (`joinload::inprocess`: AK registry file, measurements file,
//! dry-run tokens, an in-process key service). 200 joins from 16 clients must all return well-formed tickets whose kubelet
//! certificates the cluster CA signed; an AK the registry does not pin must be refused. No timing is asserted.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use attest_benches::joinload::inprocess::Services;
use attest_benches::joinload::{self, LoadConfig, SoftAkIssuer, fixture};
use attest_grpc::ServerConfig;
use attest_joinservice::Metrics;
use attest_test_support::TempDir;
use attest_test_support::tpm::SoftAk;

fn temp_dir() -> TempDir {
    TempDir::new("join-load-smoke")
}

/// The key service and the join service on 127.0.0.1, configured from the fixture in `dir`.
async fn services(dir: &Path) -> (Services, std::net::SocketAddr, Arc<Metrics>) {
    let services = Services::start(dir, ServerConfig::default()).await.unwrap();
    let (addr, metrics) = (services.addr, Arc::clone(&services.metrics));
    (services, addr, metrics)
}

fn config(addr: std::net::SocketAddr, concurrency: usize, joins: u64) -> LoadConfig {
    LoadConfig {
        addr,
        concurrency,
        joins: Some(joins),
        // A bound, not a threshold: the run stops here at the latest and the counts below must still hold.
        max_duration: Duration::from_secs(600),
        rate: None,
        warmup: Duration::ZERO,
        timeout: Duration::from_secs(60),
        progress: None,
        // One loopback address per client: each plays a node of its own (the per-peer limits).
        sources: (0..concurrency as u32).map(joinload::attack::genuine_source).collect(),
    }
}

fn ca_key(dir: &Path) -> openssl::pkey::PKey<openssl::pkey::Public> {
    let pem = std::fs::read(dir.join(fixture::PKI_DIR).join("ca.crt")).unwrap();
    openssl::x509::X509::from_pem(&pem).unwrap().public_key().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_joins_from_sixteen_clients_all_succeed() {
    let dir = temp_dir();
    joinload::write_fixture(dir.path(), 3, attest_test_support::tpm::AkKind::EccP256).unwrap();
    let (_servers, addr, metrics) = services(dir.path()).await;
    let issuers = joinload::load_issuers(dir.path()).unwrap();
    assert_eq!(issuers.len(), 3);

    let report = joinload::load::run(
        &config(addr, 16, 200),
        &issuers,
        joinload::node_requests(5).unwrap(),
        Some(ca_key(dir.path())),
    )
    .await
    .unwrap();
    assert_eq!(report.error_count(), 0, "{}", report.text());
    assert_eq!(report.joins_ok, 200, "{}", report.text());
    assert_eq!(metrics.issued_count(), (200, 0));
    // One bootstrap token manifest per ticket.
    assert_eq!(std::fs::read_dir(dir.path().join("tokens")).unwrap().count(), 200);
    let json = report.json();
    assert_eq!(json["joins_ok"], 200);
    assert!(json["latency_ms"]["total"]["p50"].as_f64().unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ak_the_registry_does_not_pin_is_refused() {
    let dir = temp_dir();
    joinload::write_fixture(dir.path(), 1, attest_test_support::tpm::AkKind::Rsa2048).unwrap();
    let (_servers, addr, metrics) = services(dir.path()).await;
    // The pinned RSA AK joins (and its key survived the PKCS#8 round trip through the fixture file).
    let pinned = joinload::load_issuers(dir.path()).unwrap();
    let report =
        joinload::load::run(&config(addr, 2, 4), &pinned, joinload::node_requests(1).unwrap(), None).await.unwrap();
    assert_eq!((report.joins_ok, report.error_count()), (4, 0), "{}", report.text());

    // A genuine document from an AK nobody pinned: the handshake fails, no ticket.
    let stranger = Arc::new(SoftAkIssuer::new(SoftAk::ecc_p256(), &fixture::pcr_bank()));
    let report =
        joinload::load::run(&config(addr, 1, 3), &[stranger], joinload::node_requests(1).unwrap(), None).await.unwrap();
    assert_eq!(report.joins_ok, 0, "{}", report.text());
    assert_eq!(report.errors.values().sum::<u64>(), 3, "{}", report.text());
    assert!(report.errors.keys().all(|k| k.starts_with("atls ")), "{}", report.text());
    assert_eq!(metrics.issued_count(), (4, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transport_floor_run_opens_fresh_mutual_tls_connections() {
    let dir = temp_dir();
    joinload::write_fixture(dir.path(), 1, attest_test_support::tpm::AkKind::EccP256).unwrap();
    let services = Services::start(dir.path(), ServerConfig::default()).await.unwrap();
    let t = Duration::from_secs(60);
    let report = joinload::mtls_connections(dir.path(), services.kms_addr, 40, 8, t).await.unwrap();
    assert_eq!((report.ok, report.errors), (40, 0), "{:?}", report.first_error);
    // Each connection is closed after its call: the key service ends up holding none (bounded wait).
    for _ in 0..200 {
        if services.key_service.open_connections() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(services.key_service.open_connections(), 0);
    // Against a server that is not the key service (the join service's aTLS port) every connection fails.
    let report = joinload::mtls_connections(dir.path(), services.addr, 5, 2, t).await.unwrap();
    assert_eq!((report.ok, report.errors), (0, 5));
    assert!(report.first_error.is_some());
}
