//! RTMR prediction against a real TD's CC event log (Google's COS 113 TD, `go-tdx-guest/ccel`): the
//! firmware's own RTMR1 events — the boot-option action, the separator, the boot disk's GPT and the two
//! exit-boot-services actions — are predicted digest for digest and data for data (the disk rebuilt from
//! the GPT the TD measured), in the same order around the boot applications; the predicted CC log replays
//! through the engine's CCEL replay to the predicted RTMRs. That TD booted shim and GRUB, so its
//! applications' hashes are not ours to compare: no real TD boot of a known UKI was available. A newer
//! OVMF's log (trustee's sample) shows what is not modelled.

use attest_engine::crypto::default_provider;
use attest_engine::tdx::ccel::{self, CcelTable};
use attest_engine::tpm::eventlog::{AlgorithmId, EventLog};
use attest_reference::boot::{BootConfig, event_type};
use attest_reference::cpio::EspFile;
use attest_reference::tdx::{self, cc_index};
use attest_reference::{Error, Uki, pe};
use attest_test_support::{testdata, uki};

/// A raw disk image holding the GPT a firmware measured (`UEFI_GPT_DATA`): the header at LBA 1, the used
/// entries from its PartitionEntryLBA on, the rest of the array zero.
fn disk_from_gpt_event(data: &[u8]) -> Vec<u8> {
    let header = &data[..92];
    let used = u64::from_le_bytes(data[92..100].try_into().unwrap()) as usize;
    let entry_lba = u64::from_le_bytes(header[72..80].try_into().unwrap()) as usize;
    let count = u32::from_le_bytes(header[80..84].try_into().unwrap()) as usize;
    let size = u32::from_le_bytes(header[84..88].try_into().unwrap()) as usize;
    let mut disk = vec![0u8; entry_lba * 512 + count * size + 512];
    disk[512..604].copy_from_slice(header);
    disk[entry_lba * 512..entry_lba * 512 + used * size].copy_from_slice(&data[100..100 + used * size]);
    disk
}

#[test]
fn firmware_events_and_structure_match_a_real_td_ccel() {
    let Some(dir) = testdata::dir() else { return };
    let Some(assets) = uki::assets() else { return };
    let p = default_provider();
    let area = testdata::read(&dir, "go-tdx-guest/ccel/ccel_data.dat");
    let table = CcelTable::parse(&testdata::read(&dir, "go-tdx-guest/ccel/ccel_table.dat")).unwrap();
    let written = ccel::written_log(p, &table, &area).unwrap();
    // The engine reads a CC log's events with its TCG log reader once the header's register index (TDVF
    // writes 1) is a TCG log's PCR 0; every other byte is the firmware's.
    assert_eq!(&written[..8], [1, 0, 0, 0, 3, 0, 0, 0], "the CCEL header: index 1, EV_NO_ACTION");
    let mut as_tcg = written.to_vec();
    as_tcg[0] = 0;
    let log = EventLog::parse(&as_tcg).unwrap();
    let real: Vec<(u32, Vec<u8>, Vec<u8>)> = log
        .events()
        .filter(|e| e.pcr_index() == u32::from(cc_index(1)) && e.is_extended())
        .map(|e| (e.event_type().0, e.digest(AlgorithmId::SHA384).unwrap().to_vec(), e.data().to_vec()))
        .collect();
    let gpt = real.iter().find(|e| e.0 == event_type::EFI_GPT_EVENT).expect("the TD measured its disk's GPT");
    let disk = disk_from_gpt_event(&gpt.2);

    let kernel = std::fs::read(&assets.kernel).unwrap();
    let mut image = uki::objcopy_uki(
        &assets.stub,
        &[(".osrel", b"ID=attest-test\n"), (".cmdline", b"console=ttyS0"), (".linux", &kernel)],
    );
    pe::set_timestamp(&mut image, 0).unwrap();
    let u = Uki::parse(&image, None).unwrap();
    let loader = std::fs::read(uki::SYSTEMD_BOOT).ok();
    let config = BootConfig { boot_loader: loader.as_deref(), threads: 2, ..BootConfig::default() };
    let predicted = tdx::predict_rtmrs(p, &u, &config, Some(&disk)).unwrap();

    // Every predicted event is in RTMR1; the firmware's (all but the applications) equal the real ones.
    assert!(predicted.events.iter().all(|e| e.pcr == cc_index(1)));
    let is_app = |t: u32| t == event_type::EFI_BOOT_SERVICES_APPLICATION;
    let firmware = |events: Vec<(u32, Vec<u8>, Vec<u8>)>| -> Vec<(u32, Vec<u8>, Vec<u8>)> {
        events.into_iter().filter(|e| !is_app(e.0)).collect()
    };
    let ours: Vec<(u32, Vec<u8>, Vec<u8>)> =
        predicted.events.iter().map(|e| (e.event_type, e.digests[0].as_bytes().to_vec(), e.data.clone())).collect();
    assert_eq!(firmware(ours.clone()), firmware(real.clone()), "the firmware's RTMR1 events");
    // Same shape: three firmware events, the applications, two firmware events.
    let shape = |events: &[(u32, Vec<u8>, Vec<u8>)]| -> Vec<bool> { events.iter().map(|e| is_app(e.0)).collect() };
    let apps = |n| [vec![false; 3], vec![true; n], vec![false; 2]].concat();
    assert_eq!(shape(&real), apps(2), "the real TD: shim, GRUB");
    assert_eq!(shape(&ours), apps(3), "predicted: systemd-boot, the UKI, its kernel");

    // RTMR2 is untouched (stub 252 and Linux 6.1 measure through the TCG2 protocol only); the predicted CC
    // log replays through the engine to the predicted RTMR1.
    assert_eq!(predicted.rtmr(p, 2), [0; 48]);
    let cc_log = predicted.to_cc_event_log();
    assert_eq!(&cc_log[..8], &written[..8], "the header as TDVF writes it");
    let replay = ccel::replay(p, &cc_log).unwrap();
    assert_eq!(replay.touched, 0b10);
    assert_eq!(replay.rtmrs[1], predicted.rtmr(p, 1));

    // Without the disk there is no GPT event and RTMR1 differs; what stub 252 would leave unmeasured in a TD
    // is refused.
    let no_gpt = tdx::predict_rtmrs(p, &u, &config, None).unwrap();
    assert_eq!(no_gpt.events.len(), predicted.events.len() - 1);
    assert_ne!(no_gpt.rtmr(p, 1), predicted.rtmr(p, 1));
    let cred = [EspFile { name: "a.cred", data: b"x" }];
    for refused in [
        BootConfig { credentials: cred.to_vec(), ..BootConfig::default() },
        BootConfig { sysexts: vec![EspFile { name: "a.raw", data: b"x" }], ..BootConfig::default() },
        BootConfig { load_options: Some("console=ttyS0"), ..BootConfig::default() },
    ] {
        assert!(matches!(tdx::predict_rtmrs(p, &u, &refused, None), Err(Error::Unsupported { .. })));
    }
}

