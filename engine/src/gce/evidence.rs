//! The borrowed view of a GCE attestation: go-tpm-tools' `Attestation` message, decoded by the caller
//! (`attest-proto`'s `gce` bridge decodes the protobuf; the engine never parses protobuf).
//!
//! | field (go-tpm-tools `attest.Attestation`) | here |
//! |---|---|
//! | 1 `ak_pub` (TPMT_PUBLIC) | [`GceEvidence::new`] `ak_public` |
//! | 2 `quotes` (`tpm.Quote`: 1 `quote` TPMS_ATTEST, 2 `raw_sig` TPMT_SIGNATURE, 3 `pcrs` {1 hash, 2 map}) | [`GceQuote`], [`GceEvidence::push_quote`] |
//! | 3 `event_log` (TCG PC Client, binary) | [`GceEvidence::new`] `event_log` |
//! | 4 `instance_info` (unsigned) | [`GceEvidence::set_unsigned_instance_info`] |
//! | 5 `canonical_event_log` (COS CEL) | [`GceEvidence::set_canonical_event_log`] — carried, not verified |
//! | 6 `ak_cert` (DER) | [`GceEvidence::set_ak_certificate`] |
//! | 7 `intermediate_certs` (DER) | [`GceEvidence::push_intermediate`] |
//! | 8 / 9 `sev_snp_attestation` / `tdx_attestation` | [`GceEvidence::set_tee_attestation`] — presence only, not verified |
//!
//! Everything is borrowed and fixed-size: building a view never allocates.

use crate::crypto::HashAlgorithm;
use crate::error::Error;
use crate::tpm::PcrValues;
use crate::tpm::attest::PCR_COUNT;

/// Most quotes in one attestation: one per PCR bank (SHA-1, SHA-256, SHA-384, SHA-512).
pub const MAX_QUOTES: usize = 4;
/// Most intermediate certificates the evidence may carry (Google's chains have one).
pub const MAX_INTERMEDIATES: usize = 4;
/// Largest AK or intermediate certificate accepted, in bytes (Google's are ≈1.3–1.8 KiB).
pub const MAX_CERTIFICATE_SIZE: usize = 8 * 1024;

/// The TEE attestation go-tpm-tools may attach (fields 8 and 9 of `Attestation`). This verifier records
/// that one was present but does not verify it; verify it with the SEV-SNP or TDX verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TeeAttestationKind {
    /// Field 8, go-sev-guest's `sevsnp.Attestation`.
    SevSnp,
    /// Field 9, go-tdx-guest's `tdx.QuoteV4`.
    Tdx,
}

/// The instance information as the attester claimed it (field 4), not signed by anyone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnsignedInstanceInfo<'a> {
    /// zone (1).
    pub zone: &'a str,
    /// project_id (2).
    pub project_id: &'a str,
    /// project_number (3).
    pub project_number: u64,
    /// instance_name (4).
    pub instance_name: &'a str,
    /// instance_id (5).
    pub instance_id: u64,
}

/// One quote with the PCR values of the bank it covers.
#[derive(Clone, Copy, Debug)]
pub struct GceQuote<'a> {
    pub(crate) attest: &'a [u8],
    pub(crate) signature: &'a [u8],
    pub(crate) bank: HashAlgorithm,
    pub(crate) pcrs: PcrValues<'a>,
    pub(crate) presented: u32,
}

impl<'a> GceQuote<'a> {
    /// A quote: TPMS_ATTEST and TPMT_SIGNATURE as received, and the bank its PCR map is in (`Pcrs.hash`).
    pub fn new(attest: &'a [u8], signature: &'a [u8], bank: HashAlgorithm) -> Self {
        Self { attest, signature, bank, pcrs: PcrValues::new(), presented: 0 }
    }

    /// Adds one entry of the PCR map. Indices above 23, values of the wrong length and repeated indices
    /// are errors.
    pub fn set_pcr(&mut self, index: u32, value: &'a [u8]) -> Result<(), Error> {
        let i = usize::try_from(index).ok().filter(|i| *i < PCR_COUNT).ok_or(Error::LimitExceeded {
            what: "PCR index",
            limit: PCR_COUNT - 1,
            found: usize::try_from(index).unwrap_or(usize::MAX),
        })?;
        if self.presented & (1 << i) != 0 {
            return Err(Error::Tpm { structure: "Pcrs map", offset: i, reason: "a PCR is presented twice" });
        }
        self.pcrs.set(self.bank, i, value)?;
        self.presented |= 1 << i;
        Ok(())
    }

    /// TPMS_ATTEST as received.
    pub fn attest(&self) -> &'a [u8] {
        self.attest
    }
    /// TPMT_SIGNATURE as received.
    pub fn signature(&self) -> &'a [u8] {
        self.signature
    }
    /// The bank of the presented PCR values.
    pub fn bank(&self) -> HashAlgorithm {
        self.bank
    }
    /// The presented PCRs as a bit set.
    pub fn presented(&self) -> u32 {
        self.presented
    }
}

