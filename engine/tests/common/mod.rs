//! Helpers shared by the integration tests: the testdata directory (`attest_test_support::testdata`) and
//! decoding its vectors.
#![allow(dead_code, unreachable_pub)]

/// The testdata directory (`None` with a notice when absent; a failure under `CI=true`) and its files.
#[allow(unused_imports)] // not every test binary that includes this module reads testdata
pub use attest_test_support::testdata::{dir as testdata, read};

/// Decodes every CERTIFICATE block of a PEM file (or the DER file itself).
#[track_caller]
pub fn certs(dir: &std::path::Path, rel: &str) -> Vec<Vec<u8>> {
    attest_engine::x509::pem::certificates_from_pem_or_der(&read(dir, rel)).unwrap()
}
