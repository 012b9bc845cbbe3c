//! Checking an `init.API/Init` request: the init secret against its stored hash, then every field against a
//! named limit. Nothing here has side effects, so a refused request leaves the node exactly as it was (in
//! particular, unlocked).
//!
//! # The init secret
//!
//! The node stores only SHA-256(init secret), hex, in a file given by flag ([`InitSecretHash::load`]); the
//! request's secret is hashed and the two digests compared in constant time (`CRYPTO_memcmp`). Comparing
//! digests rather than the secrets also makes the comparison independent of the secret's length. The secret
//! is high-entropy (the CLI generates 32 random bytes), so a fast hash is enough; a slow KDF would only
//! matter for a human-chosen password. A wrong secret is `PERMISSION_DENIED` and is checked **before**
//! anything else, so an unauthenticated caller learns nothing about the other fields or the node's state.
//!
//! # Fields
//!
//! | field | rule |
//! |---|---|
//! | `init_secret` | 1..=[`MAX_INIT_SECRET_LENGTH`] bytes, hash matches |
//! | `kms_uri` | 1..=[`MAX_KMS_URI_LENGTH`] bytes, a valid `kms://cluster-kms?key=…&salt=…` (master secret ≥ 16 bytes) |
//! | `storage_uri` | ≤ [`MAX_STORAGE_URI_LENGTH`] bytes; not used (no remote storage here) |
//! | `measurement_salt` | exactly [`MEASUREMENT_SALT_LENGTH`] bytes |
//! | `kubernetes_version` | empty (→ [`DEFAULT_KUBERNETES_VERSION`]) or `vMAJOR.MINOR.PATCH[-suffix]`, ≤ [`MAX_VERSION_LENGTH`], ≥ v1.31 (kubeadm's v1beta4) |
//! | `kubernetes_components` | ≤ [`MAX_COMPONENTS`]; url ≤ [`MAX_URL_LENGTH`]; hash `sha256:<64 hex>`; install path absolute ≤ [`MAX_PATH_LENGTH`]. Recorded, not installed (see below) |
//! | `cluster_name` | empty (→ [`DEFAULT_CLUSTER_NAME`]) or a DNS label (RFC 1123, ≤ 63) |
//! | `apiserver_cert_sans` | ≤ [`MAX_CERT_SANS`] entries, each an IP address or a DNS name (RFC 1123, ≤ 253) |
//! | `service_cidr` | empty (→ [`DEFAULT_SERVICE_CIDR`]) or `IP/prefix` with a valid prefix |
//! | `conformance_mode` | accepted, no effect |
//!
//! Installing `kubernetes_components` (downloading binaries by URL and hash) is outside this bootstrapper: the
//! node image is expected to carry kubeadm and the kubelet. The components are validated so that a malformed
//! request is still refused, and the init log says they were not installed.

use std::net::IpAddr;
use std::path::Path;

use attest_proto::init::InitRequest;

use crate::life::state::MEASUREMENT_SALT_LENGTH;
use attest_keys::MasterSecret;

/// Longest init secret accepted, in bytes.
pub(crate) const MAX_INIT_SECRET_LENGTH: usize = 1024;
/// Longest KMS URI accepted, in bytes (a 4 KiB key in base64 is ≈ 5.5 KiB).
pub(crate) const MAX_KMS_URI_LENGTH: usize = 8 * 1024;
/// Longest storage URI accepted, in bytes.
pub(crate) const MAX_STORAGE_URI_LENGTH: usize = 4096;
/// Longest Kubernetes version string, in bytes.
pub(crate) const MAX_VERSION_LENGTH: usize = 64;
/// Most Kubernetes components in one request.
pub(crate) const MAX_COMPONENTS: usize = 64;
/// Longest component URL, in bytes.
pub(crate) const MAX_URL_LENGTH: usize = 2048;
/// Longest component install path, in bytes (PATH_MAX).
pub(crate) const MAX_PATH_LENGTH: usize = 4096;
/// Most extra API server certificate SANs.
pub(crate) const MAX_CERT_SANS: usize = 64;
/// Longest DNS name (RFC 1035 §2.3.4).
pub(crate) const MAX_DNS_NAME_LENGTH: usize = 253;
/// Longest DNS label (RFC 1035 §2.3.4), also the longest cluster name.
pub(crate) const MAX_DNS_LABEL_LENGTH: usize = 63;
/// Kubernetes version used when the request names none.
pub(crate) const DEFAULT_KUBERNETES_VERSION: &str = "v1.31.1";
/// Cluster name used when the request names none (kubeadm's default).
pub(crate) const DEFAULT_CLUSTER_NAME: &str = "kubernetes";
/// Service subnet used when the request names none (kubeadm's default).
pub(crate) const DEFAULT_SERVICE_CIDR: &str = "10.96.0.0/12";
/// Largest init-secret hash file, in bytes.
pub(crate) const MAX_HASH_FILE_SIZE: u64 = 1024;

