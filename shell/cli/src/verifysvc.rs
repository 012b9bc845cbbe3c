//! `attest verify --service grpc|http` and `--cluster-id`: remote attestation of a running node through its
//! verify service (`verify.API/GetAttestation` over h2c, or `GET /?nonce=` over HTTP/1.1), and the check
//! that the node belongs to a given cluster.
//!
//! ```text
//!  nonce ← 32 random bytes
//!  grpc: GetAttestation{nonce} ─▶ {attestation}      http: GET /?nonce=<base64url> ─▶ {"attestation": base64}
//!  validate (qemu-vtpm): AK from the registry, quote signature, extraData = f(nonce, user data),
//!            PCRs against the measurements (+ PCR 15 = SHA-256(0³² ‖ cluster id) with --cluster-id)
//!  validate (qemu-tdx):  TD quote (PCK chain, collateral, REPORTDATA = f(nonce, user data)), MRTD and RTMRs
//!            against the measurements (+ RTMR3 = SHA-384(0⁴⁸ ‖ SHA-384(cluster id)) with --cluster-id)
//!  user data = SHA-256(VERIFY_USER_DATA_CONTEXT)  (a verify-service document, never an aTLS one)
//! ```
//!
//! No TLS is needed: the document is the proof and the nonce makes it fresh; nothing secret is exchanged.
//!
//! # The cluster id
//!
//! The node lock extends its variant's lock register once, from zero, with the cluster id (the variant
//! table's `lock` column, `attest_engine::variant::LockRegister`): PCR 15 with the 32-byte id wherever there
//! is a vTPM, so a node of cluster `C` has PCR 15 = SHA-256(0³² ‖ C); a TD without a vTPM (`qemu-tdx`) RTMR3
//! with SHA-384(C) — measurement index 4 —, so RTMR3 = SHA-384(0⁴⁸ ‖ SHA-384(C)). `--cluster-id` replaces
//! whatever the measurements file expects of that register (the default join measurements expect 0: a node
//! not yet bound to any cluster) by that value, enforced.

use super::node::{self, CONNECT_TIMEOUT, RecordingValidator, reason};
pub use super::node::{cluster_pcr15, with_cluster_id};
use super::{Status, UsageError};
use attest_atls::AttestationValidator;
#[cfg(test)]
use attest_engine::variant::{PcrExpectation, PcrPolicy, Variant};
use attest_grpc::{Channel, ChannelConfig, Metadata};
use attest_proto::paths;
use attest_proto::verify::{GetAttestationRequest, GetAttestationResponse};
use base64::Engine;
use std::net::SocketAddr;

/// Largest HTTP response read from a verify service, in bytes (a document is a few KiB).
pub const MAX_VERIFY_RESPONSE_SIZE: usize = 1024 * 1024;

/// How `attest verify` reaches the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyVia {
    /// An aTLS handshake with any aTLS endpoint of the node (init server, recovery endpoint).
    Atls,
    /// The node's verify service, gRPC (verify.API/GetAttestation; port 30081 in a cluster).
    Grpc,
    /// The node's verify service, plain HTTP (GET /?nonce=; port 30080 in a cluster).
    Http,
}

/// Parses `--cluster-id` (64 hex digits).
pub fn parse_cluster_id(text: &str) -> Result<[u8; 32], UsageError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out)
        .map_err(|_| UsageError::new("--cluster-id: expected 64 hex digits (the cluster id `attest init` printed)"))?;
    Ok(out)
}

