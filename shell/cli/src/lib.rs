//! # attest-cli
//!
//! The `attest` command line: argument definitions (clap derive), exit statuses and dispatch.
//!
//! **May depend on:** the verifier-side crates below it (engine, measurements, `attest-grpc`, `attest-atls`,
//! `attest-kds`, `attest-registration`, `attest-keyservice`, `attest-trust`, `attest-util`). **Must not depend on:** the
//! attester side (`attest-attester`: the CLI verifies nodes, it never attests, so it links no TPM library) or
//! the service crates (`attest-joinservice`, `attest-bootstrapper`): it talks to them over the wire. The `attest`
//! binary (`src/main.rs`) is a thin `main` over [`run`].
//!
//! Exit statuses are part of the interface, one table for every subcommand (`exit`, printed by
//! `attest --help`): [`Status::Accepted`] (0), [`Status::Rejected`] (1, evidence refused) and
//! [`Status::Usage`] (2, malformed input or wrong usage). Clap's own usage errors already exit with 2; every
//! malformed argument, unreadable file or malformed evidence detected here does too, with a message on
//! stderr.

#![forbid(unsafe_code)]

pub mod admission;
pub mod azure;
pub mod document;
pub(crate) mod ear;
pub mod evidence;
pub(crate) mod exit;
pub mod gce;
pub mod init;
pub mod input;
pub mod kds;
pub mod measurements;
pub mod node;
pub mod pcs;
pub mod recover;
pub mod secret;
pub mod snp;
pub mod tdx;
pub mod tpm;
pub(crate) mod trust;
pub mod verify;
pub mod verifysvc;

use clap::{Parser, Subcommand};
use std::fmt;
use std::process::ExitCode;

/// `attest --version`: the version and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("ATTEST_GIT_COMMIT"), ")");

/// The `attest` command line.
#[derive(Debug, Parser)]
#[command(name = "attest", version = VERSION, about = "Remote-attestation verification tool", after_help = exit::help())]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// AMD SEV-SNP: verify reports, verify VCEK/VLEK chains, show report fields.
    #[command(subcommand)]
    Snp(snp::SnpCommand),
    /// Expected-measurement files: show, diff, verify signatures and compare PCR values.
    #[command(subcommand)]
    Measurements(measurements::MeasurementsCommand),
    /// AMD KDS certificate store: fetch and prefill VCEKs, chains and CRLs for offline verification.
    #[command(subcommand)]
    Kds(kds::KdsCommand),
    /// Initialize the first node of a cluster through its bootstrapper, over aTLS (every variant).
    Init(init::InitArgs),
    /// Remote attestation of a running node over aTLS (every variant).
    Verify(verify::VerifyArgs),
    /// Cluster secrets: create the master secret.
    #[command(subcommand)]
    Secret(secret::SecretCommand),
    /// Intel TDX: verify TD quotes against Intel's collateral, show quote fields.
    #[command(subcommand)]
    Tdx(tdx::TdxCommand),
    /// Intel PCS collateral store: fetch and prefill TCB Info, QE Identity and CRLs for offline verification.
    #[command(subcommand)]
    Pcs(pcs::PcsCommand),
    /// TPM 2.0 quotes: verify a quote under a given attestation key.
    #[command(subcommand)]
    Tpm(tpm::TpmCommand),
    /// Azure SEV-SNP vTPM evidence: verify trustee's JSON layouts or the raw parts.
    #[command(subcommand)]
    Azure(azure::AzureCommand),
    /// GCE Shielded VM / Confidential VM attestations (go-tpm-tools).
    #[command(subcommand)]
    Gce(gce::GceCommand),
    /// This project's attestation documents (as sent in aTLS certificates).
    #[command(subcommand)]
    Document(document::DocumentCommand),
    /// Recover a rebooted node that cannot reach a join service: verify it over aTLS, send it the master secret.
    Recover(recover::RecoverArgs),
    /// Control-plane admissions: the operator's signed, one-time permission for one attested node.
    #[command(subcommand)]
    Admission(admission::AdmissionCommand),
}

/// How a command ended; converts into the process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The evidence was accepted (exit 0).
    Accepted,
    /// The evidence was rejected (exit 1).
    Rejected,
    /// The command line or an input file was unusable (exit 2).
    Usage,
}

impl Status {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Accepted => 0,
            Self::Rejected => 1,
            Self::Usage => 2,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> Self {
        ExitCode::from(s.code())
    }
}

/// A usage error: a malformed argument, or an input file that cannot be read or decoded. Exits with 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl UsageError {
    /// A usage error with `msg`.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// The single-threaded tokio runtime a networked subcommand runs on (the CLI makes one call at a time).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, UsageError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UsageError::new(format!("cannot start the async runtime: {e}")))
}

/// A collateral store directory: `$<env>` if set, else `$XDG_CACHE_HOME/attest/<name>`, else
/// `~/.cache/attest/<name>` (`None` without any of them).
pub(crate) fn default_cache_store(env: &str, name: &str) -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os(env) {
        return Some(d.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(cache.join("attest").join(name))
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Runs a parsed command line and returns the process exit status.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Snp(cmd) => snp::run(cmd),
        Command::Measurements(cmd) => measurements::run(cmd),
        Command::Kds(cmd) => kds::run(cmd),
        Command::Init(args) => init::run(&args, &mut std::io::stdout()),
        Command::Verify(args) => verify::run(&args, &mut std::io::stdout()),
        Command::Secret(cmd) => secret::run(&cmd, &mut std::io::stdout()),
        Command::Tdx(cmd) => tdx::run(cmd),
        Command::Pcs(cmd) => pcs::run(cmd),
        Command::Tpm(cmd) => tpm::run(cmd),
        Command::Azure(cmd) => azure::run(cmd),
        Command::Gce(cmd) => gce::run(cmd),
        Command::Document(cmd) => document::run(cmd),
        Command::Recover(args) => recover::run(&args, &mut std::io::stdout()),
        Command::Admission(cmd) => admission::run(&cmd),
    };
    match result {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("attest: error: {e}");
            Status::Usage.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn variant_flags_list_the_variant_table() {
        Cli::command().debug_assert();
        let checked = attest_trust::variant_arg::check_flags_list_the_table(&Cli::command()).unwrap();
        // init, verify, document verify, recover: the node's --variant.
        assert!(checked >= 4, "{checked}: {:?}", attest_trust::variant_arg::variant_flags(&Cli::command()));
    }
}
