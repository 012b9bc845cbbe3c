//! Several accepted sets per variant (rolling upgrades): parsing, the label rules, selection, merge and
//! removal, and the round trip through the writer.

use attest_engine::variant::Variant;
use attest_measurements::{
    AttestationVariant, Csp, Document, Error, MAX_SETS_PER_VARIANT, ReleaseMeasurements, parse_document,
};

fn entry(image: Option<&str>, byte: u8) -> String {
    let image = image.map_or(String::new(), |i| format!(r#""image": "{i}", "#));
    format!(
        r#"{{"csp": "QEMU", "attestationVariant": "qemu-vtpm", {image}"measurements": {{"4": {{"expected": "{}", "warnOnly": false}}}}}}"#,
        format!("{byte:02x}").repeat(32)
    )
}

fn list(entries: &[String]) -> Vec<u8> {
    format!(r#"{{"version": "v1", "ref": "-", "stream": "stable", "list": [{}]}}"#, entries.join(",")).into_bytes()
}

fn root(e: Error) -> Error {
    match e {
        Error::ListEntry { error, .. } => *error,
        e => e,
    }
}

#[test]
fn labelled_sets_are_all_accepted_sets() {
    let doc = parse_document(&list(&[entry(Some("v1"), 1), entry(Some("v2"), 2)])).unwrap();
    let sets = doc.sets_for_variant(Variant::QemuVtpm).unwrap();
    assert_eq!(sets.iter().map(|s| s.image).collect::<Vec<_>>(), [Some("v1"), Some("v2")]);
    assert_eq!(sets[1].measurements.iter().next().unwrap().1.expected(), [2; 32]);
    // Readers that take one set are told, never handed one of them.
    assert_eq!(
        doc.for_variant(Variant::QemuVtpm),
        Err(Error::SeveralSets { csp: Csp::Qemu, variant: AttestationVariant::QemuVtpm, sets: 2 })
    );
    // A map is one set for every variant; a single unlabelled entry is Constellation's format, unchanged.
    let single = parse_document(&list(&[entry(None, 1)])).unwrap();
    assert_eq!(single.sets_for_variant(Variant::QemuVtpm).unwrap().len(), 1);
    assert!(single.for_variant(Variant::QemuVtpm).is_ok());
    assert!(matches!(single.sets_for_variant(Variant::AwsSevSnp), Err(Error::NotInList { .. })));
}

#[test]
fn several_sets_need_distinct_labels_and_a_bound() {
    let qemu = (Csp::Qemu, AttestationVariant::QemuVtpm);
    for (entries, want) in [
        (vec![entry(None, 1), entry(None, 2)], Error::DuplicateListEntry { csp: qemu.0, variant: qemu.1 }),
        (
            vec![entry(Some("v1"), 1), entry(None, 2)],
            Error::DuplicateImage { csp: qemu.0, variant: qemu.1, image: String::new() },
        ),
        (
            vec![entry(None, 1), entry(Some("v2"), 2)],
            Error::DuplicateImage { csp: qemu.0, variant: qemu.1, image: String::new() },
        ),
        (
            vec![entry(Some("v1"), 1), entry(Some("v1"), 2)],
            Error::DuplicateImage { csp: qemu.0, variant: qemu.1, image: "v1".into() },
        ),
        (vec![entry(Some(""), 1)], Error::InvalidImageLabel { label: String::new() }),
        (vec![entry(Some("a\\u0007"), 1)], Error::InvalidImageLabel { label: "a\u{7}".into() }),
    ] {
        assert_eq!(parse_document(&list(&entries)).map_err(root), Err(want));
    }
    let many: Vec<String> = (0..=MAX_SETS_PER_VARIANT).map(|i| entry(Some(&format!("v{i}")), i as u8)).collect();
    assert_eq!(
        parse_document(&list(&many)).map_err(root),
        Err(Error::LimitExceeded {
            what: "accepted sets per variant",
            limit: MAX_SETS_PER_VARIANT,
            found: MAX_SETS_PER_VARIANT + 1
        })
    );
}

#[test]
fn merge_then_drop_the_old_image() {
    let old = ReleaseMeasurements::parse(&list(&[entry(Some("v1"), 1)])).unwrap();
    let new = ReleaseMeasurements::parse(&list(&[entry(Some("v2"), 2)])).unwrap();
    let rollout = old.merge(&new).unwrap();
    assert_eq!(rollout.entries().len(), 2);
    assert_eq!(old.merge(&old).unwrap(), old, "merging a file with itself changes nothing");
    // Round trip through the writer keeps the labels.
    let written = rollout.to_json();
    assert!(written.contains(r#""image": "v2""#), "{written}");
    assert_eq!(ReleaseMeasurements::parse(written.as_bytes()).unwrap(), rollout);
    let done = rollout.without_image("v1").unwrap();
    assert_eq!(done.entries().len(), 1);
    assert_eq!(done.entries()[0].image.as_deref(), Some("v2"));
    assert_eq!(done.without_image("v2"), Err(Error::LastSet { csp: Csp::Qemu, variant: AttestationVariant::QemuVtpm }));
    assert_eq!(done.without_image("v9"), Err(Error::UnknownImage { image: "v9".into() }));
    // Two different sets under one label cannot be merged.
    let clash = ReleaseMeasurements::parse(&list(&[entry(Some("v1"), 3)])).unwrap();
    assert!(matches!(old.merge(&clash).map_err(root), Err(Error::DuplicateImage { .. })));
    assert!(matches!(Document::List(rollout).into_single(), Err(Error::AmbiguousList { entries: 2 })));
}
