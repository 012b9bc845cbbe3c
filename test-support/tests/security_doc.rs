//! SECURITY.md names, for each attack, the test that shows it refused (`path::test`, or `::test` for another
//! test in the file named just before). This test keeps those names true: each file must exist and define
//! the named test function (`fn name(` in Rust, `func name(` in Go). A renamed or deleted test fails here.

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn is_source(path: &str) -> bool {
    std::path::Path::new(path).extension().is_some_and(|e| e == "rs" || e == "go")
}

/// `(file, function)` pairs named in backticks in the table rows of `doc`.
fn references(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let mut file: Option<String> = None;
        for (i, token) in line.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let (path, rest) = match token.split_once("::") {
                Some((p, r)) if p.is_empty() || is_source(p) => (p, r),
                _ => continue,
            };
            if !path.is_empty() {
                file = Some(path.to_owned());
            }
            let Some(file) = &file else { continue };
            let name = rest.rsplit("::").next().unwrap_or(rest);
            out.push((file.clone(), name.to_owned()));
        }
    }
    out
}

#[test]
fn every_test_named_in_security_md_exists() {
    let doc = std::fs::read_to_string(repo().join("SECURITY.md")).expect("SECURITY.md");
    let refs = references(&doc);
    assert!(refs.len() >= 20, "SECURITY.md names only {} tests", refs.len());
    let mut wrong = Vec::new();
    for (file, name) in &refs {
        match std::fs::read_to_string(repo().join(file)) {
            Ok(src) if src.contains(&format!("fn {name}(")) || src.contains(&format!("func {name}(")) => {}
            Ok(_) => wrong.push(format!("{file} defines no test {name}")),
            Err(e) => wrong.push(format!("{file}: {e}")),
        }
    }
    assert!(wrong.is_empty(), "SECURITY.md names tests that do not exist:\n{}", wrong.join("\n"));
}

#[test]
fn references_follow_the_file_named_before() {
    let row = "| a | b | `x/a.rs::one`, `::two`, `y/b.go::TestThree`, `not::a_path` |";
    assert_eq!(
        references(row),
        [("x/a.rs".into(), "one".into()), ("x/a.rs".into(), "two".into()), ("y/b.go".into(), "TestThree".into())]
    );
}
