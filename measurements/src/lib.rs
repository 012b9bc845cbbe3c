//! Expected-measurement files, compatible with Edgeless Systems' Constellation.
//!
//! A measurements file maps TPM PCR indices (0..=23) to the value each PCR must hold:
//!
//! ```json
//! { "4": { "expected": "7b06…", "warnOnly": false }, "9": { "expected": "…", "warnOnly": true } }
//! ```
//!
//! The same map is accepted as YAML (integer keys), and in the legacy form where a value is just the hex
//! string (`"4": "7b06…"`, enforced). Constellation publishes one file per release in a *list form*
//! (`{"version", "ref", "stream", "list": [{"csp", "attestationVariant", "measurements"}]}`), from which a
//! verifier [selects](ReleaseMeasurements::select) the map for its cloud and attestation variant.
//!
//! # Pipeline
//!
//! ```text
//!  file bytes ──► size limit ──► ECDSA P-256 signature over the exact bytes ──► parse ──► Measurements
//!   (+ .sig, public key PEM)      (SignedMeasurements::verify_then_parse)          │
//!                                                                                    ▼
//!                            actual PCR values ──► Measurements::compare ──► Report::is_accepted
//! ```
//!
//! A signed file is verified *before* a byte of it is interpreted: [`SignedMeasurements`] is the only way to
//! get a [`Document`] out of signed input. Unsigned input goes through [`parse_document`] / [`parse_any`]
//! (JSON or YAML, map or list form, detected) or the form-specific constructors.
//!
//! # Strictness (deliberately stricter than Constellation)
//!
//! * Expected values are exact hex of 32 (SHA-256) or 48 (SHA-384) bytes, upper- or lowercase; no `0x`,
//!   no whitespace, no padding or truncation; every entry of one map has the same length.
//! * PCR keys are canonical decimal (`"7"`, not `"07"` or `" 7"`), 0..=23, each at most once.
//! * Unknown fields in a measurement object or list entry are errors (a typo such as `"warnonly"` must not be
//!   silently ignored). The base64 encoding of very old Constellation files is not accepted.
//! * A parsed map is never empty: a file that expects nothing would accept every machine.
//! * Every attacker-controlled size is bounded by a named limit ([`MAX_FILE_SIZE`], [`MAX_LIST_ENTRIES`], …).
//!   YAML has tighter ones ([`MAX_YAML_SIZE`], [`MAX_YAML_FLOW_COLLECTIONS`]) because libyaml's scanner is
//!   quadratic in flow-collection depth; write flow-style (`{…}`) files as JSON.
//!
//! # Rolling upgrades: several accepted sets per variant
//!
//! A release list may hold several entries for one (CSP, attestation variant), each naming the image its
//! values come from (`"image": "v1.4.0"`, an optional field of list entries that Constellation's readers
//! ignore): every one is an accepted set, and a machine is admitted when it meets any of them. Several
//! entries for one pair must each carry a distinct label ([`Error::DuplicateImage`]), at most
//! [`MAX_SETS_PER_VARIANT`]. Readers that can take only one set get [`Error::SeveralSets`] instead of a silent
//! pick; [`Document::sets_for_variant`] returns them all. [`ReleaseMeasurements::merge`] combines files and
//! [`ReleaseMeasurements::without_image`] drops an image once the rollout is done. A file without labels and
//! without repeated pairs is exactly Constellation's format. The top level keeps its four fields; anything
//! else there is still refused ([`Error::UnknownField`]), which leaves the top level free for a future
//! version and expiry of the signed file.
//!
//! Merge rules (release values + user overrides) are documented on [`Measurements::merge`] and
//! [`Measurements::merge_strict`].

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod compare;
mod encode;
mod error;
mod key;
mod parse;
mod pcr;
mod policy;
mod release;
mod signature;

pub use compare::{PcrCheck, PcrStatus, Report};
pub use error::{Error, Form};
pub use key::VerifyingKey;
pub use parse::{Document, MeasurementSet, for_engine_variant, parse_any, parse_document};
pub use pcr::{Measurement, Measurements, PcrIndex};
pub use release::{AttestationVariant, Csp, ReleaseEntry, ReleaseMeasurements};
pub use signature::SignedMeasurements;

/// Largest measurements file accepted, in bytes (1 MiB). Constellation's release files are ≈ 10 KiB; the
/// limit bounds memory and parse time for untrusted input, and is checked before the signature.
pub const MAX_FILE_SIZE: usize = 1 << 20;

/// Largest YAML input, in bytes (256 KiB; a 64-entry release list in block style is ≈ 170 KiB). YAML gets a
/// tighter bound than JSON because the YAML scanner (libyaml, via `serde_yaml_ng`) loads the whole event
/// stream before any recursion limit applies and its cost grows with flow depth × tokens.
pub const MAX_YAML_SIZE: usize = 256 * 1024;

/// Most YAML flow-collection openers (`[` and `{`) in one YAML input, counted on the raw text (so also
/// inside quoted strings and comments: an upper bound on the flow depth that quoting cannot fool).
/// Measured: 20,000 nested `[` take 1.6 s to reject in libyaml (quadratic); at this limit a worst-case
/// 256 KiB input is rejected in well under a second. Constellation writes YAML in block style (no
/// openers); flow-style files should use JSON.
pub const MAX_YAML_FLOW_COLLECTIONS: usize = 256;

/// Most entries in the `list` of a release file. Constellation ships fewer than 15 (one per
/// CSP × attestation variant).
pub const MAX_LIST_ENTRIES: usize = 64;

/// Most accepted measurement sets per (CSP, attestation variant) in one list: the images of a rolling
/// upgrade (old and new, perhaps a canary). Each set is compared in turn for every refused attestation, so the
/// bound also bounds that work.
pub const MAX_SETS_PER_VARIANT: usize = 8;

/// Longest `image` label of a list entry, in characters.
pub const MAX_IMAGE_LABEL_LEN: usize = 128;

/// Largest detached-signature input, in bytes. A DER ECDSA P-256 signature is at most 72 bytes, its base64
/// text 96 characters; the rest is slack for line breaks.
pub const MAX_SIGNATURE_SIZE: usize = 1024;

/// Largest public-key PEM input, in bytes. A P-256 SubjectPublicKeyInfo PEM is 178 bytes.
pub const MAX_PUBLIC_KEY_SIZE: usize = 8 * 1024;

/// Number of PCRs in a TPM 2.0 PC-client bank (indices 0..=23, TCG PC Client Platform Firmware Profile §2.3.4).
pub const PCR_COUNT: usize = 24;

/// Accepted lengths of an expected value, in bytes: SHA-256 and SHA-384 PCR banks.
pub const EXPECTED_LENGTHS: [usize; 2] = [32, 48];

/// Longest key text copied into an [`Error`] (longer keys are cut, so errors stay small).
pub const MAX_ERROR_KEY_LEN: usize = 64;
