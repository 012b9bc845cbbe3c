//! Refused handshakes: every one is counted by reason and logged at the default level (warn; a peer that
//! just closed the connection, info) with the reason and the peer's address — rate-limited, so a flood of
//! bad handshakes cannot flood the log.
//!
//! | reason (`reason` label) | what the peer did | error |
//! |---|---|---|
//! | `no_certificate` | presented no certificate where this side verifies | [`Error::NoPeerCertificate`] |
//! | `malformed_certificate` | sent a certificate that does not parse, or an oversized document | [`Error::MalformedCertificate`] |
//! | `bad_self_signature` | a certificate not signed by its own key | [`Error::BadSelfSignature`] |
//! | `no_attestation` | a certificate without an attestation extension | [`Error::MissingExtension`] |
//! | `unknown_variant` | an attestation of a variant nobody here accepts | [`Error::UnknownOid`] |
//! | `wrong_nonce` | a document made for another nonce: relayed from another connection, or stale | [`Error::WrongNonce`] |
//! | `replayed_certificate` | a certificate accepted before, presented again | [`Error::ReplayedCertificate`] |
//! | `key_mismatch` | a document that binds another key than the certificate's (a swapped key) | [`Error::KeyMismatch`] |
//! | `attestation_refused` | a document that failed validation (measurements, AK, chain, …) | [`Error::AttestationFailed`] |
//! | `bad_nonce` | no nonce, or a malformed one, where this side attests | [`Error::MissingNonce`], [`Error::MalformedNonce`] |
//! | `protocol_version` | a TLS version below 1.3 (aTLS is TLS 1.3 only) | [`Error::Tls`], or the peer's `protocol_version` alert |
//! | `peer_alert` | aborted with another TLS alert (e.g. its verdict on this side's attestation) | [`Error::AlertReceived`] |
//! | `closed` | closed or reset the connection before the handshake completed (logged at info) | [`Error::Tls`] without a TLS error |
//! | `tls` | any other TLS failure (not TLS at all, bad records, no common cipher) | [`Error::Tls`] |
//! | `local` | this side failed (issuing its attestation, OpenSSL, configuration) | [`Error::IssueFailed`], [`Error::OpenSsl`], [`Error::Config`] |
//!
//! Rate limit: a token bucket of [`LOG_BURST`] lines refilled at [`LOG_LINES_PER_SECOND`]; lines over it
//! are dropped and the next line that is written says how many (`suppressed=N`). The counters always count.
//! [`HandshakeRefusals::render`] writes them in the Prometheus text format
//! (`attest_atls_handshakes_refused_total{reason="…"}`) for a service's `/metrics`.

use super::error::Error;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Log lines allowed in a burst before the rate limit applies.
pub const LOG_BURST: u32 = 20;
/// Log lines per second allowed after a burst.
pub const LOG_LINES_PER_SECOND: u32 = 2;

/// Why a handshake was refused: the metrics label (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// No certificate.
    NoCertificate,
    /// A malformed certificate.
    MalformedCertificate,
    /// Not self-signed by its key.
    BadSelfSignature,
    /// No attestation extension.
    NoAttestation,
    /// An attestation of an unaccepted variant.
    UnknownVariant,
    /// Bound to another nonce (relayed or stale).
    WrongNonce,
    /// A certificate accepted before.
    ReplayedCertificate,
    /// The document binds another key.
    KeyMismatch,
    /// The document failed validation.
    AttestationRefused,
    /// No or a malformed nonce.
    BadNonce,
    /// TLS below 1.3.
    ProtocolVersion,
    /// Another TLS alert from the peer.
    PeerAlert,
    /// Closed before the handshake completed.
    Closed,
    /// Another TLS failure.
    Tls,
    /// This side failed.
    Local,
}

impl RefusalReason {
    /// Every reason, in label order.
    pub const ALL: [RefusalReason; 15] = [
        Self::NoCertificate,
        Self::MalformedCertificate,
        Self::BadSelfSignature,
        Self::NoAttestation,
        Self::UnknownVariant,
        Self::WrongNonce,
        Self::ReplayedCertificate,
        Self::KeyMismatch,
        Self::AttestationRefused,
        Self::BadNonce,
        Self::ProtocolVersion,
        Self::PeerAlert,
        Self::Closed,
        Self::Tls,
        Self::Local,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::NoCertificate => "no_certificate",
            Self::MalformedCertificate => "malformed_certificate",
            Self::BadSelfSignature => "bad_self_signature",
            Self::NoAttestation => "no_attestation",
            Self::UnknownVariant => "unknown_variant",
            Self::WrongNonce => "wrong_nonce",
            Self::ReplayedCertificate => "replayed_certificate",
            Self::KeyMismatch => "key_mismatch",
            Self::AttestationRefused => "attestation_refused",
            Self::BadNonce => "bad_nonce",
            Self::ProtocolVersion => "protocol_version",
            Self::PeerAlert => "peer_alert",
            Self::Closed => "closed",
            Self::Tls => "tls",
            Self::Local => "local",
        }
    }

    /// The reason of a failed handshake.
    pub fn of(e: &Error) -> RefusalReason {
        match e {
            Error::NoPeerCertificate => Self::NoCertificate,
            Error::MalformedCertificate { .. } => Self::MalformedCertificate,
            Error::BadSelfSignature => Self::BadSelfSignature,
            Error::MissingExtension => Self::NoAttestation,
            Error::UnknownOid { .. } => Self::UnknownVariant,
            Error::WrongNonce { .. } => Self::WrongNonce,
            Error::ReplayedCertificate { .. } => Self::ReplayedCertificate,
            Error::KeyMismatch { .. } => Self::KeyMismatch,
            Error::AttestationFailed { .. } => Self::AttestationRefused,
            Error::MissingNonce { .. } | Error::MalformedNonce { .. } => Self::BadNonce,
            Error::AlertReceived { alert: 70, .. } => Self::ProtocolVersion,
            Error::AlertReceived { .. } => Self::PeerAlert,
            Error::Tls(tls) => match tls.ssl_error() {
                None => Self::Closed,
                Some(stack) if stack.errors().is_empty() => Self::Closed,
                Some(stack) => {
                    let version = stack.errors().iter().any(|x| {
                        x.reason().is_some_and(|r| {
                            r.contains("unsupported protocol")
                                || r.contains("wrong version number")
                                || r.contains("no protocols available")
                                || r.contains("protocol version")
                        })
                    });
                    if version { Self::ProtocolVersion } else { Self::Tls }
                }
            },
            Error::IssueFailed { .. } | Error::OpenSsl(_) | Error::Config { .. } => Self::Local,
        }
    }
}

