//! The gRPC server: one task per HTTP/2 connection; a call gets a task of its own once it has to wait.
//!
//! ```text
//!  TCP/TLS accept loop ──► connection task (drives h2: reads frames, answers PINGs, flow control)
//!                               │ every request that has arrived: (request headers, body, responder)
//!                               ▼
//!                          call (polled once on the connection task; moved to a task of its own if it waits):
//!                                        HTTP checks (405, 415)
//!                                        gRPC checks (encoding → 12, grpc-timeout → 13, path → 12)
//!                                        read + reassemble the request (size → 8, framing → 13)
//!                                        decode + run the handler          ┐ raced against the deadline (→ 4),
//!                                        send headers, DATA…, trailers     ┘ a client RST_STREAM, and shutdown
//! ```
//!
//! Performance (benches/README.md "gRPC"): a typical unary call — request DATA in the same read as its
//! HEADERS, a handler that answers without waiting — runs to completion on the connection task
//! (`start_call`), whose wake-ups h2 receives through a `ConnWaker` so that they cost no rescheduling and no
//! cross-thread notification; small responses are cut into DATA frames that h2 copies into its write buffer
//! (`FrameLimit`). One call on an otherwise idle connection then costs one read and one write, and
//! concurrent calls share them (about one write per ten calls at 100 concurrent streams).
//!
//! Errors before any response byte are *trailers-only* responses: a single HEADERS frame with `:status 200`,
//! `content-type`, `grpc-status`, `grpc-message` and END_STREAM. Otherwise the response is HEADERS, DATA
//! frames, then a trailing HEADERS frame carrying `grpc-status` and END_STREAM (never END_STREAM on DATA).
//!
//! Choices where the gRPC documents leave room, and why:
//! - A malformed `grpc-timeout` is answered with `INTERNAL`, as grpc-go does: a peer that cannot encode a
//!   timeout is broken, and silently running without the deadline it meant to set would hide that.
//! - A unary or server-streaming request must carry exactly one message: none, or more than one, is
//!   `INTERNAL` (grpc-go and grpc-java answer the same).
//! - The server does not wait forever for a request body: [`ServerConfig::request_body_timeout`] bounds the
//!   time from the request headers to the end of the request stream (→ `DEADLINE_EXCEEDED`).
//! - Memory: h2 buffers at most the flow-control windows we advertise and we release capacity only as we
//!   consume data; a message being reassembled must first take its announced length from a per-connection
//!   byte budget ([`ServerConfig::connection_buffer_budget`]), so one connection holds at most that much in
//!   partial messages however many streams it opens. Responses are sent as flow-control capacity is granted,
//!   and a streaming handler's channel is bounded, so a slow reader slows the producer instead of filling
//!   memory.
//! - Malformed frames are h2's business: it answers with GOAWAY(PROTOCOL_ERROR) (or the precise error code)
//!   and closes only that connection.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::Sleep;

use super::admission::{
    Admission, AdmissionConfig, AdmissionStats, Counted, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_PEER,
    DEFAULT_MAX_HANDSHAKES, DEFAULT_MAX_HANDSHAKES_PER_PEER, Promoter,
};
use super::codec::{DEFAULT_MAX_MESSAGE_SIZE, FrameError, MessageDecoder};
use super::metadata::{Metadata, encode_bin, parse_timeout};
use super::service::{EncodedStream, PeerInfo, Reply, Request, Response, Router};
use super::status::{Status, percent_encode};