/// Why an init request is refused. No variant carries any byte of a secret.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The init secret does not match the stored hash (or is empty / too long).
    WrongInitSecret,
    /// A field breaks its rule.
    InvalidField {
        /// The proto field name.
        field: &'static str,
        /// The rule it breaks.
        reason: String,
    },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::WrongInitSecret => f.write_str("init secret does not match"),
            RequestError::InvalidField { field, reason } => write!(f, "invalid {field}: {reason}"),
        }
    }
}

impl std::error::Error for RequestError {}

fn invalid(field: &'static str, reason: impl Into<String>) -> RequestError {
    RequestError::InvalidField { field, reason: reason.into() }
}

/// Why the init-secret hash file cannot be used.
#[derive(Debug)]
pub enum InitSecretHashError {
    /// It cannot be read.
    Io(crate::atomic::FileError),
    /// It does not hold 64 hex digits (surrounding whitespace allowed).
    Malformed,
}

impl std::fmt::Display for InitSecretHashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitSecretHashError::Io(e) => write!(f, "init secret hash: {e}"),
            InitSecretHashError::Malformed => {
                f.write_str("init secret hash file must hold the SHA-256 of the init secret as 64 hex digits")
            }
        }
    }
}

impl std::error::Error for InitSecretHashError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Malformed => None,
        }
    }
}

/// SHA-256 of the init secret.
#[derive(Clone)]
pub struct InitSecretHash([u8; 32]);

impl std::fmt::Debug for InitSecretHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InitSecretHash(<redacted>)")
    }
}

impl InitSecretHash {
    /// The hash of `secret` (for tests and for tools that create the file).
    pub fn of(secret: &[u8]) -> InitSecretHash {
        InitSecretHash(openssl::sha::sha256(secret))
    }

    /// From hex text (64 digits, surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<InitSecretHash, InitSecretHashError> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut out).map_err(|_| InitSecretHashError::Malformed)?;
        Ok(InitSecretHash(out))
    }

    /// From a file holding the hex digest.
    pub fn load(path: &Path) -> Result<InitSecretHash, InitSecretHashError> {
        use std::io::Read;
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_HASH_FILE_SIZE).read_to_string(&mut text))
            .map_err(|source| InitSecretHashError::Io(crate::atomic::FileError { path: path.to_owned(), source }))?;
        InitSecretHash::from_hex(&text)
    }

    /// The hex digest (what the file holds).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Whether `secret` hashes to this digest (constant-time comparison of the digests).
    pub fn matches(&self, secret: &[u8]) -> bool {
        if secret.is_empty() || secret.len() > MAX_INIT_SECRET_LENGTH {
            return false;
        }
        openssl::memcmp::eq(&openssl::sha::sha256(secret), &self.0)
    }
}

/// A checked init request.
#[derive(Debug)]
pub(crate) struct ValidInit {
    /// The master secret from `kms_uri`.
    pub master_secret: MasterSecret,
    /// The measurement salt.
    pub measurement_salt: [u8; MEASUREMENT_SALT_LENGTH],
    /// The Kubernetes version (defaulted).
    pub kubernetes_version: String,
    /// The cluster name (defaulted).
    pub cluster_name: String,
    /// Extra API server certificate SANs.
    pub apiserver_cert_sans: Vec<String>,
    /// The service subnet (defaulted).
    pub service_cidr: String,
    /// How many components the request listed (not installed).
    pub component_count: usize,
}

/// Whether `s` is a DNS label (RFC 1123: lower-case letters, digits, `-`, not at the ends).
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_DNS_LABEL_LENGTH
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS name (dot-separated DNS labels, ≤ 253 bytes); a leading `*.` wildcard is allowed.
pub(crate) fn is_dns_name(s: &str) -> bool {
    let s = s.strip_prefix("*.").unwrap_or(s);
    !s.is_empty() && s.len() <= MAX_DNS_NAME_LENGTH && s.split('.').all(is_dns_label)
}

fn check_version(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else { return false };
    let (core, suffix) = rest.split_once(['-', '+']).map_or((rest, ""), |(c, s)| (c, s));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
        && suffix.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// Whether `s` is `IP/prefix` with a prefix valid for the address family.
pub(crate) fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else { return false };
    let (Ok(ip), Ok(prefix)) = (ip.parse::<IpAddr>(), prefix.parse::<u8>()) else { return false };
    prefix <= if ip.is_ipv4() { 32 } else { 128 }
}

