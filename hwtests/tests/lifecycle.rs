//! A node's whole life on a swtpm, over real aTLS on 127.0.0.1 (docs/ARCHITECTURE.md, "Node lifecycle"):
//! init → the verify service attests the node (`attest verify --cluster-id`, right and wrong id) → a second
//! init refused → reboot (the swtpm power-cycled: PCR 15 back to zero) → rejoin refused by a join service
//! whose measurements changed (the node stays down, the refusal recorded in its state) → recovery with a
//! wrong master secret refused, with the right one the disk reopens, PCR 15 is re-extended, the lock holds →
//! another reboot → rejoin through a join service that verifies the node's attestation.
//!
//! The state disk is a LUKS2 header on a file (`cryptsetup`; the key-file disk where cryptsetup is missing).
//! Mapping and mounting need a device mapper: `luks_disk_is_mapped_and_mounted` does that where
//! a device mapper exists and skips with a notice otherwise.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::{AtlsAcceptor, AtlsConnector, AttestationIssuer, EngineValidator, Verifier};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_bootstrapper::JoinServiceTrust;
use attest_bootstrapper::cluster::dryrun::DryRunBackend;
use attest_bootstrapper::disk::luks::LuksDisk;
use attest_bootstrapper::disk::{DiskSetup, HeaderState, KeyFileDisk};
use attest_bootstrapper::join::endpoints::{AtlsCall, FailoverSource, StaticEndpoints};
use attest_bootstrapper::life::lifecycle::{RejoinSetup, rejoin};
use attest_bootstrapper::life::lock::expected_pcr_value;
use attest_bootstrapper::life::rejoin::{KeySource, RejoinError};
use attest_bootstrapper::serve::verifysvc::serve_verify;
use attest_bootstrapper::{
    BOOTSTRAP_PCR, InitSecretHash, InitService, JoinConfig, Node, NodeConfig, NodeLock, PcrBackend, Startup,
};
use attest_cli::verifysvc::{VerifyVia, verify_via_service, with_cluster_id};
use attest_engine::variant::{AkBasis, PcrExpectation, PcrPolicy, StaticAkRegistry, Variant};
use attest_grpc::{ChannelConfig, Code, Metadata, Request, Response, Router, Server, ServerConfig};
use attest_hwtests::Swtpm;
use attest_hwtests::support::validator;
use attest_keyservice::{MasterSecret, cluster_id, measurement_secret, state_disk_key};
use attest_proto::init::{InitRequest, init_response::Kind};
use attest_proto::join::{IssueRejoinTicketRequest, IssueRejoinTicketResponse};
use attest_proto::paths;
use attest_proto::recover::{RecoverMessage, RecoverResponse};
use attest_registration::EkCaBundle;
use attest_registration::ak_digest;

const INIT_SECRET: &[u8] = b"hwtests-lifecycle-secret-0123456";
const KMS: &str = "kms://cluster-kms?key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=&salt=AQ==";
/// Another cluster's master secret.
const OTHER_KMS: &str = "kms://cluster-kms?key=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=&salt=AQ==";
const SALT: [u8; 32] = [0x42; 32];

/// A scratch directory removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("attest-hw-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn issuer_on(sw: &Swtpm) -> Arc<QemuVtpmIssuer> {
    Arc::new(QemuVtpmIssuer::new(Tpm::open(&sw.tcti()).expect("open TPM"), AkConfig::default()).expect("issuer"))
}

fn pcr15(issuer: &QemuVtpmIssuer) -> [u8; 32] {
    issuer.with_tpm(|tpm, _| {
        *tpm.read_pcrs(PcrMask::from_indices(&[BOOTSTRAP_PCR]).unwrap()).unwrap().get(BOOTSTRAP_PCR).unwrap()
    })
}

/// The node as a freshly started bootstrapper builds it: lock from PCR 15, the disk, a dry-run backend.
fn node(issuer: &Arc<QemuVtpmIssuer>, dir: &Path, disk: Arc<dyn DiskSetup>) -> Arc<Node> {
    let lock = Arc::new(NodeLock::open(issuer.clone() as Arc<dyn PcrBackend>).expect("read PCR 15"));
    let config = NodeConfig {
        state_dir: dir.join("state"),
        node_name: "node-1".into(),
        control_plane: true,
        api_server_endpoint: "127.0.0.1:6443".into(),
    };
    Arc::new(Node::new(config, lock, disk, Arc::new(DryRunBackend::new(&dir.join("state")))))
}

