//! Slow and idle callers against a node's verify service (`attest_bootstrapper::serve::verifysvc`,
//! limits in `endpoint_limits`): slow-loris HTTP headers (one byte every 2 s) on more connections than the
//! service's limit, from one address and from many, and idle sockets and unfinished HTTP/2 requests on its
//! gRPC side — while a genuine caller's `GET /?nonce=` and `GetAttestation` are served, every one of them.
//!
//! The node's TPM is a stand-in issuer that takes 2 ms per "quote" (a swtpm quote costs 1–4 ms), so that
//! queued quotes cost time as they would. Attackers connect from `127.66.x.y`, the genuine caller from
//! 127.0.0.1. Bounded: fixed socket counts, dropped at the end of each case; nothing asserts speed.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::nonce::Nonce;
use attest_atls::{AttestationIssuer, BoxError};
use attest_bootstrapper::serve::endpoint_limits::MAX_VERIFY_CONNECTIONS;
use attest_bootstrapper::serve::verifysvc::{VerifyServers, serve_verify};
use attest_grpc::{Channel, ChannelConfig, Metadata};
use attest_proto::paths;
use attest_proto::verify::{GetAttestationRequest, GetAttestationResponse};
use attest_test_support::figures::{Latencies, genuine_calls};
use attest_test_support::h2raw::{connect_from, loopback_peer};
use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CASE_LIMIT: Duration = Duration::from_secs(120);

/// A "TPM" that takes 2 ms per quote and echoes the nonce.
#[derive(Debug)]
struct SlowQuote;

impl AttestationIssuer for SlowQuote {
    fn oid(&self) -> &'static str {
        "1.2.3"
    }
    fn issue(&self, nonce: &Nonce, _user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        std::thread::sleep(Duration::from_millis(2));
        Ok(nonce.to_vec())
    }
}

async fn servers() -> VerifyServers {
    let g = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let h = TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_verify(Arc::new(SlowQuote), Some(g), Some(h)).unwrap()
}

/// A genuine `GET /?nonce=` from 127.0.0.1: the answer carries this nonce.
async fn genuine_get(addr: SocketAddr, i: u8) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let nonce = [i; 32];
    let query = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(nonce);
    let mut tcp = TcpStream::connect(addr).await?;
    let request = format!("GET /?nonce={query} HTTP/1.1\r\nHost: node\r\n\r\n");
    tcp.write_all(request.as_bytes()).await?;
    let mut out = String::new();
    tcp.read_to_string(&mut out).await?;
    if !out.starts_with("HTTP/1.1 200") {
        return Err(format!("not served: {out:?}").into());
    }
    let body: serde_json::Value = serde_json::from_str(out.split("\r\n\r\n").nth(1).unwrap_or("")).unwrap();
    let doc = base64::engine::general_purpose::STANDARD.decode(body["attestation"].as_str().unwrap()).unwrap();
    if doc == nonce { Ok(()) } else { Err("another nonce's document".into()) }
}

/// A genuine `verify.API/GetAttestation` on a fresh connection from 127.0.0.1.
async fn genuine_grpc(addr: SocketAddr, i: u8) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let ch = Channel::connect(addr, ChannelConfig::default()).await?;
    let r = ch
        .unary::<_, GetAttestationResponse>(
            paths::VERIFY_GET_ATTESTATION,
            GetAttestationRequest { nonce: vec![i; 32] },
            Metadata::new(),
            Some(Duration::from_secs(30)),
        )
        .await?;
    if r.message.attestation == [i; 32] { Ok(()) } else { Err("another nonce's document".into()) }
}

/// `n` slow-loris HTTP clients spread over `peers` addresses: each sends a request head one byte every
/// `every`, re-connecting when the server closes it, until the task is aborted.
fn slow_loris(addr: SocketAddr, n: u32, peers: u32, every: Duration) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            tokio::spawn(async move {
                let head = b"GET /?nonce=AAAA HTTP/1.1\r\nHost: node\r\nX-Slow: ";
                loop {
                    let Ok(mut s) = connect_from(loopback_peer(i % peers), addr).await else {
                        tokio::time::sleep(every).await;
                        continue;
                    };
                    for b in head.iter().cycle() {
                        if s.write_all(&[*b]).await.is_err() {
                            break;
                        }
                        tokio::time::sleep(every).await;
                    }
                }
            })
        })
        .collect()
}

