//! `join-service`: serves `join.API` (`docs/ARCHITECTURE.md`, "Join service") over aTLS to attested joining nodes, a Prometheus
//! `/metrics` endpoint, and (optionally) the AK registration service.
//!
//! ```text
//! join-service --tpm TCTI --measurements FILE (--measurements-signature FILE --measurements-public-key FILE
//!       | --dangerously-skip-measurements-signature) --measurement-salt FILE --ak-registry FILE --pki-dir DIR \
//!     --kubernetes-config FILE --api-server-endpoint HOST:PORT [--key-service 127.0.0.1:9010] \
//!     --key-service-ca FILE --key-service-cert FILE --key-service-key FILE \
//!     [--listen 127.0.0.1:9090] [--metrics-listen 127.0.0.1:9091] [--variant qemu-vtpm …] [--snp-policy FILE] \
//!     [--kds-store DIR] [--kds-url URL|offline] [--allow-stale-crl] [--dangerous-allow-unpinned-launch] \
//!     [--token-issuer kubernetes [--kube-api-url URL --kube-ca-file FILE --kube-token-file FILE] \
//!      | --token-issuer dry-run --dry-run-dir DIR] [--registration-listen ADDR --ek-ca FILE …] \
//!     [--ssh-principal-domain DOMAIN …] [--variant-snp-policy VARIANT=FILE …] [--dangerous-test-roots DIR] \
//!     [--tdx-platform FMSPC[:CA] … [--tdx-policy FILE] [--pcs-store DIR] [--pcs-url URL | --pcs-offline]]
//! ```
//!
//! What it refuses to start with (exit 3): an unsigned or badly signed measurements file (unless
//! `--dangerously-skip-measurements-signature`), an SNP variant whose policy pins no launch measurement
//! (unless `--dangerous-allow-unpinned-launch`), stale or missing AMD CRLs for its SNP variants (stale only
//! under `--allow-stale-crl`), key-service TLS files that do not load. Every waiver is logged as a warning at
//! start, named in every verdict line (`waivers=…`) and exported (`attest_join_waiver`). It attests itself to
//! joining nodes (mutual aTLS) with the TPM of the control-plane node it runs on (`--tpm`), and serves
//! `attest.v1.CredentialActivation` on the same port so that nodes can check that TPM's EK certificate. The
//! dry-run token issuer is never a default; chosen, it is announced at start, in every ticket's log line and
//! as `attest_join_dry_run 1`.
//!
//! TDX variants (`qemu-tdx`, `azure-tdx`) need the collateral of every platform they accept
//! (`--tdx-platform`): it is loaded from the PCS store (then Intel's PCS) before the service listens — the
//! service does not start without it — and refreshed ahead of its nextUpdate ([`crate::tdx`]).
//!
//! Several `--variant`s are accepted at once, each with its own measurements (the release-list form of the
//! measurements file carries one entry per `attestationVariant`) and, for SNP variants, its own launch
//! policy (`--variant-snp-policy`). `--dangerous-test-roots` trusts the test roots of simulated hardware
//! instead of AMD's and Google's; only builds with the cargo feature `dangerous-test-roots` accept it (the
//! demo's), release builds exit with 2.
//!
//! Once listening, each listener's address is printed to stdout as `listening on ADDR` (join.API first, then
//! `/metrics`, then registration; useful with port 0); logs go to stderr. The measurements file is polled
//! and validators are swapped when it changes. SIGTERM or Ctrl-C stops accepting connections and lets
//! in-flight calls finish for the grace period.
//!
//! Exit codes: 0 after a graceful shutdown, 1 when the service cannot run (bind failure, signal setup), 2 for a
//! usage error, 3 when the configuration cannot be loaded (measurements, salt, PKI, registry, Kubernetes
//! settings or client).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    JoinService, KeyServiceClient, KubernetesSettings, Metrics, MetricsServer, TicketSettings, ValidatorConfig,
    Validators, load_measurement_salt,
};
use attest_atls::{AtlsAcceptor, AttestationIssuer, Verifier};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, Tpm};
use attest_engine::SnpVerifier;
use attest_engine::gce::GceVerifier;
use attest_engine::tdx::{TdxPolicy, TdxVerifier};
use attest_engine::variant::Variant;
use attest_grpc::{Router, Server, ServerConfig};
use attest_k8s::{ClusterCa, DryRunTokenIssuer, KubeClient, KubeConfig, KubeTokenIssuer, TokenIssuer};
use attest_kds::CrlKeeper;
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsConnector, TlsFiles};
use attest_registration::RegistrationService;
use attest_registration::{EkCaBundle, FileAkRegistry};
use attest_trust::{Trust, TrustArgs};
use clap::{Parser, ValueEnum};
use tokio::signal::unix::{SignalKind, signal};

