//! Replay of the Confidential Computing event log (CCEL) against a TD quote's RTMRs.
//!
//! TDX firmware (TDVF/OVMF, TD-shim) records every measurement it extends into an RTMR in the log area the
//! ACPI `CCEL` table points at (UEFI 2.10 §38.4 "EFI_CC_MEASUREMENT_PROTOCOL"; Intel TDX Virtual Firmware
//! Design Guide §10 "Measurement"). The log is a crypto-agile TCG event log (parsed with
//! [`crate::tpm::eventlog`]'s event decoder) whose index field is the CC measurement register: 0 = MRTD
//! (built by the TDX module, never extended from the log), 1–4 = RTMR0–3. Each RTMR starts at 48 zero bytes
//! and is extended as `RTMR := SHA-384(RTMR ‖ digest)` with the event's SHA-384 digest, for every event
//! except `EV_NO_ACTION` ones.
//!
//! The log area is larger than the log: the walk stops where the rest is unwritten (all 0xFF or all zero).
//! [`replay`] returns the four values and which registers the log touched; [`check_against`] requires each
//! touched register to equal the quote's (an untouched register is not judged by the log: a log that
//! touches nothing proves nothing, and is refused).
//!
//! [`CcelTable`] reads the ACPI table itself (what an attester finds at `/sys/firmware/acpi/tables/CCEL`,
//! next to the log area at `…/tables/data/CCEL`), and [`written_log`] cuts a log area to its written part,
//! which is what a document carries.

use super::body::TdReport;
use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::{Bytes, Error};
use crate::tpm::eventlog::{AlgorithmId, EventType, walk_cc_log};

/// The highest CC measurement-register index (RTMR3).
const MAX_CC_MR_INDEX: u32 = 4;

/// The replayed RTMR values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtmrReplay {
    /// RTMR0..RTMR3 after the log.
    pub rtmrs: [[u8; 48]; 4],
    /// Bit `i` set when the log extended RTMR `i`.
    pub touched: u8,
    /// Length of the log within the input (the rest is the unwritten log area).
    pub log_len: usize,
    /// Number of events, the Spec ID event included.
    pub events: usize,
}

/// Replays a CCEL log area into RTMR0–3 (SHA-384).
pub fn replay(provider: &CryptoProvider, log: &[u8]) -> Result<RtmrReplay, Error> {
    let mut rtmrs = [[0u8; 48]; 4];
    let mut touched = 0u8;
    let (log_len, events) = walk_cc_log(log, MAX_CC_MR_INDEX, |ev| {
        if ev.event_type() == EventType::EV_NO_ACTION {
            return Ok(());
        }
        let Some(index) = ev.pcr_index().checked_sub(1) else {
            return Err(Error::EventLog { offset: ev.offset(), reason: "an event extends MRTD (index 0)" });
        };
        let digest = ev
            .digest(AlgorithmId::SHA384)
            .ok_or(Error::EventLog { offset: ev.offset(), reason: "event without a SHA-384 digest" })?;
        let i = index as usize;
        let next = provider.digests.digest(HashAlgorithm::Sha384, &[&rtmrs[i], digest]);
        rtmrs[i].copy_from_slice(next.as_bytes());
        touched |= 1 << i;
        Ok(())
    })?;
    Ok(RtmrReplay { rtmrs, touched, log_len, events })
}

/// Replays `log` and requires every RTMR it touches to equal the quote's. Returns the replay.
pub fn check_against(provider: &CryptoProvider, log: &[u8], body: &TdReport<'_>) -> Result<RtmrReplay, Error> {
    let r = replay(provider, log)?;
    if r.touched == 0 {
        return Err(Error::EventLog { offset: 0, reason: "the CC event log extends no RTMR" });
    }
    for (i, (replayed, quoted)) in r.rtmrs.iter().zip(body.rtmrs()).enumerate() {
        if r.touched & (1 << i) != 0 && replayed != quoted {
            return Err(Error::RtmrReplayMismatch {
                rtmr: i as u8,
                expected: Bytes::new(quoted),
                replayed: Bytes::new(replayed),
            });
        }
    }
    Ok(r)
}

