//! The join client: runs next to the init server until either of them takes the node lock.
//!
//! ```text
//!         ┌──────────────────────────── back-off (jittered, capped) ◀──────────────┐
//!         ▼                                                                         │ retryable
//!  [pre-join hook once: AK registration]                                           │ (UNAVAILABLE, DEADLINE_EXCEEDED,
//!  fresh kubelet key + CSR                                                          │  TCP failure, …)
//!  mutual aTLS under the kubelet key: this node attests, the service is verified    │
//!    (server_trust: measurements, launch, CRLs; qemu-vtpm: credential activation) ──┤ refused (the join service's
//!  IssueJoinTicket{disk UUID, CSR, is_control_plane} on that connection ────────────┤  attestation, INVALID_ARGUMENT,
//!         │ ticket                                                                  │  PERMISSION_DENIED, bad ticket,
//!         ▼                                                                         │  another cluster's service …):
//!  check ticket → cluster id = HKDF(measurement secret, salt, "key-clusterID")      │  retried at most MAX_REFUSALS
//!  the service's lock register (PCR 15 / RTMR3) bound to the cluster id?           │  times, then the client stops
//!  NodeLock::try_lock(Join) ── lost (init won) ──▶ stop                             │
//!         ▼                                                                         │  (the init server keeps serving)
//!  Node::commit: disk set-up (ticket's key), state, files, `kubeadm join`
//! ```
//!
//! The loop stops as soon as the lock is taken by anyone: it checks before each attempt and its back-off
//! sleep wakes up on the lock's watch channel. A lost lock race after a ticket arrived is not an error of
//! the node — the init path won — and the ticket is dropped (its secrets wiped).
//!
//! # Why refusals are not retried forever
//!
//! UNAVAILABLE and friends are what a join service that is not up yet (or a key service behind it that is
//! down) produces: retried with back-off without limit. INVALID_ARGUMENT, PERMISSION_DENIED (our attestation
//! refused), FAILED_PRECONDITION, malformed tickets and a join service whose own attestation this node
//! refuses ([`AttemptError::ServerRefused`]) will not fix themselves by asking again; they are logged as
//! errors and retried [`JoinConfig::max_refusals`] times in total (a measurements update on either side can
//! change the verdict), after which the join client gives up. Whatever was refused, the node is untouched:
//! nothing is locked, written or kept.

pub mod endpoints;
pub(crate) mod registration;
pub(crate) mod server_trust;
pub mod ticket;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};

use crate::join::server_trust::{ServerProof, ServerTrustError};
use crate::join::ticket::{KubeletKey, TicketError, check_ticket};
use crate::life::lock::{LockError, LockHolder};
use crate::life::node::{CommitError, Committed, Node, Outcome};
use crate::life::state::Role;
use attest_atls::grpc::ConnectError;
use attest_grpc::{Code, Status};
use openssl::pkey::{PKey, Private};

/// First back-off delay.
pub(crate) const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Longest back-off delay.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Refusals tolerated before the join client gives up.
pub(crate) const MAX_REFUSALS: usize = 5;
/// Timeout of one IssueJoinTicket call (the join service creates a token and asks the key service).
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Join client tuning.
#[derive(Clone, Debug)]
pub struct JoinConfig {
    /// First back-off delay.
    pub initial_backoff: Duration,
    /// Longest back-off delay.
    pub max_backoff: Duration,
    /// Refusals tolerated before giving up.
    pub max_refusals: usize,
}

impl Default for JoinConfig {
    fn default() -> JoinConfig {
        JoinConfig { initial_backoff: INITIAL_BACKOFF, max_backoff: MAX_BACKOFF, max_refusals: MAX_REFUSALS }
    }
}

/// The delay before retry number `attempt` (0-based): `initial · 2^attempt`, capped at `max`, then jittered
/// uniformly into `[d/2, d]` so that many nodes restarted together do not retry in lock-step.
pub(crate) fn backoff_delay(config: &JoinConfig, attempt: u32) -> Duration {
    let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
    let d = config.initial_backoff.saturating_mul(factor).min(config.max_backoff);
    let mut r = [0u8; 4];
    openssl::rand::rand_bytes(&mut r).expect("RAND_bytes");
    let fraction = f64::from(u32::from_le_bytes(r)) / f64::from(u32::MAX);
    d / 2 + (d / 2).mul_f64(fraction)
}

