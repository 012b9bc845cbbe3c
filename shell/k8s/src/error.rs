//! What can go wrong talking to the Kubernetes API (or writing dry-run manifests).

use std::fmt;
use std::path::PathBuf;

/// Longest API `Status` message kept in an error, in bytes (the API server's messages are short; a broken
/// proxy may return a whole HTML page).
pub const MAX_STATUS_MESSAGE: usize = 512;

pub use attest_util::http::Phase;

/// A `Status` object of the Kubernetes API (`apimachinery/pkg/apis/meta/v1` `Status`): what the API server
/// answers with every failed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiStatus {
    /// The HTTP status code (the object's `code`, or the response's status when the body had none).
    pub code: u16,
    /// The machine-readable `reason` (`AlreadyExists`, `Forbidden`, …); empty when absent.
    pub reason: String,
    /// The human-readable `message`, cut to [`MAX_STATUS_MESSAGE`] bytes.
    pub message: String,
}

impl fmt::Display for ApiStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.code)?;
        if !self.reason.is_empty() {
            write!(f, " {}", self.reason)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// Every failure of the Kubernetes client, the token issuers and their configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum K8sError {
    // ---- Configuration ----------------------------------------------------------------------------------
    /// The client configuration is unusable (no in-cluster environment, a bad URL, an unreadable CA or token
    /// file, an empty token).
    Config {
        /// What is wrong.
        reason: String,
    },
    /// OpenSSL could not set up the TLS client (the CA certificate did not load).
    TlsSetup {
        /// OpenSSL's reason.
        reason: String,
    },

    // ---- The API server's answers -----------------------------------------------------------------------
    /// 409 `AlreadyExists`: an object of that name exists (a token id collision; the issuer retries with a new
    /// id).
    AlreadyExists(ApiStatus),
    /// 401: the service-account token was not accepted (expired, revoked, wrong cluster).
    Unauthorized(ApiStatus),
    /// 403: the service account may not do this (RBAC).
    Forbidden(ApiStatus),
    /// 404 on a path that must exist (the namespace is missing).
    NotFound(ApiStatus),
    /// 429: the API server throttles us (API priority and fairness); transient.
    TooManyRequests(ApiStatus),
    /// 5xx: the API server (or etcd behind it) failed; transient.
    ServerError(ApiStatus),
    /// Any other refusal (400 `BadRequest`, 422 `Invalid`, …): our request was wrong.
    Rejected(ApiStatus),
    /// A success status with a body that is not what the endpoint returns.
    MalformedResponse {
        /// What was wrong with it.
        reason: String,
    },

    // ---- Transport --------------------------------------------------------------------------------------
    /// No answer in time.
    Timeout {
        /// What we were waiting for.
        phase: Phase,
    },
    /// The connection failed (refused, reset, TLS handshake or certificate verification failed).
    Transport {
        /// hyper's or OpenSSL's reason.
        reason: String,
    },
    /// The response body exceeds the limit.
    ResponseTooLarge {
        /// The limit in bytes.
        limit: usize,
    },

    // ---- Issuers ----------------------------------------------------------------------------------------
    /// Every attempt to create a token hit an existing one (the id space is 36^6 ≈ 2·10^9, so this means
    /// something else is wrong).
    TokenIdsExhausted {
        /// Attempts made.
        attempts: u32,
    },
    /// The dry-run issuer could not write or remove a manifest.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A token id that is not 6 characters of `[a-z0-9]` was given to `delete`.
    InvalidTokenId,
}

