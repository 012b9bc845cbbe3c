//! The cluster CA: the kubeadm PKI directory, the discovery hash, and kubelet client certificates.
//!
//! # Layout (kubeadm's `/etc/kubernetes/pki`, PEM)
//!
//! | file | what | needed for |
//! |---|---|---|
//! | `ca.crt`, `ca.key` | the cluster CA | always (discovery hash, kubelet certificates) |
//! | `sa.key`, `sa.pub` | service-account token signing key pair | control-plane joins |
//! | `front-proxy-ca.crt`, `front-proxy-ca.key` | the aggregation-layer CA | control-plane joins |
//! | `etcd/ca.crt`, `etcd/ca.key` | the etcd CA | control-plane joins |
//!
//! A control-plane node receives exactly these eight files, named by their path below the PKI directory
//! (kubeadm's "upload-certs" set), and makes its own leaf certificates from them.
//!
//! # Kubelet certificates
//!
//! The joining node sends a CSR (PKCS #10, DER or PEM). It is signed only if it is what a kubelet client
//! certificate request must be (the rules of the Kubernetes `kubernetes.io/kube-apiserver-client-kubelet`
//! signer):
//! - the CSR's self-signature verifies (the node holds the key);
//! - the subject is exactly `O=system:nodes, CN=system:node:<nodename>` and `<nodename>` is a DNS-1123
//!   subdomain;
//! - the key is EC P-256/P-384 or RSA of 2048–8192 bits;
//! - it is signed with ECDSA/SHA-256 (P-256 keys), ECDSA/SHA-384 (P-384), RSA PKCS #1 v1.5 with SHA-256/384 or
//!   RSASSA-PSS/SHA-384 (what the engine verifies; a kubelet signs P-256 with SHA-256).
//!
//! Neither step uses OpenSSL's key decoders and encoders (≈ 0.3–0.4 ms each per join with OpenSSL 3.0): the
//! CSR is read with the engine's zero-copy DER reader and its signature checked with the engine's aws-lc-rs
//! provider; the certificate comes from a template prepared once at [`ClusterCa::load`] (the `kubelet`
//! module) and is signed with aws-lc-rs with the CA key's algorithm (ECDSA P-256/SHA-256, P-384/SHA-384 or
//! RSA PKCS #1 v1.5/SHA-256).
//!
//! Requested extensions are ignored: the certificate gets this module's, never the requester's —
//! keyUsage digitalSignature (+ keyEncipherment for RSA, critical), extKeyUsage clientAuth and serverAuth
//! (the kubelet serves its API with it too), subjectAltName DNS = the node name of the checked subject (the
//! only name the node may claim; IP addresses are not certified, as the service has no trusted source for
//! them), basicConstraints CA:FALSE (critical), subject and authority key identifiers, a random 16-octet
//! positive serial, validity from [`CLOCK_SKEW_ALLOWANCE`] ago for the configured duration.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use attest_engine::x509::{CertificationRequest, PublicKey, SignatureAlgorithm};

use super::kubelet::{KubeletTemplate, Leaf, OID_COMMON_NAME, OID_ORGANIZATION, UTF8_STRING};

/// PrintableString: besides UTF8String, the string type a kubelet's (Go's x509) CSR subject may use.
const PRINTABLE_STRING: u8 = 0x13;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::EcKey;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, KeyUsage, SubjectKeyIdentifier};
use openssl::x509::{X509, X509NameBuilder};
use zeroize::Zeroizing;

