//! TDX on SIMULATED hardware (`attest-hwsim`'s TD, test roots): the `qemu-tdx` and `azure-tdx` issuers run
//! unchanged through `NodeIssuer::open` — configfs-tsm report entries (generation-checked), RTMR extension
//! and read-back, the CCEL table; Azure's paravisor vTPM and its quote endpoint in Azure's format — and the
//! engine validates their documents against the Intel-like test root and collateral. Refused: another
//! nonce, an unpinned or other MRTD, a debuggable TD, a revoked PCK certificate, a TD report the platform
//! did not issue.

use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice, detect_with};
use attest_attester::issuer::tdguest::LOCK_RTMR;
use attest_attester::issuer::{QuoteEndpoint, SnpDeviceAddr, TdxPaths, document, pcr_values};
use attest_attester::tpm::Tpm;
use attest_engine::Error;
use attest_engine::policy::{Hex, Outcome};
use attest_engine::snp::{SnpPolicy, SnpVerifier};
use attest_engine::tdx::{TdxCheck, TdxPolicy, TdxVerifier};
use attest_engine::variant::{PcrPolicy, Validated, Validator, Variant};
use attest_hwsim::tdx::{
    AZURE_TD_ATTRIBUTES, DEFAULT_MRTD, QuoteEndpointServer, REVOKING_COLLATERAL_FILE, SimulatedTd, TD_ATTRIBUTES,
    TdServer,
};
use attest_hwtests::Swtpm;
use attest_hwtests::support::{now, random32};
use attest_kds::test_roots::TestRoots;
use attest_proto::attest::v1::AttestationDocument;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Sim {
    td: Arc<SimulatedTd>,
    _server: TdServer,
    roots: PathBuf,
    root: PathBuf,
    _dir: attest_test_support::TempDir,
}

fn start(attributes: u64) -> Sim {
    let dir = attest_test_support::TempDir::new("hwsim-tdx");
    let (roots, root) = (dir.path().join("roots"), dir.path().join("root"));
    let td = Arc::new(SimulatedTd::provision(&roots, &root, DEFAULT_MRTD, attributes).unwrap());
    let server = TdServer::start(&td).unwrap();
    Sim { td, _server: server, roots, root, _dir: dir }
}

fn pinned() -> TdxPolicy {
    TdxPolicy { mrtd: vec![Hex(DEFAULT_MRTD)], ..TdxPolicy::default() }
}

fn tdx_verifier(roots: &Path) -> TdxVerifier {
    TestRoots::load(roots).unwrap().tdx_verifier().unwrap().expect("the simulated TD wrote an Intel-like root")
}

fn validator(verifier: TdxVerifier, variant: Variant, policy: TdxPolicy) -> Validator {
    Validator::new(variant, Arc::new(SnpVerifier::new()), SnpPolicy::default(), PcrPolicy::default())
        .with_tdx(Arc::new(verifier), policy)
}

fn validate<'a>(v: &Validator, doc: &'a AttestationDocument, nonce: &[u8]) -> Result<Validated<'a>, Error> {
    let pcrs = Box::leak(Box::new(pcr_values(doc).unwrap()));
    v.validate(&document(doc, pcrs), nonce, now())
}

/// A `qemu-tdx` document for a fresh nonce (returned with it) from a TD of the default image booted on
/// `platform` below `root`.
fn attest_on(platform: attest_hwsim::tdx::TdPlatform, root: &Path) -> (AttestationDocument, Vec<u8>) {
    let config_td = attest_hwsim::tdx::TdConfig::new(DEFAULT_MRTD, TD_ATTRIBUTES);
    let td = Arc::new(SimulatedTd::boot(Arc::new(platform), root, &config_td).unwrap());
    let _server = TdServer::start(&td).unwrap();
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(root);
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap();
    let nonce = random32();
    (issuer.issue(&nonce, b"user", &[]).unwrap(), nonce.to_vec())
}

