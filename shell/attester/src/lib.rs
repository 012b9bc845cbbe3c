//! # attest-attester
//!
//! The attesting side: TPM 2.0 access ([`tpm`], via `tss-esapi`), the issuers that turn evidence into an
//! attestation document for a verifier's nonce ([`issuer`]: `qemu-vtpm` on a TPM, SEV-SNP on
//! `/dev/sev-guest` or configfs-tsm, Azure's vTPM, GCE's vTPM, a TD (`qemu-tdx`: configfs-tsm or
//! `/dev/tdx_guest`) and Azure's TD partitions), and the attester's half of AK registration ([`registration`]).
//!
//! **May depend on:** `attest-engine`, `attest-proto`, `attest-grpc`, `attest-atls` (it implements
//! [`attest_atls::AttestationIssuer`]), `attest-registration` (the shared error and credential types), and the
//! device libraries (`tss-esapi`, `sev`, `attest-tdx-ioctl` for the TDX guest device's one ioctl, `socket2` for
//! vsock), and with the feature `cli` clap (the node's hardware flags, `issuer::args`). **Must not depend on:**
//! a service, the CLI or `attest-kds` (the certificate table is the engine's parser; reading it needs no HTTP
//! client); and no
//! verifier-only crate should need this one — a verifier that links it links the TSS library for nothing.

#![forbid(unsafe_code)]
// `Status` is the error of every call (see `attest_grpc`); boxing it would cost an allocation per refusal.
#![allow(clippy::result_large_err)]

pub mod issuer;
pub mod registration;
pub mod tpm;
