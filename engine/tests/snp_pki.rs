//! The SEV-SNP verifier against a generated AMD-like PKI (`attest-test-support`): acceptance per product and
//! signer, revocation, validity windows, product determination, TCB/chip/signer bindings, chain shapes, the
//! verified-leaf cache and every policy check. Each rejection asserts the exact `Error` variant.

use attest_engine::error::{Bytes, CertRole, Error, ProductSource};
use attest_engine::policy::{Hex, Revocation};
use attest_engine::snp::{
    AbiVersion, Check, OwnedTrustAnchors, PlatformFlag, Product, SnpPolicy, SnpRequest, SnpVerifier, TcbComponent,
    TcbVersion,
};
use attest_engine::{Outcome, UnixTime};
use attest_test_support::{
    CrlSpec, IntermediateSpec, Leaf, LeafSpec, Product as TsProduct, ReportBuilder, SigningKeyKind, Tcb, TestPki,
    unix_time,
};
use std::borrow::Cow;
use std::sync::LazyLock;

// ---- Fixtures ------------------------------------------------------------------------------------------

/// The PKIs are generated once per test binary (RSA key generation dominates the run time).
static MILAN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));
/// A Milan VLEK PKI whose ASVK is re-certified by `MILAN`'s ARK (see `MILAN_ASVK`), so one anchor holds both.
static MILAN_VLEK: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vlek));
static MILAN_ASVK: LazyLock<Vec<u8>> =
    LazyLock::new(|| MILAN_VLEK.issue_intermediate_signed_by(&IntermediateSpec::new(), &MILAN));
static GENOA: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Genoa, SigningKeyKind::Vcek));
static TURIN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Turin, SigningKeyKind::Vcek));
/// Another Milan PKI: same names and serials as `MILAN`, different keys.
static FOREIGN: LazyLock<TestPki> = LazyLock::new(|| TestPki::new(TsProduct::Milan, SigningKeyKind::Vcek));

const AMD: &str = "1.3.6.1.4.1.3704.1";

fn secs(t: i64) -> UnixTime {
    UnixTime::from_secs(u64::try_from(t).unwrap())
}

/// The trusted time of most tests: 2025-06-01T00:00:00Z.
fn now_i64() -> i64 {
    unix_time(2025, 6, 1, 0, 0, 0)
}

fn now() -> UnixTime {
    secs(now_i64())
}

const DAY: i64 = 86_400;

fn engine_product(p: TsProduct) -> Product {
    match p {
        TsProduct::Milan => Product::Milan,
        TsProduct::Genoa => Product::Genoa,
        TsProduct::Turin => Product::Turin,
    }
}

fn owned(der: &[u8]) -> Cow<'static, [u8]> {
    Cow::Owned(der.to_vec())
}

/// Anchors of a VCEK PKI (ARK + ASK).
fn anchors(pki: &TestPki) -> OwnedTrustAnchors {
    assert_eq!(pki.kind(), SigningKeyKind::Vcek);
    OwnedTrustAnchors {
        product: engine_product(pki.product()),
        ark: owned(pki.ark_der()),
        ask: Some(owned(pki.ask_der())),
        asvk: None,
    }
}

/// Milan anchors with both the ASK and the ASVK.
fn milan_anchors() -> OwnedTrustAnchors {
    OwnedTrustAnchors { asvk: Some(owned(&MILAN_ASVK)), ..anchors(&MILAN) }
}

fn verifier(anchors: Vec<OwnedTrustAnchors>) -> SnpVerifier {
    SnpVerifier::with_trust_anchors(attest_engine::crypto::default_provider(), anchors)
}

fn milan_verifier() -> SnpVerifier {
    verifier(vec![milan_anchors()])
}

fn all_verifier() -> SnpVerifier {
    verifier(vec![milan_anchors(), anchors(&GENOA), anchors(&TURIN)])
}

fn request<'a>(report: &'a [u8], leaf: &'a Leaf) -> SnpRequest<'a> {
    SnpRequest::new(report, &leaf.der, now())
}

fn engine_tcb(t: Tcb) -> TcbVersion {
    TcbVersion { fmc: t.fmc, bootloader: t.bl, tee: t.tee, snp: t.snp, microcode: t.ucode }
}

#[track_caller]
fn assert_all_run(v: &attest_engine::snp::VerifiedReport<'_>) {
    let not_run: Vec<Check> = v.verdict().iter().filter(|(_, o)| *o == Outcome::NotRun).map(|(c, _)| c).collect();
    assert!(not_run.is_empty(), "checks not run on success: {not_run:?}");
}

#[track_caller]
fn verify_err(v: &SnpVerifier, req: &SnpRequest<'_>, policy: &SnpPolicy) -> Error {
    match v.verify(req, policy) {
        Ok(ok) => panic!("accepted, expected a rejection: {:?}", ok.verdict()),
        Err(e) => e,
    }
}

// ---- Acceptance ----------------------------------------------------------------------------------------

