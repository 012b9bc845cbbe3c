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
    /// The image these values come from (`"image"`; required when the list holds several entries for
    /// this (CSP, variant): the accepted sets of a rolling upgrade).
    pub image: Option<String>,
}

/// Checks an image label: 1..=[`crate::MAX_IMAGE_LABEL_LEN`] characters, none of them a control character.
pub(crate) fn check_image_label(label: &str) -> Result<(), Error> {
    let n = label.chars().count();
    if n == 0 || n > crate::MAX_IMAGE_LABEL_LEN || label.chars().any(char::is_control) {
        return Err(Error::InvalidImageLabel { label: cut(label) });
    }
    Ok(())
}

/// A release's measurements for every (CSP, attestation variant) it supports.
///
/// Invariants (checked by the parser and [`ReleaseMeasurements::new`]): 1..=[`crate::MAX_LIST_ENTRIES`]
/// entries, every variant runs on its CSP, no empty map; several entries for one (CSP, variant) — accepted
/// sets of a rolling upgrade, at most [`crate::MAX_SETS_PER_VARIANT`] — each carry a distinct image label.
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
            if let Some(label) = &e.image {
                check_image_label(label).map_err(wrap)?;
            }
            let earlier: Vec<&ReleaseEntry> =
                entries[..position].iter().filter(|p| (p.csp, p.variant) == (e.csp, e.variant)).collect();
            if earlier.is_empty() {
                continue;
            }
            // A second set for the pair: every set must be labelled, each label once.
            if earlier.iter().any(|p| p.image.is_none()) && e.image.is_none() {
                return Err(wrap(Error::DuplicateListEntry { csp: e.csp, variant: e.variant }));
            }
            if let Some(clash) = earlier.iter().find(|p| p.image.is_none() || p.image == e.image) {
                let image = if clash.image.is_none() { String::new() } else { e.image.clone().unwrap_or_default() };
                return Err(wrap(Error::DuplicateImage { csp: e.csp, variant: e.variant, image }));
            }
            if e.image.is_none() {
                return Err(wrap(Error::DuplicateImage { csp: e.csp, variant: e.variant, image: String::new() }));
            }
            if earlier.len() + 1 > crate::MAX_SETS_PER_VARIANT {
                return Err(wrap(Error::LimitExceeded {
                    what: "accepted sets per variant",
                    limit: crate::MAX_SETS_PER_VARIANT,
                    found: earlier.len() + 1,
                }));
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

    /// The measurements for `csp` and `variant`, or [`Error::NotInList`]; [`Error::SeveralSets`] when the
    /// list accepts several sets for them (use [`select_all`](Self::select_all)).
    pub fn select(&self, csp: Csp, variant: AttestationVariant) -> Result<&Measurements, Error> {
        match self.select_all(csp, variant)?.as_slice() {
            [only] => Ok(&only.measurements),
            sets => Err(Error::SeveralSets { csp, variant, sets: sets.len() }),
        }
    }

    /// Every accepted set for `csp` and `variant`, in file order (at least one, else [`Error::NotInList`]).
    pub fn select_all(&self, csp: Csp, variant: AttestationVariant) -> Result<Vec<&ReleaseEntry>, Error> {
        let sets: Vec<&ReleaseEntry> = self.entries.iter().filter(|e| e.csp == csp && e.variant == variant).collect();
        if sets.is_empty() { Err(Error::NotInList { csp, variant }) } else { Ok(sets) }
    }

    /// Consumes the list, keeping the measurements for `csp` and `variant` (the errors of
    /// [`select`](Self::select)).
    pub fn into_selected(self, csp: Csp, variant: AttestationVariant) -> Result<Measurements, Error> {
        self.select(csp, variant).cloned()
    }

    /// The entries of `self` and then of `other`, under `other`'s version, ref and stream (the newer
    /// release names the result). An entry of `other` equal to one of `self` is kept once; otherwise the
    /// invariants of [`new`](Self::new) apply — in particular two different sets for one (CSP, variant)
    /// must carry distinct image labels.
    pub fn merge(&self, other: &Self) -> Result<Self, Error> {
        let mut entries = self.entries.clone();
        for e in &other.entries {
            if !entries.contains(e) {
                entries.push(e.clone());
            }
        }
        Self::new(other.version.clone(), other.reference.clone(), other.stream.clone(), entries)
    }

    /// The list without the sets labelled `image` (the end of a rollout): [`Error::UnknownImage`] when no
    /// set has that label, [`Error::LastSet`] when a (CSP, variant) would be left without any set.
    pub fn without_image(&self, image: &str) -> Result<Self, Error> {
        let (gone, kept): (Vec<&ReleaseEntry>, Vec<&ReleaseEntry>) =
            self.entries.iter().partition(|e| e.image.as_deref() == Some(image));
        if gone.is_empty() {
            return Err(Error::UnknownImage { image: cut(image) });
        }
        if let Some(e) = gone.iter().find(|g| !kept.iter().any(|k| (k.csp, k.variant) == (g.csp, g.variant))) {
            return Err(Error::LastSet { csp: e.csp, variant: e.variant });
        }
        Self::new(
            self.version.clone(),
            self.reference.clone(),
            self.stream.clone(),
            kept.into_iter().cloned().collect(),
        )
    }
}
