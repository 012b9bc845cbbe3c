//! The HTTP side: one pooled hyper client (HTTP/1.1; TLS by hyper-openssl on the system OpenSSL), a
//! semaphore bounding concurrent requests, timeouts for the response head and the body, a maximum body
//! size, and retries.
//!
//! ```text
//!   get(path) ──► wait while rate-limited (shared gate) ──► permit ──► request ──► status?
//!        ▲                                                                         │
//!        │  200: body (≤ max size, ≤ body timeout) ──────────────────────────────► Ok
//!        │  404: NotFound (the caller caches it negatively); other 4xx: HttpStatus ► Err
//!        │  429: gate closes for Retry-After (seconds or HTTP-date), or back-off when absent
//!        └─ 5xx, timeouts, broken connections: exponential back-off with jitter, up to max_attempts
//! ```
//!
//! The rate-limit gate is shared by all requests: KDS limits per client address, so one 429 holds back
//! every request of this client, not only the one that saw it. A Retry-After longer than
//! `max_retry_after` fails at once (and keeps failing fast until it has passed) instead of stalling callers.

use super::{KdsConfig, KdsError, Phase};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_LENGTH, HeaderName, RETRY_AFTER, USER_AGENT};
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Empty, LengthLimitError, Limited};
use hyper_openssl::client::legacy::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use openssl::ssl::{SslConnector, SslMethod, SslVersion};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Longest Retry-After in seconds that is parsed at all (one day); longer values are clamped.
const MAX_RETRY_AFTER_SECS: u64 = 86_400;

/// Largest response header value kept for the caller (Intel PCS issuer chains, URL-encoded PEM
/// of two certificates, are ≈ 2.6 KiB).
pub const MAX_KEPT_HEADER: usize = 16 * 1024;

/// The transport settings of one upstream (KDS, Intel PCS), and extra TLS roots.
pub(crate) struct HttpOptions<'a> {
    pub(crate) max_concurrent_requests: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) body_timeout: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_retry_after: Duration,
    pub(crate) max_response_size: usize,
    /// Certificates (DER) the TLS client trusts besides the system's (a mirror's or a test server's CA).
    pub(crate) tls_roots: &'a [Vec<u8>],
}

impl<'a> From<&'a KdsConfig> for HttpOptions<'a> {
    fn from(cfg: &'a KdsConfig) -> Self {
        Self {
            max_concurrent_requests: cfg.max_concurrent_requests,
            connect_timeout: cfg.connect_timeout,
            request_timeout: cfg.request_timeout,
            body_timeout: cfg.body_timeout,
            max_attempts: cfg.max_attempts,
            initial_backoff: cfg.initial_backoff,
            max_backoff: cfg.max_backoff,
            max_retry_after: cfg.max_retry_after,
            max_response_size: cfg.max_response_size,
            tls_roots: &[],
        }
    }
}

pub(crate) struct Http {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    base: String,
    permits: Semaphore,
    gate: Mutex<Option<Instant>>,
    requests: AtomicU64,
    cfg: HttpSettings,
}

#[derive(Clone, Copy)]
struct HttpSettings {
    request_timeout: Duration,
    body_timeout: Duration,
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_retry_after: Duration,
    max_response_size: usize,
}

/// How one attempt failed.
struct Failure {
    error: KdsError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: KdsError) -> Self {
        Self { error, retryable: false, retry_after: None }
    }
    fn retry(error: KdsError) -> Self {
        Self { error, retryable: true, retry_after: None }
    }
}

