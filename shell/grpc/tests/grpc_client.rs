//! The gRPC client: against our server (metadata, status round trips, streaming, deadlines, sizes) and
//! against a raw h2 server that misbehaves in controlled ways (HTTP errors, resets, missing trailers).

mod grpc_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use attest_grpc::{Channel, ChannelConfig, Code, Metadata, ServerConfig, Status};
use bytes::Bytes;
use grpc_support::*;

async fn channel(addr: SocketAddr) -> Channel {
    Channel::connect(addr, ChannelConfig::default()).await.unwrap()
}

fn fail(code: i32, message: &str) -> EchoRequest {
    EchoRequest { fail_code: code, fail_message: message.into(), ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_metadata_round_trip() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let mut md = Metadata::new();
    md.append("x-user", "alice").unwrap();
    md.append("x-multi", "1").unwrap();
    md.append("x-multi", "2").unwrap();
    md.append_bin("x-blob-bin", &[0, 1, 2, 0xFE, 0xFF]).unwrap();
    let req = EchoRequest { payload: b"hi".to_vec(), ..Default::default() };
    let r = ch.unary::<_, EchoReply>(ECHO, req, md, Some(Duration::from_secs(5))).await.unwrap();
    assert_eq!(r.message.payload, b"hi");
    assert_eq!(r.metadata.get("x-user"), Some("alice"));
    assert_eq!(r.metadata.get_all("x-multi"), vec!["1", "2"]);
    assert_eq!(r.metadata.get_bin("x-blob-bin").unwrap().unwrap(), vec![0, 1, 2, 0xFE, 0xFF]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_code_and_arbitrary_utf8_messages_round_trip() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let messages = ["", "plain", "100% sure", "ünïcödé — 日本語 🚀", "line\nbreak\ttab\r", "%41%", "\u{0}\u{7f}\u{80}"];
    for code in Code::ALL.iter().skip(1) {
        for m in messages {
            let e = ch.unary::<_, EchoReply>(ECHO, fail(code.as_i32(), m), Metadata::new(), None).await.unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (*code, m));
            assert_eq!(e.metadata.get("x-fail"), Some("yes"));
        }
    }
    // Codes outside 0–16 arrive as UNKNOWN.
    let e = ch.unary::<_, EchoReply>(ECHO, fail(99, "x"), Metadata::new(), None).await.unwrap_err();
    assert_eq!(e.code, Code::Unknown);
    // On the wire the message is percent-encoded ASCII.
    let send = raw_client(t.addr).await;
    let body = prefixed(0, &encode(&fail(3, "a%b\u{e9}\n")));
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![body], true).await;
    assert_eq!(r.grpc_message().as_deref(), Some("a%25b%C3%A9%0A"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unimplemented_and_streaming() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let e = ch.unary::<_, EchoReply>(MISSING, EchoRequest::default(), Metadata::new(), None).await.unwrap_err();
    assert_eq!(e.code, Code::Unimplemented);
    let e = ch.server_streaming::<_, EchoReply>(MISSING, EchoRequest::default(), Metadata::new(), None).await;
    assert_eq!(e.unwrap().message.collect().await.unwrap_err().code, Code::Unimplemented);

    let mut md = Metadata::new();
    md.append("x-s", "v").unwrap();
    let req = EchoRequest { count: 50, payload: b"p".to_vec(), ..Default::default() };
    let r = ch.server_streaming::<_, EchoReply>(STREAM, req, md, None).await.unwrap();
    assert_eq!(r.metadata.get("x-s"), Some("v"));
    let all = r.message.collect().await.unwrap();
    assert_eq!(all.iter().map(|m| m.index).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
    // Zero messages then OK.
    let r = ch.server_streaming::<_, EchoReply>(STREAM, EchoRequest::default(), Metadata::new(), None).await;
    assert!(r.unwrap().message.collect().await.unwrap().is_empty());
    // Messages then an error status.
    let req = EchoRequest { count: 3, fail_code: 9, fail_message: "after three".into(), ..Default::default() };
    let mut s = ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), None).await.unwrap().message;
    for i in 0..3 {
        assert_eq!(s.message().await.unwrap().unwrap().index, i);
    }
    let e = s.message().await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (Code::FailedPrecondition, "after three"));
    assert_eq!(s.message().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let start = Instant::now();
    let req = EchoRequest { sleep_ms: 5000, ..Default::default() };
    let e = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), Some(Duration::from_millis(150))).await.unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded);
    assert!(start.elapsed() >= Duration::from_millis(140));
    assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.dropped) == 1).await);
    // Streaming: the deadline covers the whole stream.
    let req = EchoRequest { count: 100, sleep_ms: 50, ..Default::default() };
    let s = ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), Some(Duration::from_millis(300))).await;
    let e = s.unwrap().message.collect().await.unwrap_err();
    // 100 messages 50 ms apart would take 5 s: the stream was cut by its deadline.
    assert_eq!(e.code, Code::DeadlineExceeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_and_response_limit() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let req = EchoRequest { payload: vec![7; 3_000_000], ..Default::default() };
    let r = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(r.message.payload.len(), 3_000_000);
    let small = Channel::connect(t.addr, ChannelConfig { max_message_size: 1000, ..Default::default() }).await.unwrap();
    let req = EchoRequest { reply_size: 2000, ..Default::default() };
    let e = small.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted);
    let req = EchoRequest { reply_size: 10, ..Default::default() };
    small.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_calls_on_one_channel() {
    let t = start(ServerConfig::default()).await;
    let ch = channel(t.addr).await;
    let calls: Vec<_> = (0..100u32)
        .map(|i| {
            let ch = ch.clone();
            tokio::spawn(async move {
                let req = EchoRequest { payload: i.to_be_bytes().to_vec(), sleep_ms: 50, ..Default::default() };
                ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), Some(Duration::from_secs(10))).await
            })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap().message.payload, (i as u32).to_be_bytes());
    }
}

