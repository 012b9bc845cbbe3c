//! The attestation key (AK): a restricted signing key, created as a **primary key in the endorsement
//! hierarchy** from a fixed template.
//!
//! Why a primary and not a child of the EK: a primary is a deterministic function of the endorsement seed
//! and the template (TPM 2.0 Part 1 §26.3), so the same AK comes back after a reboot without storing a key
//! blob anywhere, and creating it needs no EK policy session (go-tpm-tools' AK and GCE's AK are made the same
//! way). What makes the AK trustworthy is not its parent but its attributes (fixedTPM, fixedParent,
//! restricted, sign, sensitiveDataOrigin — all inside its Name) plus credential activation against the
//! certified EK, which proves the AK with that Name is resident in the same TPM.
//!
//! Re-creating an RSA primary costs tens of milliseconds on swtpm, so the AK is normally persisted with
//! TPM2_EvictControl at a persistent handle (default 0x81000003) and found there on the next start.
//! [`AkStorage::Transient`] re-creates it for every use instead (no NV writes; slower).

use super::device::{PcrMask, Quote, Tpm};
use super::{Error, tpm_error, tpm2b};
use tss_esapi::attributes::ObjectAttributesBuilder;
use tss_esapi::handles::{KeyHandle, ObjectHandle, PersistentTpmHandle, TpmHandle};
use tss_esapi::interface_types::algorithm::{HashingAlgorithm, PublicAlgorithm};
use tss_esapi::interface_types::dynamic_handles::Persistent;
use tss_esapi::interface_types::ecc::EccCurve;
use tss_esapi::interface_types::key_bits::RsaKeyBits;
use tss_esapi::interface_types::resource_handles::{Hierarchy, Provision};
use tss_esapi::interface_types::session_handles::AuthSession;
use tss_esapi::structures::{
    EccPoint, EccScheme, HashScheme, KeyDerivationFunctionScheme, Public, PublicBuilder, PublicEccParametersBuilder,
    PublicKeyRsa, PublicRsaParametersBuilder, RsaExponent, RsaScheme, SymmetricDefinitionObject,
};
use tss_esapi::traits::Marshall;

/// A quote and the SHA-256 values of the PCRs it covers ([`Tpm::consistent_quote`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotedPcrs {
    /// The quote.
    pub quote: Quote,
    /// (index, SHA-256 value) of every quoted PCR, ascending.
    pub values: Vec<(u8, [u8; 32])>,
}

/// SHA-256 over the concatenated PCR values, in order (TPMS_QUOTE_INFO.pcrDigest, TPM 2.0 Part 1 §18.2.2).
fn pcr_digest(values: &[(u8, [u8; 32])]) -> attest_engine::crypto::Digest {
    use attest_engine::crypto::{HashAlgorithm, default_provider};
    let mut refs: [&[u8]; 24] = [&[]; 24];
    for (slot, (_, v)) in refs.iter_mut().zip(values) {
        *slot = &v[..];
    }
    default_provider().digests.digest(HashAlgorithm::Sha256, &refs[..values.len().min(24)])
}

/// How often [`Tpm::consistent_quote`] quotes before giving up on PCRs that keep changing under it.
pub const MAX_QUOTE_ATTEMPTS: usize = 3;

/// The default persistent handle of the AK (owner range 0x81000000–0x817FFFFF; 0x81000001/2 are commonly
/// taken by storage primaries, 0x81010001 by the EK).
pub const DEFAULT_AK_HANDLE: u32 = 0x8100_0003;

/// The AK's key type and signing scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AkAlgorithm {
    /// RSA-2048, RSASSA-PKCS1-v1_5 with SHA-256.
    #[default]
    Rsa2048,
    /// ECC NIST P-256, ECDSA with SHA-256.
    EccP256,
}

/// Where the AK lives between uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AkStorage {
    /// Persisted at this handle (TPM2_EvictControl, owner authorization with an empty password).
    Persistent(u32),
    /// Re-created from the template for every quote or activation, and flushed after it.
    Transient,
}

impl Default for AkStorage {
    fn default() -> Self {
        Self::Persistent(DEFAULT_AK_HANDLE)
    }
}

/// How to obtain the AK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AkConfig {
    /// Key type and scheme.
    pub algorithm: AkAlgorithm,
    /// Persistence.
    pub storage: AkStorage,
}

/// An attestation key of this TPM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttestationKey {
    config: AkConfig,
    tpm2b_public: Vec<u8>,
    name: Vec<u8>,
    /// A template of someone else's (GCE's, from NV) that transient storage re-creates the key from, in place
    /// of ours.
    template: Option<Vec<u8>>,
}

impl AttestationKey {
    pub(super) fn new(config: AkConfig, tpm2b_public: Vec<u8>, name: Vec<u8>, template: Option<Vec<u8>>) -> Self {
        Self { config, tpm2b_public, name, template }
    }

