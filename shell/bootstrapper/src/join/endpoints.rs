//! Join endpoints with failover: no single join service is a point of failure.
//!
//! ```text
//!  EndpointSource ─ StaticEndpoints (--join-service, repeatable)
//!                 ├ FileEndpoints (--join-endpoints-file: one HOST:PORT a line, re-read every round)
//!                 └ MetadataEndpoints (--join-endpoints-from aws|gcp|azure: crate::metadata)
//!        │ endpoints()
//!        ▼
//!  FailoverSource: one round = each endpoint once, starting after the one that answered last
//!     ok ───────────────────────────▶ the answer
//!     refused (our attestation or request) ─▶ remembered; the next endpoint is tried too
//!     down / unavailable ──────────────────▶ the next endpoint
//!  all failed: the round's most telling error (a refusal before an outage) → the caller backs off
//!  (exponential, capped, jittered: `join::backoff_delay`) and starts the next round
//! ```
//!
//! A refusal is passed on even when another endpoint was merely down, so the join client's refusal budget
//! and the rejoin client's "measurements changed" verdict still work; and a refusal by one join service does
//! not stop the round, because one misconfigured control-plane node must not keep the others from answering.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use attest_atls::AtlsConnector;
use attest_atls::grpc::connect;
use attest_grpc::{ChannelConfig, Metadata};
use attest_proto::join::{
    IssueJoinTicketRequest, IssueJoinTicketResponse, IssueRejoinTicketRequest, IssueRejoinTicketResponse,
};
use attest_proto::paths;
use openssl::pkey::{PKey, Private};

use crate::join::server_trust::{JoinServiceTrust, ServerProof};
use crate::join::{AttemptError, BoxFuture, CALL_TIMEOUT, TicketSource};
use attest_atls::AttestationIssuer;
use attest_engine::variant::{AkBasis, Variant};

/// Most endpoints taken from a source (a longer file is cut; a metadata value naming more is refused).
pub const MAX_JOIN_ENDPOINTS: usize = 64;
/// Largest endpoints file read, in bytes.
pub const MAX_ENDPOINTS_FILE_SIZE: u64 = 64 * 1024;

/// Where the join endpoints come from. Asked once per round, so a changing list (a file rewritten by the
/// operator, a scale set that grew) is followed.
pub trait EndpointSource: Send + Sync + std::fmt::Debug {
    /// The current endpoints (at most [`MAX_JOIN_ENDPOINTS`]).
    fn endpoints(&self) -> BoxFuture<'_, Result<Vec<SocketAddr>, EndpointError>>;
}

/// Why a source named no join endpoints.
#[derive(Debug)]
#[non_exhaustive]
pub enum EndpointError {
    /// A line of an endpoints file is not `HOST:PORT`.
    Line {
        /// The line number (from 1).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The endpoints file could not be read, or a line of it is wrong.
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        source: Box<EndpointError>,
    },
    /// Reading a file failed.
    Io(std::io::Error),
    /// The cloud's metadata could not be read or names no endpoint.
    Metadata {
        /// The cloud (`aws`, `gcp`, `azure`).
        cloud: &'static str,
        /// The error (a `crate::metadata::MetadataError`; boxed so that this module, which the metadata
        /// sources implement, does not import theirs).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Every source failed (their errors, in order).
    AllFailed(Vec<EndpointError>),
    /// The task reading the source stopped (a panic or the runtime shutting down).
    Task(String),
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Line { line, reason } => write!(f, "line {line}: {reason}"),
            Self::File { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Io(e) => write!(f, "{e}"),
            Self::Metadata { cloud, source } => write!(f, "{cloud} metadata: {source}"),
            Self::AllFailed(errors) => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            Self::Task(e) => write!(f, "reading the join endpoints: {e}"),
        }
    }
}

impl std::error::Error for EndpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::File { source, .. } => Some(source.as_ref()),
            Self::Io(e) => Some(e),
            Self::Metadata { source, .. } => Some(source.as_ref()),
            Self::Line { .. } | Self::AllFailed(_) | Self::Task(_) => None,
        }
    }
}

/// A fixed list (`--join-service`, repeatable).
#[derive(Clone, Debug)]
pub struct StaticEndpoints(pub Vec<SocketAddr>);

impl EndpointSource for StaticEndpoints {
    fn endpoints(&self) -> BoxFuture<'_, Result<Vec<SocketAddr>, EndpointError>> {
        let list = self.0.iter().copied().take(MAX_JOIN_ENDPOINTS).collect();
        Box::pin(async move { Ok(list) })
    }
}