/// Default bound on concurrently open streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS). grpc-go
/// defaults to unlimited and grpc-core to 2^31−1; we bound it so that a connection's cost is bounded, high
/// enough for the 100-concurrent-calls interop test and a 1×100 h2load run.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 256;
/// Default initial stream flow-control window (SETTINGS_INITIAL_WINDOW_SIZE): 1 MiB instead of HTTP/2's 64 KiB
/// so that a multi-megabyte message is not throttled to one window per round trip.
pub const DEFAULT_INITIAL_STREAM_WINDOW: u32 = 1024 * 1024;
/// Default connection flow-control window: 8 MiB, raised by WINDOW_UPDATE right after the handshake.
pub const DEFAULT_INITIAL_CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;
/// Default bound on one request's header block (SETTINGS_MAX_HEADER_LIST_SIZE): 16 KiB, as grpc-core.
pub const DEFAULT_MAX_HEADER_LIST_SIZE: u32 = 16 * 1024;
/// Time a reclaimed idle connection (`admission`: its slot given to a new connection) has to close after
/// its GOAWAY before the server closes it.
pub const RECLAIM_GRACE: Duration = Duration::from_secs(2);
/// Default time allowed from a request's headers to the end of its body.
pub const DEFAULT_REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time allowed from accept to the end of a connection's pending phase: its TLS/aTLS handshake, the
/// HTTP/2 preface and its first complete request headers (`super::admission`). Bytes trickling in do not
/// extend it.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default per-connection budget for partially received messages: 32 MiB (eight maximum-size messages).
pub const DEFAULT_CONNECTION_BUFFER_BUDGET: usize = 32 * 1024 * 1024;
/// Default bound on open connections per listener.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default time a connection may go without a call in flight before it is closed: 5 minutes. Bounds how long
/// a peer that connects and never completes a request (slowloris: a header block without END_HEADERS, or
/// nothing at all) holds one of the `max_connections` slots.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Server limits. Every field has a named default; build with `ServerConfig { field, ..Default::default() }`.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Largest request message accepted (bytes, without the 5-byte prefix); larger → `RESOURCE_EXHAUSTED`.
    pub max_message_size: usize,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub initial_stream_window: u32,
    /// Target connection window.
    pub initial_connection_window: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list_size: u32,
    /// Time allowed from the request headers to the end of the request body.
    pub request_body_timeout: Duration,
    /// Time allowed from accept to the first complete request headers (TLS/aTLS handshake, HTTP/2 preface,
    /// first request: the pending phase of [`super::admission`]). On connections handed to
    /// [`Server::spawn_connection`] it bounds the HTTP/2 handshake.
    pub handshake_timeout: Duration,
    /// Per-connection budget for partially received messages (must be ≥ `max_message_size`).
    pub connection_buffer_budget: usize,
    /// Open connections per listener (pending and established; [`super::admission`]).
    pub max_connections: usize,
    /// Open connections of one peer (an IPv4 address or an IPv6 /64).
    pub max_connections_per_peer: usize,
    /// Pending connections (handshake or first request not finished) per listener; the other
    /// `max_connections − max_handshakes` slots are reserved for established connections.
    pub max_handshakes: usize,
    /// Pending connections of one peer.
    pub max_handshakes_per_peer: usize,
    /// Time from accept to a connection's first byte; a silent connection is closed.
    pub first_byte_timeout: Duration,
    /// A connection without a call in flight for this long is sent GOAWAY; one still open and idle after as
    /// long again (a peer that never answers the shutdown's PING) is dropped. An unfinished header block is
    /// not a call, so this also bounds slowloris connections.
    pub idle_timeout: Duration,
}

impl ServerConfig {
    /// The admission limits of a listener of this server.
    pub fn admission(&self) -> AdmissionConfig {
        AdmissionConfig {
            max_connections: self.max_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            max_handshakes: self.max_handshakes,
            max_handshakes_per_peer: self.max_handshakes_per_peer,
            handshake_timeout: self.handshake_timeout,
            first_byte_timeout: self.first_byte_timeout,
        }
    }
}

impl Default for AdmissionConfig {
    fn default() -> AdmissionConfig {
        ServerConfig::default().admission()
    }
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            initial_stream_window: DEFAULT_INITIAL_STREAM_WINDOW,
            initial_connection_window: DEFAULT_INITIAL_CONNECTION_WINDOW,
            max_header_list_size: DEFAULT_MAX_HEADER_LIST_SIZE,
            request_body_timeout: DEFAULT_REQUEST_BODY_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            connection_buffer_budget: DEFAULT_CONNECTION_BUFFER_BUDGET,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            max_handshakes_per_peer: DEFAULT_MAX_HANDSHAKES_PER_PEER,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Lifecycle of a server: running → draining (GOAWAY sent, in-flight calls finish) → stopped (abort).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    Draining,
    Stopped,
}

/// Counts live connections or calls; lets shutdown wait for zero.
#[derive(Default)]
struct Tracker {
    count: AtomicUsize,
    zero: Notify,
}

struct TrackGuard(Arc<Tracker>);

impl Tracker {
    fn guard(self: &Arc<Tracker>) -> TrackGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        TrackGuard(Arc::clone(self))
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    async fn wait_zero(&self) {
        loop {
            let notified = self.zero.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TrackGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.zero.notify_waiters();
        }
    }
}

struct Inner {
    router: Router,
    config: ServerConfig,
    /// One table for every listener of this server (they share its limits).
    admission: Arc<Admission>,
    phase: watch::Sender<Phase>,
    connections: Arc<Tracker>,
    calls: Arc<Tracker>,
    listeners: Mutex<Vec<JoinHandle<()>>>,
}

