//! # attest-joinservice
//!
//! The join service: `join.API/IssueJoinTicket` and `join.API/IssueRejoinTicket` (`docs/ARCHITECTURE.md`, "Join service") for nodes
//! that proved their state over aTLS.
//!
//! **May depend on:** `attest-grpc`, `attest-atls`, `attest-registration` (the AK registry of joining nodes),
//! `attest-keyservice` (key ids, lengths, the mutual-TLS client), `attest-k8s`, `attest-engine`,
//! `attest-measurements`, `attest-trust` (signed measurements, CRLs, launch pinning, waivers), `attest-kds` (AMD CRLs; Intel PCS
//! collateral for the TDX variants, [`tdx`]),
//! `attest-attester` (its own TPM issuer: the join service attests itself to joining nodes), `attest-util`.
//! **Must not depend on:** the bootstrapper (its tests use the bootstrapper's CSR maker as a
//! dev-dependency) or the CLI. The `join-service` command ([`cmd`]) wires it up; the binary's `main` only
//! calls it.
//!
//! # Where the trust comes from
//!
//! The service is served with [`attest_atls::grpc::serve`] and a **mutual** acceptor
//! (`AtlsAcceptor::new(Some(issuer), Some(verifier))`): a node that cannot present a valid attestation for the
//! current measurements never completes the TLS handshake, so it never reaches a handler; and the node, in
//! turn, verifies this service's own attestation (the TPM of the control-plane node it runs on) against the
//! same measurements before it accepts a ticket. The verifier's validators come from
//! [`validators::Validators`], which swaps them atomically when the (signed) measurements file changes. A
//! handler additionally requires the connection's verified [`PeerAttestation`]; a call without one (served
//! over plain h2c by mistake) is `UNAUTHENTICATED`. The keys come from the key service over mutual TLS
//! ([`keys`]).
//!
//! # What an attested node may have: its own
//!
//! The attestation proves what a node runs, not who it is to the cluster: a node whose workload an attacker
//! controls still attests. So nothing a node receives is chosen by its request alone ([`identity`]):
//!
//! - the **node**: the identity its verified evidence names ([`PeerAttestation::identity`], from the engine's
//!   variant table: the registered AK on `qemu-vtpm`, Azure's VM id, the report-bound AK on AWS/GCP SNP, the
//!   GCE instance, the TDX platform);
//! - the **disk key**: the disk UUID is bound to the identity that first joined with it; a rejoin gets the
//!   key only for a disk of its own identity (the key's derivation, HKDF "key-" + UUID, is unchanged, so
//!   recovery from the master secret and existing clusters' keys stay as they were);
//! - the **node name**: the kubelet certificate's name is bound to the identity that first joined under it
//!   (the init node's by `attest init`), and a per-VM identity holds one name; the CSR's key must be the key
//!   the node proved possession of in the aTLS handshake (its certificate's key, [`PeerAttestation::spki_sha256`]);
//! - the **role**: control-plane files only for a control-plane member (the init node) or an identity with an
//!   operator-signed, one-time admission for this name ([`attest_trust::admission`]) — never for the flag in
//!   the request alone.
//!
//! The bindings live in the cluster state ([`attest_trust::membership`], `--cluster-state`), written before
//! any secret leaves.
//!
//! # A join
//!
//! ```text
//!  check request ─► disk_uuid (UUID), CSR (signature, O/CN, node name, key), host key + principals
//!        │ INVALID_ARGUMENT
//!        ▼
//!  the node's identity; CSR key = the aTLS key; name, disk, role bound to the identity (cluster state)
//!        │ PERMISSION_DENIED
//!        ▼
//!  ┌─ in parallel ──────────────────────────────────────────────────────┐
//!  │ kms GetDataKey(disk_uuid, 32)   kms GetDataKey("measurementSecret", 32)
//!  │ kms GetDataKey("ca_emergency_ssh", 32)   bootstrap token (Kubernetes API or dry run)
//!  │ (the two cluster-wide keys come from a copy at most CLUSTER_KEY_TTL old)
//!  └─────────────────────────────────────────────────────────────────────┘
//!        │ any failed ─► delete the token if it was created ─► UNAVAILABLE / DEADLINE_EXCEEDED / INTERNAL
//!        ▼
//!  sign kubelet cert, control-plane files (control plane only), SSH host certificate
//!        │ failed ─► delete the token
//!        ▼
//!  ticket (the token is now the node's; it expires after the configured TTL)
//! ```
//!
//! The token is created concurrently with the key requests (one round trip instead of two), so a failure
//! can leave a created token behind; a guard owns it until the ticket is complete and deletes it on every
//! failure path — also when the call is cancelled (the guard's `Drop` spawns the deletion). The creation
//! itself runs in a task of its own that the call cannot cancel: a call dropped while the Secret is being
//! written (the client reset the stream or disconnected) would otherwise leave a token that no guard knows
//! of. The task hands the token over already guarded, so a token whose call is gone by then is deleted too
//! (found by `benches/tests/join_hostile.rs`: joins cut off mid-call left 8 of 11 tokens behind). Nothing is
//! half-issued: either the node gets the whole ticket or no token survives (except when deleting fails too,
//! which is logged; the token's expiration bounds it).
//!
//! # Logging
//!
//! Each outcome is one structured event: node name, variant and its OID, the AK digest (SHA-256 of the AK's
//! TPMT_PUBLIC), token id, outcome and refusal reason. Keys, the measurement secret, the token secret and
//! certificates' private material are never logged (a test scans captured logs for them).
//!
//! # Fields of a ticket (`docs/ARCHITECTURE.md`, "Protos")
//!
//! | field | value |
//! |---|---|
//! | 1 `state_disk_key` | kms `GetDataKey(disk_uuid, 32)` |
//! | 2 `measurement_salt` | the configured salt |
//! | 3 `measurement_secret` | kms `GetDataKey("measurementSecret", 32)` (a copy at most a minute old: [`keys`]) |
//! | 4 `kubelet_cert` | the CSR signed by the cluster CA (DER) |
//! | 5 `api_server_endpoint` | configured `host:port` |
//! | 6 `token` | `<id>.<secret>` of a fresh bootstrap token |
//! | 7 `discovery_token_ca_cert_hash` | `sha256:` + hex SHA-256 of the CA's SubjectPublicKeyInfo |
//! | 8 `control_plane_files` | the eight kubeadm PKI files, control-plane joins only |
//! | 9, 10 | Kubernetes version and components from the configuration file |
//! | 11 `authorized_ca_public_key` | the SSH CA's public key ([`ssh`]) |
//! | 12 `host_certificate` | OpenSSH host certificate for `host_public_key` (empty when none was sent) |

