//! The error type of AK trust: credential protection, EK certificates, the AK registry — and of the TPM
//! attester side (`attest-attester`), which shares it so that one registration flow has one error type.
//!
//! The TPM variant carries the TSS error boxed: this crate is the verifier side and must not link the TSS
//! library (`tss-esapi`); the attester crate fills it in with its `tpm_error` helper.

use core::fmt;
use std::path::PathBuf;

/// Every way the TPM layer can fail.
///
/// Caller misuse ([`Error::InvalidArgument`]) is kept apart from TPM failures ([`Error::Tpm`]) and from bad
/// evidence ([`Error::EkCertificate`], [`Error::Engine`]). A failed credential activation proof is opaque
/// ([`Error::CredentialMismatch`]): it carries nothing about the secret.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A TPM command (or the TSS library around it) failed.
    Tpm {
        /// What we were doing (e.g. "TPM2_Quote").
        op: &'static str,
        /// The TSS error (TPM response code or local TSS error; a `tss_esapi::Error`).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The caller passed an argument the operation cannot use.
    InvalidArgument {
        /// Which argument and why.
        what: &'static str,
    },
    /// The TPM answered with something inconsistent (e.g. a Name that does not hash its public area).
    UnexpectedTpmOutput {
        /// What was inconsistent.
        what: &'static str,
    },
    /// A persistent handle holds an object that is not the attestation key we would create there.
    PersistentHandleOccupied {
        /// The handle.
        handle: u32,
    },
    /// The EK certificate is malformed, does not chain to the configured CA bundle, or has the wrong key.
    EkCertificate {
        /// Why (OpenSSL's verify reason where there is one).
        reason: String,
    },
    /// An OpenSSL operation failed.
    Crypto(openssl::error::ErrorStack),
    /// Credential activation did not return the secret the verifier made (opaque by design).
    CredentialMismatch,
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The AK registry file is malformed.
    Registry {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The engine rejected a structure (AK public area, attestation document contents).
    Engine(attest_engine::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tpm { op, source } => write!(f, "{op} failed: {source}"),
            Self::InvalidArgument { what } => write!(f, "invalid argument: {what}"),
            Self::UnexpectedTpmOutput { what } => write!(f, "unexpected TPM output: {what}"),
            Self::PersistentHandleOccupied { handle } => {
                write!(f, "persistent handle 0x{handle:08x} holds an object that is not our attestation key")
            }
            Self::EkCertificate { reason } => write!(f, "EK certificate rejected: {reason}"),
            Self::Crypto(e) => write!(f, "OpenSSL: {e}"),
            Self::CredentialMismatch => f.write_str("credential activation failed"),
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Registry { path, reason } => write!(f, "AK registry {}: {reason}", path.display()),
            Self::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Tpm { source, .. } => Some(&**source),
            Self::Crypto(e) => Some(e),
            Self::Io { source, .. } => Some(source),
            Self::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<openssl::error::ErrorStack> for Error {
    fn from(e: openssl::error::ErrorStack) -> Self {
        Self::Crypto(e)
    }
}

impl From<attest_engine::Error> for Error {
    fn from(e: attest_engine::Error) -> Self {
        Self::Engine(e)
    }
}
