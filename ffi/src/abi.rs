//! The ABI version: what a C or Go caller checks before it trusts the signatures it compiled against.
//!
//! | | value | where |
//! |---|---|---|
//! | compile time | `ATTEST_ABI_VERSION_MAJOR`, `ATTEST_ABI_VERSION_MINOR`, `ATTEST_ABI_VERSION` (`major << 16 \| minor`) | `attest.h` |
//! | run time | `attest_abi_version()` | the loaded library |
//! | link time | SONAME `libattest_ffi.so.<major>` | `ffi/build.rs`, `make -C ffi install` |
//!
//! **The rule.** A change that removes an exported function, changes a signature, a struct layout or an
//! enum constant's value bumps the major version (and so the SONAME: the dynamic linker then refuses to run
//! an old caller against the new library instead of letting it pass arguments into the wrong slots); an
//! addition bumps the minor version. `ffi/abi/attest.abi` records the declarations of the current version;
//! `ffi/tests/abi.rs` regenerates the list from `include/attest.h` and fails when it changed without the
//! bump the change needs (`ATTEST_ABI_BLESS=1 cargo test -p attest-ffi --test abi` records a bumped one).
//!
//! | version | change |
//! |---|---|
//! | 1.0 | the first versioned ABI: `attest_verifier_new(attest_verifier **)`, SNP input as the CLI reads it |
//! | 1.1 | `attest_verdict_json`, `attest_verifier_last_result_json` (result objects, schema `attest-result/1`) |
//! | 1.2 | result codes 5220–5223 of the TD-attribute checks (`debug_class`, `reserved_attributes`, `sept_ve_disable`, `migratable`) |
//!
//! A caller checks at start: `attest_abi_version() >> 16 == ATTEST_ABI_VERSION_MAJOR` (same major) and
//! `(attest_abi_version() & 0xffff) >= ATTEST_ABI_VERSION_MINOR` (everything it uses exists).

/// The ABI major version: bumped by every incompatible change (also the SONAME's number).
pub const ATTEST_ABI_VERSION_MAJOR: u32 = 1;
/// The ABI minor version: bumped by every addition, reset by a major bump.
pub const ATTEST_ABI_VERSION_MINOR: u32 = 2;
/// `major << 16 | minor` of the headers a caller compiled against.
pub const ATTEST_ABI_VERSION: u32 = 0x0001_0002;

const _: () = assert!(ATTEST_ABI_VERSION == (ATTEST_ABI_VERSION_MAJOR << 16 | ATTEST_ABI_VERSION_MINOR));

/// The ABI version of the loaded library, `major << 16 | minor` (compare with `ATTEST_ABI_VERSION`).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_abi_version() -> u32 {
    ATTEST_ABI_VERSION
}