/// A file with one `HOST:PORT` per line (`#` comments and blank lines ignored), re-read every round.
#[derive(Clone, Debug)]
pub struct FileEndpoints(pub PathBuf);

/// Parses an endpoints file's text.
pub fn parse_endpoints(text: &str) -> Result<Vec<SocketAddr>, EndpointError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let addr = line
            .to_socket_addrs()
            .map_err(|e| EndpointError::Line { line: n + 1, reason: format!("{line:?} is not HOST:PORT ({e})") })?
            .next()
            .ok_or_else(|| EndpointError::Line { line: n + 1, reason: format!("{line:?} has no address") })?;
        if out.len() == MAX_JOIN_ENDPOINTS {
            break;
        }
        out.push(addr);
    }
    Ok(out)
}

fn read_endpoints(path: &Path) -> Result<Vec<SocketAddr>, EndpointError> {
    use std::io::Read;
    let in_file = |e: EndpointError| EndpointError::File { path: path.to_owned(), source: Box::new(e) };
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ENDPOINTS_FILE_SIZE).read_to_string(&mut text))
        .map_err(|e| in_file(EndpointError::Io(e)))?;
    parse_endpoints(&text).map_err(in_file)
}

impl EndpointSource for FileEndpoints {
    fn endpoints(&self) -> BoxFuture<'_, Result<Vec<SocketAddr>, EndpointError>> {
        let path = self.0.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || read_endpoints(&path))
                .await
                .map_err(|e| EndpointError::Task(e.to_string()))?
        })
    }
}

/// Several sources in order (flags, file, metadata), duplicates dropped. A source that fails is logged and
/// skipped: the others still count; only when every source fails (or none names an endpoint) is the round's
/// answer an error, all their errors joined.
#[derive(Debug)]
pub struct CombinedEndpoints(pub Vec<Arc<dyn EndpointSource>>);

impl EndpointSource for CombinedEndpoints {
    fn endpoints(&self) -> BoxFuture<'_, Result<Vec<SocketAddr>, EndpointError>> {
        Box::pin(async move {
            let mut out: Vec<SocketAddr> = Vec::new();
            let mut errors = Vec::new();
            for s in &self.0 {
                match s.endpoints().await {
                    Ok(list) => out.extend(list),
                    Err(e) => {
                        tracing::warn!(error = %e, "join endpoints: a source failed, going on with the others");
                        errors.push(e);
                    }
                }
            }
            let mut seen = std::collections::HashSet::new();
            out.retain(|a| seen.insert(*a));
            out.truncate(MAX_JOIN_ENDPOINTS);
            if out.is_empty() && !errors.is_empty() { Err(EndpointError::AllFailed(errors)) } else { Ok(out) }
        })
    }
}

/// One call to one endpoint; the failover loop is generic over what is asked.
pub trait EndpointCall: Send + Sync + std::fmt::Debug {
    /// `join.API/IssueJoinTicket` at `addr`, attesting under `tls_key` (the CSR's kubelet key).
    fn join(
        &self,
        addr: SocketAddr,
        r: IssueJoinTicketRequest,
        tls_key: PKey<Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>>;
    /// `join.API/IssueRejoinTicket` at `addr`.
    fn rejoin(
        &self,
        addr: SocketAddr,
        r: IssueRejoinTicketRequest,
    ) -> BoxFuture<'_, Result<(IssueRejoinTicketResponse, ServerProof), AttemptError>>;
}

/// The real call: mutual aTLS — this node attests with its issuer, and the join service's attestation is
/// verified ([`JoinServiceTrust`]) before anything is asked of it — a new connection per call. The answer
/// comes with what the service proved ([`ServerProof`]), for the cluster check after the ticket.
#[derive(Debug)]
pub struct AtlsCall {
    connector: AtlsConnector,
    server: Arc<JoinServiceTrust>,
    config: ChannelConfig,
    timeout: Duration,
}

impl AtlsCall {
    /// Calls where this node attests with `issuer` and the service is verified by `server`.
    pub fn new(
        issuer: Arc<dyn AttestationIssuer>,
        server: Arc<JoinServiceTrust>,
    ) -> Result<AtlsCall, attest_atls::Error> {
        let connector = server.connector(issuer)?;
        Ok(AtlsCall { connector, server, config: ChannelConfig::default(), timeout: CALL_TIMEOUT })
    }

    /// Uses this call timeout and connect timeout.
    pub fn with_timeouts(mut self, call: Duration, connect: Duration) -> AtlsCall {
        self.timeout = call;
        self.config.connect_timeout = connect;
        self
    }