#![forbid(unsafe_code)]
// `Status` (≈160 bytes) travels inside the key service errors, as it is the error of every gRPC call (see
// `attest_grpc`); refusals are the slow path, and boxing would cost an allocation per refusal for nothing.
#![allow(clippy::result_large_err)]

pub mod cmd;
pub mod config;
pub mod error;
pub mod exit;
pub mod identity;
pub mod keys;
pub mod metrics;
pub use attest_keys::ssh;
/// TDX collateral (moved to `attest-trust`, which the bootstrapper shares).
pub use attest_trust::tdx;
pub mod validators;

use std::sync::Arc;
use std::time::{Duration, Instant};

use attest_proto::attest::v1::AttestationDocument;
use attest_proto::join::{
    ControlPlaneCertOrKey, IssueJoinTicketRequest, IssueJoinTicketResponse, IssueRejoinTicketRequest,
    IssueRejoinTicketResponse,
};
use attest_proto::paths;
use prost::Message as _;
use zeroize::Zeroizing;

use attest_atls::PeerAttestation;
use attest_grpc::{Request, Response, Router, Service, Status};
use attest_k8s::{BootstrapToken, ClusterCa, TokenIssuer};
use attest_keyservice::{MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH, STATE_DISK_KEY_LENGTH};
use attest_trust::Trust;
use attest_trust::membership::ClusterState;

pub use config::{ConfigError, KubernetesSettings, is_uuid, load_measurement_salt};
pub use error::JoinError;
pub use keys::{DEFAULT_KEY_SERVICE_TIMEOUT, KeyServiceClient, KeyServiceError};
pub use metrics::{Metrics, MetricsServer, RefusalReason};
pub use ssh::SshCa;
pub use validators::{DEFAULT_POLL_INTERVAL, MeasurementsError, ValidatorConfig, ValidatorSet, Validators};

/// Time allowed to delete a token after a failed join.
pub const TOKEN_CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What a ticket carries besides keys, token and certificates.
#[derive(Clone, Debug)]
pub struct TicketSettings {
    /// The measurement salt (returned as it is).
    pub measurement_salt: Zeroizing<Vec<u8>>,
    /// The API server endpoint (`host:port`) the node joins.
    pub api_server_endpoint: String,
    /// Kubernetes version and components.
    pub kubernetes: KubernetesSettings,
    /// Bootstrap token lifetime.
    pub token_ttl: Duration,
}

