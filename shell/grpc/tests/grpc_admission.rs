//! Fair admission against the h2c server: sockets that never finish their handshake — idle,
//! silent, trickling — from one peer or from many must not keep a genuine client out, connections that
//! finished their handshake keep their slots, and the pending phase ends at a deadline counted from accept.
//!
//! Attackers connect from `127.66.x.y` (distinct loopback peers), the genuine client from 127.0.0.1. Every
//! attack is bounded (a fixed number of sockets, closed at the end) and every case runs under a timeout so
//! that a hang fails; nothing asserts wall-clock speed.
#![forbid(unsafe_code)]

mod grpc_support;

use std::time::Duration;

use attest_grpc::{Channel, ChannelConfig, Metadata, ServerConfig};
use attest_test_support::h2raw::{connect_from, loopback_peer};
use grpc_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CASE_LIMIT: Duration = Duration::from_secs(120);

/// Lets the server look at sockets just opened (what an attacker *holds* has been read from).
async fn held() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

async fn bounded(name: &str, body: impl Future<Output = ()>) {
    assert!(tokio::time::timeout(CASE_LIMIT, body).await.is_ok(), "{name}: did not finish within {CASE_LIMIT:?}");
}

/// A genuine unary call on a fresh connection from 127.0.0.1.
async fn genuine_call(t: &TestServer) -> Result<(), attest_grpc::Status> {
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await?;
    let req = EchoRequest { payload: b"genuine".to_vec(), ..Default::default() };
    let reply = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await?;
    assert_eq!(reply.message.payload, b"genuine");
    Ok(())
}

/// `n` idle TCP connections (nothing sent) from peer `peer`; connections the server refused at once are
/// skipped.
async fn idle_sockets(t: &TestServer, peers: std::ops::Range<u32>, per_peer: usize) -> Vec<TcpStream> {
    let mut held = Vec::new();
    for p in peers {
        for _ in 0..per_peer {
            if let Ok(s) = connect_from(loopback_peer(p), t.addr).await {
                held.push(s);
            }
        }
    }
    held
}

/// Whether the server closed `s` (EOF or reset) within `limit`.
async fn closed_by_server(s: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 256];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, read).await.unwrap_or(false)
}

/// The first attack, scaled to the test server: 1,100 idle sockets from one peer, more than the
/// listener's whole connection limit. The peer can hold only its own pending quota; the genuine client is
/// served while they are held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_from_one_peer_hold_only_that_peers_quota() {
    bounded("one peer", async {
        // A long first-byte timeout: here the per-peer quota alone must hold the line.
        let config = ServerConfig { first_byte_timeout: Duration::from_secs(60), ..ServerConfig::default() };
        let t = start(config.clone()).await;
        let sockets = idle_sockets(&t, 0..1, 1100).await;
        let decided = |s: &attest_grpc::AdmissionStats| s.admitted + s.refused_peer_limit + s.refused_connection_limit;
        assert!(eventually(Duration::from_secs(30), || decided(&t.server.admission_stats()) == 1100).await);
        let s = t.server.admission_stats();
        println!("after 1,100 idle sockets from one peer: {s:?}");
        assert_eq!(s.pending, config.max_handshakes_per_peer, "the peer holds exactly its pending quota");
        assert_eq!(s.refused_connection_limit, 0, "only the peer's own quota was touched");
        held().await;
        for _ in 0..10 {
            genuine_call(&t).await.expect("a genuine client is served while the sockets are held");
        }
        drop(sockets);
    })
    .await;
}

