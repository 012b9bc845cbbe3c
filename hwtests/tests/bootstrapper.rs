//! The bootstrapper on swtpm-backed nodes, over real aTLS on 127.0.0.1 (docs/ARCHITECTURE.md, "Bootstrapper";
//! faults and races): init from a client that verifies the node (AK pinned with `StaticAkRegistry`) →
//! streamed logs, kubeconfig, the cluster id of the HKDF derivation, PCR 15 extended with it (read back from
//! the TPM); a wrong init secret refused without touching PCR 15; a restart on the same TPM → already
//! bootstrapped; a crash between lock and state write → refused; a failing kubeadm → init_failure with its
//! output; a join through a join service that verifies the node's attestation — and that the node verifies in
//! turn (mutual aTLS, the service's AK by credential activation, its PCR 15 = the ticket's cluster) — after
//! UNAVAILABLE answers; and impostor join services (valid TLS but no attestation, an attestation of the wrong
//! measurements, a TPM whose EK the node's CA did not certify, a node of another cluster): the node refuses
//! each ticket and stays unlocked (PCR 15 still zero, no state written, no key kept).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use attest_atls::{AtlsAcceptor, AtlsConnector, AttestationIssuer, EngineValidator, PeerAttestation, Verifier};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_bootstrapper::cluster::dryrun::DryRunBackend;
use attest_bootstrapper::cluster::kubeadm::KubeadmBackend;
use attest_bootstrapper::cluster::pki::{ClusterPki, ca_cert_hash};
use attest_bootstrapper::life::lock::expected_pcr_value;
use attest_bootstrapper::{
    AtlsTicketSource, BOOTSTRAP_PCR, ClusterBackend, InitSecretHash, JoinClient, JoinConfig, JoinError,
    JoinServiceTrust, KeyFileDisk, LockHolder, Node, NodeConfig, NodeLock, Outcome, PcrBackend, Phase, Role, Startup,
    StartupError, serve_init,
};
use attest_engine::variant::{AkBasis, PcrPolicy, StaticAkRegistry};
use attest_grpc::{ChannelConfig, Code, Metadata, Request, Response, Router, Server, ServerConfig, Status};
use attest_hwtests::Swtpm;
use attest_hwtests::support::validator;
use attest_keyservice::{MasterSecret, cluster_id, measurement_secret};
use attest_proto::init::{InitRequest, InitResponse, init_response::Kind};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;
use attest_registration::{EkCaBundle, ak_digest};

const INIT_SECRET: &[u8] = b"hwtests-init-secret-0123456789ab";
const KMS: &str = "kms://cluster-kms?key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=&salt=AQ==";
const SALT: [u8; 32] = [0x42; 32];
const TIMEOUT: Duration = Duration::from_secs(60);

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "attest-hw-boot-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One simulated node: a swtpm, its issuer, and a directory.
struct HwNode {
    _sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
    dir: PathBuf,
}

impl Drop for HwNode {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl HwNode {
    #[track_caller]
    fn start(name: &str) -> HwNode {
        Self::on(Swtpm::start().expect("start swtpm"), name)
    }

    /// A node on a TPM manufactured for itself (its own EK, certified by the same local CA).
    #[track_caller]
    fn start_unique(name: &str) -> HwNode {
        Self::on(Swtpm::start_unique().expect("start swtpm"), name)
    }

    #[track_caller]
    fn on(sw: Swtpm, name: &str) -> HwNode {
        let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer"));
        HwNode { _sw: sw, issuer, dir: temp_dir(name) }
    }

