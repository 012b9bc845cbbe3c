//! Release builds cannot attest with simulated hardware nor verify a join service against test roots: an
//! `attest-bootstrapper` built without the cargo feature `dangerous-test-roots` refuses a simulated SEV-SNP
//! device (`--snp-device sim:/path`) and `--dangerous-test-roots DIR` with exit 2, before it opens anything.

use std::process::Command;

#[test]
fn a_build_without_the_feature_refuses_a_simulated_device_and_test_roots() {
    for flags in [["--snp-device", "sim:/nonexistent/sev-guest.sock"], ["--dangerous-test-roots", "/nonexistent/roots"]]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_attest-bootstrapper"))
            .args(["--tpm", "swtpm:host=127.0.0.1,port=1", "--state-dir", "/nonexistent/state"])
            .args(["--init-secret-hash", "/nonexistent/hash", "--variant", "aws-sev-snp", "--disk", "key-file"])
            .args(flags)
            .output()
            .expect("run attest-bootstrapper");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if cfg!(feature = "dangerous-test-roots") {
            assert_ne!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
            assert!(stderr.contains("built without the feature dangerous-test-roots"), "{flags:?}: {stderr}");
        }
    }
}
