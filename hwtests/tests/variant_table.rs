//! Every variant of the engine's table is served end to end — an issuer on the attester side, a validator from
//! the one factory, an entry in Constellation's measurements lists, a C ABI code and a Go constant — and
//! nothing outside the table decides by a variant's name (docs/ARCHITECTURE.md, "Adding a variant").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use attest_attester::issuer::IssuerKind;
use attest_engine::variant::{AkTrust, Measured, StaticAkRegistry, TABLE, Variant};
use attest_trust::ValidatorFactory;

/// Variants the attester cannot attest as yet, with the reason. A variant that gains an issuer must leave
/// this list (the test fails until it does), so the list only shrinks.
const WITHOUT_ISSUER: &[(&str, &str)] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// A measurements map of `variant`'s kind: SHA-256 PCR 4, or (TD registers) MRTD and RTMR0–3.
fn map_json(variant: Variant) -> String {
    let entry = |i: u8, len: usize| {
        format!(r#""{i}": {{"expected": "{}", "warnOnly": false}}"#, format!("{i:02x}").repeat(len))
    };
    let entries: Vec<String> = match variant.info().measured {
        Measured::Pcrs => vec![entry(4, 32)],
        Measured::TdRegisters => (0..5).map(|i| entry(i, 48)).collect(),
    };
    format!("{{{}}}", entries.join(", "))
}

#[test]
fn every_variant_has_an_issuer_a_validator_measurements_a_c_code_and_a_go_constant() {
    let go = std::fs::read_to_string(repo().join("ffi/go/variants.go")).unwrap();
    for row in &TABLE {
        let v = row.variant;
        // Issuer (attester): by the row's AK trust and hardware.
        match WITHOUT_ISSUER.iter().find(|(name, _)| *name == row.name) {
            Some((_, why)) => {
                assert_eq!(IssuerKind::of(v), None, "{v} has an issuer now: remove it from WITHOUT_ISSUER ({why})");
            }
            None => assert!(IssuerKind::of(v).is_some(), "{v}: no issuer"),
        }

        // Validator: from a release list holding the row's Constellation entry, through the one factory.
        let list = format!(
            r#"{{"version": "v1", "ref": "main", "stream": "stable", "list": [
                {{"csp": "{}", "attestationVariant": "{}", "measurements": {}}}]}}"#,
            row.constellation.csp,
            row.constellation.variant,
            map_json(v)
        );
        let document = attest_measurements::parse_document(list.as_bytes()).unwrap_or_else(|e| panic!("{v}: {e}"));
        let factory =
            ValidatorFactory { ak_registry: Some(Arc::new(StaticAkRegistry::default())), ..Default::default() };
        let validator = factory.validator_for(v, &document).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(validator.variant(), v);
        if row.ak == AkTrust::Registry {
            let without = ValidatorFactory::default().validator_for(v, &document);
            assert!(without.is_err(), "{v}: a registry variant is never built without an AK registry");
        }

        // C ABI: the code names the variant.
        let mut s = attest_ffi::verdict::attest_str { data: std::ptr::null(), len: 0 };
        assert_eq!(attest_ffi::variant::attest_variant_name(row.ffi_code, &raw mut s), attest_ffi::attest_result::Ok);
        assert_eq!(s.len, row.name.len(), "{v}");

        // Go: a constant with the name and a code mapping.
        assert!(go.contains(&format!("\t{} = \"{}\"\n", row.go_constant(), row.name)), "{v}: no Go constant");
        assert!(go.contains(&format!("C.{},", row.ffi_constant())), "{v}: no Go code mapping");
    }
}

/// Production sources, without test modules, comments or the places allowed to name variants: the table
/// itself, the attester's issuers (hardware code: each issuer makes documents of its own variant) and the
/// simulated hardware harness.
fn production_lines() -> Vec<(String, usize, String)> {
    let allowed = ["engine/src/variant/table.rs", "shell/attester/src/issuer/", "shell/hwsim/"];
    let mut out = Vec::new();
    let mut stack = vec![
        repo().join("engine/src"),
        repo().join("shell"),
        repo().join("ffi/src"),
        repo().join("measurements/src"),
        repo().join("proto/src"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(repo()).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !rel.ends_with("/tests") && !rel.ends_with("/examples") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs")
                || allowed.iter().any(|a| rel.starts_with(a))
                || rel.ends_with("tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let prod = text.find("#[cfg(test)]").map_or(&text[..], |i| &text[..i]);
            for (i, line) in prod.lines().enumerate() {
                let code = line.trim_start();
                if !code.starts_with("//") {
                    out.push((rel.clone(), i + 1, line.to_owned()));
                }
            }
        }
    }
    out
}

#[test]
fn nothing_outside_the_table_decides_by_a_variant_name() {
    let enum_paths: Vec<String> = TABLE.iter().map(|r| format!("Variant::{:?}", r.variant)).collect();
    let mut found = Vec::new();
    for (file, line, text) in production_lines() {
        let quoted: Vec<String> =
            TABLE.iter().map(|r| format!("\"{}\"", r.name)).filter(|q| text.contains(q)).collect();
        // Code that decides by a variant: a path to one of its enum values (a match arm, a comparison), a
        // match arm or comparison on its name, or a hand-written list of names (two or more on a line).
        let by_enum = enum_paths.iter().any(|p| text.contains(p.as_str()));
        let by_name = quoted.iter().any(|q| {
            text.contains(&format!("{q} =>")) || text.contains(&format!("== {q}")) || text.contains(&format!("{q} =="))
        });
        if by_enum || by_name || quoted.len() >= 2 {
            found.push(format!("{file}:{line}: {}", text.trim()));
        }
    }
    assert!(found.is_empty(), "variant logic outside the table:\n{}", found.join("\n"));
}
