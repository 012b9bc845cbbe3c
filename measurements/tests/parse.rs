//! Parsing: fixtures in both syntaxes and forms, legacy values, round trips and every error path.

mod common;

use attest_measurements::{
    AttestationVariant, Csp, Document, Error, Form, MAX_FILE_SIZE, MAX_LIST_ENTRIES, Measurement, Measurements,
    PcrIndex, ReleaseMeasurements, parse_any, parse_document,
};
use common::{fixture, hx};

fn pcr(i: u32) -> PcrIndex {
    PcrIndex::new(i).unwrap()
}

#[track_caller]
fn err(input: &str) -> Error {
    match parse_document(input.as_bytes()) {
        Ok(doc) => panic!("parsed {input:?} as {doc:?}"),
        Err(e) => e,
    }
}

fn entry(hex: &str, warn_only: bool) -> String {
    format!(r#"{{"expected": "{hex}", "warnOnly": {warn_only}}}"#)
}

// ---- fixtures -----------------------------------------------------------------------------------------

#[test]
fn json_map_fixture() {
    let map = Measurements::from_json(&fixture("map.json")).unwrap();
    assert_eq!(map.len(), 7);
    assert_eq!(map.digest_len(), Some(32));
    let indices: Vec<u8> = map.iter().map(|(i, _)| i.get()).collect();
    assert_eq!(indices, [4, 8, 9, 11, 12, 13, 15]);
    assert!(map.iter().all(|(_, m)| !m.is_warn_only()));
    assert_eq!(
        hex::encode(map.get(pcr(4)).unwrap().expected()),
        "2631696302a2232111db16e4e17d305c1ed00196a660cfe42cdddf84889a67bd"
    );
}

#[test]
fn yaml_map_fixture_equals_json() {
    let yaml = Measurements::from_yaml(&fixture("map.yaml")).unwrap();
    let json = Measurements::from_json(&fixture("map.json")).unwrap();
    assert_eq!(yaml, json);
    // Auto-detection picks the same parsers.
    assert_eq!(parse_any(&fixture("map.yaml")).unwrap(), json);
    assert_eq!(Measurements::parse(&fixture("map.json")).unwrap(), json);
}

#[test]
fn legacy_fixture_is_enforced() {
    let map = Measurements::from_json(&fixture("legacy.json")).unwrap();
    assert_eq!(map.len(), 5);
    assert!(map.iter().all(|(_, m)| !m.is_warn_only()));
    assert_eq!(
        hex::encode(map.get(pcr(12)).unwrap().expected()),
        "979128a7361a08e4dd74b8ce960f1c79c2d598f3518cdaa1a384c5ad9c8b5988"
    );
}

#[test]
fn legacy_yaml_and_mixed_forms_in_one_map() {
    let yaml = format!("4: \"{}\"\n8:\n  expected: {}\n", hx(0xaa, 32), hx(0xbb, 32));
    let map = Measurements::from_yaml(yaml.as_bytes()).unwrap();
    assert!(!map.get(pcr(4)).unwrap().is_warn_only());
    assert!(!map.get(pcr(8)).unwrap().is_warn_only(), "warnOnly defaults to false");
}

#[test]
fn sha384_uppercase_fixture() {
    let map = Measurements::from_json(&fixture("map_sha384.json")).unwrap();
    assert_eq!(map.digest_len(), Some(48));
    assert_eq!(map.len(), 3);
    // Output is lowercase; the values are the same bytes.
    assert_eq!(Measurements::from_json(map.to_json().as_bytes()).unwrap(), map);
}

#[test]
fn release_json_fixture() {
    let release = ReleaseMeasurements::from_json(&fixture("release.json")).unwrap();
    assert_eq!(release.version(), "v2.16.4");
    assert_eq!(release.reference(), "-");
    assert_eq!(release.stream(), "stable");
    assert_eq!(release.entries().len(), 6);
    let aws = release.select(Csp::Aws, AttestationVariant::AwsSevSnp).unwrap();
    assert_eq!(aws.len(), 16);
    assert!(aws.get(pcr(0)).unwrap().is_warn_only());
    assert!(!aws.get(pcr(4)).unwrap().is_warn_only());
    let nitro = release.select(Csp::Aws, AttestationVariant::AwsNitroTpm).unwrap();
    assert_ne!(aws, nitro);
    let qemu = release.select(Csp::Qemu, AttestationVariant::QemuVtpm).unwrap();
    let openstack = release.select(Csp::OpenStack, AttestationVariant::QemuVtpm).unwrap();
    assert_ne!(qemu, openstack);
    assert_eq!(
        release.select(Csp::Azure, AttestationVariant::AzureTdx),
        Err(Error::NotInList { csp: Csp::Azure, variant: AttestationVariant::AzureTdx })
    );
    let owned = release.clone().into_selected(Csp::Gcp, AttestationVariant::GcpSevSnp).unwrap();
    assert_eq!(&owned, release.select(Csp::Gcp, AttestationVariant::GcpSevSnp).unwrap());
    assert!(release.clone().into_selected(Csp::Gcp, AttestationVariant::GcpSevEs).is_err());
}

#[test]
fn release_yaml_fixture_equals_json() {
    let yaml = ReleaseMeasurements::from_yaml(&fixture("release.yaml")).unwrap();
    let json = ReleaseMeasurements::from_json(&fixture("release.json")).unwrap();
    assert_eq!(yaml, json);
    assert_eq!(ReleaseMeasurements::parse(&fixture("release.yaml")).unwrap(), json);
}

#[test]
fn document_detection() {
    let doc = parse_document(&fixture("release.json")).unwrap();
    assert_eq!(doc.form(), Form::List);
    assert!(doc.select(Csp::Azure, AttestationVariant::AzureSevSnp).is_ok());
    assert_eq!(
        doc.clone().into_single(),
        Err(Error::AmbiguousList { entries: 6 }),
        "parse_any cannot choose among entries"
    );
    assert_eq!(parse_any(&fixture("release.json")), Err(Error::AmbiguousList { entries: 6 }));

    let doc = parse_document(&fixture("map.yaml")).unwrap();
    assert_eq!(doc.form(), Form::Map);
    assert_eq!(
        doc.select(Csp::Aws, AttestationVariant::AwsSevSnp),
        Err(Error::UnexpectedForm { expected: Form::List, found: Form::Map })
    );
}

#[test]
fn one_entry_list_is_a_single_map() {
    let text = format!(
        r#"{{"version": "v2.0.0", "ref": "-", "stream": "stable", "list": [
            {{"csp": "aws", "attestationVariant": "aws-sev-snp", "measurements": {{"4": {}}}}}]}}"#,
        entry(&hx(1, 32), false)
    );
    let map = parse_any(text.as_bytes()).unwrap();
    assert_eq!(map.len(), 1);
    // CSP names are case-insensitive (Constellation's cloudprovider.FromString).
    let release = ReleaseMeasurements::from_json(text.as_bytes()).unwrap();
    assert_eq!(release.entries()[0].csp, Csp::Aws);
}

