//! The init server: `init.API/Init` (server-streaming), served over aTLS where this node attests
//! (`AtlsAcceptor::new(Some(issuer), None)`, port [`DEFAULT_INIT_PORT`]).
//!
//! ```text
//!  Init(request)
//!    │ init secret ≠ stored hash ───────────────────────────▶ PERMISSION_DENIED   (node untouched)
//!    │ a field breaks its rule ─────────────────────────────▶ INVALID_ARGUMENT    (node untouched)
//!    │ master secret ← kms_uri; measurement secret; cluster id = HKDF(ms, salt, "key-clusterID");
//!    │ owner id = HKDF(ms, salt, "key-ownerID"); disk UUID; state-disk key = state_disk_key(master, UUID)
//!    │ NodeLock::try_lock(Init, cluster id)
//!    │   └─ lost ───────────────────────────────────────────▶ FAILED_PRECONDITION "node already joining/joined"
//!    ▼ ═══ point of no return ═══ (the response stream starts; the work continues if the client goes away)
//!  log … log (disk, state, every initializer output line)
//!  init_success{kubeconfig, owner_id, cluster_id}   or   init_failure{error}
//! ```
//!
//! Errors before the lock are gRPC statuses; after it they are `init_failure` messages, because the node has
//! changed state and the client should see the log that led there. The init work runs in a task of its
//! own, not in the call: a client that disconnects (or a deadline that passes) does not cancel a half-run
//! `kubeadm init`. Log lines are queued without blocking the initializer, at most [`MAX_LOG_LINES`] per init
//! (later lines are counted and the count reported).
//!
//! Secrets (init secret, master secret, measurement secret, disk key) stay in zeroizing buffers and appear
//! in no log line, status or stream message; the kubeconfig is sent to the client only.

use std::sync::Arc;

use attest_proto::init::{
    InitFailureResponse, InitRequest, InitResponse, InitSuccessResponse, LogResponseType, init_response::Kind,
};
use attest_proto::paths;
use tokio::sync::mpsc;
use zeroize::Zeroizing;

use crate::cluster::backend::InitParams;
use crate::life::lock::{LockError, LockHolder};
use crate::life::node::{Committed, Node, Outcome};
use crate::life::state::Role;
use crate::serve::request::{InitSecretHash, RequestError, validate};
use attest_grpc::{Request, Response, Router, Service, Status, Streaming};
use attest_keys::{hkdf_sha256, measurement_secret, state_disk_key};

/// The init server's default port.
pub const DEFAULT_INIT_PORT: u16 = 9000;
/// The HKDF info of the owner id (IKM = measurement secret, salt = measurement salt).
pub(crate) const OWNER_ID_INFO: &str = "key-ownerID";
/// Length of the owner id, in bytes.
pub(crate) const OWNER_ID_LENGTH: usize = 32;
/// Messages buffered between the init task and the response stream.
pub(crate) const INIT_STREAM_BUFFER: usize = 64;
/// Most log lines streamed per init.
pub(crate) const MAX_LOG_LINES: usize = 10_000;
/// The status message of a lost lock race (as Constellation words it).
pub(crate) const ALREADY_LOCKED_MESSAGE: &str = "node already joining/joined";

/// The owner id: HKDF-SHA256(measurement secret, measurement salt, "key-ownerID"), 32 bytes.
pub(crate) fn owner_id(measurement_secret: &[u8], measurement_salt: &[u8]) -> [u8; OWNER_ID_LENGTH] {
    let okm = hkdf_sha256(measurement_secret, measurement_salt, OWNER_ID_INFO.as_bytes(), OWNER_ID_LENGTH)
        .expect("32 bytes is within the HKDF-SHA256 limit");
    let mut out = [0u8; OWNER_ID_LENGTH];
    out.copy_from_slice(&okm);
    out
}

/// `init.API` on a node.
#[derive(Debug)]
pub struct InitService {
    node: Arc<Node>,
    secret_hash: InitSecretHash,
}

fn log_message(line: &str) -> InitResponse {
    InitResponse { kind: Some(Kind::Log(LogResponseType { log: line.as_bytes().to_vec() })) }
}

impl InitService {
    /// The service for `node`, accepting the init secret whose SHA-256 is `secret_hash`.
    pub fn new(node: Arc<Node>, secret_hash: InitSecretHash) -> InitService {
        InitService { node, secret_hash }
    }

