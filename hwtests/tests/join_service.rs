//! The join service end to end over 127.0.0.1: swtpm-backed joining nodes (the `qemu-vtpm` issuer) attest
//! over aTLS to a join service with an in-process key service, the dry-run token issuer and a generated
//! kubeadm PKI; the measurements file is swapped while joins run.

// The join service fixture these tests share with the handler tests in the shell crate (its module docs say
// why it is a `#[path]` module).
#[path = "../../shell/joinservice/tests/join_support/mod.rs"]
mod join_support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::{AtlsConnector, AttestationIssuer};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_engine::variant::NodeIdentity;
use attest_engine::variant::{AkBasis, Variant};
use attest_grpc::{ChannelConfig, Code, Metadata, Server, Status};
use attest_hwtests::Swtpm;
use attest_joinservice::{ValidatorConfig, Validators};
use attest_keyservice::{MasterSecret, measurement_secret, state_disk_key};
use attest_proto::join::{
    IssueJoinTicketRequest, IssueJoinTicketResponse, IssueRejoinTicketRequest, IssueRejoinTicketResponse,
};
use attest_proto::paths;
use attest_registration::{FileAkRegistry, ak_digest};
use join_support::{API_SERVER_ENDPOINT, Captured, Fixture, MEASUREMENT_SALT, MeasurementsSigner, admit};
use openssl::nid::Nid;
use openssl::x509::X509;

/// 16 bytes of 0x42, base64.
const KMS_URI: &str = "kms://cluster-kms?key=QkJCQkJCQkJCQkJCQkJCQg==&salt=";
const DISK_UUID: &str = "3a1f6c2e-9b4d-4e7a-8f0c-5d6e7f8a9b0c";
const TIMEOUT: Duration = Duration::from_secs(30);

/// A simulated node.
struct Node {
    _sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
}

impl Node {
    fn start(unique: bool) -> Node {
        let sw = if unique { Swtpm::start_unique() } else { Swtpm::start() }.expect("swtpm");
        let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer"));
        Node { _sw: sw, issuer }
    }

    fn ak_digest(&self) -> [u8; 32] {
        ak_digest(self.issuer.attestation_key().tpm2b_public()).unwrap()
    }

    /// The identity the join service binds this node's disk and name to: its registered AK.
    fn identity(&self) -> NodeIdentity {
        NodeIdentity::parse(&format!("ak:{}", hex::encode(self.ak_digest()))).unwrap()
    }

    /// Measurements for this node's current PCRs 0–7 (PCR 4 replaced by `pcr4` when given).
    fn measurements(&self, pcr4: Option<[u8; 32]>, warn_only_extra: bool) -> String {
        let pcrs = self.issuer.with_tpm(|tpm, _| tpm.read_pcrs(PcrMask::ALL)).unwrap();
        let mut entries = Vec::new();
        for i in 0u8..8 {
            let mut value = *pcrs.get(i).unwrap();
            if i == 4
                && let Some(v) = pcr4
            {
                value = v;
            }
            entries.push(format!("\"{i}\": {{\"expected\": \"{}\", \"warnOnly\": false}}", hex::encode(value)));
        }
        if warn_only_extra {
            entries.push(format!("\"15\": {{\"expected\": \"{}\", \"warnOnly\": true}}", hex::encode([0xEE; 32])));
        }
        format!("{{{}}}", entries.join(", "))
    }

    async fn channel(&self, addr: SocketAddr) -> Result<attest_grpc::Channel, String> {
        let connector = AtlsConnector::new(Some(self.issuer.clone() as Arc<dyn AttestationIssuer>), None).unwrap();
        attest_atls::grpc::connect(addr, &connector, ChannelConfig::default())
            .await
            .map(|(c, _)| c)
            .map_err(|e| e.to_string())
    }

    /// One join over a fresh aTLS connection with [`DISK_UUID`].
    async fn join(&self, addr: SocketAddr, node: &str, control_plane: bool) -> Result<IssueJoinTicketResponse, String> {
        self.join_with_disk(addr, node, control_plane, DISK_UUID).await
    }

