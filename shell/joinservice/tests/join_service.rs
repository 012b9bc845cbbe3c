//! The join service's handlers with real collaborators and a stand-in for the aTLS layer: a key service
//! spawned in-process (h2c on 127.0.0.1), the dry-run token issuer (or a failing one), a generated kubeadm
//! PKI, and a `PeerAttestation` placed on the request as `atls::grpc::serve` does. The swtpm-backed end-to-end
//! run over real aTLS is `hwtests/tests/join_service.rs`; the fixture both build on is `join_support`.

mod join_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use attest_grpc::{Channel, ChannelConfig, Code, Metadata, Request, Response, Router, Server, ServerConfig, Status};
use attest_joinservice::ssh::SshCa;
use attest_joinservice::{JoinService, KeyServiceClient, Metrics, MetricsServer, RefusalReason};
use attest_k8s::issuer::IssueFuture;
use attest_k8s::{ApiStatus, BootstrapToken, ClusterCa, DryRunTokenIssuer, K8sError, TokenIssuer};
use attest_keyservice::{MasterSecret, derive_data_key, measurement_secret, state_disk_key};
use attest_proto::join::{IssueJoinTicketRequest, IssueRejoinTicketRequest};
use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;
use join_support::{
    API_SERVER_ENDPOINT, Captured, MEASUREMENT_SALT, MeasurementsSigner, TestNode, admit, csr, fixture, kubernetes,
    ticket_settings,
};
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::x509::X509;
use zeroize::Zeroizing;

const DISK_UUID: &str = "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const MASTER_KEY: [u8; 32] = [0x42; 32];
const MASTER_SALT: [u8; 32] = [0x17; 32];

fn master() -> MasterSecret {
    MasterSecret::new(Zeroizing::new(MASTER_KEY.to_vec()), Zeroizing::new(MASTER_SALT.to_vec())).unwrap()
}

async fn key_service() -> (Server, SocketAddr) {
    join_support::key_service(master()).await
}

/// A key service that answers after `delay`.
async fn slow_key_service(delay: Duration) -> (Server, SocketAddr) {
    let mut router = Router::new();
    router.unary(paths::KMS_GET_DATA_KEY, move |req: Request<GetDataKeyRequest>| async move {
        tokio::time::sleep(delay).await;
        Ok::<_, Status>(Response::new(GetDataKeyResponse { data_key: vec![0; req.message.length as usize] }))
    });
    join_support::serve_kms(router).await
}

fn closed_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// A token issuer that fails with a given error, or counts deletions of the tokens it created. With a
/// `create_delay`, `create` records the token as created at once and answers only after the delay (an API
/// server that has stored the Secret but whose answer is still on its way).
#[derive(Debug, Default)]
struct ScriptedIssuer {
    fail_with: Option<u16>,
    create_delay: Duration,
    created: Mutex<Vec<String>>,
    deleted: Mutex<Vec<String>>,
}

impl TokenIssuer for ScriptedIssuer {
    fn create(&self, ttl: Duration) -> IssueFuture<'_, BootstrapToken> {
        Box::pin(async move {
            if let Some(code) = self.fail_with {
                let s = ApiStatus { code, reason: "Scripted".into(), message: "scripted failure".into() };
                return Err(if code == 403 { K8sError::Forbidden(s) } else { K8sError::ServerError(s) });
            }
            let t = BootstrapToken::generate(ttl)?;
            self.created.lock().unwrap().push(t.id().to_owned());
            tokio::time::sleep(self.create_delay).await;
            Ok(t)
        })
    }
    fn delete<'a>(&'a self, id: &'a str) -> IssueFuture<'a, ()> {
        Box::pin(async move {
            self.deleted.lock().unwrap().push(id.to_owned());
            Ok(())
        })
    }
    fn kind(&self) -> &'static str {
        "scripted"
    }
}

fn host_key() -> Vec<u8> {
    // An Ed25519 SSH public key in wire format.
    let key = PKey::generate_ed25519().unwrap();
    let raw = key.raw_public_key().unwrap();
    let mut wire = Vec::new();
    for s in [&b"ssh-ed25519"[..], &raw] {
        wire.extend_from_slice(&u32::try_from(s.len()).unwrap().to_be_bytes());
        wire.extend_from_slice(s);
    }
    wire
}

