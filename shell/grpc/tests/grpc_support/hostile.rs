//! The raw HTTP/2 peer of the hostile-input tests lives in `attest_test_support::h2raw` (shared with the
//! join service's hostile tests over aTLS); this module re-exports it for the shell's gRPC tests.

#[allow(unused_imports)]
pub use attest_test_support::h2raw::*;