/// Exit code: the service could not run.
const EXIT_RUNTIME: u8 = 1;
/// Exit code: the configuration could not be loaded.
const EXIT_CONFIG: u8 = 3;

/// How bootstrap tokens are created.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum TokenIssuerKind {
    /// Write the Secret manifests into --dry-run-dir (no Kubernetes needed).
    DryRun,
    /// Create Secrets through the Kubernetes API.
    Kubernetes,
}

/// The join service: validates joining nodes over aTLS and issues their join tickets.
#[derive(Parser, Debug)]
#[command(name = "join-service", version)]
struct Args {
    /// Address to serve join.API on (aTLS; the joining node attests).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// Address of the Prometheus /metrics endpoint (plain HTTP).
    #[arg(long, default_value = "127.0.0.1:9091")]
    metrics_listen: SocketAddr,
    /// Address of the key service (kms.API over mutual TLS).
    #[arg(long, default_value = "127.0.0.1:9010")]
    key_service: SocketAddr,
    /// Seconds allowed for one key service call.
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    key_service_timeout: u64,
    /// Measurement salt file (raw bytes, at least 16).
    #[arg(long, value_name = "FILE")]
    measurement_salt: PathBuf,
    /// Measurements file (Constellation JSON/YAML, map or release list); watched for changes.
    #[arg(long, value_name = "FILE")]
    measurements: PathBuf,
    /// Seconds between two checks of the measurements file.
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    measurements_poll_interval: u64,
    /// Accepted attestation variants (repeatable): qemu-vtpm, azure-sev-snp, aws-sev-snp, gcp-sev-snp,
    /// gcp-shielded-vm, azure-tdx, qemu-tdx.
    #[arg(long = "variant", default_value = "qemu-vtpm", value_parser = parse_variant)]
    variants: Vec<Variant>,
    /// SNP policy file (TOML or JSON) for the SNP variants; the engine's secure defaults otherwise.
    #[arg(long, value_name = "FILE")]
    snp_policy: Option<PathBuf>,
    /// SNP policy of one variant, in place of --snp-policy (repeatable): VARIANT=FILE.
    #[arg(long, value_name = "VARIANT=FILE", value_parser = parse_variant_file)]
    variant_snp_policy: Vec<(Variant, PathBuf)>,
    /// DANGEROUS: trust the test roots of simulated hardware in DIR instead of AMD's and Google's (written
    /// by attest-hwsim). Only builds with the cargo feature dangerous-test-roots accept it.
    #[arg(long, value_name = "DIR")]
    dangerous_test_roots: Option<PathBuf>,
    /// AK registry file (qemu-vtpm), shared with the AK registration service.
    #[arg(long, value_name = "FILE")]
    ak_registry: PathBuf,
    /// Trust unknown qemu-vtpm AKs on first use and record them (off: only registered AKs are trusted).
    #[arg(long)]
    ak_trust_on_first_use: bool,
    /// kubeadm PKI directory (ca.crt/ca.key; sa.*, front-proxy-ca.*, etcd/ca.* for control-plane joins).
    #[arg(long, value_name = "DIR")]
    pki_dir: PathBuf,
    /// Days kubelet client certificates are valid.
    #[arg(long, default_value_t = 365, value_name = "DAYS")]
    kubelet_cert_validity_days: u64,
    /// The API server endpoint (host:port) joining nodes connect to.
    #[arg(long, value_name = "HOST:PORT")]
    api_server_endpoint: String,
    /// Kubernetes version and components (JSON: {"kubernetesVersion", "components"}).
    #[arg(long, value_name = "FILE")]
    kubernetes_config: PathBuf,
    /// Bootstrap token lifetime in seconds (60..=86400).
    #[arg(long, default_value_t = 900, value_name = "SECONDS")]
    token_ttl: u64,
    /// How bootstrap tokens are created (dry-run only when chosen: it is announced everywhere).
    #[arg(long, value_enum, default_value = "kubernetes")]
    token_issuer: TokenIssuerKind,
    /// Directory for the dry-run token issuer's Secret manifests.
    #[arg(long, value_name = "DIR", default_value = "join-service-tokens")]
    dry_run_dir: PathBuf,
    /// Kubernetes API server URL (https://host:port); with --kube-ca-file and --kube-token-file. Without it,
    /// the in-cluster configuration is used.
    #[arg(long, value_name = "URL", requires_all = ["kube_ca_file", "kube_token_file"])]
    kube_api_url: Option<String>,
    /// Cluster CA file (PEM) for --kube-api-url.
    #[arg(long, value_name = "FILE", requires = "kube_api_url")]
    kube_ca_file: Option<PathBuf>,
    /// Service-account token file for --kube-api-url (re-read per request).
    #[arg(long, value_name = "FILE", requires = "kube_api_url")]
    kube_token_file: Option<PathBuf>,
    /// Address to serve the AK registration service on (h2c); needs --ek-ca.
    #[arg(long, value_name = "ADDR", requires = "ek_ca")]
    registration_listen: Option<SocketAddr>,
    /// EK CA certificate files (PEM) the registration service verifies EK certificates against (repeatable).
    #[arg(long, value_name = "FILE")]
    ek_ca: Vec<PathBuf>,
    /// Log level: error, warn, info, debug or trace.
    #[arg(long, default_value = "info")]
    log_level: tracing::Level,
    /// Seconds in-flight calls are given to finish on shutdown.
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    shutdown_grace: u64,
    /// A TDX platform whose quotes are accepted (repeatable; TDX variants): FMSPC in hex, optionally with
    /// `:platform` (default) or `:processor`, the CA of its PCK certificates.
    #[arg(long = "tdx-platform", value_name = "FMSPC[:CA]", value_parser = crate::tdx::TdxPlatform::parse)]
    tdx_platforms: Vec<crate::tdx::TdxPlatform>,
    /// TDX policy file (TOML or JSON) for the TDX variants; the engine's strict defaults otherwise.
    #[arg(long, value_name = "FILE")]
    tdx_policy: Option<PathBuf>,
    /// The Intel PCS store directory (as `attest pcs prefill` fills it).
    #[arg(long, value_name = "DIR", default_value = "pcs-store")]
    pcs_store: PathBuf,
    /// Intel PCS base URL.
    #[arg(long, value_name = "URL", default_value = attest_kds::DEFAULT_PCS_BASE_URL)]
    pcs_url: String,
    /// Use the PCS store only; never contact Intel.
    #[arg(long)]
    pcs_offline: bool,
    /// TPM of this control-plane node (swtpm:host=…,port=… or device:/dev/tpmrm0): the join service attests
    /// itself to joining nodes with it.
    #[arg(long, value_name = "TCTI")]
    tpm: String,
    /// The cluster's key-service CA certificate (PEM).
    #[arg(long, value_name = "FILE")]
    key_service_ca: PathBuf,
    /// The join service's client certificate for the key service (PEM), issued by --key-service-ca.
    #[arg(long, value_name = "FILE")]
    key_service_cert: PathBuf,
    /// The join service's client key for the key service (PEM).
    #[arg(long, value_name = "FILE")]
    key_service_key: PathBuf,
    /// The DNS name the key service's certificate must carry.
    #[arg(long, value_name = "NAME", default_value = KEY_SERVICE_NAME)]
    key_service_name: String,
    /// A domain under which a node may claim `<node name>.<domain>` as an SSH host principal (repeatable;
    /// without it, only the node name).
    #[arg(long = "ssh-principal-domain", value_name = "DOMAIN")]
    ssh_principal_domains: Vec<String>,
    /// Measurements signature, launch pinning, CRLs and their waivers.
    #[command(flatten)]
    trust: TrustArgs,
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::from_name(s).ok_or_else(|| format!("unknown variant {s:?}"))
}

