//! The join service's test fixture, shared by its two integration suites: `shell/joinservice/tests/join_service.rs`
//! (the handlers, with a stand-in for aTLS) and `hwtests/tests/join_service.rs` (swtpm-backed nodes over real
//! aTLS), which includes this file with `#[path = "../../shell/joinservice/tests/join_support/mod.rs"]`.
//!
//! Why a `#[path]`-shared module: everything here is a test fixture (temporary directories, fixed secrets,
//! `unwrap`) with no use outside tests, so it stays out of `attest-joinservice`'s public API;
//! `attest-test-support` sits below every shell crate and must not depend on them; and `attest-hwtests`'
//! library cannot serve the join service's own tests, since it depends on the join service. It lives next to
//! the service's own tests; both suites already depend on everything it uses (the shell crates, `openssl`,
//! `hex`, `tokio`, `tracing-subscriber`), so it must not use anything else.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use attest_bootstrapper::ticket::KubeletKey;
use attest_grpc::{Router, Server, ServerConfig};
use attest_joinservice::{
    JoinService, KeyServiceClient, KubernetesSettings, Metrics, TicketSettings, load_measurement_salt,
};
use attest_k8s::{ClusterCa, DryRunTokenIssuer, TokenIssuer, generate_pki};
use attest_keyservice::{KeyService, MasterSecret};

/// The measurement salt of every fixture's tickets.
pub(crate) const MEASUREMENT_SALT: [u8; 32] = [0x5A; 32];
/// The API server endpoint of every fixture's tickets.
pub(crate) const API_SERVER_ENDPOINT: &str = "10.0.0.1:6443";

/// A fresh directory under the system's temporary directory.
pub(crate) fn temp_dir(tag: &str) -> PathBuf {
    let mut r = [0u8; 6];
    openssl::rand::rand_bytes(&mut r).unwrap();
    let dir = std::env::temp_dir().join(format!("attest-join-{tag}-{}", hex::encode(r)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A key service holding `master`, on 127.0.0.1 (h2c). It serves until the `Server` is dropped.
pub(crate) async fn key_service(master: MasterSecret) -> (Server, SocketAddr) {
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(master)));
    let server = Server::new(router, ServerConfig::default());
    let addr = server.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    (server, addr)
}

/// The Kubernetes version and components of every fixture's tickets.
pub(crate) fn kubernetes() -> KubernetesSettings {
    KubernetesSettings::parse(
        br#"{"kubernetesVersion":"v1.31.1","components":[{"url":"https://dl.k8s.io/v1.31.1/bin/linux/amd64/kubelet","hash":"sha256:1111111111111111111111111111111111111111111111111111111111111111","installPath":"/run/state/bin/kubelet","extract":false}]}"#,
    )
    .unwrap()
}

/// The ticket settings, with the salt read from `salt_file` the way the `join-service` binary reads it.
pub(crate) fn ticket_settings(salt_file: &Path) -> TicketSettings {
    TicketSettings {
        measurement_salt: load_measurement_salt(salt_file).unwrap(),
        api_server_endpoint: API_SERVER_ENDPOINT.into(),
        kubernetes: kubernetes(),
        token_ttl: Duration::from_secs(600),
    }
}

/// The kubelet CSR a joining node sends for `node`: made by the bootstrapper's own key generation.
pub(crate) fn csr(node: &str) -> Vec<u8> {
    KubeletKey::generate(node).unwrap().csr_der().to_vec()
}

/// A join service and its collaborators, in a temporary directory removed on drop.
pub(crate) struct Fixture {
    /// The directory: `pki/` (a generated kubeadm PKI), `salt`, `tokens/`.
    pub(crate) dir: PathBuf,
    pub(crate) service: Arc<JoinService>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) ca: Arc<ClusterCa>,
    /// Where the dry-run token issuer (the default) writes its Secret manifests.
    pub(crate) tokens_dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A join service calling the key service at `kms` (allowing it `key_timeout`), issuing tokens with `tokens`
/// (default: the dry-run issuer writing to `tokens_dir`).
pub(crate) fn fixture(kms: SocketAddr, key_timeout: Duration, tokens: Option<Arc<dyn TokenIssuer>>) -> Fixture {
    let dir = temp_dir("svc");
    generate_pki(&dir.join("pki")).unwrap();
    let ca = Arc::new(ClusterCa::load(&dir.join("pki")).unwrap());
    std::fs::write(dir.join("salt"), MEASUREMENT_SALT).unwrap();
    let tokens_dir = dir.join("tokens");
    let tokens = tokens.unwrap_or_else(|| Arc::new(DryRunTokenIssuer::new(&tokens_dir).unwrap()));
    let metrics = Arc::new(Metrics::new());
    let keys = KeyServiceClient::new(kms, key_timeout, Arc::clone(&metrics));
    let settings = ticket_settings(&dir.join("salt"));
    let service = Arc::new(JoinService::new(keys, tokens, Arc::clone(&ca), settings, Arc::clone(&metrics)));
    Fixture { dir, service, metrics, ca, tokens_dir }
}

/// A `MakeWriter` collecting everything logged.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}