/// Largest CSR accepted, in bytes (a kubelet's P-256 CSR is ≈ 250 bytes DER, an RSA-8192 one ≈ 1.2 KiB).
pub const MAX_CSR_SIZE: usize = 16 * 1024;
/// Largest PKI file read, in bytes.
pub const MAX_PKI_FILE_SIZE: u64 = 64 * 1024;
/// Default validity of kubelet client certificates (kubeadm's leaf default: one year).
pub const DEFAULT_KUBELET_CERT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// Shortest kubelet certificate validity accepted.
pub const MIN_KUBELET_CERT_VALIDITY: Duration = Duration::from_secs(3600);
/// Longest kubelet certificate validity accepted (five years).
pub const MAX_KUBELET_CERT_VALIDITY: Duration = Duration::from_secs(5 * 365 * 24 * 3600);
/// How far in the past a certificate's notBefore is set, for nodes whose clock runs behind.
pub const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(5 * 60);
/// Smallest RSA key accepted in a CSR, in bits.
pub const MIN_RSA_BITS: u32 = 2048;
/// Largest RSA key accepted in a CSR, in bits (bounds the verification cost).
pub const MAX_RSA_BITS: u32 = 8192;
/// Longest node name (a DNS-1123 subdomain).
pub const MAX_NODE_NAME_LENGTH: usize = 253;
/// The organization of node client certificates.
pub const NODES_GROUP: &str = "system:nodes";
/// The common-name prefix of node client certificates.
pub const NODE_USER_PREFIX: &str = "system:node:";

/// The control-plane files, by path below the PKI directory (kubeadm's names).
pub const CONTROL_PLANE_FILES: [&str; 8] =
    ["ca.crt", "ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key"];

/// Why the PKI could not be loaded or a CSR was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaError {
    // ---- Loading ----------------------------------------------------------------------------------------
    /// A PKI file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A PKI file is not what it must be (not PEM, wrong key, key does not match the certificate).
    BadPkiFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A control-plane join was asked for, but the PKI directory lacks control-plane files.
    MissingControlPlaneFiles {
        /// The missing files.
        missing: Vec<&'static str>,
    },
    /// A kubelet certificate validity outside [`MIN_KUBELET_CERT_VALIDITY`]`..=`[`MAX_KUBELET_CERT_VALIDITY`].
    InvalidValidity {
        /// The requested validity.
        validity: Duration,
    },

    // ---- The CSR (the caller's fault) -------------------------------------------------------------------
    /// The CSR is larger than [`MAX_CSR_SIZE`].
    CsrTooLarge {
        /// Its size.
        len: usize,
    },
    /// The CSR is not a PKCS #10 request in DER or PEM, or is signed with an algorithm the engine does not
    /// verify.
    MalformedCsr {
        /// The DER reader's reason.
        reason: String,
    },
    /// The CSR's signature does not verify under its own key (RFC 2986 §4.2).
    BadCsrSignature,
    /// The subject is not exactly `O=system:nodes, CN=system:node:<nodename>`.
    BadSubject {
        /// What is wrong.
        reason: String,
    },
    /// The node name is not a DNS-1123 subdomain.
    BadNodeName {
        /// The name (cut to [`MAX_NODE_NAME_LENGTH`] bytes).
        name: String,
    },
    /// The key is not EC P-256/P-384 or RSA of [`MIN_RSA_BITS`]–[`MAX_RSA_BITS`] bits.
    UnsupportedKey {
        /// What the key is.
        found: String,
    },

    // ---- Signing ----------------------------------------------------------------------------------------
    /// Building or signing the certificate failed.
    Signing {
        /// The reason.
        reason: String,
    },
}

impl CaError {
    /// Whether the error is the requester's fault (a bad CSR): `INVALID_ARGUMENT` on the wire.
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            CaError::CsrTooLarge { .. }
                | CaError::MalformedCsr { .. }
                | CaError::BadCsrSignature
                | CaError::BadSubject { .. }
                | CaError::BadNodeName { .. }
                | CaError::UnsupportedKey { .. }
        )
    }
}

