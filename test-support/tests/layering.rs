//! The layering of the workspace stays as `docs/ARCHITECTURE.md` draws it.
//!
//! 1. **Crates.** Every workspace member sits in one layer of [`LAYERS`] (bottom first), and each of its
//!    dependencies — normal, build or dev — on another member is in a *lower* layer. A crate added to the
//!    workspace without a place here, or a `use` that reaches up or sideways, fails. Product crates use
//!    `attest-test-support` only as a dev-dependency; the few dev-dependencies that point up are listed
//!    in [`UPWARD_DEV_DEPENDENCIES`] with their reason.
//! 2. **Files.** Inside each crate, the modules (one per file) form no import cycle, except the deliberate
//!    ones in [`DELIBERATE_CYCLES`], each with its reason. A reference from a module to one of its ancestors
//!    (`super::Error` re-exported by a `mod.rs`) or descendants is not an edge: those are the re-export hubs
//!    that hold a module tree together.
//!
//! The dependency graph comes from `cargo metadata --no-deps` (the manifests as Cargo reads them); the module
//! graph from the `crate::`, `super::` and `self::` paths in each file's code (comments are ignored).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace crates by layer, bottom first. A crate may depend only on crates of lower layers.
const LAYERS: &[&[&str]] = &[
    // Foundations of the shell: no workspace dependency.
    &["attest-openssl-ext", "attest-tdx-ioctl", "attest-util", "attest-keys"],
    // The sans-IO engine.
    &["attest-engine"],
    // Test fixtures over the engine's spec constants (see UPWARD_DEV_DEPENDENCIES).
    &["attest-test-support"],
    // Wire contracts and expected values over the engine's types; reference values computed from images; the
    // configfs-tsm output reader; cloud metadata values.
    &["attest-proto", "attest-measurements", "attest-reference", "attest-tsm", "attest-metadata"],
    // gRPC (knows no attestation); certificate supply; Kubernetes client; the validator factory (sans-IO,
    // over measurements: what the C ABI links instead of the trust layer).
    &["attest-grpc", "attest-kds", "attest-k8s", "attest-validators"],
    // Attested TLS; the verifier side of AK trust; the key service; the verifier's trust inputs (signed
    // measurements, CRLs, launch pinning, waivers) shared by the services and the CLI.
    &["attest-atls", "attest-registration", "attest-keyservice", "attest-trust"],
    // The attester side (TPM, issuers): implements aTLS's issuer trait. The C ABI (over the engine and the
    // validator factory; no service code).
    &["attest-attester", "attest-ffi"],
    // The node: bootstrapper (attests).
    &["attest-bootstrapper"],
    // The join service (verifies joining nodes and attests itself to them with its node's
    // TPM: above the attester; its tests make CSRs with the bootstrapper's key generation).
    &["attest-joinservice"],
    // The command-line tool.
    &["attest-cli"],
    // Simulated hardware and the SNP attack clients (a harness: the demo and tests; nothing depends on it).
    &["attest-hwsim"],
    // On-hardware tests, then benchmarks (which reuse the hardware tests' swtpm harness).
    &["attest-hwtests"],
    &["attest-benches"],
];

/// Crates that may take `attest-test-support` as a normal dependency (they are test or bench harnesses).
const HARNESSES: &[&str] = &["attest-hwsim", "attest-hwtests", "attest-benches"];

/// Dev-dependencies allowed to point up: `(crate, dependency, why)`. Cargo builds the dependency's library
/// against the crate's library, so what ships has no cycle.
const UPWARD_DEV_DEPENDENCIES: &[(&str, &str, &str)] = &[
    (
        "attest-engine",
        "attest-test-support",
        "the engine's integration tests use the fixtures, which take the engine's TPM constants (tokio and \
         tokio-test do the same)",
    ),
    ("attest-util", "attest-test-support", "temporary directories in the atomic-write tests"),
    ("attest-keys", "attest-test-support", "temporary directories for ssh-keygen in the SSH CA tests"),
];

