//! Issue 28's first attack against the join service and the key service as deployed (aTLS, mutual TLS,
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

use std::time::Duration;

use attest_benches::joinload::attack::{Attack, AttackConfig, genuine_source};
use attest_benches::joinload::inprocess::Services;
use attest_benches::joinload::{self, LoadConfig};
use attest_grpc::ServerConfig;
use attest_test_support::TempDir;
use attest_test_support::tpm::AkKind;

const CASE_LIMIT: Duration = Duration::from_secs(300);
const GENUINE_NODES: usize = 4;
const GENUINE_JOINS: u64 = 40;

async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_beyond_both_services_limits_leave_every_join_served() {
    let run = async {
        let dir = TempDir::new("join-admission-idle");
        joinload::write_fixture(dir.path(), 2, AkKind::EccP256).unwrap();
        let services = Services::start(dir.path(), ServerConfig::default()).await.unwrap();
        let attack = AttackConfig {
            idle: vec![(services.addr, 1100), (services.kms_addr, 2000)],
            slow: Vec::new(),
            peers: 150,
            reopen_after: Duration::from_secs(1),
            trickle: Duration::from_secs(2),
        };
        let report = genuine_joins_under(&dir, &services, &attack).await;
        assert_eq!(report.joins_ok, GENUINE_JOINS, "{}", report.text());
        assert_eq!(report.error_count(), 0, "{}", report.text());
        let (join, kms) = (services.join.admission_stats(), services.key_service.admission_stats());
        assert!(join.evicted > 0 && kms.evicted > 0, "both services shed idle sockets: {join:?} {kms:?}");
        assert!(join.established >= GENUINE_JOINS, "every genuine connection was established: {join:?}");
        assert_eq!(services.metrics.refused_count(attest_joinservice::RefusalReason::KeyServiceUnavailable), 0);
    };
    assert!(tokio::time::timeout(CASE_LIMIT, run).await.is_ok(), "did not finish within {CASE_LIMIT:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_loris_handshakes_leave_every_join_served() {
    let run = async {
        let dir = TempDir::new("join-admission-slow");
        joinload::write_fixture(dir.path(), 2, AkKind::EccP256).unwrap();
        let services = Services::start(dir.path(), ServerConfig::default()).await.unwrap();
        // Slow-loris sockets beyond the pending slots: a TLS record header, one byte every second.
        let attack = AttackConfig {
            idle: Vec::new(),
            slow: vec![(services.addr, 400)],
            peers: 100,
            reopen_after: Duration::from_secs(1),
            trickle: Duration::from_secs(1),
        };
        let report = genuine_joins_under(&dir, &services, &attack).await;
        assert_eq!(report.joins_ok, GENUINE_JOINS, "{}", report.text());
        assert_eq!(report.error_count(), 0, "{}", report.text());
        let join = services.join.admission_stats();
        assert!(join.evicted + join.deadline > 0, "slow handshakes were shed or timed out: {join:?}");
    };
    assert!(tokio::time::timeout(CASE_LIMIT, run).await.is_ok(), "did not finish within {CASE_LIMIT:?}");
}
