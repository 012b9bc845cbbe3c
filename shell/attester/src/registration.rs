//! The attester side: [`register`] pushes this node's identity to a verifier's `attest.v1.AkRegistration`,
//! and [`ActivationService`] serves `attest.v1.CredentialActivation` for verifiers that pull. The TPM work
//! (TPM2_ActivateCredential) runs on a blocking thread.

use std::sync::Arc;

use attest_proto::attest::v1::{
    ActivateRequest, ActivateResponse, BeginRegistrationRequest, BeginRegistrationResponse,
    CompleteRegistrationRequest, CompleteRegistrationResponse, GetIdentityRequest, GetIdentityResponse,
};
use attest_proto::paths;
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

use crate::issuer::QemuVtpmIssuer;
use attest_grpc::{Request, Response, Router, Service, Status};
use attest_registration::{
    CredentialChallenge, MAX_CREDENTIAL_BLOB_LEN, MAX_ENCRYPTED_SECRET_LEN, RegistrationError, ak_digest, call,
    status_for,
};

/// Activations queued for the TPM at once. The TPM runs one command at a time (the issuer's mutex); further
/// `Activate` calls are refused with `RESOURCE_EXHAUSTED` instead of piling up blocking threads.
pub const MAX_CONCURRENT_ACTIVATIONS: usize = 4;

/// Runs TPM2_ActivateCredential with the issuer's AK and the EK on a blocking thread.
async fn activate(
    issuer: Arc<QemuVtpmIssuer>,
    challenge: CredentialChallenge,
) -> Result<Result<Zeroizing<Vec<u8>>, crate::tpm::Error>, tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || issuer.with_tpm(|tpm, ak| tpm.activate_credential(ak, &challenge))).await
}

/// Registers this node's AK with the verifier behind `channel` (which serves `attest.v1.AkRegistration`):
/// sends the EK certificate (DER, e.g. [`Tpm::ek_certificate`](crate::tpm::Tpm::ek_certificate)) and the
/// issuer's AK, activates the credential on the TPM, and returns the AK digest the verifier recorded
/// (checked to be this AK's).
pub async fn register(
    channel: &attest_grpc::Channel,
    issuer: &Arc<QemuVtpmIssuer>,
    ek_certificate: &[u8],
) -> Result<[u8; 32], RegistrationError> {
    let ak_public = issuer.attestation_key().tpm2b_public().to_vec();
    let expected = ak_digest(&ak_public).map_err(RegistrationError::Local)?;
    let request = BeginRegistrationRequest { ek_certificate: ek_certificate.to_vec(), ak_public };
    let begun: BeginRegistrationResponse = call(channel, paths::REGISTRATION_BEGIN, request).await?;
    if begun.credential_blob.len() > MAX_CREDENTIAL_BLOB_LEN || begun.encrypted_secret.len() > MAX_ENCRYPTED_SECRET_LEN
    {
        return Err(RegistrationError::BadResponse { what: "an oversized credential" });
    }
    let challenge =
        CredentialChallenge { credential_blob: begun.credential_blob, encrypted_secret: begun.encrypted_secret };
    let secret = activate(Arc::clone(issuer), challenge).await.map_err(|_| RegistrationError::TaskFailed)?.map_err(
        |e| match e {
            // The verifier's credential is not for our EK and AK: its answer is wrong, not our TPM.
            crate::tpm::Error::CredentialMismatch | crate::tpm::Error::InvalidArgument { .. } => {
                RegistrationError::BadResponse { what: "a credential this TPM cannot activate" }
            }
            other => RegistrationError::Local(other),
        },
    )?;
    let request = CompleteRegistrationRequest { registration_id: begun.registration_id, secret: secret.to_vec() };
    let done: CompleteRegistrationResponse = call(channel, paths::REGISTRATION_COMPLETE, request).await?;
    if done.ak_digest != expected {
        return Err(RegistrationError::BadResponse { what: "the verifier recorded another AK digest" });
    }
    Ok(expected)
}

/// `attest.v1.CredentialActivation`: this node's EK certificate and AK, and credential activation on its TPM,
/// for verifiers that pull the registration ([`attest_registration::register_remote`]).
#[derive(Debug)]
pub struct ActivationService {
    issuer: Arc<QemuVtpmIssuer>,
    ek_certificate: Vec<u8>,
    slots: Arc<Semaphore>,
}

impl ActivationService {
    /// A service activating credentials with `issuer`'s AK and TPM, presenting `ek_certificate` (DER).
    pub fn new(issuer: Arc<QemuVtpmIssuer>, ek_certificate: Vec<u8>) -> Self {
        Self { issuer, ek_certificate, slots: Arc::new(Semaphore::new(MAX_CONCURRENT_ACTIVATIONS)) }
    }

    /// `GetIdentity`: the EK certificate and the AK's TPM2B_PUBLIC.
    pub fn identity(&self) -> GetIdentityResponse {
        GetIdentityResponse {
            ek_certificate: self.ek_certificate.clone(),
            ak_public: self.issuer.attestation_key().tpm2b_public().to_vec(),
        }
    }

    /// `Activate`: TPM2_ActivateCredential on a blocking thread.
    ///
    /// Errors: `INVALID_ARGUMENT` (oversized or malformed fields), `PERMISSION_DENIED` (a credential that is
    /// not for this TPM's EK and AK), `RESOURCE_EXHAUSTED` (too many activations queued), `INTERNAL` (TPM).
    pub async fn activate(&self, request: ActivateRequest) -> Result<ActivateResponse, Status> {
        if request.credential_blob.len() > MAX_CREDENTIAL_BLOB_LEN {
            return Err(Status::invalid_argument(format!("credential blob above {MAX_CREDENTIAL_BLOB_LEN} bytes")));
        }
        if request.encrypted_secret.len() > MAX_ENCRYPTED_SECRET_LEN {
            return Err(Status::invalid_argument(format!("encrypted secret above {MAX_ENCRYPTED_SECRET_LEN} bytes")));
        }
        let _permit = Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| Status::resource_exhausted("too many credential activations in progress"))?;
        let challenge = CredentialChallenge {
            credential_blob: request.credential_blob,
            encrypted_secret: request.encrypted_secret,
        };
        let secret = activate(Arc::clone(&self.issuer), challenge)
            .await
            .map_err(|_| Status::internal("credential activation task failed"))?
            .map_err(|e| {
                tracing::info!(error = %e, "activation: refused");
                status_for(&e, "TPM2_ActivateCredential")
            })?;
        // prost owns a plain Vec; the zeroized buffer is wiped here, the response's copy once it is encoded.
        Ok(ActivateResponse { secret: secret.to_vec() })
    }
}

impl Service for ActivationService {
    fn register(self: Arc<Self>, router: &mut Router) {
        let this = Arc::clone(&self);
        router.unary(paths::ACTIVATION_GET_IDENTITY, move |_request: Request<GetIdentityRequest>| {
            let identity = this.identity();
            async move { Ok(Response::new(identity)) }
        });
        router.unary(paths::ACTIVATION_ACTIVATE, move |request: Request<ActivateRequest>| {
            let this = Arc::clone(&self);
            async move { this.activate(request.message).await.map(Response::new) }
        });
    }
}
