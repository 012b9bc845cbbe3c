//! AK registration over real gRPC on 127.0.0.1 (`attest_registration`), with swtpm TPMs whose EK
//! certificates chain to this binary's swtpm-localca CA:
//!
//! - push (`AkRegistration`, served by a verifier) and pull (`CredentialActivation`, served by the node) both
//!   register the AK, and a quote by that AK then validates through the `FileAkRegistry` with basis
//!   credential-activation;
//! - refusals: an EK certificate from another CA, a wrong secret, a replayed or expired registration id, an
//!   AK with the wrong attributes, a full pending table, and a different TPM trying to answer someone else's
//!   challenge — each with its gRPC status, and nothing recorded;
//! - fairness: a flood of `Begin`s with a node's own (public) EK certificate and AK, from another
//!   caller, stops neither that node's nor another node's registration.

use attest_attester::issuer::{QemuVtpmIssuer, document, pcr_values};
use attest_attester::registration::{ActivationService, register};
use attest_attester::tpm::{AkConfig, Error as TpmError, Tpm};
use attest_engine::variant::{AkBasis, PcrPolicy};
use attest_grpc::{Channel, ChannelConfig, Code, Metadata, Request, Response, Router, Server, ServerConfig, Status};
use attest_hwtests::Swtpm;
use attest_hwtests::support::{foreign_ca_pem, now, random32, validator};
use attest_proto::attest::v1::{
    ActivateRequest, ActivateResponse, BeginRegistrationRequest, BeginRegistrationResponse,
    CompleteRegistrationRequest, CompleteRegistrationResponse, GetIdentityRequest, GetIdentityResponse,
};
use attest_proto::paths;
use attest_registration::{CredentialChallenge, EkCaBundle, FileAkRegistry, ak_digest};
use attest_registration::{RegistrationError, RegistrationService, register_remote};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// A node: its swtpm, EK certificate and issuer.
struct Node {
    sw: Swtpm,
    ek_certificate: Vec<u8>,
    issuer: Arc<QemuVtpmIssuer>,
}

impl Node {
    #[track_caller]
    fn start(unique: bool) -> Self {
        let sw = if unique { Swtpm::start_unique() } else { Swtpm::start() }.expect("start swtpm");
        let mut tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let ek_certificate = tpm.ek_certificate().expect("EK certificate");
        let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer"));
        Self { sw, ek_certificate, issuer }
    }

    fn ak_public(&self) -> Vec<u8> {
        self.issuer.attestation_key().tpm2b_public().to_vec()
    }

    fn digest(&self) -> [u8; 32] {
        ak_digest(&self.ak_public()).unwrap()
    }

    fn activate(&self, blob: &[u8], secret: &[u8]) -> Result<Vec<u8>, TpmError> {
        let c = CredentialChallenge { credential_blob: blob.to_vec(), encrypted_secret: secret.to_vec() };
        self.issuer.with_tpm(|tpm, ak| tpm.activate_credential(ak, &c)).map(|s| s.to_vec())
    }

    /// A quote by this node's AK validates through `registry`, with the basis it records.
    fn validates_through(&self, registry: &Arc<FileAkRegistry>) -> Result<AkBasis, attest_engine::Error> {
        let v = validator(registry.clone(), PcrPolicy::default());
        let nonce = random32();
        let doc = self.issuer.issue(&nonce, b"user data", b"").unwrap();
        let pcrs = pcr_values(&doc).unwrap();
        v.validate(&document(&doc, &pcrs), &nonce, now())
            .map(|ok| ok.ak_basis.expect("qemu-vtpm documents carry an AK"))
    }
}

fn ca() -> EkCaBundle {
    EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap()
}

fn registry_in(sw: &Swtpm, name: &str) -> Arc<FileAkRegistry> {
    Arc::new(FileAkRegistry::open(sw.dir().join(name)).unwrap())
}

/// Serves `router` on a loopback port (h2c) and returns a channel to it.
async fn serve(router: Router) -> (Server, Channel) {
    let server = Server::new(router, ServerConfig::default());
    let addr = server.serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    let channel = Channel::connect(addr, ChannelConfig::default()).await.unwrap();
    (server, channel)
}

async fn verifier(service: RegistrationService) -> (Arc<RegistrationService>, Server, Channel) {
    let service = Arc::new(service);
    let mut router = Router::new();
    router.add_service(Arc::clone(&service));
    let (server, channel) = serve(router).await;
    (service, server, channel)
}

async fn unary<Req: prost::Message, Resp: prost::Message + Default>(
    ch: &Channel,
    path: &str,
    req: Req,
) -> Result<Resp, Status> {
    ch.unary(path, req, Metadata::new(), Some(Duration::from_secs(30))).await.map(|r| r.message)
}

