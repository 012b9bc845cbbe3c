//! Merge rules and comparison reports.

mod common;

use attest_measurements::{Error, Measurement, Measurements, PcrIndex, PcrStatus, parse_any};
use common::hx;
use std::collections::BTreeMap;

fn pcr(i: u32) -> PcrIndex {
    PcrIndex::new(i).unwrap()
}

/// Builds a map from (index, fill byte, length, warnOnly).
fn map(entries: &[(u32, u8, usize, bool)]) -> Measurements {
    let mut m = Measurements::new();
    for &(i, b, len, warn) in entries {
        m.insert(pcr(i), Measurement::new(&vec![b; len], warn).unwrap()).unwrap();
    }
    m
}

#[test]
fn merge_later_wins() {
    let release = map(&[(4, 1, 32, false), (8, 2, 32, false), (9, 3, 32, true)]);
    let user = map(&[(8, 0x22, 32, true), (12, 4, 32, false)]);
    let merged = release.merge(&user).unwrap();
    assert_eq!(merged, map(&[(4, 1, 32, false), (8, 0x22, 32, true), (9, 3, 32, true), (12, 4, 32, false)]));
    // Not commutative: the other order keeps the release's PCR 8.
    let reverse = user.merge(&release).unwrap();
    assert_eq!(reverse.get(pcr(8)), release.get(pcr(8)));
    // Identity and chaining.
    assert_eq!(release.merge(&Measurements::new()).unwrap(), release);
    assert_eq!(Measurements::new().merge(&release).unwrap(), release);
    let third = map(&[(8, 0x33, 32, false)]);
    assert_eq!(release.merge(&user).unwrap().merge(&third).unwrap().get(pcr(8)), third.get(pcr(8)));
}

#[test]
fn merge_keeps_one_bank() {
    let release = map(&[(4, 1, 32, false), (8, 2, 32, false)]);
    let sha384 = map(&[(8, 2, 48, false)]);
    assert_eq!(release.merge(&sha384), Err(Error::MixedLengths { index: pcr(8), expected: 32, found: 48 }));
    // Replacing every PCR switches banks cleanly.
    let all384 = map(&[(4, 1, 48, false), (8, 2, 48, false)]);
    assert_eq!(release.merge(&all384).unwrap(), all384);
}

#[test]
fn merge_strict() {
    let a = map(&[(4, 1, 32, false), (8, 2, 32, false)]);
    let same = map(&[(8, 2, 32, false), (9, 3, 32, false)]);
    assert_eq!(a.merge_strict(&same).unwrap(), map(&[(4, 1, 32, false), (8, 2, 32, false), (9, 3, 32, false)]));
    let other_value = map(&[(8, 9, 32, false)]);
    assert_eq!(a.merge_strict(&other_value), Err(Error::MergeConflict { index: pcr(8) }));
    let other_flag = map(&[(4, 1, 32, true), (8, 9, 32, false)]);
    assert_eq!(a.merge_strict(&other_flag), Err(Error::MergeConflict { index: pcr(4) }), "lowest PCR reported");
    assert_eq!(
        a.merge_strict(&map(&[(9, 3, 48, false)])),
        Err(Error::MixedLengths { index: pcr(9), expected: 32, found: 48 })
    );
}

