//! TCG PC Client event logs: a zero-copy parser and a PCR replay.
//!
//! The log is specified by the TCG PC Client Platform Firmware Profile (PFP), Family "2.0", Level 00,
//! Revision 1.05, §10 "Event Logging". Section numbers below refer to that document (Revision 1.04 has
//! the same sections one chapter lower, §9).
//!
//! # Wire formats
//!
//! ```text
//! TCG_PCClientPCREvent (§10.2.1, "SHA-1 format")   TCG_PCR_EVENT2 (§10.2.2, crypto-agile)
//! all fields little-endian                         all fields little-endian
//!   pcrIndex       u32                               pcrIndex       u32
//!   eventType      u32                               eventType      u32
//!   digest         [u8; 20] (SHA-1)                  digests        TPML_DIGEST_VALUES:
//!                                                      count        u32
//!                                                      count ×      { hashAlg u16, digest [u8; size(hashAlg)] }
//!   eventDataSize  u32                               eventSize      u32
//!   event          [u8; eventDataSize]               event          [u8; eventSize]
//! ```
//!
//! The first event of every log is a `TCG_PCClientPCREvent`. **Format detection** follows §10.4.5.1
//! ("Specification ID Version Event") and nothing else: if the first event's data begins with the
//! signature `"Spec ID Event03\0"` the log is crypto-agile and every later event is a `TCG_PCR_EVENT2`;
//! otherwise the whole log is in the SHA-1 format of TCG 1.2 firmware. A first event carrying the
//! `Spec ID Event03` signature must be a well-formed `TCG_EfiSpecIDEventStruct` in an `EV_NO_ACTION` event
//! for PCR 0 with an all-zero digest; anything else is an error, never a fallback to the other format.
//!
//! The `TCG_EfiSpecIDEventStruct` lists `{algorithmId, digestSize}` for every bank the log carries. The
//! parser sizes each `TPMT_HA` by that table, so algorithms the engine cannot compute (SM3, SHA-3, vendor
//! ids) are skipped correctly; a digest whose algorithm the table does not declare is an error. Every
//! `TCG_PCR_EVENT2` must carry exactly one digest per declared algorithm ("All events in this event log
//! use all hashing algorithms defined here"), so no event can be hidden from one bank's replay.
//!
//! # Replay
//!
//! [`EventLog::replay`] computes all 24 PCRs of one bank: `PCR := H(PCR ‖ digest)` for every event
//! except `EV_NO_ACTION` events, which are informational and never extended (§10.4.1 Table 9
//! "Events"). Starting values (PC Client Platform TPM Profile, PCR attributes; PFP §10.4.5.3):
//!
//! * PCRs 0–16 and 23: all zeros;
//! * PCR 0, when the log holds a `StartupLocality` event (`EV_NO_ACTION`, PCR 0, data
//!   `"StartupLocality\0" ‖ locality`, §10.4.5.3): `00…00 ‖ locality`. Locality 3 means `TPM2_Startup`
//!   was sent from locality 3; locality 4 means an H-CRTM sequence (`_TPM_Hash_Start`) reset PCR 0 and
//!   the H-CRTM measurement (`EV_EFI_HCRTM_EVENT` or `EV_S_CRTM_CONTENTS`) follows as an ordinary extend.
//!   The event must precede every extend of PCR 0 and appear at most once; only 0, 3 and 4 are valid.
//! * PCRs 17–22 (the DRTM PCRs): all ones, their value after `TPM2_Startup`. A dynamic launch resets them
//!   to zero and is recorded in a separate DRTM log, which this module does not model.
//!
//! [`EventLog::check_against`] compares a replay with quoted values, for the PCRs the log touches.
//! SHA-1 banks are refused unless the caller allows them ([`Error::Sha1Refused`]).
//!
//! # Limits
//!
//! Every attacker-controlled length and count is checked against a named constant before use:
//! [`MAX_LOG_SIZE`], [`MAX_EVENTS`], [`MAX_EVENT_DATA_SIZE`], [`MAX_ALGORITHMS`],
//! [`MAX_DIGESTS_PER_EVENT`], [`MAX_DIGEST_SIZE`]. Each constant documents its source. Parsing and replay
//! never allocate; [`PcrBankValues`] is a fixed-size value.
//!
//! # Choices
//!
//! * The input must be exactly the log: trailing zero padding (as read from a firmware log area of fixed
//!   length) is not skipped, because a run of zeros is itself a syntactically valid event prefix. The
//!   Linux `binary_bios_measurements` file is exact.
//! * An empty input is rejected: it would "replay" to the reset state and touch no PCR, so
//!   [`EventLog::check_against`] would pass vacuously.
//! * A PCR index of 24 or more is an error in every event, including `EV_NO_ACTION` events.
//! * `EV_NO_ACTION` digests are exposed but not checked for being zero: they are never extended.

