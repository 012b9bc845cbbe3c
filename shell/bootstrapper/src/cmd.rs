//! `attest-bootstrapper`: turns a fresh node into the first node of a cluster (init) or a member of one
//! (join) — `docs/ARCHITECTURE.md`, "Bootstrapper"; the design is in the `attest_bootstrapper` crate.
//!
//! ```text
//! attest-bootstrapper --tpm swtpm:host=127.0.0.1,port=2321 --state-dir DIR --init-secret-hash FILE
//!     [--init-listen 0.0.0.0:9000] [--join-service ADDR] [--registration ADDR] [--node-name NAME]
//!     [--control-plane] [--disk key-file|luks:/dev/X] [--runtime-dir /run/attest]
//!     [--backend kubeadm|dry-run|auto] [--api-server-endpoint HOST:PORT] [--log-level info] [--shutdown-grace 30]
//!     --disk luks:/dev/X|luks-header:FILE|key-file   [--join-service ADDR …] [--join-endpoints-file FILE]
//!     [--recover-listen 0.0.0.0:9999|none] [--verify-listen 0.0.0.0:30081|none] [--verify-http-listen 0.0.0.0:30080|none]
//!     [--node-ip IP] [--control-plane-endpoint HOST:PORT] [--provider-id ID]
//! ```
//!
//! The node's whole life (crate docs, [`crate::lifecycle`]): a fresh node serves init and joins; a node
//! marked for reset (its bootstrap failed after the lock, then it rebooted) is reset and starts fresh; a
//! bootstrapped node after a reboot gets its disk key back through a rejoin ticket or the recovery endpoint
//! (`cmd_lifecycle.rs`); and every node serves its attestation (verify service) for as long as the
//! process runs — with the verify service on (the default) the process keeps running after bootstrapping
//! until SIGTERM (a systemd `Type=simple` unit); with both verify listeners `none` it exits as before.
//!
//! Stdout carries machine-readable progress: first `listening on ADDR` (the init server's address, useful
//! with port 0), then one JSON object per line: `{"event":"bootstrapped","path":"init"|"join",
//! "cluster_id":HEX}`, `{"event":"already-bootstrapped",…}`, `{"event":"refused","reason":…}`,
//! `{"event":"failed",…}`, `{"event":"join-client-stopped",…}`, `{"event":"stopped"}`. Logs go to stderr.
//!
//! The process exits once the node is bootstrapped (as Constellation's bootstrapper stops its init server):
//! the init response stream is drained first (up to the shutdown grace). Run it as a systemd
//! `Type=oneshot` unit with `RemainAfterExit=yes`. SIGTERM/SIGINT stop it gracefully: before the lock it
//! simply stops; after the lock it waits (up to the grace) for the running init or join to finish.
//!
//! Exit codes: 0 bootstrapped (now or before this start) or stopped by a signal;
//! 1 runtime failure (TPM, bind); 2 usage; 3 configuration (init secret hash file); 4 bootstrapping failed
//! after the lock (now or before this start: the node needs reinstalling); 5 node state inconsistent
//! (locked without state, state without its disk, PCR 15 mismatch): init and join refused; 6 rejoin refused
//! (the node's measurements changed, or the keys are another cluster's): the node stays down; 7 rejoin
//! failed (the disk did not reopen, PCR 15 or Kubernetes could not be brought back). Code 4 marks the node
//! for reset: the systemd unit reboots it, and the next start resets it to a fresh node.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::dryrun::DryRunBackend;
use crate::kubeadm::KubeadmBackend;
use crate::process::find_on_path;
use crate::registration::AkRegistrationStep;
use crate::{
    ClusterBackend, DiskSetup, InitSecretHash, JoinClient, JoinConfig, JoinError, KeyFileDisk, LuksDisk, Node,
    NodeConfig, NodeLock, Outcome, PcrBackend, Phase, Startup, serve_init,
};
use attest_atls::{AtlsConnector, AttestationIssuer};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, Tpm};
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

const EXIT_RUNTIME: u8 = 1;
const EXIT_CONFIG: u8 = 3;
const EXIT_FAILED: u8 = 4;
const EXIT_INCONSISTENT: u8 = 5;

/// The `--disk` choice.
#[derive(Clone, Debug)]
enum DiskChoice {
    KeyFile,
    Luks(PathBuf),
    LuksHeader(PathBuf),
}

