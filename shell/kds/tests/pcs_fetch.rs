//! The Intel PCS supply against a local HTTPS PCS serving the real go-tdx-guest bodies and issuer-chain
//! headers: fetch, vet, store, offline use, single-flight; and misbehaviour — 429 with Retry-After, 404,
//! truncated bodies, wrong or missing chains, collateral for another platform. Throughout: nothing that does
//! not verify as a set is stored, and the store only ever holds the files of a verified set.

mod pcs_support;

use attest_engine::UnixTime;
use attest_engine::tdx::{Collateral, TcbStatus, TdxPolicy, TdxRequest, TdxVerifier};
use attest_kds::{Clock, KdsError, PckCa, Pcs, PcsConfig, Source, quote_platform};
use attest_test_support::TempDir;
use pcs_support::{Fault, PCK_CRL, PcsServer, QE, ROOT_CRL, TCB, file_names, read};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SPR: [u8; 6] = [0x50, 0x80, 0x6f, 0, 0, 0];
const V5: [u8; 6] = [0x90, 0xc0, 0x6f, 0, 0, 0];

fn at(s: &str) -> UnixTime {
    UnixTime::parse(s).unwrap()
}

/// Tiny timeouts and back-offs; the collateral's own time (2023-07-01) as now.
fn config(server: &PcsServer, store: &Path) -> PcsConfig {
    PcsConfig {
        store: Some(store.to_owned()),
        base_url: Some(server.base_url.clone()),
        certs_url: Some(server.base_url.clone()),
        tls_roots: vec![server.ca_der.clone()],
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(2),
        body_timeout: Duration::from_secs(2),
        max_attempts: 3,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(3),
        clock: Clock::fixed(at("2023-07-01T00:00:00Z")),
        ..PcsConfig::default()
    }
}

struct Setup {
    data: PathBuf,
    server: PcsServer,
    _dir: TempDir,
    store: PathBuf,
    pcs: Pcs,
}

async fn setup(name: &str, tweak: impl FnOnce(PcsConfig) -> PcsConfig) -> Option<Setup> {
    let data = pcs_support::testdata()?;
    let server = PcsServer::start(&data).await;
    let dir = TempDir::new(&format!("pcs-{name}"));
    let store = dir.path().join("store");
    let pcs = Pcs::new(tweak(config(&server, &store))).unwrap();
    Some(Setup { data, server, _dir: dir, store, pcs })
}

/// The seven files of one verified set (four bodies, three chains).
fn set_files() -> Vec<String> {
    let mut v: Vec<String> = [
        "sgx/pckcrl-platform.der",
        "sgx/pckcrl-platform.der.issuer-chain.pem",
        "sgx/root-ca-crl.der",
        "tdx/qe-identity.json",
        "tdx/qe-identity.json.issuer-chain.pem",
        "tdx/tcb/50806f000000.json",
        "tdx/tcb/50806f000000.json.issuer-chain.pem",
    ]
    .map(str::to_owned)
    .into();
    v.sort();
    v
}

