//! Unified kernel images built in tests, with independent tools: Debian's systemd-stub 252
//! (`systemd-boot-efi`), Debian's kernel (extracted from the `linux-image-*-amd64` package by
//! `scripts/fetch-boot-assets.sh`, which `scripts/setup.sh` runs), a busybox initrd, and binutils' `objcopy`
//! to put them together — so what the reference computation reads was written by someone else.
//!
//! The assets are found through `$ATTEST_BOOT_ASSETS` (default `target/boot-assets` in the repository);
//! tests that need them skip with a visible `NOTICE` where they are absent, and fail under `CI=true`.
//!
//! Section addresses follow the layout the systemd documentation gives for `objcopy`: the stub's own
//! sections end below 0x20000, then `.osrel` 0x20000, `.cmdline` 0x30000, `.splash` 0x40000, `.dtb`
//! 0x50000, `.pcrpkey` 0x60000, `.uname` 0x70000, `.linux` 0x2000000, `.initrd` 0x3000000 (the initrd
//! may be up to 16 MiB above `.linux`'s 16 MiB; bigger ones move up).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::TempDir;

/// Where systemd-boot-efi installs the x86-64 stub.
pub const STUB: &str = "/usr/lib/systemd/boot/efi/linuxx64.efi.stub";
/// Where systemd-boot-efi installs systemd-boot.
pub const SYSTEMD_BOOT: &str = "/usr/lib/systemd/boot/efi/systemd-bootx64.efi";
/// Debian's static busybox (`busybox-static`).
pub const BUSYBOX: &str = "/bin/busybox";

/// The boot assets directory: `$ATTEST_BOOT_ASSETS`, else `target/boot-assets` in the repository.
pub fn assets_dir() -> PathBuf {
    std::env::var_os("ATTEST_BOOT_ASSETS")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/boot-assets"), PathBuf::from)
}

/// What a UKI test needs, found on this machine.
#[derive(Clone, Debug)]
pub struct Assets {
    /// The systemd-stub.
    pub stub: PathBuf,
    /// Debian's kernel (bzImage with an EFI stub).
    pub kernel: PathBuf,
    /// A static busybox for the initrd.
    pub busybox: PathBuf,
}

/// The assets, or `None` after a visible notice saying what is missing.
///
/// # Panics
/// When something is missing and `CI=true`: CI must run these tests (`scripts/setup.sh` installs them).
#[track_caller]
pub fn assets() -> Option<Assets> {
    let kernel = assets_dir().join("vmlinuz");
    let mut missing = Vec::new();
    for (what, path) in [("systemd-stub", Path::new(STUB)), ("busybox", Path::new(BUSYBOX)), ("kernel", &kernel)] {
        if !path.is_file() {
            missing.push(format!("{what} ({})", path.display()));
        }
    }
    if Command::new("objcopy").arg("--version").output().is_err() {
        missing.push("objcopy (binutils)".to_owned());
    }
    if missing.is_empty() {
        return Some(Assets { stub: STUB.into(), kernel, busybox: BUSYBOX.into() });
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "UKI test assets missing under CI=true: {} (scripts/setup.sh installs them)",
        missing.join(", ")
    );
    eprintln!("NOTICE: skipping UKI test: missing {} (run scripts/setup.sh)", missing.join(", "));
    None
}

/// One file of a newc cpio archive.
#[derive(Clone, Debug)]
pub struct CpioEntry {
    /// Path inside the archive (no leading `/`).
    pub path: String,
    /// Mode bits including the type (0o040755 directory, 0o100755 executable file).
    pub mode: u32,
    /// File contents (empty for directories).
    pub data: Vec<u8>,
}

