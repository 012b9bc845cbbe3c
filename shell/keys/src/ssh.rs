//! The emergency SSH CA (join.API fields 11 and 12, as Constellation fills them).
//!
//! The CA is an Ed25519 key whose 32-byte seed is the key service's data key [`SSH_CA_KEY_ID`] — derived
//! from the master secret, so every join service replica (and an operator holding the master secret) has
//! the same CA without storing it. A joining node sends its SSH host public key (`host_public_key`, SSH wire
//! format (RFC 4253 §6.6) or an `authorized_keys` line) and principals; it receives the CA's public key
//! (`authorized_ca_public_key`) and an OpenSSH host certificate for its key (`host_certificate`), both as
//! `authorized_keys` lines.
//!
//! The certificate follows OpenSSH's PROTOCOL.certkeys: `<keytype>-cert-v01@openssh.com`, a random nonce,
//! the host key's own fields, a random serial, type 2 (host), key id `attest-join:<nodename>`, the
//! principals, validity from [`CLOCK_SKEW`] ago for [`HOST_CERT_VALIDITY`], no critical options or
//! extensions, and an Ed25519 signature by the CA. An empty principal list would make a host certificate
//! valid for *every* host name, so the node name is used when the request names none.
//!
//! # Which principals a node may claim
//!
//! Only its own names: its node name (the one its kubelet CSR names, which the join service checks) and
//! `<node name>.<domain>` for each domain the service is configured with. Anything else — another node's
//! name, an IP address the service cannot check, a wildcard (`*`, `?`: OpenSSH matches host principals as
//! patterns), a negation (`!`) — is refused, so one attested node cannot obtain a host certificate that
//! lets it impersonate another host.
//!
//! # Why not the `ssh-key` crate
//!
//! The encoding here is the SSH wire format's strings and integers (≈ 100 lines) around one OpenSSL Ed25519
//! signature, and a test has `ssh-keygen` parse and check what it issues. `ssh-key` 0.6 would replace those
//! lines but, to sign, brings its own Ed25519 (`ed25519` feature: curve25519-dalek, ed25519-dalek) plus
//! ssh-encoding, ssh-cipher, cipher and pem-rfc7468 — 37 crates in its tree, about 20 of them new to the join
//! service, and 14.6 s of clean build on this 2-core machine (measured in a scratch crate, `cargo build`,
//! load ≈ 3) — and a second Ed25519 implementation next to OpenSSL's, which the join service already uses for
//! the kubelet CA. Measured against ≈ 100 tested lines, that is kept out; revisit if more SSH formats are
//! needed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use openssl::pkey::{Id, PKey, Private};
use zeroize::Zeroizing;

/// The data key id of the SSH CA seed (Constellation's `ca_emergency_ssh`).
pub const SSH_CA_KEY_ID: &str = "ca_emergency_ssh";
/// Length of the SSH CA seed (an Ed25519 private key seed).
pub const SSH_CA_SEED_LENGTH: usize = 32;
/// Validity of host certificates.
pub const HOST_CERT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How far in the past `valid after` is set.
pub const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);
/// Largest host public key accepted, in bytes (an RSA-8192 key is ≈ 1.1 KiB).
pub const MAX_HOST_KEY_SIZE: usize = 4096;
/// Most principals in one certificate.
pub const MAX_PRINCIPALS: usize = 32;
/// Longest principal, in bytes (a DNS name).
pub const MAX_PRINCIPAL_LENGTH: usize = 253;
/// Smallest RSA host key accepted, in bits.
pub const MIN_RSA_HOST_KEY_BITS: usize = 2048;

/// Why a host key or principal list was refused, or the CA could not sign.
#[derive(Debug, PartialEq, Eq)]
pub enum SshError {
    /// The host key is larger than [`MAX_HOST_KEY_SIZE`].
    HostKeyTooLarge,
    /// The host key is not a well-formed SSH public key of a supported type.
    BadHostKey {
        /// What is wrong.
        reason: &'static str,
    },
    /// A principal is empty, too long, contains whitespace, commas, control or pattern characters, or is not
    /// one of the node's own names; or there are too many.
    BadPrincipals {
        /// What is wrong.
        reason: &'static str,
    },
    /// The CA key could not be made or could not sign (OpenSSL's reason).
    Ca {
        /// OpenSSL's reason.
        reason: String,
    },
}

