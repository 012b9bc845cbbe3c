//! The node: what the init server and the join client share (lock, state store, disk set-up, cluster
//! backend), the start-up check, and the steps after the point of no return that both paths run
//! ([`Node::commit`]).
//!
//! ```text
//!  init server                          join client
//!  secret ok, request valid, keys        ticket received and checked
//!          │                                      │
//!          └────────────► NodeLock::try_lock ◄────┘        exactly one passes
//!                                │
//!                    ┌───────────▼────────────┐
//!                    │ Node::commit           │
//!                    │  1. disk set-up (key)  │  failure → state persisted as `failed`
//!                    │  2. state persisted    │  phase `bootstrapping`
//!                    │  3. backend init/join  │  log lines streamed
//!                    │  4. state: phase       │  `bootstrapped` or `failed`
//!                    └───────────┬────────────┘
//!                                ▼
//!                      Outcome published (watch)
//! ```
//!
//! The order is the one of `docs/ARCHITECTURE.md`, "Bootstrapper" (lock, disk key, state, cluster): the state directory may live on the state
//! disk, so the state is written once the disk is set up. A crash between the lock and step 2 leaves PCR 15
//! set and no state: the lock's intent marker (`crate::life::lock`) makes the next start of that boot see an
//! *interrupted* bootstrap, marked for reset like a failed one (`crate::life::state`). Whatever fails after the
//! lock, the node stays locked and its state says how it ended, so a restart never re-runs a half-done
//! bootstrap; every step and what a crash after it leaves is in `docs/ARCHITECTURE.md`, "Crash safety"
//! (each is a fault point of the crash matrix, `attest_util::fault`).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cluster::backend::{BackendError, ClusterBackend};
use crate::disk::{DiskError, DiskSetup, HeaderState};
use crate::life::lock::{LockHolder, NodeLock};
use crate::life::state::{
    NodeState, Phase, Role, STATE_FORMAT_VERSION, Startup, StartupError, StateError, StateStore, check_startup,
};

/// The node's configuration.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// Where node state, configuration and (dry run) the cluster PKI are written.
    pub state_dir: PathBuf,
    /// The Kubernetes node name.
    pub node_name: String,
    /// Whether the join client asks to join the control plane.
    pub control_plane: bool,
    /// The API server endpoint (`host:port`) an initialized cluster is reached at (the admin kubeconfig's
    /// server, unless the init request names SANs).
    pub api_server_endpoint: String,
}

/// How bootstrapping ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// This node initialized a new cluster.
    Initialized {
        /// The cluster id.
        cluster_id: [u8; 32],
    },
    /// This node joined a cluster.
    Joined {
        /// The cluster id.
        cluster_id: [u8; 32],
    },
    /// The path that took the lock failed after it (the node stays locked).
    Failed {
        /// The path that took the lock.
        holder: LockHolder,
        /// What failed (no secrets).
        error: String,
    },
}

/// Why the steps after the lock failed.
#[derive(Debug)]
pub enum CommitError {
    /// The disk could not be set up.
    Disk(DiskError),
    /// The node state could not be written.
    State(StateError),
    /// The cluster initializer or joiner failed.
    Backend(BackendError),
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitError::Disk(e) => write!(f, "disk set-up failed: {e}"),
            CommitError::State(e) => write!(f, "persisting node state failed: {e}"),
            CommitError::Backend(e) => write!(f, "cluster set-up failed: {e}"),
        }
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommitError::Disk(e) => Some(e),
            CommitError::State(e) => Some(e),
            CommitError::Backend(e) => Some(e),
        }
    }
}

/// What the node knows after the lock: the values persisted in its state.
#[derive(Clone, Copy, Debug)]
pub struct Committed<'a> {
    /// Who took the lock.
    pub holder: LockHolder,
    /// The node's role.
    pub role: Role,
    /// The measurement salt.
    pub measurement_salt: &'a [u8; 32],
    /// The cluster id.
    pub cluster_id: &'a [u8; 32],
    /// The state disk's UUID.
    pub disk_uuid: &'a str,
}

/// The node's shared parts.
#[derive(Debug)]
pub struct Node {
    config: NodeConfig,
    lock: Arc<NodeLock>,
    store: StateStore,
    disk: Arc<dyn DiskSetup>,
    backend: Arc<dyn ClusterBackend>,
    outcome: watch::Sender<Option<Outcome>>,
    metrics: Arc<crate::serve::node_metrics::NodeMetrics>,
}

impl Node {
    /// A node with these parts.
    pub fn new(
        config: NodeConfig,
        lock: Arc<NodeLock>,
        disk: Arc<dyn DiskSetup>,
        backend: Arc<dyn ClusterBackend>,
    ) -> Node {
        let store = StateStore::new(&config.state_dir);
        Node { config, lock, store, disk, backend, outcome: watch::Sender::new(None), metrics: Arc::default() }
    }

    /// The configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The lock.
    pub fn lock(&self) -> &Arc<NodeLock> {
        &self.lock
    }

    /// The disk set-up.
    pub fn disk(&self) -> &Arc<dyn DiskSetup> {
        &self.disk
    }

    /// The cluster backend.
    pub fn backend(&self) -> &Arc<dyn ClusterBackend> {
        &self.backend
    }

    /// The state store.
    pub fn store(&self) -> &StateStore {
        &self.store
    }

