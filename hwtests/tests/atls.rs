//! aTLS end to end over 127.0.0.1 with the swtpm-backed `qemu-vtpm` issuer and the engine's validator
//! (docs/ARCHITECTURE.md, "aTLS"): the three modes succeed; every way a peer can present a bad attestation aborts the
//! handshake with the matching error on the verifying side and a TLS alert on the other — in both
//! directions; and a Go client using only crypto/tls completes a client-side aTLS handshake.
//!
//! Misbehaving attesters are played two ways: issuer wrappers that lie (wrong nonce, swapped key, unknown
//! OID), and raw OpenSSL peers that present a fixed certificate (replayed, no extension, bad signature).

use attest_atls::cert::{self, Credential};
use attest_atls::{
    AtlsAcceptor, AtlsConnector, AttestationIssuer, AttestationValidator, BoxError, EngineValidator, Error,
    NonceChannel, PeerAttestation, Verifier,
};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::tpm::{AkConfig, Tpm};
use attest_engine::variant::{AkBasis, AkRegistry, PcrExpectation, PcrPolicy, StaticAkRegistry};
use attest_hwtests::Swtpm;
use attest_hwtests::support::validator;
use attest_registration::ak_digest;
use openssl::ssl::{Ssl, SslAcceptor, SslConnector, SslMethod, SslVerifyMode};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const QEMU_OID: &str = "1.3.9900.5.1";
const TIMEOUT: Duration = Duration::from_secs(20);

/// One simulated node: a swtpm and the qemu-vtpm issuer on it.
struct Node {
    _sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
}

impl Node {
    #[track_caller]
    fn start() -> Self {
        let sw = Swtpm::start().expect("start swtpm");
        let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer"));
        Self { _sw: sw, issuer }
    }

    fn issuer(&self) -> Arc<dyn AttestationIssuer> {
        self.issuer.clone()
    }

    fn registry(&self) -> Arc<dyn AkRegistry> {
        let digest = ak_digest(self.issuer.attestation_key().tpm2b_public()).unwrap();
        Arc::new(StaticAkRegistry(vec![(digest, AkBasis::Pinned)]))
    }

    fn validator(&self) -> Arc<EngineValidator> {
        Arc::new(EngineValidator::new(validator(self.registry(), PcrPolicy::default())))
    }

    /// A verifier that trusts this node's AK.
    fn verifier(&self) -> Arc<Verifier> {
        Arc::new(Verifier::new(vec![self.validator()]))
    }
}

// ---- Lying issuers -------------------------------------------------------------------------------------

/// Quotes for a nonce of its own instead of the peer's.
#[derive(Debug)]
struct WrongNonce(Arc<dyn AttestationIssuer>);
impl AttestationIssuer for WrongNonce {
    fn oid(&self) -> &str {
        self.0.oid()
    }
    fn issue(&self, _nonce: &[u8; 32], user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        self.0.issue(&[0x5A; 32], user_data)
    }
}

/// Binds another key's hash: the document is genuine and fresh, but for a key the certificate does not have.
#[derive(Debug)]
struct SwappedKey(Arc<dyn AttestationIssuer>);
impl AttestationIssuer for SwappedKey {
    fn oid(&self) -> &str {
        self.0.oid()
    }
    fn issue(&self, nonce: &[u8; 32], _user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        let other = cert::fresh_key()?.public_key_to_der()?;
        self.0.issue(nonce, &openssl::sha::sha256(&other))
    }
}

/// Puts a genuine document under an OID no validator knows.
#[derive(Debug)]
struct UnknownOid(Arc<dyn AttestationIssuer>);
impl AttestationIssuer for UnknownOid {
    #[allow(clippy::unnecessary_literal_bound)] // the trait returns a borrow; this one happens to be static
    fn oid(&self) -> &str {
        "1.3.9900.99.1"
    }
    fn issue(&self, nonce: &[u8; 32], user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        self.0.issue(nonce, user_data)
    }
}