/// A join of `node` (its own identity; its CSR for the key it proved in the handshake) with [`DISK_UUID`].
fn join_request(node: &str, control_plane: bool) -> Request<IssueJoinTicketRequest> {
    join_request_of(&TestNode::new(node), control_plane)
}

fn join_request_of(node: &TestNode, control_plane: bool) -> Request<IssueJoinTicketRequest> {
    let mut r = Request::new(IssueJoinTicketRequest {
        disk_uuid: DISK_UUID.into(),
        certificate_request: node.csr(),
        is_control_plane: control_plane,
        host_public_key: host_key(),
        host_certificate_principals: vec![node.name.clone()],
    });
    r.peer = Some(Arc::new(node.peer()));
    r
}

fn rejoin_request(node: &TestNode, disk: &str) -> Request<IssueRejoinTicketRequest> {
    let mut r = Request::new(IssueRejoinTicketRequest { disk_uuid: disk.into() });
    r.peer = Some(Arc::new(node.peer()));
    r
}

/// A fixture whose join service admits control-plane nodes by the operator's admissions in `dir/admissions`,
/// signed by the returned signer.
fn admitting_fixture(kms: SocketAddr) -> (join_support::Fixture, MeasurementsSigner, std::path::PathBuf) {
    let dir = join_support::temp_dir("operator");
    let signer = MeasurementsSigner::new(&dir);
    let key = attest_measurements::VerifyingKey::from_pem(&std::fs::read(&signer.public_key).unwrap()).unwrap();
    let admissions = dir.join("admissions");
    let f =
        join_support::fixture_with(kms, Duration::from_secs(5), None, |s| s.with_admissions(admissions.clone(), key));
    (f, signer, admissions)
}

fn token_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_worker_join_fills_every_field() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let t = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap().message;

    assert_eq!(t.state_disk_key, state_disk_key(&master(), DISK_UUID).unwrap().to_vec());
    assert_eq!(t.measurement_secret, measurement_secret(&master()).to_vec());
    assert_eq!(t.measurement_salt, MEASUREMENT_SALT);
    assert_eq!(t.api_server_endpoint, API_SERVER_ENDPOINT);
    assert_eq!(t.discovery_token_ca_cert_hash, f.ca.discovery_hash());
    let spki = f.ca.certificate().public_key().unwrap().public_key_to_der().unwrap();
    assert_eq!(t.discovery_token_ca_cert_hash, format!("sha256:{}", hex::encode(openssl::sha::sha256(&spki))));
    assert!(t.control_plane_files.is_empty());
    assert_eq!(t.kubernetes_version, "v1.31.1");
    assert_eq!(t.kubernetes_components, kubernetes().components);

    // The kubelet certificate: signed by the cluster CA, for this node, a client certificate.
    let cert = X509::from_der(&t.kubelet_cert).unwrap();
    assert!(cert.verify(&f.ca.certificate().public_key().unwrap()).unwrap());
    let cn = cert.subject_name().entries_by_nid(Nid::COMMONNAME).next().unwrap().data().to_string().unwrap();
    assert_eq!(cn, "system:node:worker-1");
    let text = String::from_utf8(cert.to_text().unwrap()).unwrap();
    assert!(text.contains("TLS Web Client Authentication") && text.contains("CA:FALSE"), "{text}");

    // The token is the one whose Secret manifest the dry-run issuer wrote.
    let (id, secret) = t.token.split_once('.').unwrap();
    assert_eq!((id.len(), secret.len()), (6, 16));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.tokens_dir.join(format!("bootstrap-token-{id}.json"))).unwrap())
            .unwrap();
    assert_eq!(manifest["metadata"]["name"], format!("bootstrap-token-{id}"));

    // SSH: the CA derived from the key service's `ca_emergency_ssh` key; a host certificate for our key.
    let seed = derive_data_key(&master(), "ca_emergency_ssh", 32).unwrap();
    assert_eq!(t.authorized_ca_public_key, SshCa::from_seed(&seed).unwrap().authorized_key());
    assert!(t.host_certificate.starts_with(b"ssh-ed25519-cert-v01@openssh.com "));

    assert_eq!(f.metrics.issued_count(), (1, 0));
}