impl std::fmt::Display for SshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SshError::HostKeyTooLarge => write!(f, "host public key larger than {MAX_HOST_KEY_SIZE} bytes"),
            SshError::BadHostKey { reason } => write!(f, "host public key: {reason}"),
            SshError::BadPrincipals { reason } => write!(f, "host certificate principals: {reason}"),
            SshError::Ca { reason } => write!(f, "SSH CA: {reason}"),
        }
    }
}

impl std::error::Error for SshError {}

/// The SSH CA for one seed.
pub struct SshCa {
    key: PKey<Private>,
    public: [u8; 32],
}

impl std::fmt::Debug for SshCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshCa").field("public", &hex::encode(self.public)).finish_non_exhaustive()
    }
}

/// The SSH CA of the last seed the key service returned, prepared once: the seed is the same for every
/// join of a cluster (derived from the master secret), so the Ed25519 key and its OpenSSL object are built
/// once instead of per ticket. A different seed (a new master secret) replaces it.
#[derive(Debug, Default)]
pub struct SshCaCache {
    /// SHA-256 of the seed and its CA.
    last: std::sync::Mutex<Option<([u8; 32], std::sync::Arc<SshCa>)>>,
}

impl SshCaCache {
    /// The CA of `seed` ([`SshCa::from_seed`]), from the cache when the seed is the cached one.
    pub fn get(&self, seed: &[u8]) -> Result<std::sync::Arc<SshCa>, SshError> {
        let id = openssl::sha::sha256(seed);
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached, ca)) = &*last
            && *cached == id
        {
            return Ok(std::sync::Arc::clone(ca));
        }
        let ca = std::sync::Arc::new(SshCa::from_seed(seed)?);
        *last = Some((id, std::sync::Arc::clone(&ca)));
        Ok(ca)
    }
}

#[allow(clippy::needless_pass_by_value)] // a `map_err` adapter
fn ca_error(e: openssl::error::ErrorStack) -> SshError {
    SshError::Ca { reason: e.to_string() }
}

impl SshCa {
    /// The CA whose Ed25519 seed is `seed` ([`SSH_CA_SEED_LENGTH`] bytes).
    pub fn from_seed(seed: &[u8]) -> Result<SshCa, SshError> {
        if seed.len() != SSH_CA_SEED_LENGTH {
            return Err(SshError::Ca { reason: format!("seed of {} bytes, need {SSH_CA_SEED_LENGTH}", seed.len()) });
        }
        let key = PKey::private_key_from_raw_bytes(seed, Id::ED25519).map_err(ca_error)?;
        let raw = key.raw_public_key().map_err(ca_error)?;
        let public: [u8; 32] =
            raw.try_into().map_err(|_| SshError::Ca { reason: "Ed25519 public key length".into() })?;
        Ok(SshCa { key, public })
    }

    /// The CA public key in SSH wire format.
    fn public_wire(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(51);
        put_string(&mut out, b"ssh-ed25519");
        put_string(&mut out, &self.public);
        out
    }

    /// The CA public key as an `authorized_keys` line (`ssh-ed25519 AAAA…\n`), for `@cert-authority`.
    pub fn authorized_key(&self) -> Vec<u8> {
        format!("ssh-ed25519 {}\n", base64::engine::general_purpose::STANDARD.encode(self.public_wire())).into_bytes()
    }

    /// A host certificate for `host_key` (wire format or `authorized_keys` line) with `principals` (the node
    /// name when empty), as an `authorized_keys` line. Each principal must be `node_name` or
    /// `<node_name>.<domain>` for one of `domains` (see the [module docs](self)).
    pub fn sign_host_key(
        &self,
        host_key: &[u8],
        principals: &[String],
        node_name: &str,
        domains: &[String],
    ) -> Result<Vec<u8>, SshError> {
        let wire = parse_host_key(host_key)?;
        let (key_type, fields) = split_key(&wire)?;
        let principals = check_principals(principals, node_name, domains)?;
        let cert_type = format!("{key_type}-cert-v01@openssh.com");

        let mut nonce = [0u8; 32];
        let mut serial = [0u8; 8];
        openssl::rand::rand_bytes(&mut nonce).map_err(ca_error)?;
        openssl::rand::rand_bytes(&mut serial).map_err(ca_error)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());

