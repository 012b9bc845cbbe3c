//! The error of the hardware-backed issuers and of variant detection.

use attest_engine::variant::Variant;
use core::fmt;

/// Why a hardware-backed issuer could not be made or could not issue.
#[derive(Debug)]
#[non_exhaustive]
pub enum HwIssuerError {
    /// The device (or the vTPM NV index) does not exist on this machine: not a confidential VM of this kind.
    DeviceNotPresent {
        /// The device path or NV index.
        device: &'static str,
    },
    /// The device exists but a request to it failed.
    Device {
        /// What we were doing.
        op: &'static str,
        /// The device's or driver's error.
        reason: String,
    },
    /// The variant is not one this issuer produces.
    UnsupportedVariant(Variant),
    /// No leaf certificate (VCEK/VLEK): the host's certificate table lacks it and none was configured.
    MissingLeafCertificate {
        /// Which key the variant needs ("VLEK" or "VCEK").
        want: &'static str,
    },
    /// Detection found no single variant; `found` names everything it saw.
    Detection {
        /// What the machine has (devices, NV indices).
        found: String,
        /// Why no variant follows from it.
        reason: &'static str,
    },
    /// A file the node's hardware configuration names (the SNP leaf certificate, the event log) could not be
    /// read.
    ConfigFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TPM side failed.
    Tpm(crate::tpm::Error),
    /// The device returned something the engine cannot parse.
    Engine(attest_engine::Error),
    /// A configfs-tsm request failed or its output was refused.
    Tsm(super::tsm::output::TsmError),
    /// A command-line value naming the hardware (`--snp-device`, `--tdx-root`, `--tdx-quote-endpoint`) is
    /// malformed or refused by this build.
    Argument {
        /// The value given.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// `--variant` names neither `auto` nor a variant of the table.
    UnknownVariant {
        /// The name given.
        name: String,
    },
}

impl fmt::Display for HwIssuerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeviceNotPresent { device } => write!(f, "{device} not present"),
            Self::Device { op, reason } => write!(f, "{op} failed: {reason}"),
            Self::UnsupportedVariant(v) => write!(f, "this issuer does not produce {v} documents"),
            Self::MissingLeafCertificate { want } => {
                write!(f, "no {want}: the host's certificate table lacks it and none was configured")
            }
            Self::Detection { found, reason } => write!(f, "variant detection: found {found}: {reason}"),
            Self::ConfigFile { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Tpm(e) => write!(f, "{e}"),
            Self::Engine(e) => write!(f, "{e}"),
            Self::Tsm(e) => write!(f, "{e}"),
            Self::Argument { value, reason } => write!(f, "{value:?}: {reason}"),
            Self::UnknownVariant { name } => write!(f, "unknown variant {name:?} (auto, {})", Variant::names(|_| true)),
        }
    }
}

impl std::error::Error for HwIssuerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Tpm(e) => Some(e),
            Self::Engine(e) => Some(e),
            Self::ConfigFile { source, .. } => Some(source),
            Self::Tsm(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::tpm::Error> for HwIssuerError {
    fn from(e: crate::tpm::Error) -> Self {
        Self::Tpm(e)
    }
}

impl From<attest_engine::Error> for HwIssuerError {
    fn from(e: attest_engine::Error) -> Self {
        Self::Engine(e)
    }
}

impl From<super::tsm::output::TsmError> for HwIssuerError {
    fn from(e: super::tsm::output::TsmError) -> Self {
        Self::Tsm(e)
    }
}
