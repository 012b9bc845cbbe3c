//! A real measured boot: QEMU (TCG, no KVM needed) with Debian's OVMF and a swtpm boots a UKI the test
//! assembles with `objcopy` from Debian's systemd-stub 252, Debian's kernel and a busybox initrd that prints
//! the TPM's SHA-256 PCRs and the firmware's event log to the serial port and powers off. Then:
//!
//! * every PCR `attest measurements compute` predicts (4, 9, 11, 12) equals the booted value, and its
//!   events equal the firmware log's events of those PCRs one by one (an explanation, not just a total);
//! * the event log read back from the TPM's securityfs replays to every PCR it touches;
//! * a second UKI with one byte of its command line changed changes exactly PCRs 4 (the UKI's Authenticode
//!   hash), 9 (the kernel's LoadOptions measurement), 10 (IMA's boot_aggregate over PCRs 0–9, so it
//!   follows PCR 9) and 11 (the .cmdline section) — and its prediction matches its boot too;
//! * the first UKI booted through Debian's systemd-boot 252 (found as a type-2 entry in \EFI\Linux, so
//!   started with its own .cmdline as load options): PCR 4 gains systemd-boot's Authenticode hash and PCR 12
//!   the options, measured by systemd-boot and again by the stub — predicted with `--boot-loader`. That UKI
//!   also carries a `.pcrpkey` section (PCR 11, and appended to the initrd as a cpio), and its ESP holds two
//!   credentials in the UKI's drop-in directory (`\EFI\Linux\uki.efi.extra.d\*.cred`), one
//!   in `\loader\credentials` and a system extension image (`*.raw`): the stub measures their cpio
//!   archives into PCR 12 and PCR 13 and appends them to the initrd (PCR 9) — predicted with
//!   `--credential`, `--global-credential` and `--sysext`, through the CLI too.
//!
//! The three boots run side by side (≈ 40–90 s together on two busy cores). Without QEMU, OVMF, swtpm, mtools,
//! dosfstools, systemd-stub, busybox or the kernel (scripts/setup.sh installs them all) the test prints a
//! NOTICE and skips; under `CI=true` it fails instead.

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::tpm::eventlog::EventLog;
use attest_reference::boot::{self, BootConfig, Prediction};
use attest_reference::{EspFile, Uki, pe};
use attest_test_support::TempDir;
use attest_test_support::uki::{self, Assets};
use base64::Engine as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
/// Longest a boot may take before the test gives up on it (TCG on a loaded machine: ≈ 15–40 s).
const BOOT_TIMEOUT: Duration = Duration::from_secs(300);

/// The serial output of one boot: the SHA-256 PCRs and the firmware's event log.
struct Booted {
    pcrs: BTreeMap<u8, Vec<u8>>,
    event_log: Vec<u8>,
}

fn tools_present() -> bool {
    let mut missing: Vec<String> = ["qemu-system-x86_64", "swtpm", "mkfs.vfat", "mcopy", "mmd"]
        .into_iter()
        .filter(|t| {
            Command::new("sh").args(["-c", &format!("command -v {t}")]).output().map_or(true, |o| !o.status.success())
        })
        .map(str::to_owned)
        .collect();
    missing.extend([OVMF_CODE, OVMF_VARS].into_iter().filter(|p| !Path::new(p).is_file()).map(str::to_owned));
    if missing.is_empty() {
        return true;
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "measured boot: missing {} under CI=true (scripts/setup.sh installs them)",
        missing.join(", ")
    );
    eprintln!("NOTICE: skipping the QEMU measured boot: missing {} (run scripts/setup.sh)", missing.join(", "));
    false
}

