//! `attest snp …`: verify SEV-SNP reports (`verify`), VCEK/VLEK chains without a report (`chain`), and
//! print a report's fields without verifying anything (`show`).
//!
//! `verify` reports through [`super::evidence`]: text, one result object (`--json`, schema
//! `attest-result/1`), or an EAR token (`--format ear`), rejections included; its `input.micros` times
//! only the engine call (parsing, chain, signature and policy), not file I/O. `chain` and `show` print
//! their own JSON (`chain`: `{"accepted": …}`; `show`: the unverified fields).

use super::evidence::{FORMAT_ERROR, Rejection, Subject, print_value};
use super::input::{self, ProductArg, ReportInput};
use super::{Status, UsageError};
use attest_engine::Error;
use attest_engine::ear::{Appraisal, CheckOutcome};
use attest_engine::formats::snp::SnpEvidence;
use attest_engine::snp::{
    ChainRequest, Check, Product, Report, SnpPolicy, SnpRequest, SnpVerifier, TcbVersion, Verdict,
};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `attest snp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SnpCommand {
    /// Verify a report: VCEK/VLEK chain to AMD's pinned root, report signature, and policy.
    Verify(VerifyArgs),
    /// Verify a VCEK or VLEK up to AMD's pinned root, without a report.
    Chain(ChainArgs),
    /// Print every field of a report WITHOUT verifying it.
    Show(ShowArgs),
}

/// The certificate inputs and trusted time of `attest snp verify` and `attest snp chain`.
#[derive(Debug, clap::Args)]
pub struct CertArgs {
    /// The VCEK or VLEK, PEM or DER. A PEM with several certificates: the first is the leaf, the rest the
    /// chain (ASK/ASVK, then optionally ARK).
    #[arg(long, value_name = "CERT")]
    pub vcek: PathBuf,
    /// The ASK/ASVK (and optionally the ARK), PEM or DER. Default: AMD's pinned certificates.
    #[arg(long, value_name = "CHAIN")]
    pub chain: Option<PathBuf>,
    /// An ARK-signed CRL (DER or PEM) to check revocation against.
    #[arg(long, value_name = "CRL")]
    pub crl: Option<PathBuf>,
    /// The product, when known; it must agree with the certificate (and with a report's CPUID).
    #[arg(long, value_enum)]
    pub product: Option<ProductArg>,
    /// Trusted time: RFC 3339 (2025-06-01T00:00:00Z), a date (2025-06-01) or Unix seconds.
    /// Default: the system clock now.
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

/// Arguments of `attest snp verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The report: raw binary (0x4A0 bytes), raw + 20-byte IGVM request-data header, an Azure HCL report
    /// ("HCLA"), or hex / base64 text of any of these.
    pub report: PathBuf,
    /// The certificates and the trusted time.
    #[command(flatten)]
    pub certs: CertArgs,
    /// The expected REPORT_DATA: exactly 64 bytes as 128 hex digits (e.g. a hash of your nonce).
    #[arg(long, value_name = "HEX")]
    pub report_data: Option<String>,
    /// Policy file, TOML or JSON (commented example: examples/policies/snp.toml). Default: the engine's
    /// strict default policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The output format: text, one JSON result object, or an EAR token.
    #[command(flatten)]
    pub output: super::evidence::FormatArgs,
    /// Also print the detected input format and the inputs used.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `attest snp chain`.