fn disk(dir: &Path) -> Arc<dyn DiskSetup> {
    if attest_bootstrapper::cluster::process::find_on_path("cryptsetup").is_some() {
        let image = dir.join("state-disk.img");
        if !image.exists() {
            std::fs::File::create(&image).unwrap().set_len(20 * 1024 * 1024).unwrap();
        }
        Arc::new(LuksDisk::header_only(&image))
    } else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "cryptsetup missing (scripts/setup.sh installs it)");
        eprintln!("NOTICE: cryptsetup not installed; the lifecycle runs on a key-file disk");
        Arc::new(KeyFileDisk::new(&dir.join("run")))
    }
}

/// A verifier trusting exactly `issuer`'s AK with `pcrs`.
fn verifier(issuer: &QemuVtpmIssuer, pcrs: attest_trust::Expected) -> Arc<Verifier> {
    let digest = ak_digest(issuer.attestation_key().tpm2b_public()).unwrap();
    let registry = Arc::new(StaticAkRegistry(vec![(digest, AkBasis::Pinned)]));
    Arc::new(Verifier::new(vec![Arc::new(EngineValidator::new(validator(registry, pcrs)))]))
}

/// `attest verify`'s validator of a `qemu-vtpm` node: its AKs from `registry`, `pcrs` expected.
fn node_validator(
    registry: Arc<attest_registration::FileAkRegistry>,
    pcrs: attest_trust::Expected,
) -> attest_cli::node::NodeValidator {
    attest_cli::node::NodeValidator { validator: validator(registry, pcrs), test_roots: None }
}

/// The default join measurements' rule: PCR 15 = 0 (a node bound to no cluster).
fn pcr15_zero() -> attest_trust::Expected {
    PcrPolicy { entries: vec![PcrExpectation { index: 15, expected: [0; 32], warn_only: false }] }.into()
}

async fn init(node: &Arc<Node>) -> Result<Vec<attest_proto::init::InitResponse>, attest_grpc::Status> {
    let service = InitService::new(Arc::clone(node), InitSecretHash::of(INIT_SECRET));
    let request = InitRequest {
        kms_uri: KMS.into(),
        measurement_salt: SALT.to_vec(),
        init_secret: INIT_SECRET.to_vec(),
        cluster_name: "hw".into(),
        ..InitRequest::default()
    };
    service.init(Request::new(request)).await?.message.collect().await
}

/// The TPM of the control-plane node a stand-in join service runs on: its own swtpm (EK certificate from the
/// local EK CA), PCR 15 holding the cluster id (its node is the cluster's).
struct ServiceTpm {
    _sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
    ek: Vec<u8>,
}

impl ServiceTpm {
    fn start(cluster: &[u8; 32]) -> ServiceTpm {
        let sw = Swtpm::start().expect("swtpm");
        let mut tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let ek = tpm.ek_certificate().expect("EK certificate");
        tpm.extend_pcr(BOOTSTRAP_PCR, cluster).unwrap();
        let issuer =
            Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer").with_ek_certificate(ek.clone()));
        ServiceTpm { _sw: sw, issuer, ek }
    }

    /// How a node verifies this service: its PCRs 0–7 (a freshly started swtpm's, the same on every TPM
    /// here), its AK by credential activation against the swtpm EK CA, PCR 15 checked after the ticket.
    fn trust(&self) -> Arc<JoinServiceTrust> {
        let ek_ca = EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap();
        attest_hwtests::support::join_service_trust(&self.issuer, ek_ca)
    }
}

