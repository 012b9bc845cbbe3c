//! The attester side of credential protection (TPM 2.0 Library Part 1 §24; Part 3 §12.5
//! TPM2_ActivateCredential): recover the secret a verifier encrypted for this TPM's EK and an AK's Name. The
//! verifier side (`make_credential` in software) is [`attest_registration::credential`].

use super::ak::AttestationKey;
use super::device::Tpm;
use super::{Error, tpm_error};
use attest_registration::CredentialChallenge;
use tss_esapi::constants::SessionType;
use tss_esapi::handles::{AuthHandle, SessionHandle};
use tss_esapi::interface_types::algorithm::HashingAlgorithm;
use tss_esapi::interface_types::session_handles::{AuthSession, PolicySession};
use tss_esapi::structures::{Digest, EncryptedSecret, IdObject, Nonce, SymmetricDefinition};
use zeroize::Zeroizing;

/// Strips a TPM2B's size prefix, checking it matches the rest exactly.
fn tpm2b_contents<'a>(b: &'a [u8], what: &'static str) -> Result<&'a [u8], Error> {
    match b {
        [hi, lo, rest @ ..] if usize::from(u16::from_be_bytes([*hi, *lo])) == rest.len() => Ok(rest),
        _ => Err(Error::InvalidArgument { what }),
    }
}

impl Tpm {
    /// TPM2_ActivateCredential: recovers the secret of `challenge` with `ak` (activateHandle) and the
    /// RSA-2048 EK (keyHandle). Fails with [`Error::CredentialMismatch`] when the TPM refuses the blob
    /// (wrong EK, wrong Name, tampered blob: TPM_RC_INTEGRITY / TPM_RC_VALUE on the secret).
    pub fn activate_credential(
        &mut self,
        ak: &AttestationKey,
        challenge: &CredentialChallenge,
    ) -> Result<Zeroizing<Vec<u8>>, Error> {
        let blob = IdObject::try_from(tpm2b_contents(&challenge.credential_blob, "credential blob is not a TPM2B")?)
            .map_err(|_| Error::InvalidArgument { what: "credential blob too large" })?;
        let secret =
            EncryptedSecret::try_from(tpm2b_contents(&challenge.encrypted_secret, "encrypted secret is not a TPM2B")?)
                .map_err(|_| Error::InvalidArgument { what: "encrypted secret too large" })?;
        self.with_ak(ak, |tpm, ak_handle| {
            tpm.with_ek(|ctx, ek_handle| {
                // A policy session for the EK: PolicySecret(TPM_RH_ENDORSEMENT), authorized by the (empty)
                // endorsement password.
                let session = ctx
                    .start_auth_session(
                        None,
                        None,
                        None,
                        SessionType::Policy,
                        SymmetricDefinition::AES_128_CFB,
                        HashingAlgorithm::Sha256,
                    )
                    .map_err(tpm_error("TPM2_StartAuthSession (policy)"))?
                    .ok_or(Error::UnexpectedTpmOutput { what: "no policy session handle" })?;
                let result = (|| {
                    let policy = PolicySession::try_from(session)
                        .map_err(|_| Error::UnexpectedTpmOutput { what: "not a policy session" })?;
                    ctx.execute_with_session(Some(AuthSession::Password), |ctx| {
                        ctx.policy_secret(
                            policy,
                            AuthHandle::Endorsement,
                            Nonce::default(),
                            Digest::default(),
                            Nonce::default(),
                            None,
                        )
                    })
                    .map_err(tpm_error("TPM2_PolicySecret"))?;
                    ctx.execute_with_sessions((Some(AuthSession::Password), Some(session), None), |ctx| {
                        ctx.activate_credential(ak_handle.into(), ek_handle, blob, secret)
                    })
                    .map_err(activation_error)
                })();
                let flushed = ctx
                    .flush_context(SessionHandle::from(session).into())
                    .map_err(tpm_error("TPM2_FlushContext (session)"));
                let digest = result?;
                flushed?;
                Ok(Zeroizing::new(digest.value().to_vec()))
            })
        })
    }
}

/// TPM2_ActivateCredential's answers to a credential that is not for this EK and Name are a failed proof;
/// anything else is a TPM failure. TPM 2.0 Part 3 §12.5 names TPM_RC_INTEGRITY (outer HMAC) and
/// TPM_RC_VALUE / TPM_RC_SIZE (seed, decrypted credential). libtpms (swtpm 0.7, measured) answers
/// **TPM_RC_FAILURE** (0x101) when the OAEP decoding of a seed encrypted to another EK fails, without
/// entering failure mode (the next command succeeds), so that code counts as a failed proof here too.
fn activation_error(source: tss_esapi::Error) -> Error {
    use tss_esapi::constants::response_code::Tss2ResponseCodeKind as K;
    match source {
        tss_esapi::Error::Tss2Error(rc)
            if matches!(rc.kind(), Some(K::Integrity | K::Value | K::Size | K::Failure)) =>
        {
            Error::CredentialMismatch
        }
        source => tpm_error("TPM2_ActivateCredential")(source),
    }
}
