//! An open TPM: PCR reads and extends, quotes, and the handle discipline that keeps a TPM without a
//! resource manager usable.
//!
//! # Handles and sessions
//!
//! On the swtpm TCTI there is no resource manager: every transient object and session stays loaded in the
//! TPM after our connection closes, and the TPM runs out of object slots after three (`docs/ARCHITECTURE.md`, "Set-up facts"). So no
//! transient handle ever leaves this module's functions: each command that needs one (the EK, a
//! re-created AK, a policy session) loads it, uses it and flushes it before returning, on the error path
//! too (`Tpm::with_transient`). Persistent handles are only *closed* (the ESYS_TR is released; the
//! object stays in NV).
//!
//! Quotes, PCR extends and AK use authorize with a **password session** (empty auth): 0.8–3.6 ms per quote
//! on swtpm, against 6–9 ms with a fresh HMAC session per call (`docs/ARCHITECTURE.md`, "Set-up facts"). Parameter encryption is
//! pointless here: nothing secret crosses the bus for those commands. The credential activation is the
//! one place a policy session is needed (the EK's authPolicy is PolicySecret(TPM_RH_ENDORSEMENT)).

use super::{Error, tpm_error};
use std::str::FromStr;
use tss_esapi::Context;
use tss_esapi::handles::{ObjectHandle, PcrHandle};
use tss_esapi::interface_types::algorithm::HashingAlgorithm;
use tss_esapi::interface_types::session_handles::AuthSession;
use tss_esapi::structures::{Data, Digest, DigestValues, PcrSelectionListBuilder, PcrSlot, SignatureScheme};
use tss_esapi::tcti_ldr::TctiNameConf;
use tss_esapi::traits::Marshall;

/// PCRs per bank (PC Client platform TPM profile).
pub const PCR_COUNT: usize = 24;

/// (index, SHA-256 value) of PCRs, in selection order.
pub(super) type PcrValues = Vec<(u8, [u8; 32])>;

/// A bitmap of PCR indices (bit n = PCR n), for 0..=23.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcrMask(u32);

impl PcrMask {
    /// PCRs 0..=23.
    pub const ALL: Self = Self((1 << PCR_COUNT) - 1);

    /// A mask from PCR indices; fails for an index ≥ 24.
    pub fn from_indices(indices: &[u8]) -> Result<Self, Error> {
        let mut bits = 0u32;
        for &i in indices {
            if usize::from(i) >= PCR_COUNT {
                return Err(Error::InvalidArgument { what: "PCR index above 23" });
            }
            bits |= 1 << i;
        }
        Ok(Self(bits))
    }

    /// The bitmap.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The selected indices in ascending order.
    pub fn indices(self) -> impl Iterator<Item = u8> {
        (0..PCR_COUNT as u8).filter(move |i| self.0 & (1 << i) != 0)
    }

    fn slots(self) -> Vec<PcrSlot> {
        // Every bit below 24 is a valid TPM2_PCR_SELECT slot.
        self.indices().filter_map(|i| PcrSlot::try_from(1u32 << i).ok()).collect()
    }
}

/// SHA-256 PCR values, by index (`None` = not read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sha256Pcrs(pub [Option<[u8; 32]>; PCR_COUNT]);

impl Sha256Pcrs {
    /// The value of PCR `index`, if read.
    pub fn get(&self, index: u8) -> Option<&[u8; 32]> {
        self.0.get(usize::from(index)).and_then(Option::as_ref)
    }
}

/// A quote as the TPM returned it, marshalled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    /// TPMS_ATTEST.
    pub attest: Vec<u8>,
    /// TPMT_SIGNATURE.
    pub signature: Vec<u8>,
}

/// An open TPM (one TCTI connection).
pub struct Tpm {
    pub(super) ctx: Context,
    tcti: String,
    /// The ESYS_TR of the persisted AK, resolved once (TPM2_ReadPublic) and kept for later quotes.
    pub(super) persistent_ak: Option<(u32, ObjectHandle)>,
    /// The PCR values the last consistent quote proved, by mask: a later quote whose pcrDigest they match
    /// needs no TPM2_PCR_Read ([`Tpm::consistent_quote`]).
    pub(super) quoted_pcrs: Option<(PcrMask, PcrValues)>,
}

