//! The TDX MRTD of a TD booted from a TDVF (the Intel TDX firmware, OVMF's `IntelTdx` build), as the TDX
//! module accumulates it while the VMM builds the TD (Intel TDX Module ABI, TDH.MEM.PAGE.ADD and
//! TDH.MR.EXTEND; the TDVF design guide's metadata):
//!
//! ```text
//!  MRTD = SHA-384 over, for each TDVF section in order (sections with PAGE_AUG are added later and not
//!  measured), for each 4 KiB page of the section's memory:
//!     "MEM.PAGE.ADD" ‖ 0⁴ ‖ u64 GPA ‖ 0¹⁰⁴                                   (128 bytes)
//!     and, when the section has MR_EXTEND, for each 256-byte chunk of the page (image data, zero-padded):
//!     "MR.EXTEND" ‖ 0⁷ ‖ u64 GPA ‖ 0¹⁰⁴ ‖ the 256 bytes
//! ```
//!
//! This follows the TDX module's and QEMU/KVM's documented order (page added, then its chunks extended).
//! No TDX machine was available to check it against a real TD, so the value is offered as computed.
//!
//! # RTMRs ([`predict_rtmrs`])
//!
//! The TDVF has no TPM; it measures with SHA-384 into the RTMRs through `EFI_CC_MEASUREMENT_PROTOCOL` and
//! logs to the CC event log (CCEL), mapping the TCG PCRs onto them (UEFI 2.10 §38.4; the TDVF design
//! guide): PCR 0 → MRTD (the firmware itself, [`mrtd`]); PCRs 1, 7 → RTMR0; PCRs 2–6 → RTMR1; PCRs 8–15 →
//! RTMR2. The log's index field is the CC register: 1–4 = RTMR0–3. What a UKI boot puts there:
//!
//! ```text
//!  RTMR0 (index 1)  TD HOB, CFV, UEFI variables, ACPI tables, Boot#### …   the VMM's configuration: NOT predicted
//!  RTMR1 (index 2)  EV_EFI_ACTION "Calling EFI Application from Boot Option"   firmware (PCR 4)
//!                   EV_SEPARATOR 00000000 (one for the register)               firmware
//!                  [EV_EFI_GPT_EVENT the boot disk's GPT]                     firmware (PCR 5), with --disk
//!                  [EV_EFI_BOOT_SERVICES_APPLICATION systemd-boot]            firmware (PCR 4)
//!                   EV_EFI_BOOT_SERVICES_APPLICATION the UKI, then .linux      firmware (PCR 4)
//!                   EV_EFI_ACTION "Exit Boot Services Invocation"             firmware (PCR 5)
//!                   EV_EFI_ACTION "Exit Boot Services Returned with Success"  firmware (PCR 5)
//!  RTMR2 (index 3)  nothing: systemd-stub/-boot 252 and Linux < 6.9 measure    predicted: all zeros
//!                   through EFI_TCG2_PROTOCOL only, which a TD lacks
//!  RTMR3 (index 4)  left to the OS: attest's node lock                         `--pcr15-zero` (unbound value)
//! ```
//!
//! RTMR0 is not the image's: the VMM chooses the TD HOB (memory map), the ACPI tables, the firmware volume
//! of variables and the boot order, so it is pinned from a booted TD of the same configuration, not
//! computed here. RTMR1 binds the image: the UKI's Authenticode hash covers every section (kernel,
//! initrd, command line), and the kernel's covers `.linux` again. Because the 252 stub measures nothing in a
//! TD, what it adds at boot — load options replacing `.cmdline` (secure boot off), credentials and system
//! extensions from the ESP — would be covered by no RTMR; a prediction with any of them is refused, as is a
//! kernel of 6.9 or later, whose EFI stub measures its command line and initrd into RTMR2 (not modelled).
//!
//! Checked against: a real TD's CC event log (Google's COS 113 TD, `go-tdx-guest`'s `ccel_data.dat`):
//! the firmware's RTMR1 events (action, separator, GPT, the two exit-boot-services actions) are the events
//! predicted here, digest for digest, in the same order around the boot applications, and the predicted log
//! replays through the engine's CCEL replay to the predicted values. That TD booted shim and GRUB, not a
//! UKI; no real TD boot of a known UKI was available, so the UKI's own events are checked only as PCR 4's
//! are (against a real vTPM boot) and the RTMR values are offered as computed. A second, newer OVMF log
//! (trustee's sample, a direct kernel boot) shows the limits: that build logs RTMR1's separator into RTMR0,
//! so RTMR1 depends on the TDVF build (the GCE build's behaviour is modelled), and its kernel (≥ 6.9) logs
//! the PCR 9 events (same data) into RTMR2 — refused here, not guessed.

