//! Helpers shared by the integration tests: the testdata directory (`attest_test_support::testdata`) and
//! running the `attest` binary.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The testdata directory (`None` with a notice when absent; a failure under `CI=true`).
#[allow(unused_imports)] // not every test binary that includes this module reads testdata
pub use attest_test_support::testdata::dir as testdata;

/// An example policy shipped in `examples/policies/`.
pub fn example_policy(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/policies").join(name)
}

/// A scratch file path unique to this test process.
pub fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-snp-{}-{name}", std::process::id()))
}

/// What one run of `attest` produced.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Parses stdout as one JSON object.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// Runs `attest` with `args`; paths in `args` starting with `@` are resolved inside `dir`.
pub fn attest(dir: &Path, args: &[&str]) -> Run {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.strip_prefix('@').map_or_else(|| (*a).to_owned(), |rel| dir.join(rel).display().to_string()))
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_attest")).args(&args).output().expect("running attest");
    Run {
        code: out.status.code().expect("attest exited by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `.venv` interpreter with `module` importable (a NOTICE and `None` without it; a failure under CI).
pub fn venv(module: &str) -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let ok =
        py.is_file() && Command::new(&py).args(["-c", &format!("import {module}")]).status().is_ok_and(|s| s.success());
    assert!(ok || !std::env::var("CI").is_ok_and(|v| v == "true"), "no .venv with {module} (scripts/setup-python.sh)");
    if !ok {
        eprintln!("NOTICE: skipping the {module} checks: no .venv with it (run scripts/setup-python.sh)");
    }
    ok.then_some(py)
}

/// Validates result files (one JSON result object each) against `schemas/result-v1.schema.json` with the
/// `jsonschema` library.
pub fn validate_results(files: &[PathBuf]) {
    let Some(py) = venv("jsonschema") else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(py)
        .arg(dir.join("../../schemas/validate_result.py"))
        .arg(dir.join("../../schemas/result-v1.schema.json"))
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success(), "results do not conform to the schema:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// SHA-256 of constellation-azure-snp/runtimedata.bin followed by 32 zero bytes: the REPORT_DATA Azure's
/// paravisor put in that report.
pub fn constellation_report_data(dir: &Path) -> String {
    let runtime = std::fs::read(dir.join("constellation-azure-snp/runtimedata.bin")).unwrap();
    let digest = attest_engine::crypto::default_provider().digests.sha256(&runtime);
    format!("{}{}", hex::encode(digest), "00".repeat(32))
}
