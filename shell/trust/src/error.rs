//! Why a consumer refuses to start, or a reload is refused.

use std::path::PathBuf;

use attest_engine::variant::Variant;

/// Why a consumer refuses to start (or a reload is refused).
#[derive(Debug)]
#[non_exhaustive]
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
    /// The measurements file's `expires` has passed (`attest_measurements::freshness`).
    MeasurementsExpired {
        /// The measurements file.
        path: PathBuf,
        /// When it expired.
        expires: attest_engine::UnixTime,
    },
    /// The measurements file's `measurementsVersion` is below the highest version this consumer has accepted:
    /// an older, validly signed file put back (rollback).
    MeasurementsRolledBack {
        /// The measurements file.
        path: PathBuf,
        /// Its version.
        found: u64,
        /// The highest version accepted before.
        floor: u64,
    },
    /// An SNP variant's policy pins no launch and the waiver was not given.
    LaunchUnpinned {
        /// The variant.
        variant: Variant,
    },
    /// The CRLs could not be loaded (stale, unavailable, or refused by the engine).
    #[cfg(feature = "service")]
    Revocation(attest_kds::KdsError),
    /// A `VARIANT=VALUE` argument without `=`.
    NotKeyed,
    /// A variant name that is not in the variant table.
    UnknownVariant(attest_engine::variant::UnknownVariant),
    /// A `--tdx-platform` value that is not `FMSPC[:CA]`.
    TdxPlatform {
        /// The value given.
        text: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A command-line flag takes variant names that are not generated from the variant table.
    VariantFlag {
        /// The command path and the flag.
        flag: String,
        /// The names it lists.
        names: Vec<&'static str>,
    },
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
            Self::MeasurementsExpired { path, expires } => {
                write!(f, "measurements file {} refused: it expired at {expires} (sign a new version)", path.display())
            }
            Self::MeasurementsRolledBack { path, found, floor } => write!(
                f,
                "measurements file {} refused: rollback: its measurementsVersion {found} is below version {floor},                  already accepted (to return to older values, sign them under a version above {floor})",
                path.display()
            ),
            Self::LaunchUnpinned { variant } => write!(
                f,
                "{variant}: the SNP policy pins no launch measurement (set `measurements` or `id_key_digests` in \
                 the SNP policy, or, dangerously, --dangerous-allow-unpinned-launch)"
            ),
            #[cfg(feature = "service")]
            Self::Revocation(e) => write!(f, "AMD CRLs: {e} (refresh the KDS store, or --allow-stale-crl)"),
            Self::NotKeyed => f.write_str("expected VARIANT=VALUE"),
            Self::UnknownVariant(e) => e.fmt(f),
            Self::TdxPlatform { text, reason } => write!(f, "{text:?}: {reason}"),
            Self::VariantFlag { flag, names } => {
                write!(f, "{flag} lists {names:?}, which is not generated from the variant table")
            }
        }
    }
}

impl std::error::Error for TrustError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            #[cfg(feature = "service")]
            Self::Revocation(e) => Some(e),
            Self::UnknownVariant(e) => Some(e),
            Self::Invalid { .. }
            | Self::BadSignature { .. }
            | Self::UnsignedMeasurements
            | Self::MeasurementsExpired { .. }
            | Self::MeasurementsRolledBack { .. }
            | Self::LaunchUnpinned { .. }
            | Self::NotKeyed
            | Self::TdxPlatform { .. }
            | Self::VariantFlag { .. } => None,
        }
    }
}
