//! The signed file's version and expiry (`attest_measurements::freshness`): read in both forms, written back
//! identically, inside the signature, and refused when malformed; files without them are version 0.

mod common;

use attest_engine::UnixTime;
use attest_measurements::{Document, Error, Freshness, SignedMeasurements, parse_document, parse_versioned};
use common::{fixture, hx};

fn map_with(header: &str) -> String {
    format!(r#"{{{header} "4": {{"expected": "{}", "warnOnly": false}}}}"#, hx(0x44, 32))
}

#[test]
fn files_without_a_version_are_version_0_and_never_expire() {
    for name in ["map.json", "map.yaml", "legacy.json", "release.json", "release.yaml"] {
        let (_, freshness) = parse_versioned(&fixture(name)).unwrap();
        assert_eq!(freshness, Freshness::default(), "{name}");
        assert!(!freshness.is_expired(UnixTime::from_secs(u64::MAX)));
    }
}

#[test]
fn both_forms_carry_version_and_expiry() {
    let (doc, f) =
        parse_versioned(map_with(r#""measurementsVersion": 7, "expires": "2030-01-02T03:04:05Z","#).as_bytes())
            .unwrap();
    assert!(matches!(doc, Document::Map(_)));
    assert_eq!(f.version, 7);
    assert_eq!(f.expires.map(|e| e.to_string()).as_deref(), Some("2030-01-02T03:04:05Z"));

    let release = String::from_utf8(fixture("release.json")).unwrap();
    let versioned = release.replacen('{', r#"{"measurementsVersion": 3,"#, 1);
    let (doc, f) = parse_versioned(versioned.as_bytes()).unwrap();
    assert!(matches!(doc, Document::List(_)));
    assert_eq!((f.version, f.expires), (3, None));
    // The document itself is the same as without the fields.
    assert_eq!(doc, parse_document(release.as_bytes()).unwrap());

    // YAML, block style.
    let yaml =
        format!("measurementsVersion: 9\nexpires: \"2030-01-02T03:04:05Z\"\n4:\n  expected: \"{}\"\n", hx(1, 32));
    assert_eq!(parse_versioned(yaml.as_bytes()).unwrap().1.version, 9);
}

#[test]
fn written_documents_read_back_with_their_freshness() {
    for name in ["map.json", "release.json"] {
        let doc = parse_document(&fixture(name)).unwrap();
        let f = Freshness::new(12, Some(UnixTime::from_secs(1_900_000_000))).unwrap();
        let text = doc.to_json_with(&f);
        assert_eq!(parse_versioned(text.as_bytes()).unwrap(), (doc.clone(), f), "{name}:\n{text}");
        // The default writes the unversioned document, byte for byte.
        assert_eq!(
            doc.to_json_with(&Freshness::default()),
            match &doc {
                Document::Map(m) => m.to_json(),
                Document::List(l) => l.to_json(),
            }
        );
    }
}

#[test]
fn malformed_fields_are_refused() {
    for (header, what) in [
        (r#""measurementsVersion": -1,"#, "negative"),
        (r#""measurementsVersion": 1.5,"#, "fraction"),
        (r#""measurementsVersion": "7","#, "string"),
        (r#""measurementsVersion": 9007199254740992,"#, "above 2^53 - 1"),
        (r#""measurementsVersion": 1, "measurementsVersion": 2,"#, "twice"),
        (r#""expires": "2030-01-02","#, "a date"),
        (r#""expires": "2030-01-02T03:04:05+01:00","#, "an offset"),
        (r#""expires": 1900000000,"#, "a number"),
        (r#""expires": "2030-01-02T03:04:05Z", "expires": "2031-01-02T03:04:05Z","#, "twice"),
        (r#""measurementversion": 1,"#, "a misspelt name"),
    ] {
        assert!(parse_versioned(map_with(header).as_bytes()).is_err(), "{what}: {header}");
    }
    let e = parse_versioned(map_with(r#""measurementsVersion": 9007199254740992,"#).as_bytes()).unwrap_err();
    assert!(matches!(e, Error::InvalidVersion { .. }), "{e}");
    let e = parse_versioned(map_with(r#""expires": "2030-01-02","#).as_bytes()).unwrap_err();
    assert!(matches!(e, Error::InvalidExpiry { .. }), "{e}");
    // Not inside a map of a list entry.
    let release = String::from_utf8(fixture("release.json")).unwrap();
    let nested = release.replacen(r#""measurements": {"#, r#""measurements": {"measurementsVersion": 1,"#, 1);
    assert_ne!(nested, release);
    assert!(parse_versioned(nested.as_bytes()).is_err());
    // A header alone measures nothing.
    assert_eq!(parse_versioned(br#"{"measurementsVersion": 1}"#).unwrap_err(), Error::NoMeasurements);
}

#[test]
fn the_version_is_signed() {
    let signer = common::Signer::new();
    let file = map_with(r#""measurementsVersion": 5,"#);
    let sig = signer.sign(file.as_bytes());
    let signed =
        SignedMeasurements::verify_then_parse(file.as_bytes(), &sig, signer.public_key_pem().as_bytes()).unwrap();
    assert_eq!(signed.freshness().version, 5);
    // Raising the version of a signed file breaks its signature.
    let raised = file.replace("\"measurementsVersion\": 5", "\"measurementsVersion\": 6");
    assert_eq!(
        SignedMeasurements::verify_then_parse(raised.as_bytes(), &sig, signer.public_key_pem().as_bytes()).unwrap_err(),
        Error::BadSignature
    );
}
