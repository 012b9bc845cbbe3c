//! The measured boot of a UKI, event by event: what OVMF (EDK2), an optional systemd-boot, systemd-stub and
//! the kernel's EFI stub extend into the PCRs the image decides.
//!
//! ```text
//!  PCR 4  EV_EFI_ACTION "Calling EFI Application from Boot Option"        firmware, Boot#### / removable media
//!         EV_SEPARATOR 00000000                                           firmware, before the first application
//!        [EV_EFI_BOOT_SERVICES_APPLICATION Authenticode(systemd-boot)]    firmware (with --boot-loader)
//!         EV_EFI_BOOT_SERVICES_APPLICATION Authenticode(UKI)              firmware
//!         EV_EFI_BOOT_SERVICES_APPLICATION Authenticode(.linux)           firmware: the stub loads the kernel
//!                                                                         with LoadImage
//!  PCR 11 EV_IPL H(".linux\0"), EV_IPL H(.linux as mapped), … for every   systemd-stub, StubVersion's order
//!         section the stub measures (name including its NUL, then data)
//!  PCR 12 EV_IPL H(UTF-16LE(load options) ‖ 0x0000)                       systemd-boot and systemd-stub, only when
//!                                                                         load options replace .cmdline (systemd-
//!                                                                         boot passes a type-2 UKI its .cmdline)
//!         EV_IPL H(cpio of <uki>.efi.extra.d/*.cred)                      systemd-stub ("Credentials initrd")
//!         EV_IPL H(cpio of \loader\credentials\*.cred)                    systemd-stub ("Global credentials initrd")
//!  PCR 13 EV_IPL H(cpio of <uki>.efi.extra.d/*.raw)                       systemd-stub ("System extension initrd")
//!  PCR 9  EV_EVENT_TAG 0x8F3B22ED H(UTF-16LE(command line) ‖ 0x0000)      the kernel's EFI stub (Linux ≥ 6.1):
//!         EV_EVENT_TAG 0x8F3B22EC H(initrd ‖ pad4 ‖ the stub's cpios)      LoadOptions, then the initrd it loads
//! ```
//!
//! The events are listed in the order they happen (systemd-boot's PCR 12 event before the UKI's PCR 4
//! one, the kernel's PCR 4 event after the stub's), which matters where several PCRs share one register
//! (a TD's RTMRs, [`crate::tdx`]). The initrd the kernel measures is the one the stub hands it: `.initrd`
//! padded to 4 bytes, then the archives ([`crate::cpio`]) of the credentials, global credentials, system
//! extensions, `.pcrsig` and `.pcrpkey`, whichever exist.
//!
//! Every event's digest is computed in every bank asked for; a PCR's value is the replay of its events
//! from zero (`PCR ← H(PCR ‖ digest)`). PCRs 0–3 and 5–7 depend on the firmware build, its variables and the
//! machine's devices, not on the image, and are not predicted; PCRs 12 and 13 are predicted as all zeros
//! when nothing is measured into them (no load options, credentials or system extensions), so a file
//! dropped on the ESP changes a predicted value.
//!
//! What is **not** modelled (and refused or left out rather than guessed): secure boot changing whether
//! load options are honoured (give no load options for a secure-boot image with `.cmdline`), kernels older
//! than 6.1 (whose EFI stub measures less), non-ASCII command lines, and ESP file names the stub would skip
//! (refused, see [`crate::cpio`]).

use crate::cpio::{self, EspFile};
use crate::error::Error;
use crate::jobs::{self, Job};
use crate::pe::PeImage;
use crate::uki::{StubVersion, Uki, kernel_release};
use attest_engine::crypto::{CryptoProvider, Digest, HashAlgorithm};

/// TCG event types (TCG PC Client Platform Firmware Profile §10.4.1).
pub mod event_type {
    /// EV_SEPARATOR.
    pub const SEPARATOR: u32 = 0x0000_0004;
    /// EV_EFI_GPT_EVENT.
    pub const EFI_GPT_EVENT: u32 = 0x8000_0006;
    /// EV_EVENT_TAG.
    pub const EVENT_TAG: u32 = 0x0000_0006;
    /// EV_IPL.
    pub const IPL: u32 = 0x0000_000D;
    /// EV_EFI_BOOT_SERVICES_APPLICATION.
    pub const EFI_BOOT_SERVICES_APPLICATION: u32 = 0x8000_0003;
    /// EV_EFI_ACTION.
    pub const EFI_ACTION: u32 = 0x8000_0007;
}