/// A stand-in join service on mutual aTLS: it attests with `service`'s TPM (and serves credential activation
/// for that TPM's AK), verifies the node with `verifier` and answers IssueRejoinTicket with the keys of `kms`
/// (a refused node never gets past the handshake).
async fn join_service(verifier: Arc<Verifier>, kms: &'static str, service: &ServiceTpm) -> (Server, SocketAddr) {
    let mut router = Router::new();
    router.add_service(Arc::new(ActivationService::new(Arc::clone(&service.issuer), service.ek.clone())));
    router.unary(paths::JOIN_ISSUE_REJOIN_TICKET, move |r: Request<IssueRejoinTicketRequest>| async move {
        assert!(r.peer::<attest_atls::PeerAttestation>().is_some(), "only attested peers reach the handler");
        let master = MasterSecret::from_kms_uri(kms).unwrap();
        Ok(Response::new(IssueRejoinTicketResponse {
            state_disk_key: state_disk_key(&master, &r.message.disk_uuid).unwrap().to_vec(),
            measurement_secret: measurement_secret(&master).to_vec(),
        }))
    });
    let server = Server::new(router, ServerConfig::default());
    let issuer = Arc::clone(&service.issuer) as Arc<dyn AttestationIssuer>;
    let acceptor = Arc::new(AtlsAcceptor::new(Some(issuer), Some(verifier)).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = attest_atls::grpc::serve(&server, listener, acceptor).unwrap();
    (server, addr)
}

fn failover(issuer: &Arc<QemuVtpmIssuer>, endpoints: Vec<SocketAddr>, service: &ServiceTpm) -> Arc<FailoverSource> {
    let call = AtlsCall::new(issuer.clone() as Arc<dyn AttestationIssuer>, service.trust())
        .unwrap()
        .with_timeouts(Duration::from_secs(30), Duration::from_secs(5));
    Arc::new(FailoverSource::new(Arc::new(StaticEndpoints(endpoints)), Arc::new(call)))
}

fn fast() -> JoinConfig {
    JoinConfig { initial_backoff: Duration::from_millis(10), max_backoff: Duration::from_millis(50), max_refusals: 2 }
}

fn registry_file(dir: &Path, issuer: &QemuVtpmIssuer) -> Arc<attest_registration::FileAkRegistry> {
    let digest = ak_digest(issuer.attestation_key().tpm2b_public()).unwrap();
    let path = dir.join("ak-registry.json");
    std::fs::write(
        &path,
        format!("{{\"version\": 1, \"aks\": [{{\"digest\": \"{}\", \"basis\": \"pinned\"}}]}}", hex::encode(digest)),
    )
    .unwrap();
    Arc::new(attest_registration::FileAkRegistry::open(&path).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_verify_reboot_refused_rejoin_recovery_and_rejoin() {
    let tmp = Scratch::new("lifecycle");
    let dir = tmp.path().to_owned();
    let master = MasterSecret::from_kms_uri(KMS).unwrap();
    let id = cluster_id(&measurement_secret(&master), &SALT);

    eprintln!("lifecycle: step 1 init");
    // 1. Init.
    let sw = Swtpm::start().expect("swtpm");
    let issuer = issuer_on(&sw);
    let n = node(&issuer, &dir, disk(&dir));
    assert_eq!(n.startup().unwrap(), Ok(Startup::Fresh));
    let messages = init(&n).await.unwrap();
    assert!(matches!(messages.last().unwrap().kind, Some(Kind::InitSuccess(_))), "{messages:?}");
    assert_eq!(pcr15(&issuer), expected_pcr_value(&id));
    let header = n.disk().header_state().unwrap();
    if let HeaderState::Present(s) = &header {
        assert_eq!(s.cluster_id, id, "the node state is in the LUKS2 header");
    }

    eprintln!("lifecycle: step 2 verify");
    // 2. The verify service: attest verify --cluster-id, right and wrong.
    let servers = serve_verify(
        issuer.clone() as Arc<dyn AttestationIssuer>,
        Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()),
        Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()),
    )
    .unwrap();
    let registry = registry_file(&dir, &issuer);
    for (via, addr) in [(VerifyVia::Grpc, servers.grpc_addr.unwrap()), (VerifyVia::Http, servers.http_addr.unwrap())] {
        let (reg, right) = (registry.clone(), with_cluster_id(Variant::QemuVtpm, pcr15_zero(), Some(&id)));
        let (status, verdict, result) =
            tokio::task::spawn_blocking(move || verify_via_service(addr, via, node_validator(reg, right)))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(status, attest_cli::Status::Accepted, "{via:?}: {verdict:?}");
        assert!(verdict.unwrap().pcrs.contains(&(15, attest_engine::variant::PcrOutcome::Match)));
        // The verify service's verdict as the result object (schema attest-result/1).
        let result = result.expect("a result object");
        assert_eq!((result["schema"].as_str(), result["accepted"].as_bool()), (Some("attest-result/1"), Some(true)));
        let (reg, wrong) = (registry.clone(), with_cluster_id(Variant::QemuVtpm, pcr15_zero(), Some(&[0xee; 32])));
        let (status, verdict, result) =
            tokio::task::spawn_blocking(move || verify_via_service(addr, via, node_validator(reg, wrong)))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(status, attest_cli::Status::Rejected, "{via:?}: a wrong cluster id must be refused");
        let (attested, why) = verdict.unwrap_err();
        assert!(attested && why.contains("PCR 15"), "{why}");
        let result = result.expect("a result object");
        assert_eq!(
            (result["accepted"].as_bool(), result["failure"]["check"].as_str()),
            (Some(false), Some("pcr_policy"))
        );
        // Without --cluster-id, the default join measurements (PCR 15 = 0) refuse a bootstrapped node.
        let (reg, zero) = (registry.clone(), pcr15_zero());
        let (status, ..) =
            tokio::task::spawn_blocking(move || verify_via_service(addr, via, node_validator(reg, zero)))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(status, attest_cli::Status::Rejected);
    }
    servers.shutdown(Duration::from_secs(1)).await;

    eprintln!("lifecycle: step 3 second init");
    // 3. A second init on the locked node.
    let again = init(&n).await.unwrap_err();
    assert_eq!(again.code, Code::FailedPrecondition);
    assert_eq!(pcr15(&issuer), expected_pcr_value(&id), "PCR 15 untouched");

    eprintln!("lifecycle: step 4 reboot");
    // 4. Reboot: PCR 15 = 0; the node knows from its disk that it was bootstrapped.
    drop(n);
    drop(issuer);
    let sw = sw.reboot().expect("reboot swtpm");
    let issuer = issuer_on(&sw);
    assert_eq!(pcr15(&issuer), [0; 32]);
    let n = node(&issuer, &dir, disk(&dir));
    let Ok(Startup::Rejoin(state)) = n.startup().unwrap() else { panic!("{:?}", n.startup()) };
    assert_eq!(state.cluster_id, id);

    eprintln!("lifecycle: step 5 refused rejoin");
    // 5. A join service whose measurements changed (expects another PCR 9): refused, the node stays down.
    let changed = PcrPolicy {
        entries: vec![
            PcrExpectation { index: 9, expected: [0x99; 32], warn_only: false },
            PcrExpectation { index: 15, expected: [0; 32], warn_only: false },
        ],
    };
    let service_tpm = ServiceTpm::start(&id);
    let (strict, strict_addr) = join_service(verifier(&issuer, changed.into()), KMS, &service_tpm).await;
    let dead: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let setup = RejoinSetup {
        source: Some(failover(&issuer, vec![dead, strict_addr], &service_tpm)),
        recover: None,
        config: fast(),
    };
    let refused = rejoin(n.clone(), state.clone(), issuer.clone() as Arc<dyn AttestationIssuer>, setup, |_| {}).await;
    match &refused {
        Err(RejoinError::Refused { last, .. }) => assert!(last.contains("alert"), "{last}"),
        other => panic!("a node with changed measurements must be refused: {other:?}"),
    }
    strict.shutdown(Duration::from_secs(1)).await;
    assert_eq!(pcr15(&issuer), [0; 32], "nothing extended");
    if let HeaderState::Present(s) = n.disk().header_state().unwrap() {
        assert!(s.last_refusal.as_deref().unwrap().contains("rejoin refused"), "{s:?}");
    }

    eprintln!("lifecycle: step 6 recovery");
    // 6. Recovery (no join service reachable): a wrong master secret is refused, the right one recovers.
    let n = node(&issuer, &dir, disk(&dir));
    let Ok(Startup::Rejoin(state)) = n.startup().unwrap() else { panic!() };
    assert!(state.last_refusal.is_some() || matches!(n.disk().header_state().unwrap(), HeaderState::Unsupported));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let recover_addr = listener.local_addr().unwrap();
    let setup = RejoinSetup { source: None, recover: Some(listener), config: fast() };
    let waiting = tokio::spawn(rejoin(n.clone(), state, issuer.clone() as Arc<dyn AttestationIssuer>, setup, |_| {}));
    let operator = AtlsConnector::new(None, Some(verifier(&issuer, pcr15_zero()))).unwrap();
    let recover = |kms: &'static str| {
        let operator = operator.clone();
        async move {
            let (channel, peer) =
                attest_atls::grpc::connect(recover_addr, &operator, ChannelConfig::default()).await.unwrap();
            assert!(peer.is_some(), "the node attested before anything was sent");
            channel
                .unary::<_, RecoverResponse>(
                    paths::RECOVER_RECOVER,
                    RecoverMessage { kms_uri: kms.into(), storage_uri: String::new() },
                    Metadata::new(),
                    Some(Duration::from_secs(60)),
                )
                .await
        }
    };
    let wrong = recover(OTHER_KMS).await.unwrap_err();
    assert_eq!(wrong.code, Code::PermissionDenied, "{wrong}");
    assert_eq!(pcr15(&issuer), [0; 32]);
    recover(KMS).await.unwrap();
    let rejoined = waiting.await.unwrap().unwrap();
    assert_eq!((rejoined.via, rejoined.extended, rejoined.cluster_id), (KeySource::Recovery, true, id));
    assert_eq!(pcr15(&issuer), expected_pcr_value(&id), "PCR 15 re-extended with the cluster id");
    assert_eq!(init(&n).await.unwrap_err().code, Code::FailedPrecondition, "the lock holds after recovery");

    eprintln!("lifecycle: step 7 rejoin");
    // 7. Another reboot; a join service that verifies the node (PCR 15 = 0, its AK) issues the rejoin ticket.
    drop(n);
    drop(issuer);
    let sw = sw.reboot().expect("reboot swtpm");
    let issuer = issuer_on(&sw);
    let n = node(&issuer, &dir, disk(&dir));
    let Ok(Startup::Rejoin(state)) = n.startup().unwrap() else { panic!() };
    let (service, addr) = join_service(verifier(&issuer, pcr15_zero()), KMS, &service_tpm).await;
    let setup =
        RejoinSetup { source: Some(failover(&issuer, vec![dead, addr], &service_tpm)), recover: None, config: fast() };
    let rejoined = rejoin(n.clone(), state, issuer.clone() as Arc<dyn AttestationIssuer>, setup, |_| {}).await.unwrap();
    assert_eq!((rejoined.via, rejoined.cluster_id), (KeySource::RejoinTicket, id));
    assert_eq!(pcr15(&issuer), expected_pcr_value(&id));
    if let HeaderState::Present(s) = n.disk().header_state().unwrap() {
        assert_eq!(s.last_refusal, None, "a successful rejoin clears the refusal");
    }
    service.shutdown(Duration::from_secs(1)).await;
    drop(sw);
}

