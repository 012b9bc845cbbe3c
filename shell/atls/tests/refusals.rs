//! Refused handshakes are refused in the handshake, counted by reason and logged at the default level with the
//! reason and the peer's address (`attest_atls::refusal`); aTLS is TLS 1.3 only. No TPM: a stand-in issuer
//! and a validator that refuses, since what is checked here is what aTLS does with a refusal (the engine's
//! refusals themselves, against a swtpm, are in `hwtests/tests/atls.rs`).

use attest_atls::nonce::Nonce;
use attest_atls::{
    AtlsAcceptor, AtlsConnector, AttestationIssuer, AttestationValidator, BoxError, RefusalReason, ValidationError,
    Verifier,
};
use attest_engine::variant::Variant;
use openssl::ssl::{Ssl, SslConnector, SslMethod, SslVerifyMode, SslVersion};
use std::pin::Pin;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

/// Issues an opaque document (nothing here validates it).
#[derive(Debug)]
struct Opaque;

impl AttestationIssuer for Opaque {
    fn oid(&self) -> &str {
        Variant::QemuVtpm.oid()
    }
    fn issue(&self, _: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        Ok(user_data.to_vec())
    }
}

/// Says every document is bound to another nonce: a relayed or stale document.
#[derive(Debug)]
struct OtherNonce;

impl AttestationValidator for OtherNonce {
    fn oid(&self) -> &str {
        Variant::QemuVtpm.oid()
    }
    fn validate(&self, _: &[u8], _: &Nonce) -> Result<Vec<u8>, ValidationError> {
        Err(ValidationError::NonceMismatch)
    }
}

#[path = "support/captured.rs"]
mod captured;
use captured::Captured;

/// Captures this thread's log (the tests run on a current-thread runtime, so the server task logs here too).
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

/// Accepts one connection with `acceptor`; returns the handshake's outcome and the client's address.
fn accept_one(
    l: TcpListener,
    acceptor: AtlsAcceptor,
) -> tokio::task::JoinHandle<(Result<(), attest_atls::Error>, std::net::SocketAddr)> {
    tokio::spawn(async move {
        let (tcp, peer) = l.accept().await.unwrap();
        (acceptor.accept_from(tcp, Some(peer)).await.map(|_| ()), peer)
    })
}

/// A raw OpenSSL client capped at TLS 1.2.
async fn tls12_client(addr: std::net::SocketAddr) -> Result<(), openssl::ssl::Error> {
    let mut b = SslConnector::builder(SslMethod::tls()).unwrap();
    b.set_verify(SslVerifyMode::NONE);
    b.set_max_proto_version(Some(SslVersion::TLS1_2)).unwrap();
    let mut ssl = Ssl::new(&b.build().into_context()).unwrap();
    ssl.set_hostname(&attest_atls::nonce::encode(&[7; 32])).unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut s = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
    Pin::new(&mut s).connect().await
}

#[tokio::test]
async fn a_tls_1_2_client_is_refused_counted_and_logged_with_its_address() {
    let (logs, _guard) = capture();
    let acceptor = AtlsAcceptor::new(Some(Arc::new(Opaque)), None).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let server = accept_one(l, acceptor.clone());
    assert!(tls12_client(addr).await.is_err(), "a TLS 1.2 client completed an aTLS handshake");
    let (server, peer) = server.await.unwrap();
    let e = server.unwrap_err();
    assert_eq!(RefusalReason::of(&e), RefusalReason::ProtocolVersion, "{e}");
    assert_eq!(acceptor.refusals().count(RefusalReason::ProtocolVersion), 1);
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("aTLS handshake refused")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("reason=\"protocol_version\"") || line.contains("reason=protocol_version"), "{line}");
    assert!(line.contains(&peer.to_string()), "{line}");
}

#[tokio::test]
async fn a_tls_1_2_server_is_refused_by_an_atls_client() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut b = openssl::ssl::SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
        let key = attest_atls::cert::fresh_key().unwrap();
        b.set_certificate(&attest_atls::cert::build(&key, None).unwrap()).unwrap();
        b.set_private_key(&key).unwrap();
        b.set_max_proto_version(Some(SslVersion::TLS1_2)).unwrap();
        let (tcp, _) = l.accept().await.unwrap();
        let mut s = tokio_openssl::SslStream::new(Ssl::new(&b.build().into_context()).unwrap(), tcp).unwrap();
        Pin::new(&mut s).accept().await.map_err(|e| e.to_string())
    });
    let verifier = Arc::new(Verifier::new(vec![Arc::new(OtherNonce) as Arc<dyn AttestationValidator>]));
    let connector = AtlsConnector::new(None, Some(verifier)).unwrap();
    let e = connector.connect_to(TcpStream::connect(addr).await.unwrap(), Some(addr)).await.unwrap_err();
    assert!(server.await.unwrap().is_err());
    assert_eq!(RefusalReason::of(&e), RefusalReason::ProtocolVersion, "{e}");
    assert_eq!(connector.refusals().count(RefusalReason::ProtocolVersion), 1);
}

/// A document bound to another nonce (relayed from another connection, or a stale one) is refused in the
/// handshake; the verifying server counts it and logs the reason and the client's address.
#[tokio::test]
async fn a_relayed_or_stale_document_is_refused_and_logged_with_the_peer() {
    let (logs, _guard) = capture();
    let verifier = Arc::new(Verifier::new(vec![Arc::new(OtherNonce) as Arc<dyn AttestationValidator>]));
    let acceptor = AtlsAcceptor::new(None, Some(verifier)).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let server = accept_one(l, acceptor.clone());
    let connector = AtlsConnector::new(Some(Arc::new(Opaque)), None).unwrap();
    // TLS 1.3: the client's handshake completes before the server judges its certificate.
    let _client = connector.connect(TcpStream::connect(addr).await.unwrap()).await;
    let (server, peer) = server.await.unwrap();
    assert_eq!(RefusalReason::of(&server.unwrap_err()), RefusalReason::WrongNonce);
    assert_eq!(acceptor.refusals().count(RefusalReason::WrongNonce), 1);
    let text = logs.text();
    assert!(
        text.lines().any(|l| l.contains("WARN")
            && l.contains("aTLS handshake refused")
            && l.contains("wrong_nonce")
            && l.contains(&peer.to_string())),
        "{text}"
    );
}
