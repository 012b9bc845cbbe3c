//! Hostile HTTP/2 and gRPC input against the gRPC server: malformed frames, invalid headers,
//! oversized header lists and HPACK bombs, stream floods, RST_STREAM floods (CVE-2023-44487), WINDOW_UPDATE
//! abuse, a client that never reads, slowloris, abrupt disconnects, and SETTINGS/PING floods.
//!
//! Each case is written frame by frame with `grpc_support::hostile::RawConn` (or with the `h2` client where it
//! allows the abuse). After each case the server must still serve a normal unary call on a fresh connection,
//! and once every client is gone its connection and in-flight call counters must return to zero. Where a case
//! could make memory grow, the process's RSS (the server runs in the test process) must stay within a generous
//! bound of where it started: these are leak/explosion checks sized so that an unbounded server would blow
//! through them by an order of magnitude, not thresholds. No case depends on wall-clock speed; each runs
//! under a `tokio::time::timeout` only so that a hang fails instead of stalling the suite, and the cases run
//! one at a time (a process-wide lock) so that the RSS readings of one are not disturbed by another.
#![forbid(unsafe_code)]

mod grpc_support;

use std::future::Future;
use std::time::Duration;

use attest_grpc::{Channel, ChannelConfig, Metadata, ServerConfig};
use bytes::Bytes;
use grpc_support::hostile::*;
use grpc_support::*;
use tokio::io::AsyncWriteExt;

/// Upper bound on one case (a hang is a failure, not a slow pass).
const CASE_LIMIT: Duration = Duration::from_secs(120);
/// RSS growth allowed while an attack is under way. Every attack that checks it would cost the server at least
/// 10× this if its buffers were unbounded.
const RSS_SLACK_KIB: u64 = 96 * 1024;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs one case alone, bounded by [`CASE_LIMIT`].
async fn case(name: &str, body: impl Future<Output = ()>) {
    let _serial = SERIAL.lock().await;
    let finished = tokio::time::timeout(CASE_LIMIT, body).await.is_ok();
    assert!(finished, "{name}: did not finish within {CASE_LIMIT:?}");
}

fn echo_message(req: &EchoRequest) -> Vec<u8> {
    prefixed(0, &encode(req))
}

fn echo(payload: &[u8]) -> Vec<u8> {
    echo_message(&EchoRequest { payload: payload.to_vec(), ..Default::default() })
}

/// A normal unary call on a fresh connection succeeds.
async fn serves_fresh_connection(t: &TestServer) {
    let ch = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
    let req = EchoRequest { payload: b"still serving".to_vec(), ..Default::default() };
    let reply = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
    assert_eq!(reply.message.payload, b"still serving");
}

/// Once every client is gone, no connection and no call is left on the server.
async fn quiesces(t: &TestServer) {
    let settled =
        eventually(Duration::from_secs(20), || t.server.open_connections() == 0 && t.server.in_flight_calls() == 0)
            .await;
    assert!(
        settled,
        "server did not settle: {} connections, {} calls in flight",
        t.server.open_connections(),
        t.server.in_flight_calls()
    );
}

/// The end of every case: a fresh connection is served, and the counters return to zero.
async fn still_healthy(t: &TestServer) {
    serves_fresh_connection(t).await;
    quiesces(t).await;
}

#[track_caller]
fn assert_rss_bounded(what: &str, before: u64) {
    let now = rss_kib();
    assert!(now < before + RSS_SLACK_KIB, "{what}: RSS grew from {before} KiB to {now} KiB");
    println!("{what}: RSS {before} KiB → {now} KiB");
}

