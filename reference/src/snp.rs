//! The SEV-SNP launch MEASUREMENT of an OVMF guest, as the AMD secure processor computes it while the
//! hypervisor populates the guest (SEV Secure Nested Paging Firmware ABI Specification, doc. 56860,
//! §8.17 SNP_LAUNCH_UPDATE, "PAGE_INFO"):
//!
//! ```text
//!  LD₀ = 0⁴⁸;  for every page the hypervisor adds:  LDᵢ₊₁ = SHA-384(PAGE_INFO)
//!  PAGE_INFO (0x70 bytes) = LDᵢ ‖ CONTENTS (48) ‖ u16 0x70 ‖ u8 PAGE_TYPE ‖ u8 IMI_PAGE ‖ u8 VMPL3_PERMS
//!                           ‖ u8 VMPL2_PERMS ‖ u8 VMPL1_PERMS ‖ u8 0 ‖ u64 GPA
//!
//!  1. every 4 KiB page of the firmware image, mapped to end at 4 GiB:  NORMAL (1), CONTENTS = SHA-384(page)
//!  2. the SEV metadata sections, in order:  SNP_SEC_MEM → ZERO (3) pages (UNMEASURED (4) on GCE);
//!     SECRETS → one SECRETS (5) page; CPUID → one CPUID (6) page (on EC2 after all other sections);
//!     KERNEL_HASHES → the hashes-table page as NORMAL when kernel hashes are given, else ZERO pages;
//!     SVSM_CAA → ZERO pages                                                      (CONTENTS = 0⁴⁸ unless NORMAL)
//!  3. one VMSA (2) page per vCPU at GPA 0xFFFFFFFFF000, CONTENTS = SHA-384(VMSA): the BSP starts at
//!     0xFFFFFFF0, the APs at the SEV-ES reset block's EIP
//! ```
//!
//! The VMSA (AMD64 APM vol. 2, table B-4, "VMSA layout, save area for SEV-ES") holds the initial register
//! state, which differs slightly per hypervisor ([`Vmm`]): segment attributes, RDX (the vCPU's CPUID
//! signature on QEMU, 0x600 elsewhere), the x87/SSE control words and, on GCE, the PAT.
//!
//! Only the firmware pages cost: their SHA-384s run on `threads` threads; the chain is sequential and
//! hashes 112 bytes per page.

use crate::error::Error;
use crate::ovmf::{Ovmf, SevSectionType, guid};
use attest_engine::crypto::{CryptoProvider, HashAlgorithm};

/// Most vCPUs accepted (a VMSA page is hashed per vCPU; SNP guests are limited by the hypervisor well
/// below this).
pub const MAX_VCPUS: u32 = 4096;

/// The GPA the VMSA pages are recorded at (−1, page-aligned, bits above 51 clear).
const VMSA_GPA: u64 = 0xFFFF_FFFF_F000;
/// The BSP's reset vector.
const BSP_EIP: u64 = 0xFFFF_FFF0;
const PAGE: usize = 4096;

/// PAGE_TYPE values (SNP ABI, table "Page Types").
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
enum PageType {
    Normal = 1,
    Vmsa = 2,
    Zero = 3,
    Unmeasured = 4,
    Secrets = 5,
    Cpuid = 6,
}

/// The hypervisor that launches the guest (its initial register state differs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vmm {
    /// QEMU/KVM.
    Qemu,
    /// Amazon EC2.
    Ec2,
    /// Google Compute Engine.
    Gce,
}

impl Vmm {
    /// Parses `qemu`, `ec2` or `gce` (any case).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "qemu" => Some(Self::Qemu),
            "ec2" => Some(Self::Ec2),
            "gce" => Some(Self::Gce),
            _ => None,
        }
    }

    /// The name (`qemu`, `ec2`, `gce`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Qemu => "qemu",
            Self::Ec2 => "ec2",
            Self::Gce => "gce",
        }
    }
}

