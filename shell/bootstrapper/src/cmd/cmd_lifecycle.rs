//! The `attest-bootstrapper` command's lifecycle branches (kept apart from [`crate::cmd`]'s first-boot
//! wiring): the verify service that runs for as long as the process does, the rebooted node's rejoin or
//! recovery, and a bootstrapped node that only serves its attestation.
//!
//! Stdout events added here (one JSON object per line): `{"event":"verify-service","grpc":ADDR|null,
//! "http":ADDR|null}`, `{"event":"recovery-listening","addr":ADDR}`, `{"event":"rejoined","via":"rejoin"|
//! "recovery","cluster_id":HEX,"lock_register":"PCR 15"|"RTMR3","lock_extended":BOOL}`, `{"event":"refused","path":"rejoin","reason":…}`,
//! `{"event":"reset",…}`, `{"event":"serving","cluster_id":HEX}`, `{"event":"metrics","addr":ADDR}` and
//! `{"event":"stopped"}`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

use crate::join::JoinConfig;
use crate::join::endpoints::{
    AtlsCall, CombinedEndpoints, EndpointSource, FailoverSource, FileEndpoints, StaticEndpoints,
};
use crate::life::lifecycle::{RejoinSetup, rejoin};
use crate::life::node::Node;
use crate::life::rejoin::RejoinError;
use crate::life::state::NodeState;
use crate::serve::node_metrics::NodeMetrics;
use crate::serve::verifysvc::{VerifyServers, serve_verify};
use attest_atls::AttestationIssuer;

/// A listen address that can be switched off: `ADDR` or `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Listen(pub(crate) Option<SocketAddr>);

impl std::str::FromStr for Listen {
    type Err = crate::cmd::StartError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "none" {
            return Ok(Listen(None));
        }
        s.parse().map(|a| Listen(Some(a))).map_err(crate::cmd::StartError::Listen)
    }
}

/// What the lifecycle branches need from the command line.
#[derive(Clone, Debug)]
pub(crate) struct LifeArgs {
    /// verify.API over gRPC (`None`: off).
    pub(crate) verify_grpc: Option<SocketAddr>,
    /// verify over HTTP (`None`: off).
    pub(crate) verify_http: Option<SocketAddr>,
    /// The recovery endpoint (`None`: off).
    pub(crate) recover: Option<SocketAddr>,
    /// Join endpoints given on the command line.
    pub(crate) join_services: Vec<SocketAddr>,
    /// A file of join endpoints.
    pub(crate) join_endpoints_file: Option<PathBuf>,
    /// Join endpoints from the cloud's instance metadata.
    pub(crate) metadata: Option<Arc<crate::metadata::MetadataEndpoints>>,
    /// Shutdown grace.
    pub(crate) grace: Duration,
}

impl LifeArgs {
    /// Whether the process keeps running after bootstrapping (to serve its attestation).
    pub(crate) fn serves_verify(&self) -> bool {
        self.verify_grpc.is_some() || self.verify_http.is_some()
    }

    /// The configured join endpoints (flags, then the file, then the cloud's metadata), or `None` when there are none.
    pub(crate) fn endpoint_source(&self) -> Option<Arc<dyn EndpointSource>> {
        let mut sources: Vec<Arc<dyn EndpointSource>> = Vec::new();
        if !self.join_services.is_empty() {
            sources.push(Arc::new(StaticEndpoints(self.join_services.clone())));
        }
        if let Some(f) = &self.join_endpoints_file {
            sources.push(Arc::new(FileEndpoints(f.clone())));
        }
        if let Some(m) = &self.metadata {
            sources.push(Arc::clone(m) as Arc<dyn EndpointSource>);
        }
        (!sources.is_empty()).then(|| Arc::new(CombinedEndpoints(sources)) as Arc<dyn EndpointSource>)
    }

    /// The join endpoints with failover, each reached with `call` (mutual aTLS, the service verified).
    pub(crate) fn failover(&self, call: AtlsCall) -> Option<Arc<FailoverSource>> {
        self.endpoint_source().map(|s| Arc::new(FailoverSource::new(s, Arc::new(call))))
    }
}

fn event(value: &serde_json::Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// Starts the verify service (when configured) and announces it.
pub(crate) async fn start_verify(
    issuer: &Arc<dyn AttestationIssuer>,
    life: &LifeArgs,
    metrics: &NodeMetrics,
) -> std::io::Result<Option<VerifyServers>> {
    if !life.serves_verify() {
        return Ok(None);
    }
    let grpc = match life.verify_grpc {
        Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
        None => None,
    };
    let http = match life.verify_http {
        Some(a) => Some(tokio::net::TcpListener::bind(a).await?),
        None => None,
    };
    let servers = serve_verify(Arc::clone(issuer), grpc, http)?;
    for (name, stats) in servers.admission_sources() {
        metrics.add(name, stats);
    }
    tracing::info!(grpc = ?servers.grpc_addr, http = ?servers.http_addr, "bootstrapper: verify service listening");
    event(&serde_json::json!({"event": "verify-service", "grpc": servers.grpc_addr.map(|a| a.to_string()),
        "http": servers.http_addr.map(|a| a.to_string())}));
    Ok(Some(servers))
}

/// Serves the verify service until SIGTERM or SIGINT, then stops it.
pub(crate) async fn serve_until_signal(servers: VerifyServers, cluster_id: &[u8; 32], grace: Duration) -> ExitCode {
    event(&serde_json::json!({"event": "serving", "cluster_id": hex::encode(cluster_id)}));
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot install the SIGTERM handler");
            return ExitCode::from(crate::cmd::exit::RUNTIME.code);
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("bootstrapper: stopping the verify service");
    servers.shutdown(grace).await;
    event(&serde_json::json!({"event": "stopped"}));
    ExitCode::SUCCESS
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .inspect_err(|e| tracing::error!(error = %e, "bootstrapper: cannot start the runtime"))
        .ok()
}

/// A node bootstrapped in this boot whose bootstrapper restarted: serves its attestation (if configured).
pub(crate) fn run_bootstrapped(
    issuer: &Arc<dyn AttestationIssuer>,
    cluster_id: [u8; 32],
    life: &LifeArgs,
    metrics: &NodeMetrics,
) -> ExitCode {
    if !life.serves_verify() {
        return ExitCode::SUCCESS;
    }
    let Some(rt) = runtime() else { return ExitCode::from(crate::cmd::exit::RUNTIME.code) };
    rt.block_on(async {
        match start_verify(issuer, life, metrics).await {
            Ok(Some(servers)) => serve_until_signal(servers, &cluster_id, life.grace).await,
            Ok(None) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "bootstrapper: cannot serve the verify service");
                ExitCode::from(crate::cmd::exit::RUNTIME.code)
            }
        }
    })
}