async fn begin(ch: &Channel, ek: &[u8], ak: &[u8]) -> Result<BeginRegistrationResponse, Status> {
    unary(
        ch,
        paths::REGISTRATION_BEGIN,
        BeginRegistrationRequest { ek_certificate: ek.to_vec(), ak_public: ak.to_vec() },
    )
    .await
}

async fn complete(ch: &Channel, id: &[u8], secret: &[u8]) -> Result<CompleteRegistrationResponse, Status> {
    let req = CompleteRegistrationRequest { registration_id: id.to_vec(), secret: secret.to_vec() };
    unary(ch, paths::REGISTRATION_COMPLETE, req).await
}

#[track_caller]
fn assert_code<T: std::fmt::Debug>(r: Result<T, Status>, code: Code) {
    match r {
        Err(s) => assert_eq!(s.code, code, "{s}"),
        Ok(v) => panic!("expected {code}, got {v:?}"),
    }
}

#[track_caller]
fn assert_rpc_code(r: Result<[u8; 32], RegistrationError>, code: Code) {
    match r {
        Err(RegistrationError::Rpc { status, .. }) => assert_eq!(status.code, code, "{status}"),
        other => panic!("expected an RPC failure with {code}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_registration_then_quotes_validate_through_the_registry() {
    let node = Node::start(false);
    let registry = registry_in(&node.sw, "aks.json");
    assert!(node.validates_through(&registry).is_err(), "not registered yet");
    let (service, _server, ch) = verifier(RegistrationService::new(registry.clone(), ca())).await;

    let digest = register(&ch, &node.issuer, &node.ek_certificate).await.unwrap();
    assert_eq!(digest, node.digest());
    assert_eq!(registry.entries(), vec![(digest, AkBasis::CredentialActivation)]);
    assert_eq!(service.pending(), 0);
    assert_eq!(node.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);
    // A verifier reading the file afresh agrees.
    let reloaded = Arc::new(FileAkRegistry::open(registry.path()).unwrap());
    assert_eq!(node.validates_through(&reloaded).unwrap(), AkBasis::CredentialActivation);
    // Registering again is harmless.
    assert_eq!(register(&ch, &node.issuer, &node.ek_certificate).await.unwrap(), digest);
    assert_eq!(registry.entries().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_registration_then_quotes_validate_through_the_registry() {
    let node = Node::start(false);
    let mut router = Router::new();
    router.add_service(Arc::new(ActivationService::new(node.issuer.clone(), node.ek_certificate.clone())));
    let (_server, ch) = serve(router).await;

    let identity: GetIdentityResponse =
        unary(&ch, paths::ACTIVATION_GET_IDENTITY, GetIdentityRequest {}).await.unwrap();
    assert_eq!(identity.ek_certificate, node.ek_certificate);
    assert_eq!(identity.ak_public, node.ak_public());

    let registry = registry_in(&node.sw, "pulled.json");
    let digest = register_remote(&ch, &ca(), &registry).await.unwrap();
    assert_eq!(digest, node.digest());
    assert_eq!(node.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);

    // An EK certificate from another CA: refused by the puller, nothing recorded.
    let other = registry_in(&node.sw, "foreign.json");
    let foreign = EkCaBundle::from_pem(&foreign_ca_pem()).unwrap();
    match register_remote(&ch, &foreign, &other).await {
        Err(e @ RegistrationError::Refused(TpmError::EkCertificate { .. })) => assert!(e.is_refusal()),
        r => panic!("{r:?}"),
    }
    assert!(other.entries().is_empty());

    // The node refuses oversized and malformed credentials.
    let r: Result<ActivateResponse, _> = unary(
        &ch,
        paths::ACTIVATION_ACTIVATE,
        ActivateRequest { credential_blob: vec![0; 4096], encrypted_secret: vec![0; 10] },
    )
    .await;
    assert_code(r, Code::InvalidArgument);
    let r: Result<ActivateResponse, _> = unary(
        &ch,
        paths::ACTIVATION_ACTIVATE,
        ActivateRequest { credential_blob: vec![0, 5, 2], encrypted_secret: vec![0, 1, 2] },
    )
    .await;
    assert_code(r, Code::InvalidArgument);
    // Well-formed but not a credential for this TPM: the TPM refuses it, a failed proof.
    let r: Result<ActivateResponse, _> = unary(
        &ch,
        paths::ACTIVATION_ACTIVATE,
        ActivateRequest { credential_blob: vec![0, 1, 2], encrypted_secret: vec![0, 1, 2] },
    )
    .await;
    assert_code(r, Code::PermissionDenied);
}

/// A node that lies in `CredentialActivation`: presents `identity`, answers every activation with `secret`.
async fn lying_node(identity: GetIdentityResponse, secret: Vec<u8>) -> (Server, Channel) {
    let mut router = Router::new();
    router.unary(paths::ACTIVATION_GET_IDENTITY, move |_: Request<GetIdentityRequest>| {
        let identity = identity.clone();
        async move { Ok(Response::new(identity)) }
    });
    router.unary(paths::ACTIVATION_ACTIVATE, move |_: Request<ActivateRequest>| {
        let secret = secret.clone();
        async move { Ok(Response::new(ActivateResponse { secret })) }
    });
    serve(router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_refuses_wrong_secrets_and_non_attestation_keys() {
    let node = Node::start(false);
    let registry = registry_in(&node.sw, "aks.json");

    // A node that cannot activate and answers with a guess.
    let identity = GetIdentityResponse { ek_certificate: node.ek_certificate.clone(), ak_public: node.ak_public() };
    let (_s1, ch) = lying_node(identity, vec![0; 32]).await;
    match register_remote(&ch, &ca(), &registry).await {
        Err(e @ RegistrationError::Refused(TpmError::CredentialMismatch)) => assert!(e.is_refusal()),
        r => panic!("{r:?}"),
    }

    // A node presenting its EK's public area (restricted decrypt) as its AK.
    let ek_public = node.issuer.with_tpm(|tpm, _| tpm.ek_public()).unwrap().tpm2b_public;
    let identity = GetIdentityResponse { ek_certificate: node.ek_certificate.clone(), ak_public: ek_public };
    let (_s2, ch) = lying_node(identity, vec![0; 32]).await;
    assert!(matches!(
        register_remote(&ch, &ca(), &registry).await,
        Err(RegistrationError::Refused(TpmError::Engine(_)))
    ));
    assert!(registry.entries().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_refuses_foreign_eks_and_non_attestation_keys() {
    let node = Node::start(false);
    let registry = registry_in(&node.sw, "aks.json");

    // A verifier trusting another CA refuses this TPM's EK certificate.
    let foreign = EkCaBundle::from_pem(&foreign_ca_pem()).unwrap();
    let (_svc, _server, ch) = verifier(RegistrationService::new(registry.clone(), foreign)).await;
    let r = register(&ch, &node.issuer, &node.ek_certificate).await;
    assert!(r.as_ref().is_err_and(RegistrationError::is_refusal));
    assert_rpc_code(r, Code::InvalidArgument);

    let (service, _server, ch) = verifier(RegistrationService::new(registry.clone(), ca())).await;
    // Not a certificate; truncated; oversized.
    assert_code(begin(&ch, b"not DER", &node.ak_public()).await, Code::InvalidArgument);
    let ek = &node.ek_certificate;
    assert_code(begin(&ch, &ek[..ek.len() - 1], &node.ak_public()).await, Code::InvalidArgument);
    assert_code(begin(&ch, &vec![0x30; 5000], &node.ak_public()).await, Code::InvalidArgument);
    // The EK's own public area is no attestation key; nor are garbage or an oversized area.
    let ek_public = node.issuer.with_tpm(|tpm, _| tpm.ek_public()).unwrap().tpm2b_public;
    assert_code(begin(&ch, ek, &ek_public).await, Code::InvalidArgument);
    assert_code(begin(&ch, ek, &[0, 1, 0]).await, Code::InvalidArgument);
    assert_code(begin(&ch, ek, &[0; 2000]).await, Code::InvalidArgument);
    assert_eq!(service.pending(), 0);
    assert!(registry.entries().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_ids_are_single_use_and_expire() {
    let node = Node::start(false);
    let registry = registry_in(&node.sw, "aks.json");
    let (service, _server, ch) = verifier(RegistrationService::new(registry.clone(), ca())).await;
    let ak = node.ak_public();

    // A wrong secret is refused and consumes the registration: the right one cannot follow.
    let b = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    assert_eq!(b.registration_id.len(), 16);
    assert_eq!(service.pending(), 1);
    let secret = node.activate(&b.credential_blob, &b.encrypted_secret).unwrap();
    assert_code(complete(&ch, &b.registration_id, &[0; 32]).await, Code::PermissionDenied);
    assert_code(complete(&ch, &b.registration_id, &secret).await, Code::NotFound);
    assert!(registry.entries().is_empty());

    // A right answer registers; replaying it is NOT_FOUND.
    let b = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    let secret = node.activate(&b.credential_blob, &b.encrypted_secret).unwrap();
    assert_eq!(complete(&ch, &b.registration_id, &secret).await.unwrap().ak_digest, node.digest());
    assert_code(complete(&ch, &b.registration_id, &secret).await, Code::NotFound);
    // Ids are random: never seen before, never the same twice.
    let b2 = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    assert_ne!(b2.registration_id, b.registration_id);
    assert_ne!(b2.credential_blob, b.credential_blob);
    // Unknown and malformed ids.
    assert_code(complete(&ch, &[7; 16], &secret).await, Code::NotFound);
    assert_code(complete(&ch, &[7; 3], &secret).await, Code::InvalidArgument);

    // Expiry: a registration completed after its TTL is FAILED_PRECONDITION, even with the right secret.
    let short = registry_in(&node.sw, "short.json");
    let (_svc, _server2, ch) =
        verifier(RegistrationService::new(short.clone(), ca()).with_ttl(Duration::from_millis(200))).await;
    let b = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    let secret = node.activate(&b.credential_blob, &b.encrypted_secret).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_code(complete(&ch, &b.registration_id, &secret).await, Code::FailedPrecondition);
    assert_code(complete(&ch, &b.registration_id, &secret).await, Code::NotFound);
    assert!(short.entries().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pending_table_is_bounded() {
    let node = Node::start(false);
    let registry = registry_in(&node.sw, "aks.json");
    let (service, _server, ch) = verifier(RegistrationService::new(registry.clone(), ca()).with_max_pending(2)).await;
    let ak = node.ak_public();
    // A full table sheds rather than refuses: the third `Begin` from this caller sheds its oldest entry.
    let first = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    let third = begin(&ch, &node.ek_certificate, &ak).await.unwrap();
    assert_eq!((service.pending(), service.shed_count()), (2, 1));
    let secret = node.activate(&first.credential_blob, &first.encrypted_secret).unwrap();
    assert_code(complete(&ch, &first.registration_id, &secret).await, Code::NotFound);
    let secret = node.activate(&third.credential_blob, &third.encrypted_secret).unwrap();
    complete(&ch, &third.registration_id, &secret).await.unwrap();
    assert_eq!(registry.entries().len(), 1);
}

/// A channel to `addr` from the loopback address `source` (another caller than 127.0.0.1).
async fn channel_from(source: std::net::IpAddr, addr: std::net::SocketAddr) -> Channel {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::new(source, 0)).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    Channel::handshake(tcp, "registration", ChannelConfig::default()).await.unwrap()
}

/// The issue's second attack: 1,100 `Begin`s (more than the whole table) with Alice's EK certificate and AK,
/// which anything on her node can read, from another caller — first alone, then again, without pause for as
/// long as Alice and Bob register. The flooder holds only its own quota for that EK; both nodes register
/// (every attempt succeeds at once), and Alice's AK validates. Prints the registrations' figures without and
/// with the flood (`ATTEST_ATTACK_GENUINE_CALLS` rounds, 5 by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_begin_flood_with_a_nodes_public_ek_and_ak_stops_no_registration() {
    let alice = Node::start(false);
    let bob = Node::start(true);
    let registry = registry_in(&alice.sw, "aks.json");
    let service = Arc::new(RegistrationService::new(registry.clone(), ca()));
    let mut router = Router::new();
    router.add_service(Arc::clone(&service));
    let server = Server::new(router, ServerConfig::default());
    let addr = server.serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    let flooder: std::net::IpAddr = [127, 66, 0, 1].into();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(true));
    // At least `n` Begins, and on until `stop`; returns (sent, succeeded).
    let flood = |n: usize, stop: Arc<std::sync::atomic::AtomicBool>| {
        let (ek, ak) = (alice.ek_certificate.clone(), alice.ak_public());
        async move {
            let ch = channel_from(flooder, addr).await;
            let (mut sent, mut ok) = (0, 0);
            while sent < n || !stop.load(std::sync::atomic::Ordering::Acquire) {
                sent += 1;
                ok += usize::from(begin(&ch, &ek, &ak).await.is_ok());
            }
            (sent, ok)
        }
    };
    let rounds = attest_test_support::figures::genuine_calls(5);
    let ch_alice = Channel::connect(addr, ChannelConfig::default()).await.unwrap();
    let ch_bob = channel_from([127, 66, 0, 2].into(), addr).await;
    let register_both = || {
        let (ch_alice, ch_bob, alice, bob) = (&ch_alice, &ch_bob, &alice, &bob);
        let mut l = attest_test_support::figures::Latencies::new();
        async move {
            for _ in 0..rounds {
                let t0 = std::time::Instant::now();
                assert_eq!(register(ch_alice, &alice.issuer, &alice.ek_certificate).await.unwrap(), alice.digest());
                l.record(Some(t0.elapsed()));
                let t0 = std::time::Instant::now();
                assert_eq!(register(ch_bob, &bob.issuer, &bob.ek_certificate).await.unwrap(), bob.digest());
                l.record(Some(t0.elapsed()));
            }
            l
        }
    };
    let unattacked = register_both().await;
    println!("{}", unattacked.summary("registrations, no flood"));

    let t0 = std::time::Instant::now();
    assert_eq!(flood(1100, Arc::clone(&stop)).await, (1100, 1100), "Begin never fails for room: it sheds");
    println!("1,100 Begins in {:?}", t0.elapsed());
    let from_flooder = service.pending_from(std::net::SocketAddr::new(flooder, 0));
    assert_eq!(from_flooder, attest_registration::MAX_PENDING_PER_EK, "the flooder holds its own quota only");
    assert_eq!(service.pending(), from_flooder);

    // Again, without pause while Alice (127.0.0.1) and Bob (another caller) register.
    stop.store(false, std::sync::atomic::Ordering::Release);
    let running = tokio::spawn(flood(1100, Arc::clone(&stop)));
    let attacked = register_both().await;
    let still_flooding = !running.is_finished();
    stop.store(true, std::sync::atomic::Ordering::Release);
    let (sent, ok) = running.await.unwrap();
    assert_eq!(ok, sent, "Begin never fails for room: it sheds");
    assert!(still_flooding, "the flood ran through every registration");
    println!("{} ({sent} flooding Begins meanwhile)", attacked.summary("registrations under a Begin flood"));
    assert_eq!(alice.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);
    assert_eq!(bob.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);
    println!("after both floods: {} Begins shed, {} pending", service.shed_count(), service.pending());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tpm_cannot_answer_someone_elses_challenge() {
    let alice = Node::start(false);
    let mallory = Node::start(true);
    assert_ne!(alice.ek_certificate, mallory.ek_certificate);
    assert_ne!(alice.digest(), mallory.digest());
    let registry = registry_in(&alice.sw, "aks.json");
    let (_service, _server, ch) = verifier(RegistrationService::new(registry.clone(), ca())).await;

    // Mallory presents Alice's EK certificate with her own AK: the credential is sealed to Alice's EK.
    let b = begin(&ch, &alice.ek_certificate, &mallory.ak_public()).await.unwrap();
    assert!(matches!(mallory.activate(&b.credential_blob, &b.encrypted_secret), Err(TpmError::CredentialMismatch)));
    assert_code(complete(&ch, &b.registration_id, &[0; 32]).await, Code::PermissionDenied);
    // Through the client API, the same attempt fails on Mallory's TPM before anything is sent back.
    let r = register(&ch, &mallory.issuer, &alice.ek_certificate).await;
    assert!(matches!(r, Err(RegistrationError::BadResponse { .. })), "{r:?}");

    // Mallory intercepts Alice's challenge: her TPM cannot open it, and her answer to Alice's id is refused
    // (which also burns that id: Alice begins again).
    let b = begin(&ch, &alice.ek_certificate, &alice.ak_public()).await.unwrap();
    assert!(matches!(mallory.activate(&b.credential_blob, &b.encrypted_secret), Err(TpmError::CredentialMismatch)));
    let mallorys = begin(&ch, &mallory.ek_certificate, &mallory.ak_public()).await.unwrap();
    let mallorys_secret = mallory.activate(&mallorys.credential_blob, &mallorys.encrypted_secret).unwrap();
    assert_code(complete(&ch, &b.registration_id, &mallorys_secret).await, Code::PermissionDenied);
    assert!(registry.entries().is_empty());

    // Alice's AK on Mallory's EK the other way round: Alice's TPM cannot open a credential for Mallory's EK.
    let b = begin(&ch, &mallory.ek_certificate, &alice.ak_public()).await.unwrap();
    assert!(matches!(alice.activate(&b.credential_blob, &b.encrypted_secret), Err(TpmError::CredentialMismatch)));

    // Each registers itself fine; Mallory's AK never vouches for Alice's quotes.
    assert_eq!(register(&ch, &alice.issuer, &alice.ek_certificate).await.unwrap(), alice.digest());
    assert_eq!(register(&ch, &mallory.issuer, &mallory.ek_certificate).await.unwrap(), mallory.digest());
    assert_eq!(alice.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);
    assert_eq!(mallory.validates_through(&registry).unwrap(), AkBasis::CredentialActivation);
}