/// A newc ("070701") cpio archive of `entries` with fixed inode numbers, owners and times, as the kernel
/// unpacks an initramfs (Documentation/driver-api/early-userspace/buffer-format.rst): reproducible by
/// construction.
pub fn cpio_newc(entries: &[CpioEntry]) -> Vec<u8> {
    fn header(out: &mut Vec<u8>, ino: usize, mode: u32, size: usize, name: &str) {
        let fields = [ino, mode as usize, 0, 0, 1, 0, size, 0, 0, 0, 0, name.len() + 1, 0];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        header(&mut out, i + 1, e.mode, e.data.len(), &e.path);
        out.extend_from_slice(&e.data);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    header(&mut out, 0, 0, 0, "TRAILER!!!");
    out
}

/// An initrd whose `/init` (a busybox shell script) prints, to the console, every SHA-256 PCR 0–23 as
/// `PCR sha256 <n> <HEX>`, then the firmware's TCG event log base64-encoded between `EVENTLOG-BEGIN` and
/// `EVENTLOG-END`, then powers off. `extra` is appended to the archive (to make initrds differ).
pub fn pcr_reporting_initrd(busybox: &[u8], extra: &[CpioEntry]) -> Vec<u8> {
    let init = "#!/bin/busybox sh\n\
        /bin/busybox mount -t proc proc /proc\n\
        /bin/busybox mount -t sysfs sysfs /sys\n\
        /bin/busybox mount -t securityfs securityfs /sys/kernel/security\n\
        for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23; do\n\
        \x20 echo \"PCR sha256 $i $(/bin/busybox cat /sys/class/tpm/tpm0/pcr-sha256/$i)\"\n\
        done\n\
        echo EVENTLOG-BEGIN\n\
        /bin/busybox base64 /sys/kernel/security/tpm0/binary_bios_measurements\n\
        echo EVENTLOG-END\n\
        /bin/busybox poweroff -f\n";
    let dir = |path: &str| CpioEntry { path: path.to_owned(), mode: 0o040_755, data: Vec::new() };
    let mut entries = vec![
        dir("bin"),
        dir("dev"),
        dir("proc"),
        dir("sys"),
        CpioEntry { path: "bin/busybox".to_owned(), mode: 0o100_755, data: busybox.to_vec() },
        CpioEntry { path: "init".to_owned(), mode: 0o100_755, data: init.as_bytes().to_vec() },
    ];
    entries.extend_from_slice(extra);
    cpio_newc(&entries)
}

/// The VMA `objcopy` gives each known UKI section (see the module docs).
fn section_vma(name: &str) -> Option<u64> {
    Some(match name {
        ".osrel" => 0x20000,
        ".cmdline" => 0x30000,
        ".splash" => 0x40000,
        ".dtb" => 0x50000,
        ".pcrpkey" => 0x60000,
        ".uname" => 0x70000,
        ".linux" => 0x200_0000,
        ".initrd" => 0x300_0000,
        _ => return None,
    })
}

/// Runs `objcopy` to add `sections` (name, contents) to `stub`, each at its VMA (an `.initrd` larger than
/// 16 MiB is placed after `.linux` with room to spare). Returns the image as objcopy wrote it (with the
/// current time in its header: make it reproducible with `attest_reference::pe::set_timestamp`).
///
/// # Panics
/// When objcopy fails or a section name is unknown: this is a test helper.
pub fn objcopy_uki(stub: &Path, sections: &[(&str, &[u8])]) -> Vec<u8> {
    let tmp = TempDir::new("uki");
    let mut cmd = Command::new("objcopy");
    let linux_len = sections.iter().find(|(n, _)| *n == ".linux").map_or(0, |(_, d)| d.len() as u64);
    for (i, (name, data)) in sections.iter().enumerate() {
        let file = tmp.path().join(format!("section-{i}"));
        std::fs::write(&file, data).expect("writing a section file");
        let mut vma = section_vma(name).unwrap_or_else(|| panic!("unknown UKI section {name}"));
        if *name == ".initrd" {
            vma = vma.max((0x200_0000 + linux_len).next_multiple_of(0x100_0000));
        }
        cmd.arg("--add-section").arg(format!("{name}={}", file.display()));
        cmd.arg("--change-section-vma").arg(format!("{name}={vma:#x}"));
    }
    let out = tmp.path().join("uki.efi");
    cmd.arg(stub).arg(&out);
    let status = cmd.output().expect("running objcopy");
    assert!(status.status.success(), "objcopy failed: {}", String::from_utf8_lossy(&status.stderr));
    std::fs::read(&out).expect("reading the UKI")
}
