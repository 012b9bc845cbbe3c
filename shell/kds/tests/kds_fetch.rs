//! The KDS certificate supply against a local KDS serving the real certificates of `$ATTEST_TESTDATA`:
//! fetching, storing, single-flight, evidence certificates, and offline operation.

mod kds_support;

use attest_engine::azure::parse_thim;
use attest_engine::snp::{CarriedCerts, CertKind, CertTable, Product, SnpPolicy, SnpVerifier, encode_cert_table};
use attest_kds::{ChainKind, HwId, Kds, KdsConfig, KdsError, Source, VcekKey};
use kds_support::{
    KdsServer, assert_store_clean, dead_base_url, fast_config, first_cert, now, read, temp_store, vcek_id,
};
use std::path::{Path, PathBuf};

fn key_of(der: &[u8]) -> VcekKey {
    let id = vcek_id(der);
    VcekKey::new(id.product, HwId::from_hex(id.product, &id.hw_id_hex).unwrap(), id.tcb).unwrap()
}

fn virtee_report(data: &Path) -> Vec<u8> {
    hex::decode(String::from_utf8(read(data, "virtee-sev/report_milan.hex")).unwrap().trim()).unwrap()
}

/// A local KDS serving `data`, and a client of it with a fresh store named after `test`.
async fn serve(data: &Path, test: &str) -> (KdsServer, PathBuf, Kds) {
    let server = KdsServer::start(data).await;
    let store = temp_store(test);
    let kds = Kds::new(fast_config(&server.base_url, &store)).unwrap();
    (server, store, kds)
}

