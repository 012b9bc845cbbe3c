//! A node's whole life at start-up: which row of the start-up table it is in ([`Node::startup`]), the reset of a
//! node marked for it ([`reset`]), and the rebooted node's wait for its keys ([`rejoin`]: rejoin client and
//! recovery server racing, as the init server and the join client race on a fresh node).
//!
//! ```text
//!  start ─▶ Node::startup(): PCR 15 + node state (disk header, else state file)
//!    Fresh          ─▶ init server + join client (crate::cmd)
//!    Reset(state)   ─▶ reset(): disk key and header state gone, state file removed ─▶ Fresh
//!    Rejoin(state)  ─▶ rejoin(): recovery server ∥ rejoin client ─▶ Rejoined | RejoinError (stays down)
//!    Bootstrapped   ─▶ nothing to do (same boot)
//!  afterwards: the verify service runs until the process is stopped (crate::serve::verifysvc)
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use crate::atomic::FileError;
use crate::disk::DiskError;
use crate::join::JoinConfig;
use crate::join::endpoints::FailoverSource;
use crate::life::node::Node;
use crate::life::recover::serve_recover;
use crate::life::rejoin::{RejoinError, Rejoined, Rejoiner, run_rejoin_client};
use crate::life::state::NodeState;
use attest_atls::AttestationIssuer;

/// Resets a node whose bootstrap failed after the lock (and that rebooted since): the disk's keyslots and
/// header state, then the state file. Afterwards the node starts as a fresh one. Returns log lines.
pub fn reset(node: &Node, state: &NodeState) -> Result<Vec<String>, ResetError> {
    let mut lines = vec![format!(
        "node was marked for reset (cluster {}, phase {:?}): resetting",
        hex::encode(state.cluster_id),
        state.phase
    )];
    lines.push(node.disk().reset().map_err(ResetError::Disk)?);
    attest_util::fault::point("reset.disk-reset");
    match std::fs::remove_file(node.store().path()) {
        Ok(()) => lines.push(format!("removed {}", node.store().path().display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ResetError::State(FileError { path: node.store().path().to_owned(), source }));
        }
    }
    attest_util::fault::point("reset.state-removed");
    Ok(lines)
}

/// Why [`reset`] stopped: the disk kept its keys, or the state file could not be removed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ResetError {
    /// The disk's keyslots and header state could not be erased.
    Disk(DiskError),
    /// The state file could not be removed.
    State(FileError),
}

impl std::fmt::Display for ResetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Disk(e) => write!(f, "resetting the state disk: {e}"),
            Self::State(e) => write!(f, "removing {e}"),
        }
    }
}

impl std::error::Error for ResetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Disk(e) => Some(e),
            Self::State(e) => Some(e),
        }
    }
}

/// What [`rejoin`] serves while it waits.
#[derive(Debug)]
pub struct RejoinSetup {
    /// The join endpoints, with failover (`None`: recovery only).
    pub source: Option<Arc<FailoverSource>>,
    /// The recovery endpoint's listener (`None`: rejoin only).
    pub recover: Option<tokio::net::TcpListener>,
    /// Back-off and refusal budget of the rejoin client.
    pub config: JoinConfig,
}

/// Waits for the keys of a rebooted node (module docs). `on_recover_addr` is told the recovery endpoint's
/// address once it listens.
pub async fn rejoin(
    node: Arc<Node>,
    state: NodeState,
    issuer: Arc<dyn AttestationIssuer>,
    setup: RejoinSetup,
    on_recover_addr: impl FnOnce(SocketAddr),
) -> Result<Rejoined, RejoinError> {
    let rejoiner = Arc::new(Rejoiner::new(node, state));
    let mut done = rejoiner.subscribe();
    let server = match setup.recover {
        Some(listener) => match serve_recover(Arc::clone(&rejoiner), issuer, listener) {
            Ok((server, addr)) => {
                tracing::info!(%addr, "rejoin: recovery endpoint listening (aTLS, this node attests)");
                on_recover_addr(addr);
                Some(server)
            }
            Err(e) => {
                tracing::error!(error = %e, "rejoin: cannot serve the recovery endpoint");
                None
            }
        },
        None => None,
    };
    let result = match setup.source {
        Some(source) => {
            let client = run_rejoin_client(Arc::clone(&rejoiner), source, setup.config);
            tokio::pin!(client);
            tokio::select! {
                r = &mut client => match r {
                    // The recovery path finished while the client was asking.
                    Err(RejoinError::AlreadyDone) => Ok(rejoiner.subscribe().borrow().clone().expect("done")),
                    other => other,
                },
                r = done.wait_for(Option::is_some) => Ok(r.expect("sender alive").clone().expect("some")),
            }
        }
        None => Ok(done.wait_for(Option::is_some).await.expect("sender alive").clone().expect("some")),
    };
    if let Some(server) = server {
        // Let the Recover call that finished the node return its answer.
        let _ = server.shutdown(std::time::Duration::from_secs(5)).await;
    }
    if let Err(e) = &result {
        rejoiner.record_refusal(&e.to_string());
    }
    result
}
