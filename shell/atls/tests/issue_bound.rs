//! An aTLS server produces at most `MAX_CONCURRENT_ISSUES` attestations at once: a flood of
//! ClientHellos — each asks the server for a fresh attestation, a TPM quote — queues handshakes as waiting
//! futures, not as quotes, and the ones shed by admission (the listener's pending cap) never cost a quote.
//!
//! The issuer here blocks on a gate, so what is counted is how many attestations were *started* while the
//! flood is held: nothing depends on timing.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use attest_atls::nonce::Nonce;
use attest_atls::{AtlsAcceptor, AttestationIssuer, BoxError, MAX_CONCURRENT_ISSUES};
use attest_grpc::{Router, Server, ServerConfig};
use base64::Engine;

/// An issuer that counts the attestations started and blocks each until the gate opens.
#[derive(Debug, Default)]
struct Gated {
    started: AtomicUsize,
    open: Mutex<bool>,
    opened: Condvar,
}

impl AttestationIssuer for Gated {
    fn oid(&self) -> &'static str {
        "1.3.9999.1"
    }
    fn issue(&self, nonce: &Nonce, _user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
        Ok(nonce.to_vec())
    }
}

/// Sends a ClientHello with a well-formed nonce (the SNI) from `source`, then waits (the server's flight never
/// comes while the gate is shut); the returned task holds the connection.
fn client_hello(source: std::net::IpAddr, addr: SocketAddr) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(source, 0)).unwrap();
        let Ok(tcp) = socket.connect(addr).await else { return };
        let mut b = openssl::ssl::SslConnector::builder(openssl::ssl::SslMethod::tls_client()).unwrap();
        b.set_verify(openssl::ssl::SslVerifyMode::NONE);
        b.set_alpn_protos(b"\x02h2").unwrap();
        let mut config = b.build().configure().unwrap();
        config.set_verify_hostname(false);
        let sni = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let ssl = config.into_ssl(&sni).unwrap();
        let mut tls = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
        let _ = std::pin::Pin::new(&mut tls).connect().await;
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clienthello_flood_starts_at_most_the_bounded_number_of_attestations() {
    let issuer = Arc::new(Gated::default());
    let acceptor = Arc::new(AtlsAcceptor::new(Some(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>), None).unwrap());
    let config = ServerConfig { max_handshakes: 8, ..ServerConfig::default() };
    let server = Server::new(Router::new(), config);
    let addr = attest_atls::grpc::serve(&server, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), acceptor)
        .unwrap();
    // 40 ClientHellos from 40 addresses: beyond the 8 pending slots, the oldest are shed as new ones come.
    let clients: Vec<_> = (0..40u8).map(|i| client_hello([127, 66, 0, i + 1].into(), addr)).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while server.admission_stats().admitted < 40 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = server.admission_stats();
    assert_eq!(s.admitted, 40, "{s:?}");
    assert!(s.evicted >= 32, "{s:?}");
    let started = issuer.started.load(Ordering::SeqCst);
    println!("40 ClientHellos held: {started} attestations started, {s:?}");
    assert!(started <= MAX_CONCURRENT_ISSUES, "{started} attestations started for 40 held ClientHellos");
    // Open the gate: the waiting handshakes of connections still held go on; nothing was queued for the shed.
    *issuer.open.lock().unwrap() = true;
    issuer.opened.notify_all();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = issuer.started.load(Ordering::SeqCst);
    assert!(after <= MAX_CONCURRENT_ISSUES + 8, "{after} attestations for 8 pending connections");
    for c in clients {
        c.abort();
    }
    server.shutdown(Duration::from_secs(1)).await;
}