    async fn unary<Q, R>(
        &self,
        addr: SocketAddr,
        path: &'static str,
        request: Q,
        tls_key: Option<PKey<Private>>,
    ) -> Result<(R, ServerProof), AttemptError>
    where
        Q: prost::Message + Send + 'static,
        R: prost::Message + Default + Send + 'static,
    {
        let connector = match tls_key {
            Some(key) => self.connector.clone().with_key(key),
            None => self.connector.clone(),
        };
        let (channel, peer) =
            connect(addr, &connector, self.config.clone()).await.map_err(AttemptError::from_connect)?;
        let peer = peer.ok_or_else(|| AttemptError::ServerRefused("the join service did not attest".into()))?;
        let proof = self.server.establish(&channel, &peer).await?;
        tracing::info!(
            endpoint = %addr,
            variant = proof.variant.map_or("unknown", Variant::name),
            ak_digest = %proof.ak_digest.map_or_else(|| "none".to_owned(), hex::encode),
            ak_basis = proof.ak_basis.map_or("none", AkBasis::name),
            waivers = %self.server.trust().waivers_field(),
            "the join service's attestation verified"
        );
        let response =
            channel.unary(path, request, Metadata::new(), Some(self.timeout)).await.map_err(AttemptError::Status)?;
        Ok((response.message, proof))
    }
}

impl EndpointCall for AtlsCall {
    fn join(
        &self,
        addr: SocketAddr,
        r: IssueJoinTicketRequest,
        tls_key: PKey<Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>> {
        Box::pin(self.unary(addr, paths::JOIN_ISSUE_JOIN_TICKET, r, Some(tls_key)))
    }

    fn rejoin(
        &self,
        addr: SocketAddr,
        r: IssueRejoinTicketRequest,
    ) -> BoxFuture<'_, Result<(IssueRejoinTicketResponse, ServerProof), AttemptError>> {
        Box::pin(self.unary(addr, paths::JOIN_ISSUE_REJOIN_TICKET, r, None))
    }
}

/// The text of `attest_atls::Error::AlertReceived` where an error chain lost its type: in TLS 1.3 a client
/// completes its handshake before the server has checked the client's certificate, so the server's verdict
/// (a `handshake_failure` alert) arrives on the first read, inside the HTTP/2 handshake's status message.
const ALERT_TEXT: &str = "the peer aborted with TLS alert";

/// Whether `e` is the join service refusing us (our attestation failed its check: a TLS alert in or right
/// after the aTLS handshake, or a refusing status), as opposed to the service being unreachable or
/// overloaded.
pub fn is_refusal(e: &AttemptError) -> bool {
    match e {
        AttemptError::Connect(c) => {
            let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(c);
            while let Some(err) = cur {
                if matches!(err.downcast_ref::<attest_atls::Error>(), Some(attest_atls::Error::AlertReceived { .. })) {
                    return true;
                }
                cur = err.source();
            }
            matches!(c, attest_atls::grpc::ConnectError::Http2(s) if s.message.contains(ALERT_TEXT))
        }
        AttemptError::Status(s) if s.message.contains(ALERT_TEXT) => true,
        other => !other.is_retryable(),
    }
}

/// One join service over mutual aTLS ([`AtlsCall`]: this node attests with its issuer, the
/// service's attestation is verified before the call is made), a new connection per attempt. Several
/// endpoints with failover: [`crate::join::endpoints::FailoverSource`].
#[derive(Debug)]
pub struct AtlsTicketSource {
    addr: SocketAddr,
    call: AtlsCall,
}

impl AtlsTicketSource {
    /// The join service at `addr`: this node attests with `issuer`, the service is verified by `server`.
    pub fn new(
        addr: SocketAddr,
        issuer: Arc<dyn AttestationIssuer>,
        server: Arc<JoinServiceTrust>,
    ) -> Result<AtlsTicketSource, attest_atls::Error> {
        Ok(AtlsTicketSource { addr, call: AtlsCall::new(issuer, server)? })
    }

    /// Uses this call timeout and channel configuration (e.g. a short connect timeout in tests).
    pub fn with_timeouts(mut self, call: Duration, connect: Duration) -> AtlsTicketSource {
        self.call = self.call.with_timeouts(call, connect);
        self
    }
}

impl TicketSource for AtlsTicketSource {
    fn issue(
        &self,
        request: IssueJoinTicketRequest,
        tls_key: PKey<Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>> {
        self.call.join(self.addr, request, tls_key)
    }
}

/// Tries every endpoint of a source in turn (module docs).
#[derive(Debug)]
pub struct FailoverSource {
    endpoints: Arc<dyn EndpointSource>,
    call: Arc<dyn EndpointCall>,
    next: AtomicUsize,
}

impl FailoverSource {
    /// Failover over `endpoints`, each reached with `call`.
    pub fn new(endpoints: Arc<dyn EndpointSource>, call: Arc<dyn EndpointCall>) -> FailoverSource {
        FailoverSource { endpoints, call, next: AtomicUsize::new(0) }
    }

