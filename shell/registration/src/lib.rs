//! # attest-registration
//!
//! How a verifier comes to trust a TPM attestation key (AK) for the `qemu-vtpm` variant: EK certificate
//! chains against a CA bundle ([`ekcert`]), credential protection in software ([`credential`]:
//! TPM2_MakeCredential), the file AK registry the engine's validator consults ([`registry`]), and the gRPC
//! registration services of the verifier side ([`RegistrationService`], [`register_remote`]).
//!
//! **May depend on:** `attest-engine`, `attest-proto`, `attest-grpc`, `attest-util`, OpenSSL.
//! **Must not depend on:** the TSS library (`tss-esapi`) or anything of the attester side (`attest-attester`),
//! aTLS or a service: the join service and the CLI verify AKs without linking TPM access code. The attester
//! side (`attest-attester`) builds on this crate for the shared [`Error`], [`CredentialChallenge`] and the
//! wire limits below.
//!
//! # Registration over gRPC
//!
//! TPM2 credential activation ([`AkRegistrar`]) between a verifier that
//! keeps a [`FileAkRegistry`] and an attester with a TPM, in either direction.
//!
//! | direction | service (proto `attest.v1`) | served by | driven by |
//! |---|---|---|---|
//! | push | `AkRegistration` — [`RegistrationService`] | a verifier (the join service) | the attester: `register` (`attest-attester`) |
//! | pull | `CredentialActivation` — `ActivationService` (`attest-attester`) | an attester (the bootstrapper's init server) | the verifier: [`register_remote`] |
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
//! The table holds at most [`MAX_PENDING_REGISTRATIONS`] entries, each for at most [`REGISTRATION_TTL`]; ids
//! are [`REGISTRATION_ID_LEN`] random bytes; a `Complete` consumes the entry whatever its outcome, so a wrong
//! answer cannot be retried and a right one cannot be replayed (`NOT_FOUND`).
//!
//! **Fairness**. An EK certificate and an AK public area are readable by anything on a node, so a
//! flood of `Begin`s with one genuine pair must not fill the table: the entries are counted per caller (the
//! connection's source IPv4 address or IPv6 /64, `attest_grpc::admission::PeerKey`). A `Begin` never fails
//! for room; it sheds instead, in this order:
//!
//! | limit | when reached, the entry shed |
//! |---|---|
//! | [`MAX_PENDING_PER_EK`] for this caller and EK certificate | this caller's oldest for this EK |
//! | [`MAX_PENDING_PER_PEER`] for this caller | this caller's oldest |
//! | [`MAX_PENDING_REGISTRATIONS`] in all (after dropping expired ones) | the oldest of the caller holding the most |
//!
//! So a flooding caller only ever sheds its own entries until the table is full, and then the heaviest
//! caller's: a node that holds one entry keeps it for as long as anyone holds more. A shed registration's
//! `Complete` gets `NOT_FOUND` and the node begins again. The limits and the shedding count are exported
//! ([`RegistrationService::render_metrics`]).
//!
//! # Why the activation service is not an oracle to worry about
//!
//! `ActivationService` (`attest-attester`) activates any credential a caller sends, but only with *its own* AK and EK: the
//! secret comes out only if the credential was made for exactly that pair. Whoever asks therefore learns
//! nothing except the truth — that this node's AK lives with this node's EK — and relaying a challenge to it
//! can register nothing but this node's own AK. It should still be served only over aTLS, where the caller
//! can check that the AK in the node's attestation is the one it registers (`attest init` does).
//!
//! Secrets (the credential secret, the seed) are never logged; refusals log the AK digest and the reason.

// `Status` is the error of every call (see `attest_grpc`); boxing it would cost an allocation per refusal.
#![allow(clippy::result_large_err)]
#![forbid(unsafe_code)]

pub mod credential;
pub mod ekcert;
mod error;
pub mod registry;
mod rpc_error;
mod verifier;

pub use credential::{CredentialChallenge, make_credential};
pub use ekcert::EkCaBundle;
pub use error::Error;
pub use registry::{AkRegistrar, FileAkRegistry, PendingRegistration, ak_digest};
pub use rpc_error::{RegistrationError, status_for};
pub use verifier::{
    MAX_AK_PUBLIC_LEN, MAX_EK_CERTIFICATE_LEN, MAX_PENDING_PER_EK, MAX_PENDING_PER_PEER, MAX_PENDING_REGISTRATIONS,
    REGISTRATION_ID_LEN, REGISTRATION_TTL, RegistrationService, call, register_remote,
};

use std::time::Duration;

/// Timeout of each registration call on the client side. TPM2_ActivateCredential on a real TPM (an RSA-2048
/// decryption plus a primary key creation for the EK) takes up to a few seconds.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest TPM2B_ID_OBJECT accepted: its size, an HMAC (TPM2B_DIGEST, ≤ 2 + 64 bytes) and the encrypted
/// TPM2B_DIGEST credential (≤ 2 + 64 bytes) — 134 bytes with SHA-512; rounded up.
pub const MAX_CREDENTIAL_BLOB_LEN: usize = 256;
/// Largest TPM2B_ENCRYPTED_SECRET accepted: its size and an RSA-4096 ciphertext (TPM 2.0 Part 2
/// `TPMU_ENCRYPTED_SECRET`, `MAX_RSA_KEY_BYTES` = 512).
pub const MAX_ENCRYPTED_SECRET_LEN: usize = 2 + 512;

/// Prefixes `contents` with its big-endian u16 size (a TPM2B).
pub fn tpm2b(contents: &[u8]) -> Result<Vec<u8>, Error> {
    let len = u16::try_from(contents.len())
        .map_err(|_| Error::InvalidArgument { what: "TPM2B contents above 65535 bytes" })?;
    let mut out = Vec::with_capacity(2 + contents.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(contents);
    Ok(out)
}

/// Checks that a SHA-256 Name is 0x000B ‖ SHA-256(`tpmt_public`): proof that the TSS re-marshalled the
/// public area exactly as the TPM hashed it.
pub fn check_name(tpmt_public: &[u8], name: &[u8]) -> Result<(), Error> {
    match name {
        [0x00, 0x0B, digest @ ..] if digest == openssl::sha::sha256(tpmt_public) => Ok(()),
        [0x00, 0x0B, ..] => {
            Err(Error::UnexpectedTpmOutput { what: "the Name does not hash the marshalled TPMT_PUBLIC" })
        }
        _ => Err(Error::UnexpectedTpmOutput { what: "a Name whose nameAlg is not SHA-256" }),
    }
}