/// A gRPC server. Cheap to clone; all clones share the router, limits and shutdown state.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use attest_grpc::{Router, Server, ServerConfig};
/// let server = Server::new(Router::new(), ServerConfig::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// server.serve(listener);
/// // … later: stop accepting, send GOAWAY, let in-flight calls finish for up to 5 s.
/// server.shutdown(std::time::Duration::from_secs(5)).await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("router", &self.inner.router)
            .field("config", &self.inner.config)
            .field("phase", &*self.inner.phase.borrow())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server routing calls with `router` under `config`.
    pub fn new(router: Router, mut config: ServerConfig) -> Server {
        config.connection_buffer_budget =
            config.connection_buffer_budget.max(config.max_message_size).min(Semaphore::MAX_PERMITS);
        let admission = Admission::new(config.admission());
        Server {
            inner: Arc::new(Inner {
                router,
                config,
                admission,
                phase: watch::Sender::new(Phase::Running),
                connections: Arc::default(),
                calls: Arc::default(),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Accepts h2c (HTTP/2 with prior knowledge) connections from `listener` in a task of its own until
    /// [`Server::shutdown`], under the server's admission limits ([`super::admission`]: the pending phase is
    /// the preface and the first request headers). Returns the local address.
    pub fn serve(&self, listener: TcpListener) -> std::io::Result<SocketAddr> {
        self.accept_loop(listener, |server, io, peer, promoter| {
            let guard = server.inner.connections.guard();
            let server = server.clone();
            async move { server.serve_tracked(io, None, guard, Some((promoter, peer))).await }
        })
    }

    /// The accept loop shared by [`Server::serve`] and [`Server::serve_with`]: [`super::admission::accept_loop`]
    /// until shutdown, each admitted connection served by `start`'s future under supervision.
    fn accept_loop<S, Fut>(&self, listener: TcpListener, start: S) -> std::io::Result<SocketAddr>
    where
        S: Fn(&Server, Counted<TcpStream>, SocketAddr, Promoter) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let addr = listener.local_addr()?;
        let server = self.clone();
        let mut phase = server.inner.phase.subscribe();
        let stop = async move {
            let _ = phase.wait_for(|p| *p != Phase::Running).await;
        };
        let admission = Arc::clone(&server.inner.admission);
        let task = super::admission::accept_loop(listener, admission, stop, "grpc", move |io, peer, p| {
            start(&server, io, peer, p)
        });
        self.inner.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(task);
        Ok(addr)
    }

    /// Serves one already-accepted connection in a task of its own. `io` is any byte stream that speaks
    /// HTTP/2 from its first byte: plain TCP (h2c), or a TLS stream that negotiated ALPN `h2`. It bypasses
    /// admission (the caller accepted it); the HTTP/2 handshake is bounded by
    /// [`ServerConfig::handshake_timeout`].
    pub fn spawn_connection<IO>(&self, io: IO) -> JoinHandle<()>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let server = self.clone();
        tokio::spawn(async move { server.serve_connection(io).await })
    }

    /// Serves one connection to its end (the connection task). Prefer [`Server::spawn_connection`].
    pub async fn serve_connection<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let guard = self.inner.connections.guard();
        self.serve_tracked(io, None, guard, None).await;
    }

    /// Accepts TCP connections from `listener` until [`Server::shutdown`], runs `handshake` on each (TLS,
    /// aTLS, …) in the connection's own task, and serves HTTP/2 on the stream it returns. The [`PeerInfo`]
    /// it returns with the stream is handed to every call on that connection as [`Request::peer`]. A
    /// handshake that fails (`Err`, logged at debug with the peer address) closes that connection only.
    /// Every connection goes through the server's admission table ([`super::admission`]) from accept on:
    /// `handshake` gets the TCP stream wrapped in a byte [`Counted`], and the handshake, the HTTP/2 preface
    /// and the first request headers must complete within [`ServerConfig::handshake_timeout`] of accept.
    pub fn serve_with<H, Fut, IO, E>(&self, listener: TcpListener, handshake: H) -> std::io::Result<SocketAddr>
    where
        H: Fn(Counted<TcpStream>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(IO, Option<PeerInfo>), E>> + Send + 'static,
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        self.accept_loop(listener, move |server, tcp, peer, promoter| {
            let guard = server.inner.connections.guard();
            let fut = handshake(tcp);
            let server = server.clone();
            async move {
                match fut.await {
                    Ok((io, info)) => server.serve_tracked(io, info, guard, Some((promoter, peer))).await,
                    Err(e) => tracing::debug!(%peer, error = %e, "grpc: connection handshake failed"),
                }
            }
        })
    }

    /// Serves one connection. `admitted` (accepted connections): the promoter that ends the pending phase at
    /// the first request headers, and the remote address handed to every call.
    async fn serve_tracked<IO>(
        &self,
        io: IO,
        peer: Option<PeerInfo>,
        _guard: TrackGuard,
        admitted: Option<(Promoter, SocketAddr)>,
    ) where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let inner = &self.inner;
        let mut phase = inner.phase.subscribe();
        if *phase.borrow_and_update() != Phase::Running {
            return;
        }
        let config = &inner.config;
        let frames = FrameLimit::for_io(&io);
        let handshake = h2::server::Builder::new()
            .initial_window_size(config.initial_stream_window)
            .initial_connection_window_size(config.initial_connection_window)
            .max_concurrent_streams(config.max_concurrent_streams)
            .max_header_list_size(config.max_header_list_size)
            .handshake::<_, Bytes>(io);
        // An admitted connection's handshake runs under its admission deadline (counted from accept, by the
        // supervisor); a connection handed in directly gets the handshake timeout of its own.
        let limit = if admitted.is_some() { Duration::MAX } else { config.handshake_timeout };
        let mut conn = match tokio::time::timeout(limit, handshake).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "grpc: HTTP/2 handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("grpc: HTTP/2 handshake timed out");
                return;
            }
        };
        let budget = Arc::new(Semaphore::new(config.connection_buffer_budget));
        let driver = Arc::new(ConnWaker::default());
        let conn_waker = Waker::from(Arc::clone(&driver));
        let mut incoming = Vec::new();
        let mut draining = false;
        // Idle = no call of this connection in flight: every call holds a clone of `budget`.
        let idle = tokio::time::sleep(config.idle_timeout);
        tokio::pin!(idle);
        // Set once established: completes when the admission table reclaims this connection while idle.
        let mut reclaim: Option<super::admission::Reclaim> = None;
        loop {
            match *phase.borrow_and_update() {
                Phase::Draining if !draining => {
                    conn.graceful_shutdown();
                    draining = true;
                }
                Phase::Running | Phase::Draining => {}
                Phase::Stopped => return,
            }
            let event = tokio::select! {
                biased;
                next = poll_fn(|cx| driver.poll_accept(cx, &conn_waker, &mut conn, &mut incoming)) => Ok(next),
                changed = phase.changed() => Err(changed),
                () = async {
                    match &reclaim {
                        Some(r) => r.requested().await,
                        None => std::future::pending().await,
                    }
                }, if reclaim.is_some() && !draining => {
                    tracing::debug!("grpc: idle connection reclaimed for a new one, sending GOAWAY");
                    conn.graceful_shutdown();
                    draining = true;
                    // Its slot is already given away: a client that does not close after the GOAWAY is
                    // closed at the next idle check, RECLAIM_GRACE from now.
                    idle.as_mut().reset(tokio::time::Instant::now() + RECLAIM_GRACE);
                    continue;
                }
                () = &mut idle => {
                    idle.as_mut().reset(tokio::time::Instant::now() + config.idle_timeout);
                    if Arc::strong_count(&budget) == 1 {
                        if draining {
                            tracing::debug!("grpc: idle connection still open after GOAWAY, closing it");
                            return;
                        }
                        tracing::debug!("grpc: connection idle for {:?}, sending GOAWAY", config.idle_timeout);
                        conn.graceful_shutdown();
                        draining = true;
                    }
                    continue;
                }
            };
            match event {
                Ok(Ok(true)) => {
                    idle.as_mut().reset(tokio::time::Instant::now() + config.idle_timeout);
                    // The first complete request headers end the pending phase (false: shed meanwhile).
                    if let Some((promoter, _)) = &admitted {
                        if !promoter.establish() {
                            return;
                        }
                        if reclaim.is_none() {
                            let calls = Arc::downgrade(&budget);
                            reclaim = promoter.reclaimable(move || calls.strong_count() == 1);
                        }
                    }
                    for (request, respond) in incoming.drain(..) {
                        let call = Call {
                            inner: Arc::clone(inner),
                            budget: Arc::clone(&budget),
                            peer: peer.clone(),
                            remote: admitted.as_ref().map(|(_, addr)| *addr),
                            frames,
                            _guard: inner.calls.guard(),
                        };
                        start_call(call.run(request, respond), &conn_waker);
                    }
                }
                Ok(Ok(false)) => return,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "grpc: connection error");
                    return;
                }
                Err(changed) => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// Graceful shutdown: stops accepting connections, sends GOAWAY on every connection (new streams are
    /// refused, in-flight calls continue), and waits up to `grace` for in-flight calls and connections to
    /// finish. Calls still running after `grace` are cancelled and their connections closed. Returns whether
    /// everything drained in time.
    pub async fn shutdown(&self, grace: Duration) -> bool {
        let inner = &self.inner;
        inner.phase.send_if_modified(|p| {
            let was_running = *p == Phase::Running;
            if was_running {
                *p = Phase::Draining;
            }
            was_running
        });
        let listeners = std::mem::take(&mut *inner.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for task in listeners {
            let _ = task.await;
        }
        let drained = tokio::time::timeout(grace, async {
            inner.calls.wait_zero().await;
            inner.connections.wait_zero().await;
        })
        .await
        .is_ok();
        if !drained {
            inner.phase.send_replace(Phase::Stopped);
        }
        drained
    }

    /// Calls currently in flight (for observability and tests).
    pub fn in_flight_calls(&self) -> usize {
        self.inner.calls.count()
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.inner.connections.count()
    }

    /// The admission table's limits, what it holds and what it decided (for `/metrics`).
    pub fn admission_stats(&self) -> AdmissionStats {
        self.inner.admission.stats()
    }
}

