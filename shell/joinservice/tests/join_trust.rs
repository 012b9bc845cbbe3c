//! What the join service trusts, and what it refuses: a node whose VCEK AMD revoked (the test PKI's
//! CRL, loaded from the offline KDS store at start) is refused in the aTLS handshake by a running service and
//! gets nothing; a measurements file changed without a valid signature is refused on reload while the old set
//! stays; SSH principals beyond the node's own names are refused without leaving a token; and the
//! `join-service` binary refuses to start on an unsigned or badly signed measurements file or an SNP variant
//! without a pinned launch measurement.

mod join_support;

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::{AttestationIssuer, BoxError, nonce::Nonce};
use attest_engine::crypto::default_provider;
use attest_engine::policy::{Hex, Revocation};
use attest_engine::snp::{OwnedTrustAnchors, Product, SnpPolicy, SnpVerifier};
use attest_engine::variant::{Validator, Variant, snp_vtpm_report_data};
use attest_grpc::{ChannelConfig, Code, Metadata};
use attest_joinservice::{MeasurementsError, Metrics, RefusalReason, ValidatorConfig, Validators};
use attest_kds::{Clock, Kds, KdsConfig, RevocationState};
use attest_keyservice::MasterSecret;
use attest_proto::attest::v1::{AttestationDocument, PcrValue, SnpEvidence, TpmEvidence};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;
use attest_registration::FileAkRegistry;
use attest_test_support::tpm::{PcrBank, QuoteSpec, SoftAk, sha256};
use attest_test_support::{CrlSpec, Leaf, LeafSpec, ReportBuilder, SigningKeyKind, TestPki};
use attest_trust::ValidatorFactory;
use attest_trust::{Trust, TrustArgs};
use join_support::{MeasurementsSigner, fixture, temp_dir};
use prost::Message as _;
use zeroize::Zeroizing;

const DISK_UUID: &str = "9d3e1c2b-7a6f-4e5d-8c4b-3a2f1e0d9c8b";
/// The guest launch measurement the SNP policy pins and the test reports carry.
const LAUNCH: [u8; 48] = [0x5A; 48];
const GOOD_SERIAL: [u8; 1] = [0x41];
const REVOKED_SERIAL: [u8; 1] = [0x42];

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The PCRs every test quote covers: 24 distinct values.
fn pcr_bank() -> PcrBank {
    let mut bank = [[0u8; 32]; 24];
    for (i, p) in bank.iter_mut().enumerate() {
        *p = sha256(&[b"join-trust PCR", &[i as u8]]);
    }
    bank
}

/// A measurements map enforcing PCRs 4, 8 and 9 of [`pcr_bank`].
fn measurements_json() -> String {
    let bank = pcr_bank();
    let entries: Vec<String> = [4usize, 8, 9]
        .iter()
        .map(|&i| format!("\"{i}\": {{\"expected\": \"{}\", \"warnOnly\": false}}", hex::encode(bank[i])))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// A `gcp-sev-snp` attester in software: a software AK quotes [`pcr_bank`] for the verifier's nonce, and an
/// SNP report signed by `leaf` (a VCEK of the test PKI) binds the AK and that quote's nonce, as a guest
/// requests a fresh report per attestation.
#[derive(Debug)]
struct SoftSnpIssuer {
    ak: SoftAk,
    leaf: Leaf,
}

impl AttestationIssuer for SoftSnpIssuer {
    fn oid(&self) -> &str {
        Variant::GcpSevSnp.oid()
    }

    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        let provider = default_provider();
        let ak_public = self.ak.tpm2b_public();
        let extra = Validator::quote_nonce(provider, &[], user_data, nonce);
        let pcrs = pcr_bank();
        let quote = self.ak.quote(&QuoteSpec::new(&extra, &pcrs, 0x00FF_FFFF));
        let report_data = snp_vtpm_report_data(provider, &ak_public, &extra);
        let report = ReportBuilder::for_leaf(&self.leaf).measurement(LAUNCH).report_data(report_data).sign(&self.leaf);
        let doc = AttestationDocument {
            variant: Variant::GcpSevSnp.name().to_owned(),
            tpm: Some(TpmEvidence {
                ak_public,
                quote_attest: quote.attest,
                quote_signature: quote.signature,
                pcrs: (0..24u32)
                    .map(|i| PcrValue { hash_alg: 0x000B, index: i, value: pcrs[i as usize].to_vec() })
                    .collect(),
                ..TpmEvidence::default()
            }),
            snp: Some(SnpEvidence {
                report: report.to_vec(),
                leaf_certificate: self.leaf.der.clone(),
                ..Default::default()
            }),
            user_data: user_data.to_vec(),
            ..AttestationDocument::default()
        };
        Ok(doc.encode_to_vec())
    }
}

