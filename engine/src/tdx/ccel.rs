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
