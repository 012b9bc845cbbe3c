//! `join-load mtls`: the **transport floor** of a join, measured on the key service.
//!
//! A join is one fresh TCP connection, a mutual TLS 1.3 handshake and one unary gRPC call. The key service
//! serves exactly that shape without attestation: the same OpenSSL 3 library and settings family (TLS 1.3,
//! X25519, P-256 keys on both sides), the client certificate checked with one ECDSA signature verification
//! (its CA's), the same HTTP/2 + gRPC stack ([`attest_grpc`]) and runtime, and a handler that costs one
//! HKDF. Opening a **fresh** connection per call (the join service keeps one) makes the key service do per
//! connection what the join service does per join minus everything attestation adds: the nonce exchange,
//! the service's own TPM quote and attested certificate, the client's quote validation, the CSR, the
//! kubelet certificate and the token.
//!
//! `benches/join-load/run.sh` reads the key service's CPU time (`/proc`) around this run: its CPU per
//! connection is the transport floor printed beside the join service's CPU per join.

// Connection counts far below 2^52 become rates.
#![allow(clippy::cast_precision_loss)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use attest_grpc::{ChannelConfig, Metadata};
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsConnector, TlsFiles};
use attest_keyservice::{MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_LENGTH};
use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;

use super::fixture::{BoxError, KMS_PKI_DIR};

/// Connections of one `mtls` run.
#[derive(Clone, Debug, PartialEq)]
pub struct MtlsReport {
    /// Connections that completed the handshake and the call with the expected answer.
    pub ok: u64,
    /// Connections that failed (connect, handshake, call or a wrong answer).
    pub errors: u64,
    /// Wall time of the run.
    pub wall: Duration,
    /// The first error, if any.
    pub first_error: Option<String>,
}

impl MtlsReport {
    /// One JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ok": self.ok,
            "errors": self.errors,
            "seconds": self.wall.as_secs_f64(),
            "per_second": self.ok as f64 / self.wall.as_secs_f64().max(1e-9),
            "first_error": self.first_error,
        })
    }
}

/// Opens `connections` fresh mutual-TLS connections to the key service at `addr` from `concurrency` tasks,
/// each making one `GetDataKey(measurementSecret, 32)` call with the join service's client certificate of
/// the fixture in `fixture`, then closing the connection.
pub async fn mtls_connections(
    fixture: &Path,
    addr: SocketAddr,
    connections: u64,
    concurrency: usize,
    timeout: Duration,
) -> Result<MtlsReport, BoxError> {
    let files = TlsFiles::client_in(&fixture.join(KMS_PKI_DIR));
    let connector = Arc::new(KmsConnector::new(&files, KEY_SERVICE_NAME)?);
    let next = Arc::new(AtomicU64::new(0));
    let ok = Arc::new(AtomicU64::new(0));
    let first_error = Arc::new(std::sync::Mutex::new(None::<String>));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (connector, next, ok, first_error) = (connector.clone(), next.clone(), ok.clone(), first_error.clone());
        tasks.spawn(async move {
            let mut errors = 0u64;
            while next.fetch_add(1, Ordering::Relaxed) < connections {
                match tokio::time::timeout(timeout, one(&connector, addr, timeout)).await {
                    Ok(Ok(())) => {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    failed => {
                        errors += 1;
                        let e = match failed {
                            Ok(Err(e)) => e,
                            _ => format!("no answer within {timeout:?}"),
                        };
                        first_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(e);
                    }
                }
            }
            errors
        });
    }
    let mut errors = 0;
    while let Some(done) = tasks.join_next().await {
        errors += done?;
    }
    let first_error = first_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    Ok(MtlsReport { ok: ok.load(Ordering::Relaxed), errors, wall: started.elapsed(), first_error })
}

async fn one(connector: &KmsConnector, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let config = ChannelConfig { connect_timeout: timeout, ..ChannelConfig::default() };
    let channel = connector.connect(addr, config).await.map_err(|s| s.to_string())?;
    let request = GetDataKeyRequest {
        data_key_id: MEASUREMENT_SECRET_KEY_ID.to_owned(),
        length: u32::try_from(MEASUREMENT_SECRET_LENGTH).unwrap_or(u32::MAX),
    };
    let response = channel
        .unary::<_, GetDataKeyResponse>(paths::KMS_GET_DATA_KEY, request, Metadata::new(), Some(timeout))
        .await
        .map_err(|s| s.to_string())?;
    if response.message.data_key.len() != MEASUREMENT_SECRET_LENGTH {
        return Err(format!("{} bytes instead of {MEASUREMENT_SECRET_LENGTH}", response.message.data_key.len()));
    }
    Ok(())
}
