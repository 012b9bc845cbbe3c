//! The services' plain HTTP/1.1 endpoints (`/metrics`, the node's `GET /?nonce=` verify service) behind the
//! same fair admission as the gRPC listeners ([`super::admission`]); feature `http1`, hyper's server.
//!
//! One request per connection (no keep-alive): the pending phase is the request head, which must arrive
//! within the admission's `handshake_timeout` of accept (slow-loris headers: one byte every few seconds
//! never extends it), and a connection that sent its head is established while its one request runs.
//! Nothing on these endpoints needs a connection kept open, and an idle keep-alive connection would be an
//! established slot held for free.
//!
//! ```text
//!  accept ─▶ admission (per peer, pending cap with shedding) ─▶ request head within handshake_timeout
//!         ─▶ established ─▶ handler ─▶ response, close
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::admission::{Admission, AdmissionConfig, AdmissionStats, accept_loop};

/// What a handler returns.
pub type HttpResponse = http::Response<Full<Bytes>>;
/// A handler's future.
pub type HandlerFuture = Pin<Box<dyn Future<Output = HttpResponse> + Send>>;
/// A request handler: the request head (the body is never read: these endpoints take GET only).
pub type Handler = Arc<dyn Fn(http::request::Parts) -> HandlerFuture + Send + Sync>;

/// How long a stopping endpoint lets a request in flight finish.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// A running HTTP/1.1 endpoint.
#[derive(Debug)]
pub struct HttpEndpoint {
    addr: SocketAddr,
    admission: Arc<Admission>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpEndpoint {
    /// Serves `handler` on `listener` under `limits` until [`HttpEndpoint::shutdown`].
    pub fn serve(listener: TcpListener, limits: AdmissionConfig, handler: Handler) -> std::io::Result<HttpEndpoint> {
        let addr = listener.local_addr()?;
        let admission = Admission::new(limits);
        let (stop, stopped) = watch::channel(false);
        let mut accept_stopped = stopped.clone();
        let until_stopped = async move {
            let _ = accept_stopped.wait_for(|s| *s).await;
        };
        let header_timeout = admission.config().handshake_timeout;
        let task = accept_loop(listener, Arc::clone(&admission), until_stopped, "http", move |io, _peer, promoter| {
            let handler = Arc::clone(&handler);
            let mut stopped = stopped.clone();
            async move {
                let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    // The request head arrived: the pending phase is over.
                    let established = promoter.establish();
                    let handler = Arc::clone(&handler);
                    async move {
                        let response = if established { handler(req.into_parts().0).await } else { unavailable() };
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .keep_alive(false)
                    .serve_connection(hyper_util::rt::TokioIo::new(io), service);
                tokio::pin!(conn);
                let stop_requested = tokio::select! {
                    _ = conn.as_mut() => false,
                    r = stopped.wait_for(|s| *s) => r.is_ok(),
                };
                if stop_requested {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(STOP_GRACE, conn).await;
                }
            }
        });
        Ok(HttpEndpoint { addr, admission, stop, task })
    }

    /// The listening address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The admission table's limits, what it holds and what it decided (for `/metrics`).
    pub fn admission_stats(&self) -> AdmissionStats {
        self.admission.stats()
    }

    /// The admission table (for a `/metrics` section that outlives this handle).
    pub fn admission(&self) -> Arc<Admission> {
        Arc::clone(&self.admission)
    }

    /// Stops accepting, lets requests in flight finish (up to [`STOP_GRACE`]) and waits for the accept loop.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// `503` for a connection shed while its head was being read (it is closed right after).
fn unavailable() -> HttpResponse {
    let mut r = http::Response::new(Full::new(Bytes::from_static(b"overloaded\n")));
    *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    r
}

/// A `text/plain` or JSON response with `status` and `body`.
pub fn response(status: http::StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> HttpResponse {
    let mut r = http::Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    r
}

/// The Prometheus text exposition content type (format 0.0.4).
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A handler serving `render()` at `GET /metrics` and a health check at `GET /healthz` (200 `ok` while the
/// endpoint runs; a service opens it once it has loaded, so it is the Kubernetes probes' endpoint); `HEAD` too,
/// other paths 404, other methods 405.
pub fn metrics_handler(render: Arc<dyn Fn() -> String + Send + Sync>) -> Handler {
    Arc::new(move |head: http::request::Parts| {
        let r = match (&head.method, head.uri.path()) {
            (&http::Method::GET | &http::Method::HEAD, "/metrics") => {
                response(http::StatusCode::OK, METRICS_CONTENT_TYPE, render())
            }
            (&http::Method::GET | &http::Method::HEAD, "/healthz") => {
                response(http::StatusCode::OK, "text/plain", "ok\n")
            }
            (_, "/metrics" | "/healthz") => response(http::StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n"),
            _ => response(http::StatusCode::NOT_FOUND, "text/plain", "not found; try /metrics\n"),
        };
        Box::pin(std::future::ready(r))
    })
}

/// Default limits of a `/metrics` endpoint: a scraper or two, from few addresses.
pub fn metrics_limits() -> AdmissionConfig {
    AdmissionConfig {
        max_connections: MAX_METRICS_CONNECTIONS,
        max_connections_per_peer: 4,
        max_handshakes: MAX_METRICS_CONNECTIONS / 2,
        max_handshakes_per_peer: 2,
        handshake_timeout: METRICS_HEADER_TIMEOUT,
        ..AdmissionConfig::default()
    }
}

/// Most concurrent connections to a `/metrics` endpoint.
pub const MAX_METRICS_CONNECTIONS: usize = 32;
/// Time a scraper has from connect to the end of its request head.
pub const METRICS_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