    /// One join over a fresh aTLS connection under a fresh kubelet key (the CSR's key is the aTLS key, as the
    /// bootstrapper's).
    async fn join_with_disk(
        &self,
        addr: SocketAddr,
        node: &str,
        control_plane: bool,
        disk: &str,
    ) -> Result<IssueJoinTicketResponse, String> {
        let (connector, csr) =
            join_support::kubelet_connector(self.issuer.clone() as Arc<dyn AttestationIssuer>, None, node);
        let (channel, _) =
            attest_atls::grpc::connect(addr, &connector, ChannelConfig::default()).await.map_err(|e| e.to_string())?;
        let request = IssueJoinTicketRequest {
            disk_uuid: disk.into(),
            certificate_request: csr,
            is_control_plane: control_plane,
            ..Default::default()
        };
        channel
            .unary::<_, IssueJoinTicketResponse>(paths::JOIN_ISSUE_JOIN_TICKET, request, Metadata::new(), Some(TIMEOUT))
            .await
            .map(|r| r.message)
            .map_err(|s: Status| s.to_string())
    }
}

/// The join service (the shared fixture) served over aTLS, with the validators of a measurements file.
struct Cluster {
    /// The service, its collaborators and the directory; dropped (removing the directory) before the servers.
    fixture: Fixture,
    addr: SocketAddr,
    validators: Arc<Validators>,
    measurements: PathBuf,
    signer: MeasurementsSigner,
    /// Where the operator's control-plane admissions go (signed by `signer`'s key).
    admissions: PathBuf,
    /// The AKs the validators trust.
    registry: Arc<FileAkRegistry>,
    _servers: Vec<Server>,
}

impl Cluster {
    /// Starts a key service (unless `kms` is given) and the join service trusting `trusted` AKs, with
    /// `measurements` as the file content.
    async fn start(trusted: &[[u8; 32]], measurements: &str, kms: Option<SocketAddr>) -> Cluster {
        let mut servers = Vec::new();
        let kms = if let Some(a) = kms {
            a
        } else {
            let (server, a) = join_support::key_service(MasterSecret::from_kms_uri(KMS_URI).unwrap()).await;
            servers.push(server);
            a
        };
        let operator_dir = join_support::temp_dir("operator");
        let signer = MeasurementsSigner::new(&operator_dir);
        let admissions = operator_dir.join("admissions");
        let key = attest_measurements::VerifyingKey::from_pem(&std::fs::read(&signer.public_key).unwrap()).unwrap();
        let fixture = join_support::fixture_with(kms, Duration::from_secs(2), None, |s| {
            s.with_admissions(admissions.clone(), key)
        });
        let registry = Arc::new(FileAkRegistry::open(fixture.dir.join("aks.json")).unwrap());
        for d in trusted {
            registry.register(*d, AkBasis::CredentialActivation).unwrap();
        }
        let path = fixture.dir.join("measurements.json");
        signer.write(&path, measurements);
        let config = ValidatorConfig::new(vec![Variant::QemuVtpm], Arc::clone(&registry), signer.trust(&path));
        let validators = Arc::new(Validators::load(config, &path, Arc::clone(&fixture.metrics)).unwrap());
        let (server, addr) = fixture.serve_atls(&validators, None).await;
        servers.push(server);
        Cluster { fixture, addr, validators, measurements: path, signer, admissions, registry, _servers: servers }
    }

    /// Trusts `node`'s AK (as its registration by credential activation would).
    fn register(&self, node: &Node) {
        self.registry.register(node.ak_digest(), AkBasis::CredentialActivation).unwrap();
    }

    fn tokens(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.fixture.tokens_dir).unwrap().map(|e| e.unwrap().path()).collect()
    }

    /// Writes a new measurements file with its signature, as an operator would.
    fn write_measurements(&self, text: &str) {
        self.signer.write(&self.measurements, text);
    }

    /// Writes a new measurements file without signing it (an attacker who can write the file only).
    fn write_unsigned_measurements(&self, text: &str) {
        join_support::replace(&self.measurements, text.as_bytes());
    }
}

/// `node`'s rejoin for `disk` (its key, or the refusal).
async fn rejoin_disk(node: &Node, addr: SocketAddr, disk: &str) -> Result<IssueRejoinTicketResponse, Status> {
    let channel = node.channel(addr).await.unwrap();
    let call = channel.unary::<_, IssueRejoinTicketResponse>(
        paths::JOIN_ISSUE_REJOIN_TICKET,
        IssueRejoinTicketRequest { disk_uuid: disk.into() },
        Metadata::new(),
        Some(TIMEOUT),
    );
    call.await.map(|r| r.message)
}

