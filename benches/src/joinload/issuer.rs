//! A `qemu-vtpm` issuer whose attestation key lives in software ([`SoftAkIssuer`]).
//!
//! It produces the same document as the TPM-backed `attest_attester::issuer::QemuVtpmIssuer`: a TPMS_ATTEST
//! quote over the SHA-256 PCRs 0..=23, extraData = `Validator::quote_nonce(instance_info = "", user_data,
//! nonce)`, signed by the AK (TPMT_SIGNATURE), with the AK's TPM2B_PUBLIC and the PCR values. Only the
//! signing differs: a software key instead of `TPM2_Quote` (≈ 8–9 ms on swtpm, see `benches/README.md`), so
//! the TPM does not become the bottleneck of a load test. The join service validates these documents with
//! its normal path; it trusts the AKs because the fixture pins their digests in its AK registry file.
//!
//! Everything but the signature is computed once: the TPMS_ATTEST is a template (qualifiedSigner = the AK's
//! Name, pcrDigest over the fixed PCRs) in which each quote only writes extraData and clockInfo.clock.

use std::time::Instant;

use attest_atls::{AttestationIssuer, BoxError, nonce::Nonce};
use attest_engine::crypto::default_provider;
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, TPM_ALG_SHA256};
use prost::Message as _;

/// The quoted PCR selection: all 24 SHA-256 PCRs, as the real issuer quotes (`PcrMask::ALL`).
pub const QUOTED_PCRS: u32 = 0x00FF_FFFF;

/// Issues `qemu-vtpm` documents quoted by a software AK over fixed PCR values.
#[derive(Debug)]
pub struct SoftAkIssuer {
    ak: SoftAk,
    ak_public: Vec<u8>,
    /// TPMS_ATTEST with zero extraData and clock.
    template: Vec<u8>,
    extra_offset: usize,
    clock_offset: usize,
    pcrs: Vec<PcrValue>,
    started: Instant,
}

impl SoftAkIssuer {
    /// An issuer quoting `pcrs` with `ak`.
    pub fn new(ak: SoftAk, pcrs: &PcrBank) -> SoftAkIssuer {
        let zero = [0u8; 32];
        let template = ak.attest(&QuoteSpec::new(&zero, pcrs, QUOTED_PCRS));
        // TPMS_ATTEST (TPM 2.0 Part 2 §10.12.12): magic (4), type (2), qualifiedSigner (TPM2B), extraData
        // (TPM2B), clockInfo { clock (8), … }.
        let name_len = ak.name().len();
        let extra_offset = 4 + 2 + 2 + name_len + 2;
        assert_eq!(template[extra_offset - 2..extra_offset], [0, 32], "extraData size where expected");
        let clock_offset = extra_offset + 32;
        let pcrs = (0..24u32)
            .map(|i| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index: i, value: pcrs[i as usize].to_vec() })
            .collect();
        SoftAkIssuer {
            ak_public: ak.tpm2b_public(),
            ak,
            template,
            extra_offset,
            clock_offset,
            pcrs,
            started: Instant::now(),
        }
    }

    /// SHA-256 of the AK's TPMT_PUBLIC: the digest an AK registry pins.
    pub fn ak_digest(&self) -> [u8; 32] {
        self.ak.tpmt_digest()
    }

    /// The document for `nonce` binding `user_data` (what [`AttestationIssuer::issue`] encodes).
    pub fn document(&self, nonce: &[u8], user_data: &[u8]) -> AttestationDocument {
        let extra = Validator::quote_nonce(default_provider(), &[], user_data, nonce);
        let mut attest = self.template.clone();
        attest[self.extra_offset..self.extra_offset + 32].copy_from_slice(&extra);
        // clockInfo.clock: milliseconds, advancing like a TPM's (the validator does not read it).
        let clock = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX).saturating_add(1_234_567);
        attest[self.clock_offset..self.clock_offset + 8].copy_from_slice(&clock.to_be_bytes());
        let signature = self.ak.sign(&attest);
        AttestationDocument {
            variant: Variant::QemuVtpm.name().to_owned(),
            tpm: Some(TpmEvidence {
                ak_public: self.ak_public.clone(),
                quote_attest: attest,
                quote_signature: signature,
                pcrs: self.pcrs.clone(),
                ..TpmEvidence::default()
            }),
            user_data: user_data.to_vec(),
            ..AttestationDocument::default()
        }
    }
}

impl AttestationIssuer for SoftAkIssuer {
    fn oid(&self) -> &str {
        Variant::QemuVtpm.oid()
    }

    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        Ok(self.document(nonce, user_data).encode_to_vec())
    }
}