/// A bootstrapped node after a reboot: recovery endpoint and rejoin client race for its keys; then it
/// serves its attestation until stopped. Refusals keep the node down with a distinct exit code.
pub(crate) fn run_rejoin(
    node: Arc<Node>,
    state: NodeState,
    issuer: &Arc<dyn AttestationIssuer>,
    call: Option<AtlsCall>,
    life: &LifeArgs,
) -> ExitCode {
    let Some(rt) = runtime() else { return ExitCode::from(crate::cmd::exit::RUNTIME.code) };
    rt.block_on(async {
        tracing::info!(cluster_id = %hex::encode(state.cluster_id), disk_uuid = %state.disk_uuid,
            "bootstrapper: bootstrapped before a reboot; getting the state-disk key back");
        let verify = match start_verify(issuer, life, node.metrics()).await {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "bootstrapper: cannot serve the verify service");
                return ExitCode::from(crate::cmd::exit::RUNTIME.code);
            }
        };
        let recover = match life.recover {
            Some(a) => match tokio::net::TcpListener::bind(a).await {
                Ok(l) => Some(l),
                Err(e) => {
                    tracing::error!(error = %e, addr = %a, "bootstrapper: cannot bind the recovery endpoint");
                    return ExitCode::from(crate::cmd::exit::RUNTIME.code);
                }
            },
            None => None,
        };
        let source = call.and_then(|c| life.failover(c));
        if source.is_none() && recover.is_none() {
            tracing::error!("bootstrapper: neither a join endpoint nor a recovery endpoint: the node cannot rejoin");
            event(&serde_json::json!({"event": "refused", "path": "rejoin",
                "reason": "no join endpoint and no recovery endpoint configured"}));
            return ExitCode::from(attest_util::exit::USAGE.code);
        }
        let setup = RejoinSetup { source, recover, config: JoinConfig::default() };
        let register = node.lock().register();
        let result = rejoin(node, state, Arc::clone(issuer), setup, |addr| {
            event(&serde_json::json!({"event": "recovery-listening", "addr": addr.to_string()}));
        })
        .await;
        match result {
            Ok(r) => {
                tracing::info!(cluster_id = %hex::encode(r.cluster_id), via = %r.via, "bootstrapper: node rejoined");
                event(&serde_json::json!({"event": "rejoined", "via": r.via.to_string(),
                    "cluster_id": hex::encode(r.cluster_id), "lock_register": register.to_string(),
                    "lock_extended": r.extended}));
                match verify {
                    Some(servers) => serve_until_signal(servers, &r.cluster_id, life.grace).await,
                    None => ExitCode::SUCCESS,
                }
            }
            Err(e) => {
                let refused = matches!(e, RejoinError::Refused { .. } | RejoinError::WrongCluster { .. });
                tracing::error!(error = %e, "bootstrapper: the node stays down");
                event(&serde_json::json!({"event": "refused", "path": "rejoin", "reason": e.to_string()}));
                if let Some(v) = verify {
                    v.shutdown(life.grace).await;
                }
                ExitCode::from(if refused {
                    crate::cmd::exit::REJOIN_REFUSED.code
                } else {
                    crate::cmd::exit::REJOIN_FAILED.code
                })
            }
        }
    })
}

/// Serves the node's `/metrics` ([`crate::serve::node_metrics`]) on `addr` (the endpoint's own admission included)
/// and announces it; the endpoint runs on the current runtime until the process ends.
pub(crate) async fn start_metrics(
    addr: SocketAddr,
    metrics: &Arc<NodeMetrics>,
) -> std::io::Result<attest_grpc::http1::HttpEndpoint> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let source = Arc::clone(metrics);
    let endpoint = attest_grpc::http1::HttpEndpoint::serve(
        listener,
        attest_grpc::http1::metrics_limits(),
        attest_grpc::http1::metrics_handler(Arc::new(move || source.render())),
    )?;
    let own = endpoint.admission();
    metrics.add("metrics", Box::new(move || own.stats()));
    tracing::info!(addr = %endpoint.local_addr(), "bootstrapper: metrics listening");
    event(&serde_json::json!({"event": "metrics", "addr": endpoint.local_addr().to_string()}));
    Ok(endpoint)
}