/// Kills and reaps a child process we started (by its handle, i.e. its PID) when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Boots from a FAT image holding `files` (ESP path, contents) with a fresh swtpm and a fresh copy of the
/// OVMF variables, and reads what the initrd printed.
fn boot(files: &[(&str, &[u8])], dir: &Path) -> Booted {
    std::fs::create_dir_all(dir).unwrap();
    let esp = dir.join("esp.img");
    run(Command::new("mkfs.vfat").args(["-C", "-F", "32"]).arg(&esp).arg("65536"));
    let mut dirs: Vec<String> = ["/EFI", "/EFI/BOOT", "/EFI/Linux", "/loader"].map(str::to_owned).to_vec();
    for (to, _) in files {
        let parent = Path::new(to).parent().and_then(Path::to_str).unwrap_or("/").to_owned();
        if !dirs.contains(&parent) {
            dirs.push(parent);
        }
    }
    run(Command::new("mmd").arg("-i").arg(&esp).args(dirs.iter().map(|d| format!("::{d}"))));
    for (i, (to, data)) in files.iter().enumerate() {
        let from = dir.join(format!("file-{i}"));
        std::fs::write(&from, data).unwrap();
        run(Command::new("mcopy").arg("-i").arg(&esp).arg(&from).arg(format!("::{to}")));
    }
    let vars = dir.join("vars.fd");
    std::fs::copy(OVMF_VARS, &vars).unwrap();
    let state = dir.join("tpm");
    std::fs::create_dir_all(&state).unwrap();
    let sock = dir.join("swtpm.sock");
    let _swtpm = Reaped(
        Command::new("swtpm")
            .args(["socket", "--tpm2", "--flags", "startup-clear"])
            .arg("--tpmstate")
            .arg(format!("dir={}", state.display()))
            .arg("--ctrl")
            .arg(format!("type=unixio,path={}", sock.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting swtpm"),
    );
    let started = Instant::now();
    while !sock.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "swtpm did not create its socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let serial = dir.join("serial.txt");
    let mut qemu = Reaped(
        Command::new("qemu-system-x86_64")
            .args(["-machine", "q35,accel=tcg", "-m", "1024", "-nodefaults", "-display", "none", "-monitor", "none"])
            .args(["-no-reboot", "-serial"])
            .arg(format!("file:{}", serial.display()))
            .arg("-drive")
            .arg(format!("if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}"))
            .arg("-drive")
            .arg(format!("if=pflash,format=raw,unit=1,file={}", vars.display()))
            .arg("-chardev")
            .arg(format!("socket,id=chrtpm,path={}", sock.display()))
            .args(["-tpmdev", "emulator,id=tpm0,chardev=chrtpm", "-device", "tpm-crb,tpmdev=tpm0"])
            .arg("-drive")
            .arg(format!("if=virtio,format=raw,file={}", esp.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting qemu-system-x86_64"),
    );
    let started = Instant::now();
    loop {
        if qemu.0.try_wait().expect("waiting for QEMU").is_some() {
            break;
        }
        assert!(started.elapsed() < BOOT_TIMEOUT, "the boot did not power off within {BOOT_TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = String::from_utf8_lossy(&std::fs::read(&serial).unwrap()).replace('\r', "");
    let mut pcrs = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["PCR", "sha256", n, value] = fields.as_slice() {
            pcrs.insert(n.parse().unwrap(), hex::decode(value).unwrap());
        }
    }
    let log_b64: String = text
        .split("EVENTLOG-BEGIN")
        .nth(1)
        .and_then(|rest| rest.split("EVENTLOG-END").next())
        .unwrap_or_else(|| panic!("no event log on the serial console:\n{text}"))
        .split_whitespace()
        .collect();
    let event_log = base64::engine::general_purpose::STANDARD.decode(log_b64).expect("event log base64");
    assert_eq!(pcrs.len(), 24, "PCR lines on the serial console:\n{text}");
    Booted { pcrs, event_log }
}

fn build(assets: &Assets, kernel: &[u8], initrd: &[u8], cmdline: &[u8]) -> Vec<u8> {
    let mut image = uki::objcopy_uki(
        &assets.stub,
        &[(".osrel", b"ID=attest-test\n"), (".cmdline", cmdline), (".linux", kernel), (".initrd", initrd)],
    );
    pe::set_timestamp(&mut image, 0).unwrap();
    image
}

fn predict(image: &[u8], boot_loader: Option<&[u8]>) -> Prediction {
    let uki = Uki::parse(image, None).unwrap();
    boot::predict(default_provider(), &uki, &BootConfig { threads: 2, boot_loader, ..BootConfig::default() }).unwrap()
}

/// Checks one boot against its prediction, PCR by PCR and event by event.
fn check(name: &str, prediction: &Prediction, booted: &Booted) {
    let p = default_provider();
    for &pcr in &prediction.pcrs {
        let predicted = prediction.pcr(p, HashAlgorithm::Sha256, pcr).unwrap();
        assert_eq!(
            hex::encode(predicted.as_bytes()),
            hex::encode(&booted.pcrs[&pcr]),
            "{name}: PCR {pcr} predicted vs booted"
        );
    }
    let log = EventLog::parse(&booted.event_log).expect("the firmware's event log parses");
    let replay = log.replay(p, HashAlgorithm::Sha256, false).unwrap();
    let mut touched = 0;
    for (pcr, value) in replay.touched() {
        assert_eq!(value, booted.pcrs[&pcr].as_slice(), "{name}: the event log replays to PCR {pcr}");
        touched += 1;
    }
    assert!(touched >= 8, "{name}: the log touches PCRs 0-7 at least");
    // Event by event: the firmware's log entries of the predicted PCRs are the predicted events.
    let sha256 = attest_engine::tpm::eventlog::AlgorithmId(0x000B);
    for &pcr in &prediction.pcrs {
        let logged: Vec<(u32, Vec<u8>)> = log
            .events()
            .filter(|e| e.pcr_index() == u32::from(pcr) && e.is_extended())
            .map(|e| (e.event_type().0, e.digest(sha256).unwrap_or_default().to_vec()))
            .collect();
        let predicted: Vec<(u32, Vec<u8>)> = prediction
            .events
            .iter()
            .filter(|e| e.pcr == pcr)
            .map(|e| (e.event_type, e.digests[0].as_bytes().to_vec()))
            .collect();
        assert_eq!(logged, predicted, "{name}: events of PCR {pcr}");
    }
}

#[test]
fn compute_predicts_a_real_qemu_ovmf_swtpm_boot() {
    let Some(assets) = uki::assets() else { return };
    if !tools_present() {
        return;
    }
    let started = Instant::now();
    let kernel = std::fs::read(&assets.kernel).unwrap();
    let initrd = uki::pcr_reporting_initrd(&std::fs::read(&assets.busybox).unwrap(), &[]);
    let first = build(&assets, &kernel, &initrd, b"console=ttyS0 quiet panic=-1");
    let second = build(&assets, &kernel, &initrd, b"console=ttyS0 quiet panic=-2");
    let with_key = {
        let key: &[u8] = b"-----BEGIN PUBLIC KEY-----\nattest measured boot test\n-----END PUBLIC KEY-----\n";
        let mut image = uki::objcopy_uki(
            &assets.stub,
            &[
                (".osrel", b"ID=attest-test\n"),
                (".cmdline", b"console=ttyS0 quiet panic=-1"),
                (".pcrpkey", key),
                (".linux", &kernel),
                (".initrd", &initrd),
            ],
        );
        pe::set_timestamp(&mut image, 0).unwrap();
        image
    };
    let sd_boot = std::fs::read(uki::SYSTEMD_BOOT).expect("systemd-boot (systemd-boot-efi)");
    let tmp = TempDir::new("measured-boot");
    let dirs: [PathBuf; 3] = [tmp.path().join("first"), tmp.path().join("second"), tmp.path().join("sd-boot")];
    // The ESP files of the systemd-boot boot, given in another order than the stub reads them.
    let sysext: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let credentials: [(&str, &[u8]); 2] = [("zeta.cred", b"second by name\n"), ("alpha.cred", b"node secret 1")];
    let global: [(&str, &[u8]); 1] = [("cluster.cred", b"global")];
    let sysexts: [(&str, &[u8]); 1] = [("tools.raw", &sysext)];
    let (a, b, c) = std::thread::scope(|s| {
        let a = s.spawn(|| boot(&[("/EFI/BOOT/BOOTX64.EFI", &first)], &dirs[0]));
        let b = s.spawn(|| boot(&[("/EFI/BOOT/BOOTX64.EFI", &second)], &dirs[1]));
        let c = s.spawn(|| {
            let files: [(&str, &[u8]); 7] = [
                ("/EFI/BOOT/BOOTX64.EFI", &sd_boot),
                ("/EFI/Linux/uki.efi", &with_key),
                ("/loader/loader.conf", b"timeout 0\n"),
                ("/EFI/Linux/uki.efi.extra.d/zeta.cred", credentials[0].1),
                ("/EFI/Linux/uki.efi.extra.d/alpha.cred", credentials[1].1),
                ("/loader/credentials/cluster.cred", global[0].1),
                ("/EFI/Linux/uki.efi.extra.d/tools.raw", sysexts[0].1),
            ];
            boot(&files, &dirs[2])
        });
        (a.join().expect("first boot"), b.join().expect("second boot"), c.join().expect("systemd-boot boot"))
    });
    check("first UKI", &predict(&first, None), &a);
    check("second UKI", &predict(&second, None), &b);
    fn esp<'a>(files: &[(&'a str, &'a [u8])]) -> Vec<EspFile<'a>> {
        files.iter().map(|&(name, data)| EspFile { name, data }).collect()
    }
    let through_loader = boot::predict(
        default_provider(),
        &Uki::parse(&with_key, None).unwrap(),
        &BootConfig {
            threads: 2,
            boot_loader: Some(&sd_boot),
            credentials: esp(&credentials),
            global_credentials: esp(&global),
            sysexts: esp(&sysexts),
            ..BootConfig::default()
        },
    )
    .unwrap();
    check("UKI with .pcrpkey through systemd-boot, with credentials and a sysext", &through_loader, &c);
    assert_ne!(c.pcrs[&12], [0; 32], "systemd-boot passed the .cmdline as load options");
    assert_ne!(c.pcrs[&13], [0; 32], "the stub measured the system extension");
    assert_eq!(c.pcrs[&8], [0; 32], "no compatibility measurement of the credentials into PCR 8");
    assert_ne!(c.pcrs[&11], a.pcrs[&11], "the .pcrpkey section");
    assert_ne!(c.pcrs[&9], a.pcrs[&9], "the stub appended the archives to the initrd");
    // Without the ESP files the same boot's PCR 12 would lack the two archive events, PCR 13 would be zero
    // and the initrd would carry only the .pcrpkey archive.
    let bare = predict(&with_key, Some(&sd_boot));
    let p = default_provider();
    assert_eq!(through_loader.events.iter().filter(|e| e.pcr == 12).count(), 4);
    assert_eq!(bare.events.iter().filter(|e| e.pcr == 12).count(), 2);
    assert_eq!(bare.pcr(p, HashAlgorithm::Sha256, 13).unwrap().as_bytes(), [0; 32]);
    assert_ne!(bare.pcr(p, HashAlgorithm::Sha256, 9).unwrap().as_bytes(), c.pcrs[&9].as_slice());
    assert_ne!(bare.pcr(p, HashAlgorithm::Sha256, 9).unwrap().as_bytes(), a.pcrs[&9].as_slice());

    let changed: Vec<u8> = (0..24u8).filter(|i| a.pcrs[i] != b.pcrs[i]).collect();
    assert_eq!(changed, [4, 9, 10, 11], "one byte of command line");
    // The CLI writes the same values into a measurements file.
    let uki_path = tmp.path().join("first.efi");
    std::fs::write(&uki_path, &first).unwrap();
    let out = tmp.path().join("measurements.json");
    let cli = <attest_cli::Cli as clap::Parser>::try_parse_from([
        "attest",
        "measurements",
        "compute",
        "--variant",
        "qemu-vtpm",
        "--image",
        "first",
        "--uki",
        uki_path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .expect("arguments parse");
    let attest_cli::Command::Measurements(cmd) = cli.command else { panic!("a measurements command") };
    assert_eq!(attest_cli::measurements::run(cmd).expect("compute"), attest_cli::Status::Accepted);
    let doc = attest_measurements::parse_document(&std::fs::read(&out).unwrap()).unwrap();
    let set = doc.sets_for_variant(attest_engine::variant::Variant::QemuVtpm).unwrap();
    assert_eq!(set[0].measurements.len(), boot::PREDICTED_PCRS.len());
    for (index, m) in set[0].measurements.iter() {
        assert_eq!(m.expected(), a.pcrs[&index.get()].as_slice(), "file PCR {index}");
    }
    // The CLI with the ESP files (named as on the ESP) predicts the systemd-boot boot's PCRs.
    let esp_dir = tmp.path().join("esp-files");
    std::fs::create_dir_all(&esp_dir).unwrap();
    let key_path = tmp.path().join("with-key.efi");
    std::fs::write(&key_path, &with_key).unwrap();
    let mut args: Vec<String> =
        ["attest", "measurements", "compute", "--variant", "qemu-vtpm", "--uki"].map(str::to_owned).to_vec();
    args.push(key_path.display().to_string());
    let loader_path = esp_dir.join("systemd-bootx64.efi");
    std::fs::write(&loader_path, &sd_boot).unwrap();
    args.extend(["--boot-loader".to_owned(), loader_path.display().to_string()]);
    for (flag, files) in
        [("--credential", &credentials[..]), ("--global-credential", &global[..]), ("--sysext", &sysexts[..])]
    {
        for (name, data) in files {
            let path = esp_dir.join(name);
            std::fs::write(&path, data).unwrap();
            args.extend([flag.to_owned(), path.display().to_string()]);
        }
    }
    let out_c = tmp.path().join("measurements-c.json");
    args.extend(["-o".to_owned(), out_c.display().to_string()]);
    let cli = <attest_cli::Cli as clap::Parser>::try_parse_from(&args).expect("arguments parse");
    let attest_cli::Command::Measurements(cmd) = cli.command else { panic!("a measurements command") };
    assert_eq!(attest_cli::measurements::run(cmd).expect("compute"), attest_cli::Status::Accepted);
    let doc = attest_measurements::parse_document(&std::fs::read(&out_c).unwrap()).unwrap();
    let set = doc.sets_for_variant(attest_engine::variant::Variant::QemuVtpm).unwrap();
    for (index, m) in set[0].measurements.iter() {
        assert_eq!(m.expected(), c.pcrs[&index.get()].as_slice(), "file PCR {index} with ESP files");
    }
    eprintln!("measured boot: three boots checked in {:.1} s", started.elapsed().as_secs_f64());
}
