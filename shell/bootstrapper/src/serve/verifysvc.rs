//! The verify service: every node serves its attestation, for a caller's nonce, for as long as the
//! bootstrapper runs (Constellation's verification service; `docs/ARCHITECTURE.md`, "Node lifecycle").
//!
//! | | where (default) | request | answer |
//! |---|---|---|---|
//! | gRPC (h2c) | `0.0.0.0:`[`DEFAULT_VERIFY_GRPC_PORT`] | `verify.API/GetAttestation{nonce}` | `{attestation}`: an encoded `AttestationDocument` |
//! | HTTP/1.1 | `0.0.0.0:`[`DEFAULT_VERIFY_HTTP_PORT`] | `GET /?nonce=<base64 of 32 bytes>` (standard or URL-safe alphabet, padding optional) | `200 {"attestation":"<base64>"}` (JSON) |
//!
//! No TLS: the document is the proof. Its quote covers the caller's nonce (freshness) and user data =
//! SHA-256([`attest_proto::VERIFY_USER_DATA_CONTEXT`]), a constant of this service, so a document fetched
//! here can never stand in for an aTLS handshake's (whose user data is a certificate key's hash). The
//! caller (`attest verify --service grpc|http`) checks the AK, the PCRs against its measurements, and with
//! `--cluster-id` PCR 15 against the cluster id.
//!
//! Every request costs a TPM quote, serialized on the node's one TPM connection. Both listeners admit
//! connections fairly (`attest_grpc::admission`, limits in [`crate::serve::endpoint_limits`]): at most
//! [`MAX_VERIFY_CONNECTIONS`] each, a few per address, pending ones (no complete request yet: slow-loris
//! headers, idle sockets) shed first and closed [`VERIFY_HEADER_TIMEOUT`] after accept; HTTP serves one
//! request per connection (`attest_grpc::http1`). A nonce must be exactly
//! [`attest_atls::nonce::NONCE_LEN`] bytes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use tokio::net::TcpListener;

pub use crate::serve::endpoint_limits::{MAX_VERIFY_CONNECTIONS, VERIFY_HEADER_TIMEOUT};
use crate::serve::endpoint_limits::{verify_grpc_config, verify_http_limits};
use attest_atls::AttestationIssuer;
use attest_atls::nonce::{NONCE_LEN, Nonce};
use attest_grpc::admission::StatsSource;
use attest_grpc::http1::{HttpEndpoint, HttpResponse, response};
use attest_grpc::{Request, Response, Router, Server, Service, Status};
use attest_proto::paths;
use attest_proto::verify::{GetAttestationRequest, GetAttestationResponse};

/// Constellation's verification service gRPC port.
pub const DEFAULT_VERIFY_GRPC_PORT: u16 = 30081;
/// Constellation's verification service HTTP port.
pub const DEFAULT_VERIFY_HTTP_PORT: u16 = 30080;
/// Longest `nonce` query value accepted, in bytes (44 = base64 of 32 bytes with padding; room for percent-escapes).
pub const MAX_NONCE_PARAM_LENGTH: usize = 160;

/// SHA-256 of [`attest_proto::VERIFY_USER_DATA_CONTEXT`]: the user data of every verify-service document.
pub fn verify_user_data() -> [u8; 32] {
    openssl::sha::sha256(attest_proto::VERIFY_USER_DATA_CONTEXT)
}

/// The node's attestation for `nonce`, from `issuer` (a TPM quote, on a blocking thread).
async fn attest(issuer: &Arc<dyn AttestationIssuer>, nonce: &[u8]) -> Result<Vec<u8>, Status> {
    let nonce: Nonce =
        nonce.try_into().map_err(|_| Status::invalid_argument(format!("nonce must be exactly {NONCE_LEN} bytes")))?;
    let issuer = Arc::clone(issuer);
    tokio::task::spawn_blocking(move || issuer.issue(&nonce, &verify_user_data()))
        .await
        .map_err(|_| Status::internal("attestation task failed"))?
        .map_err(|e| {
            tracing::error!(error = %e, "verify: cannot attest");
            Status::internal(format!("cannot attest: {e}"))
        })
}

/// `verify.API` on a node.
#[derive(Debug)]
pub struct VerifyService {
    issuer: Arc<dyn AttestationIssuer>,
}

impl VerifyService {
    /// The service attesting with `issuer`.
    pub fn new(issuer: Arc<dyn AttestationIssuer>) -> VerifyService {
        VerifyService { issuer }
    }

