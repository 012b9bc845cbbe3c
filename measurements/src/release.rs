//! Constellation's per-release list form:
//!
//! ```json
//! { "version": "v2.16.0", "ref": "-", "stream": "stable",
//!   "list": [ { "csp": "AWS", "attestationVariant": "aws-sev-snp", "measurements": { "0": … } } ] }
//! ```
//!
//! Names follow Constellation's `cloudprovider.Provider` (matched case-insensitively, as its `FromString`
//! does) and `variant.Variant` (matched exactly). Unknown names are rejected rather than mapped to a
//! guess, and a variant must belong to its CSP.

use crate::error::{Error, Form, cut};
use crate::parse::{self, Document};
use crate::pcr::Measurements;
use core::fmt;

/// A cloud service provider, as named in Constellation release files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Csp {
    /// Amazon Web Services (`AWS`).
    Aws,
    /// Microsoft Azure (`Azure`).
    Azure,
    /// Google Cloud Platform (`GCP`).
    Gcp,
    /// OpenStack, including STACKIT (`OpenStack`).
    OpenStack,
    /// Local QEMU/KVM (`QEMU`).
    Qemu,
}

impl Csp {
    /// Every CSP.
    pub const ALL: [Self; 5] = [Self::Aws, Self::Azure, Self::Gcp, Self::OpenStack, Self::Qemu];

    /// The canonical name written in release files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Aws => "AWS",
            Self::Azure => "Azure",
            Self::Gcp => "GCP",
            Self::OpenStack => "OpenStack",
            Self::Qemu => "QEMU",
        }
    }

    /// Parses a CSP name, ignoring ASCII case; [`Error::UnknownCsp`] otherwise.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::UnknownCsp { name: cut(name) })
    }
}

