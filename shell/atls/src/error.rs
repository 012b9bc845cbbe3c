//! What can go wrong in an aTLS handshake, by side.
//!
//! The **verifying** side names exactly which check failed (the `Verify*`-group variants below) and aborts
//! the handshake; OpenSSL then sends the peer a `handshake_failure` alert. The **attesting** side sees that
//! alert as [`Error::AlertReceived`] — in the handshake itself, except in one TLS 1.3 case: a client's
//! handshake completes before the server has judged the client's certificate (RFC 8446 §4.4.2 puts the
//! client's Certificate after the server's Finished), so a client whose attestation the server rejects gets
//! the alert on its first read or write (as an `io::Error` wrapping [`Error::AlertReceived`]).

use core::fmt;

/// A boxed error from an issuer or validator.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Where a nonce travels (`docs/ARCHITECTURE.md`, "aTLS").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceChannel {
    /// The client's nonce: the TLS ServerName (SNI).
    ServerName,
    /// The server's nonce: the CommonName of the single acceptable-CA name in the CertificateRequest.
    AcceptableCa,
}

impl fmt::Display for NonceChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ServerName => "the ServerName (client nonce)",
            Self::AcceptableCa => "the acceptable-CA CommonName (server nonce)",
        })
    }
}

/// Every way an aTLS handshake can fail.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    // ---- Verifying side: what the peer presented ------------------------------------------------------
    /// The peer presented no certificate although this side asked for one.
    NoPeerCertificate,
    /// The peer's certificate is not a well-formed X.509 v3 certificate (RFC 5280 §4.1) with a supported key.
    MalformedCertificate {
        /// What the parser refused.
        reason: String,
    },
    /// The certificate's signature does not verify under the certificate's own public key: it is not the
    /// self-signed certificate of the key that holds the attestation.
    BadSelfSignature,
    /// The certificate carries no attestation extension (none under the aTLS arc 1.3.9900).
    MissingExtension,
    /// The certificate's attestation extension has an OID that no validator on this side accepts.
    UnknownOid {
        /// The extension's OID, dotted.
        oid: String,
    },
    /// The document is bound to another nonce than the one this side sent in this handshake.
    WrongNonce {
        /// The channel this side's nonce travelled on.
        channel: NonceChannel,
    },
    /// The certificate's key was already accepted in an earlier handshake with this verifier: a certificate
    /// captured from an earlier handshake and presented again. (A replay to another verifier process, which
    /// has not seen the key, fails as [`Error::WrongNonce`].)
    ReplayedCertificate {
        /// SHA-256 of the certificate's SubjectPublicKeyInfo.
        spki_sha256: [u8; 32],
    },
    /// The document's user data is not SHA-256 of the presented certificate's SubjectPublicKeyInfo: the
    /// document was made for another key (a swapped key).
    KeyMismatch {
        /// SHA-256 of the certificate's SubjectPublicKeyInfo DER.
        spki_sha256: [u8; 32],
        /// The user data the document binds.
        user_data: Vec<u8>,
    },
    /// The attestation document failed validation (untrusted AK, PCR policy, signature, malformed, …).
    AttestationFailed {
        /// The extension OID (the variant) it was validated for.
        oid: String,
        /// The validator's reason.
        source: BoxError,
    },

    // ---- Attesting side ---------------------------------------------------------------------------------
    /// The peer sent no nonce where this side needs one.
    MissingNonce {
        /// Where it was expected.
        channel: NonceChannel,
    },
    /// The peer's nonce is not standard base64 of 32 bytes, or the CA list is not a single CommonName.
    MalformedNonce {
        /// Where it came from.
        channel: NonceChannel,
        /// What was wrong.
        reason: &'static str,
    },
    /// This side's issuer could not produce an attestation document.
    IssueFailed {
        /// The issuer's reason.
        source: BoxError,
    },

    // ---- Either side ------------------------------------------------------------------------------------
    /// The peer aborted with a TLS alert (RFC 8446 §6) — on the attesting side, typically its verdict on
    /// our attestation.
    AlertReceived {
        /// The alert's description code.
        alert: u8,
        /// Its RFC 8446 name.
        description: &'static str,
    },
    /// Any other TLS or transport failure.
    Tls(openssl::ssl::Error),
    /// Building the TLS context or the certificate failed in OpenSSL.
    OpenSsl(openssl::error::ErrorStack),
    /// The configuration makes no sense for aTLS (e.g. neither side attests).
    Config {
        /// What is wrong.
        what: &'static str,
    },
}