/// QEMU's EPYC CPU models and their (family, model, stepping) (QEMU `target/i386/cpu.c`,
/// `builtin_x86_defs`).
pub const VCPU_TYPES: &[(&str, (u32, u32, u32))] = &[
    ("EPYC", (23, 1, 2)),
    ("EPYC-v1", (23, 1, 2)),
    ("EPYC-v2", (23, 1, 2)),
    ("EPYC-IBPB", (23, 1, 2)),
    ("EPYC-v3", (23, 1, 2)),
    ("EPYC-v4", (23, 1, 2)),
    ("EPYC-Rome", (23, 49, 0)),
    ("EPYC-Rome-v1", (23, 49, 0)),
    ("EPYC-Rome-v2", (23, 49, 0)),
    ("EPYC-Rome-v3", (23, 49, 0)),
    ("EPYC-Milan", (25, 1, 1)),
    ("EPYC-Milan-v1", (25, 1, 1)),
    ("EPYC-Milan-v2", (25, 1, 1)),
    ("EPYC-Genoa", (25, 17, 0)),
    ("EPYC-Genoa-v1", (25, 17, 0)),
    ("EPYC-Turin", (26, 0, 0)),
];

/// The CPUID Fn0000_0001_EAX signature of (family, model, stepping) (AMD CPUID Specification #25481).
pub fn cpuid_signature(family: u32, model: u32, stepping: u32) -> u32 {
    let (family_low, family_high) = if family > 0xf { (0xf, (family - 0xf) & 0xff) } else { (family, 0) };
    (family_high << 20) | (((model >> 4) & 0xf) << 16) | (family_low << 8) | ((model & 0xf) << 4) | (stepping & 0xf)
}

/// The CPUID signature of a QEMU vCPU type name ([`VCPU_TYPES`]).
pub fn vcpu_signature(name: &str) -> Option<u32> {
    VCPU_TYPES.iter().find(|(n, _)| *n == name).map(|(_, (f, m, s))| cpuid_signature(*f, *m, *s))
}

/// SHA-256 hashes of the kernel, initrd and command line that QEMU writes into an AmdSev OVMF's hashes
/// table for direct kernel boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelHashes {
    /// SHA-256 of the kernel file.
    pub kernel: [u8; 32],
    /// SHA-256 of the initrd (of nothing when there is none).
    pub initrd: [u8; 32],
    /// SHA-256 of the command line with its NUL (of a lone NUL when there is none).
    pub cmdline: [u8; 32],
}

impl KernelHashes {
    /// The hashes of `kernel`, `initrd` and `cmdline` as QEMU computes them.
    pub fn new(provider: &CryptoProvider, kernel: &[u8], initrd: Option<&[u8]>, cmdline: Option<&str>) -> Self {
        let cmdline = provider.digests.digest(HashAlgorithm::Sha256, &[cmdline.unwrap_or("").as_bytes(), b"\0"]);
        let mut c = [0u8; 32];
        c.copy_from_slice(cmdline.as_bytes());
        Self {
            kernel: provider.digests.sha256(kernel),
            initrd: provider.digests.sha256(initrd.unwrap_or_default()),
            cmdline: c,
        }
    }

    /// The padded hashes table (QEMU `target/i386/sev.c`, "SevHashTable"): header GUID, u16 length, then
    /// cmdline, initrd and kernel entries of {GUID, u16 length, SHA-256}, padded to 16 bytes.
    pub fn table(&self) -> Vec<u8> {
        const HEADER: [u8; 16] = guid(0x9438_d606, 0x4f22, 0x4cc9, [0xb4, 0x79, 0xa7, 0x93, 0xd4, 0x11, 0xfd, 0x21]);
        const CMDLINE: [u8; 16] = guid(0x97d0_2dd8, 0xbd20, 0x4c94, [0xaa, 0x78, 0xe7, 0x71, 0x4d, 0x36, 0xab, 0x2a]);
        const INITRD: [u8; 16] = guid(0x44ba_f731, 0x3a2f, 0x4bd7, [0x9a, 0xf1, 0x41, 0xe2, 0x91, 0x69, 0x78, 0x1d]);
        const KERNEL: [u8; 16] = guid(0x4de7_9437, 0xabd2, 0x427f, [0xb8, 0x35, 0xd5, 0xb1, 0x72, 0xd2, 0x04, 0x5b]);
        const ENTRY_LEN: u16 = 16 + 2 + 32;
        let mut t = Vec::with_capacity(176);
        t.extend_from_slice(&HEADER);
        t.extend_from_slice(&(16 + 2 + 3 * ENTRY_LEN).to_le_bytes());
        for (id, hash) in [(CMDLINE, &self.cmdline), (INITRD, &self.initrd), (KERNEL, &self.kernel)] {
            t.extend_from_slice(&id);
            t.extend_from_slice(&ENTRY_LEN.to_le_bytes());
            t.extend_from_slice(hash);
        }
        t.resize(t.len().next_multiple_of(16), 0);
        t
    }
}