/// Idle sockets from 200 peers (5 each: within every per-peer limit), each re-opened from its peer one
/// second after the server closes it (ten times the pace of the "reconnect every 10 s"), while the
/// genuine client makes 30 calls on fresh connections: every call succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_from_many_peers_are_shed_for_genuine_clients() {
    bounded("many peers", async {
        // A long first-byte timeout: shedding alone must make room (the timeout is tested below).
        let config = ServerConfig {
            max_connections: 256,
            max_handshakes: 64,
            first_byte_timeout: Duration::from_secs(60),
            ..ServerConfig::default()
        };
        let t = start(config).await;
        // Each attacker socket lives in a task that re-opens it from the same peer as soon as the server
        // closes it.
        let attacker_addr = t.addr;
        let replaced = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut holders = Vec::new();
        for p in 0..200u32 {
            for _ in 0..5 {
                let (replaced, mut stopped) = (std::sync::Arc::clone(&replaced), stopped.clone());
                holders.push(tokio::spawn(async move {
                    loop {
                        if let Ok(mut s) = connect_from(loopback_peer(p), attacker_addr).await {
                            // Hold it (reading what the server sends, its SETTINGS) until the server closes it.
                            let mut buf = [0u8; 64];
                            let until_closed = async { while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {} };
                            tokio::select! {
                                () = until_closed => {}
                                _ = stopped.wait_for(|s| *s) => return,
                            }
                            replaced.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            _ = stopped.wait_for(|s| *s) => return,
                        }
                    }
                }));
            }
        }
        let full = eventually(Duration::from_secs(10), || t.server.admission_stats().pending == 64).await;
        assert!(full, "{:?}", t.server.admission_stats());
        held().await;
        let mut served = 0;
        for _ in 0..30 {
            genuine_call(&t).await.expect("genuine call while attacked");
            served += 1;
        }
        let _ = stop.send(true);
        for h in holders {
            h.await.unwrap();
        }
        let replaced = replaced.load(std::sync::atomic::Ordering::Relaxed);
        let s = t.server.admission_stats();
        println!("genuine calls served: {served}/30 while {replaced} attacker sockets were opened; {s:?}");
        assert!(s.evicted >= 30, "each genuine connection shed an idle socket");
    })
    .await;
}