fn parse_variant_file(s: &str) -> Result<(Variant, PathBuf), String> {
    let (v, file) = s.split_once('=').ok_or("expected VARIANT=FILE")?;
    Ok((parse_variant(v)?, PathBuf::from(file)))
}

/// The SNP and GCE verifiers: AMD's and Google's pinned roots, or (`--dangerous-test-roots`, feature builds
/// only) the test roots of simulated hardware.
fn verifiers(args: &Args) -> Result<(SnpVerifier, GceVerifier), String> {
    let Some(dir) = &args.dangerous_test_roots else {
        return Ok((SnpVerifier::new(), GceVerifier::new()));
    };
    test_root_verifiers(dir)
}

#[cfg(feature = "dangerous-test-roots")]
fn test_root_verifiers(dir: &std::path::Path) -> Result<(SnpVerifier, GceVerifier), String> {
    let roots = attest_kds::test_roots::TestRoots::load(dir).map_err(|e| e.to_string())?;
    let snp = if roots.has_snp() { roots.snp_verifier().map_err(|e| e.to_string())? } else { SnpVerifier::new() };
    let gce = roots.gce_verifier().unwrap_or_default();
    tracing::warn!(roots = %roots.describe(), "join service: DANGEROUS: verifying SIMULATED hardware against TEST ROOTS");
    Ok((snp, gce))
}

