//! Why a ticket was refused, and the gRPC status each refusal maps to (a total mapping: every variant has
//! exactly one code and one metrics label).
//!
//! | error | code | why that code |
//! |---|---|---|
//! | [`JoinError::Unauthenticated`] | `UNAUTHENTICATED` | no verified attestation on the connection |
//! | [`JoinError::InvalidRequest`], [`JoinError::Csr`] (bad CSR), [`JoinError::Ssh`] (bad host key) | `INVALID_ARGUMENT` | the node sent something it must fix; retrying the same request cannot help |
//! | [`JoinError::KeyService`] unreachable | `UNAVAILABLE` | transient: the node retries with back-off |
//! | [`JoinError::KeyService`] deadline | `DEADLINE_EXCEEDED` | the key service was too slow for the call's deadline |
//! | [`JoinError::KeyService`] other | `INTERNAL` | the key service refused a request we built: our bug or misconfiguration |
//! | [`JoinError::Token`] transient (5xx, 429, timeout, connection) | `UNAVAILABLE` | the API server may recover |
//! | [`JoinError::Token`] permanent (401, 403, 4xx, malformed) | `INTERNAL` | misconfiguration (RBAC, token) that the node cannot fix |
//! | [`JoinError::Csr`] missing control-plane files | `FAILED_PRECONDITION` | the service cannot serve control-plane joins until its PKI is complete |
//! | [`JoinError::Internal`], [`JoinError::Csr`]/[`JoinError::Ssh`] signing failures | `INTERNAL` | |
//! | [`JoinError::NoIdentity`], [`JoinError::CsrKeyNotProven`], [`JoinError::NotOwned`] | `PERMISSION_DENIED` | the attested node asked for what is not its own ([`crate::identity`]) |
//! | [`JoinError::NotOwned`] (`Full`) | `RESOURCE_EXHAUSTED` | a limit of the cluster state |
//! | [`JoinError::ClusterState`] | `INTERNAL` | the state file could not be written: nothing is issued |
//!
//! Messages name what failed and never carry key material or token secrets.

use std::fmt;

use super::keys::KeyServiceError;
use super::metrics::RefusalReason;
use super::ssh::SshError;
use attest_grpc::Status;
use attest_k8s::{CaError, K8sError};
use attest_trust::membership::{Refusal, StateError};

/// Why a join or rejoin ticket was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum JoinError {
    /// The call did not come over an aTLS connection whose client attested.
    Unauthenticated,
    /// A request field is malformed.
    InvalidRequest {
        /// The proto field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The CSR was refused, the PKI lacks control-plane files, or signing failed.
    Csr(CaError),
    /// The key service failed.
    KeyService {
        /// The data key that was asked for (its id class, never a value: `disk`, `measurementSecret`,
        /// `sshCa`).
        key: &'static str,
        /// What happened.
        error: KeyServiceError,
    },
    /// The bootstrap token could not be created.
    Token(K8sError),
    /// The SSH host key or principals were refused, or the CA could not sign.
    Ssh(SshError),
    /// The peer's verified evidence names no node identity (its variant's identity source is absent).
    NoIdentity,
    /// The CSR's key is not the key the node proved possession of in the aTLS handshake.
    CsrKeyNotProven,
    /// The node asked for a name, disk or role that is not its own ([`crate::identity`]).
    NotOwned(Refusal),
    /// The cluster state could not be read or written (nothing was issued).
    ClusterState(StateError),
    /// Anything else.
    Internal {
        /// What failed.
        reason: String,
    },
}

impl JoinError {
    /// The metrics label of this refusal.
    pub fn reason(&self) -> RefusalReason {
        match self {
            JoinError::Unauthenticated => RefusalReason::Unauthenticated,
            JoinError::Ssh(SshError::Ca { .. }) => RefusalReason::Internal,
            JoinError::InvalidRequest { .. } | JoinError::Ssh(_) => RefusalReason::InvalidRequest,
            JoinError::Csr(CaError::MissingControlPlaneFiles { .. }) => RefusalReason::ControlPlaneFiles,
            JoinError::Csr(e) if e.is_bad_request() => RefusalReason::InvalidCsr,
            JoinError::Csr(_) | JoinError::Internal { .. } => RefusalReason::Internal,
            JoinError::KeyService { error: KeyServiceError::Unavailable(_), .. } => {
                RefusalReason::KeyServiceUnavailable
            }
            JoinError::KeyService { error: KeyServiceError::DeadlineExceeded(_), .. } => {
                RefusalReason::KeyServiceDeadline
            }
            JoinError::KeyService { .. } => RefusalReason::KeyServiceError,
            JoinError::Token(e) if e.is_transient() => RefusalReason::TokenApiUnavailable,
            JoinError::Token(_) => RefusalReason::TokenApiRefused,
            JoinError::NoIdentity => RefusalReason::NoIdentity,
            JoinError::CsrKeyNotProven => RefusalReason::CsrKeyNotProven,
            JoinError::NotOwned(Refusal::NameTaken { .. } | Refusal::IdentityNamed { .. }) => {
                RefusalReason::NameNotOwned
            }
            JoinError::NotOwned(Refusal::DiskTaken { .. } | Refusal::DiskUnknown { .. }) => RefusalReason::DiskNotOwned,
            JoinError::NotOwned(Refusal::ControlPlaneNotAuthorized) => RefusalReason::ControlPlaneNotAuthorized,
            JoinError::NotOwned(Refusal::Full { .. }) => RefusalReason::ClusterStateFull,
            JoinError::ClusterState(_) => RefusalReason::ClusterState,
        }
    }

