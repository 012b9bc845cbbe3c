//! Attack clients against a live join service, for the demo's attack section and tests. Each makes one real
//! join request (aTLS + `join.API/IssueJoinTicket` with a kubelet CSR, as a joining node does) and reports
//! what came back; none of them locks a node or keeps a ticket.
//!
//! - **Replayed SNP report** ([`ReplayingIssuer`]): on AWS and GCP the host holds the vTPM, so it can sign a
//!   fresh quote for any nonce; it cannot make the AMD secure processor sign a fresh report. The attacker
//!   records the genuine report of an earlier attestation and presents it next to a fresh quote by the same
//!   AK. The join service must refuse (the report's REPORT_DATA binds the earlier quote nonce).
//! - **Revoked VCEK**: a genuine node joins a join service whose CRL revokes the node's VCEK; the join
//!   service must refuse. The client is [`attempt_join`] with the node's ordinary issuer.
//! - **Borrowed evidence** ([`Borrowed`]): a genuine node's document that was not made for this handshake —
//!   recorded for an earlier nonce (a replayed TD quote: its REPORTDATA binds the old nonce), or made for this
//!   nonce but for another key than the one the attacker holds (relayed: its REPORTDATA, or the vTPM quote it
//!   binds, does not bind this handshake's key). The join service must refuse both.
//! - **An attested node that lies**: a genuine node asks for what is not its own — another node's
//!   disk key ([`attempt_rejoin`] with that disk's UUID), another node's name, control-plane files as a worker,
//!   a kubelet certificate for a key it did not prove in the handshake ([`JoinClaim`]).

use attest_atls::{AtlsConnector, AttestationIssuer, AttestationValidator, BoxError, nonce::Nonce};
use attest_attester::issuer::snp::{SnpCertificates, snp_document};
use attest_attester::issuer::{HwIssuerError, NodeIssuer, SnpIssuer};
use attest_bootstrapper::join::ticket::KubeletKey;
use attest_engine::variant::Variant;
use attest_proto::join::IssueJoinTicketRequest;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// An SNP issuer whose documents carry a **recorded** report next to a fresh quote: what a host holding the
/// vTPM can produce without the secure processor's help.
#[derive(Debug)]
pub struct ReplayingIssuer {
    inner: SnpIssuer,
    report: Vec<u8>,
    certs: SnpCertificates,
}

impl ReplayingIssuer {
    /// Records a genuine report of an earlier attestation of `inner` (for `earlier_nonce`, as a verifier
    /// saw it) and replays it from then on.
    pub fn record(inner: SnpIssuer, earlier_nonce: &[u8]) -> Result<Self, HwIssuerError> {
        let earlier = inner.issue(earlier_nonce, &[0x11; 32], &[])?;
        let snp = earlier.snp.unwrap_or_default();
        let certs = SnpCertificates {
            leaf: snp.leaf_certificate,
            intermediate: snp.intermediate_certificate,
            root: snp.root_certificate,
        };
        Ok(Self { inner, report: snp.report, certs })
    }

    /// The recorded report.
    pub fn recorded_report(&self) -> &[u8] {
        &self.report
    }
}

impl AttestationIssuer for ReplayingIssuer {
    fn oid(&self) -> &str {
        self.inner.variant().oid()
    }

    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        use prost::Message as _;
        // A fresh quote for this handshake by the same AK …
        let tpm = self.inner.tpm_issuer().issue(nonce, user_data, &[])?;
        // … next to the old report.
        let doc = snp_document(self.inner.variant(), tpm, self.report.clone(), self.certs.clone())?;
        Ok(doc.encode_to_vec())
    }
}

/// An attacker presenting a genuine node's evidence that was not made for its handshake.
#[derive(Debug)]
pub enum Borrowed {
    /// The node's evidence for this handshake's nonce, but bound to another key than the attacker's.
    Relayed(Arc<NodeIssuer>),
    /// The node's evidence bound to the attacker's key, but recorded for an earlier nonce.
    Replayed(Arc<NodeIssuer>),
}

/// The user data (key hash) a relayed document binds: not the attacker's handshake key.
const RELAYED_USER_DATA: [u8; 32] = [0x6E; 32];
/// The earlier nonce a replayed document was recorded for.
const EARLIER_NONCE: [u8; 32] = [0xE0; 32];

