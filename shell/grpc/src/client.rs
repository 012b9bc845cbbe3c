//! The gRPC client: a [`Channel`] is one HTTP/2 connection (h2c over TCP, or any byte stream such as TLS with
//! ALPN `h2`) whose connection task runs on its own; calls are streams multiplexed on it.
//!
//! A call sends HEADERS (`:method POST`, `:path`, `content-type: application/grpc`, `te: trailers`,
//! `grpc-timeout` when a timeout is given, metadata), the one length-prefixed request message with
//! END_STREAM, and reads the response. Outcomes, in order of precedence:
//! - HTTP status other than 200 without `grpc-status`: the HTTP→gRPC mapping of
//!   `grpc/doc/http-grpc-status-mapping.md` (400→INTERNAL, 401→UNAUTHENTICATED, 403→PERMISSION_DENIED,
//!   404→UNIMPLEMENTED, 429/502/503/504→UNAVAILABLE, anything else→UNKNOWN);
//! - a trailers-only response: its `grpc-status`;
//! - otherwise the trailers' `grpc-status` (missing trailers → INTERNAL); a non-OK status wins over any
//!   framing problem in the body; with OK, a unary call needs exactly one message (else INTERNAL);
//! - RST_STREAM from the server: REFUSED_STREAM→UNAVAILABLE, CANCEL→CANCELLED, ENHANCE_YOUR_CALM→
//!   RESOURCE_EXHAUSTED, INADEQUATE_SECURITY→PERMISSION_DENIED, others→INTERNAL (PROTOCOL-HTTP2.md, "Errors");
//!   GOAWAY and I/O errors → UNAVAILABLE;
//! - the local timeout → DEADLINE_EXCEEDED, and the stream is reset (CANCEL) so the server stops working.
//!
//! A channel does not reconnect: once its connection is gone (GOAWAY, I/O error) every call fails with
//! UNAVAILABLE and the owner makes a new channel (the join client's retry loop owns back-off, not this layer).

use std::future::poll_fn;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::{Reason, RecvStream};
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::codec::{self, DEFAULT_MAX_MESSAGE_SIZE, FrameError, MessageDecoder};
use super::metadata::{Metadata, decode_bin, encode_timeout};
use super::server::{DEFAULT_INITIAL_CONNECTION_WINDOW, DEFAULT_INITIAL_STREAM_WINDOW, send_data};
use super::service::{Response, Streaming};
use super::status::{Code, Status, percent_decode};

/// Messages buffered between a server-streaming call's reader task and the caller.
pub const STREAM_BUFFER: usize = 16;

/// Client limits.
#[derive(Clone, Debug)]
pub struct ChannelConfig {
    /// Largest response message accepted; larger → `RESOURCE_EXHAUSTED`.
    pub max_message_size: usize,
    /// SETTINGS_INITIAL_WINDOW_SIZE advertised to the server.
    pub initial_stream_window: u32,
    /// Target connection window.
    pub initial_connection_window: u32,
    /// Time allowed for the TCP connect and the HTTP/2 handshake.
    pub connect_timeout: Duration,
}

