//! `attest kds …`: fill the certificate store for offline verification ([`attest_kds`]).
//!
//! ```text
//! attest kds fetch --report REPORT [--certs TABLE|THIM.json] [--product P] [--store DIR] [--base-url URL]
//!                  [--offline] [--skip-crl] [--json]
//! attest kds prefill --store DIR (--product P --chip-id HEX --tcb TCB... | --from-report FILE...)
//!                  [--base-url URL] [--skip-crl] [--json]
//! ```
//!
//! `fetch` gets what one report needs: its VCEK (or, for a VLEK-signed report, vets the carried VLEK), the
//! product's `cert_chain`, and the CRL. `prefill` does the same for many chips/TCBs or reports. Progress goes
//! to stderr, one line per object with its source (`evidence`, `store`, `kds`); `--json` prints one summary
//! object on stdout. Exit status: 0 when everything was obtained, 1 when something could not be (the
//! reasons are printed), 2 on usage errors.
//!
//! The store defaults to `$ATTEST_KDS_STORE`, else `$XDG_CACHE_HOME/attest/kds`, else
//! `~/.cache/attest/kds`. A TCB is given as the raw TCB_VERSION in hex (`0x7308000000000003`, the form
//! `attest snp show` prints) or as components (`bl=3,tee=0,snp=8,ucode=115`, plus `fmc=` on Turin).

use super::input::{self, ProductArg};
use super::{Status, UsageError};
use attest_engine::azure::parse_thim;
use attest_engine::snp::{CarriedCerts, CertTable, Product, Report, SigningKey, TcbVersion};
use attest_kds::{ChainKind, CrlStatus, DEFAULT_BASE_URL, HwId, Kds, KdsConfig, Source, VcekKey};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `attest kds` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum KdsCommand {
    /// Fetch the certificates and CRL one report needs into the store.
    Fetch(FetchArgs),
    /// Fill the store for offline use, for chips/TCBs given on the command line or taken from reports.
    Prefill(PrefillArgs),
}

/// Arguments of `attest kds fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The report (same formats as `attest snp verify`).
    #[arg(long, value_name = "REPORT")]
    pub report: PathBuf,
    /// Certificates that came with the evidence: an extended report's certificate table (binary) or an
    /// Azure THIM document (JSON with vcekCert and certificateChain).
    #[arg(long, value_name = "FILE")]
    pub certs: Option<PathBuf>,
    /// The product (needed for version 2 reports, which carry no CPUID).
    #[arg(long, value_enum)]
    pub product: Option<ProductArg>,
    /// Store, KDS and output options.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `attest kds prefill`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["chip_id", "from_report"])))]
pub struct PrefillArgs {
    /// The product of `--chip-id`.
    #[arg(long, value_enum, requires = "chip_id")]
    pub product: Option<ProductArg>,
    /// The chip: its CHIP_ID / hwID in hex (64 bytes; 8 bytes or the zero-padded 64 on Turin).
    #[arg(long, value_name = "HEX", requires_all = ["product", "tcb"], conflicts_with = "from_report")]
    pub chip_id: Option<String>,
    /// TCBs to fetch VCEKs for (repeatable).
    #[arg(long, value_name = "TCB", requires = "chip_id")]
    pub tcb: Vec<String>,
    /// Reports whose VCEKs (and chains, CRLs) to fetch.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub from_report: Vec<PathBuf>,
    /// Store, KDS and output options.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Options shared by `fetch` and `prefill`.
#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// The KDS base URL.
    #[arg(long, value_name = "URL", default_value = DEFAULT_BASE_URL)]
    pub base_url: String,
    /// Use only the store and the evidence; never contact KDS.
    #[arg(long)]
    pub offline: bool,
    /// Do not fetch CRLs.
    #[arg(long)]
    pub skip_crl: bool,
    /// Print one JSON summary on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs an `attest kds` subcommand.
pub fn run(cmd: KdsCommand) -> Result<Status, UsageError> {
    let rt = super::runtime()?;
    match cmd {
        KdsCommand::Fetch(a) => rt.block_on(fetch(&a)),
        KdsCommand::Prefill(a) => rt.block_on(prefill(&a)),
    }
}

/// The default store directory.
pub fn default_store() -> Option<PathBuf> {
    super::default_cache_store("ATTEST_KDS_STORE", "kds")
}

fn supply(c: &CommonArgs) -> Result<Kds, UsageError> {
    let store = c.store.clone().or_else(default_store).ok_or_else(|| UsageError::new("no --store and no HOME"))?;
    let config =
        KdsConfig { store: Some(store), base_url: (!c.offline).then(|| c.base_url.clone()), ..KdsConfig::default() };
    Kds::new(config).map_err(|e| UsageError(format!("cannot set up the certificate supply: {e}")))
}

/// Collects per-object outcomes and prints progress.
struct Progress {
    json: bool,
    items: Vec<Value>,
    failed: usize,
}

impl Progress {
    fn new(json: bool) -> Self {
        Self { json, items: Vec::new(), failed: 0 }
    }