    /// The node's listeners' admission tables, for its `/metrics`.
    pub fn metrics(&self) -> &Arc<crate::serve::node_metrics::NodeMetrics> {
        &self.metrics
    }

    /// What this node is at start-up: PCR 15 as the lock found it, combined with the node state (from the
    /// disk's header where it keeps one, else the state file; see `state`).
    pub fn startup(&self) -> Result<Result<Startup, StartupError>, StateError> {
        let state = match self.disk.header_state() {
            Ok(HeaderState::Present(s)) => Some(s),
            Ok(HeaderState::Absent) => None,
            Ok(HeaderState::Unsupported) => self.store.load()?,
            Err(e) => return Err(StateError::Header { reason: e.to_string() }),
        };
        let result = match check_startup(self.lock.register(), &self.lock.initial_pcr(), state) {
            // Locked without state, explained by the lock's intent marker: stopped right after the lock.
            Err(StartupError::LockedWithoutState) => match self.lock.interrupted_lock() {
                Some(cluster_id) => Ok(Startup::Interrupted { cluster_id, state: None }),
                None => Err(StartupError::LockedWithoutState),
            },
            other => other,
        };
        if let Ok(Startup::Rejoin(s)) = &result {
            // "Whose state disk exists": the disk the state names must be this node's.
            let disk_uuid = self.disk.disk_uuid().map_err(|e| StateError::Header { reason: e.to_string() })?;
            if disk_uuid != s.disk_uuid {
                return Ok(Err(StartupError::StateWithoutDisk {
                    cluster_id: s.cluster_id,
                    state_disk_uuid: s.disk_uuid.clone(),
                    disk_uuid,
                }));
            }
        }
        Ok(result)
    }

    /// A receiver of the outcome (`None` until the path that took the lock has finished).
    pub fn outcome(&self) -> watch::Receiver<Option<Outcome>> {
        self.outcome.subscribe()
    }

    /// Publishes the outcome (first one wins; there is only one lock holder).
    pub(crate) fn publish(&self, outcome: Outcome) {
        self.outcome.send_if_modified(|o| {
            if o.is_none() {
                *o = Some(outcome);
                true
            } else {
                false
            }
        });
    }

    /// The steps after the lock (module docs): disk set-up with `disk_key`, state, then `run` (the backend's
    /// init or join), then the final phase. Blocks: call it on a blocking thread. `log` receives progress.
    pub fn commit<T>(
        &self,
        c: Committed<'_>,
        disk_key: &[u8],
        log: &mut dyn FnMut(&str),
        run: impl FnOnce(&dyn ClusterBackend, &mut dyn FnMut(&str)) -> Result<T, BackendError>,
    ) -> Result<T, CommitError> {
        let mut state = NodeState {
            version: STATE_FORMAT_VERSION,
            role: c.role,
            measurement_salt: *c.measurement_salt,
            cluster_id: *c.cluster_id,
            disk_uuid: c.disk_uuid.to_owned(),
            phase: Phase::Bootstrapping,
            dry_run: self.backend.is_dry_run(),
            disk_protection: Some(self.disk.protection()),
            last_refusal: None,
        };
        if state.dry_run {
            log("DRY RUN: the dry-run backend runs no kubeadm; this node gets its keys and lock but joins no \
                 Kubernetes cluster");
        }
        match self.disk.setup(disk_key) {
            Ok(report) => {
                attest_util::fault::point("commit.disk-set-up");
                log(&format!("disk: {report}"));
            }
            Err(e) => {
                state.phase = Phase::Failed;
                // Best effort: the state directory may be on the disk that failed.
                if let Err(se) = self.store.persist(&state) {
                    tracing::error!(error = %se, "bootstrapper: cannot record the failed disk set-up");
                }
                let _ = self.disk.record_state(&state);
                return Err(CommitError::Disk(e));
            }
        }
        self.store.persist(&state).map_err(CommitError::State)?;
        attest_util::fault::point("commit.state-file-written");
        self.disk.record_state(&state).map_err(CommitError::Disk)?;
        attest_util::fault::point("commit.state-header-written");
        log(&format!("node state persisted ({}, role {})", self.store.path().display(), c.role));
        let result = run(self.backend.as_ref(), log);
        attest_util::fault::point("commit.backend-done");
        state.phase = if result.is_ok() { Phase::Bootstrapped } else { Phase::Failed };
        // The file first, the disk's header last: where the disk keeps a header, the header is the record a
        // rebooted node reads, so the phase changes when it is written (a crash between the two leaves the
        // header's `bootstrapping`: interrupted, reset).
        let persisted = self.store.persist(&state).map_err(CommitError::State).and_then(|()| {
            attest_util::fault::point("commit.final-state-file-written");
            self.disk.record_state(&state).map_err(CommitError::Disk)
        });
        attest_util::fault::point("commit.final-state-header-written");
        let value = result.map_err(CommitError::Backend)?;
        persisted?;
        Ok(value)
    }

    /// Convenience for the two paths: takes the lock on a blocking thread.
    pub(crate) async fn try_lock(
        self: &Arc<Self>,
        holder: LockHolder,
        cluster_id: [u8; 32],
    ) -> Result<(), crate::life::lock::LockError> {
        let lock = Arc::clone(&self.lock);
        tokio::task::spawn_blocking(move || lock.try_lock(holder, &cluster_id))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }
}