/// A token bucket for log lines.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

/// The refused handshakes of one acceptor or connector: counters by reason and the rate-limited log.
#[derive(Debug)]
pub struct HandshakeRefusals {
    counts: [AtomicU64; RefusalReason::ALL.len()],
    bucket: Mutex<Bucket>,
}

impl Default for HandshakeRefusals {
    fn default() -> Self {
        Self::new()
    }
}

impl HandshakeRefusals {
    /// All counters zero, a full bucket.
    pub fn new() -> Self {
        Self {
            counts: Default::default(),
            bucket: Mutex::new(Bucket { tokens: f64::from(LOG_BURST), last: Instant::now(), suppressed: 0 }),
        }
    }

    /// Counts and (rate-limited) logs a handshake refused with `error`; `side` is `server` or `client`,
    /// `peer` the peer's address when known. Returns the reason.
    pub fn record(&self, side: &'static str, peer: Option<SocketAddr>, error: &Error) -> RefusalReason {
        let reason = RefusalReason::of(error);
        if let Some(i) = RefusalReason::ALL.iter().position(|r| *r == reason) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(suppressed) = self.take_token() {
            let peer = peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
            if reason == RefusalReason::Closed {
                tracing::info!(side, peer = %peer, reason = reason.label(), error = %error, suppressed,
                    "aTLS handshake not completed: the peer closed the connection");
            } else {
                tracing::warn!(side, peer = %peer, reason = reason.label(), error = %error, suppressed,
                    "aTLS handshake refused");
            }
        }
        reason
    }

    /// A token for one log line: `Some(lines suppressed since the last one)`, or `None` (suppressed).
    fn take_token(&self) -> Option<u64> {
        let mut b = self.bucket.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let refill = now.duration_since(b.last).as_secs_f64() * f64::from(LOG_LINES_PER_SECOND);
        b.tokens = (b.tokens + refill).min(f64::from(LOG_BURST));
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Some(std::mem::take(&mut b.suppressed))
        } else {
            b.suppressed += 1;
            None
        }
    }

    /// Refusals counted with `reason`.
    pub fn count(&self, reason: RefusalReason) -> u64 {
        RefusalReason::ALL.iter().position(|r| *r == reason).map_or(0, |i| self.counts[i].load(Ordering::Relaxed))
    }

    /// All refusals counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The counters in the Prometheus text format (0.0.4): `# HELP`, `# TYPE` and one sample per reason.
    pub fn render(&self, out: &mut String) {
        let name = "attest_atls_handshakes_refused_total";
        let _ = writeln!(out, "# HELP {name} aTLS handshakes refused or aborted, by reason.\n# TYPE {name} counter");
        for (reason, n) in RefusalReason::ALL.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}{{reason=\"{}\"}} {}", reason.label(), n.load(Ordering::Relaxed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_a_distinct_label_and_renders() {
        let r = HandshakeRefusals::new();
        r.record("server", None, &Error::WrongNonce { channel: crate::NonceChannel::AcceptableCa });
        r.record("server", None, &Error::AlertReceived { alert: 70, description: "protocol_version" });
        assert_eq!(r.count(RefusalReason::WrongNonce), 1);
        assert_eq!(r.count(RefusalReason::ProtocolVersion), 1);
        assert_eq!(r.total(), 2);
        let mut text = String::new();
        r.render(&mut text);
        assert!(text.contains("attest_atls_handshakes_refused_total{reason=\"wrong_nonce\"} 1"), "{text}");
        let labels: std::collections::HashSet<_> = RefusalReason::ALL.iter().map(|r| r.label()).collect();
        assert_eq!(labels.len(), RefusalReason::ALL.len());
    }

    #[test]
    fn the_log_is_rate_limited_and_says_how_much_it_dropped() {
        let r = HandshakeRefusals::new();
        let written = (0..1000).filter(|_| r.take_token().is_some()).count();
        // The burst, plus what the (fast) loop let refill.
        assert!((LOG_BURST as usize..LOG_BURST as usize + 5).contains(&written), "{written}");
        // Once the bucket refills, the next line reports the dropped ones.
        r.bucket.lock().unwrap().tokens = 1.0;
        let suppressed = r.take_token().unwrap();
        assert_eq!(suppressed as usize, 1000 - written);
    }
}
