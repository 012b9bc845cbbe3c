//! The TDX verifier against a generated Intel-like PKI (test-support's `intel` module): the positive paths
//! and statuses the real vectors cannot reach (their collateral is of another platform or time) — every TCB
//! status, advisory IDs, TDX module identities, TDX 1.5 relaunch, revoked PCK certificates and CAs, a root
//! other than the pinned one, the warm path's invalidation when collateral changes.

use attest_engine::policy::Outcome;
use attest_engine::tdx::{Collateral, TcbStatus, TdxCheck, TdxPolicy, TdxRequest, TdxVerifier};
use attest_engine::{CertRole, Error, UnixTime};
use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec, qe_identity_json, tcb_info_json};

const WINDOW: (&str, &str) = ("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z");
const CRL_WINDOW: (i64, i64) = (1_704_067_200, 1_706_745_600); // 2024-01-01 .. 2024-02-01
const NOW: &str = "2024-01-15T00:00:00Z";
const FMSPC: [u8; 6] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55];

fn comps(prefix: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..prefix.len()].copy_from_slice(prefix);
    c
}

/// Two platform levels (UpToDate at 5,5,2,2,3,1,0,3 / PCESVN 11 / TDX 3,0,5; OutOfDate at 2,2,… / 5 / 2,0,3).
fn tcb_info(latest_status: &str, advisories: &[&str]) -> String {
    tcb_info_json(
        FMSPC,
        WINDOW,
        &[
            (comps(&[5, 5, 2, 2, 3, 1, 0, 3]), 11, comps(&[3, 0, 5]), latest_status, advisories),
            (comps(&[2, 2, 2, 2, 3, 1, 0, 3]), 5, comps(&[2, 0, 3]), "OutOfDate", &["INTEL-SA-00837"]),
        ],
        &[(4, "UpToDate"), (2, "OutOfDate")],
    )
}

fn qe() -> String {
    qe_identity_json(WINDOW, &[(4, "UpToDate"), (2, "OutOfDate")])
}

fn setup(tcb: &str, revoked_pcks: &[&[u8]], revoked_cas: &[&[u8]]) -> (IntelPki, TdxVerifier) {
    let pki = IntelPki::new();
    let verifier = TdxVerifier::dangerous_with_root(attest_engine::crypto::default_provider(), pki.root_der().to_vec());
    let bundle = pki.bundle(tcb, &qe(), CRL_WINDOW, revoked_pcks, revoked_cas);
    verifier.set_collateral(&Collateral::from_bundle_json(bundle.as_bytes()).unwrap()).unwrap();
    (pki, verifier)
}

fn all_statuses() -> TdxPolicy {
    TdxPolicy {
        accepted_tcb_statuses: vec![
            TcbStatus::UpToDate,
            TcbStatus::SWHardeningNeeded,
            TcbStatus::ConfigurationNeeded,
            TcbStatus::OutOfDate,
            TcbStatus::TDRelaunchAdvised,
        ],
        allowed_advisory_ids: vec!["INTEL-SA-00837".into(), "INTEL-SA-00615".into()],
        ..TdxPolicy::default()
    }
}

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

#[test]
fn up_to_date_warm_and_cold() {
    let (pki, v) = setup(&tcb_info("UpToDate", &[]), &[], &[]);
    let pck = pki.issue_pck(&PckSpec::default());
    let quote = pki.quote(&pck, &QuoteSpec::default());
    let req = TdxRequest::new(&quote, at(NOW));
    let ok = v.verify(&req, &TdxPolicy::default()).unwrap();
    assert_eq!(ok.tcb_status(), TcbStatus::UpToDate);
    assert!(!ok.cache_hit());
    assert!(ok.verdict().iter().all(|(_, o)| o != Outcome::NotRun));
    assert_eq!(ok.verdict().outcome(TdxCheck::Revocation), Outcome::Passed);
    let warm = v.verify(&req, &TdxPolicy::default()).unwrap();
    assert!(warm.cache_hit());
    assert_eq!(warm.verdict(), ok.verdict());
    // The real Intel root does not anchor this PKI.
    let real = TdxVerifier::new();
    assert!(
        real.set_collateral(
            &Collateral::from_bundle_json(
                pki.bundle(&tcb_info("UpToDate", &[]), &qe(), CRL_WINDOW, &[], &[]).as_bytes()
            )
            .unwrap()
        )
        .is_err()
    );
    // v5 bodies, TDX 1.0 and 1.5.
    for tdx15 in [false, true] {
        let q = pki.quote(&pck, &QuoteSpec { version: 5, tdx15, ..QuoteSpec::default() });
        assert_eq!(
            v.verify(&TdxRequest::new(&q, at(NOW)), &TdxPolicy::default()).unwrap().tcb_status(),
            TcbStatus::UpToDate
        );
    }
}

