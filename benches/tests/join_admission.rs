//! The connection-exhaustion attack against the join service and the key service as deployed (aTLS, mutual TLS,
//! default limits), in this process: idle TCP connections (no TLS byte sent) beyond each service's whole
//! connection limit — 1,100 on the join service, 2,000 on the key service — and slow-loris handshakes, each
//! re-opened a second after the server closes it, held while genuine nodes join. Every genuine join must
//! return a well-formed ticket; the services' admission tables must show that they shed the attackers'
//! sockets (and refused no genuine node).
//!
//! Attackers connect from `127.66.x.y`, the genuine nodes from `127.77.x.y` (one address each), so the
//! per-peer limits see them as the distinct machines they would be. Bounded: fixed socket counts, stopped at
//! the end; nothing asserts wall-clock speed (each case runs under a timeout only so that a hang fails).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::time::Duration;

use attest_benches::joinload::attack::{Attack, AttackConfig, genuine_source};
use attest_benches::joinload::inprocess::Services;
use attest_benches::joinload::{self, LoadConfig};
use attest_grpc::ServerConfig;
use attest_test_support::TempDir;
use attest_test_support::h2raw::eventually;
use attest_test_support::tpm::AkKind;

const CASE_LIMIT: Duration = Duration::from_secs(300);
const GENUINE_NODES: usize = 4;
const GENUINE_JOINS: u64 = 40;

/// Genuine joins from `GENUINE_NODES` addresses while `attack` holds its sockets; returns the report.
async fn genuine_joins_under(dir: &TempDir, services: &Services, attack: &AttackConfig) -> joinload::Report {
    let held = Attack::start(attack);
    // Let the attack fill the limits first: the join service's pending slots are all taken.
    let full = eventually(Duration::from_secs(60), || services.join.admission_stats().pending >= 100).await;
    assert!(full, "the attack never filled the pending slots: {:?}", services.join.admission_stats());
    let config = LoadConfig {
        addr: services.addr,
        concurrency: GENUINE_NODES,
        joins: Some(GENUINE_JOINS),
        max_duration: Duration::from_secs(240),
        rate: None,
        warmup: Duration::ZERO,
        timeout: Duration::from_secs(30),
        progress: None,
        sources: (0..GENUINE_NODES as u32).map(genuine_source).collect(),
    };
    let issuers = joinload::load_issuers(dir.path()).unwrap();
    let ca = openssl::x509::X509::from_pem(
        &std::fs::read(dir.path().join(joinload::fixture::PKI_DIR).join("ca.crt")).unwrap(),
    )
    .unwrap()
    .public_key()
    .unwrap();
    let report = joinload::load::run(&config, &issuers, joinload::node_requests(GENUINE_NODES).unwrap(), Some(ca))
        .await
        .unwrap();
    let attacked = held.stop().await;
    println!(
        "genuine joins {}/{} while attacked (p99 {:.1} ms); attack: {attacked:?}; join service {:?}; key service {:?}",
        report.joins_ok,
        GENUINE_JOINS,
        report.total.p99,
        services.join.admission_stats(),
        services.key_service.admission_stats()
    );
    report
}

/// Starts the services from a fresh fixture, runs the genuine joins under the attack `attack_for` builds for
/// them (join service address, key service address), checks that every join succeeded, and returns the
/// services for the case's own checks. Bounded by [`CASE_LIMIT`].
async fn every_join_served_under(
    name: &str,
    attack_for: impl FnOnce(SocketAddr, SocketAddr) -> AttackConfig,
) -> Services {
    let run = async {
        let dir = TempDir::new(name);
        joinload::write_fixture(dir.path(), 2, AkKind::EccP256).unwrap();
        let services = Services::start(dir.path(), ServerConfig::default()).await.unwrap();
        let report = genuine_joins_under(&dir, &services, &attack_for(services.addr, services.kms_addr)).await;
        assert_eq!(report.joins_ok, GENUINE_JOINS, "{}", report.text());
        assert_eq!(report.error_count(), 0, "{}", report.text());
        services
    };
    tokio::time::timeout(CASE_LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("{name}: did not finish within {CASE_LIMIT:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_beyond_both_services_limits_leave_every_join_served() {
    let services = every_join_served_under("join-admission-idle", |join, kms| AttackConfig {
        idle: vec![(join, 1100), (kms, 2000)],
        slow: Vec::new(),
        peers: 150,
        reopen_after: Duration::from_secs(1),
        trickle: Duration::from_secs(2),
    })
    .await;
    let (join, kms) = (services.join.admission_stats(), services.key_service.admission_stats());
    assert!(join.evicted > 0 && kms.evicted > 0, "both services shed idle sockets: {join:?} {kms:?}");
    assert!(join.established >= GENUINE_JOINS, "every genuine connection was established: {join:?}");
    assert_eq!(services.metrics.refused_count(attest_joinservice::RefusalReason::KeyServiceUnavailable), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_loris_handshakes_leave_every_join_served() {
    // Slow-loris sockets beyond the pending slots: a TLS record header, one byte every second.
    let services = every_join_served_under("join-admission-slow", |join, _| AttackConfig {
        idle: Vec::new(),
        slow: vec![(join, 400)],
        peers: 100,
        reopen_after: Duration::from_secs(1),
        trickle: Duration::from_secs(1),
    })
    .await;
    let join = services.join.admission_stats();
    assert!(join.evicted + join.deadline > 0, "slow handshakes were shed or timed out: {join:?}");
}
