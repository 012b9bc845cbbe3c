//! `attest init`: initialize the first node of a cluster through its bootstrapper (`init.API`, `docs/ARCHITECTURE.md`, "Bootstrapper").
//!
//! ```text
//!  measurements ── signature verified (or --dangerously-skip-measurements-signature) ── else exit 2
//!  master secret ── exists? read : generate 32-byte key + 32-byte salt, write 0600 atomically
//!  key-service PKI ── OUT/key-service-pki/ exists? keep : create (CA, key-service and join-service certificates)
//!  measurement salt ← 32 random bytes
//!  AK known to the registry? ──no──▶ identity connection (aTLS, quote checked, AK not yet trusted)
//!        │                             CredentialActivation: GetIdentity + Activate (register_remote)
//!        │                             the registered AK must be the one that signed this connection
//!        ▼
//!  verified connection (aTLS: AK from the registry, PCRs from the measurements file) ──refused──▶ exit 1
//!        ▼
//!  init.API/Init(kms_uri, measurement_salt, init_secret, cluster name, version)
//!        ▼ stream: log … log ─ init_success ──▶ write kubeconfig, cluster.json, cluster-state.json; exit 0
//!                              └ init_failure ──▶ print the error; exit 1
//! ```
//!
//! `cluster-state.json` is the join service's first cluster state (`attest_trust::membership`): the init node —
//! its identity from the attestation verified here, the kubelet name and disk UUID its init answer names — as
//! the first control-plane member, and the measurements version accepted at init. The join service binds every
//! later node's disk and name to its own attested identity, so nobody can take the init node's.
//! An `--out` that already holds one (an earlier init's) is refused before the node is contacted (exit 2).
//!
//! The key-service PKI is the cluster-internal CA behind the key service's mutual TLS
//! (`attest_keyservice::tls`): init creates it once, next to the master secret, and the operator hands its
//! files to the key service and the join service (Kubernetes Secrets, `deploy/kubernetes/`); its `ca.key`
//! stays with the operator.
//!
//! Secrets: the master secret travels only inside the verified aTLS connection (as the request's KMS URI)
//! and to its file; the init secret is read from its file (raw bytes, exactly as stored) and sent once.
//! Neither is ever printed, in text or JSON output. The master secret is written *before* the request, so
//! a cluster initialized by a request whose answer was lost still has its secret on disk; a later run reuses
//! the existing file.
//!
//! Exit statuses: 0 initialized; 1 refused (the node's attestation, its AK registration, or the node's
//! `init_failure`) or failed (network, stream ended without a result); 2 usage (arguments, unreadable
//! or malformed input files).

use super::node::{
    self, AttestationSummary, CONNECT_TIMEOUT, dangerous_identity_connector, peer_ak_public, reason,
    verifying_connector, write_private,
};
use super::{Status, UsageError};
use attest_atls::grpc::{ConnectError, connect};
use attest_engine::variant::AkBasis;
use attest_grpc::{ChannelConfig, Metadata};
use attest_keyservice::MasterSecret;
use attest_proto::init::{InitRequest, InitResponse, init_response};
use attest_proto::paths;
use attest_registration::register_remote;
use attest_registration::{EkCaBundle, FileAkRegistry, ak_digest};
use attest_trust::TrustArgs;
use clap::Args;
use serde_json::{Value, json};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// Bytes of a generated master key.
pub const MASTER_KEY_LEN: usize = 32;
/// Bytes of a generated master salt.
pub const MASTER_SALT_LEN: usize = 32;
/// Bytes of the measurement salt.
pub const MEASUREMENT_SALT_LEN: usize = 32;
/// Largest init secret file read.
pub const MAX_INIT_SECRET_LEN: u64 = 4096;
/// Time allowed for the whole `Init` call: `kubeadm init` pulls images and waits for the control plane.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default Kubernetes version requested.
pub const DEFAULT_KUBERNETES_VERSION: &str = "v1.31.1";
/// Default cluster name.
pub const DEFAULT_CLUSTER_NAME: &str = "attest";
/// The storage URI sent (no cloud storage backend: Constellation's "no-op" store).
pub const STORAGE_URI: &str = "storage://no-op";