// ---- Running a handshake -------------------------------------------------------------------------------

/// How one side ended: what it verified of the peer, or why it failed.
type Outcome = Result<Option<PeerAttestation>, Failure>;

#[derive(Debug)]
enum Failure {
    Atls(Error),
    /// A raw OpenSSL peer's failure (its error text).
    Raw(String),
}

impl Failure {
    #[track_caller]
    fn atls(self) -> Error {
        match self {
            Self::Atls(e) => e,
            Self::Raw(s) => panic!("expected an aTLS error, got {s}"),
        }
    }
}

/// The alert the other side must report: OpenSSL sends `handshake_failure` when a verify callback refuses.
#[track_caller]
fn assert_aborted_by_peer(outcome: Outcome, alert: &str) {
    match outcome {
        Err(Failure::Atls(Error::AlertReceived { description, .. })) => assert_eq!(description, alert),
        Err(Failure::Raw(text)) => assert!(text.contains(&alert.replace('_', " ")), "{text}"),
        other => panic!("expected the peer's {alert} alert, got {other:?}"),
    }
}

fn io_failure(e: std::io::Error) -> Failure {
    match e.into_inner().map(<dyn std::error::Error + Send + Sync>::downcast::<Error>) {
        Some(Ok(e)) => Failure::Atls(*e),
        Some(Err(other)) => Failure::Raw(other.to_string()),
        None => Failure::Raw("I/O error".into()),
    }
}

/// After a handshake, one round trip (client "ping", server "pong"): a TLS 1.3 client learns here that the
/// server refused its certificate.
async fn exchange<S>(mut s: S, client: bool) -> Result<(), std::io::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buf = [0u8; 4];
    if client {
        s.write_all(b"ping").await?;
        s.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"pong");
    } else {
        s.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"ping");
        s.write_all(b"pong").await?;
        s.flush().await?;
    }
    Ok(())
}

async fn listener() -> (TcpListener, std::net::SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

async fn serve_atls(l: TcpListener, acceptor: AtlsAcceptor) -> Outcome {
    let (tcp, _) = l.accept().await.unwrap();
    let mut s = acceptor.accept(tcp).await.map_err(Failure::Atls)?;
    assert_eq!(s.alpn_protocol(), Some(&b"h2"[..]));
    exchange(Pin::new(&mut s), false).await.map_err(io_failure)?;
    Ok(s.peer_attestation().cloned())
}

async fn connect_atls(addr: std::net::SocketAddr, connector: AtlsConnector) -> Outcome {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut s = connector.connect(tcp).await.map_err(Failure::Atls)?;
    assert_eq!(s.alpn_protocol(), Some(&b"h2"[..]));
    exchange(Pin::new(&mut s), true).await.map_err(io_failure)?;
    Ok(s.peer_attestation().cloned())
}

/// Our server against our client.
async fn run(acceptor: AtlsAcceptor, connector: AtlsConnector) -> (Outcome, Outcome) {
    let (l, addr) = listener().await;
    let server = tokio::spawn(serve_atls(l, acceptor));
    let client = tokio::time::timeout(TIMEOUT, connect_atls(addr, connector)).await.expect("client timed out");
    let server = tokio::time::timeout(TIMEOUT, server).await.expect("server timed out").unwrap();
    (server, client)
}

/// A raw OpenSSL server presenting `cred` (and requesting nothing) against our client.
async fn raw_server_vs(cred: Credential, connector: AtlsConnector) -> (Outcome, Outcome) {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
        b.set_certificate(&cred.certificate).unwrap();
        b.set_private_key(&cred.key).unwrap();
        let ctx = b.build().into_context();
        let (tcp, _) = l.accept().await.unwrap();
        let mut s = tokio_openssl::SslStream::new(Ssl::new(&ctx).unwrap(), tcp).unwrap();
        Pin::new(&mut s).accept().await.map_err(|e| Failure::Raw(e.to_string()))?;
        exchange(Pin::new(&mut s), false).await.map_err(|e| Failure::Raw(e.to_string()))?;
        Ok(None)
    });
    let client = tokio::time::timeout(TIMEOUT, connect_atls(addr, connector)).await.expect("client timed out");
    (tokio::time::timeout(TIMEOUT, server).await.unwrap().unwrap(), client)
}