impl AttestationIssuer for Borrowed {
    fn oid(&self) -> &str {
        match self {
            Borrowed::Relayed(genuine) | Borrowed::Replayed(genuine) => genuine.variant().oid(),
        }
    }

    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        use prost::Message as _;
        let document = match self {
            Borrowed::Relayed(genuine) => genuine.issue(nonce, &RELAYED_USER_DATA, &[])?,
            Borrowed::Replayed(genuine) => genuine.issue(&EARLIER_NONCE, user_data, &[])?,
        };
        Ok(document.encode_to_vec())
    }
}

/// What one join attempt got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JoinOutcome {
    /// The join service issued a ticket (for an attack: the attack succeeded).
    Issued {
        /// Bytes of the state-disk key received (the key itself is dropped).
        disk_key_len: usize,
    },
    /// The join service refused the handshake or the call.
    Refused {
        /// The client's view of the refusal (the service logs the reason).
        reason: String,
    },
}

impl JoinOutcome {
    /// The outcome as JSON: `{"outcome": "issued"|"refused", …}`.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Issued { disk_key_len } => json!({"outcome": "issued", "disk_key_len": disk_key_len}),
            Self::Refused { reason } => json!({"outcome": "refused", "reason": reason}),
        }
    }
}

/// What a join request claims (each lie of an attested node is one field).
#[derive(Clone, Debug)]
pub struct JoinClaim {
    /// The kubelet node name of the CSR.
    pub node_name: String,
    /// The disk UUID.
    pub disk_uuid: String,
    /// The request's control-plane flag.
    pub control_plane: bool,
    /// The CSR's key is a key the node never proved in the handshake (instead of the aTLS key, as a genuine
    /// bootstrapper sends).
    pub unproven_csr_key: bool,
}

impl JoinClaim {
    /// A worker `node_name` with a disk UUID of its own (derived from the name) and an honest CSR.
    pub fn worker(node_name: &str) -> JoinClaim {
        JoinClaim {
            node_name: node_name.to_owned(),
            disk_uuid: disk_uuid_of(node_name),
            control_plane: false,
            unproven_csr_key: false,
        }
    }
}

/// A disk UUID (version 4 layout) derived from `node_name`: each attack node has a disk of its own.
pub fn disk_uuid_of(node_name: &str) -> String {
    let mut b = openssl::sha::sha256(node_name.as_bytes());
    b[6] = (b[6] & 0x0F) | 0x40;
    b[8] = (b[8] & 0x3F) | 0x80;
    let h = hex::encode(&b[..16]);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// Why an attack client could not make its call at all (a refusal by the service is a [`JoinOutcome`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum AttackError {
    /// The aTLS connector could not be built.
    Atls(attest_atls::Error),
    /// The kubelet key and CSR could not be made.
    Kubelet(openssl::error::ErrorStack),
}

impl std::fmt::Display for AttackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Atls(e) => e.fmt(f),
            Self::Kubelet(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AttackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Atls(e) => Some(e),
            Self::Kubelet(e) => Some(e),
        }
    }
}

/// A mutual-aTLS gRPC channel to `join_service` attesting with `issuer` (under `key` when given).
async fn channel(
    join_service: SocketAddr,
    issuer: Arc<dyn AttestationIssuer>,
    key: Option<openssl::pkey::PKey<openssl::pkey::Private>>,
) -> Result<Result<attest_grpc::Channel, JoinOutcome>, AttackError> {
    // The attacker does not care who the join service is: it sends a nonce (mutual aTLS needs one for the
    // service's own attestation) and takes whatever the service presents, of whichever variant.
    let ignore: Vec<Arc<dyn AttestationValidator>> =
        Variant::ALL.iter().map(|&v| Arc::new(IgnoreServer(v)) as Arc<dyn AttestationValidator>).collect();
    let ignore = Arc::new(attest_atls::Verifier::new(ignore));
    let mut connector = AtlsConnector::new(Some(issuer), Some(ignore)).map_err(AttackError::Atls)?;
    if let Some(key) = key {
        connector = connector.with_key(key);
    }
    let config = attest_grpc::ChannelConfig { connect_timeout: Duration::from_secs(10), ..Default::default() };
    Ok(match attest_atls::grpc::connect(join_service, &connector, config).await {
        Ok((channel, _)) => Ok(channel),
        Err(e) => Err(JoinOutcome::Refused { reason: attest_util::error_chain(&e) }),
    })
}