/// The whole LUKS2 path on a loop device: format with integrity where available, map, mkfs, mount, and a
/// reopen after closing. Needs root and a device mapper; skips with a notice elsewhere.
#[test]
fn luks_disk_is_mapped_and_mounted() {
    if !attest_bootstrapper::disk::luks::device_mapper_available()
        || attest_bootstrapper::cluster::process::find_on_path("cryptsetup").is_none()
    {
        eprintln!("NOTICE: no device mapper or no cryptsetup: LUKS2 mapping, mkfs and mount not tested here");
        return;
    }
    let tmp = Scratch::new("luks");
    let image = tmp.path().join("disk.img");
    std::fs::File::create(&image).unwrap().set_len(64 * 1024 * 1024).unwrap();
    let out = std::process::Command::new("losetup").args(["--find", "--show"]).arg(&image).output().unwrap();
    assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    let loop_dev = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let mount = tmp.path().join("state");
    let name = format!("attest-hwtest-{}", std::process::id());
    let disk = LuksDisk::new(Path::new(&loop_dev)).with_mapper_name(&name).with_mount(&mount);
    let cleanup = || {
        let _ = std::process::Command::new("umount").arg(&mount).status();
        let _ = std::process::Command::new("cryptsetup").args(["close", &name]).status();
    };
    let key = [0x3c; 32];
    let report = disk.setup(&key);
    let result = (|| {
        let report = report?;
        eprintln!("{report}");
        std::fs::write(mount.join("node-state.json"), b"{}").map_err(|source| {
            attest_bootstrapper::disk::DiskError::File(attest_bootstrapper::atomic::FileError {
                path: mount.clone(),
                source,
            })
        })?;
        cleanup();
        disk.reopen(&key)
    })();
    let kept = mount.join("node-state.json").is_file();
    cleanup();
    let _ = std::process::Command::new("losetup").args(["-d", &loop_dev]).status();
    result.unwrap();
    assert!(kept, "data written before the close is there after the reopen");
}