    fn ok(&mut self, what: &str, source: Source) {
        let n = self.items.len() + 1;
        eprintln!("[{n}] {what}: ok ({})", source.name());
        self.items.push(json!({"object": what, "ok": true, "source": source.name()}));
    }

    fn fail(&mut self, what: &str, error: &dyn std::fmt::Display) {
        let n = self.items.len() + 1;
        eprintln!("[{n}] {what}: FAILED: {error}");
        self.failed += 1;
        self.items.push(json!({"object": what, "ok": false, "error": error.to_string()}));
    }

    fn crl(&mut self, product: Product, kind: ChainKind, status: &CrlStatus) {
        let what = format!("{} CRL {product}", kind.segment());
        match status {
            CrlStatus::Fresh { next_update, .. } => {
                let n = self.items.len() + 1;
                eprintln!("[{n}] {what}: ok (fresh until {next_update})");
                self.items.push(json!({"object": what, "ok": true, "next_update": next_update.to_string()}));
            }
            CrlStatus::Stale { next_update, .. } => {
                let when = next_update.map_or("none".to_owned(), |n| n.to_string());
                self.fail(&what, &format!("only a stale CRL is available (nextUpdate {when})"));
            }
            CrlStatus::Unavailable { reason } => self.fail(&what, reason),
        }
    }

    fn finish(self, store: Option<&std::path::Path>) -> Status {
        let ok = self.failed == 0;
        if self.json {
            let store = store.map(|s| s.display().to_string());
            let v = json!({"ok": ok, "failed": self.failed, "store": store, "items": self.items});
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        } else if ok {
            eprintln!("done: {} objects", self.items.len());
        } else {
            eprintln!("done: {} of {} objects FAILED", self.failed, self.items.len());
        }
        if ok { Status::Accepted } else { Status::Rejected }
    }
}

fn read_carried(path: &std::path::Path) -> Result<CarriedCerts<'static>, UsageError> {
    let bytes = input::read_file(path, "--certs")?;
    let err = |e: attest_engine::Error| UsageError(format!("--certs {}: {e}", path.display()));
    if bytes.first() == Some(&b'{') {
        parse_thim(&bytes).map_err(err)
    } else {
        let table = CertTable::parse(&bytes).map_err(err)?.carried();
        Ok(CarriedCerts {
            vcek: table.vcek.map(|c| c.into_owned().into()),
            vlek: table.vlek.map(|c| c.into_owned().into()),
            intermediate: table.intermediate.map(|c| c.into_owned().into()),
            ark: table.ark.map(|c| c.into_owned().into()),
        })
    }
}