impl Http {
    pub(crate) fn new(base: &str, cfg: &HttpOptions<'_>) -> Result<Self, KdsError> {
        let base = base.trim_end_matches('/').to_owned();
        let uri: Uri = base.parse().map_err(|_| KdsError::InvalidBaseUrl { reason: "not a URL" })?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err(KdsError::InvalidBaseUrl { reason: "the scheme must be http or https" }),
        }
        if uri.host().is_none() {
            return Err(KdsError::InvalidBaseUrl { reason: "no host" });
        }
        if uri.query().is_some() {
            return Err(KdsError::InvalidBaseUrl { reason: "a base URL has no query" });
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(cfg.connect_timeout));
        http.set_nodelay(true);
        let mut ssl = SslConnector::builder(SslMethod::tls_client()).map_err(|_| KdsError::TlsSetup)?;
        ssl.set_min_proto_version(Some(SslVersion::TLS1_2)).map_err(|_| KdsError::TlsSetup)?;
        ssl.set_alpn_protos(b"\x08http/1.1").map_err(|_| KdsError::TlsSetup)?;
        for der in cfg.tls_roots {
            let cert = openssl::x509::X509::from_der(der).map_err(|_| KdsError::TlsSetup)?;
            ssl.cert_store_mut().add_cert(cert).map_err(|_| KdsError::TlsSetup)?;
        }
        let https = HttpsConnector::with_connector(http, ssl).map_err(|_| KdsError::TlsSetup)?;
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(30)).build(https);
        Ok(Self {
            client,
            base,
            permits: Semaphore::new(cfg.max_concurrent_requests.max(1)),
            gate: Mutex::new(None),
            requests: AtomicU64::new(0),
            cfg: HttpSettings {
                request_timeout: cfg.request_timeout,
                body_timeout: cfg.body_timeout,
                max_attempts: cfg.max_attempts.max(1),
                initial_backoff: cfg.initial_backoff,
                max_backoff: cfg.max_backoff,
                max_retry_after: cfg.max_retry_after,
                max_response_size: cfg.max_response_size,
            },
        })
    }

    /// Requests sent upstream so far (every attempt counts).
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// GETs `path` (with query) below the base URL, with retries.
    pub(crate) async fn get(&self, path: &str) -> Result<Vec<u8>, KdsError> {
        self.get_with_header(path, None).await.map(|(body, _)| body)
    }

    /// GETs `path` like [`Self::get`], and also returns the value of the response header `keep` (absent,
    /// not visible ASCII, or longer than [`MAX_KEPT_HEADER`]: `None`).
    pub(crate) async fn get_with_header(
        &self,
        path: &str,
        keep: Option<&HeaderName>,
    ) -> Result<(Vec<u8>, Option<String>), KdsError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.wait_for_gate().await?;
            let outcome = {
                let _permit = self.permits.acquire().await.map_err(|_| KdsError::Offline)?;
                self.requests.fetch_add(1, Ordering::Relaxed);
                self.once(path, keep).await
            };
            let failure = match outcome {
                Ok(body) => return Ok(body),
                Err(f) => f,
            };
            tracing::debug!(path, attempt, error = %failure.error, "KDS request failed");
            if !failure.retryable {
                return Err(failure.error);
            }
            if let Some(wait) = failure.retry_after {
                self.close_gate(wait);
                if wait > self.cfg.max_retry_after {
                    return Err(KdsError::RateLimited { retry_after: Some(wait) });
                }
            }
            if attempt >= self.cfg.max_attempts {
                return Err(KdsError::RetriesExhausted { attempts: attempt, last: Box::new(failure.error) });
            }
            if failure.retry_after.is_none() {
                tokio::time::sleep(self.backoff(attempt)).await;
            }
        }
    }

    async fn once(&self, path: &str, keep: Option<&HeaderName>) -> Result<(Vec<u8>, Option<String>), Failure> {
        let uri: Uri = format!("{}{path}", self.base)
            .parse()
            .map_err(|_| Failure::fatal(KdsError::InvalidBaseUrl { reason: "the request URL does not parse" }))?;
        let req = Request::get(uri)
            .header(USER_AGENT, concat!("attest/", env!("CARGO_PKG_VERSION")))
            .header(ACCEPT, "*/*")
            .body(Empty::<Bytes>::new())
            .map_err(|_| Failure::fatal(KdsError::InvalidBaseUrl { reason: "the request URL is not valid" }))?;
        let resp = match tokio::time::timeout(self.cfg.request_timeout, self.client.request(req)).await {
            Err(_) => return Err(Failure::retry(KdsError::Timeout { phase: Phase::Headers })),
            Ok(Err(e)) => {
                let reason = if e.is_connect() { "connect failed" } else { "request failed" };
                return Err(Failure::retry(KdsError::Transport { reason }));
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Err(Failure::fatal(KdsError::NotFound));
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            let error = if status == StatusCode::TOO_MANY_REQUESTS {
                KdsError::RateLimited { retry_after }
            } else {
                KdsError::HttpStatus { status: status.as_u16() }
            };
            return Err(Failure { error, retryable: true, retry_after });
        }
        if !status.is_success() {
            return Err(Failure::fatal(KdsError::HttpStatus { status: status.as_u16() }));
        }
        let kept = keep
            .and_then(|name| resp.headers().get(name))
            .filter(|v| v.len() <= MAX_KEPT_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let max = self.cfg.max_response_size;
        let announced = resp.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if announced.is_some_and(|n| n > max as u64) {
            return Err(Failure::fatal(KdsError::ResponseTooLarge { limit: max }));
        }
        let body = Limited::new(resp.into_body(), max);
        match tokio::time::timeout(self.cfg.body_timeout, body.collect()).await {
            Err(_) => Err(Failure::retry(KdsError::Timeout { phase: Phase::Body })),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
                Err(Failure::fatal(KdsError::ResponseTooLarge { limit: max }))
            }
            Ok(Err(_)) => Err(Failure::retry(KdsError::Transport { reason: "the response body broke off" })),
            Ok(Ok(collected)) => Ok((collected.to_bytes().to_vec(), kept)),
        }
    }

    /// Holds back every request of this client for `wait`.
    fn close_gate(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut gate = self.gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if gate.is_none_or(|g| g < until) {
            *gate = Some(until);
        }
    }

    async fn wait_for_gate(&self) -> Result<(), KdsError> {
        let until = *self.gate.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(until) = until else { return Ok(()) };
        let now = Instant::now();
        if until <= now {
            return Ok(());
        }
        let wait = until - now;
        if wait > self.cfg.max_retry_after {
            return Err(KdsError::RateLimited { retry_after: Some(wait) });
        }
        tokio::time::sleep_until(until).await;
        Ok(())
    }

    /// Exponential back-off with jitter: uniformly in [d/2, d] for d = initial · 2^(attempt−1), capped.
    fn backoff(&self, attempt: u32) -> Duration {
        let d = self
            .cfg
            .initial_backoff
            .saturating_mul(1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX))
            .min(self.cfg.max_backoff);
        let half = d / 2;
        let span = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let mut r = [0u8; 8];
        let jitter = if span == 0 || openssl::rand::rand_bytes(&mut r).is_err() {
            0
        } else {
            u64::from_le_bytes(r) % (span + 1)
        };
        half + Duration::from_nanos(jitter)
    }
}

/// Parses a Retry-After value (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date (converted to the delay
/// from `now`; a date in the past means no delay). Unparseable values are ignored (`None`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        let secs = v.parse::<u64>().unwrap_or(MAX_RETRY_AFTER_SECS).min(MAX_RETRY_AFTER_SECS);
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO).min(Duration::from_secs(MAX_RETRY_AFTER_SECS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(Duration::from_secs(10)));
        assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:49:57 GMT", now), Some(Duration::from_secs(20)));
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:38 1994", now), Some(Duration::from_secs(1)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO), "past");
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::from_secs(MAX_RETRY_AFTER_SECS)));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
    }
}
