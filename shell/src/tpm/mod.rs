//! TPM 2.0 access (attester side, via `tss-esapi`) and the verifier-side pieces that `qemu-vtpm` needs
//! around the engine: credential protection in software, EK certificate verification and the AK registry.
//!
//! | module | side | what |
//! |---|---|---|
//! | [`device`] | attester | open a TPM by TCTI, read/extend SHA-256 PCRs, quote; the flush discipline |
//! | [`ek`] | attester | the RSA-2048 EK (TCG template L-1) and its certificate (NV 0x01c00002) |
//! | [`ak`] | attester | the attestation key: restricted signing, persisted at 0x81000003 or re-created |
//! | [`credential`] | both | `make_credential` in software (verifier), `activate_credential` on the TPM (attester) |
//! | [`ekcert`] | verifier | EK certificate chain against a CA bundle (OpenSSL) |
//! | [`registry`] | verifier | [`FileAkRegistry`] (an engine `AkRegistry`) and the registration flow |
//!
//! ```no_run
//! use attest_shell::tpm::{AkConfig, PcrMask, Tpm};
//! let mut tpm = Tpm::open("swtpm:host=127.0.0.1,port=2321")?;
//! let ak = tpm.attestation_key(AkConfig::default())?;
//! let quote = tpm.quote(&ak, PcrMask::ALL, &[0u8; 32])?;
//! let pcrs = tpm.read_pcrs(PcrMask::ALL)?;
//! # Ok::<(), attest_shell::tpm::Error>(())
//! ```

pub mod ak;
pub mod credential;
pub mod device;
pub mod ek;
pub mod ekcert;
mod error;
pub mod registry;

pub use ak::{AkAlgorithm, AkConfig, AkStorage, AttestationKey, DEFAULT_AK_HANDLE};
pub use credential::{CredentialChallenge, make_credential};
pub use device::{PCR_COUNT, PcrMask, Quote, Sha256Pcrs, Tpm};
pub use ek::{EkPublic, RSA_2048_EK_CERT_NV_INDEX};
pub use ekcert::EkCaBundle;
pub use error::Error;
pub use registry::{AkRegistrar, FileAkRegistry, PendingRegistration, ak_digest};

/// Prefixes `contents` with its big-endian u16 size (a TPM2B).
pub(crate) fn tpm2b(contents: &[u8]) -> Result<Vec<u8>, Error> {
    let len = u16::try_from(contents.len())
        .map_err(|_| Error::InvalidArgument { what: "TPM2B contents above 65535 bytes" })?;
    let mut out = Vec::with_capacity(2 + contents.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(contents);
    Ok(out)
}

/// Checks that a SHA-256 Name is 0x000B ‖ SHA-256(`tpmt_public`): proof that the TSS re-marshalled the
/// public area exactly as the TPM hashed it.
pub(crate) fn check_name(tpmt_public: &[u8], name: &[u8]) -> Result<(), Error> {
    match name {
        [0x00, 0x0B, digest @ ..] if digest == openssl::sha::sha256(tpmt_public) => Ok(()),
        [0x00, 0x0B, ..] => {
            Err(Error::UnexpectedTpmOutput { what: "the Name does not hash the marshalled TPMT_PUBLIC" })
        }
        _ => Err(Error::UnexpectedTpmOutput { what: "a Name whose nameAlg is not SHA-256" }),
    }
}