fn parse_disk(s: &str) -> Result<DiskChoice, String> {
    match s {
        "key-file" => Ok(DiskChoice::KeyFile),
        _ => match (s.strip_prefix("luks:"), s.strip_prefix("luks-header:")) {
            (Some(dev), _) if dev.starts_with('/') => Ok(DiskChoice::Luks(PathBuf::from(dev))),
            (_, Some(file)) if file.starts_with('/') => Ok(DiskChoice::LuksHeader(PathBuf::from(file))),
            _ => Err("expected luks:/dev/DEVICE, luks-header:/ABSOLUTE/FILE or key-file".into()),
        },
    }
}

/// The node bootstrapper: init server (aTLS, the node attests) and join client, racing for the node lock.
#[derive(Parser, Debug)]
#[command(name = "attest-bootstrapper", version)]
struct Args {
    /// TPM TCTI: swtpm:host=127.0.0.1,port=N or device:/dev/tpmrm0.
    #[arg(long, value_name = "TCTI")]
    tpm: String,
    /// State directory (node state, kubeadm configuration, dry-run PKI).
    #[arg(long, value_name = "DIR")]
    state_dir: PathBuf,
    /// Init server address (aTLS gRPC).
    #[arg(long, default_value = "0.0.0.0:9000")]
    init_listen: SocketAddr,
    /// Join service address (repeatable: tried in turn, with failover); without any the node only waits for init.
    #[arg(long, value_name = "ADDR")]
    join_service: Vec<SocketAddr>,
    /// AK registration endpoint (h2c), called once before the first join attempt.
    #[arg(long, value_name = "ADDR")]
    registration: Option<SocketAddr>,
    /// Kubernetes node name (default: the host name).
    #[arg(long)]
    node_name: Option<String>,
    /// Join as a control-plane node.
    #[arg(long)]
    control_plane: bool,
    /// File holding SHA-256(init secret) as 64 hex digits.
    #[arg(long, value_name = "FILE")]
    init_secret_hash: PathBuf,
    /// State disk (no default: choose): luks:/dev/X (LUKS2, integrity where available, mounted at
    /// --state-dir), luks-header:/FILE (LUKS2 header and key check only, nothing mapped: machines without a
    /// device mapper; the state directory is NOT encrypted) or key-file (the key in a 0600 file in
    /// --runtime-dir; no encryption).
    #[arg(long, value_parser = parse_disk)]
    disk: DiskChoice,
    /// Directory of the key file and disk UUID in key-file mode (a tmpfs in production).
    #[arg(long, default_value = "/run/attest", value_name = "DIR")]
    runtime_dir: PathBuf,
    /// Cluster backend: kubeadm, dry-run, or auto (kubeadm if on PATH).
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// HOST:PORT of the API server of a cluster this node initializes (the admin kubeconfig's server).
    #[arg(long, default_value = "127.0.0.1:6443")]
    api_server_endpoint: String,
    /// Log level: error, warn, info, debug or trace.
    #[arg(long, default_value = "info")]
    log_level: tracing::Level,
    /// Seconds a running init/join and the init stream are given to finish on shutdown.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    shutdown_grace: u64,
    /// File of join endpoints (one HOST:PORT a line), re-read on every round; with or instead of --join-service.
    #[arg(long, value_name = "FILE")]
    join_endpoints_file: Option<PathBuf>,
    /// Recovery endpoint (recover.API over aTLS, this node attests) of a rebooted node, or none.
    #[arg(long, default_value = "0.0.0.0:9999")]
    recover_listen: crate::cmd_lifecycle::Listen,
    /// Verify service, gRPC (verify.API/GetAttestation), or none.
    #[arg(long, default_value = "0.0.0.0:30081")]
    verify_listen: crate::cmd_lifecycle::Listen,
    /// Verify service, plain HTTP (GET /?nonce=), or none.
    #[arg(long, default_value = "0.0.0.0:30080")]
    verify_http_listen: crate::cmd_lifecycle::Listen,
    /// This node's IP: the kubelet's --node-ip, the API server's advertise address (control plane), an IP SAN
    /// of the init node's kubelet serving certificate.
    #[arg(long, value_name = "IP")]
    node_ip: Option<std::net::IpAddr>,
    /// HOST:PORT in front of every API server (load balancer or DNS name) for a highly available control
    /// plane [default: --api-server-endpoint].
    #[arg(long, value_name = "HOST:PORT")]
    control_plane_endpoint: Option<String>,
    /// This machine's cloud provider id (the kubelet's --provider-id), where known.
    #[arg(long, value_name = "ID")]
    provider_id: Option<String>,
}