/// Whether `content-type` is gRPC with the protobuf codec: `application/grpc`, `application/grpc+proto`,
/// either optionally followed by `;parameters`. Media types compare case-insensitively.
fn is_grpc_content_type(value: Option<&HeaderValue>) -> bool {
    let Some(value) = value else { return false };
    let v = value.as_bytes();
    let media = v.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
    media.eq_ignore_ascii_case(b"application/grpc") || media.eq_ignore_ascii_case(b"application/grpc+proto")
}

/// Writes `grpc-status`, `grpc-message`, `grpc-status-details-bin` and the status metadata.
pub(crate) fn write_status(status: &Status, headers: &mut HeaderMap) {
    status.metadata.write_to(headers);
    headers.insert("grpc-status", status_value(status.code));
    if !status.message.is_empty()
        && let Ok(v) = HeaderValue::from_str(&percent_encode(&status.message))
    {
        headers.insert("grpc-message", v);
    }
    if !status.details.is_empty()
        && let Ok(v) = HeaderValue::from_str(&encode_bin(&status.details))
    {
        headers.insert("grpc-status-details-bin", v);
    }
}

/// The `grpc-status` value of `code`, without formatting or allocating it on every call.
fn status_value(code: super::Code) -> HeaderValue {
    const VALUES: [&str; 17] =
        ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"];
    match usize::try_from(code.as_i32()).ok().and_then(|i| VALUES.get(i)) {
        Some(v) => HeaderValue::from_static(v),
        None => HeaderValue::from(code.as_i32()),
    }
}