fn join_request(csr: Vec<u8>) -> IssueJoinTicketRequest {
    IssueJoinTicketRequest {
        disk_uuid: DISK_UUID.into(),
        certificate_request: csr,
        is_control_plane: false,
        ..IssueJoinTicketRequest::default()
    }
}

/// One join over aTLS as the attester `issuer` (its kubelet key the aTLS key, as the bootstrapper's).
async fn join(
    addr: std::net::SocketAddr,
    issuer: Arc<SoftSnpIssuer>,
    node: &str,
) -> Result<IssueJoinTicketResponse, Box<dyn std::error::Error + Send + Sync>> {
    let (connector, csr) = join_support::kubelet_connector(issuer as Arc<dyn AttestationIssuer>, None, node);
    let config = ChannelConfig { connect_timeout: Duration::from_secs(10), ..ChannelConfig::default() };
    let (channel, _) = attest_atls::grpc::connect(addr, &connector, config).await?;
    channel
        .unary::<_, IssueJoinTicketResponse>(
            paths::JOIN_ISSUE_JOIN_TICKET,
            join_request(csr),
            Metadata::new(),
            Some(Duration::from_secs(10)),
        )
        .await
        .map(|r| r.message)
        .map_err(Into::into)
}

fn token_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_join_service_refuses_a_node_whose_vcek_is_revoked() {
    // AMD's PKI, played by the test PKI: one VCEK in good standing, one that AMD's CRL revokes.
    let pki = TestPki::new(attest_test_support::Product::Milan, SigningKeyKind::Vcek);
    let good = pki.issue_leaf(&LeafSpec::new().serial(GOOD_SERIAL));
    let revoked = pki.issue_leaf(&LeafSpec::new().serial(REVOKED_SERIAL));
    let anchors = vec![OwnedTrustAnchors {
        product: Product::Milan,
        ark: Cow::Owned(pki.ark_der().to_vec()),
        ask: Some(Cow::Owned(pki.ask_der().to_vec())),
        asvk: None,
    }];
    // The offline KDS store holds AMD's CRL (as `attest kds prefill` leaves it).
    let dir = temp_dir("revoked");
    let store = dir.join("kds");
    std::fs::create_dir_all(store.join("Milan")).unwrap();
    let t = i64::try_from(now()).unwrap();
    let crl = pki.issue_crl(
        &CrlSpec::new().this_update(t - 86_400).next_update(t + 7 * 86_400).revoke(REVOKED_SERIAL, t - 3600),
    );
    std::fs::write(store.join("Milan/crl.der"), &crl).unwrap();

    // The service's start-up, as `join-service` does it: waivers off, launch pinned, revocation required,
    // CRLs loaded from the store (offline) into the verifier the validators use.
    let trust_args = TrustArgs { kds_store: Some(store.clone()), kds_url: "offline".into(), ..TrustArgs::default() };
    let kds = Kds::new(KdsConfig {
        store: Some(store),
        base_url: None,
        trust_anchors: Some(anchors.clone()),
        clock: Clock::system(),
        ..KdsConfig::default()
    })
    .unwrap();
    let snp = Arc::new(SnpVerifier::with_trust_anchors(default_provider(), anchors));
    let mut policy = SnpPolicy {
        measurements: vec![Hex(LAUNCH)],
        revocation: Revocation::Require,
        products: vec![Product::Milan],
        ..SnpPolicy::default()
    };
    trust_args.apply_to_policy(&mut policy);
    let keeper = trust_args.revocation_from(kds, Arc::clone(&snp), &[Variant::GcpSevSnp], &policy).await.unwrap();
    assert_eq!(keeper.state(), RevocationState::Fresh);
    assert_eq!(snp.installed_crls().len(), 1);

    let (_kms, kms_addr) = join_support::key_service(
        MasterSecret::new(Zeroizing::new(vec![0x42; 32]), Zeroizing::new(vec![0x17; 32])).unwrap(),
    )
    .await;
    let f = fixture(kms_addr, Duration::from_secs(5), None);
    let path = f.dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&f.dir);
    signer.write(&path, &measurements_json());
    let registry = Arc::new(FileAkRegistry::open(f.dir.join("aks.json")).unwrap());
    let mut config = ValidatorConfig {
        factory: ValidatorFactory { snp: Arc::clone(&snp), snp_policy: policy, ..ValidatorFactory::default() },
        ..ValidatorConfig::new(vec![Variant::GcpSevSnp], registry, signer.trust(&path))
    };
    let launch = attest_trust::check_launch(&config.launch_validators()).unwrap();
    let trust = Arc::new(Trust { measurements: config.measurements.state(), launch, revocation: Some(keeper) });
    assert!(trust.waivers().is_empty(), "nothing waived: {:?}", trust.waivers());
    config.trust = Some(trust);
    let validators = Arc::new(Validators::load(config, &path, Arc::clone(&f.metrics)).unwrap());

    let (server, addr) = f.serve_atls(&validators, None).await;

    // A node with a VCEK in good standing joins.
    let genuine = Arc::new(SoftSnpIssuer { ak: SoftAk::ecc_p256(), leaf: good });
    let ticket = join(addr, genuine, "snp-node-1").await.expect("a node with a good VCEK joins");
    assert_eq!(ticket.state_disk_key.len(), 32);
    assert_eq!(f.metrics.issued_count(), (1, 0));
    let tokens_before = token_count(&f.tokens_dir);
    let key_calls_before =
        f.metrics.render().lines().find(|l| l.starts_with("attest_join_key_service_seconds_count")).map(str::to_owned);

    // The same node software on a chip whose VCEK is revoked: refused in the handshake, nothing issued.
    let revoked_node = Arc::new(SoftSnpIssuer { ak: SoftAk::ecc_p256(), leaf: revoked });
    // Why: the service's own validator names the revocation.
    let nonce = [3u8; 32];
    let doc = revoked_node.issue(&nonce, &[9; 32]).unwrap();
    let why = match validators.attestation_validators()[0].validate(&doc, &nonce) {
        Err(attest_atls::ValidationError::Rejected(e)) => e.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(why.contains("revoked by the ARK's CRL"), "{why}");
    let e = join(addr, Arc::clone(&revoked_node), "snp-node-2").await.unwrap_err();
    assert!(!e.to_string().is_empty());
    assert_eq!(f.metrics.issued_count(), (1, 0), "no ticket");
    assert_eq!(token_count(&f.tokens_dir), tokens_before, "no token");
    let key_calls_after =
        f.metrics.render().lines().find(|l| l.starts_with("attest_join_key_service_seconds_count")).map(str::to_owned);
    assert_eq!(key_calls_after, key_calls_before, "no key asked for");
    let text = f.metrics.render();
    assert!(text.contains("attest_join_attestations_total{outcome=\"rejected\"} 2"), "{text}");
    server.shutdown(Duration::from_secs(5)).await;
}