    /// TPM2B_PUBLIC of the AK (what documents carry and registries key on, via SHA-256 of its TPMT_PUBLIC).
    pub fn tpm2b_public(&self) -> &[u8] {
        &self.tpm2b_public
    }
    /// The marshalled TPMT_PUBLIC (the TPM2B_PUBLIC without its size).
    pub fn tpmt_public(&self) -> &[u8] {
        &self.tpm2b_public[2..]
    }
    /// The TPM Name: 0x000B ‖ SHA-256(TPMT_PUBLIC).
    pub fn name(&self) -> &[u8] {
        &self.name
    }
    /// How the AK was obtained.
    pub fn config(&self) -> AkConfig {
        self.config
    }
}

/// The AK template. Attributes as TPM 2.0 Part 1 §25.2.3 wants of a restricted signing key, plus
/// userWithAuth with an empty authValue (so a password session authorizes quotes).
fn ak_template(alg: AkAlgorithm) -> Result<Public, Error> {
    let attributes = ObjectAttributesBuilder::new()
        .with_fixed_tpm(true)
        .with_fixed_parent(true)
        .with_sensitive_data_origin(true)
        .with_user_with_auth(true)
        .with_restricted(true)
        .with_sign_encrypt(true)
        .with_decrypt(false)
        .build()
        .map_err(tpm_error("building AK attributes"))?;
    let builder =
        PublicBuilder::new().with_name_hashing_algorithm(HashingAlgorithm::Sha256).with_object_attributes(attributes);
    let builder = match alg {
        AkAlgorithm::Rsa2048 => builder
            .with_public_algorithm(PublicAlgorithm::Rsa)
            .with_rsa_parameters(
                PublicRsaParametersBuilder::new()
                    .with_symmetric(SymmetricDefinitionObject::Null)
                    .with_scheme(RsaScheme::RsaSsa(HashScheme::new(HashingAlgorithm::Sha256)))
                    .with_key_bits(RsaKeyBits::Rsa2048)
                    .with_exponent(RsaExponent::default())
                    .with_is_signing_key(true)
                    .with_is_decryption_key(false)
                    .with_restricted(true)
                    .build()
                    .map_err(tpm_error("building AK RSA parameters"))?,
            )
            .with_rsa_unique_identifier(PublicKeyRsa::default()),
        AkAlgorithm::EccP256 => builder
            .with_public_algorithm(PublicAlgorithm::Ecc)
            .with_ecc_parameters(
                PublicEccParametersBuilder::new()
                    .with_symmetric(SymmetricDefinitionObject::Null)
                    .with_ecc_scheme(EccScheme::EcDsa(HashScheme::new(HashingAlgorithm::Sha256)))
                    .with_curve(EccCurve::NistP256)
                    .with_key_derivation_function_scheme(KeyDerivationFunctionScheme::Null)
                    .with_is_signing_key(true)
                    .with_is_decryption_key(false)
                    .with_restricted(true)
                    .build()
                    .map_err(tpm_error("building AK ECC parameters"))?,
            )
            .with_ecc_unique_identifier(EccPoint::default()),
    };
    builder.build().map_err(tpm_error("building the AK template"))
}

/// This crate's AK template for `alg`, marshalled (TPMT_PUBLIC with an empty unique field): what a simulated
/// GCE vTPM stores as "Google's" AK template (GCE's own templates are restricted signing keys of the same
/// two types).
pub fn ak_template_bytes(alg: AkAlgorithm) -> Result<Vec<u8>, Error> {
    ak_template(alg)?.marshall().map_err(tpm_error("marshalling the AK template"))
}

impl Tpm {
    /// Obtains the AK: finds it at its persistent handle, or creates it there, or (transient storage)
    /// creates it once to learn its public area and flushes it.
    ///
    /// A persistent handle that holds some other object is an error
    /// ([`Error::PersistentHandleOccupied`]); it is never overwritten.
    pub fn attestation_key(&mut self, config: AkConfig) -> Result<AttestationKey, Error> {
        self.forget_persistent_ak()?;
        let template = ak_template(config.algorithm)?;
        let want = template.clone();
        match config.storage {
            AkStorage::Transient => {
                let (tpm2b_public, name) = self.with_created_ak(config, |ctx, h| read_ak_public(ctx, h.into()))?;
                Ok(AttestationKey { config, tpm2b_public, name, template: None })
            }
            AkStorage::Persistent(handle) => {
                let persistent = PersistentTpmHandle::new(handle)
                    .map_err(|_| Error::InvalidArgument { what: "not a persistent handle (0x81xxxxxx)" })?;
                if self.persistent_exists(handle)? {
                    let (tpm2b_public, name) = self.with_persistent(persistent, |ctx, h| {
                        let (public, _, _) = ctx.read_public(h.into()).map_err(tpm_error("TPM2_ReadPublic (AK)"))?;
                        if !same_template(&public, &want) {
                            return Err(Error::PersistentHandleOccupied { handle });
                        }
                        read_ak_public(ctx, h)
                    })?;
                    return Ok(AttestationKey { config, tpm2b_public, name, template: None });
                }
                let (tpm2b_public, name) = self.with_created_ak(config, |ctx, h| {
                    let out = read_ak_public(ctx, h.into())?;
                    let mut new = ctx
                        .execute_with_session(Some(AuthSession::Password), |ctx| {
                            ctx.evict_control(Provision::Owner, h.into(), Persistent::Persistent(persistent))
                        })
                        .map_err(tpm_error("TPM2_EvictControl (persist AK)"))?;
                    ctx.tr_close(&mut new).map_err(tpm_error("closing the persistent AK handle"))?;
                    Ok(out)
                })?;
                Ok(AttestationKey { config, tpm2b_public, name, template: None })
            }
        }
    }

