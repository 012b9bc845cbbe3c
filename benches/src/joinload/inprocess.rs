//! The key service and the join service in this process, configured from a [`fixture`](super::fixture)
//! directory exactly as the `key-service` and `join-service` binaries configure themselves from their flags
//! (AK registry file, measurements file, salt, Kubernetes settings, kubeadm PKI, dry-run tokens): the tests
//! that drive the load generator (`benches/tests/join_load_smoke.rs`) and hostile clients
//! (`benches/tests/join_hostile.rs`) against the real service code, with the server's counters at hand.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use attest_atls::{AtlsAcceptor, Verifier};
use attest_engine::variant::Variant;
use attest_grpc::{Router, Server, ServerConfig};
use attest_joinservice::{
    JoinService, KeyServiceClient, KubernetesSettings, Metrics, TicketSettings, ValidatorConfig, Validators,
    load_measurement_salt,
};
use attest_k8s::{ClusterCa, DryRunTokenIssuer};
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsAcceptor, KmsConnector, TlsFiles};
use attest_keyservice::{KeyService, MasterSecret};
use attest_registration::FileAkRegistry;

use super::fixture::{
    AK_REGISTRY_FILE, BoxError, KMS_PKI_DIR, KUBERNETES_FILE, MASTER_SECRET_FILE, MEASUREMENTS_FILE, PKI_DIR,
    SALT_FILE, measurements_trust,
};

/// Where [`Services::start`] has the dry-run token issuer write its Secret manifests (below the fixture).
pub const TOKENS_DIR: &str = "tokens";

/// A running key service (mutual TLS) and join service (aTLS, the joining node attests) on 127.0.0.1.
pub struct Services {
    /// The key service's server.
    pub key_service: Server,
    /// The join service's server (its connection and in-flight call counters).
    pub join: Server,
    /// The join service's address.
    pub addr: SocketAddr,
    /// The key service's address (mutual TLS).
    pub kms_addr: SocketAddr,
    /// The join service's metrics.
    pub metrics: Arc<Metrics>,
    /// The dry-run token issuer's directory: one manifest per live bootstrap token.
    pub tokens_dir: PathBuf,
}

impl Services {
    /// Starts both services from the fixture in `dir`, the join service with `config` (the binaries use
    /// `ServerConfig::default()`).
    pub async fn start(dir: &Path, config: ServerConfig) -> Result<Services, BoxError> {
        let mut router = Router::new();
        router.add_service(Arc::new(KeyService::new(MasterSecret::from_file(&dir.join(MASTER_SECRET_FILE))?)));
        let key_service = Server::new(router, ServerConfig::default());
        let kms_acceptor = KmsAcceptor::new(&TlsFiles::server_in(&dir.join(KMS_PKI_DIR)), &[])?;
        let kms_addr = attest_keyservice::tls::serve(
            &key_service,
            tokio::net::TcpListener::bind("127.0.0.1:0").await?,
            Arc::new(kms_acceptor),
        )?;
        let kms_tls = KmsConnector::new(&TlsFiles::client_in(&dir.join(KMS_PKI_DIR)), KEY_SERVICE_NAME)?;

        let metrics = Arc::new(Metrics::new());
        let validator_config = ValidatorConfig::new(
            vec![Variant::QemuVtpm],
            Arc::new(FileAkRegistry::open(dir.join(AK_REGISTRY_FILE))?),
            measurements_trust(dir)?,
        );
        let validators =
            Arc::new(Validators::load(validator_config, &dir.join(MEASUREMENTS_FILE), Arc::clone(&metrics))?);
        let settings = TicketSettings {
            measurement_salt: load_measurement_salt(&dir.join(SALT_FILE))?,
            api_server_endpoint: "10.0.0.1:6443".into(),
            kubernetes: KubernetesSettings::load(&dir.join(KUBERNETES_FILE))?,
            token_ttl: Duration::from_secs(900),
        };
        let tokens_dir = dir.join(TOKENS_DIR);
        let service = JoinService::new(
            KeyServiceClient::new(kms_addr, kms_tls, Duration::from_secs(5), Arc::clone(&metrics)),
            Arc::new(DryRunTokenIssuer::new(tokens_dir.clone())?),
            Arc::new(ClusterCa::load(&dir.join(PKI_DIR))?),
            settings,
            Arc::clone(&metrics),
        );
        let mut router = Router::new();
        router.add_service(Arc::new(service));
        let join = Server::new(router, config);
        let acceptor = AtlsAcceptor::new(None, Some(Arc::new(Verifier::new(validators.attestation_validators()))))?;
        let addr =
            attest_atls::grpc::serve(&join, tokio::net::TcpListener::bind("127.0.0.1:0").await?, Arc::new(acceptor))?;
        Ok(Services { key_service, join, addr, kms_addr, metrics, tokens_dir })
    }

    /// How many bootstrap tokens exist (manifests in [`Services::tokens_dir`]).
    pub fn live_tokens(&self) -> usize {
        std::fs::read_dir(&self.tokens_dir).map_or(0, Iterator::count)
    }
}
