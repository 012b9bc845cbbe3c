//! The crate's single error type.

use crate::pcr::PcrIndex;
use crate::release::{AttestationVariant, Csp};
use core::fmt;

/// The two document forms a measurements file can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// A map PCR index → measurement.
    Map,
    /// Constellation's per-release list (`version`, `ref`, `stream`, `list`).
    List,
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Map => "measurements map",
            Self::List => "release list",
        })
    }
}

/// Everything that can go wrong reading, verifying, merging or selecting measurements.
///
/// Grouped by domain: input limits, syntax (with the parser's position), map content, list form, merge,
/// signature. Syntax errors carry the parser's message; every other variant is structured so callers can
/// branch on it.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    // ---- input ----------------------------------------------------------------------------------------
    /// An input is larger than the named limit ([`crate::MAX_FILE_SIZE`], [`crate::MAX_LIST_ENTRIES`], …).
    LimitExceeded {
        /// What was counted ("file bytes", "list entries", …).
        what: &'static str,
        /// The limit.
        limit: usize,
        /// What was found (for streamed counts: the first count over the limit).
        found: usize,
    },
    /// The input is empty or only whitespace.
    EmptyInput,
    /// The input is not UTF-8 (JSON, RFC 8259 §8.1, and YAML 1.2 §5.2 text is Unicode).
    NotUtf8 {
        /// Length of the valid UTF-8 prefix.
        valid_up_to: usize,
    },

    // ---- syntax -------------------------------------------------------------------------------------
    /// Invalid JSON, or JSON of the wrong shape (position from `serde_json`, 1-based).
    Json {
        /// Line (1-based).
        line: usize,
        /// Column (1-based).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Invalid YAML, or YAML of the wrong shape (position from the YAML parser, 1-based, when it has one).
    Yaml {
        /// Line (1-based), if known.
        line: Option<usize>,
        /// Column (1-based), if known.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// The document has the other form than the one asked for (e.g. a release list given to
    /// [`crate::Measurements::from_json`]).
    UnexpectedForm {
        /// The form the caller asked for.
        expected: Form,
        /// The form found.
        found: Form,
    },
    /// The top-level object mixes PCR keys with release-list fields.
    MixedForms,
    /// A required field of the release list is absent.
    MissingField {
        /// The field (`version`, `ref`, `stream`, `list`).
        field: &'static str,
    },
    /// The release list has a field that is not `version`, `ref`, `stream` or `list`.
    UnknownField {
        /// The field (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        field: String,
    },
    /// A field of the release list appears twice.
    DuplicateField {
        /// The field.
        field: &'static str,
    },

    // ---- map content --------------------------------------------------------------------------------
    /// A map key is not a canonical decimal PCR index (a name, a sign, leading zeros, whitespace…).
    InvalidPcrKey {
        /// The key as written (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        key: String,
    },
    /// A PCR index outside 0..=23 (TPM PC-client banks have 24 PCRs).
    PcrIndexOutOfRange {
        /// The index found.
        index: u64,
    },
    /// The same PCR index appears twice in one map (JSON objects with duplicate names have unspecified
    /// meaning, RFC 8259 §4; YAML 1.2 §3.2.1.1 forbids them).
    DuplicatePcr {
        /// The repeated index.
        index: PcrIndex,
    },
    /// An expected value is not a hex string (odd length or a non-hex character).
    InvalidHex {
        /// The PCR.
        index: PcrIndex,
        /// Character offset of the first invalid character, or the string length for odd lengths.
        offset: usize,
    },
    /// An expected value is neither 32 (SHA-256) nor 48 (SHA-384) bytes.
    WrongLength {
        /// The PCR, when the value came from a map.
        index: Option<PcrIndex>,
        /// Its length in bytes.
        found: usize,
    },
    /// The map holds SHA-384 values where SHA-256 values are needed (the validators compare the SHA-256 bank).
    NotSha256 {
        /// The PCR.
        index: PcrIndex,
        /// Its length in bytes.
        found: usize,
    },
    /// A map for a TDX variant that does not follow Constellation's TDX layout: indices 0 (MRTD) to 4
    /// (RTMR3), 48-byte SHA-384 values, enforced (a TD quote policy has no warn-only entries).
    NotTdx {
        /// The offending index.
        index: PcrIndex,
        /// What is wrong.
        reason: &'static str,
    },
    /// Expected values of one map have different lengths (one map describes one PCR bank).
    MixedLengths {
        /// The first PCR whose length differs.
        index: PcrIndex,
        /// The length of the earlier entries.
        expected: usize,
        /// This entry's length.
        found: usize,
    },
    /// A document (or list entry) expects no PCR at all; it would accept every machine.
    NoMeasurements,

    // ---- list form ----------------------------------------------------------------------------------
    /// A `csp` name that is not a Constellation cloud provider.
    UnknownCsp {
        /// The name (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        name: String,
    },
    /// An `attestationVariant` that is not a known Constellation variant.
    UnknownVariant {
        /// The name (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        name: String,
    },
    /// An attestation variant listed under a cloud provider that cannot run it (e.g. `aws-sev-snp` under
    /// `Azure`).
    CspVariantMismatch {
        /// The entry's CSP.
        csp: Csp,
        /// The entry's variant.
        variant: AttestationVariant,
    },
    /// Two list entries for the same (CSP, variant).
    DuplicateListEntry {
        /// The CSP.
        csp: Csp,
        /// The variant.
        variant: AttestationVariant,
    },
    /// An error inside one entry of the release list.
    ListEntry {
        /// Position of the entry in `list` (0-based).
        position: usize,
        /// What was wrong with it.
        error: Box<Error>,
    },
    /// A list entry's `image` label is empty, longer than [`crate::MAX_IMAGE_LABEL_LEN`] or holds a control
    /// character.
    InvalidImageLabel {
        /// The label (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        label: String,
    },
    /// Two entries for one (CSP, variant) carry the same `image` label, or one of several carries none: the
    /// accepted sets of a rolling upgrade are told apart by their image.
    DuplicateImage {
        /// The cloud provider.
        csp: Csp,
        /// The attestation variant.
        variant: AttestationVariant,
        /// The repeated label (empty when an entry has none).
        image: String,
    },
    /// The list holds several accepted sets for (CSP, variant) and the caller asked for one
    /// ([`crate::ReleaseMeasurements::select_all`] and [`crate::Document::sets_for_variant`] return them all).
    SeveralSets {
        /// The cloud provider.
        csp: Csp,
        /// The attestation variant.
        variant: AttestationVariant,
        /// How many sets.
        sets: usize,
    },
    /// Removing an image would leave (CSP, variant) with no accepted set at all.
    LastSet {
        /// The cloud provider.
        csp: Csp,
        /// The attestation variant.
        variant: AttestationVariant,
    },
    /// No entry carries the image label asked for.
    UnknownImage {
        /// The label (cut to [`crate::MAX_ERROR_KEY_LEN`] characters).
        image: String,
    },
    /// The release list has no entry for the requested (CSP, variant).
    NotInList {
        /// The CSP asked for.
        csp: Csp,
        /// The variant asked for.
        variant: AttestationVariant,
    },
    /// [`crate::parse_any`] got a release list with several entries and cannot choose one; use
    /// [`crate::ReleaseMeasurements::select`].
    AmbiguousList {
        /// Number of entries.
        entries: usize,
    },

    // ---- merge --------------------------------------------------------------------------------------
    /// [`crate::Measurements::merge_strict`]: both maps set this PCR, differently.
    MergeConflict {
        /// The PCR.
        index: PcrIndex,
    },

    // ---- freshness (version and expiry) ------------------------------------------------------------
    /// `measurementsVersion` is not an integer 0..=[`crate::MAX_MEASUREMENTS_VERSION`].
    InvalidVersion {
        /// What is wrong.
        reason: &'static str,
    },
    /// `expires` is not `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC).
    InvalidExpiry {
        /// What is wrong.
        reason: &'static str,
    },

    // ---- signature ----------------------------------------------------------------------------------
    /// The detached signature is neither a DER `Ecdsa-Sig-Value` nor base64 text of one.
    SignatureEncoding,
    /// The signature does not verify over the file bytes with the given key (ECDSA P-256, SHA-256).
    BadSignature,
    /// The public key is not a PEM `PUBLIC KEY` block holding a well-formed SubjectPublicKeyInfo
    /// (RFC 7468 §13, RFC 5280 §4.1.2.7).
    InvalidPublicKey {
        /// What was wrong.
        reason: &'static str,
    },
    /// The public key is well-formed but not an ECDSA P-256 key (RFC 5480 §2.1.1: id-ecPublicKey with
    /// namedCurve secp256r1, uncompressed point).
    KeyNotP256,
}

impl Error {
    /// The innermost error: unwraps [`Error::ListEntry`].
    pub fn root(&self) -> &Error {
        match self {
            Self::ListEntry { error, .. } => error.root(),
            other => other,
        }
    }

    pub(crate) fn json(e: &serde_json::Error) -> Self {
        Self::Json { line: e.line(), column: e.column(), message: e.to_string() }
    }

    pub(crate) fn yaml(e: &serde_yaml_ng::Error) -> Self {
        let loc = e.location();
        Self::Yaml {
            line: loc.as_ref().map(serde_yaml_ng::Location::line),
            column: loc.as_ref().map(serde_yaml_ng::Location::column),
            message: e.to_string(),
        }
    }
}

/// Copies at most [`crate::MAX_ERROR_KEY_LEN`] characters of `s` into an owned string for an error.
pub(crate) fn cut(s: &str) -> String {
    s.chars().take(crate::MAX_ERROR_KEY_LEN).collect()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LimitExceeded { what, limit, found } => {
                write!(f, "too many {what}: {found} (limit {limit})")
            }
            Self::EmptyInput => f.write_str("empty measurements input"),
            Self::NotUtf8 { valid_up_to } => write!(f, "input is not UTF-8 (valid up to byte {valid_up_to})"),
            Self::Json { line, column, message } => {
                write!(f, "invalid JSON at line {line}, column {column}: {message}")
            }
            Self::Yaml { line: Some(line), column: Some(column), message } => {
                write!(f, "invalid YAML at line {line}, column {column}: {message}")
            }
            Self::Yaml { message, .. } => write!(f, "invalid YAML: {message}"),
            Self::UnexpectedForm { expected, found } => write!(f, "expected a {expected}, found a {found}"),
            Self::MixedForms => f.write_str("document mixes PCR keys and release-list fields"),
            Self::MissingField { field } => write!(f, "release list lacks the field {field:?}"),
            Self::UnknownField { field } => write!(f, "release list has an unknown field {field:?}"),
            Self::DuplicateField { field } => write!(f, "release list has the field {field:?} twice"),
            Self::InvalidPcrKey { key } => write!(f, "invalid PCR key {key:?} (expected a decimal index 0..=23)"),
            Self::PcrIndexOutOfRange { index } => write!(f, "PCR index {index} out of range 0..=23"),
            Self::DuplicatePcr { index } => write!(f, "PCR {index} appears twice"),
            Self::InvalidHex { index, offset } => {
                write!(f, "PCR {index}: expected value is not hex (at character {offset})")
            }
            Self::NotTdx { index, reason } => write!(f, "TDX measurement {index}: {reason}"),
            Self::NotSha256 { index, found } => {
                write!(f, "PCR {index}: the validators enforce SHA-256 values (32 bytes), this one has {found}")
            }
            Self::WrongLength { index: Some(index), found } => {
                write!(f, "PCR {index}: expected value has {found} bytes, not 32 or 48")
            }
            Self::WrongLength { index: None, found } => {
                write!(f, "expected value has {found} bytes, not 32 or 48")
            }
            Self::MixedLengths { index, expected, found } => {
                write!(f, "PCR {index}: expected value has {found} bytes but earlier entries have {expected}")
            }
            Self::NoMeasurements => f.write_str("no PCR measurements (an empty map would accept anything)"),
            Self::UnknownCsp { name } => write!(f, "unknown cloud provider {name:?}"),
            Self::UnknownVariant { name } => write!(f, "unknown attestation variant {name:?}"),
            Self::CspVariantMismatch { csp, variant } => {
                write!(f, "attestation variant {variant} cannot run on {csp}")
            }
            Self::DuplicateListEntry { csp, variant } => write!(f, "two list entries for {csp} / {variant}"),
            Self::ListEntry { position, error } => write!(f, "list entry {position}: {error}"),
            Self::InvalidImageLabel { label } => {
                write!(f, "invalid image label {label:?} (1 to 128 characters, no control characters)")
            }
            Self::DuplicateImage { csp, variant, image } if image.is_empty() => {
                write!(f, "{csp} / {variant} has several accepted sets and one has no image label (each needs its own)")
            }
            Self::DuplicateImage { csp, variant, image } => {
                write!(f, "{csp} / {variant} has two accepted sets labelled {image:?}")
            }
            Self::SeveralSets { csp, variant, sets } => write!(
                f,
                "{csp} / {variant} has {sets} accepted measurement sets (a rolling upgrade); this reader takes one"
            ),
            Self::LastSet { csp, variant } => {
                write!(f, "removing it would leave {csp} / {variant} without any accepted measurements")
            }
            Self::UnknownImage { image } => write!(f, "no measurement set is labelled {image:?}"),
            Self::NotInList { csp, variant } => write!(f, "no measurements for {csp} / {variant} in the list"),
            Self::AmbiguousList { entries } => {
                write!(f, "release list has {entries} entries; select one by CSP and attestation variant")
            }
            Self::MergeConflict { index } => write!(f, "PCR {index}: merged maps disagree"),
            Self::InvalidVersion { reason } => write!(f, "invalid measurementsVersion: {reason}"),
            Self::InvalidExpiry { reason } => write!(f, "invalid expires: {reason}"),
            Self::SignatureEncoding => f.write_str("signature is neither DER nor base64 of DER"),
            Self::BadSignature => f.write_str("measurements signature does not verify"),
            Self::InvalidPublicKey { reason } => write!(f, "invalid public key: {reason}"),
            Self::KeyNotP256 => f.write_str("public key is not an ECDSA P-256 key"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ListEntry { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}
