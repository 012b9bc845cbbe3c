//! TPMS_ATTEST (TPM 2.0 Library Part 2 §10.12.12) for quotes, with TPMS_QUOTE_INFO and TPML_PCR_SELECTION.
//!
//! ```text
//! TPMS_ATTEST: magic u32 (TPM_GENERATED_VALUE) | type u16 (TPM_ST_ATTEST_QUOTE 0x8018)
//!              | qualifiedSigner TPM2B_NAME | extraData TPM2B_DATA
//!              | clockInfo {clock u64, resetCount u32, restartCount u32, safe u8} | firmwareVersion u64
//!              | attested: TPMS_QUOTE_INFO { pcrSelect TPML_PCR_SELECTION, pcrDigest TPM2B_DIGEST }
//! ```

use super::alg::hash_from_tpm;
use super::reader::Reader;
use crate::crypto::HashAlgorithm;
use crate::error::Error;

/// TPM_GENERATED_VALUE.
pub const TPM_GENERATED_VALUE: u32 = 0xFF54_4347;
/// TPM_ST_ATTEST_QUOTE.
pub const TPM_ST_ATTEST_QUOTE: u16 = 0x8018;
/// Largest TPM2B_NAME (a 2-byte algorithm id and a SHA-512 digest).
pub const MAX_NAME: usize = 2 + 64;
/// Largest TPM2B_DATA (sizeof(TPMT_HA)).
pub const MAX_EXTRA_DATA: usize = 2 + 64;
/// Largest TPM2B_DIGEST (SHA-512).
pub const MAX_DIGEST: usize = 64;
/// Most TPMS_PCR_SELECTION entries (HASH_COUNT: one per bank; the reference implementation supports 5).
pub const MAX_PCR_SELECTIONS: usize = 8;
/// Largest sizeofSelect (PCR_SELECT_MAX for 32 PCRs).
pub const MAX_SIZEOF_SELECT: usize = 4;
/// PCRs per bank supported (PC Client: 24).
pub const PCR_COUNT: usize = 24;

/// A parsed quote TPMS_ATTEST.
#[derive(Clone, Copy, Debug)]
pub struct Attest<'a> {
    raw: &'a [u8],
    qualified_signer: &'a [u8],
    extra_data: &'a [u8],
    clock: u64,
    reset_count: u32,
    restart_count: u32,
    safe: bool,
    firmware_version: u64,
    selection: PcrSelection<'a>,
    pcr_digest: &'a [u8],
}

impl<'a> Attest<'a> {
    /// Parses a quote TPMS_ATTEST; the input must hold exactly one.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes, "TPMS_ATTEST");
        let magic = r.u32()?;
        if magic != TPM_GENERATED_VALUE {
            return Err(Error::TpmMagic { found: magic });
        }
        let ty = r.u16()?;
        if ty != TPM_ST_ATTEST_QUOTE {
            return Err(Error::TpmAttestType { expected: TPM_ST_ATTEST_QUOTE, found: ty });
        }
        let qualified_signer = r.tpm2b(MAX_NAME)?;
        let extra_data = r.tpm2b(MAX_EXTRA_DATA)?;
        let clock = r.u64()?;
        let reset_count = r.u32()?;
        let restart_count = r.u32()?;
        let safe = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.err("TPMS_CLOCK_INFO.safe is not a TPMI_YES_NO")),
        };
        let firmware_version = r.u64()?;
        let selection = PcrSelection::read(&mut r)?;
        let pcr_digest = r.tpm2b(MAX_DIGEST)?;
        r.finish()?;
        Ok(Self {
            raw: bytes,
            qualified_signer,
            extra_data,
            clock,
            reset_count,
            restart_count,
            safe,
            firmware_version,
            selection,
            pcr_digest,
        })
    }

    /// The marshalled bytes as received (what the AK signed).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
    /// qualifiedSigner (the AK's qualified name).
    pub fn qualified_signer(&self) -> &'a [u8] {
        self.qualified_signer
    }
    /// extraData (the caller's nonce digest).
    pub fn extra_data(&self) -> &'a [u8] {
        self.extra_data
    }
    /// clockInfo.clock.
    pub fn clock(&self) -> u64 {
        self.clock
    }
    /// clockInfo.resetCount.
    pub fn reset_count(&self) -> u32 {
        self.reset_count
    }
    /// clockInfo.restartCount.
    pub fn restart_count(&self) -> u32 {
        self.restart_count
    }
    /// clockInfo.safe.
    pub fn safe(&self) -> bool {
        self.safe
    }
    /// firmwareVersion.
    pub fn firmware_version(&self) -> u64 {
        self.firmware_version
    }
    /// The PCR selection.
    pub fn pcr_selection(&self) -> PcrSelection<'a> {
        self.selection
    }
    /// pcrDigest.
    pub fn pcr_digest(&self) -> &'a [u8] {
        self.pcr_digest
    }
}

/// A validated TPML_PCR_SELECTION: up to [`MAX_PCR_SELECTIONS`] banks, each with a PCR bitmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcrSelection<'a> {
    raw: &'a [u8],
    count: usize,
}

impl<'a> PcrSelection<'a> {
    fn read(r: &mut Reader<'a>) -> Result<Self, Error> {
        let start = r.position();
        let count = r.u32()? as usize;
        if count > MAX_PCR_SELECTIONS {
            return Err(Error::LimitExceeded {
                what: "TPML_PCR_SELECTION.count",
                limit: MAX_PCR_SELECTIONS,
                found: count,
            });
        }
        let mut seen: [u16; MAX_PCR_SELECTIONS] = [0; MAX_PCR_SELECTIONS];
        for i in 0..count {
            let hash = r.u16()?;
            hash_from_tpm(hash, "PCR bank")?;
            if seen[..i].contains(&hash) {
                return Err(r.err("the same bank is selected twice"));
            }
            seen[i] = hash;
            let size = usize::from(r.u8()?);
            if size > MAX_SIZEOF_SELECT {
                return Err(Error::LimitExceeded { what: "sizeofSelect", limit: MAX_SIZEOF_SELECT, found: size });
            }
            let bitmap = r.bytes(size)?;
            if bitmap.get(3).is_some_and(|b| *b != 0) {
                return Err(r.err("PCRs above 23 are not supported"));
            }
        }
        let end = r.position();
        Ok(Self { raw: r.slice(start, end), count })
    }

    /// Number of banks selected.
    pub fn len(&self) -> usize {
        self.count
    }
    /// Whether no bank is selected.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The selected banks in order, each with its PCR bitmap (bit n of byte n/8 = PCR n).
    pub fn banks(&self) -> impl Iterator<Item = (HashAlgorithm, u32)> + 'a {
        let raw = self.raw;
        let mut pos = 4;
        (0..self.count).map(move |_| {
            let hash = u16::from_be_bytes([raw[pos], raw[pos + 1]]);
            let size = usize::from(raw[pos + 2]);
            let mut bits = 0u32;
            for (i, b) in raw[pos + 3..pos + 3 + size].iter().enumerate() {
                bits |= u32::from(*b) << (8 * i);
            }
            pos += 3 + size;
            // Validated in `read`.
            (hash_from_tpm(hash, "PCR bank").unwrap_or(HashAlgorithm::Sha256), bits)
        })
    }
}