impl Error {
    /// The error for a failed TLS operation: the peer's alert when it sent one, else the TLS error itself.
    pub(crate) fn from_tls(e: openssl::ssl::Error) -> Self {
        match received_alert(&e) {
            Some(alert) => Self::AlertReceived { alert, description: alert_name(alert) },
            None => Self::Tls(e),
        }
    }
}

/// OpenSSL reports a received alert as reason code `SSL_AD_REASON_OFFSET` (1000) + the alert description.
const SSL_AD_REASON_OFFSET: i32 = 1000;

/// The alert the peer sent, if that is why `e` happened.
pub(crate) fn received_alert(e: &openssl::ssl::Error) -> Option<u8> {
    e.ssl_error()?.errors().iter().find_map(|err| {
        let code = err.reason_code().checked_sub(SSL_AD_REASON_OFFSET)?;
        u8::try_from(code).ok()
    })
}

/// RFC 8446 §6 (and RFC 5246 §7.2) alert names.
pub fn alert_name(alert: u8) -> &'static str {
    match alert {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        90 => "user_canceled",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        116 => "certificate_required",
        120 => "no_application_protocol",
        _ => "unknown alert",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoPeerCertificate => f.write_str("aTLS: the peer presented no certificate"),
            Self::MalformedCertificate { reason } => write!(f, "aTLS: malformed peer certificate: {reason}"),
            Self::BadSelfSignature => {
                f.write_str("aTLS: the peer certificate's signature does not verify under its own key")
            }
            Self::MissingExtension => f.write_str("aTLS: the peer certificate carries no attestation extension"),
            Self::UnknownOid { oid } => write!(f, "aTLS: no validator accepts attestation extension OID {oid}"),
            Self::WrongNonce { channel } => {
                write!(f, "aTLS: the attestation is bound to another nonce than the one sent in {channel}")
            }
            Self::ReplayedCertificate { spki_sha256 } => write!(
                f,
                "aTLS: replayed certificate: key {} was accepted in an earlier handshake",
                hex::encode(spki_sha256)
            ),
            Self::KeyMismatch { spki_sha256, user_data } => write!(
                f,
                "aTLS: the attestation binds key hash {} but the certificate's key hashes to {}",
                hex::encode(user_data),
                hex::encode(spki_sha256)
            ),
            Self::AttestationFailed { oid, source } => write!(f, "aTLS: attestation ({oid}) rejected: {source}"),
            Self::MissingNonce { channel } => write!(f, "aTLS: the peer sent no nonce in {channel}"),
            Self::MalformedNonce { channel, reason } => write!(f, "aTLS: malformed nonce in {channel}: {reason}"),
            Self::IssueFailed { source } => write!(f, "aTLS: issuing the attestation failed: {source}"),
            Self::AlertReceived { alert, description } => {
                write!(f, "aTLS: the peer aborted with TLS alert {description} ({alert})")
            }
            Self::Tls(e) => write!(f, "aTLS: TLS: {e}"),
            Self::OpenSsl(e) => write!(f, "aTLS: OpenSSL: {e}"),
            Self::Config { what } => write!(f, "aTLS: configuration: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::AttestationFailed { source, .. } | Self::IssueFailed { source } => Some(source.as_ref()),
            Self::Tls(e) => Some(e),
            Self::OpenSsl(e) => Some(e),
            _ => None,
        }
    }
}

impl From<openssl::error::ErrorStack> for Error {
    fn from(e: openssl::error::ErrorStack) -> Self {
        Self::OpenSsl(e)
    }
}
