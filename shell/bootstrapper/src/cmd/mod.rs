//! `attest-bootstrapper`: turns a fresh node into the first node of a cluster (init) or a member of one
//! (join) — `docs/ARCHITECTURE.md`, "Bootstrapper"; the design is in the `attest_bootstrapper` crate.
//!
//! ```text
//! attest-bootstrapper --tpm swtpm:host=127.0.0.1,port=2321 --state-dir DIR --init-secret-hash FILE
//!     [--variant auto|VARIANT]
//!     [--snp-device /dev/sev-guest|tsm:/dir|sim:/path] [--snp-leaf FILE] [--event-log FILE]
//!     [--tdx-root /|sim:/dir] [--tdx-quote-endpoint URL]
//!     [--init-listen 0.0.0.0:9000] [--registration ADDR] [--node-name NAME]
//!     [--join-service ADDR --measurements FILE (--measurements-signature FILE --measurements-public-key FILE
//!      | --dangerously-skip-measurements-signature) [--join-service-ek-ca FILE …] [--join-service-variant V …]
//!      [--snp-policy FILE] [--kds-store DIR] [--kds-url URL|offline] [--allow-stale-crl]
//!      [--dangerous-allow-unpinned-launch] [--dangerous-test-roots DIR]
//!      [--tdx-platform FMSPC[:CA] … [--tdx-policy FILE] [--pcs-store DIR] [--pcs-url URL | --pcs-offline]]]
//!     [--control-plane] [--disk key-file|luks:/dev/X] [--runtime-dir /run/attest]
//!     [--backend kubeadm|dry-run] [--api-server-endpoint HOST:PORT] [--log-level info] [--shutdown-grace 30]
//!     --disk luks:/dev/X|luks-header:FILE|key-file   [--join-service ADDR …] [--join-endpoints-file FILE]
//!     [--join-endpoints-from aws|gcp|azure [--join-endpoints-key KEY] [--metadata-url URL]]
//!     [--recover-listen 0.0.0.0:9999|none] [--verify-listen 0.0.0.0:30081|none] [--verify-http-listen 0.0.0.0:30080|none]
//!     [--node-ip IP] [--control-plane-endpoint HOST:PORT] [--provider-id ID] [--metrics-listen ADDR|none]
//! ```
//!
//! The join client verifies the join service before it believes a ticket ([`JoinServiceTrust`]): as a
//! service of `--join-service-variant` (by default this node's own variant: the service attests with the
//! hardware of the control-plane node it runs on), against `--measurements` (signature-checked unless
//! explicitly waived), with that variant's validator — an SNP service's launch pinned and its CRLs loaded at
//! start, its report binding the handshake; a TDX service's MRTD pinned (`--tdx-policy`, or the measurements
//! file for `qemu-tdx`) and the collateral of each `--tdx-platform` loaded at start and kept fresh
//! (`attest_trust::tdx`); only a `qemu-vtpm` service's AK by credential activation against
//! `--join-service-ek-ca`, which no other variant needs. So does a rebooted node asking for a rejoin ticket.
//! The init server, the recovery endpoint and the verify service attest with the node's issuer of its
//! variant (`attest_attester::issuer::NodeIssuer`). The backend is `kubeadm` unless `--backend dry-run` is
//! given; a missing `kubeadm` is a configuration error (exit 3), never a silent dry run, and a dry run is
//! announced in the logs, the init stream, every stdout event (`"dry_run": true`) and the node state.
//!
//! The node's whole life (crate docs, [`crate::life::lifecycle`]): a fresh node serves init and joins; a node
//! marked for reset (its bootstrap failed after the lock, then it rebooted) is reset and starts fresh; a
//! bootstrapped node after a reboot gets its disk key back through a rejoin ticket or the recovery endpoint
//! (`cmd_lifecycle.rs`); and every node serves its attestation (verify service) for as long as the
//! process runs.
//!
//! Stdout carries machine-readable progress: first `listening on ADDR` (the init server's address, useful
//! with port 0), then one JSON object per line: `{"event":"bootstrapped","path":"init"|"join",
//! "cluster_id":HEX}`, `{"event":"already-bootstrapped",…}`, `{"event":"refused","reason":…}`,
//! `{"event":"failed",…}`, `{"event":"join-client-stopped",…}`, `{"event":"stopped"}`. Logs go to stderr.
//!
//! Once the node is bootstrapped the init server stops (as Constellation's bootstrapper stops its own), after
//! its response stream is drained (up to the shutdown grace). With the verify service on (the default) the
//! process then keeps serving the node's attestation until SIGTERM/SIGINT; with both verify listeners `none`
//! it exits with 0. The process never notifies systemd of readiness (no `sd_notify`): run it as a
//! `Type=simple` unit, as `deploy/systemd/attest-bootstrapper.service` does (`Type=notify` would time out;
//! `Type=oneshot` would hold up the boot until the node is bootstrapped, and for good with the verify
//! service on). SIGTERM/SIGINT stop it gracefully: before the lock it simply stops; after the lock it waits
//! (up to the grace) for the running init or join to finish.
//!
//! The attestation variant is detected from the machine by default (`attest_attester::issuer::select`: an
//! ambiguous or failed detection stops the bootstrapper with exit 1, naming what it found; `qemu-vtpm` is
//! never detected, only chosen). A simulated SEV-SNP device (`--snp-device sim:/path`) is accepted only by
//! builds with the cargo feature `dangerous-test-roots` (the demo's); release builds refuse it (exit 2).
//!
//! Exit statuses: the table in `cmd/exit.rs` (0 done, 1 runtime, 2 usage, 3 configuration, 4 failed after
//! the lock, 5 inconsistent state, 6 rejoin refused, 7 rejoin failed), printed by `--help`. Status 4 marks
//! the node for reset: the systemd unit reboots it, and the next start resets it to a fresh node; it is also
//! the answer to a bootstrap interrupted after the lock in this boot (`{"event":"interrupted",…}`: killed or
//! crashed between the lock and the end of bootstrapping, `crate::life::state`).