impl fmt::Display for CaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CaError::BadPkiFile { path, reason } => write!(f, "{}: {reason}", path.display()),
            CaError::MissingControlPlaneFiles { missing } => {
                write!(f, "the PKI directory lacks control-plane files: {}", missing.join(", "))
            }
            CaError::InvalidValidity { validity } => write!(
                f,
                "kubelet certificate validity {validity:?} is outside {MIN_KUBELET_CERT_VALIDITY:?}..={MAX_KUBELET_CERT_VALIDITY:?}"
            ),
            CaError::CsrTooLarge { len } => write!(f, "CSR of {len} bytes exceeds the limit of {MAX_CSR_SIZE}"),
            CaError::MalformedCsr { reason } => write!(f, "CSR is not a PKCS #10 request: {reason}"),
            CaError::BadCsrSignature => f.write_str("CSR signature does not verify under its own key"),
            CaError::BadSubject { reason } => {
                write!(f, "CSR subject must be exactly O={NODES_GROUP}, CN={NODE_USER_PREFIX}<nodename>: {reason}")
            }
            CaError::BadNodeName { name } => write!(f, "node name {name:?} is not a DNS-1123 subdomain"),
            CaError::UnsupportedKey { found } => {
                write!(f, "CSR key must be EC P-256/P-384 or RSA {MIN_RSA_BITS}-{MAX_RSA_BITS} bits, found {found}")
            }
            CaError::Signing { reason } => write!(f, "signing the certificate: {reason}"),
        }
    }
}

impl std::error::Error for CaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CaError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[allow(clippy::needless_pass_by_value)] // a `map_err` adapter
fn signing(e: openssl::error::ErrorStack) -> CaError {
    CaError::Signing { reason: e.to_string() }
}

/// A control-plane file: its name (path below the PKI directory) and contents. Key contents are zeroized on
/// drop.
#[derive(Clone)]
pub struct PkiFile {
    /// Path below the PKI directory (`etcd/ca.key`).
    pub name: &'static str,
    /// The file's bytes (PEM).
    pub data: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for PkiFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PkiFile").field("name", &self.name).field("len", &self.data.len()).finish_non_exhaustive()
    }
}

/// A CSR that passed every check: the node name and the key to certify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedCsr {
    /// The node name from `CN=system:node:<nodename>`.
    pub node_name: String,
    /// The SubjectPublicKeyInfo DER as the CSR carried it.
    spki: Vec<u8>,
    /// Whether the key is RSA (keyUsage then includes keyEncipherment).
    rsa: bool,
}

impl CheckedCsr {
    /// The SubjectPublicKeyInfo DER the certificate will carry (the CSR's, byte for byte).
    pub fn spki(&self) -> &[u8] {
        &self.spki
    }
}

/// The cluster CA loaded from a kubeadm PKI directory.
pub struct ClusterCa {
    cert: X509,
    /// The kubelet certificate template and the CA key it signs with (aws-lc-rs).
    template: KubeletTemplate,
    discovery_hash: String,
    control_plane: Vec<PkiFile>,
    missing: Vec<&'static str>,
    validity: Duration,
}

impl fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterCa")
            .field("subject", &self.cert.subject_name())
            .field("discovery_hash", &self.discovery_hash)
            .field("control_plane_files", &self.control_plane.len())
            .finish_non_exhaustive()
    }
}