/// The action string EDK2 measures before it starts a boot option (PFP §8.2.4 "Calling EFI Application
/// from Boot Option").
pub const BOOT_OPTION_ACTION: &str = "Calling EFI Application from Boot Option";
/// The Linux EFI stub's tagged-event id for the load options (`LOADED_IMAGE::LoadOptions`).
pub const LINUX_LOAD_OPTIONS_TAG: u32 = 0x8F3B_22ED;
/// The Linux EFI stub's tagged-event id for the initrd (`Linux initrd`).
pub const LINUX_INITRD_TAG: u32 = 0x8F3B_22EC;
/// Longest command line / load options accepted, in bytes (the x86 kernel's COMMAND_LINE_SIZE is 2048;
/// 64 KiB leaves room for any architecture).
pub const MAX_CMDLINE_LEN: usize = 64 * 1024;

/// How the image is booted.
#[derive(Clone, Debug)]
pub struct BootConfig<'a> {
    /// The banks to compute (each event gets one digest per bank, in this order).
    pub banks: Vec<HashAlgorithm>,
    /// A boot loader (systemd-boot's PE image) the firmware starts first, which starts the UKI.
    pub boot_loader: Option<&'a [u8]>,
    /// Load options passed to the UKI (systemd-boot entry `options`, or a Boot#### entry's optional data).
    /// systemd-stub 252 lets them replace `.cmdline` (when secure boot is off) and measures them into PCR 12.
    /// With a `boot_loader` and none given, systemd-boot's own choice for a type-2 entry applies: the UKI's
    /// `.cmdline` (measured into PCR 12 by systemd-boot and again by the stub).
    pub load_options: Option<&'a str>,
    /// Credentials in the UKI's drop-in directory (`<uki>.efi.extra.d/*.cred`): measured into PCR 12 and
    /// added to the initrd (PCR 9).
    pub credentials: Vec<EspFile<'a>>,
    /// Credentials in `\loader\credentials\*.cred` on the UKI's ESP: the same, after the UKI's own.
    pub global_credentials: Vec<EspFile<'a>>,
    /// System extension images in the UKI's drop-in directory (`*.raw`): measured into PCR 13 and added to
    /// the initrd.
    pub sysexts: Vec<EspFile<'a>>,
    /// Threads to hash on (1 = the calling thread only).
    pub threads: usize,
}

impl Default for BootConfig<'_> {
    fn default() -> Self {
        Self {
            banks: vec![HashAlgorithm::Sha256],
            boot_loader: None,
            load_options: None,
            credentials: Vec::new(),
            global_credentials: Vec::new(),
            sysexts: Vec::new(),
            threads: 1,
        }
    }
}

/// One predicted event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The PCR.
    pub pcr: u8,
    /// The TCG event type ([`event_type`]).
    pub event_type: u32,
    /// The digest in each bank, in [`Prediction::banks`] order.
    pub digests: Vec<Digest>,
    /// The event data as the measuring component logs it (image-load events: an empty device path and
    /// zero addresses, which a firmware fills in with values no one can predict; the digests do not cover
    /// them).
    pub data: Vec<u8>,
    /// What was measured, for people.
    pub description: String,
}

/// The events of a boot and the PCR values they give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// The banks, in digest order.
    pub banks: Vec<HashAlgorithm>,
    /// The events in measurement order.
    pub events: Vec<Event>,
    /// The PCRs this prediction decides (4, 9, 11, 12, 13).
    pub pcrs: Vec<u8>,
    /// The stub whose behaviour was modelled.
    pub stub: StubVersion,
}

/// The PCRs a UKI boot decides.
pub const PREDICTED_PCRS: [u8; 5] = [4, 9, 11, 12, 13];