mod cmd_lifecycle;
pub(crate) mod exit;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::dryrun::DryRunBackend;
use crate::cluster::kubeadm::KubeadmBackend;
use crate::cluster::process::find_on_path;
use crate::join::registration::AkRegistrationStep;
use crate::{
    ClusterBackend, DiskSetup, InitSecretHash, JoinClient, JoinConfig, JoinError, JoinServiceTrust, KeyFileDisk,
    LuksDisk, Node, NodeConfig, NodeLock, Outcome, PcrBackend, Phase, Startup, serve_init,
};
use attest_atls::AttestationIssuer;
use attest_attester::issuer::{HardwareArgs, NodeIssuer, VariantChoice};
use attest_attester::registration::ActivationService;
use attest_engine::gce::GceVerifier;
use attest_engine::snp::SnpVerifier;
use attest_engine::tdx::TdxVerifier;
use attest_engine::variant::{AkTrust, LaunchPin, Variant};
use attest_registration::EkCaBundle;
use attest_trust::tdx::{InstalledCollateral, TdxArgs};
use attest_trust::{Trust, TrustArgs, ValidatorFactory};
use clap::Parser;
use clap::builder::TypedValueParser as _;
use tokio::signal::unix::{SignalKind, signal};

/// The `--disk` choice.
#[derive(Clone, Debug)]
enum DiskChoice {
    KeyFile,
    Luks(PathBuf),
    LuksHeader(PathBuf),
}

fn parse_disk(s: &str) -> Result<DiskChoice, StartError> {
    match s {
        "key-file" => Ok(DiskChoice::KeyFile),
        _ => match (s.strip_prefix("luks:"), s.strip_prefix("luks-header:")) {
            (Some(dev), _) if dev.starts_with('/') => Ok(DiskChoice::Luks(PathBuf::from(dev))),
            (_, Some(file)) if file.starts_with('/') => Ok(DiskChoice::LuksHeader(PathBuf::from(file))),
            _ => Err(StartError::Disk),
        },
    }
}