#[test]
fn milan_genoa_turin_reports_accept() {
    let v = all_verifier();
    for (pki, version) in [(&*MILAN, 2), (&*GENOA, 3), (&*TURIN, 5)] {
        let leaf = pki.issue_leaf(&LeafSpec::new());
        let mut b = ReportBuilder::for_leaf(&leaf).version(version).report_data([9; 64]);
        if version == 5 {
            b = b.launch_mit_vector(0x3).current_mit_vector(0x7);
        }
        let report = b.sign(&leaf);
        let mut req = request(&report, &leaf);
        req.report_data = Some(&[9; 64]);
        let ok = v.verify(&req, &SnpPolicy::default()).unwrap_or_else(|e| panic!("{}: {e}", pki.product()));
        assert_eq!(ok.product(), engine_product(pki.product()));
        assert_eq!(ok.signer(), CertRole::Vcek);
        assert_eq!(ok.report().version(), version);
        assert_eq!(ok.reported_tcb(), engine_tcb(leaf.tcb));
        assert_eq!(ok.verdict().outcome(Check::ChipIdBinding), Outcome::Passed);
        assert_eq!(ok.verdict().outcome(Check::ReportData), Outcome::Passed);
        assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Waived);
        assert!(!ok.cache_hit());
        assert_all_run(&ok);
        if pki.product() == TsProduct::Turin {
            assert_eq!(ok.reported_tcb().fmc, Some(1));
            assert_eq!(leaf.hwid.as_ref().map(Vec::len), Some(8));
            assert_eq!(ok.report().current_mit_vector(), Some(7));
        }
        // The caller may also hand over the pinned chain explicitly.
        let mut req = request(&report, &leaf);
        req.intermediate = Some(pki.ask_der());
        req.root = Some(pki.ark_der());
        req.product = Some(engine_product(pki.product()));
        assert!(v.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
    }
}

#[test]
fn vlek_report_accepts_through_asvk_with_chip_id_masked() {
    let v = milan_verifier();
    let leaf = MILAN_VLEK.issue_leaf(&LeafSpec::new());
    assert!(leaf.hwid.is_none());
    let report = ReportBuilder::for_leaf(&leaf).mask_chip_key(true).sign(&leaf);
    let ok = v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert_eq!(ok.signer(), CertRole::Vlek);
    assert_eq!(ok.product(), Product::Milan);
    assert!(ok.report().mask_chip_key());
    assert_eq!(ok.report().chip_id(), &[0; 64]);
    assert_eq!(ok.verdict().outcome(Check::ChipIdBinding), Outcome::Waived);
    assert_eq!(ok.verdict().outcome(Check::SigningKey), Outcome::Passed);
    assert_all_run(&ok);
    // The same through the chain-only API, with the (non-pinned, ARK-signed) ASVK supplied.
    let chain = attest_engine::snp::ChainRequest {
        leaf: &leaf.der,
        intermediate: Some(&MILAN_ASVK),
        root: Some(MILAN.ark_der()),
        product: None,
        time: now(),
    };
    let c = v.verify_chain_only(&chain, &SnpPolicy::default()).unwrap();
    assert_eq!((c.product, c.role), (Product::Milan, CertRole::Vlek));
    // A verifier whose Milan anchor has no ASVK cannot place the VLEK.
    let no_asvk = verifier(vec![anchors(&MILAN)]);
    assert_eq!(
        verify_err(&no_asvk, &request(&report, &leaf), &SnpPolicy::default()),
        Error::IssuerMismatch { role: CertRole::Vlek }
    );
}

// ---- Revocation ----------------------------------------------------------------------------------------

fn fresh_crl() -> CrlSpec {
    CrlSpec::new().this_update(now_i64() - 30 * DAY).next_update(now_i64() + 30 * DAY)
}

#[test]
fn crl_revoking_the_ask_rejects() {
    let v = milan_verifier();
    let crl = MILAN.issue_crl(&fresh_crl().revoke(MILAN.ask_serial(), now_i64() - DAY));
    assert_eq!(v.set_crl(&crl).unwrap(), Product::Milan);
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::Revoked { role: CertRole::Ask, serial: Bytes::new(&MILAN.ask_serial()) }
    );
}

#[test]
fn crl_revoking_the_vcek_rejects() {
    let v = milan_verifier();
    let serial = [0x4B, 0x17, 0x02];
    let leaf = MILAN.issue_leaf(&LeafSpec::new().serial(serial));
    let other = MILAN.issue_leaf(&LeafSpec::new().serial([0x4B, 0x17, 0x03]));
    v.set_crl(&MILAN.issue_crl(&fresh_crl().revoke(serial, now_i64() - DAY))).unwrap();
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::Revoked { role: CertRole::Vcek, serial: Bytes::new(&serial) }
    );
    // A leaf with a neighbouring serial is not affected, and the check is recorded as passed.
    let report = ReportBuilder::for_leaf(&other).sign(&other);
    let ok = v.verify(&request(&report, &other), &SnpPolicy::default()).unwrap();
    assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Passed);
}

#[test]
fn stale_crl_rejects_unless_waived() {
    let next = now_i64() - DAY;
    let crl = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - 60 * DAY).next_update(next));
    let v = milan_verifier();
    v.set_crl(&crl).unwrap();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CrlStale { time: now(), next_update: Some(secs(next)) }
    );
    // nextUpdate itself is still fresh.
    let mut at_next = request(&report, &leaf);
    at_next.time = secs(next);
    v.verify(&at_next, &SnpPolicy::default()).unwrap();
    let waived = SnpPolicy { allow_stale_crl: true, ..SnpPolicy::default() };
    let v = milan_verifier();
    v.set_crl(&crl).unwrap();
    v.verify(&request(&report, &leaf), &waived).unwrap();
    // A CRL without nextUpdate is stale too.
    let v = milan_verifier();
    v.set_crl(&MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - DAY).no_next_update())).unwrap();
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CrlStale { time: now(), next_update: None }
    );
}