/// The join.API service.
#[derive(Debug)]
pub struct JoinService {
    keys: KeyServiceClient,
    tokens: Arc<dyn TokenIssuer>,
    ca: Arc<ClusterCa>,
    settings: TicketSettings,
    metrics: Arc<Metrics>,
    trust: Option<Arc<Trust>>,
    ssh_principal_domains: Vec<String>,
    ssh_ca: ssh::SshCaCache,
    membership: identity::Membership,
}

/// What the log says about the peer: never the document itself.
struct PeerFacts {
    variant: &'static str,
    oid: String,
    ak_digest: String,
    identity: String,
    /// The label of the measurement set that admitted the node (`-` when the sets are unlabelled).
    image: String,
}

impl PeerFacts {
    fn of(peer: &PeerAttestation) -> PeerFacts {
        let variant = attest_engine::variant::Variant::from_oid(&peer.oid).map_or("unknown", |v| v.name());
        let ak_digest = AttestationDocument::decode(&peer.document[..])
            .ok()
            .and_then(|d| d.tpm)
            .filter(|t| !t.ak_public.is_empty())
            .and_then(|t| attest_registration::ak_digest(&t.ak_public).ok())
            .map_or_else(|| "none".to_owned(), hex::encode);
        let identity = peer.identity.as_ref().map_or_else(|| "none".to_owned(), ToString::to_string);
        let image = peer.measurement_set.as_deref().unwrap_or("-").to_owned();
        PeerFacts { variant, oid: peer.oid.clone(), ak_digest, identity, image }
    }
}

/// Owns a created token until the ticket is complete; deletes it on failure or cancellation.
struct TokenGuard {
    issuer: Arc<dyn TokenIssuer>,
    id: Option<String>,
}

/// Creates a bootstrap token in a task of its own, so that cancelling the calling join cannot interrupt a
/// creation half-way (the Secret written, the caller gone). The token comes back guarded; if the caller has
/// gone by then, dropping the guarded token deletes it.
async fn create_guarded(
    issuer: &Arc<dyn TokenIssuer>,
    ttl: Duration,
) -> Result<(BootstrapToken, TokenGuard), JoinError> {
    let issuer = Arc::clone(issuer);
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let created = issuer.create(ttl).await.map(|token| {
            let guard = TokenGuard { issuer: Arc::clone(&issuer), id: Some(token.id().to_owned()) };
            (token, guard)
        });
        // A failed send hands the value back; dropping it (and its guard) deletes the token.
        drop(tx.send(created));
    });
    match rx.await {
        Ok(created) => created.map_err(JoinError::Token),
        Err(_) => Err(JoinError::Internal { reason: "the bootstrap token task ended without an answer".into() }),
    }
}

impl TokenGuard {
    /// The ticket is complete: the token stays.
    fn keep(mut self) {
        self.id = None;
    }

    /// The ticket failed: delete the token now.
    async fn revoke(mut self) {
        if let Some(id) = self.id.take() {
            delete_token(&*self.issuer, &id).await;
        }
    }
}

impl Drop for TokenGuard {
    fn drop(&mut self) {
        // Only reached armed when the call was cancelled mid-way (client gone, deadline): delete in the
        // background.
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let issuer = Arc::clone(&self.issuer);
            runtime.spawn(async move { delete_token(&*issuer, &id).await });
        }
    }
}

async fn delete_token(issuer: &dyn TokenIssuer, id: &str) {
    match tokio::time::timeout(TOKEN_CLEANUP_TIMEOUT, issuer.delete(id)).await {
        Ok(Ok(())) => tracing::info!(token_id = id, issuer = issuer.kind(), "bootstrap token of a failed join deleted"),
        Ok(Err(e)) => {
            tracing::error!(token_id = id, issuer = issuer.kind(), error = %e, "could not delete the bootstrap token of a failed join");
        }
        Err(_) => tracing::error!(
            token_id = id,
            issuer = issuer.kind(),
            "deleting the bootstrap token of a failed join timed out"
        ),
    }
}

impl JoinService {
    /// A join service.
    pub fn new(
        keys: KeyServiceClient,
        tokens: Arc<dyn TokenIssuer>,
        ca: Arc<ClusterCa>,
        settings: TicketSettings,
        metrics: Arc<Metrics>,
    ) -> JoinService {
        JoinService {
            keys,
            tokens,
            ca,
            settings,
            metrics,
            trust: None,
            ssh_principal_domains: Vec::new(),
            ssh_ca: ssh::SshCaCache::default(),
            membership: identity::Membership::new(Arc::new(ClusterState::in_memory())),
        }
    }

