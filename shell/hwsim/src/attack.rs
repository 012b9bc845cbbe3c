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

use attest_atls::{AtlsConnector, AttestationIssuer, AttestationValidator, BoxError, nonce::Nonce};
use attest_attester::issuer::snp::{SnpCertificates, snp_document};
use attest_attester::issuer::{HwIssuerError, SnpIssuer};
use attest_bootstrapper::ticket::KubeletKey;
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

/// One `IssueJoinTicket` call to `join_service`, attesting with `issuer`, as `node_name` (a worker).
pub async fn attempt_join(
    join_service: SocketAddr,
    issuer: Arc<dyn AttestationIssuer>,
    node_name: &str,
) -> Result<JoinOutcome, String> {
    // The attacker does not care who the join service is: it sends a nonce (mutual aTLS needs one for the
    // service's own attestation) and takes whatever the service presents, of whichever variant.
    let ignore: Vec<Arc<dyn AttestationValidator>> =
        Variant::ALL.iter().map(|&v| Arc::new(IgnoreServer(v)) as Arc<dyn AttestationValidator>).collect();
    let ignore = Arc::new(attest_atls::Verifier::new(ignore));
    let connector = AtlsConnector::new(Some(issuer), Some(ignore)).map_err(|e| e.to_string())?;
    let config = attest_grpc::ChannelConfig { connect_timeout: Duration::from_secs(10), ..Default::default() };
    let kubelet = KubeletKey::generate(node_name).map_err(|e| e.to_string())?;
    let request = IssueJoinTicketRequest {
        disk_uuid: "00000000-0000-4000-8000-00000000a77c".to_owned(),
        certificate_request: kubelet.csr_der().to_vec(),
        ..IssueJoinTicketRequest::default()
    };
    let channel = match attest_atls::grpc::connect(join_service, &connector, config).await {
        Ok((channel, _)) => channel,
        Err(e) => return Ok(JoinOutcome::Refused { reason: error_chain(&e) }),
    };
    let call = channel.unary::<_, attest_proto::join::IssueJoinTicketResponse>(
        attest_proto::paths::JOIN_ISSUE_JOIN_TICKET,
        request,
        attest_grpc::Metadata::new(),
        Some(Duration::from_secs(30)),
    );
    match call.await {
        Ok(ticket) => Ok(JoinOutcome::Issued { disk_key_len: ticket.message.state_disk_key.len() }),
        Err(e) => Ok(JoinOutcome::Refused { reason: error_chain(&e) }),
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

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}
