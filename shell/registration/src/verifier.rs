//! The verifier side: [`RegistrationService`] serves `attest.v1.AkRegistration` (the attester pushes), and
//! [`register_remote`] drives an attester's `attest.v1.CredentialActivation` (the verifier pulls). Both record
//! into a [`FileAkRegistry`] through [`AkRegistrar`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use attest_proto::attest::v1::{
    ActivateRequest, ActivateResponse, BeginRegistrationRequest, BeginRegistrationResponse,
    CompleteRegistrationRequest, CompleteRegistrationResponse, GetIdentityRequest, GetIdentityResponse,
};
use attest_proto::paths;

use crate::credential::MAX_CREDENTIAL;
use crate::rpc_error::{RegistrationError, status_for};
use crate::{AkRegistrar, CredentialChallenge, EkCaBundle, FileAkRegistry, PendingRegistration};
use crate::{CALL_TIMEOUT, MAX_CREDENTIAL_BLOB_LEN};
use attest_grpc::{Channel, Metadata, Request, Response, Router, Service, Status};

/// Most registrations waiting for their `Complete` at once. A `Begin` costs the server an EK chain check and
/// an RSA-OAEP encryption and keeps ≈ 100 bytes; 1024 is far above what a cluster's nodes need at once and
/// bounds what a flood of `Begin`s can hold.
pub const MAX_PENDING_REGISTRATIONS: usize = 1024;
/// How long a pending registration can be completed. One TPM2_ActivateCredential takes well under a second on
/// swtpm and a few seconds on a slow hardware TPM; a minute leaves room for a loaded node.
pub const REGISTRATION_TTL: Duration = Duration::from_secs(60);
/// Bytes of a registration id (random; 128 bits cannot be guessed).
pub const REGISTRATION_ID_LEN: usize = 16;
/// Largest EK certificate accepted. NV indices for EK certificates are typically limited to 2048 bytes
/// (`TPM_PT_NV_INDEX_MAX` of common TPMs); twice that leaves room for long manufacturer names.
pub const MAX_EK_CERTIFICATE_LEN: usize = 4096;
/// Largest AK TPM2B_PUBLIC accepted: an RSA-4096 public area with a SHA-512 authPolicy is ≈ 600 bytes.
pub const MAX_AK_PUBLIC_LEN: usize = 1024;

type RegistrationId = [u8; REGISTRATION_ID_LEN];

struct Pending {
    registration: PendingRegistration,
    expires: Instant,
}

/// `attest.v1.AkRegistration`: registers the AKs of attesters that push their identity, after credential
/// activation against an EK certificate from the configured CA bundle.
pub struct RegistrationService {
    registry: Arc<FileAkRegistry>,
    ca: EkCaBundle,
    pending: Mutex<HashMap<RegistrationId, Pending>>,
    ttl: Duration,
    max_pending: usize,
}

impl std::fmt::Debug for RegistrationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrationService")
            .field("registry", &self.registry.path())
            .field("ca", &self.ca)
            .field("pending", &self.pending())
            .field("ttl", &self.ttl)
            .field("max_pending", &self.max_pending)
            .finish()
    }
}

impl RegistrationService {
    /// A service recording into `registry` the AKs proved to live with an EK certified under `ca`.
    pub fn new(registry: Arc<FileAkRegistry>, ca: EkCaBundle) -> Self {
        Self {
            registry,
            ca,
            pending: Mutex::new(HashMap::new()),
            ttl: REGISTRATION_TTL,
            max_pending: MAX_PENDING_REGISTRATIONS,
        }
    }