        let mut cert = Vec::with_capacity(wire.len() + 512);
        put_string(&mut cert, cert_type.as_bytes());
        put_string(&mut cert, &nonce);
        cert.extend_from_slice(fields);
        cert.extend_from_slice(&serial);
        cert.extend_from_slice(&2u32.to_be_bytes()); // SSH2_CERT_TYPE_HOST
        put_string(&mut cert, format!("attest-join:{node_name}").as_bytes());
        let mut packed = Vec::new();
        for p in &principals {
            put_string(&mut packed, p.as_bytes());
        }
        put_string(&mut cert, &packed);
        cert.extend_from_slice(&now.saturating_sub(CLOCK_SKEW.as_secs()).to_be_bytes());
        cert.extend_from_slice(&now.saturating_add(HOST_CERT_VALIDITY.as_secs()).to_be_bytes());
        put_string(&mut cert, b""); // critical options
        put_string(&mut cert, b""); // extensions
        put_string(&mut cert, b""); // reserved
        put_string(&mut cert, &self.public_wire());
        let signature = openssl::sign::Signer::new_without_digest(&self.key)
            .and_then(|mut s| s.sign_oneshot_to_vec(&cert))
            .map_err(ca_error)?;
        let mut sig_blob = Vec::with_capacity(83);
        put_string(&mut sig_blob, b"ssh-ed25519");
        put_string(&mut sig_blob, &signature);
        put_string(&mut cert, &sig_blob);
        Ok(format!("{cert_type} {}\n", base64::engine::general_purpose::STANDARD.encode(&cert)).into_bytes())
    }
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(s);
}

/// Reads one SSH `string` from `input`.
fn take_string<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], SshError> {
    let bad = SshError::BadHostKey { reason: "truncated" };
    let (len, rest) = input.split_first_chunk::<4>().ok_or(bad)?;
    let len = u32::from_be_bytes(*len) as usize;
    if rest.len() < len {
        return Err(SshError::BadHostKey { reason: "truncated" });
    }
    let (s, rest) = rest.split_at(len);
    *input = rest;
    Ok(s)
}

/// The wire-format key from wire bytes or an `authorized_keys` line.
fn parse_host_key(input: &[u8]) -> Result<Zeroizing<Vec<u8>>, SshError> {
    if input.len() > MAX_HOST_KEY_SIZE {
        return Err(SshError::HostKeyTooLarge);
    }
    if input.is_empty() {
        return Err(SshError::BadHostKey { reason: "empty" });
    }
    // Wire format starts with a big-endian length (a key type is short, so the first byte is 0).
    if input[0] == 0 {
        return Ok(Zeroizing::new(input.to_vec()));
    }
    let text =
        std::str::from_utf8(input).map_err(|_| SshError::BadHostKey { reason: "neither wire format nor text" })?;
    let mut parts = text.split_ascii_whitespace();
    let (Some(key_type), Some(b64)) = (parts.next(), parts.next()) else {
        return Err(SshError::BadHostKey { reason: "an authorized_keys line is `type base64 [comment]`" });
    };
    let wire = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| SshError::BadHostKey { reason: "invalid base64" })?;
    let mut cursor = &wire[..];
    if take_string(&mut cursor)? != key_type.as_bytes() {
        return Err(SshError::BadHostKey { reason: "the line's key type differs from the encoded one" });
    }
    Ok(Zeroizing::new(wire))
}