/// Our server against a raw OpenSSL client that sends `sni` and presents `cred` when asked.
async fn raw_client_vs(acceptor: AtlsAcceptor, cred: Option<Credential>, sni: Option<&str>) -> (Outcome, Outcome) {
    let (l, addr) = listener().await;
    let server = tokio::spawn(serve_atls(l, acceptor));
    let mut b = SslConnector::builder(SslMethod::tls()).unwrap();
    b.set_verify(SslVerifyMode::NONE);
    if let Some(c) = &cred {
        b.set_certificate(&c.certificate).unwrap();
        b.set_private_key(&c.key).unwrap();
    }
    let ctx = b.build().into_context();
    let mut ssl = Ssl::new(&ctx).unwrap();
    if let Some(sni) = sni {
        ssl.set_hostname(sni).unwrap();
    }
    let client = async {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut s = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
        Pin::new(&mut s).connect().await.map_err(|e| Failure::Raw(e.to_string()))?;
        exchange(Pin::new(&mut s), true).await.map_err(|e| Failure::Raw(e.to_string()))?;
        Ok(None)
    };
    let client = tokio::time::timeout(TIMEOUT, client).await.expect("client timed out");
    (tokio::time::timeout(TIMEOUT, server).await.unwrap().unwrap(), client)
}

fn client_side(issuer: Arc<dyn AttestationIssuer>, verifier: Arc<Verifier>) -> (AtlsAcceptor, AtlsConnector) {
    (AtlsAcceptor::new(Some(issuer), None).unwrap(), AtlsConnector::new(None, Some(verifier)).unwrap())
}

fn server_side(issuer: Arc<dyn AttestationIssuer>, verifier: Arc<Verifier>) -> (AtlsAcceptor, AtlsConnector) {
    (AtlsAcceptor::new(None, Some(verifier)).unwrap(), AtlsConnector::new(Some(issuer), None).unwrap())
}

#[track_caller]
fn assert_proved(peer: &PeerAttestation) {
    assert_eq!(peer.oid, QEMU_OID);
    let doc =
        <attest_proto::attest::v1::AttestationDocument as prost::Message>::decode(peer.document.as_slice()).unwrap();
    assert_eq!(doc.variant, "qemu-vtpm");
    assert_eq!(doc.user_data, peer.spki_sha256);
}