    /// One round: returns the first answer, or the most telling error.
    pub async fn round<T, F>(&self, what: &str, mut one: F) -> Result<T, AttemptError>
    where
        F: FnMut(SocketAddr) -> BoxFuture<'static, Result<T, AttemptError>>,
    {
        let list = self.endpoints.endpoints().await.map_err(|e| AttemptError::Local(format!("join endpoints: {e}")))?;
        if list.is_empty() {
            return Err(AttemptError::Local("no join endpoints".into()));
        }
        let start = self.next.load(Ordering::Relaxed) % list.len();
        let mut refusal = None;
        let mut last = None;
        for i in 0..list.len() {
            let idx = (start + i) % list.len();
            let addr = list[idx];
            match one(addr).await {
                Ok(v) => {
                    self.next.store(idx, Ordering::Relaxed);
                    if i > 0 {
                        tracing::info!(endpoint = %addr, skipped = i, "{what}: answered by a failover endpoint");
                    }
                    return Ok(v);
                }
                Err(e) => {
                    tracing::info!(endpoint = %addr, error = %e, "{what}: endpoint failed, trying the next");
                    if is_refusal(&e) {
                        refusal.get_or_insert(e);
                    } else {
                        last = Some(e);
                    }
                }
            }
        }
        // The next round starts at the endpoint after this round's first.
        self.next.store(start + 1, Ordering::Relaxed);
        Err(refusal.or(last).unwrap_or_else(|| AttemptError::Local("no join endpoints".into())))
    }

