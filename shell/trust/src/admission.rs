//! Operator-signed, one-time admissions of a node to the control plane: the credential a control-plane join
//! needs besides its attestation — never a flag in the request.
//!
//! The operator verifies the node (`attest verify` names its identity), then signs an admission for exactly
//! that identity and node name, valid until a time (`attest admission issue`), and drops the file where the
//! join service reads admissions. The join service believes a file only when its signature verifies under the
//! configured operator key; uses it only for a join from that identity under that name before it expires; and
//! records its id as used (`crate::membership`), so it admits once.
//!
//! ```json
//! {"payload": "<base64 of the payload JSON>", "signature": "<base64 of the DER ECDSA P-256/SHA-256 signature over the payload bytes>"}
//! payload: {"type": "attest.control-plane-admission.v1", "id": "<32 hex>", "identity": "ak:…",
//!           "nodeName": "node-4", "expires": "2026-01-31T00:00:00Z"}
//! ```
//!
//! The signature covers the payload bytes as sent (no re-encoding). The `type` keeps an admission from
//! passing for any other object the operator's key signs, and a measurements file from passing for an
//! admission (its parser refuses unknown fields, and a file is never a payload).

use std::path::{Path, PathBuf};

use attest_engine::UnixTime;
use attest_engine::variant::NodeIdentity;
use attest_measurements::VerifyingKey;
use base64::Engine as _;
use serde_json::{Value, json};

/// The payload's `type`.
pub const ADMISSION_TYPE: &str = "attest.control-plane-admission.v1";
/// Largest admission file, in bytes.
pub const MAX_ADMISSION_SIZE: usize = 4096;
/// Most admission files read from a directory (the rest are ignored, with a warning).
pub const MAX_ADMISSION_FILES: usize = 256;
/// Length of an admission id, in bytes (hex in the payload).
pub const ADMISSION_ID_LEN: usize = 16;
/// Longest node name (a DNS-1123 subdomain), in an admission and in the cluster state.
pub const MAX_NODE_NAME_LEN: usize = 253;

/// A verified admission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// Its id (hex), recorded once used.
    pub id: String,
    /// The node it admits.
    pub identity: NodeIdentity,
    /// The kubelet node name it admits that node under.
    pub node_name: String,
    /// The first second it is no longer valid.
    pub expires: UnixTime,
}

/// Why an admission is not believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmissionError {
    /// Not an envelope of base64 payload and signature, or a payload that is not an admission.
    Malformed {
        /// What is wrong.
        reason: String,
    },
    /// The signature does not verify under the operator's key.
    BadSignature,
    /// It expired.
    Expired {
        /// When.
        expires: UnixTime,
    },
}

impl core::fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Malformed { reason } => write!(f, "malformed admission: {reason}"),
            Self::BadSignature => f.write_str("admission signature does not verify under the operator's key"),
            Self::Expired { expires } => write!(f, "admission expired at {expires}"),
        }
    }
}

impl std::error::Error for AdmissionError {}

fn malformed(reason: impl Into<String>) -> AdmissionError {
    AdmissionError::Malformed { reason: reason.into() }
}

impl Admission {
    /// The payload bytes to sign (deterministic JSON).
    pub fn payload(&self) -> Vec<u8> {
        json!({"type": ADMISSION_TYPE, "id": self.id, "identity": self.identity.as_str(), "nodeName": self.node_name,
            "expires": self.expires.to_string()})
        .to_string()
        .into_bytes()
    }

    /// The file: the payload and `signature_der` (made over [`Admission::payload`]) in their envelope.
    pub fn envelope(payload: &[u8], signature_der: &[u8]) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut out =
            json!({"payload": b64.encode(payload), "signature": b64.encode(signature_der)}).to_string().into_bytes();
        out.push(b'\n');
        out
    }

    /// Verifies a file under the operator's `key` and judges its expiry at `now`.
    pub fn verify(file: &[u8], key: &VerifyingKey, now: UnixTime) -> Result<Admission, AdmissionError> {
        if file.len() > MAX_ADMISSION_SIZE {
            return Err(malformed(format!("larger than {MAX_ADMISSION_SIZE} bytes")));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let envelope: Value = serde_json::from_slice(file).map_err(|e| malformed(e.to_string()))?;
        let field = |name: &str| -> Result<Vec<u8>, AdmissionError> {
            let text = envelope.get(name).and_then(Value::as_str).ok_or_else(|| malformed(format!("no {name}")))?;
            b64.decode(text).map_err(|_| malformed(format!("{name} is not base64")))
        };
        let (payload, signature) = (field("payload")?, field("signature")?);
        let provider = attest_engine::crypto::default_provider();
        provider
            .ecdsa_p256_sha256
            .verify_asn1(key.point(), &payload, &signature)
            .map_err(|_| AdmissionError::BadSignature)?;
        let admission = Admission::parse_payload(&payload)?;
        if admission.expires <= now {
            return Err(AdmissionError::Expired { expires: admission.expires });
        }
        Ok(admission)
    }

    /// Reads a (verified) payload.
    fn parse_payload(payload: &[u8]) -> Result<Admission, AdmissionError> {
        let v: Value = serde_json::from_slice(payload).map_err(|e| malformed(e.to_string()))?;
        let obj = v.as_object().ok_or_else(|| malformed("payload is not an object"))?;
        if obj.keys().any(|k| !["type", "id", "identity", "nodeName", "expires"].contains(&k.as_str())) {
            return Err(malformed("unknown payload field"));
        }
        let text = |name: &str| v.get(name).and_then(Value::as_str).ok_or_else(|| malformed(format!("no {name}")));
        if text("type")? != ADMISSION_TYPE {
            return Err(malformed("not a control-plane admission"));
        }
        let id = text("id")?;
        if id.len() != 2 * ADMISSION_ID_LEN || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(malformed("id is not 32 lower-case hex digits"));
        }
        let identity =
            NodeIdentity::parse(text("identity")?).ok_or_else(|| malformed("identity is not an identity"))?;
        let node_name = text("nodeName")?;
        if node_name.is_empty() || node_name.len() > MAX_NODE_NAME_LEN {
            return Err(malformed("nodeName is empty or too long"));
        }
        let expires =
            attest_measurements::freshness::parse_expires(text("expires")?).map_err(|e| malformed(e.to_string()))?;
        Ok(Admission { id: id.to_owned(), identity, node_name: node_name.to_owned(), expires })
    }
}

/// The admissions of `dir` that verify under `key` and have not expired at `now` (`*.json` files, at most
/// [`MAX_ADMISSION_FILES`]); with the files refused and why (for the log). A missing directory holds none.
pub fn load_dir(dir: &Path, key: &VerifyingKey, now: UnixTime) -> (Vec<Admission>, Vec<(PathBuf, AdmissionError)>) {
    use std::io::Read as _;
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(dir) else { return (good, bad) };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.truncate(MAX_ADMISSION_FILES);
    for path in paths {
        let mut bytes = Vec::new();
        let read =
            std::fs::File::open(&path).and_then(|f| f.take(MAX_ADMISSION_SIZE as u64 + 1).read_to_end(&mut bytes));
        match read.map_err(|e| malformed(e.to_string())).and_then(|_| Admission::verify(&bytes, key, now)) {
            Ok(a) => good.push(a),
            Err(e) => bad.push((path, e)),
        }
    }
    (good, bad)
}
