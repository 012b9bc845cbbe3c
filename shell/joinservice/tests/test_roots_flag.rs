//! Release builds cannot be made to trust the test roots of simulated hardware, nor to attest with simulated
//! hardware: a `join-service` built without the cargo feature `dangerous-test-roots` refuses
//! `--dangerous-test-roots` and `--snp-device sim:/path` with exit 2 before it reads anything. (Built with the
//! feature, the same command gets as far as loading its configuration.)

use std::process::Command;

#[test]
fn a_build_without_the_feature_refuses_test_roots_and_a_simulated_device() {
    let dir = std::env::temp_dir().join(format!("attest-no-test-roots-{}", std::process::id()));
    let roots = ["--dangerous-test-roots".to_owned(), dir.display().to_string()];
    let device = ["--snp-device".to_owned(), "sim:/nonexistent/sev-guest.sock".to_owned()];
    for flags in [roots, device] {
        let out = Command::new(env!("CARGO_BIN_EXE_join-service"))
            .args(["--measurements", "m.json", "--measurement-salt", "salt", "--ak-registry", "aks.json"])
            .args(["--pki-dir", "pki", "--api-server-endpoint", "127.0.0.1:6443", "--kubernetes-config", "k.json"])
            .args(["--tpm", "swtpm:host=127.0.0.1,port=1", "--key-service-ca", "ca.crt"])
            .args(["--key-service-cert", "js.crt", "--key-service-key", "js.key"])
            .args(&flags)
            .output()
            .expect("run join-service");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if cfg!(feature = "dangerous-test-roots") {
            // The files do not exist: a configuration error, after the flag was accepted.
            assert_eq!(out.status.code(), Some(3), "{flags:?}: {stderr}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
            assert!(stderr.contains("built without the feature dangerous-test-roots"), "{flags:?}: {stderr}");
            assert!(!stderr.contains("configuration loaded"), "{flags:?}: {stderr}");
        }
    }
}