/// Why one ticket attempt failed.
#[derive(Debug)]
pub enum AttemptError {
    /// TCP, aTLS or HTTP/2 could not be established.
    Connect(ConnectError),
    /// The call failed with this status.
    Status(Status),
    /// The ticket arrived but is malformed.
    Ticket(TicketError),
    /// This node refuses the join service: its attestation failed verification, its AK could not be proven,
    /// or it is not a node of the cluster its ticket names.
    ServerRefused(String),
    /// A local failure (e.g. the kubelet key could not be generated).
    Local(String),
}

impl AttemptError {
    /// The error of a failed connection: the join service's attestation refused by this node is
    /// [`AttemptError::ServerRefused`]; anything else (TCP, our attestation refused by them, HTTP/2) a
    /// connection failure.
    pub(crate) fn from_connect(e: ConnectError) -> AttemptError {
        use attest_atls::Error as A;
        match &e {
            ConnectError::Atls(
                A::NoPeerCertificate
                | A::MalformedCertificate { .. }
                | A::BadSelfSignature
                | A::MissingExtension
                | A::UnknownOid { .. }
                | A::WrongNonce { .. }
                | A::ReplayedCertificate { .. }
                | A::KeyMismatch { .. }
                | A::AttestationFailed { .. },
            ) => AttemptError::ServerRefused(attest_util::error_chain(&e)),
            _ => AttemptError::Connect(e),
        }
    }
}

impl From<ServerTrustError> for AttemptError {
    fn from(e: ServerTrustError) -> AttemptError {
        AttemptError::ServerRefused(e.to_string())
    }
}

impl AttemptError {
    /// Whether asking again may help without anything changing (see the module docs).
    pub fn is_retryable(&self) -> bool {
        match self {
            AttemptError::Connect(_) | AttemptError::Local(_) => true,
            AttemptError::Status(s) => matches!(
                s.code,
                Code::Unavailable
                    | Code::DeadlineExceeded
                    | Code::ResourceExhausted
                    | Code::Aborted
                    | Code::Internal
                    | Code::Unknown
                    | Code::Cancelled
            ),
            AttemptError::Ticket(_) | AttemptError::ServerRefused(_) => false,
        }
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptError::Connect(e) => write!(f, "{e}"),
            AttemptError::Status(s) => write!(f, "IssueJoinTicket: {s}"),
            AttemptError::Ticket(e) => write!(f, "{e}"),
            AttemptError::ServerRefused(e) => write!(f, "join service refused by this node: {e}"),
            AttemptError::Local(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AttemptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(e) => Some(e),
            Self::Status(e) => Some(e),
            Self::Ticket(e) => Some(e),
            Self::ServerRefused(_) | Self::Local(_) => None,
        }
    }
}

/// Where join tickets come from: each ticket with what the join service proved on the connection it came
/// over.
pub trait TicketSource: Send + Sync + std::fmt::Debug {
    /// One IssueJoinTicket call, attesting under `tls_key` — the kubelet key of the request's CSR: the join
    /// service signs a kubelet certificate only for the key the node proved in the aTLS handshake.
    fn issue(
        &self,
        request: IssueJoinTicketRequest,
        tls_key: PKey<Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>>;
}

/// A step run once before the first join attempt (the AK registration with the join service). An error is
/// logged; the join attempts go ahead (the join service then decides whether it trusts this node's AK).
pub trait PreJoin: Send + Sync + std::fmt::Debug {
    /// Runs the step; returns a line for the log.
    fn run(&self) -> BoxFuture<'_, Result<String, PreJoinError>>;
}

/// Why a pre-join step failed (logged; the join attempts go ahead).
#[derive(Debug)]
pub struct PreJoinError {
    /// What the step was doing (e.g. `AK registration at 10.0.0.1:9004`).
    pub what: String,
    /// The error it met.
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for PreJoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for PreJoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// How the join client ended.
#[derive(Debug)]
pub enum JoinError {
    /// The lock was taken by someone else (the init path); nothing to do.
    LockTaken,
    /// The join service kept refusing; the client gave up.
    GaveUp {
        /// Attempts made.
        attempts: usize,
        /// The last refusal.
        last: String,
    },
    /// The lock's PCR extend failed after a ticket arrived (the node stays locked).
    Lock(LockError),
    /// The steps after the lock failed (the node stays locked, its state says `failed`).
    Commit(CommitError),
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JoinError::LockTaken => f.write_str("join client stopped: the node lock is taken"),
            JoinError::GaveUp { attempts, last } => {
                write!(f, "join client gave up after {attempts} attempts; last refusal: {last}")
            }
            JoinError::Lock(e) => write!(f, "join: {e}"),
            JoinError::Commit(e) => write!(f, "join: {e}"),
        }
    }
}