    /// Removes a persisted AK from NV (TPM2_EvictControl on the persistent handle). No-op if absent.
    pub fn evict_attestation_key(&mut self, handle: u32) -> Result<(), Error> {
        self.forget_persistent_ak()?;
        if !self.persistent_exists(handle)? {
            return Ok(());
        }
        let persistent =
            PersistentTpmHandle::new(handle).map_err(|_| Error::InvalidArgument { what: "not a persistent handle" })?;
        let object = self
            .ctx
            .execute_without_session(|ctx| ctx.tr_from_tpm_public(TpmHandle::Persistent(persistent)))
            .map_err(tpm_error("ESYS_TR_FromTPMPublic"))?;
        self.ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| {
                ctx.evict_control(Provision::Owner, object, Persistent::Persistent(persistent))
            })
            .map_err(tpm_error("TPM2_EvictControl (evict AK)"))?;
        Ok(())
    }

    /// TPM2_Quote with `ak` over the SHA-256 PCRs in `mask`.
    pub fn quote(&mut self, ak: &AttestationKey, mask: PcrMask, extra_data: &[u8]) -> Result<Quote, Error> {
        self.with_ak(ak, |tpm, h| tpm.quote_with(h, mask, extra_data))
    }

    /// A quote with `ak` over the SHA-256 PCRs in `mask` and those PCRs' values, which hash to the quote's
    /// pcrDigest. The values are read *after* the quote (TPM2_PCR_Read is a second command), so a PCR
    /// extended in between would produce a pair the verifier rejects with PcrDigestMismatch; on a mismatch
    /// this quotes again, at most [`MAX_QUOTE_ATTEMPTS`] times. The values come in `mask` order.
    ///
    /// PCRs rarely change once a node has booted, so the values of the last consistent quote are kept: when
    /// they hash to a new quote's pcrDigest they are exactly the quoted values (SHA-256 is collision
    /// resistant) and the read is skipped — three TPM commands fewer per quote of 24 PCRs. Any other digest
    /// reads the PCRs again.
    pub fn consistent_quote(
        &mut self,
        ak: &AttestationKey,
        mask: PcrMask,
        extra_data: &[u8],
    ) -> Result<QuotedPcrs, Error> {
        for _ in 0..MAX_QUOTE_ATTEMPTS {
            let quote = self.quote(ak, mask, extra_data)?;
            let quoted = attest_engine::tpm::Attest::parse(&quote.attest)?;
            if let Some((m, values)) = &self.quoted_pcrs
                && *m == mask
                && pcr_digest(values).as_bytes() == quoted.pcr_digest()
            {
                return Ok(QuotedPcrs { quote, values: values.clone() });
            }
            let read = self.read_pcrs(mask)?;
            let values = mask
                .indices()
                .map(|i| read.get(i).map(|v| (i, *v)))
                .collect::<Option<Vec<_>>>()
                .ok_or(Error::UnexpectedTpmOutput { what: "a selected SHA-256 PCR was not read" })?;
            if pcr_digest(&values).as_bytes() == quoted.pcr_digest() {
                self.quoted_pcrs = Some((mask, values.clone()));
                return Ok(QuotedPcrs { quote, values });
            }
        }
        Err(Error::UnexpectedTpmOutput { what: "PCRs changed between every quote and the PCR read that followed it" })
    }

    /// Runs `f` with the AK's handle: the persistent one, or a freshly created (and afterwards flushed) one.
    pub(super) fn with_ak<T>(
        &mut self,
        ak: &AttestationKey,
        f: impl FnOnce(&mut Tpm, ObjectHandle) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match ak.config.storage {
            AkStorage::Persistent(handle) => {
                let object = match self.persistent_ak {
                    Some((h, object)) if h == handle => object,
                    _ => {
                        self.forget_persistent_ak()?;
                        let persistent = PersistentTpmHandle::new(handle)
                            .map_err(|_| Error::InvalidArgument { what: "not a persistent handle" })?;
                        let object = self
                            .ctx
                            .execute_without_session(|ctx| ctx.tr_from_tpm_public(TpmHandle::Persistent(persistent)))
                            .map_err(tpm_error("ESYS_TR_FromTPMPublic (AK)"))?;
                        self.persistent_ak = Some((handle, object));
                        object
                    }
                };
                f(self, object)
            }
            AkStorage::Transient => {
                let template = match &ak.template {
                    Some(bytes) => {
                        use tss_esapi::traits::UnMarshall as _;
                        Public::unmarshall(bytes).map_err(tpm_error("unmarshalling the AK template"))?
                    }
                    None => ak_template(ak.config.algorithm)?,
                };
                let created = self
                    .ctx
                    .execute_with_session(Some(AuthSession::Password), |ctx| {
                        ctx.create_primary(Hierarchy::Endorsement, template, None, None, None, None)
                    })
                    .map_err(tpm_error("TPM2_CreatePrimary (AK)"))?;
                let object = ObjectHandle::from(created.key_handle);
                let out = f(self, object);
                let flushed = self.ctx.flush_context(object).map_err(tpm_error("TPM2_FlushContext (AK)"));
                let value = out?;
                flushed?;
                Ok(value)
            }
        }
    }

    /// Releases the cached ESYS_TR of the persisted AK (the object stays in the TPM).
    fn forget_persistent_ak(&mut self) -> Result<(), Error> {
        if let Some((_, mut object)) = self.persistent_ak.take() {
            self.ctx.tr_close(&mut object).map_err(tpm_error("closing the AK handle"))?;
        }
        Ok(())
    }

    fn with_created_ak<T>(
        &mut self,
        config: AkConfig,
        f: impl FnOnce(&mut tss_esapi::Context, KeyHandle) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let template = ak_template(config.algorithm)?;
        let created = self
            .ctx
            .execute_with_session(Some(AuthSession::Password), |ctx| {
                ctx.create_primary(Hierarchy::Endorsement, template, None, None, None, None)
            })
            .map_err(tpm_error("TPM2_CreatePrimary (AK)"))?;
        let handle = created.key_handle;
        self.with_transient(ObjectHandle::from(handle), |ctx, _| f(ctx, handle))
    }

    fn with_persistent<T>(
        &mut self,
        persistent: PersistentTpmHandle,
        f: impl FnOnce(&mut tss_esapi::Context, ObjectHandle) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut object = self
            .ctx
            .execute_without_session(|ctx| ctx.tr_from_tpm_public(TpmHandle::Persistent(persistent)))
            .map_err(tpm_error("ESYS_TR_FromTPMPublic"))?;
        let out = f(&mut self.ctx, object);
        let closed = self.ctx.tr_close(&mut object).map_err(tpm_error("closing a persistent handle"));
        let value = out?;
        closed?;
        Ok(value)
    }

    /// Whether a persistent object exists at `handle` (TPM2_GetCapability(TPM_CAP_HANDLES)).
    pub fn persistent_exists(&mut self, handle: u32) -> Result<bool, Error> {
        self.handle_exists(handle)
    }
}