impl fmt::Display for Csp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An attestation variant, as named in Constellation (`internal/attestation/variant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AttestationVariant {
    /// `aws-sev-snp`.
    AwsSevSnp,
    /// `aws-nitro-tpm`.
    AwsNitroTpm,
    /// `azure-sev-snp`.
    AzureSevSnp,
    /// `azure-tdx`.
    AzureTdx,
    /// `azure-trustedlaunch`.
    AzureTrustedLaunch,
    /// `gcp-sev-es`.
    GcpSevEs,
    /// `gcp-sev-snp`.
    GcpSevSnp,
    /// `qemu-vtpm` (QEMU and OpenStack).
    QemuVtpm,
    /// `qemu-tdx`.
    QemuTdx,
}

impl AttestationVariant {
    /// Every variant.
    pub const ALL: [Self; 9] = [
        Self::AwsSevSnp,
        Self::AwsNitroTpm,
        Self::AzureSevSnp,
        Self::AzureTdx,
        Self::AzureTrustedLaunch,
        Self::GcpSevEs,
        Self::GcpSevSnp,
        Self::QemuVtpm,
        Self::QemuTdx,
    ];

    /// The name written in release files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::AwsSevSnp => "aws-sev-snp",
            Self::AwsNitroTpm => "aws-nitro-tpm",
            Self::AzureSevSnp => "azure-sev-snp",
            Self::AzureTdx => "azure-tdx",
            Self::AzureTrustedLaunch => "azure-trustedlaunch",
            Self::GcpSevEs => "gcp-sev-es",
            Self::GcpSevSnp => "gcp-sev-snp",
            Self::QemuVtpm => "qemu-vtpm",
            Self::QemuTdx => "qemu-tdx",
        }
    }

    /// Parses a variant name (exact match); [`Error::UnknownVariant`] otherwise.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        Self::ALL.into_iter().find(|v| v.name() == name).ok_or_else(|| Error::UnknownVariant { name: cut(name) })
    }

    /// Whether the variant can run on `csp`.
    pub const fn runs_on(self, csp: Csp) -> bool {
        matches!(
            (self, csp),
            (Self::AwsSevSnp | Self::AwsNitroTpm, Csp::Aws)
                | (Self::AzureSevSnp | Self::AzureTdx | Self::AzureTrustedLaunch, Csp::Azure)
                | (Self::GcpSevEs | Self::GcpSevSnp, Csp::Gcp)
                | (Self::QemuVtpm, Csp::Qemu | Csp::OpenStack)
                | (Self::QemuTdx, Csp::Qemu)
        )
    }
}

impl fmt::Display for AttestationVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a release list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseEntry {
    /// The cloud provider.
    pub csp: Csp,
    /// The attestation variant (runs on `csp`).
    pub variant: AttestationVariant,
    /// The expected PCR values (not empty).
    pub measurements: Measurements,
}

/// A release's measurements for every (CSP, attestation variant) it supports.
///
/// Invariants (checked by the parser and [`ReleaseMeasurements::new`]): 1..=[`crate::MAX_LIST_ENTRIES`]
/// entries, no two with the same (CSP, variant), every variant runs on its CSP, no empty map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseMeasurements {
    version: String,
    reference: String,
    stream: String,
    entries: Vec<ReleaseEntry>,
}

impl ReleaseMeasurements {
    /// Builds a release list, checking the invariants above (errors inside an entry come wrapped in
    /// [`Error::ListEntry`]).
    pub fn new(version: String, reference: String, stream: String, entries: Vec<ReleaseEntry>) -> Result<Self, Error> {
        if entries.is_empty() {
            return Err(Error::NoMeasurements);
        }
        if entries.len() > crate::MAX_LIST_ENTRIES {
            return Err(Error::LimitExceeded {
                what: "list entries",
                limit: crate::MAX_LIST_ENTRIES,
                found: entries.len(),
            });
        }
        for (position, e) in entries.iter().enumerate() {
            let wrap = |error| Error::ListEntry { position, error: Box::new(error) };
            if !e.variant.runs_on(e.csp) {
                return Err(wrap(Error::CspVariantMismatch { csp: e.csp, variant: e.variant }));
            }
            if e.measurements.is_empty() {
                return Err(wrap(Error::NoMeasurements));
            }
            if entries[..position].iter().any(|p| (p.csp, p.variant) == (e.csp, e.variant)) {
                return Err(wrap(Error::DuplicateListEntry { csp: e.csp, variant: e.variant }));
            }
        }
        Ok(Self { version, reference, stream, entries })
    }

    /// Parses a release list from JSON.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_document(parse::parse_json(bytes)?)
    }

    /// Parses a release list from YAML.
    pub fn from_yaml(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_document(parse::parse_yaml(bytes)?)
    }

    /// Parses a release list from JSON or YAML (detected as in [`crate::parse_document`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        Self::from_document(parse::parse_document(bytes)?)
    }

    fn from_document(doc: Document) -> Result<Self, Error> {
        match doc {
            Document::List(list) => Ok(list),
            Document::Map(_) => Err(Error::UnexpectedForm { expected: Form::List, found: Form::Map }),
        }
    }

    /// The release version (`"v2.16.0"`), as written.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The image reference (`ref`; `"-"` for releases).
    pub fn reference(&self) -> &str {
        &self.reference
    }

    /// The stream (`"stable"`, `"nightly"`, …).
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// All entries, in file order.
    pub fn entries(&self) -> &[ReleaseEntry] {
        &self.entries
    }

    /// The measurements for `csp` and `variant`, or [`Error::NotInList`].
    pub fn select(&self, csp: Csp, variant: AttestationVariant) -> Result<&Measurements, Error> {
        self.entries
            .iter()
            .find(|e| e.csp == csp && e.variant == variant)
            .map(|e| &e.measurements)
            .ok_or(Error::NotInList { csp, variant })
    }

    /// Consumes the list, keeping the measurements for `csp` and `variant`.
    pub fn into_selected(self, csp: Csp, variant: AttestationVariant) -> Result<Measurements, Error> {
        self.entries
            .into_iter()
            .find(|e| e.csp == csp && e.variant == variant)
            .map(|e| e.measurements)
            .ok_or(Error::NotInList { csp, variant })
    }
}
