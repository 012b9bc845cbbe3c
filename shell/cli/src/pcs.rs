//! `attest pcs …`: fill the Intel PCS collateral store for offline TDX verification ([`attest_kds::Pcs`]).
//!
//! ```text
//! attest pcs fetch (--quote FILE | --fmspc HEX [--ca platform|processor]) [--store DIR] [--base-url URL]
//!                  [--certs-url URL] [--offline] [--bundle OUT] [--json]
//! attest pcs prefill --store DIR (--fmspc HEX... [--ca C] | --from-quote FILE...) [--base-url URL]
//!                  [--certs-url URL] [--json]
//! ```
//!
//! `fetch` gets the collateral one platform needs — TCB Info for its FMSPC, the TD QE Identity, the PCK CRL
//! of its PCK CA and the root CA CRL, with their issuer chains — taking FMSPC and CA from a quote's PCK
//! certificate or from the command line; `--bundle` also writes it as the shared JSON bundle that
//! `attest tdx verify --collateral` reads. `prefill` does the same for many platforms. Progress goes to
//! stderr; `--json` prints one summary object on stdout. Exit status: 0 when every set was obtained, verified
//! and is fresh now, 1 otherwise (the reasons are printed), 2 on usage errors.
//!
//! The store defaults to `$ATTEST_PCS_STORE`, else `$XDG_CACHE_HOME/attest/pcs`, else `~/.cache/attest/pcs`.

use super::{Status, UsageError};
use attest_kds::{DEFAULT_INTEL_CERTS_URL, DEFAULT_PCS_BASE_URL, PckCa, Pcs, PcsCollateral, PcsConfig, quote_platform};
use serde_json::{Value, json};
use std::path::PathBuf;

/// `attest pcs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PcsCommand {
    /// Fetch the collateral one platform needs into the store (and optionally write it as a bundle).
    Fetch(FetchArgs),
    /// Fill the store for offline use, for FMSPCs given on the command line or taken from quotes.
    Prefill(PrefillArgs),
}

/// The PCK CA on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CaArg {
    /// Intel SGX PCK Platform CA.
    Platform,
    /// Intel SGX PCK Processor CA.
    Processor,
}

impl From<CaArg> for PckCa {
    fn from(c: CaArg) -> Self {
        match c {
            CaArg::Platform => PckCa::Platform,
            CaArg::Processor => PckCa::Processor,
        }
    }
}

/// Arguments of `attest pcs fetch`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("platform").required(true).args(["quote", "fmspc"])))]
pub struct FetchArgs {
    /// A TD quote whose platform's collateral to fetch (FMSPC and PCK CA from its PCK certificate).
    #[arg(long, value_name = "FILE")]
    pub quote: Option<PathBuf>,
    /// The platform's FMSPC (6 bytes, hex).
    #[arg(long, value_name = "HEX", conflicts_with = "quote")]
    pub fmspc: Option<String>,
    /// The CA of the platform's PCK certificates (with --fmspc).
    #[arg(long, value_enum, default_value = "platform", requires = "fmspc")]
    pub ca: CaArg,
    /// Also write the collateral as the shared JSON bundle (for `attest tdx verify --collateral`).
    #[arg(long, value_name = "OUT")]
    pub bundle: Option<PathBuf>,
    /// Store, PCS and output options.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `attest pcs prefill`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["fmspc", "from_quote"])))]
pub struct PrefillArgs {
    /// FMSPCs to fetch collateral for (repeatable).
    #[arg(long, value_name = "HEX")]
    pub fmspc: Vec<String>,
    /// The CA of those platforms' PCK certificates.
    #[arg(long, value_enum, default_value = "platform")]
    pub ca: CaArg,
    /// Quotes whose platforms to fetch collateral for.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub from_quote: Vec<PathBuf>,
    /// Store, PCS and output options.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Options shared by `fetch` and `prefill`.
#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// The Intel PCS base URL.
    #[arg(long, value_name = "URL", default_value = DEFAULT_PCS_BASE_URL)]
    pub base_url: String,
    /// The base URL of the Intel SGX Root CA CRL.
    #[arg(long, value_name = "URL", default_value = DEFAULT_INTEL_CERTS_URL)]
    pub certs_url: String,
    /// A PEM file of CA certificates to trust for the HTTPS connections besides the system's (a mirror's).
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// Use only the store; never contact PCS.
    #[arg(long)]
    pub offline: bool,
    /// Print one JSON summary on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs an `attest pcs` subcommand.
pub fn run(cmd: PcsCommand) -> Result<Status, UsageError> {
    let rt = super::runtime()?;
    match cmd {
        PcsCommand::Fetch(a) => rt.block_on(fetch(&a)),
        PcsCommand::Prefill(a) => rt.block_on(prefill(&a)),
    }
}

/// The default store directory.
pub fn default_store() -> Option<PathBuf> {
    super::default_cache_store("ATTEST_PCS_STORE", "pcs")
}

fn supply(c: &CommonArgs) -> Result<Pcs, UsageError> {
    let store = c.store.clone().or_else(default_store).ok_or_else(|| UsageError::new("no --store and no HOME"))?;
    let tls_roots = match &c.tls_ca {
        None => Vec::new(),
        Some(p) => super::input::read_certificates(p, "--tls-ca")?,
    };
    let config = PcsConfig {
        store: Some(store),
        base_url: (!c.offline).then(|| c.base_url.clone()),
        certs_url: (!c.offline).then(|| c.certs_url.clone()),
        tls_roots,
        ..PcsConfig::default()
    };
    Pcs::new(config).map_err(|e| UsageError(format!("cannot set up the PCS supply: {e}")))
}

fn parse_fmspc(text: &str) -> Result<[u8; 6], UsageError> {
    let t = text.trim().trim_start_matches("0x");
    hex::decode(t)
        .ok()
        .and_then(|b| <[u8; 6]>::try_from(b).ok())
        .ok_or_else(|| UsageError(format!("--fmspc {text}: expected 6 bytes as 12 hex digits")))
}

/// Collects per-platform outcomes and prints progress.
struct Progress {
    json: bool,
    items: Vec<Value>,
    failed: usize,
}

impl Progress {
    fn record(&mut self, fmspc: [u8; 6], ca: PckCa, result: Result<&PcsCollateral, &dyn std::fmt::Display>) {
        let n = self.items.len() + 1;
        let what = format!("TDX collateral fmspc={} ca={ca}", hex::encode(fmspc));
        match result {
            Ok(c) => {
                let (from, to) = (c.info.valid_from.to_string(), c.info.expires.to_string());
                if c.fresh {
                    eprintln!("[{n}] {what}: ok ({}, valid {from} .. {to})", c.source.name());
                } else {
                    self.failed += 1;
                    eprintln!("[{n}] {what}: NOT FRESH ({}, valid {from} .. {to})", c.source.name());
                }
                self.items.push(json!({
                    "object": what, "ok": c.fresh, "source": c.source.name(), "fresh": c.fresh,
                    "valid_from": from, "expires": to,
                    "tcb_evaluation_data_number": c.info.tcb_evaluation_data_number,
                }));
            }
            Err(e) => {
                self.failed += 1;
                eprintln!("[{n}] {what}: FAILED: {e}");
                self.items.push(json!({"object": what, "ok": false, "error": e.to_string()}));
            }
        }
    }

