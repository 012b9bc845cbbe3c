//! The ABI contract: every declaration of `include/attest.h` (function signatures, struct layouts, enum
//! constants with their values, `#define`s) normalized one per line, compared with the checked-in
//! description `abi/attest.abi` of the current ABI version (`src/abi.rs`).
//!
//! - A declaration removed or changed (a signature, a struct, an enum value) needs a major bump.
//! - A declaration added needs at least a minor bump.
//! - Any difference without the bump it needs fails; with the bump, `ATTEST_ABI_BLESS=1 cargo test -p
//!   attest-ffi --test abi` records the new description (commit it with the bump).

use attest_ffi::abi::{ATTEST_ABI_VERSION_MAJOR, ATTEST_ABI_VERSION_MINOR};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The header's declarations, normalized (comments and preprocessor guards dropped, whitespace collapsed,
/// enum bodies split into one line per constant; the `ATTEST_ABI_VERSION*` defines are the version, not
/// the ABI, and are left out).
fn declarations(header: &str) -> BTreeSet<String> {
    let mut text = String::new();
    let mut rest = header;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    text.push_str(rest);
    let mut decls = BTreeSet::new();
    let mut code = String::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if let Some(define) = line.strip_prefix("#define ") {
            if !define.starts_with("ATTEST_ABI_VERSION") && !define.starts_with("ATTEST_H") {
                decls.insert(format!("#define {}", define.split_whitespace().collect::<Vec<_>>().join(" ")));
            }
            continue;
        }
        if line.starts_with('#') || line == "extern \"C\" {" || line == "}" && code.trim().is_empty() {
            continue;
        }
        code.push_str(line);
        code.push(' ');
    }
    let (mut depth, mut start) = (0usize, 0usize);
    let bytes: Vec<char> = code.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                let stmt: String = bytes[start..i].iter().collect();
                let stmt = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
                start = i + 1;
                if stmt.is_empty() {
                    continue;
                }
                match (stmt.strip_prefix("enum "), stmt.find('{')) {
                    (Some(_), Some(open)) => {
                        let name = stmt[..open].trim();
                        let body = stmt[open + 1..].trim_end_matches('}').trim();
                        for constant in body.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                            decls.insert(format!("{name}: {constant}"));
                        }
                    }
                    _ => {
                        decls.insert(stmt);
                    }
                }
            }
            _ => {}
        }
    }
    decls
}

#[test]
fn exported_declarations_match_the_recorded_abi() {
    let header = std::fs::read_to_string(path("include/attest.h")).unwrap();
    let now = declarations(&header);
    assert!(now.iter().any(|d| d.contains("attest_verifier_verify_snp(")), "the header parses: {now:?}");
    assert!(now.contains("typedef struct attest_verifier attest_verifier"), "{now:?}");
    let version = format!("abi {ATTEST_ABI_VERSION_MAJOR}.{ATTEST_ABI_VERSION_MINOR}");
    let recorded = std::fs::read_to_string(path("abi/attest.abi")).unwrap_or_default();
    let mut lines = recorded.lines().filter(|l| !l.starts_with("//"));
    let recorded_version = lines.next().unwrap_or_default().to_owned();
    let then: BTreeSet<String> = lines.map(str::to_owned).collect();
    let removed: Vec<&String> = then.difference(&now).collect();
    let added: Vec<&String> = now.difference(&then).collect();
    let parse = |v: &str| -> (u32, u32) {
        let (a, b) = v.trim_start_matches("abi ").split_once('.').unwrap_or(("0", "0"));
        (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
    };
    let (old, new) = (parse(&recorded_version), (ATTEST_ABI_VERSION_MAJOR, ATTEST_ABI_VERSION_MINOR));
    let bless = std::env::var_os("ATTEST_ABI_BLESS").is_some();
    let list = |v: &[&String], sep: &str| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(sep);
    assert!(
        removed.is_empty() || new.0 != old.0 || recorded.is_empty(),
        "ABI {version}: declarations removed or changed without a major bump (ATTEST_ABI_VERSION_MAJOR in \
         ffi/src/abi.rs):\n  - {}\n  + {}",
        list(&removed, "\n  - "),
        list(&added, "\n  + ")
    );
    assert!(
        added.is_empty() || new > old || recorded.is_empty(),
        "ABI {version}: declarations added without a minor bump (ATTEST_ABI_VERSION_MINOR in ffi/src/abi.rs):\n  + {}",
        list(&added, "\n  + ")
    );
    if recorded_version == version && removed.is_empty() && added.is_empty() {
        return;
    }
    if bless {
        let mut out = String::from(
            "// The C ABI of attest-ffi (ffi/tests/abi.rs): every declaration of include/attest.h, normalized.\n\
             // Regenerate after a version bump with ATTEST_ABI_BLESS=1 cargo test -p attest-ffi --test abi.\n",
        );
        out.push_str(&version);
        out.push('\n');
        for d in &now {
            out.push_str(d);
            out.push('\n');
        }
        std::fs::write(path("abi/attest.abi"), out).unwrap();
        return;
    }
    panic!(
        "ffi/abi/attest.abi records {recorded_version:?}, the library is {version:?} ({} removed, {} added): run \
         ATTEST_ABI_BLESS=1 cargo test -p attest-ffi --test abi and commit ffi/abi/attest.abi",
        removed.len(),
        added.len()
    );
}

#[test]
fn a_changed_signature_is_caught() {
    let header = std::fs::read_to_string(path("include/attest.h")).unwrap();
    let now = declarations(&header);
    // A parameter added to an existing function.
    let changed = header.replacen(
        "attest_verifier_free(const struct attest_verifier *verifier)",
        "attest_verifier_free(const struct attest_verifier *verifier, uint32_t flags)",
        1,
    );
    assert_ne!(changed, header, "the header declares attest_verifier_free as expected");
    let then = declarations(&changed);
    assert!(now.difference(&then).any(|d| d.contains("attest_verifier_free")), "a changed signature is a removal");
    // A new result code is an addition only.
    let added = header.replacen("ATTEST_RESULT_OK = 0,", "ATTEST_RESULT_OK = 0,\n  ATTEST_RESULT_NEW = 424242,", 1);
    let with = declarations(&added);
    assert!(now.is_subset(&with) && with.len() == now.len() + 1);
}
