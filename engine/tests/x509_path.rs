//! Generic X.509 path building (`attest_engine::x509::path`) on PKIs generated per test: basicConstraints
//! (cA, pathLenConstraint), keyUsage keyCertSign, extended key usage, validity, backtracking over several
//! issuers with the same name, loops, the work budget, and the most specific error when every candidate fails.

use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::error::{CertRole, Error};
use attest_engine::x509::path::{MAX_INTERMEDIATES, MAX_PATH_DEPTH, MAX_SIGNATURE_CHECKS};
use attest_engine::x509::{Certificate, KeyPurposeId, PathOptions, VerifiedPath, verify_path, verify_path_with};
use attest_test_support::unix_time;
use attest_test_support::x509::{CertSpec, KU_CRL_SIGN, KU_DIGITAL_SIGNATURE, TestCa};

const CLIENT_AUTH: &str = "1.3.6.1.5.5.7.3.2";
const SERVER_AUTH: &str = "1.3.6.1.5.5.7.3.1";
const TCG_AIK: &str = "2.23.133.8.3";

fn now() -> UnixTime {
    UnixTime::from_civil(2025, 6, 1, 0, 0, 0).unwrap()
}

fn verify<'a>(leaf: &'a [u8], inters: &[&'a [u8]], roots: &[&'a [u8]]) -> Result<VerifiedPath<'a>, Error> {
    verify_path(default_provider(), leaf, inters, roots, now())
}

fn verify_eku<'a>(
    leaf: &'a [u8],
    inters: &[&'a [u8]],
    roots: &[&'a [u8]],
    eku: KeyPurposeId<'_>,
) -> Result<VerifiedPath<'a>, Error> {
    verify_path_with(default_provider(), leaf, inters, roots, now(), &PathOptions { required_eku: Some(eku) })
}

/// Root → `n` intermediates → leaf, each intermediate with `spec(i)` (i = 0 under the root).
fn chain(n: usize, spec: impl Fn(usize) -> CertSpec) -> (TestCa, Vec<TestCa>, Vec<u8>) {
    let root = TestCa::root("Root", &CertSpec::ca());
    let mut cas: Vec<TestCa> = Vec::new();
    for i in 0..n {
        let parent = cas.last().unwrap_or(&root);
        cas.push(parent.issue_ca(&format!("CA {i}"), &spec(i)));
    }
    let leaf = cas.last().unwrap_or(&root).issue_leaf("leaf", &CertSpec::leaf());
    (root, cas, leaf)
}

fn ders(cas: &[TestCa]) -> Vec<&[u8]> {
    cas.iter().map(|c| c.der.as_slice()).collect()
}

#[test]
fn a_plain_chain_verifies_and_reports_its_path() {
    let (root, cas, leaf) = chain(2, |_| CertSpec::ca());
    let p = verify(&leaf, &ders(&cas), &[&root.der]).unwrap();
    assert_eq!(p.depth, 4);
    assert_eq!(p.root.der(), &root.der[..]);
    // Leaf's issuer first.
    assert_eq!(p.intermediates.iter().map(Certificate::der).collect::<Vec<_>>(), [&cas[1].der[..], &cas[0].der[..]]);
    // Intermediates in any order.
    verify(&leaf, &[&cas[1].der, &cas[0].der], &[&root.der]).unwrap();
}

#[test]
fn path_len_constraint_is_enforced() {
    // CA 0 (under the root) allows `n` intermediates below it; the path has 2 below it (CA 1, CA 2).
    for (n, ok) in [(0, false), (1, false), (2, true), (9, true)] {
        let (root, cas, leaf) = chain(3, |i| if i == 0 { CertSpec::ca().path_len(n) } else { CertSpec::ca() });
        let r = verify(&leaf, &ders(&cas), &[&root.der]);
        if ok {
            r.unwrap();
        } else {
            assert_eq!(
                r.unwrap_err(),
                Error::PathLenConstraintViolated { role: CertRole::Intermediate, path_len: n, intermediates_below: 2 },
                "pathLen {n}"
            );
        }
    }
    // The root's own constraint counts too: pathLen 0 on the root admits only a leaf directly below it.
    let root = TestCa::root("Root", &CertSpec::ca().path_len(0));
    root.issue_leaf("direct", &CertSpec::leaf());
    verify(&root.issue_leaf("direct", &CertSpec::leaf()), &[], &[&root.der]).unwrap();
    let inter = root.issue_ca("CA", &CertSpec::ca());
    let leaf = inter.issue_leaf("leaf", &CertSpec::leaf());
    assert!(matches!(
        verify(&leaf, &[&inter.der], &[&root.der]),
        Err(Error::PathLenConstraintViolated { role: CertRole::Root, path_len: 0, intermediates_below: 1 })
    ));
    // AMD's shape: ASK with pathLen 0 directly under the ARK, a leaf under the ASK.
    let (root, cas, leaf) = chain(1, |_| CertSpec::ca().path_len(0));
    verify(&leaf, &ders(&cas), &[&root.der]).unwrap();
}

