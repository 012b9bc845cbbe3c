//! A raw HTTP/2 peer for hostile-input tests (feature `h2raw`): frames written by hand (9-byte header and
//! payload, RFC 9113 §4.1), HPACK without Huffman coding and, unless asked, without indexing (RFC 7541 §6.2.2),
//! so no HPACK crate is needed and any frame — well-formed or not — can be sent. It runs over any byte stream:
//! plain TCP ([`RawConn::tcp`], [`RawConn::connect`]) or an already established TLS/aTLS stream
//! ([`RawConn::over`], [`RawConn::handshake_over`]). Frames from the server are read by a task of their own, so
//! a test can flood the server without both sides blocking on full socket buffers.
//!
//! Used by the gRPC server's hostile-input tests (shell/grpc/tests/grpc_hostile.rs) and by the ones against the
//! join service over aTLS (benches/tests/join_hostile.rs).
#![allow(missing_docs, clippy::cast_possible_truncation, clippy::missing_panics_doc)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// One frame: 9-byte header (24-bit length, type, flags, stream id) and `payload`.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// A frame read from the server.
#[derive(Debug)]
pub struct RawFrame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// Reads one frame; `None` at end of stream or on a read error.
pub async fn read_one<R: AsyncRead + Unpin>(r: &mut R) -> Option<RawFrame> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head).await.ok()?;
    let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
    let mut payload = vec![0; len];
    r.read_exact(&mut payload).await.ok()?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7FFF_FFFF;
    Some(RawFrame { kind: head[3], flags: head[4], stream, payload })
}

// Frame types (RFC 9113 §6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;

// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xB;

// SETTINGS identifiers (RFC 9113 §6.5.2).
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// How long one read may wait before the peer is declared silent.
pub const READ_LIMIT: Duration = Duration::from_secs(10);

/// An HPACK integer with an `n`-bit prefix, the high bits of the first octet set to `flags` (RFC 7541 §5.1).
pub fn hpack_int(out: &mut Vec<u8>, flags: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

fn hpack_str(out: &mut Vec<u8>, s: &[u8]) {
    hpack_int(out, 0x00, 7, s.len()); // H = 0: no Huffman
    out.extend_from_slice(s);
}

/// A literal field with a new name: without indexing (0x00) or, with `index`, with incremental indexing
/// (0x40, the entry enters the dynamic table).
pub fn hpack_field(out: &mut Vec<u8>, name: &[u8], value: &[u8], index: bool) {
    out.push(if index { 0x40 } else { 0x00 });
    hpack_str(out, name);
    hpack_str(out, value);
}

/// An indexed field (RFC 7541 §6.1): one octet for indices below 127.
pub fn hpack_indexed(out: &mut Vec<u8>, index: usize) {
    hpack_int(out, 0x80, 7, index);
}

/// A header block of literal fields without indexing.
pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in fields {
        hpack_field(&mut out, k.as_bytes(), v.as_bytes(), false);
    }
    out
}

/// The request fields of a well-formed gRPC call to `path`.
pub fn grpc_fields(path: &str) -> Vec<(&str, &str)> {
    vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
}

pub fn settings(values: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, v) in values {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&v.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &payload)
}

pub fn rst_stream(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

pub fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// The error code of a GOAWAY or RST_STREAM frame.
pub fn error_code(f: &RawFrame) -> u32 {
    let at = if f.kind == GOAWAY { 4 } else { 0 };
    u32::from_be_bytes([f.payload[at], f.payload[at + 1], f.payload[at + 2], f.payload[at + 3]])
}

/// How the server ended a stream we opened.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// RST_STREAM with this code.
    Reset(u32),
    /// A frame with END_STREAM (the response's last HEADERS or DATA), after these frame types.
    Ended(Vec<u8>),
    /// GOAWAY with this code before the stream ended.
    GoAway(u32),
    /// The connection closed (or went silent for [`READ_LIMIT`]) first.
    Closed,
}

