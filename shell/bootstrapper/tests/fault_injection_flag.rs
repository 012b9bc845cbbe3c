//! Fault injection (the crash matrix) is not reachable in production builds: an
//! `attest-bootstrapper` built without the cargo feature `fault-injection` ignores `ATTEST_FAULT_POINTS`
//! and says so; only a build with the feature announces the points armed.

use std::process::Command;

#[test]
fn a_build_without_the_feature_ignores_fault_points() {
    let out = Command::new(env!("CARGO_BIN_EXE_attest-bootstrapper"))
        .env("ATTEST_FAULT_POINTS", "lock.extended,commit.disk-set-up")
        .args(["--tpm", "swtpm:host=127.0.0.1,port=1", "--state-dir", "/nonexistent/state"])
        .args(["--init-secret-hash", "/nonexistent/hash", "--disk", "key-file"])
        .output()
        .expect("run attest-bootstrapper");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "fault-injection") {
        assert!(stderr.contains("FAULT INJECTION ARMED"), "{stderr}");
    } else {
        assert!(
            stderr.contains("ATTEST_FAULT_POINTS is set but this build has no fault injection: ignored"),
            "{stderr}"
        );
        assert!(!stderr.contains("ARMED"), "{stderr}");
    }
}
