//! PCR replay of a validated log, and comparison with quoted PCR values.

use super::{AlgorithmId, EventLog, EventType, PCR_COUNT};
use crate::crypto::{CryptoProvider, Digest, HashAlgorithm};
use crate::error::{Bytes, Error};
use core::fmt;

/// The first DRTM PCR; PCRs 17–22 start at all ones (PC Client Platform TPM Profile, PCR attributes).
const FIRST_DRTM_PCR: usize = 17;
/// The last DRTM PCR.
const LAST_DRTM_PCR: usize = 22;

/// The replayed values of all 24 PCRs of one bank, and which PCRs the log touched. Fixed-size, no heap.
#[derive(Clone, PartialEq, Eq)]
pub struct PcrBankValues {
    bank: HashAlgorithm,
    values: [Digest; PCR_COUNT],
    touched: u32,
}

impl PcrBankValues {
    /// The starting values of `bank` (see the module docs), with PCR 0 starting at `00…00 ‖ locality`.
    fn initial(bank: HashAlgorithm, startup_locality: Option<u8>) -> Self {
        let len = bank.output_len();
        let mut values = [Digest::zero(bank); PCR_COUNT];
        let ones = Digest::new(&[0xFF; 64][..len]);
        for v in &mut values[FIRST_DRTM_PCR..=LAST_DRTM_PCR] {
            *v = ones;
        }
        let mut touched = 0;
        if let Some(locality) = startup_locality {
            let mut pcr0 = [0u8; 64];
            pcr0[len - 1] = locality;
            values[0] = Digest::new(&pcr0[..len]);
            // The log states PCR 0's starting value, so it makes a claim about PCR 0.
            touched |= 1;
        }
        Self { bank, values, touched }
    }

    /// The bank.
    pub fn bank(&self) -> HashAlgorithm {
        self.bank
    }

    /// The replayed value of `pcr` (`None` when `pcr` is 24 or more).
    pub fn get(&self, pcr: usize) -> Option<&[u8]> {
        self.values.get(pcr).map(Digest::as_bytes)
    }

    /// Whether the log extended `pcr` (or, for PCR 0, set its starting value with a StartupLocality event).
    pub fn is_touched(&self, pcr: usize) -> bool {
        pcr < PCR_COUNT && self.touched & (1 << pcr) != 0
    }

    /// The touched PCRs as a bit set (bit `i` = PCR `i`).
    pub fn touched_mask(&self) -> u32 {
        self.touched
    }

    /// `(pcr, value)` for every touched PCR, in index order.
    pub fn touched(&self) -> impl Iterator<Item = (u8, &[u8])> + '_ {
        (0..PCR_COUNT as u8)
            .filter(|i| self.is_touched(usize::from(*i)))
            .map(|i| (i, self.values[usize::from(i)].as_bytes()))
    }
}

impl fmt::Debug for PcrBankValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (i, v) in self.values.iter().enumerate() {
            let mark = if self.is_touched(i) { "" } else { " (untouched)" };
            m.entry(&format_args!("{}[{i}]{mark}", self.bank.name()), v);
        }
        m.finish()
    }
}

impl EventLog<'_> {
    /// Replays the log into all 24 PCRs of `bank` (see the module docs for the starting values). Every
    /// event but `EV_NO_ACTION` is extended: `PCR := H(PCR ‖ digest)`. Allocation-free.
    ///
    /// Errors: [`Error::Sha1Refused`] for SHA-1 unless `allow_sha1`; [`Error::UnsupportedTpmAlgorithm`]
    /// if the log carries no digests for `bank`.
    pub fn replay(
        &self,
        provider: &CryptoProvider,
        bank: HashAlgorithm,
        allow_sha1: bool,
    ) -> Result<PcrBankValues, Error> {
        if bank == HashAlgorithm::Sha1 && !allow_sha1 {
            return Err(Error::Sha1Refused);
        }
        let alg = AlgorithmId::from_hash(bank);
        if !self.has_bank(bank) {
            return Err(Error::UnsupportedTpmAlgorithm { what: "event log bank (not in the log)", id: alg.0 });
        }
        let mut out = PcrBankValues::initial(bank, self.startup_locality);
        for event in self.events() {
            if event.event_type() == EventType::EV_NO_ACTION {
                continue;
            }
            // Parsing guaranteed one digest per declared algorithm and pcrIndex < 24.
            let digest = event
                .digest(alg)
                .ok_or(Error::EventLog { offset: event.offset(), reason: "no digest for the bank" })?;
            let pcr = event.pcr_index() as usize;
            let slot = out
                .values
                .get_mut(pcr)
                .ok_or(Error::EventLog { offset: event.offset(), reason: "pcrIndex is not below 24" })?;
            *slot = provider.digests.digest(bank, &[slot.as_bytes(), digest]);
            out.touched |= 1 << pcr;
        }
        Ok(out)
    }

    /// Replays `bank` and compares it with `quoted` `(pcr, value)` pairs (e.g. from a verified quote).
    /// Only PCRs the log touches are compared (the log says nothing about the others, e.g. PCR 10 under
    /// IMA); the first differing one, in `quoted` order, is reported as
    /// [`Error::EventLogReplayMismatch`]. A value of the wrong length is [`Error::PcrValueMissing`]; a PCR
    /// index of 24 or more is [`Error::Misuse`].
    ///
    /// When the log touches none of the quoted PCRs this succeeds: callers that require the log to cover
    /// certain PCRs check [`PcrBankValues::is_touched`] on [`EventLog::replay`]'s result.
    pub fn check_against(
        &self,
        provider: &CryptoProvider,
        bank: HashAlgorithm,
        quoted: &[(u8, &[u8])],
        allow_sha1: bool,
    ) -> Result<(), Error> {
        let replayed = self.replay(provider, bank, allow_sha1)?;
        for &(pcr, value) in quoted {
            let Some(ours) = replayed.get(usize::from(pcr)) else {
                return Err(Error::Misuse { reason: "quoted PCR index is not below 24" });
            };
            if value.len() != bank.output_len() {
                return Err(Error::PcrValueMissing { bank, pcr });
            }
            if replayed.is_touched(usize::from(pcr)) && value != ours {
                return Err(Error::EventLogReplayMismatch {
                    bank,
                    pcr,
                    expected: Bytes::new(value),
                    replayed: Bytes::new(ours),
                });
            }
        }
        Ok(())
    }
}
