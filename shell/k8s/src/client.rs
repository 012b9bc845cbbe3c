//! A minimal Kubernetes API client: HTTPS (HTTP/1.1, hyper's pooled client, TLS by hyper-openssl) that
//! trusts only the cluster CA, a bearer service-account token, and the two Secret operations the join
//! service needs. Every response is size-limited and every wait is bounded; failures are parsed from the
//! API's `Status` objects into [`K8sError`].
//!
//! Requests are not retried here: the join service turns transient failures into `UNAVAILABLE` and the
//! joining node retries the whole join, which is the one place that knows how long it is willing to wait.

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, USER_AGENT};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper_openssl::client::legacy::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use openssl::ssl::{SslConnector, SslMethod, SslVersion};
use openssl::x509::store::X509StoreBuilder;

use super::config::KubeConfig;
use super::error::{K8sError, Phase, classify, parse_status};

/// The user agent sent with every request.
const USER_AGENT_VALUE: &str = concat!("attest-join-service/", env!("CARGO_PKG_VERSION"));

/// How long a bearer token read from the token file is used before the file is read again (client-go's
/// cached file token source uses the same minute). Kubelet rewrites a projected token well before it expires
/// (at 80 % of its lifetime, at least an hour by default), so a minute-old copy is always current enough; a
/// 401 drops the copy at once.
pub const TOKEN_REFRESH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// A Kubernetes API client.
pub struct KubeClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    config: KubeConfig,
    /// The bearer token and when it was read: no file-system work per request on the join path.
    token: std::sync::Mutex<Option<(std::time::Instant, zeroize::Zeroizing<String>)>>,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient").field("server", &self.config.server).finish_non_exhaustive()
    }
}

/// A successful response: status and body.
struct Answer {
    status: StatusCode,
    body: Bytes,
}

