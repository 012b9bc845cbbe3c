//! docs/LIMITS.md is the one place where every resource limit is documented. This test keeps it honest:
//! each table row names a constant, the file that defines it and its value, and the source must define
//! exactly that (`const NAME: Type = value;`). A limit changed in the code without the document, or a
//! row for a constant that no longer exists, fails here. The other way round, every `MAX_*` constant in
//! the product's sources must have its row: a new limit cannot go undocumented.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `| `NAME` | `file` | `value` | … |` rows.
fn rows(doc: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", name, file, value, meaning, ""]
        if cells.len() < 5 {
            continue;
        }
        let unquote = |c: &str| c.strip_prefix('`').and_then(|c| c.strip_suffix('`')).map(str::to_owned);
        let (Some(name), Some(file), Some(value)) = (unquote(cells[1]), unquote(cells[2]), unquote(cells[3])) else {
            continue;
        };
        out.push((name, file, value));
    }
    out
}

/// The defining expression of `const NAME: T = <expr>;` in `source`, whitespace-normalized.
fn definition(source: &str, name: &str) -> Option<String> {
    let needle = format!("const {name}:");
    let start = source.find(&needle)?;
    let rest = &source[start..];
    let eq = rest.find('=')?;
    let end = rest.find(';')?;
    Some(rest[eq + 1..end].split_whitespace().collect::<Vec<_>>().join(" "))
}

#[test]
fn every_documented_limit_matches_its_definition() {
    let doc = std::fs::read_to_string(repo().join("docs/LIMITS.md")).expect("docs/LIMITS.md");
    let rows = rows(&doc);
    assert!(rows.len() >= 40, "docs/LIMITS.md lists only {} limits", rows.len());
    let mut wrong = Vec::new();
    for (name, file, value) in &rows {
        let source = match std::fs::read_to_string(repo().join(file)) {
            Ok(s) => s,
            Err(e) => {
                wrong.push(format!("{name}: {file}: {e}"));
                continue;
            }
        };
        match definition(&source, name) {
            Some(defined) if defined == *value => {}
            Some(defined) => wrong.push(format!("{name} ({file}): documented `{value}`, defined `{defined}`")),
            None => wrong.push(format!("{name}: not defined in {file}")),
        }
    }
    assert!(wrong.is_empty(), "docs/LIMITS.md is out of date:\n{}", wrong.join("\n"));
}

/// Directories that hold no product code: build output, tests, examples, benchmarks, fuzz targets and the
/// test-only crates. Everything else under the repository is scanned.
const NOT_PRODUCT: &[&str] = &["target", "tests", "examples", "benches", "fuzz", "test-support", "hwtests", ".git"];

/// Every `.rs` file of the product, relative to the repository.
fn product_sources(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read_dir").map(|e| e.expect("dir entry")).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        let (path, rel) = (entry.path(), rel.join(&name));
        if entry.file_type().expect("file type").is_dir() {
            if !NOT_PRODUCT.contains(&name.to_str().unwrap_or_default()) {
                product_sources(&path, &rel, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(rel);
        }
    }
}

/// The names of the `const MAX_…:` items defined in `source` (outside comments).
fn max_constants(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let Some(at) = code.find("const MAX_") else { continue };
        let name: String = code[at + "const ".len()..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if code[at + "const ".len() + name.len()..].trim_start().starts_with(':') {
            out.push(name);
        }
    }
    out
}

#[test]
fn every_max_constant_has_a_row() {
    let doc = std::fs::read_to_string(repo().join("docs/LIMITS.md")).expect("docs/LIMITS.md");
    let rows = rows(&doc);
    let mut files = Vec::new();
    product_sources(&repo(), Path::new(""), &mut files);
    assert!(files.len() > 50, "only {} source files found", files.len());
    let mut missing = Vec::new();
    let mut found = 0;
    for file in &files {
        let source = std::fs::read_to_string(repo().join(file)).expect("source file");
        let file = file.to_str().expect("UTF-8 path").replace('\\', "/");
        for name in max_constants(&source) {
            found += 1;
            if !rows.iter().any(|(n, f, _)| *n == name && *f == file) {
                missing.push(format!("| `{name}` | `{file}` | … |"));
            }
        }
    }
    assert!(found >= 40, "only {found} MAX_ constants found");
    assert!(missing.is_empty(), "docs/LIMITS.md lacks a row for:\n{}", missing.join("\n"));
}

#[test]
fn max_constants_are_found_in_code_not_comments() {
    let src = "pub const MAX_A: usize = 1;\n// const MAX_B: usize = 2;\nconst MAX_C : u8 = 3; // MAX_D\nlet x = MAX_E;\nconst MAX_F: [u8; 2] = [0; 2];";
    assert_eq!(max_constants(src), ["MAX_A", "MAX_C", "MAX_F"]);
}
