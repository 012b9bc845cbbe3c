//! The load path in CI: `join-load`'s fixture, software-AK issuers and load generator against an in-process
//! join service built as `join-service` builds it (AK registry file, measurements file, dry-run tokens, an
//! in-process key service). 200 joins from 16 clients must all return well-formed tickets whose kubelet
//! certificates the cluster CA signed; an AK the registry does not pin must be refused. No timing is asserted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use attest_benches::joinload::{self, LoadConfig, SoftAkIssuer, fixture};
use attest_engine::variant::Variant;
use attest_engine::{SnpPolicy, SnpVerifier};
use attest_shell::atls::{AtlsAcceptor, Verifier};
use attest_shell::grpc::{Router, Server, ServerConfig};
use attest_shell::joinservice::{
    JoinService, KeyServiceClient, KubernetesSettings, Metrics, TicketSettings, ValidatorConfig, Validators,
    load_measurement_salt,
};
use attest_shell::k8s::{ClusterCa, DryRunTokenIssuer};
use attest_shell::keyservice::{KeyService, MasterSecret};
use attest_shell::tpm::FileAkRegistry;
use attest_test_support::tpm::SoftAk;

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir() -> TempDir {
    let mut r = [0u8; 6];
    openssl::rand::rand_bytes(&mut r).unwrap();
    let dir = std::env::temp_dir().join(format!("attest-join-load-smoke-{}", hex::encode(r)));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// The key service and the join service on 127.0.0.1, configured from the fixture in `dir`.
async fn services(dir: &Path) -> (Vec<Server>, std::net::SocketAddr, Arc<Metrics>) {
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(
        MasterSecret::from_file(&dir.join(fixture::MASTER_SECRET_FILE)).unwrap(),
    )));
    let kms = Server::new(router, ServerConfig::default());
    let kms_addr = kms.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();

    let metrics = Arc::new(Metrics::new());
    let config = ValidatorConfig {
        variants: vec![Variant::QemuVtpm],
        ak_registry: Arc::new(FileAkRegistry::open(dir.join(fixture::AK_REGISTRY_FILE)).unwrap()),
        record_first_use: false,
        snp: Arc::new(SnpVerifier::new()),
        snp_policy: SnpPolicy::default(),
    };
    let validators =
        Arc::new(Validators::load(config, &dir.join(fixture::MEASUREMENTS_FILE), Arc::clone(&metrics)).unwrap());
    let settings = TicketSettings {
        measurement_salt: load_measurement_salt(&dir.join(fixture::SALT_FILE)).unwrap(),
        api_server_endpoint: "10.0.0.1:6443".into(),
        kubernetes: KubernetesSettings::load(&dir.join(fixture::KUBERNETES_FILE)).unwrap(),
        token_ttl: Duration::from_secs(900),
    };
    let service = JoinService::new(
        KeyServiceClient::new(kms_addr, Duration::from_secs(5), Arc::clone(&metrics)),
        Arc::new(DryRunTokenIssuer::new(dir.join("tokens")).unwrap()),
        Arc::new(ClusterCa::load(&dir.join(fixture::PKI_DIR)).unwrap()),
        settings,
        Arc::clone(&metrics),
    );
    let mut router = Router::new();
    router.add_service(Arc::new(service));
    let join = Server::new(router, ServerConfig::default());
    let acceptor = AtlsAcceptor::new(None, Some(Arc::new(Verifier::new(validators.attestation_validators())))).unwrap();
    let addr = attest_shell::atls::grpc::serve(
        &join,
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        Arc::new(acceptor),
    )
    .unwrap();
    (vec![kms, join], addr, metrics)
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
    }
}

fn ca_key(dir: &Path) -> openssl::pkey::PKey<openssl::pkey::Public> {
    let pem = std::fs::read(dir.join(fixture::PKI_DIR).join("ca.crt")).unwrap();
    openssl::x509::X509::from_pem(&pem).unwrap().public_key().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_joins_from_sixteen_clients_all_succeed() {
    let dir = temp_dir();
    joinload::write_fixture(&dir.0, 3, attest_test_support::tpm::AkKind::EccP256).unwrap();
    let (_servers, addr, metrics) = services(&dir.0).await;
    let issuers = joinload::load_issuers(&dir.0).unwrap();
    assert_eq!(issuers.len(), 3);

    let report = joinload::load::run(
        &config(addr, 16, 200),
        &issuers,
        joinload::node_requests(5).unwrap(),
        Some(ca_key(&dir.0)),
    )
    .await
    .unwrap();
    assert_eq!(report.error_count(), 0, "{}", report.text());
    assert_eq!(report.joins_ok, 200, "{}", report.text());
    assert_eq!(metrics.issued_count(), (200, 0));
    // One bootstrap token manifest per ticket.
    assert_eq!(std::fs::read_dir(dir.0.join("tokens")).unwrap().count(), 200);
    let json = report.json();
    assert_eq!(json["joins_ok"], 200);
    assert!(json["latency_ms"]["total"]["p50"].as_f64().unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ak_the_registry_does_not_pin_is_refused() {
    let dir = temp_dir();
    joinload::write_fixture(&dir.0, 1, attest_test_support::tpm::AkKind::Rsa2048).unwrap();
    let (_servers, addr, metrics) = services(&dir.0).await;
    // The pinned RSA AK joins (and its key survived the PKCS#8 round trip through the fixture file).
    let pinned = joinload::load_issuers(&dir.0).unwrap();
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