#[tokio::test]
async fn cluster_wide_keys_are_fetched_once_and_disk_keys_every_join() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let a = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap().message;
    assert_eq!(f.metrics.key_service_calls(), (3, 0));
    let mut other = join_request("worker-2", false);
    other.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    let b = f.service.issue_join_ticket(other).await.unwrap().message;
    // The second join asked the key service for its own disk key only.
    assert_eq!(f.metrics.key_service_calls(), (4, 0));
    assert_eq!(b.state_disk_key, state_disk_key(&master(), "6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap().to_vec());
    assert_ne!(a.state_disk_key, b.state_disk_key);
    // The reused keys are exactly what the key service derives.
    assert_eq!(b.measurement_secret, measurement_secret(&master()).to_vec());
    assert_eq!(b.measurement_secret, a.measurement_secret);
    let seed = derive_data_key(&master(), "ca_emergency_ssh", 32).unwrap();
    assert_eq!(b.authorized_ca_public_key, SshCa::from_seed(&seed).unwrap().authorized_key());
    assert_eq!(f.metrics.issued_count(), (2, 0));
}

#[tokio::test]
async fn a_failed_cluster_key_fetch_is_not_kept() {
    // The key service is down: every join asks again for all three keys, and each is refused.
    let f = fixture(closed_port(), Duration::from_secs(5), None);
    for i in 1..=2u64 {
        let status = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap_err();
        assert_eq!(status.code, Code::Unavailable);
        assert_eq!(f.metrics.key_service_calls(), (0, 3 * i));
    }
    assert_eq!(f.metrics.issued_count(), (0, 0));
}

#[tokio::test]
async fn control_plane_files_only_for_control_plane_nodes() {
    let (_kms, addr) = key_service().await;
    let (f, operator, admissions) = admitting_fixture(addr);
    let cp = TestNode::new("cp-2");
    admit(&operator, &admissions, &cp.identity, &cp.name);
    let t = f.service.issue_join_ticket(join_request_of(&cp, true)).await.unwrap().message;
    let names: Vec<_> = t.control_plane_files.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ca.crt",
            "ca.key",
            "sa.key",
            "sa.pub",
            "front-proxy-ca.crt",
            "front-proxy-ca.key",
            "etcd/ca.crt",
            "etcd/ca.key"
        ]
    );
    for file in &t.control_plane_files {
        assert_eq!(file.data, std::fs::read(f.dir.join("pki").join(&file.name)).unwrap(), "{}", file.name);
    }
    // Without the control-plane files, a control-plane join is FAILED_PRECONDITION and leaves no token;
    // a worker join still works.
    std::fs::remove_file(f.dir.join("pki/sa.key")).unwrap();
    let g = {
        let partial = Arc::new(ClusterCa::load(&f.dir.join("pki")).unwrap());
        let metrics = Arc::new(Metrics::new());
        let tokens = Arc::new(DryRunTokenIssuer::new(f.dir.join("tokens2")).unwrap());
        let keys =
            KeyServiceClient::new(addr, join_support::kms_connector(), Duration::from_secs(5), Arc::clone(&metrics));
        JoinService::new(keys, tokens, partial, ticket_settings(&f.dir.join("salt")), metrics)
    };
    let e = g.issue_join_ticket(join_request("cp-3", true)).await.unwrap_err();
    assert_eq!(e.code, Code::FailedPrecondition, "{e}");
    assert!(e.message.contains("sa.key"), "{e}");
    assert!(token_files(&f.dir.join("tokens2")).is_empty());
    assert!(g.issue_join_ticket(join_request("w-3", false)).await.is_ok());
}

