//! Interop with Python grpcio (from PyPI, in `.venv`; scripts/setup-python.sh): its client against our
//! server (shell/grpc/tests/interop/python/client.py), and our client against its server (server.py).
//! Without the venv the tests print a NOTICE and pass, except under CI=true, where they fail.

mod grpc_support;

use std::time::{Duration, Instant};

use attest_grpc::{Channel, ChannelConfig, Code, Metadata, ServerConfig};
use grpc_support::*;
use tokio::io::AsyncBufReadExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcio_client_against_our_server() {
    let Some(py) = python() else { return };
    let t = start(ServerConfig::default()).await;
    let mut cmd = tokio::process::Command::new(py);
    cmd.arg("client.py").arg(t.addr.to_string()).current_dir(interop_dir().join("python"));
    // Watch how many connections the single grpcio channel opens (100 concurrent calls must share one).
    let server = t.server.clone();
    let watch = tokio::spawn(async move {
        let mut max = 0;
        loop {
            max = max.max(server.open_connections());
            if max > 1 {
                return max;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    let (ok, stdout) = run_peer(cmd, Duration::from_secs(180)).await;
    assert!(ok, "grpcio client reported failures");
    assert!(!watch.is_finished(), "grpcio opened more than one connection");
    watch.abort();
    assert!(stdout.contains(" passed, 0 failed"));
    // The server is fine afterwards and nothing leaked.
    assert!(eventually(Duration::from_secs(5), || t.server.in_flight_calls() == 0).await);
    assert!(t.server.shutdown(Duration::from_secs(5)).await);
}

/// Starts server.py and returns the child and its address.
async fn grpcio_server() -> Option<(tokio::process::Child, std::net::SocketAddr)> {
    let py = python()?;
    let mut child = tokio::process::Command::new(py)
        .arg("server.py")
        .current_dir(interop_dir().join("python"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await.unwrap().unwrap().unwrap();
    let port: u16 = line.strip_prefix("PORT ").unwrap().trim().parse().unwrap();
    Some((child, ([127, 0, 0, 1], port).into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_grpcio_server() {
    let Some((_child, addr)) = grpcio_server().await else { return };
    let ch = Channel::connect(addr, ChannelConfig::default()).await.unwrap();
    let t = Some(Duration::from_secs(20));

    // Unary + metadata both ways.
    let mut md = Metadata::new();
    md.append("x-user", "alice").unwrap();
    md.append_bin("x-blob-bin", &[0, 1, 0xFE, 0xFF]).unwrap();
    let r = ch.unary::<_, EchoReply>(ECHO, EchoRequest { payload: b"hi".to_vec(), ..Default::default() }, md, t).await;
    let r = r.unwrap();
    assert_eq!(r.message.payload, b"hi");
    assert_eq!(r.metadata.get("x-user"), Some("alice"));
    assert_eq!(r.metadata.get_bin("x-blob-bin").unwrap().unwrap(), vec![0, 1, 0xFE, 0xFF]);
    let r = ch.unary::<_, EchoReply>(ECHO, EchoRequest::default(), Metadata::new(), t).await.unwrap();
    assert_eq!(r.message, EchoReply::default());

    // Every error code with UTF-8 messages (grpcio percent-encodes; we decode) and trailing metadata.
    for code in Code::ALL.iter().skip(1) {
        for m in ["plain", "100% sure", "ünïcödé — 日本語 🚀"] {
            let req = EchoRequest { fail_code: code.as_i32(), fail_message: m.into(), ..Default::default() };
            let e = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), t).await.unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (*code, m));
            assert_eq!(e.metadata.get("x-fail"), Some("yes"));
        }
    }
    let e = ch.unary::<_, EchoReply>(MISSING, EchoRequest::default(), Metadata::new(), t).await.unwrap_err();
    assert_eq!(e.code, Code::Unimplemented);

    // Deadline.
    let start = Instant::now();
    let req = EchoRequest { sleep_ms: 5000, ..Default::default() };
    let e = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), Some(Duration::from_millis(200))).await.unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded);
    assert!(start.elapsed() >= Duration::from_millis(190));

    // Sizes: 3 MB both ways; 5 MiB exceeds grpcio's default receive limit; our receive limit.
    let req = EchoRequest { payload: vec![3; 3_000_000], ..Default::default() };
    assert_eq!(ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), t).await.unwrap().message.payload.len(), 3_000_000);
    let req = EchoRequest { payload: vec![5; 5 * 1024 * 1024], ..Default::default() };
    let e = ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), t).await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e}");
    let small = Channel::connect(addr, ChannelConfig { max_message_size: 1000, ..Default::default() }).await.unwrap();
    let req = EchoRequest { reply_size: 5000, ..Default::default() };
    let e = small.unary::<_, EchoReply>(ECHO, req, Metadata::new(), t).await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted);

    // Streaming: success, error after messages, deadline.
    let mut md = Metadata::new();
    md.append("x-s", "v").unwrap();
    let req = EchoRequest { count: 20, payload: b"s".to_vec(), ..Default::default() };
    let r = ch.server_streaming::<_, EchoReply>(STREAM, req, md, t).await.unwrap();
    assert_eq!(r.metadata.get("x-s"), Some("v"));
    let all = r.message.collect().await.unwrap();
    assert_eq!(all.iter().map(|m| m.index).collect::<Vec<_>>(), (0..20).collect::<Vec<_>>());
    let req = EchoRequest { count: 3, fail_code: 10, fail_message: "stop ✋".into(), ..Default::default() };
    let mut s = ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), t).await.unwrap().message;
    for i in 0..3 {
        assert_eq!(s.message().await.unwrap().unwrap().index, i);
    }
    let e = s.message().await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (Code::Aborted, "stop ✋"));
    let req = EchoRequest { count: 100, sleep_ms: 50, ..Default::default() };
    let s = ch.server_streaming::<_, EchoReply>(STREAM, req, Metadata::new(), Some(Duration::from_millis(300))).await;
    assert_eq!(s.unwrap().message.collect().await.unwrap_err().code, Code::DeadlineExceeded);

    // 100 concurrent calls on one connection.
    let calls: Vec<_> = (0..100u32)
        .map(|i| {
            let ch = ch.clone();
            tokio::spawn(async move {
                let req = EchoRequest { payload: i.to_be_bytes().to_vec(), sleep_ms: 50, ..Default::default() };
                ch.unary::<_, EchoReply>(ECHO, req, Metadata::new(), Some(Duration::from_secs(30))).await
            })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap().message.payload, (i as u32).to_be_bytes());
    }
}