/// A measurements rollback: after a newer signed file, the older (validly signed) one is put back. The reload is
/// refused (the set stays, a rollback counted, the error names it); a start with it is refused too, since the
/// cluster state keeps the highest version across restarts; an expired file is refused; the operator returns
/// to the old values only under a new version.
#[test]
fn rolled_back_or_expired_measurements_are_refused_on_reload_and_at_start() {
    let dir = temp_dir("rollback");
    let path = dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&dir);
    let versioned = |v: u64, text: &str| text.replacen('{', &format!("{{\"measurementsVersion\": {v}, "), 1);
    let v1 = versioned(1, &measurements_json());
    signer.write(&path, &v1);
    let state_path = dir.join("cluster-state.json");
    join_support::empty_cluster_state(&state_path, 0);
    let state = Arc::new(attest_trust::ClusterState::open(&state_path).unwrap());
    let metrics = Arc::new(Metrics::new());
    let registry = Arc::new(FileAkRegistry::open(dir.join("aks.json")).unwrap());
    let config = ValidatorConfig {
        state: Arc::clone(&state),
        ..ValidatorConfig::new(vec![Variant::QemuVtpm], registry, signer.trust(&path))
    };
    let validators = Validators::load(config, &path, Arc::clone(&metrics)).unwrap();
    assert_eq!(state.measurements_floor(), 1);
    // The operator installs version 2 (a new kernel: PCR 4 moves to PCR 5 here).
    let v2 = versioned(2, &measurements_json().replace("\"4\"", "\"5\""));
    signer.write(&path, &v2);
    assert_eq!(validators.reload().unwrap(), Some(2));
    assert_eq!(attest_trust::ClusterState::open(&state_path).unwrap().measurements_floor(), 2, "persisted");
    // The attacker puts version 1 back, signature and all.
    signer.write(&path, &v1);
    let e = validators.reload().unwrap_err();
    assert!(e.to_string().contains("rollback"), "{e}");
    assert_eq!(validators.current().generation(), 2);
    assert_eq!(metrics.measurements_rollbacks(), 1);
    let text = metrics.render();
    assert!(text.contains("attest_join_measurements_rollbacks_total 1"), "{text}");
    assert!(text.contains("attest_join_measurements_version 2"), "{text}");
    // An unversioned (Constellation) file is version 0: refused as well.
    signer.write(&path, &measurements_json());
    assert!(validators.reload().unwrap_err().to_string().contains("rollback"));
    // The old values again, under a new version: applied.
    signer.write(&path, &versioned(3, &measurements_json()));
    assert_eq!(validators.reload().unwrap(), Some(3));
    // Expired: refused.
    let expired =
        measurements_json().replacen('{', r#"{"measurementsVersion": 4, "expires": "2020-01-01T00:00:00Z", "#, 1);
    signer.write(&path, &expired);
    assert!(validators.reload().unwrap_err().to_string().contains("expired"));
    assert_eq!(validators.current().generation(), 3);

    // At start: the binary refuses version 1 against the cluster state's version 3.
    signer.write(&path, &v1);
    let sig = MeasurementsSigner::signature_path(&path);
    let args = [
        base_args(&dir),
        vec![
            format!("--measurements-signature={}", sig.display()),
            format!("--measurements-public-key={}", signer.public_key.display()),
        ],
    ]
    .concat();
    let (code, text) = run(&args);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("rollback") && text.contains("below version 3"), "{text}");
}