/// What an SNP guest is launched with.
#[derive(Clone, Debug)]
pub struct SnpLaunch<'a> {
    /// The firmware.
    pub ovmf: &'a Ovmf<'a>,
    /// Number of vCPUs (one VMSA each).
    pub vcpus: u32,
    /// The vCPUs' CPUID signature ([`vcpu_signature`], [`cpuid_signature`]); QEMU puts it in RDX.
    pub vcpu_signature: u32,
    /// SEV_FEATURES of the VMSA (bit 0 SNPActive; sev-snp-measure's default is 0x1).
    pub guest_features: u64,
    /// The hypervisor.
    pub vmm: Vmm,
    /// Kernel hashes for direct kernel boot (AmdSev builds with a KERNEL_HASHES section).
    pub kernel_hashes: Option<KernelHashes>,
}

/// One step of the launch digest, for `--json` explanations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchStep {
    /// What was added.
    pub what: String,
    /// First GPA.
    pub gpa: u64,
    /// Pages added.
    pub pages: u64,
    /// The launch digest after this step.
    pub digest: [u8; 48],
}

/// The launch digest and how it came about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchDigest {
    /// The MEASUREMENT an attestation report of this guest carries.
    pub measurement: [u8; 48],
    /// The steps, in order.
    pub steps: Vec<LaunchStep>,
}

struct Chain<'p> {
    provider: &'p CryptoProvider,
    ld: [u8; 48],
    info: [u8; 0x70],
}

impl Chain<'_> {
    fn update(&mut self, page_type: PageType, gpa: u64, contents: &[u8; 48]) {
        self.info[..48].copy_from_slice(&self.ld);
        self.info[48..96].copy_from_slice(contents);
        self.info[96..98].copy_from_slice(&0x70u16.to_le_bytes());
        self.info[98] = page_type as u8;
        self.info[99..104].fill(0); // IMI_PAGE, VMPL3/2/1 permissions, reserved
        self.info[104..112].copy_from_slice(&gpa.to_le_bytes());
        self.ld = self.provider.digests.sha384(&self.info);
    }

    fn pages(&mut self, page_type: PageType, gpa: u64, size: u64) {
        for i in 0..size / PAGE as u64 {
            self.update(page_type, gpa + i * PAGE as u64, &[0; 48]);
        }
    }
}

/// SHA-384 of every page of `data`, on up to `threads` threads.
fn page_hashes(provider: &CryptoProvider, data: &[u8], threads: usize) -> Vec<[u8; 48]> {
    let pages: Vec<&[u8]> = data.chunks(PAGE).collect();
    let per = pages.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let mut chunks = pages.chunks(per);
        let first = chunks.next().unwrap_or_default();
        let handles: Vec<_> = chunks
            .map(|c| scope.spawn(move || c.iter().map(|p| provider.digests.sha384(p)).collect::<Vec<_>>()))
            .collect();
        let mut out: Vec<[u8; 48]> = first.iter().map(|p| provider.digests.sha384(p)).collect();
        for (h, c) in handles.into_iter().zip(pages.chunks(per).skip(1)) {
            // A digest cannot panic short of a provider bug; recompute on this thread if it did.
            out.extend(h.join().unwrap_or_else(|_| c.iter().map(|p| provider.digests.sha384(p)).collect()));
        }
        out
    })
}