/// Splits a wire-format key into its type and the raw bytes of its fields, checking the fields.
fn split_key(wire: &[u8]) -> Result<(&str, &[u8]), SshError> {
    let bad = |reason| SshError::BadHostKey { reason };
    let mut cursor = wire;
    let key_type = take_string(&mut cursor)?;
    let fields = cursor;
    let key_type = std::str::from_utf8(key_type).map_err(|_| bad("key type is not text"))?;
    match key_type {
        "ssh-ed25519" => {
            if take_string(&mut cursor)?.len() != 32 {
                return Err(bad("an Ed25519 key is 32 bytes"));
            }
        }
        "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp521" => {
            let curve = take_string(&mut cursor)?;
            let point = take_string(&mut cursor)?;
            let (name, coord) = match key_type {
                "ecdsa-sha2-nistp256" => ("nistp256", 32),
                "ecdsa-sha2-nistp384" => ("nistp384", 48),
                _ => ("nistp521", 66),
            };
            if curve != name.as_bytes() {
                return Err(bad("ECDSA curve name does not match the key type"));
            }
            if point.len() != 1 + 2 * coord || point[0] != 4 {
                return Err(bad("ECDSA point is not an uncompressed point of the curve"));
            }
        }
        "ssh-rsa" => {
            let _e = take_string(&mut cursor)?;
            let n = take_string(&mut cursor)?;
            let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
            if bits < MIN_RSA_HOST_KEY_BITS {
                return Err(bad("RSA host keys must have at least 2048 bits"));
            }
        }
        _ => return Err(bad("unsupported key type (ssh-ed25519, ecdsa-sha2-nistp*, ssh-rsa)")),
    }
    if !cursor.is_empty() {
        return Err(bad("trailing bytes after the key"));
    }
    Ok((key_type, fields))
}