async fn fetch(a: &FetchArgs) -> Result<Status, UsageError> {
    let report = input::read_report(&a.report)?;
    let carried = a.certs.as_deref().map(read_carried).transpose()?.unwrap_or_default();
    let kds = supply(&a.common)?;
    let mut p = Progress::new(a.common.json);
    let product = a.product.map(Product::from);
    fetch_for_report(&kds, report.report(), &carried, product, a.common.skip_crl, &mut p).await;
    Ok(p.finish(kds.store().map(attest_kds::Store::root)))
}

async fn fetch_for_report(
    kds: &Kds,
    report: &[u8],
    carried: &CarriedCerts<'_>,
    product: Option<Product>,
    skip_crl: bool,
    p: &mut Progress,
) -> Option<(Product, ChainKind)> {
    let parsed = match Report::parse(report) {
        Ok(r) => r,
        Err(e) => {
            p.fail("report", &e);
            return None;
        }
    };
    let kind = match parsed.signing_key() {
        SigningKey::Vcek => ChainKind::Vcek,
        SigningKey::Vlek => ChainKind::Vlek,
    };
    let product = match kds.snp_certificates(report, carried, product).await {
        Ok(c) => {
            let what = match c.vcek_key {
                Some(k) => k.to_string(),
                None => format!("VLEK {}", c.product),
            };
            p.ok(&what, c.leaf_source);
            c.product
        }
        Err(e) => {
            p.fail(if kind == ChainKind::Vcek { "VCEK" } else { "VLEK" }, &e);
            kds.product_of(&parsed, product, None).ok()?
        }
    };
    fetch_product(kds, product, kind, skip_crl, p).await;
    Some((product, kind))
}

async fn fetch_product(kds: &Kds, product: Product, kind: ChainKind, skip_crl: bool, p: &mut Progress) {
    let what = format!("{} cert_chain {product}", kind.segment());
    match kds.cert_chain(product, kind).await {
        Ok((_, source)) => p.ok(&what, source),
        Err(e) => p.fail(&what, &e),
    }
    if !skip_crl {
        // The CRL of this key kind: /vcek/v1/{product}/crl for VCEK chains, /vlek/v1/{product}/crl for VLEK ones.
        let status = kds.crl_of(product, kind, std::time::Duration::ZERO).await;
        p.crl(product, kind, &status);
    }
}