#[test]
fn form_specific_constructors_reject_the_other_form() {
    assert_eq!(
        Measurements::from_json(&fixture("release.json")),
        Err(Error::UnexpectedForm { expected: Form::Map, found: Form::List })
    );
    assert_eq!(
        ReleaseMeasurements::from_yaml(&fixture("map.yaml")),
        Err(Error::UnexpectedForm { expected: Form::List, found: Form::Map })
    );
    assert!(matches!(Measurements::from_json(&fixture("map.yaml")), Err(Error::Json { .. })));
}

// ---- round trips ------------------------------------------------------------------------------------

#[test]
fn round_trips() {
    for name in ["map.json", "map.yaml", "legacy.json", "map_sha384.json"] {
        let map = Measurements::parse(&fixture(name)).unwrap();
        let json = map.to_json();
        assert_eq!(Measurements::from_json(json.as_bytes()).unwrap(), map, "{name} via JSON");
        assert_eq!(Measurements::from_yaml(map.to_yaml().as_bytes()).unwrap(), map, "{name} via YAML");
        // Output is stable: encoding the re-parsed map gives the same bytes.
        assert_eq!(Measurements::from_json(json.as_bytes()).unwrap().to_json(), json);
    }
    let release = ReleaseMeasurements::from_json(&fixture("release.json")).unwrap();
    let json = release.to_json();
    assert_eq!(ReleaseMeasurements::from_json(json.as_bytes()).unwrap(), release);
    // Same shape as the fixture, which was written by a generic JSON pretty-printer.
    let a: serde_json::Value = serde_json::from_str(&json).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&fixture("release.json")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn yaml_output_quotes_all_digit_values() {
    let mut map = Measurements::new();
    map.insert(pcr(0), Measurement::enforced(&[0x11; 32]).unwrap()).unwrap();
    map.insert(pcr(1), Measurement::warn_only(&[0; 32]).unwrap()).unwrap();
    let yaml = map.to_yaml();
    assert!(yaml.contains(&format!("\"{}\"", hx(0x11, 32))));
    assert_eq!(Measurements::from_yaml(yaml.as_bytes()).unwrap(), map);
    // Unquoted, `expected` is still read as the scalar's exact text (never via a number), so the value
    // survives; in the legacy form (a bare scalar) a number is a shape error with a position.
    let unquoted = format!("0:\n  expected: {}\n1:\n  expected: {}\n", hx(0x11, 32), hx(0, 32));
    assert_eq!(
        Measurements::from_yaml(unquoted.as_bytes()).unwrap().get(PcrIndex::new(1).unwrap()).unwrap().expected(),
        &[0; 32]
    );
    let scientific = "0:\n  expected: 1e5\n";
    assert_eq!(
        Measurements::from_yaml(scientific.as_bytes()),
        Err(Error::InvalidHex { index: PcrIndex::new(0).unwrap(), offset: 3 })
    );
    let legacy = format!("0: {}\n", hx(0x11, 32));
    assert!(matches!(Measurements::from_yaml(legacy.as_bytes()), Err(Error::Yaml { line: Some(1), .. })));
}

#[test]
fn builder_api() {
    let mut map = Measurements::new();
    assert!(map.is_empty());
    assert_eq!(map.digest_len(), None);
    assert_eq!(map.insert(pcr(4), Measurement::enforced(&[1; 32]).unwrap()), Ok(None));
    assert_eq!(
        map.insert(pcr(5), Measurement::enforced(&[1; 48]).unwrap()),
        Err(Error::MixedLengths { index: pcr(5), expected: 32, found: 48 })
    );
    // Replacing the only entry may switch banks.
    let old = map.insert(pcr(4), Measurement::warn_only(&[2; 48]).unwrap()).unwrap();
    assert_eq!(old.unwrap().expected(), &[1; 32]);
    assert_eq!(map.digest_len(), Some(48));
    assert!(map.remove(pcr(4)).is_some());
    assert!(map.is_empty());
    assert_eq!(Measurement::new(&[0; 20], false), Err(Error::WrongLength { index: None, found: 20 }));
    assert_eq!(PcrIndex::new(24), Err(Error::PcrIndexOutOfRange { index: 24 }));
    assert_eq!(PcrIndex::try_from(23).unwrap(), PcrIndex::MAX);
    assert_eq!(PcrIndex::all().count(), 24);
    assert_eq!(u32::from(pcr(7)), 7);
}

// ---- error paths: input -------------------------------------------------------------------------------

#[test]
fn empty_and_non_utf8_input() {
    assert_eq!(err(""), Error::EmptyInput);
    assert_eq!(err(" \n\t "), Error::EmptyInput);
    assert_eq!(parse_document(b"{\"4\": \xff}"), Err(Error::NotUtf8 { valid_up_to: 6 }));
    // A YAML file of only comments is an empty document: nothing expected.
    assert_eq!(err("# only a comment\n"), Error::NoMeasurements);
}

#[test]
fn file_size_limit() {
    let mut big = format!("{{\"4\": {}", entry(&hx(1, 32), false)).into_bytes();
    big.resize(MAX_FILE_SIZE + 1, b' ');
    assert_eq!(
        parse_document(&big),
        Err(Error::LimitExceeded { what: "file bytes", limit: MAX_FILE_SIZE, found: MAX_FILE_SIZE + 1 })
    );
}

#[test]
fn syntax_errors_have_positions() {
    let Error::Json { line, column, message } = err("{\n  \"4\": {\"expected\": \"aa\",}\n}") else {
        panic!("expected a JSON error");
    };
    assert_eq!((line, column), (2, 26));
    assert!(!message.is_empty());

    let Error::Yaml { line, column, .. } = err("4:\n  expected: [unclosed\n") else { panic!("expected a YAML error") };
    assert_eq!(line, Some(2));
    assert!(column.is_some());

    // Wrong shapes are reported by the parser too, with the position.
    assert!(matches!(err("[1, 2]"), Error::Json { line: 1, .. }));
    assert!(matches!(err(r#"{"4": 5}"#), Error::Json { line: 1, .. }));
    assert!(matches!(err(r#"{"4": {"expected": 5}}"#), Error::Json { .. }));
    assert!(
        matches!(err(r#"{"4": {"warnOnly": true}}"#), Error::Json { message, .. } if message.contains("missing field `expected`"))
    );
    assert!(
        matches!(err(r#"{"4": {"expected": "aa", "warnonly": true}}"#), Error::Json { message, .. } if message.contains("unknown field `warnonly`"))
    );
    assert!(
        matches!(err(r#"{"4": {"expected": "aa", "expected": "bb"}}"#), Error::Json { message, .. } if message.contains("duplicate field"))
    );
    assert!(matches!(err(r#"{"4": {"expected": "aa", "warnOnly": "yes"}}"#), Error::Json { .. }));
    assert!(matches!(err("{\"4\": \"aa\"} trailing"), Error::Json { .. }));
    assert!(matches!(err("just a string"), Error::Yaml { .. }));
    assert!(matches!(err("4: a\n---\n5: b\n"), Error::Yaml { .. }), "multi-document YAML");
    assert!(matches!(err("? [1, 2]\n: x\n"), Error::Yaml { .. }), "non-scalar key");
    assert!(matches!(err("1.5: x\n"), Error::Yaml { .. }), "float key");
}

// ---- error paths: map content ------------------------------------------------------------------------

#[test]
fn pcr_keys() {
    let v = entry(&hx(1, 32), false);
    for key in ["07", "-1", "+1", " 4", "4 ", "1a", "pcr4", "", "99999999999999999999999"] {
        assert!(matches!(err(&format!(r#"{{"{key}": {v}}}"#)), Error::InvalidPcrKey { key: k } if k == key), "{key:?}");
    }
    assert_eq!(err(&format!(r#"{{"24": {v}}}"#)), Error::PcrIndexOutOfRange { index: 24 });
    assert_eq!(err(&format!("{{\"4\": {v}, \"1000\": {v}}}")), Error::PcrIndexOutOfRange { index: 1000 });
    // YAML integer keys, including negative ones.
    assert_eq!(err(&format!("24: {v}\n")), Error::PcrIndexOutOfRange { index: 24 });
    assert_eq!(err(&format!("-3: {v}\n")), Error::InvalidPcrKey { key: "-3".into() });
    // Long keys are cut in the error.
    let long = "x".repeat(500);
    let Error::InvalidPcrKey { key } = err(&format!(r#"{{"{long}": {v}}}"#)) else { panic!() };
    assert_eq!(key.len(), attest_measurements::MAX_ERROR_KEY_LEN);
}

#[test]
fn duplicate_pcr() {
    let v = entry(&hx(1, 32), false);
    assert_eq!(err(&format!(r#"{{"4": {v}, "4": {v}}}"#)), Error::DuplicatePcr { index: pcr(4) });
    assert_eq!(err(&format!("4: {v}\n4: {v}\n")), Error::DuplicatePcr { index: pcr(4) });
    // A string key and an integer key naming the same PCR are duplicates too.
    assert_eq!(err(&format!("4: {v}\n\"4\": {v}\n")), Error::DuplicatePcr { index: pcr(4) });
}

#[test]
fn hex_and_lengths() {
    let one = |hex: &str| err(&format!(r#"{{"9": "{hex}"}}"#));
    let index = pcr(9);
    assert_eq!(one(&format!("0x{}", hx(1, 31))), Error::InvalidHex { index, offset: 1 });
    assert_eq!(one(&format!("{} ", hx(1, 32))), Error::InvalidHex { index, offset: 64 });
    assert_eq!(one(&format!("{}a", hx(1, 32))), Error::InvalidHex { index, offset: 65 });
    assert_eq!(one(&format!("{}zz", hx(1, 31))), Error::InvalidHex { index, offset: 62 });
    assert_eq!(one(""), Error::WrongLength { index: Some(index), found: 0 });
    assert_eq!(one(&hx(1, 31)), Error::WrongLength { index: Some(index), found: 31 }, "no padding");
    assert_eq!(one(&hx(1, 33)), Error::WrongLength { index: Some(index), found: 33 }, "no truncation");
    assert_eq!(one(&hx(1, 64)), Error::WrongLength { index: Some(index), found: 64 });
    // Mixed case in one value is fine.
    let mixed = format!("{}{}", hx(0xab, 16), hx(0xab, 16).to_uppercase());
    assert!(parse_any(format!(r#"{{"9": "{mixed}"}}"#).as_bytes()).is_ok());
}

#[test]
fn mixed_lengths() {
    let text = format!(r#"{{"1": "{}", "2": "{}", "3": "{}"}}"#, hx(1, 32), hx(2, 32), hx(3, 48));
    assert_eq!(err(&text), Error::MixedLengths { index: pcr(3), expected: 32, found: 48 });
}

#[test]
fn first_content_error_wins() {
    let text = format!(r#"{{"1": "zz", "99": "{}"}}"#, hx(1, 32));
    assert_eq!(err(&text), Error::InvalidHex { index: pcr(1), offset: 0 });
    // ... but a later syntax error still fails the file as a syntax error.
    assert!(matches!(err(r#"{"1": "zz", "2": }"#), Error::Json { .. }));
}

#[test]
fn empty_map() {
    assert_eq!(err("{}"), Error::NoMeasurements);
    assert_eq!(err("{}\n"), Error::NoMeasurements);
}

// ---- error paths: list form --------------------------------------------------------------------------

fn list_doc(entries: &str) -> String {
    format!(r#"{{"version": "v2.1.0", "ref": "-", "stream": "stable", "list": [{entries}]}}"#)
}

fn list_entry(csp: &str, variant: &str, map: &str) -> String {
    format!(r#"{{"csp": "{csp}", "attestationVariant": "{variant}", "measurements": {map}}}"#)
}

fn good_map() -> String {
    format!(r#"{{"4": {}}}"#, entry(&hx(4, 32), false))
}

#[test]
fn list_fields() {
    let e = list_entry("AWS", "aws-sev-snp", &good_map());
    let full = list_doc(&e);
    assert!(parse_document(full.as_bytes()).is_ok());
    for field in ["version", "ref", "stream", "list"] {
        let mut v: serde_json::Value = serde_json::from_str(&full).unwrap();
        v.as_object_mut().unwrap().remove(field);
        let text = v.to_string();
        assert_eq!(
            err(&text),
            Error::MissingField {
                field: match field {
                    "version" => "version",
                    "ref" => "ref",
                    "stream" => "stream",
                    _ => "list",
                }
            }
        );
    }
    let dup = full.replacen(r#""stream": "stable""#, r#""stream": "stable", "stream": "nightly""#, 1);
    assert_eq!(err(&dup), Error::DuplicateField { field: "stream" });
    let unknown = full.replacen(r#""ref": "-""#, r#""ref": "-", "extra": [1, {"a": 2}]"#, 1);
    assert_eq!(err(&unknown), Error::UnknownField { field: "extra".into() });
    let mixed = full.replacen(r#""ref": "-""#, &format!(r#""ref": "-", "4": "{}""#, hx(1, 32)), 1);
    assert_eq!(err(&mixed), Error::MixedForms);
    assert!(matches!(err(&full.replace(r#""version": "v2.1.0""#, r#""version": 2"#)), Error::Json { .. }));
    assert!(matches!(err(&full.replace('[', "{").replace(']', "}")), Error::Json { .. }));
    assert_eq!(err(&list_doc("")), Error::NoMeasurements);
}

#[test]
fn list_entries() {
    let wrapped = |position, error| Error::ListEntry { position, error: Box::new(error) };
    let ok = list_entry("AWS", "aws-sev-snp", &good_map());
    let cases = [
        (list_entry("IBM", "aws-sev-snp", &good_map()), Error::UnknownCsp { name: "IBM".into() }),
        (list_entry("AWS", "aws-sev-tdx", &good_map()), Error::UnknownVariant { name: "aws-sev-tdx".into() }),
        (list_entry("AWS", "AWS-SEV-SNP", &good_map()), Error::UnknownVariant { name: "AWS-SEV-SNP".into() }),
        (
            list_entry("Azure", "aws-sev-snp", &good_map()),
            Error::CspVariantMismatch { csp: Csp::Azure, variant: AttestationVariant::AwsSevSnp },
        ),
        (list_entry("AWS", "aws-nitro-tpm", "{}"), Error::NoMeasurements),
        (
            list_entry("AWS", "aws-nitro-tpm", &format!(r#"{{"30": "{}"}}"#, hx(1, 32))),
            Error::PcrIndexOutOfRange { index: 30 },
        ),
        (list_entry("AWS", "aws-nitro-tpm", r#"{"version": "aa"}"#), Error::InvalidPcrKey { key: "version".into() }),
        (list_entry("AWS", "aws-nitro-tpm", r#"{"5": "aa"}"#), Error::WrongLength { index: Some(pcr(5)), found: 1 }),
        (ok.clone(), Error::DuplicateListEntry { csp: Csp::Aws, variant: AttestationVariant::AwsSevSnp }),
    ];
    for (second, want) in cases {
        let text = list_doc(&format!("{ok}, {second}"));
        let got = err(&text);
        assert_eq!(got, wrapped(1, want.clone()), "{second}");
        assert_eq!(got.root(), &want);
        assert!(got.to_string().starts_with("list entry 1: "));
    }
    let extra_field = list_doc(&ok.replace(r#""csp""#, r#""imageRef": "x", "csp""#));
    assert!(matches!(err(&extra_field), Error::Json { message, .. } if message.contains("unknown field `imageRef`")));
    let missing = list_doc(&ok.replace(r#""csp": "AWS", "#, ""));
    assert!(matches!(err(&missing), Error::Json { message, .. } if message.contains("missing field `csp`")));
}

#[test]
fn list_entry_limit() {
    let e = list_entry("AWS", "aws-sev-snp", &good_map());
    let many = vec![e.as_str(); MAX_LIST_ENTRIES + 1].join(",");
    assert_eq!(
        err(&list_doc(&many)),
        Error::LimitExceeded { what: "list entries", limit: MAX_LIST_ENTRIES, found: MAX_LIST_ENTRIES + 1 }
    );
}

#[test]
fn release_constructor_checks_invariants() {
    let map = Measurements::from_json(&fixture("map.json")).unwrap();
    let entry =
        |csp, variant| attest_measurements::ReleaseEntry { csp, variant, measurements: map.clone(), image: None };
    let new = |entries| ReleaseMeasurements::new("v1".into(), "-".into(), "stable".into(), entries);
    assert!(new(vec![entry(Csp::Gcp, AttestationVariant::GcpSevEs)]).is_ok());
    assert_eq!(new(vec![]), Err(Error::NoMeasurements));
    assert_eq!(
        new(vec![entry(Csp::Gcp, AttestationVariant::QemuTdx)]).unwrap_err().root(),
        &Error::CspVariantMismatch { csp: Csp::Gcp, variant: AttestationVariant::QemuTdx }
    );
    assert!(matches!(
        new(vec![entry(Csp::Qemu, AttestationVariant::QemuTdx); MAX_LIST_ENTRIES + 1]),
        Err(Error::LimitExceeded { .. })
    ));
    let mut empty = entry(Csp::Aws, AttestationVariant::AwsSevSnp);
    empty.measurements = Measurements::new();
    assert_eq!(new(vec![empty]).unwrap_err().root(), &Error::NoMeasurements);
}

#[test]
fn names() {
    for csp in Csp::ALL {
        assert_eq!(Csp::from_name(csp.name()), Ok(csp));
        assert_eq!(Csp::from_name(&csp.name().to_lowercase()), Ok(csp));
    }
    for v in AttestationVariant::ALL {
        assert_eq!(AttestationVariant::from_name(v.name()), Ok(v));
        assert_eq!(
            Csp::ALL.iter().filter(|c| v.runs_on(**c)).count(),
            if v == AttestationVariant::QemuVtpm { 2 } else { 1 }
        );
    }
    assert!(matches!(AttestationVariant::from_name("dummy"), Err(Error::UnknownVariant { .. })));
}

#[test]
fn document_is_usable_as_value() {
    let doc = parse_document(&fixture("map.json")).unwrap();
    let Document::Map(map) = doc else { panic!() };
    assert_eq!(map.len(), 7);
}

#[test]
fn errors_display() {
    // Every message is non-empty and names the PCR where there is one.
    let e = Error::InvalidHex { index: pcr(9), offset: 3 };
    assert!(e.to_string().contains("PCR 9"));
    assert!(Error::KeyNotP256.to_string().contains("P-256"));
    let yaml = Error::Yaml { line: None, column: None, message: "m".into() };
    assert_eq!(yaml.to_string(), "invalid YAML: m");
}

#[test]
fn hostile_structure_is_bounded() {
    // "Billion laughs": aliases expanding exponentially, hidden in an ignored release-list field.
    let mut bomb =
        String::from("version: v1\nref: \"-\"\nstream: s\nextra:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = i - 1;
        let refs = vec![format!("*a{prev}"); 10].join(", ");
        bomb = bomb + "  a" + &i.to_string() + ": &a" + &i.to_string() + " [" + &refs + "]\n";
    }
    bomb += "list: []\n";
    let start = std::time::Instant::now();
    // Ignored: skipped without expanding.
    assert_eq!(err(&bomb), Error::UnknownField { field: "extra".into() });
    // Read: no accepted shape nests lists, so reading fails at the first element instead of expanding (and
    // the parser's repetition limit would stop a wider bomb).
    let entry = "{csp: AWS, attestationVariant: aws-sev-snp, measurements: {4: \"aa\"}}";
    let expanded =
        bomb.replace("list: []", "list: *a9").replace("[x, x, x, x, x, x, x, x, x, x]", &format!("[{entry}]"));
    let got = err(&expanded);
    assert!(matches!(&got, Error::Yaml { line: Some(_), .. }), "{got:?}");
    // Deep nesting: serde_json's recursion limit; YAML flow collections are capped before libyaml sees them
    // (its scanner is quadratic in flow depth).
    let deep_json = format!(
        r#"{{"version": "v", "ref": "-", "stream": "s", "list": [], "x": {}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(err(&deep_json), Error::Json { .. } | Error::UnknownField { .. }));
    let limit = attest_measurements::MAX_YAML_FLOW_COLLECTIONS;
    let deep_yaml = format!("x: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(err(&deep_yaml), Error::LimitExceeded { what: "YAML flow collections", limit, found: 100_000 });
    // Counted on the raw text, so quoting cannot hide openers.
    let quoted = format!("4: \"{}\"\n", "{".repeat(limit + 1));
    assert!(matches!(err(&quoted), Error::LimitExceeded { what: "YAML flow collections", .. }));
    let at_limit = format!("x: {}{}\n", "[".repeat(limit), "]".repeat(limit));
    assert_eq!(err(&at_limit), Error::InvalidPcrKey { key: "x".into() });
    // Flow style within the limit is fine.
    let flow = format!("{{4: {{expected: \"{}\", warnOnly: true}}}}\n", hx(4, 32));
    assert!(Measurements::from_yaml(flow.as_bytes()).unwrap().get(PcrIndex::new(4).unwrap()).unwrap().is_warn_only());
    let big = format!("4: \"{}\"\n{}", hx(4, 32), "# comment\n".repeat(attest_measurements::MAX_YAML_SIZE / 10));
    assert!(matches!(err(&big), Error::LimitExceeded { what: "YAML bytes", .. }));
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
}
