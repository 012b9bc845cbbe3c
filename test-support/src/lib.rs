//! Test-only helpers for the attestation engine: a generated AMD-like PKI and synthetic,
//! signed SEV-SNP attestation reports.
//!
//! The certificates mirror AMD's KDS output byte for byte in structure — same names,
//! RSASSA-PSS/SHA-384 parameters, extension OIDs, order and encodings — but use freshly
//! generated keys, so tests can exercise revocation, expiry, wrong products, TCB mismatches
//! and malformed inputs.
//!
//! ```
//! use attest_test_support::{LeafSpec, Product, ReportBuilder, SigningKeyKind, TestPki};
//!
//! let pki = TestPki::new(Product::Milan, SigningKeyKind::Vcek);
//! let vcek = pki.issue_leaf(&LeafSpec::new());
//! let report = ReportBuilder::for_leaf(&vcek).report_data([7; 64]).sign(&vcek);
//! assert_eq!(report.len(), 0x4A0);
//! assert!(pki.chain_pem().starts_with("-----BEGIN CERTIFICATE-----"));
//! ```

#[cfg(feature = "deploy")]
pub mod deploy;
pub mod der;
pub mod figures;
pub mod gce;
#[cfg(feature = "h2raw")]
pub mod h2raw;
pub mod intel;
pub mod tempdir;
pub mod testdata;
pub mod tpm;
pub mod uki;
pub mod x509;

mod crl;
mod leaf;
mod pki;
mod report;

pub use aws_lc_rs;
pub use crl::CrlSpec;
pub use leaf::{DEFAULT_CSP_ID, HwIdEncoding, Leaf, LeafSpec, default_hwid, default_product_name};
pub use pki::{
    AMD_OID_PREFIX, DEFAULT_NOT_AFTER, DEFAULT_NOT_BEFORE, IntermediateSpec, Product, SigningKeyKind, Tcb, TestPki,
    TestPkiBuilder, amd_name, rsa_pss_sha384_alg_id, tcb_milan_genoa, tcb_turin,
};
pub use report::{REPORT_LEN, ReportBuilder, SIGNATURE_OFFSET, SIGNED_LEN};
pub use tempdir::TempDir;

/// Unix timestamp of a UTC calendar date and time (see [`der::unix_from_civil`]).
pub fn unix_time(year: i64, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> i64 {
    der::unix_from_civil(year, month, day, hour, minute, second)
}

/// A deterministic byte stream (xorshift64): "random" input that is the same on every run.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// The malformed inputs derived from a real input's structure bytes (`structure`, e.g. a report or a
/// protobuf; a text file without its trailing newline) that every verifier must refuse as malformed —
/// the exit-status table of the CLI and of the C ABI alike: random bytes of its length, of an SNP report's
/// length and of 17 bytes, empty, its first 16 bytes, its first third, and its first half and one byte.
pub fn malformed_inputs(structure: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let n = structure.len();
    vec![
        ("random, same length", noise(n, 1)),
        ("random, 0x4A0 bytes", noise(0x4A0, 2)),
        ("random, 17 bytes", noise(17, 3)),
        ("empty", Vec::new()),
        ("first 16 bytes", structure[..16.min(n)].to_vec()),
        ("truncated to 1/3", structure[..n / 3].to_vec()),
        ("cut after half", structure[..(n / 2 + 1).min(n)].to_vec()),
    ]
}

/// PEM armour (RFC 7468): `-----BEGIN <label>-----`, base64 in 64-character lines,
/// `-----END <label>-----`, each line ending in `\n`.
pub fn pem(label: &str, der: &[u8]) -> String {
    let body = base64(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(core::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str("-----END ");
    out.push_str(label);
    out.push_str("-----\n");
    out
}

fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..4 {
            if i < symbols {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
