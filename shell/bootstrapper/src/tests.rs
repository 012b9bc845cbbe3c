//! Node-level tests: the init service and the join client on one node, with an in-memory PCR, a key-file
//! disk and dry-run / fake backends (the swtpm + aTLS versions are in `hwtests/tests/bootstrapper.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use attest_proto::init::{InitRequest, InitResponse, init_response::Kind};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};

use super::InitService;
use crate::cluster::backend::{BackendError, ClusterBackend, InitOutput, InitParams, JoinParams};
use crate::cluster::dryrun::DryRunBackend;
use crate::cluster::kubeadm::KubeadmBackend;
use crate::disk::KeyFileDisk;
use crate::join::server_trust::ServerProof;
use crate::join::ticket::tests::{sign_csr, test_pki};
use crate::join::{AttemptError, BoxFuture, JoinClient, JoinConfig, JoinError, TicketSource};
use crate::life::lock::{LockHolder, MemoryPcr, NodeLock, PcrBackend, expected_pcr_value};
use crate::life::node::{Node, NodeConfig, Outcome};
use crate::life::state::{Phase, Role, Startup};
use crate::serve::init;
use crate::serve::request::InitSecretHash;
use attest_engine::crypto::default_provider;
use attest_engine::variant::{LockRegister, Variant};
use attest_grpc::{Code, Request, Status};
use attest_keys::{MasterSecret, cluster_id, measurement_secret};

const INIT_SECRET: &[u8] = b"the-init-secret-0123456789abcdef";
/// Master key bytes 0x00..0x1f, salt 0x01.
const KMS: &str = "kms://cluster-kms?key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=&salt=AQ==";

/// Every log line of this test binary (a global subscriber writing into a buffer).
fn captured_logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buf);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Capture(Arc::clone(&writer)))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        buf
    })
}