    /// A node (as a freshly started bootstrapper would build it) on this TPM and directory.
    fn node(&self, backend: Arc<dyn ClusterBackend>) -> Arc<Node> {
        let lock = Arc::new(NodeLock::open(self.issuer.clone() as Arc<dyn PcrBackend>).expect("read PCR 15"));
        let config = NodeConfig {
            state_dir: self.state_dir(),
            node_name: "node-1".into(),
            control_plane: false,
            api_server_endpoint: "127.0.0.1:6443".into(),
        };
        Arc::new(Node::new(config, lock, Arc::new(KeyFileDisk::new(&self.dir.join("run"))), backend))
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn dry_run(&self) -> Arc<dyn ClusterBackend> {
        Arc::new(DryRunBackend::new(&self.state_dir()))
    }

    /// PCR 15 read back from the TPM.
    fn pcr15(&self) -> [u8; 32] {
        self.issuer.with_tpm(|tpm, _| {
            *tpm.read_pcrs(PcrMask::from_indices(&[BOOTSTRAP_PCR]).unwrap()).unwrap().get(BOOTSTRAP_PCR).unwrap()
        })
    }

    /// A verifier that trusts exactly this node's AK.
    fn verifier(&self) -> Arc<Verifier> {
        let digest = ak_digest(self.issuer.attestation_key().tpm2b_public()).unwrap();
        let registry = Arc::new(StaticAkRegistry(vec![(digest, AkBasis::Pinned)]));
        Arc::new(Verifier::new(vec![Arc::new(EngineValidator::new(validator(registry, PcrPolicy::default())))]))
    }

    async fn serve(&self, node: Arc<Node>) -> (Server, std::net::SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        serve_init(
            node,
            InitSecretHash::of(INIT_SECRET),
            self.issuer.clone() as Arc<dyn AttestationIssuer>,
            None,
            listener,
        )
        .expect("serve init")
    }
}

fn request(secret: &[u8]) -> InitRequest {
    InitRequest {
        kms_uri: KMS.into(),
        measurement_salt: SALT.to_vec(),
        init_secret: secret.to_vec(),
        cluster_name: "hw".into(),
        apiserver_cert_sans: vec!["127.0.0.1".into()],
        ..InitRequest::default()
    }
}

/// `attest init` in miniature: aTLS to the node (verifying it), Init, all streamed messages.
async fn init_call(
    addr: std::net::SocketAddr,
    verifier: Arc<Verifier>,
    secret: &[u8],
) -> Result<(Vec<InitResponse>, PeerAttestation), Status> {
    let connector = AtlsConnector::new(None, Some(verifier)).unwrap();
    let (channel, peer) = attest_atls::grpc::connect(addr, &connector, ChannelConfig::default())
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let stream = channel
        .server_streaming::<_, InitResponse>(paths::INIT_INIT, request(secret), Metadata::new(), Some(TIMEOUT))
        .await?;
    Ok((stream.message.collect().await?, peer.expect("the node attested")))
}

fn log_lines(messages: &[InitResponse]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match &m.kind {
            Some(Kind::Log(l)) => Some(String::from_utf8_lossy(&l.log).into_owned()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_over_atls_extends_pcr15_and_a_restart_is_already_bootstrapped() {
    let hw = HwNode::start("init");
    let node = hw.node(hw.dry_run());
    assert_eq!(node.startup().unwrap(), Ok(Startup::Fresh));
    let (server, addr) = hw.serve(node.clone()).await;

    let (messages, peer) = init_call(addr, hw.verifier(), INIT_SECRET).await.expect("init");
    assert_eq!(peer.oid, "1.3.9900.5.1");
    let logs = log_lines(&messages);
    assert!(logs.iter().any(|l| l.starts_with("node locked for cluster")), "{logs:?}");
    assert!(logs.iter().any(|l| l.contains("[dry-run] cluster PKI")), "{logs:?}");
    let Some(Kind::InitSuccess(success)) = &messages.last().unwrap().kind else { panic!("{messages:?}") };

    let master = MasterSecret::from_kms_uri(KMS).unwrap();
    let ms = measurement_secret(&master);
    let id = cluster_id(&ms, &SALT);
    let hkdf = attest_keyservice::hkdf_sha256(&ms, &SALT, b"key-clusterID", 32).unwrap();
    assert_eq!(success.cluster_id, *hkdf);
    assert_eq!(success.cluster_id, id);
    assert_eq!(success.owner_id, *attest_keyservice::hkdf_sha256(&ms, &SALT, b"key-ownerID", 32).unwrap());
    let kubeconfig = String::from_utf8(success.kubeconfig.clone()).unwrap();
    assert!(kubeconfig.contains("server: \"https://127.0.0.1:6443\"") && kubeconfig.contains("client-key-data"));
    // The cluster CA the join service will read.
    for f in ["pki/ca.crt", "pki/ca.key", "pki/sa.key", "pki/sa.pub", "pki/front-proxy-ca.crt", "pki/etcd/ca.crt"] {
        assert!(hw.state_dir().join(f).is_file(), "{f}");
    }

    // PCR 15, read back from the TPM: SHA-256(0 ‖ cluster id).
    assert_eq!(hw.pcr15(), expected_pcr_value(&id));
    assert_eq!(*node.outcome().borrow(), Some(Outcome::Initialized { cluster_id: id }));

    // A second init on the same node: refused by the lock.
    let again = init_call(addr, hw.verifier(), INIT_SECRET).await.unwrap_err();
    assert_eq!(again.code, Code::FailedPrecondition, "{again}");
    assert!(server.shutdown(Duration::from_secs(5)).await);

    // Restart on the same swtpm (same boot): already bootstrapped, PCR unchanged.
    let restarted = hw.node(hw.dry_run());
    match restarted.startup().unwrap() {
        Ok(Startup::Bootstrapped(state)) => {
            assert_eq!((state.cluster_id, state.role, state.phase), (id, Role::ControlPlane, Phase::Bootstrapped));
        }
        other => panic!("{other:?}"),
    }
    assert!(restarted.lock().is_locked());
    assert_eq!(hw.pcr15(), expected_pcr_value(&id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_init_secret_is_refused_and_pcr15_stays_zero() {
    let hw = HwNode::start("wrong");
    let node = hw.node(hw.dry_run());
    let (server, addr) = hw.serve(node.clone()).await;
    let e = init_call(addr, hw.verifier(), b"wrong-secret").await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert_eq!(hw.pcr15(), [0; 32]);
    assert!(!node.lock().is_locked());
    assert_eq!(node.startup().unwrap(), Ok(Startup::Fresh));
    // The right secret still works afterwards.
    let (messages, _) = init_call(addr, hw.verifier(), INIT_SECRET).await.unwrap();
    assert!(matches!(messages.last().unwrap().kind, Some(Kind::InitSuccess(_))));
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_between_lock_and_state_write() {
    let hw = HwNode::start("crash");
    // The crashed run: lock taken (PCR 15 extended), then nothing.
    hw.node(hw.dry_run()).lock().try_lock(LockHolder::Init, &[0xC1; 32]).unwrap();
    assert_eq!(hw.pcr15(), expected_pcr_value(&[0xC1; 32]));
    // The restart refuses init and join, and says why.
    let node = hw.node(hw.dry_run());
    let startup = node.startup().unwrap();
    assert_eq!(startup, Err(StartupError::LockedWithoutState));
    assert!(startup.unwrap_err().to_string().contains("refuses init and join"));
    // Served anyway, the init path cannot take the lock.
    let (server, addr) = hw.serve(node).await;
    let e = init_call(addr, hw.verifier(), INIT_SECRET).await.unwrap_err();
    assert_eq!(e.code, Code::FailedPrecondition);
    server.shutdown(Duration::from_secs(5)).await;
}

fn fake_kubeadm(dir: &Path) -> PathBuf {
    let fake = dir.join("kubeadm");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho '[init] Using Kubernetes version'\necho '[preflight] error: port 10250 in use' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fake
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadm_failure_streams_its_output_and_leaves_consistent_state() {
    let hw = HwNode::start("kubeadm");
    let sd = hw.state_dir();
    let backend =
        Arc::new(KubeadmBackend::new(fake_kubeadm(&hw.dir), &sd).with_dirs(&sd.join("k8s"), &sd.join("kubelet")));
    let node = hw.node(backend);
    let (server, addr) = hw.serve(node.clone()).await;
    let (messages, _) = init_call(addr, hw.verifier(), INIT_SECRET).await.unwrap();
    let logs = log_lines(&messages);
    assert!(logs.contains(&"[preflight] error: port 10250 in use".to_owned()), "{logs:?}");
    let Some(Kind::InitFailure(failure)) = &messages.last().unwrap().kind else { panic!("{messages:?}") };
    assert!(failure.error.contains("port 10250 in use"), "{}", failure.error);
    server.shutdown(Duration::from_secs(5)).await;
    // Locked, PCR 15 extended, state says failed; a restart reports a failed bootstrap, never a fresh node.
    let id = cluster_id(&measurement_secret(&MasterSecret::from_kms_uri(KMS).unwrap()), &SALT);
    assert_eq!(hw.pcr15(), expected_pcr_value(&id));
    match hw.node(hw.dry_run()).startup().unwrap() {
        Ok(Startup::Bootstrapped(s)) => assert_eq!(s.phase, Phase::Failed),
        other => panic!("{other:?}"),
    }
}

/// How a join service stand-in presents itself to joining nodes.
enum Presents {
    /// Plain TLS: a fresh self-signed certificate without attestation (an impostor that does not attest).
    NoAttestation,
    /// Attests with this node's TPM and serves credential activation for its AK.
    Attestation(Arc<QemuVtpmIssuer>),
}

/// A join service stand-in over aTLS that verifies the joining node: UNAVAILABLE for the first `unavailable`
/// calls, then a ticket (measurement secret 0x33…, the fixed salt).
async fn fake_join_service(
    verifier: Arc<Verifier>,
    pki: Arc<ClusterPki>,
    presents: Presents,
    unavailable: usize,
) -> (Server, std::net::SocketAddr, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut router = Router::new();
    let c = calls.clone();
    router.unary(paths::JOIN_ISSUE_JOIN_TICKET, move |req: Request<IssueJoinTicketRequest>| {
        let (calls, pki) = (c.clone(), pki.clone());
        async move {
            assert!(req.peer::<PeerAttestation>().is_some(), "the node attested");
            if calls.fetch_add(1, Ordering::SeqCst) < unavailable {
                return Err(Status::unavailable("key service not ready"));
            }
            let csr = openssl::x509::X509Req::from_der(&req.message.certificate_request).unwrap();
            let mut b = openssl::x509::X509::builder().unwrap();
            b.set_version(2).unwrap();
            b.set_subject_name(csr.subject_name()).unwrap();
            b.set_issuer_name(pki.ca.cert.subject_name()).unwrap();
            b.set_pubkey(&csr.public_key().unwrap()).unwrap();
            b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap()).unwrap();
            b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap()).unwrap();
            b.sign(&pki.ca.key, openssl::hash::MessageDigest::sha256()).unwrap();
            Ok(Response::new(IssueJoinTicketResponse {
                state_disk_key: vec![0x11; 32],
                measurement_salt: SALT.to_vec(),
                measurement_secret: vec![0x33; 32],
                kubelet_cert: b.build().to_der().unwrap(),
                api_server_endpoint: "127.0.0.1:6443".into(),
                token: "abcdef.0123456789abcdef".into(),
                discovery_token_ca_cert_hash: ca_cert_hash(&pki.ca.cert).unwrap(),
                kubernetes_version: "v1.31.1".into(),
                ..IssueJoinTicketResponse::default()
            }))
        }
    });
    let issuer = match presents {
        Presents::NoAttestation => None,
        Presents::Attestation(issuer) => {
            let ek = issuer.with_tpm(|tpm, _| tpm.ek_certificate()).expect("EK certificate");
            router.add_service(Arc::new(ActivationService::new(Arc::clone(&issuer), ek)));
            Some(issuer as Arc<dyn AttestationIssuer>)
        }
    };
    let server = Server::new(router, ServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let acceptor = Arc::new(AtlsAcceptor::new(issuer, Some(verifier)).unwrap());
    let addr = attest_atls::grpc::serve(&server, listener, acceptor).unwrap();
    (server, addr, calls)
}

/// The cluster id of the stand-in's tickets.
fn ticket_cluster_id() -> [u8; 32] {
    cluster_id(&[0x33; 32], &SALT)
}

/// A join service's TPM: a node bootstrapped into the tickets' cluster (PCR 15 = its id), with `pcr4`
/// extended into PCR 4 when given (other software than the node's).
fn join_service_tpm(name: &str, cluster: Option<[u8; 32]>, pcr4: Option<[u8; 32]>) -> HwNode {
    let hw = HwNode::start_unique(name);
    hw.issuer.with_tpm(|tpm, _| {
        if let Some(id) = cluster {
            tpm.extend_pcr(BOOTSTRAP_PCR, &id).unwrap();
        }
        if let Some(d) = pcr4 {
            tpm.extend_pcr(4, &d).unwrap();
        }
    });
    hw
}

/// How the node verifies join services: its measurements (PCRs 0–7 of a freshly started TPM, the same on
/// every node here), a `qemu-vtpm` service's AK through credential activation against `ek_ca`.
fn node_trust(hw: &HwNode, ek_ca: EkCaBundle) -> Arc<JoinServiceTrust> {
    attest_hwtests::support::join_service_trust(&hw.issuer, ek_ca)
}

fn swtpm_ek_ca() -> EkCaBundle {
    EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap()
}

fn fast_join() -> JoinConfig {
    JoinConfig { initial_backoff: Duration::from_millis(20), max_backoff: Duration::from_millis(100), max_refusals: 3 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_over_atls_after_unavailable_answers() {
    let hw = HwNode::start("join");
    let service_tpm = join_service_tpm("join-service", Some(ticket_cluster_id()), None);
    let pki = Arc::new(ClusterPki::create_or_load(&hw.dir.join("cluster")).unwrap());
    let (service, join_addr, calls) =
        fake_join_service(hw.verifier(), pki.clone(), Presents::Attestation(service_tpm.issuer.clone()), 2).await;
    let node = hw.node(hw.dry_run());
    // The init server runs in parallel, as in the binary; the join wins here (nobody calls init).
    let (init_server, init_addr) = hw.serve(node.clone()).await;
    let source = Arc::new(
        AtlsTicketSource::new(
            join_addr,
            hw.issuer.clone() as Arc<dyn AttestationIssuer>,
            node_trust(&hw, swtpm_ek_ca()),
        )
        .unwrap(),
    );
    let outcome = tokio::time::timeout(TIMEOUT, JoinClient::new(node.clone(), source, fast_join()).run())
        .await
        .expect("join in time")
        .expect("joined");
    let id = ticket_cluster_id();
    assert_eq!(outcome, Outcome::Joined { cluster_id: id });
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(hw.pcr15(), expected_pcr_value(&id));
    let state = node.store().load().unwrap().unwrap();
    assert_eq!((state.role, state.phase), (Role::Worker, Phase::Bootstrapped));
    assert!(state.dry_run, "a dry-run node says so in its state");
    let cert = std::fs::read(hw.state_dir().join("kubelet/pki/kubelet.crt")).unwrap();
    let cert = openssl::x509::X509::from_pem(&cert).unwrap();
    assert!(cert.verify(&pki.ca.cert.public_key().unwrap()).unwrap());
    assert_eq!(std::fs::read(hw.dir.join("run/state-disk.key")).unwrap(), [0x11; 32]);
    // The init server now refuses: the join path holds the lock.
    let e = init_call(init_addr, hw.verifier(), INIT_SECRET).await.unwrap_err();
    assert_eq!(e.code, Code::FailedPrecondition);
    init_server.shutdown(Duration::from_secs(5)).await;
    service.shutdown(Duration::from_secs(5)).await;
}

/// Runs a node's join client against the join service at `join_addr` until it gives up, and checks that the
/// node is untouched: the client gave up with a refusal naming `why`, PCR 15 is still zero, no node state, no
/// disk key, no kubelet files.
async fn assert_refused_and_untouched(hw: &HwNode, join_addr: std::net::SocketAddr, ek_ca: EkCaBundle, why: &str) {
    let node = hw.node(hw.dry_run());
    let source = Arc::new(
        AtlsTicketSource::new(join_addr, hw.issuer.clone() as Arc<dyn AttestationIssuer>, node_trust(hw, ek_ca))
            .unwrap(),
    );
    let ended = tokio::time::timeout(TIMEOUT, JoinClient::new(node.clone(), source, fast_join()).run())
        .await
        .expect("the join client gives up in time");
    match ended {
        Err(JoinError::GaveUp { attempts, last }) => {
            assert_eq!(attempts, 3, "{last}");
            assert!(last.contains("join service refused by this node") && last.contains(why), "{last}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(hw.pcr15(), [0; 32], "PCR 15 unchanged");
    assert!(!node.lock().is_locked());
    assert_eq!(node.store().load().unwrap(), None, "no node state written");
    assert!(!hw.dir.join("run/state-disk.key").exists(), "no disk key kept");
    assert!(!hw.state_dir().join("kubelet").exists(), "no kubelet files");
    assert!(matches!(node.startup().unwrap(), Ok(Startup::Fresh)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impostor_join_service_without_attestation_is_refused_and_the_node_stays_unlocked() {
    let hw = HwNode::start("impostor-plain");
    let pki = Arc::new(ClusterPki::create_or_load(&hw.dir.join("cluster")).unwrap());
    // Valid TLS, verifies the node like the real service does, issues tickets: but attests nothing.
    let (service, addr, calls) = fake_join_service(hw.verifier(), pki, Presents::NoAttestation, 0).await;
    assert_refused_and_untouched(&hw, addr, swtpm_ek_ca(), "no attestation extension").await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no ticket was even asked for");
    service.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impostor_join_service_with_other_measurements_is_refused_and_the_node_stays_unlocked() {
    let hw = HwNode::start("impostor-pcr");
    // A genuine TPM of the right cluster, but running other software (PCR 4 differs).
    let impostor = join_service_tpm("impostor-pcr-service", Some(ticket_cluster_id()), Some([0xBA; 32]));
    let pki = Arc::new(ClusterPki::create_or_load(&hw.dir.join("cluster")).unwrap());
    let (service, addr, calls) =
        fake_join_service(hw.verifier(), pki, Presents::Attestation(impostor.issuer.clone()), 0).await;
    assert_refused_and_untouched(&hw, addr, swtpm_ek_ca(), "PCR 4").await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no ticket was even asked for");
    service.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_service_whose_tpm_the_node_cannot_certify_is_refused() {
    let hw = HwNode::start("impostor-ek");
    let service_tpm = join_service_tpm("impostor-ek-service", Some(ticket_cluster_id()), None);
    let pki = Arc::new(ClusterPki::create_or_load(&hw.dir.join("cluster")).unwrap());
    let (service, addr, calls) =
        fake_join_service(hw.verifier(), pki.clone(), Presents::Attestation(service_tpm.issuer.clone()), 0).await;
    // The node trusts another EK CA (here: the cluster CA, which certified no TPM).
    let other_ca = EkCaBundle::from_pem(&pki.ca.cert.to_pem().unwrap()).unwrap();
    assert_refused_and_untouched(&hw, addr, other_ca, "AK is not trusted").await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no ticket was asked for before the AK was proven");
    service.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_service_of_another_cluster_is_refused_after_its_ticket_and_the_node_stays_unlocked() {
    let hw = HwNode::start("impostor-cluster");
    // Genuine TPM and software, but its node is bootstrapped into another cluster (PCR 15 ≠ the ticket's).
    let service_tpm = join_service_tpm("impostor-cluster-service", Some([0x77; 32]), None);
    let pki = Arc::new(ClusterPki::create_or_load(&hw.dir.join("cluster")).unwrap());
    let (service, addr, calls) =
        fake_join_service(hw.verifier(), pki, Presents::Attestation(service_tpm.issuer.clone()), 0).await;
    assert_refused_and_untouched(&hw, addr, swtpm_ek_ca(), "not a node of the cluster").await;
    assert_eq!(calls.load(Ordering::SeqCst), 3, "each ticket arrived and was dropped");
    service.shutdown(Duration::from_secs(5)).await;
}
