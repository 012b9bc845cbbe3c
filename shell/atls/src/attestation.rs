//! The two seams between aTLS and attestation: an [`AttestationIssuer`] (attesting side) and an
//! [`AttestationValidator`] (verifying side), with the one implementation this crate has: the engine's
//! [`Validator`] ([`EngineValidator`]). Issuers live with the evidence they read (`attest-attester`
//! implements [`AttestationIssuer`] for its TPM and SEV-SNP issuers); services may implement either (e.g. a
//! join service that swaps validators when its measurements file changes).
//!
//! Both work on the encoded protobuf [`AttestationDocument`] — the bytes that travel in the certificate
//! extension — so aTLS itself never decodes a document.

use super::error::BoxError;
use super::nonce::Nonce;
use attest_engine::UnixTime;
use attest_engine::variant::{NodeIdentity, Validated, Validator};
use attest_proto::attest::v1::AttestationDocument;
use core::fmt;
use prost::Message;
use std::sync::Arc;

/// The attesting side: produces a document bound to the peer's nonce and to `user_data`.
pub trait AttestationIssuer: Send + Sync + fmt::Debug {
    /// The certificate extension OID (dotted) of this issuer's variant (`Variant::oid`).
    fn oid(&self) -> &str;

    /// An encoded [`AttestationDocument`] for `nonce`, binding `user_data` (aTLS: SHA-256 of the fresh
    /// certificate's SubjectPublicKeyInfo DER). May block (a TPM quote): aTLS calls it on a blocking thread.
    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError>;
}

/// Why a validator refused a document.
#[derive(Debug)]
pub enum ValidationError {
    /// The document is well formed and signed, but bound to another nonce (or other user data / instance
    /// information than it presents).
    NonceMismatch,
    /// Any other reason.
    Rejected(BoxError),
}

/// What a validator accepted: the user data the document binds, and the node it speaks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The user data (aTLS compares it with SHA-256 of the certificate's SubjectPublicKeyInfo).
    pub user_data: Vec<u8>,
    /// The node identity from the verified evidence ([`Validated::node_identity`]); `None` when the validator
    /// does not derive one, or the evidence lacks it.
    pub identity: Option<NodeIdentity>,
    /// The label of the accepted measurement set the evidence met (the image a rolling upgrade names), when
    /// the validator's sets are labelled ([`EngineValidator::with_set_labels`]).
    pub measurement_set: Option<Arc<str>>,
}

/// The verifying side: validates a document for the nonce this side sent.
pub trait AttestationValidator: Send + Sync + fmt::Debug {
    /// The certificate extension OID (dotted) whose documents this validator accepts.
    fn oid(&self) -> &str;

    /// Validates the encoded `document` for `nonce` and returns the user data it binds (aTLS compares it with
    /// SHA-256 of the certificate's SubjectPublicKeyInfo). Runs inside the handshake on the connection's
    /// task, so it must not block on I/O.
    fn validate(&self, document: &[u8], nonce: &Nonce) -> Result<Vec<u8>, ValidationError>;

    /// [`AttestationValidator::validate`], also naming the node the document speaks for (what aTLS hands
    /// the services in [`crate::PeerAttestation::identity`]). The default names none.
    fn validate_peer(&self, document: &[u8], nonce: &Nonce) -> Result<Accepted, ValidationError> {
        self.validate(document, nonce).map(|user_data| Accepted { user_data, identity: None, measurement_set: None })
    }
}

/// Records the AK of a document that fully validated: how an AK registry that trusts on first use pins the
/// AK (`attest-registration`'s file registry; the engine's `AkRegistry::lookup` answers before the quote is
/// checked, so recording must wait for the whole document).
pub trait FirstUseRecorder: Send + Sync + fmt::Debug {
    /// Records `ak_tpm2b_public` if `validated` trusted it on first use.
    fn record_first_use(&self, validated: &Validated<'_>, ak_tpm2b_public: &[u8]) -> Result<(), BoxError>;
}

/// Validates documents with an engine [`Validator`] (whose AK registry decides which AKs are trusted), at
/// the system clock's time. With [`EngineValidator::recording_first_use`], AKs trusted on first use are
/// recorded once their document fully validated.
#[derive(Clone, Debug)]
pub struct EngineValidator {
    validator: Validator,
    record_in: Option<Arc<dyn FirstUseRecorder>>,
    set_labels: Vec<Option<Arc<str>>>,
}

impl EngineValidator {
    /// A validator for `validator`'s variant (built with its AK registry and PCR policy).
    pub fn new(validator: Validator) -> Self {
        Self { validator, record_in: None, set_labels: Vec::new() }
    }

    /// Records trust-on-first-use AKs in `registry` (which must be the registry `validator` uses).
    pub fn recording_first_use(mut self, registry: Arc<dyn FirstUseRecorder>) -> Self {
        self.record_in = Some(registry);
        self
    }

    /// Names the validator's accepted measurement sets (its own first, then its alternatives, in order):
    /// each acceptance says which set the evidence met ([`Accepted::measurement_set`]).
    pub fn with_set_labels(mut self, labels: Vec<Option<String>>) -> Self {
        self.set_labels = labels.into_iter().map(|l| l.map(Arc::from)).collect();
        self
    }

    fn now() -> UnixTime {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        UnixTime::from_secs(secs)
    }
}

impl AttestationValidator for EngineValidator {
    fn oid(&self) -> &str {
        self.validator.variant().oid()
    }

    fn validate(&self, bytes: &[u8], nonce: &Nonce) -> Result<Vec<u8>, ValidationError> {
        self.validate_peer(bytes, nonce).map(|a| a.user_data)
    }

    fn validate_peer(&self, bytes: &[u8], nonce: &Nonce) -> Result<Accepted, ValidationError> {
        let doc = AttestationDocument::decode(bytes).map_err(|e| ValidationError::Rejected(Box::new(e)))?;
        let pcrs = attest_proto::document::pcr_values(&doc).map_err(|e| ValidationError::Rejected(Box::new(e)))?;
        let view = attest_proto::document::view(&doc, &pcrs);
        let validated = self.validator.validate(&view, nonce, Self::now()).map_err(engine_error)?;
        if let (Some(registry), Some(tpm)) = (&self.record_in, &view.tpm) {
            registry.record_first_use(&validated, tpm.ak_public).map_err(ValidationError::Rejected)?;
        }
        Ok(Accepted {
            user_data: validated.user_data.to_vec(),
            identity: validated.node_identity().ok(),
            measurement_set: self.set_labels.get(validated.measurement_set).cloned().flatten(),
        })
    }
}

fn engine_error(e: attest_engine::Error) -> ValidationError {
    match e {
        attest_engine::Error::NonceMismatch { .. } => ValidationError::NonceMismatch,
        other => ValidationError::Rejected(Box::new(other)),
    }
}