// ---- malformed frames → GOAWAY for that connection only ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_goaway_that_connection_only() {
    case("malformed frames", async {
        let t = start(ServerConfig::default()).await;
        let good = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
        let req = || EchoRequest { payload: b"ok".to_vec(), ..Default::default() };
        let head = |stream: u32| frame(HEADERS, END_HEADERS, stream, &block(&grpc_fields(ECHO)));
        let mut big_data = head(1);
        big_data.extend(frame(DATA, 0, 1, &vec![0; 16_385]));
        let mut bad_data_padding = head(1);
        bad_data_padding.extend(frame(DATA, PADDED, 1, &[10, 1, 2, 3]));
        let mut backwards = frame(HEADERS, END_HEADERS | END_STREAM, 5, &block(&grpc_fields(ECHO)));
        backwards.extend(head(3));
        let mut interrupted = frame(HEADERS, 0, 1, &block(&grpc_fields(ECHO)[..3]));
        interrupted.extend(frame(PING, 0, 0, &[0; 8]));
        let mut other_stream_continuation = frame(HEADERS, 0, 1, &block(&grpc_fields(ECHO)[..3]));
        other_stream_continuation.extend(frame(CONTINUATION, END_HEADERS, 3, &block(&grpc_fields(ECHO)[3..])));
        let mut hpack_bad_index = Vec::new();
        hpack_indexed(&mut hpack_bad_index, 5000);
        let mut hpack_table_update = Vec::new();
        hpack_int(&mut hpack_table_update, 0x20, 5, 1 << 20); // above SETTINGS_HEADER_TABLE_SIZE (4096)
        let cases: Vec<(&str, Vec<u8>, u32)> = vec![
            // RFC 9113 §6.1, §6.2, §6.3, §6.4: these frames must not be on stream 0.
            ("DATA on stream 0", frame(DATA, 0, 0, b"data"), PROTOCOL_ERROR),
            ("HEADERS on stream 0", head(0), PROTOCOL_ERROR),
            ("RST_STREAM on stream 0", rst_stream(0, CANCEL), PROTOCOL_ERROR),
            ("PRIORITY on stream 0", frame(PRIORITY, 0, 0, &[0, 0, 0, 1, 16]), PROTOCOL_ERROR),
            // §6.5, §6.7, §6.8: connection frames on a stream.
            ("SETTINGS on stream 1", frame(SETTINGS, 0, 1, &[]), PROTOCOL_ERROR),
            ("PING on stream 1", frame(PING, 0, 1, &[0; 8]), PROTOCOL_ERROR),
            ("GOAWAY on stream 1", frame(GOAWAY, 0, 1, &[0; 8]), PROTOCOL_ERROR),
            // §5.1: DATA on an idle stream; §6.10: CONTINUATION without HEADERS, or interrupted.
            ("DATA on an idle stream", frame(DATA, END_STREAM, 1, &echo(b"x")), PROTOCOL_ERROR),
            (
                "CONTINUATION without HEADERS",
                frame(CONTINUATION, END_HEADERS, 1, &block(&grpc_fields(ECHO))),
                PROTOCOL_ERROR,
            ),
            ("HEADERS interrupted by PING", interrupted, PROTOCOL_ERROR),
            ("CONTINUATION of another stream", other_stream_continuation, PROTOCOL_ERROR),
            // §4.2: beyond SETTINGS_MAX_FRAME_SIZE (16384 by default) → FRAME_SIZE_ERROR; fixed-size frames of the
            // wrong size: the RFC says FRAME_SIZE_ERROR, h2 0.4 sends PROTOCOL_ERROR (same effect: GOAWAY, close).
            ("DATA frame of 16385 bytes", big_data, FRAME_SIZE_ERROR),
            ("SETTINGS of 5 bytes", frame(SETTINGS, 0, 0, &[0; 5]), PROTOCOL_ERROR),
            ("SETTINGS ACK with a payload", frame(SETTINGS, ACK, 0, &[0; 6]), PROTOCOL_ERROR),
            ("PING of 7 bytes", frame(PING, 0, 0, &[0; 7]), PROTOCOL_ERROR),
            ("WINDOW_UPDATE of 3 bytes", frame(WINDOW_UPDATE, 0, 0, &[0; 3]), PROTOCOL_ERROR),
            // §6.1, §6.2: padding as long as the payload.
            ("HEADERS padding past the payload", frame(HEADERS, END_HEADERS | PADDED, 1, &[200, 0x82]), PROTOCOL_ERROR),
            ("DATA padding past the payload", bad_data_padding, PROTOCOL_ERROR),
            // §6.5.2: invalid SETTINGS values (for the window the RFC names FLOW_CONTROL_ERROR; h2 PROTOCOL_ERROR).
            ("SETTINGS_ENABLE_PUSH = 2", settings(&[(SETTINGS_ENABLE_PUSH, 2)]), PROTOCOL_ERROR),
            (
                "SETTINGS_INITIAL_WINDOW_SIZE = 2^31",
                settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)]),
                PROTOCOL_ERROR,
            ),
            ("SETTINGS_MAX_FRAME_SIZE = 100", settings(&[(SETTINGS_MAX_FRAME_SIZE, 100)]), PROTOCOL_ERROR),
            // §5.1.1: client streams are odd and increase; §8.4: clients do not push.
            ("HEADERS on an even stream", head(2), PROTOCOL_ERROR),
            ("stream id going backwards", backwards, PROTOCOL_ERROR),
            ("PUSH_PROMISE from the client", frame(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2, 0x82]), PROTOCOL_ERROR),
            // RFC 7541 §2.3.3, §6.3: HPACK errors are connection errors (RFC 9113 §4.3: COMPRESSION_ERROR; h2 sends
            // PROTOCOL_ERROR).
            ("HPACK index out of range", frame(HEADERS, END_HEADERS, 1, &hpack_bad_index), PROTOCOL_ERROR),
            ("HPACK table size above the setting", frame(HEADERS, END_HEADERS, 1, &hpack_table_update), PROTOCOL_ERROR),
        ];
        let mut wrong = Vec::new();
        for (name, bytes, expected) in cases {
            let mut c = RawConn::connect(t.addr).await;
            c.send(&bytes).await;
            let code = c.goaway().await;
            println!("{name}: GOAWAY {code:?}");
            if code != Some(expected) {
                wrong.push(format!("{name}: GOAWAY {code:?}, expected {expected}"));
            }
            // The server closes the connection after the GOAWAY.
            c.drain().await;
            assert!(c.closed, "{name}: connection left open");
            // Other connections are not affected.
            good.unary::<_, EchoReply>(ECHO, req(), Metadata::new(), None).await.unwrap();
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        drop(good);
        still_healthy(&t).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_preface_closes_the_connection() {
    case("bad preface", async {
        // A short idle timeout: a connection h2 accepts despite its odd start must still be closed by the server.
        let config = ServerConfig {
            idle_timeout: Duration::from_millis(500),
            request_body_timeout: Duration::from_millis(500),
            ..Default::default()
        };
        let t = start(config).await;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("HTTP/1.1 request", b"POST /grpctest.Test/Echo HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
            ("preface with a wrong byte", b"PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n".to_vec()),
            ("preface then PING instead of SETTINGS", [PREFACE, &frame(PING, 0, 0, &[0; 8])].concat()),
            (
                "preface then HEADERS instead of SETTINGS",
                [PREFACE, &frame(HEADERS, END_HEADERS, 1, &block(&grpc_fields(ECHO)))].concat(),
            ),
            ("256 random-ish bytes", (0..=255u8).map(|b| b.wrapping_mul(37)).collect()),
        ];
        for (name, bytes) in cases {
            let mut c = RawConn::tcp(t.addr).await;
            c.send(&bytes).await;
            // Whatever the server writes (its SETTINGS, maybe a GOAWAY), it must close the connection and
            // never answer a request on it.
            let mut kinds = Vec::new();
            while let Some(f) = c.next().await {
                kinds.push(f.kind);
            }
            println!("{name}: frames {kinds:?}, GOAWAY {:?}", c.goaways);
            assert!(c.closed, "{name}: connection left open");
            assert!(
                c.goaways.iter().all(|&code| code == PROTOCOL_ERROR || code == NO_ERROR),
                "{name}: {:?}",
                c.goaways
            );
        }
        still_healthy(&t).await;
    })
    .await;
}

// ---- invalid headers → stream error, connection fine ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_headers_are_stream_errors() {
    case("invalid headers", async {
        let t = start(ServerConfig::default()).await;
        let base = grpc_fields(ECHO);
        let with = |extra: (&'static str, &'static str)| {
            let mut f = base.clone();
            f.push(extra);
            f
        };
        let without = |name: &str| base.iter().copied().filter(|(k, _)| *k != name).collect::<Vec<_>>();
        let mut pseudo_after_regular = base[4..].to_vec();
        pseudo_after_regular.extend_from_slice(&base[..4]);
        let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
            // RFC 9113 §8.2: field names are lowercase; §8.2.2: no connection-specific fields; TE only "trailers".
            ("uppercase name", with(("X-Upper", "1"))),
            (
                "uppercase content-type name",
                without("content-type").into_iter().chain([("Content-Type", "application/grpc")]).collect(),
            ),
            ("connection", with(("connection", "keep-alive"))),
            ("keep-alive", with(("keep-alive", "timeout=5"))),
            ("proxy-connection", with(("proxy-connection", "keep-alive"))),
            ("transfer-encoding", with(("transfer-encoding", "chunked"))),
            ("upgrade", with(("upgrade", "h2c"))),
            ("te other than trailers", without("te").into_iter().chain([("te", "gzip")]).collect()),
            // §8.3.1: :method, :scheme and :path are required, once, before regular fields; no other pseudo-fields.
            ("missing :path", without(":path")),
            ("missing :method", without(":method")),
            ("missing :scheme", without(":scheme")),
            ("empty :path", without(":path").into_iter().chain([(":path", "")]).collect()),
            ("duplicate :path", with((":path", "/grpctest.Test/Stream"))),
            ("pseudo-field after a regular field", pseudo_after_regular),
            ("unknown pseudo-field", with((":foo", "bar"))),
            ("response pseudo-field", with((":status", "200"))),
            // §8.2.1: invalid characters in names and values.
            ("space in a name", with(("x y", "1"))),
            ("newline in a value", with(("x-a", "a\nb"))),
            ("NUL in a value", with(("x-a", "a\0b"))),
        ];
        let mut wrong = Vec::new();
        let mut valid_calls = 0;
        let cl = with(("content-length", "5"));
        let cases = cases.iter().map(|(name, fields)| (*name, frame(HEADERS, END_HEADERS, 1, &block(fields)), true));
        // content-length that does not match the body (§8.1.1), END_STREAM on the HEADERS.
        let cases = cases.chain([(
            "content-length 5, no body",
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &block(&cl)),
            false,
        )]);
        for (name, head, body) in cases {
            let mut c = RawConn::connect(t.addr).await;
            c.send(&head).await;
            if body {
                c.send(&frame(DATA, END_STREAM, 1, &echo(b"x"))).await;
            }
            let end = c.stream_end(1).await;
            println!("{name}: {end:?}");
            // h2 rejects invalid field names and values, and unknown pseudo-fields, while decoding the header
            // block: GOAWAY(PROTOCOL_ERROR) for the connection (RFC 9113 §8.1.1 asks only for a stream error;
            // stricter, and still that connection only).
            let connection_error = ["uppercase", "unknown pseudo", "space in", "newline in", "NUL in"];
            let expected = if connection_error.iter().any(|p| name.starts_with(p)) {
                StreamEnd::GoAway(PROTOCOL_ERROR)
            } else {
                StreamEnd::Reset(PROTOCOL_ERROR)
            };
            if end != expected {
                wrong.push(format!("{name}: {end:?}, expected {expected:?}"));
            }
            if let StreamEnd::Reset(_) = end {
                // The connection itself is fine: a valid call on it succeeds (HEADERS, DATA, trailers).
                let ok = c.call(3, ECHO, &echo(b"ok")).await;
                assert_eq!(ok, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]), "{name}: then a valid call");
                assert!(c.goaways.is_empty(), "{name}: {:?}", c.goaways);
                valid_calls += 1;
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        assert_eq!(Stats::get(&t.stats.started), valid_calls, "no malformed request reached the handler");
        still_healthy(&t).await;
    })
    .await;
}

