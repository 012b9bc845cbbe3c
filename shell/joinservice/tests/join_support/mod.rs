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
#![allow(dead_code)] // each suite uses a different part

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use attest_bootstrapper::join::ticket::KubeletKey;
use attest_grpc::{Router, Server, ServerConfig};
use attest_joinservice::{
    JoinService, KeyServiceClient, KubernetesSettings, Metrics, TicketSettings, Validators, load_measurement_salt,
};
use attest_k8s::{ClusterCa, DryRunTokenIssuer, TokenIssuer, generate_pki};
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsAcceptor, KmsConnector, TlsFiles};
use attest_keyservice::{KeyService, MasterSecret};

/// Signs measurements files as an operator would (a detached ECDSA P-256 signature over the file, next to it
/// as `<file>.sig`): the join service refuses unsigned ones.
pub(crate) struct MeasurementsSigner {
    key: openssl::pkey::PKey<openssl::pkey::Private>,
    /// The public key file (PEM) the service verifies with.
    pub(crate) public_key: PathBuf,
}

impl MeasurementsSigner {
    /// A fresh key, its public half written to `dir/measurements.pub`.
    pub(crate) fn new(dir: &Path) -> MeasurementsSigner {
        use openssl::ec::{EcGroup, EcKey};
        let group = EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
        let key = openssl::pkey::PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
        let public_key = dir.join("measurements.pub");
        std::fs::write(&public_key, key.public_key_to_pem().unwrap()).unwrap();
        MeasurementsSigner { key, public_key }
    }

    /// The signature file of `path`.
    pub(crate) fn signature_path(path: &Path) -> PathBuf {
        let mut name = path.file_name().unwrap().to_owned();
        name.push(".sig");
        path.with_file_name(name)
    }

    /// The DER signature over `data`.
    pub(crate) fn sign(&self, data: &[u8]) -> Vec<u8> {
        let mut s = openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), &self.key).unwrap();
        s.sign_oneshot_to_vec(data).unwrap()
    }

    /// Writes `text` to `path` and its signature next to it (each replaced atomically, the file first).
    pub(crate) fn write(&self, path: &Path, text: &str) {
        replace(path, text.as_bytes());
        replace(&Self::signature_path(path), &self.sign(text.as_bytes()));
    }

    /// How the service trusts files at `path`: their signature under this key.
    pub(crate) fn trust(&self, path: &Path) -> attest_trust::MeasurementsTrust {
        attest_trust::MeasurementsTrust::verify_with(&self.public_key, &Self::signature_path(path)).unwrap()
    }
}

/// Replaces `path` with `data` by rename (a reader never sees half a file).
pub(crate) fn replace(path: &Path, data: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, data).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

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

/// The key-service PKI (CA, key-service and join-service certificates) every fixture of this process uses,
/// generated once.
pub(crate) fn kms_pki() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("kms-pki");
        attest_keyservice::tls::generate_pki(&dir).unwrap();
        dir
    })
}

/// The join service's mutual-TLS connector to the fixture key services.
pub(crate) fn kms_connector() -> KmsConnector {
    KmsConnector::new(&TlsFiles::client_in(kms_pki()), KEY_SERVICE_NAME).unwrap()
}

/// Serves `router` over mutual TLS (the key service's side of [`kms_pki`]) on 127.0.0.1.
pub(crate) async fn serve_kms(router: Router) -> (Server, SocketAddr) {
    let server = Server::new(router, ServerConfig::default());
    let acceptor = Arc::new(KmsAcceptor::new(&TlsFiles::server_in(kms_pki()), &[]).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = attest_keyservice::tls::serve(&server, listener, acceptor).unwrap();
    (server, addr)
}

/// A key service holding `master`, on 127.0.0.1 over mutual TLS. It serves until the `Server` is dropped.
pub(crate) async fn key_service(master: MasterSecret) -> (Server, SocketAddr) {
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(master)));
    serve_kms(router).await
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

/// SHA-256 of the SubjectPublicKeyInfo of a kubelet key: what aTLS reports as the key the node proved.
pub(crate) fn spki_sha256(key: &KubeletKey) -> [u8; 32] {
    openssl::sha::sha256(&key.private_key().public_key_to_der().unwrap())
}

/// A client that attests with `issuer` (verifying the service with `verifier`, if any) under a fresh kubelet
/// key for `node`, as the bootstrapper's join client does — the CSR's key is the aTLS key; with that CSR.
pub(crate) fn kubelet_connector(
    issuer: Arc<dyn attest_atls::AttestationIssuer>,
    verifier: Option<Arc<attest_atls::Verifier>>,
    node: &str,
) -> (attest_atls::AtlsConnector, Vec<u8>) {
    let key = KubeletKey::generate(node).unwrap();
    let connector =
        attest_atls::AtlsConnector::new(Some(issuer), verifier).unwrap().with_key(key.private_key().clone());
    (connector, key.csr_der().to_vec())
}