#[cfg(not(feature = "dangerous-test-roots"))]
fn test_root_verifiers(_: &std::path::Path) -> Result<(SnpVerifier, GceVerifier), String> {
    Err(TEST_ROOTS_REFUSED.to_owned())
}

/// Why a release build refuses `--dangerous-test-roots`.
#[cfg(not(feature = "dangerous-test-roots"))]
const TEST_ROOTS_REFUSED: &str =
    "--dangerous-test-roots: this build cannot trust test roots (built without the feature dangerous-test-roots)";

/// Everything loaded from the configuration, before any socket is opened.
struct Loaded {
    validators: Arc<Validators>,
    service: Arc<JoinService>,
    metrics: Arc<Metrics>,
    registry: Arc<FileAkRegistry>,
    ek_ca: Option<EkCaBundle>,
    tdx: Arc<TdxVerifier>,
    crls: Arc<CrlKeeper>,
    issuer: Arc<QemuVtpmIssuer>,
    activation: Option<Arc<ActivationService>>,
}

/// Opens the TPM and its issuer (the join service's own attestation), with the EK certificate when the TPM
/// has one (for the credential activation joining nodes run against it).
fn open_issuer(tcti: &str) -> Result<(Arc<QemuVtpmIssuer>, Vec<u8>), String> {
    let mut tpm = Tpm::open(tcti).map_err(|e| format!("TPM {tcti}: {e}"))?;
    let ek = tpm.ek_certificate().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "join service: the TPM has no EK certificate; nodes cannot verify its AK by credential activation");
        Vec::new()
    });
    let issuer = QemuVtpmIssuer::new(tpm, AkConfig::default())
        .map_err(|e| format!("TPM {tcti}: attestation key: {e}"))?
        .with_ek_certificate(ek.clone());
    Ok((Arc::new(issuer), ek))
}