impl Args {
    fn life(&self) -> crate::cmd_lifecycle::LifeArgs {
        crate::cmd_lifecycle::LifeArgs {
            verify_grpc: self.verify_listen.0,
            verify_http: self.verify_http_listen.0,
            recover: self.recover_listen.0,
            join_services: self.join_service.clone(),
            join_endpoints_file: self.join_endpoints_file.clone(),
            grace: Duration::from_secs(self.shutdown_grace),
        }
    }
}

fn event(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map_or_else(|_| "node".to_owned(), |s| s.trim().to_owned())
}

/// Runs the command with this process's arguments and returns its exit status: the binary's `main`.
pub fn main() -> ExitCode {
    let args = Args::parse();
    attest_util::init_service_logging(args.log_level);
    let node_name = args.node_name.clone().unwrap_or_else(host_name);
    if !crate::request::is_dns_name(&node_name) {
        tracing::error!(%node_name, "bootstrapper: the node name is not a DNS name (lower case, digits, '-', '.')");
        return ExitCode::from(2);
    }
    let secret_hash = match InitSecretHash::load(&args.init_secret_hash) {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot load the init secret hash");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let (issuer, ek_certificate) = match open_issuer(&args.tpm) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, tcti = %args.tpm, "bootstrapper: cannot use the TPM");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let lock = match NodeLock::open(Arc::clone(&issuer) as Arc<dyn PcrBackend>) {
        Ok(l) => Arc::new(l),
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot read PCR 15");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let disk: Arc<dyn DiskSetup> = match &args.disk {
        DiskChoice::KeyFile => Arc::new(KeyFileDisk::new(&args.runtime_dir)),
        DiskChoice::Luks(dev) => Arc::new(LuksDisk::new(dev).with_mount(&args.state_dir)),
        DiskChoice::LuksHeader(file) => Arc::new(LuksDisk::header_only(file)),
    };
    let network = crate::kubeadm::NodeNetwork {
        node_ip: args.node_ip,
        control_plane_endpoint: args.control_plane_endpoint.clone(),
        provider_id: args.provider_id.clone(),
    };
    if let Some(e) = &network.control_plane_endpoint
        && !crate::ticket::is_endpoint(e)
    {
        tracing::error!(endpoint = %e, "bootstrapper: --control-plane-endpoint is not HOST:PORT");
        return ExitCode::from(2);
    }
    let backend = select_backend(args.backend, &args.state_dir, &network);
    let config = NodeConfig {
        state_dir: args.state_dir.clone(),
        node_name,
        control_plane: args.control_plane,
        api_server_endpoint: args.api_server_endpoint.clone(),
    };
    let node = Arc::new(Node::new(config, lock, disk, backend));
    tracing::info!(backend = node.backend().name(), state_dir = %args.state_dir.display(),
        disk = %node.disk().protection(), "bootstrapper: starting");

    match node.startup() {
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot read the node state");
            event(&serde_json::json!({"event": "refused", "reason": e.to_string()}));
            return ExitCode::from(EXIT_INCONSISTENT);
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "bootstrapper: refusing init and join");
            event(&serde_json::json!({"event": "refused", "reason": e.to_string()}));
            return ExitCode::from(EXIT_INCONSISTENT);
        }
        Ok(Ok(Startup::Bootstrapped(state))) => {
            let failed = state.phase == Phase::Failed;
            tracing::info!(cluster_id = %hex::encode(state.cluster_id), role = %state.role, phase = ?state.phase,
                "bootstrapper: node already bootstrapped; nothing to serve");
            event(&serde_json::json!({"event": "already-bootstrapped", "cluster_id": hex::encode(state.cluster_id),
                "role": state.role.to_string(), "failed": failed}));
            return if failed {
                ExitCode::from(EXIT_FAILED)
            } else {
                crate::cmd_lifecycle::run_bootstrapped(&(Arc::clone(&issuer) as _), state.cluster_id, &args.life())
            };
        }
        Ok(Ok(Startup::Rejoin(state))) => {
            let connector = AtlsConnector::new(Some(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>), None)
                .inspect_err(|e| tracing::error!(error = %e, "bootstrapper: cannot build the aTLS connector"))
                .ok();
            return crate::cmd_lifecycle::run_rejoin(node, state, &(Arc::clone(&issuer) as _), connector, &args.life());
        }
        Ok(Ok(Startup::Reset(state))) => match crate::lifecycle::reset(&node, &state) {
            Ok(lines) => {
                for line in &lines {
                    tracing::warn!("bootstrapper: {line}");
                }
                event(&serde_json::json!({"event": "reset", "cluster_id": hex::encode(state.cluster_id)}));
            }
            Err(e) => {
                tracing::error!(error = %e, "bootstrapper: cannot reset the node");
                return ExitCode::from(EXIT_RUNTIME);
            }
        },
        Ok(Ok(Startup::Fresh)) => {}
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot start the runtime");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    runtime.block_on(run(&args, node, secret_hash, issuer, ek_certificate))
}