impl Prediction {
    /// The value of `pcr` in `alg`'s bank: its events replayed from zero (`None` for a bank not computed).
    pub fn pcr(&self, provider: &CryptoProvider, alg: HashAlgorithm, pcr: u8) -> Option<Digest> {
        let bank = self.banks.iter().position(|b| *b == alg)?;
        let mut value = Digest::zero(alg);
        for e in self.events.iter().filter(|e| e.pcr == pcr) {
            value = provider.digests.digest(alg, &[value.as_bytes(), e.digests[bank].as_bytes()]);
        }
        Some(value)
    }
}

fn utf16le_nul(text: &str) -> Result<Vec<u8>, Error> {
    if !text.is_ascii() {
        return Err(Error::Unsupported {
            what: "a non-ASCII command line (the stubs' UTF-8 handling is not modelled)",
        });
    }
    if text.len() > MAX_CMDLINE_LEN {
        return Err(Error::LimitExceeded {
            what: "command line bytes",
            limit: MAX_CMDLINE_LEN as u64,
            found: text.len() as u64,
        });
    }
    Ok(text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect())
}

/// UEFI_IMAGE_LOAD_EVENT with zero addresses and an empty device path (PFP §10.2.3).
fn image_load_event_data(length: usize) -> Vec<u8> {
    let mut d = Vec::with_capacity(32);
    d.extend_from_slice(&0u64.to_le_bytes()); // ImageLocationInMemory
    d.extend_from_slice(&(length as u64).to_le_bytes()); // ImageLengthInMemory
    d.extend_from_slice(&0u64.to_le_bytes()); // ImageLinkTimeAddress
    d.extend_from_slice(&0u64.to_le_bytes()); // LengthOfDevicePath
    d
}

/// TCG_PCClientTaggedEvent: id, size, data.
fn tagged_event_data(id: u32, text: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(text.len() + 9);
    d.extend_from_slice(&id.to_le_bytes());
    d.extend_from_slice(&(text.len() as u32 + 1).to_le_bytes());
    d.extend_from_slice(text.as_bytes());
    d.push(0);
    d
}

/// An event whose digests are still job indices (one per bank).
struct Pending {
    pcr: u8,
    event_type: u32,
    jobs: Vec<usize>,
    data: Vec<u8>,
    description: String,
}

/// The digests to compute, one job per bank for each input.
struct JobList<'a, 'b> {
    banks: &'b [HashAlgorithm],
    jobs: Vec<Job<'a>>,
}

impl<'a> JobList<'a, '_> {
    /// One job per bank over `parts`; returns their indices in bank order.
    fn add(&mut self, parts: &[&'a [u8]]) -> Vec<usize> {
        let start = self.jobs.len();
        for &alg in self.banks {
            self.jobs.push(Job { alg, parts: parts.to_vec() });
        }
        (start..self.jobs.len()).collect()
    }
}

/// Zero bytes that pad `.initrd` to 4 bytes in the stub's combined initrd.
static PAD_ZEROS: [u8; 3] = [0; 3];

/// An ASCII description as systemd's EV_IPL events carry it: UTF-16LE with its NUL.
fn utf16_description(text: &str) -> Vec<u8> {
    text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// Load options as systemd-boot or systemd-stub measure them into PCR 12.
fn load_options_event<'a>(jobs: &mut JobList<'a, '_>, options: &'a [u8], who: &str) -> Pending {
    Pending {
        pcr: 12,
        event_type: event_type::IPL,
        jobs: jobs.add(&[options]),
        data: options.to_vec(),
        description: format!("load options, measured by {who}"),
    }
}

/// The firmware's measurement of an EFI application it starts.
fn application<'a>(jobs: &mut JobList<'a, '_>, image: &PeImage<'a>, what: &str) -> Pending {
    Pending {
        pcr: 4,
        event_type: event_type::EFI_BOOT_SERVICES_APPLICATION,
        jobs: jobs.add(&image.authenticode_parts()),
        data: image_load_event_data(image.bytes().len()),
        description: format!("Authenticode hash of {what}"),
    }
}