    /// `verify.API/GetAttestation`.
    pub async fn get_attestation(
        &self,
        request: Request<GetAttestationRequest>,
    ) -> Result<Response<GetAttestationResponse>, Status> {
        let attestation = attest(&self.issuer, &request.message.nonce).await?;
        Ok(Response::new(GetAttestationResponse { attestation }))
    }
}

impl Service for VerifyService {
    fn register(self: Arc<Self>, router: &mut Router) {
        router.unary(paths::VERIFY_GET_ATTESTATION, move |request: Request<GetAttestationRequest>| {
            let this = Arc::clone(&self);
            async move { this.get_attestation(request).await }
        });
    }
}

/// The `nonce` query parameter of `query`, decoded.
pub fn nonce_param(query: Option<&str>) -> Result<Vec<u8>, NonceParamError> {
    let value =
        query.unwrap_or("").split('&').find_map(|kv| kv.strip_prefix("nonce=")).ok_or(NonceParamError::Missing)?;
    if value.len() > MAX_NONCE_PARAM_LENGTH {
        return Err(NonceParamError::TooLong);
    }
    // Percent-encoded '+', '/', '=' of the standard alphabet, as a browser or curl --data-urlencode sends them.
    let value = value.replace("%2B", "+").replace("%2b", "+").replace("%2F", "/").replace("%2f", "/");
    let value = value.replace("%3D", "").replace("%3d", "");
    let trimmed = value.trim_end_matches('=');
    let engine = if trimmed.contains(['-', '_']) {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
    } else {
        base64::engine::general_purpose::STANDARD_NO_PAD
    };
    engine.decode(trimmed).map_err(|_| NonceParamError::NotBase64)
}

/// Why the `nonce` query parameter of a verify request is refused (answered with 400 and this text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NonceParamError {
    /// No `nonce=` parameter.
    Missing,
    /// Longer than [`MAX_NONCE_PARAM_LENGTH`].
    TooLong,
    /// Neither standard nor URL-safe base64.
    NotBase64,
}

impl std::fmt::Display for NonceParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Missing => "missing ?nonce=<base64 of 32 bytes>",
            Self::TooLong => "nonce parameter too long",
            Self::NotBase64 => "nonce is not base64",
        })
    }
}

impl std::error::Error for NonceParamError {}

async fn respond_http(issuer: Arc<dyn AttestationIssuer>, req: http::request::Parts) -> HttpResponse {
    let reply =
        |status: http::StatusCode, body: serde_json::Value| response(status, "application/json", body.to_string());
    if req.method != http::Method::GET {
        return reply(http::StatusCode::METHOD_NOT_ALLOWED, serde_json::json!({"error": "GET only"}));
    }
    if req.uri.path() != "/" {
        return reply(http::StatusCode::NOT_FOUND, serde_json::json!({"error": "not found; try /?nonce="}));
    }
    let nonce = match nonce_param(req.uri.query()) {
        Ok(n) => n,
        Err(e) => return reply(http::StatusCode::BAD_REQUEST, serde_json::json!({"error": e.to_string()})),
    };
    match attest(&issuer, &nonce).await {
        Ok(doc) => reply(
            http::StatusCode::OK,
            serde_json::json!({"attestation": base64::engine::general_purpose::STANDARD.encode(doc)}),
        ),
        Err(s) if s.code == attest_grpc::Code::InvalidArgument => {
            reply(http::StatusCode::BAD_REQUEST, serde_json::json!({"error": s.message}))
        }
        Err(s) => reply(http::StatusCode::INTERNAL_SERVER_ERROR, serde_json::json!({"error": s.message})),
    }
}

/// The running verify service (gRPC and/or HTTP).
#[derive(Debug)]
pub struct VerifyServers {
    grpc: Option<Server>,
    http: Option<HttpEndpoint>,
    /// The gRPC address, if served.
    pub grpc_addr: Option<SocketAddr>,
    /// The HTTP address, if served.
    pub http_addr: Option<SocketAddr>,
}

impl VerifyServers {
    /// Stops both (in-flight gRPC calls get `grace`).
    pub async fn shutdown(self, grace: Duration) {
        if let Some(s) = &self.grpc {
            let _ = s.shutdown(grace).await;
        }
        if let Some(h) = self.http {
            h.shutdown().await;
        }
    }