fn open_issuer(tcti: &str) -> Result<(Arc<QemuVtpmIssuer>, Vec<u8>), attest_attester::tpm::Error> {
    let mut tpm = Tpm::open(tcti)?;
    let ek = tpm.ek_certificate().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "bootstrapper: no EK certificate; AK registration will not be possible");
        Vec::new()
    });
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default())?.with_ek_certificate(ek.clone());
    Ok((Arc::new(issuer), ek))
}

async fn run(
    args: &Args,
    node: Arc<Node>,
    secret_hash: InitSecretHash,
    issuer: Arc<QemuVtpmIssuer>,
    ek_certificate: Vec<u8>,
) -> ExitCode {
    let grace = Duration::from_secs(args.shutdown_grace);
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot install the SIGTERM handler");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let listener = match tokio::net::TcpListener::bind(args.init_listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, addr = %args.init_listen, "bootstrapper: cannot bind the init server");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let activation = (!ek_certificate.is_empty())
        .then(|| Arc::new(ActivationService::new(Arc::clone(&issuer), ek_certificate.clone())));
    let (server, addr) = match serve_init(
        Arc::clone(&node),
        secret_hash,
        Arc::clone(&issuer) as Arc<dyn AttestationIssuer>,
        activation,
        listener,
    ) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot start the init server");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    tracing::info!(%addr, "bootstrapper: init server listening");
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {addr}");
        let _ = out.flush();
    }

    let verify = match crate::cmd_lifecycle::start_verify(&(Arc::clone(&issuer) as _), &args.life()).await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot serve the verify service");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    let mut join_task = None;
    if let Some(endpoints) = args.life().endpoint_source() {
        match AtlsConnector::new(Some(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>), None) {
            Ok(connector) => {
                let source = Arc::new(crate::endpoints::FailoverSource::new(
                    endpoints,
                    Arc::new(crate::endpoints::AtlsCall::new(connector)),
                ));
                let mut client = JoinClient::new(Arc::clone(&node), source, JoinConfig::default());
                if let Some(reg) = args.registration {
                    client = client.with_pre_join(Arc::new(AkRegistrationStep::new(
                        reg,
                        Arc::clone(&issuer),
                        ek_certificate.clone(),
                    )));
                }
                tracing::info!(endpoints = ?args.join_service, file = ?args.join_endpoints_file,
                    "bootstrapper: join client started");
                join_task = Some(tokio::spawn(client.run()));
            }
            Err(e) => tracing::error!(error = %e, "bootstrapper: cannot build the aTLS connector; join disabled"),
        }
    }

    let mut outcome = node.outcome();
    let finished = loop {
        tokio::select! {
            r = outcome.wait_for(Option::is_some) => break r.ok().and_then(|o| o.clone()),
            r = async { join_task.as_mut().expect("guarded").await }, if join_task.is_some() => {
                join_task = None;
                match r {
                    Ok(Ok(_) | Err(JoinError::LockTaken | JoinError::Lock(_) | JoinError::Commit(_))) => {}
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "bootstrapper: join client stopped; waiting for init only");
                        event(&serde_json::json!({"event": "join-client-stopped", "reason": e.to_string()}));
                    }
                    Err(e) => tracing::error!(error = %e, "bootstrapper: join client task failed"),
                }
            }
            r = tokio::signal::ctrl_c() => { let _ = r; break stop(&node, grace).await; }
            _ = terminate.recv() => break stop(&node, grace).await,
        }
    };
    if let Some(t) = join_task {
        t.abort();
    }
    // Let the init response stream drain, then stop serving.
    if !server.shutdown(grace).await {
        tracing::warn!(grace_seconds = args.shutdown_grace, "bootstrapper: calls cancelled after the grace period");
    }
    match finished {
        None => {
            event(&serde_json::json!({"event": "stopped"}));
            ExitCode::SUCCESS
        }
        Some(Outcome::Initialized { cluster_id }) => {
            event(&serde_json::json!({"event": "bootstrapped", "path": "init", "cluster_id": hex::encode(cluster_id)}));
            keep_serving(verify, &cluster_id, grace).await
        }
        Some(Outcome::Joined { cluster_id }) => {
            event(&serde_json::json!({"event": "bootstrapped", "path": "join", "cluster_id": hex::encode(cluster_id)}));
            keep_serving(verify, &cluster_id, grace).await
        }
        Some(Outcome::Failed { holder, error }) => {
            event(&serde_json::json!({"event": "failed", "path": holder.to_string(), "error": error,
                "marked_for_reset": true}));
            if let Some(v) = verify {
                v.shutdown(grace).await;
            }
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// After bootstrapping: serve the attestation until stopped, when the verify service runs.
async fn keep_serving(
    verify: Option<crate::verifysvc::VerifyServers>,
    cluster_id: &[u8; 32],
    grace: Duration,
) -> ExitCode {
    match verify {
        Some(servers) => crate::cmd_lifecycle::serve_until_signal(servers, cluster_id, grace).await,
        None => ExitCode::SUCCESS,
    }
}

/// On a signal: before the lock, stop now; after it, wait (up to `grace`) for the running path to finish.
async fn stop(node: &Arc<Node>, grace: Duration) -> Option<Outcome> {
    if !node.lock().is_locked() {
        tracing::info!("bootstrapper: stopping (node not bootstrapped)");
        return None;
    }
    tracing::info!("bootstrapper: signal received while bootstrapping; waiting for it to finish");
    let mut outcome = node.outcome();
    tokio::time::timeout(grace, outcome.wait_for(Option::is_some))
        .await
        .ok()
        .and_then(|r| r.ok().and_then(|o| o.clone()))
}

/// The `--backend` choice: the one place that names the [`ClusterBackend`] implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BackendChoice {
    /// The real `kubeadm`.
    Kubeadm,
    /// Write configuration and PKI, run nothing.
    DryRun,
    /// `kubeadm` if on PATH, else the dry run.
    Auto,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "kubeadm" => Ok(BackendChoice::Kubeadm),
            "dry-run" => Ok(BackendChoice::DryRun),
            "auto" => Ok(BackendChoice::Auto),
            other => Err(format!("unknown backend {other:?} (kubeadm, dry-run or auto)")),
        }
    }
}

