//! After a reboot: a bootstrapped node gets its state-disk key back, reopens its disk, re-extends PCR 15 and
//! restarts its Kubernetes components.
//!
//! ```text
//!  start-up: PCR 15 = 0, node state `bootstrapped` (state::Startup::Rejoin)
//!        │
//!        ├──── rejoin client (aTLS, this node attests; endpoints with failover) ──────┐
//!        │       IssueRejoinTicket{disk UUID} → {state-disk key, measurement secret}   │ first to deliver
//!        │       refused (attestation: TLS alert, or a refusing status)               │ keys wins
//!        │         × MAX_REFUSALS ─▶ RejoinError::Refused: the node stays down          │ (Rejoiner::finish,
//!        │       down / unavailable ─▶ back-off with jitter, forever                    │  once)
//!        └──── recovery server (super::recover; aTLS, this node attests) ────────────────┤
//!                recover.API/Recover{kms_uri} → master secret → the same two keys       │
//!                                                                                       ▼
//!  Rejoiner::finish: cluster id = HKDF(measurement secret, salt, "key-clusterID") = the stored one?
//!        │ no ─▶ WrongCluster (the keys are another cluster's; nothing touched)
//!        ▼
//!  disk.reopen(key)            never formats; a wrong key fails; an already open disk is accepted
//!  backend.restart(role)       kubelet (its configuration is on the reopened disk)
//!  node state: last_refusal cleared
//!  NodeLock::relock            PCR 15 = 0 → extend with the cluster id; = this cluster's → keep; else refuse
//! ```
//!
//! # Why PCR 15 comes last
//!
//! Each step before the relock can run again: reopening an open disk and restarting a running kubelet are
//! no-ops, and the state write is atomic. A node stopped anywhere in between (killed, or a power cut) still
//! has PCR 15 = 0 and its state `bootstrapped`, so its next start rejoins again with the same disk key. The
//! relock is the commit point: once PCR 15 holds the cluster id, the node is rejoined, and a restart in the
//! same boot only serves (`Startup::Bootstrapped`). Relocking first would leave a node killed before its
//! kubelet restart locked, "bootstrapped", and with no Kubernetes running until its next reboot.
//!
//! The keys are checked against the cluster id *before* anything is done with them: keys from another
//! cluster's key service (a join service of the wrong cluster, an operator's wrong master secret) are
//! refused, and the disk is never opened with them. Every refusal is logged, written to the node state
//! (`last_refusal`, in the disk header where the disk keeps one) and ends the process with a distinct exit
//! code (`crate::cmd`).

use std::sync::Arc;

use tokio::sync::watch;
use zeroize::Zeroizing;

use attest_proto::join::IssueRejoinTicketRequest;

use crate::cluster::backend::BackendError;
use crate::disk::DiskError;
use crate::join::endpoints::{FailoverSource, is_refusal};
use crate::join::ticket::TICKET_KEY_LENGTH;
use crate::join::{JoinConfig, backoff_delay};
use crate::life::lock::{LockHolder, RelockError};
use crate::life::node::Node;
use crate::life::state::NodeState;

/// Where a rebooted node's keys came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// `join.API/IssueRejoinTicket`.
    RejoinTicket,
    /// `recover.API/Recover` (an operator's master secret).
    Recovery,
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeySource::RejoinTicket => "rejoin",
            KeySource::Recovery => "recovery",
        })
    }
}

/// The two secrets a rebooted node needs.
pub struct NodeKeys {
    /// The state-disk key.
    pub state_disk_key: Zeroizing<Vec<u8>>,
    /// The measurement secret (gives the cluster id with the stored salt).
    pub measurement_secret: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for NodeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeKeys { .. }")
    }
}

/// How a rejoin ended well.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejoined {
    /// The cluster id (the lock register now holds its bound value: PCR 15 = SHA-256(0³² ‖ it)).
    pub cluster_id: [u8; 32],
    /// Where the keys came from.
    pub via: KeySource,
    /// Whether the lock register was extended now (false: it already held this cluster's value).
    pub extended: bool,
    /// The disk's reopen report.
    pub disk: String,
}