    /// The admission tables of the listeners served (`verify-grpc`, `verify-http`), read when called.
    pub fn admission_sources(&self) -> Vec<(&'static str, StatsSource)> {
        let mut out: Vec<(&'static str, StatsSource)> = Vec::new();
        if let Some(s) = &self.grpc {
            let s = s.clone();
            out.push(("verify-grpc", Box::new(move || s.admission_stats())));
        }
        if let Some(h) = &self.http {
            let a = h.admission();
            out.push(("verify-http", Box::new(move || a.stats())));
        }
        out
    }
}

/// Serves the verify service for `issuer` on the given listeners (either may be absent).
pub fn serve_verify(
    issuer: Arc<dyn AttestationIssuer>,
    grpc: Option<TcpListener>,
    http: Option<TcpListener>,
) -> std::io::Result<VerifyServers> {
    let mut out = VerifyServers { grpc: None, http: None, grpc_addr: None, http_addr: None };
    if let Some(listener) = grpc {
        let mut router = Router::new();
        router.add_service(Arc::new(VerifyService::new(Arc::clone(&issuer))));
        let server = Server::new(router, verify_grpc_config());
        out.grpc_addr = Some(server.serve(listener)?);
        out.grpc = Some(server);
    }
    if let Some(listener) = http {
        let handler: attest_grpc::http1::Handler =
            Arc::new(move |head| Box::pin(respond_http(Arc::clone(&issuer), head)));
        let endpoint = HttpEndpoint::serve(listener, verify_http_limits(), handler)?;
        out.http_addr = Some(endpoint.local_addr());
        out.http = Some(endpoint);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_parameter() {
        let n = [0xfbu8; 32];
        let std = base64::engine::general_purpose::STANDARD.encode(n);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(n);
        assert_eq!(nonce_param(Some(&format!("nonce={std}"))).unwrap(), n);
        assert_eq!(nonce_param(Some(&format!("a=b&nonce={url}"))).unwrap(), n);
        let escaped = std.replace('+', "%2B").replace('/', "%2F").replace('=', "%3D");
        assert_eq!(nonce_param(Some(&format!("nonce={escaped}"))).unwrap(), n);
        assert!(nonce_param(None).is_err());
        assert!(nonce_param(Some("nonce=***")).is_err());
        assert!(nonce_param(Some(&format!("nonce={}", "A".repeat(MAX_NONCE_PARAM_LENGTH + 1)))).is_err());
    }

    /// A stand-in issuer: returns the nonce and user data it was asked for.
    #[derive(Debug)]
    struct Echo;
    impl AttestationIssuer for Echo {
        fn oid(&self) -> &'static str {
            "1.2.3"
        }
        fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, attest_atls::BoxError> {
            Ok([&nonce[..], &user_data[..]].concat())
        }
    }

    #[tokio::test]
    async fn grpc_and_http_serve_the_issuers_document_for_the_callers_nonce() {
        let g = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let servers = serve_verify(Arc::new(Echo), Some(g), Some(h)).unwrap();
        let nonce = [7u8; 32];
        let channel = attest_grpc::Channel::connect(servers.grpc_addr.unwrap(), attest_grpc::ChannelConfig::default())
            .await
            .unwrap();
        let r = channel
            .unary::<_, GetAttestationResponse>(
                paths::VERIFY_GET_ATTESTATION,
                GetAttestationRequest { nonce: nonce.to_vec() },
                attest_grpc::Metadata::new(),
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.message.attestation, [&nonce[..], &verify_user_data()[..]].concat());
        let short = channel
            .unary::<_, GetAttestationResponse>(
                paths::VERIFY_GET_ATTESTATION,
                GetAttestationRequest { nonce: vec![1; 8] },
                attest_grpc::Metadata::new(),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(short.code, attest_grpc::Code::InvalidArgument);

        // HTTP, as curl would ask.
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let http_addr = servers.http_addr.unwrap();
        let get = |query: String| async move {
            let mut tcp = tokio::net::TcpStream::connect(http_addr).await.unwrap();
            tcp.write_all(format!("GET /{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            tcp.read_to_string(&mut out).await.unwrap();
            out
        };
        let ok = get(format!("?nonce={}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(nonce))).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let body: serde_json::Value = serde_json::from_str(ok.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        let doc = base64::engine::general_purpose::STANDARD.decode(body["attestation"].as_str().unwrap()).unwrap();
        assert_eq!(doc, [&nonce[..], &verify_user_data()[..]].concat());
        assert!(get("?nonce=AAAA".into()).await.starts_with("HTTP/1.1 400"));
        assert!(get(String::new()).await.starts_with("HTTP/1.1 400"));
        assert!(get("metrics".into()).await.starts_with("HTTP/1.1 404"));
        servers.shutdown(Duration::from_secs(1)).await;
    }
}