impl K8sError {
    /// Whether trying again later may succeed (throttling, server errors, timeouts, broken connections): the
    /// join service answers these with `UNAVAILABLE`, everything else with `INTERNAL`.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            K8sError::TooManyRequests(_)
                | K8sError::ServerError(_)
                | K8sError::Timeout { .. }
                | K8sError::Transport { .. }
        )
    }

    /// The API `Status` behind this error, if the API server answered with one.
    pub fn api_status(&self) -> Option<&ApiStatus> {
        match self {
            K8sError::AlreadyExists(s)
            | K8sError::Unauthorized(s)
            | K8sError::Forbidden(s)
            | K8sError::NotFound(s)
            | K8sError::TooManyRequests(s)
            | K8sError::ServerError(s)
            | K8sError::Rejected(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for K8sError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            K8sError::Config { reason } => write!(f, "Kubernetes client configuration: {reason}"),
            K8sError::TlsSetup { reason } => write!(f, "Kubernetes client TLS setup: {reason}"),
            K8sError::AlreadyExists(s) => write!(f, "Kubernetes API: already exists ({s})"),
            K8sError::Unauthorized(s) => write!(f, "Kubernetes API: unauthorized ({s})"),
            K8sError::Forbidden(s) => write!(f, "Kubernetes API: forbidden ({s})"),
            K8sError::NotFound(s) => write!(f, "Kubernetes API: not found ({s})"),
            K8sError::TooManyRequests(s) => write!(f, "Kubernetes API: throttled ({s})"),
            K8sError::ServerError(s) => write!(f, "Kubernetes API: server error ({s})"),
            K8sError::Rejected(s) => write!(f, "Kubernetes API: request rejected ({s})"),
            K8sError::MalformedResponse { reason } => write!(f, "Kubernetes API: malformed response: {reason}"),
            K8sError::Timeout { phase } => write!(f, "Kubernetes API: timed out waiting for the {phase}"),
            K8sError::Transport { reason } => write!(f, "Kubernetes API: connection failed: {reason}"),
            K8sError::ResponseTooLarge { limit } => {
                write!(f, "Kubernetes API: response larger than {limit} bytes")
            }
            K8sError::TokenIdsExhausted { attempts } => {
                write!(f, "no free bootstrap token id after {attempts} attempts")
            }
            K8sError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            K8sError::InvalidTokenId => f.write_str("a bootstrap token id is 6 characters of [a-z0-9]"),
        }
    }
}

impl std::error::Error for K8sError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            K8sError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Parses an API `Status` body; falls back to the HTTP status and an excerpt of the body when the body is
/// not a `Status` object (a proxy's error page, an empty body).
pub(crate) fn parse_status(http_status: u16, body: &[u8]) -> ApiStatus {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let object = parsed.as_ref().filter(|v| v.get("kind").and_then(serde_json::Value::as_str) == Some("Status"));
    match object {
        Some(v) => ApiStatus {
            code: v
                .get("code")
                .and_then(serde_json::Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(http_status),
            reason: cut(v.get("reason").and_then(serde_json::Value::as_str).unwrap_or_default()),
            message: cut(v.get("message").and_then(serde_json::Value::as_str).unwrap_or_default()),
        },
        None => ApiStatus {
            code: http_status,
            reason: String::new(),
            message: cut(&String::from_utf8_lossy(&body[..body.len().min(MAX_STATUS_MESSAGE)])),
        },
    }
}

/// Classifies a failed response by its status (the `Status` object's `reason` where it matters).
pub(crate) fn classify(status: ApiStatus) -> K8sError {
    match status.code {
        409 if status.reason == "AlreadyExists" || status.reason.is_empty() => K8sError::AlreadyExists(status),
        401 => K8sError::Unauthorized(status),
        403 => K8sError::Forbidden(status),
        404 => K8sError::NotFound(status),
        429 => K8sError::TooManyRequests(status),
        500..=599 => K8sError::ServerError(status),
        _ => K8sError::Rejected(status),
    }
}

/// At most [`MAX_STATUS_MESSAGE`] bytes of `s`, cut on a character boundary.
fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_STATUS_MESSAGE);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_objects_are_classified() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"bootstrap-token-abcdef\" already exists","reason":"AlreadyExists","details":{"name":"bootstrap-token-abcdef","kind":"secrets"},"code":409}"#;
        let e = classify(parse_status(409, body));
        assert!(matches!(&e, K8sError::AlreadyExists(s) if s.message.contains("already exists")), "{e}");
        assert!(!e.is_transient());
        let e = classify(parse_status(503, b"<html>upstream connect error</html>"));
        assert!(matches!(&e, K8sError::ServerError(s) if s.code == 503 && s.reason.is_empty()), "{e}");
        assert!(e.is_transient());
        let long = "é".repeat(MAX_STATUS_MESSAGE);
        let s = parse_status(400, format!(r#"{{"kind":"Status","message":"{long}","code":400}}"#).as_bytes());
        assert!(s.message.len() <= MAX_STATUS_MESSAGE);
        assert!(matches!(classify(s), K8sError::Rejected(_)));
    }
}
