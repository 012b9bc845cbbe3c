//! Helpers shared by the integration tests: cached PKIs, a minimal DER reader, temp dirs and
//! an `openssl` runner.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use attest_test_support::{Product, SigningKeyKind, TestPki};

/// One cached PKI per (product, kind) and test binary; key generation is the slow part.
pub fn pki(product: Product, kind: SigningKeyKind) -> &'static TestPki {
    static CELLS: [[OnceLock<TestPki>; 2]; 3] =
        [[OnceLock::new(), OnceLock::new()], [OnceLock::new(), OnceLock::new()], [OnceLock::new(), OnceLock::new()]];
    let p = match product {
        Product::Milan => 0,
        Product::Genoa => 1,
        Product::Turin => 2,
    };
    let k = match kind {
        SigningKeyKind::Vcek => 0,
        SigningKeyKind::Vlek => 1,
    };
    CELLS[p][k].get_or_init(|| TestPki::new(product, kind))
}

/// A second, independent Milan VCEK PKI (same names, other keys).
pub fn other_milan() -> &'static TestPki {
    static CELL: OnceLock<TestPki> = OnceLock::new();
    CELL.get_or_init(|| TestPki::new(Product::Milan, SigningKeyKind::Vcek))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// One DER value: its tag, its full encoding and its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub full: &'a [u8],
    pub content: &'a [u8],
}

/// Reads one DER value (single-byte tags, definite lengths) and returns it with the rest.
pub fn read(input: &[u8]) -> (Tlv<'_>, &[u8]) {
    let tag = input[0];
    let (len, header) = if input[1] < 0x80 {
        (usize::from(input[1]), 2)
    } else {
        let n = usize::from(input[1] & 0x7F);
        let len = input[2..2 + n].iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, 2 + n)
    };
    let full = &input[..header + len];
    (Tlv { tag, full, content: &input[header..header + len] }, &input[header + len..])
}

/// Reads exactly one DER value spanning all of `input`.
pub fn read_one(input: &[u8]) -> Tlv<'_> {
    let (tlv, rest) = read(input);
    assert!(rest.is_empty(), "trailing bytes after DER value");
    tlv
}

/// The values inside a constructed value's content.
pub fn children(content: &[u8]) -> Vec<Tlv<'_>> {
    let mut out = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let (tlv, next) = read(rest);
        out.push(tlv);
        rest = next;
    }
    out
}

/// The fields of a certificate's TBSCertificate (version, serial, alg, issuer, validity,
/// subject, spki, [3] extensions).
pub fn tbs_fields(cert: &[u8]) -> Vec<Tlv<'_>> {
    let cert = read_one(cert);
    let parts = children(cert.content);
    children(parts[0].content)
}

/// `(oid TLV bytes, full extension)` for each extension of a certificate.
pub fn extensions(cert: &[u8]) -> Vec<(Vec<u8>, Tlv<'_>)> {
    let fields = tbs_fields(cert);
    let ext_field = fields.iter().find(|f| f.tag == 0xA3).expect("no extensions");
    let seq = read_one(ext_field.content);
    children(seq.content).into_iter().map(|ext| (children(ext.content)[0].full.to_vec(), ext)).collect()
}

/// The extnValue content of the extension with this dotted OID, if present.
pub fn extension_value<'a>(cert: &'a [u8], oid: &str) -> Option<&'a [u8]> {
    let wanted = attest_test_support::der::oid(oid);
    extensions(cert)
        .into_iter()
        .find(|(o, _)| *o == wanted)
        .map(|(_, ext)| children(ext.content).last().expect("extnValue").content)
}

/// Unix seconds of a UTCTime or GeneralizedTime TLV (`...Z` forms only).
pub fn parse_time(tlv: Tlv<'_>) -> i64 {
    let text = std::str::from_utf8(tlv.content).expect("ASCII time");
    let digits = text.strip_suffix('Z').expect("Z suffix");
    let num = |s: &str| -> u32 { s.parse().expect("digits") };
    let (year, rest) = match tlv.tag {
        0x17 => {
            let yy = i64::from(num(&digits[..2]));
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &digits[2..])
        }
        0x18 => (i64::from(num(&digits[..4])), &digits[4..]),
        other => panic!("not a time tag: {other:#x}"),
    };
    attest_test_support::unix_time(
        year,
        num(&rest[0..2]),
        num(&rest[2..4]),
        num(&rest[4..6]),
        num(&rest[6..8]),
        num(&rest[8..10]),
    )
}

/// Decodes PEM certificates (any label) to DER, in order.
pub fn pem_to_der_all(pem: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut body = String::new();
    let mut inside = false;
    for line in pem.lines() {
        if line.starts_with("-----BEGIN") {
            inside = true;
            body.clear();
        } else if line.starts_with("-----END") {
            inside = false;
            out.push(base64_decode(&body));
        } else if inside {
            body.push_str(line.trim());
        }
    }
    out
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 character {c}"),
        }
    };
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in text.as_bytes() {
        if c == b'=' {
            break;
        }
        acc = (acc << 6) | value(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("attest-test-support-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `contents` to `name` in the directory and returns the path as a string.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("write temp file");
        path.to_str().expect("UTF-8 path").to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Output of one `openssl` run.
#[derive(Debug)]
pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout and stderr together.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `openssl` with `args`.
pub fn openssl(args: &[&str]) -> Output {
    let out = Command::new("openssl").args(args).output().expect("the openssl command-line tool must be installed");
    Output {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Where the real AMD certificates used for conformance checks live, if present (a NOTICE when absent; a
/// failure under `CI=true`).
pub fn real_testdata() -> Option<PathBuf> {
    attest_test_support::testdata::dir()
}