async fn load(args: &Args) -> Result<Loaded, String> {
    let metrics = Arc::new(Metrics::new());
    let measurements = args.trust.measurements_trust().map_err(|e| e.to_string())?;
    let registry = FileAkRegistry::open(&args.ak_registry)
        .map_err(|e| format!("AK registry: {e}"))?
        .with_trust_on_first_use(args.ak_trust_on_first_use);
    let registry = Arc::new(registry);
    let snp_policy = args.trust.snp_policy(args.snp_policy.as_deref()).map_err(|e| e.to_string())?;
    let tdx_policy = match &args.tdx_policy {
        None => TdxPolicy::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            TdxPolicy::from_text(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
    };
    let mut snp_policies = std::collections::HashMap::new();
    for (variant, path) in &args.variant_snp_policy {
        snp_policies.insert(*variant, args.trust.snp_policy(Some(path)).map_err(|e| e.to_string())?);
    }
    let (snp, gce) = verifiers(args)?;
    let mut variants = args.variants.clone();
    variants.dedup();
    if variants.iter().any(|v| v.is_tdx()) && args.tdx_platforms.is_empty() {
        return Err("a TDX variant is configured but no --tdx-platform: no TD quote could be verified".into());
    }
    let snp = Arc::new(snp);
    let mut config = ValidatorConfig {
        variants,
        ak_registry: Arc::clone(&registry),
        record_first_use: args.ak_trust_on_first_use,
        snp: Arc::clone(&snp),
        snp_policy,
        tdx: Arc::new(TdxVerifier::new()),
        tdx_policy,
        measurements,
        trust: None,
        snp_policies,
        gce: Arc::new(gce),
        gce_policy: attest_engine::gce::GcePolicy::default(),
    };
    let tdx = Arc::clone(&config.tdx);
    // Refuse to start an SNP variant whose launch is not pinned; load its CRLs or refuse to start. (A TDX
    // variant's launch is pinned by the measurements file's MRTD, checked when the validators are built.)
    let launch = attest_trust::check_launch(&config.launch_validators()).map_err(|e| e.to_string())?;
    // With test roots (simulated hardware) the CRLs are the test PKI's, installed from their directory.
    let crl_variants: &[Variant] = if args.dangerous_test_roots.is_some() { &[] } else { &config.variants };
    let crls = args.trust.revocation(snp, crl_variants, &config.snp_policy).await.map_err(|e| e.to_string())?;
    let trust = Arc::new(Trust {
        measurements: config.measurements.state(),
        launch,
        revocation: (!crls.wanted().is_empty()).then(|| Arc::clone(&crls)),
    });
    config.trust = Some(Arc::clone(&trust));
    metrics.set_trust(Arc::clone(&trust));
    let validators =
        Arc::new(Validators::load(config, &args.measurements, Arc::clone(&metrics)).map_err(|e| e.to_string())?);
    let salt = load_measurement_salt(&args.measurement_salt).map_err(|e| e.to_string())?;
    let kubernetes = KubernetesSettings::load(&args.kubernetes_config).map_err(|e| e.to_string())?;
    let ca = ClusterCa::load(&args.pki_dir)
        .and_then(|ca| ca.with_kubelet_cert_validity(Duration::from_secs(args.kubelet_cert_validity_days * 86_400)))
        .map_err(|e| format!("cluster CA: {e}"))?;
    let tokens: Arc<dyn TokenIssuer> = match args.token_issuer {
        TokenIssuerKind::DryRun => {
            tracing::warn!(dir = %args.dry_run_dir.display(), "DRY RUN: bootstrap tokens are written as files and \
                never created in Kubernetes; nodes that receive them cannot join a real cluster");
            metrics.set_dry_run(true);
            Arc::new(DryRunTokenIssuer::new(&args.dry_run_dir).map_err(|e| e.to_string())?)
        }
        TokenIssuerKind::Kubernetes => {
            let config = match (&args.kube_api_url, &args.kube_ca_file, &args.kube_token_file) {
                (Some(url), Some(ca), Some(token)) => KubeConfig::explicit(url, ca, token),
                _ => KubeConfig::in_cluster(),
            }
            .map_err(|e| e.to_string())?;
            Arc::new(KubeTokenIssuer::new(KubeClient::new(config).map_err(|e| e.to_string())?))
        }
    };
    if args.api_server_endpoint.is_empty() {
        return Err("--api-server-endpoint is empty".into());
    }
    let settings = TicketSettings {
        measurement_salt: salt,
        api_server_endpoint: args.api_server_endpoint.clone(),
        kubernetes,
        token_ttl: Duration::from_secs(args.token_ttl),
    };
    let kms_files = TlsFiles {
        ca: args.key_service_ca.clone(),
        cert: args.key_service_cert.clone(),
        key: args.key_service_key.clone(),
    };
    let kms_tls = KmsConnector::new(&kms_files, &args.key_service_name).map_err(|e| format!("key service TLS: {e}"))?;
    let keys = KeyServiceClient::new(
        args.key_service,
        kms_tls,
        Duration::from_secs(args.key_service_timeout),
        Arc::clone(&metrics),
    );
    let service = Arc::new(
        JoinService::new(keys, tokens, Arc::new(ca), settings, Arc::clone(&metrics))
            .with_trust(trust)
            .with_ssh_principal_domains(args.ssh_principal_domains.clone()),
    );
    let (issuer, ek) = open_issuer(&args.tpm)?;
    let activation = (!ek.is_empty()).then(|| Arc::new(ActivationService::new(Arc::clone(&issuer), ek)));
    let ek_ca = if args.registration_listen.is_some() {
        Some(EkCaBundle::from_files(&args.ek_ca).map_err(|e| format!("EK CA bundle: {e}"))?)
    } else {
        None
    };
    Ok(Loaded { validators, service, metrics, registry, ek_ca, tdx, crls, issuer, activation })
}

/// The PCS supply of `--pcs-*`.
fn pcs(args: &Args) -> Result<attest_kds::Pcs, String> {
    let online = !args.pcs_offline;
    attest_kds::Pcs::new(attest_kds::PcsConfig {
        store: Some(args.pcs_store.clone()),
        base_url: online.then(|| args.pcs_url.clone()),
        certs_url: online.then(|| attest_kds::DEFAULT_INTEL_CERTS_URL.to_owned()),
        ..attest_kds::PcsConfig::default()
    })
    .map_err(|e| format!("PCS supply: {e}"))
}

/// Runs the command with this process's arguments and returns its exit status: the binary's `main`.
pub fn main() -> ExitCode {
    let args = Args::parse();
    attest_util::init_service_logging(args.log_level);
    // Fault injection for the crash matrix: only builds with the feature arm it (attest_util::fault).
    #[cfg(feature = "fault-injection")]
    attest_util::fault::arm_from_env("join-service");
    #[cfg(not(feature = "fault-injection"))]
    attest_util::fault::warn_if_requested("join-service");
    #[cfg(not(feature = "dangerous-test-roots"))]
    if args.dangerous_test_roots.is_some() {
        tracing::error!("join service: {TEST_ROOTS_REFUSED}");
        return ExitCode::from(2);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "join service: cannot start the runtime");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    // Loading needs the runtime (the Kubernetes client's connector; the KDS client, when the store holds no
    // fresh CRL).
    let loaded = match runtime.block_on(load(&args)) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "join service: cannot load the configuration");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // TDX collateral (the store, then Intel's PCS) before anything listens.
    let tdx_installed = if args.tdx_platforms.is_empty() {
        None
    } else {
        let installed = pcs(&args).and_then(|pcs| {
            runtime
                .block_on(crate::tdx::install(&pcs, &loaded.tdx, &args.tdx_platforms))
                .map(|i| (pcs, i))
                .map_err(|e| e.to_string())
        });
        match installed {
            Ok(i) => Some(i),
            Err(e) => {
                tracing::error!(error = %e, "join service: cannot load the TDX collateral");
                return ExitCode::from(EXIT_CONFIG);
            }
        }
    };
    tracing::info!(
        measurements = %args.measurements.display(),
        variants = ?args.variants,
        pki_dir = %args.pki_dir.display(),
        token_issuer = ?args.token_issuer,
        waivers = %loaded.service_waivers(),
        "join service: configuration loaded"
    );
    match runtime.block_on(serve(&args, loaded, tdx_installed)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "join service: stopped with an error");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

impl Loaded {
    fn service_waivers(&self) -> String {
        self.service.waivers_field()
    }
}

fn announce(addr: SocketAddr) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {addr}")?;
    stdout.flush()
}