impl std::error::Error for JoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Lock(e) => Some(e),
            Self::Commit(e) => Some(e),
            Self::LockTaken | Self::GaveUp { .. } => None,
        }
    }
}

/// The join client of a node.
#[derive(Debug)]
pub struct JoinClient {
    node: Arc<Node>,
    source: Arc<dyn TicketSource>,
    config: JoinConfig,
    pre_join: Option<Arc<dyn PreJoin>>,
}

impl JoinClient {
    /// A join client for `node` asking `source`.
    pub fn new(node: Arc<Node>, source: Arc<dyn TicketSource>, config: JoinConfig) -> JoinClient {
        JoinClient { node, source, config, pre_join: None }
    }

    /// Runs `hook` once before the first attempt.
    pub fn with_pre_join(mut self, hook: Arc<dyn PreJoin>) -> JoinClient {
        self.pre_join = Some(hook);
        self
    }

    fn role(&self) -> Role {
        if self.node.config().control_plane { Role::ControlPlane } else { Role::Worker }
    }

    async fn attempt(&self, disk_uuid: &str) -> Result<(ticket::CheckedTicket, [u8; 32]), AttemptError> {
        let config = self.node.config();
        let kubelet =
            KubeletKey::generate(&config.node_name).map_err(|e| AttemptError::Local(format!("kubelet key: {e}")))?;
        let request = IssueJoinTicketRequest {
            disk_uuid: disk_uuid.to_owned(),
            certificate_request: kubelet.csr_der().to_vec(),
            is_control_plane: config.control_plane,
            ..IssueJoinTicketRequest::default()
        };
        let (response, server) = self.source.issue(request, kubelet.private_key().clone()).await?;
        let ticket =
            check_ticket(response, &kubelet, &config.node_name, config.control_plane).map_err(AttemptError::Ticket)?;
        let cluster_id = attest_keys::cluster_id(&ticket.measurement_secret, &ticket.measurement_salt);
        // The service must run on a node of the cluster whose keys it just handed out.
        server.check_cluster(&cluster_id)?;
        Ok((ticket, cluster_id))
    }

    /// Sleeps `delay`, or less if the lock is taken meanwhile. Returns whether the lock is taken.
    async fn sleep_unless_locked(&self, delay: Duration) -> bool {
        let mut locked = self.node.lock().subscribe();
        tokio::select! {
            () = tokio::time::sleep(delay) => self.node.lock().is_locked(),
            r = locked.wait_for(|l| *l) => r.is_ok(),
        }
    }

    /// Runs until a ticket is applied, the lock is taken by the init path, or the join service keeps
    /// refusing. Publishes the node's outcome when this path took the lock.
    pub async fn run(self) -> Result<Outcome, JoinError> {
        let disk = Arc::clone(self.node.disk());
        let disk_uuid = match tokio::task::spawn_blocking(move || disk.disk_uuid()).await {
            Ok(Ok(u)) => u,
            Ok(Err(e)) => return Err(JoinError::GaveUp { attempts: 0, last: format!("disk UUID: {e}") }),
            Err(e) => return Err(JoinError::GaveUp { attempts: 0, last: format!("disk UUID task: {e}") }),
        };
        if let Some(hook) = &self.pre_join {
            match hook.run().await {
                Ok(line) => tracing::info!("join: {line}"),
                Err(e) => tracing::warn!(error = %e, "join: pre-join step failed; joining anyway"),
            }
        }
        let mut attempts = 0usize;
        let mut refusals = 0usize;
        let mut retry: u32 = 0;
        loop {
            if self.node.lock().is_locked() {
                return Err(JoinError::LockTaken);
            }
            attempts += 1;
            match self.attempt(&disk_uuid).await {
                Ok((ticket, cluster_id)) => return self.apply(ticket, cluster_id, &disk_uuid).await,
                Err(e) if e.is_retryable() => {
                    tracing::info!(attempt = attempts, error = %e, "join: no ticket yet, retrying");
                }
                Err(e) => {
                    refusals += 1;
                    tracing::error!(attempt = attempts, refusals, error = %e, "join: refused");
                    if refusals >= self.config.max_refusals {
                        return Err(JoinError::GaveUp { attempts, last: e.to_string() });
                    }
                }
            }
            let delay = backoff_delay(&self.config, retry);
            retry = retry.saturating_add(1);
            if self.sleep_unless_locked(delay).await {
                return Err(JoinError::LockTaken);
            }
        }
    }

