//! Signed measurements: every consumer verifies the measurements file's detached signature before it
//! believes a single expected value, or says — explicitly, loudly — that it does not.
//!
//! ```text
//!  MeasurementsTrust::Verify { key, signature file } ──► read file + signature (size limits)
//!        │                                               └─► ECDSA P-256 over the file as read ──► parse ──► Loaded (Verified)
//!        │                                                        └─ bad / missing signature ──► TrustError (nothing parsed)
//!  MeasurementsTrust::DangerouslyUnsigned ──► read file ──► parse ──► Loaded (DangerouslyUnsigned; logged, in every verdict)
//! ```
//!
//! A service that polls its measurements file (the join service) calls [`MeasurementsTrust::load`] on every
//! change: a refused file leaves the set it already runs with in place.
//!
//! **Only forward.** A file's `measurementsVersion` and `expires` (`attest_measurements::freshness`) are read
//! from the signed bytes. [`MeasurementsTrust::load`] refuses an expired file for every consumer; a consumer
//! that keeps the highest version it accepted (the join service, in its cluster state, across restarts)
//! refuses a lower one with [`LoadedMeasurements::check_floor`]. Equal versions are accepted (a restart, a
//! re-signature); a file without a version is version 0, superseded by any versioned file.

use std::path::{Path, PathBuf};

use attest_engine::UnixTime;
use attest_measurements::{Document, Freshness, SignedMeasurements, VerifyingKey};

use super::TrustError;

/// How a measurements file is trusted.
#[derive(Clone, Debug)]
pub enum MeasurementsTrust {
    /// Verify the detached signature in `signature` (DER or base64 of DER, ECDSA P-256 / SHA-256 over the
    /// file's bytes) with `key` before parsing.
    Verify {
        /// The signer's public key.
        key: VerifyingKey,
        /// The signature file (re-read with the measurements file).
        signature: PathBuf,
    },
    /// Accept the file without a signature: the explicit waiver `--dangerously-skip-measurements-signature`,
    /// reported as [`SignatureState::DangerouslyUnsigned`].
    DangerouslyUnsigned,
}

/// Whether the measurements in use were signature-checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureState {
    /// The signature verified under the configured key.
    Verified,
    /// No signature was checked (explicit waiver).
    DangerouslyUnsigned,
}

impl SignatureState {
    /// A stable name: `verified` or `dangerously-unsigned`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::DangerouslyUnsigned => "dangerously-unsigned",
        }
    }
}

/// A measurements file as loaded under its [`MeasurementsTrust`].
#[derive(Clone, Debug)]
pub struct LoadedMeasurements {
    /// The parsed document (map or release list).
    pub document: Document,
    /// SHA-256 of the measurements file as read.
    pub file_sha256: [u8; 32],
    /// SHA-256 of the file and the signature file as read (what a poller compares to see a change).
    pub inputs_sha256: [u8; 32],
    /// Whether the signature was checked.
    pub signature: SignatureState,
    /// The file's signed version and expiry (version 0, no expiry, for a file without them).
    pub freshness: Freshness,
}

impl LoadedMeasurements {
    /// Refuses (rollback) a file whose version is below `floor`, the highest version accepted before.
    pub fn check_floor(&self, path: &Path, floor: u64) -> Result<(), TrustError> {
        if self.freshness.version < floor {
            return Err(TrustError::MeasurementsRolledBack {
                path: path.to_owned(),
                found: self.freshness.version,
                floor,
            });
        }
        Ok(())
    }

    /// Whether the file has expired at `now`.
    pub fn is_expired(&self, now: UnixTime) -> bool {
        self.freshness.is_expired(now)
    }
}