mod parse;
mod replay;

pub(crate) use parse::walk_cc_log;
pub use replay::PcrBankValues;

use crate::crypto::HashAlgorithm;
use crate::error::Error;
use core::fmt;

/// Largest log accepted, in bytes (1 MiB).
///
/// Source: EDK2's TCG2 log area (`PcdTcgLogAreaMinLen`) is 64 KiB and Linux exposes the log unchanged;
/// the largest real log in our test data is 50 KiB (a Google Distributed Cloud server). 1 MiB is 16× the
/// EDK2 default and bounds the work one log can cause.
pub const MAX_LOG_SIZE: usize = 1 << 20;

/// Most events accepted in one log (including the first, SHA-1 format event).
///
/// Source: real firmware logs hold tens to a few hundred events (159 in the largest test log); 16,384
/// bounds replay work to that many hash computations per bank.
pub const MAX_EVENTS: usize = 16_384;

/// Largest `eventSize` of one event, in bytes (256 KiB).
///
/// Source: the largest events are UEFI variable measurements (`EV_EFI_VARIABLE_DRIVER_CONFIG` of `db`/
/// `dbx`, up to tens of KiB; 23 KiB in our test data); UEFI variable stores are commonly 64–256 KiB, so no
/// single variable measurement can exceed this.
pub const MAX_EVENT_DATA_SIZE: usize = 256 * 1024;

/// Most algorithms a `TCG_EfiSpecIDEventStruct` may declare.
///
/// Source: `numberOfAlgorithms` counts PCR banks, one per hash algorithm the TPM implements (TPM 2.0
/// Library Part 2 `TPML_DIGEST_VALUES` holds at most `HASH_COUNT` digests). The TCG Algorithm Registry
/// defines 8 hash algorithms (SHA-1, SHA-256/384/512, SM3-256, SHA3-256/384/512); 16 leaves room.
pub const MAX_ALGORITHMS: usize = 16;

/// Most digests in one `TCG_PCR_EVENT2` (`TPML_DIGEST_VALUES.count`): one per declared algorithm, so the
/// same bound as [`MAX_ALGORITHMS`]. Checked before the exact-count rule.
pub const MAX_DIGESTS_PER_EVENT: usize = MAX_ALGORITHMS;

/// Largest `digestSize` a `TCG_EfiSpecIDEventStruct` may declare: 64 bytes, the largest member of
/// `TPMU_HA` (SHA-512, SHA3-512; TPM 2.0 Library Part 2 §10.3.1).
pub const MAX_DIGEST_SIZE: usize = 64;

/// Number of PCRs of a PC Client TPM (PC Client Platform TPM Profile: 24 PCRs per bank).
pub const PCR_COUNT: usize = 24;

// The per-event duplicate check uses a `u32` bit set indexed by the algorithm's position in the table.
const _: () = assert!(MAX_ALGORITHMS <= 32 && MAX_DIGESTS_PER_EVENT <= MAX_ALGORITHMS);

/// `"Spec ID Event03\0"`: the signature of a crypto-agile log's first event (§10.4.5.1).
pub const SPEC_ID_EVENT03_SIGNATURE: &[u8; 16] = b"Spec ID Event03\0";