#[test]
fn a_reload_with_a_bad_signature_keeps_the_old_set() {
    let dir = temp_dir("reload-sig");
    let path = dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&dir);
    signer.write(&path, &measurements_json());
    let metrics = Arc::new(Metrics::new());
    let registry = Arc::new(FileAkRegistry::open(dir.join("aks.json")).unwrap());
    let config = ValidatorConfig::new(vec![Variant::QemuVtpm], registry, signer.trust(&path));
    let validators = Validators::load(config, &path, Arc::clone(&metrics)).unwrap();
    assert_eq!(validators.current().generation(), 1);

    // The file changes, its signature does not: refused, generation 1 stays.
    let changed = measurements_json().replace("\"4\"", "\"5\"");
    join_support::replace(&path, changed.as_bytes());
    assert!(matches!(validators.reload(), Err(MeasurementsError::Untrusted(_))));
    assert_eq!(validators.current().generation(), 1);
    // Signed by another key: refused.
    let other = MeasurementsSigner::new(&temp_dir("reload-other"));
    join_support::replace(&MeasurementsSigner::signature_path(&path), &other.sign(changed.as_bytes()));
    assert!(matches!(validators.reload(), Err(MeasurementsError::Untrusted(_))));
    // The signature removed: refused.
    std::fs::remove_file(MeasurementsSigner::signature_path(&path)).unwrap();
    assert!(matches!(validators.reload(), Err(MeasurementsError::Untrusted(_))));
    assert_eq!(validators.current().generation(), 1);
    // Signed properly: applied.
    signer.write(&path, &changed);
    assert_eq!(validators.reload().unwrap(), Some(2));
    let text = metrics.render();
    assert!(text.contains("attest_join_measurements_reloads_total{outcome=\"rejected\"} 3"), "{text}");
}