/// The node bootstrapper: init server (aTLS, the node attests) and join client, racing for the node lock.
#[derive(Parser, Debug)]
#[command(name = "attest-bootstrapper", version, after_help = attest_util::exit::help(exit::TABLE))]
struct Args {
    /// The node's hardware: TPM, SEV-SNP guest device, leaf certificate, event log.
    #[command(flatten)]
    hardware: HardwareArgs,
    /// Attestation variant of this node.
    #[arg(long, default_value = "auto", value_name = "VARIANT",
          value_parser = attest_trust::variant_arg::node_variant().map(VariantChoice::from))]
    variant: VariantChoice,
    /// State directory (node state, kubeadm configuration, dry-run PKI).
    #[arg(long, value_name = "DIR")]
    state_dir: PathBuf,
    /// Init server address (aTLS gRPC).
    #[arg(long, default_value = "0.0.0.0:9000")]
    init_listen: SocketAddr,
    /// Join service address (repeatable: tried in turn, with failover); without any the node only waits for
    /// init. Needs --measurements: the join service is verified before its ticket is believed.
    #[arg(long, value_name = "ADDR", requires = "measurements")]
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
    /// Directory of the key file and disk UUID in key-file mode and of the node lock's intent marker (a
    /// tmpfs in production: it must not survive a reboot).
    #[arg(long, default_value = "/run/attest", value_name = "DIR")]
    runtime_dir: PathBuf,
    /// Cluster backend: kubeadm (must be on PATH; `auto` is the same), or dry-run (runs nothing, announced).
    #[arg(long, default_value = "kubeadm")]
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
    /// Expected measurements (the file the join service verifies nodes against) the join service itself must
    /// meet.
    #[arg(long, value_name = "FILE")]
    measurements: Option<PathBuf>,
    /// CA certificate (PEM) of the join service TPM's EK certificate (repeatable: root and intermediates).
    #[arg(long = "join-service-ek-ca", value_name = "FILE")]
    join_service_ek_ca: Vec<PathBuf>,
    /// Attestation variant the join service may attest with (repeatable) [default: this node's variant].
    #[arg(long = "join-service-variant", value_parser = attest_trust::variant_arg::any())]
    join_service_variants: Vec<Variant>,
    /// SNP policy file (TOML or JSON) for an SNP join service variant.
    #[arg(long, value_name = "FILE")]
    snp_policy: Option<PathBuf>,
    /// DANGEROUS: verify the join service's SIMULATED hardware against the test roots in DIR instead of AMD's,
    /// Google's and Intel's (written by attest-hwsim). Only builds with the cargo feature dangerous-test-roots
    /// accept it.
    #[arg(long, value_name = "DIR")]
    dangerous_test_roots: Option<PathBuf>,
    /// TDX collateral (per platform, from the PCS store or Intel's PCS) and policy for a TDX join service.
    #[command(flatten)]
    tdx: TdxArgs,
    /// Measurements signature, launch pinning, CRLs and their waivers (for verifying the join service).
    #[command(flatten)]
    trust: TrustArgs,
    /// File of join endpoints (one HOST:PORT a line), re-read on every round; with or instead of --join-service.
    #[arg(long, value_name = "FILE", requires = "measurements")]
    join_endpoints_file: Option<PathBuf>,
    /// Join endpoints from this cloud's instance metadata, asked every round (aws: IMDSv2 instance tag; gcp:
    /// instance or project attribute; azure: IMDS compute tag); with or instead of the flags and the file.
    #[arg(long, value_name = "CLOUD", value_parser = parse_cloud, requires = "measurements")]
    join_endpoints_from: Option<crate::metadata::Cloud>,
    /// The tag or attribute holding the join endpoints (HOST[:PORT] entries, space- or comma-separated).
    #[arg(long, value_name = "KEY", default_value = crate::metadata::DEFAULT_KEY)]
    join_endpoints_key: String,
    /// The metadata service's base URL (all three clouds: the link-local address).
    #[arg(long, value_name = "URL", default_value = crate::metadata::DEFAULT_BASE_URL)]
    metadata_url: String,
    /// The metadata source built from the three flags above (at start, so that a bad URL or key is a usage
    /// error, and shared by the join and rejoin clients, so that its last good list is too).
    #[arg(skip)]
    metadata: Option<Arc<crate::metadata::MetadataEndpoints>>,
    /// Recovery endpoint (recover.API over aTLS, this node attests) of a rebooted node, or none.
    #[arg(long, default_value = "0.0.0.0:9999")]
    recover_listen: cmd_lifecycle::Listen,
    /// Verify service, gRPC (verify.API/GetAttestation), or none.
    #[arg(long, default_value = "0.0.0.0:30081")]
    verify_listen: cmd_lifecycle::Listen,
    /// Verify service, plain HTTP (GET /?nonce=), or none.
    #[arg(long, default_value = "0.0.0.0:30080")]
    verify_http_listen: cmd_lifecycle::Listen,
    /// Prometheus /metrics of the node's endpoints (admission limits and decisions), or none.
    #[arg(long, default_value = "none")]
    metrics_listen: cmd_lifecycle::Listen,
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
    fn life(&self) -> cmd_lifecycle::LifeArgs {
        cmd_lifecycle::LifeArgs {
            verify_grpc: self.verify_listen.0,
            verify_http: self.verify_http_listen.0,
            recover: self.recover_listen.0,
            join_services: self.join_service.clone(),
            join_endpoints_file: self.join_endpoints_file.clone(),
            metadata: self.metadata.clone(),
            grace: Duration::from_secs(self.shutdown_grace),
        }
    }
}

fn parse_cloud(s: &str) -> Result<crate::metadata::Cloud, StartError> {
    crate::metadata::Cloud::from_name(s).ok_or_else(|| StartError::Cloud(s.to_owned()))
}