/// A GCE attestation, borrowed from its decoded message.
#[derive(Clone, Debug)]
pub struct GceEvidence<'a> {
    pub(crate) ak_public: &'a [u8],
    pub(crate) quotes: [Option<GceQuote<'a>>; MAX_QUOTES],
    pub(crate) event_log: &'a [u8],
    pub(crate) ak_certificate: &'a [u8],
    pub(crate) intermediates: [&'a [u8]; MAX_INTERMEDIATES],
    pub(crate) intermediate_count: usize,
    pub(crate) unsigned_instance_info: Option<UnsignedInstanceInfo<'a>>,
    pub(crate) canonical_event_log: &'a [u8],
    pub(crate) tee_attestation: Option<TeeAttestationKind>,
}

impl<'a> GceEvidence<'a> {
    /// A view with the AK (TPMT_PUBLIC, field 1) and the TCG event log (field 3; empty when absent).
    pub fn new(ak_public: &'a [u8], event_log: &'a [u8]) -> Self {
        Self {
            ak_public,
            quotes: [None; MAX_QUOTES],
            event_log,
            ak_certificate: &[],
            intermediates: [&[]; MAX_INTERMEDIATES],
            intermediate_count: 0,
            unsigned_instance_info: None,
            canonical_event_log: &[],
            tee_attestation: None,
        }
    }

    /// Adds a quote (at most [`MAX_QUOTES`]).
    pub fn push_quote(&mut self, quote: GceQuote<'a>) -> Result<(), Error> {
        let slot = self.quotes.iter_mut().find(|q| q.is_none()).ok_or(Error::LimitExceeded {
            what: "GCE attestation quotes",
            limit: MAX_QUOTES,
            found: MAX_QUOTES + 1,
        })?;
        *slot = Some(quote);
        Ok(())
    }

    /// Sets the AK certificate (DER, field 6).
    pub fn set_ak_certificate(&mut self, der: &'a [u8]) -> Result<(), Error> {
        check_certificate_size(der)?;
        self.ak_certificate = der;
        Ok(())
    }

    /// Adds an intermediate certificate (DER, field 7; at most [`MAX_INTERMEDIATES`]).
    pub fn push_intermediate(&mut self, der: &'a [u8]) -> Result<(), Error> {
        check_certificate_size(der)?;
        let slot = self.intermediates.get_mut(self.intermediate_count).ok_or(Error::LimitExceeded {
            what: "GCE intermediate certificates",
            limit: MAX_INTERMEDIATES,
            found: MAX_INTERMEDIATES + 1,
        })?;
        *slot = der;
        self.intermediate_count += 1;
        Ok(())
    }

    /// Sets the attester's unsigned copy of the instance information (field 4).
    pub fn set_unsigned_instance_info(&mut self, info: UnsignedInstanceInfo<'a>) {
        self.unsigned_instance_info = Some(info);
    }

    /// Sets the COS canonical event log (field 5; carried, not verified).
    pub fn set_canonical_event_log(&mut self, cel: &'a [u8]) {
        self.canonical_event_log = cel;
    }

    /// Records that a TEE attestation (field 8 or 9) was attached.
    pub fn set_tee_attestation(&mut self, kind: TeeAttestationKind) {
        self.tee_attestation = Some(kind);
    }

    /// The AK's TPMT_PUBLIC.
    pub fn ak_public(&self) -> &'a [u8] {
        self.ak_public
    }
    /// The quotes.
    pub fn quotes(&self) -> impl Iterator<Item = &GceQuote<'a>> {
        self.quotes.iter().flatten()
    }
    /// The event log (empty when absent).
    pub fn event_log(&self) -> &'a [u8] {
        self.event_log
    }
    /// The AK certificate (empty when absent).
    pub fn ak_certificate(&self) -> &'a [u8] {
        self.ak_certificate
    }
    /// The intermediates the evidence carries.
    pub fn intermediates(&self) -> &[&'a [u8]] {
        &self.intermediates[..self.intermediate_count]
    }
    /// The COS canonical event log (empty when absent).
    pub fn canonical_event_log(&self) -> &'a [u8] {
        self.canonical_event_log
    }
    /// The attached TEE attestation's kind, if any.
    pub fn tee_attestation(&self) -> Option<TeeAttestationKind> {
        self.tee_attestation
    }
}

fn check_certificate_size(der: &[u8]) -> Result<(), Error> {
    if der.len() > MAX_CERTIFICATE_SIZE {
        return Err(Error::LimitExceeded {
            what: "GCE certificate size",
            limit: MAX_CERTIFICATE_SIZE,
            found: der.len(),
        });
    }
    Ok(())
}