#[tokio::test]
async fn ssh_principals_beyond_the_nodes_own_names_are_refused_and_leave_no_token() {
    let (_kms, addr) =
        join_support::key_service(MasterSecret::new(Zeroizing::new(vec![1; 32]), Zeroizing::new(Vec::new())).unwrap())
            .await;
    let f = fixture(addr, Duration::from_secs(5), None);
    let key = openssl::pkey::PKey::generate_ed25519().unwrap();
    let mut wire = Vec::new();
    for s in [&b"ssh-ed25519"[..], &key.raw_public_key().unwrap()] {
        wire.extend_from_slice(&u32::try_from(s.len()).unwrap().to_be_bytes());
        wire.extend_from_slice(s);
    }
    let node = join_support::TestNode::new("worker-1");
    let peer = Arc::new(node.peer());
    for bad in ["*", "worker-2", "10.0.0.7", "*.cluster.local", "!worker-1"] {
        let mut r = attest_grpc::Request::new(IssueJoinTicketRequest {
            host_public_key: wire.clone(),
            host_certificate_principals: vec!["worker-1".into(), bad.into()],
            ..join_request(node.csr())
        });
        r.peer = Some(Arc::clone(&peer) as attest_grpc::PeerInfo);
        let e = f.service.issue_join_ticket(r).await.unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument, "{bad}: {e}");
        assert!(e.message.contains("not the node's own name") || e.message.contains("pattern"), "{bad}: {e}");
    }
    assert_eq!(token_count(&f.tokens_dir), 0, "a refused request left a token");
    assert_eq!(f.metrics.issued_count(), (0, 0));
    assert_eq!(f.metrics.refused_count(RefusalReason::InvalidRequest), 5);
}

// ---------------------------------------------------------------------------------------------------------------
// The binary refuses to start.

const BIN: &str = env!("CARGO_BIN_EXE_join-service");

/// The flags every start needs, pointing at files the refusals below never reach.
fn base_args(dir: &Path) -> Vec<String> {
    let s = |p: &Path| p.display().to_string();
    let kms = dir.join("kms");
    vec![
        "--listen=127.0.0.1:0".into(),
        "--metrics-listen=127.0.0.1:0".into(),
        format!("--measurements={}", s(&dir.join("measurements.json"))),
        format!("--measurement-salt={}", s(&dir.join("salt"))),
        format!("--ak-registry={}", s(&dir.join("aks.json"))),
        format!("--pki-dir={}", s(&dir.join("pki"))),
        format!("--kubernetes-config={}", s(&dir.join("kubernetes.json"))),
        "--api-server-endpoint=10.0.0.1:6443".into(),
        "--tpm=swtpm:host=127.0.0.1,port=1".into(),
        format!("--key-service-ca={}", s(&kms.join("ca.crt"))),
        format!("--key-service-cert={}", s(&kms.join("join-service.crt"))),
        format!("--key-service-key={}", s(&kms.join("join-service.key"))),
        "--kds-url=offline".into(),
        format!("--cluster-state={}", s(&dir.join("cluster-state.json"))),
    ]
}

fn run(args: &[String]) -> (Option<i32>, String) {
    let out = std::process::Command::new(BIN).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned())
}

#[test]
fn the_binary_refuses_to_start_without_signed_measurements_or_a_pinned_launch() {
    let dir = temp_dir("bin-refusals");
    let path = dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&dir);
    signer.write(&path, &measurements_json());
    let sig = MeasurementsSigner::signature_path(&path);
    let signed = [
        format!("--measurements-signature={}", sig.display()),
        format!("--measurements-public-key={}", signer.public_key.display()),
    ];
    join_support::empty_cluster_state(&dir.join("cluster-state.json"), 0);

    // No signature and no waiver.
    let (code, text) = run(&base_args(&dir));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("must be signed"), "{text}");
    // A file changed after signing.
    join_support::replace(&path, measurements_json().replace("\"4\"", "\"6\"").as_bytes());
    let (code, text) = run(&[base_args(&dir), signed.to_vec()].concat());
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("does not verify"), "{text}");
    signer.write(&path, &measurements_json());
    // An SNP variant whose policy pins no launch measurement.
    let snp = [signed.to_vec(), vec!["--variant=aws-sev-snp".into()]].concat();
    let (code, text) = run(&[base_args(&dir), snp.clone()].concat());
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("pins no launch measurement"), "{text}");
    // With the explicit waiver the launch check passes (and warns); the start then needs CRLs, which the
    // empty offline store does not have: still no start, now for revocation.
    let waived = [snp, vec!["--dangerous-allow-unpinned-launch".into()]].concat();
    let (code, text) = run(&[base_args(&dir), waived].concat());
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("LAUNCH NOT PINNED") && text.contains("AMD CRLs"), "{text}");
    // The waiver of the signature is loud.
    let (code, text) =
        run(&[base_args(&dir), vec!["--dangerously-skip-measurements-signature".into(), "--variant=qemu-vtpm".into()]]
            .concat());
    assert_eq!(code, Some(3), "fails later, at the salt file: {text}");
    assert!(text.contains("MEASUREMENTS NOT SIGNATURE-CHECKED"), "{text}");
}
