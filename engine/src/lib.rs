//! # attest-engine
//!
//! Sans-IO, zero-copy verification of confidential-VM attestation evidence. Bytes and a trusted time go
//! in; a typed verdict or a typed [`Error`] comes out. The engine never performs I/O, never reads a
//! clock, and never allocates on the warm verification path.
//!
//! Every evidence type goes through the same pipeline: parse (a borrowed view) → structural checks →
//! chain to a pinned root (cached) → signature over the original bytes → policy.
//!
//! | module | evidence |
//! |---|---|
//! | [`snp`] | AMD SEV-SNP attestation reports, VCEK/VLEK → ASK/ASVK → ARK chains to AMD's pinned roots ([`x509`]), CRLs, a verified-leaf cache, the extended report's certificate table, [`snp::policy`] |
//! | [`tpm`] | TPM 2.0 quotes (TPMS_ATTEST, TPMT_SIGNATURE, TPMT_PUBLIC), TCG PC Client event logs |
//! | [`tdx`] | Intel TDX quotes (DCAP v4/v5), PCK chains to the pinned Intel root, PCS collateral, TCB evaluation, [`tdx::policy`] |
//! | [`azure`] | Azure's vTPM HCL report and runtime data (the SNP report binds the vTPM attestation key), THIM's certificate document |
//! | [`formats`] | evidence as other tools write it: TPM quote parts, trustee's TPM and Azure vTPM JSON, az-cvm-vtpm bincode |
//! | [`gce`] | GCE Shielded VM / Confidential VM attestations (go-tpm-tools): AK certificate → Google's CA, quotes, event log |
//! | [`variant`] | attestation documents per variant (one row of [`variant::TABLE`] each): AK trust, freshness, PCR policy |
//!
//! Each kind of evidence keeps its names in its module (`snp::{Report, SnpVerifier, SnpPolicy, Verdict, …}`,
//! `tdx::{TdQuote, TdxVerifier, TdxPolicy, TdxVerdict, …}`); the root holds what they share: [`Error`],
//! [`UnixTime`], [`CryptoProvider`], the policy vocabulary ([`policy`]: [`Outcome`], [`LaunchPinning`], …),
//! the DER reader ([`der`]), X.509 ([`x509`]) and EAR appraisals ([`ear`]).
//!
//! Cryptography comes from an injected [`CryptoProvider`]: aws-lc-rs by default, ring as an alternative.
//!
//! ```no_run
//! use attest_engine::UnixTime;
//! use attest_engine::snp::{SnpPolicy, SnpRequest, SnpVerifier};
//! # let (report, vcek) = (&[0u8; 0x4A0][..], &[][..]);
//! let verifier = SnpVerifier::new(); // AMD's Milan, Genoa and Turin roots are built in
//! let req = SnpRequest::new(report, vcek, UnixTime::parse("2025-01-01T00:00:00Z").unwrap());
//! let verified = verifier.verify(&req, &SnpPolicy::default())?;
//! println!("{} report, TCB {}", verified.product(), verified.reported_tcb());
//! # Ok::<(), attest_engine::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod amd;
pub mod azure;
pub mod crypto;
pub mod der;
pub mod ear;
pub mod error;
pub mod formats;
pub mod gce;
mod intel;
pub mod policy;
pub mod snp;
pub mod tdx;
mod time;
pub mod tpm;
pub mod variant;
pub mod x509;

pub use crypto::CryptoProvider;
pub use error::{CertRole, Error};
pub use policy::{LaunchPinning, Outcome};
pub use time::UnixTime;
