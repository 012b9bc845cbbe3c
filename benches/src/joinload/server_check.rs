//! How the generator checks the join service, as a joining `qemu-vtpm` node does (mutual aTLS):
//!
//! ```text
//!  ClientHello{SNI = b64(nonce)} ─► the service quotes its TPM over the nonce and the key of its fresh certificate
//!  verify: certificate self-signature, quote signature, nonce, key binding, PCRs 0..=14 = the service TPM's
//!          (a fresh swtpm: all zero), the AK admitted provisionally ─────────────────────────► else refused
//!  with EK CAs: credential activation over the same connection (GetIdentity, MakeCredential against the
//!          service TPM's EK certificate, ActivateCredential on that TPM); the activated AK must be the
//!          one that signed the handshake ──────────────────────────────────────────────────► else refused
//! ```
//!
//! This is the check of `attest-bootstrapper`'s `server_trust` with the PCR values of the service's swtpm
//! instead of a release's measurements (the generator's nodes and the service's TPM do not share a boot
//! chain here), and without the PCR 15 cluster check (the swtpm is bound to no cluster).

use std::sync::Arc;

use attest_atls::{AtlsConnector, AttestationIssuer, EngineValidator, PeerAttestation, Verifier};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::variant::{AkBasis, AkRegistry, PcrExpectation, PcrPolicy, Validator, Variant};
use attest_grpc::Channel;
use attest_proto::attest::v1::AttestationDocument;
use attest_registration::{EkCaBundle, FileAkRegistry, ak_digest, register_remote};
use prost::Message as _;

use super::fixture::BoxError;

/// PCRs of the service's TPM that are checked: 0..=14, all zero on a swtpm after TPM2_Startup(CLEAR) (PCR 15
/// is left out as a joining node leaves it out: it holds the service node's cluster id).
pub const SERVER_PCRS: std::ops::RangeInclusive<u8> = 0..=14;

/// Admits any AK provisionally (the quote is still verified under it); activation then proves it.
#[derive(Debug)]
struct Provisional;

impl AkRegistry for Provisional {
    fn lookup(&self, _ak_digest: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::TrustOnFirstUse)
    }
}

/// The generator's check of the join service.
#[derive(Debug)]
pub struct ServerCheck {
    verifier: Arc<Verifier>,
    ek_ca: Option<EkCaBundle>,
}

impl ServerCheck {
    /// Verification of a `qemu-vtpm` join service in the handshake, plus credential activation against
    /// `ek_ca` when given.
    pub fn new(ek_ca: Option<EkCaBundle>) -> ServerCheck {
        let pcrs = PcrPolicy {
            entries: SERVER_PCRS.map(|index| PcrExpectation { index, expected: [0; 32], warn_only: false }).collect(),
        };
        let validator = Validator::new(Variant::QemuVtpm, Arc::new(SnpVerifier::new()), SnpPolicy::default(), pcrs)
            .with_ak_registry(Arc::new(Provisional));
        let verifier = Arc::new(Verifier::new(vec![Arc::new(EngineValidator::new(validator))]));
        ServerCheck { verifier, ek_ca }
    }

    /// The mutual connector of a node attesting with `issuer`.
    pub fn connector(&self, issuer: Arc<dyn AttestationIssuer>) -> Result<AtlsConnector, attest_atls::Error> {
        AtlsConnector::new(Some(issuer), Some(Arc::clone(&self.verifier)))
    }

    /// After the handshake verified `peer`: activation (when configured), which must prove the AK that signed
    /// the handshake.
    pub async fn establish(&self, channel: &Channel, peer: Option<&PeerAttestation>) -> Result<(), BoxError> {
        let peer = peer.ok_or("the join service was not verified")?;
        let Some(ca) = &self.ek_ca else { return Ok(()) };
        let document = AttestationDocument::decode(&peer.document[..])?;
        let signed = document.tpm.as_ref().map(|t| ak_digest(&t.ak_public)).transpose()?;
        let activated = register_remote(channel, ca, &FileAkRegistry::in_memory()).await?;
        if signed != Some(activated) {
            return Err("the AK proven by credential activation is not the AK of the service's attestation".into());
        }
        Ok(())
    }
}
