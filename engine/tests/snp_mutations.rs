//! Generated negative tests (ring's bit-flip loop): every single-bit change of a real report or of a real
//! VCEK's TBSCertificate is rejected; every truncation and extension is refused by length; every reserved
//! byte, unknown version, signature algorithm and signing key is caught by the structural checks even when the
//! report is correctly signed (synthetic reports re-signed with the test PKI).

mod common;

use attest_engine::UnixTime;
use attest_engine::error::Error;
use attest_engine::snp::{REPORT_SIZE, Report, SnpPolicy, SnpRequest, SnpVerifier};
use attest_test_support::{Leaf, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki};
use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

fn lenient() -> SnpPolicy {
    SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() }
}

/// A real report that verifies, with what it needs.
struct Real {
    name: &'static str,
    report: Vec<u8>,
    leaf: Vec<u8>,
    time: UnixTime,
    policy: SnpPolicy,
}

impl Real {
    fn request<'a>(&'a self, report: &'a [u8]) -> SnpRequest<'a> {
        SnpRequest::new(report, &self.leaf, self.time)
    }
}

fn constellation_azure(dir: &Path) -> Real {
    Real {
        name: "constellation-azure-snp",
        report: common::read(dir, "constellation-azure-snp/attestation.bin")[..REPORT_SIZE].to_vec(),
        leaf: common::read(dir, "constellation-azure-snp/vcek.cert"),
        time: at("2025-06-01"),
        policy: SnpPolicy::default(),
    }
}

fn virtee_milan(dir: &Path) -> Real {
    let hex_text = String::from_utf8(common::read(dir, "virtee-sev/report_milan.hex")).unwrap();
    Real {
        name: "virtee-sev",
        report: hex::decode(hex_text.trim()).unwrap(),
        leaf: common::read(dir, "virtee-sev/vcek_milan.der"),
        time: at("2025-01-01"),
        policy: SnpPolicy::default(),
    }
}

fn trustee_hcl(dir: &Path) -> Real {
    Real {
        name: "trustee-az-snp-vtpm",
        report: common::read(dir, "trustee-az-snp-vtpm/hcl-report.bin")[32..32 + REPORT_SIZE].to_vec(),
        leaf: common::certs(dir, "trustee-az-snp-vtpm/vcek.pem").remove(0),
        time: at("2025-01-01"),
        policy: lenient(),
    }
}

fn aws_vlek(dir: &Path) -> Real {
    Real {
        name: "constellation-aws-snp",
        report: common::read(dir, "constellation-aws-snp/report.bin")[..REPORT_SIZE].to_vec(),
        leaf: common::certs(dir, "constellation-aws-snp/vlek.pem").remove(0),
        time: at("2025-06-01"),
        policy: lenient(),
    }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get().min(8))
}

/// Runs `check(i)` for every `i` in `0..n`, spread over a few threads.
fn par_for(n: usize, check: impl Fn(usize) + Sync) {
    let chunk = n.div_ceil(threads());
    std::thread::scope(|s| {
        for start in (0..n).step_by(chunk.max(1)) {
            let check = &check;
            s.spawn(move || (start..(start + chunk).min(n)).for_each(check));
        }
    });
}

/// Flips every bit of the 0x4A0 bytes and checks each mutant is rejected, through one verifier so the
/// leaf's chain is verified once.
fn flip_every_report_bit(real: &Real) {
    let verifier = SnpVerifier::new();
    let ok = verifier.verify(&real.request(&real.report), &real.policy);
    assert!(ok.is_ok(), "{}: the unmodified report must verify: {:?}", real.name, ok.err());
    par_for(REPORT_SIZE * 8, |i| {
        let (byte, bit) = (i / 8, i % 8);
        let mut mutant = real.report.clone();
        mutant[byte] ^= 1 << bit;
        let Err(err) = verifier.verify(&real.request(&mutant), &real.policy) else {
            panic!("{}: flipping bit {bit} of byte {byte:#05x} was accepted", real.name)
        };
        // Outside the signed region the structural checks and the signature decide; name which.
        let expected = match byte {
            0x2A0..0x2D0 | 0x2E8..0x318 => Some(Error::ReportSignatureInvalid),
            0x2D0..0x2E8 => Some(Error::ReservedNonZero { field: "signature R above 384 bits", offset: 0x2D0 }),
            0x318..0x330 => Some(Error::ReservedNonZero { field: "signature S above 384 bits", offset: 0x318 }),
            0x330.. => Some(Error::ReservedNonZero { field: "signature reserved", offset: 0x330 }),
            _ => None,
        };
        if let Some(want) = expected {
            assert_eq!(err, want, "{}: bit {bit} of byte {byte:#05x}", real.name);
        }
    });
    // Still warm and still accepting the original afterwards.
    assert!(verifier.verify(&real.request(&real.report), &real.policy).unwrap().cache_hit());
}