/// A test-root directory at `dest` with the root of `roots` and its collateral whose PCK CRL revokes the
/// platform's own PCK certificate.
fn revoking_roots(roots: &Path, dest: &Path) -> PathBuf {
    std::fs::create_dir_all(dest.join("tdx")).unwrap();
    for f in [attest_kds::test_roots::MARKER, attest_kds::test_roots::files::TDX_ROOT] {
        std::fs::copy(roots.join(f), dest.join(f)).unwrap();
    }
    std::fs::copy(roots.join(REVOKING_COLLATERAL_FILE), dest.join(attest_kds::test_roots::files::TDX_COLLATERAL))
        .unwrap();
    dest.to_owned()
}

#[test]
fn qemu_tdx_attests_on_a_simulated_td() {
    let td = start(TD_ATTRIBUTES);
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(&td.root);
    // No TPM is opened for a variant without a vTPM (the TCTI above leads nowhere).
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap();
    assert_eq!(issuer.variant(), Variant::QemuTdx);
    assert!(issuer.is_simulated());
    assert!(matches!(issuer.with_tpm(|_| ()), Err(attest_attester::issuer::HwIssuerError::DeviceNotPresent { .. })));

    let v = validator(tdx_verifier(&td.roots), Variant::QemuTdx, pinned());
    let nonce = random32();
    let user_data = random32();
    let doc = issuer.issue(&nonce, &user_data, &[]).unwrap();
    assert!(doc.tpm.is_none());
    assert!(!doc.tdx.as_ref().unwrap().event_log.is_empty(), "the CCEL log is sent");
    let ok = validate(&v, &doc, &nonce).unwrap();
    let tdq = ok.td.as_ref().unwrap();
    assert_eq!(tdq.verdict().outcome(TdxCheck::SeptVeDisable), Outcome::Passed);
    assert_eq!(tdq.verdict().outcome(TdxCheck::Mrtd), Outcome::Passed);
    assert_eq!(ok.ccel.unwrap().touched, 0b0011, "the firmware log replays to RTMR0 and RTMR1");

    // Freshness: the quote binds this nonce and user data only.
    assert_eq!(validate(&v, &doc, &random32()).unwrap_err().check_tdx(), Some(TdxCheck::ReportData));
    // Launch: another MRTD is refused; no MRTD at all is refused before anything is verified.
    let other = TdxPolicy { mrtd: vec![Hex([0x22; 48])], ..TdxPolicy::default() };
    let e = validate(&validator(tdx_verifier(&td.roots), Variant::QemuTdx, other), &doc, &nonce).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::Mrtd));
    let unpinned = validator(tdx_verifier(&td.roots), Variant::QemuTdx, TdxPolicy::default());
    assert_eq!(validate(&unpinned, &doc, &nonce).unwrap_err(), Error::LaunchUnpinned);

    // The node lock's register: RTMR3 extended through the kernel's file, read back from the TD report,
    // and quoted from then on.
    let guest = issuer.tdx_guest().unwrap();
    assert_eq!(guest.rtmrs().unwrap()[3], [0; 48]);
    let binding = [0x5C; 48];
    guest.extend_rtmr(LOCK_RTMR, &binding).unwrap();
    let p = attest_engine::crypto::default_provider();
    let expected = p.digests.digest(attest_engine::crypto::HashAlgorithm::Sha384, &[&[0u8; 48], &binding]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while guest.rtmrs().unwrap()[3] != expected.as_bytes() {
        assert!(std::time::Instant::now() < deadline, "RTMR3 was not extended");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(guest.extend_rtmr(0, &binding).is_err(), "RTMR0 is the firmware's");
    let doc = issuer.issue(&nonce, &user_data, &[]).unwrap();
    let ok = validate(&v, &doc, &nonce).unwrap();
    assert_eq!(ok.td.unwrap().body().rtmrs()[3], expected.as_bytes());
    assert!(td.td.quotes() >= 4);

    // A revoked PCK certificate (the collateral whose PCK CRL lists it).
    let revoked = revoking_roots(&td.roots, &td.roots.with_file_name("revoked"));
    let e = validate(&validator(tdx_verifier(&revoked), Variant::QemuTdx, pinned()), &doc, &nonce).unwrap_err();
    assert!(matches!(e, Error::Revoked { .. }), "{e}");
}

#[test]
fn a_debuggable_td_is_refused() {
    let td = start(TD_ATTRIBUTES | 1);
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(&td.root);
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap();
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user", &[]).unwrap();
    let e = validate(&validator(tdx_verifier(&td.roots), Variant::QemuTdx, pinned()), &doc, &nonce).unwrap_err();
    assert_eq!(e.check_tdx(), Some(TdxCheck::Debug));
}

#[test]
fn azure_tdx_attests_through_the_paravisor_and_its_quote_endpoint() {
    let td = start(AZURE_TD_ATTRIBUTES);
    let sw = Swtpm::start().unwrap();
    let mut tpm = Tpm::open(&sw.tcti()).unwrap();
    td.td.provision_azure(&mut tpm).unwrap();
    // Detection: an HCL report of TDX type and the HCL AK, next to a TDX guest.
    let (variant, _) =
        detect_with(&mut tpm, &SnpDeviceAddr::Simulator("/nonexistent".into()), &TdxPaths::under(&td.root)).unwrap();
    assert_eq!(variant, Variant::AzureTdx);
    drop(tpm);
    let endpoint = QuoteEndpointServer::start(Arc::clone(&td.td), "127.0.0.1:0".parse().unwrap()).unwrap();

    let mut config = HardwareConfig::new(&sw.tcti());
    config.tdx = TdxPaths::under(&td.root);
    config.tdx_quote_endpoint = QuoteEndpoint::parse(&endpoint.url()).unwrap();
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::AzureTdx), &config).unwrap();
    assert_eq!(issuer.variant(), Variant::AzureTdx);
    assert!(issuer.is_simulated());
    let v = validator(tdx_verifier(&td.roots), Variant::AzureTdx, pinned());
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user data", b"instance").unwrap();
    let ok = validate(&v, &doc, &nonce).unwrap();
    let verdict = *ok.td.as_ref().unwrap().verdict();
    // Azure's TD partitions run without SEPT_VE_DISABLE: waived by the variant, visibly; nothing else is.
    assert_eq!(verdict.outcome(TdxCheck::SeptVeDisable), Outcome::Waived);
    assert_eq!(verdict.outcome(TdxCheck::Debug), Outcome::Passed);
    assert_eq!(verdict.outcome(TdxCheck::Migratable), Outcome::Passed);
    // The TD quote is fetched once per HCL report; the vTPM quote carries each nonce.
    let quotes = td.td.quotes();
    let nonce2 = random32();
    let doc2 = issuer.issue(&nonce2, b"user data", b"instance").unwrap();
    validate(&v, &doc2, &nonce2).unwrap();
    assert_eq!(td.td.quotes(), quotes);
    assert!(validate(&v, &doc2, &nonce).is_err(), "another nonce");
    // The same document under qemu-tdx's rules is refused (no SEPT_VE_DISABLE, and no vTPM expected).
    let qemu = validator(tdx_verifier(&td.roots), Variant::QemuTdx, pinned());
    assert!(validate(&qemu, &doc, &nonce).is_err());

    // The quote endpoint quotes only TD reports its platform issued.
    let mut forged = td.td.td_report(&[7; 64]);
    forged[128] ^= 1;
    let e = config.tdx_quote_endpoint.quote(&forged).unwrap_err();
    assert!(e.to_string().contains("200"), "{e}");
    assert!(config.tdx_quote_endpoint.quote(&td.td.td_report(&[7; 64])).is_ok());
}

