//! `join-service`: serves `join.API` (`docs/ARCHITECTURE.md`, "Join service") over aTLS to attested joining nodes, a Prometheus
//! `/metrics` endpoint, and (optionally) the AK registration service.
//!
//! ```text
//! join-service --tpm TCTI [--node-variant auto|VARIANT] [--snp-device /dev/sev-guest|tsm:/dir|sim:/path] \
//!     [--snp-leaf FILE] [--event-log FILE] [--tdx-root /|sim:/dir] [--tdx-quote-endpoint URL] --measurements FILE (--measurements-signature FILE --measurements-public-key FILE
//!       | --dangerously-skip-measurements-signature) --measurement-salt FILE --ak-registry FILE --pki-dir DIR \
//!     --kubernetes-config FILE --api-server-endpoint HOST:PORT [--key-service 127.0.0.1:9010] \
//!     --key-service-ca FILE --key-service-cert FILE --key-service-key FILE \
//!     [--listen 127.0.0.1:9090] [--metrics-listen 127.0.0.1:9091] [--variant qemu-vtpm …] [--snp-policy FILE] \
//!     [--kds-store DIR] [--kds-url URL|offline] [--allow-stale-crl] [--dangerous-allow-unpinned-launch] \
//!     [--token-issuer kubernetes [--kube-api-url URL --kube-ca-file FILE --kube-token-file FILE] \
//!      | --token-issuer dry-run --dry-run-dir DIR] [--registration-listen ADDR --ek-ca FILE …] \
//!     [--ssh-principal-domain DOMAIN …] [--variant-snp-policy VARIANT=FILE …] [--dangerous-test-roots DIR] \
//!     [--tdx-platform FMSPC[:CA] … [--tdx-policy FILE] [--pcs-store DIR] [--pcs-url URL | --pcs-offline]] \
//!     --cluster-state FILE [--cluster-state-seed FILE] [--admissions DIR --admission-public-key FILE] \
//!     [--dangerously-adopt-unbound-disks]
//! ```
//!
//! The cluster state (`--cluster-state`, written by `attest init`; copied from `--cluster-state-seed` when it
//! does not exist yet) binds each disk and node name to the attested node that first joined with it, names
//! the control-plane members and keeps the highest measurements version accepted ([`crate::identity`]); the
//! service does not start without it. Control-plane joins beyond the members need an operator-signed
//! admission in `--admissions`.
//!
//! What it refuses to start with (exit 3): an unsigned or badly signed measurements file (unless
//! `--dangerously-skip-measurements-signature`), an expired one or one whose version is below the one the
//! cluster accepted (rollback), no cluster state, an SNP variant whose policy pins no launch measurement
//! (unless `--dangerous-allow-unpinned-launch`), stale or missing AMD CRLs for its SNP variants (stale only
//! under `--allow-stale-crl`), key-service TLS files that do not load. Every waiver is logged as a warning at
//! start, named in every verdict line (`waivers=…`) and exported (`attest_join_waiver`). The dry-run token
//! issuer is never a default; chosen, it is announced at start, in every ticket's log line and as
//! `attest_join_dry_run 1`.
//!
//! It attests itself to joining nodes (mutual aTLS) as the control-plane node it runs on: with that node's
//! variant (`--node-variant`, detected from the machine by default; `qemu-vtpm` is never detected, only
//! chosen) and its hardware (`--tpm`, `--snp-device`, `--snp-leaf`, `--event-log`: the bootstrapper's flags,
//! [`attest_attester::issuer::HardwareArgs`]), through the same issuer as the node's own endpoints. A joining
//! node verifies that evidence with the validator of the variant — an SNP report binding the key and nonce, the
//! HCL runtime data, Google's AK certificate — and only for a variant whose AK is trusted through a registry
//! (`qemu-vtpm`) does the service serve `attest.v1.CredentialActivation` on the same port, so that nodes can
//! check its TPM's EK certificate. Which variants it *admits* (`--variant`) is independent of its own.
//!
//! TDX variants (`qemu-tdx`, `azure-tdx`) need the collateral of every platform they accept
//! (`--tdx-platform`): it is loaded from the PCS store (then Intel's PCS) before the service listens — the
//! service does not start without it — and refreshed ahead of its nextUpdate ([`crate::tdx`]); with
//! `--dangerous-test-roots` the test roots' collateral stands in for it.
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
//! Exit statuses: the table in [`crate::exit`] (0 stopped, 1 runtime, 2 usage — also test roots or a
//! simulated device in a release build —, 3 configuration), printed by `--help`.

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
use attest_attester::issuer::{HardwareArgs, NodeIssuer, VariantChoice};
use attest_attester::registration::ActivationService;
use attest_engine::gce::GceVerifier;
use attest_engine::snp::SnpVerifier;
use attest_engine::tdx::TdxVerifier;
use attest_engine::variant::Variant;
use attest_grpc::{Router, Server, ServerConfig};
use attest_k8s::{ClusterCa, DryRunTokenIssuer, KubeClient, KubeConfig, KubeTokenIssuer, TokenIssuer};
use attest_kds::CrlKeeper;
use attest_keyservice::tls::{KEY_SERVICE_NAME, KmsConnector, TlsFiles};
use attest_registration::RegistrationService;
use attest_registration::{EkCaBundle, FileAkRegistry};
use attest_trust::tdx::TdxArgs;
use attest_trust::{Trust, TrustArgs, ValidatorFactory};
use clap::builder::TypedValueParser as _;
use clap::{Parser, ValueEnum};
use tokio::signal::unix::{SignalKind, signal};