use crate::boot::{self, BootConfig, Event, event_type};
use crate::error::Error;
use crate::ovmf::Ovmf;
use crate::uki::{Uki, kernel_release};
use attest_engine::crypto::{CryptoProvider, Digest, HashAlgorithm};

/// TDVF section attribute: the section's contents are extended into MRTD.
const MR_EXTEND: u32 = 1;
/// TDVF section attribute: the pages are added after the TD runs (not measured).
const PAGE_AUG: u32 = 2;
const PAGE: u64 = 4096;
/// Most pages added to MRTD (64 MiB of TD memory from metadata; a TDVF build and its TD HOB and temporary
/// memory are a few MiB). The whole hash input is described at once (128-byte headers, borrowed chunks), so
/// this also bounds the memory used: ≈ 2.2 KiB per page.
pub const MAX_MEASURED_PAGES: u64 = 1 << 14;

/// A chunk of zeros (data beyond a section's raw data).
static ZERO_CHUNK: [u8; 256] = [0; 256];

fn header(op: &[u8], gpa: u64) -> [u8; 128] {
    let mut h = [0u8; 128];
    h[..op.len()].copy_from_slice(op);
    h[16..24].copy_from_slice(&gpa.to_le_bytes());
    h
}

/// The MRTD of a TD launched from `tdvf`.
pub fn mrtd(provider: &CryptoProvider, tdvf: &Ovmf<'_>) -> Result<[u8; 48], Error> {
    let sections = tdvf.tdvf_sections()?;
    let image = tdvf.bytes();
    let pages: u64 = sections.iter().filter(|s| s.attributes & PAGE_AUG == 0).map(|s| s.memory_data_size / PAGE).sum();
    if pages > MAX_MEASURED_PAGES {
        return Err(Error::LimitExceeded { what: "TDVF measured pages", limit: MAX_MEASURED_PAGES, found: pages });
    }
    // Headers first (the parts below borrow them), then the hash input in order.
    let mut headers: Vec<[u8; 128]> = Vec::new();
    // The one chunk per section that straddles the end of its raw data, zero-padded.
    let mut partial: Vec<[u8; 256]> = Vec::new();
    for s in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0) {
        let raw = &image[s.data_offset as usize..(s.data_offset + s.raw_data_size) as usize];
        let mut chunk = [0u8; 256];
        let tail = raw.len() % 256;
        chunk[..tail].copy_from_slice(&raw[raw.len() - tail..]);
        partial.push(chunk);
        for p in 0..s.memory_data_size / PAGE {
            let gpa = s.memory_address + p * PAGE;
            headers.push(header(b"MEM.PAGE.ADD", gpa));
            if s.attributes & MR_EXTEND != 0 {
                for c in 0..16 {
                    headers.push(header(b"MR.EXTEND", gpa + c * 256));
                }
            }
        }
    }
    let mut parts: Vec<&[u8]> = Vec::with_capacity(headers.len() * 2);
    let mut h = headers.iter();
    for (s, straddling) in sections.iter().filter(|s| s.attributes & PAGE_AUG == 0).zip(&partial) {
        let raw = &image[s.data_offset as usize..(s.data_offset + s.raw_data_size) as usize];
        for p in 0..(s.memory_data_size / PAGE) as usize {
            parts.extend(h.next().map(<[u8; 128]>::as_slice));
            if s.attributes & MR_EXTEND != 0 {
                for c in 0..16 {
                    parts.extend(h.next().map(<[u8; 128]>::as_slice));
                    let at = p * 4096 + c * 256;
                    parts.push(match raw.get(at..at + 256) {
                        Some(chunk) => chunk,
                        None if at < raw.len() => straddling.as_slice(),
                        None => &ZERO_CHUNK,
                    });
                }
            }
        }
    }
    let d = provider.digests.digest(HashAlgorithm::Sha384, &parts);
    let mut out = [0u8; 48];
    out.copy_from_slice(d.as_bytes());
    Ok(out)
}

/// The CC measurement-register index of RTMR `n` in a CC event log (0 is MRTD).
pub const fn cc_index(rtmr: u8) -> u8 {
    rtmr + 1
}