/// An empty cluster state file at `path` (`{"version": 1}`), as a join service needs one to start.
pub(crate) fn empty_cluster_state(path: &Path, measurements_version: u64) {
    std::fs::write(path, format!(r#"{{"version": 1, "measurementsVersion": {measurements_version}}}"#)).unwrap();
}

/// A test identity (a registered AK's digest), one per `seed`.
pub(crate) fn identity(seed: &str) -> attest_engine::variant::NodeIdentity {
    attest_engine::variant::NodeIdentity::parse(&format!("ak:{}", hex::encode(openssl::sha::sha256(seed.as_bytes()))))
        .unwrap()
}

/// A joining node as the join service sees it once the handshake verified it: the identity its evidence names
/// and its kubelet key, which is the key it proved in the handshake (as the bootstrapper does it).
pub(crate) struct TestNode {
    /// The kubelet node name.
    pub(crate) name: String,
    /// The kubelet (= aTLS) key and its CSR.
    pub(crate) key: KubeletKey,
    /// The attested identity.
    pub(crate) identity: attest_engine::variant::NodeIdentity,
}

impl TestNode {
    /// `name`, with an identity of its own.
    pub(crate) fn new(name: &str) -> TestNode {
        TestNode::with_identity(name, identity(name))
    }

    /// `name` with `identity` (e.g. another node's machine, or an attacker posing as `name`).
    pub(crate) fn with_identity(name: &str, identity: attest_engine::variant::NodeIdentity) -> TestNode {
        TestNode { name: name.to_owned(), key: KubeletKey::generate(name).unwrap(), identity }
    }

    /// Its CSR.
    pub(crate) fn csr(&self) -> Vec<u8> {
        self.key.csr_der().to_vec()
    }

    /// What aTLS hands the service after this node's handshake.
    pub(crate) fn peer(&self) -> attest_atls::PeerAttestation {
        attest_atls::PeerAttestation {
            oid: attest_engine::variant::Variant::QemuVtpm.oid().into(),
            document: Vec::new(),
            spki_sha256: spki_sha256(&self.key),
            identity: Some(self.identity.clone()),
            measurement_set: None,
        }
    }
}

/// An operator's control-plane admission for `identity` as `name`, signed by `signer`, written into `dir`.
pub(crate) fn admit(
    signer: &MeasurementsSigner,
    dir: &Path,
    identity: &attest_engine::variant::NodeIdentity,
    name: &str,
) {
    let mut id = [0u8; 16];
    openssl::rand::rand_bytes(&mut id).unwrap();
    let admission = attest_trust::admission::Admission {
        id: hex::encode(id),
        identity: identity.clone(),
        node_name: name.to_owned(),
        expires: attest_engine::UnixTime::from_secs(attest_trust::measurements::now().as_secs() + 3600),
    };
    let payload = admission.payload();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join(format!("{}.json", hex::encode(id))),
        attest_trust::admission::Admission::envelope(&payload, &signer.sign(&payload)),
    )
    .unwrap();
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

impl Fixture {
    /// Serves this fixture's join service over aTLS on 127.0.0.1, accepting the clients that `validators`
    /// accept; with `attests` the service attests itself too (mutual aTLS, as the real one with its node's
    /// TPM). It serves until the `Server` is dropped or shut down.
    pub(crate) async fn serve_atls(
        &self,
        validators: &Arc<Validators>,
        attests: Option<Arc<dyn attest_atls::AttestationIssuer>>,
    ) -> (Server, SocketAddr) {
        let mut router = Router::new();
        router.add_service(Arc::clone(&self.service));
        let server = Server::new(router, ServerConfig::default());
        let verifier = attest_atls::Verifier::new(validators.attestation_validators());
        let acceptor = attest_atls::AtlsAcceptor::new(attests, Some(Arc::new(verifier))).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = attest_atls::grpc::serve(&server, listener, Arc::new(acceptor)).unwrap();
        (server, addr)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A join service calling the key service at `kms` (allowing it `key_timeout`), issuing tokens with `tokens`
/// (default: the dry-run issuer writing to `tokens_dir`).
pub(crate) fn fixture(kms: SocketAddr, key_timeout: Duration, tokens: Option<Arc<dyn TokenIssuer>>) -> Fixture {
    fixture_with(kms, key_timeout, tokens, |s| s)
}

/// [`fixture`], the service configured further by `configure` (admissions, a cluster state, …).
pub(crate) fn fixture_with(
    kms: SocketAddr,
    key_timeout: Duration,
    tokens: Option<Arc<dyn TokenIssuer>>,
    configure: impl FnOnce(JoinService) -> JoinService,
) -> Fixture {
    let dir = temp_dir("svc");
    generate_pki(&dir.join("pki")).unwrap();
    let ca = Arc::new(ClusterCa::load(&dir.join("pki")).unwrap());
    std::fs::write(dir.join("salt"), MEASUREMENT_SALT).unwrap();
    let tokens_dir = dir.join("tokens");
    let tokens = tokens.unwrap_or_else(|| Arc::new(DryRunTokenIssuer::new(&tokens_dir).unwrap()));
    let metrics = Arc::new(Metrics::new());
    let keys = KeyServiceClient::new(kms, kms_connector(), key_timeout, Arc::clone(&metrics));
    let settings = ticket_settings(&dir.join("salt"));
    let service = Arc::new(configure(JoinService::new(keys, tokens, Arc::clone(&ca), settings, Arc::clone(&metrics))));
    Fixture { dir, service, metrics, ca, tokens_dir }
}

#[path = "../../../atls/tests/support/captured.rs"]
mod captured;
#[allow(unused_imports)] // not every test that includes this module checks the log
pub(crate) use captured::Captured;