/// SEV-SNP through configfs-tsm (the same report-entry code): `privlevel` and `inblob` written, the report
/// and the certificate table read, the generation checked; the report verifies under the test ARK.
#[test]
fn snp_reports_through_configfs_tsm() {
    use attest_attester::issuer::SnpGuestDevice;
    use attest_hwsim::snp::{DEFAULT_MEASUREMENT, SimulatedSnp, SnpTsmBackend};
    use attest_test_support::SigningKeyKind;
    let dir = attest_test_support::TempDir::new("hwsim-snp-tsm");
    let sim = Arc::new(
        SimulatedSnp::provision(&dir.path().join("roots"), SigningKeyKind::Vlek, DEFAULT_MEASUREMENT).unwrap(),
    );
    let reports = dir.path().join("report");
    let _server =
        attest_hwsim::tsm::TsmServer::start(Arc::new(SnpTsmBackend::new(Arc::clone(&sim))), &reports).unwrap();
    let device = SnpGuestDevice::open(&SnpDeviceAddr::ConfigFs(reports.clone())).unwrap();
    for round in 0..3u8 {
        let (report, table) = device.ext_report(&[round; 64], 0).unwrap();
        let parsed = attest_engine::snp::Report::parse(&report).unwrap();
        assert_eq!(parsed.report_data(), &[round; 64]);
        let certs = attest_attester::issuer::snp::SnpCertificates::from_cert_table(Variant::AwsSevSnp, &table).unwrap();
        assert_eq!(certs.leaf, sim.leaf().der, "the VLEK from auxblob");
        let verifier = TestRoots::load(&dir.path().join("roots")).unwrap().snp_verifier().unwrap();
        let req = attest_engine::snp::SnpRequest::new(&report, &certs.leaf, now());
        let policy = SnpPolicy { measurements: vec![Hex(DEFAULT_MEASUREMENT)], ..SnpPolicy::default() };
        verifier.verify(&req, &policy).unwrap();
    }
}

