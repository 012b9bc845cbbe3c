//! What a joining node may have is decided by who it is — the identity its verified evidence names — never by
//! what its request says (crate docs, "What an attested node may have").
//!
//! ```text
//!  PeerAttestation { identity (from the engine's variant table), spki_sha256 (the handshake's key) }
//!        │ no identity ─────────────────────────────────────────────▶ PERMISSION_DENIED  no_identity
//!        ▼
//!  SHA-256(CSR's SubjectPublicKeyInfo) = spki_sha256? ── no ────────▶ PERMISSION_DENIED  csr_key_not_proven
//!        ▼
//!  cluster state (attest_trust::membership), on a blocking thread:
//!    name, disk bound to another identity; another name for this one ▶ PERMISSION_DENIED  name_not_owned / disk_not_owned
//!    control plane without membership or a signed admission ───────▶ PERMISSION_DENIED  control_plane_not_authorized
//!    granted: recorded (file written) ─────────────────────────────▶ keys, token, certificates
//! ```
//!
//! Admissions are read from their directory for each control-plane join (a few small files; the operator
//! drops one in and the next join sees it), verified under the operator's key, and used once.

use std::path::PathBuf;
use std::sync::Arc;

use attest_atls::PeerAttestation;
use attest_engine::variant::NodeIdentity;
use attest_k8s::CheckedCsr;
use attest_measurements::VerifyingKey;
use attest_trust::membership::{ClusterState, JoinClaim, StateError};

use super::error::JoinError;

/// Where operator-signed control-plane admissions come from.
#[derive(Clone, Debug)]
pub struct AdmissionSource {
    /// The directory of admission files (`*.json`).
    pub dir: PathBuf,
    /// The operator's key that signs them.
    pub key: VerifyingKey,
}

/// The join service's view of the cluster state.
#[derive(Clone, Debug)]
pub struct Membership {
    /// The state.
    pub state: Arc<ClusterState>,
    /// The operator's admissions (none: only members join the control plane).
    pub admissions: Option<AdmissionSource>,
    /// The named waiver for clusters whose disks were never bound (module docs of `attest_trust::membership`).
    pub adopt_unbound_disks: bool,
}

impl Membership {
    /// A view of `state` without admissions and without the waiver.
    pub fn new(state: Arc<ClusterState>) -> Membership {
        Membership { state, admissions: None, adopt_unbound_disks: false }
    }

    /// Decides and records a join of `peer` as `name` with `disk_uuid` (module docs).
    pub async fn admit_join(
        &self,
        peer: &PeerAttestation,
        name: &str,
        disk_uuid: &str,
        control_plane: bool,
    ) -> Result<(), JoinError> {
        let identity = identity_of(peer)?;
        let this = self.clone();
        let (owned_name, disk) = (name.to_owned(), disk_uuid.to_owned());
        let granted = tokio::task::spawn_blocking(move || {
            let admissions = if control_plane { this.admissions() } else { Vec::new() };
            let claim = JoinClaim { identity: &identity, name: &owned_name, disk_uuid: &disk, control_plane };
            this.state.admit_join(&claim, &admissions).map(|g| (g, identity))
        })
        .await
        .map_err(|e| JoinError::Internal { reason: format!("cluster state task: {e}") })?
        .map_err(JoinError::from)?;
        let (granted, identity) = granted;
        if granted.new_node {
            tracing::info!(identity = %identity, node = name, disk_uuid, "cluster state: a new node bound to its name and disk");
        }
        if let Some(admission) = granted.admission {
            tracing::warn!(identity = %identity, node = name, admission = %admission,
                "cluster state: control-plane admission used (one time): the node joins the control plane");
        }
        Ok(())
    }

    /// Decides a rejoin of `peer` for `disk_uuid`: only a disk of its own.
    pub async fn check_rejoin(&self, peer: &PeerAttestation, disk_uuid: &str) -> Result<(), JoinError> {
        let identity = identity_of(peer)?;
        let (state, adopt, disk) = (Arc::clone(&self.state), self.adopt_unbound_disks, disk_uuid.to_owned());
        let who = identity.clone();
        let adopted = tokio::task::spawn_blocking(move || state.check_rejoin(&who, &disk, adopt))
            .await
            .map_err(|e| JoinError::Internal { reason: format!("cluster state task: {e}") })?
            .map_err(JoinError::from)?;
        if adopted {
            tracing::warn!(identity = %identity, disk_uuid,
                "DANGEROUS (--dangerously-adopt-unbound-disks): a disk no node held is bound to the node that asked for its key");
        }
        Ok(())
    }

    /// The operator's admissions that verify now (refused files are logged).
    fn admissions(&self) -> Vec<attest_trust::admission::Admission> {
        let Some(source) = &self.admissions else { return Vec::new() };
        let (good, bad) =
            attest_trust::admission::load_dir(&source.dir, &source.key, attest_trust::measurements::now());
        for (path, e) in bad {
            tracing::warn!(file = %path.display(), error = %e, "control-plane admission not believed");
        }
        good
    }
}

fn identity_of(peer: &PeerAttestation) -> Result<NodeIdentity, JoinError> {
    peer.identity.clone().ok_or(JoinError::NoIdentity)
}

/// The CSR's key must be the key the node proved possession of in the aTLS handshake: the join service signs
/// a kubelet certificate only for a key that attested.
pub fn check_csr_key(csr: &CheckedCsr, peer: &PeerAttestation) -> Result<(), JoinError> {
    if openssl::sha::sha256(csr.spki()) == peer.spki_sha256 { Ok(()) } else { Err(JoinError::CsrKeyNotProven) }
}

impl From<StateError> for JoinError {
    fn from(e: StateError) -> JoinError {
        match e {
            StateError::Refused(r) => JoinError::NotOwned(r),
            other => JoinError::ClusterState(other),
        }
    }
}
