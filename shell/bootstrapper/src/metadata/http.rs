//! The HTTP/1.1 client of the metadata sources: one request on a fresh connection to the metadata address,
//! everything bounded (hyper's HTTP/1.1 client connection; no pool, no proxy, no TLS — metadata services
//! speak plain HTTP on a link-local address).
//!
//! ```text
//!  send(request) ── connect + exchange + whole body, within REQUEST_TIMEOUT ─▶ Timeout
//!        │ body > MAX_METADATA_BODY (declared or sent) ───────────────────────▶ TooLarge
//!        │ 301/302/303/307/308 ─ same scheme, host and port ─▶ follow (≤ MAX_REDIRECTS, else TooManyRedirects)
//!        │                     └ anywhere else ──────────────────────────────▶ RedirectRefused
//!        │ 429 / 503 ─ Retry-After ≤ MAX_RETRY_AFTER, attempts left ─▶ wait, same request again
//!        │           └ otherwise ───────────────────────────────────────────▶ Throttled
//!        ▼ any other answer: returned to the cloud module, which reads its status
//! ```

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;

use super::error::{MetadataError, clip};
use super::{MAX_METADATA_BODY, MAX_REDIRECTS, MAX_RETRY_AFTER, MAX_THROTTLE_RETRIES, REQUEST_TIMEOUT};

/// Wait before retrying a throttled request that named no `Retry-After`, doubled per attempt.
const THROTTLE_BACKOFF: Duration = Duration::from_millis(200);

/// An answer: status, headers, the whole body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as UTF-8 text.
    pub(crate) fn text(&self, url: &str) -> Result<&str, MetadataError> {
        std::str::from_utf8(&self.body)
            .map_err(|_| MetadataError::Malformed { url: url.to_owned(), what: "the body is not UTF-8".into() })
    }

    /// The service's error text for a refusal: printable, cut.
    pub(crate) fn detail(&self) -> String {
        clip(&String::from_utf8_lossy(&self.body), 200).trim().to_owned()
    }
}

/// The metadata service at one `http://HOST[:PORT]`.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    host: String,
    port: u16,
    timeout: Duration,
}

impl Client {
    /// The service at `base` (`http://HOST[:PORT]`, nothing after it but an optional `/`).
    pub(crate) fn new(base: &str) -> Result<Client, MetadataError> {
        let bad = || MetadataError::BadBaseUrl { url: clip(base, 200) };
        let uri: Uri = base.parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") || !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(bad());
        }
        let authority = uri.authority().ok_or_else(bad)?;
        if authority.as_str().contains('@') {
            return Err(bad());
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        Ok(Client { host, port: authority.port_u16().unwrap_or(80), timeout: REQUEST_TIMEOUT })
    }