    /// The gRPC status (module docs).
    pub fn to_status(&self) -> Status {
        let message = self.to_string();
        match self.reason() {
            RefusalReason::Unauthenticated => Status::unauthenticated(message),
            RefusalReason::InvalidRequest | RefusalReason::InvalidCsr => Status::invalid_argument(message),
            RefusalReason::KeyServiceUnavailable | RefusalReason::TokenApiUnavailable => Status::unavailable(message),
            RefusalReason::KeyServiceDeadline => Status::deadline_exceeded(message),
            RefusalReason::ControlPlaneFiles => Status::failed_precondition(message),
            RefusalReason::KeyServiceError
            | RefusalReason::TokenApiRefused
            | RefusalReason::Internal
            | RefusalReason::ClusterState => Status::internal(message),
            RefusalReason::NoIdentity
            | RefusalReason::CsrKeyNotProven
            | RefusalReason::NameNotOwned
            | RefusalReason::DiskNotOwned
            | RefusalReason::ControlPlaneNotAuthorized => Status::permission_denied(message),
            RefusalReason::ClusterStateFull => Status::resource_exhausted(message),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Unauthenticated => {
                f.write_str("no verified attestation: join.API is served only over aTLS to attested nodes")
            }
            JoinError::InvalidRequest { field, reason } => write!(f, "{field}: {reason}"),
            JoinError::Csr(e) => write!(f, "certificate_request: {e}"),
            JoinError::KeyService { key, error } => write!(f, "{key} key: {error}"),
            JoinError::Token(e) => write!(f, "bootstrap token: {e}"),
            JoinError::Ssh(e) => write!(f, "{e}"),
            JoinError::Internal { reason } => write!(f, "internal error: {reason}"),
            JoinError::NoIdentity => {
                f.write_str("the attestation names no node identity: nothing can be bound to this node")
            }
            JoinError::CsrKeyNotProven => f.write_str(
                "certificate_request: its key is not the key this node proved in the aTLS handshake \
                 (the kubelet key must be the aTLS key)",
            ),
            JoinError::NotOwned(r) => write!(f, "refused: {r}"),
            JoinError::ClusterState(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for JoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JoinError::ClusterState(e) => Some(e),
            _ => None,
        }
    }
}

impl From<JoinError> for Status {
    fn from(e: JoinError) -> Status {
        e.to_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_grpc::Code;
    use attest_k8s::ApiStatus;

    #[test]
    fn status_mapping() {
        let api = |code| ApiStatus { code, reason: String::new(), message: String::new() };
        let cases: Vec<(JoinError, Code)> = vec![
            (JoinError::Unauthenticated, Code::Unauthenticated),
            (JoinError::InvalidRequest { field: "disk_uuid", reason: "x".into() }, Code::InvalidArgument),
            (JoinError::Csr(CaError::BadCsrSignature), Code::InvalidArgument),
            (JoinError::Csr(CaError::MissingControlPlaneFiles { missing: vec!["sa.key"] }), Code::FailedPrecondition),
            (JoinError::Csr(CaError::Signing { reason: "x".into() }), Code::Internal),
            (
                JoinError::KeyService { key: "disk", error: KeyServiceError::Unavailable(Status::unavailable("x")) },
                Code::Unavailable,
            ),
            (
                JoinError::KeyService {
                    key: "disk",
                    error: KeyServiceError::DeadlineExceeded(Status::deadline_exceeded("x")),
                },
                Code::DeadlineExceeded,
            ),
            (
                JoinError::KeyService { key: "disk", error: KeyServiceError::Failed(Status::invalid_argument("x")) },
                Code::Internal,
            ),
            (JoinError::Token(K8sError::ServerError(api(503))), Code::Unavailable),
            (JoinError::Token(K8sError::Timeout { phase: attest_k8s::Phase::Headers }), Code::Unavailable),
            (JoinError::Token(K8sError::Forbidden(api(403))), Code::Internal),
            (JoinError::Token(K8sError::Unauthorized(api(401))), Code::Internal),
            (JoinError::Ssh(SshError::HostKeyTooLarge), Code::InvalidArgument),
            (JoinError::Internal { reason: "x".into() }, Code::Internal),
            (JoinError::NoIdentity, Code::PermissionDenied),
            (JoinError::CsrKeyNotProven, Code::PermissionDenied),
            (JoinError::NotOwned(Refusal::NameTaken { name: "n".into() }), Code::PermissionDenied),
            (JoinError::NotOwned(Refusal::DiskUnknown { disk: "d".into() }), Code::PermissionDenied),
            (JoinError::NotOwned(Refusal::ControlPlaneNotAuthorized), Code::PermissionDenied),
            (JoinError::NotOwned(Refusal::Full { what: "nodes" }), Code::ResourceExhausted),
            (JoinError::ClusterState(StateError::Invalid { path: "s".into(), reason: "x".into() }), Code::Internal),
        ];
        for (e, code) in cases {
            assert_eq!(e.to_status().code, code, "{e}");
        }
    }
}
