//! Release builds of `attest` cannot be made to trust the test roots of simulated hardware: built without the
//! cargo feature `dangerous-test-roots`, `attest verify` and `attest init` refuse `--dangerous-test-roots`
//! (exit 2) before they connect anywhere; and an SNP variant without a pinned launch is a usage error.

mod common;

use common::{attest, scratch};

#[test]
fn test_roots_and_unpinned_launches_are_refused_before_connecting() {
    let measurements = scratch("roots-measurements.json");
    std::fs::write(&measurements, format!(r#"{{"4": {{"expected": "{}", "warnOnly": true}}}}"#, "00".repeat(32)))
        .unwrap();
    let m = measurements.display().to_string();
    let dir = std::env::temp_dir();
    // Port 1 on loopback: nothing listens; a refusal must come before any connection attempt.
    // `attest verify` of `variant` at that port with these measurements, then `extra`.
    let verify = |variant: &str, extra: &[&str]| {
        let mut argv = vec!["verify", "--endpoint", "127.0.0.1:1", "--measurements", &m, "--variant", variant];
        argv.extend_from_slice(extra);
        attest(&dir, &argv)
    };
    let run = verify("aws-sev-snp", &["--dangerous-test-roots", "/nonexistent"]);
    assert_eq!(run.code, 2, "{run:?}");
    if cfg!(feature = "dangerous-test-roots") {
        assert!(run.stderr.contains("TEST-ROOTS-DO-NOT-TRUST"), "{run:?}");
    } else {
        assert!(run.stderr.contains("built without the feature dangerous-test-roots"), "{run:?}");
    }
    // An SNP variant with the default policy pins no launch measurement.
    // (The measurements' signature is waived by name: the launch check is what is tested.)
    let run = verify("gcp-sev-snp", &["--dangerously-skip-measurements-signature"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("pins no launch measurement"), "{run:?}");
    assert!(!run.stdout.contains("UNREACHABLE"), "{run:?}");
}
