//! PCR 11 of UKIs built here (objcopy over Debian's systemd-stub 252 and kernel) against `systemd-measure`
//! 252 in both banks, for every section combination the stub measures; and what a one-byte change of the
//! command line changes in the prediction. The real boot of such a UKI is `hwtests/tests/measured_boot.rs`.

mod common;

use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::tpm::eventlog::EventLog;
use attest_reference::boot::{self, BootConfig, Prediction};
use attest_reference::{Uki, pe};
use attest_test_support::TempDir;
use attest_test_support::uki::{self, Assets};
use std::process::Command;

const SYSTEMD_MEASURE: &str = "/usr/lib/systemd/systemd-measure";

fn build(assets: &Assets, sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut image = uki::objcopy_uki(&assets.stub, sections);
    pe::set_timestamp(&mut image, 0).unwrap();
    image
}

fn predict(image: &[u8]) -> Prediction {
    let uki = Uki::parse(image, None).unwrap();
    let config =
        BootConfig { banks: vec![HashAlgorithm::Sha256, HashAlgorithm::Sha384], threads: 2, ..BootConfig::default() };
    boot::predict(default_provider(), &uki, &config).unwrap()
}

/// systemd-measure's PCR 11 (sha256, sha384) for the same section files, outside any boot phase.
fn systemd_measure(tmp: &TempDir, sections: &[(&str, &[u8])]) -> (String, String) {
    let mut cmd = Command::new(SYSTEMD_MEASURE);
    cmd.args(["calculate", "--phase=", "--bank=sha256", "--bank=sha384", "--json=short"]);
    for (i, (name, data)) in sections.iter().enumerate() {
        let file = tmp.path().join(format!("s{i}"));
        std::fs::write(&file, data).unwrap();
        cmd.arg(format!("--{}={}", &name[1..], file.display()));
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "systemd-measure: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let get = |bank: &str| v[bank][0]["hash"].as_str().unwrap().to_owned();
    assert_eq!(v["sha256"][0]["pcr"], 11);
    (get("sha256"), get("sha384"))
}

fn assets() -> Option<Assets> {
    if !common::require(std::path::Path::new(SYSTEMD_MEASURE), "systemd-measure") {
        return None;
    }
    uki::assets()
}

#[test]
fn pcr11_agrees_with_systemd_measure() {
    let Some(assets) = assets() else { return };
    let tmp = TempDir::new("sd-measure");
    let kernel = std::fs::read(&assets.kernel).unwrap();
    let initrd = uki::pcr_reporting_initrd(&std::fs::read(&assets.busybox).unwrap(), &[]);
    let (osrel, splash, dtb, pcrpkey) = (
        b"ID=attest-test\n".as_slice(),
        vec![0x42u8; 3000],
        vec![0xd0u8; 700],
        b"-----BEGIN PUBLIC KEY-----\n".as_slice(),
    );
    let cases: Vec<Vec<(&str, &[u8])>> = vec![
        vec![
            (".osrel", osrel),
            (".cmdline", b"console=ttyS0 quiet panic=-1"),
            (".linux", &kernel),
            (".initrd", &initrd),
        ],
        vec![
            (".osrel", osrel),
            (".cmdline", b"console=ttyS0\n"),
            (".splash", &splash),
            (".dtb", &dtb),
            (".pcrpkey", pcrpkey),
            (".linux", &kernel),
            (".initrd", &initrd),
        ],
        vec![(".linux", &kernel)],
        vec![(".linux", &kernel), (".initrd", &initrd)],
        vec![(".cmdline", b"root=/dev/vda1 ro"), (".linux", &kernel)],
    ];
    for sections in &cases {
        let prediction = predict(&build(&assets, sections));
        let p = default_provider();
        let ours = (
            hex::encode(prediction.pcr(p, HashAlgorithm::Sha256, 11).unwrap().as_bytes()),
            hex::encode(prediction.pcr(p, HashAlgorithm::Sha384, 11).unwrap().as_bytes()),
        );
        let names: Vec<&str> = sections.iter().map(|(n, _)| *n).collect();
        assert_eq!(ours, systemd_measure(&tmp, sections), "sections {names:?}");
    }
    // .uname is not read by systemd-stub 252 (nor by systemd-measure 252): PCR 11 ignores it.
    let with_uname = predict(&build(&assets, &[(".uname", b"6.1.0-56-amd64"), (".linux", &kernel)]));
    let without = predict(&build(&assets, &[(".linux", &kernel)]));
    let p = default_provider();
    assert_eq!(with_uname.pcr(p, HashAlgorithm::Sha256, 11), without.pcr(p, HashAlgorithm::Sha256, 11));
    assert_ne!(with_uname.pcr(p, HashAlgorithm::Sha256, 4), without.pcr(p, HashAlgorithm::Sha256, 4));
}

#[test]
fn one_byte_of_command_line_changes_pcrs_4_9_11_only_and_the_log_replays() {
    let Some(assets) = uki::assets() else { return };
    let kernel = std::fs::read(&assets.kernel).unwrap();
    let initrd = uki::pcr_reporting_initrd(&std::fs::read(&assets.busybox).unwrap(), &[]);
    let a = build(&assets, &[(".cmdline", b"console=ttyS0 quiet"), (".linux", &kernel), (".initrd", &initrd)]);
    let b = build(&assets, &[(".cmdline", b"console=ttyS0 quieT"), (".linux", &kernel), (".initrd", &initrd)]);
    assert_eq!(
        a,
        build(&assets, &[(".cmdline", b"console=ttyS0 quiet"), (".linux", &kernel), (".initrd", &initrd)]),
        "reproducible"
    );
    let (pa, pb) = (predict(&a), predict(&b));
    let p = default_provider();
    for bank in [HashAlgorithm::Sha256, HashAlgorithm::Sha384] {
        let changed: Vec<u8> =
            boot::PREDICTED_PCRS.into_iter().filter(|&i| pa.pcr(p, bank, i) != pb.pcr(p, bank, i)).collect();
        assert_eq!(changed, [4, 9, 11], "{bank:?}");
    }
    // The generated TCG log parses with the engine's reader and replays to the predicted values in both banks.
    for prediction in [&pa, &pb] {
        let bytes = prediction.to_event_log();
        let log = EventLog::parse(&bytes).unwrap();
        assert_eq!(log.len(), prediction.events.len() + 1);
        for bank in [HashAlgorithm::Sha256, HashAlgorithm::Sha384] {
            let replay = log.replay(p, bank, false).unwrap();
            for pcr in [4u8, 9, 11] {
                assert_eq!(replay.get(usize::from(pcr)), Some(prediction.pcr(p, bank, pcr).unwrap().as_bytes()));
            }
        }
    }
    // Load options replace the command line (PCR 9) and are measured into PCR 12; through systemd-boot the
    // boot loader's Authenticode hash joins PCR 4 and PCR 12 gets the options twice.
    let uki = Uki::parse(&a, None).unwrap();
    let sd_boot = std::fs::read(uki::SYSTEMD_BOOT).ok();
    let with_options =
        boot::predict(p, &uki, &BootConfig { load_options: Some("console=ttyS0 quiet"), ..BootConfig::default() })
            .unwrap();
    assert_eq!(
        with_options.pcr(p, HashAlgorithm::Sha256, 9),
        pa.pcr(p, HashAlgorithm::Sha256, 9),
        "same text, same PCR 9"
    );
    assert_ne!(with_options.pcr(p, HashAlgorithm::Sha256, 12).unwrap().as_bytes(), [0; 32]);
    if let Some(loader) = &sd_boot {
        let via_loader = boot::predict(
            p,
            &uki,
            &BootConfig {
                boot_loader: Some(loader),
                load_options: Some("console=ttyS0 quiet"),
                ..BootConfig::default()
            },
        )
        .unwrap();
        assert_eq!(via_loader.events.iter().filter(|e| e.pcr == 12).count(), 2);
        assert_eq!(via_loader.events.iter().filter(|e| e.pcr == 4).count(), 5);
    }
}