impl ClusterCa {
    /// Loads `dir`: `ca.crt` and `ca.key` are required (and must match); the other control-plane files are
    /// loaded when present, and their absence only fails control-plane joins.
    pub fn load(dir: &Path) -> Result<ClusterCa, CaError> {
        let mut control_plane = Vec::new();
        let mut missing = Vec::new();
        for name in CONTROL_PLANE_FILES {
            let path = dir.join(name);
            match read_limited(&path) {
                Ok(data) => {
                    check_pem(&path, name, &data)?;
                    control_plane.push(PkiFile { name, data });
                }
                Err(CaError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound && !name.starts_with("ca.") =>
                {
                    missing.push(name);
                }
                Err(e) => return Err(e),
            }
        }
        let file = |name: &str| control_plane.iter().find(|f| f.name == name).map(|f| &f.data);
        let (cert_path, key_path) = (dir.join("ca.crt"), dir.join("ca.key"));
        let bad = |path: &Path, reason: String| CaError::BadPkiFile { path: path.to_owned(), reason };
        let cert = X509::from_pem(file("ca.crt").map_or(&[][..], |d| d)).map_err(|e| bad(&cert_path, e.to_string()))?;
        let key = PKey::private_key_from_pem(file("ca.key").map_or(&[][..], |d| d))
            .map_err(|e| bad(&key_path, e.to_string()))?;
        let cert_key = cert.public_key().map_err(|e| bad(&cert_path, e.to_string()))?;
        if !key.public_eq(&cert_key) {
            return Err(bad(&key_path, "the key does not belong to ca.crt".into()));
        }
        let discovery_hash = discovery_token_ca_cert_hash(&cert).map_err(|e| bad(&cert_path, e.to_string()))?;
        let cert_der = cert.to_der().map_err(|e| bad(&cert_path, e.to_string()))?;
        let key_pkcs8 = Zeroizing::new(key.private_key_to_pkcs8().map_err(|e| bad(&key_path, e.to_string()))?);
        let template =
            KubeletTemplate::new(&cert_der, &key_pkcs8, NODES_GROUP).map_err(|e| bad(&key_path, e.to_string()))?;
        Ok(ClusterCa {
            cert,
            template,
            discovery_hash,
            control_plane,
            missing,
            validity: DEFAULT_KUBELET_CERT_VALIDITY,
        })
    }

    /// Sets the kubelet certificate validity.
    pub fn with_kubelet_cert_validity(mut self, validity: Duration) -> Result<ClusterCa, CaError> {
        if !(MIN_KUBELET_CERT_VALIDITY..=MAX_KUBELET_CERT_VALIDITY).contains(&validity) {
            return Err(CaError::InvalidValidity { validity });
        }
        self.validity = validity;
        Ok(self)
    }

    /// The CA certificate.
    pub fn certificate(&self) -> &X509 {
        &self.cert
    }

    /// `sha256:<hex>` of the CA certificate's SubjectPublicKeyInfo (kubeadm's
    /// `--discovery-token-ca-cert-hash`).
    pub fn discovery_hash(&self) -> &str {
        &self.discovery_hash
    }

    /// The eight control-plane files, or [`CaError::MissingControlPlaneFiles`].
    pub fn control_plane_files(&self) -> Result<&[PkiFile], CaError> {
        if self.missing.is_empty() {
            Ok(&self.control_plane)
        } else {
            Err(CaError::MissingControlPlaneFiles { missing: self.missing.clone() })
        }
    }

    /// Parses and checks a kubelet CSR (module docs); does not sign.
    pub fn check_kubelet_csr(&self, csr: &[u8]) -> Result<CheckedCsr, CaError> {
        check_kubelet_csr(csr)
    }

    /// Signs a checked CSR: a kubelet certificate (DER), from the template prepared at load (module docs).
    pub fn sign_kubelet(&self, csr: &CheckedCsr) -> Result<Vec<u8>, CaError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let common_name = format!("{NODE_USER_PREFIX}{}", csr.node_name);
        let leaf = Leaf { spki: &csr.spki, common_name: &common_name, dns_name: &csr.node_name, rsa: csr.rsa };
        let not_before = now.saturating_sub(CLOCK_SKEW_ALLOWANCE.as_secs());
        let not_after = now.saturating_add(self.validity.as_secs());
        self.template.sign(&leaf, not_before, not_after).map_err(|reason| CaError::Signing { reason: reason.into() })
    }
}

/// `sha256:<hex>` of `cert`'s SubjectPublicKeyInfo DER.
pub fn discovery_token_ca_cert_hash(cert: &X509) -> Result<String, openssl::error::ErrorStack> {
    let spki = cert.public_key()?.public_key_to_der()?;
    Ok(format!("sha256:{}", hex::encode(openssl::sha::sha256(&spki))))
}