#[test]
fn statuses_and_advisories() {
    // SWHardeningNeeded with an advisory: refused by default, accepted when both are allowed.
    let (pki, v) = setup(&tcb_info("SWHardeningNeeded", &["INTEL-SA-00615"]), &[], &[]);
    let pck = pki.issue_pck(&PckSpec::default());
    let quote = pki.quote(&pck, &QuoteSpec::default());
    let req = TdxRequest::new(&quote, at(NOW));
    assert_eq!(v.verify(&req, &TdxPolicy::default()).unwrap_err().check_tdx(), Some(TdxCheck::TcbStatus));
    let mut p = TdxPolicy::default();
    p.accepted_tcb_statuses.push(TcbStatus::SWHardeningNeeded);
    assert_eq!(v.verify(&req, &p).unwrap_err().check_tdx(), Some(TdxCheck::AdvisoryIds));
    p.allowed_advisory_ids.push("INTEL-SA-00615".into());
    let ok = v.verify(&req, &p).unwrap();
    assert_eq!(ok.tcb_status(), TcbStatus::SWHardeningNeeded);
    assert_eq!(ok.advisory_ids().collect::<Vec<_>>(), vec!["INTEL-SA-00615"]);

    // An older platform (PCESVN 10) falls to the OutOfDate level.
    let old = pki.issue_pck(&PckSpec { pce_svn: 10, serial: vec![7], ..PckSpec::default() });
    let q = pki.quote(&old, &QuoteSpec::default());
    let r = v.verify(&TdxRequest::new(&q, at(NOW)), &all_statuses()).unwrap();
    assert_eq!(r.tcb_status(), TcbStatus::OutOfDate);
    assert_eq!(r.advisory_ids().collect::<Vec<_>>(), vec!["INTEL-SA-00837"]);
    // Below every level.
    let ancient = pki.issue_pck(&PckSpec { components: comps(&[1]), serial: vec![8], ..PckSpec::default() });
    let q = pki.quote(&ancient, &QuoteSpec::default());
    assert_eq!(
        v.verify(&TdxRequest::new(&q, at(NOW)), &all_statuses()).unwrap_err(),
        Error::TcbLevelNotFound { what: "platform" }
    );
    // An out-of-date QE converges the platform status.
    let q = pki.quote(&pck, &QuoteSpec { qe_isv_svn: 3, ..QuoteSpec::default() });
    let mut p = all_statuses();
    p.allowed_advisory_ids.push("INTEL-SA-00615".into());
    assert_eq!(v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap().tcb_status(), TcbStatus::OutOfDate);
    let q = pki.quote(&pck, &QuoteSpec { qe_isv_svn: 1, ..QuoteSpec::default() });
    assert_eq!(v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap_err(), Error::TcbLevelNotFound { what: "QE" });
    // A QE not signed by Intel's QE signer.
    let q = pki.quote(&pck, &QuoteSpec { qe_mr_signer: [1; 32], ..QuoteSpec::default() });
    assert_eq!(
        v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap_err(),
        Error::IdentityMismatch { what: "QE identity", field: "MRSIGNER" }
    );
}

#[test]
fn tdx_module_identities_and_relaunch() {
    let (pki, v) = setup(&tcb_info("UpToDate", &[]), &[], &[]);
    let pck = pki.issue_pck(&PckSpec::default());
    let p = all_statuses();
    // Module major 1 (TDX_01): components 0 and 1 are judged by the module identity's levels.
    let q = pki.quote(&pck, &QuoteSpec { tee_tcb_svn: comps(&[4, 1, 5]), ..QuoteSpec::default() });
    assert_eq!(v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap().tcb_status(), TcbStatus::UpToDate);
    let q = pki.quote(&pck, &QuoteSpec { tee_tcb_svn: comps(&[3, 1, 5]), ..QuoteSpec::default() });
    assert_eq!(v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap().tcb_status(), TcbStatus::OutOfDate);
    let q = pki.quote(&pck, &QuoteSpec { tee_tcb_svn: comps(&[1, 1, 5]), ..QuoteSpec::default() });
    assert_eq!(
        v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap_err(),
        Error::TcbLevelNotFound { what: "TDX module" }
    );
    // No identity for major 2.
    let q = pki.quote(&pck, &QuoteSpec { tee_tcb_svn: comps(&[4, 2, 5]), ..QuoteSpec::default() });
    assert_eq!(
        v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap_err(),
        Error::TcbLevelNotFound { what: "TDX module" }
    );
    // TDX 1.5: launched on an out-of-date module, running an up-to-date one → relaunch advised.
    let q = pki.quote(
        &pck,
        &QuoteSpec {
            version: 5,
            tdx15: true,
            tee_tcb_svn: comps(&[3, 1, 5]),
            tee_tcb_svn2: comps(&[4, 1, 5]),
            ..QuoteSpec::default()
        },
    );
    let r = v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap();
    assert_eq!(r.tcb_status(), TcbStatus::TDRelaunchAdvised);
    assert_eq!(r.tcb().current_status, Some(TcbStatus::UpToDate));
    // MRSERVICETD must be zero unless allowed.
    let q = pki.quote(&pck, &QuoteSpec { version: 5, tdx15: true, mr_service_td: [9; 48], ..QuoteSpec::default() });
    assert_eq!(v.verify(&TdxRequest::new(&q, at(NOW)), &p).unwrap_err().check_tdx(), Some(TdxCheck::ServiceTd));
    let mut allow = p.clone();
    allow.allow_service_td = true;
    let r = v.verify(&TdxRequest::new(&q, at(NOW)), &allow).unwrap();
    assert_eq!(r.verdict().outcome(TdxCheck::ServiceTd), Outcome::Waived);
}