/// The variants the join service may attest with: `--join-service-variant`, else this node's own variant
/// (`own`; `None` while the node's variant is still to be detected). A join service on a node of the
/// cluster attests with that node's hardware, so a node of a one-variant cluster expects its own variant.
fn join_service_variants(args: &Args, own: Option<Variant>) -> Option<Vec<Variant>> {
    if args.join_service_variants.is_empty() {
        return own.map(|v| vec![v]);
    }
    let mut variants: Vec<Variant> = Vec::new();
    for &v in &args.join_service_variants {
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    Some(variants)
}

/// What verifying a join service needs whatever its variant, read at start before the TPM is opened: the
/// measurements (signature checked), the validator factory (SNP and TDX policies, pinned or test roots) and
/// the EK CA; `tdx_collateral`: the test roots brought the TDX collateral.
struct TrustInputs {
    path: PathBuf,
    loaded: attest_trust::LoadedMeasurements,
    factory: ValidatorFactory,
    tdx_collateral: bool,
    ek_ca: Option<EkCaBundle>,
}

fn trust_inputs(args: &Args) -> Result<TrustInputs, StartError> {
    let path = args.measurements.clone().ok_or(StartError::NoMeasurements)?;
    let loaded = args.trust.measurements_trust().and_then(|t| t.load(&path))?;
    let snp_policy = args.trust.snp_policy(args.snp_policy.as_deref())?;
    let tdx_policy = args.tdx.policy()?;
    let (snp, gce, tdx) = verifiers(args)?;
    let tdx_collateral = tdx.is_some();
    let factory = ValidatorFactory {
        snp: Arc::new(snp),
        gce: Arc::new(gce),
        tdx: Arc::new(tdx.unwrap_or_default()),
        snp_policy,
        tdx_policy,
        ..ValidatorFactory::default()
    };
    let ek_ca = if args.join_service_ek_ca.is_empty() {
        None
    } else {
        Some(EkCaBundle::from_files(&args.join_service_ek_ca).map_err(StartError::EkCa)?)
    };
    Ok(TrustInputs { path, loaded, factory, tdx_collateral, ek_ca })
}

/// How the join client verifies a join service of `variants`: `inputs`, the launch pinning of each variant,
/// the CRLs (SEV-SNP) and collateral (TDX: of each `--tdx-platform`, returned to be kept fresh) loaded now —
/// the test PKI's with `--dangerous-test-roots` —, and the EK CA for a variant whose AK is trusted through a
/// registry (`qemu-vtpm`) — and for no other.
async fn join_service_trust(
    args: &Args,
    inputs: &TrustInputs,
    variants: &[Variant],
) -> Result<(Arc<JoinServiceTrust>, Option<InstalledCollateral>), StartError> {
    let factory = &inputs.factory;
    let mut probes = Vec::new();
    for &v in variants {
        probes.push(if v.info().launch == LaunchPin::TdxMrtd {
            // Pinned by the TDX policy's MRTD (measured by TD registers: the measurements file's MRTD).
            factory.validator_for(v, &inputs.loaded.document)?
        } else {
            factory.launch_probe(v)
        });
    }
    let launch = attest_trust::check_launch(&probes)?;
    let collateral = if variants.iter().any(|v| v.is_tdx()) && !inputs.tdx_collateral {
        let installed = args.tdx.install(&factory.tdx).await?;
        if installed.is_none() {
            return Err(StartError::NoTdxPlatform);
        }
        installed
    } else {
        None
    };
    // With test roots (simulated hardware) the CRLs are the test PKI's, installed from their directory.
    let crl_variants = if args.dangerous_test_roots.is_some() { &[][..] } else { variants };
    let crls = args.trust.revocation(Arc::clone(&factory.snp), crl_variants, &factory.snp_policy).await?;
    let trust = Arc::new(Trust {
        measurements: inputs.loaded.signature,
        launch,
        revocation: (!crls.wanted().is_empty()).then_some(crls),
    });
    if inputs.ek_ca.is_some() && !variants.iter().any(|v| v.info().ak == AkTrust::Registry) {
        tracing::warn!(variants = ?variants, "bootstrapper: --join-service-ek-ca is not used: no join service \
            variant configured trusts its AK through an EK certificate");
    }
    let server =
        JoinServiceTrust::new(variants, &inputs.loaded.document, factory, inputs.ek_ca.clone(), Arc::clone(&trust))?;
    tracing::info!(
        measurements = %inputs.path.display(),
        measurements_sha256 = %hex::encode(inputs.loaded.file_sha256),
        variants = ?variants,
        how = %server.describe(),
        waivers = %trust.waivers_field(),
        "bootstrapper: the join service will be verified before a ticket is accepted"
    );
    Ok((Arc::new(server), collateral))
}

/// The exit of a bootstrapper that cannot verify a join service (configuration: exit 3, announced as a
/// refusal).
fn refuse_join_config(e: &StartError) -> ExitCode {
    tracing::error!(error = %e, "bootstrapper: cannot verify a join service; refusing to start");
    event(&serde_json::json!({"event": "refused", "reason": e.to_string()}));
    ExitCode::from(exit::CONFIG.code)
}

/// The SNP, GCE and TDX verifiers the join service is checked with: AMD's, Google's and Intel's pinned roots
/// (TDX collateral installed later, per `--tdx-platform`: `None` here), or (`--dangerous-test-roots`, feature
/// builds only) the test roots of simulated hardware, with the test TDX collateral.
fn verifiers(args: &Args) -> Result<(SnpVerifier, GceVerifier, Option<TdxVerifier>), StartError> {
    match &args.dangerous_test_roots {
        None => Ok((SnpVerifier::new(), GceVerifier::new(), None)),
        Some(dir) => test_root_verifiers(dir),
    }
}

#[cfg(feature = "dangerous-test-roots")]
fn test_root_verifiers(dir: &Path) -> Result<(SnpVerifier, GceVerifier, Option<TdxVerifier>), StartError> {
    let roots = attest_kds::test_roots::TestRoots::load(dir)?;
    tracing::warn!(roots = %roots.describe(), "bootstrapper: DANGEROUS: verifying the join service's SIMULATED \
        hardware against TEST ROOTS");
    let v = roots.verifiers()?;
    Ok((v.snp, v.gce, v.tdx))
}

#[cfg(not(feature = "dangerous-test-roots"))]
fn test_root_verifiers(_: &Path) -> Result<(SnpVerifier, GceVerifier, Option<TdxVerifier>), StartError> {
    Err(StartError::TestRootsRefused)
}

/// Why a build without the feature refuses test roots and simulated devices.
const TEST_ROOTS_REFUSED: &str = "this build cannot use simulated hardware or trust test roots (built without the \
    feature dangerous-test-roots)";

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
    let mut args = Args::parse();
    attest_util::init_service_logging(args.log_level);
    // Fault injection for the crash matrix: only builds with the feature arm it (attest_util::fault).
    #[cfg(feature = "fault-injection")]
    attest_util::fault::arm_from_env("bootstrapper");
    #[cfg(not(feature = "fault-injection"))]
    attest_util::fault::warn_if_requested("bootstrapper");
    if (args.hardware.is_simulated() || args.dangerous_test_roots.is_some()) && !cfg!(feature = "dangerous-test-roots")
    {
        tracing::error!(snp_device = %args.hardware.snp_device, test_roots = ?args.dangerous_test_roots,
            "bootstrapper: {TEST_ROOTS_REFUSED}");
        return ExitCode::from(attest_util::exit::USAGE.code);
    }
    let node_name = args.node_name.clone().unwrap_or_else(host_name);
    if !crate::serve::request::is_dns_name(&node_name) {
        tracing::error!(%node_name, "bootstrapper: the node name is not a DNS name (lower case, digits, '-', '.')");
        return ExitCode::from(attest_util::exit::USAGE.code);
    }
    let secret_hash = match InitSecretHash::load(&args.init_secret_hash) {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot load the init secret hash");
            return ExitCode::from(exit::CONFIG.code);
        }
    };
    // Configuration before the TPM: the node's network facts, the cluster backend and how the join service is
    // verified.
    let network = crate::cluster::kubeadm::NodeNetwork {
        node_ip: args.node_ip,
        control_plane_endpoint: args.control_plane_endpoint.clone(),
        provider_id: args.provider_id.clone(),
    };
    if let Some(e) = &network.control_plane_endpoint
        && !crate::join::ticket::is_endpoint(e)
    {
        tracing::error!(endpoint = %e, "bootstrapper: --control-plane-endpoint is not HOST:PORT");
        return ExitCode::from(attest_util::exit::USAGE.code);
    }
    let backend = match select_backend(args.backend, &args.state_dir, &network) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: no cluster backend");
            return ExitCode::from(exit::CONFIG.code);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot start the runtime");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    if let Some(cloud) = args.join_endpoints_from {
        match crate::metadata::MetadataEndpoints::new(cloud, &args.metadata_url, &args.join_endpoints_key) {
            Ok(m) => args.metadata = Some(Arc::new(m)),
            Err(e) => {
                tracing::error!(error = %e, "bootstrapper: --join-endpoints-from");
                return ExitCode::from(attest_util::exit::USAGE.code);
            }
        }
    }
    // How the join service is verified is configuration, checked before the TPM is opened: its inputs always,
    // the whole of it when its variants are known now (given, or this node's fixed variant); a detected
    // variant is known once the issuer is open.
    let joins = !args.join_service.is_empty() || args.join_endpoints_file.is_some() || args.metadata.is_some();
    let inputs = if joins {
        match trust_inputs(&args) {
            Ok(i) => Some(i),
            Err(e) => return refuse_join_config(&e),
        }
    } else {
        None
    };
    let fixed = match args.variant {
        VariantChoice::Fixed(v) => Some(v),
        VariantChoice::Auto => None,
    };
    let (mut server_trust, mut tdx_collateral) = (None, None);
    if let (Some(inputs), Some(variants)) = (&inputs, join_service_variants(&args, fixed)) {
        match runtime.block_on(join_service_trust(&args, inputs, &variants)) {
            Ok((t, c)) => (server_trust, tdx_collateral) = (Some(t), c),
            Err(e) => return refuse_join_config(&e),
        }
    }
    let issuer = match args.hardware.open(args.variant) {
        Ok(v) => Arc::new(v),
        Err(e) => {
            tracing::error!(error = %e, tcti = %args.hardware.tpm, "bootstrapper: cannot open the node's attestation issuer");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    if issuer.is_simulated() {
        tracing::warn!(variant = %issuer.variant(), snp_device = %args.hardware.snp_device,
            "bootstrapper: SIMULATED SEV-SNP hardware: this node's evidence is signed by a TEST ROOT");
    }
    tracing::info!(variant = %issuer.variant(), "bootstrapper: attesting");
    if let (Some(inputs), None) = (&inputs, &server_trust) {
        match runtime.block_on(join_service_trust(&args, inputs, &[issuer.variant()])) {
            Ok((t, c)) => (server_trust, tdx_collateral) = (Some(t), c),
            Err(e) => return refuse_join_config(&e),
        }
    }
    let ek_certificate = issuer.qemu().map(|q| q.ek_certificate().to_vec()).unwrap_or_default();
    let lock = match NodeLock::open(Arc::clone(&issuer) as Arc<dyn PcrBackend>) {
        Ok(l) => Arc::new(l.with_intent_dir(&args.runtime_dir)),
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot read PCR 15");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    let disk: Arc<dyn DiskSetup> = match &args.disk {
        DiskChoice::KeyFile => Arc::new(KeyFileDisk::new(&args.runtime_dir)),
        DiskChoice::Luks(dev) => Arc::new(LuksDisk::new(dev).with_mount(&args.state_dir)),
        DiskChoice::LuksHeader(file) => Arc::new(LuksDisk::header_only(file)),
    };
    let config = NodeConfig {
        state_dir: args.state_dir.clone(),
        node_name,
        control_plane: args.control_plane,
        api_server_endpoint: args.api_server_endpoint.clone(),
    };
    let node = Arc::new(Node::new(config, lock, disk, backend));
    tracing::info!(
        backend = node.backend().name(),
        dry_run = node.backend().is_dry_run(),
        state_dir = %args.state_dir.display(),
        disk = %node.disk().protection(),
        "bootstrapper: starting"
    );

    // The node's /metrics, for the whole life of the process (whichever branch below runs).
    let _metrics = match args.metrics_listen.0 {
        Some(addr) => match runtime.block_on(cmd_lifecycle::start_metrics(addr, node.metrics())) {
            Ok(endpoint) => Some(endpoint),
            Err(e) => {
                tracing::error!(error = %e, %addr, "bootstrapper: cannot serve /metrics");
                return ExitCode::from(exit::RUNTIME.code);
            }
        },
        None => None,
    };
    match node.startup() {
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot read the node state");
            event(&serde_json::json!({"event": "refused", "reason": e.to_string()}));
            return ExitCode::from(exit::INCONSISTENT.code);
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "bootstrapper: refusing init and join");
            event(&serde_json::json!({"event": "refused", "reason": e.to_string()}));
            return ExitCode::from(exit::INCONSISTENT.code);
        }
        Ok(Ok(Startup::Bootstrapped(state))) => {
            let failed = state.phase == Phase::Failed;
            tracing::info!(cluster_id = %hex::encode(state.cluster_id), role = %state.role, phase = ?state.phase,
                "bootstrapper: node already bootstrapped; nothing to serve");
            event(&serde_json::json!({"event": "already-bootstrapped", "cluster_id": hex::encode(state.cluster_id),
                "role": state.role.to_string(), "failed": failed, "dry_run": state.dry_run}));
            return if failed {
                ExitCode::from(exit::FAILED.code)
            } else {
                cmd_lifecycle::run_bootstrapped(
                    &(Arc::clone(&issuer) as _),
                    state.cluster_id,
                    &args.life(),
                    node.metrics(),
                )
            };
        }
        Ok(Ok(Startup::Rejoin(state))) => {
            // The rejoin ticket is believed only from a verified join service of this cluster (as on join).
            let call = server_trust.and_then(|t| {
                crate::join::endpoints::AtlsCall::new(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>, t)
                    .inspect_err(|e| tracing::error!(error = %e, "bootstrapper: cannot build the aTLS connector"))
                    .ok()
            });
            return cmd_lifecycle::run_rejoin(node, state, &(Arc::clone(&issuer) as _), call, &args.life());
        }
        Ok(Ok(Startup::Interrupted { cluster_id, state })) => {
            // PCR 15 cannot be taken back in this boot: a reboot clears it (the unit reboots on exit 4), and
            // the next start resets the node or, with no state written yet, finds it fresh.
            tracing::error!(cluster_id = %hex::encode(cluster_id), phase = ?state.as_ref().map(|s| s.phase),
                "bootstrapper: bootstrapping was interrupted after the node lock in this boot; marked for reset");
            event(&serde_json::json!({"event": "interrupted", "cluster_id": hex::encode(cluster_id),
                "state": state.is_some(), "marked_for_reset": true}));
            return ExitCode::from(exit::FAILED.code);
        }
        Ok(Ok(Startup::Reset(state))) => match crate::life::lifecycle::reset(&node, &state) {
            Ok(lines) => {
                for line in &lines {
                    tracing::warn!("bootstrapper: {line}");
                }
                event(&serde_json::json!({"event": "reset", "cluster_id": hex::encode(state.cluster_id)}));
            }
            Err(e) => {
                tracing::error!(error = %e, "bootstrapper: cannot reset the node");
                return ExitCode::from(exit::RUNTIME.code);
            }
        },
        Ok(Ok(Startup::Fresh)) => {}
    }

    let tdx_collateral = tdx_collateral.zip(inputs.map(|i| i.factory.tdx));
    runtime.block_on(run(&args, node, secret_hash, issuer, ek_certificate, server_trust, tdx_collateral))
}

