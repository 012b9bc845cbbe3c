//! Reference values from images (`attest-reference`), each beside its floor in one run:
//!
//! * every PCR a UKI boot decides (4, 9, 11, 12) of a UKI of ≥ 50 MiB — Debian's systemd-stub 252 and kernel
//!   with a 48 MiB initrd, assembled with objcopy — in the SHA-256 bank and in SHA-256 + SHA-384, from the
//!   bytes in memory and from the file (read included), against `sha256sum FILE` run as a process (the
//!   issue's yardstick) and one in-process SHA-256 of the file;
//! * the SEV-SNP launch digest of a 4 MiB OVMF (Debian's SNP-capable build padded in front, 4 vCPUs,
//!   EPYC-v4) against one SHA-384 of the same 4 MiB (its floor).
//!
//! Without the assets (scripts/setup.sh) the binary prints a NOTICE and runs nothing of that part.

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_reference::boot::{self, BootConfig};
use attest_reference::snp::{self, SnpLaunch, Vmm};
use attest_reference::{Ovmf, Uki, pe};
use attest_test_support::TempDir;
use attest_test_support::uki;
use criterion::Criterion;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;

const OVMF_SNP: &str = "/usr/share/OVMF/OVMF_CODE.fd";
/// The initrd of the benchmark UKI: with Debian's 8 MiB kernel the image is ≈ 56 MiB.
const INITRD_LEN: usize = 48 << 20;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn uki_benches(c: &mut Criterion) {
    let Some(assets) = uki::assets() else { return };
    let kernel = std::fs::read(&assets.kernel).unwrap();
    let initrd: Vec<u8> =
        (0..INITRD_LEN).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(11) as u8).collect();
    let mut image = uki::objcopy_uki(
        &assets.stub,
        &[(".osrel", b"ID=bench\n"), (".cmdline", b"console=ttyS0 quiet"), (".linux", &kernel), (".initrd", &initrd)],
    );
    pe::set_timestamp(&mut image, 0).unwrap();
    assert!(image.len() >= 50 << 20, "the benchmark UKI must be at least 50 MiB");
    let tmp = TempDir::new("bench-uki");
    let path = tmp.path().join("uki.efi");
    std::fs::write(&path, &image).unwrap();
    let provider = default_provider();
    let predict = |bytes: &[u8], banks: &[HashAlgorithm]| {
        let uki = Uki::parse(bytes, None).unwrap();
        let config = BootConfig { banks: banks.to_vec(), threads: threads(), ..BootConfig::default() };
        boot::predict(provider, &uki, &config).unwrap()
    };
    let sha256 = [HashAlgorithm::Sha256];
    let both = [HashAlgorithm::Sha256, HashAlgorithm::Sha384];

    let mut g = c.benchmark_group("reference_uki");
    g.sample_size(20);
    g.bench_function("all_pcrs_sha256", |b| b.iter(|| black_box(predict(black_box(&image), &sha256))));
    g.bench_function("all_pcrs_sha256_sha384", |b| b.iter(|| black_box(predict(black_box(&image), &both))));
    g.bench_function("read_and_all_pcrs_sha256", |b| {
        b.iter(|| black_box(predict(&std::fs::read(black_box(&path)).unwrap(), &sha256)));
    });
    g.bench_function("read_and_all_pcrs_sha256_sha384", |b| {
        b.iter(|| black_box(predict(&std::fs::read(black_box(&path)).unwrap(), &both)));
    });
    g.bench_function("sha256sum_process", |b| {
        b.iter(|| {
            let out = Command::new("sha256sum").arg(black_box(&path)).output().unwrap();
            assert!(out.status.success());
            black_box(out.stdout)
        });
    });
    g.bench_function("floor_sha256_in_process", |b| b.iter(|| black_box(provider.digests.sha256(black_box(&image)))));
    g.finish();
}

fn snp_benches(c: &mut Criterion) {
    if !Path::new(OVMF_SNP).is_file() {
        eprintln!("NOTICE: skipping the SNP launch digest benchmark: {OVMF_SNP} not found (run scripts/setup.sh)");
        return;
    }
    let real = std::fs::read(OVMF_SNP).unwrap();
    let mut firmware = vec![0xff; (4 << 20) - real.len()];
    firmware.extend_from_slice(&real);
    let ovmf = Ovmf::parse(&firmware).unwrap();
    let provider = default_provider();
    let launch = |threads| {
        let l = SnpLaunch {
            ovmf: &ovmf,
            vcpus: 4,
            vcpu_signature: snp::vcpu_signature("EPYC-v4").unwrap(),
            guest_features: 1,
            vmm: Vmm::Qemu,
            kernel_hashes: None,
        };
        snp::launch_digest(provider, &l, threads).unwrap().measurement
    };
    let mut g = c.benchmark_group("reference_snp");
    g.bench_function("launch_digest_4m", |b| b.iter(|| black_box(launch(threads()))));
    g.bench_function("launch_digest_4m_one_thread", |b| b.iter(|| black_box(launch(1))));
    g.bench_function("floor_sha384_4m", |b| {
        b.iter(|| black_box(provider.digests.digest(HashAlgorithm::Sha384, &[black_box(&firmware)])));
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    uki_benches(&mut c);
    snp_benches(&mut c);
    c.final_summary();
}
