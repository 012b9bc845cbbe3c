//! Reference values from images: what a node will measure, computed from the bytes it will boot, before it
//! ever boots. Bytes in, digests out — no files, no clock, no network (sans-IO, as the engine).
//!
//! | input | module | output |
//! |---|---|---|
//! | a PE image | [`pe`] | its sections, the Authenticode hash a UEFI firmware measures into PCR 4 |
//! | a unified kernel image (+ optional systemd-boot, load options, credentials and system extensions on the ESP) | [`uki`], [`boot`], [`cpio`] | the events and values of PCRs 4, 9, 11, 12, 13 in each bank asked for ([`boot::predict`]), and a TCG event log of them ([`eventlog`]) |
//! | an OVMF build with SEV metadata (+ vCPUs, vCPU type, hypervisor, kernel hashes) | [`ovmf`], [`snp`] | the SEV-SNP launch MEASUREMENT ([`snp::launch_digest`]) |
//! | a TDVF (OVMF IntelTdx) build | [`ovmf`], [`tdx`] | the TDX MRTD ([`tdx::mrtd`]) |
//! | a UKI booted in a TD (+ optional systemd-boot, the boot disk's GPT) | [`tdx`], [`gpt`] | the events and values of RTMR1 and RTMR2 and a CC event log of them ([`tdx::predict_rtmrs`]) |
//!
//! Every parser is zero-copy over the caller's bytes, checks every attacker-controlled offset, size and
//! count against the input and a named limit (`MAX_*`), never panics, and fails with the one typed
//! [`Error`]. Hashing goes through the engine's injected crypto provider; the independent digests of a
//! boot prediction and the firmware pages of a launch digest are spread over a given number of threads.
//!
//! What each prediction was checked against: PCRs 4, 9, 11, 12 and 13 of a UKI (with a credential and a
//! system extension on the ESP) against a real QEMU (TCG) + OVMF + swtpm boot of Debian's kernel with
//! systemd-stub 252 (`hwtests/tests/measured_boot.rs`) and PCR 11 against `systemd-measure` 252; launch
//! digests against virtee's `sev-snp-measure` for every vCPU type, hypervisor and several vCPU counts. The
//! TDX MRTD has no such check; the RTMR events' structure and the firmware's own events are checked against
//! a real TD's CC event log, the UKI's events against no real TD boot (see [`tdx`]).
//!
//! Layer 3 (beside `attest-measurements`): may depend on `attest-engine` (crypto provider and digests)
//! only; must not depend on any `shell/` crate, do I/O or start processes. The `attest measurements compute`
//! command (`attest-cli`) reads the files and writes the measurements file.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod boot;
pub mod cpio;
mod error;
pub mod eventlog;
pub mod gpt;
mod jobs;
pub mod ovmf;
pub mod pe;
pub mod snp;
pub mod tdx;
pub mod uki;

pub use boot::{BootConfig, Event, Prediction, predict};
pub use cpio::EspFile;
pub use error::{Error, SectionName};
pub use ovmf::Ovmf;
pub use pe::PeImage;
pub use snp::{KernelHashes, LaunchDigest, SnpLaunch, Vmm, launch_digest};
pub use uki::{StubVersion, Uki};
