//! The application side of the server: typed [`Request`]/[`Response`]/[`Streaming`] wrappers, the
//! [`Service`] trait the services implement, and the [`Router`] that maps exact method paths
//! (`/package.Service/Method`) to type-erased handlers.
//!
//! A handler is an async function from a decoded request to a response; the router erases its message types
//! behind a private `Method` trait so the connection code deals only in bytes. Decoding failures are the router's
//! business (`INTERNAL`, as grpc-core, grpc-go and tonic answer a request that fails to deserialize), so
//! handlers only ever see well-formed messages.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::codec;
use super::metadata::Metadata;
use super::status::Status;

/// A call's request: the message, the client's metadata and the deadline (from `grpc-timeout`).
#[derive(Debug)]
pub struct Request<T> {
    /// Application metadata sent by the client.
    pub metadata: Metadata,
    /// When the call expires, if the client set a timeout. The server enforces it; handlers may use it to
    /// bound their own outgoing calls.
    pub deadline: Option<Instant>,
    /// The request message.
    pub message: T,
    /// What the transport learned about the peer, if the connection was accepted through
    /// [`Server::serve_with`](super::Server::serve_with) — e.g. the aTLS peer's verified attestation
    /// (`attest_atls::PeerAttestation`). Downcast with [`Request::peer`].
    pub peer: Option<PeerInfo>,
    /// The client's address, for calls on connections the server accepted itself ([`Server::serve`],
    /// [`Server::serve_with`](super::Server::serve_with)); per-caller limits key on it.
    ///
    /// [`Server::serve`]: super::Server::serve
    pub remote_addr: Option<std::net::SocketAddr>,
}

/// Per-connection information about the peer, shared by every call on the connection.
pub type PeerInfo = Arc<dyn std::any::Any + Send + Sync>;

impl<T> Request<T> {
    /// A request with no metadata, no deadline and no peer information.
    pub fn new(message: T) -> Request<T> {
        Request { metadata: Metadata::new(), deadline: None, message, peer: None, remote_addr: None }
    }

    /// Replaces the message, keeping metadata, deadline and peer information.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Request<U> {
        Request {
            metadata: self.metadata,
            deadline: self.deadline,
            message: f(self.message),
            peer: self.peer,
            remote_addr: self.remote_addr,
        }
    }

    /// The connection's peer information as a `P`, if there is some of that type.
    pub fn peer<P: std::any::Any + Send + Sync>(&self) -> Option<&P> {
        self.peer.as_deref().and_then(|p| p.downcast_ref::<P>())
    }
}

/// A call's response: the message (or message stream) and the initial metadata sent with the response
/// headers.
#[derive(Debug)]
pub struct Response<T> {
    /// Metadata sent in the response headers.
    pub metadata: Metadata,
    /// The response message, or a [`Streaming`] of them.
    pub message: T,
}

impl<T> Response<T> {
    /// A response with no metadata.
    pub fn new(message: T) -> Response<T> {
        Response { metadata: Metadata::new(), message }
    }
}

/// A stream of messages ending in OK (the channel closes) or in an error status (an `Err` item, after which
/// nothing more is read).
///
/// On the server a handler returns one, created by [`Streaming::channel`], and feeds it from a task of its
/// own; the channel is bounded, so a slow client slows the producer (HTTP/2 flow control → channel capacity →
/// `send().await`). If the client goes away, the receiver is dropped and the producer's `send` fails, which is
/// its signal to stop. On the client [`super::client::Channel::server_streaming`] returns one.
#[derive(Debug)]
pub struct Streaming<T> {
    rx: mpsc::Receiver<Result<T, Status>>,
    done: bool,
}

impl<T> Streaming<T> {
    /// A bounded channel: the sender for the producer and the stream to return. `capacity` ≥ 1.
    pub fn channel(capacity: usize) -> (mpsc::Sender<Result<T, Status>>, Streaming<T>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (tx, Streaming { rx, done: false })
    }

    /// The next message: `Ok(Some)` for a message, `Ok(None)` at a successful end, `Err` for the final status.
    pub async fn message(&mut self) -> Result<Option<T>, Status> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    /// Poll form of [`Streaming::message`].
    pub fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<T>, Status>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(m))) => Poll::Ready(Ok(Some(m))),
            Poll::Ready(Some(Err(s))) => {
                self.done = true;
                Poll::Ready(Err(s))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(Ok(None))
            }
        }
    }

    /// Collects all messages until the end, or returns the error status.
    pub async fn collect(mut self) -> Result<Vec<T>, Status> {
        let mut out = Vec::new();
        while let Some(m) = self.message().await? {
            out.push(m);
        }
        Ok(out)
    }
}

/// The outcome of a handler, with messages already encoded (prefix included).
pub(crate) enum Reply {
    /// One message.
    Unary(Response<Bytes>),
    /// A stream of messages.
    Stream(Response<Box<dyn EncodedStream>>),
}

/// A server-streaming response with its message type erased.
pub(crate) trait EncodedStream: Send {
    /// The next encoded message (prefix included), `None` at the end.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>>;
}

impl<T: prost::Message> EncodedStream for Streaming<T> {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        self.poll_message(cx).map(|r| r.map(|m| m.map(|m| codec::encode(&m))).transpose())
    }
}

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A method with its message types erased: decodes the request bytes, runs the handler, encodes the reply.
pub(crate) trait Method: Send + Sync {
    fn call(&self, request: Request<Bytes>) -> BoxFuture<Result<Reply, Status>>;
}

