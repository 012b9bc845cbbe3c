//! The SEV-SNP launch digest against virtee's `sev-snp-measure` (PyPI, installed by
//! scripts/setup-python.sh), driven as a library in one Python process: every QEMU vCPU type, the three
//! hypervisors, vCPU counts from 1 to 64, two guest-feature sets, Debian's SNP-capable OVMF, a 4 MiB image
//! (the same firmware padded in front), and a synthetic AmdSev-shaped build with and without direct-kernel
//! hashes. An OVMF without SEV metadata, for which the tool still prints a digest, is refused here.

mod common;

use attest_engine::crypto::default_provider;
use attest_reference::snp::{self, KernelHashes, SnpLaunch, VCPU_TYPES, Vmm};
use attest_reference::{Error, Ovmf};
use attest_test_support::TempDir;
use common::{OVMF_4M, OVMF_SNP, amdsev_sections, require, synthetic_ovmf, venv_python};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// One case: (firmware file, vCPUs, signature, guest features, VMM, kernel/initrd/cmdline files).
struct Case {
    ovmf: String,
    vcpus: u32,
    signature: u32,
    features: u64,
    vmm: Vmm,
    kernel: Option<(String, String, String)>,
}

const DRIVER: &str = r#"
import json, sys
from sevsnpmeasure import guest
from sevsnpmeasure.sev_mode import SevMode
from sevsnpmeasure.vmm_types import VMMType
for c in json.load(sys.stdin):
    k = c.get("kernel")
    ld = guest.calc_launch_digest(SevMode.SEV_SNP, c["vcpus"], c["sig"], c["ovmf"],
        k[0] if k else None, k[1] if k else None, k[2] if k else None, c["features"],
        vmm_type={"qemu": VMMType.QEMU, "ec2": VMMType.ec2, "gce": VMMType.gce}[c["vmm"]])
    print(ld.hex())
"#;

