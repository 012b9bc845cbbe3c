//! The endorsement key: the RSA-2048 EK re-created from the TCG default template, and its certificate.
//!
//! The EK is a primary key in the endorsement hierarchy created from template L-1 of the TCG EK Credential
//! Profile for TPM Family 2.0 (Level 0 Version 2.3, Appendix B.3.3: RSA 2048, nameAlg SHA-256,
//! restricted decrypt, AES-128-CFB, authPolicy = PolicySecret(TPM_RH_ENDORSEMENT), adminWithPolicy,
//! userWithAuth clear, empty unique of 256 zero bytes). Re-creating a primary from the same template is
//! deterministic (the EPS does not change), so the EK is never kept loaded: each use creates it, uses it
//! and flushes it. Its certificate sits in NV index 0x01c00002 (Profile §2.2.1.4, low range), which is
//! where `swtpm_setup --create-ek-cert` writes it.

use super::device::Tpm;
use super::{Error, tpm_error, tpm2b};
use tss_esapi::abstraction::AsymmetricAlgorithmSelection;
use tss_esapi::abstraction::ek::{create_ek_public_from_default_template_2, retrieve_ek_pubcert};
use tss_esapi::handles::{KeyHandle, ObjectHandle};
use tss_esapi::interface_types::key_bits::RsaKeyBits;
use tss_esapi::interface_types::resource_handles::Hierarchy;
use tss_esapi::interface_types::session_handles::AuthSession;
use tss_esapi::structures::Public;
use tss_esapi::traits::Marshall;

/// NV index of the RSA-2048 EK certificate (EK Credential Profile §2.2.1.4).
pub const RSA_2048_EK_CERT_NV_INDEX: u32 = 0x01c0_0002;

/// The public part of the RSA-2048 EK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EkPublic {
    /// TPM2B_PUBLIC as marshalled by the TSS.
    pub tpm2b_public: Vec<u8>,
    /// The TPM Name (nameAlg SHA-256 ‖ SHA-256(TPMT_PUBLIC)).
    pub name: Vec<u8>,
    /// RSA modulus, big-endian (256 bytes).
    pub modulus: Vec<u8>,
    /// RSA public exponent.
    pub exponent: u32,
}

impl EkPublic {
    /// The EK as an OpenSSL public key (for credential protection).
    pub fn to_pkey(&self) -> Result<openssl::pkey::PKey<openssl::pkey::Public>, Error> {
        attest_registration::credential::rsa_public_key(&self.modulus, self.exponent)
    }
}

fn ek_template() -> Result<Public, Error> {
    create_ek_public_from_default_template_2(AsymmetricAlgorithmSelection::Rsa(RsaKeyBits::Rsa2048), None)
        .map_err(tpm_error("building the EK template"))
}

impl Tpm {
    /// Creates the RSA-2048 EK from the default template and runs `f` with it loaded; the EK is flushed
    /// afterwards.
    pub(super) fn with_ek<T>(
        &mut self,
        f: impl FnOnce(&mut tss_esapi::Context, KeyHandle) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let template = ek_template()?;
        let created = self
            .ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| {
                ctx.create_primary(Hierarchy::Endorsement, template, None, None, None, None)
            })
            .map_err(tpm_error("TPM2_CreatePrimary (EK)"))?;
        let handle = created.key_handle;
        self.with_transient(ObjectHandle::from(handle), |ctx, _| f(ctx, handle))
    }

    /// The RSA-2048 EK's public part (the EK is created from the template and flushed again).
    pub fn ek_public(&mut self) -> Result<EkPublic, Error> {
        self.with_ek(|ctx, handle| {
            let (public, name, _) = ctx.read_public(handle).map_err(tpm_error("TPM2_ReadPublic (EK)"))?;
            let (modulus, exponent) = match &public {
                Public::Rsa { parameters, unique, .. } => (unique.value().to_vec(), parameters.exponent().value()),
                _ => return Err(Error::UnexpectedTpmOutput { what: "the EK template produced a non-RSA key" }),
            };
            let tpmt = public.marshall().map_err(tpm_error("marshalling TPMT_PUBLIC"))?;
            super::check_name(&tpmt, name.value())?;
            Ok(EkPublic {
                tpm2b_public: tpm2b(&tpmt)?,
                name: name.value().to_vec(),
                modulus,
                exponent: if exponent == 0 { 65_537 } else { exponent },
            })
        })
    }

    /// The RSA-2048 EK certificate (DER) from NV index 0x01c00002, with any padding after the DER removed.
    pub fn ek_certificate(&mut self) -> Result<Vec<u8>, Error> {
        let mut nv = retrieve_ek_pubcert(&mut self.ctx, AsymmetricAlgorithmSelection::Rsa(RsaKeyBits::Rsa2048))
            .map_err(tpm_error("reading the EK certificate NV index"))?;
        let len = cert_len(&nv)
            .ok_or(Error::EkCertificate { reason: "NV index 0x01c00002 does not start with a DER SEQUENCE".into() })?;
        nv.truncate(len);
        Ok(nv)
    }
}

/// The length of the DER SEQUENCE at the start of `nv` (an NV index is often padded after the certificate),
/// read with the engine's DER reader (definite, minimal lengths).
fn cert_len(nv: &[u8]) -> Option<usize> {
    let mut r = attest_engine::der::Reader::new(nv, "EK certificate");
    r.read_tlv(attest_engine::der::tag::SEQUENCE).ok().map(|(_, whole)| whole.len())
}

#[cfg(test)]
mod tests {
    use super::cert_len;

    #[test]
    fn cert_lengths() {
        assert_eq!(cert_len(&[0x30, 0x00]), Some(2));
        assert_eq!(cert_len(&[0x30, 0x01, 0xAA, 0xFF]), Some(3), "padding after the certificate");
        let long = [&[0x30, 0x81, 0x80][..], &[0u8; 0x80], &[0xFF; 3]].concat();
        assert_eq!(cert_len(&long), Some(3 + 0x80));
        assert_eq!(cert_len(&[0x30, 0x82, 0x00, 0x02, 0xAA]), None, "non-minimal and truncated");
        assert_eq!(cert_len(&[0x31, 0x00]), None, "not a SEQUENCE");
        assert_eq!(cert_len(&[0x30, 0x80]), None, "indefinite length");
        assert_eq!(cert_len(&[]), None);
    }
}