/// `"StartupLocality\0"`: the signature of the Startup Locality event (§10.4.5.3).
pub const STARTUP_LOCALITY_SIGNATURE: &[u8; 16] = b"StartupLocality\0";

/// A TCG event type (PFP §10.4.1, Table 9 "Events"). Wire-open: unknown values are carried as is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType(pub u32);

macro_rules! event_types {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {
        impl EventType {
            $($(#[$doc])* pub const $name: Self = Self($value);)*

            /// The spec name (`"EV_NO_ACTION"`), if the type is one this module knows.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

event_types! {
    /// Pre-boot certificate (deprecated).
    EV_PREBOOT_CERT = 0x0000_0000;
    /// POST code, or an embedded firmware blob (BIOS).
    EV_POST_CODE = 0x0000_0001;
    /// Unused.
    EV_UNUSED = 0x0000_0002;
    /// Informational; **never extended** (§10.4.5).
    EV_NO_ACTION = 0x0000_0003;
    /// Separator between pre-OS and OS-present measurements.
    EV_SEPARATOR = 0x0000_0004;
    /// An action string.
    EV_ACTION = 0x0000_0005;
    /// Tagged event (`TCG_PCClientTaggedEvent`).
    EV_EVENT_TAG = 0x0000_0006;
    /// S-CRTM contents.
    EV_S_CRTM_CONTENTS = 0x0000_0007;
    /// S-CRTM version string.
    EV_S_CRTM_VERSION = 0x0000_0008;
    /// CPU microcode.
    EV_CPU_MICROCODE = 0x0000_0009;
    /// Platform configuration flags.
    EV_PLATFORM_CONFIG_FLAGS = 0x0000_000A;
    /// Table of devices.
    EV_TABLE_OF_DEVICES = 0x0000_000B;
    /// Compact hash.
    EV_COMPACT_HASH = 0x0000_000C;
    /// Initial program loader (boot loader measurements, e.g. GRUB commands and kernel command lines).
    EV_IPL = 0x0000_000D;
    /// IPL partition data.
    EV_IPL_PARTITION_DATA = 0x0000_000E;
    /// Non-host code.
    EV_NONHOST_CODE = 0x0000_000F;
    /// Non-host configuration.
    EV_NONHOST_CONFIG = 0x0000_0010;
    /// Non-host information.
    EV_NONHOST_INFO = 0x0000_0011;
    /// Boot device events omitted.
    EV_OMIT_BOOT_DEVICE_EVENTS = 0x0000_0012;
    /// Base of the UEFI event types.
    EV_EFI_EVENT_BASE = 0x8000_0000;
    /// UEFI variable (Secure Boot configuration: PK, KEK, db, dbx, SecureBoot).
    EV_EFI_VARIABLE_DRIVER_CONFIG = 0x8000_0001;
    /// UEFI boot variable (BootOrder, Boot####).
    EV_EFI_VARIABLE_BOOT = 0x8000_0002;
    /// UEFI boot services application (boot loader, shim).
    EV_EFI_BOOT_SERVICES_APPLICATION = 0x8000_0003;
    /// UEFI boot services driver.
    EV_EFI_BOOT_SERVICES_DRIVER = 0x8000_0004;
    /// UEFI runtime services driver.
    EV_EFI_RUNTIME_SERVICES_DRIVER = 0x8000_0005;
    /// GPT table.
    EV_EFI_GPT_EVENT = 0x8000_0006;
    /// UEFI action string.
    EV_EFI_ACTION = 0x8000_0007;
    /// Platform firmware blob.
    EV_EFI_PLATFORM_FIRMWARE_BLOB = 0x8000_0008;
    /// UEFI handoff tables.
    EV_EFI_HANDOFF_TABLES = 0x8000_0009;
    /// Platform firmware blob with description.
    EV_EFI_PLATFORM_FIRMWARE_BLOB2 = 0x8000_000A;
    /// UEFI handoff tables with description.
    EV_EFI_HANDOFF_TABLES2 = 0x8000_000B;
    /// UEFI boot variable, measured in full.
    EV_EFI_VARIABLE_BOOT2 = 0x8000_000C;
    /// H-CRTM measurement (extended into PCR 0 after a `StartupLocality` 4 event).
    EV_EFI_HCRTM_EVENT = 0x8000_0010;
    /// UEFI variable authority (the db entry that authorized an image).
    EV_EFI_VARIABLE_AUTHORITY = 0x8000_00E0;
    /// SPDM firmware blob.
    EV_EFI_SPDM_FIRMWARE_BLOB = 0x8000_00E1;
    /// SPDM firmware configuration.
    EV_EFI_SPDM_FIRMWARE_CONFIG = 0x8000_00E2;
}

impl fmt::Debug for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "EventType(0x{:08x})", self.0),
        }
    }
}

/// A TPM_ALG_ID naming a digest in an event (TPM 2.0 Library Part 2 §6.3; TCG Algorithm Registry).
/// Wire-open: logs may declare algorithms the engine cannot compute; their digests are still exposed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AlgorithmId(pub u16);

impl AlgorithmId {
    /// TPM_ALG_SHA1.
    pub const SHA1: Self = Self(super::alg::TPM_ALG_SHA1);
    /// TPM_ALG_SHA256.
    pub const SHA256: Self = Self(super::alg::TPM_ALG_SHA256);
    /// TPM_ALG_SHA384.
    pub const SHA384: Self = Self(super::alg::TPM_ALG_SHA384);
    /// TPM_ALG_SHA512.
    pub const SHA512: Self = Self(super::alg::TPM_ALG_SHA512);
    /// TPM_ALG_SM3_256.
    pub const SM3_256: Self = Self(0x0012);
    /// TPM_ALG_SHA3_256.
    pub const SHA3_256: Self = Self(0x0027);
    /// TPM_ALG_SHA3_384.
    pub const SHA3_384: Self = Self(0x0028);
    /// TPM_ALG_SHA3_512.
    pub const SHA3_512: Self = Self(0x0029);

    /// The algorithm of a bank the engine computes.
    pub const fn from_hash(alg: HashAlgorithm) -> Self {
        match alg {
            HashAlgorithm::Sha1 => Self::SHA1,
            HashAlgorithm::Sha256 => Self::SHA256,
            HashAlgorithm::Sha384 => Self::SHA384,
            HashAlgorithm::Sha512 => Self::SHA512,
        }
    }

    /// The engine's hash algorithm for this id, if it computes it.
    pub const fn hash_algorithm(self) -> Option<HashAlgorithm> {
        match self {
            Self::SHA1 => Some(HashAlgorithm::Sha1),
            Self::SHA256 => Some(HashAlgorithm::Sha256),
            Self::SHA384 => Some(HashAlgorithm::Sha384),
            Self::SHA512 => Some(HashAlgorithm::Sha512),
            _ => None,
        }
    }

    /// The digest size the TCG Algorithm Registry fixes for this id, if it is a registered hash.
    pub const fn registered_digest_size(self) -> Option<usize> {
        match self {
            Self::SHA1 => Some(20),
            Self::SHA256 | Self::SM3_256 | Self::SHA3_256 => Some(32),
            Self::SHA384 | Self::SHA3_384 => Some(48),
            Self::SHA512 | Self::SHA3_512 => Some(64),
            _ => None,
        }
    }
}

impl fmt::Debug for AlgorithmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.hash_algorithm() {
            Some(h) => f.write_str(h.name()),
            None => write!(f, "AlgorithmId(0x{:04x})", self.0),
        }
    }
}