#[track_caller]
fn assert_empty(store: &Path) {
    assert_eq!(file_names(store), Vec::<String>::new(), "nothing may be stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_vets_stores_and_then_serves_offline() {
    let Some(s) = setup("fetch", |c| c).await else { return };
    let got = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!((got.source, got.fresh), (Source::Pcs, true));
    assert_eq!(got.info.fmspc, SPR);
    assert!(got.info.has_crls);
    // The same collateral as the shared bundle assembled from these very responses.
    let bundle = Collateral::from_bundle_json(&read(&s.data, "go-tdx-guest/collateral_SPR_E4.json")).unwrap();
    assert_eq!(got.collateral, bundle);
    assert_eq!(Collateral::from_bundle_json(got.collateral.to_bundle_json().as_bytes()).unwrap(), bundle);
    for route in [TCB, QE, PCK_CRL, ROOT_CRL] {
        assert_eq!(s.server.count(route), 1, "{route}");
    }
    assert_eq!(file_names(&s.store), set_files());
    // The stored header is the URL-decoded chain, byte for byte.
    let stored = std::fs::read(s.store.join("tdx/tcb/50806f000000.json.issuer-chain.pem")).unwrap();
    assert_eq!(stored, read(&s.data, "go-tdx-guest/tcb_info_issuer_chain.pem"));

    // Again: the store, no request.
    let again = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!((again.source, again.fresh), (Source::Store, true));
    assert_eq!(s.server.total(), 4);

    // Offline, from the pre-filled store alone.
    let offline = Pcs::new(PcsConfig {
        store: Some(s.store.clone()),
        base_url: None,
        certs_url: None,
        clock: Clock::fixed(at("2023-07-01T00:00:00Z")),
        ..PcsConfig::default()
    })
    .unwrap();
    let c = offline.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!((c.source, c.fresh), (Source::Store, true));
    // … and it verifies a real quote of that platform (trustee's debug TD: UpToDate with debug allowed).
    let quote = read(&s.data, "trustee-tdx/tdx_quote_4.dat");
    assert_eq!(quote_platform(&quote).unwrap(), (SPR, PckCa::Platform));
    let verifier = TdxVerifier::new();
    verifier.set_collateral(&c.collateral).unwrap();
    let policy = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let ok = verifier.verify(&TdxRequest::new(&quote, at("2023-07-01T00:00:00Z")), &policy).unwrap();
    assert_eq!(ok.tcb_status(), TcbStatus::UpToDate);
    // The v5 platform's TCB Info (2026) with the 2023 QE Identity and CRLs: authentic, but no common window.
    let v5 = s.pcs.collateral(V5, PckCa::Platform).await.unwrap();
    assert_eq!((v5.source, v5.fresh), (Source::Pcs, false));
    assert!(v5.info.valid_from > v5.info.expires);
    // Offline with an empty store: a clear error.
    let empty = TempDir::new("pcs-offline-empty");
    let store = Some(empty.path().to_owned());
    let none = Pcs::new(PcsConfig { store, base_url: None, certs_url: None, ..PcsConfig::default() }).unwrap();
    assert_eq!(none.collateral(SPR, PckCa::Platform).await.unwrap_err(), KdsError::Offline);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_one_request_per_object() {
    let Some(s) = setup("single-flight", |c| c).await else { return };
    for route in [TCB, QE, PCK_CRL, ROOT_CRL] {
        s.server.push_faults(route, [Fault::Slow(Duration::from_millis(200))]);
    }
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let pcs = s.pcs.clone();
            tokio::spawn(async move { pcs.collateral(SPR, PckCa::Platform).await })
        })
        .collect();
    for c in calls {
        assert!(c.await.unwrap().unwrap().fresh);
    }
    for route in [TCB, QE, PCK_CRL, ROOT_CRL] {
        assert_eq!(s.server.count(route), 1, "{route}");
    }
    assert_eq!(file_names(&s.store), set_files());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_honoured() {
    let Some(s) = setup("429", |c| c).await else { return };
    // Retry-After 1 s, then success.
    s.server.push_faults(TCB, [Fault::TooMany(Some("1".into()))]);
    let got = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!(got.source, Source::Pcs);
    assert_eq!(s.server.count(TCB), 2);
    assert_eq!(s.pcs.upstream_requests(), 5);

    // A Retry-After beyond what the caller waits for fails at once, and stores nothing.
    let Some(s) = setup("429-long", |c| c).await else { return };
    s.server.push_faults(QE, [Fault::TooMany(Some("3600".into()))]);
    let e = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap_err();
    assert!(matches!(e, KdsError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(3600)), "{e}");
    assert_eq!(s.server.count(QE), 1);
    assert_empty(&s.store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_is_remembered() {
    let Some(s) = setup("404", |c| c).await else { return };
    let unknown = [0, 0x80, 0x6f, 5, 0, 0];
    assert_eq!(s.pcs.collateral(unknown, PckCa::Platform).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(s.pcs.collateral(unknown, PckCa::Platform).await.unwrap_err(), KdsError::NotFound);
    assert_eq!(s.server.count("tcb|00806f050000"), 1, "the 404 is cached");
    // No PCK CRL of the processor CA is served here.
    assert_eq!(s.pcs.collateral(SPR, PckCa::Processor).await.unwrap_err(), KdsError::NotFound);
    assert_empty(&s.store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_responses_are_never_stored() {
    let Some(s) = setup("wrong", |c| c).await else { return };
    let data = s.data.clone();
    let g = |f: &str| read(&data, &format!("go-tdx-guest/{f}"));
    let tcb = g("sample_tcbInfo_response");
    let cases: Vec<(&str, Fault, &str)> = vec![
        (TCB, Fault::Truncate(tcb.len() / 2), "truncated TCB Info"),
        (ROOT_CRL, Fault::Truncate(100), "truncated root CA CRL"),
        (PCK_CRL, Fault::Replace(g("rootcrl.der")), "the root CA CRL as the PCK CRL"),
        // The TCB Info signed by Intel but chained to the PCK Platform CA: its signature does not verify.
        (TCB, Fault::Chain(g("pck_crl_issuer_chain.pem")), "wrong TCB Info chain"),
        (PCK_CRL, Fault::Chain(g("tcb_info_issuer_chain.pem")), "wrong PCK CRL chain"),
        (QE, Fault::NoChain, "no QE Identity chain"),
        (QE, Fault::Chain(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec()), "garbage chain"),
        (TCB, Fault::Replace(g("sample_tcbinfo_response_v5")), "another platform's TCB Info"),
        (TCB, Fault::Status(500), "5xx"),
    ];
    for (route, fault, what) in cases {
        // 5xx is retried: fail every attempt.
        let n = if matches!(fault, Fault::Status(_)) { 3 } else { 1 };
        s.server.push_faults(route, std::iter::repeat_n(fault, n));
        let e = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap_err();
        assert_empty(&s.store);
        match what {
            "another platform's TCB Info" => {
                assert_eq!(
                    e,
                    KdsError::PcsResponse { object: "TCB Info", reason: "it is for another FMSPC" },
                    "{what}"
                );
            }
            "no QE Identity chain" => {
                assert!(matches!(e, KdsError::PcsResponse { object: "QE Identity", .. }), "{what}: {e}");
            }
            "5xx" => assert!(matches!(e, KdsError::RetriesExhausted { attempts: 3, .. }), "{what}: {e}"),
            _ => assert!(matches!(e, KdsError::Verification { object: "TDX collateral", .. }), "{what}: {e}"),
        }
    }
    // The server behaves again: the set verifies and is stored.
    assert!(s.pcs.collateral(SPR, PckCa::Platform).await.unwrap().fresh);
    assert_eq!(file_names(&s.store), set_files());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_set_is_vetted_refreshed_and_used_stale_only_as_a_last_resort() {
    let Some(s) = setup("stale", |c| c).await else { return };
    s.pcs.collateral(SPR, PckCa::Platform).await.unwrap();
    // A stored file altered by hand: ignored, fetched again, stored again.
    let tcb_path = s.store.join("tdx/tcb/50806f000000.json");
    let mut tampered = std::fs::read(&tcb_path).unwrap();
    let pos = tampered.iter().position(|b| *b == b',').unwrap();
    tampered.insert(pos + 1, b' ');
    std::fs::write(&tcb_path, &tampered).unwrap();
    let again = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!(again.source, Source::Pcs);
    assert_ne!(std::fs::read(&tcb_path).unwrap(), tampered);

    // A refresh ahead of nextUpdate (the QE Identity's, 2023-07-08): within the margin it asks PCS again,
    // outside it the store answers.
    let before = s.server.total();
    assert_eq!(s.pcs.refresh(SPR, PckCa::Platform, Duration::from_secs(86_400)).await.unwrap().source, Source::Store);
    assert_eq!(s.server.total(), before);
    let r = s.pcs.refresh(SPR, PckCa::Platform, Duration::from_secs(10 * 86_400)).await.unwrap();
    assert_eq!((r.source, r.fresh), (Source::Pcs, true));
    assert_eq!(s.server.total(), before + 4);

    // Later (the TCB Info expired 2023-07-18): PCS serves the same, stale set; it is returned, not fresh.
    let later =
        Pcs::new(PcsConfig { clock: Clock::fixed(at("2023-07-20T00:00:00Z")), ..config(&s.server, &s.store) }).unwrap();
    let before = s.server.total();
    let stale = later.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!((stale.source, stale.fresh), (Source::Pcs, false));
    assert_eq!(s.server.total(), before + 4, "a stale stored set is refreshed from PCS");
    // PCS down: the stale stored set, marked not fresh (the engine then refuses it at verification).
    let down = Pcs::new(PcsConfig {
        base_url: Some("https://127.0.0.1:1".into()),
        certs_url: Some("https://127.0.0.1:1".into()),
        max_attempts: 1,
        clock: Clock::fixed(at("2023-07-20T00:00:00Z")),
        ..config(&s.server, &s.store)
    })
    .unwrap();
    let c = down.collateral(SPR, PckCa::Platform).await.unwrap();
    assert_eq!((c.source, c.fresh), (Source::Store, false));
    let verifier = TdxVerifier::new();
    verifier.set_collateral(&c.collateral).unwrap();
    let quote = read(&s.data, "trustee-tdx/tdx_quote_4.dat");
    let policy = TdxPolicy::from_toml("allow_debug = true").unwrap();
    let e = verifier.verify(&TdxRequest::new(&quote, at("2023-07-20T00:00:00Z")), &policy).unwrap_err();
    assert!(matches!(e, attest_engine::Error::CollateralExpired { .. }), "{e}");
    assert_eq!(file_names(&s.store), set_files());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tls_trust_is_required() {
    // Without the test CA among the TLS roots, the HTTPS connection fails (no fallback to plain trust).
    let Some(s) = setup("tls", |c| PcsConfig { tls_roots: Vec::new(), max_attempts: 1, ..c }).await else { return };
    let e = s.pcs.collateral(SPR, PckCa::Platform).await.unwrap_err();
    assert!(matches!(e, KdsError::Transport { .. } | KdsError::RetriesExhausted { .. }), "{e}");
    assert_eq!(s.server.total(), 0);
    assert_empty(&s.store);
}
