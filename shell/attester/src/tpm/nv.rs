//! NV indices: where clouds put what their vTPM is provisioned with, and the keys found there.
//!
//! | index / handle | what | who provisions it |
//! |---|---|---|
//! | NV 0x01400001 | the HCL report (header ‖ SNP report ‖ runtime data) | Azure's paravisor, at boot |
//! | persistent 0x81000003 | the HCL attestation key (the AK the runtime data names) | Azure's paravisor |
//! | NV 0x01c10000 / 0x01c10001 | RSA-2048 AK certificate (DER) / AK template (TPMT_PUBLIC) | Google (GCE vTPM) |
//! | NV 0x01c10002 / 0x01c10003 | ECC P-256 AK certificate / AK template | Google (GCE vTPM) |
//!
//! (Azure: the `az-cvm-vtpm` crate's constants; GCE: go-tpm-tools' `GceAKCertNVIndex*` and
//! `GceAKTemplateNVIndex*`.) The GCE AK is not persisted: it is re-created as a primary key of the endorsement
//! hierarchy from the template, as go-tpm-tools does; a primary is a deterministic function of the seed and
//! the template, so it is the key the certificate names.
//!
//! Every index here is read with owner authorization (empty password), which is how both clouds define
//! them. Writing is for the simulators (`attest-hwsim`) and tests.

use super::ak::{AkAlgorithm, AkConfig, AkStorage, AttestationKey};
use super::device::Tpm;
use super::{Error, tpm_error};
use tss_esapi::abstraction::nv;
use tss_esapi::attributes::NvIndexAttributesBuilder;
use tss_esapi::constants::CapabilityType;
use tss_esapi::handles::{NvIndexTpmHandle, PersistentTpmHandle, TpmHandle};
use tss_esapi::interface_types::algorithm::HashingAlgorithm;
use tss_esapi::interface_types::resource_handles::{NvAuth, Provision};
use tss_esapi::interface_types::session_handles::AuthSession;
use tss_esapi::structures::{CapabilityData, NvPublicBuilder};
use tss_esapi::traits::Marshall;

/// Azure: the HCL report.
pub const AZURE_HCL_REPORT_NV_INDEX: u32 = 0x0140_0001;
/// Azure: the persistent handle of the HCL attestation key.
pub const AZURE_AK_HANDLE: u32 = 0x8100_0003;
/// GCE: the RSA-2048 AK certificate.
pub const GCE_AK_CERT_NV_INDEX_RSA: u32 = 0x01c1_0000;
/// GCE: the RSA-2048 AK template.
pub const GCE_AK_TEMPLATE_NV_INDEX_RSA: u32 = 0x01c1_0001;
/// GCE: the ECC P-256 AK certificate.
pub const GCE_AK_CERT_NV_INDEX_ECC: u32 = 0x01c1_0002;
/// GCE: the ECC P-256 AK template.
pub const GCE_AK_TEMPLATE_NV_INDEX_ECC: u32 = 0x01c1_0003;
/// Largest NV index read (TPM 2.0 NV indices are at most a few KiB; the HCL report is 2600 bytes).
pub const MAX_NV_READ_SIZE: usize = 64 * 1024;

fn nv_handle(index: u32) -> Result<NvIndexTpmHandle, Error> {
    NvIndexTpmHandle::new(index).map_err(|_| Error::InvalidArgument { what: "not an NV index handle (0x01xxxxxx)" })
}

impl Tpm {
    /// Whether the TPM has a handle (NV index, persistent object) at `handle` (TPM2_GetCapability).
    pub fn handle_exists(&mut self, handle: u32) -> Result<bool, Error> {
        let (data, _) = self
            .ctx
            .execute_without_session(|ctx| ctx.get_capability(CapabilityType::Handles, handle, 1))
            .map_err(tpm_error("TPM2_GetCapability (handles)"))?;
        match data {
            CapabilityData::Handles(list) => Ok(list.iter().any(|h| u32::from(*h) == handle)),
            _ => Err(Error::UnexpectedTpmOutput { what: "TPM2_GetCapability returned another capability" }),
        }
    }