#[test]
fn revocation() {
    let pck_spec = PckSpec::default();
    let (pki, v) = setup(&tcb_info("UpToDate", &[]), &[&pck_spec.serial], &[]);
    let pck = pki.issue_pck(&pck_spec);
    let q = pki.quote(&pck, &QuoteSpec::default());
    assert!(matches!(
        v.verify(&TdxRequest::new(&q, at(NOW)), &TdxPolicy::default()),
        Err(Error::Revoked { role: CertRole::Pck, .. })
    ));
    let other = pki.issue_pck(&PckSpec { serial: vec![0x55], ..PckSpec::default() });
    let q = pki.quote(&other, &QuoteSpec::default());
    assert!(v.verify(&TdxRequest::new(&q, at(NOW)), &TdxPolicy::default()).is_ok());
    // The PCK CA on the root CA CRL: the collateral itself is refused.
    let pki2 = IntelPki::new();
    let bundle = pki2.bundle(&tcb_info("UpToDate", &[]), &qe(), CRL_WINDOW, &[], &[&[0x02]]);
    let v2 = TdxVerifier::dangerous_with_root(attest_engine::crypto::default_provider(), pki2.root_der().to_vec());
    assert!(matches!(
        v2.set_collateral(&Collateral::from_bundle_json(bundle.as_bytes()).unwrap()),
        Err(Error::Revoked { role: CertRole::PckCa, .. })
    ));
    // Stale CRLs.
    let q = pki.quote(&other, &QuoteSpec::default());
    assert!(matches!(
        v.verify(&TdxRequest::new(&q, at("2024-03-01T00:00:00Z")), &TdxPolicy::default()),
        Err(Error::CollateralExpired { .. } | Error::CrlStale { .. })
    ));
}

#[test]
fn new_collateral_retires_warm_entries() {
    let (pki, v) = setup(&tcb_info("UpToDate", &[]), &[], &[]);
    let spec = PckSpec::default();
    let pck = pki.issue_pck(&spec);
    let q = pki.quote(&pck, &QuoteSpec::default());
    let req = TdxRequest::new(&q, at(NOW));
    v.verify(&req, &TdxPolicy::default()).unwrap();
    assert!(v.verify(&req, &TdxPolicy::default()).unwrap().cache_hit());
    // New collateral for the FMSPC revokes the PCK: the cached entry must not serve.
    let bundle = pki.bundle(&tcb_info("UpToDate", &[]), &qe(), CRL_WINDOW, &[&spec.serial], &[]);
    v.set_collateral(&Collateral::from_bundle_json(bundle.as_bytes()).unwrap()).unwrap();
    assert!(matches!(v.verify(&req, &TdxPolicy::default()), Err(Error::Revoked { role: CertRole::Pck, .. })));
}

#[test]
fn trailing_bytes_policy() {
    let (pki, v) = setup(&tcb_info("UpToDate", &[]), &[], &[]);
    let pck = pki.issue_pck(&PckSpec::default());
    let padded = pki.quote(&pck, &QuoteSpec { trailing: vec![0; 100], ..QuoteSpec::default() });
    let junk = pki.quote(&pck, &QuoteSpec { trailing: b"junk".to_vec(), ..QuoteSpec::default() });
    let t = at(NOW);
    assert!(v.verify(&TdxRequest::new(&padded, t), &TdxPolicy::default()).is_ok());
    assert_eq!(
        v.verify(&TdxRequest::new(&junk, t), &TdxPolicy::default()).unwrap_err().check_tdx(),
        Some(TdxCheck::TrailingBytes)
    );
    let none = TdxPolicy::from_toml("trailing_bytes = \"none\"").unwrap();
    assert_eq!(v.verify(&TdxRequest::new(&padded, t), &none).unwrap_err().check_tdx(), Some(TdxCheck::TrailingBytes));
    let any = TdxPolicy::from_toml("trailing_bytes = \"any\"").unwrap();
    let r = v.verify(&TdxRequest::new(&junk, t), &any).unwrap();
    assert_eq!(r.verdict().outcome(TdxCheck::TrailingBytes), Outcome::Waived);
}
