//! The verifier-wide CRL set (`SnpVerifier::replace_crls`): AMD's per-product, per-key-kind CRLs signed by the
//! ARK, replaced atomically at run time; `revocation = "require"` with a CRL installed, without one, and with
//! a stale one; revoked VCEKs and VLEKs from a test-PKI CRL; and every bit of a CRL's signed TBS and signature.

use attest_engine::error::{Bytes, CertRole, Error};
use attest_engine::policy::Revocation;
use attest_engine::snp::{
    Check, CrlScope, MAX_INSTALLED_CRLS, OwnedTrustAnchors, Product, SnpPolicy, SnpRequest, SnpVerifier,
};
use attest_engine::x509::Crl;
use attest_engine::{Outcome, UnixTime};
use attest_test_support::{
    CrlSpec, IntermediateSpec, Leaf, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, TestPki, unix_time,
};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

static MILAN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));
static MILAN_VLEK: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek));
static GENOA: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Genoa, SigningKeyKind::Vcek));
/// Same names as MILAN, another key: its CRLs must not install.
static FOREIGN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));

const VCEK_SERIAL: [u8; 1] = [0x31];
const VLEK_SERIAL: [u8; 1] = [0x32];
static VCEK: LazyLock<Leaf> = LazyLock::new(|| MILAN.issue_leaf(&LeafSpec::new().serial(VCEK_SERIAL)));
static VLEK: LazyLock<Leaf> = LazyLock::new(|| MILAN_VLEK.issue_leaf(&LeafSpec::new().serial(VLEK_SERIAL)));
static VCEK_REPORT: LazyLock<[u8; 0x4A0]> = LazyLock::new(|| ReportBuilder::for_leaf(&VCEK).sign(&VCEK));
static VLEK_REPORT: LazyLock<[u8; 0x4A0]> =
    LazyLock::new(|| ReportBuilder::for_leaf(&VLEK).mask_chip_key(true).sign(&VLEK));

const DAY: i64 = 86_400;

fn now_i64() -> i64 {
    unix_time(2025, 6, 1, 0, 0, 0)
}

fn at(t: i64) -> UnixTime {
    UnixTime::from_secs(u64::try_from(t).unwrap())
}

fn verifier() -> SnpVerifier {
    let owned = |d: &[u8]| Cow::Owned(d.to_vec());
    let asvk = MILAN_VLEK.issue_intermediate_signed_by(&IntermediateSpec::new(), &MILAN);
    SnpVerifier::with_trust_anchors(
        attest_engine::crypto::default_provider(),
        vec![
            OwnedTrustAnchors {
                product: Product::Milan,
                ark: owned(MILAN.ark_der()),
                ask: Some(owned(MILAN.ask_der())),
                asvk: Some(Cow::Owned(asvk)),
            },
            OwnedTrustAnchors {
                product: Product::Genoa,
                ark: owned(GENOA.ark_der()),
                ask: Some(owned(GENOA.ask_der())),
                asvk: None,
            },
        ],
    )
}

/// A CRL of MILAN's ARK, fresh around now, revoking `serials`.
fn crl(serials: &[&[u8]]) -> Vec<u8> {
    let spec = serials
        .iter()
        .fold(CrlSpec::new().this_update(now_i64() - 7 * DAY).next_update(now_i64() + 7 * DAY), |s, serial| {
            s.revoke(*serial, now_i64() - DAY)
        });
    MILAN.issue_crl(&spec)
}

fn require() -> SnpPolicy {
    SnpPolicy { revocation: Revocation::Require, ..SnpPolicy::default() }
}

fn verify_vcek(v: &SnpVerifier, policy: &SnpPolicy) -> Result<Outcome, Error> {
    let req = SnpRequest::new(&*VCEK_REPORT, &VCEK.der, at(now_i64()));
    v.verify(&req, policy).map(|ok| ok.verdict().outcome(Check::Revocation))
}