/// Reads and checks a kubelet CSR (DER, or PEM `CERTIFICATE REQUEST`): the self-signature, a key that is
/// EC P-256/P-384 or RSA of [`MIN_RSA_BITS`]–[`MAX_RSA_BITS`] bits, and a subject that is exactly
/// `O=system:nodes, CN=system:node:<nodename>` with a DNS-1123 node name. Requested extensions are ignored.
pub fn check_kubelet_csr(csr: &[u8]) -> Result<CheckedCsr, CaError> {
    if csr.len() > MAX_CSR_SIZE {
        return Err(CaError::CsrTooLarge { len: csr.len() });
    }
    let malformed = |e: &dyn fmt::Display| CaError::MalformedCsr { reason: e.to_string() };
    let pem;
    let der = if csr.trim_ascii_start().starts_with(b"-----BEGIN") {
        pem = attest_engine::x509::pem::parse_pem(csr).map_err(|e| malformed(&e))?;
        match &pem[..] {
            [block] if block.label == "CERTIFICATE REQUEST" || block.label == "NEW CERTIFICATE REQUEST" => &block.der,
            _ => return Err(malformed(&"not exactly one PEM CERTIFICATE REQUEST block")),
        }
    } else {
        csr
    };
    let req = CertificationRequest::from_der(der).map_err(|e| malformed(&e))?;
    let key = req.public_key().map_err(|e| CaError::UnsupportedKey { found: e.to_string() })?;
    let rsa = match key {
        PublicKey::EcP256 { .. } | PublicKey::EcP384 { .. } => false,
        PublicKey::Rsa { .. } => {
            let bits = key.rsa_modulus_bits().unwrap_or(0);
            if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                return Err(CaError::UnsupportedKey { found: format!("RSA-{bits}") });
            }
            true
        }
        _ => return Err(CaError::UnsupportedKey { found: "a key type the engine does not use".into() }),
    };
    // The algorithm must be one the engine verifies, with the hash bound to the key as a kubelet (Go's x509)
    // signs: SHA-256 for P-256, SHA-384 for P-384.
    let algorithm = req.signature_algorithm().map_err(|e| malformed(&e))?;
    let consistent = matches!(
        (key, algorithm),
        (PublicKey::EcP256 { .. }, SignatureAlgorithm::EcdsaSha256)
            | (PublicKey::EcP384 { .. }, SignatureAlgorithm::EcdsaSha384)
            | (
                PublicKey::Rsa { .. },
                SignatureAlgorithm::RsaPkcs1Sha256
                    | SignatureAlgorithm::RsaPkcs1Sha384
                    | SignatureAlgorithm::RsaPssSha384,
            )
    );
    if !consistent {
        return Err(malformed(&format_args!("signature algorithm {} does not fit the key", algorithm.name())));
    }
    req.verify_signature(attest_engine::crypto::default_provider()).map_err(|_| CaError::BadCsrSignature)?;
    let node_name = node_name(&req)?;
    Ok(CheckedCsr { node_name: node_name.to_owned(), spki: req.spki().to_vec(), rsa })
}

/// The node name of a subject that is exactly `O=system:nodes` and `CN=system:node:<name>`.
fn node_name<'a>(req: &CertificationRequest<'a>) -> Result<&'a str, CaError> {
    let bad = |reason: String| CaError::BadSubject { reason };
    let (mut cn, mut o): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let mut problem = None;
    req.subject().for_each_attribute(|a| {
        if problem.is_some() {
            return;
        }
        let (UTF8_STRING | PRINTABLE_STRING, Ok(value)) = (a.tag, std::str::from_utf8(a.value)) else {
            problem = Some("an attribute that is not a UTF8String or PrintableString".to_owned());
            return;
        };
        match a.oid {
            OID_COMMON_NAME => cn.push(value),
            OID_ORGANIZATION => o.push(value),
            other => problem = Some(format!("unexpected attribute {}", hex::encode(other))),
        }
    });
    if let Some(reason) = problem {
        return Err(bad(reason));
    }
    if o != [NODES_GROUP] {
        return Err(bad(format!("organizations {o:?}")));
    }
    let [cn] = cn[..] else {
        return Err(bad(format!("{} common names", cn.len())));
    };
    let name = cn.strip_prefix(NODE_USER_PREFIX).ok_or_else(|| bad(format!("common name {cn:?}")))?;
    if !is_dns1123_subdomain(name) {
        let mut end = name.len().min(MAX_NODE_NAME_LENGTH);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        return Err(CaError::BadNodeName { name: name[..end].to_owned() });
    }
    Ok(name)
}