    fn finish(self, store: Option<&std::path::Path>) -> Status {
        let ok = self.failed == 0;
        if self.json {
            let store = store.map(|s| s.display().to_string());
            let v = json!({"ok": ok, "failed": self.failed, "store": store, "items": self.items});
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        } else if ok {
            eprintln!("done: {} collateral sets", self.items.len());
        } else {
            eprintln!("done: {} of {} collateral sets FAILED", self.failed, self.items.len());
        }
        if ok { Status::Accepted } else { Status::Rejected }
    }
}

fn platform_of_quote(path: &std::path::Path) -> Result<([u8; 6], PckCa), UsageError> {
    let quote = super::tdx::read_quote(path)?;
    quote_platform(&quote).map_err(|e| UsageError(format!("{}: {e}", path.display())))
}

async fn fetch(a: &FetchArgs) -> Result<Status, UsageError> {
    let (fmspc, ca) = match (&a.quote, &a.fmspc) {
        (Some(q), _) => platform_of_quote(q)?,
        (None, Some(f)) => (parse_fmspc(f)?, a.ca.into()),
        (None, None) => return Err(UsageError::new("give --quote or --fmspc")),
    };
    let pcs = supply(&a.common)?;
    let mut p = Progress { json: a.common.json, items: Vec::new(), failed: 0 };
    match pcs.collateral(fmspc, ca).await {
        Ok(c) => {
            p.record(fmspc, ca, Ok(&c));
            if let Some(out) = &a.bundle {
                attest_util::fs::write_atomic(
                    out,
                    c.collateral.to_bundle_json().as_bytes(),
                    attest_util::fs::PUBLIC_FILE_MODE,
                )
                .map_err(|e| UsageError(format!("--bundle {}: {e}", out.display())))?;
                eprintln!("bundle written to {}", out.display());
            }
        }
        Err(e) => p.record(fmspc, ca, Err(&e)),
    }
    Ok(p.finish(pcs.store().map(attest_kds::Store::root)))
}

async fn prefill(a: &PrefillArgs) -> Result<Status, UsageError> {
    let mut platforms = Vec::new();
    for f in &a.fmspc {
        platforms.push((parse_fmspc(f)?, PckCa::from(a.ca)));
    }
    for q in &a.from_quote {
        platforms.push(platform_of_quote(q)?);
    }
    platforms.sort_by_key(|(f, c)| (*f, c.name()));
    platforms.dedup();
    let pcs = supply(&a.common)?;
    let mut p = Progress { json: a.common.json, items: Vec::new(), failed: 0 };
    for (fmspc, ca) in platforms {
        match pcs.collateral(fmspc, ca).await {
            Ok(c) => p.record(fmspc, ca, Ok(&c)),
            Err(e) => p.record(fmspc, ca, Err(&e)),
        }
    }
    Ok(p.finish(pcs.store().map(attest_kds::Store::root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmspc_forms() {
        assert_eq!(parse_fmspc("50806f000000").unwrap(), [0x50, 0x80, 0x6f, 0, 0, 0]);
        assert_eq!(parse_fmspc("0x50806F000000").unwrap(), [0x50, 0x80, 0x6f, 0, 0, 0]);
        assert!(parse_fmspc("50806f").is_err());
        assert!(parse_fmspc("50806f00000g").is_err());
    }
}