async fn run(
    args: &Args,
    node: Arc<Node>,
    secret_hash: InitSecretHash,
    issuer: Arc<NodeIssuer>,
    ek_certificate: Vec<u8>,
    server_trust: Option<Arc<JoinServiceTrust>>,
    tdx_collateral: Option<(InstalledCollateral, Arc<TdxVerifier>)>,
) -> ExitCode {
    let dry_run = node.backend().is_dry_run();
    let grace = Duration::from_secs(args.shutdown_grace);
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot install the SIGTERM handler");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    let listener = match tokio::net::TcpListener::bind(args.init_listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, addr = %args.init_listen, "bootstrapper: cannot bind the init server");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    // AK registration (credential activation) is the qemu-vtpm variant's way of trusting the AK.
    let activation = issuer
        .qemu()
        .filter(|_| !ek_certificate.is_empty())
        .map(|q| Arc::new(ActivationService::new(Arc::clone(q), ek_certificate.clone())));
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
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    tracing::info!(%addr, "bootstrapper: init server listening");
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {addr}");
        let _ = out.flush();
    }

    let verify = match cmd_lifecycle::start_verify(&(Arc::clone(&issuer) as _), &args.life(), node.metrics()).await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "bootstrapper: cannot serve the verify service");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    let mut join_task = None;
    // The join service's CRLs (SNP variants) stay fresh while the join client waits: refreshed before their
    // nextUpdate for as long as the bootstrapper runs.
    let (_crl_stop, crl_stopped) = tokio::sync::watch::channel(false);
    let _tdx_refresher = tdx_collateral.map(|(c, verifier)| args.tdx.keep_fresh(c, verifier, crl_stopped.clone()));
    let _crl_refresher =
        server_trust.as_ref().and_then(|t| t.trust().revocation.as_ref()).map(|k| k.spawn(crl_stopped));
    if let (Some(endpoints), Some(server_trust)) = (args.life().endpoint_source(), server_trust) {
        match crate::join::endpoints::AtlsCall::new(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>, server_trust) {
            Ok(call) => {
                let source = Arc::new(crate::join::endpoints::FailoverSource::new(endpoints, Arc::new(call)));
                let mut client = JoinClient::new(Arc::clone(&node), source, JoinConfig::default());
                if let (Some(reg), Some(qemu)) = (args.registration, issuer.qemu()) {
                    client = client.with_pre_join(Arc::new(AkRegistrationStep::new(
                        reg,
                        Arc::clone(qemu),
                        ek_certificate.clone(),
                    )));
                }
                tracing::info!(endpoints = ?args.join_service, file = ?args.join_endpoints_file,
                    metadata = args.join_endpoints_from.map(crate::metadata::Cloud::name),
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
            announce_dry_run(dry_run, "init");
            event(&serde_json::json!({"event": "bootstrapped", "path": "init", "cluster_id": hex::encode(cluster_id),
                "dry_run": dry_run}));
            keep_serving(verify, &cluster_id, grace).await
        }
        Some(Outcome::Joined { cluster_id }) => {
            announce_dry_run(dry_run, "join");
            event(&serde_json::json!({"event": "bootstrapped", "path": "join", "cluster_id": hex::encode(cluster_id),
                "dry_run": dry_run}));
            keep_serving(verify, &cluster_id, grace).await
        }
        Some(Outcome::Failed { holder, error }) => {
            event(&serde_json::json!({"event": "failed", "path": holder.to_string(), "error": error,
                "dry_run": dry_run, "marked_for_reset": true}));
            if let Some(v) = verify {
                v.shutdown(grace).await;
            }
            ExitCode::from(exit::FAILED.code)
        }
    }
}

/// A dry-run node says so when it reports itself bootstrapped.
fn announce_dry_run(dry_run: bool, path: &str) {
    if dry_run {
        tracing::warn!(
            path,
            "bootstrapper: bootstrapped as a DRY RUN: no kubeadm ran; the node is locked and has \
            its keys but is part of no Kubernetes cluster"
        );
    }
}

/// After bootstrapping: serve the attestation until stopped, when the verify service runs.
async fn keep_serving(
    verify: Option<crate::serve::verifysvc::VerifyServers>,
    cluster_id: &[u8; 32],
    grace: Duration,
) -> ExitCode {
    match verify {
        Some(servers) => cmd_lifecycle::serve_until_signal(servers, cluster_id, grace).await,
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
    /// The real `kubeadm` (found on PATH at start, or the bootstrapper does not start).
    Kubeadm,
    /// Write configuration and PKI, run nothing: only when chosen, and announced everywhere.
    DryRun,
}

impl std::str::FromStr for BackendChoice {
    type Err = StartError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            // `auto` names kubeadm too: there is no fallback to a dry run.
            "kubeadm" | "auto" => Ok(BackendChoice::Kubeadm),
            "dry-run" => Ok(BackendChoice::DryRun),
            other => Err(StartError::Backend(other.to_owned())),
        }
    }
}

