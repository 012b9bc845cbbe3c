//! The one error type of the KDS certificate supply.
//!
//! Variants are grouped as in rustls' error module: caller misuse and configuration, bad evidence (a report
//! that does not parse, a VLEK the evidence lacks), wrong certificates (a response that does not
//! verify or is not the one asked for), the network, the on-disk store, and CRL outcomes the caller's
//! policy refused. The type is `Clone` because one upstream result is shared by every single-flight waiter.

use attest_engine::UnixTime;
use attest_engine::snp::{Product, TcbVersion};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use attest_util::http::Phase;

/// Every way obtaining a certificate or CRL can fail.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KdsError {
    // --- Caller misuse and configuration -------------------------------------------------------------
    /// The configured KDS base URL is not an absolute `http://` or `https://` URL.
    InvalidBaseUrl {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key that cannot name a KDS object (e.g. a hwID of the wrong length for the product).
    InvalidKey {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The product could not be determined (a version 2 report carries no CPUID): pass it explicitly.
    ProductUnknown,
    /// The TLS client could not be set up (OpenSSL refused the configuration).
    TlsSetup,
    /// A limit of this module was exceeded by an input.
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// What was found.
        found: usize,
    },

    // --- Evidence ------------------------------------------------------------------------------------
    /// The report could not be parsed (or names no usable signing key).
    Report(attest_engine::Error),
    /// The report is signed by a VLEK, and KDS does not serve VLEKs: the evidence must carry it.
    VlekNotCarried,

    // --- Wrong certificates --------------------------------------------------------------------------
    /// A certificate, chain or CRL did not verify with the engine (signature, name, validity, AMD
    /// extensions).
    Verification {
        /// Which object was being vetted ("VCEK", "cert_chain", "CRL", …).
        object: &'static str,
        /// The engine's reason.
        error: attest_engine::Error,
    },
    /// A VCEK that verifies but is for another chip than the one requested.
    HwIdMismatch,
    /// A VCEK that verifies but carries other SPLs than the requested TCB.
    TcbMismatch {
        /// The requested TCB.
        expected: TcbVersion,
        /// The certificate's SPLs.
        found: TcbVersion,
    },
    /// A certificate for another product than the one requested.
    ProductMismatch {
        /// The requested product.
        expected: Product,
        /// The certificate's product.
        found: Product,
    },
    /// A `cert_chain` response that is not `intermediate, ARK` as KDS serves it, or whose ARK is not the pinned
    /// one.
    BadChain {
        /// What is wrong.
        reason: &'static str,
    },
    /// An Intel PCS response that is not what was asked for, or is malformed outside what the engine judges
    /// (a missing or undecodable issuer-chain header, collateral for another FMSPC or PCK CA).
    PcsResponse {
        /// Which object ("TCB Info", "QE Identity", "PCK CRL", "root CA CRL", "TD quote").
        object: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A CRL whose thisUpdate lies after the current time.
    CrlNotYetValid {
        /// thisUpdate.
        this_update: UnixTime,
        /// The current time.
        now: UnixTime,
    },

    // --- Network -------------------------------------------------------------------------------------
    /// No KDS base URL is configured (offline mode) and the object is not in the store.
    Offline,
    /// KDS answered 404, now or within the negative-cache TTL.
    NotFound,
    /// KDS answered 429 and the back-off budget is spent, or it asked to wait longer than allowed.
    RateLimited {
        /// The server's Retry-After, when it sent one.
        retry_after: Option<Duration>,
    },
    /// KDS answered with a status that is neither success, 404, 429 nor a retryable 5xx (or a 5xx after
    /// the last attempt).
    HttpStatus {
        /// The status code.
        status: u16,
    },
    /// A request or body timeout fired.
    Timeout {
        /// Which part.
        phase: Phase,
    },
    /// The connection failed or broke (refused, reset, TLS failure, body ended early).
    Transport {
        /// A classification of hyper's error.
        reason: &'static str,
    },
    /// The response body (or its announced Content-Length) exceeds the configured maximum.
    ResponseTooLarge {
        /// The configured maximum.
        limit: usize,
    },
    /// Every attempt failed; `last` is the final failure.
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: Box<KdsError>,
    },

    // --- Store ---------------------------------------------------------------------------------------
    /// A file operation on the store failed.
    Io {
        /// The operation ("create directory", "write", "fsync", "rename", "read").
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error kind.
        kind: std::io::ErrorKind,
    },

    // --- CRL outcomes refused by policy --------------------------------------------------------------
    /// The only CRL available is past its nextUpdate, and the policy requires a fresh one.
    CrlStale {
        /// The stale CRL's nextUpdate (`None`: it has none).
        next_update: Option<UnixTime>,
    },
    /// No CRL could be obtained, and the policy requires one.
    CrlUnavailable {
        /// Why.
        reason: Box<KdsError>,
    },
}