#[test]
fn crl_not_yet_valid_rejects() {
    let this = now_i64() + DAY;
    let v = milan_verifier();
    v.set_crl(&MILAN.issue_crl(&CrlSpec::new().this_update(this).next_update(this + 30 * DAY))).unwrap();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CrlNotYetValid { time: now(), this_update: secs(this) }
    );
}

#[test]
fn crl_from_another_ark_is_refused() {
    let v = milan_verifier();
    // Same issuer name (ARK-Milan), different key.
    assert_eq!(v.set_crl(&FOREIGN.issue_crl(&fresh_crl())), Err(Error::CrlSignatureInvalid));
    // A Genoa CRL when only Milan is trusted.
    assert_eq!(v.set_crl(&GENOA.issue_crl(&fresh_crl())), Err(Error::CrlSignatureInvalid));
    // A tampered CRL.
    let mut crl = MILAN.issue_crl(&fresh_crl());
    let last = crl.len() - 1;
    crl[last] ^= 1;
    assert_eq!(v.set_crl(&crl), Err(Error::CrlSignatureInvalid));
    // Nothing was installed: revocation stays waived.
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let ok = v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Waived);
}

#[test]
fn revocation_require_needs_a_crl_and_records_the_outcome() {
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let require = SnpPolicy { revocation: Revocation::Require, ..SnpPolicy::default() };
    let v = milan_verifier();
    assert_eq!(verify_err(&v, &request(&report, &leaf), &require), Error::CrlMissing);
    // Without a CRL the default policy waives revocation; a leaf cached that way is not good enough for
    // `Require` either.
    let ok = v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Waived);
    assert_eq!(verify_err(&v, &request(&report, &leaf), &require), Error::CrlMissing);
    // With a fresh CRL: passed, cold and warm.
    v.set_crl(&MILAN.issue_crl(&fresh_crl())).unwrap();
    let ok = v.verify(&request(&report, &leaf), &require).unwrap();
    assert!(!ok.cache_hit());
    assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Passed);
    let ok = v.verify(&request(&report, &leaf), &require).unwrap();
    assert!(ok.cache_hit());
    assert_eq!(ok.verdict().outcome(Check::Revocation), Outcome::Passed);
    assert_all_run(&ok);
}

#[test]
fn set_crl_clears_the_cache() {
    let v = milan_verifier();
    let serial = [0x21];
    let leaf = MILAN.issue_leaf(&LeafSpec::new().serial(serial));
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert!(v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap().cache_hit());
    assert_eq!(v.cached_leaves(), 1);
    v.set_crl(&MILAN.issue_crl(&fresh_crl().revoke(serial, now_i64() - DAY))).unwrap();
    assert_eq!(v.cached_leaves(), 0);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::Revoked { role: CertRole::Vcek, serial: Bytes::new(&serial) }
    );
    // Replacing the CRL by one that does not list the leaf re-admits it.
    v.set_crl(&MILAN.issue_crl(&fresh_crl())).unwrap();
    v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
}

/// A leaf verified under `allow_stale_crl` is cached; a later verification under a policy without the
/// waiver must not inherit it.
#[test]
fn stale_crl_waiver_does_not_leak_through_the_cache() {
    let v = milan_verifier();
    let crl = MILAN.issue_crl(&CrlSpec::new().this_update(now_i64() - 60 * DAY).next_update(now_i64() - DAY));
    v.set_crl(&crl).unwrap();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let waived = SnpPolicy { allow_stale_crl: true, ..SnpPolicy::default() };
    v.verify(&request(&report, &leaf), &waived).unwrap();
    assert_eq!(
        v.verify(&request(&report, &leaf), &SnpPolicy::default()).map(|r| r.cache_hit()),
        Err(Error::CrlStale { time: now(), next_update: Some(secs(now_i64() - DAY)) })
    );
}

/// A cold verification before the CRL's thisUpdate fails with `CrlNotYetValid`; a warm one must too.
#[test]
fn warm_verify_before_crl_this_update_matches_cold() {
    let this = now_i64() - 30 * DAY;
    let crl = MILAN.issue_crl(&CrlSpec::new().this_update(this).next_update(now_i64() + 30 * DAY));
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let mut early = request(&report, &leaf);
    early.time = secs(this - DAY);
    // Cold: refused.
    let cold = milan_verifier();
    cold.set_crl(&crl).unwrap();
    let want = Error::CrlNotYetValid { time: early.time, this_update: secs(this) };
    assert_eq!(verify_err(&cold, &early, &SnpPolicy::default()), want);
    // Warm: the same request after the leaf was cached at a later time.
    let warm = milan_verifier();
    warm.set_crl(&crl).unwrap();
    warm.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert_eq!(warm.verify(&early, &SnpPolicy::default()).map(|r| r.cache_hit()), Err(want));
}

// ---- Validity windows ----------------------------------------------------------------------------------

#[test]
fn ark_expired_or_not_yet_valid() {
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let (nb, na) = (now_i64() - 400 * DAY, now_i64() - DAY);
    let v = verifier(vec![OwnedTrustAnchors { ark: owned(&MILAN.reissue_ark(nb, na)), ..anchors(&MILAN) }]);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CertExpired { role: CertRole::Ark, time: now(), not_after: secs(na) }
    );
    let (nb, na) = (now_i64() + DAY, now_i64() + 400 * DAY);
    let v = verifier(vec![OwnedTrustAnchors { ark: owned(&MILAN.reissue_ark(nb, na)), ..anchors(&MILAN) }]);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CertNotYetValid { role: CertRole::Ark, time: now(), not_before: secs(nb) }
    );
}