/// The backend for `choice`, working in `state_dir`, with the node's network facts. `kubeadm` must be on
/// PATH: a node without it refuses to start instead of locking itself and failing later (or silently running
/// nothing).
fn select_backend(
    choice: BackendChoice,
    state_dir: &Path,
    network: &crate::cluster::kubeadm::NodeNetwork,
) -> Result<Arc<dyn ClusterBackend>, StartError> {
    match choice {
        BackendChoice::Kubeadm => match find_on_path("kubeadm") {
            Some(program) => Ok(Arc::new(KubeadmBackend::new(program, state_dir).with_network(network.clone()))),
            None => Err(StartError::NoKubeadm),
        },
        BackendChoice::DryRun => {
            tracing::warn!(state_dir = %state_dir.display(), "bootstrapper: DRY RUN (--backend dry-run): no kubeadm \
                will run; an init or join writes configuration and PKI only, and this node will be part of no \
                Kubernetes cluster");
            Ok(Arc::new(DryRunBackend::new(state_dir).with_network(network.clone())))
        }
    }
}

/// Why the `attest-bootstrapper` command refuses to start: a malformed flag value (clap's value parsers) or a
/// configuration it cannot use. Each message is the one the operator sees.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// `--disk` is none of its three forms.
    Disk,
    /// `--join-endpoints-from` names no known cloud.
    Cloud(String),
    /// `--backend` names no known backend.
    Backend(String),
    /// A `--*-listen` value is neither `HOST:PORT` nor `none`.
    Listen(std::net::AddrParseError),
    /// Join endpoints are configured but no `--measurements`.
    NoMeasurements,
    /// The measurements, their signature, the SNP or TDX policy, the launch pinning or the CRLs.
    Trust(attest_trust::TrustError),
    /// A join service variant's validator could not be built.
    Factory(attest_trust::FactoryError),
    /// The TDX collateral of a `--tdx-platform` could not be installed.
    Collateral(attest_trust::tdx::CollateralError),
    /// A TDX join service variant without any `--tdx-platform`.
    NoTdxPlatform,
    /// `--join-service-ek-ca` could not be read.
    EkCa(attest_registration::Error),
    /// The join service verification could not be set up.
    ServerTrust(crate::ServerTrustError),
    /// `--dangerous-test-roots` could not be used.
    #[cfg(feature = "dangerous-test-roots")]
    TestRoots(attest_kds::test_roots::TestRootsError),
    /// A simulated device or test roots in a build without the feature `dangerous-test-roots`.
    TestRootsRefused,
    /// `--backend kubeadm` without `kubeadm` on PATH.
    NoKubeadm,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Disk => f.write_str("expected luks:/dev/DEVICE, luks-header:/ABSOLUTE/FILE or key-file"),
            Self::Cloud(s) => write!(f, "unknown cloud {s:?} (aws, gcp or azure)"),
            Self::Backend(s) => write!(f, "unknown backend {s:?} (kubeadm or dry-run)"),
            Self::Listen(e) => write!(f, "expected HOST:PORT or none: {e}"),
            Self::NoMeasurements => f.write_str("--join-service needs --measurements"),
            Self::Trust(e) => e.fmt(f),
            Self::Factory(e) => e.fmt(f),
            Self::Collateral(e) => e.fmt(f),
            Self::NoTdxPlatform => f.write_str(
                "a TDX join service variant is configured but no --tdx-platform: no TD quote could be verified",
            ),
            Self::EkCa(e) => write!(f, "--join-service-ek-ca: {e}"),
            Self::ServerTrust(e) => e.fmt(f),
            #[cfg(feature = "dangerous-test-roots")]
            Self::TestRoots(e) => e.fmt(f),
            Self::TestRootsRefused => f.write_str(TEST_ROOTS_REFUSED),
            Self::NoKubeadm => {
                f.write_str("kubeadm is not on PATH (install it, or choose --backend dry-run, which runs nothing)")
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Listen(e) => Some(e),
            Self::Trust(e) => Some(e),
            Self::Factory(e) => Some(e),
            Self::Collateral(e) => Some(e),
            Self::EkCa(e) => Some(e),
            Self::ServerTrust(e) => Some(e),
            #[cfg(feature = "dangerous-test-roots")]
            Self::TestRoots(e) => Some(e),
            Self::Disk
            | Self::Cloud(_)
            | Self::Backend(_)
            | Self::NoMeasurements
            | Self::NoTdxPlatform
            | Self::TestRootsRefused
            | Self::NoKubeadm => None,
        }
    }
}