#[test]
fn constellation_azure_every_bit_flip_rejected() {
    let Some(dir) = common::testdata() else { return };
    flip_every_report_bit(&constellation_azure(&dir));
}

#[test]
fn virtee_milan_every_bit_flip_rejected() {
    let Some(dir) = common::testdata() else { return };
    flip_every_report_bit(&virtee_milan(&dir));
}

#[test]
fn trustee_hcl_every_bit_flip_rejected() {
    let Some(dir) = common::testdata() else { return };
    flip_every_report_bit(&trustee_hcl(&dir));
}

#[test]
fn aws_vlek_every_bit_flip_rejected() {
    let Some(dir) = common::testdata() else { return };
    flip_every_report_bit(&aws_vlek(&dir));
}

#[test]
fn every_truncation_and_extension_rejected_by_length() {
    let Some(dir) = common::testdata() else { return };
    let real = constellation_azure(&dir);
    let verifier = SnpVerifier::new();
    verifier.verify(&real.request(&real.report), &real.policy).unwrap();
    for len in 0..REPORT_SIZE {
        let want = Error::Truncated { structure: "ATTESTATION_REPORT", needed: REPORT_SIZE, found: len };
        assert_eq!(Report::parse(&real.report[..len]).unwrap_err(), want);
        assert_eq!(verifier.verify(&real.request(&real.report[..len]), &real.policy).unwrap_err(), want);
    }
    for extra in [1, 20, REPORT_SIZE] {
        let mut longer = real.report.clone();
        longer.resize(REPORT_SIZE + extra, 0);
        let want = Error::TrailingData { structure: "ATTESTATION_REPORT", extra };
        assert_eq!(Report::parse(&longer).unwrap_err(), want);
        assert_eq!(verifier.verify(&real.request(&longer), &real.policy).unwrap_err(), want);
    }
    // The attestation.bin file itself (report + 20-byte IGVM header) is not a report.
    let file = common::read(&dir, "constellation-azure-snp/attestation.bin");
    assert_eq!(
        Report::parse(&file).unwrap_err(),
        Error::TrailingData { structure: "ATTESTATION_REPORT", extra: file.len() - REPORT_SIZE }
    );
}

#[test]
fn every_tbs_bit_flip_of_a_real_vcek_rejected() {
    let Some(dir) = common::testdata() else { return };
    let real = virtee_milan(&dir);
    let verifier = SnpVerifier::new().with_cache_capacity(0);
    verifier.verify(&real.request(&real.report), &real.policy).unwrap();
    let cert = attest_engine::x509::Certificate::from_der(&real.leaf).unwrap();
    let tbs = cert.tbs();
    let start = tbs.as_ptr() as usize - real.leaf.as_ptr() as usize;
    let range = start..start + tbs.len();
    assert!(range.len() > 500, "{range:?}");
    par_for(range.len() * 8, |i| {
        let (byte, bit) = (range.start + i / 8, i % 8);
        let mut leaf = real.leaf.clone();
        leaf[byte] ^= 1 << bit;
        let req = SnpRequest::new(&real.report, &leaf, real.time);
        if let Ok(ok) = verifier.verify(&req, &real.policy) {
            panic!("flipping bit {bit} of VCEK byte {byte:#06x} was accepted (cache hit: {})", ok.cache_hit());
        }
    });
    assert_eq!(verifier.cached_leaves(), 0);
}

// ---- Synthetic, re-signed reports ----------------------------------------------------------------------

static PKI: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));
static LEAF: LazyLock<Leaf> = LazyLock::new(|| PKI.issue_leaf(&LeafSpec::new()));

fn test_verifier() -> SnpVerifier {
    let anchors = attest_engine::snp::OwnedTrustAnchors {
        product: attest_engine::snp::Product::Milan,
        ark: Cow::Owned(PKI.ark_der().to_vec()),
        ask: Some(Cow::Owned(PKI.ask_der().to_vec())),
        asvk: None,
    };
    SnpVerifier::with_trust_anchors(attest_engine::crypto::default_provider(), vec![anchors])
}

fn now() -> UnixTime {
    at("2025-06-01")
}

/// Verifies `report` with the test leaf; the leaf is cached after the first call.
fn verify_synthetic(v: &SnpVerifier, report: &[u8]) -> Result<(), Error> {
    v.verify(&SnpRequest::new(report, &LEAF.der, now()), &SnpPolicy::default()).map(|_| ())
}

/// `builder`'s report with `edit` applied to the unsigned bytes, then signed by the test leaf.
fn resigned(builder: &ReportBuilder, edit: impl FnOnce(&mut [u8; REPORT_SIZE])) -> [u8; REPORT_SIZE] {
    let mut r = builder.build_unsigned();
    edit(&mut r);
    LEAF.sign_report(&mut r);
    r
}