fn verify_vlek(v: &SnpVerifier, policy: &SnpPolicy) -> Result<Outcome, Error> {
    let req = SnpRequest::new(&*VLEK_REPORT, &VLEK.der, at(now_i64()));
    v.verify(&req, policy).map(|ok| ok.verdict().outcome(Check::Revocation))
}

#[test]
fn a_vcek_or_vlek_revoked_by_the_test_pki_crl_is_refused() {
    let v = verifier();
    let revoking = crl(&[&VCEK_SERIAL, &VLEK_SERIAL]);
    v.replace_crls(&[(CrlScope::Vcek, &revoking), (CrlScope::Vlek, &revoking)]).unwrap();
    for policy in [SnpPolicy::default(), require()] {
        assert_eq!(
            verify_vcek(&v, &policy),
            Err(Error::Revoked { role: CertRole::Vcek, serial: Bytes::new(&VCEK_SERIAL) })
        );
        assert_eq!(
            verify_vlek(&v, &policy),
            Err(Error::Revoked { role: CertRole::Vlek, serial: Bytes::new(&VLEK_SERIAL) })
        );
    }
    // A CRL listing neither: both pass, with revocation recorded as checked.
    v.replace_crls(&[(CrlScope::Vcek, &crl(&[])), (CrlScope::Vlek, &crl(&[]))]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Ok(Outcome::Passed));
    assert_eq!(verify_vlek(&v, &require()), Ok(Outcome::Passed));
}

#[test]
fn require_needs_a_crl_covering_the_chain() {
    let v = verifier();
    // Nothing installed.
    assert_eq!(verify_vcek(&v, &require()), Err(Error::CrlMissing));
    assert_eq!(verify_vcek(&v, &SnpPolicy::default()), Ok(Outcome::Waived));
    // A VLEK CRL does not cover VCEK chains, and the other way round.
    v.replace_crls(&[(CrlScope::Vlek, &crl(&[&VCEK_SERIAL]))]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Err(Error::CrlMissing));
    assert_eq!(verify_vlek(&v, &require()), Ok(Outcome::Passed));
    v.replace_crls(&[(CrlScope::Vcek, &crl(&[&VLEK_SERIAL]))]).unwrap();
    assert_eq!(verify_vlek(&v, &require()), Err(Error::CrlMissing));
    assert_eq!(verify_vcek(&v, &require()), Ok(Outcome::Passed));
    // Another product's CRL does not cover Milan.
    let genoa = GENOA.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).next_update(now_i64() + DAY));
    v.replace_crls(&[(CrlScope::Product, &genoa)]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Err(Error::CrlMissing));
    // A product-wide CRL covers both chains.
    v.replace_crls(&[(CrlScope::Product, &crl(&[]))]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Ok(Outcome::Passed));
    assert_eq!(verify_vlek(&v, &require()), Ok(Outcome::Passed));
}

#[test]
fn a_stale_crl_is_an_error_unless_waived() {
    let v = verifier();
    let next = now_i64() - DAY;
    let stale = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - 30 * DAY).next_update(next));
    v.replace_crls(&[(CrlScope::Vcek, &stale)]).unwrap();
    let stale_err = Err(Error::CrlStale { time: at(now_i64()), next_update: Some(at(next)) });
    assert_eq!(verify_vcek(&v, &require()), stale_err);
    assert_eq!(verify_vcek(&v, &SnpPolicy::default()), stale_err);
    // The waiver accepts it (the verdict records revocation as waived), and the leaf is still checked
    // against it.
    let waived = SnpPolicy { allow_stale_crl: true, ..require() };
    assert_eq!(verify_vcek(&v, &waived), Ok(Outcome::Waived));
    assert_eq!(verify_vcek(&v, &waived), Ok(Outcome::Waived), "never served from the cache");
    let revoking = MILAN.issue_crl(
        &CrlSpec::new().this_update(now_i64() - 30 * DAY).next_update(next).revoke(VCEK_SERIAL, now_i64() - 20 * DAY),
    );
    v.replace_crls(&[(CrlScope::Vcek, &revoking)]).unwrap();
    assert!(matches!(verify_vcek(&v, &waived), Err(Error::Revoked { .. })));
    // One stale CRL among fresh ones is enough to fail: every CRL that covers the chain must be fresh.
    v.replace_crls(&[(CrlScope::Vcek, &crl(&[])), (CrlScope::Vlek, &stale)]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Ok(Outcome::Passed));
    assert!(matches!(verify_vlek(&v, &require()), Err(Error::CrlStale { .. })));
    // No nextUpdate at all: stale at every time.
    let open = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).no_next_update());
    v.replace_crls(&[(CrlScope::Vcek, &open)]).unwrap();
    assert_eq!(verify_vcek(&v, &require()), Err(Error::CrlStale { time: at(now_i64()), next_update: None }));
}

