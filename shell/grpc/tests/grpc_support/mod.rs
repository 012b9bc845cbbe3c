//! Shared helpers for the gRPC tests: the `grpctest.Test` messages (shell/grpc/tests/interop/grpctest.proto), a
//! test service with cancellation accounting, servers on 127.0.0.1:0, raw h2 and raw-frame clients.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod hostile;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use attest_grpc::{Code, Metadata, Request, Response, Router, Server, ServerConfig, Service, Status, Streaming};
use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

pub const ECHO: &str = "/grpctest.Test/Echo";
pub const STREAM: &str = "/grpctest.Test/Stream";
pub const MISSING: &str = "/grpctest.Test/Missing";

#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub payload: Vec<u8>,
    #[prost(int32, tag = "2")]
    pub fail_code: i32,
    #[prost(string, tag = "3")]
    pub fail_message: String,
    #[prost(uint32, tag = "4")]
    pub sleep_ms: u32,
    #[prost(uint32, tag = "5")]
    pub count: u32,
    #[prost(uint32, tag = "6")]
    pub reply_size: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoReply {
    #[prost(bytes = "vec", tag = "1")]
    pub payload: Vec<u8>,
    #[prost(uint32, tag = "2")]
    pub index: u32,
}

/// What the test service saw.
#[derive(Default, Debug)]
pub struct Stats {
    pub started: AtomicUsize,
    pub completed: AtomicUsize,
    /// Handler futures dropped before they finished (cancelled by deadline, reset or shutdown).
    pub dropped: AtomicUsize,
    /// Stream producers that stopped because the receiver went away.
    pub producer_stopped: AtomicUsize,
}

impl Stats {
    pub fn get(v: &AtomicUsize) -> usize {
        v.load(Ordering::SeqCst)
    }
}

struct DropGuard(Arc<Stats>, bool);
impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

pub struct TestService {
    pub stats: Arc<Stats>,
}

fn echo_metadata(m: &Metadata) -> Metadata {
    let mut out = Metadata::new();
    for (k, v) in m.iter() {
        if k.starts_with("x-") {
            if k.ends_with("-bin") {
                for b in m.get_all_bin(k).unwrap_or_default() {
                    out.append_bin(k, &b).unwrap();
                }
            } else {
                out.append(k, std::str::from_utf8(v).unwrap()).unwrap();
            }
        }
    }
    out
}

fn fail_status(req: &EchoRequest) -> Status {
    let mut md = Metadata::new();
    md.append("x-fail", "yes").unwrap();
    Status::new(Code::from_i32(req.fail_code), req.fail_message.clone()).with_metadata(md)
}

fn reply_payload(req: &EchoRequest) -> Vec<u8> {
    if req.reply_size > 0 { vec![b'r'; req.reply_size as usize] } else { req.payload.clone() }
}

impl TestService {
    async fn echo(&self, req: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        self.stats.started.fetch_add(1, Ordering::SeqCst);
        let mut guard = DropGuard(Arc::clone(&self.stats), false);
        let m = &req.message;
        if m.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(u64::from(m.sleep_ms))).await;
        }
        guard.1 = true;
        self.stats.completed.fetch_add(1, Ordering::SeqCst);
        if m.fail_code != 0 {
            return Err(fail_status(m));
        }
        let mut response = Response::new(EchoReply { payload: reply_payload(m), index: 0 });
        response.metadata = echo_metadata(&req.metadata);
        Ok(response)
    }

    fn stream(&self, req: &Request<EchoRequest>) -> Response<Streaming<EchoReply>> {
        self.stats.started.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = Streaming::channel(4);
        let stats = Arc::clone(&self.stats);
        let m = req.message.clone();
        tokio::spawn(async move {
            for index in 0..m.count {
                if m.sleep_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(u64::from(m.sleep_ms))).await;
                }
                if tx.send(Ok(EchoReply { payload: reply_payload(&m), index })).await.is_err() {
                    stats.producer_stopped.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            }
            if m.fail_code != 0 {
                let _ = tx.send(Err(fail_status(&m))).await;
            }
            stats.completed.fetch_add(1, Ordering::SeqCst);
        });
        let mut response = Response::new(rx);
        response.metadata = echo_metadata(&req.metadata);
        response
    }
}

impl Service for TestService {
    fn register(self: Arc<Self>, router: &mut Router) {
        let this = Arc::clone(&self);
        router.unary(ECHO, move |req| {
            let this = Arc::clone(&this);
            async move { this.echo(req).await }
        });
        router.server_streaming(STREAM, move |req| {
            let this = Arc::clone(&self);
            let response = this.stream(&req);
            async move { Ok(response) }
        });
    }
}

pub struct TestServer {
    pub server: Server,
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
}