/// The node's document for `nonce` from its verify service at `addr`.
pub async fn fetch(addr: SocketAddr, via: VerifyVia, nonce: &[u8; 32]) -> Result<Vec<u8>, ServiceError> {
    match via {
        VerifyVia::Grpc => {
            let config = ChannelConfig { connect_timeout: CONNECT_TIMEOUT, ..ChannelConfig::default() };
            let channel = Channel::connect(addr, config)
                .await
                .map_err(|e| ServiceError::Connect { addr, source: Box::new(e) })?;
            let r = channel
                .unary::<_, GetAttestationResponse>(
                    paths::VERIFY_GET_ATTESTATION,
                    GetAttestationRequest { nonce: nonce.to_vec() },
                    Metadata::new(),
                    Some(CONNECT_TIMEOUT),
                )
                .await
                .map_err(|s| ServiceError::Call(Box::new(s)))?;
            Ok(r.message.attestation)
        }
        VerifyVia::Http => tokio::time::timeout(CONNECT_TIMEOUT, http_get(addr, nonce))
            .await
            .map_err(|_| ServiceError::TimedOut(addr))?,
        VerifyVia::Atls => Err(ServiceError::NoDocumentOverAtls),
    }
}

/// `GET /?nonce=` with HTTP/1.1, `Connection: close`; the body read to EOF (at most
/// [`MAX_VERIFY_RESPONSE_SIZE`]).
async fn http_get(addr: SocketAddr, nonce: &[u8; 32]) -> Result<Vec<u8>, ServiceError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp =
        tokio::net::TcpStream::connect(addr).await.map_err(|e| ServiceError::Connect { addr, source: Box::new(e) })?;
    let q = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(nonce);
    tcp.write_all(format!("GET /?nonce={q} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .map_err(|source| ServiceError::Io { addr, source })?;
    let mut raw = Vec::new();
    (&mut tcp)
        .take(MAX_VERIFY_RESPONSE_SIZE as u64 + 1)
        .read_to_end(&mut raw)
        .await
        .map_err(|source| ServiceError::Io { addr, source })?;
    if raw.len() > MAX_VERIFY_RESPONSE_SIZE {
        return Err(ServiceError::TooLarge(addr));
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or(ServiceError::MalformedHttp)?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head.lines().next().unwrap_or_default();
    let answer = |reason: &str| ServiceError::Answer { status: status.to_owned(), reason: reason.to_owned() };
    let body: serde_json::Value =
        serde_json::from_slice(&raw[split + 4..]).map_err(|_| answer("the body is not JSON"))?;
    if !status.contains(" 200 ") {
        return Err(answer(body["error"].as_str().unwrap_or("")));
    }
    let doc = body["attestation"].as_str().ok_or(ServiceError::NoAttestation)?;
    base64::engine::general_purpose::STANDARD.decode(doc).map_err(|_| ServiceError::NotBase64)
}

/// Validates a verify-service document for `nonce`: the engine checks under `validator`, then the user data
/// must be this service's constant. The error's text goes into the verdict.
pub fn validate(validator: &RecordingValidator, document: &[u8], nonce: &[u8; 32]) -> Result<(), ServiceError> {
    let user_data = validator.validate(document, nonce).map_err(|e| match e {
        attest_atls::ValidationError::NonceMismatch => ServiceError::StaleNonce,
        attest_atls::ValidationError::Rejected(e) => ServiceError::Rejected(e),
    })?;
    let expected = openssl::sha::sha256(attest_proto::VERIFY_USER_DATA_CONTEXT);
    if user_data != expected {
        validator.record_refusal(&attest_engine::Error::PlatformPolicy {
            check: "verify_service_binding",
            expected: attest_engine::error::Value::Text("the verify service's user data"),
            found: attest_engine::error::Value::Text("another value"),
        });
        return Err(ServiceError::WrongUserData);
    }
    Ok(())
}

/// Why a node's verify service gave no document, or its document is refused (the text of the verdict).
#[derive(Debug)]
#[non_exhaustive]
pub enum ServiceError {
    /// The node could not be reached.
    Connect {
        /// The node's address.
        addr: SocketAddr,
        /// Why (a gRPC status or an I/O error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `GetAttestation` failed.
    Call(Box<attest_grpc::Status>),
    /// The HTTP answer took longer than the connect timeout.
    TimedOut(SocketAddr),
    /// The aTLS path has no document to fetch (its document comes in the handshake).
    NoDocumentOverAtls,
    /// Reading or writing the HTTP connection failed.
    Io {
        /// The node's address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The HTTP answer is larger than [`MAX_VERIFY_RESPONSE_SIZE`].
    TooLarge(SocketAddr),
    /// No end of the HTTP head.
    MalformedHttp,
    /// The HTTP answer is not `200` with a JSON body.
    Answer {
        /// The HTTP status line.
        status: String,
        /// The service's `error`, or what is wrong with the body.
        reason: String,
    },
    /// No `attestation` in the JSON answer.
    NoAttestation,
    /// The `attestation` is not base64.
    NotBase64,
    /// The document is bound to another nonce.
    StaleNonce,
    /// The engine refused the document.
    Rejected(attest_atls::BoxError),
    /// The document's user data is not the verify service's.
    WrongUserData,
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect { addr, source } => write!(f, "connecting to {addr}: {source}"),
            Self::Call(s) => write!(f, "GetAttestation: {s}"),
            Self::TimedOut(addr) => write!(f, "{addr}: timed out"),
            Self::NoDocumentOverAtls => f.write_str("the aTLS path does not fetch a document"),
            Self::Io { addr, source } => write!(f, "{addr}: {source}"),
            Self::TooLarge(addr) => write!(f, "{addr}: response larger than {MAX_VERIFY_RESPONSE_SIZE} bytes"),
            Self::MalformedHttp => f.write_str("malformed HTTP response"),
            Self::Answer { status, reason } => write!(f, "{status}: {reason}"),
            Self::NoAttestation => f.write_str("no \"attestation\" in the answer"),
            Self::NotBase64 => f.write_str("the attestation is not base64"),
            Self::StaleNonce => f.write_str("the document is not for our nonce (stale or replayed)"),
            Self::Rejected(e) => f.write_str(&reason(e.as_ref())),
            Self::WrongUserData => f.write_str(
                "the document's user data is not the verify service's (a document made for another purpose)",
            ),
        }
    }
}

impl std::error::Error for ServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect { source, .. } => Some(source.as_ref()),
            Self::Call(s) => Some(s.as_ref()),
            Self::Io { source, .. } => Some(source),
            Self::Rejected(e) => Some(e.as_ref()),
            Self::TimedOut(_)
            | Self::NoDocumentOverAtls
            | Self::TooLarge(_)
            | Self::MalformedHttp
            | Self::Answer { .. }
            | Self::NoAttestation
            | Self::NotBase64
            | Self::StaleNonce
            | Self::WrongUserData => None,
        }
    }
}

