//! # attest-grpc
//!
//! gRPC on h2, hand-rolled: server and client, unary and server-streaming, generic over prost messages.
//!
//! **May depend on:** `h2`, `tokio`, `prost` (generic over its messages), and with the feature `http1` hyper's
//! HTTP/1.1 server. **Must not depend on:** any crate of
//! the workspace (its tests use `attest-proto`'s messages), attestation, TLS, or a service: the transport
//! is any `AsyncRead + AsyncWrite` stream, and aTLS plugs in from above (`attest-atls`'s `grpc` module).
//!
//! # Why not tonic
//!
//! gRPC framing is written here on top of the `h2` crate (`docs/ARCHITECTURE.md`, "gRPC"), for the reasons a
//! security-sensitive bootstrapping service cares about:
//! - **A small dependency surface.** tonic brings tower, hyper's service stack, axum-style routing and
//!   their feature matrix into the node image; what we need is the gRPC wire format (≈ a 5-byte prefix, a
//!   few headers and trailers) over an HTTP/2 implementation we already trust.
//! - **Exact control of limits and status mapping.** Every attacker-controlled length is checked against a
//!   named limit at the earliest point (the message size as soon as the 5-byte prefix arrives, before any
//!   body is buffered), memory per connection is budgeted, and each failure maps to the status that real
//!   peers (grpcio 1.85, grpc-go) expect — checked by interop tests against them.
//! - **Transport freedom.** The server and client take any `AsyncRead + AsyncWrite` byte stream, so aTLS
//!   (attestation inside TLS, `attest-atls`) plugs in without a tower connector.
//!
//! # Layers (as in h2 / tonic)
//!
//! - [`codec`]: the length-prefixed message framing and its reassembly across DATA frames.
//! - [`status`], [`metadata`]: `grpc-status`/`grpc-message` (percent-encoded), metadata (`-bin` = base64),
//!   `grpc-timeout`.
//! - [`service`]: typed [`Request`]/[`Response`]/[`Streaming`], the [`Service`] trait and the [`Router`].
//! - [`server`]: connection and stream tasks, limits, deadlines, cancellation, graceful shutdown.
//! - [`admission`]: fair admission of connections (per-peer limits, pending-handshake limits with shedding,
//!   a reserve for established connections, deadlines from accept), shared with the services' plain
//!   HTTP/1.1 endpoints, and its `/metrics` rendering.
//! - `http1` (feature `http1`): those plain HTTP/1.1 endpoints (`/metrics`, the node's verify
//!   service) on hyper, one request per connection, behind the same admission.
//! - [`client`]: [`Channel`] with [`Channel::unary`] and [`Channel::server_streaming`].
//!
//! Only the `identity` encoding is supported: the services exchange small, mostly random (incompressible)
//! keys and certificates, and compression inside TLS invites CRIME-style leaks. A request with another
//! `grpc-encoding` is answered with `UNIMPLEMENTED` and `grpc-accept-encoding: identity`, as the spec asks.

#![forbid(unsafe_code)]
// `Status` (code, message, details, metadata: ≈160 bytes) is the error of every call, as in tonic and grpc-go;
// errors are the slow path, and boxing it would cost an allocation on every failed call for nothing.
#![allow(clippy::result_large_err)]

pub mod admission;
pub mod client;
pub mod codec;
#[cfg(feature = "http1")]
pub mod http1;
pub mod metadata;
pub mod server;
pub mod service;
pub mod status;

pub use admission::{Admission, AdmissionConfig, AdmissionStats, Admitted, Counted};
pub use client::{Channel, ChannelConfig};
pub use metadata::Metadata;
pub use server::{Server, ServerConfig};
pub use service::{PeerInfo, Request, Response, Router, Service, Streaming};
pub use status::{Code, Status};
