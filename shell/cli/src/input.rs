//! Reading inputs: report format detection, certificates and CRLs as PEM or DER, hex arguments, times.
//!
//! Report detection is explicit and never falls back silently:
//!
//! 1. A file made only of printable ASCII and whitespace is text: all hex digits → hex; otherwise only
//!    base64 characters → base64 (`+`/`/`) or base64url (`-`/`_`), padding optional. Anything else is an
//!    error. The decoded bytes are then classified as below.
//! 2. Binary: `HCLA` magic → Azure HCL report (must contain an SNP report); exactly 0x4A0 bytes → a raw
//!    report; exactly 0x4A0 + 20 bytes whose tail is a valid IGVM request-data header (report type SNP) → a
//!    raw report followed by that header (as Azure's HCL places it). Any other size is an error.

use super::UsageError;
use attest_engine::Error;
use attest_engine::UnixTime;
use attest_engine::azure::HclReport;
use attest_engine::azure::hcl::IGVM_REQUEST_HEADER_SIZE;
use attest_engine::formats::snp::SnpEvidence;
use attest_engine::snp::{Product, REPORT_SIZE};
use attest_engine::x509::pem;
use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use std::path::Path;

/// Largest input file read (reports, certificates, CRLs, policies).
pub const MAX_INPUT_SIZE: u64 = 16 * 1024 * 1024;

const B64_CONFIG: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const B64_STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, B64_CONFIG);
const B64_URL: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, B64_CONFIG);

/// The container the SNP report was found in (the engine's classification, shared with the C ABI).
pub use attest_engine::formats::snp::SnpContainer as Container;

/// The encoding of the report file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Raw bytes.
    Binary,
    /// Hex text.
    Hex,
    /// Base64 text (standard alphabet).
    Base64,
    /// Base64 text (URL-safe alphabet).
    Base64Url,
}

impl Encoding {
    /// A stable identifier, used in JSON output.
    pub fn id(self) -> &'static str {
        match self {
            Self::Binary => "binary",
            Self::Hex => "hex",
            Self::Base64 => "base64",
            Self::Base64Url => "base64url",
        }
    }
}

/// A report file, decoded, with its detected format.
#[derive(Clone, Debug)]
pub struct ReportInput {
    data: Vec<u8>,
    /// Where the report sits.
    pub container: Container,
    /// How the file was encoded.
    pub encoding: Encoding,
}

impl ReportInput {
    /// The 0x4A0 report bytes, exactly as received.
    pub fn report(&self) -> &[u8] {
        self.evidence().map_or(&[][..], |e| e.report())
    }

    /// The HCL report, when the container is one.
    pub fn hcl(&self) -> Option<HclReport<'_>> {
        self.evidence().and_then(|e| e.hcl())
    }

    fn evidence(&self) -> Option<SnpEvidence<'_>> {
        SnpEvidence::parse(&self.data).ok()
    }

    /// The whole decoded input.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// "Azure HCL report … (binary)".
    pub fn describe(&self) -> String {
        format!("{} ({})", self.container.describe(), self.encoding.id())
    }
}

