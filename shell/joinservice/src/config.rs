//! The join service's static inputs: the Kubernetes version and components a node installs, the
//! measurement salt, and the checks on request fields.
//!
//! Kubernetes configuration file (JSON; the components are Constellation's `components.Component`):
//!
//! ```json
//! {
//!   "kubernetesVersion": "v1.31.1",
//!   "components": [
//!     {"url": "https://dl.k8s.io/v1.31.1/bin/linux/amd64/kubelet", "hash": "sha256:<64 hex>",
//!      "installPath": "/run/state/bin/kubelet", "extract": false}
//!   ]
//! }
//! ```

use std::path::{Path, PathBuf};

use attest_proto::components::Component;
use zeroize::Zeroizing;

/// Largest Kubernetes configuration file, in bytes.
pub const MAX_KUBERNETES_CONFIG_SIZE: u64 = 1024 * 1024;
/// Most components in the configuration.
pub const MAX_COMPONENTS: usize = 64;
/// Longest component URL or install path, in bytes.
pub const MAX_COMPONENT_FIELD_LENGTH: usize = 2048;
/// Largest measurement salt file, in bytes (the salt is 32 bytes; raw bytes are used as they are).
pub const MAX_SALT_SIZE: u64 = 1024;
/// Shortest measurement salt accepted, in bytes.
pub const MIN_SALT_LENGTH: usize = 16;

/// Why the configuration could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file's content is invalid.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Kubernetes settings that are not JSON of their shape ([`KubernetesSettings::parse`]).
    Json(serde_json::Error),
    /// A Kubernetes setting out of its bounds ([`KubernetesSettings::parse`]).
    Settings {
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ConfigError::Invalid { path, reason } => write!(f, "{}: {reason}", path.display()),
            ConfigError::Json(e) => e.fmt(f),
            ConfigError::Settings { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Json(e) => Some(e),
            Self::Invalid { .. } | Self::Settings { .. } => None,
        }
    }
}