impl core::fmt::Debug for Tpm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tpm").field("tcti", &self.tcti).finish_non_exhaustive()
    }
}

impl Tpm {
    /// Opens the TPM named by a TCTI string: `swtpm:host=127.0.0.1,port=2321`, `device:/dev/tpmrm0`,
    /// `mssim:…`, `tabrmd:…`.
    pub fn open(tcti: &str) -> Result<Self, Error> {
        let conf = TctiNameConf::from_str(tcti).map_err(tpm_error("parsing the TCTI string"))?;
        let ctx = Context::new(conf).map_err(tpm_error("opening the TCTI"))?;
        Ok(Self { ctx, tcti: tcti.to_owned(), persistent_ak: None, quoted_pcrs: None })
    }

    /// The TCTI string this TPM was opened with.
    pub fn tcti(&self) -> &str {
        &self.tcti
    }

    /// Runs `f` with the transient `handle` loaded and flushes it afterwards, whether `f` succeeded or not.
    /// A flush failure is reported only when `f` succeeded (the first error wins).
    pub(super) fn with_transient<T>(
        &mut self,
        handle: ObjectHandle,
        f: impl FnOnce(&mut Context, ObjectHandle) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let out = f(&mut self.ctx, handle);
        let flushed = self.ctx.flush_context(handle).map_err(tpm_error("TPM2_FlushContext"));
        let value = out?;
        flushed?;
        Ok(value)
    }

    /// Reads the SHA-256 bank for the PCRs in `mask`. TPM2_PCR_Read returns at most eight digests per call
    /// (TPML_DIGEST), and the TPM says which ones it returned, so this asks again for the rest until every
    /// requested PCR is read.
    pub fn read_pcrs(&mut self, mask: PcrMask) -> Result<Sha256Pcrs, Error> {
        let mut out = Sha256Pcrs::default();
        let mut remaining = mask;
        while remaining.0 != 0 {
            let selection = PcrSelectionListBuilder::new()
                .with_selection(HashingAlgorithm::Sha256, &remaining.slots())
                .build()
                .map_err(tpm_error("building a PCR selection"))?;
            let (_, read, digests) =
                self.ctx.execute_without_session(|ctx| ctx.pcr_read(selection)).map_err(tpm_error("TPM2_PCR_Read"))?;
            let mut read_bits = 0u32;
            for sel in read.get_selections() {
                if sel.hashing_algorithm() != HashingAlgorithm::Sha256 {
                    return Err(Error::UnexpectedTpmOutput { what: "TPM2_PCR_Read returned another bank" });
                }
                for slot in sel.selected() {
                    read_bits |= u32::from(slot);
                }
            }
            if read_bits == 0 || read_bits & !remaining.0 != 0 {
                // The SHA-256 bank is not active, or the TPM returned PCRs we did not ask for.
                return Err(Error::UnexpectedTpmOutput {
                    what: "TPM2_PCR_Read returned no or unrequested SHA-256 PCRs",
                });
            }
            let read_mask = PcrMask(read_bits);
            if read_mask.indices().count() != digests.len() {
                return Err(Error::UnexpectedTpmOutput {
                    what: "TPM2_PCR_Read: digest count differs from its selection",
                });
            }
            // Digests come in ascending PCR order within the (single) selection.
            for (i, d) in read_mask.indices().zip(digests.value()) {
                let value: [u8; 32] = d
                    .value()
                    .try_into()
                    .map_err(|_| Error::UnexpectedTpmOutput { what: "a SHA-256 PCR value that is not 32 bytes" })?;
                out.0[usize::from(i)] = Some(value);
            }
            remaining.0 &= !read_bits;
        }
        Ok(out)
    }