    /// Binds disks, names and roles to attested identities in `state` (the cluster state file; the default is
    /// an empty state in memory, which forgets everything at exit — for tests only).
    pub fn with_cluster_state(mut self, state: Arc<ClusterState>) -> JoinService {
        self.membership = identity::Membership { state, ..self.membership };
        self
    }

    /// Reads operator-signed control-plane admissions from `dir`, believing those signed by `key`.
    pub fn with_admissions(mut self, dir: std::path::PathBuf, key: attest_measurements::VerifyingKey) -> JoinService {
        self.membership.admissions = Some(identity::AdmissionSource { dir, key });
        self
    }

    /// DANGEROUS (migration of a cluster whose disks were never bound): a rejoin for a disk no node holds
    /// binds it to the asking node instead of being refused. Logged at every use.
    pub fn dangerously_adopt_unbound_disks(mut self) -> JoinService {
        self.membership.adopt_unbound_disks = true;
        self
    }

    /// The cluster state the service binds to.
    pub fn cluster_state(&self) -> &Arc<ClusterState> {
        &self.membership.state
    }

    /// Reports `trust` (measurements signature, launch pinning, revocation and every waiver) in each
    /// verdict's log line.
    pub fn with_trust(mut self, trust: Arc<Trust>) -> JoinService {
        self.trust = Some(trust);
        self
    }

    /// Lets a node claim `<node name>.<domain>` for each of `domains` as an SSH host certificate principal,
    /// besides its node name ([`ssh`]).
    pub fn with_ssh_principal_domains(mut self, domains: Vec<String>) -> JoinService {
        self.ssh_principal_domains = domains;
        self
    }

    /// Whether tickets carry dry-run tokens (written as files, never created in Kubernetes).
    pub fn is_dry_run(&self) -> bool {
        self.tokens.kind() == attest_k8s::DRY_RUN_ISSUER_KIND
    }

    /// The waivers in effect as one log field (`none`, or their names; `unreported` without a [`Trust`]).
    pub fn waivers_field(&self) -> String {
        self.trust.as_deref().map_or_else(|| "unreported".to_owned(), Trust::waivers_field)
    }

    /// The metrics this service records into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// `join.API/IssueJoinTicket`.
    pub async fn issue_join_ticket(
        &self,
        request: Request<IssueJoinTicketRequest>,
    ) -> Result<Response<IssueJoinTicketResponse>, Status> {
        let started = Instant::now();
        let Some(peer) = request.peer::<PeerAttestation>() else {
            return Err(self.refuse("join", None, None, &JoinError::Unauthenticated));
        };
        let facts = PeerFacts::of(peer);
        let mut node_name = None;
        match self.join(&request, peer, &mut node_name).await {
            Ok((response, token_id)) => {
                self.metrics.join_issued();
                tracing::info!(
                    node = node_name.as_deref().unwrap_or(""),
                    variant = facts.variant,
                    variant_oid = %facts.oid,
                    ak_digest = %facts.ak_digest,
                    identity = %facts.identity,
                    image = %facts.image,
                    control_plane = request.message.is_control_plane,
                    token_id = %token_id,
                    token_issuer = self.tokens.kind(),
                    dry_run = self.is_dry_run(),
                    waivers = %self.waivers_field(),
                    elapsed_ms = started.elapsed().as_millis(),
                    outcome = "issued",
                    "{}",
                    if self.is_dry_run() { "join ticket issued (DRY RUN: the token exists only as a file)" } else { "join ticket issued" }
                );
                Ok(Response::new(response))
            }
            Err(e) => Err(self.refuse("join", Some(&facts), node_name.as_deref(), &e)),
        }
    }