/// Why a rejoin failed. No variant carries key material.
#[derive(Debug)]
pub enum RejoinError {
    /// The join services refused this node (its attestation: measurements changed) too many times.
    Refused {
        /// Attempts made.
        attempts: usize,
        /// The last refusal.
        last: String,
    },
    /// A key has the wrong length.
    Malformed {
        /// Which.
        field: &'static str,
    },
    /// The keys belong to another cluster.
    WrongCluster {
        /// The node's cluster id.
        expected: [u8; 32],
        /// The cluster id the keys give.
        found: [u8; 32],
    },
    /// The disk did not reopen (a wrong key, a missing device).
    Disk(DiskError),
    /// The lock register (PCR 15, RTMR3) could not be re-established.
    Relock(RelockError),
    /// The Kubernetes components did not restart.
    Backend(BackendError),
    /// The other path (rejoin or recovery) finished first.
    AlreadyDone,
}

impl std::fmt::Display for RejoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RejoinError::Refused { attempts, last } => write!(
                f,
                "rejoin refused {attempts} times (this node's attestation no longer passes: its measurements \
                 changed?); last refusal: {last}"
            ),
            RejoinError::Malformed { field } => write!(f, "rejoin: {field} is not {TICKET_KEY_LENGTH} bytes"),
            RejoinError::WrongCluster { expected, found } => write!(
                f,
                "the keys belong to cluster {} but this node belongs to {}: refused",
                hex::encode(found),
                hex::encode(expected)
            ),
            RejoinError::Disk(e) => write!(f, "reopening the state disk: {e}"),
            RejoinError::Relock(e) => write!(f, "{e}"),
            RejoinError::Backend(e) => write!(f, "restarting Kubernetes: {e}"),
            RejoinError::AlreadyDone => f.write_str("the node has already rejoined"),
        }
    }
}

impl std::error::Error for RejoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Disk(e) => Some(e),
            Self::Relock(e) => Some(e),
            Self::Backend(e) => Some(e),
            Self::Refused { .. } | Self::Malformed { .. } | Self::WrongCluster { .. } | Self::AlreadyDone => None,
        }
    }
}

/// Finishes a rejoin once, with keys from whichever source delivers them first.
#[derive(Debug)]
pub struct Rejoiner {
    node: Arc<Node>,
    state: NodeState,
    busy: tokio::sync::Mutex<()>,
    done: watch::Sender<Option<Rejoined>>,
}

impl Rejoiner {
    /// The rejoin of `node`, whose stored state is `state`.
    pub fn new(node: Arc<Node>, state: NodeState) -> Rejoiner {
        Rejoiner { node, state, busy: tokio::sync::Mutex::new(()), done: watch::Sender::new(None) }
    }

    /// The node.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// The node's stored state.
    pub fn state(&self) -> &NodeState {
        &self.state
    }

    /// A receiver that sees the result once the node has rejoined.
    pub fn subscribe(&self) -> watch::Receiver<Option<Rejoined>> {
        self.done.subscribe()
    }

    /// The cluster id `keys` give with the stored salt, if it is the node's.
    pub fn check_keys(&self, keys: &NodeKeys) -> Result<[u8; 32], RejoinError> {
        if keys.state_disk_key.len() != TICKET_KEY_LENGTH {
            return Err(RejoinError::Malformed { field: "state_disk_key" });
        }
        if keys.measurement_secret.len() != TICKET_KEY_LENGTH {
            return Err(RejoinError::Malformed { field: "measurement_secret" });
        }
        let found = attest_keys::cluster_id(&keys.measurement_secret, &self.state.measurement_salt);
        if found == self.state.cluster_id {
            Ok(found)
        } else {
            Err(RejoinError::WrongCluster { expected: self.state.cluster_id, found })
        }
    }