    /// Lets pending registrations live for `ttl` instead of [`REGISTRATION_TTL`].
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Keeps at most `max` pending registrations instead of [`MAX_PENDING_REGISTRATIONS`].
    #[must_use]
    pub fn with_max_pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }

    /// The registry AKs are recorded in.
    pub fn registry(&self) -> &Arc<FileAkRegistry> {
        &self.registry
    }

    /// Registrations begun and not yet completed (expired ones included until they are swept).
    pub fn pending(&self) -> usize {
        self.table().len()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<RegistrationId, Pending>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Begin`: checks the EK certificate and the AK, makes the credential, keeps the pending registration.
    ///
    /// Errors: `INVALID_ARGUMENT` (oversized fields, EK certificate not from the CA bundle, an AK without the
    /// attributes of an attestation key), `RESOURCE_EXHAUSTED` (the pending table is full).
    pub fn begin(&self, request: &BeginRegistrationRequest) -> Result<BeginRegistrationResponse, Status> {
        if request.ek_certificate.len() > MAX_EK_CERTIFICATE_LEN {
            return Err(Status::invalid_argument(format!("EK certificate above {MAX_EK_CERTIFICATE_LEN} bytes")));
        }
        if request.ak_public.len() > MAX_AK_PUBLIC_LEN {
            return Err(Status::invalid_argument(format!("AK public area above {MAX_AK_PUBLIC_LEN} bytes")));
        }
        // Refuse early when full, before spending the EK chain check and the RSA encryption.
        self.check_room(&mut self.table(), Instant::now())?;
        let registrar = AkRegistrar::new(self.ca.clone(), &self.registry);
        let (challenge, registration) =
            registrar.challenge(&request.ek_certificate, &request.ak_public).map_err(|e| {
                tracing::info!(error = %e, "registration: begin refused");
                status_for(&e, "making the credential")
            })?;
        let mut id = [0u8; REGISTRATION_ID_LEN];
        openssl::rand::rand_bytes(&mut id).map_err(|_| Status::internal("random number generator failed"))?;
        let now = Instant::now();
        let mut table = self.table();
        self.check_room(&mut table, now)?;
        tracing::debug!(ak_digest = %hex::encode(registration.ak_digest()), "registration: challenge issued");
        table.insert(id, Pending { registration, expires: now + self.ttl });
        let CredentialChallenge { credential_blob, encrypted_secret } = challenge;
        Ok(BeginRegistrationResponse { registration_id: id.to_vec(), credential_blob, encrypted_secret })
    }

    /// Sweeps expired entries; `RESOURCE_EXHAUSTED` if the table is still full.
    fn check_room(&self, table: &mut HashMap<RegistrationId, Pending>, now: Instant) -> Result<(), Status> {
        if table.len() >= self.max_pending {
            table.retain(|_, p| p.expires > now);
        }
        if table.len() >= self.max_pending {
            tracing::warn!(max = self.max_pending, "registration: pending table full");
            return Err(Status::resource_exhausted("too many registrations in progress; retry later"));
        }
        Ok(())
    }

    /// Takes the pending registration named `id` out of the table (single use).
    ///
    /// Errors: `INVALID_ARGUMENT` (not an id's length), `NOT_FOUND` (unknown, already completed or swept),
    /// `FAILED_PRECONDITION` (expired).
    fn take(&self, id: &[u8]) -> Result<PendingRegistration, Status> {
        let id: RegistrationId =
            id.try_into().map_err(|_| Status::invalid_argument("a registration id is 16 bytes"))?;
        let pending = self.table().remove(&id).ok_or_else(|| Status::not_found("unknown registration id"))?;
        if pending.expires <= Instant::now() {
            return Err(Status::failed_precondition("the registration expired; begin again"));
        }
        Ok(pending.registration)
    }

    /// `Complete`: consumes the pending registration and, if the secret is right (constant-time compare),
    /// records the AK. Blocks on the registry file write (call it from a blocking thread).
    ///
    /// Errors: `INVALID_ARGUMENT` (an id that is not 16 bytes), `NOT_FOUND` (unknown, already completed or
    /// swept), `FAILED_PRECONDITION` (expired), `INVALID_ARGUMENT` (oversized secret),
    /// `PERMISSION_DENIED` (wrong secret), `INTERNAL` (registry write failed).
    pub fn complete(&self, request: &CompleteRegistrationRequest) -> Result<CompleteRegistrationResponse, Status> {
        let registration = self.take(&request.registration_id)?;
        if request.secret.len() > MAX_CREDENTIAL {
            return Err(Status::invalid_argument(format!("a credential secret is at most {MAX_CREDENTIAL} bytes")));
        }
        let ak_digest = *registration.ak_digest();
        let registrar = AkRegistrar::new(self.ca.clone(), &self.registry);
        match registrar.complete(registration, &request.secret) {
            Ok(digest) => {
                tracing::info!(ak_digest = %hex::encode(digest), "registration: AK registered (credential activation)");
                Ok(CompleteRegistrationResponse { ak_digest: digest.to_vec() })
            }
            Err(e) => {
                tracing::info!(ak_digest = %hex::encode(ak_digest), error = %e, "registration: complete refused");
                Err(status_for(&e, "recording the AK"))
            }
        }
    }
}

impl Service for RegistrationService {
    fn register(self: Arc<Self>, router: &mut Router) {
        let this = Arc::clone(&self);
        router.unary(paths::REGISTRATION_BEGIN, move |request: Request<BeginRegistrationRequest>| {
            let this = Arc::clone(&this);
            // An EK chain check and one RSA-OAEP encryption (public key): well under a millisecond.
            async move { this.begin(&request.message).map(Response::new) }
        });
        router.unary(paths::REGISTRATION_COMPLETE, move |request: Request<CompleteRegistrationRequest>| {
            let this = Arc::clone(&self);
            async move {
                // The registry write fsyncs a file and its directory: off the async threads.
                tokio::task::spawn_blocking(move || this.complete(&request.message))
                    .await
                    .map_err(|_| Status::internal("registration task failed"))?
                    .map(Response::new)
            }
        });
    }
}

/// Registers the AK of the attester behind `channel` (which serves `attest.v1.CredentialActivation`) into
/// `registry`, trusting EK certificates under `ca`. Returns the AK digest (SHA-256 of its TPMT_PUBLIC).
///
/// The registry file write at the end blocks briefly (fsync); this is meant for command-line tools and
/// one-off registrations, not for a server's hot path.
pub async fn register_remote(
    channel: &Channel,
    ca: &EkCaBundle,
    registry: &FileAkRegistry,
) -> Result<[u8; 32], RegistrationError> {
    let identity: GetIdentityResponse = call(channel, paths::ACTIVATION_GET_IDENTITY, GetIdentityRequest {}).await?;
    if identity.ek_certificate.len() > MAX_EK_CERTIFICATE_LEN || identity.ak_public.len() > MAX_AK_PUBLIC_LEN {
        return Err(RegistrationError::BadResponse { what: "an oversized EK certificate or AK public area" });
    }
    let registrar = AkRegistrar::new(ca.clone(), registry);
    let (challenge, pending) =
        registrar.challenge(&identity.ek_certificate, &identity.ak_public).map_err(RegistrationError::from_check)?;
    let request =
        ActivateRequest { credential_blob: challenge.credential_blob, encrypted_secret: challenge.encrypted_secret };
    let answer: ActivateResponse = call(channel, paths::ACTIVATION_ACTIVATE, request).await?;
    let answer = zeroize::Zeroizing::new(answer.secret);
    if answer.len() > MAX_CREDENTIAL {
        return Err(RegistrationError::BadResponse { what: "an oversized credential secret" });
    }
    registrar.complete(pending, &answer).map_err(RegistrationError::from_check)
}

/// A unary registration call with [`CALL_TIMEOUT`].
pub async fn call<Req, Resp>(channel: &Channel, method: &'static str, request: Req) -> Result<Resp, RegistrationError>
where
    Req: prost::Message,
    Resp: prost::Message + Default,
{
    channel
        .unary(method, request, Metadata::new(), Some(CALL_TIMEOUT))
        .await
        .map(|r| r.message)
        .map_err(|status| RegistrationError::Rpc { method, status })
}

// Keep the two limits consistent: a credential blob carries a TPM2B_DIGEST of at most MAX_CREDENTIAL bytes.
const _: () = assert!(MAX_CREDENTIAL_BLOB_LEN >= 2 + 2 + 32 + 2 + MAX_CREDENTIAL);