    /// `join.API/IssueRejoinTicket`: the keys of a node that restarts with its existing state disk.
    pub async fn issue_rejoin_ticket(
        &self,
        request: Request<IssueRejoinTicketRequest>,
    ) -> Result<Response<IssueRejoinTicketResponse>, Status> {
        let Some(peer) = request.peer::<PeerAttestation>() else {
            return Err(self.refuse("rejoin", None, None, &JoinError::Unauthenticated));
        };
        let facts = PeerFacts::of(peer);
        let disk_uuid = &request.message.disk_uuid;
        let result = async {
            check_disk_uuid(disk_uuid)?;
            // Only the key of a disk this attested node joined with (before asking the key service).
            self.membership.check_rejoin(peer, disk_uuid).await?;
            let deadline = request.deadline;
            let (disk, secret) = tokio::join!(
                self.key("disk", disk_uuid, STATE_DISK_KEY_LENGTH, deadline),
                self.cluster_key("measurementSecret", MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH, deadline),
            );
            Ok::<_, JoinError>(IssueRejoinTicketResponse {
                state_disk_key: disk?.to_vec(),
                measurement_secret: secret?.to_vec(),
            })
        }
        .await;
        match result {
            Ok(response) => {
                self.metrics.rejoin_issued();
                tracing::info!(
                    disk_uuid = %disk_uuid,
                    variant = facts.variant,
                    variant_oid = %facts.oid,
                    ak_digest = %facts.ak_digest,
                    identity = %facts.identity,
                    image = %facts.image,
                    waivers = %self.waivers_field(),
                    outcome = "issued",
                    "rejoin ticket issued"
                );
                Ok(Response::new(response))
            }
            Err(e) => Err(self.refuse("rejoin", Some(&facts), None, &e)),
        }
    }

    fn refuse(&self, kind: &str, facts: Option<&PeerFacts>, node: Option<&str>, e: &JoinError) -> Status {
        self.metrics.refused(e.reason());
        let status = e.to_status();
        tracing::warn!(
            kind,
            node = node.unwrap_or(""),
            variant = facts.map_or("", |f| f.variant),
            variant_oid = facts.map_or("", |f| f.oid.as_str()),
            ak_digest = facts.map_or("", |f| f.ak_digest.as_str()),
            identity = facts.map_or("", |f| f.identity.as_str()),
            outcome = "refused",
            reason = e.reason().label(),
            code = %status.code,
            error = %e,
            waivers = %self.waivers_field(),
            "ticket refused"
        );
        status
    }

    async fn key(
        &self,
        what: &'static str,
        id: &str,
        length: usize,
        deadline: Option<Instant>,
    ) -> Result<Zeroizing<Vec<u8>>, JoinError> {
        self.keys.get_data_key(id, length, deadline).await.map_err(|error| JoinError::KeyService { key: what, error })
    }

    /// A key that is the same for every node ([`keys`]: fetched at most once a minute).
    async fn cluster_key(
        &self,
        what: &'static str,
        id: &'static str,
        length: usize,
        deadline: Option<Instant>,
    ) -> Result<Zeroizing<Vec<u8>>, JoinError> {
        self.keys
            .get_cluster_key(id, length, deadline)
            .await
            .map_err(|error| JoinError::KeyService { key: what, error })
    }