// ---- oversized header lists, HPACK bombs ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_header_list_is_refused() {
    case("oversized header list", async {
        let t = start(ServerConfig::default()).await;
        let before = rss_kib();
        let mut c = RawConn::connect(t.addr).await;
        // 24 KiB of one header value (over the 16 KiB SETTINGS_MAX_HEADER_LIST_SIZE), split over HEADERS and
        // CONTINUATION frames of at most 16 KiB.
        let mut fields = block(&grpc_fields(ECHO));
        hpack_field(&mut fields, b"x-big", &vec![b'a'; 24 * 1024], false);
        let (first, rest) = fields.split_at(16_384);
        c.send(&frame(HEADERS, 0, 1, first)).await;
        c.send(&frame(CONTINUATION, END_HEADERS, 1, rest)).await;
        c.send(&frame(DATA, END_STREAM, 1, &echo(b"x"))).await;
        let end = c.stream_end(1).await;
        println!("24 KiB header list: {end:?}");
        // h2 answers 431 (REQUEST_HEADER_FIELDS_TOO_LARGE) with END_STREAM and resets the stream.
        assert_eq!(end, StreamEnd::Ended(vec![HEADERS]));
        assert_eq!(c.stream_end(1).await, StreamEnd::Reset(PROTOCOL_ERROR));
        // The connection still serves calls.
        assert_eq!(c.call(3, ECHO, &echo(b"ok")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        drop(c);
        // Many fields, each small: 2,000 × 40 bytes.
        let mut c = RawConn::connect(t.addr).await;
        let mut many = block(&grpc_fields(ECHO));
        for i in 0..2000 {
            hpack_field(&mut many, format!("x-f{i:05}").as_bytes(), b"0123456789abcdef0123456789", false);
        }
        let mut chunks = many.chunks(16_384).peekable();
        let mut kind = HEADERS;
        while let Some(chunk) = chunks.next() {
            let flags = if chunks.peek().is_none() { END_HEADERS } else { 0 };
            c.send(&frame(kind, flags, 3, chunk)).await;
            kind = CONTINUATION;
        }
        c.send(&frame(DATA, END_STREAM, 3, &echo(b"x"))).await;
        let end = c.stream_end(3).await;
        println!("2000 small fields: {end:?}");
        // h2 stops buffering CONTINUATION frames once the block is over the limit and sends
        // GOAWAY(COMPRESSION_ERROR): it cannot skip the rest without decoding it (the HPACK state is shared).
        assert_eq!(end, StreamEnd::GoAway(COMPRESSION_ERROR));
        assert_eq!(Stats::get(&t.stats.started), 1);
        assert_rss_bounded("oversized header list", before);
        drop(c);
        still_healthy(&t).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpack_bomb_is_refused_without_large_memory() {
    case("HPACK bomb", async {
        let t = start(ServerConfig::default()).await;
        let before = rss_kib();
        // One ~4 KiB entry in the dynamic table (its default size is 4096 octets), then one-octet references to
        // it: each 16 KiB frame decodes to 16,384 × 4 KiB = 64 MiB of header list if nothing stops it.
        let mut c = RawConn::connect(t.addr).await;
        let mut seed = block(&grpc_fields(ECHO));
        hpack_field(&mut seed, b"x-bomb", &vec![b'b'; 4000], true);
        c.send(&frame(HEADERS, END_HEADERS | END_STREAM, 1, &seed)).await;
        let first = c.stream_end(1).await;
        println!("table-seeding request: {first:?}");
        let mut refs = Vec::new();
        for _ in 0..16_000 {
            hpack_indexed(&mut refs, 62); // the newest dynamic entry
        }
        let mut payload = block(&grpc_fields(ECHO));
        payload.extend_from_slice(&refs);
        let bomb_frame = frame(HEADERS, END_HEADERS, 3, &payload[..payload.len().min(16_384)]);
        c.send(&bomb_frame).await;
        let end = c.stream_end(3).await;
        println!("one-frame bomb (64 MiB decoded): {end:?}, GOAWAY {:?}", c.goaways);
        // Refused: a 431 answer or a reset of the stream, or the whole connection told to go away.
        assert!(
            matches!(
                end,
                StreamEnd::Ended(_) | StreamEnd::Reset(_) | StreamEnd::GoAway(ENHANCE_YOUR_CALM | COMPRESSION_ERROR)
            ),
            "{end:?}"
        );
        assert_rss_bounded("HPACK bomb, one frame", before);
        drop(c);

        // The same through a long CONTINUATION chain: 200 frames of 16 KiB of references (3.2 MiB on the wire,
        // 12.5 GiB decoded), on a fresh connection.
        let mut c = RawConn::connect(t.addr).await;
        c.send(&frame(HEADERS, END_HEADERS | END_STREAM, 1, &seed)).await;
        let _ = c.stream_end(1).await;
        c.send(&frame(HEADERS, 0, 3, &payload[..16_000])).await;
        for _ in 0..200 {
            c.send(&frame(CONTINUATION, 0, 3, &refs[..16_000])).await;
        }
        c.send(&frame(CONTINUATION, END_HEADERS, 3, &refs[..100])).await;
        let end = c.stream_end(3).await;
        println!("CONTINUATION bomb: {end:?}, GOAWAY {:?}", c.goaways);
        assert!(matches!(end, StreamEnd::GoAway(_) | StreamEnd::Reset(_) | StreamEnd::Ended(_) | StreamEnd::Closed));
        assert_rss_bounded("HPACK bomb, CONTINUATION chain", before);
        drop(c);
        assert_eq!(Stats::get(&t.stats.started), 0, "no bomb reached the handler");
        still_healthy(&t).await;
    })
    .await;
}

// ---- stream floods ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_beyond_the_limit_are_refused() {
    case("stream flood", async {
        let config = ServerConfig {
            max_concurrent_streams: 8,
            request_body_timeout: Duration::from_secs(2),
            ..Default::default()
        };
        let t = start(config).await;
        let mut c = RawConn::connect(t.addr).await;
        // Wait for the server's SETTINGS (with the limit) to be in force: one complete call first.
        assert_eq!(c.call(1, ECHO, &echo(b"x")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        // Eight streams whose bodies never come hold every slot...
        for i in 0..8 {
            c.open(3 + 2 * i, ECHO).await;
        }
        assert!(eventually(Duration::from_secs(5), || t.server.in_flight_calls() == 8).await);
        // ...so 100 more are refused one by one.
        let mut refused = 0;
        for i in 0..100 {
            let stream = 19 + 2 * i;
            c.send(&frame(HEADERS, END_HEADERS | END_STREAM, stream, &block(&grpc_fields(ECHO)))).await;
            if c.stream_end(stream).await == StreamEnd::Reset(REFUSED_STREAM) {
                refused += 1;
            }
        }
        assert_eq!(refused, 100);
        assert!(c.goaways.is_empty(), "{:?}", c.goaways);
        // Other connections are served meanwhile.
        serves_fresh_connection(&t).await;
        // The held streams run into the request body timeout; the connection is then usable again.
        for i in 0..8 {
            assert_eq!(
                c.stream_end(3 + 2 * i).await,
                StreamEnd::Ended(vec![HEADERS]),
                "trailers-only DEADLINE_EXCEEDED"
            );
        }
        assert_eq!(c.call(219, ECHO, &echo(b"ok")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        drop(c);
        still_healthy(&t).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_stream_flood_gets_goaway() {
    case("refused-stream flood", async {
        let t = start(ServerConfig { max_concurrent_streams: 1, ..Default::default() }).await;
        let mut c = RawConn::connect(t.addr).await;
        assert_eq!(c.call(1, ECHO, &echo(b"x")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        c.open(3, ECHO).await; // holds the only slot
        // 5,000 streams over the limit in one burst: each is refused (a local reset); h2 bounds those per
        // connection (1,024 by default) and then sends GOAWAY(ENHANCE_YOUR_CALM).
        let mut burst = Vec::new();
        for i in 0..5000u32 {
            burst.extend(frame(HEADERS, END_HEADERS | END_STREAM, 5 + 2 * i, &block(&grpc_fields(ECHO))));
        }
        c.send(&burst).await;
        let code = c.goaway().await;
        println!("refused-stream flood: GOAWAY {code:?}");
        assert_eq!(code, Some(ENHANCE_YOUR_CALM));
        drop(c);
        still_healthy(&t).await;
    })
    .await;
}

// ---- RST_STREAM floods (rapid reset, CVE-2023-44487) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_reset_flood() {
    case("rapid reset", async {
        let t = start(ServerConfig::default()).await;
        let before = rss_kib();
        // A well-behaved client keeps calling on its own connection throughout.
        let good = Channel::connect(t.addr, ChannelConfig::default()).await.unwrap();
        let bystander = tokio::spawn(async move {
            for i in 0..50u32 {
                let req = EchoRequest { payload: i.to_be_bytes().to_vec(), ..Default::default() };
                let r = good.unary::<_, EchoReply>(ECHO, req, Metadata::new(), None).await.unwrap();
                assert_eq!(r.message.payload, i.to_be_bytes());
            }
        });
        // Open a stream with a complete request (the handler would run) and reset it at once, 20,000 times,
        // written in bursts of 500 pairs without waiting for anything.
        let mut c = RawConn::connect(t.addr).await;
        let request = echo_message(&EchoRequest { sleep_ms: 1000, ..Default::default() });
        let (opened, code) = c.rapid_reset(1, ECHO, &request, 40, 500).await;
        println!("rapid reset: {opened} streams opened and reset, GOAWAY {code:?}");
        println!("handlers started {}, dropped {}", Stats::get(&t.stats.started), Stats::get(&t.stats.dropped));
        assert_eq!(code, Some(ENHANCE_YOUR_CALM));
        bystander.await.unwrap();
        assert_rss_bounded("rapid reset", before);
        drop(c);
        still_healthy(&t).await;
        // Every handler that did start was cancelled, none ran to its end.
        assert_eq!(Stats::get(&t.stats.completed), 50 + 1);
    })
    .await;
}

// ---- WINDOW_UPDATE abuse ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_update_abuse() {
    case("WINDOW_UPDATE abuse", async {
        let t = start(ServerConfig::default()).await;
        // RFC 9113 §6.9.1: a window above 2^31−1 is a FLOW_CONTROL_ERROR; on the connection a connection error.
        let mut c = RawConn::connect(t.addr).await;
        c.send(&window_update(0, 0x7FFF_FFFF)).await;
        assert_eq!(c.goaway().await, Some(FLOW_CONTROL_ERROR), "connection window overflow");
        // Two increments that overflow only together.
        let mut c = RawConn::connect(t.addr).await;
        c.send(&[window_update(0, 0x4000_0000), window_update(0, 0x4000_0000)].concat()).await;
        assert_eq!(c.goaway().await, Some(FLOW_CONTROL_ERROR), "connection window overflow in two steps");
        // §6.9: a zero increment on the connection is a PROTOCOL_ERROR.
        let mut c = RawConn::connect(t.addr).await;
        c.send(&window_update(0, 0)).await;
        assert_eq!(c.goaway().await, Some(PROTOCOL_ERROR), "zero increment on the connection");

        // On a stream, both are stream errors and the connection survives.
        let mut c = RawConn::connect(t.addr).await;
        c.open(1, ECHO).await;
        c.send(&window_update(1, 0x7FFF_FFFF)).await;
        assert_eq!(c.stream_end(1).await, StreamEnd::Reset(FLOW_CONTROL_ERROR), "stream window overflow");
        assert_eq!(c.call(3, ECHO, &echo(b"ok")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        assert!(c.goaways.is_empty(), "{:?}", c.goaways);
        // A zero increment on a stream: RFC 9113 §6.9 makes it a stream error; h2 sends GOAWAY(PROTOCOL_ERROR)
        // (stricter, and that connection only).
        let mut z = RawConn::connect(t.addr).await;
        z.open(1, ECHO).await;
        z.send(&window_update(1, 0)).await;
        assert_eq!(z.stream_end(1).await, StreamEnd::GoAway(PROTOCOL_ERROR), "zero increment on a stream");

        // §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE change that pushes an open stream's window over 2^31−1.
        c.open(7, ECHO).await;
        c.send(&window_update(7, 0x7FFF_FFFF - 65_535)).await;
        c.send(&settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 65_536)])).await;
        assert_eq!(c.goaway().await, Some(FLOW_CONTROL_ERROR), "window overflow by SETTINGS");
        // WINDOW_UPDATE on a closed stream (§6.9: allowed, ignored) and on an idle one (§5.1: PROTOCOL_ERROR).
        let mut c = RawConn::connect(t.addr).await;
        assert_eq!(c.call(1, ECHO, &echo(b"x")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        c.send(&window_update(1, 100)).await;
        assert_eq!(c.call(3, ECHO, &echo(b"x")).await, StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]));
        c.send(&window_update(101, 100)).await;
        assert_eq!(c.goaway().await, Some(PROTOCOL_ERROR), "WINDOW_UPDATE on an idle stream");
        drop(c);
        still_healthy(&t).await;
    })
    .await;
}

// ---- a client that never reads ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_that_never_reads_costs_bounded_memory() {
    case("client never reads", async {
        let t = start(ServerConfig::default()).await;
        let before = rss_kib();
        // 64 server-streaming calls of 4,000 × 16 KiB replies each (4 GiB in all) on a connection that
        // advertises a zero stream window and never reads a byte: the server may not send any DATA.
        let mut tcp = tokio::net::TcpStream::connect(t.addr).await.unwrap();
        let mut hello = PREFACE.to_vec();
        hello.extend(settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 0)]));
        hello.extend(frame(SETTINGS, ACK, 0, &[]));
        tcp.write_all(&hello).await.unwrap();
        let request = echo_message(&EchoRequest { count: 4000, reply_size: 16 * 1024, ..Default::default() });
        for i in 0..64u32 {
            let stream = 1 + 2 * i;
            let mut call = frame(HEADERS, END_HEADERS, stream, &block(&grpc_fields(STREAM)));
            call.extend(frame(DATA, END_STREAM, stream, &request));
            tcp.write_all(&call).await.unwrap();
        }
        assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.started) == 64).await);
        // A second connection with the default window that also never reads: the server fills its window
        // (64 KiB per stream) and the socket buffers, then must stop.
        let mut tcp2 = tokio::net::TcpStream::connect(t.addr).await.unwrap();
        let mut hello = PREFACE.to_vec();
        hello.extend(settings(&[]));
        hello.extend(frame(SETTINGS, ACK, 0, &[]));
        tcp2.write_all(&hello).await.unwrap();
        for i in 0..64u32 {
            let stream = 1 + 2 * i;
            let mut call = frame(HEADERS, END_HEADERS, stream, &block(&grpc_fields(STREAM)));
            call.extend(frame(DATA, END_STREAM, stream, &request));
            call.extend(window_update(0, 0x7FFF_0000 / 64));
            tcp2.write_all(&call).await.unwrap();
        }
        assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.started) == 128).await);
        // Let the producers run into their bounds; other connections are served meanwhile.
        for _ in 0..20 {
            serves_fresh_connection(&t).await;
        }
        assert_rss_bounded("128 streams of a client that never reads", before);
        assert_eq!(t.server.in_flight_calls(), 128);
        assert_eq!(Stats::get(&t.stats.completed), 20, "only the fresh connections' calls; no producer finished");
        // The client goes away: every call is cancelled and its producer stops.
        drop(tcp);
        drop(tcp2);
        assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.producer_stopped) == 128).await);
        still_healthy(&t).await;
    })
    .await;
}

