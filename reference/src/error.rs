//! The crate's single error type.
//!
//! Grouped by domain: input bounds, PE structure (PE/COFF specification), UKI, firmware metadata (OVMF
//! footer table, SEV and TDVF metadata) and caller misuse. Every variant is structured, so callers — the CLI
//! maps them all to exit status 2 — can branch on them.

use core::fmt;

/// A PE section name as written (8 bytes, NUL-padded; shown without the padding, non-printable bytes
/// escaped).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SectionName(pub [u8; 8]);

impl SectionName {
    /// The name without its NUL padding.
    pub fn as_bytes(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(8);
        &self.0[..end]
    }
}

impl fmt::Display for SectionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in self.as_bytes() {
            if b.is_ascii_graphic() {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for SectionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Everything that can go wrong reading an image or computing its reference values.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    // ---- input bounds ---------------------------------------------------------------------------------
    /// A structure extends past the end of its input.
    Truncated {
        /// The structure.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// How many bytes it needs.
        needed: u64,
        /// How long the input is.
        len: u64,
    },
    /// A count or size is larger than its named limit (`MAX_*` in this crate).
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: u64,
        /// What was found.
        found: u64,
    },

    // ---- PE/COFF --------------------------------------------------------------------------------------
    /// A signature or magic value is not what the format requires (`MZ`, `PE\0\0`, the optional header's
    /// 0x10B/0x20B, OVMF's footer GUID, `ASEV`, `TDVF`).
    BadMagic {
        /// Which magic.
        what: &'static str,
    },
    /// A header field is inconsistent with the format (PE/COFF specification §3–§4).
    BadHeader {
        /// The field.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A section's raw data lies (partly) outside the file or inside the headers (PE/COFF §4).
    SectionOutOfBounds {
        /// The section.
        section: SectionName,
        /// Its PointerToRawData.
        offset: u64,
        /// Its SizeOfRawData.
        size: u64,
        /// The file length.
        len: u64,
    },
    /// Two sections overlap, in the file or in memory. A loader would map one over the other, so what a
    /// stub measures would not be what the file says.
    OverlappingSections {
        /// The earlier section.
        first: SectionName,
        /// The section that overlaps it.
        second: SectionName,
        /// `"file"` or `"memory"`.
        space: &'static str,
    },
    /// The certificate table (data directory 4, WIN_CERTIFICATE entries; PE/COFF §5.7 and the Authenticode
    /// specification) is not where or what it must be.
    BadCertificateTable {
        /// What is wrong.
        reason: &'static str,
    },

    // ---- UKI ------------------------------------------------------------------------------------------
    /// A section the computation needs is absent (a UKI without `.linux`).
    MissingSection {
        /// The section name.
        name: &'static str,
    },
    /// The stub's version is not one whose measurements this crate knows (systemd-stub 252–254).
    UnsupportedStub {
        /// What was found (the `.sdmagic` text, or why there is none).
        found: String,
    },
    /// A value the stub would transform in a way this crate does not model (e.g. a non-ASCII command line).
    Unsupported {
        /// What.
        what: &'static str,
    },

    // ---- firmware -------------------------------------------------------------------------------------
    /// The firmware image carries no OVMF footer table, or the table lacks the entry asked for.
    MissingFirmwareEntry {
        /// The entry (e.g. "SEV metadata", "SEV-ES reset block", "TDVF metadata").
        what: &'static str,
    },
    /// Firmware metadata is inconsistent (overlapping sections, a section outside the image, an unknown
    /// section type).
    BadFirmwareMetadata {
        /// What is wrong.
        reason: &'static str,
    },

    // ---- caller misuse --------------------------------------------------------------------------------
    /// An argument is out of its range (no vCPUs, an empty bank list, …).
    InvalidArgument {
        /// The argument.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { what, offset, needed, len } => {
                write!(f, "truncated: {what} at offset {offset} needs {needed} bytes, the input has {len}")
            }
            Self::LimitExceeded { what, limit, found } => write!(f, "{what}: {found} exceeds the limit of {limit}"),
            Self::BadMagic { what } => write!(f, "not a valid {what}"),
            Self::BadHeader { what, reason } => write!(f, "bad {what}: {reason}"),
            Self::SectionOutOfBounds { section, offset, size, len } => write!(
                f,
                "section {section}: raw data {offset:#x}+{size:#x} lies outside the file ({len:#x} bytes) or in its headers"
            ),
            Self::OverlappingSections { first, second, space } => {
                write!(f, "sections {first} and {second} overlap in {space}")
            }
            Self::BadCertificateTable { reason } => write!(f, "bad certificate table: {reason}"),
            Self::MissingSection { name } => write!(f, "no {name} section (not a unified kernel image)"),
            Self::UnsupportedStub { found } => {
                write!(f, "unsupported stub ({found}); known: systemd-stub 252-254 (or say which with --stub)")
            }
            Self::Unsupported { what } => write!(f, "unsupported: {what}"),
            Self::MissingFirmwareEntry { what } => write!(f, "the firmware image has no {what}"),
            Self::BadFirmwareMetadata { reason } => write!(f, "bad firmware metadata: {reason}"),
            Self::InvalidArgument { what, reason } => write!(f, "invalid {what}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}
