//! Bootstrap tokens (Kubernetes "Authenticating with Bootstrap Tokens"; the kubeadm conventions) and the
//! Secret that stores one.
//!
//! A token is `<token-id>.<token-secret>`, `[a-z0-9]{6}` and `[a-z0-9]{16}`. The API server knows it from a
//! Secret named `bootstrap-token-<token-id>` in `kube-system`, of type `bootstrap.kubernetes.io/token`, whose
//! data holds `token-id`, `token-secret`, `expiration` (RFC 3339; the token controller deletes the Secret
//! after it), the usages (`usage-bootstrap-authentication`, `usage-bootstrap-signing`: `"true"`) and
//! `auth-extra-groups` (kubeadm's `system:bootstrappers:kubeadm:default-node-token`, the group its RBAC
//! bindings let create and auto-approve node CSRs).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use zeroize::Zeroizing;

use super::error::K8sError;

/// Namespace of bootstrap-token Secrets.
pub const BOOTSTRAP_TOKEN_NAMESPACE: &str = "kube-system";
/// Secret type of bootstrap tokens.
pub const BOOTSTRAP_TOKEN_SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Name prefix of bootstrap-token Secrets.
pub const BOOTSTRAP_TOKEN_SECRET_PREFIX: &str = "bootstrap-token-";
/// The extra group kubeadm gives node bootstrap tokens.
pub const KUBEADM_NODE_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// Length of a token id.
pub const TOKEN_ID_LENGTH: usize = 6;
/// Length of a token secret.
pub const TOKEN_SECRET_LENGTH: usize = 16;
/// Shortest token lifetime accepted (a join needs the token for the kubelet's TLS bootstrap, seconds to
/// minutes after the ticket).
pub const MIN_TOKEN_TTL: Duration = Duration::from_secs(60);
/// Longest token lifetime accepted: kubeadm's default is 24 h; a join token should live minutes, and a
/// leaked one must expire.
pub const MAX_TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default token lifetime: long enough for a slow kubeadm join, short enough to be harmless after it.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(15 * 60);

/// The token alphabet, `[a-z0-9]`.
const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A bootstrap token. The secret is zeroized on drop and redacted in `Debug`.
pub struct BootstrapToken {
    id: String,
    secret: Zeroizing<String>,
    expiration: SystemTime,
}

impl fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BootstrapToken")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .field("expiration", &rfc3339(self.expiration))
            .finish()
    }
}

impl BootstrapToken {
    /// A fresh random token expiring `ttl` from now. `ttl` is clamped to
    /// [`MIN_TOKEN_TTL`]`..=`[`MAX_TOKEN_TTL`].
    pub fn generate(ttl: Duration) -> Result<BootstrapToken, K8sError> {
        let ttl = ttl.clamp(MIN_TOKEN_TTL, MAX_TOKEN_TTL);
        // Whole seconds: the Secret carries RFC 3339 without fractions.
        let now = UNIX_EPOCH + Duration::from_secs(unix_secs(SystemTime::now()));
        Ok(BootstrapToken {
            id: random_string(TOKEN_ID_LENGTH)?.to_string(),
            secret: random_string(TOKEN_SECRET_LENGTH)?,
            expiration: now + ttl,
        })
    }

    /// The token id (public: it names the Secret).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The token secret.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// When the token expires.
    pub fn expiration(&self) -> SystemTime {
        self.expiration
    }

    /// `<token-id>.<token-secret>`, as `kubeadm join --token` takes it.
    pub fn token(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{}.{}", self.id, self.secret.as_str()))
    }

    /// The Secret's name, `bootstrap-token-<token-id>`.
    pub fn secret_name(&self) -> String {
        secret_name(&self.id)
    }

