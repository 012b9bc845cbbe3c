//! `unsafe` stays in `ffi/src/handle.rs`: no other source file has an `unsafe` block, function, impl or
//! trait, or relaxes the lint crate- or module-wide. (Exported functions carry an item-level
//! `#[allow(unsafe_code)]` only because rustc counts `#[unsafe(no_mangle)]` as unsafe code.)

use std::path::Path;

#[test]
fn unsafe_code_only_in_handle_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") || path.file_name().is_some_and(|n| n == "handle.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for needle in
                ["unsafe {", "unsafe fn", "unsafe impl", "unsafe trait", "unsafe extern", "#![allow(unsafe_code)]"]
            {
                assert!(!code.contains(needle), "{}:{}: `{needle}` outside handle.rs", path.display(), i + 1);
            }
            if code.contains("#[allow(unsafe_code)]") {
                let next = text.lines().nth(i + 1).unwrap_or("");
                let prev = if i > 0 { text.lines().nth(i - 1).unwrap_or("") } else { "" };
                assert!(
                    prev.contains("#[unsafe(no_mangle)]") || next.contains("#[unsafe(no_mangle)]"),
                    "{}:{}: #[allow(unsafe_code)] not on an exported function",
                    path.display(),
                    i + 1
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 5, "expected the ffi sources in {}", src.display());
}
