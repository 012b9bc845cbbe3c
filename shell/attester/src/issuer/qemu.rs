//! The `qemu-vtpm` issuer: a quote over the SHA-256 PCRs 0..=23 by the TPM's attestation key, bound to the
//! verifier's nonce, the caller's user data and the instance information.
//!
//! ```text
//! extraData = SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))     (Validator::quote_nonce)
//! document  = { variant "qemu-vtpm", tpm { ak_public, quote_attest, quote_signature, pcrs[0..24],
//!               event_log? , ek_certificate? }, instance_info, user_data }
//! ```
//!
//! The PCR values are read *after* the quote, and the issuer checks that they hash to the quote's pcrDigest
//! before sending them ([`Tpm::consistent_quote`]): a PCR extended between the two commands would otherwise
//! produce a document the verifier rejects with PcrDigestMismatch.
//!
//! The TPM connection is behind a mutex: a TPM executes one command at a time anyway, and the quote and the
//! PCR read must not interleave with another caller's commands.

use crate::tpm::{AkConfig, AttestationKey, Error, PcrMask, Tpm};
use attest_engine::crypto::default_provider;
use attest_engine::tpm::alg::TPM_ALG_SHA256;
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, TpmEvidence};
use std::sync::Mutex;

/// Issues `qemu-vtpm` attestation documents from one TPM.
#[derive(Debug)]
pub struct QemuVtpmIssuer {
    tpm: Mutex<Tpm>,
    ak: AttestationKey,
    mask: PcrMask,
    event_log: Vec<u8>,
    ek_certificate: Vec<u8>,
}

impl QemuVtpmIssuer {
    /// An issuer over `tpm` with the AK described by `ak` (found or created now), quoting PCRs 0..=23.
    pub fn new(mut tpm: Tpm, ak: AkConfig) -> Result<Self, Error> {
        let ak = tpm.attestation_key(ak)?;
        Ok(Self { tpm: Mutex::new(tpm), ak, mask: PcrMask::ALL, event_log: Vec::new(), ek_certificate: Vec::new() })
    }

    /// Quotes these PCRs instead of 0..=23.
    pub fn with_pcrs(mut self, mask: PcrMask) -> Self {
        self.mask = mask;
        self
    }

    /// Sends this TCG event log (binary, crypto-agile) with every document; the verifier replays it against
    /// the quoted PCRs. On Linux it is `/sys/kernel/security/tpm0/binary_bios_measurements`.
    pub fn with_event_log(mut self, log: Vec<u8>) -> Self {
        self.event_log = log;
        self
    }

    /// Sends the EK certificate (DER) with every document (for verifiers that register AKs on the fly).
    pub fn with_ek_certificate(mut self, der: Vec<u8>) -> Self {
        self.ek_certificate = der;
        self
    }

    /// The EK certificate sent with every document (DER; empty when none).
    pub fn ek_certificate(&self) -> &[u8] {
        &self.ek_certificate
    }

    /// The attestation key.
    pub fn attestation_key(&self) -> &AttestationKey {
        &self.ak
    }

    /// Gives the TPM connection back.
    pub fn into_tpm(self) -> Tpm {
        self.tpm.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` with exclusive use of the TPM (e.g. to activate a credential or extend a PCR).
    pub fn with_tpm<T>(&self, f: impl FnOnce(&mut Tpm, &AttestationKey) -> T) -> T {
        let mut tpm = self.tpm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut tpm, &self.ak)
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` (aTLS: SHA-256 of the certificate's
    /// SPKI) and `instance_info`.
    pub fn issue(&self, nonce: &[u8], user_data: &[u8], instance_info: &[u8]) -> Result<AttestationDocument, Error> {
        let extra = Validator::quote_nonce(default_provider(), instance_info, user_data, nonce);
        let mut tpm = self.tpm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let quoted = tpm.consistent_quote(&self.ak, self.mask, &extra)?;
        drop(tpm);
        let tpm = TpmEvidence {
            ek_certificate: self.ek_certificate.clone(),
            ..super::quote_evidence(&self.ak, quoted, self.event_log.clone())
        };
        Ok(super::tpm_document(Variant::QemuVtpm, tpm, instance_info, user_data))
    }
}

/// The document's PCR table for SHA-256 values by index.
pub(crate) fn sha256_pcr_values(values: &[(u8, [u8; 32])]) -> Vec<PcrValue> {
    values
        .iter()
        .map(|(i, v)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index: u32::from(*i), value: v.to_vec() })
        .collect()
}

/// `qemu-vtpm` documents from a TPM: a quote over the SHA-256 PCRs whose extraData binds the nonce and the
/// certificate's key hash, with empty instance information.
impl attest_atls::AttestationIssuer for QemuVtpmIssuer {
    fn oid(&self) -> &str {
        Variant::QemuVtpm.oid()
    }

    fn issue(&self, nonce: &attest_atls::nonce::Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, attest_atls::BoxError> {
        use prost::Message as _;
        Ok(QemuVtpmIssuer::issue(self, nonce, user_data, &[])?.encode_to_vec())
    }
}