struct Capture(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "attest-boot-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

struct TestNode {
    node: Arc<Node>,
    pcr: Arc<MemoryPcr>,
    dir: PathBuf,
}

impl Drop for TestNode {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn test_node(name: &str, backend: impl FnOnce(&std::path::Path) -> Arc<dyn ClusterBackend>) -> TestNode {
    test_node_on(name, Arc::new(MemoryPcr::new()), backend)
}

fn test_node_on(
    name: &str,
    pcr: Arc<MemoryPcr>,
    backend: impl FnOnce(&std::path::Path) -> Arc<dyn ClusterBackend>,
) -> TestNode {
    captured_logs();
    let dir = temp_dir(name);
    let lock = Arc::new(NodeLock::open(pcr.clone()).unwrap());
    let config = NodeConfig {
        state_dir: dir.join("state"),
        node_name: "node-1".into(),
        control_plane: false,
        api_server_endpoint: "127.0.0.1:6443".into(),
    };
    let node = Node::new(config, lock, Arc::new(KeyFileDisk::new(&dir.join("run"))), backend(&dir.join("state")));
    TestNode { node: Arc::new(node), pcr, dir }
}

fn request(secret: &[u8]) -> InitRequest {
    InitRequest {
        kms_uri: KMS.into(),
        measurement_salt: vec![0x5a; 32],
        init_secret: secret.to_vec(),
        cluster_name: "demo".into(),
        ..InitRequest::default()
    }
}

async fn run_init(service: &InitService, secret: &[u8]) -> Result<Vec<InitResponse>, Status> {
    service.init(Request::new(request(secret))).await?.message.collect().await
}

fn expected_cluster_id() -> [u8; 32] {
    let master = MasterSecret::from_kms_uri(KMS).unwrap();
    cluster_id(&measurement_secret(&master), &[0x5a; 32])
}

/// A backend that does nothing (fast; for races).
#[derive(Debug, Default)]
struct NoopBackend;
impl ClusterBackend for NoopBackend {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn init(&self, _: &InitParams, log: &mut dyn FnMut(&str)) -> Result<InitOutput, BackendError> {
        log("noop init");
        Ok(InitOutput { kubeconfig: zeroize::Zeroizing::new(b"kubeconfig".to_vec()) })
    }
    fn join(&self, _: &JoinParams, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        log("noop join");
        Ok(())
    }
    fn restart(&self, _: Role, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        log("noop restart");
        Ok(())
    }
}

#[tokio::test]
async fn init_streams_logs_and_returns_kubeconfig_and_cluster_id() {
    let t = test_node("init", |d| Arc::new(DryRunBackend::new(d)));
    let service = InitService::new(t.node.clone(), InitSecretHash::of(INIT_SECRET));
    let messages = run_init(&service, INIT_SECRET).await.unwrap();
    let logs: Vec<String> = messages
        .iter()
        .filter_map(|m| match &m.kind {
            Some(Kind::Log(l)) => Some(String::from_utf8(l.log.clone()).unwrap()),
            _ => None,
        })
        .collect();
    assert!(logs.iter().any(|l| l.contains("kubeadm init not run")), "{logs:?}");
    let Some(Kind::InitSuccess(success)) = &messages.last().unwrap().kind else { panic!("{messages:?}") };
    let id = expected_cluster_id();
    assert_eq!(success.cluster_id, id);
    let master = MasterSecret::from_kms_uri(KMS).unwrap();
    assert_eq!(success.owner_id, init::owner_id(&measurement_secret(&master), &[0x5a; 32]));
    assert!(String::from_utf8(success.kubeconfig.clone()).unwrap().contains("client-certificate-data"));
    assert_eq!(t.pcr.read_bootstrap_pcr().unwrap().as_bytes(), expected_pcr_value(&id));
    let state = t.node.store().load().unwrap().unwrap();
    assert_eq!((state.role, state.phase, state.cluster_id), (Role::ControlPlane, Phase::Bootstrapped, id));
    assert_eq!(*t.node.outcome().borrow(), Some(Outcome::Initialized { cluster_id: id }));
    // The state disk key arrived in the key file and is the derivation for the disk UUID.
    let uuid = std::fs::read_to_string(t.dir.join("run/disk-uuid")).unwrap();
    let key = attest_keys::state_disk_key(&master, uuid.trim()).unwrap();
    assert_eq!(std::fs::read(t.dir.join("run/state-disk.key")).unwrap(), *key);

    // A second init: FAILED_PRECONDITION, nothing extended again.
    let again = run_init(&service, INIT_SECRET).await.unwrap_err();
    assert_eq!(again.code, Code::FailedPrecondition);
    assert_eq!(again.message, init::ALREADY_LOCKED_MESSAGE);
    assert_eq!(t.pcr.extend_count(), 1);

    // A restart: already bootstrapped.
    let restarted = test_node_on("init-restart", t.pcr.clone(), |d| Arc::new(DryRunBackend::new(d)));
    std::fs::create_dir_all(&restarted.dir).unwrap();
    std::fs::rename(t.dir.join("state"), restarted.dir.join("state")).unwrap();
    match restarted.node.startup().unwrap() {
        Ok(Startup::Bootstrapped(s)) => assert_eq!(s.cluster_id, id),
        other => panic!("{other:?}"),
    }

    // No secret in any log line, stream message or state file (the key file is the one place for the key).
    let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
    let ms = measurement_secret(&master);
    for secret in [&hex::encode(INIT_SECRET), &hex::encode(&*key), &hex::encode(&*ms), &hex::encode(master.key())] {
        assert!(!logs.contains(secret.as_str()));
    }
    for secret in [INIT_SECRET, &key[..], &ms[..], master.key()] {
        assert!(!logs.as_bytes().windows(secret.len()).any(|w| w == secret));
        for m in &messages {
            let bytes = prost::Message::encode_to_vec(m);
            assert!(!bytes.windows(secret.len()).any(|w| w == secret));
        }
    }
    assert!(!logs.contains("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"));
}

#[tokio::test]
async fn wrong_secret_is_refused_without_locking() {
    let t = test_node("wrong", |_| Arc::new(NoopBackend));
    let service = InitService::new(t.node.clone(), InitSecretHash::of(INIT_SECRET));
    let e = run_init(&service, b"not-the-secret").await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied);
    let e = run_init(&service, b"").await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied);
    let mut bad = request(INIT_SECRET);
    bad.measurement_salt = vec![0; 16];
    let e = service.init(Request::new(bad)).await.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(!t.node.lock().is_locked());
    assert_eq!(t.pcr.extend_count(), 0);
    assert_eq!(t.node.store().load().unwrap(), None);
}