#[tokio::test]
async fn key_service_down_is_unavailable_and_the_token_is_deleted() {
    let f = fixture(closed_port(), Duration::from_secs(2), None);
    let e = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable, "{e}");
    assert!(e.message.contains("key service unavailable"), "{e}");
    // The dry-run issuer had written the token's manifest; it is gone again.
    assert!(token_files(&f.tokens_dir).is_empty(), "{:?}", token_files(&f.tokens_dir));
    assert_eq!(f.metrics.refused_count(RefusalReason::KeyServiceUnavailable), 1);

    // With a scripted issuer: exactly the created token was deleted.
    let issuer = Arc::new(ScriptedIssuer::default());
    let g = fixture(closed_port(), Duration::from_secs(2), Some(issuer.clone()));
    let e = g.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable);
    assert_eq!(*issuer.created.lock().unwrap(), *issuer.deleted.lock().unwrap());
    assert_eq!(issuer.created.lock().unwrap().len(), 1);

    // Rejoin (the failed join bound the disk to worker-1 before asking for keys): the same mapping.
    let r = rejoin_request(&TestNode::new("worker-1"), DISK_UUID);
    assert_eq!(g.service.issue_rejoin_ticket(r).await.unwrap_err().code, Code::Unavailable);
}

/// Regression (found by benches/tests/join_hostile.rs): a call cancelled while its token is being created — the
/// client reset the stream or went away — must not leave the token behind.
#[tokio::test]
async fn a_call_cancelled_while_its_token_is_created_leaves_no_token() {
    let (_kms, addr) = key_service().await;
    let issuer = Arc::new(ScriptedIssuer { create_delay: Duration::from_millis(500), ..ScriptedIssuer::default() });
    let f = fixture(addr, Duration::from_secs(5), Some(issuer.clone()));
    for _ in 0..3 {
        let created_before = issuer.created.lock().unwrap().len();
        let call = f.service.issue_join_ticket(join_request("worker-1", false));
        tokio::pin!(call);
        // Run the call until the issuer has stored the token, then drop it (as the server does on RST_STREAM).
        tokio::select! {
            r = &mut call => panic!("the call finished before it was cancelled: {r:?}"),
            () = async {
                while issuer.created.lock().unwrap().len() == created_before {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            } => {}
        }
    }
    let settled = async {
        while issuer.deleted.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    assert!(tokio::time::timeout(Duration::from_secs(20), settled).await.is_ok(), "tokens left behind");
    let (mut created, mut deleted) = (issuer.created.lock().unwrap().clone(), issuer.deleted.lock().unwrap().clone());
    created.sort();
    deleted.sort();
    assert_eq!(created, deleted);
    assert_eq!(f.metrics.issued_count(), (0, 0));
}

#[tokio::test]
async fn a_slow_key_service_is_deadline_exceeded() {
    let (_kms, addr) = slow_key_service(Duration::from_secs(3)).await;
    let issuer = Arc::new(ScriptedIssuer::default());
    let f = fixture(addr, Duration::from_millis(300), Some(issuer.clone()));
    let started = Instant::now();
    let e = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded, "{e}");
    assert!(started.elapsed() >= Duration::from_millis(290));
    assert_eq!(issuer.deleted.lock().unwrap().len(), 1);
    assert_eq!(f.metrics.refused_count(RefusalReason::KeyServiceDeadline), 1);

    // The caller's own deadline bounds the key service call too.
    let g = fixture(addr, Duration::from_secs(10), None);
    let mut r = join_request("worker-2", false);
    r.deadline = Some(Instant::now() + Duration::from_millis(200));
    let e = g.service.issue_join_ticket(r).await.unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded, "{e}");
    assert!(token_files(&g.tokens_dir).is_empty());
}