#[test]
fn every_reserved_byte_is_caught_structurally() {
    let v = test_verifier();
    // (version, reserved ranges in the signed region, the offset the error names)
    let signed: &[(u32, std::ops::Range<usize>, usize)] = &[
        (3, 0x49..0x4C, 0x48),
        (3, 0x4C..0x50, 0x4C),
        (3, 0x18B..0x1A0, 0x18B),
        (3, 0x1EB..0x1EC, 0x1EB),
        (3, 0x1EF..0x1F0, 0x1EF),
        (3, 0x1F8..0x208, 0x1F8),
        (3, 0x208..0x2A0, 0x208),
        (2, 0x188..0x18B, 0x188),
        (2, 0x1F8..0x208, 0x1F8),
        (5, 0x208..0x2A0, 0x208),
        (5, 0x18B..0x1A0, 0x18B),
    ];
    let mut checked = 0;
    for (version, range, field) in signed.iter().cloned() {
        let builder = ReportBuilder::for_leaf(&LEAF).version(version);
        verify_synthetic(&v, &builder.sign(&LEAF)).unwrap_or_else(|e| panic!("v{version} control: {e}"));
        for offset in range {
            for value in [0x01, 0x80] {
                let report = resigned(&builder, |r| r[offset] = value);
                match verify_synthetic(&v, &report) {
                    Err(Error::ReservedNonZero { offset: o, .. }) if o == field => checked += 1,
                    other => panic!("v{version} byte {offset:#05x} = {value:#04x}: {other:?}"),
                }
            }
        }
    }
    // Key info bits 31:5: bits 5..7 of byte 0x48.
    let builder = ReportBuilder::for_leaf(&LEAF);
    for bit in 5..8 {
        let report = resigned(&builder, |r| r[0x48] |= 1 << bit);
        assert_eq!(
            verify_synthetic(&v, &report),
            Err(Error::ReservedNonZero { field: "key info bits 31:5", offset: 0x48 }),
            "bit {bit}"
        );
    }
    // The unsigned tail: signature upper bytes and the reserved area, set after signing.
    let good = builder.sign(&LEAF);
    for (range, field) in [(0x2D0..0x2E8, 0x2D0), (0x318..0x330, 0x318), (0x330..REPORT_SIZE, 0x330)] {
        for offset in range {
            let mut report = good;
            report[offset] = 0x01;
            match verify_synthetic(&v, &report) {
                Err(Error::ReservedNonZero { offset: o, .. }) if o == field => checked += 1,
                other => panic!("byte {offset:#05x}: {other:?}"),
            }
        }
    }
    assert!(checked > 600, "{checked}");
    // Defined fields in the same neighbourhood are not reserved: v3 CPUID and v5 mitigation vectors.
    let report = ReportBuilder::for_leaf(&LEAF).version(5).launch_mit_vector(1).current_mit_vector(u64::MAX);
    verify_synthetic(&v, &report.sign(&LEAF)).unwrap();
}

#[test]
fn unknown_versions_are_caught_structurally() {
    let v = test_verifier();
    let builder = ReportBuilder::for_leaf(&LEAF);
    for version in [0u32, 1, 4, 6, 7, 255, 0x0100_0002, u32::MAX] {
        let report = resigned(&builder, |r| r[..4].copy_from_slice(&version.to_le_bytes()));
        assert_eq!(verify_synthetic(&v, &report), Err(Error::UnsupportedReportVersion { found: version }));
        assert_eq!(Report::parse(&report).unwrap_err(), Error::UnsupportedReportVersion { found: version });
    }
    for version in [2, 3, 5] {
        verify_synthetic(&v, &builder.clone().version(version).sign(&LEAF)).unwrap();
    }
}

#[test]
fn unknown_signature_algorithms_are_caught_structurally() {
    let v = test_verifier();
    let builder = ReportBuilder::for_leaf(&LEAF);
    for algo in [0u32, 2, 3, 0x101, 0x0001_0001, u32::MAX] {
        let report = builder.clone().signature_algo(algo).sign(&LEAF);
        assert_eq!(verify_synthetic(&v, &report), Err(Error::UnsupportedReportSignatureAlgorithm { found: algo }));
    }
}

#[test]
fn unknown_signing_keys_are_caught_structurally() {
    let v = test_verifier();
    let builder = ReportBuilder::for_leaf(&LEAF);
    for key in 2u8..=7 {
        let report = builder.clone().signing_key_raw(key).sign(&LEAF);
        assert_eq!(verify_synthetic(&v, &report), Err(Error::UnsupportedSigningKey { found: u32::from(key) }));
    }
    // AUTHOR_KEY_EN and MASK_CHIP_KEY are defined bits, not reserved ones.
    verify_synthetic(&v, &builder.clone().author_key_en(true).sign(&LEAF)).unwrap();
}