    /// One `IssueRejoinTicket` round.
    pub async fn rejoin(
        &self,
        request: IssueRejoinTicketRequest,
    ) -> Result<(IssueRejoinTicketResponse, ServerProof), AttemptError> {
        let call = Arc::clone(&self.call);
        self.round("rejoin", move |addr| {
            let (call, request) = (Arc::clone(&call), request.clone());
            Box::pin(async move { call.rejoin(addr, request).await })
        })
        .await
    }
}

impl TicketSource for FailoverSource {
    fn issue(
        &self,
        request: IssueJoinTicketRequest,
        tls_key: PKey<Private>,
    ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>> {
        let call = Arc::clone(&self.call);
        Box::pin(async move {
            self.round("join", move |addr| {
                let (call, request, key) = (Arc::clone(&call), request.clone(), tls_key.clone());
                Box::pin(async move { call.join(addr, request, key).await })
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_grpc::Status;
    use std::sync::Mutex;

    fn test_key() -> PKey<Private> {
        attest_atls::cert::fresh_key().unwrap()
    }

    #[test]
    fn endpoints_file() {
        let list = parse_endpoints("# control plane\n127.0.0.1:30090\n\n  127.0.0.2:30090  # second\n").unwrap();
        assert_eq!(list, ["127.0.0.1:30090".parse().unwrap(), "127.0.0.2:30090".parse().unwrap()]);
        assert!(matches!(parse_endpoints("127.0.0.1\n"), Err(EndpointError::Line { line: 1, .. })));
        let many: String = (0..100).map(|i| format!("127.0.0.1:{}", 1000 + i)).collect::<Vec<_>>().join("\n");
        assert_eq!(parse_endpoints(&many).unwrap().len(), MAX_JOIN_ENDPOINTS);
    }

    /// Answers per address: `down` addresses fail as a refused TCP connect, `refusing` ones with
    /// PERMISSION_DENIED, the rest answer.
    #[derive(Debug, Default)]
    struct Scripted {
        down: Vec<SocketAddr>,
        refusing: Vec<SocketAddr>,
        asked: Mutex<Vec<SocketAddr>>,
    }

    impl Scripted {
        #[allow(clippy::result_large_err)] // AttemptError is the join client's error as it is
        fn answer(&self, addr: SocketAddr) -> Result<(), AttemptError> {
            self.asked.lock().unwrap().push(addr);
            if self.down.contains(&addr) {
                let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
                return Err(AttemptError::Connect(attest_atls::grpc::ConnectError::Tcp(io)));
            }
            if self.refusing.contains(&addr) {
                return Err(AttemptError::Status(Status::permission_denied("PCR 9 mismatch")));
            }
            Ok(())
        }
    }

    impl EndpointCall for Scripted {
        fn join(
            &self,
            addr: SocketAddr,
            _: IssueJoinTicketRequest,
            _: PKey<Private>,
        ) -> BoxFuture<'_, Result<(IssueJoinTicketResponse, ServerProof), AttemptError>> {
            let r = self.answer(addr).map(|()| {
                (IssueJoinTicketResponse { api_server_endpoint: addr.to_string(), ..Default::default() }, proof())
            });
            Box::pin(async move { r })
        }
        fn rejoin(
            &self,
            addr: SocketAddr,
            _: IssueRejoinTicketRequest,
        ) -> BoxFuture<'_, Result<(IssueRejoinTicketResponse, ServerProof), AttemptError>> {
            let r = self.answer(addr).map(|()| (IssueRejoinTicketResponse::default(), proof()));
            Box::pin(async move { r })
        }
    }

    /// What a scripted service "proved" (nothing: these tests are about failover).
    fn proof() -> ServerProof {
        ServerProof { variant: None, ak_digest: None, ak_basis: None, lock: None }
    }

    fn addrs() -> [SocketAddr; 3] {
        ["127.0.0.1:1".parse().unwrap(), "127.0.0.1:2".parse().unwrap(), "127.0.0.1:3".parse().unwrap()]
    }

    #[tokio::test]
    async fn first_endpoint_down_the_second_answers() {
        let [first, second, third] = addrs();
        let call = Arc::new(Scripted { down: vec![first], ..Default::default() });
        let source = FailoverSource::new(Arc::new(StaticEndpoints(vec![first, second, third])), call.clone());
        let ticket = source.issue(IssueJoinTicketRequest::default(), test_key()).await.unwrap();
        assert_eq!(ticket.0.api_server_endpoint, second.to_string());
        assert_eq!(*call.asked.lock().unwrap(), [first, second]);
        // The next round starts with the endpoint that answered.
        source.rejoin(IssueRejoinTicketRequest::default()).await.unwrap();
        assert_eq!(call.asked.lock().unwrap()[2], second);
    }

    #[tokio::test]
    async fn a_refusal_is_reported_over_an_outage_and_does_not_stop_the_round() {
        let [first, second, third] = addrs();
        let call = Arc::new(Scripted { refusing: vec![first], down: vec![second, third], ..Default::default() });
        let source = FailoverSource::new(Arc::new(StaticEndpoints(vec![first, second, third])), call.clone());
        let err = source.issue(IssueJoinTicketRequest::default(), test_key()).await.unwrap_err();
        assert!(is_refusal(&err) && err.to_string().contains("PCR 9"), "{err}");
        assert_eq!(call.asked.lock().unwrap().len(), 3, "every endpoint asked");
        // One refusing node does not keep a healthy one from answering.
        let call = Arc::new(Scripted { refusing: vec![first], ..Default::default() });
        let source = FailoverSource::new(Arc::new(StaticEndpoints(vec![first, second])), call);
        let ticket = source.issue(IssueJoinTicketRequest::default(), test_key()).await.unwrap();
        assert_eq!(ticket.0.api_server_endpoint, second.to_string());
        // All down: retryable.
        let call = Arc::new(Scripted { down: vec![first, second], ..Default::default() });
        let source = FailoverSource::new(Arc::new(StaticEndpoints(vec![first, second])), call);
        assert!(!is_refusal(&source.issue(IssueJoinTicketRequest::default(), test_key()).await.unwrap_err()));
        // No endpoints at all.
        let source = FailoverSource::new(Arc::new(StaticEndpoints(vec![])), Arc::new(Scripted::default()));
        assert!(matches!(
            source.issue(IssueJoinTicketRequest::default(), test_key()).await,
            Err(AttemptError::Local(_))
        ));
    }

    #[tokio::test]
    async fn file_endpoints_are_re_read() {
        let tmp = attest_test_support::TempDir::new("endpoints");
        let path = tmp.path().join("join-endpoints");
        std::fs::write(&path, "127.0.0.1:1\n").unwrap();
        let source = CombinedEndpoints(vec![
            Arc::new(StaticEndpoints(vec!["127.0.0.1:1".parse().unwrap()])),
            Arc::new(FileEndpoints(path.clone())),
        ]);
        assert_eq!(source.endpoints().await.unwrap().len(), 1, "duplicates dropped");
        std::fs::write(&path, "127.0.0.1:2\n127.0.0.1:3\n").unwrap();
        assert_eq!(source.endpoints().await.unwrap().len(), 3);
        assert!(FileEndpoints(tmp.path().join("missing")).endpoints().await.is_err());
    }
}
