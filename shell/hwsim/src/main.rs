//! `attest-hwsim`: SIMULATED confidential-computing hardware for the demo and tests (crate docs).
//!
//! ```text
//! attest-hwsim machine --variant VARIANT
//! attest-hwsim snp serve --dir DIR --socket PATH [--signer vcek|vlek] [--measurement HEX]
//! attest-hwsim tdx serve --dir DIR --root ROOT [--platform FILE [--machine NAME]] [--mrtd HEX]
//!              [--measure TEXT …] [--debug] [--outdated-tcb] [--azure-tpm TCTI --quote-listen 127.0.0.1:PORT]
//! attest-hwsim tdx registers --root ROOT
//! attest-hwsim azure provision --tpm TCTI --snp-device sim:PATH
//! attest-hwsim gce provision --tpm TCTI --dir DIR --instance NAME [--project ID] [--measure PCR=TEXT …]
//!              --event-log-out FILE
//! attest-hwsim attack replay-snp --join-service ADDR --variant aws-sev-snp|gcp-sev-snp --tpm TCTI
//!              --snp-device sim:PATH [--node-name NAME]
//! attest-hwsim attack join --join-service ADDR --variant V --tpm TCTI [--snp-device sim:PATH]
//!              [--snp-leaf FILE] [--node-name NAME] [--tdx-root sim:ROOT] [--tdx-quote-endpoint URL]
//!              [--disk-uuid UUID] [--control-plane] [--unproven-csr-key]
//! attest-hwsim attack borrowed --mode replayed|relayed --join-service ADDR --variant V --tpm TCTI
//!              [--snp-device sim:PATH] [--snp-leaf FILE] [--tdx-root sim:ROOT] [--tdx-quote-endpoint URL]
//! attest-hwsim attack rejoin --join-service ADDR --variant V --tpm TCTI [--snp-device sim:PATH]
//!              [--tdx-root sim:ROOT] [--tdx-quote-endpoint URL] --disk-uuid UUID
//! ```
//!
//! `machine` prints, as one JSON object, what a machine of the variant has, from its row of the variant table
//! (`{"variant", "vtpm", "ek_certificate", "snp_signer": "vcek"|"vlek"|null, "paravisor", "gce_ak", "tdx"}`):
//! the demo manufactures each node's simulated hardware from it — a swtpm without an EK certificate where the
//! cloud's vTPM has none (AWS's NitroTPM). `snp serve` prints `listening on PATH` once it answers, then runs
//! until SIGTERM. `tdx serve` prints `serving sim:ROOT` (and, with `--azure-tpm`, `quote endpoint URL` after
//! provisioning the vTPM as Azure's paravisor does) once it answers, then runs until SIGTERM; attesters take
//! `sim:ROOT` as their TDX root and the URL as Azure's quote endpoint. With `--platform FILE`, several `tdx
//! serve` processes (one TD each, say one per node) share one platform and so one test root: the first
//! generates it into DIR and saves its TEST keys to FILE (owner-only), the others — started once it printed
//! `serving` — load it; `--machine NAME` makes the TD's machine another one of that platform (its own PCK
//! certificate and PPID, derived from NAME: the TDX node identity) under the same test root. `--measure TEXT`
//! extends RTMR2 with the boot's image (the kernel and initrd a measured boot extends there); `--debug` and
//! `--outdated-tcb` boot a TD with the DEBUG attribute or on an out-of-date TDX module (attack machines). Once
//! serving it prints `rtmrs HEX HEX HEX HEX` (the boot's RTMR0–3). `tdx registers` prints a running TD's
//! RTMRs, read back through its configfs-tsm interface (`{"rtmrs": [RTMR0, …, RTMR3]}`). The attack commands
//! print one JSON object (`{"attack", "outcome": "refused"|"issued", "reason"?}`) and exit 0 when the
//! attempt ran (whatever its outcome), 1 when it could not run. Every command says on stderr that the
//! hardware is simulated.

