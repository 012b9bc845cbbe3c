//! What `attest init` and `attest verify` share: reaching a node over aTLS, the `qemu-vtpm` validator built
//! from a measurements file and an AK registry, a record of what the node proved, and private file writes.
//!
//! Only the `qemu-vtpm` variant is supported here: its AKs are trusted through the AK registry, which these
//! commands fill by credential activation (`attest init`). The SNP variants need the KDS and are verified by
//! `attest snp verify`.
//!
//! # The identity connection
//!
//! Before a node's AK is registered, no validator can trust its attestation, yet `attest init` must reach the
//! node's `CredentialActivation` service over aTLS to register it. [`dangerous_identity_connector`] opens that
//! first connection with a validator that takes any AK as trusted-on-first-use (recording nothing) and no PCR
//! policy: the quote is still checked for signature, freshness and key binding, which ties the AK being
//! registered to the node at the other end. Nothing sent on it is secret and nothing learned is trusted: trust
//! comes from credential activation, and the init request goes only over a second, fully verified connection
//! ([`verifying_connector`]).

use super::UsageError;
use attest_atls::nonce::Nonce;
use attest_atls::{AtlsConnector, AttestationValidator, PeerAttestation, ValidationError, Verifier};
use attest_engine::crypto::HashAlgorithm;
use attest_engine::variant::{AkBasis, AkRegistry, PcrOutcome, PcrPolicy, Validator, Variant};
use attest_engine::{SnpPolicy, SnpVerifier, UnixTime};
use attest_proto::attest::v1::AttestationDocument;
use attest_proto::document::{pcr_values, view as document};
use attest_registration::{FileAkRegistry, ak_digest};
use prost::Message;
use serde_json::{Value, json};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Time allowed for the TCP connect and the aTLS handshake (which includes a TPM quote on the node).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves `HOST:PORT` to its first address.
pub fn resolve(endpoint: &str) -> Result<SocketAddr, UsageError> {
    let bad = |why: String| UsageError::new(format!("--endpoint {endpoint:?}: {why}"));
    let mut addrs = endpoint.to_socket_addrs().map_err(|e| bad(format!("expected HOST:PORT ({e})")))?;
    addrs.next().ok_or_else(|| bad("the host has no address".into()))
}

/// Opens (or starts) the AK registry file.
pub fn open_registry(path: &Path) -> Result<Arc<FileAkRegistry>, UsageError> {
    FileAkRegistry::open(path).map(Arc::new).map_err(|e| UsageError::new(format!("--ak-registry: {e}")))
}

/// A `qemu-vtpm` validator trusting `registry`'s AKs and expecting `policy`.
pub fn qemu_validator(registry: Arc<dyn AkRegistry>, policy: PcrPolicy) -> Validator {
    Validator::new(Variant::QemuVtpm, Arc::new(SnpVerifier::new()), SnpPolicy::default(), policy)
        .with_ak_registry(registry)
}

/// What a node proved in its aTLS certificate, as checked.
#[derive(Clone, Debug)]
pub struct AttestationSummary {
    /// The variant.
    pub variant: Variant,
    /// SHA-256 of the AK's TPMT_PUBLIC.
    pub ak_digest: [u8; 32],
    /// Why the AK is trusted.
    pub ak_basis: AkBasis,
    /// Each expected PCR and its outcome.
    pub pcrs: Vec<(u8, PcrOutcome)>,
    /// How many SHA-256 PCRs the quote covers.
    pub quoted_pcrs: usize,
    /// Whether an event log was replayed against the quote.
    pub event_log_replayed: bool,
}

impl AttestationSummary {
    /// The summary as JSON.
    pub fn to_json(&self) -> Value {
        let pcrs: Vec<Value> = self
            .pcrs
            .iter()
            .map(|(i, o)| json!({"pcr": i, "outcome": serde_json::to_value(o).unwrap_or(Value::Null)}))
            .collect();
        json!({
            "variant": self.variant.name(),
            "akDigest": hex::encode(self.ak_digest),
            "akBasis": serde_json::to_value(self.ak_basis).unwrap_or(Value::Null),
            "pcrsChecked": pcrs,
            "quotedPcrs": self.quoted_pcrs,
            "eventLogReplayed": self.event_log_replayed,
        })
    }

    /// One line per fact, for people.
    pub fn describe(&self) -> String {
        let basis = serde_json::to_value(self.ak_basis).ok().and_then(|v| v.as_str().map(str::to_owned));
        let checked: Vec<String> = self
            .pcrs
            .iter()
            .map(|(i, o)| match o {
                PcrOutcome::Match => format!("{i}"),
                PcrOutcome::MismatchWarnOnly => format!("{i} (mismatch, warn-only)"),
            })
            .collect();
        format!(
            "variant      {}\nAK           {} ({})\nPCRs quoted  {} (SHA-256)\nPCRs checked {}\nevent log    {}",
            self.variant.name(),
            hex::encode(self.ak_digest),
            basis.unwrap_or_default(),
            self.quoted_pcrs,
            if checked.is_empty() {
                "none (the measurements file expects none)".to_owned()
            } else {
                checked.join(", ")
            },
            if self.event_log_replayed { "replayed against the quote" } else { "not sent" },
        )
    }
}