#[tokio::test]
async fn backend_failure_is_reported_with_its_log_and_state_stays_consistent() {
    let t = test_node("fail", |d| {
        let fake = d.parent().unwrap().join("kubeadm");
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
        std::fs::write(&fake, "#!/bin/sh\necho '[init] starting'\necho '[preflight] port 6443 in use' >&2\nexit 1\n")
            .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Arc::new(KubeadmBackend::new(fake, d).with_dirs(&d.join("k8s"), &d.join("kubelet")))
    });
    let service = InitService::new(t.node.clone(), InitSecretHash::of(INIT_SECRET));
    let messages = run_init(&service, INIT_SECRET).await.unwrap();
    let logs: Vec<String> = messages
        .iter()
        .filter_map(|m| match &m.kind {
            Some(Kind::Log(l)) => Some(String::from_utf8_lossy(&l.log).into_owned()),
            _ => None,
        })
        .collect();
    assert!(logs.contains(&"[init] starting".to_owned()) && logs.contains(&"[preflight] port 6443 in use".to_owned()));
    let Some(Kind::InitFailure(f)) = &messages.last().unwrap().kind else { panic!("{messages:?}") };
    assert!(f.error.contains("exit status: 1") && f.error.contains("port 6443 in use"), "{}", f.error);
    // Locked, state present and marked failed: a restart sees a bootstrapped (failed) node, never a fresh one.
    assert!(t.node.lock().is_locked());
    let state = t.node.store().load().unwrap().unwrap();
    assert_eq!(state.phase, Phase::Failed);
    let restart =
        crate::life::state::check_startup(LockRegister::Pcr(15), &t.pcr.read_bootstrap_pcr().unwrap(), Some(state));
    assert!(matches!(restart, Ok(Startup::Bootstrapped(s)) if s.phase == Phase::Failed));
    assert!(matches!(&*t.node.outcome().borrow(), Some(Outcome::Failed { holder: LockHolder::Init, .. })));
}

#[tokio::test]
async fn crash_between_lock_and_state_write_refuses_on_restart() {
    let pcr = Arc::new(MemoryPcr::new());
    // "Crash": the lock is taken, nothing else happens.
    NodeLock::open(pcr.clone()).unwrap().try_lock(LockHolder::Init, &[1; 32]).unwrap();
    let t = test_node_on("crash", pcr, |_| Arc::new(NoopBackend));
    let startup = t.node.startup().unwrap();
    assert_eq!(startup, Err(super::StartupError::LockedWithoutState));
    assert!(startup.unwrap_err().to_string().contains("locked without state"));
    // Even if someone served init anyway, the lock refuses it.
    let service = InitService::new(t.node.clone(), InitSecretHash::of(INIT_SECRET));
    assert_eq!(run_init(&service, INIT_SECRET).await.unwrap_err().code, Code::FailedPrecondition);
}

