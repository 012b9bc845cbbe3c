//! The `gcp-shielded-vm` issuer: a GCE vTPM's attestation key, re-created from the template Google stores in
//! NV and certified by Google's EK/AK CA (the certificate, also in NV), quoting the PCRs with the event log.
//!
//! ```text
//! NV 0x01c10003 (ECC) / 0x01c10001 (RSA): AK template ──TPM2_CreatePrimary(endorsement)──► AK (transient)
//! NV 0x01c10002 (ECC) / 0x01c10000 (RSA): AK certificate (DER)
//! document = { variant "gcp-shielded-vm",
//!              tpm { ak_public, quote_attest (extraData = Validator::quote_nonce), quote_signature,
//!                    pcrs[0..24] SHA-256, event_log, ak_certificate }, instance_info, user_data }
//! ```
//!
//! The verifier trusts the AK because the certificate chains to Google's roots and names exactly this key,
//! and because the quote's qualifiedSigner is the key's qualified name as an endorsement-hierarchy primary
//! (`attest_engine::variant` module docs). The key type is the ECC one when Google provisioned both (ECDSA
//! P-256 primaries are created in milliseconds; an RSA primary costs a prime search per quote), else RSA;
//! [`GceAkKind`] chooses explicitly.
//!
//! [`GceIssuer::attestation`] produces go-tpm-tools' `Attestation` message instead (one quote per active PCR
//! bank), for verifiers that take Google's format (`attest gce verify`).

use super::error::HwIssuerError;
use crate::tpm::nv::{
    GCE_AK_CERT_NV_INDEX_ECC, GCE_AK_CERT_NV_INDEX_RSA, GCE_AK_TEMPLATE_NV_INDEX_ECC, GCE_AK_TEMPLATE_NV_INDEX_RSA,
};
use crate::tpm::{AttestationKey, PcrMask, QuotedPcrs, Tpm};
use attest_engine::crypto::default_provider;
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, TpmEvidence};
use std::sync::Mutex;

/// Which of Google's two AKs to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GceAkKind {
    /// The ECC P-256 AK (NV 0x01c10002 / 0x01c10003).
    Ecc,
    /// The RSA-2048 AK (NV 0x01c10000 / 0x01c10001).
    Rsa,
}

impl GceAkKind {
    /// (certificate index, template index).
    pub fn nv_indices(self) -> (u32, u32) {
        match self {
            Self::Ecc => (GCE_AK_CERT_NV_INDEX_ECC, GCE_AK_TEMPLATE_NV_INDEX_ECC),
            Self::Rsa => (GCE_AK_CERT_NV_INDEX_RSA, GCE_AK_TEMPLATE_NV_INDEX_RSA),
        }
    }
}

/// Whether the TPM holds a GCE AK of `kind` (its template and certificate indices both exist).
pub fn gce_ak_present(tpm: &mut Tpm, kind: GceAkKind) -> Result<bool, crate::tpm::Error> {
    let (cert, template) = kind.nv_indices();
    Ok(tpm.handle_exists(template)? && tpm.handle_exists(cert)?)
}

/// Issues `gcp-shielded-vm` documents from a GCE vTPM.
#[derive(Debug)]
pub struct GceIssuer {
    tpm: Mutex<Tpm>,
    ak: AttestationKey,
    ak_certificate: Vec<u8>,
    event_log: Vec<u8>,
}

impl GceIssuer {
    /// An issuer over `tpm` with Google's AK of `kind` (`None`: ECC when present, else RSA). Fails with
    /// [`HwIssuerError::DeviceNotPresent`] when the TPM holds no GCE AK template and certificate.
    pub fn new(mut tpm: Tpm, kind: Option<GceAkKind>) -> Result<Self, HwIssuerError> {
        let kind = match kind {
            Some(k) if gce_ak_present(&mut tpm, k)? => k,
            Some(GceAkKind::Ecc) => {
                return Err(HwIssuerError::DeviceNotPresent { device: "GCE ECC AK (NV 0x01c10002/0x01c10003)" });
            }
            Some(GceAkKind::Rsa) => {
                return Err(HwIssuerError::DeviceNotPresent { device: "GCE RSA AK (NV 0x01c10000/0x01c10001)" });
            }
            None if gce_ak_present(&mut tpm, GceAkKind::Ecc)? => GceAkKind::Ecc,
            None if gce_ak_present(&mut tpm, GceAkKind::Rsa)? => GceAkKind::Rsa,
            None => {
                return Err(HwIssuerError::DeviceNotPresent {
                    device: "GCE AK template and certificate (NV 0x01c10000..0x01c10003)",
                });
            }
        };
        let (cert_index, template_index) = kind.nv_indices();
        let template = tpm.nv_read(template_index)?;
        let ak_certificate = tpm.nv_read(cert_index)?;
        // The certificate index may be padded past the DER: keep exactly one certificate.
        let ak_certificate = one_der(&ak_certificate)?;
        let ak = tpm.attestation_key_from_template(&template)?;
        Ok(Self { tpm: Mutex::new(tpm), ak, ak_certificate, event_log: Vec::new() })
    }