fn lenient() -> SnpPolicy {
    SnpPolicy { allow_smt: true, allow_debug: true, ..SnpPolicy::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fetches_every_real_vcek_and_chain_once() {
    let Some(data) = kds_support::testdata() else { return };
    let (server, store, kds) = serve(&data, "every").await;
    for rel in kds_support::VCEKS {
        let der = first_cert(&data, rel);
        let key = key_of(&der);
        let got = kds.vcek(&key).await.unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!((got.bytes.as_slice(), got.source), (der.as_slice(), Source::Kds), "{rel}");
        let again = kds.vcek(&key).await.unwrap();
        assert_eq!((again.bytes, again.source), (der, Source::Store), "{rel}");
    }
    for product in Product::ALL {
        for kind in [ChainKind::Vcek, ChainKind::Vlek] {
            let (chain, source) = kds.cert_chain(product, kind).await.unwrap();
            assert_eq!(source, Source::Kds);
            assert_eq!(chain.ark, product.trust_anchors().ark);
            assert_eq!(kds.cert_chain(product, kind).await.unwrap().1, Source::Store);
        }
    }
    assert_eq!(server.total(), u32::try_from(kds_support::VCEKS.len()).unwrap() + 6, "one request per object");
    let names = assert_store_clean(&store, now());
    assert!(names.contains(&"Turin/vcek/1e550a8ee5cf9f4d/0900000000000000.der".to_owned()), "{names:?}");
    assert!(names.contains(&"Milan/vlek/cert_chain.pem".to_owned()), "{names:?}");
    std::fs::remove_dir_all(store).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn hundred_concurrent_verifications_of_a_new_chip_make_one_request() {
    let Some(data) = kds_support::testdata() else { return };
    let server = KdsServer::start(&data).await;
    // Widen the window: the one upstream request takes a while to answer.
    server.push_faults([kds_support::Fault::SlowHeaders(std::time::Duration::from_millis(150))]);
    let store = temp_store("hundred");
    let config =
        KdsConfig { request_timeout: std::time::Duration::from_secs(5), ..fast_config(&server.base_url, &store) };
    let kds = Kds::new(config).unwrap();
    let report = std::sync::Arc::new(virtee_report(&data));
    let verifier = std::sync::Arc::new(SnpVerifier::new());
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let (kds, report, verifier) = (kds.clone(), report.clone(), verifier.clone());
            tokio::spawn(async move {
                let certs = kds.snp_certificates(&report, &CarriedCerts::default(), Some(Product::Milan)).await?;
                verifier
                    .verify(&certs.request(&report, now()), &lenient())
                    .map_err(|error| KdsError::Verification { object: "report", error })?;
                Ok::<_, KdsError>(certs.leaf_source)
            })
        })
        .collect();
    let mut sources = Vec::new();
    for t in tasks {
        sources.push(t.await.unwrap().unwrap());
    }
    assert_eq!(server.total(), 1, "exactly one upstream request for 100 concurrent verifications");
    assert_eq!(kds.upstream_requests(), 1);
    assert!(sources.contains(&Source::Kds));
    assert_eq!(assert_store_clean(&store, now()).len(), 1);
    std::fs::remove_dir_all(store).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offline_with_a_prefilled_store() {
    let Some(data) = kds_support::testdata() else { return };
    let store = temp_store("offline");
    // Prefill through a working KDS …
    {
        let server = KdsServer::start(&data).await;
        let kds = Kds::new(fast_config(&server.base_url, &store)).unwrap();
        kds.snp_certificates(&virtee_report(&data), &CarriedCerts::default(), Some(Product::Milan)).await.unwrap();
        kds.cert_chain(Product::Milan, ChainKind::Vcek).await.unwrap();
    }
    // … and by hand, following the documented layout.
    let go = first_cert(&data, "go-sev-guest/vcek.testcer");
    let id = vcek_id(&go);
    let dir = store.join("Milan/vcek").join(&id.hw_id_hex);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{:016x}.der", id.tcb.encode(Product::Milan))), &go).unwrap();

    for base_url in [Some(dead_base_url()), None] {
        let kds = Kds::new(KdsConfig { base_url, ..fast_config("http://127.0.0.1:1", &store) }).unwrap();
        let verifier = SnpVerifier::new();
        let report = virtee_report(&data);
        let certs = kds.snp_certificates(&report, &CarriedCerts::default(), Some(Product::Milan)).await.unwrap();
        assert_eq!(certs.leaf_source, Source::Store);
        verifier.verify(&certs.request(&report, now()), &lenient()).unwrap();
        // Version 2 report without a product hint: the store knows the chip.
        let certs = kds.snp_certificates(&report, &CarriedCerts::default(), None).await.unwrap();
        assert_eq!(certs.product, Product::Milan);
        let go_report = read(&data, "go-sev-guest/attestation.bin");
        let certs = kds.snp_certificates(&go_report, &CarriedCerts::default(), Some(Product::Milan)).await.unwrap();
        assert_eq!((certs.leaf.as_slice(), certs.leaf_source), (go.as_slice(), Source::Store));
        verifier.verify(&certs.request(&go_report, now()), &lenient()).unwrap();
        assert_eq!(kds.cert_chain(Product::Milan, ChainKind::Vcek).await.unwrap().1, Source::Store);
        // Something not in the store fails with a network error, not a wrong answer.
        let e = kds.cert_chain(Product::Genoa, ChainKind::Vcek).await.unwrap_err();
        assert!(e.is_network(), "{e}");
    }
    assert_store_clean(&store, now());
    std::fs::remove_dir_all(store).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn evidence_certificates_come_first_and_wrong_ones_are_ignored() {
    let Some(data) = kds_support::testdata() else { return };
    let (server, store, kds) = serve(&data, "evidence").await;
    let report = virtee_report(&data);
    let vcek = read(&data, "virtee-sev/vcek_milan.der");
    let chain =
        attest_engine::x509::pem::certificates_from_pem_or_der(&read(&data, "virtee-sev/cert_chain_milan")).unwrap();

    // An extended report's certificate table, padded to a page as the kernel hands it over.
    let mut table =
        encode_cert_table(&[(CertKind::Vcek, &vcek), (CertKind::Ask, &chain[0]), (CertKind::Ark, &chain[1])]);
    table.resize(4096 * 2, 0);
    let carried = CertTable::parse(&table).unwrap().carried();
    let certs = kds.snp_certificates(&report, &carried, Some(Product::Milan)).await.unwrap();
    assert_eq!((certs.leaf_source, server.total()), (Source::Evidence, 0));
    assert_eq!(certs.leaf, vcek);
    // Written through to the store.
    assert_eq!(kds.vcek(&certs.vcek_key.unwrap()).await.unwrap().source, Source::Store);

    // A certificate table with another chip's VCEK: ignored, fetched from KDS instead.
    let store2 = temp_store("evidence-wrong");
    let kds2 = Kds::new(fast_config(&server.base_url, &store2)).unwrap();
    let other = first_cert(&data, "go-sev-guest/vcek.testcer");
    let table = encode_cert_table(&[(CertKind::Vcek, &other)]);
    let certs = kds2
        .snp_certificates(&report, &CertTable::parse(&table).unwrap().carried(), Some(Product::Milan))
        .await
        .unwrap();
    assert_eq!((certs.leaf_source, certs.leaf.as_slice()), (Source::Kds, vcek.as_slice()));
    assert_eq!(server.total(), 1);
    assert_eq!(assert_store_clean(&store2, now()).len(), 1, "the wrong carried VCEK was not stored");

    // Azure THIM JSON (PEM vcekCert + certificateChain) for the Constellation Azure report.
    let thim = serde_json::json!({
        "vcekCert": String::from_utf8(read(&data, "constellation-azure-snp/vcek.pem")).unwrap(),
        "certificateChain": String::from_utf8(read(&data, "constellation-azure-snp/certchain.pem")).unwrap(),
        "tcbm": "5D06000000000002",
    });
    let carried = parse_thim(thim.to_string().as_bytes()).unwrap();
    let azure = read(&data, "constellation-azure-snp/attestation.bin");
    let certs = kds.snp_certificates(&azure[..0x4A0], &carried, None).await.unwrap();
    assert_eq!((certs.product, certs.leaf_source), (Product::Milan, Source::Evidence));
    assert_eq!(certs.leaf, read(&data, "constellation-azure-snp/vcek.cert"));
    assert_eq!(server.total(), 1);
    for s in [&store, &store2] {
        assert_store_clean(s, now());
        std::fs::remove_dir_all(s).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vlek_reports_need_the_carried_vlek_and_fetch_the_vlek_chain() {
    let Some(data) = kds_support::testdata() else { return };
    let (_server, store, kds) = serve(&data, "vlek").await;
    let report = read(&data, "constellation-aws-snp/report.bin");
    let e = kds.snp_certificates(&report, &CarriedCerts::default(), None).await.unwrap_err();
    assert_eq!(e, KdsError::VlekNotCarried);
    // The shipped VLEK is expired now: vetting refuses it (it is never silently accepted).
    let vlek = first_cert(&data, "constellation-aws-snp/vlek.pem");
    let carried = CarriedCerts { vlek: Some(vlek.into()), ..CarriedCerts::default() };
    let e = kds.snp_certificates(&report, &carried, None).await.unwrap_err();
    assert!(
        matches!(e, KdsError::Verification { object: "VLEK", error: attest_engine::Error::CertExpired { .. } }),
        "{e}"
    );
    let (chain, _) = kds.cert_chain(Product::Milan, ChainKind::Vlek).await.unwrap();
    assert_eq!(chain.intermediate, Product::Milan.trust_anchors().asvk);
    std::fs::remove_dir_all(store).unwrap();
}