    /// The Secret manifest (a `v1` Secret as JSON, data base64-encoded as the API expects). Holds the token
    /// secret: zeroized on drop.
    pub fn secret_manifest(&self) -> Zeroizing<Vec<u8>> {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let manifest = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.secret_name(),
                "namespace": BOOTSTRAP_TOKEN_NAMESPACE,
                "labels": { "app.kubernetes.io/managed-by": "attest-join-service" },
            },
            "type": BOOTSTRAP_TOKEN_SECRET_TYPE,
            "data": {
                "description": b64("attest join service: token for one node join"),
                "token-id": b64(&self.id),
                "token-secret": b64(&self.secret),
                "expiration": b64(&rfc3339(self.expiration)),
                "usage-bootstrap-authentication": b64("true"),
                "usage-bootstrap-signing": b64("true"),
                "auth-extra-groups": b64(KUBEADM_NODE_TOKEN_GROUP),
            },
        });
        let mut out = Zeroizing::new(serde_json::to_vec_pretty(&manifest).unwrap_or_default());
        out.push(b'\n');
        out
    }
}

/// The Secret name of token `id`.
pub fn secret_name(id: &str) -> String {
    format!("{BOOTSTRAP_TOKEN_SECRET_PREFIX}{id}")
}

/// Whether `id` is a well-formed token id (`[a-z0-9]{6}`).
pub fn is_valid_token_id(id: &str) -> bool {
    id.len() == TOKEN_ID_LENGTH && id.bytes().all(|b| ALPHABET.contains(&b))
}

/// `len` characters drawn uniformly from [`ALPHABET`] (rejection sampling: bytes ≥ 252 = 7 × 36 are
/// redrawn, so there is no modulo bias).
fn random_string(len: usize) -> Result<Zeroizing<String>, K8sError> {
    const LIMIT: u8 = 252;
    let mut out = Zeroizing::new(String::with_capacity(len));
    let mut buf = Zeroizing::new([0u8; 32]);
    while out.len() < len {
        openssl::rand::rand_bytes(buf.as_mut())
            .map_err(|e| K8sError::Config { reason: format!("random bytes: {e}") })?;
        for &b in buf.iter().filter(|&&b| b < LIMIT) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(b % 36)]));
        }
    }
    Ok(out)
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// RFC 3339 UTC with whole seconds (`2025-06-01T12:00:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = unix_secs(t);
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of day `z` since 1970-01-01 (the era arithmetic of H. Hinnant's
/// "chrono-compatible low-level date algorithms").
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn tokens_follow_the_kubeadm_format() {
        let t = BootstrapToken::generate(DEFAULT_TOKEN_TTL).unwrap();
        assert!(is_valid_token_id(t.id()));
        assert_eq!(t.secret().len(), TOKEN_SECRET_LENGTH);
        assert!(t.secret().bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        assert_eq!(t.token().as_str(), format!("{}.{}", t.id(), t.secret()));
        assert!(!format!("{t:?}").contains(t.secret()));
        let m: serde_json::Value = serde_json::from_slice(&t.secret_manifest()).unwrap();
        assert_eq!(m["type"], BOOTSTRAP_TOKEN_SECRET_TYPE);
        assert_eq!(m["metadata"]["name"], format!("bootstrap-token-{}", t.id()));
        let data = |k: &str| {
            let v = base64::engine::general_purpose::STANDARD.decode(m["data"][k].as_str().unwrap()).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(data("token-secret"), t.secret());
        assert_eq!(data("auth-extra-groups"), KUBEADM_NODE_TOKEN_GROUP);
        assert_eq!(data("expiration"), rfc3339(t.expiration()));
        // Lifetimes are clamped.
        let short = BootstrapToken::generate(Duration::ZERO).unwrap();
        let left = short.expiration().duration_since(SystemTime::now()).unwrap_or_default();
        assert!(left > MIN_TOKEN_TTL.saturating_sub(Duration::from_secs(2)) && left <= MIN_TOKEN_TTL);
        assert!(!is_valid_token_id("ABCDEF") && !is_valid_token_id("abc") && !is_valid_token_id("../../"));
    }
}