    /// `init.API/Init` (see the module docs).
    pub async fn init(&self, request: Request<InitRequest>) -> Result<Response<Streaming<InitResponse>>, Status> {
        let v = match validate(&request.message, &self.secret_hash) {
            Ok(v) => v,
            Err(RequestError::WrongInitSecret) => {
                tracing::warn!("init: refused, wrong init secret");
                return Err(Status::permission_denied("init secret does not match"));
            }
            Err(e) => {
                tracing::info!(error = %e, "init: refused, invalid request");
                return Err(Status::invalid_argument(e.to_string()));
            }
        };
        // Dropping the request wipes nothing by itself: wipe its secret fields now.
        let mut message = request.message;
        zeroize::Zeroize::zeroize(&mut message.init_secret);
        zeroize::Zeroize::zeroize(&mut message.kms_uri);
        drop(message);

        let ms = measurement_secret(&v.master_secret);
        let cluster_id = attest_keys::cluster_id(&ms, &v.measurement_salt);
        let owner = owner_id(&ms, &v.measurement_salt);
        drop(ms);
        let disk = Arc::clone(self.node.disk());
        let disk_uuid = tokio::task::spawn_blocking(move || disk.disk_uuid())
            .await
            .map_err(|_| Status::internal("disk UUID task failed"))?
            .map_err(|e| Status::internal(format!("disk UUID: {e}")))?;
        let disk_key = state_disk_key(&v.master_secret, &disk_uuid)
            .map_err(|e| Status::internal(format!("state-disk key: {e}")))?;
        drop(v.master_secret);

        match self.node.try_lock(LockHolder::Init, cluster_id).await {
            Ok(()) => {}
            Err(e @ LockError::AlreadyLocked { .. }) => {
                tracing::info!(reason = %e, "init: refused, node already locked");
                return Err(Status::failed_precondition(ALREADY_LOCKED_MESSAGE));
            }
            Err(e @ LockError::Pcr(_)) => {
                tracing::error!(error = %e, "init: the lock's PCR extend failed; the node stays locked");
                self.node.publish(Outcome::Failed { holder: LockHolder::Init, error: e.to_string() });
                return Err(Status::internal(e.to_string()));
            }
        }
        tracing::info!(cluster_id = %hex::encode(cluster_id), disk_uuid = %disk_uuid, "init: node locked");

        let config = self.node.config();
        let params = InitParams {
            node_name: config.node_name.clone(),
            cluster_name: v.cluster_name,
            kubernetes_version: v.kubernetes_version,
            apiserver_cert_sans: v.apiserver_cert_sans,
            service_cidr: v.service_cidr,
            api_server_endpoint: config.api_server_endpoint.clone(),
        };
        let work = InitWork {
            node: Arc::clone(&self.node),
            params,
            salt: v.measurement_salt,
            cluster_id,
            owner_id: owner,
            disk_uuid,
            disk_key,
            component_count: v.component_count,
        };
        let (tx, stream) = Streaming::channel(INIT_STREAM_BUFFER);
        tokio::spawn(work.run(tx));
        Ok(Response::new(stream))
    }
}

/// Everything the init task needs after the lock.
struct InitWork {
    node: Arc<Node>,
    params: InitParams,
    salt: [u8; 32],
    cluster_id: [u8; 32],
    owner_id: [u8; 32],
    disk_uuid: String,
    disk_key: Zeroizing<Vec<u8>>,
    component_count: usize,
}

impl InitWork {
    async fn run(self, tx: mpsc::Sender<Result<InitResponse, Status>>) {
        let (line_tx, mut line_rx) = mpsc::unbounded_channel::<String>();
        let forward_tx = tx.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(line) = line_rx.recv().await {
                // A client that went away does not stop the init; its lines are dropped.
                let _ = forward_tx.send(Ok(log_message(&line))).await;
            }
        });
        let InitWork { node, params, salt, cluster_id, owner_id, disk_uuid, disk_key, component_count } = self;
        let (node_name, disk_uuid_out) = (params.node_name.clone(), disk_uuid.clone());
        let worker_node = Arc::clone(&node);
        let result = tokio::task::spawn_blocking(move || {
            let mut sent = 0usize;
            let mut dropped = 0usize;
            let mut log = |line: &str| {
                tracing::info!(target: "attest::bootstrapper::init", "{line}");
                if sent < MAX_LOG_LINES {
                    sent += 1;
                    let _ = line_tx.send(line.to_owned());
                } else {
                    dropped += 1;
                }
            };
            log(&format!("node locked for cluster {}", hex::encode(cluster_id)));
            if component_count > 0 {
                log(&format!("{component_count} Kubernetes components listed; not installed (the image carries them)"));
            }
            let committed = Committed {
                holder: LockHolder::Init,
                role: Role::ControlPlane,
                measurement_salt: &salt,
                cluster_id: &cluster_id,
                disk_uuid: &disk_uuid,
            };
            let out = worker_node.commit(committed, &disk_key, &mut log, |backend, log| {
                log(&format!("initializing the cluster ({})", backend.name()));
                backend.init(&params, log)
            });
            if dropped > 0 {
                let _ = line_tx.send(format!("{dropped} further log lines not streamed"));
            }
            out
        })
        .await;
        let _ = forwarder.await;
        let (message, outcome) = match result {
            Ok(Ok(output)) => {
                tracing::info!(cluster_id = %hex::encode(cluster_id), "init: cluster initialized");
                (
                    Kind::InitSuccess(InitSuccessResponse {
                        kubeconfig: output.kubeconfig.to_vec(),
                        owner_id: owner_id.to_vec(),
                        cluster_id: cluster_id.to_vec(),
                        node_name,
                        disk_uuid: disk_uuid_out,
                    }),
                    Outcome::Initialized { cluster_id },
                )
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "init: failed after the lock");
                (
                    Kind::InitFailure(InitFailureResponse { error: e.to_string() }),
                    Outcome::Failed { holder: LockHolder::Init, error: e.to_string() },
                )
            }
            Err(join_error) => {
                let error = format!("init task failed: {join_error}");
                tracing::error!(%error, "init: failed after the lock");
                (
                    Kind::InitFailure(InitFailureResponse { error: error.clone() }),
                    Outcome::Failed { holder: LockHolder::Init, error },
                )
            }
        };
        let _ = tx.send(Ok(InitResponse { kind: Some(message) })).await;
        drop(tx);
        node.publish(outcome);
    }
}

impl Service for InitService {
    fn register(self: Arc<Self>, router: &mut Router) {
        router.server_streaming(paths::INIT_INIT, move |request: Request<InitRequest>| {
            let this = Arc::clone(&self);
            async move { this.init(request).await }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_id_is_hkdf_with_its_own_info() {
        let ms = [7u8; 32];
        let salt = [9u8; 32];
        let expected = hkdf_sha256(&ms, &salt, b"key-ownerID", 32).unwrap();
        assert_eq!(owner_id(&ms, &salt).as_slice(), expected.as_slice());
        assert_ne!(owner_id(&ms, &salt), attest_keys::cluster_id(&ms, &salt));
    }
}
