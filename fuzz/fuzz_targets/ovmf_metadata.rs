//! `attest_reference::Ovmf::parse` (the OVMF footer table), the SEV and TDVF metadata readers, the SEV-SNP
//! launch digest (one vCPU) and the TDX MRTD over them. The input is padded in front to whole 4 KiB pages,
//! so its end — where the footer table lives — is the image's end.
#![no_main]

use attest_engine::crypto::default_provider;
use attest_reference::snp::{self, SnpLaunch, Vmm};
use attest_reference::{Ovmf, tdx};
use libfuzzer_sys::fuzz_target;
use std::hint::black_box;

fuzz_target!(|data: &[u8]| {
    let mut image = vec![0u8; (4096 - data.len() % 4096) % 4096];
    image.extend_from_slice(data);
    let Ok(ovmf) = Ovmf::parse(&image) else { return };
    let _ = black_box(ovmf.sev_es_reset_eip());
    black_box(ovmf.sev_hashes_table_gpa());
    if let Ok(sections) = ovmf.sev_sections() {
        for s in &sections {
            assert!(s.gpa % 4096 == 0 && s.size % 4096 == 0 && s.gpa + s.size <= 1 << 32);
        }
        let launch = SnpLaunch { ovmf: &ovmf, vcpus: 1, vcpu_signature: 0, guest_features: 1, vmm: Vmm::Qemu, kernel_hashes: None };
        let _ = black_box(snp::launch_digest(default_provider(), &launch, 1));
    }
    if let Ok(sections) = ovmf.tdvf_sections() {
        black_box(sections.len());
        let _ = black_box(tdx::mrtd(default_provider(), &ovmf));
    }
});