/// Reads the AK's public area and Name, and checks that the Name hashes the marshalled TPMT_PUBLIC.
pub(super) fn read_ak_public(ctx: &mut tss_esapi::Context, handle: ObjectHandle) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let (public, name, _) = ctx.read_public(handle.into()).map_err(tpm_error("TPM2_ReadPublic (AK)"))?;
    let tpmt = public.marshall().map_err(tpm_error("marshalling TPMT_PUBLIC"))?;
    super::check_name(&tpmt, name.value())?;
    Ok((tpm2b(&tpmt)?, name.value().to_vec()))
}

/// Whether a loaded key matches the template it would be created from (everything but the unique field).
fn same_template(found: &Public, template: &Public) -> bool {
    match (found, template) {
        (
            Public::Rsa { object_attributes: a, name_hashing_algorithm: n, auth_policy: p, parameters: r, .. },
            Public::Rsa { object_attributes: a2, name_hashing_algorithm: n2, auth_policy: p2, parameters: r2, .. },
        ) => a == a2 && n == n2 && p == p2 && r == r2,
        (
            Public::Ecc { object_attributes: a, name_hashing_algorithm: n, auth_policy: p, parameters: e, .. },
            Public::Ecc { object_attributes: a2, name_hashing_algorithm: n2, auth_policy: p2, parameters: e2, .. },
        ) => a == a2 && n == n2 && p == p2 && e == e2,
        _ => false,
    }
}