fn frame_status(e: &FrameError) -> Status {
    match e {
        FrameError::TooLarge { .. } => Status::resource_exhausted(format!("grpc: received {e}")),
        _ => Status::internal(format!("grpc: {e}")),
    }
}

fn response_head(metadata: &Metadata) -> http::Response<()> {
    let mut response = http::Response::new(());
    metadata.write_to(response.headers_mut());
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

/// Sends `data` as DATA frames as flow-control capacity is granted (never buffering more than h2's send
/// buffer). Fails if the stream is reset.
/// With `end_of_stream`, the last DATA frame carries END_STREAM (the client's request side).
/// `frame_limit` bounds the payload handed to h2 per DATA frame (see [`FrameLimit`]); `usize::MAX` leaves
/// the framing to h2.
pub(crate) async fn send_data(
    stream: &mut SendStream<Bytes>,
    mut data: Bytes,
    end_of_stream: bool,
    frame_limit: usize,
) -> Result<(), h2::Error> {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(0)) => {}
            Some(Ok(n)) => {
                let mut chunk = data.split_to(n.min(data.len()));
                while chunk.len() > frame_limit {
                    stream.send_data(chunk.split_to(frame_limit), false)?;
                }
                stream.send_data(chunk, end_of_stream && data.is_empty())?;
            }
            Some(Err(e)) => return Err(e),
            None => return Err(h2::Error::from(Reason::CANCEL)),
        }
    }
    Ok(())
}

/// The waker the connection task hands to h2, so that the calls it runs itself do not reschedule it.
///
/// Every frame a call queues (response headers, DATA, trailers) wakes the connection task so that it writes
/// it out. For a call running *on* the connection task ([`start_call`]) that wake-up is redundant — the task
/// polls h2 again before it goes to sleep — yet tokio would honour it by requeueing the task at the back of
/// the run queue and waking an idle worker thread to share the load: a futex or eventfd write, and often a
/// migration of the connection to the other core, per batch of calls. While the connection task is running
/// (`BUSY`), this waker only records the wake-up (`WOKEN`), and the task polls h2 again before it returns
/// `Pending`; wake-ups at any other time (a spawned call on another worker, the socket) go to the task as
/// usual. `BUSY` and `WOKEN` share one atomic, so a wake-up racing with the task's last look is never lost:
/// either the task sees `WOKEN` and polls again, or the waker sees `BUSY` cleared and wakes the task.
#[derive(Default)]
struct ConnWaker {
    state: AtomicUsize,
    task: Mutex<Option<Waker>>,
}

const BUSY: usize = 1;
const WOKEN: usize = 2;

impl Wake for ConnWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.fetch_or(WOKEN, Ordering::AcqRel) & BUSY == 0
            && let Some(task) = &*self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            task.wake_by_ref();
        }
    }
}

impl ConnWaker {
    /// Drives `conn` under `waker` (made from `self`) and collects every request that has arrived into
    /// `incoming`: `Ready(Ok(true))` when there are some (the task stays `BUSY`: the caller runs them next,
    /// then polls again), `Ready(Ok(false))` when the connection has closed, `Pending` once h2 has read,
    /// answered and flushed everything it can.
    fn poll_accept<IO>(
        &self,
        cx: &mut Context<'_>,
        waker: &Waker,
        conn: &mut h2::server::Connection<IO, Bytes>,
        incoming: &mut Vec<(http::Request<RecvStream>, SendResponse<Bytes>)>,
    ) -> Poll<Result<bool, h2::Error>>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        {
            let mut task = self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let mut h2_cx = Context::from_waker(waker);
        loop {
            // Anything queued before this point is seen by the poll below.
            self.state.store(BUSY, Ordering::Release);
            loop {
                match conn.poll_accept(&mut h2_cx) {
                    Poll::Ready(Some(Ok(call))) => incoming.push(call),
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(None) => return Poll::Ready(Ok(false)),
                    Poll::Pending => break,
                }
            }
            if !incoming.is_empty() {
                return Poll::Ready(Ok(true));
            }
            if self.state.compare_exchange(BUSY, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Poll::Pending;
            }
        }
    }
}

/// Runs a new call on the connection task until it first has to wait, and gives it a task of its own only
/// then.
///
/// Most calls never wait: the request's DATA arrived with its HEADERS, the handler answers without I/O, and
/// the response only has to be queued in h2. Running such a call here saves a task spawn and, more
/// importantly, the hand-offs between tasks (and, on the multi-thread runtime, between worker threads): the
/// connection task that read the request also flushes the response, and when several requests arrived in
/// one read their responses leave in one write. A call that does wait (a handler that awaits I/O or
/// `spawn_blocking`, a request body still in flight, flow control) continues in its own task exactly as
/// before, so a slow call never holds up the connection. A handler's *synchronous* work runs on the
/// connection task, which is why CPU-heavy work belongs in `spawn_blocking` (as the services do) — it
/// would block a runtime worker anyway.
///
/// The first poll runs under the connection's [`ConnWaker`], so the wake-ups it causes (h2 waking the
/// connection for each queued frame and the stream's own waiters as it closes) only mark the connection for
/// another poll, which it makes anyway. A call that goes on in its own task is polled there at once and
/// registers that task's waker from then on; a stale registration from the first poll can only cause one
/// spurious poll of the connection.
///
/// A panicking call is caught and dropped, which resets its stream (h2 sends RST_STREAM when a stream's
/// handles go away unfinished), as a panic in a spawned task would: the connection and its other calls
/// carry on.
fn start_call<F>(call: F, conn_waker: &Waker)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut call = Box::pin(call);
    let mut cx = Context::from_waker(conn_waker);
    match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx))) {
        Ok(Poll::Ready(())) => {}
        Ok(Poll::Pending) => {
            tokio::spawn(call);
        }
        Err(_) => tracing::error!("grpc: call panicked; its stream is reset"),
    }
}