#[test]
fn issuers_must_be_cas_allowed_to_sign_certificates() {
    let cases: [(&str, CertSpec); 4] = [
        ("no basicConstraints", CertSpec::ca().basic_constraints(None)),
        ("cA false", CertSpec::ca().basic_constraints(Some(false))),
        ("keyUsage without keyCertSign", CertSpec::ca().key_usage(Some(KU_CRL_SIGN | KU_DIGITAL_SIGNATURE))),
        ("an end entity as issuer", CertSpec::leaf()),
    ];
    for (what, spec) in cases {
        let (root, cas, leaf) = chain(1, |_| spec.clone());
        assert_eq!(
            verify(&leaf, &ders(&cas), &[&root.der]).unwrap_err(),
            Error::NotACa { role: CertRole::Intermediate },
            "{what}"
        );
    }
    // keyUsage absent on a CA: no restriction.
    let (root, cas, leaf) = chain(1, |_| CertSpec::ca().key_usage(None));
    verify(&leaf, &ders(&cas), &[&root.der]).unwrap();
    // The leaf itself may be anything, a CA included (vetting an intermediate against a root).
    let root = TestCa::root("Root", &CertSpec::ca());
    let ca = root.issue_ca("CA", &CertSpec::ca());
    verify(&ca.der, &[], &[&root.der]).unwrap();
}

#[test]
fn required_eku_is_checked_on_the_leaf_and_on_issuers_that_have_one() {
    let root = TestCa::root("Root", &CertSpec::ca());
    let inter = root.issue_ca("CA", &CertSpec::ca());
    let aik = KeyPurposeId::TCG_AIK_CERTIFICATE;
    // The leaf lists the purpose; without an EKU the leaf is unrestricted.
    for leaf_spec in [CertSpec::leaf().eku(&[SERVER_AUTH, TCG_AIK]), CertSpec::leaf()] {
        let leaf = inter.issue_leaf("ak", &leaf_spec);
        verify_eku(&leaf, &[&inter.der], &[&root.der], aik).unwrap();
    }
    // A leaf whose EKU lacks it, or says only anyExtendedKeyUsage.
    for purposes in [&[CLIENT_AUTH][..], &["2.5.29.37.0"]] {
        let leaf = inter.issue_leaf("tls", &CertSpec::leaf().eku(purposes));
        assert_eq!(
            verify_eku(&leaf, &[&inter.der], &[&root.der], aik).unwrap_err(),
            Error::ExtendedKeyUsageNotPermitted { role: CertRole::Leaf, depth: 0 }
        );
        // With no purpose required, the same leaf verifies.
        verify(&leaf, &[&inter.der], &[&root.der]).unwrap();
    }
    // An intermediate restricted to TLS cannot issue AK certificates.
    let tls_ca = root.issue_ca("CA", &CertSpec::ca().eku(&[SERVER_AUTH, CLIENT_AUTH]));
    let leaf = tls_ca.issue_leaf("ak", &CertSpec::leaf().eku(&[TCG_AIK]));
    assert_eq!(
        verify_eku(&leaf, &[&tls_ca.der], &[&root.der], aik).unwrap_err(),
        Error::ExtendedKeyUsageNotPermitted { role: CertRole::Intermediate, depth: 1 }
    );
    verify_eku(&leaf, &[&tls_ca.der], &[&root.der], KeyPurposeId::CLIENT_AUTH).unwrap_err();
    let client = tls_ca.issue_leaf("client", &CertSpec::leaf().eku(&[CLIENT_AUTH]));
    verify_eku(&client, &[&tls_ca.der], &[&root.der], KeyPurposeId::CLIENT_AUTH).unwrap();
}