async fn serve(
    args: &Args,
    loaded: Loaded,
    tdx_installed: Option<(attest_kds::Pcs, Vec<attest_engine::tdx::CollateralInfo>)>,
) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let Loaded { validators, service, metrics, registry, ek_ca, crls, issuer, activation, tdx } = loaded;

    // Mutual aTLS: the joining node attests to us (verifier), and we attest to it (issuer) before it accepts
    // a ticket.
    let verifier = Arc::new(Verifier::new(validators.attestation_validators()));
    let acceptor = Arc::new(
        AtlsAcceptor::new(Some(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>), Some(verifier))
            .map_err(std::io::Error::other)?,
    );
    let mut router = Router::new();
    router.add_service(service);
    if let Some(a) = activation {
        router.add_service(a);
    }
    let server = Server::new(router, ServerConfig::default());
    let addr = attest_atls::grpc::serve(&server, tokio::net::TcpListener::bind(args.listen).await?, acceptor)?;
    let join_server = server.clone();
    metrics.add_admission("join", Box::new(move || join_server.admission_stats()));
    tracing::info!(%addr, "join service: listening (mutual aTLS)");
    announce(addr)?;

    let metrics_server =
        MetricsServer::serve(tokio::net::TcpListener::bind(args.metrics_listen).await?, Arc::clone(&metrics))?;
    tracing::info!(addr = %metrics_server.local_addr(), "join service: metrics listening");
    announce(metrics_server.local_addr())?;

    let registration = match (args.registration_listen, ek_ca) {
        (Some(listen), Some(ca)) => {
            let mut router = Router::new();
            let service = Arc::new(RegistrationService::new(Arc::clone(&registry), ca));
            router.add_service(Arc::clone(&service));
            let server = Server::new(router, ServerConfig::default());
            let addr = server.serve(tokio::net::TcpListener::bind(listen).await?)?;
            let registration_server = server.clone();
            metrics.add_admission("registration", Box::new(move || registration_server.admission_stats()));
            metrics.add_section(Box::new(move |out| service.render_metrics(out)));
            tracing::info!(%addr, "join service: AK registration listening (h2c)");
            announce(addr)?;
            Some(server)
        }
        _ => None,
    };

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let crl_refresher = crls.spawn(stopped.clone());
    let refresher = tdx_installed.map(|(pcs, installed)| {
        let margin = crate::tdx::DEFAULT_REFRESH_MARGIN;
        crate::tdx::spawn_refresh(pcs, tdx, args.tdx_platforms.clone(), installed, margin, stopped.clone())
    });
    let watcher = validators.watch(Duration::from_secs(args.measurements_poll_interval.max(1)), stopped);

    let signal_name = tokio::select! {
        r = tokio::signal::ctrl_c() => { r?; "SIGINT" }
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!(signal = signal_name, in_flight = server.in_flight_calls(), "join service: shutting down");
    let _ = stop.send(true);
    let grace = Duration::from_secs(args.shutdown_grace);
    let (drained, registration_drained) = tokio::join!(server.shutdown(grace), async {
        match &registration {
            Some(r) => r.shutdown(grace).await,
            None => true,
        }
    });
    metrics_server.shutdown().await;
    let _ = watcher.await;
    if let Some(r) = refresher {
        let _ = r.await;
    }
    let _ = crl_refresher.await;
    if drained && registration_drained {
        tracing::info!("join service: stopped");
    } else {
        tracing::warn!(grace_seconds = args.shutdown_grace, "join service: calls cancelled after the grace period");
    }
    Ok(())
}