use crate::exit;

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
#[command(name = "join-service", version, after_help = attest_util::exit::help(exit::TABLE))]
struct Args {
    /// Address to serve join.API on (aTLS; the joining node attests).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// Address of the Prometheus /metrics endpoint and the /healthz health check (plain HTTP).
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
    /// Accepted attestation variants (repeatable).
    #[arg(long = "variant", default_value = "qemu-vtpm", value_parser = attest_trust::variant_arg::any())]
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
    /// TDX collateral (per platform, from the PCS store or Intel's PCS) and policy for the TDX variants.
    #[command(flatten)]
    tdx: TdxArgs,
    /// The hardware of this control-plane node: the join service attests itself to joining nodes with it.
    #[command(flatten)]
    hardware: HardwareArgs,
    /// Attestation variant of this control-plane node (the join service's own attestation).
    #[arg(long, default_value = "auto", value_name = "VARIANT",
          value_parser = attest_trust::variant_arg::node_variant().map(VariantChoice::from))]
    node_variant: VariantChoice,
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
    /// The cluster state: disks and node names bound to attested nodes, control-plane members, the highest
    /// measurements version accepted (`attest init` writes the first one). Must exist (or be seeded).
    #[arg(long, value_name = "FILE")]
    cluster_state: PathBuf,
    /// When --cluster-state does not exist yet, start from this one (e.g. from a ConfigMap).
    #[arg(long, value_name = "FILE")]
    cluster_state_seed: Option<PathBuf>,
    /// Directory of operator-signed control-plane admissions (`attest admission issue`).
    #[arg(long, value_name = "DIR", requires = "admission_public_key")]
    admissions: Option<PathBuf>,
    /// The operator's public key (PEM, P-256) that signs control-plane admissions.
    #[arg(long, value_name = "FILE", requires = "admissions")]
    admission_public_key: Option<PathBuf>,
    /// DANGEROUS (clusters whose disks were never bound to nodes): a rejoin for a disk no node holds binds it
    /// to the node that asks, instead of being refused. Logged at start and at every use.
    #[arg(long)]
    dangerously_adopt_unbound_disks: bool,
    /// Measurements signature, launch pinning, CRLs and their waivers.
    #[command(flatten)]
    trust: TrustArgs,
}

/// Opens the cluster state, first copying the seed into place when the state does not exist yet.
fn open_cluster_state(args: &Args) -> Result<attest_trust::ClusterState, StartError> {
    if let (false, Some(seed)) = (args.cluster_state.exists(), &args.cluster_state_seed) {
        let seeded = attest_trust::ClusterState::open(seed).map_err(StartError::at("--cluster-state-seed"))?;
        drop(seeded);
        let bytes = std::fs::read(seed).map_err(StartError::at(seed.display()))?;
        attest_util::fs::write_atomic(&args.cluster_state, &bytes, attest_util::fs::PUBLIC_FILE_MODE)
            .map_err(StartError::at("--cluster-state"))?;
        tracing::info!(state = %args.cluster_state.display(), seed = %seed.display(), "join service: cluster state seeded");
    }
    attest_trust::ClusterState::open(&args.cluster_state).map_err(StartError::NoClusterState)
}

fn parse_variant_file(s: &str) -> Result<(Variant, PathBuf), attest_trust::TrustError> {
    attest_trust::variant_arg::parse_keyed(s).map(|(variant, file)| (variant, PathBuf::from(file)))
}