/// `attest init` arguments.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The node's bootstrapper (init server), HOST:PORT.
    #[arg(long)]
    pub endpoint: String,
    /// Expected measurements of the node (JSON or YAML map, or a release list with the variant's entry).
    #[arg(long)]
    pub measurements: PathBuf,
    /// The node's variant and what its validator needs (AK registration applies to qemu-vtpm only).
    #[command(flatten)]
    pub node: node::VariantArgs,
    /// The AK registry file (created if missing) [default: OUT/ak-registry.json].
    #[arg(long)]
    pub ak_registry: Option<PathBuf>,
    /// EK certificate CA bundle: a swtpm-localca directory, a directory of PEM certificates, or one PEM file.
    /// Needed to register the node's AK when the registry does not know it yet.
    #[arg(long)]
    pub ek_ca: Option<PathBuf>,
    /// The master secret file; generated when missing [default: OUT/master-secret.json].
    #[arg(long)]
    pub master_secret: Option<PathBuf>,
    /// The init secret file (raw bytes; the bootstrapper stores its hash).
    #[arg(long)]
    pub init_secret: Option<PathBuf>,
    /// Where kubeconfig, cluster.json (and by default the master secret and AK registry) are written.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// The cluster name.
    #[arg(long, default_value = DEFAULT_CLUSTER_NAME)]
    pub cluster_name: String,
    /// The Kubernetes version to install.
    #[arg(long, default_value = DEFAULT_KUBERNETES_VERSION)]
    pub kubernetes_version: String,
    /// Print a machine-readable summary on stdout.
    #[arg(long)]
    pub json: bool,
    /// The key-service PKI directory; created when missing [default: OUT/key-service-pki].
    #[arg(long, value_name = "DIR")]
    pub key_service_pki: Option<PathBuf>,
    /// Measurements signature, launch pinning, CRLs and their waivers.
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Runs `attest init`; the summary goes to `stdout`, progress to stderr.
pub fn run(args: &InitArgs, stdout: &mut dyn Write) -> Result<Status, UsageError> {
    let rt = super::runtime()?;
    let prepared = prepare(args, &rt)?;
    let outcome = rt.block_on(execute(args, &prepared));
    Ok(report(args, &prepared, outcome, stdout))
}

/// Everything read or generated before the network.
struct Prepared {
    addr: SocketAddr,
    validator: std::sync::Mutex<Option<node::NodeValidator>>,
    trust: attest_trust::Trust,
    kms_pki: PathBuf,
    kms_pki_created: bool,
    registry: std::sync::Arc<FileAkRegistry>,
    ca: Option<EkCaBundle>,
    master: MasterSecret,
    master_path: PathBuf,
    master_generated: bool,
    init_secret: Zeroizing<Vec<u8>>,
    measurement_salt: [u8; MEASUREMENT_SALT_LEN],
    measurements_version: u64,
}

fn prepare(args: &InitArgs, rt: &tokio::runtime::Runtime) -> Result<Prepared, UsageError> {
    let addr = node::resolve(&args.endpoint)?;
    if !args.out.is_dir() {
        std::fs::create_dir_all(&args.out)
            .map_err(|e| UsageError::new(format!("--out {}: {e}", args.out.display())))?;
    }
    // Checked before anything irreversible: the node is never initialized into a directory whose cluster state
    // could not be written afterwards.
    let state_path = args.out.join("cluster-state.json");
    if state_path.exists() {
        return Err(UsageError::new(format!(
            "{} exists already: the join service's cluster state of an earlier init; initialize into another \
             --out, or move it away",
            state_path.display()
        )));
    }
    let registry = node::open_registry(&args.ak_registry.clone().unwrap_or_else(|| args.out.join("ak-registry.json")))?;
    let ca = args.ek_ca.as_deref().map(load_ca).transpose()?;
    let (validator, trust) = args.node.validator(
        &args.trust,
        &args.measurements,
        || Ok(registry.clone() as std::sync::Arc<dyn attest_engine::variant::AkRegistry>),
        rt,
        None,
    )?;
    let init_secret = match &args.init_secret {
        Some(p) => read_init_secret(p)?,
        None => Zeroizing::new(Vec::new()),
    };
    // The version the join service's cluster state starts from (the file verified just above).
    let measurements_version = args
        .trust
        .measurements_trust()
        .and_then(|t| t.load(&args.measurements))
        .map_err(|e| UsageError::new(format!("--measurements: {e}")))?
        .freshness
        .version;
    let master_path = args.master_secret.clone().unwrap_or_else(|| args.out.join("master-secret.json"));
    let (master, master_generated) = load_or_generate_master_secret(&master_path)?;
    let kms_pki = args.key_service_pki.clone().unwrap_or_else(|| args.out.join("key-service-pki"));
    let kms_pki_created = attest_keyservice::tls::generate_pki(&kms_pki)
        .map_err(|e| UsageError::new(format!("key-service PKI: {e}")))?
        == attest_keyservice::tls::PkiOutcome::Created;
    let mut measurement_salt = [0u8; MEASUREMENT_SALT_LEN];
    openssl::rand::rand_bytes(&mut measurement_salt)
        .map_err(|e| UsageError::new(format!("random number generator: {e}")))?;
    Ok(Prepared {
        addr,
        validator: std::sync::Mutex::new(Some(validator)),
        trust,
        kms_pki,
        kms_pki_created,
        registry,
        ca,
        master,
        master_path,
        master_generated,
        init_secret,
        measurement_salt,
        measurements_version,
    })
}

