//! Gives the shared library the SONAME `libattest_ffi.so.<ABI major>`, the major read from
//! `src/abi.rs` (`ATTEST_ABI_VERSION_MAJOR`), so a caller linked against one ABI major never loads another.

fn main() {
    println!("cargo:rerun-if-changed=src/abi.rs");
    let abi = std::fs::read_to_string("src/abi.rs").expect("reading src/abi.rs");
    let major: u32 = abi
        .lines()
        .find_map(|l| l.strip_prefix("pub const ATTEST_ABI_VERSION_MAJOR: u32 = "))
        .and_then(|v| v.trim_end_matches(';').trim().parse().ok())
        .expect("src/abi.rs defines ATTEST_ABI_VERSION_MAJOR");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libattest_ffi.so.{major}");
    }
    println!("cargo:rustc-env=ATTEST_ABI_MAJOR={major}");
}