    /// The join proper; returns the response and the token id (for the log).
    async fn join(
        &self,
        request: &Request<IssueJoinTicketRequest>,
        peer: &PeerAttestation,
        node_name: &mut Option<String>,
    ) -> Result<(IssueJoinTicketResponse, String), JoinError> {
        let m = &request.message;
        // 1. Everything the node sent, before any side effect.
        check_disk_uuid(&m.disk_uuid)?;
        let csr = self.ca.check_kubelet_csr(&m.certificate_request).map_err(JoinError::Csr)?;
        *node_name = Some(csr.node_name.clone());
        if m.is_control_plane {
            // The PKI must be complete before anything is bound or an admission used up.
            self.ca.control_plane_files().map_err(JoinError::Csr)?;
        }
        // 2. What is the node's own: the CSR's key is the key it proved in the handshake; its name, disk and
        //    role are bound to its attested identity (recorded before any secret leaves).
        identity::check_csr_key(&csr, peer)?;
        self.membership.admit_join(peer, &csr.node_name, &m.disk_uuid, m.is_control_plane).await?;
        let control_plane_files = if m.is_control_plane {
            let files = self.ca.control_plane_files().map_err(JoinError::Csr)?;
            files.iter().map(|f| ControlPlaneCertOrKey { name: f.name.to_owned(), data: f.data.to_vec() }).collect()
        } else {
            Vec::new()
        };

        // 3. Keys and token, concurrently.
        let deadline = request.deadline;
        let (disk, secret, ssh_seed, token) = tokio::join!(
            self.key("disk", &m.disk_uuid, STATE_DISK_KEY_LENGTH, deadline),
            self.cluster_key("measurementSecret", MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH, deadline),
            self.cluster_key("sshCa", ssh::SSH_CA_KEY_ID, ssh::SSH_CA_SEED_LENGTH, deadline),
            create_guarded(&self.tokens, self.settings.token_ttl),
        );
        let (token, guard) = match token {
            Ok(created) => created,
            Err(e) => {
                // Both sides may have failed; a key service error is reported first (the ticket's field order).
                return Err(match (&disk, &secret, &ssh_seed) {
                    (Err(_), _, _) | (_, Err(_), _) | (_, _, Err(_)) => first_key_error(disk, secret, ssh_seed),
                    _ => e,
                });
            }
        };

        // The crash matrix stops here (keys fetched, token created) and once the ticket is ready (attest_util::fault).
        attest_util::fault::point("join-service.keys-and-token");
        // 4. Finish the ticket; any failure deletes the token.
        match self.finish(m, &csr, disk, secret, ssh_seed, &token, control_plane_files) {
            Ok(response) => {
                attest_util::fault::point("join-service.ticket-ready");
                guard.keep();
                Ok((response, token.id().to_owned()))
            }
            Err(e) => {
                guard.revoke().await;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // the parts of one ticket, each a different type
    fn finish(
        &self,
        m: &IssueJoinTicketRequest,
        csr: &attest_k8s::CheckedCsr,
        disk: Result<Zeroizing<Vec<u8>>, JoinError>,
        secret: Result<Zeroizing<Vec<u8>>, JoinError>,
        ssh_seed: Result<Zeroizing<Vec<u8>>, JoinError>,
        token: &BootstrapToken,
        control_plane_files: Vec<ControlPlaneCertOrKey>,
    ) -> Result<IssueJoinTicketResponse, JoinError> {
        let (disk, secret, ssh_seed) = match (disk, secret, ssh_seed) {
            (Ok(d), Ok(s), Ok(h)) => (d, s, h),
            (d, s, h) => return Err(first_key_error(d, s, h)),
        };
        let kubelet_cert = self.ca.sign_kubelet(csr).map_err(JoinError::Csr)?;
        let ssh_ca = self.ssh_ca.get(&ssh_seed).map_err(JoinError::Ssh)?;
        let host_certificate = if m.host_public_key.is_empty() {
            Vec::new()
        } else {
            ssh_ca
                .sign_host_key(
                    &m.host_public_key,
                    &m.host_certificate_principals,
                    &csr.node_name,
                    &self.ssh_principal_domains,
                )
                .map_err(JoinError::Ssh)?
        };
        Ok(IssueJoinTicketResponse {
            state_disk_key: disk.to_vec(),
            measurement_salt: self.settings.measurement_salt.to_vec(),
            measurement_secret: secret.to_vec(),
            kubelet_cert,
            api_server_endpoint: self.settings.api_server_endpoint.clone(),
            token: token.token().to_string(),
            discovery_token_ca_cert_hash: self.ca.discovery_hash().to_owned(),
            control_plane_files,
            kubernetes_version: self.settings.kubernetes.version.clone(),
            kubernetes_components: self.settings.kubernetes.components.clone(),
            authorized_ca_public_key: ssh_ca.authorized_key(),
            host_certificate,
        })
    }
}

/// The first key error, in the order disk key, measurement secret, SSH CA seed (only called when one is an
/// error).
fn first_key_error(
    disk: Result<Zeroizing<Vec<u8>>, JoinError>,
    secret: Result<Zeroizing<Vec<u8>>, JoinError>,
    ssh_seed: Result<Zeroizing<Vec<u8>>, JoinError>,
) -> JoinError {
    disk.err()
        .or(secret.err())
        .or(ssh_seed.err())
        .unwrap_or_else(|| JoinError::Internal { reason: "key error expected".into() })
}

fn check_disk_uuid(uuid: &str) -> Result<(), JoinError> {
    if is_uuid(uuid) {
        Ok(())
    } else {
        Err(JoinError::InvalidRequest { field: "disk_uuid", reason: "not a UUID in 8-4-4-4-12 hex form".to_owned() })
    }
}

impl Service for JoinService {
    fn register(self: Arc<Self>, router: &mut Router) {
        let this = Arc::clone(&self);
        router.unary(paths::JOIN_ISSUE_JOIN_TICKET, move |request: Request<IssueJoinTicketRequest>| {
            let this = Arc::clone(&this);
            async move { this.issue_join_ticket(request).await }
        });
        router.unary(paths::JOIN_ISSUE_REJOIN_TICKET, move |request: Request<IssueRejoinTicketRequest>| {
            let this = Arc::clone(&self);
            async move { this.issue_rejoin_ticket(request).await }
        });
    }
}