/// How response messages are cut into DATA frames so that a small response leaves in one write.
///
/// h2 copies a DATA payload shorter than its *chain threshold* (256 bytes when the transport supports
/// vectored writes, 1024 otherwise: h2 0.4 `codec/framed_write.rs`) into its 16 KiB write buffer, but keeps
/// a longer one aside, writes it straight from the caller's buffer, and must finish that write before it can
/// buffer the next frame. A unary response of one ≈1 KB message (HEADERS, DATA, trailing HEADERS) therefore
/// cost two writes — two TCP segments and two wake-ups of the peer — and under concurrency every response
/// ended a write of its own. Cut into frames under the threshold, a small message is copied into the buffer
/// like the HEADERS around it, so a whole response, and those of other calls ready at the same time, leave
/// in one write. The cost is 9 bytes of frame header per 255 (or 1023) bytes and a copy, which is why only
/// messages up to [`COALESCE_MAX`] bytes are cut; larger ones keep h2's zero-copy path.
#[derive(Clone, Copy, Debug)]
struct FrameLimit {
    /// The largest DATA payload h2 copies into its write buffer on this connection.
    copied: usize,
}

/// Messages up to this size (prefix included) are sent in DATA frames that h2 copies (see [`FrameLimit`]).
const COALESCE_MAX: usize = 4096;

impl FrameLimit {
    /// The limit for a connection over `io` (h2 picks its threshold from `is_write_vectored`).
    fn for_io(io: &impl AsyncWrite) -> FrameLimit {
        FrameLimit { copied: if io.is_write_vectored() { 255 } else { 1023 } }
    }

    /// The `frame_limit` for [`send_data`] of a message of `len` bytes.
    fn for_message(self, len: usize) -> usize {
        if len <= COALESCE_MAX { self.copied } else { usize::MAX }
    }
}

/// Why a call stopped early.
enum Interrupt {
    Deadline,
    Reset,
}

/// Waits for the deadline, if any.
async fn expire(deadline: &mut Option<Pin<Box<Sleep>>>) {
    match deadline {
        Some(sleep) => sleep.as_mut().await,
        None => std::future::pending().await,
    }
}

/// One stream's task state: holds the call's place in the in-flight count.
struct Call {
    inner: Arc<Inner>,
    budget: Arc<Semaphore>,
    peer: Option<PeerInfo>,
    remote: Option<SocketAddr>,
    frames: FrameLimit,
    _guard: TrackGuard,
}

