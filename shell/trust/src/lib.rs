//! # attest-trust
//!
//! The verifier's trust inputs, one way for every consumer: the join service, the bootstrapper (verifying
//! the join service it joins through), `attest init` / `attest verify` and the C ABI.
//!
//! **May depend on:** `attest-engine`, `attest-measurements`, `attest-validators` (the validator factory,
//! re-exported here); with the feature `service` (default) also
//! `attest-kds` (CRL and TDX collateral supply), `attest-util` (atomic files), clap (the shared flags), tokio, tracing, base64 and hex. **Must not depend on:** gRPC, aTLS,
//! any service or the attester side: it decides what a verifier trusts, never how it talks. Without
//! `service` it is the [`ValidatorFactory`] and the signed measurements only: no HTTP client, no async
//! runtime.
//!
//! | input | default | refused at start | waiver (logged, in every verdict) |
//! |---|---|---|---|
//! | measurements file | signature required ([`MeasurementsTrust`]); not expired; not below the version already accepted (consumers that keep one: [`LoadedMeasurements::check_floor`]) | unsigned, badly signed, unreadable, expired, rolled back | `--dangerously-skip-measurements-signature` (signature only) |
//! | launch of a confidential-hardware variant ([`LaunchPin`](attest_engine::variant::LaunchPin)) | pinned by the SNP policy or the TDX policy's MRTD (`check_launch`) | no MEASUREMENT / ID-key / MRTD allow-list | `--dangerous-allow-unpinned-launch` |
//! | AMD CRLs (SEV-SNP variants) | loaded at start from the KDS store, then KDS; kept fresh (`attest_kds::CrlKeeper`) | stale or missing | `--allow-stale-crl` (stale only) |
//! | Intel TDX collateral (TDX variants, `tdx`) | loaded at start from the PCS store, then Intel's PCS, per `--tdx-platform`; kept fresh | missing for a configured platform | — |
//!
//! With `service`, two more of a verifier's inputs: the cluster's membership (`membership`: which attested
//! node owns which disk and name, who is in the control plane, the measurements version accepted — the join
//! service's state) and operator-signed one-time control-plane admissions (`admission`).
//!
//! [`ValidatorFactory`] (from `attest-validators`, where the C ABI takes it from too) builds the engine's
//! validator of any variant from these inputs — the one place every consumer gets its validators from. `TrustArgs` are the flags; `Trust` is what a running consumer holds and
//! reports (`Trust::waivers`, `Trust::to_json`); `variant_arg` gives clap the variant names, generated
//! from the engine's variant table.

#![forbid(unsafe_code)]

#[cfg(feature = "service")]
pub mod admission;
#[cfg(feature = "service")]
mod args;
mod error;
pub mod measurements;
#[cfg(feature = "service")]
pub mod membership;
#[cfg(feature = "service")]
mod report;
#[cfg(feature = "service")]
pub mod tdx;
#[cfg(feature = "service")]
pub mod variant_arg;

#[cfg(feature = "service")]
pub use args::{TrustArgs, crl_wanted};
pub use attest_validators::{Expected, FactoryError, ValidatorFactory};
pub use error::TrustError;
pub use measurements::{LoadedMeasurements, MeasurementsTrust, SignatureState};
#[cfg(feature = "service")]
pub use membership::{ClusterState, JoinClaim, NodeRecord, Refusal, StateError};
#[cfg(feature = "service")]
pub use report::{Trust, check_launch};