/// CRLs to install, owned.
type CrlList = Vec<(CrlScope, Vec<u8>)>;

#[test]
fn replace_crls_is_all_or_nothing() {
    let v = verifier();
    let revoking = crl(&[&VCEK_SERIAL]);
    let first = v.replace_crls(&[(CrlScope::Vcek, &revoking)]).unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].product, first[0].scope, first[0].entries), (Product::Milan, CrlScope::Vcek, 1));
    let bad_sets: [(&str, CrlList); 4] = [
        (
            "a CRL of a foreign ARK",
            vec![(CrlScope::Vcek, crl(&[])), (CrlScope::Vlek, FOREIGN.issue_crl(&CrlSpec::new()))],
        ),
        (
            "a tampered CRL",
            vec![
                (CrlScope::Vcek, crl(&[])),
                (CrlScope::Vlek, {
                    let mut c = crl(&[]);
                    let last = c.len() - 1;
                    c[last] ^= 1;
                    c
                }),
            ],
        ),
        ("two CRLs for one scope", vec![(CrlScope::Vcek, crl(&[])), (CrlScope::Vcek, crl(&[]))]),
        ("a product-wide CRL next to a VCEK CRL", vec![(CrlScope::Vcek, crl(&[])), (CrlScope::Product, crl(&[]))]),
    ];
    for (what, set) in &bad_sets {
        let set: Vec<(CrlScope, &[u8])> = set.iter().map(|(s, d)| (*s, d.as_slice())).collect();
        assert!(v.replace_crls(&set).is_err(), "{what}");
        // The old set stays, whole.
        assert_eq!(v.installed_crls(), first, "{what}");
        assert!(matches!(verify_vcek(&v, &SnpPolicy::default()), Err(Error::Revoked { .. })), "{what}");
    }
    // Too many CRLs.
    let one = crl(&[]);
    let many: Vec<(CrlScope, &[u8])> = (0..=MAX_INSTALLED_CRLS).map(|_| (CrlScope::Vcek, one.as_slice())).collect();
    assert!(matches!(v.replace_crls(&many), Err(Error::LimitExceeded { .. })));
    assert_eq!(v.installed_crls(), first);
    // An empty set removes every CRL.
    assert!(v.replace_crls(&[]).unwrap().is_empty());
    assert_eq!(verify_vcek(&v, &SnpPolicy::default()), Ok(Outcome::Waived));
}

