//! Why a cloud metadata source gave no join endpoints. Standard library only.

use std::fmt;
use std::time::Duration;

/// Why a cloud metadata source gave no join endpoints. Every variant names the URL (path and query only:
/// the host is the fixed metadata address) that failed; none carries a token or an answer's body.
#[derive(Debug)]
#[non_exhaustive]
pub enum MetadataError {
    /// The metadata base URL is not `http://HOST[:PORT]` (metadata services speak plain HTTP on a
    /// link-local address; a proxy or TLS endpoint is not one of them).
    BadBaseUrl {
        /// The URL given.
        url: String,
    },
    /// The service could not be reached: the name did not resolve, the connection was refused or reset.
    Unreachable {
        /// The request.
        url: String,
        /// What the socket said.
        source: std::io::Error,
    },
    /// No complete answer within the request deadline (the bootstrapper's `metadata::REQUEST_TIMEOUT`): a service that
    /// accepts and then stalls, or trickles its headers or body.
    Timeout {
        /// The request.
        url: String,
        /// The deadline that passed.
        limit: Duration,
    },
    /// The answer's body is longer than the bootstrapper's `metadata::MAX_METADATA_BODY` (declared or sent).
    TooLarge {
        /// The request.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// More redirects than the bootstrapper's `metadata::MAX_REDIRECTS` in a row (a redirect loop).
    TooManyRedirects {
        /// The request.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// A redirect away from the metadata service (another host, port or scheme): never followed, so that a
    /// metadata answer cannot send the node to an arbitrary address.
    RedirectRefused {
        /// The request.
        url: String,
        /// Where it pointed (cut to 200 bytes).
        location: String,
    },
    /// Throttled (HTTP 429, or 503 as GCP's and Azure's services answer under load) on every attempt of the
    /// retry budget (the bootstrapper's `metadata::MAX_THROTTLE_RETRIES`).
    Throttled {
        /// The request.
        url: String,
        /// The last status.
        status: u16,
        /// The last `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The service refused the request with this status (AWS 401 after a fresh token, 403 when the
    /// service or instance tags are disabled; Azure 400 for a missing header or api-version; …).
    Refused {
        /// The request.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The service's error text (cut to 200 bytes, printable ASCII only).
        detail: String,
    },
    /// The key is not set (HTTP 404, or absent from Azure's tag list): this cloud has no join endpoints for
    /// this node.
    NotFound {
        /// What was looked for.
        url: String,
    },
    /// The answer is not what this service answers: not HTTP, not UTF-8, not the expected JSON, or (GCP)
    /// without the `Metadata-Flavor: Google` header every genuine answer carries.
    Malformed {
        /// The request.
        url: String,
        /// What was wrong.
        what: String,
    },
    /// An entry of the endpoints value is not `HOST`, `HOST:PORT` or `[IPv6]:PORT`, or its name did not
    /// resolve.
    BadEndpoint {
        /// The entry (cut to 200 bytes).
        entry: String,
        /// Why.
        reason: String,
    },
    /// The value names no endpoint.
    Empty,
    /// The value names more than [`crate::MAX_METADATA_ENDPOINTS`] endpoints.
    TooManyEndpoints {
        /// The limit.
        limit: usize,
    },
}

impl MetadataError {
    /// Whether the next round may succeed without anyone changing the cloud's configuration (an outage, a
    /// slow or throttled service), as opposed to a missing key or a malformed value.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            MetadataError::Unreachable { .. } | MetadataError::Timeout { .. } | MetadataError::Throttled { .. }
        )
    }
}

/// At most `max` bytes of `s`, cut at a character boundary, with control characters replaced: text from a
/// metadata answer goes into logs and errors.
pub fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataError::BadBaseUrl { url } => write!(f, "metadata URL {url:?} is not http://HOST[:PORT]"),
            MetadataError::Unreachable { url, source } => write!(f, "{url}: unreachable: {source}"),
            MetadataError::Timeout { url, limit } => write!(f, "{url}: no complete answer within {limit:?}"),
            MetadataError::TooLarge { url, limit } => write!(f, "{url}: answer larger than {limit} bytes"),
            MetadataError::TooManyRedirects { url, limit } => {
                write!(f, "{url}: more than {limit} redirects (a redirect loop)")
            }
            MetadataError::RedirectRefused { url, location } => {
                write!(f, "{url}: redirect away from the metadata service to {location:?} refused")
            }
            MetadataError::Throttled { url, status, retry_after } => {
                write!(f, "{url}: throttled (HTTP {status}")?;
                if let Some(r) = retry_after {
                    write!(f, ", retry after {r:?}")?;
                }
                write!(f, ")")
            }
            MetadataError::Refused { url, status, detail } => write!(f, "{url}: refused (HTTP {status}): {detail}"),
            MetadataError::NotFound { url } => write!(f, "{url}: not set"),
            MetadataError::Malformed { url, what } => write!(f, "{url}: malformed answer: {what}"),
            MetadataError::BadEndpoint { entry, reason } => write!(f, "join endpoint {entry:?}: {reason}"),
            MetadataError::Empty => write!(f, "the metadata value names no join endpoint"),
            MetadataError::TooManyEndpoints { limit } => {
                write!(f, "the metadata value names more than {limit} join endpoints")
            }
        }
    }
}

impl std::error::Error for MetadataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MetadataError::Unreachable { source, .. } => Some(source),
            _ => None,
        }
    }
}