fn check_principals(principals: &[String], node_name: &str, domains: &[String]) -> Result<Vec<String>, SshError> {
    if principals.len() > MAX_PRINCIPALS {
        return Err(SshError::BadPrincipals { reason: "too many" });
    }
    let list: Vec<String> = if principals.is_empty() { vec![node_name.to_owned()] } else { principals.to_vec() };
    for p in &list {
        if p.is_empty() || p.len() > MAX_PRINCIPAL_LENGTH {
            return Err(SshError::BadPrincipals { reason: "a principal is empty or longer than 253 bytes" });
        }
        if !p.bytes().all(|b| b.is_ascii_graphic() && b != b',') {
            return Err(SshError::BadPrincipals { reason: "a principal contains whitespace, commas or non-ASCII" });
        }
        if p.bytes().any(|b| matches!(b, b'*' | b'?' | b'!')) {
            return Err(SshError::BadPrincipals { reason: "a principal contains a pattern character (*, ?, !)" });
        }
        let own = p == node_name
            || p.strip_prefix(node_name)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|domain| domains.iter().any(|d| d == domain));
        if !own {
            return Err(SshError::BadPrincipals {
                reason: "a principal is not the node's own name (its node name, or <node name>.<configured domain>)",
            });
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ssh-keygen parses (and checks the CA signature of) what we issue.
    #[test]
    fn ssh_keygen_accepts_the_certificate() {
        let tmp = attest_test_support::TempDir::new("ssh");
        let dir = tmp.path();
        let ca = SshCa::from_seed(&[7u8; 32]).unwrap();
        for key_type in ["ed25519", "ecdsa", "rsa"] {
            let key = dir.join(format!("host_{key_type}"));
            let status = std::process::Command::new("ssh-keygen")
                .args(["-q", "-N", "", "-t", key_type, "-f"])
                .arg(&key)
                .status();
            let Ok(status) = status else {
                println!("SKIP: ssh-keygen not available");
                return;
            };
            assert!(status.success());
            let public = std::fs::read(key.with_extension("pub")).unwrap();
            let domains = ["cluster.example".to_owned()];
            let cert = ca
                .sign_host_key(&public, &["node-1".into(), "node-1.cluster.example".into()], "node-1", &domains)
                .unwrap();
            let cert_path = dir.join(format!("host_{key_type}-cert.pub"));
            std::fs::write(&cert_path, &cert).unwrap();
            let out = std::process::Command::new("ssh-keygen").arg("-L").arg("-f").arg(&cert_path).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(text.contains("host certificate"), "{text}");
            assert!(text.contains("node-1") && text.contains("node-1.cluster.example"), "{text}");
            assert!(text.contains("Key ID: \"attest-join:node-1\""), "{text}");
            let ca_line = String::from_utf8(ca.authorized_key()).unwrap();
            let ca_b64 = ca_line.split_whitespace().nth(1).unwrap();
            let fp = std::fs::write(dir.join("ca.pub"), &ca_line).map(|()| {
                std::process::Command::new("ssh-keygen").arg("-l").arg("-f").arg(dir.join("ca.pub")).output().unwrap()
            });
            let fp = String::from_utf8(fp.unwrap().stdout).unwrap();
            let fp = fp.split_whitespace().nth(1).unwrap();
            assert!(text.contains(fp), "signing CA {fp} not in {text} ({ca_b64})");
            // Wire format works as well.
            let b64 = String::from_utf8(public).unwrap();
            let wire =
                base64::engine::general_purpose::STANDARD.decode(b64.split_whitespace().nth(1).unwrap()).unwrap();
            assert!(ca.sign_host_key(&wire, &[], "node-1", &[]).is_ok());
        }
    }

    /// A node may claim its own names only: no wildcard, no other host, no IP address it cannot prove.
    #[test]
    fn principals_are_limited_to_the_nodes_own_names() {
        let ca = SshCa::from_seed(&[3u8; 32]).unwrap();
        let mut wire = Vec::new();
        put_string(&mut wire, b"ssh-ed25519");
        put_string(&mut wire, &[9u8; 32]);
        let domains = ["cluster.example".to_owned()];
        for ok in [&["worker-1"][..], &["worker-1", "worker-1.cluster.example"], &[]] {
            let list: Vec<String> = ok.iter().map(|s| (*s).to_owned()).collect();
            assert!(ca.sign_host_key(&wire, &list, "worker-1", &domains).is_ok(), "{ok:?}");
        }
        for bad in [
            "*",
            "*.cluster.example",
            "worker-?",
            "!worker-2",
            "worker-2",
            "control-plane-1",
            "10.0.0.7",
            "worker-1.other.example",
            "worker-1.",
            "worker-10",
            "xworker-1",
            "WORKER-1",
        ] {
            let e = ca.sign_host_key(&wire, &["worker-1".into(), bad.into()], "worker-1", &domains).unwrap_err();
            assert!(matches!(e, SshError::BadPrincipals { .. }), "{bad}: {e:?}");
        }
        // Without configured domains, only the node name itself.
        assert!(ca.sign_host_key(&wire, &["worker-1.cluster.example".into()], "worker-1", &[]).is_err());
    }

    #[test]
    fn refusals() {
        let ca = SshCa::from_seed(&[1u8; 32]).unwrap();
        let mut wire = Vec::new();
        put_string(&mut wire, b"ssh-ed25519");
        put_string(&mut wire, &[9u8; 32]);
        assert!(ca.sign_host_key(&wire, &[], "n", &[]).is_ok());
        let mut trailing = wire.clone();
        trailing.push(0);
        assert!(matches!(ca.sign_host_key(&trailing, &[], "n", &[]), Err(SshError::BadHostKey { .. })));
        assert!(matches!(ca.sign_host_key(&wire[..wire.len() - 1], &[], "n", &[]), Err(SshError::BadHostKey { .. })));
        let mut dsa = Vec::new();
        put_string(&mut dsa, b"ssh-dss");
        assert!(matches!(ca.sign_host_key(&dsa, &[], "n", &[]), Err(SshError::BadHostKey { .. })));
        assert!(matches!(ca.sign_host_key(&[0; MAX_HOST_KEY_SIZE + 1], &[], "n", &[]), Err(SshError::HostKeyTooLarge)));
        for bad in [vec![String::new()], vec!["a b".into()], vec!["a,b".into()], vec!["n".into(); MAX_PRINCIPALS + 1]] {
            assert!(matches!(ca.sign_host_key(&wire, &bad, "n", &[]), Err(SshError::BadPrincipals { .. })), "{bad:?}");
        }
        assert!(SshCa::from_seed(&[0u8; 31]).is_err());
        assert_eq!(SshCa::from_seed(&[1u8; 32]).unwrap().authorized_key(), ca.authorized_key());
    }
}