#[test]
fn ask_expired_or_not_yet_valid() {
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let (nb, na) = (now_i64() - 400 * DAY, now_i64() - 1);
    let expired = MILAN.issue_intermediate(&IntermediateSpec::new().validity(nb, na));
    let v = verifier(vec![OwnedTrustAnchors { ask: Some(owned(&expired)), ..anchors(&MILAN) }]);
    let want = Error::CertExpired { role: CertRole::Ask, time: now(), not_after: secs(na) };
    assert_eq!(verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()), want);
    // The same ASK supplied by the caller (not pinned, but signed by the pinned ARK).
    let v = milan_verifier();
    let mut req = request(&report, &leaf);
    req.intermediate = Some(&expired);
    assert_eq!(verify_err(&v, &req, &SnpPolicy::default()), want);
    let (nb, na) = (now_i64() + 1, now_i64() + 400 * DAY);
    let future = MILAN.issue_intermediate(&IntermediateSpec::new().validity(nb, na));
    let v = verifier(vec![OwnedTrustAnchors { ask: Some(owned(&future)), ..anchors(&MILAN) }]);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CertNotYetValid { role: CertRole::Ask, time: now(), not_before: secs(nb) }
    );
}

#[test]
fn vcek_expired_or_not_yet_valid_with_inclusive_bounds() {
    let v = milan_verifier();
    let (nb, na) = (now_i64() - 10 * DAY, now_i64() + 10 * DAY);
    let leaf = MILAN.issue_leaf(&LeafSpec::new().validity(nb, na));
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    for (t, ok) in [(nb - 1, false), (nb, true), (na, true), (na + 1, false)] {
        let fresh = milan_verifier();
        let mut req = request(&report, &leaf);
        req.time = secs(t);
        match (fresh.verify(&req, &SnpPolicy::default()), ok) {
            (Ok(_), true) => {}
            (Err(Error::CertNotYetValid { role: CertRole::Vcek, time, not_before }), false) if t < nb => {
                assert_eq!((time, not_before), (secs(t), secs(nb)));
            }
            (Err(Error::CertExpired { role: CertRole::Vcek, time, not_after }), false) if t > na => {
                assert_eq!((time, not_after), (secs(t), secs(na)));
            }
            (other, _) => panic!("at {t}: {:?}", other.map(|r| r.cache_hit())),
        }
    }
    // The VLEK side reports its own role.
    let vlek = MILAN_VLEK.issue_leaf(&LeafSpec::new().validity(nb, na));
    let report = ReportBuilder::for_leaf(&vlek).sign(&vlek);
    let mut req = request(&report, &vlek);
    req.time = secs(na + 1);
    assert_eq!(
        verify_err(&v, &req, &SnpPolicy::default()),
        Error::CertExpired { role: CertRole::Vlek, time: secs(na + 1), not_after: secs(na) }
    );
}

// ---- Products ------------------------------------------------------------------------------------------

#[test]
fn genoa_leaf_claimed_as_milan_is_a_product_mismatch() {
    let v = all_verifier();
    let leaf = GENOA.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).version(2).sign(&leaf);
    let mut req = request(&report, &leaf);
    req.product = Some(Product::Milan);
    assert_eq!(
        verify_err(&v, &req, &SnpPolicy::default()),
        Error::ProductMismatch {
            expected: Product::Milan,
            expected_source: ProductSource::Caller,
            found: Product::Genoa,
            found_source: ProductSource::CertificateProductName,
        }
    );
    // With a v3 report the CPUID is the first source to disagree with the caller.
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let mut req = request(&report, &leaf);
    req.product = Some(Product::Milan);
    assert_eq!(
        verify_err(&v, &req, &SnpPolicy::default()),
        Error::ProductMismatch {
            expected: Product::Milan,
            expected_source: ProductSource::Caller,
            found: Product::Genoa,
            found_source: ProductSource::ReportCpuid,
        }
    );
    // The same mismatch once the leaf is cached.
    req.product = None;
    v.verify(&req, &SnpPolicy::default()).unwrap();
    req.product = Some(Product::Milan);
    assert!(matches!(verify_err(&v, &req, &SnpPolicy::default()), Error::ProductMismatch { .. }));
}

#[test]
fn report_cpuid_genoa_with_milan_vcek_is_a_product_mismatch() {
    let v = all_verifier();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let (f, m, s) = TsProduct::Genoa.cpuid();
    let report = ReportBuilder::for_leaf(&leaf).version(3).cpuid(f, m, s).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::ProductMismatch {
            expected: Product::Genoa,
            expected_source: ProductSource::ReportCpuid,
            found: Product::Milan,
            found_source: ProductSource::CertificateProductName,
        }
    );
    // Warm: the leaf verified through a matching report first.
    let good = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    v.verify(&request(&good, &leaf), &SnpPolicy::default()).unwrap();
    assert!(matches!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::ProductMismatch { found: Product::Milan, .. }
    ));
    // A CPUID that names no product.
    let report = ReportBuilder::for_leaf(&leaf).cpuid(0x17, 0x31, 0).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::UnsupportedProduct { source: ProductSource::ReportCpuid }
    );
}

#[test]
fn product_unknown_without_any_source() {
    let v = all_verifier();
    let leaf = MILAN.issue_leaf(&LeafSpec::new().without_extension(&format!("{AMD}.2")));
    let report = ReportBuilder::for_leaf(&leaf).version(2).sign(&leaf);
    assert_eq!(verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()), Error::ProductUnknown);
    // The caller can supply it.
    let mut req = request(&report, &leaf);
    req.product = Some(Product::Milan);
    assert_eq!(v.verify(&req, &SnpPolicy::default()).unwrap().product(), Product::Milan);
}