impl Default for ChannelConfig {
    fn default() -> ChannelConfig {
        ChannelConfig {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            initial_stream_window: DEFAULT_INITIAL_STREAM_WINDOW,
            initial_connection_window: DEFAULT_INITIAL_CONNECTION_WINDOW,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A client connection. Cheap to clone; clones share the connection.
#[derive(Clone, Debug)]
pub struct Channel {
    send: h2::client::SendRequest<Bytes>,
    authority: Arc<str>,
    config: Arc<ChannelConfig>,
}

impl Channel {
    /// Connects with h2c (HTTP/2 with prior knowledge) over TCP.
    pub async fn connect(addr: std::net::SocketAddr, config: ChannelConfig) -> Result<Channel, Status> {
        let tcp = tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Status::unavailable(format!("connect to {addr}: timed out")))?
            .map_err(|e| Status::unavailable(format!("connect to {addr}: {e}")))?;
        let _ = tcp.set_nodelay(true);
        Channel::handshake(tcp, &addr.to_string(), config).await
    }

    /// Speaks HTTP/2 over an established byte stream (TCP, or TLS that negotiated ALPN `h2`). `authority` is
    /// sent as `:authority`. The connection task is spawned on the current runtime.
    pub async fn handshake<IO>(io: IO, authority: &str, config: ChannelConfig) -> Result<Channel, Status>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let handshake = h2::client::Builder::new()
            .initial_window_size(config.initial_stream_window)
            .initial_connection_window_size(config.initial_connection_window)
            .enable_push(false)
            .handshake::<_, Bytes>(io);
        let (send, conn) = tokio::time::timeout(config.connect_timeout, handshake)
            .await
            .map_err(|_| Status::unavailable("HTTP/2 handshake timed out"))?
            .map_err(|e| Status::unavailable(format!("HTTP/2 handshake: {e}")))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "grpc client: connection closed with an error");
            }
        });
        Ok(Channel { send, authority: authority.into(), config: Arc::new(config) })
    }

    /// A unary call: one request, one response.
    pub async fn unary<Req, Resp>(
        &self,
        path: &str,
        request: Req,
        metadata: Metadata,
        timeout: Option<Duration>,
    ) -> Result<Response<Resp>, Status>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let deadline = deadline(timeout)?;
        let call = async {
            let (head, mut body) = self.start(path, &request, &metadata, timeout).await?;
            let metadata = match head {
                Head::TrailersOnly(status) => {
                    return Err(if status.code == Code::Ok {
                        Status::internal("grpc: server sent OK without a message for a unary call")
                    } else {
                        status
                    });
                }
                Head::Headers(metadata) => metadata,
            };
            let mut reader = Reader::new(self.config.max_message_size);
            let mut message = None;
            let outcome = loop {
                match reader.next(&mut body).await {
                    Ok(Some(m)) => {
                        if message.replace(m).is_some() {
                            break Err(Status::internal("grpc: server sent more than one message for a unary call"));
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(status) => break Err(status),
                }
            };
            outcome?;
            let message = message.ok_or_else(|| Status::internal("grpc: server sent OK without a message"))?;
            let message = Resp::decode(message)
                .map_err(|e| Status::internal(format!("grpc: failed to decode response message: {e}")))?;
            Ok(Response { metadata, message })
        };
        match deadline {
            None => call.await,
            Some(d) => tokio::time::timeout_at(d.into(), call).await.unwrap_or_else(|_| Err(deadline_exceeded())),
        }
    }

    /// A server-streaming call: one request, a stream of responses. Returns once the response headers arrive;
    /// the messages are read by a task of their own into a bounded [`Streaming`] (dropping it resets the
    /// stream). The timeout covers the whole call, to the last message.
    pub async fn server_streaming<Req, Resp>(
        &self,
        path: &str,
        request: Req,
        metadata: Metadata,
        timeout: Option<Duration>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        Req: prost::Message,
        Resp: prost::Message + Default + 'static,
    {
        let deadline = deadline(timeout)?;
        let started = self.start(path, &request, &metadata, timeout);
        let (head, mut body) = match deadline {
            None => started.await?,
            Some(d) => tokio::time::timeout_at(d.into(), started).await.map_err(|_| deadline_exceeded())??,
        };
        let (tx, streaming) = Streaming::channel(STREAM_BUFFER);
        let metadata = match head {
            Head::TrailersOnly(status) => {
                if status.code != Code::Ok {
                    let _ = tx.try_send(Err(status));
                }
                return Ok(Response::new(streaming));
            }
            Head::Headers(metadata) => metadata,
        };
        let max = self.config.max_message_size;
        tokio::spawn(async move {
            let read = async {
                let mut reader = Reader::new(max);
                loop {
                    match reader.next(&mut body).await {
                        Ok(Some(m)) => {
                            let item = Resp::decode(m)
                                .map_err(|e| Status::internal(format!("grpc: failed to decode response message: {e}")));
                            let failed = item.is_err();
                            if tx.send(item).await.is_err() || failed {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(status) => {
                            let _ = tx.send(Err(status)).await;
                            return;
                        }
                    }
                }
            };
            let outcome = tokio::select! {
                () = read => Ok(()),
                () = tx.closed() => Ok(()),
                () = sleep_until(deadline) => Err(deadline_exceeded()),
            };
            if let Err(status) = outcome {
                let _ = tx.send(Err(status)).await;
            }
            // Dropping `body` here resets the stream if it is still open.
        });
        Ok(Response { metadata, message: streaming })
    }

    /// Sends the request and waits for the response headers.
    async fn start<Req: prost::Message>(
        &self,
        path: &str,
        request: &Req,
        metadata: &Metadata,
        timeout: Option<Duration>,
    ) -> Result<(Head, RecvStream), Status> {
        let uri = http::Uri::builder()
            .scheme("http")
            .authority(&*self.authority)
            .path_and_query(path)
            .build()
            .map_err(|e| Status::internal(format!("grpc: invalid path {path:?}: {e}")))?;
        let mut head = http::Request::new(());
        *head.method_mut() = http::Method::POST;
        *head.uri_mut() = uri;
        let headers = head.headers_mut();
        metadata.write_to(headers);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert("te", HeaderValue::from_static("trailers"));
        headers.insert(http::header::USER_AGENT, HeaderValue::from_static("attest-grpc/0.1"));
        if let Some(t) = timeout
            && let Ok(v) = HeaderValue::from_str(&encode_timeout(t))
        {
            headers.insert("grpc-timeout", v);
        }
        let mut send = self.send.clone().ready().await.map_err(|e| h2_error_status(&e))?;
        let (response, mut stream) = send.send_request(head, false).map_err(|e| h2_error_status(&e))?;
        let body = codec::encode(request);
        tokio::pin!(response);
        // Send while watching for an early answer (a server may reject an oversized message before it is in).
        let response = tokio::select! {
            biased;
            r = &mut response => r,
            // A send error means the stream was reset or answered early: the response tells which.
            _ = send_data(&mut stream, body, true, usize::MAX) => response.await,
        };
        let response = response.map_err(|e| h2_error_status(&e))?;
        let (parts, body) = response.into_parts();
        if let Some(status) = status_from_headers(&parts.headers) {
            return Ok((Head::TrailersOnly(status), body));
        }
        if parts.status != http::StatusCode::OK {
            let code = Code::from_http_status(parts.status.as_u16());
            return Err(Status::new(code, format!("grpc: unexpected HTTP status {}", parts.status)));
        }
        let content_type = parts.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
        if !content_type.starts_with(b"application/grpc") {
            return Err(Status::unknown(format!(
                "grpc: unexpected content-type {:?}",
                String::from_utf8_lossy(content_type)
            )));
        }
        Ok((Head::Headers(Metadata::from_headers(&parts.headers)), body))
    }
}

/// What the response headers said.
enum Head {
    /// A trailers-only response.
    TrailersOnly(Status),
    /// Ordinary response headers: messages and trailers follow.
    Headers(Metadata),
}

/// Reads messages, then the trailers, from a response body.
struct Reader {
    decoder: MessageDecoder,
    ended: bool,
}

impl Reader {
    fn new(max: usize) -> Reader {
        Reader { decoder: MessageDecoder::new(max), ended: false }
    }

    /// The next message, `None` after an OK status, `Err` for a non-OK status or a broken stream.
    async fn next(&mut self, body: &mut RecvStream) -> Result<Option<Bytes>, Status> {
        loop {
            if let Some(m) = self.decoder.next_message().map_err(|e| frame_error_status(&e))? {
                return Ok(Some(m));
            }
            if self.ended {
                return Ok(None);
            }
            match body.data().await {
                Some(Ok(chunk)) => {
                    self.decoder.push(&chunk);
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                Some(Err(e)) => return Err(h2_error_status(&e)),
                None => {
                    let trailers = poll_fn(|cx| body.poll_trailers(cx)).await.map_err(|e| h2_error_status(&e))?;
                    let status = trailers
                        .as_ref()
                        .and_then(status_from_headers)
                        .unwrap_or_else(|| Status::internal("grpc: response ended without grpc-status trailers"));
                    if status.code != Code::Ok {
                        return Err(status);
                    }
                    self.decoder.finish().map_err(|e| frame_error_status(&e))?;
                    self.ended = true;
                }
            }
        }
    }
}

fn deadline(timeout: Option<Duration>) -> Result<Option<Instant>, Status> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_zero() => Err(deadline_exceeded()),
        Some(t) => Ok(Instant::now().checked_add(t)),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

fn deadline_exceeded() -> Status {
    Status::deadline_exceeded("grpc: deadline exceeded")
}

fn frame_error_status(e: &FrameError) -> Status {
    match e {
        FrameError::TooLarge { .. } => Status::resource_exhausted(format!("grpc: received {e}")),
        _ => Status::internal(format!("grpc: {e}")),
    }
}

/// The status carried by `grpc-status` (+ `grpc-message`, `grpc-status-details-bin`, metadata), if present.
fn status_from_headers(headers: &HeaderMap) -> Option<Status> {
    let code = Code::from_header(headers.get("grpc-status")?.as_bytes());
    let message = headers.get("grpc-message").map(|v| percent_decode(v.as_bytes())).unwrap_or_default();
    let details = headers
        .get("grpc-status-details-bin")
        .and_then(|v| decode_bin(v.as_bytes()).ok())
        .map(Bytes::from)
        .unwrap_or_default();
    Some(Status { code, message, details, metadata: Metadata::from_headers(headers) })
}

/// Maps an h2 error to the status a gRPC client reports (PROTOCOL-HTTP2.md, "Errors").
fn h2_error_status(e: &h2::Error) -> Status {
    if e.is_go_away() || e.is_io() {
        return Status::unavailable(format!("grpc: connection: {e}"));
    }
    let code = match e.reason() {
        Some(Reason::REFUSED_STREAM) => Code::Unavailable,
        Some(Reason::CANCEL) => Code::Cancelled,
        Some(Reason::ENHANCE_YOUR_CALM) => Code::ResourceExhausted,
        Some(Reason::INADEQUATE_SECURITY) => Code::PermissionDenied,
        _ => Code::Internal,
    };
    Status::new(code, format!("grpc: HTTP/2 stream error: {e}"))
}
