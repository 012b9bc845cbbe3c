//! `attest measurements sign`: stamp a measurements file with its monotonic version (and an optional expiry)
//! and sign it — the only way an operator moves the measurements forward, or back to older values (under a
//! new version: verifiers refuse a version below the one they accepted, `attest_measurements::freshness`).
//!
//! ```text
//!  FILE (map or list, any version) ─► measurementsVersion = --version (default: FILE's + 1), expires ─►
//!     OUT (pretty JSON) + OUT.sig (base64 of the DER ECDSA P-256/SHA-256 signature over OUT, as Constellation's)
//! ```
//!
//! The key is the operator's P-256 private key (PEM); the signature is checked against it before anything is
//! written. Exit statuses: 0 written; 2 unusable input (file, key, a version not above the file's own).

use super::super::input::read_file;
use super::super::{Status, UsageError};
use attest_engine::UnixTime;
use attest_measurements::freshness::parse_expires;
use attest_measurements::{Freshness, MAX_MEASUREMENTS_VERSION, SignedMeasurements};
use clap::Args;
use std::path::{Path, PathBuf};

/// `sign` arguments.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The measurements file to sign (map or release list; JSON or YAML).
    pub file: PathBuf,
    /// The operator's signing key (PEM, EC P-256 private key).
    #[arg(long)]
    pub key: PathBuf,
    /// The version to sign under (default: the file's own version + 1). Verifiers refuse a version below
    /// the highest they accepted: to go back to older values, sign them under a new, higher version.
    #[arg(long = "version", value_name = "N")]
    pub measurements_version: Option<u64>,
    /// When the signed file stops being valid (RFC 3339 UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    #[arg(long, conflicts_with = "valid_for")]
    pub expires: Option<String>,
    /// How long the signed file stays valid from now (e.g. `30d`, `12h`, `90m`, `3600s`).
    #[arg(long)]
    pub valid_for: Option<String>,
    /// The signed file to write (its signature goes to OUT.sig).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// A duration like `30d`, `12h`, `90m` or `3600s`, in seconds.
pub fn parse_duration(text: &str) -> Result<u64, UsageError> {
    let bad = || UsageError::new(format!("{text:?}: expected a number with s, m, h or d (e.g. 30d)"));
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let n: u64 = number.parse().map_err(|_| bad())?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(scale).ok_or_else(bad)
}

/// The system clock.
pub fn now() -> UnixTime {
    UnixTime::from_secs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// Loads the operator's P-256 signing key.
pub fn load_p256_key(path: &Path) -> Result<openssl::pkey::PKey<openssl::pkey::Private>, UsageError> {
    let pem = read_file(path, "signing key")?;
    let key = openssl::pkey::PKey::private_key_from_pem(&pem)
        .map_err(|e| UsageError::new(format!("{}: not a PEM private key: {e}", path.display())))?;
    let p256 = key
        .ec_key()
        .ok()
        .and_then(|k| k.group().curve_name())
        .is_some_and(|n| n == openssl::nid::Nid::X9_62_PRIME256V1);
    if !p256 {
        return Err(UsageError::new(format!("{}: not an EC P-256 key", path.display())));
    }
    Ok(key)
}

/// The DER ECDSA P-256/SHA-256 signature of `data` by `key`.
pub fn sign_der(key: &openssl::pkey::PKeyRef<openssl::pkey::Private>, data: &[u8]) -> Result<Vec<u8>, UsageError> {
    openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), key)
        .and_then(|mut s| s.sign_oneshot_to_vec(data))
        .map_err(|e| UsageError::new(format!("signing: {e}")))
}

/// Runs `attest measurements sign`.
pub fn sign(a: &SignArgs) -> Result<Status, UsageError> {
    let bytes = read_file(&a.file, "measurements file")?;
    let (document, old) = attest_measurements::parse_versioned(&bytes)
        .map_err(|e| UsageError::new(format!("{}: {e}", a.file.display())))?;
    let version =
        match a.measurements_version {
            Some(v) => v,
            None => old.version.checked_add(1).filter(|v| *v <= MAX_MEASUREMENTS_VERSION).ok_or_else(|| {
                UsageError::new("the file's version is the highest there is; give --version".to_owned())
            })?,
        };
    if version <= old.version && old.version != 0 {
        return Err(UsageError::new(format!(
            "--version {version} is not above the file's own version {}: verifiers that accepted it would refuse this",
            old.version
        )));
    }
    let expires = match (&a.expires, &a.valid_for) {
        (Some(t), _) => Some(parse_expires(t).map_err(|e| UsageError::new(format!("--expires: {e}")))?),
        (None, Some(d)) => Some(UnixTime::from_secs(now().as_secs().saturating_add(parse_duration(d)?))),
        (None, None) => None,
    };
    if expires.is_some_and(|e| e <= now()) {
        return Err(UsageError::new("the expiry is in the past".to_owned()));
    }
    let freshness = Freshness::new(version, expires).map_err(|e| UsageError::new(e.to_string()))?;
    let text = document.to_json_with(&freshness);
    let key = load_p256_key(&a.key)?;
    let signature = sign_der(&key, text.as_bytes())?;
    // Check what is written verifies under the key's public half, as every verifier will check it.
    let public = key.public_key_to_pem().map_err(|e| UsageError::new(format!("public key: {e}")))?;
    let signed = SignedMeasurements::verify_then_parse(text.as_bytes(), &signature, &public)
        .map_err(|e| UsageError::new(format!("the signed file does not verify: {e}")))?;
    let signature_b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &signature);
    let sig_path = {
        let mut name = a.output.file_name().map(std::ffi::OsStr::to_owned).unwrap_or_default();
        name.push(".sig");
        a.output.with_file_name(name)
    };
    let write = |path: &Path, data: &[u8]| {
        attest_util::fs::write_atomic(path, data, attest_util::fs::PUBLIC_FILE_MODE)
            .map_err(|e| UsageError::new(format!("{}: {e}", path.display())))
    };
    write(&a.output, text.as_bytes())?;
    write(&sig_path, format!("{signature_b64}\n").as_bytes())?;
    eprintln!(
        "attest: signed {} ({}) into {} and {}",
        a.file.display(),
        signed.freshness(),
        a.output.display(),
        sig_path.display()
    );
    Ok(Status::Accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d").unwrap(), 30 * 86_400);
        assert_eq!(parse_duration("90m").unwrap(), 5400);
        for bad in ["", "d", "10", "10w", "-1d", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