    /// Uses this per-request deadline instead of [`REQUEST_TIMEOUT`] (tests).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// `method path_and_query` with `headers`, following same-origin redirects and retrying when throttled.
    pub(crate) async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&'static str, &str)],
    ) -> Result<Answer, MetadataError> {
        let mut path = path_and_query.to_owned();
        let mut redirects = 0;
        let mut throttled = 0;
        loop {
            let answer = self.once(&method, &path, headers).await?;
            let status = answer.status;
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                if redirects == MAX_REDIRECTS {
                    return Err(MetadataError::TooManyRedirects {
                        url: path_and_query.to_owned(),
                        limit: MAX_REDIRECTS,
                    });
                }
                redirects += 1;
                path = self.same_origin(path_and_query, &answer.headers)?;
                continue;
            }
            if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
                let retry_after = retry_after(&answer.headers);
                let wait = retry_after.unwrap_or(THROTTLE_BACKOFF * (1 << throttled));
                if throttled == MAX_THROTTLE_RETRIES || wait > MAX_RETRY_AFTER {
                    return Err(MetadataError::Throttled {
                        url: path_and_query.to_owned(),
                        status: status.as_u16(),
                        retry_after,
                    });
                }
                throttled += 1;
                tracing::debug!(url = path_and_query, status = status.as_u16(), ?wait, "metadata: throttled, retrying");
                tokio::time::sleep(wait).await;
                continue;
            }
            return Ok(answer);
        }
    }

    /// Where a redirect points, if it stays on this service: a path, or an absolute URL of this scheme,
    /// host and port.
    fn same_origin(&self, url: &str, headers: &HeaderMap) -> Result<String, MetadataError> {
        let location = headers.get(http::header::LOCATION).and_then(|v| v.to_str().ok()).ok_or_else(|| {
            MetadataError::Malformed { url: url.to_owned(), what: "a redirect without a usable Location".into() }
        })?;
        let refused = || MetadataError::RedirectRefused { url: url.to_owned(), location: clip(location, 200) };
        if location.starts_with('/') && !location.starts_with("//") {
            return Ok(location.to_owned());
        }
        let uri: Uri = location.parse().map_err(|_| refused())?;
        let authority = uri.authority().ok_or_else(refused)?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']');
        if uri.scheme_str() != Some("http")
            || !host.eq_ignore_ascii_case(&self.host)
            || authority.port_u16().unwrap_or(80) != self.port
            || authority.as_str().contains('@')
        {
            return Err(refused());
        }
        Ok(uri.path_and_query().map_or_else(|| "/".to_owned(), ToString::to_string))
    }

    /// One exchange on a fresh connection, within the deadline.
    async fn once(
        &self,
        method: &Method,
        path: &str,
        headers: &[(&'static str, &str)],
    ) -> Result<Answer, MetadataError> {
        let exchange = async {
            let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|source| MetadataError::Unreachable { url: path.to_owned(), source })?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| malformed_or_reset(path, &e))?;
            let driver = tokio::spawn(conn);
            let _abort = AbortOnDrop(driver);
            let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
            let mut request = Request::builder()
                .method(method.clone())
                .uri(path)
                .header(http::header::HOST, format!("{host}:{}", self.port));
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let request = request.body(Empty::<Bytes>::new()).map_err(|e| MetadataError::Malformed {
                url: path.to_owned(),
                what: format!("the request cannot be formed: {e}"),
            })?;
            let response = sender.send_request(request).await.map_err(|e| malformed_or_reset(path, &e))?;
            let (parts, body) = response.into_parts();
            let declared = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > MAX_METADATA_BODY as u64) {
                return Err(MetadataError::TooLarge { url: path.to_owned(), limit: MAX_METADATA_BODY });
            }
            let body = Limited::new(body, MAX_METADATA_BODY).collect().await.map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                    MetadataError::TooLarge { url: path.to_owned(), limit: MAX_METADATA_BODY }
                } else {
                    MetadataError::Malformed { url: path.to_owned(), what: format!("the body broke off: {e}") }
                }
            })?;
            Ok(Answer { status: parts.status, headers: parts.headers, body: body.to_bytes() })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| MetadataError::Timeout { url: path.to_owned(), limit: self.timeout })?
    }
}

/// A connection closed or reset before an answer is an outage; anything else hyper refuses is not HTTP.
fn malformed_or_reset(url: &str, e: &hyper::Error) -> MetadataError {
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, e.to_string());
        MetadataError::Unreachable { url: url.to_owned(), source: io }
    } else {
        MetadataError::Malformed { url: url.to_owned(), what: format!("not an HTTP/1.1 answer: {e}") }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by metadata services and is ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?.trim();
    (v.len() <= 6).then(|| v.parse::<u64>().ok()).flatten().map(Duration::from_secs)
}

/// Stops hyper's connection task when the exchange ends (or times out).
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        for good in
            ["http://169.254.169.254", "http://169.254.169.254/", "http://127.0.0.1:8080", "http://[fd00::1]:80"]
        {
            Client::new(good).unwrap();
        }
        assert_eq!(Client::new("http://[fd00::1]:81").unwrap().host, "fd00::1");
        for bad in ["https://169.254.169.254", "http://u@h", "http://h/latest", "h:80", "http://h/?q", ""] {
            assert!(matches!(Client::new(bad), Err(MetadataError::BadBaseUrl { .. })), "{bad} accepted");
        }
    }

    #[test]
    fn redirect_targets() {
        let c = Client::new("http://127.0.0.1:8080").unwrap();
        let loc = |l: &str| {
            let mut h = HeaderMap::new();
            h.insert(http::header::LOCATION, l.parse().unwrap());
            c.same_origin("/a", &h)
        };
        assert_eq!(loc("/b?x=1").unwrap(), "/b?x=1");
        assert_eq!(loc("http://127.0.0.1:8080/c").unwrap(), "/c");
        for away in ["//evil.example/x", "http://127.0.0.2:8080/", "http://127.0.0.1:8081/", "https://127.0.0.1:8080/"]
        {
            assert!(matches!(loc(away), Err(MetadataError::RedirectRefused { .. })), "{away} followed");
        }
        assert!(matches!(c.same_origin("/a", &HeaderMap::new()), Err(MetadataError::Malformed { .. })));
    }

    #[test]
    fn retry_after_seconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(http::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(http::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
        h.insert(http::header::RETRY_AFTER, "99999999999".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