impl Call {
    async fn run(self, request: http::Request<RecvStream>, mut respond: SendResponse<Bytes>) {
        let (parts, body) = request.into_parts();
        // HTTP-level checks: not gRPC at all → plain HTTP status (PROTOCOL-HTTP2.md asks for 415).
        if parts.method != http::Method::POST {
            http_error(&mut respond, http::StatusCode::METHOD_NOT_ALLOWED);
            return;
        }
        if !is_grpc_content_type(parts.headers.get(CONTENT_TYPE)) {
            http_error(&mut respond, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
            return;
        }
        // gRPC-level checks → trailers-only responses.
        if let Some(enc) = parts.headers.get("grpc-encoding")
            && enc.as_bytes() != b"identity"
        {
            let status = Status::unimplemented(format!(
                "grpc: unsupported grpc-encoding {:?}; only identity is supported",
                String::from_utf8_lossy(enc.as_bytes())
            ));
            let mut response = response_head(&Metadata::new());
            write_status(&status, response.headers_mut());
            response.headers_mut().insert("grpc-accept-encoding", HeaderValue::from_static("identity"));
            let _ = respond.send_response(response, true);
            return;
        }
        let mut deadline = None;
        if let Some(v) = parts.headers.get("grpc-timeout") {
            let Some(timeout) = parse_timeout(v.as_bytes()) else {
                let msg = format!("grpc: malformed grpc-timeout {:?}", String::from_utf8_lossy(v.as_bytes()));
                trailers_only(&mut respond, &Status::internal(msg));
                return;
            };
            // An unrepresentable instant (99999999H) is no deadline at all.
            deadline = Instant::now().checked_add(timeout);
        }
        let path = parts.uri.path();
        let Some(method) = self.inner.router.get(path).cloned() else {
            trailers_only(&mut respond, &Status::unimplemented(format!("grpc: unknown method {path}")));
            return;
        };
        let metadata = Metadata::from_headers(&parts.headers);
        drop(parts);

        let mut expiry = deadline.map(|d| Box::pin(tokio::time::sleep_until(d.into())));
        let mut phase = self.inner.phase.subscribe();
        let stopped = async move {
            let _ = phase.wait_for(|p| *p == Phase::Stopped).await;
        };
        tokio::pin!(stopped);

        // Phase A: receive, decode, run the handler. Dropping this future cancels the handler.
        let mut body = body;
        let work = async {
            let message = self.read_request(&mut body).await?;
            method
                .call(Request { metadata, deadline, message, peer: self.peer.clone(), remote_addr: self.remote })
                .await
        };
        let outcome = tokio::select! {
            r = work => Ok(r),
            () = expire(&mut expiry) => Err(Interrupt::Deadline),
            _ = poll_fn(|cx| respond.poll_reset(cx)) => Err(Interrupt::Reset),
            () = &mut stopped => Err(Interrupt::Reset),
        };
        let reply = match outcome {
            Ok(Ok(reply)) => reply,
            Ok(Err(status)) => return trailers_only(&mut respond, &status),
            Err(Interrupt::Deadline) => return trailers_only(&mut respond, &deadline_status()),
            Err(Interrupt::Reset) => return respond.send_reset(Reason::CANCEL),
        };

        // Phase B: the response.
        let (metadata, mut stream_body) = match reply {
            Reply::Unary(Response { metadata, message }) => (metadata, Ok(message)),
            Reply::Stream(Response { metadata, message }) => (metadata, Err(message)),
        };
        let Ok(mut send) = respond.send_response(response_head(&metadata), false) else { return };
        let result = match &mut stream_body {
            Ok(message) => {
                let message = std::mem::take(message);
                let limit = self.frames.for_message(message.len());
                tokio::select! {
                    r = send_data(&mut send, message, false, limit) => r.map_err(|_| Interrupt::Reset).map(|()| Status::new(super::Code::Ok, "")),
                    () = expire(&mut expiry) => Err(Interrupt::Deadline),
                    () = &mut stopped => Err(Interrupt::Reset),
                }
            }
            Err(messages) => {
                tokio::select! {
                    r = send_stream(&mut send, messages.as_mut(), self.frames) => r,
                    () = expire(&mut expiry) => Err(Interrupt::Deadline),
                    () = &mut stopped => Err(Interrupt::Reset),
                }
            }
        };
        let status = match result {
            Ok(status) => status,
            Err(Interrupt::Deadline) => deadline_status(),
            Err(Interrupt::Reset) => return send.send_reset(Reason::CANCEL),
        };
        let mut trailers = HeaderMap::new();
        write_status(&status, &mut trailers);
        let _ = send.send_trailers(trailers);
    }

    /// Reads the request stream to its end and returns its single message.
    async fn read_request(&self, body: &mut RecvStream) -> Result<Bytes, Status> {
        let config = &self.inner.config;
        let read = async {
            let mut decoder = MessageDecoder::new(config.max_message_size);
            let mut message = None;
            let mut permit = None;
            while let Some(chunk) = body.data().await {
                let chunk = chunk.map_err(|e| h2_status(&e))?;
                decoder.push(&chunk);
                while let Some(m) = decoder.next_message().map_err(|e| frame_status(&e))? {
                    if message.replace(m).is_some() {
                        return Err(Status::internal("grpc: more than one request message for a unary request"));
                    }
                    permit = None;
                }
                if permit.is_none()
                    && let Some(len) = decoder.pending_len()
                {
                    // Take the message's size from the connection budget before letting the peer send it.
                    let n = u32::try_from(len).unwrap_or(u32::MAX);
                    permit = Some(
                        Arc::clone(&self.budget)
                            .acquire_many_owned(n)
                            .await
                            .map_err(|_| Status::unavailable("closing"))?,
                    );
                }
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            decoder.finish().map_err(|e| frame_status(&e))?;
            drop(permit);
            message.ok_or_else(|| Status::internal("grpc: missing request message"))
        };
        match tokio::time::timeout(config.request_body_timeout, read).await {
            Ok(r) => r,
            Err(_) => Err(Status::deadline_exceeded(format!(
                "grpc: request body not complete within {:?}",
                config.request_body_timeout
            ))),
        }
    }
}

/// Streams the handler's messages; returns the final status (OK or the handler's error).
async fn send_stream(
    send: &mut SendStream<Bytes>,
    messages: &mut dyn EncodedStream,
    frames: FrameLimit,
) -> Result<Status, Interrupt> {
    loop {
        let next = tokio::select! {
            next = poll_fn(|cx| messages.poll_next(cx)) => next,
            _ = poll_fn(|cx| send.poll_reset(cx)) => return Err(Interrupt::Reset),
        };
        match next {
            None => return Ok(Status::new(super::Code::Ok, "")),
            Some(Err(status)) => return Ok(status),
            Some(Ok(bytes)) => {
                let limit = frames.for_message(bytes.len());
                send_data(send, bytes, false, limit).await.map_err(|_| Interrupt::Reset)?;
            }
        }
    }
}

fn deadline_status() -> Status {
    Status::deadline_exceeded("grpc: deadline exceeded")
}

/// Maps a stream-level h2 error while receiving a request.
fn h2_status(e: &h2::Error) -> Status {
    match e.reason() {
        Some(Reason::CANCEL) => Status::cancelled("grpc: stream cancelled by the client"),
        _ => Status::internal(format!("grpc: HTTP/2 error: {e}")),
    }
}

fn trailers_only(respond: &mut SendResponse<Bytes>, status: &Status) {
    let mut response = response_head(&Metadata::new());
    write_status(status, response.headers_mut());
    let _ = respond.send_response(response, true);
}

fn http_error(respond: &mut SendResponse<Bytes>, code: http::StatusCode) {
    let mut response = http::Response::new(());
    *response.status_mut() = code;
    let _ = respond.send_response(response, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let ok = ["application/grpc", "application/grpc+proto", "application/grpc;charset=utf-8", "Application/GRPC"];
        for v in ok {
            assert!(is_grpc_content_type(Some(&HeaderValue::from_static(v))), "{v}");
        }
        let bad = ["application/json", "application/grpc+json", "application/grpcx", "text/plain", ""];
        for v in bad {
            assert!(!is_grpc_content_type(Some(&HeaderValue::from_static(v))), "{v}");
        }
        assert!(!is_grpc_content_type(None));
    }

    #[test]
    fn status_values() {
        for code in super::super::Code::ALL {
            assert_eq!(status_value(code).to_str().unwrap(), code.as_i32().to_string());
        }
    }

    use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};

    use crate::{Channel, ChannelConfig, Request, Response};

    fn panic_now() -> Result<Response<GetDataKeyResponse>, Status> {
        panic!("handler panic (expected by this test)")
    }

    /// Methods for the tests below: `/t.T/Key` answers `length` bytes; `/t.T/PanicAtOnce` panics in its
    /// first poll (on the connection task), `/t.T/PanicLater` after a yield (in a task of its own).
    fn router() -> Router {
        let mut router = Router::new();
        router.unary("/t.T/Key", |req: Request<GetDataKeyRequest>| async move {
            let length = req.message.length as usize;
            Ok(Response::new(GetDataKeyResponse { data_key: (0..length).map(|i| i as u8).collect() }))
        });
        router.unary("/t.T/PanicAtOnce", |_req: Request<GetDataKeyRequest>| async move { panic_now() });
        router.unary("/t.T/PanicLater", |_req: Request<GetDataKeyRequest>| async move {
            tokio::task::yield_now().await;
            panic_now()
        });
        router
    }

    async fn key(channel: &Channel, path: &str, length: u32) -> Result<Vec<u8>, Status> {
        let request = GetDataKeyRequest { data_key_id: String::new(), length };
        let response = channel.unary::<_, GetDataKeyResponse>(path, request, Metadata::new(), None).await?;
        Ok(response.message.data_key)
    }

    /// A byte stream without vectored writes, as TLS streams are (h2 then copies DATA payloads under 1024
    /// bytes instead of 256).
    struct NotVectored(tokio::io::DuplexStream);

    impl AsyncRead for NotVectored {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for NotVectored {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.0).poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.0).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    async fn wait_idle(server: &Server) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while server.in_flight_calls() != 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("calls finish");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn panicking_handler_resets_only_its_stream() {
        let server = Server::new(router(), ServerConfig::default());
        let addr = server.serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
        let channel = Channel::connect(addr, ChannelConfig::default()).await.unwrap();
        for path in ["/t.T/PanicAtOnce", "/t.T/PanicLater"] {
            assert!(key(&channel, path, 1).await.is_err(), "{path}");
            // The same connection still serves calls.
            assert_eq!(key(&channel, "/t.T/Key", 32).await.unwrap().len(), 32);
        }
        assert_eq!(server.open_connections(), 1);
        wait_idle(&server).await;
    }

    /// Messages on both sides of the DATA-frame cutting limits arrive intact, over a vectored (TCP) and a
    /// non-vectored (in-memory, like TLS) transport, one at a time and many at once on one connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn responses_around_the_framing_limits() {
        let lengths = [0, 1, 250, 251, 255, 256, 1018, 1019, 1023, 1024, 4090, 4091, 4096, 20_000, 300_000];
        let server = Server::new(router(), ServerConfig::default());
        let addr = server.serve(TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
        let tcp = Channel::connect(addr, ChannelConfig::default()).await.unwrap();
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server_io = NotVectored(server_io);
        assert!(!server_io.is_write_vectored());
        server.spawn_connection(server_io);
        let memory = Channel::handshake(client_io, "localhost", ChannelConfig::default()).await.unwrap();
        for channel in [&tcp, &memory] {
            for &length in &lengths {
                let got = key(channel, "/t.T/Key", length).await.unwrap();
                assert_eq!(got, (0..length).map(|i| i as u8).collect::<Vec<_>>(), "{length}");
            }
            let calls: Vec<_> = lengths
                .iter()
                .map(|&length| {
                    let channel = channel.clone();
                    tokio::spawn(async move { key(&channel, "/t.T/Key", length).await })
                })
                .collect();
            for (call, &length) in calls.into_iter().zip(&lengths) {
                assert_eq!(call.await.unwrap().unwrap().len(), length as usize);
            }
        }
        wait_idle(&server).await;
    }
}