#[tokio::test]
async fn an_attested_node_joins_and_rejoins() {
    let node = Node::start(true);
    let cluster = Cluster::start(&[node.ak_digest()], &node.measurements(None, false), None).await;
    let secret = MasterSecret::from_kms_uri(KMS_URI).unwrap();

    let t = node.join(cluster.addr, "worker-1", false).await.expect("join");
    assert_eq!(t.state_disk_key, state_disk_key(&secret, DISK_UUID).unwrap().to_vec());
    assert_eq!(t.measurement_secret, measurement_secret(&secret).to_vec());
    assert_eq!(t.measurement_salt, MEASUREMENT_SALT);
    assert_eq!(t.discovery_token_ca_cert_hash, cluster.fixture.ca.discovery_hash());
    assert_eq!(t.api_server_endpoint, API_SERVER_ENDPOINT);
    assert_eq!(t.kubernetes_version, "v1.31.1");
    assert!(t.control_plane_files.is_empty());
    assert!(!t.authorized_ca_public_key.is_empty() && t.host_certificate.is_empty());
    let cert = X509::from_der(&t.kubelet_cert).unwrap();
    assert!(cert.verify(&cluster.fixture.ca.certificate().public_key().unwrap()).unwrap());
    let cn = cert.subject_name().entries_by_nid(Nid::COMMONNAME).next().unwrap().data().to_string().unwrap();
    assert_eq!(cn, "system:node:worker-1");
    let (id, _) = t.token.split_once('.').unwrap();
    assert_eq!(cluster.tokens(), [cluster.fixture.tokens_dir.join(format!("bootstrap-token-{id}.json"))]);

    // The control plane only with the operator's admission for this node (its attested AK) and name.
    assert!(node.join(cluster.addr, "worker-1", true).await.unwrap_err().contains("admission"));
    admit(&cluster.signer, &cluster.admissions, &node.identity(), "worker-1");
    let cp = node.join(cluster.addr, "worker-1", true).await.expect("control-plane join");
    assert_eq!(cp.control_plane_files.len(), 8);

    let rejoin = rejoin_disk(&node, cluster.addr, DISK_UUID).await.expect("rejoin");
    assert_eq!(rejoin.state_disk_key, t.state_disk_key);
    assert_eq!(rejoin.measurement_secret, t.measurement_secret);
    assert_eq!(cluster.fixture.metrics.issued_count(), (2, 1));
    // Another attested node gets neither that disk's key nor that node's name.
    let other = Node::start(true);
    cluster.register(&other);
    let e = other.join_with_disk(cluster.addr, "worker-1", false, "3a1f6c2e-9b4d-4e7a-8f0c-5d6e7f8a9b0d").await;
    assert!(e.unwrap_err().contains("belongs to another attested node"));
    let e = rejoin_disk(&other, cluster.addr, DISK_UUID).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert_eq!(cluster.fixture.metrics.issued_count(), (2, 1));
}

#[tokio::test]
async fn a_wrong_pcr_is_refused_in_the_handshake() {
    // The tests run on a current-thread runtime, so the aTLS handshakes log into this thread's subscriber.
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt().with_writer(captured.clone()).with_ansi(false).finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let node = Node::start(false);
    let cluster = Cluster::start(&[node.ak_digest()], &node.measurements(Some([0xAB; 32]), false), None).await;
    let e = node.join(cluster.addr, "worker-1", false).await.expect_err("a wrong PCR must be refused");
    // The node sees the handshake fail (TLS 1.3: on its first read); the service names the PCR.
    assert!(e.contains("handshake") || e.contains("alert") || e.contains("HTTP/2"), "{e}");
    let logs = captured.text();
    let want = format!("PCR 4: expected {}", hex::encode([0xAB; 32]));
    assert!(logs.contains("joining node's attestation refused") && logs.contains(&want), "{logs}");
    assert_eq!(cluster.fixture.metrics.issued_count(), (0, 0));
    assert!(cluster.tokens().is_empty());
    assert!(cluster.fixture.metrics.render().contains("attest_join_attestations_total{outcome=\"rejected\"} 1"));

    // An AK that is not registered is refused as well.
    let stranger = Node::start(true);
    let e = stranger.join(cluster.addr, "worker-2", false).await.expect_err("an unregistered AK must be refused");
    assert!(!e.is_empty());
    assert!(captured.text().contains("not trusted") || captured.text().contains("AK"), "{}", captured.text());
}

