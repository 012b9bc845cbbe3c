//! # attest-bootstrapper
//!
//! The bootstrapper (`docs/ARCHITECTURE.md`, "Bootstrapper"): runs on every new node and turns it into either the first
//! control-plane node of a new cluster (init) or a member of an existing one (join).
//!
//! **May depend on:** `attest-grpc`, `attest-atls`, `attest-attester` (TPM, issuer, PCR 15), `attest-keyservice`
//! (the derivations), `attest-util`. **Must not depend on:** the join service or the CLI. The
//! `attest-bootstrapper` command ([`cmd`]; `src/main.rs` only calls it) chooses the cluster backend and the
//! disk; the rest of the library never names the implementations of [`ClusterBackend`].
//!
//! ```text
//!                       start-up: PCR 15 + node state  (life::state::check_startup)
//!            ┌──────────────────────┼───────────────────────────────┐
//!   bootstrapped (same boot) → serve   fresh     rebooted → rejoin ∥ recovery (lifecycle)   inconsistent
//!   failed after the lock → reset        │                                                   → refuse, exit 5
//!                                   ▼
//!       ┌──────────── init server (aTLS, node attests, :9000) ─┐  ┌── join client (aTLS to the join service) ──┐
//!       │ init.API/Init: secret, request checks, key derivation│  │ ticket ← IssueJoinTicket, back-off retries │
//!       └──────────────────────────┬───────────────────────────┘  └──────────────────┬─────────────────────────┘
//!                                  └──────────► NodeLock::try_lock ◄─────────────────┘   one-way, PCR 15
//!                                                       │ winner
//!                                     Node::commit: disk key → state → kubeadm (or dry run)
//!                                                       │
//!                                  Outcome (init: streamed to the client; join: logged) → the process exits
//! ```
//!
//! The files sit in folders by concern — `cmd/` (the command), `life/` (the node's life: lock, state, reboot),
//! `disk/`, `cluster/` (the cluster backends), `join/` (the join client and its trust in the join service),
//! `serve/` (the node's endpoints), `metadata/` —, each folder a module. Public are the modules
//! whose items tests, the hardware tests, other crates and node-image builders use; the rest is crate-private
//! and its public types are re-exported below.
//!
//! | module | file | concept |
//! |---|---|---|
//! | [`life::lock`] | `life/lock.rs` | the one-way node lock, persisted by extending the variant's lock register (PCR 15, or a TD's RTMR3) with the cluster id |
//! | `life::state` | `life/state.rs` | node state (role, salt, cluster id, disk UUID, phase), atomic JSON, the start-up table |
//! | `life::node` | `life/node.rs` | the shared node and the steps after the lock |
//! | [`life::lifecycle`], [`life::rejoin`], `life::recover` | `life/` | after a reboot: rejoin ticket or recovery endpoint, disk reopen, PCR 15, restart; reset of a node marked for it |
//! | [`disk`], [`disk::luks`] | `disk/mod.rs`, `disk/luks.rs` | [`DiskSetup`]: LUKS2 via cryptsetup (key on stdin, integrity where available, node state in a header token), header-only, or a 0600 key file |
//! | `cluster::backend`, [`cluster::kubeadm`], [`cluster::dryrun`], [`cluster::pki`] | `cluster/` | [`ClusterBackend`]: real kubeadm, or a dry run that creates kubeadm's PKI |
//! | [`cluster::process`] | `cluster/process.rs` | running a command with its output streamed line by line |
//! | `cluster::files` | `cluster/files.rs` | writing ticket files under checked names |
//! | [`join`] | `join/mod.rs` | the join client with back-off |
//! | [`join::ticket`] | `join/ticket.rs` | kubelet key/CSR and join ticket checks |
//! | `join::server_trust` | `join/server_trust.rs` | verifying the join service before a ticket is believed (mutual aTLS, credential activation, cluster binding) |
//! | `join::registration` | `join/registration.rs` | the pre-join AK registration step |
//! | [`join::endpoints`] | `join/endpoints.rs` | join endpoints (flags, file, a metadata source) with failover |
//! | [`metadata`] | `metadata/` | join endpoints from AWS IMDSv2, the GCP metadata server or Azure IMDS |
//! | `serve::init`, `serve::request` | `serve/` | the `init.API` service; init secret hash and InitRequest checks |
//! | [`serve::verifysvc`] | `serve/verifysvc.rs` | the verify service (gRPC `verify.API`, HTTP `/?nonce=`) |
//! | [`serve::endpoint_limits`], `serve::node_metrics` | `serve/` | fair-admission limits of the node's endpoints (init, recovery, verify, `/metrics`) and their export |
//! | [`cmd`], `cmd::exit` | `cmd/` | the `attest-bootstrapper` command and its exit statuses |
//! | [`atomic`] | `attest_util::fs` | atomic file writes |
//!
//! # After bootstrapping
//!
//! The init server and the join client exist only until the node is bootstrapped; the process then keeps
//! serving the node's attestation (the verify service, [`serve::verifysvc`]) until it is stopped: a systemd
//! `Type=simple` unit (the process does not notify systemd of readiness). A restarted bootstrapper in the same boot only serves. After a reboot (PCR 15 = 0,
//! the node state says bootstrapped) it gets its disk key back through a rejoin ticket or the recovery
//! endpoint and re-extends PCR 15 ([`life::lifecycle`]); a node whose bootstrap failed after the lock is reset
//! at its next boot. The table is in `life::state` ([`Startup`]).
//!
//! No secret (master secret, measurement secret, disk key, init secret, bootstrap token) is ever logged or put
//! into an error or status message; they live in zeroizing buffers.