async fn bounded(name: &str, body: impl Future<Output = ()>) {
    assert!(tokio::time::timeout(CASE_LIMIT, body).await.is_ok(), "{name}: did not finish within {CASE_LIMIT:?}");
}

/// The issue's attack: 70 connections (more than the 64 allowed) sending one header byte every 2 s, from
/// 70 addresses and then from one; 20 genuine `GET /?nonce=` meanwhile, every one served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_beyond_the_limit_leave_genuine_http_verifies_served() {
    bounded("slow headers", async {
        let s = servers().await;
        let addr = s.http_addr.unwrap();
        for peers in [70, 1] {
            let attackers = slow_loris(addr, (MAX_VERIFY_CONNECTIONS + 6) as u32, peers, Duration::from_secs(2));
            // Let every slow connection be accepted and read from before the genuine caller comes.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut latencies = Latencies::new();
            for i in 0..genuine_calls(20) {
                let t0 = std::time::Instant::now();
                genuine_get(addr, i.to_le_bytes()[0])
                    .await
                    .unwrap_or_else(|e| panic!("genuine GET {i} with {peers} attacker peers: {e}"));
                latencies.record(Some(t0.elapsed()));
            }
            println!("{}", latencies.summary(&format!("verify GET under slow headers from {peers} addresses")));
            for a in attackers {
                a.abort();
            }
        }
        let stats = s.admission_sources().into_iter().find(|(n, _)| *n == "verify-http").map(|(_, f)| f()).unwrap();
        println!("verify-http admission after both attacks: {stats:?}");
        assert!(stats.evicted > 0, "the slow connections were shed: {stats:?}");
        s.shutdown(Duration::from_secs(1)).await;
    })
    .await;
}

/// Idle sockets and HTTP/2 connections that never finish a request, beyond the gRPC side's limit, from 80
/// addresses; 20 genuine `GetAttestation` calls meanwhile, every one served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_unfinished_grpc_connections_leave_genuine_grpc_verifies_served() {
    bounded("gRPC", async {
        let s = servers().await;
        let addr = s.grpc_addr.unwrap();
        let mut held = Vec::new();
        for i in 0..(2 * MAX_VERIFY_CONNECTIONS as u32) {
            let Ok(mut tcp) = connect_from(loopback_peer(i % 80), addr).await else { continue };
            if i % 2 == 0 {
                // The preface and a HEADERS frame without END_HEADERS: a request that never completes.
                let mut hello = attest_test_support::h2raw::PREFACE.to_vec();
                hello.extend(attest_test_support::h2raw::settings(&[]));
                hello.extend(attest_test_support::h2raw::frame(attest_test_support::h2raw::HEADERS, 0, 1, b"\x82"));
                let _ = tcp.write_all(&hello).await;
            }
            held.push(tcp);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut latencies = Latencies::new();
        for i in 0..genuine_calls(20) {
            let t0 = std::time::Instant::now();
            genuine_grpc(addr, i.to_le_bytes()[0]).await.unwrap_or_else(|e| panic!("genuine GetAttestation {i}: {e}"));
            latencies.record(Some(t0.elapsed()));
        }
        println!("{}", latencies.summary("verify GetAttestation under idle and unfinished HTTP/2"));
        drop(held);
        let stats = s.admission_sources().into_iter().find(|(n, _)| *n == "verify-grpc").map(|(_, f)| f()).unwrap();
        println!("verify-grpc admission: {stats:?}");
        assert!(stats.evicted > 0, "{stats:?}");
        s.shutdown(Duration::from_secs(1)).await;
    })
    .await;
}