/// What the node proved, or (whether it answered with a document, why it is refused).
pub type Verdict = Result<node::AttestationSummary, (bool, String)>;

/// The result object (schema `attest-result/1`) of the document the engine judged, if it judged one.
pub type ResultObject = Option<serde_json::Value>;

/// `attest verify --service grpc|http`: the verdict (printed by the caller) of the node at `addr`.
pub fn verify_via_service(
    addr: SocketAddr,
    via: VerifyVia,
    validator: node::NodeValidator,
) -> Result<(Status, Verdict, ResultObject), UsageError> {
    let rt = super::runtime()?;
    let nonce = attest_atls::nonce::fresh().map_err(|e| UsageError::new(format!("nonce: {e}")))?;
    let validator = RecordingValidator::for_node(validator);
    let verdict = match rt.block_on(fetch(addr, via, &nonce)) {
        Err(e) => Err((false, e.to_string())),
        Ok(doc) => match validate(&validator, &doc, &nonce) {
            Err(e) => Err((true, e.to_string())),
            Ok(()) => validator.last().ok_or((true, "no attestation verified".to_owned())),
        },
    };
    Ok((if verdict.is_ok() { Status::Accepted } else { Status::Rejected }, verdict, validator.last_result()))
}

/// Runs `attest verify --service grpc|http` and prints the verdict as `attest verify` does, with the
/// cluster id checked (when given).
#[allow(clippy::too_many_arguments)] // the verify command's inputs, each its own type
pub fn run(
    endpoint: &str,
    via_service: VerifyVia,
    json: bool,
    addr: SocketAddr,
    validator: node::NodeValidator,
    trust: &attest_trust::Trust,
    cluster_id: Option<&[u8; 32]>,
    stdout: &mut dyn std::io::Write,
) -> Result<Status, UsageError> {
    let register = validator.validator.variant().info().lock;
    let (status, verdict, result) = verify_via_service(addr, via_service, validator)?;
    let via = match via_service {
        VerifyVia::Grpc => "verify service (gRPC)",
        VerifyVia::Http => "verify service (HTTP)",
        VerifyVia::Atls => "aTLS",
    };
    let cluster = cluster_id.map(hex::encode);
    match verdict {
        Ok(summary) => {
            if json {
                let mut v = summary.to_json();
                v["verified"] = serde_json::json!(true);
                v["endpoint"] = serde_json::json!(endpoint);
                v["via"] = serde_json::json!(via);
                v["clusterId"] = serde_json::json!(cluster);
                v["trust"] = trust.to_json();
                v["result"] = result.unwrap_or_default();
                let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                let _ = writeln!(stdout, "VERIFIED {endpoint} ({via})\n{}", summary.describe());
                if let Some(c) = &cluster {
                    let _ = writeln!(stdout, "cluster      {c} ({register} ✓)");
                }
            }
        }
        Err((attested, why)) => {
            let kind = if attested { "REFUSED" } else { "UNREACHABLE" };
            if json {
                let v = serde_json::json!({"verified": false, "endpoint": endpoint, "via": via,
                    "refused": attested, "error": why, "clusterId": cluster, "result": result});
                let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                let _ = writeln!(stdout, "{kind} {endpoint} ({via})");
            }
            eprintln!("attest: {kind}: {why}");
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_id_replaces_the_pcr15_expectation() {
        let zero = PcrExpectation { index: 15, expected: [0; 32], warn_only: false };
        let nine = PcrExpectation { index: 9, expected: [9; 32], warn_only: false };
        let policy = PcrPolicy { entries: vec![zero, nine] };
        let expected = attest_trust::Expected::Pcrs(policy);
        assert_eq!(with_cluster_id(Variant::QemuVtpm, expected.clone(), None), expected);
        let id = [0xc1; 32];
        let attest_trust::Expected::Pcrs(p) = with_cluster_id(Variant::QemuVtpm, expected, Some(&id)) else {
            panic!("PCRs")
        };
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.entries[0], nine);
        assert_eq!(p.entries[1], PcrExpectation { index: 15, expected: cluster_pcr15(&id), warn_only: false });
        // SHA-256(0^32 || id), computed independently.
        let mut input = vec![0u8; 32];
        input.extend_from_slice(&id);
        assert_eq!(cluster_pcr15(&id), openssl::sha::sha256(&input));
        // A TD without a vTPM: RTMR3 (measurement index 4) = SHA-384(0^48 || SHA-384(id)).
        let zero = attest_engine::policy::Hex([0; 48]);
        let td = attest_engine::tdx::TdxPolicy { rtmr3: Some(zero), ..attest_engine::tdx::TdxPolicy::default() };
        let attest_trust::Expected::TdRegisters(bound) =
            with_cluster_id(Variant::QemuTdx, attest_trust::Expected::TdRegisters(Box::new(td)), Some(&id))
        else {
            panic!("TD registers")
        };
        let mut input = vec![0u8; 48];
        input.extend_from_slice(&openssl::sha::sha384(&id));
        assert_eq!(bound.rtmr3.unwrap().0, openssl::sha::sha384(&input));
        assert!(parse_cluster_id("zz").is_err());
        assert_eq!(parse_cluster_id(&hex::encode(id)).unwrap(), id);
    }
}