    async fn apply(
        &self,
        ticket: ticket::CheckedTicket,
        cluster_id: [u8; 32],
        disk_uuid: &str,
    ) -> Result<Outcome, JoinError> {
        match self.node.try_lock(LockHolder::Join, cluster_id).await {
            Ok(()) => {}
            Err(LockError::AlreadyLocked { .. }) => {
                tracing::info!("join: ticket received but the node lock is taken; dropping it");
                return Err(JoinError::LockTaken);
            }
            Err(e @ LockError::Pcr(_)) => {
                self.node.publish(Outcome::Failed { holder: LockHolder::Join, error: e.to_string() });
                return Err(JoinError::Lock(e));
            }
        }
        tracing::info!(cluster_id = %hex::encode(cluster_id), "join: node locked");
        let node = Arc::clone(&self.node);
        let role = self.role();
        let disk_uuid = disk_uuid.to_owned();
        let result = tokio::task::spawn_blocking(move || {
            let mut log = |line: &str| tracing::info!(target: "attest::bootstrapper::join", "{line}");
            let c = Committed {
                holder: LockHolder::Join,
                role,
                measurement_salt: &ticket.measurement_salt,
                cluster_id: &cluster_id,
                disk_uuid: &disk_uuid,
            };
            node.commit(c, &ticket.state_disk_key, &mut log, |backend, log| {
                log(&format!("joining the cluster at {} ({})", ticket.join.api_server_endpoint, backend.name()));
                backend.join(&ticket.join, log)
            })
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        match result {
            Ok(()) => {
                let outcome = Outcome::Joined { cluster_id };
                self.node.publish(outcome.clone());
                Ok(outcome)
            }
            Err(e) => {
                self.node.publish(Outcome::Failed { holder: LockHolder::Join, error: e.to_string() });
                Err(JoinError::Commit(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters() {
        let c = JoinConfig::default();
        for attempt in 0..40 {
            let d = backoff_delay(&c, attempt);
            let full = INITIAL_BACKOFF.saturating_mul(1 << attempt.min(20)).min(MAX_BACKOFF);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
        assert!(backoff_delay(&c, 100) <= MAX_BACKOFF);
    }

    #[test]
    fn retry_classification() {
        assert!(AttemptError::Status(Status::unavailable("x")).is_retryable());
        assert!(AttemptError::Status(Status::deadline_exceeded("x")).is_retryable());
        assert!(!AttemptError::Status(Status::invalid_argument("x")).is_retryable());
        assert!(!AttemptError::Status(Status::permission_denied("x")).is_retryable());
        assert!(!AttemptError::Ticket(TicketError { field: "token", reason: "x" }).is_retryable());
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(AttemptError::Connect(ConnectError::Tcp(io)).is_retryable());
        // A join service whose own attestation this node refuses is a refusal, not a transient failure.
        let refused = AttemptError::from_connect(ConnectError::Atls(attest_atls::Error::MissingExtension));
        assert!(matches!(refused, AttemptError::ServerRefused(_)) && !refused.is_retryable());
        // The service refusing our attestation (its alert) stays a connection failure.
        let alert = attest_atls::Error::AlertReceived { alert: 40, description: "handshake_failure" };
        assert!(AttemptError::from_connect(ConnectError::Atls(alert)).is_retryable());
    }
}