use attest_attester::issuer::gce::GceAkKind;
use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice};
use attest_attester::issuer::{QemuVtpmIssuer, QuoteEndpoint, SnpDeviceAddr, SnpGuestDevice, SnpIssuer, TdxPaths};
use attest_attester::tpm::{AkConfig, Tpm};
use attest_engine::variant::{AkTrust, Variant};
use attest_hwsim::attack::{
    AttackError, Borrowed, JoinClaim, ReplayingIssuer, attempt_join, attempt_join_claiming, attempt_rejoin,
};
use attest_hwsim::snp::{DEFAULT_MEASUREMENT, SimulatedSnp, SnpServer};
use attest_hwsim::{BANNER, azure, gce, tdx};
use attest_test_support::SigningKeyKind;
use attest_test_support::gce::InstanceSpec;
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(name = "attest-hwsim", version, about = "SIMULATED hardware (test roots) for the demo and tests")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// What a machine of a variant has (JSON), from the variant table.
    Machine {
        /// The variant.
        #[arg(long)]
        variant: Variant,
    },
    /// A simulated SEV-SNP guest device.
    #[command(subcommand)]
    Snp(SnpCommand),
    /// A simulated Intel TD (and, for Azure, its paravisor's vTPM and quote endpoint).
    #[command(subcommand)]
    Tdx(TdxCommand),
    /// A simulated Azure paravisor.
    #[command(subcommand)]
    Azure(AzureCommand),
    /// A simulated GCE vTPM.
    #[command(subcommand)]
    Gce(GceCommand),
    /// Attacks against a live join service.
    #[command(subcommand)]
    Attack(AttackCommand),
}