/// Checks the init secret, then every other field (rules in the module docs).
pub(crate) fn validate(request: &InitRequest, hash: &InitSecretHash) -> Result<ValidInit, RequestError> {
    if !hash.matches(&request.init_secret) {
        return Err(RequestError::WrongInitSecret);
    }
    if request.kms_uri.is_empty() {
        return Err(invalid("kms_uri", "empty"));
    }
    if request.kms_uri.len() > MAX_KMS_URI_LENGTH {
        return Err(invalid("kms_uri", format!("longer than {MAX_KMS_URI_LENGTH} bytes")));
    }
    // MasterSecretError never contains secret bytes.
    let master_secret = MasterSecret::from_kms_uri(&request.kms_uri).map_err(|e| invalid("kms_uri", e.to_string()))?;
    if request.storage_uri.len() > MAX_STORAGE_URI_LENGTH {
        return Err(invalid("storage_uri", format!("longer than {MAX_STORAGE_URI_LENGTH} bytes")));
    }
    let measurement_salt: [u8; MEASUREMENT_SALT_LENGTH] =
        request.measurement_salt.as_slice().try_into().map_err(|_| {
            invalid(
                "measurement_salt",
                format!("{} bytes, exactly {MEASUREMENT_SALT_LENGTH} required", request.measurement_salt.len()),
            )
        })?;
    let kubernetes_version = if request.kubernetes_version.is_empty() {
        DEFAULT_KUBERNETES_VERSION.to_owned()
    } else if request.kubernetes_version.len() <= MAX_VERSION_LENGTH && check_version(&request.kubernetes_version) {
        request.kubernetes_version.clone()
    } else {
        return Err(invalid("kubernetes_version", "not vMAJOR.MINOR.PATCH[-suffix]"));
    };
    crate::cluster::kubeadm::check_kubernetes_version(&kubernetes_version)
        .map_err(|e| invalid("kubernetes_version", e))?;
    if request.kubernetes_components.len() > MAX_COMPONENTS {
        return Err(invalid("kubernetes_components", format!("more than {MAX_COMPONENTS}")));
    }
    for c in &request.kubernetes_components {
        if c.url.is_empty() || c.url.len() > MAX_URL_LENGTH {
            return Err(invalid("kubernetes_components.url", format!("empty or longer than {MAX_URL_LENGTH} bytes")));
        }
        let hash_ok =
            c.hash.strip_prefix("sha256:").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !hash_ok {
            return Err(invalid("kubernetes_components.hash", "not sha256:<64 hex digits>"));
        }
        if !c.install_path.starts_with('/') || c.install_path.len() > MAX_PATH_LENGTH {
            return Err(invalid("kubernetes_components.install_path", "not an absolute path of at most 4096 bytes"));
        }
    }
    let cluster_name = if request.cluster_name.is_empty() {
        DEFAULT_CLUSTER_NAME.to_owned()
    } else if is_dns_label(&request.cluster_name) {
        request.cluster_name.clone()
    } else {
        return Err(invalid("cluster_name", "not a DNS label (a-z, 0-9, '-', at most 63)"));
    };
    if request.apiserver_cert_sans.len() > MAX_CERT_SANS {
        return Err(invalid("apiserver_cert_sans", format!("more than {MAX_CERT_SANS} entries")));
    }
    for san in &request.apiserver_cert_sans {
        if san.parse::<IpAddr>().is_err() && !is_dns_name(san) {
            return Err(invalid("apiserver_cert_sans", "an entry is neither an IP address nor a DNS name"));
        }
    }
    let service_cidr = if request.service_cidr.is_empty() {
        DEFAULT_SERVICE_CIDR.to_owned()
    } else if request.service_cidr.len() <= 64 && is_cidr(&request.service_cidr) {
        request.service_cidr.clone()
    } else {
        return Err(invalid("service_cidr", "not IP/prefix"));
    };
    Ok(ValidInit {
        master_secret,
        measurement_salt,
        kubernetes_version,
        cluster_name,
        apiserver_cert_sans: request.apiserver_cert_sans.clone(),
        service_cidr,
        component_count: request.kubernetes_components.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_proto::components::Component;

    pub(crate) const KMS: &str = "kms://cluster-kms?key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=&salt=AQ==";

    fn request() -> InitRequest {
        InitRequest {
            kms_uri: KMS.into(),
            measurement_salt: vec![3; 32],
            init_secret: b"init-secret".to_vec(),
            cluster_name: "demo".into(),
            apiserver_cert_sans: vec!["10.0.0.1".into(), "api.example.com".into(), "*.demo.local".into()],
            ..InitRequest::default()
        }
    }

    #[test]
    fn hash_file_and_constant_time_match() {
        let h = InitSecretHash::of(b"init-secret");
        assert!(h.matches(b"init-secret"));
        assert!(!h.matches(b"init-secret2"));
        assert!(!h.matches(b""));
        let parsed = InitSecretHash::from_hex(&format!("  {}\n", h.to_hex())).unwrap();
        assert!(parsed.matches(b"init-secret"));
        assert!(InitSecretHash::from_hex("abc").is_err());
        assert_eq!(format!("{h:?}"), "InitSecretHash(<redacted>)");
    }

    #[test]
    fn accepts_and_defaults() {
        let v = validate(&request(), &InitSecretHash::of(b"init-secret")).unwrap();
        assert_eq!(v.kubernetes_version, DEFAULT_KUBERNETES_VERSION);
        assert_eq!(v.service_cidr, DEFAULT_SERVICE_CIDR);
        assert_eq!(v.cluster_name, "demo");
        assert_eq!(v.measurement_salt, [3; 32]);
        let mut r = request();
        r.cluster_name.clear();
        r.kubernetes_version = "v1.32.4-rc.1".into();
        r.service_cidr = "fd00::/108".into();
        let v = validate(&r, &InitSecretHash::of(b"init-secret")).unwrap();
        assert_eq!(v.cluster_name, DEFAULT_CLUSTER_NAME);
        assert_eq!(v.kubernetes_version, "v1.32.4-rc.1");
        // kubeadm's v1beta4 configuration needs Kubernetes ≥ 1.31: older versions are refused before the lock.
        r.kubernetes_version = "v1.30.4".into();
        assert!(validate(&r, &InitSecretHash::of(b"init-secret")).unwrap_err().to_string().contains("v1beta4"));
    }

    #[test]
    fn wrong_secret_comes_first() {
        let mut r = request();
        r.measurement_salt.clear(); // also invalid, but the secret is checked first
        assert!(matches!(validate(&r, &InitSecretHash::of(b"other")), Err(RequestError::WrongInitSecret)));
    }

    #[test]
    fn every_field_rule() {
        let h = InitSecretHash::of(b"init-secret");
        let field_of = |r: InitRequest| match validate(&r, &h) {
            Err(RequestError::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        type Mutation = Box<dyn Fn(&mut InitRequest)>;
        let cases: Vec<(&str, Mutation)> = vec![
            ("kms_uri", Box::new(|r| r.kms_uri.clear())),
            ("kms_uri", Box::new(|r| r.kms_uri = "kms://cluster-kms?key=AAAA".into())),
            ("kms_uri", Box::new(|r| r.kms_uri = "x".repeat(MAX_KMS_URI_LENGTH + 1))),
            ("storage_uri", Box::new(|r| r.storage_uri = "x".repeat(MAX_STORAGE_URI_LENGTH + 1))),
            ("measurement_salt", Box::new(|r| r.measurement_salt = vec![0; 31])),
            ("measurement_salt", Box::new(|r| r.measurement_salt = vec![0; 33])),
            ("kubernetes_version", Box::new(|r| r.kubernetes_version = "1.31".into())),
            ("kubernetes_version", Box::new(|r| r.kubernetes_version = "v1.31.1; rm -rf /".into())),
            ("kubernetes_components", Box::new(|r| r.kubernetes_components = vec![Component::default(); 65])),
            (
                "kubernetes_components.hash",
                Box::new(|r| {
                    r.kubernetes_components =
                        vec![Component { url: "https://x".into(), hash: "md5:00".into(), ..Component::default() }];
                }),
            ),
            (
                "kubernetes_components.install_path",
                Box::new(|r| {
                    r.kubernetes_components = vec![Component {
                        url: "https://x".into(),
                        hash: format!("sha256:{}", "0".repeat(64)),
                        install_path: "relative".into(),
                        extract: false,
                    }];
                }),
            ),
            ("cluster_name", Box::new(|r| r.cluster_name = "Demo".into())),
            ("cluster_name", Box::new(|r| r.cluster_name = "a".repeat(64))),
            ("apiserver_cert_sans", Box::new(|r| r.apiserver_cert_sans = vec!["bad name!".into()])),
            ("apiserver_cert_sans", Box::new(|r| r.apiserver_cert_sans = vec!["a.b".into(); MAX_CERT_SANS + 1])),
            ("service_cidr", Box::new(|r| r.service_cidr = "10.96.0.0/33".into())),
            ("service_cidr", Box::new(|r| r.service_cidr = "10.96.0.0".into())),
        ];
        for (field, mutate) in cases {
            let mut r = request();
            mutate(&mut r);
            assert_eq!(field_of(r), field);
        }
    }

    #[test]
    fn errors_carry_no_secret() {
        let mut r = request();
        r.kms_uri = "kms://cluster-kms?key=c2VjcmV0LWJ5dGVz&salt=".into(); // 12 bytes: too short
        let e = validate(&r, &InitSecretHash::of(b"init-secret")).unwrap_err().to_string();
        assert!(!e.contains("c2VjcmV0LWJ5dGVz") && !e.contains("secret-bytes"), "{e}");
    }
}