#[tokio::test]
async fn bad_requests_are_refused_before_any_side_effect() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let mut r = join_request("worker-1", false);
    r.message.certificate_request = b"not a csr".to_vec();
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap_err().code, Code::InvalidArgument);
    let mut r = join_request("Bad_Name", false);
    r.message.certificate_request = csr("Bad_Name");
    let e = f.service.issue_join_ticket(r).await.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("DNS-1123"), "{e}");
    for uuid in ["", "measurementSecret", "ca_emergency_ssh", "../../x"] {
        let mut r = join_request("worker-1", false);
        r.message.disk_uuid = uuid.into();
        let e = f.service.issue_join_ticket(r).await.unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument, "{uuid}");
    }
    let mut r = join_request("worker-1", false);
    r.message.host_public_key = b"ssh-dss AAAA".to_vec();
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap_err().code, Code::InvalidArgument);
    assert!(token_files(&f.tokens_dir).is_empty(), "a refused request left a token");
    assert_eq!(f.metrics.refused_count(RefusalReason::InvalidCsr), 2);
    assert_eq!(f.metrics.issued_count(), (0, 0));
}

#[tokio::test]
async fn no_verified_peer_is_unauthenticated() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let mut r = join_request("worker-1", false);
    r.peer = None;
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap_err().code, Code::Unauthenticated);

    // Served over plain h2c by mistake, the service still refuses: there is no attestation on the connection.
    let mut router = Router::new();
    router.add_service(Arc::clone(&f.service));
    let server = Server::new(router, ServerConfig::default());
    let join_addr = server.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    let channel = Channel::connect(join_addr, ChannelConfig::default()).await.unwrap();
    let e = channel
        .unary::<_, attest_proto::join::IssueRejoinTicketResponse>(
            paths::JOIN_ISSUE_REJOIN_TICKET,
            IssueRejoinTicketRequest { disk_uuid: DISK_UUID.into() },
            Metadata::new(),
            Some(Duration::from_secs(5)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Unauthenticated, "{e}");
    assert!(token_files(&f.tokens_dir).is_empty());
}

#[tokio::test]
async fn token_api_failures_map_to_precise_codes() {
    let (_kms, addr) = key_service().await;
    for (code, want, reason) in [
        (503, Code::Unavailable, RefusalReason::TokenApiUnavailable),
        (403, Code::Internal, RefusalReason::TokenApiRefused),
    ] {
        let issuer = Arc::new(ScriptedIssuer { fail_with: Some(code), ..ScriptedIssuer::default() });
        let f = fixture(addr, Duration::from_secs(5), Some(issuer));
        let e = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap_err();
        assert_eq!(e.code, want, "{e}");
        assert!(e.message.contains("bootstrap token"), "{e}");
        assert_eq!(f.metrics.refused_count(reason), 1);
    }
}

#[tokio::test]
async fn rejoin_returns_the_same_keys() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let node = TestNode::new("worker-1");
    let joined = f.service.issue_join_ticket(join_request_of(&node, false)).await.unwrap().message;
    let tokens = token_files(&f.tokens_dir);
    // After a reboot: the same attested node (same identity, a new aTLS key) gets its disk key again.
    let rebooted = TestNode::with_identity("worker-1", node.identity.clone());
    let t = f.service.issue_rejoin_ticket(rejoin_request(&rebooted, DISK_UUID)).await.unwrap().message;
    assert_eq!(t.state_disk_key, state_disk_key(&master(), DISK_UUID).unwrap().to_vec());
    assert_eq!(t.state_disk_key, joined.state_disk_key);
    assert_eq!(t.measurement_secret, measurement_secret(&master()).to_vec());
    assert_eq!(token_files(&f.tokens_dir), tokens, "a rejoin creates no token");
    assert_eq!(f.metrics.issued_count(), (1, 1));
}

