//! The join client's pre-join step: registering this node's AK with the join service by credential
//! activation ([`attest_attester::registration::register`], push direction) before the first ticket request, so that a
//! join service that trusts AKs only through registration knows this one.
//!
//! The registration endpoint speaks h2c (plain HTTP/2): the proof is the credential activation itself —
//! only the TPM holding the certified EK can answer — so the channel needs no confidentiality. A failure is
//! logged and the join attempts go ahead (see [`crate::join::PreJoin`]); the join service then refuses or
//! accepts the node on its own policy.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::join::{BoxFuture, PreJoin, PreJoinError};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_grpc::{Channel, ChannelConfig};

/// Registers the issuer's AK at `addr` once.
#[derive(Debug)]
pub(crate) struct AkRegistrationStep {
    addr: SocketAddr,
    issuer: Arc<QemuVtpmIssuer>,
    ek_certificate: Vec<u8>,
}

impl AkRegistrationStep {
    /// Registration at `addr` of `issuer`'s AK, proved with the EK certificate `ek_certificate` (DER).
    pub(crate) fn new(addr: SocketAddr, issuer: Arc<QemuVtpmIssuer>, ek_certificate: Vec<u8>) -> AkRegistrationStep {
        AkRegistrationStep { addr, issuer, ek_certificate }
    }
}

impl PreJoin for AkRegistrationStep {
    fn run(&self) -> BoxFuture<'_, Result<String, PreJoinError>> {
        Box::pin(async move {
            let channel = Channel::connect(self.addr, ChannelConfig::default()).await.map_err(|e| PreJoinError {
                what: format!("registration endpoint {}", self.addr),
                source: Box::new(e),
            })?;
            let digest = attest_attester::registration::register(&channel, &self.issuer, &self.ek_certificate)
                .await
                .map_err(|e| PreJoinError { what: format!("AK registration at {}", self.addr), source: Box::new(e) })?;
            Ok(format!("AK {} registered at {}", hex::encode(digest), self.addr))
        })
    }
}