/// The SNP, GCE and TDX verifiers: AMD's, Google's and Intel's pinned roots (TDX collateral installed later,
/// per `--tdx-platform`), or (`--dangerous-test-roots`, feature builds only) the test roots of simulated
/// hardware, with the test TDX collateral (`true`: collateral installed).
fn verifiers(args: &Args) -> Result<(SnpVerifier, GceVerifier, TdxVerifier, bool), StartError> {
    let Some(dir) = &args.dangerous_test_roots else {
        return Ok((SnpVerifier::new(), GceVerifier::new(), TdxVerifier::new(), false));
    };
    let (snp, gce, tdx) = test_root_verifiers(dir)?;
    let tdx_collateral = tdx.is_some();
    Ok((snp, gce, tdx.unwrap_or_default(), tdx_collateral))
}

#[cfg(feature = "dangerous-test-roots")]
fn test_root_verifiers(dir: &std::path::Path) -> Result<(SnpVerifier, GceVerifier, Option<TdxVerifier>), StartError> {
    let roots = attest_kds::test_roots::TestRoots::load(dir).map_err(StartError::from_source)?;
    tracing::warn!(roots = %roots.describe(), "join service: DANGEROUS: verifying SIMULATED hardware against TEST ROOTS");
    let v = roots.verifiers().map_err(StartError::from_source)?;
    Ok((v.snp, v.gce, v.tdx))
}

#[cfg(not(feature = "dangerous-test-roots"))]
fn test_root_verifiers(_: &std::path::Path) -> Result<(SnpVerifier, GceVerifier, Option<TdxVerifier>), StartError> {
    Err(StartError::TestRootsRefused)
}

/// Why a release build refuses `--dangerous-test-roots` and simulated hardware.
const TEST_ROOTS_REFUSED: &str = "--dangerous-test-roots, simulated hardware (sim:…, a stand-in quote endpoint): this \
    build cannot trust test roots or attest with simulated hardware (built without the feature dangerous-test-roots)";

/// Everything loaded from the configuration, before any socket is opened.
struct Loaded {
    validators: Arc<Validators>,
    service: Arc<JoinService>,
    metrics: Arc<Metrics>,
    registry: Arc<FileAkRegistry>,
    ek_ca: Option<EkCaBundle>,
    tdx: Arc<TdxVerifier>,
    crls: Arc<CrlKeeper>,
    issuer: Arc<NodeIssuer>,
    activation: Option<Arc<ActivationService>>,
}

/// The join service's own attestation: its node's issuer, of the node's variant, and — only for a variant
/// whose AK is trusted through a registry (`qemu-vtpm`), when its TPM has an EK certificate — the credential
/// activation service joining nodes run against it. Every other variant proves its AK in its evidence.
fn own_attestation(args: &Args) -> Result<(Arc<NodeIssuer>, Option<Arc<ActivationService>>), StartError> {
    let issuer = args
        .hardware
        .open(args.node_variant)
        .map_err(StartError::at(format!("this node's attestation ({})", args.hardware.tpm)))?;
    let variant = issuer.variant();
    if issuer.is_simulated() {
        tracing::warn!(%variant, snp_device = %args.hardware.snp_device,
            "join service: SIMULATED SEV-SNP hardware: its own evidence is signed by a TEST ROOT");
    }
    let activation = issuer.qemu().and_then(|q| {
        if q.ek_certificate().is_empty() {
            tracing::warn!(%variant, "join service: the TPM has no EK certificate; nodes cannot verify its AK by \
                credential activation");
            None
        } else {
            Some(Arc::new(ActivationService::new(Arc::clone(q), q.ek_certificate().to_vec())))
        }
    });
    tracing::info!(%variant, credential_activation = activation.is_some(),
        "join service: attesting to joining nodes as this node");
    Ok((Arc::new(issuer), activation))
}

