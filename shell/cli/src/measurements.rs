//! `attest measurements show|diff|verify|compute|merge`: Constellation-compatible expected-measurement files.
//!
//! Exit statuses: `show` 0; `diff` 0 when the maps are equal, 1 when they differ; `verify` 0 when the
//! signature (and, with `--against`, every enforced PCR) checks out, 1 otherwise; `compute` and `merge` 0
//! ([`compute`]); 2 for unusable input.

pub mod compute;

use super::input::read_file;
use super::{Status, UsageError};
use attest_measurements::{AttestationVariant, Csp, Document, Measurements, PcrIndex, SignedMeasurements};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `attest measurements …`
#[derive(Debug, Subcommand)]
pub enum MeasurementsCommand {
    /// Print the expected values of a file (map, legacy or release-list form; JSON or YAML).
    Show(ShowArgs),
    /// Compare two files PCR by PCR.
    Diff(DiffArgs),
    /// Verify a file's detached ECDSA P-256 signature, and optionally actual PCR values against it.
    Verify(VerifyArgs),
    /// Compute a node's measurements from its image (UKI, OVMF, TDVF) before it boots.
    Compute(Box<compute::ComputeArgs>),
    /// Combine measurements files into one with several accepted sets (a rolling upgrade); drop old ones.
    Merge(compute::MergeArgs),
}

/// Which map of a release list to use.
#[derive(Debug, Args, Clone)]
pub struct Select {
    /// Cloud provider of the release-list entry (AWS, Azure, GCP, OpenStack, QEMU).
    #[arg(long)]
    pub csp: Option<String>,
    /// Attestation variant of the release-list entry (e.g. aws-sev-snp, qemu-vtpm).
    #[arg(long)]
    pub variant: Option<String>,
}

/// `show` arguments.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The measurements file.
    pub file: PathBuf,
    /// Which release-list entry to use.
    #[command(flatten)]
    pub select: Select,
    /// Print JSON (the canonical map form).
    #[arg(long)]
    pub json: bool,
}

/// `diff` arguments.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first file.
    pub a: PathBuf,
    /// The second file.
    pub b: PathBuf,
    /// Which release-list entry to use.
    #[command(flatten)]
    pub select: Select,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `verify` arguments.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The measurements file.
    pub file: PathBuf,
    /// The detached signature (DER or base64 of DER).
    #[arg(long)]
    pub signature: PathBuf,
    /// The signer's public key (PEM, P-256).
    #[arg(long)]
    pub public_key: PathBuf,
    /// Actual PCR values to compare: a JSON object `{"<pcr>": "<hex>", …}`.
    #[arg(long)]
    pub against: Option<PathBuf>,
    /// Which release-list entry to use.
    #[command(flatten)]
    pub select: Select,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `measurements` command.
pub fn run(cmd: MeasurementsCommand) -> Result<Status, UsageError> {
    match cmd {
        MeasurementsCommand::Show(a) => show(&a),
        MeasurementsCommand::Diff(a) => diff(&a),
        MeasurementsCommand::Verify(a) => verify(&a),
        MeasurementsCommand::Compute(a) => compute::compute(&a),
        MeasurementsCommand::Merge(a) => compute::merge(&a),
    }
}

fn pick(doc: Document, sel: &Select, what: &Path) -> Result<Measurements, UsageError> {
    let bad = |e: attest_measurements::Error| UsageError::new(format!("{}: {e}", what.display()));
    match (&sel.csp, &sel.variant) {
        (None, None) => doc.into_single().map_err(bad),
        (Some(c), Some(v)) => {
            let csp = Csp::from_name(c).map_err(bad)?;
            let variant = AttestationVariant::from_name(v).map_err(bad)?;
            doc.select(csp, variant).cloned().map_err(bad)
        }
        _ => Err(UsageError::new("--csp and --variant go together")),
    }
}

fn load(path: &Path, sel: &Select) -> Result<Measurements, UsageError> {
    let bytes = read_file(path, "measurements file")?;
    let doc =
        attest_measurements::parse_document(&bytes).map_err(|e| UsageError::new(format!("{}: {e}", path.display())))?;
    pick(doc, sel, path)
}

fn map_json(m: &Measurements) -> Value {
    serde_json::from_str(&m.to_json()).unwrap_or(Value::Null)
}

fn show(a: &ShowArgs) -> Result<Status, UsageError> {
    let m = load(&a.file, &a.select)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&map_json(&m)).unwrap_or_default());
    } else {
        println!("{:<4} {:<9} expected", "PCR", "mode");
        for (i, e) in m.iter() {
            println!(
                "{:<4} {:<9} {}",
                i.get(),
                if e.is_warn_only() { "warn-only" } else { "enforced" },
                hex::encode(e.expected())
            );
        }
    }
    Ok(Status::Accepted)
}

