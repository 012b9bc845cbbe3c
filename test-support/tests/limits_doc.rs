//! docs/LIMITS.md is the one place where every resource limit is documented. This test keeps it honest:
//! each table row names a constant, the file that defines it and its value, and the source must define
//! exactly that (`const NAME: Type = value;`). A limit changed in the code without the document, or a
//! row for a constant that no longer exists, fails here.

use std::path::PathBuf;

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