/// Reads a file (at most [`MAX_INPUT_SIZE`] bytes); `what` names the argument in error messages.
pub fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, UsageError> {
    let err = |e: std::io::Error| UsageError(format!("cannot read {what} {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(err)?;
    if !meta.is_file() {
        return Err(UsageError(format!("{what} {} is not a regular file", path.display())));
    }
    if meta.len() > MAX_INPUT_SIZE {
        return Err(UsageError(format!(
            "{what} {} is {} bytes, more than the limit of {MAX_INPUT_SIZE}",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read(path).map_err(err)
}

/// Reads and classifies a report file.
pub fn read_report(path: &Path) -> Result<ReportInput, UsageError> {
    let data = read_file(path, "REPORT")?;
    detect_report(data).map_err(|e| UsageError(format!("REPORT {}: {e}", path.display())))
}

/// Classifies report bytes (see the module documentation).
pub fn detect_report(data: Vec<u8>) -> Result<ReportInput, UsageError> {
    if data.is_empty() {
        return Err(UsageError::new("empty file"));
    }
    let is_text = data.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace());
    if !is_text {
        let container = classify_binary(&data)?;
        return Ok(ReportInput { data, container, encoding: Encoding::Binary });
    }
    let text: String = data.iter().filter(|b| !b.is_ascii_whitespace()).map(|b| char::from(*b)).collect();
    if text.is_empty() {
        return Err(UsageError::new("file contains only whitespace"));
    }
    let (decoded, encoding) = if text.bytes().all(|b| b.is_ascii_hexdigit()) {
        let d = hex::decode(&text).map_err(|e| UsageError(format!("hex text does not decode: {e}")))?;
        (d, Encoding::Hex)
    } else {
        let body = text.trim_end_matches('=');
        let b64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
        if let Some(bad) = body.bytes().find(|b| !b64(*b)) {
            return Err(UsageError(format!(
                "text file that is neither hex nor base64 (character {:?}); expected a binary report, an HCL report, or hex/base64 text of one",
                char::from(bad)
            )));
        }
        let standard = body.bytes().any(|b| matches!(b, b'+' | b'/'));
        let url = body.bytes().any(|b| matches!(b, b'-' | b'_'));
        let (engine, encoding) = match (standard, url) {
            (true, true) => {
                return Err(UsageError::new("base64 text mixes the standard (+/) and URL-safe (-_) alphabets"));
            }
            (false, true) => (&B64_URL, Encoding::Base64Url),
            _ => (&B64_STANDARD, Encoding::Base64),
        };
        let d = engine.decode(body).map_err(|e| {
            UsageError(format!(
                "text file that is neither hex nor valid {} ({e}); expected a binary report, an HCL report, or hex/base64 text of one",
                encoding.id()
            ))
        })?;
        (d, encoding)
    };
    let container =
        classify_binary(&decoded).map_err(|e| UsageError(format!("{} text decodes to {e}", encoding.id())))?;
    Ok(ReportInput { data: decoded, container, encoding })
}

fn classify_binary(data: &[u8]) -> Result<Container, UsageError> {
    SnpEvidence::parse(data).map(|e| e.container()).map_err(|e| match e {
        Error::Truncated { .. } | Error::TrailingData { .. } => UsageError(format!(
            "{} bytes: not a recognized report format (expected exactly {REPORT_SIZE} bytes for a raw report, {} for a \
             report + IGVM request-data header, an Azure HCL report starting with \"HCLA\", or hex/base64 text of one)",
            data.len(),
            REPORT_SIZE + IGVM_REQUEST_HEADER_SIZE
        )),
        Error::EvidenceFormat { reason, .. } => UsageError(format!("{} bytes: {reason}", data.len())),
        other => UsageError(format!("a malformed Azure HCL report: {other}")),
    })
}

/// Reads certificates (PEM with one or more `CERTIFICATE` blocks, or one DER certificate).
pub fn read_certificates(path: &Path, what: &str) -> Result<Vec<Vec<u8>>, UsageError> {
    let data = read_file(path, what)?;
    pem::certificates_from_pem_or_der(&data).map_err(|e| UsageError(format!("{what} {}: {e}", path.display())))
}

/// Reads a CRL (DER, or PEM with exactly one `X509 CRL` block).
pub fn read_crl(path: &Path) -> Result<Vec<u8>, UsageError> {
    let data = read_file(path, "--crl")?;
    if data.first() == Some(&0x30) {
        return Ok(data);
    }
    let bad = |m: String| UsageError(format!("--crl {}: {m}", path.display()));
    let blocks = pem::parse_pem(&data).map_err(|e| bad(e.to_string()))?;
    let mut crls = blocks.into_iter().filter(|b| b.label == "X509 CRL");
    match (crls.next(), crls.next()) {
        (Some(b), None) => Ok(b.der),
        (None, _) => Err(bad("neither DER nor a PEM file with an X509 CRL block".into())),
        (Some(_), Some(_)) => Err(bad("more than one X509 CRL block".into())),
    }
}

/// Parses `--report-data`: exactly 64 bytes as hex (128 digits, optional `0x` prefix).
pub fn parse_report_data(text: &str) -> Result<[u8; 64], UsageError> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let v = hex::decode(t).map_err(|e| UsageError(format!("--report-data: not hex: {e}")))?;
    v.try_into().map_err(|v: Vec<u8>| {
        UsageError(format!("--report-data: expected exactly 64 bytes (128 hex digits), found {} bytes", v.len()))
    })
}

/// Parses `--at`: RFC 3339 UTC time, a date, or Unix seconds.
pub fn parse_time(text: &str) -> Result<UnixTime, UsageError> {
    UnixTime::parse(text).ok_or_else(|| {
        UsageError(format!(
            "--at {text:?}: expected an RFC 3339 UTC time (2025-06-01T12:00:00Z), a date (2025-06-01) or Unix seconds"
        ))
    })
}

/// The trusted time: `--at` when given, else the system clock (the engine itself never reads clocks).
pub fn trusted_time(at: Option<&str>) -> Result<UnixTime, UsageError> {
    if let Some(t) = at {
        return parse_time(t);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| UsageError::new("the system clock is before 1970; pass --at"))?;
    Ok(UnixTime::from_secs(now.as_secs()))
}

/// Splits `--vcek` / `--chain` certificates into (leaf, intermediate, root). A `--vcek` PEM may carry the
/// chain after the leaf; when `--chain` is also given, both chains must be identical.
#[allow(clippy::type_complexity)]
pub fn split_chain(
    vcek: Vec<Vec<u8>>,
    chain: Option<Vec<Vec<u8>>>,
) -> Result<(Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>), UsageError> {
    let mut vcek = vcek.into_iter();
    let leaf = vcek.next().ok_or_else(|| UsageError::new("--vcek: no certificate"))?;
    let embedded: Vec<Vec<u8>> = vcek.collect();
    let rest = match chain {
        Some(c) if !embedded.is_empty() && c != embedded => {
            return Err(UsageError::new(
                "--vcek carries a chain after the leaf and --chain gives a different one; pass only one",
            ));
        }
        Some(c) => c,
        None => embedded,
    };
    if rest.len() > 2 {
        return Err(UsageError(format!(
            "the chain has {} certificates after the leaf; expected at most 2 (ASK/ASVK, then ARK)",
            rest.len()
        )));
    }
    let mut rest = rest.into_iter();
    Ok((leaf, rest.next(), rest.next()))
}

/// `--product` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProductArg {
    /// 3rd generation EPYC.
    Milan,
    /// 4th generation EPYC.
    Genoa,
    /// 5th generation EPYC.
    Turin,
}

impl From<ProductArg> for Product {
    fn from(p: ProductArg) -> Self {
        match p {
            ProductArg::Milan => Product::Milan,
            ProductArg::Genoa => Product::Genoa,
            ProductArg::Turin => Product::Turin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_report() -> Vec<u8> {
        let mut r = vec![0u8; REPORT_SIZE];
        r[0] = 2;
        r
    }

    #[test]
    fn detection() {
        let r = fake_report();
        assert_eq!(detect_report(r.clone()).unwrap().container, Container::Raw);
        let h = detect_report(hex::encode(&r).into_bytes()).unwrap();
        assert_eq!((h.container, h.encoding), (Container::Raw, Encoding::Hex));
        assert_eq!(h.report(), &r[..]);
        let b = detect_report(format!("{}\n", B64_STANDARD.encode(&r)).into_bytes()).unwrap();
        assert_eq!(b.encoding, Encoding::Base64);
        let mut igvm = r.clone();
        for v in [604u32, 1, 2, 1, 584] {
            igvm.extend_from_slice(&v.to_le_bytes());
        }
        let i = detect_report(igvm.clone()).unwrap();
        assert_eq!(i.container, Container::RawWithIgvmHeader);
        assert_eq!(i.report(), &r[..]);
        igvm[REPORT_SIZE + 8] = 4;
        assert!(detect_report(igvm).unwrap_err().0.contains("IGVM"));
        assert!(detect_report(vec![0u8; 100]).unwrap_err().0.contains("not a recognized"));
        assert!(detect_report(b"hello world!".to_vec()).is_err());
        assert!(detect_report(b"zz~~".to_vec()).is_err());
        assert!(detect_report(Vec::new()).is_err());
        assert!(detect_report(b"HCLA\x01\0\0\0".to_vec()).unwrap_err().0.contains("HCL"));
    }

    #[test]
    fn arguments() {
        assert!(parse_report_data(&"00".repeat(64)).is_ok());
        assert!(parse_report_data(&"00".repeat(32)).unwrap_err().0.contains("found 32 bytes"));
        assert!(parse_report_data("xyz").is_err());
        assert_eq!(parse_time("86400").unwrap(), UnixTime::from_secs(86_400));
        assert!(parse_time("yesterday").is_err());
        let (leaf, i, r) = split_chain(vec![vec![1], vec![2], vec![3]], None).unwrap();
        assert_eq!((leaf, i, r), (vec![1], Some(vec![2]), Some(vec![3])));
        assert!(split_chain(vec![vec![1], vec![2]], Some(vec![vec![9]])).is_err());
        assert!(split_chain(vec![vec![1]], Some(vec![vec![2], vec![3], vec![4]])).is_err());
    }
}