    /// Sends this TCG event log (binary, crypto-agile) with every document; on Linux it is
    /// `/sys/kernel/security/tpm0/binary_bios_measurements`. The verifier's default GCE policy requires one.
    pub fn with_event_log(mut self, log: Vec<u8>) -> Self {
        self.event_log = log;
        self
    }

    /// The AK (re-created from Google's template).
    pub fn attestation_key(&self) -> &AttestationKey {
        &self.ak
    }

    /// The AK certificate (DER) from NV.
    pub fn ak_certificate(&self) -> &[u8] {
        &self.ak_certificate
    }

    /// Runs `f` with exclusive use of the TPM (e.g. to extend a PCR).
    pub fn with_tpm<T>(&self, f: impl FnOnce(&mut Tpm) -> T) -> T {
        f(&mut self.tpm.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A quote of the SHA-256 PCRs 0..=23 with `extra`, and their values ([`Tpm::consistent_quote`]).
    fn quote_sha256(&self, extra: &[u8]) -> Result<QuotedPcrs, HwIssuerError> {
        Ok(self.with_tpm(|tpm| tpm.consistent_quote(&self.ak, PcrMask::ALL, extra))?)
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` and `instance_info`.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let extra = Validator::quote_nonce(default_provider(), instance_info, user_data, nonce);
        let quoted = self.quote_sha256(&extra)?;
        let tpm = TpmEvidence {
            ak_certificate: self.ak_certificate.clone(),
            ..super::quote_evidence(&self.ak, quoted, self.event_log.clone())
        };
        Ok(super::tpm_document(Variant::GcpShieldedVm, tpm, instance_info, user_data))
    }

    /// go-tpm-tools' `Attestation` for `nonce` (extraData = the nonce, as go-tpm-tools quotes): the AK's
    /// TPMT_PUBLIC, one quote per active PCR bank that this issuer reads (SHA-256; the TPM's other banks are
    /// not quoted), the event log and the AK certificate.
    pub fn attestation(&self, nonce: &[u8]) -> Result<attest_proto::gce::Attestation, HwIssuerError> {
        use attest_proto::gotpm::v1::{HashAlgo, Pcrs, Quote};
        let QuotedPcrs { quote, values } = self.quote_sha256(nonce)?;
        let pcrs = values.iter().map(|(i, v)| (u32::from(*i), v.to_vec())).collect();
        Ok(attest_proto::gce::Attestation {
            ak_pub: self.ak.tpmt_public().to_vec(),
            quotes: vec![Quote {
                quote: quote.attest,
                raw_sig: quote.signature,
                pcrs: Some(Pcrs { hash: HashAlgo::Sha256 as i32, pcrs }),
            }],
            event_log: self.event_log.clone(),
            ak_cert: self.ak_certificate.clone(),
            ..Default::default()
        })
    }
}

/// The first DER element of `bytes` (a certificate NV index may be larger than its certificate).
fn one_der(bytes: &[u8]) -> Result<Vec<u8>, HwIssuerError> {
    let bad = || HwIssuerError::Device { op: "reading the GCE AK certificate", reason: "not DER".into() };
    if bytes.len() < 2 || bytes[0] != 0x30 {
        return Err(bad());
    }
    let (len, header) = match bytes[1] {
        n @ 0..=0x7F => (usize::from(n), 2),
        0x81 => (usize::from(*bytes.get(2).ok_or_else(bad)?), 3),
        0x82 => (usize::from(u16::from_be_bytes([*bytes.get(2).ok_or_else(bad)?, *bytes.get(3).ok_or_else(bad)?])), 4),
        _ => return Err(bad()),
    };
    bytes.get(..header + len).map(<[u8]>::to_vec).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_elements_are_cut_at_their_length() {
        assert_eq!(one_der(&[0x30, 0x01, 0xAA, 0xFF, 0xFF]).unwrap(), [0x30, 0x01, 0xAA]);
        let long: Vec<u8> = [&[0x30, 0x82, 0x01, 0x00][..], &[0u8; 0x100], &[0xFF; 3]].concat();
        assert_eq!(one_der(&long).unwrap().len(), 0x104);
        assert!(one_der(&[0x30, 0x05, 0x00]).is_err());
        assert!(one_der(&[0x04, 0x00]).is_err());
        assert!(one_der(&[]).is_err());
    }
}