/// The system clock as a [`UnixTime`].
pub fn now() -> UnixTime {
    UnixTime::from_secs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

fn read_limited(path: &Path, limit: usize, what: &'static str) -> Result<Vec<u8>, TrustError> {
    use std::io::Read as _;
    let io = |source| TrustError::Io { what, path: path.to_owned(), source };
    let mut out = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(limit as u64 + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() > limit {
        return Err(TrustError::Invalid { what, path: path.to_owned(), reason: format!("larger than {limit} bytes") });
    }
    Ok(out)
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let provider = attest_engine::crypto::default_provider();
    let d = provider.digests.digest(attest_engine::crypto::HashAlgorithm::Sha256, parts);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_bytes());
    out
}

impl MeasurementsTrust {
    /// Verification with the public key in `public_key` (PEM, P-256) and the signature in `signature`.
    pub fn verify_with(public_key: &Path, signature: &Path) -> Result<MeasurementsTrust, TrustError> {
        let pem = read_limited(public_key, attest_measurements::MAX_PUBLIC_KEY_SIZE, "measurements public key")?;
        let key = VerifyingKey::from_pem(&pem).map_err(|e| TrustError::Invalid {
            what: "measurements public key",
            path: public_key.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(MeasurementsTrust::Verify { key, signature: signature.to_owned() })
    }

    /// The state measurements loaded this way have.
    pub fn state(&self) -> SignatureState {
        match self {
            Self::Verify { .. } => SignatureState::Verified,
            Self::DangerouslyUnsigned => SignatureState::DangerouslyUnsigned,
        }
    }

    /// Reads `path` (and the signature file), verifies the signature over the bytes as read, then parses.
    /// Any failure — unreadable, too large, a bad or missing signature, a malformed document, an `expires`
    /// that has passed — is an error and nothing is returned.
    pub fn load(&self, path: &Path) -> Result<LoadedMeasurements, TrustError> {
        self.load_at(path, now())
    }

    /// [`MeasurementsTrust::load`] with the expiry judged at `now`.
    pub fn load_at(&self, path: &Path, now: UnixTime) -> Result<LoadedMeasurements, TrustError> {
        let loaded = self.load_unchecked(path)?;
        if let Some(expires) = loaded.freshness.expires.filter(|_| loaded.is_expired(now)) {
            return Err(TrustError::MeasurementsExpired { path: path.to_owned(), expires });
        }
        Ok(loaded)
    }

    fn load_unchecked(&self, path: &Path) -> Result<LoadedMeasurements, TrustError> {
        let file = read_limited(path, attest_measurements::MAX_FILE_SIZE, "measurements file")?;
        let invalid = |e: attest_measurements::Error| TrustError::Invalid {
            what: "measurements file",
            path: path.to_owned(),
            reason: e.to_string(),
        };
        match self {
            Self::Verify { key, signature } => {
                let sig = read_limited(signature, attest_measurements::MAX_SIGNATURE_SIZE, "measurements signature")?;
                let signed = SignedMeasurements::verify_then_parse_with(
                    attest_engine::crypto::default_provider(),
                    key,
                    &file,
                    &sig,
                )
                .map_err(|e| match e {
                    attest_measurements::Error::BadSignature | attest_measurements::Error::SignatureEncoding => {
                        TrustError::BadSignature {
                            path: path.to_owned(),
                            signature: signature.clone(),
                            reason: e.to_string(),
                        }
                    }
                    other => invalid(other),
                })?;
                Ok(LoadedMeasurements {
                    file_sha256: *signed.file_sha256(),
                    inputs_sha256: sha256(&[&file, &sig]),
                    freshness: signed.freshness(),
                    document: signed.into_document(),
                    signature: SignatureState::Verified,
                })
            }
            Self::DangerouslyUnsigned => {
                let (document, freshness) = attest_measurements::parse_versioned(&file).map_err(invalid)?;
                Ok(LoadedMeasurements {
                    file_sha256: sha256(&[&file]),
                    inputs_sha256: sha256(&[&file]),
                    document,
                    signature: SignatureState::DangerouslyUnsigned,
                    freshness,
                })
            }
        }
    }

    /// SHA-256 of the inputs [`MeasurementsTrust::load`] would read now (the file, and the signature file when
    /// one is configured), without verifying or parsing: a poller's cheap "did anything change?". Unreadable
    /// inputs give `None`.
    pub fn inputs_sha256(&self, path: &Path) -> Option<[u8; 32]> {
        let file = read_limited(path, attest_measurements::MAX_FILE_SIZE, "measurements file").ok()?;
        match self {
            Self::Verify { signature, .. } => {
                let sig =
                    read_limited(signature, attest_measurements::MAX_SIGNATURE_SIZE, "measurements signature").ok()?;
                Some(sha256(&[&file, &sig]))
            }
            Self::DangerouslyUnsigned => Some(sha256(&[&file])),
        }
    }
}