fn diff(a: &DiffArgs) -> Result<Status, UsageError> {
    let ma = load(&a.a, &a.select)?;
    let mb = load(&a.b, &a.select)?;
    let mut rows = Vec::new();
    for i in PcrIndex::all() {
        let (x, y) = (ma.get(i), mb.get(i));
        let status = match (x, y) {
            (None, None) => continue,
            (Some(_), None) => "only-in-a",
            (None, Some(_)) => "only-in-b",
            (Some(x), Some(y)) if x == y => "same",
            (Some(x), Some(y)) if x.expected() == y.expected() => "mode-differs",
            _ => "value-differs",
        };
        rows.push((i, status, x, y));
    }
    let differs = rows.iter().any(|r| r.1 != "same");
    if a.json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(i, s, x, y)| {
                let side = |m: Option<&attest_measurements::Measurement>| {
                    m.map_or(
                        Value::Null,
                        |m| json!({"expected": hex::encode(m.expected()), "warnOnly": m.is_warn_only()}),
                    )
                };
                json!({"pcr": i.get(), "status": s, "a": side(*x), "b": side(*y)})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({"identical": !differs, "pcrs": list})).unwrap_or_default());
    } else {
        for (i, s, x, y) in &rows {
            let h = |m: Option<&attest_measurements::Measurement>| {
                m.map_or_else(
                    || "-".to_owned(),
                    |m| format!("{}{}", hex::encode(m.expected()), if m.is_warn_only() { " (warn)" } else { "" }),
                )
            };
            println!("PCR {:>2}  {:<13}  a={}  b={}", i.get(), s, h(*x), h(*y));
        }
        println!("{}", if differs { "DIFFERENT" } else { "IDENTICAL" });
    }
    Ok(if differs { Status::Rejected } else { Status::Accepted })
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    let file = read_file(&a.file, "measurements file")?;
    let sig = read_file(&a.signature, "--signature")?;
    let key = read_file(&a.public_key, "--public-key")?;
    let signed = match SignedMeasurements::verify_then_parse(&file, &sig, &key) {
        Ok(s) => s,
        Err(e @ attest_measurements::Error::BadSignature) => {
            let what = format!(
                "--signature {} does not sign {} under --public-key {}",
                a.signature.display(),
                a.file.display(),
                a.public_key.display()
            );
            if a.json {
                println!("{}", json!({"accepted": false, "error": format!("{what}: {e}"), "check": "signature"}));
            } else {
                eprintln!("REJECTED: {what}: {e}\n  failed check: signature");
            }
            return Ok(Status::Rejected);
        }
        // Each input that is not what it must be is named by its flag: a usage error (exit 2).
        Err(e @ (attest_measurements::Error::InvalidPublicKey { .. } | attest_measurements::Error::KeyNotP256)) => {
            return Err(UsageError::new(format!("--public-key {}: {e}", a.public_key.display())));
        }
        Err(e @ attest_measurements::Error::SignatureEncoding) => {
            return Err(UsageError::new(format!("--signature {}: {e}", a.signature.display())));
        }
        Err(e) => return Err(UsageError::new(format!("{}: {e}", a.file.display()))),
    };
    // A release list with several entries (variants, or the accepted sets of a rolling upgrade): the
    // signature alone is checked unless an entry is selected to compare against.
    if let (Document::List(list), None, None, None) = (signed.document(), &a.against, &a.select.csp, &a.select.variant)
        && list.entries().len() > 1
    {
        if a.json {
            println!("{}", json!({"accepted": true, "signature": "valid", "entries": list.entries().len()}));
        } else {
            println!("signature valid; {} list entries", list.entries().len());
        }
        return Ok(Status::Accepted);
    }
    let m = pick(signed.into_document(), &a.select, &a.file)?;
    let Some(against) = &a.against else {
        if a.json {
            println!("{}", json!({"accepted": true, "signature": "valid", "measurements": map_json(&m)}));
        } else {
            println!("signature valid; {} expected PCR value(s)", m.len());
        }
        return Ok(Status::Accepted);
    };
    let actual_text = read_file(against, "PCR values")?;
    let actual: Map<String, Value> =
        serde_json::from_slice(&actual_text).map_err(|e| UsageError::new(format!("{}: {e}", against.display())))?;
    let mut values = BTreeMap::new();
    for (k, v) in actual {
        let idx: u32 = k.parse().map_err(|_| UsageError::new(format!("{}: bad PCR index {k:?}", against.display())))?;
        let hexv =
            v.as_str().ok_or_else(|| UsageError::new(format!("{}: PCR {k} is not a hex string", against.display())))?;
        values.insert(
            idx,
            hex::decode(hexv).map_err(|e| UsageError::new(format!("{}: PCR {k}: {e}", against.display())))?,
        );
    }
    let report = m.compare(&values);
    if a.json {
        let checks: Vec<Value> = report
            .checks()
            .iter()
            .map(|c| json!({"pcr": c.index.get(), "status": format!("{:?}", c.status), "warnOnly": c.warn_only}))
            .collect();
        println!("{}", json!({"accepted": report.is_accepted(), "signature": "valid", "pcrs": checks}));
    } else {
        print!("{report}");
    }
    Ok(if report.is_accepted() { Status::Accepted } else { Status::Rejected })
}