#[test]
fn crl_refresh_due_is_the_earliest_next_update() {
    let v = verifier();
    assert_eq!(v.crl_refresh_due(), None);
    let soon = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).next_update(now_i64() + DAY));
    let later = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).next_update(now_i64() + 9 * DAY));
    let genoa = GENOA.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).next_update(now_i64() + 5 * DAY));
    v.replace_crls(&[(CrlScope::Vcek, &later), (CrlScope::Vlek, &soon), (CrlScope::Product, &genoa)]).unwrap();
    assert_eq!(v.crl_refresh_due(), Some(at(now_i64() + DAY)));
    let installed = v.installed_crls();
    assert_eq!(
        installed.iter().map(|c| c.product).collect::<Vec<_>>(),
        [Product::Milan, Product::Milan, Product::Genoa]
    );
    // set_crl replaces one product's CRLs and keeps the others'.
    assert_eq!(v.set_crl(&later).unwrap(), Product::Milan);
    let after: Vec<(Product, CrlScope)> = v.installed_crls().iter().map(|c| (c.product, c.scope)).collect();
    assert_eq!(after, [(Product::Milan, CrlScope::Product), (Product::Genoa, CrlScope::Product)]);
    assert_eq!(v.crl_refresh_due(), Some(at(now_i64() + 5 * DAY)));
}

/// A leaf verified (and cached) before a replacement is checked against the new set on its next verification.
#[test]
fn a_replacement_takes_effect_for_cached_leaves() {
    let v = verifier();
    let req = SnpRequest::new(&*VCEK_REPORT, &VCEK.der, at(now_i64()));
    v.verify(&req, &SnpPolicy::default()).unwrap();
    assert!(v.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
    v.replace_crls(&[(CrlScope::Vcek, &crl(&[&VCEK_SERIAL]))]).unwrap();
    assert!(matches!(v.verify(&req, &SnpPolicy::default()), Err(Error::Revoked { .. })));
    v.replace_crls(&[(CrlScope::Vcek, &crl(&[]))]).unwrap();
    assert!(!v.verify(&req, &require()).unwrap().cache_hit());
    assert!(v.verify(&req, &require()).unwrap().cache_hit());
}

/// Verifications racing with replacements never outlive the set they used: once a revoking set is installed,
/// every later verification refuses the leaf, whatever the cache held.
#[test]
fn replacements_racing_with_verifications_leave_no_stale_result() {
    let v = Arc::new(verifier());
    let (revoking, clean) = (crl(&[&VCEK_SERIAL]), crl(&[]));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (v, stop) = (Arc::clone(&v), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = verify_vcek(&v, &SnpPolicy::default());
                }
            })
        })
        .collect();
    for i in 0..200 {
        let set = if i % 2 == 0 { &clean } else { &revoking };
        v.replace_crls(&[(CrlScope::Vcek, set)]).unwrap();
        let result = verify_vcek(&v, &SnpPolicy::default());
        if i % 2 == 0 {
            assert_eq!(result, Ok(Outcome::Passed), "round {i}");
        } else {
            assert!(matches!(result, Err(Error::Revoked { .. })), "round {i}: {result:?}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
}

/// Every bit of the CRL's signed TBSCertList and of its signature value matters: a flipped CRL never installs.
#[test]
fn every_bit_of_a_crls_tbs_and_signature_is_refused() {
    let v = verifier();
    let good = crl(&[&VCEK_SERIAL]);
    let parsed = Crl::from_der(&good).unwrap();
    let offset = |part: &[u8]| part.as_ptr() as usize - good.as_ptr() as usize;
    let (tbs, sig) = (offset(parsed.tbs()), offset(parsed.signature()));
    let ranges = [tbs..tbs + parsed.tbs().len(), sig..sig + parsed.signature().len()];
    let mut c = good.clone();
    for range in ranges {
        for bit in range.start * 8..range.end * 8 {
            c[bit / 8] ^= 1 << (bit % 8);
            assert!(v.replace_crls(&[(CrlScope::Vcek, &c)]).is_err(), "bit {bit} (byte {:#x})", bit / 8);
            assert!(v.set_crl(&c).is_err(), "bit {bit}");
            c[bit / 8] ^= 1 << (bit % 8);
        }
    }
    assert!(v.installed_crls().is_empty());
    v.replace_crls(&[(CrlScope::Vcek, &c)]).unwrap();
}