// ---- The three modes -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_verification_succeeds() {
    let node = Node::start();
    let (a, c) = client_side(node.issuer(), node.verifier());
    let (server, client) = run(a, c).await;
    assert!(server.unwrap().is_none(), "the server verified nothing");
    assert_proved(&client.unwrap().expect("the client verified the server"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_verification_succeeds() {
    let node = Node::start();
    let (a, c) = server_side(node.issuer(), node.verifier());
    let (server, client) = run(a, c).await;
    assert_proved(&server.unwrap().expect("the server verified the client"));
    assert!(client.unwrap().is_none(), "the client verified nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_verification_succeeds_with_two_tpms() {
    let (server_node, client_node) = (Node::start(), Node::start());
    let a = AtlsAcceptor::new(Some(server_node.issuer()), Some(client_node.verifier())).unwrap();
    let c = AtlsConnector::new(Some(client_node.issuer()), Some(server_node.verifier())).unwrap();
    let (server, client) = run(a, c).await;
    let (s, c) = (server.unwrap().unwrap(), client.unwrap().unwrap());
    assert_proved(&s);
    assert_proved(&c);
    assert_ne!(s.spki_sha256, c.spki_sha256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_handshake_gets_a_fresh_key_and_certificate() {
    let node = Node::start();
    let (a, c) = client_side(node.issuer(), node.verifier());
    let mut seen = std::collections::HashSet::new();
    for _ in 0..3 {
        let (server, client) = run(a.clone(), c.clone()).await;
        server.unwrap();
        assert!(seen.insert(client.unwrap().unwrap().spki_sha256));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handshakes_share_one_tpm() {
    let node = Node::start();
    let (a, c) = client_side(node.issuer(), node.verifier());
    let runs: Vec<_> = (0..8).map(|_| tokio::spawn(run(a.clone(), c.clone()))).collect();
    for r in runs {
        let (server, client) = r.await.unwrap();
        server.unwrap();
        assert_proved(&client.unwrap().unwrap());
    }
}

// ---- Misbehaving attesters, in both directions ---------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_nonce_aborts_the_handshake() {
    let node = Node::start();
    let liar: Arc<dyn AttestationIssuer> = Arc::new(WrongNonce(node.issuer()));

    let (a, c) = client_side(liar.clone(), node.verifier());
    let (server, client) = run(a, c).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::WrongNonce { channel: NonceChannel::ServerName }), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    let (a, c) = server_side(liar, node.verifier());
    let (server, client) = run(a, c).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::WrongNonce { channel: NonceChannel::AcceptableCa }), "{e}");
    assert_aborted_by_peer(client, "handshake_failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapped_key_aborts_the_handshake() {
    let node = Node::start();
    let liar: Arc<dyn AttestationIssuer> = Arc::new(SwappedKey(node.issuer()));

    let (a, c) = client_side(liar.clone(), node.verifier());
    let (server, client) = run(a, c).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::KeyMismatch { .. }), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    let (a, c) = server_side(liar, node.verifier());
    let (server, client) = run(a, c).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::KeyMismatch { .. }), "{e}");
    assert_aborted_by_peer(client, "handshake_failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_oid_aborts_the_handshake() {
    let node = Node::start();
    let liar: Arc<dyn AttestationIssuer> = Arc::new(UnknownOid(node.issuer()));

    let (a, c) = client_side(liar.clone(), node.verifier());
    let (server, client) = run(a, c).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(&e, Error::UnknownOid { oid } if oid == "1.3.9900.99.1"), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    let (a, c) = server_side(liar, node.verifier());
    let (server, client) = run(a, c).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::UnknownOid { .. }), "{e}");
    assert_aborted_by_peer(client, "handshake_failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_attestation_aborts_the_handshake() {
    let node = Node::start();
    // The AK is not registered with the verifier.
    let untrusting = Arc::new(Verifier::new(vec![Arc::new(EngineValidator::new(validator(
        Arc::new(StaticAkRegistry::default()),
        PcrPolicy::default(),
    )))]));
    let (a, c) = client_side(node.issuer(), untrusting.clone());
    let (server, client) = run(a, c).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(&e, Error::AttestationFailed { oid, .. } if oid == QEMU_OID), "{e}");
    assert!(e.to_string().contains("attestation key"), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    // A PCR policy the node does not meet (PCR 15 of a fresh TPM is zero).
    let policy = PcrPolicy { entries: vec![PcrExpectation { index: 15, expected: [0xAA; 32], warn_only: false }] };
    let strict: Arc<dyn AttestationValidator> = Arc::new(EngineValidator::new(validator(node.registry(), policy)));
    let (a, c) = server_side(node.issuer(), Arc::new(Verifier::new(vec![strict])));
    let (server, client) = run(a, c).await;
    let e = server.unwrap_err().atls();
    assert!(
        matches!(&e, Error::AttestationFailed { source, .. }
        if matches!(source.downcast_ref::<attest_engine::Error>(), Some(attest_engine::Error::PcrMismatch { pcr: 15, .. }))),
        "{e}"
    );
    assert_aborted_by_peer(client, "handshake_failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_certificate_aborts_the_handshake() {
    let node = Node::start();
    let verifier = node.verifier();

    // Capture an attested certificate and its key from a genuine handshake.
    let (a, c) = client_side(node.issuer(), verifier.clone());
    let (l, addr) = listener().await;
    let capture = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        let s = a.accept(tcp).await.unwrap();
        let ssl = s.ssl();
        Credential { certificate: ssl.certificate().unwrap().to_owned(), key: key_of(ssl) }
    });
    let first = c.connect(TcpStream::connect(addr).await.unwrap()).await.unwrap();
    let captured = capture.await.unwrap();
    assert_eq!(
        first.peer_attestation().unwrap().spki_sha256,
        openssl::sha::sha256(&captured.key.public_key_to_der().unwrap())
    );
    drop(first);

    // Presented again to the verifier that accepted it: named a replay.
    let (server, client) = raw_server_vs(captured.clone(), AtlsConnector::new(None, Some(verifier)).unwrap()).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::ReplayedCertificate { .. }), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    // To a verifier that never saw it, its stale nonce gives it away.
    let (server, client) =
        raw_server_vs(captured.clone(), AtlsConnector::new(None, Some(node.verifier())).unwrap()).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::WrongNonce { .. }), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    // And the other direction: a client replaying it to a verifying server.
    let acceptor = AtlsAcceptor::new(None, Some(node.verifier())).unwrap();
    let (server, client) = raw_client_vs(acceptor, Some(captured), None).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::WrongNonce { channel: NonceChannel::AcceptableCa }), "{e}");
    assert_aborted_by_peer(client, "handshake_failure");
}