/// The RTMRs a UKI boot in a TD decides.
pub const PREDICTED_RTMRS: [u8; 2] = [1, 2];

/// The firmware's action at ExitBootServices() (PFP §10.4.4, PCR 5).
pub const EXIT_BOOT_SERVICES_INVOCATION: &str = "Exit Boot Services Invocation";
/// The firmware's action after a successful ExitBootServices().
pub const EXIT_BOOT_SERVICES_SUCCESS: &str = "Exit Boot Services Returned with Success";

/// The predicted RTMR events of a UKI boot in a TD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtmrPrediction {
    /// The events in measurement order; [`Event::pcr`] holds the CC register index (2 = RTMR1), the one
    /// digest is SHA-384.
    pub events: Vec<Event>,
}

impl RtmrPrediction {
    /// RTMR `rtmr` (0–3) replayed from zero over its events.
    pub fn rtmr(&self, provider: &CryptoProvider, rtmr: u8) -> [u8; 48] {
        let mut value = Digest::zero(HashAlgorithm::Sha384);
        for e in self.events.iter().filter(|e| e.pcr == cc_index(rtmr)) {
            value = provider.digests.digest(HashAlgorithm::Sha384, &[value.as_bytes(), e.digests[0].as_bytes()]);
        }
        let mut out = [0u8; 48];
        out.copy_from_slice(value.as_bytes());
        out
    }

    /// The events as a CC event log (the TCG crypto-agile format with SHA-384 only, register indices in
    /// the PCR field, the header event at index 1), as the firmware writes the CCEL.
    pub fn to_cc_event_log(&self) -> Vec<u8> {
        crate::eventlog::write(u32::from(cc_index(0)), &[HashAlgorithm::Sha384], &self.events)
    }
}

/// An EV_EFI_ACTION event of the firmware into RTMR1.
fn action(provider: &CryptoProvider, text: &str) -> Event {
    Event {
        pcr: cc_index(1),
        event_type: event_type::EFI_ACTION,
        digests: vec![provider.digests.digest(HashAlgorithm::Sha384, &[text.as_bytes()])],
        data: text.as_bytes().to_vec(),
        description: text.to_owned(),
    }
}