#[test]
fn merge_parsed_files() {
    let release = parse_any(format!(r#"{{"4": "{}", "9": "{}"}}"#, hx(1, 32), hx(2, 32)).as_bytes()).unwrap();
    let user = parse_any(format!("9:\n  expected: \"{}\"\n  warnOnly: true\n", hx(3, 32)).as_bytes()).unwrap();
    let merged = release.merge(&user).unwrap();
    assert!(merged.get(pcr(9)).unwrap().is_warn_only());
    assert_eq!(merged.get(pcr(9)).unwrap().expected(), &[3; 32]);
}

#[test]
fn compare_statuses() {
    let expected = map(&[(0, 0, 32, false), (1, 1, 32, false), (2, 2, 32, true), (3, 3, 32, false), (4, 4, 32, true)]);
    let actual: BTreeMap<u32, Vec<u8>> = [
        (0, vec![0; 32]), // match
        (1, vec![9; 32]), // enforced mismatch
        (2, vec![9; 32]), // warn-only mismatch
        // 3 missing, enforced; 4 missing, warn-only
        (7, vec![7; 32]), // not expected: not reported
    ]
    .into_iter()
    .collect();
    let report = expected.compare(&actual);
    let statuses: Vec<(u8, PcrStatus)> = report.checks().iter().map(|c| (c.index.get(), c.status)).collect();
    assert_eq!(
        statuses,
        [
            (0, PcrStatus::Match),
            (1, PcrStatus::MismatchEnforced),
            (2, PcrStatus::MismatchWarnOnly),
            (3, PcrStatus::Missing),
            (4, PcrStatus::Missing)
        ]
    );
    assert!(!report.is_accepted());
    let rejections: Vec<u8> = report.rejections().map(|c| c.index.get()).collect();
    assert_eq!(rejections, [1, 3]);
    let warnings: Vec<u8> = report.warnings().map(|c| c.index.get()).collect();
    assert_eq!(warnings, [2, 4]);
    assert_eq!(report.checks()[1].actual.as_deref(), Some(&[9; 32][..]));
    assert_eq!(report.checks()[3].actual, None);
}

#[test]
fn acceptance() {
    let expected = map(&[(4, 4, 32, false), (9, 9, 32, true)]);
    let values = |v: &[(u32, Vec<u8>)]| v.iter().cloned().collect::<BTreeMap<_, _>>();
    // All match.
    assert!(expected.compare(&values(&[(4, vec![4; 32]), (9, vec![9; 32])])).is_accepted());
    // Only warn-only deviations: accepted.
    assert!(expected.compare(&values(&[(4, vec![4; 32]), (9, vec![0; 32])])).is_accepted());
    assert!(expected.compare(&values(&[(4, vec![4; 32])])).is_accepted());
    // Enforced mismatch or enforced missing: rejected.
    assert!(!expected.compare(&values(&[(4, vec![5; 32]), (9, vec![9; 32])])).is_accepted());
    assert!(!expected.compare(&values(&[(9, vec![9; 32])])).is_accepted());
    // A value from another bank (right prefix, wrong length) is a mismatch, never a match.
    assert!(!expected.compare(&values(&[(4, vec![4; 48]), (9, vec![9; 32])])).is_accepted());
    assert!(!expected.compare(&values(&[(4, vec![4; 31]), (9, vec![9; 32])])).is_accepted());
    // Nothing expected: accepted (parsed maps are never empty).
    assert!(Measurements::new().compare(&BTreeMap::new()).is_accepted());
}

#[test]
fn compare_with_lookup() {
    let expected = map(&[(4, 4, 32, false)]);
    let pcrs = [[4u8; 32]; 24];
    let report = expected.compare_with(|i| Some(&pcrs[usize::from(i.get())][..]));
    assert!(report.is_accepted());
    assert!(!expected.compare_with(|_| None).is_accepted());
}

#[test]
fn report_table() {
    let expected = map(&[(4, 4, 32, false), (9, 9, 32, true), (12, 0xc, 32, false)]);
    let actual: BTreeMap<u32, Vec<u8>> = [(4, vec![4; 32]), (9, vec![0; 32])].into_iter().collect();
    let text = expected.compare(&actual).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("PCR  STATUS"));
    assert_eq!(lines[1], format!("  4  match                 {}", hx(4, 32)));
    assert_eq!(lines[2], format!("  9  mismatch (warn-only)  expected {}", hx(9, 32)));
    assert_eq!(lines[3], format!("                           actual   {}", hx(0, 32)));
    assert_eq!(lines[4], format!(" 12  MISSING               expected {}", hx(0xc, 32)));
    assert_eq!(lines[5], "                           actual   (absent)");
    assert_eq!(lines[6], "REJECTED: 3 PCRs checked, 1 rejecting, 1 warnings");
    assert_eq!(lines.len(), 7);
}
