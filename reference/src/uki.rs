//! Unified kernel images (UAPI Group, *Unified Kernel Image* specification): a PE image of a UEFI stub
//! with the kernel and its resources in named sections, and what systemd-stub and the kernel's EFI stub
//! read from it.
//!
//! | section | what | measured by systemd-stub 252 into PCR 11 |
//! |---|---|---|
//! | `.linux` | the kernel (a PE image itself: the stub loads it with LoadImage, so the firmware measures it into PCR 4 too) | yes |
//! | `.osrel` | os-release | yes |
//! | `.cmdline` | the kernel command line | yes |
//! | `.initrd` | the initrd | yes |
//! | `.splash` | a BMP shown at boot | yes |
//! | `.dtb` | a devicetree | yes |
//! | `.pcrsig` | signed PCR 11 policies (cannot cover itself) | no |
//! | `.pcrpkey` | the public key of those signatures | yes |
//! | `.uname`, `.sbat` | kernel release, SBAT (later stubs measure them; 252 does not read them) | no |
//!
//! The stub's version decides the list, so it is read from the stub's `.sdmagic` section
//! (`#### LoaderInfo: systemd-stub 252… ####`) and only versions whose behaviour was checked against a real
//! boot are accepted ([`StubVersion`]); another stub is refused rather than guessed at.

use crate::error::Error;
use crate::pe::{PeImage, Section};

/// Most bytes of `.sdmagic` read for the stub's version.
const MAX_SDMAGIC_LEN: usize = 256;

/// The stub whose measurements are modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StubVersion {
    /// systemd-stub 252 (Debian 12): PCR 11 from the sections in [`StubVersion::measured_sections`],
    /// load options into PCR 12 when they replace the built-in command line. Checked against a real
    /// QEMU + OVMF + swtpm boot and `systemd-measure` 252.
    Systemd252,
}

impl StubVersion {
    /// The sections the stub measures into PCR 11, in its order (present ones only are measured).
    pub fn measured_sections(self) -> &'static [&'static str] {
        match self {
            Self::Systemd252 => &[".linux", ".osrel", ".cmdline", ".initrd", ".splash", ".dtb", ".pcrpkey"],
        }
    }

    /// A short name (`systemd-stub-252`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Systemd252 => "systemd-stub-252",
        }
    }

    /// Parses a name as given on a command line: `252` or `systemd-stub-252`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "252" | "systemd-stub-252" => Some(Self::Systemd252),
            _ => None,
        }
    }

    /// The version a stub announces in its `.sdmagic` section.
    pub fn detect(pe: &PeImage<'_>) -> Result<Self, Error> {
        let Some(magic) = pe.section(b".sdmagic") else {
            return Err(Error::UnsupportedStub { found: "no .sdmagic section".to_owned() });
        };
        let raw = magic.loaded().data;
        let raw = &raw[..raw.len().min(MAX_SDMAGIC_LEN)];
        let text: String = raw.iter().take_while(|&&b| b != 0).map(|&b| char::from(b)).collect();
        let version = text
            .split_once("systemd-stub ")
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or_default();
        match version {
            "252" => Ok(Self::Systemd252),
            _ => Err(Error::UnsupportedStub {
                found: text.trim_matches(|c: char| c == '#' || c.is_whitespace()).chars().take(80).collect(),
            }),
        }
    }
}

/// A parsed unified kernel image.
#[derive(Clone, Debug)]
pub struct Uki<'a> {
    pe: PeImage<'a>,
    stub: StubVersion,
}

impl<'a> Uki<'a> {
    /// Parses `bytes` as a UKI: a valid PE image with a `.linux` section whose stub version is known
    /// (or given as `stub`, overriding the detection).
    pub fn parse(bytes: &'a [u8], stub: Option<StubVersion>) -> Result<Self, Error> {
        let pe = PeImage::parse(bytes)?;
        if pe.section(b".linux").is_none() {
            return Err(Error::MissingSection { name: ".linux" });
        }
        let stub = match stub {
            Some(s) => s,
            None => StubVersion::detect(&pe)?,
        };
        Ok(Self { pe, stub })
    }

    /// The PE image.
    pub fn pe(&self) -> &PeImage<'a> {
        &self.pe
    }

    /// The stub whose measurements apply.
    pub fn stub(&self) -> StubVersion {
        self.stub
    }

    /// The `.linux` section.
    pub fn linux(&self) -> &Section<'a> {
        // Checked in `parse`; the fallback keeps this total.
        self.pe.section(b".linux").unwrap_or(&self.pe.sections()[0])
    }

    /// A section by name (`b".cmdline"`).
    pub fn section(&self, name: &[u8]) -> Option<&Section<'a>> {
        self.pe.section(name)
    }

    /// The sections the stub measures into PCR 11, in the stub's order.
    pub fn measured_sections(&self) -> Vec<(&'static str, &Section<'a>)> {
        self.stub
            .measured_sections()
            .iter()
            .filter_map(|name| self.pe.section(name.as_bytes()).map(|s| (*name, s)))
            .collect()
    }

    /// The built-in command line as the stub reads it: the `.cmdline` section as mapped, up to its first
    /// NUL.
    pub fn cmdline(&self) -> Option<&'a [u8]> {
        self.pe.section(b".cmdline").map(|s| {
            let data = s.loaded().data;
            &data[..data.iter().position(|&b| b == 0).unwrap_or(data.len())]
        })
    }
}

/// The kernel release of an x86 bzImage (the setup header's kernel_version string, Linux boot protocol
/// 2.00+), e.g. `(6, 1)`.
pub fn kernel_release(kernel: &[u8]) -> Option<(u32, u32)> {
    // Setup header: "HdrS" at 0x202, kernel_version (u16, offset from 0x200) at 0x20E.
    if kernel.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let pointer = usize::from(u16::from_le_bytes([*kernel.get(0x20e)?, *kernel.get(0x20f)?]));
    let text = kernel.get(0x200 + pointer..)?;
    let text = &text[..text.iter().take(64).position(|&b| b == 0 || b == b' ')?];
    let text = core::str::from_utf8(text).ok()?;
    let mut it = text.split(['.', '-']);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}