#[test]
fn validity_of_every_certificate_counts() {
    let t = |y| unix_time(y, 1, 1, 0, 0, 0);
    let (root, cas, leaf) = chain(1, |_| CertSpec::ca().validity(t(2020), t(2024)));
    assert!(matches!(
        verify(&leaf, &ders(&cas), &[&root.der]),
        Err(Error::CertExpired { role: CertRole::Intermediate, .. })
    ));
    let (root, cas, leaf) = chain(1, |_| CertSpec::ca().validity(t(2030), t(2040)));
    assert!(matches!(
        verify(&leaf, &ders(&cas), &[&root.der]),
        Err(Error::CertNotYetValid { role: CertRole::Intermediate, .. })
    ));
    let root = TestCa::root("Root", &CertSpec::ca());
    let leaf = root.issue_leaf("leaf", &CertSpec::leaf().validity(t(2020), t(2021)));
    assert!(matches!(verify(&leaf, &[], &[&root.der]), Err(Error::CertExpired { role: CertRole::Leaf, .. })));
    let old_root = TestCa::root("Root", &CertSpec::ca().validity(t(2020), t(2021)));
    let leaf = old_root.issue_leaf("leaf", &CertSpec::leaf());
    assert!(matches!(verify(&leaf, &[], &[&old_root.der]), Err(Error::CertExpired { role: CertRole::Root, .. })));
}

/// Two intermediates with the same name (and key): the first one offered is expired, the second is good.
/// Two roots with the same name: the first has another key. Path building must try the next candidate.
#[test]
fn backtracking_over_candidates_with_the_same_name() {
    let t = |y| unix_time(y, 1, 1, 0, 0, 0);
    let root = TestCa::root("Root", &CertSpec::ca());
    let inter = root.issue_ca("CA", &CertSpec::ca());
    let expired = root.certify(&inter, &CertSpec::ca().serial(2).validity(t(2020), t(2022)));
    let not_ca = root.certify(&inter, &CertSpec::ca().serial(3).basic_constraints(Some(false)));
    let leaf = inter.issue_leaf("leaf", &CertSpec::leaf());
    let p = verify(&leaf, &[&expired, &not_ca, &inter.der], &[&root.der]).unwrap();
    assert_eq!(p.intermediates[0].der(), &inter.der[..]);
    // An impostor root with the root's name but another key comes first.
    let impostor = TestCa::root("Root", &CertSpec::ca());
    let p = verify(&leaf, &[&inter.der], &[&impostor.der, &root.der]).unwrap();
    assert_eq!(p.root.der(), &root.der[..]);
    // Deeper: CA 1 exists twice, certified by two different CA 0s with the same name; only one of those
    // chains to the trusted root.
    let stray_root = TestCa::root("Stray", &CertSpec::ca());
    let ca0_good = root.issue_ca("CA 0", &CertSpec::ca());
    let ca0_stray = stray_root.issue_ca("CA 0", &CertSpec::ca());
    let ca1 = ca0_good.issue_ca("CA 1", &CertSpec::ca());
    let ca1_via_stray = ca0_stray.certify(&ca1, &CertSpec::ca().serial(7));
    let leaf = ca1.issue_leaf("leaf", &CertSpec::leaf());
    let p = verify(&leaf, &[&ca1_via_stray, &ca0_stray.der, &ca1.der, &ca0_good.der], &[&root.der]).unwrap();
    assert_eq!(p.depth, 4);
    assert_eq!(p.intermediates[1].der(), &ca0_good.der[..]);
}

