//! The limits of the node's endpoints: the init server and the recovery endpoint (aTLS where the
//! node attests), the verify service (gRPC h2c and HTTP/1.1), and the node's optional `/metrics`.
//!
//! Every endpoint admits connections through `attest_grpc::admission` (per-peer limits, a cap on pending
//! handshakes that sheds idle sockets first, a reserve for connections that finished their handshake, a
//! deadline counted from accept). What differs from the service defaults is the scale and one cost: on
//! these endpoints **every handshake or call costs a TPM quote**, serialized on the node's one TPM
//! connection, so the limits bound how many quotes strangers can queue ahead of a genuine caller:
//!
//! | endpoint | callers | connections (per peer) | pending (per peer) | streams per connection |
//! |---|---|---|---|---|
//! | init, recovery (aTLS: a quote per handshake) | one operator's `attest init` / `attest recover` | [`MAX_OPERATOR_CONNECTIONS`] ([`MAX_OPERATOR_CONNECTIONS_PER_PEER`]) | [`MAX_OPERATOR_HANDSHAKES`] (2) | [`MAX_OPERATOR_STREAMS`] |
//! | verify gRPC (a quote per call) | `attest verify`, monitoring | [`MAX_VERIFY_CONNECTIONS`] ([`MAX_VERIFY_CONNECTIONS_PER_PEER`]) | [`MAX_VERIFY_CONNECTIONS`] / 2 (2) | [`MAX_VERIFY_STREAMS`] |
//! | verify HTTP (a quote per request) | `curl`, `attest verify --service http` | [`MAX_VERIFY_CONNECTIONS`] ([`MAX_VERIFY_CONNECTIONS_PER_PEER`]) | [`MAX_VERIFY_CONNECTIONS`] / 2 (2) | one request per connection |
//! | `/metrics` | a scraper | `attest_grpc::http1::metrics_limits` | | one request per connection |
//!
//! So one address can queue at most [`MAX_VERIFY_CONNECTIONS_PER_PEER`] × [`MAX_VERIFY_STREAMS`] quotes on
//! the verify service, and a genuine caller from elsewhere waits behind at most that many per flooding
//! address; a slow-loris client (one header byte every few seconds) holds a pending slot only until the
//! deadline and is shed first when the slots run out.

use std::time::Duration;

use attest_grpc::{AdmissionConfig, ServerConfig};

/// Open connections to the init server or the recovery endpoint: one operator needs one or two.
pub const MAX_OPERATOR_CONNECTIONS: usize = 16;
/// Of which from one address.
pub const MAX_OPERATOR_CONNECTIONS_PER_PEER: usize = 4;
/// Pending (handshake not finished) connections to those endpoints: each costs a TPM quote.
pub const MAX_OPERATOR_HANDSHAKES: usize = 8;
/// Concurrent calls on one operator connection (init streams, credential activation).
pub const MAX_OPERATOR_STREAMS: u32 = 8;
/// Open connections to the verify service, gRPC and HTTP each (every request costs a TPM quote).
pub const MAX_VERIFY_CONNECTIONS: usize = 64;
/// Of which from one address.
pub const MAX_VERIFY_CONNECTIONS_PER_PEER: usize = 4;
/// Concurrent `GetAttestation` calls on one verify-service connection.
pub const MAX_VERIFY_STREAMS: u32 = 4;
/// Time from accept to the end of an HTTP verify request's head (and to the first gRPC request).
pub const VERIFY_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Pending connections per address on every node endpoint.
const HANDSHAKES_PER_PEER: usize = 2;

/// The init server's and the recovery endpoint's limits.
pub fn operator_server_config() -> ServerConfig {
    ServerConfig {
        max_connections: MAX_OPERATOR_CONNECTIONS,
        max_connections_per_peer: MAX_OPERATOR_CONNECTIONS_PER_PEER,
        max_handshakes: MAX_OPERATOR_HANDSHAKES,
        max_handshakes_per_peer: HANDSHAKES_PER_PEER,
        max_concurrent_streams: MAX_OPERATOR_STREAMS,
        ..ServerConfig::default()
    }
}

/// The verify service's gRPC limits.
pub fn verify_grpc_config() -> ServerConfig {
    ServerConfig {
        max_connections: MAX_VERIFY_CONNECTIONS,
        max_connections_per_peer: MAX_VERIFY_CONNECTIONS_PER_PEER,
        max_handshakes: MAX_VERIFY_CONNECTIONS / 2,
        max_handshakes_per_peer: HANDSHAKES_PER_PEER,
        max_concurrent_streams: MAX_VERIFY_STREAMS,
        handshake_timeout: VERIFY_HEADER_TIMEOUT,
        ..ServerConfig::default()
    }
}

/// The verify service's HTTP limits.
pub fn verify_http_limits() -> AdmissionConfig {
    AdmissionConfig {
        max_connections: MAX_VERIFY_CONNECTIONS,
        max_connections_per_peer: MAX_VERIFY_CONNECTIONS_PER_PEER,
        max_handshakes: MAX_VERIFY_CONNECTIONS / 2,
        max_handshakes_per_peer: HANDSHAKES_PER_PEER,
        handshake_timeout: VERIFY_HEADER_TIMEOUT,
        ..AdmissionConfig::default()
    }
}