    /// Reads all of NV index `index` with owner authorization (in chunks of the TPM's NV buffer size).
    pub fn nv_read(&mut self, index: u32) -> Result<Vec<u8>, Error> {
        let handle = nv_handle(index)?;
        let data = self
            .ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| nv::read_full(ctx, NvAuth::Owner, handle))
            .map_err(tpm_error("TPM2_NV_Read"))?;
        if data.len() > MAX_NV_READ_SIZE {
            return Err(Error::UnexpectedTpmOutput { what: "an NV index larger than MAX_NV_READ_SIZE" });
        }
        Ok(data)
    }

    /// Defines NV index `index` (owner read/write, SHA-256 name) sized for `data` and writes `data`; an
    /// existing index is undefined first. For simulators and tests: a cloud's vTPM comes provisioned.
    pub fn nv_define_and_write(&mut self, index: u32, data: &[u8]) -> Result<(), Error> {
        use std::io::Write as _;
        let handle = nv_handle(index)?;
        if self.handle_exists(index)? {
            let object = self
                .ctx
                .execute_without_session(|ctx| ctx.tr_from_tpm_public(TpmHandle::NvIndex(handle)))
                .map_err(tpm_error("ESYS_TR_FromTPMPublic (NV)"))?;
            self.ctx
                .execute_with_session(Some(AuthSession::Password), |ctx| {
                    ctx.nv_undefine_space(Provision::Owner, object.into())
                })
                .map_err(tpm_error("TPM2_NV_UndefineSpace"))?;
        }
        let attributes = NvIndexAttributesBuilder::new()
            .with_owner_write(true)
            .with_owner_read(true)
            .build()
            .map_err(tpm_error("building NV attributes"))?;
        let public = NvPublicBuilder::new()
            .with_nv_index(handle)
            .with_index_name_algorithm(HashingAlgorithm::Sha256)
            .with_index_attributes(attributes)
            .with_data_area_size(data.len())
            .build()
            .map_err(tpm_error("building the NV public area"))?;
        self.ctx.set_sessions((Some(AuthSession::Password), None, None));
        let written = (|| {
            let mut rw = nv::NvOpenOptions::NewIndex { nv_public: public, auth_handle: NvAuth::Owner }
                .open(&mut self.ctx)
                .map_err(tpm_error("TPM2_NV_DefineSpace"))?;
            rw.write_all(data).map_err(|_| Error::UnexpectedTpmOutput { what: "TPM2_NV_Write failed" })
        })();
        self.ctx.clear_sessions();
        written
    }

    /// The restricted signing key persisted at `handle` by someone else (Azure's paravisor puts the HCL AK at
    /// 0x81000003), whatever its template. Fails when there is none or it is not a restricted signing key
    /// of a supported type (RSA 2048 or ECC P-256).
    pub fn existing_attestation_key(&mut self, handle: u32) -> Result<AttestationKey, Error> {
        if !self.handle_exists(handle)? {
            return Err(Error::InvalidArgument { what: "no persistent key at the handle" });
        }
        let persistent = PersistentTpmHandle::new(handle)
            .map_err(|_| Error::InvalidArgument { what: "not a persistent handle (0x81xxxxxx)" })?;
        let mut object = self
            .ctx
            .execute_without_session(|ctx| ctx.tr_from_tpm_public(TpmHandle::Persistent(persistent)))
            .map_err(tpm_error("ESYS_TR_FromTPMPublic"))?;
        let read = self.ctx.read_public(object.into()).map_err(tpm_error("TPM2_ReadPublic"));
        let closed = self.ctx.tr_close(&mut object).map_err(tpm_error("closing a persistent handle"));
        let (public, name, _) = read?;
        closed?;
        let tpmt = public.marshall().map_err(tpm_error("marshalling TPMT_PUBLIC"))?;
        let algorithm = checked_algorithm(&tpmt)?;
        super::check_name(&tpmt, name.value())?;
        Ok(AttestationKey::new(
            AkConfig { algorithm, storage: AkStorage::Persistent(handle) },
            super::tpm2b(&tpmt)?,
            name.value().to_vec(),
            None,
        ))
    }

    /// The AK a template (a marshalled TPMT_PUBLIC, as GCE stores it in NV) yields as a primary key of the
    /// endorsement hierarchy. The key is created here to learn its public area and flushed; every quote
    /// re-creates it from the template ([`AkStorage::Transient`]).
    pub fn attestation_key_from_template(&mut self, template: &[u8]) -> Result<AttestationKey, Error> {
        // TPMT_PUBLIC starts with its type (TPM 2.0 Part 2 §12.2.4); the template's unique field is empty, so
        // the key itself is checked once created.
        let algorithm = match template.get(..2) {
            Some([0x00, 0x01]) => AkAlgorithm::Rsa2048,
            Some([0x00, 0x23]) => AkAlgorithm::EccP256,
            _ => return Err(Error::InvalidArgument { what: "an AK template that is neither RSA nor ECC" }),
        };
        let config = AkConfig { algorithm, storage: AkStorage::Transient };
        let probe = AttestationKey::new(config, Vec::new(), Vec::new(), Some(template.to_vec()));
        let (tpm2b_public, name) = self.with_ak(&probe, |tpm, h| super::ak::read_ak_public(&mut tpm.ctx, h))?;
        if checked_algorithm(&tpm2b_public[2..])? != algorithm {
            return Err(Error::UnexpectedTpmOutput { what: "the AK created from the template is of another type" });
        }
        Ok(AttestationKey::new(config, tpm2b_public, name, Some(template.to_vec())))
    }
}

/// The algorithm of a restricted signing key's TPMT_PUBLIC (engine checks: restricted, sign, not decrypt).
fn checked_algorithm(tpmt: &[u8]) -> Result<AkAlgorithm, Error> {
    let public = attest_engine::tpm::TpmtPublic::parse(tpmt)?;
    public.check_attestation_key()?;
    match public.key() {
        attest_engine::tpm::AkPublic::Rsa { modulus, .. } if modulus.len() == 256 => Ok(AkAlgorithm::Rsa2048),
        attest_engine::tpm::AkPublic::Ecc { curve: attest_engine::tpm::EccCurve::P256, .. } => Ok(AkAlgorithm::EccP256),
        _ => Err(Error::InvalidArgument { what: "an AK that is neither RSA-2048 nor ECC P-256" }),
    }
}