async fn prefill(a: &PrefillArgs) -> Result<Status, UsageError> {
    let kds = supply(&a.common)?;
    let mut p = Progress::new(a.common.json);
    let mut done: BTreeSet<(&'static str, &'static str)> = BTreeSet::new();
    if let (Some(chip), Some(product)) = (&a.chip_id, a.product) {
        let product = Product::from(product);
        let hw = parse_chip_id(product, chip)?;
        let keys = a
            .tcb
            .iter()
            .map(|t| {
                VcekKey::new(product, hw, parse_tcb(product, t)?).map_err(|e| UsageError(format!("--tcb {t}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for key in keys {
            match kds.vcek(&key).await {
                Ok(s) => p.ok(&key.to_string(), s.source),
                Err(e) => p.fail(&key.to_string(), &e),
            }
        }
        fetch_product(&kds, product, ChainKind::Vcek, a.common.skip_crl, &mut p).await;
    }
    for path in &a.from_report {
        let report = input::read_report(path)?;
        eprintln!("report {}:", path.display());
        let parsed = Report::parse(report.report()).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        let kind = match parsed.signing_key() {
            SigningKey::Vcek => ChainKind::Vcek,
            SigningKey::Vlek => ChainKind::Vlek,
        };
        let product = match kds.product_of(&parsed, None, None) {
            Ok(pr) => pr,
            Err(e) => {
                p.fail(&format!("report {}", path.display()), &e);
                continue;
            }
        };
        // Chains and CRLs once per product and kind.
        let first = done.insert((product.name(), kind.segment()));
        if kind == ChainKind::Vcek {
            match VcekKey::from_report(&parsed, product) {
                Ok(key) => match kds.vcek(&key).await {
                    Ok(s) => p.ok(&key.to_string(), s.source),
                    Err(e) => p.fail(&key.to_string(), &e),
                },
                Err(e) => p.fail("VCEK", &e),
            }
        }
        if first {
            fetch_product(&kds, product, kind, a.common.skip_crl, &mut p).await;
        }
    }
    Ok(p.finish(kds.store().map(attest_kds::Store::root)))
}

fn parse_chip_id(product: Product, text: &str) -> Result<HwId, UsageError> {
    let t = text.trim().trim_start_matches("0x");
    let bytes = hex::decode(t).map_err(|_| UsageError(format!("--chip-id: not hex: {text}")))?;
    let hw = match (product, bytes.len()) {
        (Product::Turin, 64) => {
            let chip: [u8; 64] = bytes.as_slice().try_into().unwrap_or([0; 64]);
            HwId::from_chip_id(product, &chip)
        }
        _ => HwId::new(product, &bytes),
    };
    hw.map_err(|e| UsageError(format!("--chip-id: {e}")))
}

/// Parses `0x…` hex (raw TCB_VERSION) or `bl=…,tee=…,snp=…,ucode=…[,fmc=…]`.
pub fn parse_tcb(product: Product, text: &str) -> Result<TcbVersion, UsageError> {
    let bad = |why: &str| UsageError(format!("--tcb {text}: {why}"));
    if text.contains('=') {
        let mut t = TcbVersion::default();
        let mut seen = BTreeSet::new();
        for part in text.split(',') {
            let (k, v) = part.split_once('=').ok_or_else(|| bad("expected name=value pairs"))?;
            let v: u8 = v.trim().parse().map_err(|_| bad("an SPL is a number 0..=255"))?;
            let k = k.trim();
            if !seen.insert(k.to_owned()) {
                return Err(bad("a component is given twice"));
            }
            match k {
                "bl" | "bootloader" => t.bootloader = v,
                "tee" => t.tee = v,
                "snp" => t.snp = v,
                "ucode" | "microcode" => t.microcode = v,
                "fmc" => t.fmc = Some(v),
                _ => return Err(bad("unknown component (bl, tee, snp, ucode, fmc)")),
            }
        }
        for need in ["snp", "tee"] {
            if !seen.contains(need) {
                return Err(bad("every component must be given"));
            }
        }
        if !(seen.contains("bl") || seen.contains("bootloader"))
            || !(seen.contains("ucode") || seen.contains("microcode"))
        {
            return Err(bad("every component must be given"));
        }
        if t.fmc.is_some() != (product == Product::Turin) {
            return Err(bad("fmc is given exactly for Turin"));
        }
        return Ok(t);
    }
    let hex = text.trim().trim_start_matches("0x");
    let raw = u64::from_str_radix(hex, 16).map_err(|_| bad("neither 0x-hex nor name=value pairs"))?;
    TcbVersion::decode(raw, product).map_err(|e| bad(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcb_forms() {
        let t = parse_tcb(Product::Milan, "0x7308000000000003").unwrap();
        assert_eq!((t.bootloader, t.tee, t.snp, t.microcode, t.fmc), (3, 0, 8, 115, None));
        assert_eq!(parse_tcb(Product::Milan, "bl=3,tee=0,snp=8,ucode=115").unwrap(), t);
        assert!(parse_tcb(Product::Milan, "bl=3,tee=0,snp=8").is_err());
        assert!(parse_tcb(Product::Milan, "bl=3,tee=0,snp=8,ucode=115,fmc=1").is_err());
        assert!(parse_tcb(Product::Turin, "fmc=1,bl=0,tee=0,snp=0,ucode=9").unwrap().fmc == Some(1));
        assert!(parse_tcb(Product::Milan, "0x7308000000ff0003").is_err(), "reserved byte set");
        assert!(parse_tcb(Product::Milan, "bl=3,bl=4,tee=0,snp=8,ucode=1").is_err());
    }
}