fn decode<Req: prost::Message + Default>(request: Request<Bytes>) -> Result<Request<Req>, Status> {
    let Request { metadata, deadline, message, peer, remote_addr } = request;
    let message =
        Req::decode(message).map_err(|e| Status::internal(format!("failed to decode request message: {e}")))?;
    Ok(Request { metadata, deadline, message, peer, remote_addr })
}

/// Decodes `request`, runs `handler` on it and erases the response's message type with `reply`. A request that
/// fails to decode never reaches the handler.
fn dispatch<F, Req, Resp, Fut>(
    handler: &F,
    request: Request<Bytes>,
    reply: fn(Response<Resp>) -> Reply,
) -> BoxFuture<Result<Reply, Status>>
where
    F: Fn(Request<Req>) -> Fut,
    Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
    Req: prost::Message + Default,
    Resp: 'static,
{
    match decode::<Req>(request) {
        Err(status) => Box::pin(std::future::ready(Err(status))),
        Ok(request) => {
            let fut = handler(request);
            Box::pin(async move { Ok(reply(fut.await?)) })
        }
    }
}

/// A unary handler; `Req` is named so the impl can decode it.
struct Unary<F, Req>(F, PhantomData<fn(Req)>);
/// A server-streaming handler.
struct ServerStreaming<F, Req>(F, PhantomData<fn(Req)>);

impl<F, Req, Resp, Fut> Method for Unary<F, Req>
where
    F: Fn(Request<Req>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
{
    fn call(&self, request: Request<Bytes>) -> BoxFuture<Result<Reply, Status>> {
        dispatch(&self.0, request, |Response { metadata, message }| {
            Reply::Unary(Response { metadata, message: codec::encode(&message) })
        })
    }
}

impl<F, Req, Resp, Fut> Method for ServerStreaming<F, Req>
where
    F: Fn(Request<Req>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Response<Streaming<Resp>>, Status>> + Send + 'static,
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
{
    fn call(&self, request: Request<Bytes>) -> BoxFuture<Result<Reply, Status>> {
        dispatch(&self.0, request, |Response { metadata, message }| {
            Reply::Stream(Response { metadata, message: Box::new(message) as Box<dyn EncodedStream> })
        })
    }
}

/// Routes exact method paths to handlers. Build one, register methods or whole [`Service`]s, and hand it to
/// [`super::server::Server::new`].
#[derive(Clone, Default)]
pub struct Router {
    methods: HashMap<String, Arc<dyn Method>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut paths: Vec<_> = self.methods.keys().collect();
        paths.sort();
        f.debug_struct("Router").field("methods", &paths).finish()
    }
}

impl Router {
    /// An empty router: every call is `UNIMPLEMENTED`.
    pub fn new() -> Router {
        Router::default()
    }

    /// Registers a unary method at `path` (`/package.Service/Method`). A later registration of the same path
    /// replaces the earlier one.
    pub fn unary<Req, Resp, F, Fut>(&mut self, path: &str, handler: F) -> &mut Router
    where
        F: Fn(Request<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<Resp>, Status>> + Send + 'static,
        Req: prost::Message + Default + 'static,
        Resp: prost::Message + 'static,
    {
        self.methods.insert(path.to_owned(), Arc::new(Unary(handler, PhantomData)));
        self
    }

    /// Registers a server-streaming method at `path`.
    pub fn server_streaming<Req, Resp, F, Fut>(&mut self, path: &str, handler: F) -> &mut Router
    where
        F: Fn(Request<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<Streaming<Resp>>, Status>> + Send + 'static,
        Req: prost::Message + Default + 'static,
        Resp: prost::Message + 'static,
    {
        self.methods.insert(path.to_owned(), Arc::new(ServerStreaming(handler, PhantomData)));
        self
    }

    /// Registers every method of `service`.
    pub fn add_service<S: Service>(&mut self, service: Arc<S>) -> &mut Router {
        service.register(self);
        self
    }

    /// The registered paths, sorted.
    pub fn paths(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.methods.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Arc<dyn Method>> {
        self.methods.get(path)
    }
}

/// A gRPC service: registers its methods with a [`Router`].
///
/// ```
/// use std::sync::Arc;
/// use attest_proto::{kms, paths};
/// use attest_grpc::{Request, Response, Router, Service, Status};
///
/// struct Kms;
/// impl Kms {
///     async fn get_data_key(&self, req: Request<kms::GetDataKeyRequest>) -> Result<Response<kms::GetDataKeyResponse>, Status> {
///         Ok(Response::new(kms::GetDataKeyResponse { data_key: vec![0; req.message.length as usize] }))
///     }
/// }
/// impl Service for Kms {
///     fn register(self: Arc<Self>, router: &mut Router) {
///         router.unary(paths::KMS_GET_DATA_KEY, move |req| {
///             let this = Arc::clone(&self);
///             async move { this.get_data_key(req).await }
///         });
///     }
/// }
/// let mut router = Router::new();
/// router.add_service(Arc::new(Kms));
/// assert_eq!(router.paths(), [paths::KMS_GET_DATA_KEY]);
/// ```
pub trait Service: Send + Sync + 'static {
    /// Registers this service's methods (exact paths) with `router`.
    fn register(self: Arc<Self>, router: &mut Router);
}