/// RFC 1123 subdomain as Kubernetes validates object names: at most 253 characters of lower-case
/// alphanumeric labels (each 1–63 characters, `-` inside only) joined by `.`.
pub fn is_dns1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NODE_NAME_LENGTH
        && name.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

fn read_limited(path: &Path) -> Result<Zeroizing<Vec<u8>>, CaError> {
    use std::io::Read as _;
    let io = |source| CaError::Io { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut out = Zeroizing::new(Vec::new());
    file.take(MAX_PKI_FILE_SIZE + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > MAX_PKI_FILE_SIZE {
        return Err(CaError::BadPkiFile {
            path: path.to_owned(),
            reason: format!("larger than {MAX_PKI_FILE_SIZE} bytes"),
        });
    }
    Ok(out)
}

/// Checks that a PKI file parses as what its name says (certificate, private key or public key).
fn check_pem(path: &Path, name: &str, data: &[u8]) -> Result<(), CaError> {
    let bad = |e: openssl::error::ErrorStack| CaError::BadPkiFile { path: path.to_owned(), reason: e.to_string() };
    match extension(name) {
        "crt" => X509::from_pem(data).map(drop).map_err(bad),
        "key" => PKey::private_key_from_pem(data).map(drop).map_err(bad),
        _ => PKey::public_key_from_pem(data).map(drop).map_err(bad),
    }
}

/// The extension of one of the fixed [`CONTROL_PLANE_FILES`] names (all lower case, by construction).
fn extension(name: &str) -> &str {
    Path::new(name).extension().and_then(std::ffi::OsStr::to_str).unwrap_or_default()
}

/// Writes a fresh kubeadm-layout PKI into `dir` (what `kubeadm init phase certs` + `kubeadm init phase sa`
/// would create, for the files this module reads): three self-signed CAs (EC P-256, ten years) with their
/// keys, and an RSA-2048 service-account key pair. Keys are written with mode 0600. For the local demo and
/// tests, where no kubeadm runs; existing files are overwritten.
pub fn generate_pki(dir: &Path) -> Result<(), CaError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let write = |name: &str, data: &[u8]| -> Result<(), CaError> {
        use std::io::Write as _;
        let path = dir.join(name);
        let io = |source| CaError::Io { path: path.clone(), source };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mode = if extension(name) == "key" { 0o600 } else { 0o644 };
        let mut f =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&path).map_err(io)?;
        f.write_all(data).map_err(io)
    };
    for (prefix, cn) in [("ca", "kubernetes"), ("front-proxy-ca", "front-proxy-ca"), ("etcd/ca", "etcd-ca")] {
        let (cert, key) = self_signed_ca(cn).map_err(signing)?;
        write(&format!("{prefix}.crt"), &cert.to_pem().map_err(signing)?)?;
        write(&format!("{prefix}.key"), &Zeroizing::new(key.private_key_to_pem_pkcs8().map_err(signing)?))?;
    }
    let sa = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).map_err(signing)?).map_err(signing)?;
    write("sa.key", &Zeroizing::new(sa.private_key_to_pem_pkcs8().map_err(signing)?))?;
    write("sa.pub", &sa.public_key_to_pem().map_err(signing)?)?;
    Ok(())
}

/// A self-signed CA certificate (EC P-256, ten years, SHA-256) and its key.
fn self_signed_ca(cn: &str) -> Result<(X509, PKey<Private>), openssl::error::ErrorStack> {
    const TEN_YEARS: u32 = 3650;
    let group = openssl::ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, cn)?;
    let name = name.build();
    let mut b = X509::builder()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&key)?;
    let (not_before, not_after) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(TEN_YEARS)?);
    b.set_not_before(&not_before)?;
    b.set_not_after(&not_after)?;
    b.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    b.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().digital_signature().build()?)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(ski)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok((b.build(), key))
}

#[cfg(test)]
#[path = "ca_test.rs"]
mod tests;