/// The Kubernetes version and components returned to joining nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KubernetesSettings {
    /// `v<major>.<minor>.<patch>`.
    pub version: String,
    /// The components to install.
    pub components: Vec<Component>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSettings {
    kubernetes_version: String,
    #[serde(default)]
    components: Vec<RawComponent>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawComponent {
    url: String,
    hash: String,
    install_path: String,
    #[serde(default)]
    extract: bool,
}

impl KubernetesSettings {
    /// Loads and checks the configuration file.
    pub fn load(path: &Path) -> Result<KubernetesSettings, ConfigError> {
        let bytes = read_limited(path, MAX_KUBERNETES_CONFIG_SIZE)?;
        Self::parse(&bytes).map_err(|e| ConfigError::Invalid { path: path.to_owned(), reason: e.to_string() })
    }

    /// Parses and checks the JSON text.
    pub fn parse(bytes: &[u8]) -> Result<KubernetesSettings, ConfigError> {
        let bad = |reason: String| ConfigError::Settings { reason };
        let raw: RawSettings = serde_json::from_slice(bytes).map_err(ConfigError::Json)?;
        if !is_kubernetes_version(&raw.kubernetes_version) {
            return Err(bad(format!("kubernetesVersion {:?} is not v<major>.<minor>.<patch>", raw.kubernetes_version)));
        }
        if raw.components.len() > MAX_COMPONENTS {
            return Err(bad(format!("more than {MAX_COMPONENTS} components")));
        }
        let mut components = Vec::with_capacity(raw.components.len());
        for (i, c) in raw.components.into_iter().enumerate() {
            if c.url.is_empty() || c.url.len() > MAX_COMPONENT_FIELD_LENGTH || c.url.parse::<http::Uri>().is_err() {
                return Err(bad(format!("components[{i}].url is not a URL")));
            }
            if !is_hash(&c.hash) {
                return Err(bad(format!("components[{i}].hash is not sha256:<64 hex>")));
            }
            if !c.install_path.starts_with('/')
                || c.install_path.len() > MAX_COMPONENT_FIELD_LENGTH
                || c.install_path.split('/').any(|s| s == "..")
            {
                return Err(bad(format!("components[{i}].installPath must be an absolute path without `..`")));
            }
            components.push(Component { url: c.url, hash: c.hash, install_path: c.install_path, extract: c.extract });
        }
        Ok(KubernetesSettings { version: raw.kubernetes_version, components })
    }
}

fn is_kubernetes_version(v: &str) -> bool {
    v.strip_prefix('v').is_some_and(|rest| {
        let parts: Vec<_> = rest.split('.').collect();
        parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn is_hash(h: &str) -> bool {
    h.strip_prefix("sha256:").is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Loads the measurement salt: the file's bytes as they are (at least [`MIN_SALT_LENGTH`]).
pub fn load_measurement_salt(path: &Path) -> Result<Zeroizing<Vec<u8>>, ConfigError> {
    let bytes = Zeroizing::new(read_limited(path, MAX_SALT_SIZE)?);
    if bytes.len() < MIN_SALT_LENGTH {
        return Err(ConfigError::Invalid {
            path: path.to_owned(),
            reason: format!("the measurement salt has {} bytes, at least {MIN_SALT_LENGTH} needed", bytes.len()),
        });
    }
    Ok(bytes)
}

/// Whether `s` is a UUID in the canonical 8-4-4-4-12 hex form (RFC 9562 §4), either case — the form
/// `cryptsetup luksUUID` prints. Disk UUIDs are data key ids, so anything else is refused: a free-form id
/// would let a node ask for another named key (`ca_emergency_ssh`) as its "disk key".
/// Parsed by the `uuid` crate; 36 characters is only the hyphenated form (simple, braced and URN forms have
/// other lengths).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok()
}

fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ConfigError> {
    use std::io::Read as _;
    let io = |source| ConfigError::Io { path: path.to_owned(), source };
    let mut out = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(limit + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > limit {
        return Err(ConfigError::Invalid { path: path.to_owned(), reason: format!("larger than {limit} bytes") });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_settings() {
        let ok = br#"{"kubernetesVersion":"v1.31.1","components":[{"url":"https://dl.k8s.io/kubelet","hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","installPath":"/run/state/bin/kubelet","extract":false}]}"#;
        let s = KubernetesSettings::parse(ok).unwrap();
        assert_eq!(s.version, "v1.31.1");
        assert_eq!(s.components[0].install_path, "/run/state/bin/kubelet");
        for bad in [
            &br#"{"kubernetesVersion":"1.31.1"}"#[..],
            br#"{"kubernetesVersion":"v1.31"}"#,
            br#"{"kubernetesVersion":"v1.31.1","extra":1}"#,
            br#"{"kubernetesVersion":"v1.31.1","components":[{"url":"u","hash":"md5:00","installPath":"/x"}]}"#,
            br#"{"kubernetesVersion":"v1.31.1","components":[{"url":"https://x/y","hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","installPath":"/a/../etc"}]}"#,
        ] {
            assert!(KubernetesSettings::parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn uuids() {
        assert!(is_uuid("0f6a3c1e-8d2b-4f7a-9c3e-1b2d3e4f5a6b"));
        assert!(is_uuid("0F6A3C1E-8D2B-4F7A-9C3E-1B2D3E4F5A6B"));
        for bad in [
            "",
            "measurementSecret",
            "ca_emergency_ssh",
            "0f6a3c1e8d2b4f7a9c3e1b2d3e4f5a6b",
            "0f6a3c1e-8d2b-4f7a-9c3e-1b2d3e4f5a6g",
            "0f6a3c1e8-d2b-4f7a-9c3e-1b2d3e4f5a6b",
            "{0f6a3c1e-8d2b-4f7a-9c3e-1b2d3e4f5a6b}",
            "urn:uuid:0f6a3c1e-8d2b-4f7a-9c3e-1b2d3e4f5a6b",
        ] {
            assert!(!is_uuid(bad), "{bad}");
        }
    }
}
