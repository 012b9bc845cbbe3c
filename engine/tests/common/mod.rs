//! Helpers shared by the integration tests: locating `../shared/testdata` and reading vectors.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

/// The testdata directory: `$ATTEST_TESTDATA`, else `../shared/testdata` next to the repository. Returns
/// `None` (after printing a visible notice) when absent; under `CI=true` absence is a failure.
#[track_caller]
pub fn testdata() -> Option<PathBuf> {
    attest_test_support::testdata::dir()
}

/// Reads a testdata file.
#[track_caller]
pub fn read(dir: &std::path::Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// Decodes every CERTIFICATE block of a PEM file (or the DER file itself).
#[track_caller]
pub fn certs(dir: &std::path::Path, rel: &str) -> Vec<Vec<u8>> {
    attest_engine::x509::pem::certificates_from_pem_or_der(&read(dir, rel)).unwrap()
}
