//! The recovery endpoint: `recover.API/Recover` on a rebooted node that cannot reach any join service (all
//! control-plane nodes down), served over aTLS where **this node attests**
//! (`AtlsAcceptor::new(Some(issuer), None)`, port [`DEFAULT_RECOVER_PORT`] as in Constellation). The operator's
//! `attest recover` verifies that attestation against the measurements before it sends anything.
//!
//! ```text
//!  Recover{kms_uri, storage_uri}
//!    │ a field too long, or kms_uri not kms://cluster-kms?key=…&salt=… ──▶ INVALID_ARGUMENT (nothing kept)
//!    │ master secret → state-disk key = HKDF(master, salt, "key-" + disk UUID),
//!    │                 measurement secret = HKDF(master, salt, "key-measurementSecret")
//!    ▼ Rejoiner::finish (crate::life::rejoin): cluster id check, disk reopen, PCR 15, restart
//!  ok ──▶ RecoverResponse{}        keys of another cluster ──▶ PERMISSION_DENIED (the node keeps waiting)
//!  already rejoined ──▶ FAILED_PRECONDITION     disk / PCR / restart failed ──▶ INTERNAL with the reason
//! ```
//!
//! # Why the master secret, not the derived key
//!
//! As in Constellation, the operator sends the KMS URI (the master secret and its salt). The node needs two
//! secrets, the state-disk key *and* the measurement secret: the latter gives the cluster id, which is how
//! the node checks — before it touches its disk — that the secret is its cluster's, and what it re-extends
//! into PCR 15. Sending only the disk key would leave the node unable to do either; sending both derived
//! values would make the operator re-implement the key service's derivations and the disk UUID lookup. The
//! master secret goes only to a node that proved, over this very connection, that it runs the expected
//! measurements — the same trust the control plane that holds the master secret has — and is wiped from
//! memory as soon as the two keys are derived.

use std::net::SocketAddr;
use std::sync::Arc;

use attest_proto::paths;
use attest_proto::recover::{RecoverMessage, RecoverResponse};
use zeroize::Zeroize;

use crate::life::rejoin::{KeySource, NodeKeys, RejoinError, Rejoiner};
use crate::serve::request::{MAX_KMS_URI_LENGTH, MAX_STORAGE_URI_LENGTH};
use attest_atls::{AtlsAcceptor, AttestationIssuer};
use attest_grpc::{Request, Response, Router, Server, Service, Status};
use attest_keys::{MasterSecret, measurement_secret, state_disk_key};

/// Constellation's recovery port.
pub const DEFAULT_RECOVER_PORT: u16 = 9999;

/// `recover.API` on a rebooted node.
#[derive(Debug)]
pub(crate) struct RecoverService {
    rejoiner: Arc<Rejoiner>,
}

impl RecoverService {
    /// The service finishing `rejoiner`'s node.
    pub(crate) fn new(rejoiner: Arc<Rejoiner>) -> RecoverService {
        RecoverService { rejoiner }
    }

    /// `recover.API/Recover` (module docs).
    pub(crate) async fn recover(&self, request: Request<RecoverMessage>) -> Result<Response<RecoverResponse>, Status> {
        let mut message = request.message;
        let keys = self.keys(&message);
        message.kms_uri.zeroize();
        let keys = keys?;
        match self.rejoiner.finish(keys, KeySource::Recovery).await {
            Ok(r) => {
                tracing::info!(cluster_id = %hex::encode(r.cluster_id), "recover: node recovered with the operator's master secret");
                Ok(Response::new(RecoverResponse {}))
            }
            Err(e @ RejoinError::WrongCluster { .. }) => {
                tracing::warn!(error = %e, "recover: refused a master secret of another cluster");
                Err(Status::permission_denied(e.to_string()))
            }
            Err(e @ RejoinError::AlreadyDone) => Err(Status::failed_precondition(e.to_string())),
            Err(e) => {
                tracing::error!(error = %e, "recover: the keys were right but the node could not recover");
                Err(Status::internal(e.to_string()))
            }
        }
    }

    #[allow(clippy::result_large_err)] // gRPC's Status, as every handler returns it
    fn keys(&self, m: &RecoverMessage) -> Result<NodeKeys, Status> {
        if m.kms_uri.len() > MAX_KMS_URI_LENGTH {
            return Err(Status::invalid_argument(format!("kms_uri is longer than {MAX_KMS_URI_LENGTH} bytes")));
        }
        if m.storage_uri.len() > MAX_STORAGE_URI_LENGTH {
            return Err(Status::invalid_argument(format!("storage_uri is longer than {MAX_STORAGE_URI_LENGTH} bytes")));
        }
        // The parser's errors name the rule, never the value.
        let master =
            MasterSecret::from_kms_uri(&m.kms_uri).map_err(|e| Status::invalid_argument(format!("kms_uri: {e}")))?;
        let disk_uuid = &self.rejoiner.state().disk_uuid;
        let disk = state_disk_key(&master, disk_uuid).map_err(|e| Status::internal(format!("state-disk key: {e}")))?;
        Ok(NodeKeys { state_disk_key: disk, measurement_secret: measurement_secret(&master) })
    }
}

impl Service for RecoverService {
    fn register(self: Arc<Self>, router: &mut Router) {
        router.unary(paths::RECOVER_RECOVER, move |request: Request<RecoverMessage>| {
            let this = Arc::clone(&self);
            async move { this.recover(request).await }
        });
    }
}

/// Serves `recover.API` for `rejoiner` over aTLS on `listener`, the node attesting with `issuer`. Returns the
/// server (for [`Server::shutdown`]) and the local address.
pub(crate) fn serve_recover(
    rejoiner: Arc<Rejoiner>,
    issuer: Arc<dyn AttestationIssuer>,
    listener: tokio::net::TcpListener,
) -> Result<(Server, SocketAddr), crate::ServeError> {
    let metrics = Arc::clone(rejoiner.node().metrics());
    let mut router = Router::new();
    router.add_service(Arc::new(RecoverService::new(rejoiner)));
    let server = Server::new(router, crate::serve::endpoint_limits::operator_server_config());
    let stats = server.clone();
    metrics.add("recovery", Box::new(move || stats.admission_stats()));
    let acceptor = Arc::new(
        AtlsAcceptor::new(Some(issuer), None)
            .map_err(crate::ServeError::Atls)?
            .with_refusals(Arc::clone(metrics.handshake_refusals())),
    );
    let addr = attest_atls::grpc::serve(&server, listener, acceptor).map_err(crate::ServeError::Io)?;
    Ok((server, addr))
}