/// Predicts RTMR1 and RTMR2 of a TD (TDVF) that boots `uki` under `config` (its banks are ignored: a TD
/// measures SHA-384) from a disk whose image is `disk` (its GPT is measured; `None`: a boot device
/// without a GPT).
pub fn predict_rtmrs(
    provider: &CryptoProvider,
    uki: &Uki<'_>,
    config: &BootConfig<'_>,
    disk: Option<&[u8]>,
) -> Result<RtmrPrediction, Error> {
    if config.load_options.is_some() {
        return Err(Error::Unsupported {
            what: "load options in a TD: systemd-stub 252 would honour them unmeasured (no RTMR covers them)",
        });
    }
    if !(config.credentials.is_empty() && config.global_credentials.is_empty() && config.sysexts.is_empty()) {
        return Err(Error::Unsupported {
            what: "credentials or system extensions in a TD: systemd-stub 252 measures them into a TPM only, so no RTMR would cover them",
        });
    }
    let kernel = uki.linux().loaded().to_contiguous();
    if kernel_release(&kernel).is_some_and(|r| r >= (6, 9)) {
        return Err(Error::Unsupported {
            what: "a kernel of 6.9 or later in a TD (its EFI stub measures into RTMR2; not modelled)",
        });
    }
    let config = BootConfig { banks: vec![HashAlgorithm::Sha384], ..config.clone() };
    let boot = boot::predict(provider, uki, &config)?;
    let gpt = disk
        .map(|d| {
            crate::gpt::event_data(d).map(|data| Event {
                pcr: cc_index(1),
                event_type: event_type::EFI_GPT_EVENT,
                digests: vec![provider.digests.digest(HashAlgorithm::Sha384, &[&data])],
                description: format!(
                    "the boot disk's GPT ({} used entries)",
                    u64::from_le_bytes(data[92..100].try_into().unwrap_or_default())
                ),
                data,
            })
        })
        .transpose()?;
    // The firmware's PCR 4 events, in order; the GPT is measured just before the first application.
    let mut events = Vec::new();
    let mut gpt = gpt;
    for e in boot.events.into_iter().filter(|e| e.pcr == 4) {
        if e.event_type == event_type::EFI_BOOT_SERVICES_APPLICATION {
            events.extend(gpt.take());
        }
        events.push(Event { pcr: cc_index(1), ..e });
    }
    events.push(action(provider, EXIT_BOOT_SERVICES_INVOCATION));
    events.push(action(provider, EXIT_BOOT_SERVICES_SUCCESS));
    Ok(RtmrPrediction { events })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ovmf::TDVF_METADATA_GUID;
    use crate::ovmf::tests::image_with;

    /// A 4-page image with TDVF metadata at its second page: (data offset, raw size, GPA, memory size,
    /// type, attributes) per section.
    fn tdvf(sections: &[(u32, u32, u64, u64, u32, u32)]) -> Vec<u8> {
        let mut img = image_with(4, &[(TDVF_METADATA_GUID, (3 * 4096u32).to_le_bytes().to_vec())]);
        let mut meta = Vec::new();
        meta.extend_from_slice(b"TDVF");
        meta.extend_from_slice(&(16 + 32 * sections.len() as u32).to_le_bytes());
        meta.extend_from_slice(&1u32.to_le_bytes());
        meta.extend_from_slice(&(sections.len() as u32).to_le_bytes());
        for &(off, raw, gpa, mem, kind, attr) in sections {
            meta.extend_from_slice(&off.to_le_bytes());
            meta.extend_from_slice(&raw.to_le_bytes());
            meta.extend_from_slice(&gpa.to_le_bytes());
            meta.extend_from_slice(&mem.to_le_bytes());
            meta.extend_from_slice(&kind.to_le_bytes());
            meta.extend_from_slice(&attr.to_le_bytes());
        }
        img[4096..4096 + meta.len()].copy_from_slice(&meta);
        for (i, b) in img[..4096].iter_mut().enumerate() {
            *b = (i % 253) as u8;
        }
        img
    }

    /// The MRTD input written out naively: every page's padded data copied.
    fn naive(image: &[u8], sections: &[(u32, u32, u64, u64, u32, u32)]) -> [u8; 48] {
        let mut stream = Vec::new();
        for &(off, raw, gpa, mem, _, attr) in sections.iter().filter(|s| s.5 & PAGE_AUG == 0) {
            let mut data = image[off as usize..(off + raw) as usize].to_vec();
            data.resize(mem as usize, 0);
            for p in 0..mem / PAGE {
                stream.extend_from_slice(&header(b"MEM.PAGE.ADD", gpa + p * PAGE));
                if attr & MR_EXTEND != 0 {
                    for c in 0..16u64 {
                        stream.extend_from_slice(&header(b"MR.EXTEND", gpa + p * PAGE + c * 256));
                        let at = (p * PAGE + c * 256) as usize;
                        stream.extend_from_slice(&data[at..at + 256]);
                    }
                }
            }
        }
        attest_engine::crypto::default_provider().digests.sha384(&stream)
    }

    #[test]
    fn mrtd_covers_added_pages_and_extended_data() {
        let provider = attest_engine::crypto::default_provider();
        // BFV measured (raw data ends mid-chunk), TD_HOB added only, TempMem added only, a PAGE_AUG section.
        let sections = [
            (0, 4096 - 100, 0xFFFF_C000, 2 * 4096, 0, MR_EXTEND),
            (0, 0, 0x80_9000, 4096, 2, 0),
            (0, 0, 0x80_0000, 2 * 4096, 3, 0),
            (0, 0, 0x90_0000, 4096, 4, PAGE_AUG),
        ];
        let img = tdvf(&sections);
        let o = Ovmf::parse(&img).unwrap();
        let got = mrtd(provider, &o).unwrap();
        assert_eq!(got, naive(&img, &sections));
        // Not extending the firmware's contents, or measuring the PAGE_AUG section, changes the value.
        let mut unextended = sections;
        unextended[0].5 = 0;
        assert_ne!(mrtd(provider, &Ovmf::parse(&tdvf(&unextended)).unwrap()).unwrap(), got);
        let mut augmented = sections;
        augmented[3].5 = 0;
        assert_ne!(mrtd(provider, &Ovmf::parse(&tdvf(&augmented)).unwrap()).unwrap(), got);
        // Too many pages: a typed error, nothing allocated for them.
        let huge = [(0, 0, 0, (MAX_MEASURED_PAGES + 1) * PAGE, 3, 0)];
        assert!(matches!(mrtd(provider, &Ovmf::parse(&tdvf(&huge)).unwrap()), Err(Error::LimitExceeded { .. })));
    }
}