impl KubeClient {
    /// A client for `config`. Trusts only `config.ca_pem` (no system roots); TLS 1.2 or later.
    pub fn new(config: KubeConfig) -> Result<KubeClient, K8sError> {
        let tls = |e: openssl::error::ErrorStack| K8sError::TlsSetup { reason: e.to_string() };
        let mut store = X509StoreBuilder::new().map_err(tls)?;
        for cert in openssl::x509::X509::stack_from_pem(&config.ca_pem).map_err(tls)? {
            store.add_cert(cert).map_err(tls)?;
        }
        let mut ssl = SslConnector::builder(SslMethod::tls_client()).map_err(tls)?;
        ssl.set_cert_store(store.build());
        ssl.set_min_proto_version(Some(SslVersion::TLS1_2)).map_err(tls)?;
        ssl.set_alpn_protos(b"\x08http/1.1").map_err(tls)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(config.request_timeout));
        http.set_nodelay(true);
        let https = HttpsConnector::with_connector(http, ssl).map_err(tls)?;
        let client =
            Client::builder(TokioExecutor::new()).pool_idle_timeout(std::time::Duration::from_secs(30)).build(https);
        Ok(KubeClient { client, config, token: std::sync::Mutex::new(None) })
    }

    /// The configuration.
    pub fn config(&self) -> &KubeConfig {
        &self.config
    }

    /// `POST /api/v1/namespaces/{namespace}/secrets` with `manifest` (a Secret as JSON). Checks that the
    /// API answered 201 (or 200) with a Secret of the expected name.
    pub async fn create_secret(&self, namespace: &str, name: &str, manifest: &[u8]) -> Result<(), K8sError> {
        let path = format!("/api/v1/namespaces/{namespace}/secrets");
        let answer = self.send(Method::POST, &path, Bytes::copy_from_slice(manifest)).await?;
        if !matches!(answer.status, StatusCode::CREATED | StatusCode::OK) {
            return Err(K8sError::MalformedResponse { reason: format!("status {} for a create", answer.status) });
        }
        let created: serde_json::Value = serde_json::from_slice(&answer.body)
            .map_err(|e| K8sError::MalformedResponse { reason: format!("not JSON: {e}") })?;
        let kind = created.get("kind").and_then(serde_json::Value::as_str);
        let got = created.pointer("/metadata/name").and_then(serde_json::Value::as_str);
        if kind != Some("Secret") || got != Some(name) {
            return Err(K8sError::MalformedResponse {
                reason: format!("expected Secret {name:?}, got kind {kind:?} named {got:?}"),
            });
        }
        Ok(())
    }

    /// `DELETE /api/v1/namespaces/{namespace}/secrets/{name}`. A Secret that does not exist (404) counts as
    /// deleted. Returns whether it existed.
    pub async fn delete_secret(&self, namespace: &str, name: &str) -> Result<bool, K8sError> {
        let path = format!("/api/v1/namespaces/{namespace}/secrets/{name}");
        match self.send(Method::DELETE, &path, Bytes::new()).await {
            Ok(_) => Ok(true),
            Err(K8sError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends one request; a 2xx answer is returned, anything else becomes the classified error.
    async fn send(&self, method: Method, path: &str, body: Bytes) -> Result<Answer, K8sError> {
        let uri: Uri = format!("{}{path}", self.config.server)
            .parse()
            .map_err(|_| K8sError::Config { reason: format!("request path {path:?} does not form a URL") })?;
        let token = self.bearer_token()?;
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header(USER_AGENT, USER_AGENT_VALUE)
            .header(ACCEPT, "application/json")
            .header(AUTHORIZATION, format!("Bearer {}", token.as_str()));
        if !body.is_empty() {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let req =
            req.body(Full::new(body)).map_err(|e| K8sError::Config { reason: format!("building the request: {e}") })?;
        drop(token);
        let resp = match tokio::time::timeout(self.config.request_timeout, self.client.request(req)).await {
            Err(_) => return Err(K8sError::Timeout { phase: Phase::Headers }),
            Ok(Err(e)) => return Err(K8sError::Transport { reason: transport_reason(&e) }),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        let max = self.config.max_response_size;
        let announced = resp.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if announced.is_some_and(|n| n > max as u64) {
            return Err(K8sError::ResponseTooLarge { limit: max });
        }
        let body =
            match tokio::time::timeout(self.config.body_timeout, Limited::new(resp.into_body(), max).collect()).await {
                Err(_) => return Err(K8sError::Timeout { phase: Phase::Body }),
                Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
                    return Err(K8sError::ResponseTooLarge { limit: max });
                }
                Ok(Err(e)) => return Err(K8sError::Transport { reason: format!("reading the body: {e}") }),
                Ok(Ok(collected)) => collected.to_bytes(),
            };
        if status.is_success() {
            Ok(Answer { status, body })
        } else {
            if status == StatusCode::UNAUTHORIZED {
                // The token may have been rotated since it was read: read the file again next time.
                *self.token_cache() = None;
            }
            Err(classify(parse_status(status.as_u16(), &body)))
        }
    }

    /// The bearer token: the cached copy while it is younger than [`TOKEN_REFRESH_INTERVAL`], else the token
    /// file read again.
    fn bearer_token(&self) -> Result<zeroize::Zeroizing<String>, K8sError> {
        let mut cache = self.token_cache();
        if let Some((read, token)) = &*cache
            && read.elapsed() < TOKEN_REFRESH_INTERVAL
        {
            return Ok(token.clone());
        }
        let token = self.config.bearer_token()?;
        *cache = Some((std::time::Instant::now(), token.clone()));
        Ok(token)
    }

    fn token_cache(&self) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, zeroize::Zeroizing<String>)>> {
        self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// hyper's error with its sources (the TLS failure is usually two levels down).
fn transport_reason(e: &hyper_util::client::legacy::Error) -> String {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason.push_str(": ");
        reason.push_str(&s.to_string());
        source = s.source();
    }
    reason
}