/// A loopback address other than 127.0.0.1 for peer number `n` < 62,500 (`127.66.x.y`), so that one test
/// can play many distinct peers against a server's per-peer limits (the whole 127.0.0.0/8 is loopback on
/// Linux).
pub fn loopback_peer(n: u32) -> std::net::IpAddr {
    let (x, y) = ((n / 250) as u8, (n % 250) as u8 + 1);
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 66, x, y))
}

/// A TCP connection to `addr` from the local address `source` (any port).
pub async fn connect_from(source: std::net::IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = if source.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.bind(SocketAddr::new(source, 0))?;
    let tcp = socket.connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// A raw HTTP/2 client connection. Frames from the server are read by a background task.
pub struct RawConn {
    w: Pin<Box<dyn AsyncWrite + Send>>,
    rx: mpsc::UnboundedReceiver<RawFrame>,
    /// Frames read while looking for another stream's (see [`RawConn::stream_end`]).
    backlog: VecDeque<RawFrame>,
    /// Every GOAWAY seen so far (error codes).
    pub goaways: Vec<u32>,
    /// Whether the server closed the connection (as opposed to going silent).
    pub closed: bool,
    /// The task reading the server's frames; it owns the read half, so dropping the connection aborts it.
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for RawConn {
    /// Closes the connection: the write half is dropped with `self`, the read half with the reader task (over
    /// TLS the stream closes only once both halves are gone).
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl RawConn {
    /// A TCP connection, nothing sent.
    pub async fn tcp(addr: SocketAddr) -> RawConn {
        RawConn::over(TcpStream::connect(addr).await.unwrap())
    }

    /// A raw peer on an established byte stream (TCP, TLS, …), nothing sent. Must be called within a Tokio
    /// runtime: the reading half moves to a task of its own.
    pub fn over<S: AsyncRead + AsyncWrite + Send + 'static>(stream: S) -> RawConn {
        let (mut r, w) = tokio::io::split(stream);
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Some(f) = read_one(&mut r).await {
                if tx.send(f).is_err() {
                    return;
                }
            }
        });
        RawConn { w: Box::pin(w), rx, backlog: VecDeque::new(), goaways: Vec::new(), closed: false, reader }
    }

    /// The preface, our SETTINGS (`values`), and an ACK of the server's SETTINGS on an established stream.
    pub async fn handshake_over<S: AsyncRead + AsyncWrite + Send + 'static>(
        stream: S,
        values: &[(u16, u32)],
    ) -> RawConn {
        let mut c = RawConn::over(stream);
        let mut hello = PREFACE.to_vec();
        hello.extend(settings(values));
        hello.extend(frame(SETTINGS, ACK, 0, &[]));
        c.send(&hello).await;
        c
    }

    /// A TCP connection with the preface, our SETTINGS (`values`), and an ACK of the server's SETTINGS.
    pub async fn connect_with(addr: SocketAddr, values: &[(u16, u32)]) -> RawConn {
        RawConn::handshake_over(TcpStream::connect(addr).await.unwrap(), values).await
    }

    pub async fn connect(addr: SocketAddr) -> RawConn {
        RawConn::connect_with(addr, &[]).await
    }

    /// Writes `bytes`; a write error (the server closed) is ignored: what the server sent says what happened.
    pub async fn send(&mut self, bytes: &[u8]) {
        let _ = self.w.write_all(bytes).await;
    }

    /// Opens `stream` with a well-formed gRPC request to `path` (no END_STREAM).
    pub async fn open(&mut self, stream: u32, path: &str) {
        let f = frame(HEADERS, END_HEADERS, stream, &block(&grpc_fields(path)));
        self.send(&f).await;
    }

    /// The next frame not yet read, or `None` once the connection is closed ([`RawConn::closed`]) or silent
    /// for [`READ_LIMIT`].
    pub async fn next(&mut self) -> Option<RawFrame> {
        match tokio::time::timeout(READ_LIMIT, self.rx.recv()).await {
            Ok(Some(f)) => {
                if f.kind == GOAWAY {
                    self.goaways.push(error_code(&f));
                }
                Some(f)
            }
            Ok(None) => {
                self.closed = true;
                None
            }
            Err(_) => None,
        }
    }

    /// Reads until a GOAWAY and returns its code; `None` if the connection closed without one.
    pub async fn goaway(&mut self) -> Option<u32> {
        while let Some(f) = self.next().await {
            if f.kind == GOAWAY {
                return Some(error_code(&f));
            }
        }
        None
    }

    /// Reads until the connection closes (or goes silent); returns the first GOAWAY code, if any.
    pub async fn drain(&mut self) -> Option<u32> {
        while self.next().await.is_some() {}
        self.goaways.first().copied()
    }

    /// Reads until `stream` ends. Frames of other streams are kept for their own `stream_end`; PINGs are not
    /// answered.
    pub async fn stream_end(&mut self, stream: u32) -> StreamEnd {
        let mut kinds = Vec::new();
        let mut mine: VecDeque<RawFrame> = VecDeque::new();
        let backlog = std::mem::take(&mut self.backlog);
        for f in backlog {
            if f.stream == stream { mine.push_back(f) } else { self.backlog.push_back(f) }
        }
        loop {
            let f = match mine.pop_front() {
                Some(f) => f,
                None => match self.next().await {
                    Some(f) => f,
                    None => return StreamEnd::Closed,
                },
            };
            if f.kind == GOAWAY {
                return StreamEnd::GoAway(error_code(&f));
            }
            if f.stream != stream {
                if f.stream != 0 {
                    self.backlog.push_back(f);
                }
                continue;
            }
            if f.kind == RST_STREAM {
                return StreamEnd::Reset(error_code(&f));
            }
            kinds.push(f.kind);
            if matches!(f.kind, HEADERS | DATA) && f.flags & END_STREAM != 0 {
                return StreamEnd::Ended(kinds);
            }
        }
    }

    /// Rapid reset (CVE-2023-44487): opens streams from `first_stream` on with a complete request to `path`
    /// (HEADERS, then DATA with `message` and END_STREAM) and resets each at once (RST_STREAM CANCEL), written in
    /// `bursts` bursts of `per_burst` without waiting for anything, until the server sends GOAWAY. Returns how
    /// many streams were opened and the first GOAWAY's code (waiting for one after the last burst).
    pub async fn rapid_reset(
        &mut self,
        first_stream: u32,
        path: &str,
        message: &[u8],
        bursts: usize,
        per_burst: usize,
    ) -> (u32, Option<u32>) {
        let mut stream = first_stream;
        'flood: for _ in 0..bursts {
            let mut burst = Vec::new();
            for _ in 0..per_burst {
                burst.extend(frame(HEADERS, END_HEADERS, stream, &block(&grpc_fields(path))));
                burst.extend(frame(DATA, END_STREAM, stream, message));
                burst.extend(rst_stream(stream, CANCEL));
                stream += 2;
            }
            self.send(&burst).await;
            while let Ok(Some(f)) = tokio::time::timeout(Duration::ZERO, self.next()).await {
                if f.kind == GOAWAY {
                    break 'flood;
                }
            }
        }
        let code = if self.goaways.is_empty() { self.goaway().await } else { self.goaways.first().copied() };
        ((stream - first_stream) / 2, code)
    }

    /// A complete unary call on `stream` (request headers, one DATA frame with END_STREAM); how it ended.
    pub async fn call(&mut self, stream: u32, path: &str, message: &[u8]) -> StreamEnd {
        self.open(stream, path).await;
        self.send(&frame(DATA, END_STREAM, stream, message)).await;
        self.stream_end(stream).await
    }
}

/// Polls `cond` every 10 ms until it holds or `limit` has passed; whether it held. A bound for waiting on a
/// server's counters, not a speed requirement.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

/// This process's resident set size in KiB (`VmRSS` of /proc/self/status; for a server running in-process).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}