/// An engine validator that also records what the last accepted document proved (the aTLS verifier only
/// hands back the document bytes).
#[derive(Debug)]
pub struct RecordingValidator {
    validator: Validator,
    last: Mutex<Option<AttestationSummary>>,
}

impl RecordingValidator {
    /// Wraps `validator`.
    pub fn new(validator: Validator) -> Self {
        Self { validator, last: Mutex::new(None) }
    }

    /// What the last accepted document proved.
    pub fn last(&self) -> Option<AttestationSummary> {
        self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

fn now() -> UnixTime {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UnixTime::from_secs(secs)
}

impl AttestationValidator for RecordingValidator {
    fn oid(&self) -> &str {
        self.validator.variant().oid()
    }

    fn validate(&self, bytes: &[u8], nonce: &Nonce) -> Result<Vec<u8>, ValidationError> {
        let reject = |e: Box<dyn std::error::Error + Send + Sync>| ValidationError::Rejected(e);
        let doc = AttestationDocument::decode(bytes).map_err(|e| reject(Box::new(e)))?;
        let pcrs = pcr_values(&doc).map_err(|e| reject(Box::new(e)))?;
        let view = document(&doc, &pcrs);
        let ok = self.validator.validate(&view, nonce, now()).map_err(|e| match e {
            attest_engine::Error::NonceMismatch { .. } => ValidationError::NonceMismatch,
            other => reject(Box::new(other)),
        })?;
        let ak_public = doc.tpm.as_ref().map(|t| &t.ak_public[..]).unwrap_or_default();
        // This validator is qemu-vtpm's, whose documents always carry a vTPM quote and an AK.
        let (Some(quote), Some(ak_basis)) = (&ok.quote, ok.ak_basis) else {
            return Err(reject("the node's attestation carries no vTPM quote".into()));
        };
        let summary = AttestationSummary {
            variant: ok.variant,
            ak_digest: ak_digest(ak_public).map_err(|e| reject(Box::new(e)))?,
            ak_basis,
            pcrs: ok.pcrs.clone(),
            quoted_pcrs: (0..24).filter(|i| quote.pcr(HashAlgorithm::Sha256, *i).is_some()).count(),
            event_log_replayed: ok.event_log_replayed,
        };
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(summary);
        Ok(ok.user_data.to_vec())
    }
}

/// An AK "registry" that answers trust-on-first-use for every AK and records nothing.
///
/// Used only for the identity connection of `attest init`, before the node's AK is registered: it lets the
/// handshake check the quote's signature, freshness and key binding under whatever AK the node presents, so
/// that the AK registered next is the one that signed this connection's attestation. Nothing learned on that
/// connection is trusted; trust comes from credential activation and a second, fully verified connection.
#[derive(Debug)]
struct DangerousAnyAk;

impl AkRegistry for DangerousAnyAk {
    fn lookup(&self, _ak_digest: &[u8; 32]) -> Option<AkBasis> {
        Some(AkBasis::TrustOnFirstUse)
    }
}

/// A connector for `attest init`'s identity connection: the quote's signature, freshness and key binding are
/// checked under whatever AK the node presents (every AK counts as trusted on first use, nothing is recorded),
/// with no PCR policy. Nothing learned on it is trusted; see the [module docs](self).
pub fn dangerous_identity_connector() -> Result<AtlsConnector, attest_atls::Error> {
    let validator = qemu_validator(Arc::new(DangerousAnyAk), PcrPolicy::default());
    let verifier = Verifier::new(vec![Arc::new(attest_atls::EngineValidator::new(validator))]);
    AtlsConnector::new(None, Some(Arc::new(verifier)))
}

/// A connector verifying the node against `registry` and `policy`, and the validator that records what the
/// node proved.
pub fn verifying_connector(
    registry: Arc<FileAkRegistry>,
    policy: PcrPolicy,
) -> Result<(AtlsConnector, Arc<RecordingValidator>), attest_atls::Error> {
    let recorder = Arc::new(RecordingValidator::new(qemu_validator(registry, policy)));
    let verifier = Verifier::new(vec![Arc::clone(&recorder) as Arc<dyn AttestationValidator>]);
    Ok((AtlsConnector::new(None, Some(Arc::new(verifier)))?, recorder))
}

/// The AK TPM2B_PUBLIC of a verified peer's document.
pub fn peer_ak_public(peer: &PeerAttestation) -> Option<Vec<u8>> {
    AttestationDocument::decode(&peer.document[..]).ok()?.tpm.map(|t| t.ak_public)
}

/// The innermost `source()` of an error chain joined into one line (aTLS wraps the validator's reason).
pub fn reason(e: &(dyn std::error::Error + 'static)) -> String {
    attest_util::error_chain(e)
}

/// Writes `data` to `path` readable by the owner only (0600), atomically: a temporary file in the same
/// directory (created 0600, never wider), fsync, rename over `path`, fsync of the directory.
pub fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    attest_util::fs::write_atomic(path, data, attest_util::fs::SECRET_FILE_MODE)
        .map_err(|e| std::io::Error::new(e.source.kind(), e.to_string()))
}
