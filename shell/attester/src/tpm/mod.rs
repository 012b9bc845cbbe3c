//! TPM 2.0 access on the attester side, via `tss-esapi`.
//!
//! | module | what |
//! |---|---|
//! | [`device`] | open a TPM by TCTI, read/extend SHA-256 PCRs, quote; the flush discipline |
//! | [`ek`] | the RSA-2048 EK (TCG template L-1) and its certificate (NV 0x01c00002) |
//! | [`ak`] | the attestation key: restricted signing, persisted at 0x81000003 or re-created |
//! | [`nv`] | NV indices and persistent keys clouds provision (Azure's HCL report and AK, GCE's AK template and certificate) |
//! | [`credential`] | `activate_credential` on the TPM (the verifier's `make_credential` is in `attest-registration`) |
//!
//! The error type is the one of AK trust ([`attest_registration::Error`]), so that a registration flow that
//! crosses both sides has one error type.
//!
//! ```no_run
//! use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
//! let mut tpm = Tpm::open("swtpm:host=127.0.0.1,port=2321")?;
//! let ak = tpm.attestation_key(AkConfig::default())?;
//! let quote = tpm.quote(&ak, PcrMask::ALL, &[0u8; 32])?;
//! let pcrs = tpm.read_pcrs(PcrMask::ALL)?;
//! # Ok::<(), attest_attester::tpm::Error>(())
//! ```

pub mod ak;
pub mod credential;
pub mod device;
pub mod ek;
pub mod nv;

pub use ak::{
    AkAlgorithm, AkConfig, AkStorage, AttestationKey, DEFAULT_AK_HANDLE, MAX_QUOTE_ATTEMPTS, QuotedPcrs,
    ak_template_bytes,
};
pub use attest_registration::Error;
pub use device::{PCR_COUNT, PcrMask, Quote, Sha256Pcrs, Tpm};
pub use ek::{EkPublic, RSA_2048_EK_CERT_NV_INDEX};

pub(crate) use attest_registration::{check_name, tpm2b};

/// Maps a TSS failure of the command `op` (e.g. "TPM2_Quote") to [`Error::Tpm`].
pub(crate) fn tpm_error(op: &'static str) -> impl FnOnce(tss_esapi::Error) -> Error {
    move |source| Error::Tpm { op, source: Box::new(source) }
}
