//! C ABI over `attest-engine` (the "ffi" issue fills it: opaque handles, result codes, `attest.h`).
//!
//! Until then the crate only links the engine so the cdylib/staticlib build is exercised in CI.

pub use attest_engine as engine;