/// The join service's first cluster state: the init node as a control-plane member (when its attestation
/// names an identity and its answer a name and a disk), and the measurements version accepted at init.
fn write_cluster_state(
    path: &Path,
    success: &attest_proto::init::InitSuccessResponse,
    attested: &AttestationSummary,
    measurements_version: u64,
) -> Result<bool, FilesError> {
    let init_node = match &attested.identity {
        Some(identity) if !success.node_name.is_empty() && !success.disk_uuid.is_empty() => {
            Some(attest_trust::NodeRecord {
                identity: identity.clone(),
                names: vec![success.node_name.clone()],
                disks: vec![success.disk_uuid.clone()],
                control_plane: true,
            })
        }
        _ => None,
    };
    let complete = init_node.is_some();
    attest_trust::ClusterState::create(path, init_node, measurements_version).map_err(FilesError::ClusterState)?;
    Ok(complete)
}

/// Why the files of an initialized cluster could not be written (the cluster exists; `attest init` says so
/// and prints its id).
#[derive(Debug)]
#[non_exhaustive]
pub enum FilesError {
    /// The kubeconfig or the cluster file.
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The join service's first cluster state.
    ClusterState(attest_trust::StateError),
}

impl std::fmt::Display for FilesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File { path, source } => write!(f, "{}: {source}", path.display()),
            Self::ClusterState(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FilesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::File { source, .. } => Some(source),
            Self::ClusterState(e) => Some(e),
        }
    }
}

/// An EK CA bundle from a swtpm-localca directory, a directory of PEM files, or a PEM file.
fn load_ca(path: &Path) -> Result<EkCaBundle, UsageError> {
    let bad = |e: attest_registration::Error| UsageError::new(format!("--ek-ca {}: {e}", path.display()));
    if path.join("swtpm-localca-rootca-cert.pem").is_file() {
        return EkCaBundle::from_swtpm_localca(path).map_err(bad);
    }
    if path.is_dir() {
        let entries =
            std::fs::read_dir(path).map_err(|e| UsageError::new(format!("--ek-ca {}: {e}", path.display())))?;
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pem" || x == "crt"))
            // Never read key files that may sit next to the certificates (a CA's own directory).
            .filter(|p| std::fs::read(p).is_ok_and(|d| !d.windows(11).any(|w| w == b"PRIVATE KEY")))
            .collect();
        files.sort();
        return EkCaBundle::from_files(&files).map_err(bad);
    }
    EkCaBundle::from_files(&[path]).map_err(bad)
}

fn read_init_secret(path: &Path) -> Result<Zeroizing<Vec<u8>>, UsageError> {
    use std::io::Read;
    let err = |e: std::io::Error| UsageError::new(format!("--init-secret {}: {e}", path.display()));
    let f = std::fs::File::open(path).map_err(err)?;
    let mut data = Zeroizing::new(Vec::with_capacity(MAX_INIT_SECRET_LEN as usize + 1));
    f.take(MAX_INIT_SECRET_LEN + 1).read_to_end(&mut data).map_err(err)?;
    if data.len() as u64 > MAX_INIT_SECRET_LEN {
        return Err(UsageError::new(format!(
            "--init-secret {}: more than {MAX_INIT_SECRET_LEN} bytes",
            path.display()
        )));
    }
    Ok(data)
}