/// The log's format, decided by its first event alone (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// TCG 1.2 style: every event is a `TCG_PCClientPCREvent` with one SHA-1 digest.
    Sha1,
    /// Crypto-agile: a `Spec ID Event03` first event, then `TCG_PCR_EVENT2` events.
    CryptoAgile,
}

/// The `TCG_EfiSpecIDEventStruct` of a crypto-agile log (§10.4.5.1), borrowed from the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecIdEvent<'a> {
    platform_class: u32,
    spec_version_minor: u8,
    spec_version_major: u8,
    spec_errata: u8,
    uintn_size: u8,
    /// `numberOfAlgorithms × {algorithmId u16, digestSize u16}`, validated.
    digest_sizes: &'a [u8],
    vendor_info: &'a [u8],
}

impl<'a> SpecIdEvent<'a> {
    /// `platformClass` (0 = client, 1 = server; TCG ACPI specification).
    pub fn platform_class(&self) -> u32 {
        self.platform_class
    }
    /// `(specVersionMajor, specVersionMinor, specErrata)`; always `(2, 0, _)` once parsed.
    pub fn spec_version(&self) -> (u8, u8, u8) {
        (self.spec_version_major, self.spec_version_minor, self.spec_errata)
    }
    /// `uintnSize`: 1 for UINT32, 2 for UINT64 `UINTN` fields in event data.
    pub fn uintn_size(&self) -> u8 {
        self.uintn_size
    }
    /// The declared `{algorithmId, digestSize}` pairs, in log order.
    pub fn algorithms(&self) -> Algorithms<'a> {
        Algorithms { table: self.digest_sizes }
    }
    /// `vendorInfo`.
    pub fn vendor_info(&self) -> &'a [u8] {
        self.vendor_info
    }
}

