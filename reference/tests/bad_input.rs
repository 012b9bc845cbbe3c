//! Bad input gets a typed error and never a panic: truncated PE images (at every length), overlapping and
//! oversized sections, bogus section and certificate tables, a UKI without `.linux`, firmware without SEV
//! metadata or with broken metadata.

mod common;

use attest_engine::crypto::default_provider;
use attest_reference::ovmf::MAX_METADATA_SECTIONS;
use attest_reference::pe::MAX_SECTIONS;
use attest_reference::snp::{self, SnpLaunch, Vmm};
use attest_reference::{Error, Ovmf, PeImage, SectionName, Uki};
use common::{amdsev_sections, synthetic_ovmf};

const OPT: usize = 0x98;
const TABLE: usize = OPT + 240;

/// A PE32+ image with headers of 0x200 bytes and the given (name, raw size) sections, contiguous in the
/// file and each at its own RVA; an `.sdmagic` of systemd-stub 252 when `stub`.
fn image(sections: &[(&str, usize)]) -> Vec<u8> {
    let mut b = vec![0u8; 0x200];
    b[..2].copy_from_slice(b"MZ");
    b[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    b[0x80..0x84].copy_from_slice(b"PE\0\0");
    b[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
    b[0x86..0x88].copy_from_slice(&(sections.len() as u16).to_le_bytes());
    b[0x94..0x96].copy_from_slice(&240u16.to_le_bytes());
    b[OPT..OPT + 2].copy_from_slice(&0x20bu16.to_le_bytes());
    b[OPT + 60..OPT + 64].copy_from_slice(&0x200u32.to_le_bytes());
    b[OPT + 108..OPT + 112].copy_from_slice(&16u32.to_le_bytes());
    let mut at = 0x200usize;
    for (i, (name, size)) in sections.iter().enumerate() {
        let h = TABLE + i * 40;
        b[h..h + name.len()].copy_from_slice(name.as_bytes());
        set(&mut b, h + 8, *size as u32);
        set(&mut b, h + 12, ((i + 1) * 0x100_0000) as u32);
        set(&mut b, h + 16, *size as u32);
        set(&mut b, h + 20, at as u32);
        at += size;
    }
    b.resize(at, 0x5a);
    b
}

fn set(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Appends `table` as the certificate table (data directory 4) at the end of the image.
fn append_certificate_table(b: &mut Vec<u8>, table: &[u8]) {
    let len = b.len() as u32;
    b.extend_from_slice(table);
    set(b, OPT + 112 + 32, len);
    set(b, OPT + 112 + 36, table.len() as u32);
}

fn name(s: &str) -> SectionName {
    let mut n = [0u8; 8];
    n[..s.len()].copy_from_slice(s.as_bytes());
    SectionName(n)
}

fn with_sdmagic(mut b: Vec<u8>) -> Vec<u8> {
    // Turn the first section into .sdmagic announcing systemd-stub 252.
    b[TABLE..TABLE + 8].copy_from_slice(b".sdmagic");
    let magic = b"#### LoaderInfo: systemd-stub 252.39 ####\0";
    b[0x200..0x200 + magic.len()].copy_from_slice(magic);
    b
}

#[test]
fn malformed_pe_images_get_typed_errors() {
    let good = image(&[(".text", 0x100), (".linux", 0x200)]);
    assert!(PeImage::parse(&good).is_ok());
    type Mutation = fn(&mut Vec<u8>);
    type Expected = fn(&Error) -> bool;
    let cases: Vec<(&str, Mutation, Expected)> = vec![
        ("no MZ", |b| b[0] = b'X', |e| matches!(e, Error::BadMagic { .. })),
        ("e_lfanew far away", |b| set(b, 0x3c, 1 << 20), |e| matches!(e, Error::LimitExceeded { .. })),
        ("e_lfanew past the end", |b| set(b, 0x3c, 0xfff0), |e| matches!(e, Error::Truncated { .. })),
        ("no PE signature", |b| b[0x80] = 0, |e| matches!(e, Error::BadMagic { .. })),
        ("bad optional magic", |b| b[OPT] = 0, |e| matches!(e, Error::BadMagic { .. })),
        (
            "too many sections",
            |b| b[0x86..0x88].copy_from_slice(&(MAX_SECTIONS as u16 + 1).to_le_bytes()),
            |e| matches!(e, Error::LimitExceeded { what: "PE sections", .. }),
        ),
        (
            "section table past SizeOfHeaders",
            |b| b[0x86..0x88].copy_from_slice(&8u16.to_le_bytes()),
            |e| matches!(e, Error::BadHeader { .. }),
        ),
        ("17 data directories", |b| set(b, OPT + 108, 17), |e| matches!(e, Error::LimitExceeded { .. })),
        (
            "optional header too small",
            |b| b[0x94..0x96].copy_from_slice(&100u16.to_le_bytes()),
            |e| matches!(e, Error::Truncated { what: "optional header", .. }),
        ),
        (
            "optional header without its data directories",
            |b| b[0x94..0x96].copy_from_slice(&200u16.to_le_bytes()),
            |e| matches!(e, Error::BadHeader { what: "SizeOfOptionalHeader", .. }),
        ),
        ("SizeOfHeaders past the end", |b| set(b, OPT + 60, 0x10_0000), |e| matches!(e, Error::Truncated { .. })),
        (
            "oversized section",
            |b| set(b, TABLE + 40 + 16, 0x10_0000),
            |e| matches!(e, Error::SectionOutOfBounds { section, .. } if *section == name(".linux")),
        ),
        (
            "section inside the headers",
            |b| set(b, TABLE + 20, 0x100),
            |e| matches!(e, Error::SectionOutOfBounds { .. }),
        ),
        (
            "sections overlapping in the file",
            |b| set(b, TABLE + 40 + 20, 0x280),
            |e| matches!(e, Error::OverlappingSections { space: "file", .. }),
        ),
        (
            "sections overlapping in memory",
            |b| set(b, TABLE + 40 + 12, 0x100_0080),
            |e| matches!(e, Error::OverlappingSections { space: "memory", .. }),
        ),
        ("huge VirtualSize", |b| set(b, TABLE + 8, 0x8000_0000), |e| matches!(e, Error::LimitExceeded { .. })),
        (
            "certificate table not at the end",
            |b| {
                set(b, OPT + 112 + 32, 0x200);
                set(b, OPT + 112 + 36, 0x10);
            },
            |e| matches!(e, Error::BadCertificateTable { .. }),
        ),
        (
            "certificate table misaligned",
            |b| {
                let len = b.len() as u32;
                b.extend_from_slice(&[0; 16]);
                set(b, OPT + 112 + 32, len - 4);
                set(b, OPT + 112 + 36, 20);
            },
            |e| matches!(e, Error::BadCertificateTable { .. }),
        ),
        (
            "certificate table over a section",
            |b| {
                let len = b.len() as u32;
                set(b, OPT + 112 + 32, len - 0x100);
                set(b, OPT + 112 + 36, 0x100);
            },
            |e| matches!(e, Error::BadCertificateTable { .. }),
        ),
        (
            "WIN_CERTIFICATE with a bogus length",
            |b| append_certificate_table(b, &[0xff, 0xff, 0, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            |e| matches!(e, Error::BadCertificateTable { .. }),
        ),
        (
            "WIN_CERTIFICATE of an unknown revision",
            |b| append_certificate_table(b, &[16, 0, 0, 0, 0x99, 0x99, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            |e| matches!(e, Error::BadCertificateTable { .. }),
        ),
    ];
    for (what, mutate, expected) in cases {
        let mut b = good.clone();
        mutate(&mut b);
        let e = PeImage::parse(&b).expect_err(what);
        assert!(expected(&e), "{what}: {e:?}");
        assert!(!e.to_string().is_empty());
    }
    // A well-formed certificate table is accepted and left out of the hash.
    let mut signed = good.clone();
    append_certificate_table(&mut signed, &[16, 0, 0, 0, 0, 2, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let pe = PeImage::parse(&signed).unwrap();
    assert_eq!(pe.certificate_table(), Some((good.len(), 16)));
    let p = default_provider();
    let unsigned = PeImage::parse(&good).unwrap();
    assert_eq!(
        pe.authenticode(p, attest_engine::crypto::HashAlgorithm::Sha256),
        unsigned.authenticode(p, attest_engine::crypto::HashAlgorithm::Sha256),
        "only the directory entry and the table differ, and neither is hashed"
    );
}

#[test]
fn truncated_at_every_length_is_an_error_not_a_panic() {
    let good = image(&[(".text", 0x40), (".linux", 0x80)]);
    for len in 0..good.len() {
        assert!(PeImage::parse(&good[..len]).is_err(), "accepted a truncation to {len} bytes");
    }
}

#[test]
fn uki_needs_linux_and_a_known_stub() {
    let no_linux = with_sdmagic(image(&[(".text", 0x100), (".cmdline", 0x20)]));
    assert_eq!(Uki::parse(&no_linux, None).unwrap_err(), Error::MissingSection { name: ".linux" });
    let known = with_sdmagic(image(&[(".text", 0x100), (".linux", 0x20)]));
    assert!(Uki::parse(&known, None).is_ok());
    let no_magic = image(&[(".text", 0x100), (".linux", 0x20)]);
    assert!(matches!(Uki::parse(&no_magic, None), Err(Error::UnsupportedStub { .. })));
    let mut newer = known.clone();
    newer[0x200 + 30..0x200 + 33].copy_from_slice(b"257");
    assert!(matches!(Uki::parse(&newer, None), Err(Error::UnsupportedStub { found }) if found.contains("257")));
    // A .linux that is no kernel PE: typed error from the prediction, not a panic.
    let uki = Uki::parse(&known, None).unwrap();
    let e = attest_reference::predict(default_provider(), &uki, &attest_reference::BootConfig::default()).unwrap_err();
    assert!(matches!(e, Error::BadMagic { .. } | Error::Truncated { .. }), "{e:?}");
}

#[test]
fn firmware_metadata_errors_are_typed() {
    let launch = |bytes: &[u8]| -> Result<[u8; 48], Error> {
        let ovmf = Ovmf::parse(bytes)?;
        let l = SnpLaunch {
            ovmf: &ovmf,
            vcpus: 1,
            vcpu_signature: 0,
            guest_features: 1,
            vmm: Vmm::Qemu,
            kernel_hashes: None,
        };
        snp::launch_digest(default_provider(), &l, 1).map(|d| d.measurement)
    };
    assert!(launch(&synthetic_ovmf(1 << 20, &amdsev_sections(), 0)).is_ok());
    assert_eq!(launch(&vec![0u8; 1 << 20]), Err(Error::MissingFirmwareEntry { what: "SEV metadata" }));
    assert!(matches!(launch(&[0u8; 1000]), Err(Error::BadFirmwareMetadata { .. })));
    let overlapping = synthetic_ovmf(1 << 20, &[(0x80_0000, 0x2000, 1), (0x80_1000, 0x1000, 2)], 0);
    assert_eq!(launch(&overlapping), Err(Error::BadFirmwareMetadata { reason: "SEV metadata sections overlap" }));
    let unknown_type = synthetic_ovmf(1 << 20, &[(0x80_0000, 0x1000, 9)], 0);
    assert!(matches!(launch(&unknown_type), Err(Error::BadFirmwareMetadata { .. })));
    let unaligned = synthetic_ovmf(1 << 20, &[(0x80_0010, 0x1000, 1)], 0);
    assert!(matches!(launch(&unaligned), Err(Error::BadFirmwareMetadata { .. })));
    let many: Vec<(u32, u32, u32)> =
        (0..=MAX_METADATA_SECTIONS as u32).map(|i| (0x80_0000 + i * 0x1000, 0x1000, 1)).collect();
    assert!(matches!(launch(&synthetic_ovmf(1 << 20, &many, 0)), Err(Error::LimitExceeded { .. })));
    let mut bad_magic = synthetic_ovmf(1 << 20, &amdsev_sections(), 0);
    let at = bad_magic.len() - 0x1000;
    bad_magic[at] = b'X';
    assert!(matches!(launch(&bad_magic), Err(Error::BadMagic { .. })));
    let ovmf = synthetic_ovmf(1 << 20, &amdsev_sections(), 0);
    let o = Ovmf::parse(&ovmf).unwrap();
    let zero_vcpus =
        SnpLaunch { ovmf: &o, vcpus: 0, vcpu_signature: 0, guest_features: 1, vmm: Vmm::Qemu, kernel_hashes: None };
    assert!(matches!(snp::launch_digest(default_provider(), &zero_vcpus, 1), Err(Error::InvalidArgument { .. })));
}

#[test]
fn the_committed_fuzz_seeds_parse() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let uki = std::fs::read(root.join("pe_image/uki-252")).unwrap();
    assert_eq!(Uki::parse(&uki, None).unwrap().measured_sections().len(), 4);
    let signed = std::fs::read(root.join("pe_image/signed")).unwrap();
    assert!(PeImage::parse(&signed).unwrap().certificate_table().is_some());
    let fw = std::fs::read(root.join("ovmf_metadata/sev-and-tdvf")).unwrap();
    let o = Ovmf::parse(&fw).unwrap();
    assert_eq!(o.sev_sections().unwrap().len(), 2);
    assert_eq!(o.tdvf_sections().unwrap().len(), 1);
    assert!(attest_reference::tdx::mrtd(default_provider(), &o).is_ok());
}