#[derive(Subcommand, Debug)]
enum SnpCommand {
    /// Generate a test PKI into DIR and answer report requests on SOCKET.
    Serve {
        /// The test-root directory (written).
        #[arg(long)]
        dir: PathBuf,
        /// The Unix socket to listen on.
        #[arg(long)]
        socket: PathBuf,
        /// The report signer: a VCEK (GCP, Azure) or a VLEK (AWS).
        #[arg(long, value_enum, default_value = "vcek")]
        signer: Signer,
        /// The simulated guest's launch MEASUREMENT (96 hex digits).
        #[arg(long)]
        measurement: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum TdxCommand {
    /// Generate an Intel-like PKI and collateral into DIR and serve a TD's kernel interfaces below ROOT.
    Serve {
        /// The test-root directory (written).
        #[arg(long)]
        dir: PathBuf,
        /// The simulated system root (created): configfs-tsm, RTMR files, the CCEL table.
        #[arg(long)]
        root: PathBuf,
        /// The simulated platform's file: loaded when it exists, else generated (into DIR) and saved there, so
        /// that several TDs run on one platform under one test root. Without it: a platform of this TD alone.
        #[arg(long, value_name = "FILE")]
        platform: Option<PathBuf>,
        /// The TD's machine on the platform: its own PCK certificate and PPID, derived from NAME.
        #[arg(long, requires = "platform")]
        machine: Option<String>,
        /// The TD's MRTD (96 hex digits).
        #[arg(long)]
        mrtd: Option<String>,
        /// Extend RTMR2 with TEXT at boot (the image a measured boot extends there; repeatable, in order).
        #[arg(long = "measure", value_name = "TEXT")]
        measure: Vec<String>,
        /// Boot the TD with the DEBUG attribute (a TD whose memory the host can read).
        #[arg(long)]
        debug: bool,
        /// Boot the TD on an out-of-date TDX module (TEE_TCB_SVN at the collateral's OutOfDate level).
        #[arg(long)]
        outdated_tcb: bool,
        /// Provision this TPM as Azure's paravisor does (HCL report of TDX type, HCL AK); the TD then runs
        /// as an Azure TD partition (TDATTRIBUTES 0).
        #[arg(long, requires = "quote_listen")]
        azure_tpm: Option<String>,
        /// Where the stand-in of Azure's quote endpoint listens (127.0.0.1:PORT; port 0 picks one).
        #[arg(long)]
        quote_listen: Option<SocketAddr>,
    },
    /// Print a running TD's RTMRs (JSON), read back through its configfs-tsm interface.
    Registers {
        /// The TD's system root (sim:/path or /path).
        #[arg(long)]
        root: String,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BorrowMode {
    Replayed,
    Relayed,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Signer {
    Vcek,
    Vlek,
}

#[derive(Subcommand, Debug)]
enum AzureCommand {
    /// Provision a TPM as Azure's paravisor does (AK at 0x81000003, HCL report at NV 0x01400001).
    Provision {
        /// The TPM (swtpm:host=127.0.0.1,port=N).
        #[arg(long)]
        tpm: String,
        /// The simulated SEV-SNP device (sim:/path).
        #[arg(long)]
        snp_device: String,
    },
}

#[derive(Subcommand, Debug)]
enum GceCommand {
    /// Provision a TPM as a GCE vTPM (AK template and certificate at Google's NV indices) and boot it.
    Provision {
        /// The TPM.
        #[arg(long)]
        tpm: String,
        /// The test-root directory (the CA is created there on first use).
        #[arg(long)]
        dir: PathBuf,
        /// The instance name the AK certificate names.
        #[arg(long)]
        instance: String,
        /// The project id.
        #[arg(long, default_value = "attest-demo")]
        project: String,
        /// Measure TEXT into PCR (an EV_IPL event), e.g. 9=kernel (repeatable).
        #[arg(long = "measure", value_name = "PCR=TEXT")]
        measure: Vec<String>,
        /// Where the boot's event log is written.
        #[arg(long)]
        event_log_out: PathBuf,
    },
}

/// The join service and the node an attack client plays.
#[derive(clap::Args, Debug)]
struct AttackTarget {
    /// The join service (aTLS).
    #[arg(long)]
    join_service: SocketAddr,
    /// The node's variant.
    #[arg(long)]
    variant: String,
    /// The node's TPM (for the replay: the host's view of the node's vTPM).
    #[arg(long)]
    tpm: String,
    /// The simulated SEV-SNP device.
    #[arg(long)]
    snp_device: Option<String>,
    /// The node name in the CSR.
    #[arg(long, default_value = "node-attack")]
    node_name: String,
    /// The simulated TDX root (sim:/path; TDX variants).
    #[arg(long)]
    tdx_root: Option<String>,
    /// The stand-in of Azure's TD quote endpoint (azure-tdx).
    #[arg(long)]
    tdx_quote_endpoint: Option<String>,
}

#[derive(Subcommand, Debug)]
enum AttackCommand {
    /// Replay the SNP report of an earlier attestation next to a fresh quote (aws-sev-snp, gcp-sev-snp).
    ReplaySnp {
        #[command(flatten)]
        target: AttackTarget,
    },
    /// One join attempt by a genuine node (e.g. one whose VCEK the join service's CRL revokes), claiming what
    /// the flags say: another disk, the control plane, a CSR key it did not prove.
    Join {
        #[command(flatten)]
        target: AttackTarget,
        /// The VCEK/VLEK (Azure: the VCEK) when the device's table has none.
        #[arg(long)]
        snp_leaf: Option<PathBuf>,
        /// The disk UUID to claim (default: one of the node's own, derived from its name).
        #[arg(long)]
        disk_uuid: Option<String>,
        /// Set the request's control-plane flag.
        #[arg(long)]
        control_plane: bool,
        /// Send a CSR for a key other than the handshake's.
        #[arg(long)]
        unproven_csr_key: bool,
    },
    /// One join attempt with a genuine node's evidence that was not made for this handshake: recorded for an
    /// earlier nonce (`replayed`) or bound to another key (`relayed`).
    Borrowed {
        #[command(flatten)]
        target: AttackTarget,
        /// How the evidence is borrowed.
        #[arg(long, value_enum)]
        mode: BorrowMode,
        /// The VCEK/VLEK (Azure: the VCEK) when the device's table has none.
        #[arg(long)]
        snp_leaf: Option<PathBuf>,
    },
    /// One rejoin attempt by a genuine node for a disk UUID (e.g. another node's).
    Rejoin {
        #[command(flatten)]
        target: AttackTarget,
        /// The VCEK/VLEK (Azure: the VCEK) when the device's table has none.
        #[arg(long)]
        snp_leaf: Option<PathBuf>,
        /// The disk UUID whose key is asked for.
        #[arg(long)]
        disk_uuid: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    attest_util::init_service_logging(tracing::Level::WARN);
    eprintln!("attest-hwsim: {BANNER}");
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("attest-hwsim: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn device(addr: &str) -> Result<SnpGuestDevice, ToolError> {
    let addr = SnpDeviceAddr::parse(addr).map_err(ToolError::from_source)?;
    SnpGuestDevice::open(&addr).map_err(ToolError::from_source)
}

/// What a machine of `variant` has, from its row of the variant table.
fn machine(variant: Variant) -> serde_json::Value {
    let row = variant.info();
    let signer = row.snp_signer().map(|k| match k {
        attest_engine::snp::SigningKey::Vcek => "vcek",
        attest_engine::snp::SigningKey::Vlek => "vlek",
    });
    json!({
        "variant": row.name,
        "vtpm": row.has_vtpm(),
        "ek_certificate": row.ek_certificate,
        "snp_signer": signer,
        "paravisor": row.ak == AkTrust::HclRuntimeData,
        "gce_ak": row.ak == AkTrust::ProviderCertificate,
        "tdx": row.is_tdx(),
    })
}

fn run(command: Command) -> Result<(), ToolError> {
    match command {
        Command::Machine { variant } => {
            println!("{}", machine(variant));
            Ok(())
        }
        Command::Snp(SnpCommand::Serve { dir, socket, signer, measurement }) => {
            let measurement = match measurement {
                None => DEFAULT_MEASUREMENT,
                Some(h) => hex::decode(h.trim())
                    .ok()
                    .and_then(|b| <[u8; 48]>::try_from(b).ok())
                    .ok_or(ToolError::Usage("--measurement: expected 96 hex digits"))?,
            };
            let kind = match signer {
                Signer::Vcek => SigningKeyKind::Vcek,
                Signer::Vlek => SigningKeyKind::Vlek,
            };
            let sim = SimulatedSnp::provision(&dir, kind, measurement).map_err(ToolError::from_source)?;
            let server = SnpServer::start(sim, &socket).map_err(ToolError::from_source)?;
            println!("listening on {}", server.socket().display());
            wait_for_termination()?;
            eprintln!("attest-hwsim: answered {} report request(s)", server.served());
            Ok(())
        }
        Command::Tdx(TdxCommand::Serve {
            dir,
            root,
            platform,
            machine,
            mrtd,
            measure,
            debug,
            outdated_tcb,
            azure_tpm,
            quote_listen,
        }) => {
            let mrtd = match mrtd {
                None => tdx::DEFAULT_MRTD,
                Some(h) => hex::decode(h.trim())
                    .ok()
                    .and_then(|b| <[u8; 48]>::try_from(b).ok())
                    .ok_or(ToolError::Usage("--mrtd: expected 96 hex digits"))?,
            };
            let mut attributes = if azure_tpm.is_some() { tdx::AZURE_TD_ATTRIBUTES } else { tdx::TD_ATTRIBUTES };
            if debug {
                attributes |= tdx::DEBUG_ATTRIBUTE;
            }
            let mut platform = match &platform {
                Some(file) => tdx::TdPlatform::open_or_generate(file, &dir).map_err(ToolError::from_source)?.0,
                None => tdx::TdPlatform::generate(&dir).map_err(ToolError::from_source)?,
            };
            if let Some(name) = &machine {
                platform = platform.for_machine(name);
            }
            let mut config = tdx::TdConfig::new(mrtd, attributes);
            config.events.extend(measure.into_iter().map(|text| (2, text.into_bytes())));
            if outdated_tcb {
                config.tee_tcb_svn = tdx::OUTDATED_TEE_TCB_SVN;
            }
            let td =
                Arc::new(tdx::SimulatedTd::boot(Arc::new(platform), &root, &config).map_err(ToolError::from_source)?);
            let _server = tdx::TdServer::start(&td).map_err(ToolError::from_source)?;
            let mut _endpoint = None;
            if let Some(tcti) = azure_tpm {
                let mut tpm = Tpm::open(&tcti).map_err(ToolError::from_source)?;
                td.provision_azure(&mut tpm).map_err(ToolError::from_source)?;
                drop(tpm);
                let listen = quote_listen.ok_or(ToolError::Usage("--quote-listen is required with --azure-tpm"))?;
                let endpoint =
                    tdx::QuoteEndpointServer::start(Arc::clone(&td), listen).map_err(ToolError::from_source)?;
                println!("quote endpoint {}", endpoint.url());
                _endpoint = Some(endpoint);
            }
            println!("serving sim:{}", root.display());
            println!("mrtd {}", hex::encode(mrtd));
            let rtmrs: Vec<String> = td.state().rtmrs.iter().map(hex::encode).collect();
            println!("rtmrs {}", rtmrs.join(" "));
            wait_for_termination()?;
            eprintln!("attest-hwsim: produced {} TD quote(s)", td.quotes());
            Ok(())
        }
        Command::Tdx(TdxCommand::Registers { root }) => {
            let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
            config.tdx = TdxPaths::parse(&root).map_err(ToolError::from_source)?;
            let issuer =
                NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).map_err(ToolError::from_source)?;
            let guest = issuer.tdx_guest().ok_or(ToolError::Usage("no TD guest"))?;
            let rtmrs: Vec<String> = guest.rtmrs().map_err(ToolError::from_source)?.iter().map(hex::encode).collect();
            println!("{}", json!({"rtmrs": rtmrs}));
            Ok(())
        }
        Command::Azure(AzureCommand::Provision { tpm, snp_device }) => {
            let mut tpm = Tpm::open(&tpm).map_err(ToolError::from_source)?;
            let provisioned = azure::provision(&mut tpm, &device(&snp_device)?).map_err(ToolError::from_source)?;
            println!("{}", json!({"hcl_report_bytes": provisioned.hcl_report.len(), "ak_handle": "0x81000003"}));
            Ok(())
        }
        Command::Gce(GceCommand::Provision { tpm, dir, instance, project, measure, event_log_out }) => {
            let mut image = Vec::new();
            for m in &measure {
                let (pcr, text) = m.split_once('=').ok_or(ToolError::Usage("--measure: expected PCR=TEXT"))?;
                let pcr: u8 = pcr.parse().map_err(|_| ToolError::Usage("--measure: PCR is a number"))?;
                image.push((pcr, text.as_bytes().to_vec()));
            }
            let mut tpm = Tpm::open(&tpm).map_err(ToolError::from_source)?;
            let spec = InstanceSpec::new(&project, &instance);
            let log = gce::provision(&mut tpm, &dir, &spec, GceAkKind::Ecc, &image).map_err(ToolError::from_source)?;
            std::fs::write(&event_log_out, log).map_err(ToolError::at(event_log_out.display()))?;
            println!("{}", json!({"instance": instance, "project": project, "ak": "ecc"}));
            Ok(())
        }
        Command::Attack(AttackCommand::ReplaySnp { target }) => {
            let variant = Variant::from_name(&target.variant).ok_or(ToolError::Usage("--variant: unknown"))?;
            let tpm = Tpm::open(&target.tpm).map_err(ToolError::from_source)?;
            let qemu = QemuVtpmIssuer::new(tpm, AkConfig::default()).map_err(ToolError::from_source)?;
            let snp_device = target.snp_device.as_deref().ok_or(ToolError::Usage("--snp-device is required"))?;
            let inner = SnpIssuer::new(variant, qemu, device(snp_device)?).map_err(ToolError::from_source)?;
            let replaying =
                ReplayingIssuer::record(inner, b"an earlier attestation's nonce").map_err(ToolError::from_source)?;
            let outcome = block_on(attempt_join(target.join_service, Arc::new(replaying), &target.node_name))?;
            let mut v = outcome.to_json();
            v["attack"] = json!("replayed SNP report");
            println!("{v}");
            Ok(())
        }
        Command::Attack(AttackCommand::Join { target, snp_leaf, disk_uuid, control_plane, unproven_csr_key }) => {
            let issuer = node_issuer(&target, snp_leaf)?;
            let claim = JoinClaim {
                disk_uuid: disk_uuid.unwrap_or_else(|| attest_hwsim::attack::disk_uuid_of(&target.node_name)),
                node_name: target.node_name.clone(),
                control_plane,
                unproven_csr_key,
            };
            let outcome = block_on(attempt_join_claiming(target.join_service, Arc::new(issuer), &claim))?;
            let mut v = outcome.to_json();
            v["attack"] = json!("join attempt");
            println!("{v}");
            Ok(())
        }
        Command::Attack(AttackCommand::Borrowed { target, mode, snp_leaf }) => {
            let genuine = Arc::new(node_issuer(&target, snp_leaf)?);
            let (borrowed, name) = match mode {
                BorrowMode::Replayed => (Borrowed::Replayed(genuine), "replayed evidence"),
                BorrowMode::Relayed => (Borrowed::Relayed(genuine), "relayed evidence"),
            };
            let outcome = block_on(attempt_join(target.join_service, Arc::new(borrowed), &target.node_name))?;
            let mut v = outcome.to_json();
            v["attack"] = json!(name);
            println!("{v}");
            Ok(())
        }
        Command::Attack(AttackCommand::Rejoin { target, snp_leaf, disk_uuid }) => {
            let issuer = node_issuer(&target, snp_leaf)?;
            let outcome = block_on(attempt_rejoin(target.join_service, Arc::new(issuer), &disk_uuid))?;
            let mut v = outcome.to_json();
            v["attack"] = json!("rejoin attempt");
            println!("{v}");
            Ok(())
        }
    }
}

/// The issuer of the node an attack client plays.
fn node_issuer(target: &AttackTarget, snp_leaf: Option<PathBuf>) -> Result<NodeIssuer, ToolError> {
    let variant = Variant::from_name(&target.variant).ok_or(ToolError::Usage("--variant: unknown"))?;
    let mut config = HardwareConfig::new(&target.tpm);
    if let Some(d) = &target.snp_device {
        config.snp_device = SnpDeviceAddr::parse(d).map_err(ToolError::from_source)?;
    }
    if let Some(root) = &target.tdx_root {
        config.tdx = TdxPaths::parse(root).map_err(ToolError::from_source)?;
    }
    if let Some(url) = &target.tdx_quote_endpoint {
        config.tdx_quote_endpoint = QuoteEndpoint::parse(url).map_err(ToolError::from_source)?;
    }
    if let Some(leaf) = snp_leaf {
        config.snp_leaf = Some(std::fs::read(&leaf).map_err(ToolError::at(leaf.display()))?);
    }
    NodeIssuer::open(VariantChoice::Fixed(variant), &config).map_err(ToolError::from_source)
}

/// Blocks until SIGTERM or Ctrl-C.
fn wait_for_termination() -> Result<(), ToolError> {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ToolError::from_source)?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(ToolError::from_source)?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok::<(), ToolError>(())
    })
}

fn block_on<T>(f: impl Future<Output = Result<T, AttackError>>) -> Result<T, ToolError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ToolError::from_source)?
        .block_on(f)
        .map_err(ToolError::from_source)
}

/// Why a command failed: the text after `attest-hwsim: error:`.
#[derive(Debug)]
enum ToolError {
    /// A malformed argument.
    Usage(&'static str),
    /// A step failed: `context` (a file) and why.
    Failed {
        /// The file, when the error does not name it.
        context: Option<String>,
        /// The error of the step.
        source: Box<dyn std::error::Error>,
    },
}

impl ToolError {
    /// The error of a step whose message says what failed.
    fn from_source<E: std::error::Error + 'static>(e: E) -> Self {
        Self::Failed { context: None, source: Box::new(e) }
    }

    /// The error of a step on `context` (a file).
    fn at<E: std::error::Error + 'static>(context: impl std::fmt::Display) -> impl FnOnce(E) -> Self {
        let context = Some(context.to_string());
        move |e| Self::Failed { context, source: Box::new(e) }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Usage(m) => f.write_str(m),
            Self::Failed { context: None, source } => source.fmt(f),
            Self::Failed { context: Some(c), source } => write!(f, "{c}: {source}"),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Usage(_) => None,
            Self::Failed { source, .. } => Some(source.as_ref()),
        }
    }
}