/// Iterator over a Spec ID event's `{algorithmId, digestSize}` table.
#[derive(Clone, Debug)]
pub struct Algorithms<'a> {
    table: &'a [u8],
}

impl Iterator for Algorithms<'_> {
    type Item = (AlgorithmId, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let (entry, rest) = self.table.split_first_chunk::<4>()?;
        self.table = rest;
        Some((
            AlgorithmId(u16::from_le_bytes([entry[0], entry[1]])),
            usize::from(u16::from_le_bytes([entry[2], entry[3]])),
        ))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.table.len() / 4;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Algorithms<'_> {}

/// How an event's digests are laid out: the SHA-1 format's single digest, or a `TPML_DIGEST_VALUES`
/// sized by the Spec ID event's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DigestLayout<'a> {
    Sha1,
    Agile(&'a [u8]),
}

impl DigestLayout<'_> {
    /// `(position in the table, digest size)` of `alg`.
    fn lookup(self, alg: AlgorithmId) -> Option<(usize, usize)> {
        match self {
            Self::Sha1 => (alg == AlgorithmId::SHA1).then_some((0, 20)),
            Self::Agile(table) => {
                Algorithms { table }.enumerate().find(|(_, (a, _))| *a == alg).map(|(i, (_, n))| (i, n))
            }
        }
    }
}

/// One event, borrowed from the log. Obtained from [`EventLog::events`].
#[derive(Clone, Debug)]
pub struct Event<'a> {
    index: usize,
    offset: usize,
    pcr_index: u32,
    /// `eventType`.
    ty: EventType,
    digests: EventDigests<'a>,
    data: &'a [u8],
}

impl<'a> Event<'a> {
    /// Position in the log (0 = the first, SHA-1 format event; in a crypto-agile log, the Spec ID event).
    pub fn index(&self) -> usize {
        self.index
    }
    /// Byte offset of the event in the log.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// `pcrIndex` (always below [`PCR_COUNT`]).
    pub fn pcr_index(&self) -> u32 {
        self.pcr_index
    }
    /// `eventType`.
    pub fn event_type(&self) -> EventType {
        self.ty
    }
    /// Whether replay extends this event (every type but `EV_NO_ACTION`).
    pub fn is_extended(&self) -> bool {
        self.ty != EventType::EV_NO_ACTION
    }
    /// The event's digests, in log order.
    pub fn digests(&self) -> EventDigests<'a> {
        self.digests.clone()
    }
    /// The digest for `alg`, if the event carries one.
    pub fn digest(&self, alg: AlgorithmId) -> Option<&'a [u8]> {
        self.digests().find(|(a, _)| *a == alg).map(|(_, d)| d)
    }
    /// The event data (`event[eventSize]`).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
}