/// Size of the ACPI CCEL table (ACPI 6.5 §5.2.34 "Confidential Computing Event Log Table"): the 36-byte
/// ACPI header, CC type, CC subtype, 2 reserved bytes, LAML (u64), LASA (u64).
pub const CCEL_TABLE_SIZE: usize = 56;
/// The CC type of Intel TDX in the CCEL table.
pub const CC_TYPE_TDX: u8 = 2;
/// Largest log area accepted (TDVF reserves 64 KiB–256 KiB; OVMF's default is 256 KiB).
pub const MAX_CCEL_LOG_AREA: usize = 16 * 1024 * 1024;

/// The ACPI CCEL table, checked: signature, length, checksum, a known CC type and a log area within
/// [`MAX_CCEL_LOG_AREA`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcelTable {
    /// CC type (2: TDX; 1: SEV).
    pub cc_type: u8,
    /// CC subtype.
    pub cc_subtype: u8,
    /// LAML: the log area's minimum length.
    pub log_area_min_len: u64,
    /// LASA: the log area's guest-physical start address.
    pub log_area_start: u64,
}

impl CcelTable {
    /// Parses the table (exactly [`CCEL_TABLE_SIZE`] bytes; the ACPI length field must say so, and the
    /// bytes must sum to zero modulo 256 as ACPI requires).
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let bad = |offset: usize, reason: &'static str| Error::EventLog { offset, reason };
        if bytes.len() < CCEL_TABLE_SIZE {
            return Err(Error::Truncated { structure: "ACPI CCEL table", needed: CCEL_TABLE_SIZE, found: bytes.len() });
        }
        if bytes.len() > CCEL_TABLE_SIZE {
            return Err(Error::TrailingData { structure: "ACPI CCEL table", extra: bytes.len() - CCEL_TABLE_SIZE });
        }
        if &bytes[..4] != b"CCEL" {
            return Err(bad(0, "not an ACPI CCEL table (signature)"));
        }
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_le_bytes(b)
        };
        if u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize != CCEL_TABLE_SIZE {
            return Err(bad(4, "the ACPI table length is not 56"));
        }
        if bytes.iter().fold(0u8, |sum, b| sum.wrapping_add(*b)) != 0 {
            return Err(bad(9, "the ACPI table checksum does not sum to zero"));
        }
        let table = Self {
            cc_type: bytes[36],
            cc_subtype: bytes[37],
            log_area_min_len: u64_at(40),
            log_area_start: u64_at(48),
        };
        if table.cc_type != CC_TYPE_TDX && table.cc_type != 1 {
            return Err(bad(36, "unknown CC type (1: SEV, 2: TDX)"));
        }
        if table.log_area_min_len == 0 || table.log_area_min_len > MAX_CCEL_LOG_AREA as u64 {
            return Err(Error::LimitExceeded {
                what: "CCEL log area",
                limit: MAX_CCEL_LOG_AREA,
                found: usize::try_from(table.log_area_min_len).unwrap_or(usize::MAX),
            });
        }
        Ok(table)
    }
}

/// The written part of a TDX log area (`log_area`, as read next to the table): the log must replay
/// ([`replay`]: well-formed events, SHA-384 digests, nothing extending MRTD) and the area must be no larger
/// than the table's minimum length allows for (`table.log_area_min_len`, at most [`MAX_CCEL_LOG_AREA`]).
pub fn written_log<'a>(provider: &CryptoProvider, table: &CcelTable, log_area: &'a [u8]) -> Result<&'a [u8], Error> {
    if table.cc_type != CC_TYPE_TDX {
        return Err(Error::EventLog { offset: 36, reason: "the CCEL table is not a TDX one" });
    }
    if log_area.len() as u64 > table.log_area_min_len.max(1).min(MAX_CCEL_LOG_AREA as u64) {
        return Err(Error::LimitExceeded {
            what: "CCEL log area (beyond the table's LAML)",
            limit: usize::try_from(table.log_area_min_len).unwrap_or(usize::MAX),
            found: log_area.len(),
        });
    }
    let r = replay(provider, log_area)?;
    Ok(&log_area[..r.log_len])
}