/// A join service stand-in: answers with the queued results in order, then with tickets.
#[derive(Debug)]
struct FakeSource {
    script: Mutex<Vec<Result<(), Status>>>,
    pki: crate::cluster::pki::ClusterPki,
    calls: AtomicUsize,
    requests: Mutex<Vec<IssueJoinTicketRequest>>,
    /// The service's variant (default `qemu-vtpm`: its lock register is PCR 15).
    variant: Variant,
    /// The cluster the service's lock register is bound to (default: the ticket's).
    server_cluster: Option<[u8; 32]>,
}

impl FakeSource {
    fn new(script: Vec<Result<(), Status>>) -> FakeSource {
        FakeSource {
            script: Mutex::new(script),
            pki: test_pki(),
            calls: 0.into(),
            requests: Mutex::default(),
            variant: Variant::QemuVtpm,
            server_cluster: None,
        }
    }
}

impl TicketSource for FakeSource {
    fn issue(
        &self,
        request: IssueJoinTicketRequest,
        _tls_key: openssl::pkey::PKey<openssl::pkey::Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let next = {
            let mut s = self.script.lock().unwrap();
            if s.is_empty() { Ok(()) } else { s.remove(0) }
        };
        let ticket = next.map(|()| IssueJoinTicketResponse {
            state_disk_key: vec![0x11; 32],
            measurement_salt: vec![0x22; 32],
            measurement_secret: vec![0x33; 32],
            kubelet_cert: sign_csr(&self.pki, &request.certificate_request),
            api_server_endpoint: "10.0.0.1:6443".into(),
            token: "abcdef.0123456789abcdef".into(),
            discovery_token_ca_cert_hash: crate::cluster::pki::ca_cert_hash(&self.pki.ca.cert).unwrap(),
            ..IssueJoinTicketResponse::default()
        });
        self.requests.lock().unwrap().push(request);
        // A join service on a node of the ticket's cluster (its lock register bound to its cluster id).
        let cluster_id = self.server_cluster.unwrap_or_else(|| cluster_id(&[0x33; 32], &[0x22; 32]));
        let registry = self.variant.info().ak == attest_engine::variant::AkTrust::Registry;
        let proof = ServerProof {
            variant: Some(self.variant),
            ak_digest: registry.then_some([0x44; 32]),
            ak_basis: registry.then_some(attest_engine::variant::AkBasis::CredentialActivation),
            lock: Some(self.variant.info().lock.bound(default_provider(), &cluster_id)),
        };
        Box::pin(async move { ticket.map(|t| (t, proof)).map_err(AttemptError::Status) })
    }
}

fn fast() -> JoinConfig {
    JoinConfig {
        initial_backoff: std::time::Duration::from_millis(5),
        max_backoff: std::time::Duration::from_millis(20),
        max_refusals: 3,
    }
}

#[tokio::test]
async fn join_retries_unavailable_then_joins() {
    let t = test_node("join", |d| Arc::new(DryRunBackend::new(d)));
    let source = Arc::new(FakeSource::new(vec![
        Err(Status::unavailable("key service down")),
        Err(Status::deadline_exceeded("slow")),
    ]));
    let outcome = JoinClient::new(t.node.clone(), source.clone(), fast()).run().await.unwrap();
    let id = cluster_id(&[0x33; 32], &[0x22; 32]);
    assert_eq!(outcome, Outcome::Joined { cluster_id: id });
    assert_eq!(source.calls.load(Ordering::SeqCst), 3);
    let req = &source.requests.lock().unwrap()[0];
    assert!(crate::disk::is_uuid(&req.disk_uuid) && !req.is_control_plane && !req.certificate_request.is_empty());
    assert_eq!(t.pcr.read_bootstrap_pcr().unwrap().as_bytes(), expected_pcr_value(&id));
    let state = t.node.store().load().unwrap().unwrap();
    assert_eq!((state.role, state.phase), (Role::Worker, Phase::Bootstrapped));
    let sd = t.dir.join("state");
    for f in ["kubelet/pki/kubelet.crt", "kubelet/pki/kubelet.key", "ca-cert-hash", "kubeadm-join.yaml"] {
        assert!(sd.join(f).is_file(), "{f}");
    }
    assert_eq!(std::fs::read(t.dir.join("run/state-disk.key")).unwrap(), [0x11; 32]);
}

