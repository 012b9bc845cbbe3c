//! The only builds that trust the test roots of simulated hardware are the ones asked for on the command
//! line: no workspace manifest turns on the `dangerous-test-roots` feature of a binary crate (the join
//! service, the CLI, the bootstrapper), so `cargo build --release --workspace` — where Cargo unifies the
//! features every member asks of another — still builds binaries that refuse test roots. (The harnesses'
//! requests for `attest-kds/dangerous-test-roots` and `attest-attester/simulated-hardware` may be unified
//! into such a build: the binaries gate trust and simulated devices on their *own* feature.)

use std::process::Command;

/// Crates whose `dangerous-test-roots` feature makes a binary trust test roots or simulated hardware.
const GATED: &[&str] = &["attest-joinservice", "attest-cli", "attest-bootstrapper"];

#[test]
fn no_manifest_enables_test_roots_in_a_binary_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(repo)
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let mut gated_seen = 0;
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().unwrap_or_default();
        if GATED.contains(&name) {
            gated_seen += 1;
            let features = &package["features"];
            assert!(features.get("dangerous-test-roots").is_some(), "{name} has no dangerous-test-roots feature");
            assert!(
                !features["default"].as_array().is_some_and(|d| d.iter().any(|f| f == "dangerous-test-roots")),
                "{name} enables dangerous-test-roots by default"
            );
        }
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let target = dep["name"].as_str().unwrap_or_default();
            if !GATED.contains(&target) {
                continue;
            }
            let features: Vec<&str> =
                dep["features"].as_array().map(|f| f.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
            assert!(
                !features.contains(&"dangerous-test-roots"),
                "{name} turns on {target}/dangerous-test-roots: a workspace build would trust test roots"
            );
        }
        // A feature of another crate that forwards to a gated crate's feature counts too.
        for (feature, enables) in package["features"].as_object().into_iter().flatten() {
            for e in enables.as_array().into_iter().flatten().filter_map(|v| v.as_str()) {
                let forwards = GATED.iter().any(|g| e == format!("{g}/dangerous-test-roots"));
                assert!(!forwards, "{name}'s feature {feature} turns on {e}");
            }
        }
    }
    assert_eq!(gated_seen, GATED.len(), "every gated crate is in the workspace");
}