#[tokio::test]
async fn key_service_down_is_unavailable_and_leaves_no_token() {
    let node = Node::start(false);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let cluster = Cluster::start(&[node.ak_digest()], &node.measurements(None, false), Some(closed)).await;
    let e = node.join(cluster.addr, "worker-1", false).await.unwrap_err();
    assert!(e.starts_with(&format!("{} ", Code::Unavailable)), "{e}");
    assert!(cluster.tokens().is_empty(), "{:?}", cluster.tokens());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measurements_swap_while_joins_run() {
    // Two machines: a TPM of its own each (a copied template would share the endorsement seed, and with it
    // the AK that names the node).
    let a = Node::start(false);
    let b = Node::start(true);
    let good = a.measurements(None, false);
    assert_eq!(good, b.measurements(None, false), "both nodes boot the same (fresh) PCRs");
    let cluster = Arc::new(Cluster::start(&[a.ak_digest(), b.ak_digest()], &good, None).await);
    let nodes = [Arc::new(a), Arc::new(b)];

    // Joins keep running on both nodes while the file changes under them.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut runners = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let (node, cluster, stop) = (Arc::clone(node), Arc::clone(&cluster), Arc::clone(&stop));
        runners.push(tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                node.join_with_disk(cluster.addr, &format!("node-{i}"), false, &disk_of(i))
                    .await
                    .expect("join during a swap");
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A different but still accepting file: new validators, joins unaffected.
    cluster.write_measurements(&a_measurements_with_extra(&nodes[0]));
    assert_eq!(cluster.validators.reload().unwrap(), Some(2));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // An invalid file: rejected, the current validators stay.
    cluster.write_measurements("{\"4\": {\"expected\": \"zz\"}}");
    assert!(cluster.validators.reload().is_err());
    assert_eq!(cluster.validators.current().generation(), 2);
    // A well-formed file whose signature does not match (changed without re-signing): rejected as well.
    cluster.write_unsigned_measurements(&nodes[0].measurements(Some([0xAB; 32]), false));
    assert!(matches!(cluster.validators.reload(), Err(attest_joinservice::MeasurementsError::Untrusted(_))));
    assert_eq!(cluster.validators.current().generation(), 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in runners {
        assert!(r.await.unwrap() > 0, "every runner completed joins");
    }

    // The new policy applies to the next handshake — found by the watcher this time.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let watcher = cluster.validators.watch(Duration::from_millis(50), stop_rx);
    cluster.write_measurements(&nodes[0].measurements(Some([0xCD; 32]), false));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cluster.validators.current().generation() != 3 {
        assert!(tokio::time::Instant::now() < deadline, "the watcher did not pick up the change");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        nodes[0].join_with_disk(cluster.addr, "node-0", false, &disk_of(0)).await.is_err(),
        "the new (wrong) PCR 4 must refuse"
    );
    cluster.write_measurements(&good);
    while cluster.validators.current().generation() != 4 {
        assert!(tokio::time::Instant::now() < deadline, "the watcher did not pick up the change back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nodes[1].join_with_disk(cluster.addr, "node-1", false, &disk_of(1)).await.expect("accepted again");
    let _ = stop_tx.send(true);
    watcher.await.unwrap();
    let text = cluster.fixture.metrics.render();
    assert!(text.contains("attest_join_measurements_reloads_total{outcome=\"applied\"} 4"), "{text}");
    assert!(text.contains("attest_join_measurements_reloads_total{outcome=\"rejected\"} 2"), "{text}");
}

/// The disk UUID of runner `i`'s node.
fn disk_of(i: usize) -> String {
    format!("3a1f6c2e-9b4d-4e7a-8f0c-5d6e7f8a9b{i:02x}")
}

fn a_measurements_with_extra(node: &Node) -> String {
    node.measurements(None, true)
}