// ---- against a scripted raw h2 server ----

/// What the scripted server does with each request.
#[derive(Clone, Copy)]
enum Script {
    Http(u16),
    HttpWithStatus(u16, i32),
    NoTrailers,
    Reset(h2::Reason),
    EchoHeaders,
    TwoMessages,
}

/// A raw h2 server that answers every request per `script`; returns its address and the last request headers.
async fn scripted(script: Script) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<http::HeaderMap>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut conn = h2::server::handshake(tcp).await.unwrap();
        while let Some(Ok((req, mut respond))) = conn.accept().await {
            let _ = tx.send(req.headers().clone());
            tokio::spawn(async move {
                let mut body = req.into_body();
                while let Some(Ok(c)) = body.data().await {
                    let _ = body.flow_control().release_capacity(c.len());
                }
                let ok = || http::Response::builder().status(200).header("content-type", "application/grpc");
                let reply = Bytes::from(prefixed(0, &encode(&EchoReply::default())));
                match script {
                    Script::Http(s) => {
                        let _ = respond.send_response(http::Response::builder().status(s).body(()).unwrap(), true);
                    }
                    Script::HttpWithStatus(s, g) => {
                        let r = http::Response::builder().status(s).header("grpc-status", g.to_string()).body(());
                        let _ = respond.send_response(r.unwrap(), true);
                    }
                    Script::NoTrailers => {
                        let mut s = respond.send_response(ok().body(()).unwrap(), false).unwrap();
                        let _ = s.send_data(reply, true);
                    }
                    Script::Reset(reason) => respond.send_reset(reason),
                    Script::EchoHeaders | Script::TwoMessages => {
                        let mut s = respond.send_response(ok().body(()).unwrap(), false).unwrap();
                        let _ = s.send_data(reply.clone(), false);
                        if matches!(script, Script::TwoMessages) {
                            let _ = s.send_data(reply, false);
                        }
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        let _ = s.send_trailers(trailers);
                    }
                }
            });
        }
    });
    (addr, rx)
}

async fn call_scripted(script: Script) -> Result<EchoReply, Status> {
    let (addr, _rx) = scripted(script).await;
    let ch = channel(addr).await;
    ch.unary::<_, EchoReply>(ECHO, EchoRequest::default(), Metadata::new(), Some(Duration::from_secs(5)))
        .await
        .map(|r| r.message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_mapping() {
    for (http, code) in [
        (400, Code::Internal),
        (401, Code::Unauthenticated),
        (403, Code::PermissionDenied),
        (404, Code::Unimplemented),
        (415, Code::Unknown),
        (429, Code::Unavailable),
        (500, Code::Unknown),
        (502, Code::Unavailable),
        (503, Code::Unavailable),
        (504, Code::Unavailable),
    ] {
        assert_eq!(call_scripted(Script::Http(http)).await.unwrap_err().code, code, "{http}");
    }
    // grpc-status, when present, wins over the HTTP status.
    let e = call_scripted(Script::HttpWithStatus(503, 7)).await.unwrap_err();
    assert_eq!(e.code, Code::PermissionDenied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_responses() {
    assert_eq!(call_scripted(Script::NoTrailers).await.unwrap_err().code, Code::Internal);
    assert_eq!(call_scripted(Script::TwoMessages).await.unwrap_err().code, Code::Internal);
    for (reason, code) in [
        (h2::Reason::REFUSED_STREAM, Code::Unavailable),
        (h2::Reason::CANCEL, Code::Cancelled),
        (h2::Reason::ENHANCE_YOUR_CALM, Code::ResourceExhausted),
        (h2::Reason::INADEQUATE_SECURITY, Code::PermissionDenied),
        (h2::Reason::INTERNAL_ERROR, Code::Internal),
    ] {
        assert_eq!(call_scripted(Script::Reset(reason)).await.unwrap_err().code, code, "{reason:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_headers_on_the_wire() {
    let (addr, mut rx) = scripted(Script::EchoHeaders).await;
    let ch = channel(addr).await;
    let mut md = Metadata::new();
    md.append_bin("x-b-bin", &[0xFF]).unwrap();
    ch.unary::<_, EchoReply>(ECHO, EchoRequest::default(), md, Some(Duration::from_millis(1500))).await.unwrap();
    let h = rx.recv().await.unwrap();
    assert_eq!(h["content-type"], "application/grpc");
    assert_eq!(h["te"], "trailers");
    assert_eq!(h["x-b-bin"], "/w");
    let timeout = attest_grpc::metadata::parse_timeout(h["grpc-timeout"].as_bytes()).unwrap();
    assert!(timeout <= Duration::from_millis(1500) && timeout > Duration::from_secs(1), "{timeout:?}");
    ch.unary::<_, EchoReply>(ECHO, EchoRequest::default(), Metadata::new(), None).await.unwrap();
    assert!(rx.recv().await.unwrap().get("grpc-timeout").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_failures_are_unavailable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    assert_eq!(channel_err(addr).await, Code::Unavailable);
}

async fn channel_err(addr: SocketAddr) -> Code {
    Channel::connect(addr, ChannelConfig::default()).await.unwrap_err().code
}
