//! Launch measurements of the SNP-based variants are pinned by default: a validator whose SNP policy pins no
//! launch refuses every document (and tells a service so at start, `Validator::launch_pinning`), unless the
//! policy sets the named waiver `dangerous_allow_unpinned_launch`, which every validation then reports.

use super::*;

const GOOD: [u8; 48] = [0x4D; 48];
const OTHER: [u8; 48] = [0x4E; 48];
const ID_KEY: [u8; 48] = [0x1D; 48];

fn snp_validator(variant: Variant, policy: SnpPolicy) -> Validator {
    Validator::new(variant, Arc::clone(&VERIFIER), policy, PcrPolicy::default())
}

/// A valid document of `variant` whose report carries MEASUREMENT `measurement` and ID_KEY_DIGEST `id_key`.
fn document(variant: Variant, measurement: [u8; 48], id_key: [u8; 48]) -> Evidence {
    let leaf = if variant == Variant::AwsSevSnp { &*VLEK } else { &*VCEK };
    let report = ReportBuilder::for_leaf(leaf)
        .mask_chip_key(leaf.kind == SigningKeyKind::Vlek)
        .measurement(measurement)
        .id_key_digest(id_key);
    if variant == Variant::AzureSevSnp {
        let json = runtime_json(&[&RSA_AK.jwk()]);
        let report = report.report_data(hcl_report_data(&json)).sign(&VCEK);
        Evidence { hcl_report: hcl_report(&report, &json), ..azure_evidence(&[&RSA_AK.jwk()], &RSA_AK) }
    } else {
        snp_evidence(variant, &RSA_AK, leaf, report)
    }
}

const SNP_VARIANTS: [Variant; 3] = [Variant::AzureSevSnp, Variant::AwsSevSnp, Variant::GcpSevSnp];

#[test]
fn snp_variants_without_a_pinned_launch_refuse_to_start_and_to_validate() {
    for variant in SNP_VARIANTS {
        let v = snp_validator(variant, SnpPolicy::default());
        assert_eq!(v.launch_pinning(), Err(Error::LaunchUnpinned), "{variant}");
        // A document that is fine in every other respect.
        assert_eq!(document(variant, GOOD, [0; 48]).reject(&v, NONCE), Error::LaunchUnpinned, "{variant}");
        // Other SNP checks configured, but nothing that pins the launch: still refused.
        let busy = SnpPolicy { host_data: Some(Hex([0; 32])), min_guest_svn: Some(0), ..SnpPolicy::default() };
        assert_eq!(snp_validator(variant, busy).launch_pinning(), Err(Error::LaunchUnpinned), "{variant}");
    }
    // qemu-vtpm has no SNP launch to pin.
    let qemu = qemu_validator(registry(), PcrPolicy::default());
    assert_eq!(qemu.launch_pinning(), Ok(LaunchPinning::NotApplicable));
    assert_eq!(
        Evidence::tpm(Variant::QemuVtpm, &RSA_AK).validate(&qemu, NONCE).unwrap().launch,
        LaunchPinning::NotApplicable
    );
}

#[test]
fn a_pinned_measurement_admits_only_that_launch() {
    for variant in SNP_VARIANTS {
        let v = snp_validator(variant, SnpPolicy { measurements: vec![Hex(GOOD)], ..SnpPolicy::default() });
        assert_eq!(v.launch_pinning(), Ok(LaunchPinning::Measurement));
        let ok = document(variant, GOOD, [0; 48]).validate(&v, NONCE).unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert_eq!(ok.launch, LaunchPinning::Measurement);
        assert_eq!(ok.measurement_check, Some(attest_engine::Outcome::Passed));
        assert_eq!(
            document(variant, OTHER, [0; 48]).reject(&v, NONCE),
            Error::Policy(PolicyViolation {
                check: Check::Measurement,
                expected: Value::OneOf(1),
                found: Value::Bytes(Bytes::new(&OTHER))
            }),
            "{variant}"
        );
    }
}

#[test]
fn an_id_key_pin_admits_launches_signed_by_that_key() {
    for variant in SNP_VARIANTS {
        let v = snp_validator(variant, SnpPolicy { id_key_digests: vec![Hex(ID_KEY)], ..SnpPolicy::default() });
        assert_eq!(v.launch_pinning(), Ok(LaunchPinning::IdKey));
        let ok = document(variant, OTHER, ID_KEY).validate(&v, NONCE).unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert_eq!(ok.launch, LaunchPinning::IdKey);
        // No ID block (ID_KEY_DIGEST zero), or another key's.
        for found in [[0; 48], [0x1E; 48]] {
            assert!(
                matches!(
                    document(variant, OTHER, found).reject(&v, NONCE),
                    Error::Policy(PolicyViolation { check: Check::IdKeyDigest, .. })
                ),
                "{variant}"
            );
        }
    }
}

#[test]
fn the_named_waiver_admits_an_unpinned_launch_and_every_validation_reports_it() {
    let waived = SnpPolicy::from_toml("dangerous_allow_unpinned_launch = true").unwrap();
    for variant in SNP_VARIANTS {
        let v = snp_validator(variant, waived.clone());
        assert_eq!(v.launch_pinning(), Ok(LaunchPinning::DangerouslyUnpinned));
        for measurement in [GOOD, OTHER, GOOD] {
            let ok = document(variant, measurement, [0; 48]).validate(&v, NONCE).unwrap();
            assert_eq!(ok.launch, LaunchPinning::DangerouslyUnpinned, "{variant}");
            assert_eq!(ok.measurement_check, Some(attest_engine::Outcome::Waived), "{variant}");
        }
    }
}