/// Reads the master secret, or generates one (key and salt from the OS RNG) and writes it 0600 atomically.
fn load_or_generate_master_secret(path: &Path) -> Result<(MasterSecret, bool), UsageError> {
    if path.exists() {
        let secret = MasterSecret::from_file(path).map_err(|e| UsageError::new(format!("--master-secret: {e}")))?;
        return Ok((secret, false));
    }
    let secret = generate_master_secret()?;
    let json = secret.to_json();
    write_private(path, json.as_bytes())
        .map_err(|e| UsageError::new(format!("writing the master secret {}: {e}", path.display())))?;
    Ok((secret, true))
}

/// A fresh master secret: key and salt from the OS random number generator.
pub(crate) fn generate_master_secret() -> Result<MasterSecret, UsageError> {
    let mut key = Zeroizing::new(vec![0u8; MASTER_KEY_LEN]);
    let mut salt = Zeroizing::new(vec![0u8; MASTER_SALT_LEN]);
    openssl::rand::rand_bytes(&mut key)
        .and_then(|()| openssl::rand::rand_bytes(&mut salt))
        .map_err(|e| UsageError::new(format!("random number generator: {e}")))?;
    MasterSecret::new(key, salt).map_err(|e| UsageError::new(e.to_string()))
}

/// How the network part ended.
enum Outcome {
    Initialized {
        success: attest_proto::init::InitSuccessResponse,
        attested: Box<AttestationSummary>,
        registered: bool,
    },
    /// The node's attestation or AK registration was refused.
    Refused { stage: &'static str, reason: String },
    /// The node answered `init_failure`.
    InitFailed { error: String },
    /// Network or protocol failure.
    Failed { stage: &'static str, reason: String },
}

fn connect_failure(stage: &'static str, e: &ConnectError) -> Outcome {
    match e {
        ConnectError::Atls(a) => Outcome::Refused { stage, reason: reason(a) },
        other => Outcome::Failed { stage, reason: reason(other) },
    }
}

fn config() -> ChannelConfig {
    ChannelConfig { connect_timeout: CONNECT_TIMEOUT, ..ChannelConfig::default() }
}

fn progress(msg: &str) {
    eprintln!("attest: {msg}");
}

async fn execute(args: &InitArgs, p: &Prepared) -> Outcome {
    // 1. qemu-vtpm: make sure the node's AK is registered (pull, by credential activation). The other
    //    variants trust the AK through the hardware report or the provider's certificate.
    let registered = if args.node.variant.info().ak == attest_engine::variant::AkTrust::Registry {
        match ensure_registered(p, args.node.variant).await {
            Ok(r) => r,
            Err(o) => return o,
        }
    } else {
        false
    };

    // 2. The verified connection.
    progress(&format!("connecting to {} (verifying its attestation)", p.addr));
    let Some(validator) = p.validator.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() else {
        return Outcome::Failed { stage: "attestation", reason: "the validator was used already".into() };
    };
    let (connector, recorder) = match verifying_connector(validator) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed { stage: "attestation", reason: reason(&e) },
    };
    let channel = match connect(p.addr, &connector, config()).await {
        Ok((channel, _peer)) => channel,
        Err(e) => return connect_failure("attestation", &e),
    };
    let Some(attested) = recorder.last() else {
        return Outcome::Failed { stage: "attestation", reason: "the handshake verified no attestation".into() };
    };
    match (attested.ak_basis, &attested.td) {
        (Some(basis), _) => progress(&format!(
            "node attested: {}, AK {} ({}), {} expected PCR(s) matched",
            attested.variant.name(),
            attested.ak_digest.map_or_else(|| "(HCL runtime data)".to_owned(), |d| hex::encode(&d[..8])),
            basis.name(),
            attested.pcrs.len()
        )),
        (None, td) => progress(&format!(
            "node attested: {}, no vTPM: TD quote, registers {} matched",
            attested.variant.name(),
            td.as_ref().map_or_else(|| "none".to_owned(), |t| t.registers_checked.join(", "))
        )),
    }

    // 3. Init.
    let request = InitRequest {
        kms_uri: p.master.to_kms_uri().to_string(),
        storage_uri: STORAGE_URI.to_owned(),
        measurement_salt: p.measurement_salt.to_vec(),
        kubernetes_version: args.kubernetes_version.clone(),
        init_secret: p.init_secret.to_vec(),
        cluster_name: args.cluster_name.clone(),
        ..InitRequest::default()
    };
    progress("sending the init request");
    let started = Instant::now();
    let response =
        channel.server_streaming::<_, InitResponse>(paths::INIT_INIT, request, Metadata::new(), Some(INIT_TIMEOUT));
    let mut stream = match response.await {
        Ok(r) => r.message,
        Err(status) => return Outcome::Failed { stage: "init", reason: status.to_string() },
    };
    let mut lines = 0usize;
    loop {
        match stream.message().await {
            Ok(Some(InitResponse { kind: Some(init_response::Kind::Log(log)) })) => {
                for line in String::from_utf8_lossy(&log.log).lines().filter(|l| !l.trim().is_empty()) {
                    lines += 1;
                    eprintln!("  [{:>6.1}s #{lines:>3}] {}", started.elapsed().as_secs_f64(), line.trim_end());
                }
            }
            Ok(Some(InitResponse { kind: Some(init_response::Kind::InitSuccess(success)) })) => {
                progress(&format!("initialized in {:.1}s", started.elapsed().as_secs_f64()));
                return Outcome::Initialized { success, attested: Box::new(attested), registered };
            }
            Ok(Some(InitResponse { kind: Some(init_response::Kind::InitFailure(f)) })) => {
                return Outcome::InitFailed { error: f.error };
            }
            Ok(Some(InitResponse { kind: None })) => {}
            Ok(None) => {
                return Outcome::Failed { stage: "init", reason: "the node ended the stream without a result".into() };
            }
            Err(status) => return Outcome::Failed { stage: "init", reason: status.to_string() },
        }
    }
}

/// Registers the node's AK unless the registry already trusts it. Returns whether it registered now.
async fn ensure_registered(p: &Prepared, variant: attest_engine::variant::Variant) -> Result<bool, Outcome> {
    const STAGE: &str = "registration";
    progress(&format!("connecting to {} (identity connection: learning which AK the node attests with)", p.addr));
    let connector =
        dangerous_identity_connector(variant).map_err(|e| Outcome::Failed { stage: STAGE, reason: reason(&e) })?;
    let (channel, peer) = connect(p.addr, &connector, config()).await.map_err(|e| connect_failure(STAGE, &e))?;
    let ak = peer
        .as_ref()
        .and_then(peer_ak_public)
        .and_then(|ak| ak_digest(&ak).ok())
        .ok_or_else(|| Outcome::Refused { stage: STAGE, reason: "the node's attestation carries no AK".into() })?;
    if let Some(basis @ (AkBasis::CredentialActivation | AkBasis::Pinned)) =
        attest_engine::variant::AkRegistry::lookup(&*p.registry, &ak)
    {
        progress(&format!("AK {} already in the registry ({})", hex::encode(&ak[..8]), basis.name()));
        return Ok(false);
    }
    let Some(ca) = &p.ca else {
        return Err(Outcome::Refused {
            stage: STAGE,
            reason: format!(
                "the node's AK {} is not in the AK registry {}; give --ek-ca to register it",
                hex::encode(ak),
                p.registry.path().display()
            ),
        });
    };
    let before = p.registry.entries();
    progress("registering the node's AK by credential activation");
    let digest = register_remote(&channel, ca, &p.registry).await.map_err(|e| {
        if e.is_refusal() {
            Outcome::Refused { stage: STAGE, reason: reason(&e) }
        } else {
            Outcome::Failed { stage: STAGE, reason: reason(&e) }
        }
    })?;
    if digest != ak {
        // The node proved an AK other than the one that signed its attestation: undo what it added.
        if !before.iter().any(|(d, _)| *d == digest) {
            let _ = p.registry.remove(&digest);
        }
        return Err(Outcome::Refused {
            stage: STAGE,
            reason: "the AK registered by credential activation is not the AK of the node's attestation".into(),
        });
    }
    progress(&format!("AK {} registered (credential activation)", hex::encode(&digest[..8])));
    Ok(true)
}

/// Writes the result files and prints the summary.
fn report(args: &InitArgs, p: &Prepared, outcome: Outcome, stdout: &mut dyn Write) -> Status {
    let base = json!({
        "endpoint": args.endpoint,
        "masterSecret": {"path": p.master_path.display().to_string(), "generated": p.master_generated},
        "keyServicePki": {"path": p.kms_pki.display().to_string(), "generated": p.kms_pki_created},
        "trust": p.trust.to_json(),
    });
    let (status, summary) = match outcome {
        Outcome::Initialized { success, attested, registered } => {
            let kubeconfig = args.out.join("kubeconfig");
            let cluster = args.out.join("cluster.json");
            let state_path = args.out.join("cluster-state.json");
            let cluster_json = json!({
                "clusterId": hex::encode(&success.cluster_id),
                "ownerId": hex::encode(&success.owner_id),
                "measurementSalt": hex::encode(p.measurement_salt),
                "endpoint": args.endpoint,
                "clusterName": args.cluster_name,
                "kubernetesVersion": args.kubernetes_version,
                "akDigest": attested.ak_digest.map(hex::encode),
            });
            let mut cluster_bytes = serde_json::to_vec_pretty(&cluster_json).unwrap_or_default();
            cluster_bytes.push(b'\n');
            // The kubeconfig holds cluster-admin credentials: owner-only, like the master secret.
            let written = write_private(&kubeconfig, &success.kubeconfig)
                .map_err(|source| FilesError::File { path: kubeconfig.clone(), source })
                .and_then(|()| {
                    write_private(&cluster, &cluster_bytes)
                        .map_err(|source| FilesError::File { path: cluster.clone(), source })
                })
                .and_then(|()| write_cluster_state(&state_path, &success, &attested, p.measurements_version));
            let state_complete = match written {
                Ok(complete) => complete,
                Err(e) => {
                    eprintln!("attest: error: the cluster is initialized but writing its files failed: {e}");
                    eprintln!("attest: cluster id {}", hex::encode(&success.cluster_id));
                    return Status::Rejected;
                }
            };
            if !state_complete {
                eprintln!(
                    "attest: WARNING: {} does not bind the init node (its attestation names no identity, or its \
                     answer no node name and disk): its name and disk are not protected from other nodes",
                    state_path.display()
                );
            }
            if !args.json {
                eprintln!("attest: node attestation\n{}", indent(&attested.describe()));
                eprintln!(
                    "attest: measurements signature {}, waivers {}",
                    p.trust.measurements.name(),
                    p.trust.waivers_field()
                );
                eprintln!("attest: wrote {} and {}", kubeconfig.display(), cluster.display());
                eprintln!("attest: key-service PKI in {}", p.kms_pki.display());
            }
            let mut s = base;
            s["initialized"] = json!(true);
            s["clusterId"] = json!(hex::encode(&success.cluster_id));
            s["ownerId"] = json!(hex::encode(&success.owner_id));
            s["measurementSalt"] = json!(hex::encode(p.measurement_salt));
            s["registeredNow"] = json!(registered);
            s["attestation"] = attested.to_json();
            s["files"] = json!({
                "kubeconfig": kubeconfig.display().to_string(),
                "cluster": cluster.display().to_string(),
                "clusterState": state_path.display().to_string(),
                "akRegistry": p.registry.path().display().to_string(),
            });
            s["clusterStateBindsInitNode"] = json!(state_complete);
            if !args.json {
                let _ = writeln!(stdout, "cluster {} initialized", hex::encode(&success.cluster_id));
            }
            (Status::Accepted, s)
        }
        Outcome::Refused { stage, reason } => {
            eprintln!("attest: REFUSED ({stage}): {reason}");
            (Status::Rejected, failure(base, stage, &reason))
        }
        Outcome::InitFailed { error } => {
            eprintln!("attest: init failed on the node: {error}");
            (Status::Rejected, failure(base, "init", &error))
        }
        Outcome::Failed { stage, reason } => {
            eprintln!("attest: error ({stage}): {reason}");
            (Status::Rejected, failure(base, stage, &reason))
        }
    };
    if args.json {
        let _ = writeln!(stdout, "{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    }
    status
}

fn failure(mut base: Value, stage: &str, reason: &str) -> Value {
    base["initialized"] = json!(false);
    base["stage"] = json!(stage);
    base["error"] = json!(reason);
    base
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}
