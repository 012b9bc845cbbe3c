//! # attest-util
//!
//! Small host helpers the services share: atomic file replacement ([`fs`]), the service binaries' log
//! output ([`init_service_logging`]), and what the HTTP/1.1 clients share in their errors ([`http::Phase`]).
//!
//! **May depend on:** the standard library and `tracing-subscriber`. **Must not depend on:** any other
//! crate of the workspace, or grow attestation, network or service logic — it sits below every crate that
//! persists a file (the AK registry, the bootstrapper, the CLI) so that none of them needs another for it.

#![forbid(unsafe_code)]

pub mod fs;
pub mod http;

/// Logging of the service binaries (`key-service`, `join-service`, `attest-bootstrapper`): `tracing` events
/// up to `level`, with their structured fields, to stderr (stdout carries machine-readable lines), coloured
/// only on a terminal.
pub fn init_service_logging(level: tracing::Level) {
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