/// A ticket from a join service that is not a node of the ticket's cluster (its PCR 15 holds another cluster
/// id) is dropped: the node stays unlocked, writes no state and keeps no key.
#[tokio::test]
async fn a_ticket_from_a_join_service_of_another_cluster_is_refused() {
    let t = test_node("other-cluster", |d| Arc::new(DryRunBackend::new(d)));
    let source = Arc::new(FakeSource { server_cluster: Some([0x77; 32]), ..FakeSource::new(vec![]) });
    let e = JoinClient::new(t.node.clone(), source.clone(), fast()).run().await.unwrap_err();
    assert!(matches!(&e, JoinError::GaveUp { attempts: 3, last } if last.contains("not a node of the cluster")), "{e}");
    assert_eq!(source.calls.load(Ordering::SeqCst), 3);
    assert!(!t.node.lock().is_locked());
    assert_eq!(t.pcr.extend_count(), 0);
    assert_eq!(t.node.store().load().unwrap(), None);
    assert!(!t.dir.join("run/state-disk.key").exists());
}

/// A TD without a vTPM (`qemu-tdx`): its lock is RTMR3. It joins through a `qemu-tdx` join service whose
/// RTMR3 is bound to the ticket's cluster, extending its own RTMR3 with SHA-384(cluster id); a service whose
/// RTMR3 is another cluster's is refused and the TD stays unlocked.
#[tokio::test]
async fn a_td_without_a_vtpm_locks_rtmr3_and_checks_the_services_rtmr3() {
    let rtmr3 = LockRegister::Rtmr(3);
    let foreign = test_node_on("td-other", Arc::new(MemoryPcr::of(rtmr3)), |d| Arc::new(DryRunBackend::new(d)));
    let source =
        Arc::new(FakeSource { variant: Variant::QemuTdx, server_cluster: Some([0x77; 32]), ..FakeSource::new(vec![]) });
    let e = JoinClient::new(foreign.node.clone(), source, fast()).run().await.unwrap_err();
    assert!(matches!(&e, JoinError::GaveUp { last, .. } if last.contains("join service's RTMR3 is")), "{e}");
    assert_eq!((foreign.node.lock().is_locked(), foreign.pcr.extend_count()), (false, 0));

    let t = test_node_on("td-join", Arc::new(MemoryPcr::of(rtmr3)), |d| Arc::new(DryRunBackend::new(d)));
    let source = Arc::new(FakeSource { variant: Variant::QemuTdx, ..FakeSource::new(vec![]) });
    let outcome = JoinClient::new(t.node.clone(), source, fast()).run().await.unwrap();
    let id = cluster_id(&[0x33; 32], &[0x22; 32]);
    assert_eq!(outcome, Outcome::Joined { cluster_id: id });
    assert_eq!(t.pcr.read_bootstrap_pcr().unwrap(), rtmr3.bound(default_provider(), &id));
    // A restart in the same boot: bootstrapped; the state and RTMR3 agree.
    let state = t.node.store().load().unwrap().unwrap();
    let again = NodeLock::open(t.pcr.clone()).unwrap();
    assert_eq!(
        crate::life::state::check_startup(rtmr3, &again.initial_pcr(), Some(state.clone())),
        Ok(Startup::Bootstrapped(state))
    );
}

/// The dry-run backend is announced in the node's persisted state.
#[tokio::test]
async fn a_dry_run_join_says_so_in_the_node_state() {
    let t = test_node("dry-run-state", |d| Arc::new(DryRunBackend::new(d)));
    JoinClient::new(t.node.clone(), Arc::new(FakeSource::new(vec![])), fast()).run().await.unwrap();
    assert!(t.node.store().load().unwrap().unwrap().dry_run);
    let real = test_node("real-state", |_| Arc::new(NoopBackend));
    JoinClient::new(real.node.clone(), Arc::new(FakeSource::new(vec![])), fast()).run().await.unwrap();
    assert!(!real.node.store().load().unwrap().unwrap().dry_run);
}