/// An attested node that lies (1): it asks for another node's disk key. Refused before the key service is
/// asked; an unknown disk likewise (unless the named migration waiver binds it to the first asker).
#[tokio::test]
async fn another_nodes_disk_key_is_refused() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    f.service.issue_join_ticket(join_request("node-2", false)).await.unwrap();
    let calls = f.metrics.key_service_calls();
    let node3 = TestNode::new("node-3");
    let e = f.service.issue_rejoin_ticket(rejoin_request(&node3, DISK_UUID)).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert!(e.message.contains("belongs to another attested node"), "{e}");
    // A join with node-2's disk (under its own name) is refused the same way.
    let mut join = join_request_of(&node3, false);
    join.message.disk_uuid = DISK_UUID.into();
    assert_eq!(f.service.issue_join_ticket(join).await.unwrap_err().code, Code::PermissionDenied);
    let unknown = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
    let e = f.service.issue_rejoin_ticket(rejoin_request(&node3, unknown)).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert_eq!(f.metrics.key_service_calls(), calls, "no key was asked for");
    assert_eq!(f.metrics.refused_count(RefusalReason::DiskNotOwned), 3);
    assert_eq!(f.metrics.issued_count(), (1, 0));

    let g =
        join_support::fixture_with(addr, Duration::from_secs(5), None, JoinService::dangerously_adopt_unbound_disks);
    let t = g.service.issue_rejoin_ticket(rejoin_request(&node3, unknown)).await.unwrap().message;
    assert_eq!(t.state_disk_key, state_disk_key(&master(), unknown).unwrap().to_vec());
    // Adopted: now node-3's, and nobody else's.
    let other = TestNode::new("node-4");
    assert_eq!(
        g.service.issue_rejoin_ticket(rejoin_request(&other, unknown)).await.unwrap_err().code,
        Code::PermissionDenied
    );
}

/// An attested node that lies (3): a kubelet certificate for another node's name, or for a key the node did not prove.
#[tokio::test]
async fn another_nodes_name_or_an_unproven_key_is_refused() {
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    f.service.issue_join_ticket(join_request("node-2", false)).await.unwrap();
    // node-3's machine asks for node-2's name (with a disk of its own).
    let impostor = TestNode::with_identity("node-2", join_support::identity("node-3"));
    let mut r = join_request_of(&impostor, false);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    let e = f.service.issue_join_ticket(r).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert!(e.message.contains("node-2"), "{e}");
    // node-3 joins as itself, then cannot take a second name.
    let node3 = TestNode::new("node-3");
    let mut r = join_request_of(&node3, false);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    f.service.issue_join_ticket(r).await.unwrap();
    let second = TestNode::with_identity("node-9", node3.identity.clone());
    let mut r = join_request_of(&second, false);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap_err().code, Code::PermissionDenied);
    assert_eq!(f.metrics.refused_count(RefusalReason::NameNotOwned), 2);
    // A CSR for another key than the one the node proved in the handshake.
    let mut r = join_request_of(&node3, false);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    r.message.certificate_request = csr("node-3");
    let e = f.service.issue_join_ticket(r).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert!(e.message.contains("aTLS key"), "{e}");
    assert_eq!(f.metrics.refused_count(RefusalReason::CsrKeyNotProven), 1);
    // A peer whose evidence names no identity gets nothing.
    let mut r = join_request("node-5", false);
    let mut peer = TestNode::new("node-5").peer();
    peer.identity = None;
    r.peer = Some(Arc::new(peer));
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap_err().code, Code::PermissionDenied);
    assert_eq!(f.metrics.issued_count(), (2, 0));
    assert_eq!(token_files(&f.tokens_dir).len(), 2, "refused joins left a token");
}

/// An attested node that lies (2): control-plane files (the cluster's CA keys) as a worker that sets the request's flag.
/// Only with an operator's admission for this node and name, once; or as a member.
#[tokio::test]
async fn control_plane_files_need_an_admission_for_this_node() {
    let (_kms, addr) = key_service().await;
    let (f, operator, admissions) = admitting_fixture(addr);
    let worker = TestNode::new("node-3");
    let e = f.service.issue_join_ticket(join_request_of(&worker, true)).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied, "{e}");
    assert!(e.message.contains("admission"), "{e}");
    assert!(token_files(&f.tokens_dir).is_empty());
    // An admission for another node does not do; nor one signed by another key.
    let cp = TestNode::new("cp-4");
    admit(&operator, &admissions, &cp.identity, &cp.name);
    admit(&MeasurementsSigner::new(&join_support::temp_dir("rogue")), &admissions, &worker.identity, &worker.name);
    assert_eq!(
        f.service.issue_join_ticket(join_request_of(&worker, true)).await.unwrap_err().code,
        Code::PermissionDenied
    );
    assert_eq!(f.metrics.refused_count(RefusalReason::ControlPlaneNotAuthorized), 2);
    // The admitted node joins the control plane (and, a member now, again without an admission).
    let mut r = join_request_of(&cp, true);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    assert_eq!(f.service.issue_join_ticket(r).await.unwrap().message.control_plane_files.len(), 8);
    let mut r = join_request_of(&TestNode::with_identity("cp-4", cp.identity.clone()), true);
    r.message.disk_uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8".into();
    assert!(f.service.issue_join_ticket(r).await.is_ok());
    // The worker still gets a worker ticket.
    assert!(
        f.service
            .issue_join_ticket(join_request_of(&worker, false))
            .await
            .unwrap()
            .message
            .control_plane_files
            .is_empty()
    );
}