fn oracle(cases: &[Case]) -> Vec<String> {
    let json: Vec<String> = cases
        .iter()
        .map(|c| {
            let kernel = c.kernel.as_ref().map_or("null".to_owned(), |(k, i, a)| format!("[{k:?}, {i:?}, {a:?}]"));
            format!(
                r#"{{"ovmf": {:?}, "vcpus": {}, "sig": {}, "features": {}, "vmm": "{}", "kernel": {kernel}}}"#,
                c.ovmf,
                c.vcpus,
                c.signature,
                c.features,
                c.vmm.name()
            )
        })
        .collect();
    let mut child = Command::new(venv_python())
        .args(["-c", DRIVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running sev-snp-measure");
    child.stdin.take().unwrap().write_all(format!("[{}]", json.join(",")).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sev-snp-measure failed");
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

fn ours(c: &Case) -> String {
    let provider = default_provider();
    let bytes = std::fs::read(&c.ovmf).unwrap();
    let ovmf = Ovmf::parse(&bytes).unwrap();
    let kernel_hashes = c.kernel.as_ref().map(|(k, i, a)| {
        let (k, i) = (std::fs::read(k).unwrap(), std::fs::read(i).unwrap());
        KernelHashes::new(provider, &k, Some(&i), Some(a))
    });
    let launch = SnpLaunch {
        ovmf: &ovmf,
        vcpus: c.vcpus,
        vcpu_signature: c.signature,
        guest_features: c.features,
        vmm: c.vmm,
        kernel_hashes,
    };
    hex::encode(snp::launch_digest(provider, &launch, 2).unwrap().measurement)
}

fn available() -> bool {
    require(&venv_python(), "the Python venv with sev-snp-measure") && require(Path::new(OVMF_SNP), "Debian's OVMF")
}

#[test]
fn launch_digests_agree_with_sev_snp_measure() {
    if !available() {
        return;
    }
    let tmp = TempDir::new("snp-measure");
    // The same firmware padded to 4 MiB in front: its footer and metadata stay at the end.
    let real = std::fs::read(OVMF_SNP).unwrap();
    let mut padded = vec![0xff; (4 << 20) - real.len()];
    padded.extend_from_slice(&real);
    let ovmf_4m = tmp.path().join("ovmf-4m.fd");
    std::fs::write(&ovmf_4m, &padded).unwrap();
    let amdsev = tmp.path().join("amdsev.fd");
    std::fs::write(&amdsev, synthetic_ovmf(2 << 20, &amdsev_sections(), 0x80_bc00)).unwrap();
    let (kernel, initrd) = (tmp.path().join("kernel"), tmp.path().join("initrd"));
    std::fs::write(&kernel, vec![0x4b; 100_000]).unwrap();
    std::fs::write(&initrd, vec![0x49; 70_000]).unwrap();
    let direct = Some((kernel.display().to_string(), initrd.display().to_string(), "console=ttyS0 quiet".to_owned()));

    let epyc = snp::vcpu_signature("EPYC-v4").unwrap();
    let mut cases = Vec::new();
    let case = |ovmf: &Path, vcpus, signature, features, vmm, kernel| Case {
        ovmf: ovmf.display().to_string(),
        vcpus,
        signature,
        features,
        vmm,
        kernel,
    };
    for (name, _) in VCPU_TYPES {
        cases.push(case(Path::new(OVMF_SNP), 2, snp::vcpu_signature(name).unwrap(), 1, Vmm::Qemu, None));
    }
    for vcpus in [1, 3, 8, 64] {
        for vmm in [Vmm::Qemu, Vmm::Ec2, Vmm::Gce] {
            cases.push(case(Path::new(OVMF_SNP), vcpus, epyc, 1, vmm, None));
        }
    }
    cases.push(case(Path::new(OVMF_SNP), 4, epyc, 0x21, Vmm::Qemu, None));
    cases.push(case(&ovmf_4m, 4, epyc, 1, Vmm::Qemu, None));
    cases.push(case(&ovmf_4m, 1, epyc, 1, Vmm::Ec2, None));
    for vmm in [Vmm::Qemu, Vmm::Ec2, Vmm::Gce] {
        cases.push(case(&amdsev, 2, epyc, 1, vmm, None));
        cases.push(case(&amdsev, 2, epyc, 1, vmm, direct.clone()));
    }
    let expected = oracle(&cases);
    assert_eq!(expected.len(), cases.len());
    for (c, want) in cases.iter().zip(&expected) {
        assert_eq!(
            &ours(c),
            want,
            "{} vcpus={} sig={:#x} vmm={:?} kernel={}",
            c.ovmf,
            c.vcpus,
            c.signature,
            c.vmm,
            c.kernel.is_some()
        );
    }
    eprintln!("sev-snp-measure agreed on {} launch digests", cases.len());
}

#[test]
fn firmware_without_sev_metadata_is_refused() {
    if !require(Path::new(OVMF_4M), "Debian's 4 MiB OVMF") {
        return;
    }
    let bytes = std::fs::read(OVMF_4M).unwrap();
    let ovmf = Ovmf::parse(&bytes).unwrap();
    let launch =
        SnpLaunch { ovmf: &ovmf, vcpus: 1, vcpu_signature: 0, guest_features: 1, vmm: Vmm::Qemu, kernel_hashes: None };
    assert_eq!(
        snp::launch_digest(default_provider(), &launch, 1),
        Err(Error::MissingFirmwareEntry { what: "SEV metadata" })
    );
    // Kernel hashes need a KERNEL_HASHES section, which Debian's SNP build lacks.
    let real = std::fs::read(OVMF_SNP).unwrap();
    let ovmf = Ovmf::parse(&real).unwrap();
    let hashes = KernelHashes::new(default_provider(), b"k", None, None);
    let launch = SnpLaunch { kernel_hashes: Some(hashes), ..launch };
    let launch = SnpLaunch { ovmf: &ovmf, ..launch };
    assert!(matches!(snp::launch_digest(default_provider(), &launch, 1), Err(Error::MissingFirmwareEntry { .. })));
}
