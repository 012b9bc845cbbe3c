//! What the workspace's HTTP/1.1 clients (the AMD KDS client in `attest-kds`, the Kubernetes API client in
//! `attest-k8s`) share in their errors.

use std::fmt;

/// Which part of an HTTP exchange timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the response head (connection, TLS handshake, request, status line and headers).
    Headers,
    /// Reading the response body.
    Body,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Headers => "response headers",
            Self::Body => "response body",
        })
    }
}
