//! Locating the real-evidence testdata (`../shared/testdata`, see its INDEX.md) for every crate's tests and
//! benchmarks.
//!
//! The directory is `$ATTEST_TESTDATA`, else `shared/testdata` next to the repository. Real-evidence
//! tests skip with a visible `NOTICE` where it is absent; under `CI=true` its absence is a failure.
//!
//! Readers for its binary formats that more than one crate needs live here too ([`AzureQuote`]).

use std::path::{Path, PathBuf};

mod azure_quote;

pub use azure_quote::AzureQuote;

/// The default location: `../shared/testdata` relative to the repository root.
fn default_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata")
}

/// `$ATTEST_TESTDATA`, else the default location, whether or not it exists.
pub fn configured_dir() -> PathBuf {
    std::env::var_os("ATTEST_TESTDATA").map_or_else(default_dir, PathBuf::from)
}

/// The testdata directory, or `None` after printing a visible notice when it is absent.
///
/// # Panics
/// When it is absent and `CI=true`: CI must run the real-evidence tests.
#[track_caller]
pub fn dir() -> Option<PathBuf> {
    let dir = configured_dir();
    if dir.join("INDEX.md").is_file() {
        return Some(dir);
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "real-evidence testdata not found at {} (set ATTEST_TESTDATA); required under CI=true",
        dir.display()
    );
    eprintln!("NOTICE: skipping real-evidence test: testdata not found at {} (set ATTEST_TESTDATA)", dir.display());
    None
}

/// Reads the testdata file `rel` below `dir` (from [`dir`]).
///
/// # Panics
/// When the file cannot be read: a test that found the directory expects its files.
#[track_caller]
pub fn read(dir: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading testdata {rel}: {e}"))
}
