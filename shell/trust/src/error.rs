//! Why a consumer refuses to start, or a reload is refused.

use std::path::PathBuf;

use attest_engine::variant::Variant;

/// Why a consumer refuses to start (or a reload is refused).
#[derive(Debug)]
pub enum TrustError {
    /// A file could not be read.
    Io {
        /// Which input.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is malformed or too large.
    Invalid {
        /// Which input.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The measurements file's signature does not verify (or cannot be decoded).
    BadSignature {
        /// The measurements file.
        path: PathBuf,
        /// The signature file.
        signature: PathBuf,
        /// The reason.
        reason: String,
    },
    /// Neither a signature nor the explicit waiver was given.
    UnsignedMeasurements,
    /// An SNP variant's policy pins no launch and the waiver was not given.
    LaunchUnpinned {
        /// The variant.
        variant: Variant,
    },
    /// The CRLs could not be loaded (stale, unavailable, or refused by the engine).
    #[cfg(feature = "service")]
    Revocation(attest_kds::KdsError),
}

impl std::fmt::Display for TrustError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { what, path, source } => write!(f, "{what} {}: {source}", path.display()),
            Self::Invalid { what, path, reason } => write!(f, "{what} {}: {reason}", path.display()),
            Self::BadSignature { path, signature, reason } => write!(
                f,
                "measurements file {} refused: its signature {} does not verify: {reason}",
                path.display(),
                signature.display()
            ),
            Self::UnsignedMeasurements => f.write_str(
                "the measurements file must be signed: give --measurements-signature and --measurements-public-key \
                 (or, dangerously, --dangerously-skip-measurements-signature)",
            ),
            Self::LaunchUnpinned { variant } => write!(
                f,
                "{variant}: the SNP policy pins no launch measurement (set `measurements` or `id_key_digests` in \
                 the SNP policy, or, dangerously, --dangerous-allow-unpinned-launch)"
            ),
            #[cfg(feature = "service")]
            Self::Revocation(e) => write!(f, "AMD CRLs: {e} (refresh the KDS store, or --allow-stale-crl)"),
        }
    }
}

impl std::error::Error for TrustError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            #[cfg(feature = "service")]
            Self::Revocation(e) => Some(e),
            Self::Invalid { .. }
            | Self::BadSignature { .. }
            | Self::UnsignedMeasurements
            | Self::LaunchUnpinned { .. } => None,
        }
    }
}