/// Established connections keep their slots: with 6 of 8 slots held by established genuine connections and
/// the other 2 by idle attackers, a new genuine client still gets in (an idle socket is shed), the held
/// connections keep working; when all 8 are established and idle, a new client reclaims the oldest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn established_connections_keep_their_reserved_slots() {
    bounded("reserve", async {
        let config = ServerConfig {
            max_connections: 8,
            max_handshakes: 2,
            max_connections_per_peer: 8,
            ..ServerConfig::default()
        };
        let t = start(config).await;
        let mut channels = Vec::new();
        for _ in 0..6 {
            let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
            let req = EchoRequest { payload: b"x".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
            channels.push(ch);
        }
        let _attackers = idle_sockets(&t, 0..10, 1).await;
        held().await;
        let s = t.server.admission_stats();
        assert_eq!((s.established_open, s.pending), (6, 2), "{s:?}");
        genuine_call(&t).await.expect("a new genuine client gets a pending slot by shedding an idle socket");
        for ch in &channels {
            let req = EchoRequest { payload: b"y".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.expect("held connection still served");
        }
        // Fill the last two slots with established connections: nothing pending to shed, but all of them idle
        // (no call in flight), so a new client reclaims the oldest idle one instead of being refused.
        for _ in 0..2 {
            let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
            let req = EchoRequest { payload: b"z".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
            channels.push(ch);
        }
        assert!(eventually(Duration::from_secs(10), || t.server.admission_stats().established_open == 8).await);
        genuine_call(&t).await.expect("an idle established connection gives way");
        let s = t.server.admission_stats();
        assert_eq!((s.reclaimed, s.refused_connection_limit), (1, 0), "{s:?}");
    })
    .await;
}

/// Established connections hold their slots idle for as long as HTTP/2 lets them (`idle_timeout`): from
/// enough addresses they would fill a listener with nothing to shed. When every slot is established, the
/// oldest *idle* one is reclaimed (GOAWAY) for a new connection; one with a call in flight never is, and a
/// listener full of busy connections refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_established_connections_give_way_busy_ones_do_not() {
    bounded("reclaim", async {
        let config = ServerConfig { max_connections: 4, max_handshakes: 2, ..ServerConfig::default() };
        let t = start(config).await;
        // Four attackers, four addresses: each completes a handshake and a call, then holds its connection.
        let mut held = Vec::new();
        for p in 0..4 {
            let tcp = connect_from(loopback_peer(p), t.addr).await.unwrap();
            let ch = Channel::handshake(tcp, "attacker", ChannelConfig::default()).await.unwrap();
            let req = EchoRequest { payload: b"a".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
            held.push(ch);
        }
        assert!(eventually(Duration::from_secs(10), || t.server.admission_stats().established_open == 4).await);
        // Genuine clients that keep their connections (idle after their call): each reclaims the oldest idle
        // connection, an attacker's, never a newer genuine one.
        let mut genuine = Vec::new();
        for _ in 0..3 {
            let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
            let req = EchoRequest { payload: b"g".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None)
                .await
                .expect("genuine client served while idle established connections fill the listener");
            genuine.push(ch);
        }
        assert_eq!(t.server.admission_stats().reclaimed, 3);
        for ch in &genuine {
            let req = EchoRequest { payload: b"h".to_vec(), ..Default::default() };
            ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.expect("genuine connections kept");
        }
        drop(genuine);

        // Now four connections with a call in flight: none is reclaimed, and a new connection is refused.
        drop(held);
        assert!(eventually(Duration::from_secs(10), || t.server.admission_stats().established_open == 0).await);
        let mut busy = Vec::new();
        for p in 10..14 {
            let tcp = connect_from(loopback_peer(p), t.addr).await.unwrap();
            let ch = Channel::handshake(tcp, "busy", ChannelConfig::default()).await.unwrap();
            busy.push(tokio::spawn(async move {
                let req = EchoRequest { payload: b"b".to_vec(), sleep_ms: 3000, ..Default::default() };
                ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.map(|r| r.message.payload)
            }));
            // A connection is established at its first request; until then it is pending, and two pending
            // connections (max_handshakes) would make the next one shed the quieter: wait for each call.
            let n = busy.len();
            assert!(eventually(Duration::from_secs(10), || t.server.admission_stats().established_open == n).await);
        }
        assert!(
            eventually(Duration::from_secs(10), || t.server.admission_stats().established_open == 4).await,
            "{:?}",
            t.server.admission_stats()
        );
        let mut refused = connect_from(loopback_peer(99), t.addr).await.unwrap();
        assert!(
            closed_by_server(&mut refused, Duration::from_secs(10)).await,
            "a listener of busy connections refuses"
        );
        let s = t.server.admission_stats();
        assert_eq!((s.reclaimed, s.refused_connection_limit), (3, 1), "{s:?}");
        for b in busy {
            assert_eq!(b.await.unwrap().expect("a busy connection's call completes"), b"b");
        }
    })
    .await;
}

/// A socket that sends nothing is closed at the first-byte timeout; a preface trickled one byte at a time is
/// closed at the handshake deadline from accept (the trickle never extends it); an HTTP/2 connection that
/// finishes its preface but never completes a request is pending too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_count_from_accept() {
    bounded("deadlines", async {
        let config = ServerConfig {
            first_byte_timeout: Duration::from_millis(300),
            handshake_timeout: Duration::from_secs(1),
            ..ServerConfig::default()
        };
        let t = start(config).await;
        let mut silent = TcpStream::connect(t.addr).await.unwrap();
        assert!(closed_by_server(&mut silent, Duration::from_secs(10)).await);
        assert_eq!(t.server.admission_stats().silent, 1);

        let mut trickle = TcpStream::connect(t.addr).await.unwrap();
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        let mut cut = false;
        // One byte every 200 ms: the preface alone would take 4.8 s, the deadline is 1 s from accept.
        for b in preface {
            if trickle.write_all(&[*b]).await.is_err() {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(cut || closed_by_server(&mut trickle, Duration::from_secs(10)).await, "trickled handshake left open");
        assert!(eventually(Duration::from_secs(10), || t.server.admission_stats().deadline >= 1).await);

        // Preface and SETTINGS, then never a request.
        let mut quiet = RawConnLike::handshake(t.addr).await;
        assert!(closed_by_server(&mut quiet, Duration::from_secs(10)).await, "no request: closed at the deadline");
        let counted = eventually(Duration::from_secs(10), || t.server.admission_stats().deadline >= 2).await;
        assert!(counted, "{:?}", t.server.admission_stats());
        genuine_call(&t).await.unwrap();
    })
    .await;
}

/// An HTTP/2 client that sends the preface and SETTINGS and nothing else.
struct RawConnLike;

impl RawConnLike {
    async fn handshake(addr: std::net::SocketAddr) -> TcpStream {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend(attest_test_support::h2raw::settings(&[]));
        s.write_all(&hello).await.unwrap();
        s
    }
}