/// File-level import cycles that are kept on purpose: `(crate directory, modules of the cycle, why)`.
const DELIBERATE_CYCLES: &[(&str, &[&str], &str)] = &[
    (
        "engine",
        &["amd", "error", "policy", "snp::policy", "snp::tcb"],
        "one typed error enum per crate whose variants carry domain values (Product, Check, TcbComponent: \
         fieldless enums that use no error themselves); the modules defining them also hold the parsers and \
         checks that return that enum, and `policy`, whose shared vocabulary `snp::policy` reads, has policy-file \
         readers that return it (webpki's error.rs does the same; engine/src/error.rs says why)",
    ),
    (
        "engine",
        &["x509::amd", "x509::cert"],
        "a certificate exposes its AMD extensions (x509::cert → x509::amd), and the AMD extension parser reads \
         them from a parsed certificate (x509::amd → x509::cert): one concept, two files",
    ),
    (
        "measurements",
        &["error", "freshness", "parse", "pcr", "release"],
        "the crate's one error enum names the PCR index and variant types it reports; the modules defining \
         them (and the version and expiry reader the parser calls) return it",
    ),
    (
        "test-support",
        &["leaf", "report"],
        "a leaf certificate knows the report it signs and a report builder takes its leaf (test fixtures)",
    ),
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A workspace member: package name, manifest directory, `(dependency name, kind)` on other members.
type Member = (String, PathBuf, Vec<(String, String)>);

/// Every workspace member.
fn members() -> Vec<Member> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(repo())
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().expect("name").to_owned();
            let dir = Path::new(p["manifest_path"].as_str().expect("manifest_path")).parent().unwrap().to_owned();
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| names.contains(d["name"].as_str().unwrap_or("")))
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                    (d["name"].as_str().unwrap().to_owned(), kind)
                })
                .collect();
            (name, dir, deps)
        })
        .collect()
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let mut wrong = Vec::new();
    let members = members();
    for (name, _, deps) in &members {
        let Some(own) = layer_of(name) else {
            wrong.push(format!("{name} has no layer in tests/layering.rs LAYERS (and docs/ARCHITECTURE.md)"));
            continue;
        };
        for (dep, kind) in deps {
            let allowed_up = kind == "dev" && UPWARD_DEV_DEPENDENCIES.iter().any(|(c, d, _)| c == name && d == dep);
            match layer_of(dep) {
                Some(l) if l < own || allowed_up => {}
                Some(l) => wrong.push(format!("{name} (layer {own}) → {dep} (layer {l}, {kind} dependency)")),
                None => wrong.push(format!("{name} → {dep}: {dep} has no layer")),
            }
            if dep == "attest-test-support" && kind != "dev" && !HARNESSES.contains(&name.as_str()) {
                wrong.push(format!("{name} uses attest-test-support as a {kind} dependency (dev only)"));
            }
        }
    }
    for name in LAYERS.iter().flat_map(|l| l.iter()) {
        if !members.iter().any(|(n, _, _)| n == name) {
            wrong.push(format!("LAYERS names {name}, which is not a workspace member"));
        }
    }
    assert!(wrong.is_empty(), "layering violations:\n{}", wrong.join("\n"));
}

