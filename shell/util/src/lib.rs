//! # attest-util
//!
//! Small host helpers the services share: atomic file replacement ([`fs`]), the fault-injection points of
//! the crash matrix ([`fault`]: inert unless a test build arms them), the service binaries' log output
//! ([`init_service_logging`]) and their exit-status tables ([`exit`]), what the HTTP/1.1 clients share in their errors ([`http::Phase`]), and
//! one-line error chains ([`error_chain`]).
//!
//! **May depend on:** the standard library and `tracing-subscriber`. **Must not depend on:** any other
//! crate of the workspace, or grow attestation, network or service logic — it sits below every crate that
//! persists a file (the AK registry, the bootstrapper, the CLI) so that none of them needs another for it.

#![forbid(unsafe_code)]

pub mod exit;
pub mod fault;
pub mod fs;
pub mod http;

/// An error and its chain of sources in one line (`outer: inner: innermost`), each source's text added only
/// when the text so far does not already contain it (wrappers often repeat their source).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

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
