//! [`RegistrationError`]: why a client-side registration (`register` in `attest-attester`, [`crate::register_remote`])
//! failed, and the total mapping of TPM-layer failures to gRPC statuses on the serving side.

use crate as tpm;
use attest_grpc::Status;
use core::fmt;

/// Why a registration failed on the side that drives it.
///
/// The peer's refusals ([`RegistrationError::Rpc`] with the peer's status) are kept apart from what this side
/// decided ([`RegistrationError::Refused`]: the peer's EK certificate, AK or proof) and from local failures
/// ([`RegistrationError::Local`]: our TPM, our registry file).
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A call failed: the peer refused it (its status) or the transport did.
    Rpc {
        /// The gRPC method path.
        method: &'static str,
        /// The status.
        status: Status,
    },
    /// The peer answered with something malformed or inconsistent (e.g. a digest of another AK).
    BadResponse {
        /// What was wrong.
        what: &'static str,
    },
    /// This side refused the peer's identity or proof: EK certificate not from the CA bundle, an AK without
    /// the attributes of an attestation key, or a failed credential activation proof.
    Refused(tpm::Error),
    /// This side failed: the local TPM, or writing the AK registry.
    Local(tpm::Error),
    /// A blocking task (TPM work) panicked or was cancelled.
    TaskFailed,
}

impl RegistrationError {
    /// Whether the registration was refused (by the peer or by us) rather than failing for an operational
    /// reason. A refusal is final; anything else may succeed on retry.
    pub fn is_refusal(&self) -> bool {
        use attest_grpc::Code;
        match self {
            Self::Refused(_) | Self::BadResponse { .. } => true,
            Self::Rpc { status, .. } => matches!(
                status.code,
                Code::InvalidArgument | Code::PermissionDenied | Code::NotFound | Code::FailedPrecondition
            ),
            Self::Local(_) | Self::TaskFailed => false,
        }
    }

    /// Classifies a TPM-layer error raised while checking the peer: evidence problems are refusals, the rest
    /// local failures.
    pub(crate) fn from_check(e: tpm::Error) -> Self {
        if is_evidence_error(&e) { Self::Refused(e) } else { Self::Local(e) }
    }
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rpc { method, status } => write!(f, "{method}: {status}"),
            Self::BadResponse { what } => write!(f, "malformed registration answer: {what}"),
            Self::Refused(e) => write!(f, "registration refused: {e}"),
            Self::Local(e) => write!(f, "registration failed locally: {e}"),
            Self::TaskFailed => f.write_str("registration failed: the TPM task panicked or was cancelled"),
        }
    }
}

impl std::error::Error for RegistrationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Rpc { status, .. } => Some(status),
            Self::Refused(e) | Self::Local(e) => Some(e),
            Self::BadResponse { .. } | Self::TaskFailed => None,
        }
    }
}

/// Whether a TPM-layer error is about the evidence presented (the caller's fault) rather than this side.
pub(crate) fn is_evidence_error(e: &tpm::Error) -> bool {
    matches!(
        e,
        tpm::Error::EkCertificate { .. }
            | tpm::Error::Engine(_)
            | tpm::Error::InvalidArgument { .. }
            | tpm::Error::CredentialMismatch
    )
}

/// The status a server answers for a TPM-layer error. Evidence problems are `INVALID_ARGUMENT` with the
/// reason (never secret material: [`tpm::Error`] carries none); a failed proof is `PERMISSION_DENIED`;
/// anything else is `INTERNAL` with a generic message (details go to the log).
pub fn status_for(e: &tpm::Error, during: &'static str) -> Status {
    match e {
        tpm::Error::CredentialMismatch => Status::permission_denied("credential activation proof failed"),
        e if is_evidence_error(e) => Status::invalid_argument(e.to_string()),
        e => {
            tracing::warn!(error = %e, during, "registration: internal failure");
            Status::internal(format!("{during} failed"))
        }
    }
}