async fn load(args: &Args) -> Result<Loaded, StartError> {
    let metrics = Arc::new(Metrics::new());
    let measurements = args.trust.measurements_trust().map_err(StartError::from_source)?;
    let registry = FileAkRegistry::open(&args.ak_registry)
        .map_err(StartError::at("AK registry"))?
        .with_trust_on_first_use(args.ak_trust_on_first_use);
    let registry = Arc::new(registry);
    let snp_policy = args.trust.snp_policy(args.snp_policy.as_deref()).map_err(StartError::from_source)?;
    let tdx_policy = args.tdx.policy().map_err(StartError::from_source)?;
    let mut snp_policies = std::collections::HashMap::new();
    for (variant, path) in &args.variant_snp_policy {
        snp_policies.insert(*variant, args.trust.snp_policy(Some(path)).map_err(StartError::from_source)?);
    }
    let (snp, gce, tdx, tdx_collateral) = verifiers(args)?;
    let mut variants = args.variants.clone();
    variants.dedup();
    if variants.iter().any(|v| v.is_tdx()) && args.tdx.tdx_platforms.is_empty() && !tdx_collateral {
        return Err(StartError::NoTdxPlatform);
    }
    let snp = Arc::new(snp);
    let state = Arc::new(open_cluster_state(args)?);
    let mut config = ValidatorConfig {
        record_first_use: args.ak_trust_on_first_use,
        state: Arc::clone(&state),
        factory: ValidatorFactory {
            snp: Arc::clone(&snp),
            snp_policy,
            snp_policies,
            tdx_policy,
            tdx: Arc::new(tdx),
            gce: Arc::new(gce),
            ..ValidatorFactory::default()
        },
        ..ValidatorConfig::new(variants, Arc::clone(&registry), measurements)
    };
    let tdx = Arc::clone(&config.factory.tdx);
    // Refuse to start an SNP variant whose launch is not pinned; load its CRLs or refuse to start. (A TDX
    // variant's launch is pinned by the measurements file's MRTD, checked when the validators are built.)
    let launch = attest_trust::check_launch(&config.launch_validators()).map_err(StartError::from_source)?;
    // With test roots (simulated hardware) the CRLs are the test PKI's, installed from their directory.
    let crl_variants: &[Variant] = if args.dangerous_test_roots.is_some() { &[] } else { &config.variants };
    let crls =
        args.trust.revocation(snp, crl_variants, &config.factory.snp_policy).await.map_err(StartError::from_source)?;
    let trust = Arc::new(Trust {
        measurements: config.measurements.state(),
        launch,
        revocation: (!crls.wanted().is_empty()).then(|| Arc::clone(&crls)),
    });
    config.trust = Some(Arc::clone(&trust));
    metrics.set_trust(Arc::clone(&trust));
    let validators =
        Arc::new(Validators::load(config, &args.measurements, Arc::clone(&metrics)).map_err(StartError::from_source)?);
    let salt = load_measurement_salt(&args.measurement_salt).map_err(StartError::from_source)?;
    let kubernetes = KubernetesSettings::load(&args.kubernetes_config).map_err(StartError::from_source)?;
    let ca = ClusterCa::load(&args.pki_dir)
        .and_then(|ca| ca.with_kubelet_cert_validity(Duration::from_secs(args.kubelet_cert_validity_days * 86_400)))
        .map_err(StartError::at("cluster CA"))?;
    let tokens: Arc<dyn TokenIssuer> = match args.token_issuer {
        TokenIssuerKind::DryRun => {
            tracing::warn!(dir = %args.dry_run_dir.display(), "DRY RUN: bootstrap tokens are written as files and \
                never created in Kubernetes; nodes that receive them cannot join a real cluster");
            metrics.set_dry_run(true);
            Arc::new(DryRunTokenIssuer::new(&args.dry_run_dir).map_err(StartError::from_source)?)
        }
        TokenIssuerKind::Kubernetes => {
            let config = match (&args.kube_api_url, &args.kube_ca_file, &args.kube_token_file) {
                (Some(url), Some(ca), Some(token)) => KubeConfig::explicit(url, ca, token),
                _ => KubeConfig::in_cluster(),
            }
            .map_err(StartError::from_source)?;
            Arc::new(KubeTokenIssuer::new(KubeClient::new(config).map_err(StartError::from_source)?))
        }
    };
    if args.api_server_endpoint.is_empty() {
        return Err(StartError::EmptyApiServerEndpoint);
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
    let kms_tls = KmsConnector::new(&kms_files, &args.key_service_name).map_err(StartError::at("key service TLS"))?;
    let keys = KeyServiceClient::new(
        args.key_service,
        kms_tls,
        Duration::from_secs(args.key_service_timeout),
        Arc::clone(&metrics),
    );
    let mut service = JoinService::new(keys, tokens, Arc::new(ca), settings, Arc::clone(&metrics))
        .with_trust(trust)
        .with_ssh_principal_domains(args.ssh_principal_domains.clone())
        .with_cluster_state(state);
    if let (Some(dir), Some(key)) = (&args.admissions, &args.admission_public_key) {
        let pem = std::fs::read(key).map_err(StartError::at(key.display()))?;
        let key = attest_measurements::VerifyingKey::from_pem(&pem).map_err(StartError::at(key.display()))?;
        service = service.with_admissions(dir.clone(), key);
    }
    if args.dangerously_adopt_unbound_disks {
        tracing::warn!(
            "join service: DANGEROUS: --dangerously-adopt-unbound-disks: a rejoin for a disk no node \
            holds binds it to whichever attested node asks first"
        );
        service = service.dangerously_adopt_unbound_disks();
    }
    let service = Arc::new(service);
    let (issuer, activation) = own_attestation(args)?;
    let ek_ca = if args.registration_listen.is_some() {
        Some(EkCaBundle::from_files(&args.ek_ca).map_err(StartError::at("EK CA bundle"))?)
    } else {
        None
    };
    Ok(Loaded { validators, service, metrics, registry, ek_ca, tdx, crls, issuer, activation })
}

/// Why the join service refuses to start (exit 3, or 2 for test roots in a release build): the message is
/// the one the operator sees in the log.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// An input could not be used: `context` (a flag, a file, what was being loaded) and why.
    Input {
        /// What was being loaded (empty: the error names it).
        context: String,
        /// The error of the crate that loaded it.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The cluster state could not be opened (`attest init` writes the first one).
    NoClusterState(attest_trust::StateError),
    /// A TDX variant without any `--tdx-platform`.
    NoTdxPlatform,
    /// `--api-server-endpoint` is empty.
    EmptyApiServerEndpoint,
    /// `--dangerous-test-roots` or simulated hardware in a build without the feature `dangerous-test-roots`.
    TestRootsRefused,
}

impl StartError {
    /// An error of `context` (its message prefixed by `context: `).
    fn at<E: std::error::Error + Send + Sync + 'static>(context: impl std::fmt::Display) -> impl FnOnce(E) -> Self {
        let context = context.to_string();
        move |e| Self::Input { context, source: Box::new(e) }
    }

    /// An error whose own message says what failed.
    fn from_source<E: std::error::Error + Send + Sync + 'static>(e: E) -> Self {
        Self::Input { context: String::new(), source: Box::new(e) }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Input { context, source } if context.is_empty() => source.fmt(f),
            Self::Input { context, source } => write!(f, "{context}: {source}"),
            Self::NoClusterState(e) => write!(f, "{e} (attest init writes the first cluster state)"),
            Self::NoTdxPlatform => {
                f.write_str("a TDX variant is configured but no --tdx-platform: no TD quote could be verified")
            }
            Self::EmptyApiServerEndpoint => f.write_str("--api-server-endpoint is empty"),
            Self::TestRootsRefused => f.write_str(TEST_ROOTS_REFUSED),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Input { source, .. } => Some(source.as_ref()),
            Self::NoClusterState(e) => Some(e),
            Self::NoTdxPlatform | Self::EmptyApiServerEndpoint | Self::TestRootsRefused => None,
        }
    }
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
    if (args.dangerous_test_roots.is_some() || args.hardware.is_simulated()) && !cfg!(feature = "dangerous-test-roots")
    {
        tracing::error!("join service: {TEST_ROOTS_REFUSED}");
        return ExitCode::from(attest_util::exit::USAGE.code);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "join service: cannot start the runtime");
            return ExitCode::from(exit::RUNTIME.code);
        }
    };
    // Loading needs the runtime (the Kubernetes client's connector; the KDS client, when the store holds no
    // fresh CRL).
    let loaded = match runtime.block_on(load(&args)) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "join service: cannot load the configuration");
            return ExitCode::from(exit::CONFIG.code);
        }
    };
    // TDX collateral (the store, then Intel's PCS) before anything listens.
    let tdx_installed = match runtime.block_on(args.tdx.install(&loaded.tdx)) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(error = %e, "join service: cannot load the TDX collateral");
            return ExitCode::from(exit::CONFIG.code);
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
            ExitCode::from(exit::RUNTIME.code)
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
    tdx_installed: Option<attest_trust::tdx::InstalledCollateral>,
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
    metrics.set_handshake_refusals(Arc::clone(acceptor.refusals()));
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
    let refresher = tdx_installed.map(|installed| args.tdx.keep_fresh(installed, tdx, stopped.clone()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn variant_flags_list_the_variant_table() {
        Args::command().debug_assert();
        let checked = attest_trust::variant_arg::check_flags_list_the_table(&Args::command()).unwrap();
        assert_eq!(checked, 2, "--variant and --node-variant");
    }

    #[test]
    fn help_prints_the_exit_status_table() {
        let help = Args::command().render_long_help().to_string();
        for status in exit::TABLE {
            assert!(help.contains(&format!("  {}  {}", status.code, status.meaning)), "{}: {help}", status.code);
        }
    }
}