pub async fn start(config: ServerConfig) -> TestServer {
    let stats = Arc::new(Stats::default());
    let mut router = Router::new();
    router.add_service(Arc::new(TestService { stats: Arc::clone(&stats) }));
    let server = Server::new(router, config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = server.serve(listener).unwrap();
    TestServer { server, addr, stats }
}

#[allow(unused_imports)]
pub use attest_test_support::h2raw::eventually;

// ---- raw h2 client ----

pub async fn raw_client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

pub fn grpc_head(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> http::Request<()> {
    let mut b = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap()
}

pub fn prefixed(flag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![flag];
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// What a raw call got back.
#[derive(Debug)]
pub struct RawResponse {
    pub http_status: u16,
    pub headers: http::HeaderMap,
    pub data: Vec<u8>,
    pub trailers: Option<http::HeaderMap>,
    /// Whether the response headers ended the stream (trailers-only).
    pub headers_end_stream: bool,
}

impl RawResponse {
    /// grpc-status from the trailers, or from the headers of a trailers-only response.
    pub fn grpc_status(&self) -> Option<i32> {
        let h = self.trailers.as_ref().unwrap_or(&self.headers);
        h.get("grpc-status").map(|v| v.to_str().unwrap().parse().unwrap())
    }
    pub fn grpc_message(&self) -> Option<String> {
        let h = self.trailers.as_ref().unwrap_or(&self.headers);
        h.get("grpc-message").map(|v| v.to_str().unwrap().to_owned())
    }
}

/// Sends `chunks` as separate DATA frames (END_STREAM on the last when `end`), then reads the response.
pub async fn raw_call(
    send: &h2::client::SendRequest<Bytes>,
    head: http::Request<()>,
    chunks: Vec<Vec<u8>>,
    end: bool,
) -> RawResponse {
    let mut send = send.clone().ready().await.unwrap();
    let no_body = chunks.is_empty() && end;
    let (response, mut stream) = send.send_request(head, no_body).unwrap();
    let n = chunks.len();
    for (i, c) in chunks.into_iter().enumerate() {
        // The server may answer (and close the stream with RST_STREAM(NO_ERROR), RFC 9113 §8.1) before the
        // body is sent — an unknown path, an unsupported encoding — so a send to a closed stream is not an
        // error here; the response below is what the tests check.
        if stream.send_data(Bytes::from(c), end && i + 1 == n).is_err() {
            break;
        }
    }
    let response = tokio::time::timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
    let http_status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = response.into_body();
    let headers_end_stream = body.is_end_stream();
    let mut data = Vec::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), body.data()).await.unwrap() {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap();
    drop(stream);
    RawResponse { http_status, headers, data, trailers, headers_end_stream }
}

pub fn encode<M: prost::Message>(m: &M) -> Vec<u8> {
    m.encode_to_vec()
}

// ---- raw HTTP/2 frames (for checks below h2's API: frame flags, GOAWAY codes) ----

pub use attest_test_support::h2raw::{PREFACE, RawFrame, frame};

/// HPACK "literal header field without indexing — new name", no Huffman (RFC 7541 §6.2.2).
pub fn hpack_literal(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (k, val) in headers {
        assert!(k.len() < 127 && val.len() < 127);
        v.push(0x00);
        v.push(k.len() as u8);
        v.extend_from_slice(k.as_bytes());
        v.push(val.len() as u8);
        v.extend_from_slice(val.as_bytes());
    }
    v
}

/// The next frame, or `None` at end of stream or after 10 s of silence.
pub async fn read_frame(tcp: &mut TcpStream) -> Option<RawFrame> {
    tokio::time::timeout(Duration::from_secs(10), attest_test_support::h2raw::read_one(tcp)).await.ok()?
}

/// Connects, sends the preface and an empty SETTINGS, acknowledges the server's SETTINGS.
pub async fn raw_frames_connect(addr: SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(PREFACE).await.unwrap();
    tcp.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
    tcp.write_all(&frame(0x4, 0x1, 0, &[])).await.unwrap();
    tcp
}

// ---- third-party peers ----

pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

pub fn interop_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The venv's python with grpcio (scripts/setup-python.sh). Absent: a visible NOTICE and `None`, except under
/// CI=true, where a missing peer is a failure.
pub fn python() -> Option<std::path::PathBuf> {
    let py = repo_root().join(".venv/bin/python");
    let ok = py.exists()
        && std::process::Command::new(&py)
            .args(["-c", "import grpc, grpc_tools.protoc"])
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    assert!(!in_ci(), "CI=true but the Python gRPC peers are missing: run scripts/setup-python.sh");
    eprintln!("NOTICE: skipping Python grpcio interop: no .venv with grpcio (run scripts/setup-python.sh)");
    None
}

/// Go with Debian's grpc-go in GOPATH mode (golang-go, golang-google-grpc-dev). Same skip rule as `python`.
pub fn go() -> Option<std::path::PathBuf> {
    let grpc = std::path::Path::new("/usr/share/gocode/src/google.golang.org/grpc");
    let go = std::process::Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
    if go && grpc.exists() {
        return Some("go".into());
    }
    assert!(!in_ci(), "CI=true but go or golang-google-grpc-dev is missing: run scripts/setup.sh");
    eprintln!("NOTICE: skipping Go grpc interop: go or /usr/share/gocode grpc missing (run scripts/setup.sh)");
    None
}

/// Runs a peer to completion with a bound; prints its output; returns (success, stdout).
pub async fn run_peer(mut cmd: tokio::process::Command, limit: Duration) -> (bool, String) {
    cmd.kill_on_drop(true).stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("peer did not finish within {limit:?}: {cmd:?}"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("--- peer stdout ---\n{stdout}--- peer stderr ---\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.success(), stdout)
}