#[tokio::test]
async fn join_gives_up_after_repeated_refusals() {
    let t = test_node("refused", |_| Arc::new(NoopBackend));
    let source = Arc::new(FakeSource::new(vec![Err(Status::permission_denied("PCR 4 mismatch")); 10]));
    let e = JoinClient::new(t.node.clone(), source.clone(), fast()).run().await.unwrap_err();
    assert!(matches!(&e, JoinError::GaveUp { attempts: 3, last } if last.contains("PCR 4 mismatch")), "{e}");
    assert!(!t.node.lock().is_locked());
    // A failed join before the lock leaves nothing behind: no state, no key, PCR 15 untouched.
    assert_eq!(t.node.store().load().unwrap(), None);
    assert!(!t.dir.join("run/state-disk.key").exists());
    assert_eq!(t.pcr.extend_count(), 0);
    assert_eq!(t.node.startup().unwrap(), Ok(Startup::Fresh));
}

/// After a reboot (the in-memory PCR back to zero): a rejoin with another cluster's keys is refused before
/// the disk is touched; this cluster's keys reopen it, re-extend PCR 15 and restart Kubernetes; a node whose
/// bootstrap failed is reset to a fresh one.
#[tokio::test]
async fn rejoin_checks_the_cluster_id_and_reset_forgets_a_failed_node() {
    use crate::life::rejoin::{KeySource, NodeKeys, RejoinError, Rejoiner};
    let t = test_node("rejoin", |_| Arc::new(NoopBackend));
    let outcome = JoinClient::new(t.node.clone(), Arc::new(FakeSource::new(vec![])), fast()).run().await.unwrap();
    let id = cluster_id(&[0x33; 32], &[0x22; 32]);
    assert_eq!(outcome, Outcome::Joined { cluster_id: id });
    std::fs::remove_file(t.dir.join("run/state-disk.key")).unwrap(); // /run is a tmpfs: gone after a reboot

    let rebooted = test_node_on("rejoin-reboot", Arc::new(MemoryPcr::new()), |_| Arc::new(NoopBackend));
    std::fs::create_dir_all(&rebooted.dir).unwrap();
    for d in ["state", "run"] {
        std::fs::rename(t.dir.join(d), rebooted.dir.join(d)).unwrap();
    }
    let Ok(Startup::Rejoin(state)) = rebooted.node.startup().unwrap() else { panic!() };
    let rejoiner = Rejoiner::new(rebooted.node.clone(), state.clone());
    let keys = |secret: u8| NodeKeys {
        state_disk_key: zeroize::Zeroizing::new(vec![0x11; 32]),
        measurement_secret: zeroize::Zeroizing::new(vec![secret; 32]),
    };
    let wrong = rejoiner.finish(keys(0x44), KeySource::RejoinTicket).await.unwrap_err();
    assert!(matches!(wrong, RejoinError::WrongCluster { expected, .. } if expected == id), "{wrong}");
    assert!(!rebooted.dir.join("run/state-disk.key").exists(), "the disk was not touched");
    assert_eq!(rebooted.pcr.extend_count(), 0);
    let done = rejoiner.finish(keys(0x33), KeySource::Recovery).await.unwrap();
    assert_eq!((done.cluster_id, done.via, done.extended), (id, KeySource::Recovery, true));
    assert_eq!(rebooted.pcr.read_bootstrap_pcr().unwrap().as_bytes(), expected_pcr_value(&id));
    assert_eq!(std::fs::read(rebooted.dir.join("run/state-disk.key")).unwrap(), [0x11; 32]);
    assert!(matches!(rejoiner.finish(keys(0x33), KeySource::RejoinTicket).await, Err(RejoinError::AlreadyDone)));

    // A node whose bootstrap failed, after a reboot: reset, then fresh.
    let mut failed = state;
    failed.phase = Phase::Failed;
    rebooted.node.store().persist(&failed).unwrap();
    let fresh_boot = test_node_on("reset", Arc::new(MemoryPcr::new()), |_| Arc::new(NoopBackend));
    std::fs::create_dir_all(&fresh_boot.dir).unwrap();
    for d in ["state", "run"] {
        std::fs::rename(rebooted.dir.join(d), fresh_boot.dir.join(d)).unwrap();
    }
    let Ok(Startup::Reset(s)) = fresh_boot.node.startup().unwrap() else { panic!() };
    crate::life::lifecycle::reset(&fresh_boot.node, &s).unwrap();
    assert_eq!(fresh_boot.node.startup().unwrap(), Ok(Startup::Fresh));
    assert!(!fresh_boot.dir.join("run/state-disk.key").exists());
}

