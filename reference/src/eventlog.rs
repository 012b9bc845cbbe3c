//! The predicted events as a TCG PC Client crypto-agile event log (TCG PC Client Platform Firmware Profile
//! §10.2.1–§10.2.2): a legacy-format `EV_NO_ACTION` header event carrying the `Spec ID Event03` structure
//! (platform class 0, spec 2.0 errata 0, UINTN size 2 = 64-bit, the banks and their digest sizes), then one
//! TCG_PCR_EVENT2 per event with a digest per bank.
//!
//! Such a log replays to the predicted PCR values with any event-log tool (and with the engine's
//! [`EventLog`](attest_engine::tpm::eventlog::EventLog)); put next to the log a firmware wrote, it shows
//! which event differs. Image-load events carry an empty device path (see [`crate::boot::Event::data`]).

use crate::boot::{Event, Prediction};
use attest_engine::crypto::HashAlgorithm;

/// TPM_ALG_ID of a bank (TCG Algorithm Registry).
pub fn tpm_alg_id(alg: HashAlgorithm) -> u16 {
    match alg {
        HashAlgorithm::Sha1 => 0x0004,
        HashAlgorithm::Sha256 => 0x000B,
        HashAlgorithm::Sha384 => 0x000C,
        HashAlgorithm::Sha512 => 0x000D,
    }
}

/// EV_NO_ACTION (PFP §10.4.1).
const EV_NO_ACTION: u32 = 3;

impl Prediction {
    /// The events as a crypto-agile binary event log.
    pub fn to_event_log(&self) -> Vec<u8> {
        write(0, &self.banks, &self.events)
    }
}

/// `events` (one digest per bank, in `banks` order) as a crypto-agile binary event log whose header event
/// carries `header_index` (a TCG log: PCR 0; a CC log as TDVF writes it: 1).
pub(crate) fn write(header_index: u32, banks: &[HashAlgorithm], events: &[Event]) -> Vec<u8> {
    let mut spec = Vec::new();
    spec.extend_from_slice(b"Spec ID Event03\0");
    spec.extend_from_slice(&0u32.to_le_bytes()); // platformClass
    spec.extend_from_slice(&[0, 2, 0, 2]); // specVersionMinor, Major, errata, uintnSize
    spec.extend_from_slice(&(banks.len() as u32).to_le_bytes());
    for &b in banks {
        spec.extend_from_slice(&tpm_alg_id(b).to_le_bytes());
        spec.extend_from_slice(&(b.output_len() as u16).to_le_bytes());
    }
    spec.push(0); // vendorInfoSize

    let mut out = Vec::new();
    out.extend_from_slice(&header_index.to_le_bytes());
    out.extend_from_slice(&EV_NO_ACTION.to_le_bytes());
    out.extend_from_slice(&[0u8; 20]);
    out.extend_from_slice(&(spec.len() as u32).to_le_bytes());
    out.extend_from_slice(&spec);
    for e in events {
        out.extend_from_slice(&u32::from(e.pcr).to_le_bytes());
        out.extend_from_slice(&e.event_type.to_le_bytes());
        out.extend_from_slice(&(banks.len() as u32).to_le_bytes());
        for (alg, d) in banks.iter().zip(&e.digests) {
            out.extend_from_slice(&tpm_alg_id(*alg).to_le_bytes());
            out.extend_from_slice(d.as_bytes());
        }
        out.extend_from_slice(&(e.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&e.data);
    }
    out
}