#[derive(Debug, clap::Args)]
pub struct ChainArgs {
    /// The certificates and the trusted time.
    #[command(flatten)]
    pub certs: CertArgs,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `attest snp show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The report (same formats as `attest snp verify`).
    pub report: PathBuf,
    /// The product, to decode TCB values of version 2 reports (which carry no CPUID).
    #[arg(long, value_enum)]
    pub product: Option<ProductArg>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs an `attest snp` subcommand.
pub fn run(cmd: SnpCommand) -> Result<Status, UsageError> {
    match cmd {
        SnpCommand::Verify(a) => verify(&a),
        SnpCommand::Chain(a) => chain(&a),
        SnpCommand::Show(a) => show(&a),
    }
}

pub(crate) fn micros(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Writes to stdout, ignoring errors (a closed pipe, as with `| head`, must not panic).
pub(crate) fn out(s: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(s.as_bytes()).and_then(|()| stdout.flush());
}

pub(crate) fn print_json(v: &Value) {
    out(&format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())));
}

fn tcb_json(t: TcbVersion) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

fn load_policy(path: Option<&Path>) -> Result<SnpPolicy, UsageError> {
    let Some(path) = path else { return Ok(SnpPolicy::default()) };
    let bytes = input::read_file(path, "--policy")?;
    let text =
        String::from_utf8(bytes).map_err(|_| UsageError(format!("--policy {}: not UTF-8 text", path.display())))?;
    SnpPolicy::from_text(&text).map_err(|e| UsageError(format!("--policy {}: {e}", path.display())))
}

/// Installs the CRL; an unusable CRL is a configuration (usage) error.
fn install_crl(verifier: &SnpVerifier, path: Option<&Path>) -> Result<Option<Product>, UsageError> {
    let Some(path) = path else { return Ok(None) };
    let der = input::read_crl(path)?;
    verifier.set_crl(&der).map(Some).map_err(|e| UsageError(format!("--crl {}: cannot install: {e}", path.display())))
}

/// Reports a rejection of `attest snp chain`, `info` included in JSON mode (on stdout: `accepted: false` and
/// the result schema's `failure` object; in text mode the reason goes to stderr).
fn reject(err: &Error, info: Map<String, Value>, json: bool) -> Status {
    let failure = attest_engine::ear::Failure::of(err, Check::CertificateChain.name());
    if json {
        let mut m = Map::new();
        m.insert("accepted".into(), Value::Bool(false));
        m.insert(
            "failure".into(),
            json!({"check": failure.check, "class": failure.class.name(), "reason": failure.reason,
                   "policy_key": failure.policy_key}),
        );
        m.extend(info);
        print_json(&Value::Object(m));
    } else {
        eprintln!("REJECTED: --vcek: {err}");
        eprintln!("  failed check: {}", failure.check);
    }
    super::exit::status_of(err)
}

/// Leaf, intermediate (ASK/ASVK) and root (ARK) DER; `None` where AMD's pinned certificate is to be used.
type LeafAndChain = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// Reads `--vcek` and `--chain` (a usage error if either is unreadable) and splits them with
/// [`input::split_chain`].
fn read_chain(vcek: &Path, chain: Option<&Path>) -> Result<LeafAndChain, UsageError> {
    let vcek = input::read_certificates(vcek, "--vcek")?;
    let chain = chain.map(|p| input::read_certificates(p, "--chain")).transpose()?;
    input::split_chain(vcek, chain)
}

fn verify(a: &VerifyArgs) -> Result<Status, UsageError> {
    // Everything that can be a usage error is resolved before the engine runs. Bytes that are none of the
    // report forms go to the engine as they are (as the C library gets them): its verdict, malformed with the
    // failed check, is the result in every output format, and the CLI's reason stays in `input`.
    let raw = input::read_file(&a.report, "REPORT")?;
    let report = input::detect_report(raw.clone()).map_err(|e| (raw, e));
    let (leaf, intermediate, root) = read_chain(&a.certs.vcek, a.certs.chain.as_deref())?;
    let policy = load_policy(a.policy.as_deref())?;
    let report_data = a.report_data.as_deref().map(input::parse_report_data).transpose()?;
    let time = input::trusted_time(a.certs.at.as_deref())?;
    let output = a.output.resolve(time)?;
    let verifier = SnpVerifier::new();
    let crl_product = install_crl(&verifier, a.certs.crl.as_deref())?;

    let req = SnpRequest {
        report: &[],
        leaf: &leaf,
        intermediate: intermediate.as_deref(),
        root: root.as_deref(),
        product: a.certs.product.map(Product::from),
        report_data: report_data.as_ref().map(<[u8; 64]>::as_slice),
        time,
    };
    let mut subject = Subject::new("snp", "sev-snp", "SEV-SNP report", format!("REPORT {}", a.report.display()));
    subject.structure_check = Check::ReportStructure.name();
    subject.policy_example = Some("examples/policies/snp.toml");
    let bytes = match &report {
        Ok(r) => {
            subject.facts.insert("format".into(), r.container.id().into());
            subject.facts.insert("encoding".into(), r.encoding.id().into());
            r.data()
        }
        Err((raw, e)) => {
            subject.facts.insert(FORMAT_ERROR.into(), e.to_string().into());
            raw.as_slice()
        }
    };
    let start = Instant::now();
    let mut verdict = Verdict::default();
    let result = match SnpEvidence::parse(bytes) {
        Ok(ev) => ev.verify(&verifier, &req, &policy, &mut verdict).map(|ok| {
            let mut a = Appraisal::from_snp(&ok);
            if ev.hcl().is_some() {
                a.checks.push(("hcl_runtime_data_binding", CheckOutcome::Passed));
            }
            a
        }),
        Err(e) => Err(e),
    };
    let us = micros(start);
    subject.facts.insert("micros".into(), us.into());
    if a.verbose && !a.output.is_json() {
        let described = report.as_ref().map_or_else(|(_, e)| format!("not recognized: {e}"), ReportInput::describe);
        eprintln!("input: {} ({described})", a.report.display());
        eprintln!(
            "certificates: leaf from {}, intermediate {}, root {}",
            a.certs.vcek.display(),
            if intermediate.is_some() { "supplied" } else { "pinned" },
            if root.is_some() { "supplied" } else { "pinned" }
        );
        eprintln!(
            "policy: {}",
            a.policy.as_deref().map_or("engine default (strict)".into(), |p| p.display().to_string())
        );
        if let Some(p) = crl_product {
            eprintln!("CRL: installed for {p}");
        }
        eprintln!("trusted time: {time}{}", if a.certs.at.is_none() { " (system clock)" } else { "" });
        eprintln!("engine time: {us} µs");
    }
    let result = result.map_err(|error| {
        let checks = verdict.iter().map(|(c, o)| (c.name(), CheckOutcome::from(o))).collect();
        Rejection { error, checks }
    });
    output.report(&subject, result, None)
}

fn chain(a: &ChainArgs) -> Result<Status, UsageError> {
    let (leaf, intermediate, root) = read_chain(&a.certs.vcek, a.certs.chain.as_deref())?;
    let time = input::trusted_time(a.certs.at.as_deref())?;
    let verifier = SnpVerifier::new();
    install_crl(&verifier, a.certs.crl.as_deref())?;
    let req = ChainRequest {
        leaf: &leaf,
        intermediate: intermediate.as_deref(),
        root: root.as_deref(),
        product: a.certs.product.map(Product::from),
        time,
    };
    let start = Instant::now();
    let result = verifier.verify_chain_only(&req, &SnpPolicy::default());
    let us = micros(start);
    let mut info = Map::new();
    info.insert("time".into(), time.to_string().into());
    info.insert("micros".into(), us.into());
    match result {
        Err(err) => Ok(reject(&err, info, a.json)),
        Ok(c) => {
            let cert = attest_engine::x509::Certificate::from_der(&leaf).ok();
            let validity = cert.map(|c| (c.not_before(), c.not_after()));
            if a.json {
                let mut m = Map::new();
                m.insert("accepted".into(), true.into());
                m.insert("product".into(), c.product.name().into());
                m.insert("signer".into(), c.role.name().into());
                m.insert("tcb".into(), tcb_json(c.tcb));
                m.insert("crl_checked".into(), c.crl_checked.into());
                m.insert("expires".into(), c.expires.to_string().into());
                if let Some((nb, na)) = validity {
                    m.insert("not_before".into(), nb.to_string().into());
                    m.insert("not_after".into(), na.to_string().into());
                }
                m.extend(info);
                print_json(&Value::Object(m));
            } else {
                let mut s = String::new();
                let _ = writeln!(s, "ACCEPTED: {} chains to the pinned ARK-{}", c.role, c.product);
                let _ = writeln!(s, "  {:<14}{}", "product", c.product);
                let _ = writeln!(s, "  {:<14}{}", "signer", c.role);
                let _ = writeln!(s, "  {:<14}{}", "TCB", c.tcb);
                if let Some((nb, na)) = validity {
                    let _ = writeln!(s, "  {:<14}{nb} .. {na}", "leaf valid");
                }
                let _ = writeln!(
                    s,
                    "  {:<14}{}",
                    "revocation",
                    if c.crl_checked { "checked against CRL" } else { "not checked (no CRL)" }
                );
                let _ = writeln!(s, "  {:<14}{}", "valid until", c.expires);
                let _ = writeln!(s, "  {:<14}{}", "trusted time", time);
                let _ = writeln!(s, "  {:<14}{us} µs", "engine time");
                out(&s);
            }
            Ok(Status::Accepted)
        }
    }
}

/// The product used to decode TCB values in `show`: `--product`, else the report's CPUID (v3+).
fn show_product(r: &Report<'_>, arg: Option<ProductArg>) -> (Option<Product>, &'static str) {
    if let Some(p) = arg {
        return (Some(p.into()), "--product");
    }
    match r.cpuid_product() {
        Some(Ok(p)) => (Some(p), "report CPUID"),
        Some(Err(_)) => (None, "report CPUID names no supported product"),
        None => (None, "unknown (version 2 report has no CPUID; pass --product to decode TCBs)"),
    }
}

fn show(a: &ShowArgs) -> Result<Status, UsageError> {
    let input = input::read_report(&a.report)?;
    let r = match Report::parse(input.report()) {
        Ok(r) => r,
        Err(err) => {
            if a.json {
                let mut m = Map::new();
                m.insert("verified".into(), false.into());
                m.insert("format".into(), input.container.id().into());
                m.insert("encoding".into(), input.encoding.id().into());
                m.insert("error".into(), err.to_string().into());
                print_json(&Value::Object(m));
            } else {
                eprintln!("INVALID: the report does not parse: {err}");
            }
            return Ok(Status::Rejected);
        }
    };
    let (product, product_source) = show_product(&r, a.product);
    let fields = report_fields(&r, product, product_source, &input);
    if a.json {
        print_json(&Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    } else {
        let mut s = String::new();
        s.push_str("UNVERIFIED SEV-SNP report: nothing below has been checked (signature, chain, policy).\n");
        s.push_str("Use `attest snp verify` to verify it.\n");
        for (k, v) in &fields {
            print_value(&mut s, k, v, 0);
        }
        out(&s);
    }
    Ok(Status::Accepted)
}

fn tcb_field(raw: u64, product: Option<Product>) -> Value {
    let mut m = Map::new();
    m.insert("raw".into(), format!("0x{raw:016x}").into());
    if let Some(p) = product {
        match TcbVersion::decode(raw, p) {
            Ok(t) => {
                m.insert("decoded".into(), tcb_json(t));
                m.insert("text".into(), t.to_string().into());
            }
            Err(e) => {
                m.insert("decode_error".into(), e.to_string().into());
            }
        }
    }
    Value::Object(m)
}

fn report_fields(
    r: &Report<'_>,
    product: Option<Product>,
    product_source: &str,
    input: &ReportInput,
) -> Vec<(&'static str, Value)> {
    let p = r.policy();
    let pi = r.platform_info();
    let sig = r.signature_fixed();
    let raw = r.raw();
    let mut v: Vec<(&'static str, Value)> = vec![
        ("verified", false.into()),
        ("warning", "UNVERIFIED: fields are shown as received; signature, certificate chain and policy were not checked".into()),
        ("format", input.container.id().into()),
        ("encoding", input.encoding.id().into()),
        ("tcb_product", product.map(Product::name).into()),
        ("tcb_product_source", product_source.into()),
        ("version", r.version().into()),
        ("guest_svn", r.guest_svn().into()),
        (
            "policy",
            json!({
                "raw": format!("0x{:x}", p.0),
                "abi_major": p.abi_major(),
                "abi_minor": p.abi_minor(),
                "smt": p.smt(),
                "migrate_ma": p.migrate_ma(),
                "debug": p.debug(),
                "single_socket": p.single_socket(),
                "cxl_allow": p.cxl_allow(),
                "mem_aes_256_xts": p.mem_aes_256_xts(),
                "rapl_dis": p.rapl_dis(),
                "ciphertext_hiding": p.ciphertext_hiding(),
                "page_swap_disable": p.page_swap_disable(),
            }),
        ),
        ("family_id", hex::encode(r.family_id()).into()),
        ("image_id", hex::encode(r.image_id()).into()),
        ("vmpl", r.vmpl().into()),
        ("signature_algo", raw.signature_algo.get().into()),
        ("current_tcb", tcb_field(r.current_tcb(), product)),
        (
            "platform_info",
            json!({
                "raw": format!("0x{:x}", pi.0),
                "smt_enabled": pi.smt_enabled(),
                "tsme_enabled": pi.tsme_enabled(),
                "ecc_enabled": pi.ecc_enabled(),
                "rapl_disabled": pi.rapl_disabled(),
                "ciphertext_hiding_enabled": pi.ciphertext_hiding_enabled(),
                "alias_check_complete": pi.alias_check_complete(),
            }),
        ),
        ("author_key_en", r.author_key_en().into()),
        ("mask_chip_key", r.mask_chip_key().into()),
        ("signing_key", r.signing_key().role().name().into()),
        ("report_data", hex::encode(r.report_data()).into()),
        ("measurement", hex::encode(r.measurement()).into()),
        ("host_data", hex::encode(r.host_data()).into()),
        ("id_key_digest", hex::encode(r.id_key_digest()).into()),
        ("author_key_digest", hex::encode(r.author_key_digest()).into()),
        ("report_id", hex::encode(r.report_id()).into()),
        ("report_id_ma", hex::encode(r.report_id_ma()).into()),
        ("reported_tcb", tcb_field(r.reported_tcb(), product)),
        (
            "cpuid",
            r.cpuid().map_or(Value::Null, |(f, m, s)| {
                json!({"family": format!("0x{f:02x}"), "model": format!("0x{m:02x}"), "stepping": format!("0x{s:02x}")})
            }),
        ),
        ("chip_id", hex::encode(r.chip_id()).into()),
        ("committed_tcb", tcb_field(r.committed_tcb(), product)),
        ("current_version", r.current_version().to_string().into()),
        ("committed_version", r.committed_version().to_string().into()),
        ("launch_tcb", tcb_field(r.launch_tcb(), product)),
        ("launch_mit_vector", r.launch_mit_vector().map(|x| format!("0x{x:016x}")).into()),
        ("current_mit_vector", r.current_mit_vector().map(|x| format!("0x{x:016x}")).into()),
        (
            "signature",
            json!({
                "r": hex::encode(&sig[..48]),
                "s": hex::encode(&sig[48..]),
                "encoding": "big-endian (converted from the report's little-endian R and S)",
            }),
        ),
    ];
    if let Some(hcl) = input.hcl() {
        let binding = hcl.check_binding(attest_engine::crypto::default_provider()).is_ok();
        v.push((
            "hcl",
            json!({
                "version": hcl.version(),
                "hash_type": hcl.hash_type(),
                "variable_data_size": hcl.variable_data().len(),
                "report_data_binds_variable_data": binding,
            }),
        ));
    }
    v
}