/// Init and join racing on one node through their real code paths, 200 rounds: exactly one of them
/// bootstraps the node, the other is told the lock is taken (init: FAILED_PRECONDITION, join: LockTaken).
/// (The lock itself is raced 1000 times per test in `lock.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_and_join_race_on_one_node() {
    let mut init_wins = 0;
    for round in 0..200 {
        let t = test_node("race", |_| Arc::new(NoopBackend));
        let service = Arc::new(InitService::new(t.node.clone(), InitSecretHash::of(INIT_SECRET)));
        let join = tokio::spawn(JoinClient::new(t.node.clone(), Arc::new(FakeSource::new(vec![])), fast()).run());
        let init = tokio::spawn(async move { run_init(&service, INIT_SECRET).await });
        let (init, join) = (init.await.unwrap(), join.await.unwrap());
        let init_won = init.is_ok();
        let join_won = join.is_ok();
        assert!(init_won ^ join_won, "round {round}: init {init:?}, join {join:?}");
        if init_won {
            init_wins += 1;
            assert!(matches!(join, Err(JoinError::LockTaken)));
        } else {
            assert_eq!(init.unwrap_err().code, Code::FailedPrecondition);
        }
        assert_eq!(t.pcr.extend_count(), 1);
    }
    println!("init won {init_wins} of 200 rounds");
}

/// Stopped right after the lock (PCR 15 extended, no state): with the lock's intent marker in the runtime
/// directory, the next start in the same boot is an interrupted bootstrap (marked for reset: a reboot
/// clears PCR 15), not a node locked for good; a PCR 15 the marker does not explain is still refused.
#[test]
fn a_lock_interrupted_before_its_state_is_marked_for_reset() {
    let pcr = Arc::new(MemoryPcr::new());
    let dir = temp_dir("intent");
    let run = dir.join("run");
    NodeLock::open(pcr.clone()).unwrap().with_intent_dir(&run).try_lock(LockHolder::Join, &[1; 32]).unwrap();
    let restart = |with_marker: bool| {
        let mut lock = NodeLock::open(pcr.clone()).unwrap();
        if with_marker {
            lock = lock.with_intent_dir(&run);
        }
        let config = NodeConfig {
            state_dir: dir.join("state"),
            node_name: "node-1".into(),
            control_plane: false,
            api_server_endpoint: "127.0.0.1:6443".into(),
        };
        Node::new(config, Arc::new(lock), Arc::new(KeyFileDisk::new(&run)), Arc::new(NoopBackend)).startup().unwrap()
    };
    assert_eq!(restart(true), Ok(Startup::Interrupted { cluster_id: [1; 32], state: None }));
    assert_eq!(restart(false), Err(super::StartupError::LockedWithoutState));
    let _ = std::fs::remove_dir_all(&dir);
}