#![forbid(unsafe_code)]

pub use attest_util::fs as atomic;

pub mod cluster;
pub mod cmd;
pub mod disk;
pub mod join;
pub mod life;
pub mod metadata;
pub mod serve;
#[cfg(test)]
mod tests;

pub use cluster::backend::{BackendError, ClusterBackend, InitOutput, InitParams, JoinParams};
pub use cluster::files::{FileNameError, JoinFilesError};
pub use disk::luks::LuksDisk;
pub use disk::{DiskSetup, KeyFileDisk};
pub use join::endpoints::AtlsTicketSource;
pub use join::server_trust::{JoinServiceTrust, ServerProof, ServerTrustError};
pub use join::{AttemptError, BoxFuture, JoinClient, JoinConfig, JoinError, PreJoin, PreJoinError, TicketSource};
pub use life::lock::{BOOTSTRAP_PCR, LockError, LockHolder, MemoryPcr, NodeLock, PcrBackend};
pub use life::node::{CommitError, Committed, Node, NodeConfig, Outcome};
pub use life::recover::DEFAULT_RECOVER_PORT;
pub use life::state::{NodeState, Phase, Role, Startup, StartupError, StateError, StateStore};
pub use serve::init::{DEFAULT_INIT_PORT, InitService};
pub use serve::node_metrics::NodeMetrics;
pub use serve::request::{InitSecretHash, InitSecretHashError};

use std::net::SocketAddr;
use std::sync::Arc;

use attest_atls::{AtlsAcceptor, AttestationIssuer};
use attest_grpc::{Router, Server};

/// Serves `init.API` for `node` over aTLS on `listener`, the node attesting with `issuer`, plus
/// `attest.v1.CredentialActivation` when `activation` is given (so `attest init` can register the node's AK
/// by pulling a credential activation over the same attested connection). Returns the server (for
/// [`Server::shutdown`]) and the local address.
pub fn serve_init(
    node: Arc<Node>,
    secret_hash: InitSecretHash,
    issuer: Arc<dyn AttestationIssuer>,
    activation: Option<Arc<attest_attester::registration::ActivationService>>,
    listener: tokio::net::TcpListener,
) -> Result<(Server, SocketAddr), ServeError> {
    let mut router = Router::new();
    let metrics = Arc::clone(node.metrics());
    router.add_service(Arc::new(InitService::new(node, secret_hash)));
    if let Some(a) = activation {
        router.add_service(a);
    }
    let server = Server::new(router, serve::endpoint_limits::operator_server_config());
    let acceptor = Arc::new(
        AtlsAcceptor::new(Some(issuer), None)
            .map_err(ServeError::Atls)?
            .with_refusals(Arc::clone(metrics.handshake_refusals())),
    );
    let addr = attest_atls::grpc::serve(&server, listener, acceptor).map_err(ServeError::Io)?;
    let stats = server.clone();
    metrics.add("init", Box::new(move || stats.admission_stats()));
    Ok((server, addr))
}

/// Why the init server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The aTLS acceptor could not be built.
    Atls(attest_atls::Error),
    /// The listener failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Atls(e) => write!(f, "aTLS acceptor: {e}"),
            ServeError::Io(e) => write!(f, "listener: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Atls(e) => Some(e),
            Self::Io(e) => Some(e),
        }
    }
}