/// Predicts the boot of `uki` under `config`.
pub fn predict(provider: &CryptoProvider, uki: &Uki<'_>, config: &BootConfig<'_>) -> Result<Prediction, Error> {
    if config.banks.is_empty() {
        return Err(Error::InvalidArgument { what: "banks", reason: "no bank asked for" });
    }
    let mut banks: Vec<HashAlgorithm> = Vec::new();
    for b in &config.banks {
        if !banks.contains(b) {
            banks.push(*b);
        }
    }
    let loader = config.boot_loader.map(PeImage::parse).transpose()?;
    let linux = uki.linux().loaded();
    let kernel_bytes = linux.to_contiguous();
    let kernel = PeImage::parse(&kernel_bytes)?;
    match kernel_release(&kernel_bytes) {
        Some(release) if release >= (6, 1) => {}
        Some(_) => return Err(Error::Unsupported { what: "a kernel older than 6.1 (its EFI stub measures less)" }),
        None => return Err(Error::Unsupported { what: "a kernel that is not an x86 bzImage with a version string" }),
    }
    // systemd-boot 252 starts a type-2 entry (a UKI it found in \EFI\Linux) with the UKI's own .cmdline
    // as load options, unless an entry gives others; a firmware boot entry passes none.
    let implied = match (loader.is_some(), uki.cmdline()) {
        (true, Some(c)) => {
            Some(core::str::from_utf8(c).map_err(|_| Error::Unsupported { what: "a non-UTF-8 .cmdline" })?)
        }
        _ => None,
    };
    let load_options = match config.load_options.or(implied) {
        Some(o) if !o.is_empty() => Some(utf16le_nul(o)?),
        _ => None,
    };
    // systemd-stub 252: load options replace the built-in command line (secure boot off) and are measured
    // into PCR 12; the kernel measures whatever the stub hands it.
    let cmdline_for_kernel: Option<Vec<u8>> = match (&load_options, uki.cmdline()) {
        (Some(o), _) => Some(o.clone()),
        (None, Some(c)) => Some(utf16le_nul(
            core::str::from_utf8(c).map_err(|_| Error::Unsupported { what: "a non-UTF-8 .cmdline" })?,
        )?),
        (None, None) => None,
    };

    // The archives systemd-stub builds: measured ones (PCR 12, 13) and the unmeasured ones of its own
    // sections; all of them end up in the initrd the kernel measures.
    let credentials = cpio::stub_archive(cpio::CREDENTIALS, &config.credentials)?;
    let global_credentials = cpio::stub_archive(cpio::GLOBAL_CREDENTIALS, &config.global_credentials)?;
    let sysexts = cpio::stub_archive(cpio::SYSEXTS, &config.sysexts)?;
    let literal = |section: &[u8], name: &str| {
        uki.section(section)
            .filter(|s| !s.loaded().is_empty())
            .map(|s| cpio::literal(name, &s.loaded().to_contiguous()))
    };
    let pcrsig = literal(b".pcrsig", "tpm2-pcr-signature.json");
    let pcrpkey = literal(b".pcrpkey", "tpm2-pcr-public-key.pem");
    let appended: Vec<&[u8]> = [&credentials, &global_credentials, &sysexts, &pcrsig, &pcrpkey]
        .into_iter()
        .flatten()
        .map(Vec::as_slice)
        .collect();

    let mut jobs = JobList { banks: &banks, jobs: Vec::new() };
    let mut pending = Vec::new();

    // PCR 4: the firmware, then systemd-boot's PCR 12 measurement before it starts the UKI.
    pending.push(Pending {
        pcr: 4,
        event_type: event_type::EFI_ACTION,
        jobs: jobs.add(&[BOOT_OPTION_ACTION.as_bytes()]),
        data: BOOT_OPTION_ACTION.as_bytes().to_vec(),
        description: BOOT_OPTION_ACTION.to_owned(),
    });
    pending.push(Pending {
        pcr: 4,
        event_type: event_type::SEPARATOR,
        jobs: jobs.add(&[&[0u8; 4]]),
        data: vec![0; 4],
        description: "separator".to_owned(),
    });
    if let Some(l) = &loader {
        pending.push(application(&mut jobs, l, "the boot loader"));
        if let Some(o) = &load_options {
            pending.push(load_options_event(&mut jobs, o, "systemd-boot"));
        }
    }
    pending.push(application(&mut jobs, uki.pe(), "the UKI"));

    // PCR 11 (systemd-stub), remembering the .initrd data job for PCR 9.
    let mut initrd_jobs = None;
    let names: Vec<(String, Vec<u8>)> = uki
        .measured_sections()
        .iter()
        .map(|(name, _)| ((*name).to_owned(), format!("{name}\0").into_bytes()))
        .collect();
    for ((name, _), (_, name_nul)) in uki.measured_sections().into_iter().zip(&names) {
        let section = uki.section(name.as_bytes()).map(crate::pe::Section::loaded);
        pending.push(Pending {
            pcr: 11,
            event_type: event_type::IPL,
            jobs: jobs.add(&[name_nul]),
            data: utf16_description(name),
            description: format!("section name {name}"),
        });
        let data_jobs = jobs.add(&section.map(|s| s.parts()).unwrap_or_default());
        if name == ".initrd" {
            initrd_jobs = Some(data_jobs.clone());
        }
        pending.push(Pending {
            pcr: 11,
            event_type: event_type::IPL,
            jobs: data_jobs,
            data: utf16_description(name),
            description: format!("section {name} ({} bytes)", section.map_or(0, |s| s.len())),
        });
    }

    // PCR 12: the load options as the stub measures them, then the credential archives; PCR 13: the
    // system extensions.
    if let Some(o) = &load_options {
        pending.push(load_options_event(&mut jobs, o, "systemd-stub"));
    }
    for (pcr, archive, description, what) in [
        (12, &credentials, "Credentials initrd", "credentials from <uki>.efi.extra.d"),
        (12, &global_credentials, "Global credentials initrd", "credentials from \\loader\\credentials"),
        (13, &sysexts, "System extension initrd", "system extensions from <uki>.efi.extra.d"),
    ] {
        if let Some(a) = archive {
            pending.push(Pending {
                pcr,
                event_type: event_type::IPL,
                jobs: jobs.add(&[a.as_slice()]),
                data: utf16_description(description),
                description: format!("cpio archive of the {what} ({} bytes)", a.len()),
            });
        }
    }

    // PCR 4: the firmware measures the kernel the stub starts with LoadImage.
    pending.push(application(&mut jobs, &kernel, "the kernel (.linux)"));

    // PCR 9: the kernel's EFI stub.
    if let Some(c) = &cmdline_for_kernel {
        pending.push(Pending {
            pcr: 9,
            event_type: event_type::EVENT_TAG,
            jobs: jobs.add(&[c.as_slice()]),
            data: tagged_event_data(LINUX_LOAD_OPTIONS_TAG, "LOADED_IMAGE::LoadOptions"),
            description: "kernel command line (LoadOptions, UTF-16LE with its NUL)".to_owned(),
        });
    }
    let initrd_len = uki.section(b".initrd").map_or(0, |s| s.loaded().len());
    let initrd_event = if appended.is_empty() {
        initrd_jobs.map(|j| (j, "initrd (loaded by the kernel through LoadFile2)".to_owned()))
    } else {
        // The stub's combined initrd: .initrd, zero-padded to 4 bytes, then the archives.
        let mut parts = uki.section(b".initrd").map(|s| s.loaded().parts()).unwrap_or_default();
        let pad = initrd_len.next_multiple_of(4) - initrd_len;
        parts.push(&PAD_ZEROS[..pad as usize]);
        parts.extend(appended.iter().copied());
        let total = initrd_len + pad + appended.iter().map(|a| a.len() as u64).sum::<u64>();
        Some((
            jobs.add(&parts),
            format!("initrd: .initrd and the stub's {} cpio archives ({total} bytes)", appended.len()),
        ))
    };
    if let Some((j, description)) = initrd_event {
        pending.push(Pending {
            pcr: 9,
            event_type: event_type::EVENT_TAG,
            jobs: j,
            data: tagged_event_data(LINUX_INITRD_TAG, "Linux initrd"),
            description,
        });
    }

    let digests = jobs::run(provider, &jobs.jobs, config.threads);
    let events = pending
        .into_iter()
        .map(|p| Event {
            pcr: p.pcr,
            event_type: p.event_type,
            digests: p.jobs.iter().map(|&j| digests[j]).collect(),
            data: p.data,
            description: p.description,
        })
        .collect();
    Ok(Prediction { banks, events, pcrs: PREDICTED_PCRS.to_vec(), stub: uki.stub() })
}