/// A newer OVMF's CC event log (trustee's sample: a direct kernel boot, no quote to replay against) shows
/// what is not modelled, so that it stays refused or documented rather than guessed: its kernel (6.9 or
/// later) measures its command line and initrd into RTMR2 as the very tagged events a kernel logs into
/// PCR 9 with a TPM (same event data as predicted for PCR 9), and this firmware build logs RTMR1's
/// separator into RTMR0 instead — RTMR1's separator depends on the TDVF build. Its exit-boot-services
/// events are the predicted ones.
#[test]
fn a_newer_ovmf_log_shows_what_is_not_modelled() {
    let Some(dir) = testdata::dir() else { return };
    let Some(assets) = uki::assets() else { return };
    let p = default_provider();
    let area = testdata::read(&dir, "trustee-tdx/CCEL_data_ovmf");
    let len = ccel::replay(p, &area).unwrap().log_len;
    let mut as_tcg = area[..len].to_vec();
    assert_eq!(as_tcg[0], 1, "TDVF writes the header at index 1");
    as_tcg[0] = 0;
    let log = EventLog::parse(&as_tcg).unwrap();
    let of = |index: u8| -> Vec<(u32, Vec<u8>, Vec<u8>)> {
        log.events()
            .filter(|e| e.pcr_index() == u32::from(index) && e.is_extended())
            .map(|e| (e.event_type().0, e.digest(AlgorithmId::SHA384).unwrap().to_vec(), e.data().to_vec()))
            .collect()
    };
    let kernel = std::fs::read(&assets.kernel).unwrap();
    let image =
        uki::objcopy_uki(&assets.stub, &[(".cmdline", b"console=ttyS0"), (".linux", &kernel), (".initrd", b"x")]);
    let u = Uki::parse(&image, None).unwrap();
    let boot = attest_reference::boot::predict(p, &u, &BootConfig::default()).unwrap();
    let pcr9: Vec<(u32, Vec<u8>)> =
        boot.events.iter().filter(|e| e.pcr == 9).map(|e| (e.event_type, e.data.clone())).collect();
    let rtmr2: Vec<(u32, Vec<u8>)> = of(cc_index(2)).into_iter().map(|e| (e.0, e.2)).collect();
    assert_eq!(rtmr2, pcr9, "the kernel's tagged events in RTMR2 are PCR 9's");
    let rtmr1 = of(cc_index(1));
    assert!(rtmr1.iter().all(|e| e.0 != event_type::SEPARATOR), "no separator in this build's RTMR1");
    let predicted = tdx::predict_rtmrs(p, &u, &BootConfig::default(), None).unwrap();
    let tail = |events: &[(u32, Vec<u8>, Vec<u8>)]| events[events.len() - 2..].to_vec();
    let ours: Vec<(u32, Vec<u8>, Vec<u8>)> =
        predicted.events.iter().map(|e| (e.event_type, e.digests[0].as_bytes().to_vec(), e.data.clone())).collect();
    assert_eq!(tail(&rtmr1), tail(&ours), "the exit-boot-services events");
}