/// One `IssueJoinTicket` call to `join_service`, attesting with `issuer`, as `node_name` (a worker).
pub async fn attempt_join(
    join_service: SocketAddr,
    issuer: Arc<dyn AttestationIssuer>,
    node_name: &str,
) -> Result<JoinOutcome, AttackError> {
    attempt_join_claiming(join_service, issuer, &JoinClaim::worker(node_name)).await
}

/// One `IssueJoinTicket` call claiming `claim`. With an honest claim the CSR's key is the handshake's key, as
/// the bootstrapper's.
pub async fn attempt_join_claiming(
    join_service: SocketAddr,
    issuer: Arc<dyn AttestationIssuer>,
    claim: &JoinClaim,
) -> Result<JoinOutcome, AttackError> {
    let kubelet = KubeletKey::generate(&claim.node_name).map_err(AttackError::Kubelet)?;
    let tls_key = if claim.unproven_csr_key {
        None // a fresh key per handshake: the CSR's key was never proven
    } else {
        Some(kubelet.private_key().clone())
    };
    let request = IssueJoinTicketRequest {
        disk_uuid: claim.disk_uuid.clone(),
        certificate_request: kubelet.csr_der().to_vec(),
        is_control_plane: claim.control_plane,
        ..IssueJoinTicketRequest::default()
    };
    let channel = match channel(join_service, issuer, tls_key).await? {
        Ok(channel) => channel,
        Err(refused) => return Ok(refused),
    };
    let call = channel.unary::<_, attest_proto::join::IssueJoinTicketResponse>(
        attest_proto::paths::JOIN_ISSUE_JOIN_TICKET,
        request,
        attest_grpc::Metadata::new(),
        Some(Duration::from_secs(30)),
    );
    match call.await {
        Ok(ticket) => Ok(JoinOutcome::Issued { disk_key_len: ticket.message.state_disk_key.len() }),
        Err(e) => Ok(JoinOutcome::Refused { reason: attest_util::error_chain(&e) }),
    }
}

/// One `IssueRejoinTicket` call for `disk_uuid`, attesting with `issuer` (a rebooted node asking for a disk's
/// key; for an attack, another node's disk).
pub async fn attempt_rejoin(
    join_service: SocketAddr,
    issuer: Arc<dyn AttestationIssuer>,
    disk_uuid: &str,
) -> Result<JoinOutcome, AttackError> {
    let channel = match channel(join_service, issuer, None).await? {
        Ok(channel) => channel,
        Err(refused) => return Ok(refused),
    };
    let call = channel.unary::<_, attest_proto::join::IssueRejoinTicketResponse>(
        attest_proto::paths::JOIN_ISSUE_REJOIN_TICKET,
        attest_proto::join::IssueRejoinTicketRequest { disk_uuid: disk_uuid.to_owned() },
        attest_grpc::Metadata::new(),
        Some(Duration::from_secs(30)),
    );
    match call.await {
        Ok(ticket) => Ok(JoinOutcome::Issued { disk_key_len: ticket.message.state_disk_key.len() }),
        Err(e) => Ok(JoinOutcome::Refused { reason: attest_util::error_chain(&e) }),
    }
}

/// The attacker's view of the join service's attestation (one per variant: the service attests as its node):
/// decoded, never checked (the user data is taken as the document states it, so the handshake's key binding
/// holds for an honest service).
#[derive(Debug)]
struct IgnoreServer(Variant);

impl AttestationValidator for IgnoreServer {
    fn oid(&self) -> &str {
        self.0.oid()
    }

    fn validate(&self, document: &[u8], _: &Nonce) -> Result<Vec<u8>, attest_atls::ValidationError> {
        use prost::Message as _;
        let doc = attest_proto::attest::v1::AttestationDocument::decode(document)
            .map_err(|e| attest_atls::ValidationError::Rejected(Box::new(e)))?;
        Ok(doc.user_data)
    }
}