// ---- slowloris ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_body_hits_the_request_body_timeout() {
    case("slowloris body", async {
        let config = ServerConfig { request_body_timeout: Duration::from_millis(500), ..Default::default() };
        let t = start(config).await;
        // With the h2 client: a request whose body trickles in one byte at a time and never ends.
        let send = raw_client(t.addr).await;
        let mut ready = send.clone().ready().await.unwrap();
        let (response, mut body) = ready.send_request(grpc_head(t.addr, ECHO, &[]), false).unwrap();
        let wire = echo(&[7; 1000]);
        let drip = tokio::spawn(async move {
            for b in wire {
                if body.send_data(Bytes::from(vec![b]), false).is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let response = response.await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["grpc-status"], "4", "DEADLINE_EXCEEDED, trailers-only");
        drip.abort();
        assert_eq!(Stats::get(&t.stats.started), 0);
        drop((response, ready, send));
        // Raw: a message prefix announcing 1 MiB, then nothing.
        let mut c = RawConn::connect(t.addr).await;
        c.open(1, ECHO).await;
        c.send(&frame(DATA, 0, 1, &[0, 0, 0x10, 0, 0])).await;
        assert_eq!(c.stream_end(1).await, StreamEnd::Ended(vec![HEADERS]));
        drop(c);
        still_healthy(&t).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_headers_never_finishing() {
    case("slowloris headers", async {
        // All ten from one peer, each pending (no complete request): within the per-peer pending quota, so
        // that the idle timeout (not admission shedding, tests/grpc_admission.rs) is what closes them.
        let config = ServerConfig {
            idle_timeout: Duration::from_millis(500),
            max_handshakes_per_peer: 10,
            ..Default::default()
        };
        let t = start(config).await;
        // HEADERS without END_HEADERS, then a CONTINUATION now and then, never the last one.
        let mut conns = Vec::new();
        for _ in 0..10 {
            let mut c = RawConn::connect(t.addr).await;
            c.send(&frame(HEADERS, 0, 1, &block(&grpc_fields(ECHO)))).await;
            conns.push(c);
        }
        for _ in 0..5 {
            for c in &mut conns {
                c.send(&frame(CONTINUATION, 0, 1, &block(&[("x-slow", "1")]))).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Other connections are served meanwhile.
        serves_fresh_connection(&t).await;
        assert_eq!(t.server.in_flight_calls(), 0, "an unfinished header block is not a call");
        // The server must not hold such connections forever: each is closed while the client still holds it.
        for c in &mut conns {
            let code = c.drain().await;
            println!("unfinished header block: closed = {}, GOAWAY {code:?}", c.closed);
        }
        assert!(conns.iter().all(|c| c.closed), "connections with an unfinished header block are kept open");
        // GOAWAY(NO_ERROR) first (the idle timeout), then the close when the peer does not finish the shutdown.
        assert!(
            conns.iter().all(|c| c.goaways == [NO_ERROR]),
            "{:?}",
            conns.iter().map(|c| &c.goaways).collect::<Vec<_>>()
        );
        quiesces(&t).await;
        drop(conns);
        still_healthy(&t).await;
    })
    .await;
}

// ---- abrupt disconnects ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abrupt_disconnects() {
    case("abrupt disconnects", async {
        let config = ServerConfig { handshake_timeout: Duration::from_millis(500), ..Default::default() };
        let t = start(config).await;
        // Mid-handshake: half a preface then close; the preface only; preface and SETTINGS without the ACK.
        for cut in [1, PREFACE.len() / 2, PREFACE.len() - 1, PREFACE.len(), PREFACE.len() + 5] {
            for _ in 0..20 {
                let mut tcp = tokio::net::TcpStream::connect(t.addr).await.unwrap();
                let hello = [PREFACE, &settings(&[])].concat();
                tcp.write_all(&hello[..cut]).await.unwrap();
                drop(tcp);
            }
        }
        // Half a preface, then silence: the handshake timeout closes it.
        let mut silent = RawConn::tcp(t.addr).await;
        silent.send(&PREFACE[..10]).await;
        assert_eq!(silent.drain().await, None);
        quiesces(&t).await;

        // Mid-call, request half sent.
        for _ in 0..20 {
            let mut c = RawConn::connect(t.addr).await;
            c.open(1, ECHO).await;
            c.send(&frame(DATA, 0, 1, &echo(b"half")[..6])).await;
            drop(c);
        }
        quiesces(&t).await;
        // Mid-call, handler running.
        let slow = echo_message(&EchoRequest { sleep_ms: 30_000, ..Default::default() });
        for i in 0..20 {
            let mut c = RawConn::connect(t.addr).await;
            c.open(1, ECHO).await;
            c.send(&frame(DATA, END_STREAM, 1, &slow)).await;
            assert!(eventually(Duration::from_secs(5), || Stats::get(&t.stats.started) == i + 1).await);
            drop(c);
        }
        assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.dropped) == 20).await);
        quiesces(&t).await;
        // Mid-response, a stream being produced.
        let many = echo_message(&EchoRequest { count: 100_000, reply_size: 1024, ..Default::default() });
        for i in 0..20 {
            let mut c = RawConn::connect(t.addr).await;
            c.open(1, STREAM).await;
            c.send(&frame(DATA, END_STREAM, 1, &many)).await;
            assert!(eventually(Duration::from_secs(5), || Stats::get(&t.stats.started) == 20 + i + 1).await);
            drop(c);
        }
        assert!(eventually(Duration::from_secs(10), || Stats::get(&t.stats.producer_stopped) == 20).await);
        still_healthy(&t).await;
    })
    .await;
}

// ---- SETTINGS and PING floods ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_and_ping_floods() {
    case("SETTINGS/PING flood", async {
        let t = start(ServerConfig::default()).await;
        let before = rss_kib();
        for (name, unit) in [
            ("PING", frame(PING, 0, 0, b"12345678")),
            ("SETTINGS", settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 65_535)])),
            ("PING ACK", frame(PING, ACK, 0, b"unasked!")),
        ] {
            // 100,000 frames in bursts, the answers read as they come.
            let mut c = RawConn::connect(t.addr).await;
            let burst: Vec<u8> = unit.iter().copied().cycle().take(unit.len() * 1000).collect();
            for _ in 0..100 {
                c.send(&burst).await;
            }
            let end = c.call(1, ECHO, &echo(b"after the flood")).await;
            println!("{name} flood: then {end:?}, GOAWAY {:?}", c.goaways);
            // h2 answers each and keeps serving (or, if it ever decides the peer is abusive, says so).
            assert!(
                end == StreamEnd::Ended(vec![HEADERS, DATA, HEADERS]) || end == StreamEnd::GoAway(ENHANCE_YOUR_CALM),
                "{name}: {end:?}"
            );
            drop(c);
        }
        // The same floods from a client that never reads the answers: the server stops reading when it cannot
        // write, so neither side buffers without bound.
        let mut tcp = tokio::net::TcpStream::connect(t.addr).await.unwrap();
        tcp.write_all(&[PREFACE, &settings(&[]), &frame(SETTINGS, ACK, 0, &[])].concat()).await.unwrap();
        let burst: Vec<u8> = frame(PING, 0, 0, b"12345678").repeat(1000);
        let writer = tokio::spawn(async move {
            for _ in 0..1000 {
                if tokio::time::timeout(Duration::from_secs(2), tcp.write_all(&burst)).await.is_err() {
                    return (tcp, true);
                }
            }
            (tcp, false)
        });
        let (tcp, blocked) = writer.await.unwrap();
        // Not asserted (that would be a timing threshold): whether the server stopped reading. Memory is.
        println!("PING flood without reading: writer blocked = {blocked}");
        serves_fresh_connection(&t).await;
        assert_rss_bounded("SETTINGS/PING floods", before);
        drop(tcp);
        still_healthy(&t).await;
    })
    .await;
}