#[test]
fn unsupported_product_name() {
    let v = all_verifier();
    for name in ["Naples", "Rome", "milan", ""] {
        let leaf = MILAN.issue_leaf(&LeafSpec::new().product_name(name));
        let report = ReportBuilder::for_leaf(&leaf).version(2).sign(&leaf);
        assert_eq!(
            verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
            Error::UnsupportedProduct { source: ProductSource::CertificateProductName },
            "{name:?}"
        );
    }
}

#[test]
fn product_without_anchor_is_untrusted() {
    let v = verifier(vec![milan_anchors()]);
    let leaf = GENOA.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::UntrustedCertificate { role: CertRole::Ark, product: Product::Genoa }
    );
}

// ---- Bindings ------------------------------------------------------------------------------------------

#[test]
fn reported_tcb_must_equal_the_leaf_spls() {
    let v = all_verifier();
    for pki in [&*MILAN, &*GENOA, &*TURIN] {
        let leaf = pki.issue_leaf(&LeafSpec::new());
        let cert = leaf.tcb;
        let mut cases = vec![
            (TcbComponent::Bootloader, Tcb { bl: cert.bl + 1, ..cert }, cert.bl + 1, cert.bl),
            (TcbComponent::Tee, Tcb { tee: cert.tee + 1, ..cert }, cert.tee + 1, cert.tee),
            (TcbComponent::Snp, Tcb { snp: cert.snp - 1, ..cert }, cert.snp - 1, cert.snp),
            (TcbComponent::Microcode, Tcb { ucode: cert.ucode + 1, ..cert }, cert.ucode + 1, cert.ucode),
        ];
        if let Some(fmc) = cert.fmc {
            cases.push((TcbComponent::Fmc, Tcb { fmc: Some(fmc + 1), ..cert }, fmc + 1, fmc));
        }
        let product = pki.product();
        for (component, reported, report, certificate) in cases {
            let r = ReportBuilder::for_leaf(&leaf)
                .version(if product == TsProduct::Turin { 5 } else { 3 })
                .reported_tcb(reported.encode(product))
                .sign(&leaf);
            assert_eq!(
                verify_err(&v, &request(&r, &leaf), &SnpPolicy::default()),
                Error::TcbMismatch { component, report, certificate },
                "{product} {component}"
            );
        }
    }
}

#[test]
fn chip_id_must_equal_the_hwid() {
    let v = all_verifier();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let mut chip = leaf.chip_id();
    chip[63] ^= 1;
    let report = ReportBuilder::for_leaf(&leaf).chip_id(chip).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::ChipIdMismatch { report: Bytes::new(&chip), certificate: Bytes::new(leaf.hwid.as_ref().unwrap()) }
    );
    // Turin compares the 8-byte hwID with CHIP_ID[0..8].
    let leaf = TURIN.issue_leaf(&LeafSpec::new());
    let mut chip = leaf.chip_id();
    chip[7] ^= 0x80;
    let report = ReportBuilder::for_leaf(&leaf).version(5).chip_id(chip).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::ChipIdMismatch { report: Bytes::new(&chip[..8]), certificate: Bytes::new(leaf.hwid.as_ref().unwrap()) }
    );
    // A Milan VCEK whose hwID has Turin's length is malformed for the product.
    let leaf = MILAN.issue_leaf(&LeafSpec::new().hwid([1u8; 8]));
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::AmdExtension { extension: "hwID", reason: "wrong length for the product" }
    );
}

#[test]
fn signing_key_must_match_the_leaf_kind() {
    let v = milan_verifier();
    let vcek = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&vcek).signing_key(SigningKeyKind::Vlek).sign(&vcek);
    assert_eq!(
        verify_err(&v, &request(&report, &vcek), &SnpPolicy::default()),
        Error::SigningKeyMismatch { report: CertRole::Vlek, certificate: CertRole::Vcek }
    );
    let vlek = MILAN_VLEK.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&vlek).signing_key(SigningKeyKind::Vcek).sign(&vlek);
    assert_eq!(
        verify_err(&v, &request(&report, &vlek), &SnpPolicy::default()),
        Error::SigningKeyMismatch { report: CertRole::Vcek, certificate: CertRole::Vlek }
    );
}

#[test]
fn missing_amd_extensions_are_named() {
    let v = all_verifier();
    let mut cases: Vec<(&TestPki, LeafSpec, &str)> = vec![
        (&MILAN, LeafSpec::new().without_extension(&format!("{AMD}.3.1")), "blSPL"),
        (&MILAN, LeafSpec::new().without_extension(&format!("{AMD}.3.2")), "teeSPL"),
        (&GENOA, LeafSpec::new().without_extension(&format!("{AMD}.3.3")), "snpSPL"),
        (&GENOA, LeafSpec::new().without_extension(&format!("{AMD}.3.8")), "ucodeSPL"),
        (&TURIN, LeafSpec::new().without_extension(&format!("{AMD}.3.9")), "fmcSPL"),
        (&MILAN, LeafSpec::new().no_hwid(), "hwID"),
    ];
    for (pki, spec, extension) in cases.drain(..) {
        let leaf = pki.issue_leaf(&spec);
        let report = ReportBuilder::for_leaf(&leaf).version(5).sign(&leaf);
        assert_eq!(
            verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
            Error::MissingAmdExtension { role: CertRole::Vcek, extension },
            "{extension}"
        );
    }
}