    /// Extends SHA-256 PCR `index` with `digest` (TPM2_PCR_Extend with one TPMT_HA; other active banks are
    /// not extended).
    pub fn extend_pcr(&mut self, index: u8, digest: &[u8; 32]) -> Result<(), Error> {
        let handle =
            *PCR_HANDLES.get(usize::from(index)).ok_or(Error::InvalidArgument { what: "PCR index above 23" })?;
        let mut values = DigestValues::new();
        values.set(HashingAlgorithm::Sha256, Digest::try_from(&digest[..]).map_err(tpm_error("building a digest"))?);
        self.ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| ctx.pcr_extend(handle, values))
            .map_err(tpm_error("TPM2_PCR_Extend"))
    }

    /// TPM2_Quote over the SHA-256 PCRs in `mask` with `extra_data` (at most 64 bytes), signed by `signer`
    /// with the key's own scheme, authorized by a password session. Returns the marshalled TPMS_ATTEST and
    /// TPMT_SIGNATURE.
    ///
    /// tss-esapi unmarshals TPM2B_ATTEST into its own type; re-marshalling a quote is the identity (the
    /// verifier checks the signature over exactly these bytes, so any difference would fail loudly).
    pub(super) fn quote_with(
        &mut self,
        signer: ObjectHandle,
        mask: PcrMask,
        extra_data: &[u8],
    ) -> Result<Quote, Error> {
        let selection = PcrSelectionListBuilder::new()
            .with_selection(HashingAlgorithm::Sha256, &mask.slots())
            .build()
            .map_err(tpm_error("building a PCR selection"))?;
        let data = Data::try_from(extra_data)
            .map_err(|_| Error::InvalidArgument { what: "quote extraData longer than 64 bytes" })?;
        let (attest, signature) = self
            .ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| {
                ctx.quote(signer.into(), data, SignatureScheme::Null, selection)
            })
            .map_err(tpm_error("TPM2_Quote"))?;
        Ok(Quote {
            attest: attest.marshall().map_err(tpm_error("marshalling TPMS_ATTEST"))?,
            signature: signature.marshall().map_err(tpm_error("marshalling TPMT_SIGNATURE"))?,
        })
    }

    /// How many transient objects and sessions (loaded or saved) the TPM holds right now — zero between our
    /// calls if the flush discipline holds (TPM2_GetCapability(TPM_CAP_HANDLES) over 0x80…, 0x02… and 0x03…).
    pub fn loaded_handle_count(&mut self) -> Result<usize, Error> {
        use tss_esapi::constants::CapabilityType;
        use tss_esapi::structures::CapabilityData;
        let mut n = 0;
        for first in [0x8000_0000u32, 0x0200_0000, 0x0300_0000] {
            let (data, _) = self
                .ctx
                .execute_without_session(|ctx| ctx.get_capability(CapabilityType::Handles, first, 64))
                .map_err(tpm_error("TPM2_GetCapability (handles)"))?;
            if let CapabilityData::Handles(list) = data {
                n += list.iter().filter(|h| u32::from(**h) >> 24 == first >> 24).count();
            }
        }
        Ok(n)
    }

    /// Random bytes from the TPM's RNG (TPM2_GetRandom, at most 64 per call on most TPMs).
    pub fn random(&mut self, len: usize) -> Result<Vec<u8>, Error> {
        let d = self.ctx.execute_without_session(|ctx| ctx.get_random(len)).map_err(tpm_error("TPM2_GetRandom"))?;
        Ok(d.value().to_vec())
    }
}

/// ESYS_TR handles of PCRs 0..=23.
const PCR_HANDLES: [PcrHandle; PCR_COUNT] = [
    PcrHandle::Pcr0,
    PcrHandle::Pcr1,
    PcrHandle::Pcr2,
    PcrHandle::Pcr3,
    PcrHandle::Pcr4,
    PcrHandle::Pcr5,
    PcrHandle::Pcr6,
    PcrHandle::Pcr7,
    PcrHandle::Pcr8,
    PcrHandle::Pcr9,
    PcrHandle::Pcr10,
    PcrHandle::Pcr11,
    PcrHandle::Pcr12,
    PcrHandle::Pcr13,
    PcrHandle::Pcr14,
    PcrHandle::Pcr15,
    PcrHandle::Pcr16,
    PcrHandle::Pcr17,
    PcrHandle::Pcr18,
    PcrHandle::Pcr19,
    PcrHandle::Pcr20,
    PcrHandle::Pcr21,
    PcrHandle::Pcr22,
    PcrHandle::Pcr23,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(PcrMask::ALL.indices().count(), 24);
        assert_eq!(PcrMask::from_indices(&[0, 7, 23]).unwrap().bits(), 1 | 1 << 7 | 1 << 23);
        assert!(PcrMask::from_indices(&[24]).is_err());
        assert_eq!(PcrMask::ALL.slots().len(), 24);
    }
}
