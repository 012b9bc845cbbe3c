//! The gRPC server against a raw h2 client (and raw frames where h2's API hides the detail): routing,
//! content types, framing, limits, deadlines, cancellation, pings, GOAWAY and graceful shutdown.

mod grpc_support;

use std::time::{Duration, Instant};

use attest_grpc::{Channel, ChannelConfig, Code, Metadata, ServerConfig};
use bytes::Bytes;
use grpc_support::*;
use tokio::io::AsyncWriteExt;

fn echo(payload: &[u8]) -> Vec<u8> {
    prefixed(0, &encode(&EchoRequest { payload: payload.to_vec(), ..Default::default() }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_success_headers_data_trailers() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![echo(b"hello")], true).await;
    assert_eq!(r.http_status, 200);
    assert_eq!(r.headers["content-type"], "application/grpc");
    assert!(!r.headers_end_stream);
    assert_eq!(r.grpc_status(), Some(0));
    let reply: EchoReply = prost::Message::decode(&r.data[5..]).unwrap();
    assert_eq!(reply.payload, b"hello");
    assert_eq!(&r.data[..5], &[0, 0, 0, 0, 7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_type_variants() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    for ct in ["application/grpc", "application/grpc+proto", "application/grpc;charset=utf-8"] {
        let mut head = grpc_head(t.addr, ECHO, &[]);
        head.headers_mut().insert("content-type", ct.parse().unwrap());
        let r = raw_call(&send, head, vec![echo(b"x")], true).await;
        assert_eq!((r.http_status, r.grpc_status()), (200, Some(0)), "{ct}");
    }
    for ct in [Some("application/json"), Some("application/grpc+json"), Some("text/plain"), None] {
        let mut head = grpc_head(t.addr, ECHO, &[]);
        match ct {
            Some(ct) => head.headers_mut().insert("content-type", ct.parse().unwrap()),
            None => head.headers_mut().remove("content-type"),
        };
        let r = raw_call(&send, head, vec![echo(b"x")], true).await;
        assert_eq!(r.http_status, 415, "{ct:?}");
        assert_eq!(r.grpc_status(), None);
    }
    // Not POST → 405.
    let mut head = grpc_head(t.addr, ECHO, &[]);
    *head.method_mut() = http::Method::GET;
    let r = raw_call(&send, head, vec![], true).await;
    assert_eq!(r.http_status, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_path_is_trailers_only_unimplemented() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    for path in [MISSING, "/grpctest.Nope/Echo", "/grpctest.Test/echo", "/grpctest.Test/Echo/", "/"] {
        let r = raw_call(&send, grpc_head(t.addr, path, &[]), vec![echo(b"x")], true).await;
        assert_eq!(r.http_status, 200, "{path}");
        assert!(r.headers_end_stream, "{path}: trailers-only ends the stream on the headers");
        assert!(r.trailers.is_none() && r.data.is_empty());
        assert_eq!(r.headers["content-type"], "application/grpc");
        assert_eq!(r.grpc_status(), Some(12), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_and_message_split_across_frames() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let wire = echo(&[0xAB; 100]);
    // One byte per DATA frame, then a 2/3/… split at every prefix position.
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), wire.iter().map(|b| vec![*b]).collect(), true).await;
    assert_eq!(r.grpc_status(), Some(0));
    for cut in 1..8 {
        let chunks = vec![wire[..cut].to_vec(), wire[cut..].to_vec()];
        let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), chunks, true).await;
        assert_eq!(r.grpc_status(), Some(0), "cut {cut}");
        let reply: EchoReply = prost::Message::decode(&r.data[5..]).unwrap();
        assert_eq!(reply.payload, vec![0xAB; 100]);
    }
    // The message followed by an empty DATA frame carrying END_STREAM.
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![wire.clone(), vec![]], true).await;
    assert_eq!(r.grpc_status(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_message_is_valid() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![prefixed(0, &[])], true).await;
    assert_eq!(r.grpc_status(), Some(0));
    assert_eq!(r.data, vec![0, 0, 0, 0, 0], "empty reply is a 5-byte prefix");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_are_internal() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("missing", vec![]),
        ("truncated prefix", vec![vec![0, 0, 0]]),
        ("truncated message", vec![echo(b"hello")[..8].to_vec()]),
        ("undecodable", vec![prefixed(0, &[0xFF, 0xFF, 0xFF])]),
        ("compressed flag without grpc-encoding", vec![prefixed(1, &[])]),
        ("invalid flag", vec![prefixed(2, &[])]),
        ("two messages", vec![echo(b"a"), echo(b"b")]),
    ];
    for (name, chunks) in cases {
        let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), chunks, true).await;
        assert_eq!(r.http_status, 200, "{name}");
        assert_eq!(r.grpc_status(), Some(13), "{name}: {:?}", r.grpc_message());
    }
    // The connection is still fine.
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![echo(b"ok")], true).await;
    assert_eq!(r.grpc_status(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_encoding() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[("grpc-encoding", "gzip")]), vec![echo(b"x")], true).await;
    assert_eq!(r.grpc_status(), Some(12));
    assert_eq!(r.headers["grpc-accept-encoding"], "identity");
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[("grpc-encoding", "identity")]), vec![echo(b"x")], true).await;
    assert_eq!(r.grpc_status(), Some(0));
    // identity negotiates no compression: the flag is still wrong.
    let head = grpc_head(t.addr, ECHO, &[("grpc-encoding", "identity")]);
    let r = raw_call(&send, head, vec![prefixed(1, &[])], true).await;
    assert_eq!(r.grpc_status(), Some(13));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_prefix_is_resource_exhausted_and_connection_survives() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    // A prefix claiming 4 GiB and nothing else, stream left open: the answer must come from the prefix alone.
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![vec![0, 0xFF, 0xFF, 0xFF, 0xFF]], false).await;
    // Status 8 can only come from the prefix: waiting for the body would end in the body timeout (4).
    assert_eq!(r.grpc_status(), Some(8), "{:?}", r.grpc_message());
    // Just over the default 4 MiB, actually sent.
    let big = EchoRequest { payload: vec![1; 4 * 1024 * 1024 + 1], ..Default::default() };
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![prefixed(0, &encode(&big))], true).await;
    assert_eq!(r.grpc_status(), Some(8));
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![echo(b"still here")], true).await;
    assert_eq!(r.grpc_status(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurable_max_message_size() {
    let t = start(ServerConfig { max_message_size: 1000, ..Default::default() }).await;
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let ok = EchoRequest { payload: vec![0; 990], ..Default::default() };
    let r = ch.unary::<_, EchoReply>(ECHO, ok, Metadata::new(), None).await.unwrap();
    assert_eq!(r.message.payload.len(), 990);
    let big = EchoRequest { payload: vec![0; 1000], ..Default::default() };
    let e = ch.unary::<_, EchoReply>(ECHO, big, Metadata::new(), None).await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e}");
    let ok = EchoRequest { payload: vec![0; 10], ..Default::default() };
    ch.unary::<_, EchoReply>(ECHO, ok, Metadata::new(), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_exceeded_and_handler_cancelled() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let slow = prefixed(0, &encode(&EchoRequest { sleep_ms: 5000, ..Default::default() }));
    let start = Instant::now();
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[("grpc-timeout", "100m")]), vec![slow], true).await;
    assert_eq!(r.grpc_status(), Some(4));
    assert!(r.headers_end_stream);
    // Never before the deadline. (That it came from the deadline and not from the handler finishing is
    // what status 4 and the cancelled handler show; no upper bound on wall-clock time.)
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(90), "{took:?}");
    assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.dropped) == 1).await);
    // A generous timeout in every unit still succeeds. (`n` cannot express more than 0.1 s in 8 digits, too
    // little to be generous on a loaded machine; its parsing is unit-tested in grpc::metadata.)
    for v in ["1H", "1M", "10S", "10000m", "99999999u"] {
        let r = raw_call(&send, grpc_head(t.addr, ECHO, &[("grpc-timeout", v)]), vec![echo(b"x")], true).await;
        assert_eq!(r.grpc_status(), Some(0), "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_timeout_is_internal() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    for v in ["", "10", "m", "123456789m", "10x", "1.5S", "-1S", "10 S"] {
        let r = raw_call(&send, grpc_head(t.addr, ECHO, &[("grpc-timeout", v)]), vec![echo(b"x")], true).await;
        assert_eq!(r.grpc_status(), Some(13), "{v:?}");
        assert!(r.grpc_message().unwrap().contains("grpc-timeout"));
    }
    assert_eq!(Stats::get(&t.stats.started), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_body_that_never_ends_times_out() {
    let t = start(ServerConfig { request_body_timeout: Duration::from_millis(200), ..Default::default() }).await;
    let send = raw_client(t.addr).await;
    let r = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![echo(b"x")], false).await;
    assert_eq!(r.grpc_status(), Some(4), "{:?}", r.grpc_message());
    assert_eq!(Stats::get(&t.stats.started), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reset_cancels_handler() {
    let t = start(ServerConfig::default()).await;
    let send = raw_client(t.addr).await;
    let mut ready = send.clone().ready().await.unwrap();
    let (_response, mut stream) = ready.send_request(grpc_head(t.addr, ECHO, &[]), false).unwrap();
    let slow = prefixed(0, &encode(&EchoRequest { sleep_ms: 10_000, ..Default::default() }));
    stream.send_data(Bytes::from(slow), true).unwrap();
    assert!(eventually(Duration::from_secs(2), || Stats::get(&t.stats.started) == 1).await);
    assert_eq!(t.server.in_flight_calls(), 1);
    stream.send_reset(h2::Reason::CANCEL);
    assert!(eventually(Duration::from_secs(2), || Stats::get(&t.stats.dropped) == 1).await);
    assert!(eventually(Duration::from_secs(2), || t.server.in_flight_calls() == 0).await);
    assert_eq!(Stats::get(&t.stats.completed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reset_stops_stream_producer() {
    let t = start(ServerConfig::default()).await;
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let req = EchoRequest { count: 1000, sleep_ms: 5, ..Default::default() };
    let mut s = ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), None).await.unwrap().message;
    assert_eq!(s.message().await.unwrap().unwrap().index, 0);
    drop(s);
    assert!(eventually(Duration::from_secs(3), || Stats::get(&t.stats.producer_stopped) == 1).await);
    assert!(eventually(Duration::from_secs(2), || t.server.in_flight_calls() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_are_answered_while_calls_run() {
    let t = start(ServerConfig::default()).await;
    let tcp = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    let (send, mut conn) = h2::client::handshake(tcp).await.unwrap();
    let mut pinger = conn.ping_pong().unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // Keep a slow call in flight on the same connection.
    let mut ready = send.clone().ready().await.unwrap();
    let (_response, mut stream) = ready.send_request(grpc_head(t.addr, ECHO, &[]), false).unwrap();
    stream
        .send_data(Bytes::from(prefixed(0, &encode(&EchoRequest { sleep_ms: 120_000, ..Default::default() }))), true)
        .unwrap();
    // Answered while the handler still sleeps: a PING held behind the handler would wait two minutes.
    for _ in 0..5 {
        tokio::time::timeout(Duration::from_secs(60), pinger.ping(h2::Ping::opaque())).await.unwrap().unwrap();
    }
    assert_eq!(Stats::get(&t.stats.completed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_bound_streams() {
    let t = start(ServerConfig { max_concurrent_streams: 7, ..Default::default() }).await;
    let tcp = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let send = send.ready().await.unwrap();
    // The SETTINGS frame arrives with the first response at the latest.
    let _ = raw_call(&send, grpc_head(t.addr, ECHO, &[]), vec![echo(b"x")], true).await;
    assert_eq!(send.current_max_send_streams(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_end_stream_on_trailers_and_windows_raised() {
    let t = start(ServerConfig::default()).await;
    let mut tcp = raw_frames_connect(t.addr).await;
    let headers = hpack_literal(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", ECHO),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    tcp.write_all(&frame(0x1, 0x4, 1, &headers)).await.unwrap(); // HEADERS, END_HEADERS
    tcp.write_all(&frame(0x0, 0x1, 1, &echo(b"frames"))).await.unwrap(); // DATA, END_STREAM
    let mut seen = Vec::new();
    let mut initial_window = None;
    let mut conn_window_update = 0u32;
    while let Some(f) = read_frame(&mut tcp).await {
        if f.kind == 0x4 && f.flags & 1 == 0 {
            for s in f.payload.chunks(6) {
                if u16::from_be_bytes([s[0], s[1]]) == 0x4 {
                    initial_window = Some(u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
                }
            }
        }
        if f.kind == 0x8 && f.stream == 0 {
            conn_window_update += u32::from_be_bytes([f.payload[0], f.payload[1], f.payload[2], f.payload[3]]);
        }
        if f.stream == 1 {
            seen.push((f.kind, f.flags & 0x1));
            if f.flags & 0x1 != 0 {
                break;
            }
        }
    }
    // HEADERS (no END_STREAM), DATA (no END_STREAM), HEADERS (END_STREAM).
    assert_eq!(seen, vec![(0x1, 0), (0x0, 0), (0x1, 1)]);
    assert_eq!(initial_window, Some(1024 * 1024));
    assert!(conn_window_update >= 8 * 1024 * 1024 - 65_535, "{conn_window_update}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_settings_and_frame_types_are_ignored() {
    let t = start(ServerConfig::default()).await;
    let mut tcp = raw_frames_connect(t.addr).await;
    // SETTINGS with an unknown identifier (RFC 9113 §6.5.2: MUST ignore) and an unknown frame type (§4.1).
    tcp.write_all(&frame(0x4, 0, 0, &[0x00, 0xFF, 0, 0, 0, 1])).await.unwrap();
    tcp.write_all(&frame(0xEE, 0, 0, b"extension")).await.unwrap();
    let headers = hpack_literal(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", ECHO),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
    ]);
    tcp.write_all(&frame(0x1, 0x4, 1, &headers)).await.unwrap();
    tcp.write_all(&frame(0x0, 0x1, 1, &echo(b"x"))).await.unwrap();
    let mut kinds = Vec::new();
    while let Some(f) = read_frame(&mut tcp).await {
        assert_ne!(f.kind, 0x7, "no GOAWAY");
        if f.stream == 1 {
            kinds.push(f.kind);
            if f.flags & 0x1 != 0 {
                break;
            }
        }
    }
    assert_eq!(kinds, vec![0x1, 0x0, 0x1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frame_goaway_only_for_that_connection() {
    let t = start(ServerConfig::default()).await;
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let ok = || EchoRequest { payload: b"ok".to_vec(), ..Default::default() };
    ch.unary::<_, EchoReply>(ECHO, ok(), Metadata::new(), None).await.unwrap();
    // A slow call in flight on the good connection across the other's failure.
    let slow_ch = ch.clone();
    let slow = tokio::spawn(async move {
        let req = EchoRequest { sleep_ms: 300, ..Default::default() };
        slow_ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await
    });
    let mut tcp = raw_frames_connect(t.addr).await;
    tcp.write_all(&frame(0x0, 0x0, 0, b"data on stream 0")).await.unwrap(); // RFC 9113 §6.1: PROTOCOL_ERROR
    let mut goaway = None;
    while let Some(f) = read_frame(&mut tcp).await {
        if f.kind == 0x7 {
            goaway = Some(u32::from_be_bytes([f.payload[4], f.payload[5], f.payload[6], f.payload[7]]));
            break;
        }
    }
    assert_eq!(goaway, Some(0x1), "GOAWAY(PROTOCOL_ERROR)");
    slow.await.unwrap().unwrap();
    ch.unary::<_, EchoReply>(ECHO, ok(), Metadata::new(), None).await.unwrap();
    let other = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    other.unary::<_, EchoReply>(ECHO, ok(), Metadata::new(), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_in_flight_calls() {
    let t = start(ServerConfig::default()).await;
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let ch = ch.clone();
            tokio::spawn(async move {
                let req = EchoRequest { sleep_ms: 400, payload: vec![i], ..Default::default() };
                ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await
            })
        })
        .collect();
    let stream_ch = ch.clone();
    let stream = tokio::spawn(async move {
        let req = EchoRequest { count: 5, sleep_ms: 80, ..Default::default() };
        let s = stream_ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), None).await?;
        s.message.collect().await
    });
    assert!(eventually(Duration::from_secs(2), || Stats::get(&t.stats.started) == 6).await);
    let start = Instant::now();
    let drained = t.server.shutdown(Duration::from_secs(5)).await;
    assert!(drained);
    assert!(start.elapsed() >= Duration::from_millis(250), "waited for the calls");
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap().message.payload, vec![i as u8]);
    }
    assert_eq!(stream.await.unwrap().unwrap().len(), 5);
    assert_eq!(t.server.open_connections(), 0);
    // No longer accepting: a new connection fails, and the old channel's new calls fail as unavailable.
    assert!(Channel::connect(t.addr, ChannelConfig::default()).await.is_err());
    let e = ch.unary::<_, EchoReply>(ECHO, EchoRequest::default(), Metadata::new(), None).await.unwrap_err();
    assert_eq!(e.code, Code::Unavailable, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_grace_is_bounded() {
    let t = start(ServerConfig::default()).await;
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let call = tokio::spawn(async move {
        let req = EchoRequest { sleep_ms: 30_000, ..Default::default() };
        ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await
    });
    assert!(eventually(Duration::from_secs(2), || Stats::get(&t.stats.started) == 1).await);
    // Not drained: the handler sleeps 30 s, the grace is 0.2 s, so shutdown gave up and cancelled it.
    assert!(!t.server.shutdown(Duration::from_millis(200)).await);
    let e = tokio::time::timeout(Duration::from_secs(3), call).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(e.code, Code::Cancelled | Code::Unavailable), "{e}");
    assert!(eventually(Duration::from_secs(2), || Stats::get(&t.stats.dropped) == 1).await);
}