// ---- Chain ---------------------------------------------------------------------------------------------

#[test]
fn leaf_signed_by_another_ask_is_refused() {
    let v = milan_verifier();
    let leaf = FOREIGN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert_eq!(
        verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CertSignatureInvalid { role: CertRole::Vcek }
    );
}

#[test]
fn supplied_root_must_be_the_pinned_ark() {
    let v = milan_verifier();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let want = Error::UntrustedCertificate { role: CertRole::Ark, product: Product::Milan };
    let mut req = request(&report, &leaf);
    req.root = Some(FOREIGN.ark_der());
    assert_eq!(verify_err(&v, &req, &SnpPolicy::default()), want);
    // The same ARK key re-issued with another validity is still not the pinned certificate.
    let reissued = MILAN.reissue_ark(now_i64() - DAY, now_i64() + DAY);
    req.root = Some(&reissued);
    assert_eq!(verify_err(&v, &req, &SnpPolicy::default()), want);
    // Warm: caching the leaf first changes nothing.
    v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    assert_eq!(verify_err(&v, &req, &SnpPolicy::default()), want);
    req.root = Some(MILAN.ark_der());
    assert!(v.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
}

#[test]
fn supplied_intermediate_must_be_signed_by_the_pinned_ark() {
    let v = milan_verifier();
    // FOREIGN's ASK key, certified by MILAN's ARK: not pinned, but the pinned ARK signed it.
    let cross = FOREIGN.issue_intermediate_signed_by(&IntermediateSpec::new(), &MILAN);
    let leaf = FOREIGN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let mut req = request(&report, &leaf);
    req.intermediate = Some(&cross);
    let ok = v.verify(&req, &SnpPolicy::default()).unwrap();
    assert!(!ok.cache_hit());
    assert_all_run(&ok);
    assert!(v.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
    // FOREIGN's own ASK (signed by FOREIGN's ARK) is refused, even with the leaf cached.
    req.intermediate = Some(FOREIGN.ask_der());
    assert_eq!(verify_err(&v, &req, &SnpPolicy::default()), Error::CertSignatureInvalid { role: CertRole::Ask });
    let fresh = milan_verifier();
    assert_eq!(verify_err(&fresh, &req, &SnpPolicy::default()), Error::CertSignatureInvalid { role: CertRole::Ask });
    // Without an intermediate, the pinned ASK does not sign FOREIGN's leaf.
    assert_eq!(
        verify_err(&fresh, &request(&report, &leaf), &SnpPolicy::default()),
        Error::CertSignatureInvalid { role: CertRole::Vcek }
    );
    // A re-issued pinned-key ASK with another serial is accepted for MILAN's leaves.
    let reissued = MILAN.issue_intermediate(&IntermediateSpec::new().serial([0x01, 0x00, 0x09]));
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    let mut req = request(&report, &leaf);
    req.intermediate = Some(&reissued);
    fresh.verify(&req, &SnpPolicy::default()).unwrap();
    // An intermediate whose subject is not the leaf's issuer.
    let renamed = MILAN.issue_intermediate(&IntermediateSpec::new().common_name("SEV-Other"));
    req.intermediate = Some(&renamed);
    let fresh = milan_verifier();
    assert_eq!(verify_err(&fresh, &req, &SnpPolicy::default()), Error::IssuerMismatch { role: CertRole::Vcek });
}

// ---- Cache ---------------------------------------------------------------------------------------------

#[test]
fn warm_verify_hits_and_expires_with_the_leaf() {
    let v = milan_verifier();
    let na = now_i64() + DAY;
    let leaf = MILAN.issue_leaf(&LeafSpec::new().not_after(na));
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    assert!(!v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap().cache_hit());
    assert!(v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap().cache_hit());
    assert_eq!(v.cached_leaves(), 1);
    let mut req = request(&report, &leaf);
    req.time = secs(na);
    assert!(v.verify(&req, &SnpPolicy::default()).unwrap().cache_hit());
    req.time = secs(na + 1);
    assert_eq!(
        verify_err(&v, &req, &SnpPolicy::default()),
        Error::CertExpired { role: CertRole::Vcek, time: secs(na + 1), not_after: secs(na) }
    );
    assert_eq!(v.cached_leaves(), 0);
    // Verification as of an earlier time (before the leaf's notBefore) does not use the entry either.
    let nb = now_i64() - DAY;
    let leaf = MILAN.issue_leaf(&LeafSpec::new().not_before(nb));
    let report = ReportBuilder::for_leaf(&leaf).sign(&leaf);
    v.verify(&request(&report, &leaf), &SnpPolicy::default()).unwrap();
    let mut req = request(&report, &leaf);
    req.time = secs(nb - 1);
    assert_eq!(
        verify_err(&v, &req, &SnpPolicy::default()),
        Error::CertNotYetValid { role: CertRole::Vcek, time: secs(nb - 1), not_before: secs(nb) }
    );
}

#[test]
fn capacity_one_evicts_and_capacity_zero_never_hits() {
    let a = MILAN.issue_leaf(&LeafSpec::new());
    let b = MILAN.issue_leaf(&LeafSpec::new());
    let ra = ReportBuilder::for_leaf(&a).sign(&a);
    let rb = ReportBuilder::for_leaf(&b).sign(&b);
    let p = SnpPolicy::default();
    let v = milan_verifier().with_cache_capacity(1);
    let hits = |v: &SnpVerifier, r: &[u8], l: &Leaf| v.verify(&request(r, l), &p).unwrap().cache_hit();
    assert!(!hits(&v, &ra, &a));
    assert!(hits(&v, &ra, &a));
    assert!(!hits(&v, &rb, &b));
    assert_eq!(v.cached_leaves(), 1);
    assert!(hits(&v, &rb, &b));
    assert!(!hits(&v, &ra, &a), "a was evicted by b");
    assert!(!hits(&v, &rb, &b), "b was evicted by a");
    let v = milan_verifier().with_cache_capacity(0);
    for _ in 0..3 {
        assert!(!hits(&v, &ra, &a));
        assert_eq!(v.cached_leaves(), 0);
    }
}

// ---- Policy --------------------------------------------------------------------------------------------

/// POLICY: reserved bit 17, single socket (bit 20), ABI 1.55 (0x0137); SMT, debug and migration agent clear.
const GUEST_POLICY: u64 = (1 << 17) | (1 << 20) | 0x0137;
/// PLATFORM_INFO: SMT enabled and ECC.
const PLATFORM_INFO: u64 = 0b101;

fn policy_report(leaf: &Leaf) -> ReportBuilder {
    ReportBuilder::for_leaf(leaf)
        .report_data([0x77; 64])
        .measurement([0x11; 48])
        .host_data([0x22; 32])
        .id_key_digest([0x33; 48])
        .author_key_digest([0x44; 48])
        .family_id([0x55; 16])
        .image_id([0x66; 16])
        .guest_svn(7)
        .policy(GUEST_POLICY)
        .platform_info(PLATFORM_INFO)
        .current_version(1, 55, 20)
        .committed_version(1, 55, 20)
}

/// A policy configuring every check, satisfied by `policy_report`.
fn strict_policy(leaf: &Leaf) -> SnpPolicy {
    let tcb = Some(engine_tcb(leaf.tcb));
    SnpPolicy {
        min_report_version: 3,
        max_report_version: 3,
        products: vec![Product::Milan],
        vmpl: Some(0),
        allow_debug: false,
        allow_migration_agent: false,
        allow_smt: false,
        require_single_socket: true,
        min_abi: Some(AbiVersion { major: 1, minor: 55 }),
        min_guest_svn: Some(7),
        report_data: Some(Hex([0x77; 64])),
        measurements: vec![Hex([0x10; 48]), Hex([0x11; 48])],
        host_data: Some(Hex([0x22; 32])),
        id_key_digests: vec![Hex([0x33; 48])],
        author_key_digests: vec![Hex([0x44; 48])],
        family_id: Some(Hex([0x55; 16])),
        image_id: Some(Hex([0x66; 16])),
        chip_ids: vec![Hex(leaf.chip_id())],
        required_platform_info: vec![PlatformFlag::SmtEnabled, PlatformFlag::EccEnabled],
        forbidden_platform_info: vec![PlatformFlag::TsmeEnabled],
        min_reported_tcb: tcb,
        min_committed_tcb: tcb,
        min_launch_tcb: tcb,
        min_current_tcb: tcb,
        allow_provisional_firmware: false,
        revocation: Revocation::Require,
        allow_stale_crl: false,
        dangerous_allow_unpinned_launch: false,
    }
}

#[test]
fn strict_policy_passes_every_check() {
    let v = milan_verifier();
    v.set_crl(&MILAN.issue_crl(&fresh_crl())).unwrap();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let report = policy_report(&leaf).sign(&leaf);
    let mut req = request(&report, &leaf);
    req.report_data = Some(&[0x77; 64]);
    let ok = v.verify(&req, &strict_policy(&leaf)).unwrap();
    let not_passed: Vec<(Check, Outcome)> = ok.verdict().iter().filter(|(_, o)| *o != Outcome::Passed).collect();
    assert!(not_passed.is_empty(), "{not_passed:?}");
    assert_eq!(ok.verdict().iter().count(), Check::COUNT);
}

#[test]
fn each_policy_check_can_fail() {
    let v = milan_verifier();
    v.set_crl(&MILAN.issue_crl(&fresh_crl())).unwrap();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let strict = strict_policy(&leaf);
    let t = leaf.tcb;
    let base = || policy_report(&leaf);
    let p = |f: fn(&mut SnpPolicy)| {
        let mut q = strict.clone();
        f(&mut q);
        q
    };
    let enc = |tcb: Tcb| tcb.encode(TsProduct::Milan);
    let cases: Vec<(&str, ReportBuilder, SnpPolicy, Check)> = vec![
        ("measurement", base(), p(|q| q.measurements = vec![Hex([0x12; 48])]), Check::Measurement),
        ("host_data", base(), p(|q| q.host_data = Some(Hex([0x23; 32]))), Check::HostData),
        ("id_key_digest", base(), p(|q| q.id_key_digests = vec![Hex([0x34; 48])]), Check::IdKeyDigest),
        ("author_key_digest", base(), p(|q| q.author_key_digests = vec![Hex([0; 48])]), Check::AuthorKeyDigest),
        ("family_id", base(), p(|q| q.family_id = Some(Hex([0x56; 16]))), Check::FamilyId),
        ("image_id", base(), p(|q| q.image_id = Some(Hex([0x67; 16]))), Check::ImageId),
        ("guest_svn", base(), p(|q| q.min_guest_svn = Some(8)), Check::GuestSvn),
        ("debug", base().policy(GUEST_POLICY | 1 << 19), strict.clone(), Check::Debug),
        ("migration agent", base().policy(GUEST_POLICY | 1 << 18), strict.clone(), Check::MigrationAgent),
        ("smt", base().policy(GUEST_POLICY | 1 << 16), strict.clone(), Check::Smt),
        ("single socket", base().policy(GUEST_POLICY & !(1 << 20)), strict.clone(), Check::SingleSocket),
        ("abi minor", base(), p(|q| q.min_abi = Some(AbiVersion { major: 1, minor: 56 })), Check::AbiVersion),
        ("abi major", base(), p(|q| q.min_abi = Some(AbiVersion { major: 2, minor: 0 })), Check::AbiVersion),
        ("vmpl", base().vmpl(1), strict.clone(), Check::Vmpl),
        ("vmpl policy", base(), p(|q| q.vmpl = Some(2)), Check::Vmpl),
        (
            "platform_info required",
            base(),
            p(|q| q.required_platform_info = vec![PlatformFlag::RaplDisabled]),
            Check::PlatformInfo,
        ),
        ("platform_info forbidden", base().platform_info(PLATFORM_INFO | 0b10), strict.clone(), Check::PlatformInfo),
        ("chip id", base(), p(|q| q.chip_ids = vec![Hex([0xEE; 64])]), Check::ChipId),
        ("min reported", base(), p(|q| q.min_reported_tcb.as_mut().unwrap().microcode += 1), Check::MinReportedTcb),
        ("min committed", base(), p(|q| q.min_committed_tcb.as_mut().unwrap().snp += 1), Check::MinCommittedTcb),
        ("min launch", base(), p(|q| q.min_launch_tcb.as_mut().unwrap().bootloader += 1), Check::MinLaunchTcb),
        ("min current", base(), p(|q| q.min_current_tcb.as_mut().unwrap().tee += 1), Check::MinCurrentTcb),
        (
            "min launch on the report side",
            base().launch_tcb(enc(Tcb { ucode: t.ucode - 1, ..t })),
            strict.clone(),
            Check::MinLaunchTcb,
        ),
        (
            "provisional tcb",
            base().current_tcb(enc(Tcb { ucode: t.ucode + 1, ..t })),
            p(|q| q.min_current_tcb = None),
            Check::ProvisionalFirmware,
        ),
        ("provisional version", base().current_version(1, 55, 21), strict.clone(), Check::ProvisionalFirmware),
        ("report version low", base(), p(|q| q.min_report_version = 4), Check::ReportVersion),
        ("report version high", base().version(5), strict.clone(), Check::ReportVersion),
        (
            "tcb consistency reported > current",
            base()
                .current_tcb(enc(Tcb { ucode: t.ucode - 1, ..t }))
                .committed_tcb(enc(Tcb { ucode: t.ucode - 1, ..t })),
            p(|q| {
                q.min_current_tcb = None;
                q.min_committed_tcb = None;
            }),
            Check::TcbConsistency,
        ),
        (
            "tcb consistency committed > current",
            base().committed_tcb(enc(Tcb { snp: t.snp + 1, ..t })),
            strict.clone(),
            Check::TcbConsistency,
        ),
        ("report data", base(), p(|q| q.report_data = Some(Hex([0x78; 64]))), Check::ReportData),
        ("product", base(), p(|q| q.products = vec![Product::Genoa, Product::Turin]), Check::Product),
    ];
    for (name, builder, policy, check) in cases {
        let report = builder.sign(&leaf);
        let mut req = request(&report, &leaf);
        req.report_data = Some(&[0x77; 64]);
        let err = verify_err(&v, &req, &policy);
        assert!(matches!(err, Error::Policy(_)), "{name}: {err}");
        assert_eq!(err.check(), Some(check), "{name}: {err}");
    }
    // The request's REPORT_DATA is checked on its own.
    let report = base().sign(&leaf);
    let mut req = request(&report, &leaf);
    req.report_data = Some(&[0x78; 64]);
    assert_eq!(verify_err(&v, &req, &strict).check(), Some(Check::ReportData));
    // Waivers turn the flag checks into Waived.
    let report = base().policy(GUEST_POLICY | (1 << 16) | (1 << 18) | (1 << 19)).sign(&leaf);
    let waive = SnpPolicy { allow_debug: true, allow_migration_agent: true, allow_smt: true, ..strict.clone() };
    let ok = v.verify(&request(&report, &leaf), &waive).unwrap();
    for c in [Check::Debug, Check::MigrationAgent, Check::Smt] {
        assert_eq!(ok.verdict().outcome(c), Outcome::Waived, "{c}");
    }
    let report = base().current_version(1, 55, 21).sign(&leaf);
    let lenient = SnpPolicy { allow_provisional_firmware: true, ..strict.clone() };
    let ok = v.verify(&request(&report, &leaf), &lenient).unwrap();
    assert_eq!(ok.verdict().outcome(Check::ProvisionalFirmware), Outcome::Waived);
}

/// `ReservedNonZero::offset` is the offset of the offending byte in the report: byte 2 of REPORTED_TCB
/// (0x180) is 0x182.
#[test]
fn reserved_tcb_byte_error_names_the_field_offset() {
    let v = milan_verifier();
    let leaf = MILAN.issue_leaf(&LeafSpec::new());
    let raw = leaf.tcb.encode(TsProduct::Milan) | (1 << 16); // byte 2: reserved on Milan
    let report = ReportBuilder::for_leaf(&leaf).reported_tcb(raw).sign(&leaf);
    match verify_err(&v, &request(&report, &leaf), &SnpPolicy::default()) {
        Error::ReservedNonZero { offset, field } => assert_eq!((offset, field), (0x182, "REPORTED_TCB")),
        other => panic!("{other}"),
    }
}