/// Iterator over one event's `(algorithm, digest)` pairs.
#[derive(Clone, Debug)]
pub struct EventDigests<'a> {
    /// The SHA-1 digest, or the `TPMT_HA` array (without its count).
    raw: &'a [u8],
    remaining: usize,
    layout: DigestLayout<'a>,
}

impl<'a> Iterator for EventDigests<'a> {
    type Item = (AlgorithmId, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        match self.layout {
            DigestLayout::Sha1 => Some((AlgorithmId::SHA1, self.raw)),
            DigestLayout::Agile(_) => {
                // Validated at parse time; the `?`s only stop iteration on impossible input.
                let (alg, rest) = self.raw.split_first_chunk::<2>()?;
                let alg = AlgorithmId(u16::from_le_bytes(*alg));
                let (_, size) = self.layout.lookup(alg)?;
                let digest = rest.get(..size)?;
                self.raw = &rest[size..];
                Some((alg, digest))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for EventDigests<'_> {}

/// A validated TCG PC Client event log, borrowing the input.
#[derive(Clone, Debug)]
pub struct EventLog<'a> {
    bytes: &'a [u8],
    spec_id: Option<SpecIdEvent<'a>>,
    event_count: usize,
    startup_locality: Option<u8>,
}

impl<'a> EventLog<'a> {
    /// Parses and validates the whole log once; see the module docs for the rules.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        parse::parse(bytes)
    }

    /// The log's format.
    pub fn format(&self) -> LogFormat {
        if self.spec_id.is_some() { LogFormat::CryptoAgile } else { LogFormat::Sha1 }
    }

    /// The Spec ID event of a crypto-agile log.
    pub fn spec_id(&self) -> Option<&SpecIdEvent<'a>> {
        self.spec_id.as_ref()
    }

    /// The number of events, including the first (SHA-1 format) event.
    pub fn len(&self) -> usize {
        self.event_count
    }

    /// Always `false`: an empty log does not parse.
    pub fn is_empty(&self) -> bool {
        self.event_count == 0
    }

    /// The locality of the `StartupLocality` event, if the log has one.
    pub fn startup_locality(&self) -> Option<u8> {
        self.startup_locality
    }

    /// The input bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The algorithms whose digests every extended event carries, with their sizes.
    pub fn algorithms(&self) -> Algorithms<'a> {
        const SHA1_ONLY: &[u8] = &[0x04, 0x00, 20, 0x00];
        match &self.spec_id {
            Some(s) => s.algorithms(),
            None => Algorithms { table: SHA1_ONLY },
        }
    }

    /// Whether the log carries digests for `bank`.
    pub fn has_bank(&self, bank: HashAlgorithm) -> bool {
        self.layout().lookup(AlgorithmId::from_hash(bank)).is_some()
    }

    /// Every event, in log order, borrowing the input.
    pub fn events(&self) -> Events<'a> {
        Events { bytes: self.bytes, pos: 0, index: 0, layout: self.layout(), remaining: self.event_count }
    }

    fn layout(&self) -> DigestLayout<'a> {
        match &self.spec_id {
            Some(s) => DigestLayout::Agile(s.digest_sizes),
            None => DigestLayout::Sha1,
        }
    }
}

/// Iterator over a validated log's events.
#[derive(Clone, Debug)]
pub struct Events<'a> {
    bytes: &'a [u8],
    pos: usize,
    index: usize,
    layout: DigestLayout<'a>,
    remaining: usize,
}

impl<'a> Iterator for Events<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if self.remaining == 0 {
            return None;
        }
        // The first event is always in the SHA-1 format (§10.2.1).
        let layout = if self.index == 0 { DigestLayout::Sha1 } else { self.layout };
        // The log was validated by `parse`, so decoding cannot fail; should it, iteration stops.
        let Ok((event, end)) = parse::decode_event(self.bytes, self.pos, self.index, layout) else {
            self.remaining = 0;
            return None;
        };
        self.pos = end;
        self.index += 1;
        self.remaining -= 1;
        Some(event)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Events<'_> {}