/// The VMSA page of one vCPU starting at `eip` (layout: AMD64 APM vol. 2, table B-4).
pub fn vmsa_page(vmm: Vmm, eip: u64, vcpu_signature: u32, guest_features: u64) -> [u8; PAGE] {
    let mut v = [0u8; PAGE];
    let mut put = |at: usize, bytes: &[u8]| v[at..at + bytes.len()].copy_from_slice(bytes);
    let (cs, ss, tr, rdx, mxcsr, fcw, g_pat): (u16, u16, u16, u64, u32, u16, u64) = match vmm {
        Vmm::Qemu => (0x9b, 0x93, 0x8b, u64::from(vcpu_signature), 0x1f80, 0x37f, 0x0007_0406_0007_0406),
        Vmm::Ec2 => (if eip == BSP_EIP { 0x9a } else { 0x9b }, 0x92, 0x83, 0x600, 0, 0, 0x0007_0406_0007_0406),
        Vmm::Gce => (0x9b, 0x93, 0x8b, 0x600, 0, 0, 0x0007_0106),
    };
    // VMCB segments: selector u16, attributes u16, limit u32, base u64.
    let mut seg = |at: usize, selector: u16, attrib: u16, base: u64| {
        put(at, &selector.to_le_bytes());
        put(at + 2, &attrib.to_le_bytes());
        put(at + 4, &0xffffu32.to_le_bytes());
        put(at + 8, &base.to_le_bytes());
    };
    seg(0x00, 0, 0x93, 0); // ES
    seg(0x10, 0xf000, cs, eip & 0xffff_0000); // CS
    seg(0x20, 0, ss, 0); // SS
    seg(0x30, 0, 0x93, 0); // DS
    seg(0x40, 0, 0x93, 0); // FS
    seg(0x50, 0, 0x93, 0); // GS
    seg(0x60, 0, 0, 0); // GDTR
    seg(0x70, 0, 0x82, 0); // LDTR
    seg(0x80, 0, 0, 0); // IDTR
    seg(0x90, 0, tr, 0); // TR
    let mut put = |at: usize, bytes: &[u8]| v[at..at + bytes.len()].copy_from_slice(bytes);
    put(0xd0, &0x1000u64.to_le_bytes()); // EFER: SVME
    put(0x148, &0x40u64.to_le_bytes()); // CR4: MCE
    put(0x158, &0x10u64.to_le_bytes()); // CR0: ET
    put(0x160, &0x400u64.to_le_bytes()); // DR7
    put(0x168, &0xffff_0ff0u64.to_le_bytes()); // DR6
    put(0x170, &0x2u64.to_le_bytes()); // RFLAGS
    put(0x178, &(eip & 0xffff).to_le_bytes()); // RIP
    put(0x268, &g_pat.to_le_bytes()); // G_PAT
    put(0x310, &rdx.to_le_bytes()); // RDX
    put(0x3b0, &guest_features.to_le_bytes()); // SEV_FEATURES
    put(0x3e8, &1u64.to_le_bytes()); // XCR0
    put(0x408, &mxcsr.to_le_bytes()); // MXCSR
    put(0x410, &fcw.to_le_bytes()); // X87_FCW
    v
}

