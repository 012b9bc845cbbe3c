//! AK registration over gRPC: TPM2 credential activation ([`crate::tpm::AkRegistrar`]) between a verifier that
//! keeps a [`FileAkRegistry`](crate::tpm::FileAkRegistry) and an attester with a TPM, in either direction.
//!
//! | direction | service (proto `attest.v1`) | served by | driven by |
//! |---|---|---|---|
//! | push | `AkRegistration` — [`RegistrationService`] | a verifier (the join service) | the attester: [`register`] |
//! | pull | `CredentialActivation` — [`ActivationService`] | an attester (the bootstrapper's init server) | the verifier: [`register_remote`] |
//!
//! Both run the same proof (TPM 2.0 Part 1 §24, Part 3 §12.5):
//!
//! ```text
//!  attester (TPM: EK + AK)                         verifier (CA bundle + registry)
//!  ───────────────────────                         ───────────────────────────────
//!  EK certificate, AK TPM2B_PUBLIC ──────────────▶ verify EK cert → CA; check AK attributes
//!         push: Begin / pull: GetIdentity          secret ← 32 random bytes
//!                                                  credential ← MakeCredential(EK, Name(AK), secret)
//!  TPM2_ActivateCredential(AK, EK) ◀────────────── credential blob + encrypted seed
//!         push: Begin's answer / pull: Activate    (push: kept as a pending registration, random id)
//!  recovered secret ─────────────────────────────▶ constant-time compare → registry += SHA-256(TPMT_PUBLIC)
//!         push: Complete / pull: Activate's answer
//! ```
//!
//! Only the TPM holding the certified EK can decrypt the seed, and it releases the secret only for a loaded
//! object with the AK's Name, so a correct answer proves "this AK lives in the TPM of this EK certificate".
//!
//! # Pending registrations (push)
//!
//! ```text
//!            Begin (EK cert ok, AK ok, table not full)
//!   (none) ──────────────────────────────────────────▶ pending ──Complete, right secret──▶ registered
//!                                                        │  └────Complete, wrong secret──▶ (gone)  PERMISSION_DENIED
//!                                                        └──────TTL passes──▶ expired ──Complete──▶ (gone)  FAILED_PRECONDITION
//! ```
//!
//! The table holds at most [`MAX_PENDING_REGISTRATIONS`] entries (more → `RESOURCE_EXHAUSTED`), each for at
//! most [`REGISTRATION_TTL`]; ids are [`REGISTRATION_ID_LEN`] random bytes; a `Complete` consumes the entry
//! whatever its outcome, so a wrong answer cannot be retried and a right one cannot be replayed (`NOT_FOUND`).
//!
//! # Why the activation service is not an oracle to worry about
//!
//! [`ActivationService`] activates any credential a caller sends, but only with *its own* AK and EK: the
//! secret comes out only if the credential was made for exactly that pair. Whoever asks therefore learns
//! nothing except the truth — that this node's AK lives with this node's EK — and relaying a challenge to it
//! can register nothing but this node's own AK. It should still be served only over aTLS, where the caller
//! can check that the AK in the node's attestation is the one it registers (`attest init` does).
//!
//! Secrets (the credential secret, the seed) are never logged; refusals log the AK digest and the reason.

// `Status` is the error of every call (see `crate::grpc`); boxing it would cost an allocation per refusal.
#![allow(clippy::result_large_err)]

mod attester;
mod error;
mod verifier;

pub use attester::{
    ActivationService, MAX_CONCURRENT_ACTIVATIONS, MAX_CREDENTIAL_BLOB_LEN, MAX_ENCRYPTED_SECRET_LEN, register,
};
pub use error::RegistrationError;
pub use verifier::{
    MAX_AK_PUBLIC_LEN, MAX_EK_CERTIFICATE_LEN, MAX_PENDING_REGISTRATIONS, REGISTRATION_ID_LEN, REGISTRATION_TTL,
    RegistrationService, register_remote,
};

use std::time::Duration;

/// Timeout of each registration call on the client side. TPM2_ActivateCredential on a real TPM (an RSA-2048
/// decryption plus a primary key creation for the EK) takes up to a few seconds.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
