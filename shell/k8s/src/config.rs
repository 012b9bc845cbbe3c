//! Where the API server is and how to authenticate to it.
//!
//! In a pod (the Kubernetes "Accessing the API from a Pod" conventions): `https://$KUBERNETES_SERVICE_HOST:
//! $KUBERNETES_SERVICE_PORT`, the cluster CA in `/var/run/secrets/kubernetes.io/serviceaccount/ca.crt` and
//! the service-account token in `…/token`. Elsewhere: an explicit URL, CA file and token file.
//!
//! The token file is read again once a minute (`client::TOKEN_REFRESH_INTERVAL`, as client-go does) and
//! after a 401, not per request: kubelet rotates projected service-account tokens (they expire after an hour
//! by default) long before they expire, and a join service at cluster scale-up issues hundreds of tokens a
//! second.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::K8sError;

/// The in-cluster service-account directory.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Largest token file read, in bytes (a service-account JWT is about 1 KiB).
pub const MAX_TOKEN_FILE_SIZE: u64 = 64 * 1024;
/// Largest CA file read, in bytes.
pub const MAX_CA_FILE_SIZE: u64 = 1024 * 1024;
/// Default largest response body accepted, in bytes: a Secret or a `Status` is a few KiB.
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 256 * 1024;
/// Default time allowed for the connection and the response head.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time allowed for the response body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A Kubernetes API client configuration.
#[derive(Clone, Debug)]
pub struct KubeConfig {
    /// `https://host:port` of the API server, no path.
    pub server: String,
    /// The cluster CA certificate(s), PEM: the only roots the client trusts.
    pub ca_pem: Vec<u8>,
    /// The bearer token file (read again every minute and after a 401).
    pub token_file: PathBuf,
    /// Time allowed for connect, TLS and the response head.
    pub request_timeout: Duration,
    /// Time allowed for the response body.
    pub body_timeout: Duration,
    /// Largest response body accepted.
    pub max_response_size: usize,
}

impl KubeConfig {
    /// The in-cluster configuration from the environment and [`SERVICE_ACCOUNT_DIR`].
    pub fn in_cluster() -> Result<KubeConfig, K8sError> {
        let env = |name: &str| {
            std::env::var(name).map_err(|_| K8sError::Config {
                reason: format!("{name} is not set (not running in a pod; configure the API server explicitly)"),
            })
        };
        let (host, port) = (env("KUBERNETES_SERVICE_HOST")?, env("KUBERNETES_SERVICE_PORT")?);
        let dir = Path::new(SERVICE_ACCOUNT_DIR);
        KubeConfig::explicit(&server_url(&host, &port)?, &dir.join("ca.crt"), &dir.join("token"))
    }

    /// An explicit configuration: `server` (`https://host:port`), the CA file (PEM) and the token file.
    pub fn explicit(server: &str, ca_file: &Path, token_file: &Path) -> Result<KubeConfig, K8sError> {
        let uri: http::Uri =
            server.parse().map_err(|_| K8sError::Config { reason: format!("{server:?} is not a URL") })?;
        if uri.scheme_str() != Some("https") || uri.host().is_none() {
            return Err(K8sError::Config {
                reason: format!("{server:?}: the API server URL must be https://host[:port]"),
            });
        }
        if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
            return Err(K8sError::Config { reason: format!("{server:?}: the API server URL has no path or query") });
        }
        let ca_pem = read_limited(ca_file, MAX_CA_FILE_SIZE)?;
        openssl::x509::X509::stack_from_pem(&ca_pem)
            .ok()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| K8sError::Config { reason: format!("{}: no PEM certificate", ca_file.display()) })?;
        let config = KubeConfig {
            server: server.trim_end_matches('/').to_owned(),
            ca_pem,
            token_file: token_file.to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
        };
        config.bearer_token()?;
        Ok(config)
    }

    /// The current bearer token (the token file's contents, trimmed).
    pub(crate) fn bearer_token(&self) -> Result<zeroize::Zeroizing<String>, K8sError> {
        let bytes = zeroize::Zeroizing::new(read_limited(&self.token_file, MAX_TOKEN_FILE_SIZE)?);
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| K8sError::Config { reason: format!("{}: the token is not UTF-8", self.token_file.display()) })?
            .trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(K8sError::Config {
                reason: format!("{}: the token is empty or not printable ASCII", self.token_file.display()),
            });
        }
        Ok(zeroize::Zeroizing::new(text.to_owned()))
    }
}

/// `https://host:port`, bracketing an IPv6 host.
fn server_url(host: &str, port: &str) -> Result<String, K8sError> {
    let port: u16 = port
        .parse()
        .map_err(|_| K8sError::Config { reason: format!("KUBERNETES_SERVICE_PORT {port:?} is not a port") })?;
    Ok(if host.contains(':') { format!("https://[{host}]:{port}") } else { format!("https://{host}:{port}") })
}

fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, K8sError> {
    use std::io::Read as _;
    let file =
        std::fs::File::open(path).map_err(|e| K8sError::Config { reason: format!("{}: {e}", path.display()) })?;
    let mut out = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| K8sError::Config { reason: format!("{}: {e}", path.display()) })?;
    if out.len() as u64 > limit {
        return Err(K8sError::Config { reason: format!("{}: larger than {limit} bytes", path.display()) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(server_url("10.96.0.1", "443").unwrap(), "https://10.96.0.1:443");
        assert_eq!(server_url("fd00::1", "6443").unwrap(), "https://[fd00::1]:6443");
        assert!(server_url("h", "x").is_err());
        let none = Path::new("/nonexistent");
        for bad in ["http://h:1", "https://h:1/api", "not a url", "https://h:1/?q"] {
            assert!(matches!(KubeConfig::explicit(bad, none, none), Err(K8sError::Config { .. })), "{bad}");
        }
    }
}