#[test]
fn the_most_specific_error_is_reported_when_every_candidate_fails() {
    let t = |y| unix_time(y, 1, 1, 0, 0, 0);
    let root = TestCa::root("Root", &CertSpec::ca());
    let inter = root.issue_ca("CA", &CertSpec::ca());
    let leaf = inter.issue_leaf("leaf", &CertSpec::leaf());
    let not_ca = root.certify(&inter, &CertSpec::ca().serial(3).basic_constraints(Some(false)));
    let expired = root.certify(&inter, &CertSpec::ca().serial(2).validity(t(2020), t(2022)));
    // Not a CA vs expired: the expired one got further (it is a CA), so its error is reported, in any order.
    for inters in [[&not_ca[..], &expired[..]], [&expired[..], &not_ca[..]]] {
        assert!(
            matches!(
                verify(&leaf, &inters, &[&root.der]),
                Err(Error::CertExpired { role: CertRole::Intermediate, .. })
            ),
            "{inters:?}"
        );
    }
    // A same-name issuer whose key did not sign the leaf: a signature error, not "unknown issuer".
    let other = root.issue_ca("CA", &CertSpec::ca());
    assert_eq!(
        verify(&leaf, &[&other.der], &[&root.der]).unwrap_err(),
        Error::CertSignatureInvalid { role: CertRole::Leaf }
    );
    // No candidate at all.
    assert_eq!(verify(&leaf, &[], &[&root.der]).unwrap_err(), Error::UnknownIssuer { depth: 0 });
    // The intermediate found, but nothing above it.
    let elsewhere = TestCa::root("Elsewhere", &CertSpec::ca());
    assert_eq!(verify(&leaf, &[&inter.der], &[&elsewhere.der]).unwrap_err(), Error::UnknownIssuer { depth: 1 });
}

#[test]
fn loops_end_and_depth_is_bounded() {
    // A and B certify each other; neither chains to the trusted root.
    let a = TestCa::root("A", &CertSpec::ca());
    let b = a.issue_ca("B", &CertSpec::ca());
    let a_by_b = b.certify(&a, &CertSpec::ca().serial(9));
    let leaf = b.issue_leaf("leaf", &CertSpec::leaf());
    let trusted = TestCa::root("Trusted", &CertSpec::ca());
    assert!(matches!(verify(&leaf, &[&b.der, &a_by_b], &[&trusted.der]), Err(Error::UnknownIssuer { .. })));
    // A chain longer than MAX_PATH_DEPTH.
    let (root, cas, leaf) = chain(MAX_PATH_DEPTH - 1, |_| CertSpec::ca());
    assert!(matches!(
        verify(&leaf, &ders(&cas), &[&root.der]),
        Err(Error::LimitExceeded { limit: MAX_PATH_DEPTH, .. })
    ));
    let (root, cas, leaf) = chain(MAX_PATH_DEPTH - 2, |_| CertSpec::ca());
    assert_eq!(verify(&leaf, &ders(&cas), &[&root.der]).unwrap().depth, MAX_PATH_DEPTH);
}

/// A mesh of same-name CAs certifying each other: every path dead-ends (no route to the trusted root), and
/// trying them all would take many signature checks. The budget stops the search with a typed error.
#[test]
fn the_work_budget_ends_the_search() {
    let n = 4;
    assert!(n * n <= MAX_INTERMEDIATES);
    let keys: Vec<TestCa> = (0..n).map(|_| TestCa::root("CA", &CertSpec::ca())).collect();
    let mesh: Vec<Vec<u8>> =
        keys.iter().flat_map(|a| keys.iter().map(move |b| a.certify(b, &CertSpec::ca().serial(2)))).collect();
    let mesh: Vec<&[u8]> = mesh.iter().map(Vec::as_slice).collect();
    let leaf = keys[0].issue_leaf("leaf", &CertSpec::leaf());
    let root = TestCa::root("Root", &CertSpec::ca());
    assert_eq!(verify(&leaf, &mesh, &[&root.der]).unwrap_err(), Error::PathBudgetExceeded);
    // Fewer candidates stay within the budget and end with an ordinary "no issuer".
    let two: Vec<&[u8]> = mesh[..2].to_vec();
    assert!(matches!(
        verify(&leaf, &two, &[&root.der]),
        Err(Error::UnknownIssuer { .. } | Error::CertSignatureInvalid { .. })
    ));
    assert!(MAX_SIGNATURE_CHECKS < n * n * n);
    // Too many intermediates are refused up front.
    let many: Vec<&[u8]> = (0..=MAX_INTERMEDIATES).map(|_| mesh[0]).collect();
    assert!(matches!(verify(&leaf, &many, &[&root.der]), Err(Error::LimitExceeded { .. })));
}
