//! The only builds that trust the test roots of simulated hardware, or honour fault-injection points, are the
//! ones asked for on the command line: no workspace manifest turns on the `dangerous-test-roots` feature of a
//! binary crate (the join service, the CLI, the bootstrapper) or the `fault-injection` one (the bootstrapper,
//! the join and key services), so `cargo build --release --workspace` — where Cargo unifies the
//! features every member asks of another — still builds binaries that refuse test roots. (The harnesses'
//! requests for `attest-kds/dangerous-test-roots` and `attest-attester/simulated-hardware` may be unified
//! into such a build: the binaries gate trust and simulated devices on their *own* feature.)

use std::process::Command;

/// Crates whose `dangerous-test-roots` feature makes a binary trust test roots or simulated hardware.
const GATED: &[&str] = &["attest-joinservice", "attest-cli", "attest-bootstrapper"];

/// Crates whose `fault-injection` feature makes a binary honour `ATTEST_FAULT_POINTS` (stop at a named step
/// for the crash matrix to kill it there).
const FAULT_GATED: &[&str] = &["attest-bootstrapper", "attest-joinservice", "attest-keyservice"];

fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(repo)
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

/// No manifest turns `feature` of a crate in `gated` on: not by default, not as a dependency, not through a
/// feature of another crate.
fn never_enabled(meta: &serde_json::Value, feature: &str, gated: &[&str]) {
    let mut gated_seen = 0;
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().unwrap_or_default();
        if gated.contains(&name) {
            gated_seen += 1;
            let features = &package["features"];
            assert!(features.get(feature).is_some(), "{name} has no {feature} feature");
            assert!(
                !features["default"].as_array().is_some_and(|d| d.iter().any(|f| f == feature)),
                "{name} enables {feature} by default"
            );
        }
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let target = dep["name"].as_str().unwrap_or_default();
            if !gated.contains(&target) {
                continue;
            }
            let features: Vec<&str> =
                dep["features"].as_array().map(|f| f.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
            assert!(
                !features.contains(&feature),
                "{name} turns on {target}/{feature}: a workspace build would have it"
            );
        }
        // A feature of another crate that forwards to a gated crate's feature counts too.
        for (f, enables) in package["features"].as_object().into_iter().flatten() {
            for e in enables.as_array().into_iter().flatten().filter_map(|v| v.as_str()) {
                let forwards = gated.iter().any(|g| e == format!("{g}/{feature}"));
                assert!(!forwards, "{name}'s feature {f} turns on {e}");
            }
        }
    }
    assert_eq!(gated_seen, gated.len(), "every gated crate is in the workspace");
}

#[test]
fn no_manifest_enables_test_roots_in_a_binary_crate() {
    never_enabled(&metadata(), "dangerous-test-roots", GATED);
}

/// Fault injection is reachable only in builds made for the crash matrix: no manifest enables the
/// feature, and the one call that arms the points (`attest_util::fault::arm_from_env`) sits under
/// `#[cfg(feature = "fault-injection")]` wherever it appears in the product's sources.
#[test]
fn fault_injection_is_armed_only_by_builds_with_its_feature() {
    never_enabled(&metadata(), "fault-injection", FAULT_GATED);
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut calls = 0;
    for dir in ["shell", "engine", "ffi", "proto", "measurements"] {
        let mut stack = vec![repo.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n != "target") {
                        stack.push(path);
                    }
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || path.ends_with("util/src/fault.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("source");
                let lines: Vec<&str> = text.lines().collect();
                for (i, line) in lines.iter().enumerate() {
                    if line.contains("fault::arm_from_env(") {
                        calls += 1;
                        let gate = i.checked_sub(1).map(|j| lines[j].trim());
                        assert_eq!(
                            gate,
                            Some("#[cfg(feature = \"fault-injection\")]"),
                            "{}:{}: arming fault injection outside the feature",
                            path.display(),
                            i + 1
                        );
                    }
                }
            }
        }
    }
    assert_eq!(calls, FAULT_GATED.len(), "one gated arming call per binary crate");
}