/// Computes the launch digest of `launch` (see the module docs), hashing the firmware on `threads` threads.
pub fn launch_digest(provider: &CryptoProvider, launch: &SnpLaunch<'_>, threads: usize) -> Result<LaunchDigest, Error> {
    if launch.vcpus == 0 || launch.vcpus > MAX_VCPUS {
        return Err(Error::InvalidArgument { what: "vCPU count", reason: "must be 1 to 4096" });
    }
    let ovmf = launch.ovmf;
    let sections = ovmf.sev_sections()?;
    let ap_eip = u64::from(ovmf.sev_es_reset_eip()?);
    let has_hashes_section = sections.iter().any(|s| s.kind == SevSectionType::SnpKernelHashes);
    if launch.kernel_hashes.is_some() && !has_hashes_section {
        return Err(Error::MissingFirmwareEntry { what: "SNP_KERNEL_HASHES section (an AmdSev build)" });
    }
    let mut chain = Chain { provider, ld: [0; 48], info: [0; 0x70] };
    let mut steps = Vec::new();
    let mut step =
        |what: String, gpa: u64, pages: u64, ld: [u8; 48]| steps.push(LaunchStep { what, gpa, pages, digest: ld });

    let base = ovmf.gpa();
    for (i, h) in page_hashes(provider, ovmf.bytes(), threads).iter().enumerate() {
        chain.update(PageType::Normal, base + (i * PAGE) as u64, h);
    }
    step("firmware image (NORMAL pages)".to_owned(), base, (ovmf.bytes().len() / PAGE) as u64, chain.ld);

    for s in &sections {
        let what = match s.kind {
            SevSectionType::SnpSecMem if launch.vmm == Vmm::Gce => {
                chain.pages(PageType::Unmeasured, s.gpa, s.size);
                "SNP_SEC_MEM (UNMEASURED pages)"
            }
            SevSectionType::SnpSecMem | SevSectionType::SvsmCaa => {
                chain.pages(PageType::Zero, s.gpa, s.size);
                if s.kind == SevSectionType::SvsmCaa { "SVSM_CAA (ZERO pages)" } else { "SNP_SEC_MEM (ZERO pages)" }
            }
            SevSectionType::SnpSecrets => {
                chain.update(PageType::Secrets, s.gpa, &[0; 48]);
                "SECRETS page"
            }
            SevSectionType::Cpuid if launch.vmm == Vmm::Ec2 => continue,
            SevSectionType::Cpuid => {
                chain.update(PageType::Cpuid, s.gpa, &[0; 48]);
                "CPUID page"
            }
            SevSectionType::SnpKernelHashes => {
                let Some(hashes) = &launch.kernel_hashes else {
                    chain.pages(PageType::Zero, s.gpa, s.size);
                    step(
                        "KERNEL_HASHES (ZERO pages, no direct kernel boot)".to_owned(),
                        s.gpa,
                        s.size / PAGE as u64,
                        chain.ld,
                    );
                    continue;
                };
                {
                    let table_gpa = ovmf
                        .sev_hashes_table_gpa()
                        .ok_or(Error::MissingFirmwareEntry { what: "SEV hashes table location" })?;
                    let offset = (table_gpa & 0xfff) as usize;
                    let table = hashes.table();
                    if s.size != PAGE as u64 || offset + table.len() > PAGE {
                        return Err(Error::BadFirmwareMetadata { reason: "kernel hashes section is not one page" });
                    }
                    let mut page = [0u8; PAGE];
                    page[offset..offset + table.len()].copy_from_slice(&table);
                    chain.update(PageType::Normal, s.gpa, &provider.digests.sha384(&page));
                    "KERNEL_HASHES (hashes table page)"
                }
            }
        };
        step(what.to_owned(), s.gpa, s.size / PAGE as u64, chain.ld);
    }
    if launch.vmm == Vmm::Ec2 {
        for s in sections.iter().filter(|s| s.kind == SevSectionType::Cpuid) {
            chain.update(PageType::Cpuid, s.gpa, &[0; 48]);
            step("CPUID page (EC2: after the other sections)".to_owned(), s.gpa, 1, chain.ld);
        }
    }

    let bsp = provider.digests.sha384(&vmsa_page(launch.vmm, BSP_EIP, launch.vcpu_signature, launch.guest_features));
    let ap = provider.digests.sha384(&vmsa_page(launch.vmm, ap_eip, launch.vcpu_signature, launch.guest_features));
    for i in 0..launch.vcpus {
        chain.update(PageType::Vmsa, VMSA_GPA, if i == 0 { &bsp } else { &ap });
    }
    step(format!("VMSA pages ({} vCPUs)", launch.vcpus), VMSA_GPA, u64::from(launch.vcpus), chain.ld);
    Ok(LaunchDigest { measurement: chain.ld, steps })
}