/// The backend for `choice`, working in `state_dir`, with the node's network facts.
fn select_backend(
    choice: BackendChoice,
    state_dir: &Path,
    network: &crate::kubeadm::NodeNetwork,
) -> Arc<dyn ClusterBackend> {
    let kubeadm = |program: PathBuf| {
        Arc::new(KubeadmBackend::new(program, state_dir).with_network(network.clone())) as Arc<dyn ClusterBackend>
    };
    let dry_run = || Arc::new(DryRunBackend::new(state_dir).with_network(network.clone())) as Arc<dyn ClusterBackend>;
    match choice {
        BackendChoice::Kubeadm => kubeadm(PathBuf::from("kubeadm")),
        BackendChoice::DryRun => dry_run(),
        BackendChoice::Auto => match find_on_path("kubeadm") {
            Some(p) => kubeadm(p),
            None => dry_run(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn arguments() {
        Args::command().debug_assert();
        let base = ["attest-bootstrapper", "--tpm", "swtpm:host=127.0.0.1,port=1", "--state-dir", "/s"];
        let with = |extra: &[&str]| {
            Args::try_parse_from(base.iter().chain(["--init-secret-hash", "/h"].iter()).chain(extra.iter()))
        };
        assert!(with(&[]).is_err(), "--disk has no default");
        let a = with(&["--disk", "luks-header:/img", "--join-service", "127.0.0.1:1", "--join-service", "127.0.0.1:2"])
            .unwrap();
        assert_eq!(a.join_service.len(), 2);
        assert_eq!(a.verify_listen.0, Some("0.0.0.0:30081".parse().unwrap()));
        assert_eq!(a.verify_http_listen.0, Some("0.0.0.0:30080".parse().unwrap()));
        assert_eq!(a.recover_listen.0, Some("0.0.0.0:9999".parse().unwrap()));
        assert!(matches!(a.disk, DiskChoice::LuksHeader(_)));
        let off = with(&["--disk", "key-file", "--verify-listen", "none", "--verify-http-listen", "none"]).unwrap();
        assert!(!off.life().serves_verify());
        assert!(with(&["--disk", "luks:relative"]).is_err());
    }
}