/// A report entry whose generation does not move by the writer's writes (here: a plain directory, whose
/// `generation` never changes) is a concurrent writer: refused after the retries, never answered.
#[test]
fn a_generation_conflict_is_refused() {
    use attest_attester::issuer::tsm::TsmEntry;
    use attest_attester::issuer::tsm::output::{Provider, TsmError};
    let dir = attest_test_support::TempDir::new("tsm-conflict");
    let reports = dir.path().join("report");
    std::fs::create_dir_all(&reports).unwrap();
    // Populate whatever entry appears, as plain files (no kernel behind them).
    let watcher = {
        let reports = reports.clone();
        std::thread::spawn(move || {
            for _ in 0..500 {
                if let Some(e) = std::fs::read_dir(&reports).unwrap().flatten().next() {
                    let p = e.path();
                    for (name, data) in [
                        ("generation", &b"7\n"[..]),
                        ("inblob", b""),
                        ("outblob", b"stale"),
                        ("provider", b"tdx_guest\n"),
                    ] {
                        // Each whole at once, as the kernel shows them (the attester waits for `provider`).
                        std::fs::write(p.join(".tmp"), data).unwrap();
                        std::fs::rename(p.join(".tmp"), p.join(name)).unwrap();
                    }
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let entry = TsmEntry::create(&reports, Provider::TdxGuest).unwrap();
    watcher.join().unwrap();
    let e = entry.request(&[1; 64], &[]).unwrap_err();
    assert!(matches!(e, TsmError::Conflict { before: 7, after: 7, writes: 1 }), "{e}");
}

/// `qemu-tdx`'s node lock is RTMR3 (no vTPM): a fresh TD has it zero (what the join service's default
/// measurements expect); locking it binds the TD to its cluster in every later quote. Refused afterwards: the
/// locked TD where an unbound node is expected (a bound node joining again, or another cluster), the locked TD
/// checked against another cluster's id, and a quote recorded before the lock (RTMR3 zero) replayed for a new
/// nonce — a replayed lock register. A restart in the same boot finds the lock taken; a reboot (a new TD on the
/// same platform) finds RTMR3 zero again.
#[test]
fn a_locked_tds_rtmr3_binds_it_to_its_cluster_and_cannot_be_replayed() {
    use attest_bootstrapper::life::lock::{LockHolder, NodeLock, PcrBackend};
    use attest_engine::crypto::default_provider;
    use attest_engine::variant::LockRegister;
    let rtmr3 = LockRegister::Rtmr(LOCK_RTMR);
    let td = start(TD_ATTRIBUTES);
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(&td.root);
    let issuer = Arc::new(NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap());
    let expecting = |value: [u8; 48]| {
        validator(tdx_verifier(&td.roots), Variant::QemuTdx, TdxPolicy { rtmr3: Some(Hex(value)), ..pinned() })
    };
    let (cluster, other) = ([0xC1; 32], [0xC2; 32]);
    let bound = |id: &[u8; 32]| <[u8; 48]>::try_from(rtmr3.bound(default_provider(), id).as_bytes()).unwrap();

    // Fresh: unbound, and what the join default expects.
    let lock = NodeLock::open(Arc::clone(&issuer) as Arc<dyn PcrBackend>).unwrap();
    assert_eq!((lock.is_locked(), lock.register()), (false, rtmr3));
    let before_nonce = random32();
    let before = issuer.issue(&before_nonce, b"user", &[]).unwrap();
    validate(&expecting([0; 48]), &before, &before_nonce).unwrap();

    lock.try_lock(LockHolder::Join, &cluster).unwrap();
    assert_eq!(td.td.state().rtmrs[3], bound(&cluster), "the lock's extend is in the TD's RTMR3");
    let nonce = random32();
    let after = issuer.issue(&nonce, b"user", &[]).unwrap();
    let refused =
        |v: &Validator, doc: &AttestationDocument, nonce: &[u8]| validate(v, doc, nonce).unwrap_err().check_tdx();
    // A bound TD where an unbound node is expected (joining again, or joining another cluster).
    assert_eq!(refused(&expecting([0; 48]), &after, &nonce), Some(TdxCheck::Rtmr3));
    // `attest verify --cluster-id`: this cluster's, not another's.
    validate(&expecting(bound(&cluster)), &after, &nonce).unwrap();
    assert_eq!(refused(&expecting(bound(&other)), &after, &nonce), Some(TdxCheck::Rtmr3));
    // The unbound quote of before the lock, replayed for a new nonce: its REPORTDATA binds the old one.
    assert_eq!(refused(&expecting([0; 48]), &before, &nonce), Some(TdxCheck::ReportData));

    // A restart in the same boot: locked, RTMR3 bound; no second extend.
    let again = NodeLock::open(Arc::clone(&issuer) as Arc<dyn PcrBackend>).unwrap();
    assert!(again.is_locked());
    assert_eq!(again.initial_pcr().as_bytes(), bound(&cluster));
    assert!(again.try_lock(LockHolder::Init, &other).is_err());
    assert_eq!(td.td.state().rtmrs[3], bound(&cluster));

    // A reboot: a new TD on the same platform, RTMR3 zero, the lock open again.
    let reboot_root = td.root.with_file_name("rebooted");
    let config_td = attest_hwsim::tdx::TdConfig::new(DEFAULT_MRTD, TD_ATTRIBUTES);
    let rebooted = Arc::new(SimulatedTd::boot(Arc::clone(td.td.platform()), &reboot_root, &config_td).unwrap());
    let _server = TdServer::start(&rebooted).unwrap();
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(&reboot_root);
    let issuer = Arc::new(NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap());
    assert!(!NodeLock::open(issuer as Arc<dyn PcrBackend>).unwrap().is_locked());
}

/// A TD on an out-of-date TDX module (its TEE_TCB_SVN matches the collateral's `OutOfDate` level) is refused
/// by the default policy's TCB status check; the same TD on an up-to-date module passes.
#[test]
fn a_td_on_an_out_of_date_tdx_module_is_refused() {
    use attest_hwsim::tdx::{OUTDATED_TEE_TCB_SVN, TdConfig};
    let td = start(TD_ATTRIBUTES);
    let mut config_td = TdConfig::new(DEFAULT_MRTD, TD_ATTRIBUTES);
    config_td.tee_tcb_svn = OUTDATED_TEE_TCB_SVN;
    let root = td.root.with_file_name("outdated");
    let outdated = Arc::new(SimulatedTd::boot(Arc::clone(td.td.platform()), &root, &config_td).unwrap());
    let _server = TdServer::start(&outdated).unwrap();
    let v = validator(tdx_verifier(&td.roots), Variant::QemuTdx, pinned());
    for (root, want) in [(&td.root, None), (&root, Some(TdxCheck::TcbStatus))] {
        let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
        config.tdx = TdxPaths::under(root);
        let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap();
        let nonce = random32();
        let doc = issuer.issue(&nonce, b"user", &[]).unwrap();
        assert_eq!(validate(&v, &doc, &nonce).err().and_then(|e| e.check_tdx()), want, "{}", root.display());
    }
}

/// One simulated platform shared by several processes (the demo's nodes): saved once (owner-only), loaded by
/// each TD's process, whose quotes then verify against the one test root the platform wrote; a damaged file is
/// a typed error, never a panic or a new platform.
#[test]
fn a_saved_platform_serves_tds_of_several_processes_under_one_test_root() {
    use attest_hwsim::tdx::TdPlatform;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = attest_test_support::TempDir::new("hwsim-tdx-platform");
    let (roots, file) = (dir.path().join("roots"), dir.path().join("platform.json"));
    let (_, generated) = TdPlatform::open_or_generate(&file, &roots).unwrap();
    assert!(generated);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let v = validator(tdx_verifier(&roots), Variant::QemuTdx, pinned());
    for name in ["td-a", "td-b"] {
        // As another process would: the platform from the file, not regenerated.
        let (platform, generated) = TdPlatform::open_or_generate(&file, &roots).unwrap();
        assert!(!generated, "{name}");
        let (doc, nonce) = attest_on(platform, &dir.path().join(name));
        validate(&v, &doc, &nonce).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let oversized = vec![b'x'; 70 * 1024];
    for damaged in [&b"{}"[..], b"not json", &oversized] {
        std::fs::write(&file, damaged).unwrap();
        let e = TdPlatform::open_or_generate(&file, &roots).expect_err("a damaged platform file is refused");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    }
}

/// `attest verify --service … --cluster-id` on a locked `qemu-tdx` node (no vTPM): its verify service
/// attests with the TD quote, and the CLI's validator — the node's measurements with RTMR3 replaced by the
/// cluster id's bound value — accepts this cluster's id, refuses another's by RTMR3, and the default join
/// expectation (RTMR3 = 0) refuses the bound node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attest_verify_checks_a_tds_cluster_id_in_rtmr3() {
    use attest_bootstrapper::life::lock::{LockHolder, NodeLock, PcrBackend};
    use attest_cli::verifysvc::{VerifyVia, verify_via_service, with_cluster_id};
    let td = start(TD_ATTRIBUTES);
    let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
    config.tdx = TdxPaths::under(&td.root);
    let issuer = Arc::new(NodeIssuer::open(VariantChoice::Fixed(Variant::QemuTdx), &config).unwrap());
    let id = [0xC1; 32];
    NodeLock::open(Arc::clone(&issuer) as Arc<dyn PcrBackend>).unwrap().try_lock(LockHolder::Init, &id).unwrap();
    let servers = attest_bootstrapper::serve::verifysvc::serve_verify(
        Arc::clone(&issuer) as Arc<dyn attest_atls::AttestationIssuer>,
        Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()),
        Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()),
    )
    .unwrap();
    // The join default: the node's image (MRTD pinned) and RTMR3 = 0.
    let unbound = attest_trust::Expected::TdRegisters(Box::new(TdxPolicy { rtmr3: Some(Hex([0; 48])), ..pinned() }));
    let roots = td.roots.clone();
    let verify = move |addr, via, expected: attest_trust::Expected| {
        let roots = roots.clone();
        tokio::task::spawn_blocking(move || {
            let attest_trust::Expected::TdRegisters(policy) = expected else { unreachable!("TD registers") };
            let validator = attest_cli::node::NodeValidator {
                validator: validator(tdx_verifier(&roots), Variant::QemuTdx, *policy),
                test_roots: None,
            };
            verify_via_service(addr, via, validator).unwrap()
        })
    };
    for (via, addr) in [(VerifyVia::Grpc, servers.grpc_addr.unwrap()), (VerifyVia::Http, servers.http_addr.unwrap())] {
        let right = with_cluster_id(Variant::QemuTdx, unbound.clone(), Some(&id));
        let (status, verdict, result) = verify(addr, via, right).await.unwrap();
        assert_eq!(status, attest_cli::Status::Accepted, "{via:?}: {verdict:?}");
        let result = result.expect("a result object");
        assert_eq!((result["schema"].as_str(), result["accepted"].as_bool()), (Some("attest-result/1"), Some(true)));
        let summary = verdict.unwrap();
        assert!(summary.ak_basis.is_none(), "no vTPM, no AK");
        assert!(summary.td.unwrap().registers_checked.contains(&"rtmr3"), "{via:?}");

        let wrong = with_cluster_id(Variant::QemuTdx, unbound.clone(), Some(&[0xEE; 32]));
        let (status, verdict, result) = verify(addr, via, wrong).await.unwrap();
        assert_eq!(status, attest_cli::Status::Rejected, "{via:?}: another cluster's id");
        assert_eq!(result.expect("a result object")["accepted"].as_bool(), Some(false), "{via:?}");
        let (attested, why) = verdict.unwrap_err();
        assert!(attested && why.contains("rtmr3"), "{why}");

        let (status, ..) = verify(addr, via, unbound.clone()).await.unwrap();
        assert_eq!(status, attest_cli::Status::Rejected, "{via:?}: the join default refuses a bound TD");
    }
    servers.shutdown(std::time::Duration::from_secs(1)).await;
}

/// Machines of one simulated platform (`TdPlatform::for_machine`: the demo's nodes, one `tdx serve --machine`
/// each): every machine its own PCK certificate and PPID — the TDX node identity — derived from its name, so the
/// same after a restart, all under the one test root; the collateral revoking the platform's own PCK certificate
/// refuses the platform's machine and leaves the named machines alone.
#[test]
fn machines_of_one_platform_have_identities_of_their_own_under_one_root() {
    use attest_hwsim::tdx::TdPlatform;
    let dir = attest_test_support::TempDir::new("hwsim-tdx-machines");
    let (roots, file) = (dir.path().join("roots"), dir.path().join("platform.json"));
    TdPlatform::open_or_generate(&file, &roots).unwrap();
    let revoked = revoking_roots(&roots, &dir.path().join("revoked"));
    let identity = |machine: Option<&str>, verifier_roots: &Path| -> Result<String, Error> {
        let mut platform = TdPlatform::load(&file).unwrap();
        if let Some(name) = machine {
            platform = platform.for_machine(name);
        }
        let root = dir.path().join(format!("td-{}", machine.unwrap_or("platform")));
        let (doc, nonce) = attest_on(platform, &root);
        let v = validator(tdx_verifier(verifier_roots), Variant::QemuTdx, pinned());
        validate(&v, &doc, &nonce).map(|ok| ok.node_identity().unwrap().to_string())
    };
    let (a, b, own) = (
        identity(Some("node-a"), &roots).unwrap(),
        identity(Some("node-b"), &roots).unwrap(),
        identity(None, &roots).unwrap(),
    );
    assert!(a.starts_with("tdx-ppid:"), "{a}");
    assert!(a != b && a != own && b != own, "{a} {b} {own}");
    assert_eq!(identity(Some("node-a"), &roots).unwrap(), a, "a restarted machine keeps its identity");
    let e = identity(None, &revoked).unwrap_err();
    assert!(matches!(e, Error::Revoked { .. }), "{e}");
    assert_eq!(identity(Some("node-a"), &revoked).unwrap(), a, "another machine's PCK certificate is not revoked");
}