    /// Checks `keys`, reopens the disk, re-extends PCR 15 and restarts Kubernetes (module docs). Only the
    /// first successful call does anything; later ones get [`RejoinError::AlreadyDone`].
    pub async fn finish(&self, keys: NodeKeys, via: KeySource) -> Result<Rejoined, RejoinError> {
        let _busy = self.busy.lock().await;
        if self.done.borrow().is_some() {
            return Err(RejoinError::AlreadyDone);
        }
        let cluster_id = self.check_keys(&keys)?;
        let node = Arc::clone(&self.node);
        let mut state = self.state.clone();
        let result = tokio::task::spawn_blocking(move || {
            let fault = |step: &str| attest_util::fault::point(&format!("{via}.{step}"));
            let mut log = |line: &str| tracing::info!(target: "attest::bootstrapper::rejoin", "{line}");
            // A PCR 15 that something else extended is refused before anything starts.
            node.lock().check_relock(&cluster_id).map_err(RejoinError::Relock)?;
            fault("keys-checked");
            let disk = node.disk().reopen(&keys.state_disk_key).map_err(RejoinError::Disk)?;
            drop(keys);
            fault("disk-reopened");
            log(&format!("disk: {disk}"));
            node.backend().restart(state.role, &mut log).map_err(RejoinError::Backend)?;
            fault("restarted");
            state.last_refusal = None;
            persist(&node, &state);
            fault("state-written");
            let extended = node.lock().relock(LockHolder::Rejoin, &cluster_id).map_err(RejoinError::Relock)?;
            fault("relocked");
            log(&format!(
                "{} {} cluster {}",
                node.lock().register(),
                if extended { "re-extended with" } else { "already holds" },
                hex::encode(cluster_id)
            ));
            Ok::<_, RejoinError>(Rejoined { cluster_id, via, extended, disk })
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
        self.done.send_replace(Some(result.clone()));
        Ok(result)
    }

    /// Records why the node stays down in its state (best effort: logged on failure).
    pub fn record_refusal(&self, reason: &str) {
        let mut state = self.state.clone();
        state.last_refusal = Some(reason.to_owned());
        persist(&self.node, &state);
    }
}

/// Writes `state` to the disk's header and, where readable, the state file (best effort).
fn persist(node: &Node, state: &NodeState) {
    if let Err(e) = node.disk().record_state(state) {
        tracing::error!(error = %e, "rejoin: cannot record the node state in the disk header");
    }
    if let Err(e) = node.store().persist(state) {
        tracing::warn!(error = %e, "rejoin: cannot write the node state file");
    }
}

/// Asks the join services for a rejoin ticket until one is applied, the recovery path finishes first, or
/// the services keep refusing this node (module docs).
pub async fn run_rejoin_client(
    rejoiner: Arc<Rejoiner>,
    source: Arc<FailoverSource>,
    config: JoinConfig,
) -> Result<Rejoined, RejoinError> {
    let mut done = rejoiner.subscribe();
    let disk_uuid = rejoiner.state().disk_uuid.clone();
    let (mut attempts, mut refusals, mut retry) = (0usize, 0usize, 0u32);
    loop {
        if done.borrow().is_some() {
            return Err(RejoinError::AlreadyDone);
        }
        attempts += 1;
        match source.rejoin(IssueRejoinTicketRequest { disk_uuid: disk_uuid.clone() }).await {
            Ok((mut ticket, proof)) => {
                // The service that answers must be this cluster's (its lock register = this node's cluster id).
                if let Err(e) = proof.check_cluster(&rejoiner.state().cluster_id) {
                    refusals += 1;
                    tracing::error!(attempt = attempts, refusals, error = %e, "rejoin: the join service is not this cluster's");
                    if refusals >= config.max_refusals {
                        return Err(RejoinError::Refused { attempts, last: e.to_string() });
                    }
                    let delay = backoff_delay(&config, retry);
                    retry = retry.saturating_add(1);
                    tokio::time::sleep(delay).await;
                    continue;
                }
                let keys = NodeKeys {
                    state_disk_key: Zeroizing::new(std::mem::take(&mut ticket.state_disk_key)),
                    measurement_secret: Zeroizing::new(std::mem::take(&mut ticket.measurement_secret)),
                };
                return rejoiner.finish(keys, KeySource::RejoinTicket).await;
            }
            Err(e) if is_refusal(&e) => {
                refusals += 1;
                tracing::error!(attempt = attempts, refusals, error = %e, "rejoin: refused");
                if refusals >= config.max_refusals {
                    return Err(RejoinError::Refused { attempts, last: e.to_string() });
                }
            }
            Err(e) => tracing::info!(attempt = attempts, error = %e, "rejoin: no join service answered, retrying"),
        }
        let delay = backoff_delay(&config, retry);
        retry = retry.saturating_add(1);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = done.wait_for(Option::is_some) => return Err(RejoinError::AlreadyDone),
        }
    }
}