impl KdsError {
    /// An I/O error on `path` during `op`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, e: &std::io::Error) -> Self {
        Self::Io { op, path: path.into(), kind: e.kind() }
    }

    /// Whether the failure is about the network (as opposed to a wrong certificate or a local problem).
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            Self::Offline
                | Self::NotFound
                | Self::RateLimited { .. }
                | Self::HttpStatus { .. }
                | Self::Timeout { .. }
                | Self::Transport { .. }
                | Self::ResponseTooLarge { .. }
                | Self::RetriesExhausted { .. }
        )
    }
}

impl fmt::Display for KdsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidBaseUrl { reason } => write!(f, "invalid KDS base URL: {reason}"),
            Self::InvalidKey { reason } => write!(f, "invalid certificate key: {reason}"),
            Self::ProductUnknown => {
                f.write_str("the product is unknown (a version 2 report has no CPUID): give it explicitly")
            }
            Self::TlsSetup => f.write_str("cannot set up the TLS client (OpenSSL)"),
            Self::LimitExceeded { what, limit, found } => write!(f, "{what}: {found} exceeds the limit {limit}"),
            Self::Report(e) => write!(f, "report: {e}"),
            Self::VlekNotCarried => f.write_str("the report is VLEK-signed but the evidence carries no VLEK"),
            Self::Verification { object, error } => write!(f, "{object} does not verify: {error}"),
            Self::HwIdMismatch => f.write_str("VCEK is for another chip (hwID differs from the requested one)"),
            Self::TcbMismatch { expected, found } => {
                write!(f, "VCEK is for another TCB: requested {expected}, certificate {found}")
            }
            Self::ProductMismatch { expected, found } => {
                write!(f, "certificate is for {found}, requested {expected}")
            }
            Self::BadChain { reason } => write!(f, "cert_chain: {reason}"),
            Self::PcsResponse { object, reason } => write!(f, "Intel PCS {object}: {reason}"),
            Self::CrlNotYetValid { this_update, now } => write!(f, "CRL thisUpdate {this_update} is after {now}"),
            Self::Offline => f.write_str("not in the store, and no KDS URL is configured (offline)"),
            Self::NotFound => f.write_str("the server (AMD KDS or Intel PCS) has no such object (404)"),
            Self::RateLimited { retry_after: Some(d) } => {
                write!(f, "rate-limited by the server (429, Retry-After {} s)", d.as_secs())
            }
            Self::RateLimited { retry_after: None } => f.write_str("rate-limited by the server (429)"),
            Self::HttpStatus { status } => write!(f, "the server answered HTTP {status}"),
            Self::Timeout { phase } => write!(f, "timed out waiting for the {phase}"),
            Self::Transport { reason } => write!(f, "connection to the server (AMD KDS or Intel PCS) failed: {reason}"),
            Self::ResponseTooLarge { limit } => write!(f, "response larger than {limit} bytes"),
            Self::RetriesExhausted { attempts, last } => write!(f, "gave up after {attempts} attempts: {last}"),
            Self::Io { op, path, kind } => write!(f, "{op} {}: {kind}", path.display()),
            Self::CrlStale { next_update: Some(n) } => write!(f, "the CRL is stale (nextUpdate {n})"),
            Self::CrlStale { next_update: None } => f.write_str("the CRL is stale (it has no nextUpdate)"),
            Self::CrlUnavailable { reason } => write!(f, "no CRL available: {reason}"),
        }
    }
}

impl std::error::Error for KdsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Report(e) | Self::Verification { error: e, .. } => Some(e),
            Self::RetriesExhausted { last: e, .. } | Self::CrlUnavailable { reason: e } => Some(e.as_ref()),
            _ => None,
        }
    }
}