#[tokio::test]
async fn secrets_never_reach_the_logs() {
    // A global subscriber: a thread-local one (`set_default`) misses events whose callsite interest another
    // test thread cached as "never" while no subscriber was set. Every test of this binary logs into it, which
    // only makes the scan stricter (they all use the same master secret).
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this test binary");

    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let ok = f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap().message;
    f.service.issue_rejoin_ticket(rejoin_request(&TestNode::new("worker-1"), DISK_UUID)).await.unwrap();
    // A failed join (its token deleted) logs too.
    let down = fixture(closed_port(), Duration::from_secs(1), None);
    let _ = down.service.issue_join_ticket(join_request("worker-2", false)).await.unwrap_err();

    let logs = captured.text();
    assert!(logs.contains("join ticket issued") && logs.contains("node=\"worker-1\""), "{logs}");
    assert!(logs.contains("ticket refused") && logs.contains("key_service_unavailable"), "{logs}");
    let (_, token_secret) = ok.token.split_once('.').unwrap();
    let ssh_seed = derive_data_key(&master(), "ca_emergency_ssh", 32).unwrap();
    let ca_key = std::fs::read_to_string(f.dir.join("pki/ca.key")).unwrap();
    let secrets: Vec<(&str, Vec<u8>)> = vec![
        ("state disk key", ok.state_disk_key.clone()),
        ("measurement secret", ok.measurement_secret.clone()),
        ("measurement salt", ok.measurement_salt.clone()),
        ("master key", MASTER_KEY.to_vec()),
        ("ssh ca seed", ssh_seed.to_vec()),
    ];
    for (what, bytes) in &secrets {
        for form in [
            hex::encode(bytes),
            hex::encode_upper(bytes),
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes),
            format!("{bytes:?}"),
            bytes.iter().map(u8::to_string).collect::<Vec<_>>().join(", "),
        ] {
            assert!(!logs.contains(&form), "the {what} appears in the logs as {form}");
        }
    }
    assert!(!logs.contains(token_secret), "the token secret appears in the logs");
    let key_body: String = ca_key.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(!logs.contains(&key_body[..32]), "the CA key appears in the logs");
}

#[tokio::test]
async fn metrics_endpoint_serves_the_counters() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (_kms, addr) = key_service().await;
    let f = fixture(addr, Duration::from_secs(5), None);
    f.service.issue_join_ticket(join_request("worker-1", false)).await.unwrap();
    let mut r = join_request("worker-1", false);
    r.peer = None;
    let _ = f.service.issue_join_ticket(r).await;
    let server =
        MetricsServer::serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), Arc::clone(&f.metrics))
            .unwrap();
    let get = |path: &'static str| {
        let addr = server.local_addr();
        async move {
            let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            tcp.read_to_string(&mut out).await.unwrap();
            out
        }
    };
    let page = get("/metrics").await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("text/plain; version=0.0.4"), "{page}");
    assert!(page.contains("attest_join_tickets_issued_total{kind=\"join\"} 1"), "{page}");
    assert!(page.contains("attest_join_refused_total{reason=\"unauthenticated\"} 1"), "{page}");
    assert!(page.contains("attest_join_key_service_seconds_count 3"), "{page}");
    assert!(get("/other").await.starts_with("HTTP/1.1 404"));
    // The Kubernetes probes' endpoint.
    let health = get("/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"), "{health}");
    server.shutdown().await;
}