impl From<attest_trust::TrustError> for StartError {
    fn from(e: attest_trust::TrustError) -> Self {
        Self::Trust(e)
    }
}

impl From<attest_trust::FactoryError> for StartError {
    fn from(e: attest_trust::FactoryError) -> Self {
        Self::Factory(e)
    }
}

impl From<attest_trust::tdx::CollateralError> for StartError {
    fn from(e: attest_trust::tdx::CollateralError) -> Self {
        Self::Collateral(e)
    }
}

impl From<crate::ServerTrustError> for StartError {
    fn from(e: crate::ServerTrustError) -> Self {
        Self::ServerTrust(e)
    }
}

#[cfg(feature = "dangerous-test-roots")]
impl From<attest_kds::test_roots::TestRootsError> for StartError {
    fn from(e: attest_kds::test_roots::TestRootsError) -> Self {
        Self::TestRoots(e)
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
        assert!(
            with(&["--disk", "key-file", "--join-service", "127.0.0.1:1"]).is_err(),
            "a join service needs --measurements"
        );
        let a = with(&[
            "--disk",
            "luks-header:/img",
            "--join-service",
            "127.0.0.1:1",
            "--join-service",
            "127.0.0.1:2",
            "--measurements",
            "/m",
        ])
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

    #[test]
    fn variant_flags_list_the_variant_table() {
        let checked = attest_trust::variant_arg::check_flags_list_the_table(&Args::command()).unwrap();
        assert_eq!(checked, 2, "--variant and --join-service-variant");
    }

    #[test]
    fn help_prints_the_exit_status_table() {
        let help = Args::command().render_long_help().to_string();
        for status in exit::TABLE {
            assert!(help.contains(&format!("  {}  {}", status.code, status.meaning)), "{}: {help}", status.code);
        }
    }
}