/// Module path (`["x509", "cert"]`) → file, for every `.rs` file under `src`.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
                    parts.pop();
                }
                out.insert(parts, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code of a file without its comments (line comments, doc comments, block comments).
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else if let Some(r) = rest.strip_prefix('"') {
            // Skip string literals (they may contain `//` or paths that are not code).
            let mut end = 0;
            let bytes = r.as_bytes();
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts with `crate`, `super` or `self`, with `{a, b::c}` groups expanded one level.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| bytes[i..].iter().take(p.len()).copied().eq(p.chars()))
            .filter(|_| i == 0 || !is_ident(bytes[i - 1]));
        let Some(start) = starts else {
            i += 1;
            continue;
        };
        let mut segs = vec![start.trim_end_matches("::").to_owned()];
        i += start.len();
        loop {
            if bytes.get(i) == Some(&'{') {
                let end = bytes[i..].iter().position(|&c| c == '}').map_or(bytes.len(), |e| i + e);
                let inner: String = bytes[i + 1..end].iter().collect();
                for item in inner.split(',') {
                    let mut p = segs.clone();
                    for seg in item.trim().split("::") {
                        let ident: String = seg.chars().take_while(|&c| is_ident(c)).collect();
                        if ident.is_empty() {
                            break;
                        }
                        p.push(ident);
                    }
                    if p.len() > segs.len() {
                        out.push(p);
                    }
                }
                i = end;
                segs.clear();
                break;
            }
            let ident: String = bytes[i..].iter().take_while(|&&c| is_ident(c)).collect();
            if ident.is_empty() {
                break;
            }
            i += ident.len();
            segs.push(ident);
            if bytes[i..].starts_with(&[':', ':']) {
                i += 2;
            } else {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The module a path from module `from` names: the longest prefix that is a module file.
fn resolve(mods: &BTreeMap<Vec<String>, PathBuf>, from: &[String], path: &[String]) -> Vec<String> {
    let (mut cur, rest) = if path[0] == "crate" {
        (Vec::new(), &path[1..])
    } else {
        let mut cur = from.to_vec();
        let mut rest = path;
        while let Some(first) = rest.first() {
            match first.as_str() {
                "super" => {
                    cur.pop();
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        (cur, rest)
    };
    for seg in rest {
        cur.push(seg.clone());
        if !mods.contains_key(&cur) {
            cur.pop();
            break;
        }
    }
    cur
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<BTreeSet<String>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        next: usize,
        out: Vec<BTreeSet<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut comp = BTreeSet::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    comp.insert(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan { edges, index: BTreeMap::new(), stack: Vec::new(), next: 0, out: Vec::new() };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

fn module_cycles(src: &Path) -> Vec<BTreeSet<String>> {
    let mods = modules(src);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, file) in &mods {
        let text = std::fs::read_to_string(file).unwrap();
        let targets = edges.entry(m.clone()).or_default();
        for path in paths(&code(&text)) {
            let t = resolve(&mods, m, &path);
            // Ancestor and descendant references go through the module tree's re-export hubs.
            if t == *m || m.starts_with(&t) || t.starts_with(m) || !mods.contains_key(&t) {
                continue;
            }
            targets.insert(t);
        }
    }
    cycles(&edges)
}

#[test]
fn no_file_level_import_cycles_but_the_deliberate_ones() {
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, dir, _) in members() {
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let rel = dir.strip_prefix(repo().canonicalize().unwrap()).unwrap_or(&dir).to_string_lossy().into_owned();
        for cycle in module_cycles(&src) {
            let known = DELIBERATE_CYCLES
                .iter()
                .find(|(c, mods, _)| *c == rel && mods.iter().copied().eq(cycle.iter().map(String::as_str)));
            match known {
                Some(k) => {
                    seen.insert((k.0, k.1));
                }
                None => wrong.push(format!("{name} ({rel}): import cycle {}", Vec::from_iter(cycle).join(" ↔ "))),
            }
        }
    }
    for (c, mods, _) in DELIBERATE_CYCLES {
        if !seen.contains(&(*c, *mods)) {
            wrong.push(format!("{c}: the deliberate cycle {mods:?} is gone; remove it from DELIBERATE_CYCLES"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_ignores_hubs() {
    let dir = attest_test_support::TempDir::new("layering");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a; pub mod b; pub use a::X;").unwrap();
    std::fs::write(src.join("a/mod.rs"), "pub mod c; pub use c::X; use crate::b::Y; // crate::d::Z").unwrap();
    std::fs::write(src.join("a/c.rs"), "use super::super::b; pub struct X; const S: &str = \"crate::b\";").unwrap();
    std::fs::write(src.join("b.rs"), "use crate::{a::X, a::c::X as Y2};").unwrap();
    let found = module_cycles(&src);
    let expected: Vec<BTreeSet<String>> = vec![["a", "a::c", "b"].into_iter().map(String::from).collect()];
    assert_eq!(found, expected);
    // Without the upward reference from a::c and a (both reach b), there is no cycle: lib.rs is a hub.
    std::fs::write(src.join("a/c.rs"), "pub struct X;").unwrap();
    std::fs::write(src.join("a/mod.rs"), "pub mod c; pub use c::X;").unwrap();
    assert!(module_cycles(&src).is_empty());
}