/// The private key an SslRef uses (tokio-openssl exposes the SSL; rust-openssl the key).
fn key_of(ssl: &openssl::ssl::SslRef) -> openssl::pkey::PKey<openssl::pkey::Private> {
    let der = ssl.private_key().unwrap().private_key_to_der().unwrap();
    openssl::pkey::PKey::private_key_from_der(&der).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_extension_aborts_the_handshake() {
    let node = Node::start();
    let (server, client) =
        raw_server_vs(cert::plain().unwrap(), AtlsConnector::new(None, Some(node.verifier())).unwrap()).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::MissingExtension), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");

    let acceptor = AtlsAcceptor::new(None, Some(node.verifier())).unwrap();
    let (server, client) = raw_client_vs(acceptor, Some(cert::plain().unwrap()), None).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::MissingExtension), "{e}");
    assert_aborted_by_peer(client, "handshake_failure");

    // No certificate at all.
    let acceptor = AtlsAcceptor::new(None, Some(node.verifier())).unwrap();
    let (server, client) = raw_client_vs(acceptor, None, None).await;
    let e = server.unwrap_err().atls();
    assert!(matches!(e, Error::NoPeerCertificate), "{e}");
    assert!(client.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_self_signature_aborts_the_handshake() {
    // A certificate for key B signed by key A: the TLS handshake itself is fine (the peer holds B).
    let node = Node::start();
    let (a, b) = (cert::fresh_key().unwrap(), cert::fresh_key().unwrap());
    let mut forged = openssl::x509::X509::builder().unwrap();
    let good = cert::build(&b, Some((QEMU_OID, b"not checked before the signature"))).unwrap();
    forged.set_version(2).unwrap();
    forged.set_serial_number(good.serial_number()).unwrap();
    forged.set_subject_name(good.subject_name()).unwrap();
    forged.set_issuer_name(good.issuer_name()).unwrap();
    forged.set_not_before(good.not_before()).unwrap();
    forged.set_not_after(good.not_after()).unwrap();
    forged.set_pubkey(&b).unwrap();
    forged.sign(&a, openssl::hash::MessageDigest::sha256()).unwrap();
    let cred = Credential { certificate: forged.build(), key: b };
    let (server, client) = raw_server_vs(cred, AtlsConnector::new(None, Some(node.verifier())).unwrap()).await;
    let e = client.unwrap_err().atls();
    assert!(matches!(e, Error::BadSelfSignature), "{e}");
    assert_aborted_by_peer(server, "handshake_failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attesting_server_refuses_a_client_without_a_nonce() {
    let node = Node::start();
    for (sni, want_missing) in [(None, true), (Some("not-a-nonce.example"), false)] {
        let acceptor = AtlsAcceptor::new(Some(node.issuer()), None).unwrap();
        let (server, client) = raw_client_vs(acceptor, None, sni).await;
        let e = server.unwrap_err().atls();
        if want_missing {
            assert!(matches!(e, Error::MissingNonce { channel: NonceChannel::ServerName }), "{e}");
        } else {
            assert!(matches!(e, Error::MalformedNonce { channel: NonceChannel::ServerName, .. }), "{e}");
        }
        assert_aborted_by_peer(client, "unrecognized_name");
    }
}

#[test]
fn a_side_that_neither_attests_nor_verifies_is_refused() {
    assert!(matches!(AtlsAcceptor::new(None, None), Err(Error::Config { .. })));
    assert!(matches!(AtlsConnector::new(None, None), Err(Error::Config { .. })));
}

// ---- Interop: Go's crypto/tls as the verifying client ---------------------------------------------------

/// Builds `tests/atls_go/atls_client.go` with Debian's Go in GOPATH mode (no modules, no downloads).
fn build_go_client() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("attest-atls-go-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("atls_client");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/atls_go/atls_client.go");
    let mut cmd = std::process::Command::new("go");
    cmd.args(["build", "-o"]).arg(&out).arg(&src).env("GO111MODULE", "off").env("GOPATH", &dir).env("GOFLAGS", "");
    if std::env::var_os("HOME").is_none() && std::env::var_os("GOCACHE").is_none() {
        cmd.env("GOCACHE", dir.join("cache"));
    }
    let built = cmd.output().expect("running `go` (golang-go; scripts/setup.sh installs it)");
    assert!(built.status.success(), "go build: {}", String::from_utf8_lossy(&built.stderr));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_crypto_tls_client_completes_a_client_side_handshake() {
    let node = Node::start();
    let go = build_go_client();
    let acceptor = AtlsAcceptor::new(Some(node.issuer()), None).unwrap();
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        let mut s = acceptor.accept(tcp).await?;
        let alpn = s.alpn_protocol().map(<[u8]>::to_vec);
        let sni = s.ssl().servername(openssl::ssl::NameType::HOST_NAME).map(str::to_owned);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await; // until Go closes
        Ok::<_, Error>((alpn, sni))
    });

    // A nonce whose standard base64 has '+', '/' and '=': the characters a DNS name never has.
    let mut nonce = [0u8; 32];
    openssl::rand::rand_bytes(&mut nonce).unwrap();
    nonce[..6].copy_from_slice(&[0xFB, 0xEF, 0xBE, 0xFF, 0xFF, 0xFF]);
    let out = tokio::process::Command::new(&go)
        .args([addr.to_string(), QEMU_OID.to_owned(), hex::encode(nonce)])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "Go client failed: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    let field = |k: &str| {
        stdout.lines().find_map(|l| l.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("{k} in {stdout}"))
    };

    // Go sent the base64 nonce as ServerName unchanged ('+', '/', '=' included), and the server read it.
    let sent = field("server_name");
    assert!(sent.starts_with("++++////") && sent.ends_with('='), "{sent}");
    let (alpn, sni) = tokio::time::timeout(TIMEOUT, server).await.unwrap().unwrap().unwrap();
    assert_eq!(sni.as_deref(), Some(sent));
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(field("alpn"), "h2");
    assert_eq!(field("version"), "0304", "TLS 1.3");

    // What Go received is a genuine document for Go's nonce, bound to the key Go saw.
    let document = hex::decode(field("document")).unwrap();
    let spki_sha256 = hex::decode(field("spki_sha256")).unwrap();
    let user_data = node.validator().validate(&document, &nonce).expect("the document Go received validates");
    assert_eq!(user_data, spki_sha256);
    let _ = std::fs::remove_dir_all(go.parent().unwrap());
}
