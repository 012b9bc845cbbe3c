//! One join service, several variants at once, on SIMULATED hardware (test roots): an AWS SEV-SNP node (a
//! simulated VLEK-signing device with swtpm) and a GCE Shielded VM node (a swtpm provisioned as a GCE vTPM)
//! join the same join service, each checked against its own measurements (the release-list entry of its
//! variant) and, for SNP, its own launch policy. Then the SNP attacks: a replayed report is refused in the
//! handshake, and a join service whose CRL revokes the VLEK refuses the genuine node; neither gets a token.

#[path = "../../shell/joinservice/tests/join_support/mod.rs"]
mod join_support;

use attest_atls::AttestationIssuer;
use attest_attester::issuer::gce::GceAkKind;
use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice};
use attest_attester::issuer::{QemuVtpmIssuer, SnpDeviceAddr, SnpGuestDevice, SnpIssuer};
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_engine::policy::Hex;
use attest_engine::snp::SnpPolicy;
use attest_engine::variant::Variant;
use attest_grpc::Server;
use attest_hwsim::attack::{JoinOutcome, ReplayingIssuer, attempt_join};
use attest_hwsim::snp::{DEFAULT_MEASUREMENT, REVOKING_CRL_FILE, SimulatedSnp, SnpServer};
use attest_hwtests::Swtpm;
use attest_joinservice::{ValidatorConfig, Validators};
use attest_kds::test_roots::TestRoots;
use attest_keyservice::MasterSecret;
use attest_registration::FileAkRegistry;
use attest_test_support::SigningKeyKind;
use attest_test_support::gce::InstanceSpec;
use attest_trust::ValidatorFactory;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const KMS_URI: &str = "kms://cluster-kms?key=QkJCQkJCQkJCQkJCQkJCQg==&salt=";

/// `{"4": {expected}, "9": {expected}}` from a node's current SHA-256 PCRs.
fn map_of(tpm_pcrs: &attest_attester::tpm::Sha256Pcrs) -> String {
    let entries: Vec<String> = [4u8, 9]
        .iter()
        .map(|i| format!(r#""{i}": {{"expected": "{}", "warnOnly": false}}"#, hex::encode(tpm_pcrs.get(*i).unwrap())))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

fn release_list(aws: &str, gce: &str) -> String {
    format!(
        r#"{{"version": "v1.0.0", "ref": "-", "stream": "stable", "list": [
            {{"csp": "AWS", "attestationVariant": "aws-sev-snp", "measurements": {aws}}},
            {{"csp": "GCP", "attestationVariant": "gcp-sev-es", "measurements": {gce}}}]}}"#
    )
}

struct JoinServer {
    fixture: join_support::Fixture,
    addr: SocketAddr,
    _servers: Vec<Server>,
    _own_tpm: Swtpm,
}

impl JoinServer {
    async fn start(roots: &Path, measurements: &str) -> Self {
        let (kms_server, kms) = join_support::key_service(MasterSecret::from_kms_uri(KMS_URI).unwrap()).await;
        let fixture = join_support::fixture(kms, Duration::from_secs(5), None);
        let registry = Arc::new(FileAkRegistry::open(fixture.dir.join("aks.json")).unwrap());
        let path = fixture.dir.join("measurements.json");
        let signer = join_support::MeasurementsSigner::new(&fixture.dir);
        signer.write(&path, measurements);
        let roots = TestRoots::load(roots).unwrap();
        let mut snp_policies = HashMap::new();
        snp_policies.insert(
            Variant::AwsSevSnp,
            SnpPolicy { measurements: vec![Hex(DEFAULT_MEASUREMENT)], ..SnpPolicy::default() },
        );
        let config = ValidatorConfig {
            factory: ValidatorFactory {
                snp: Arc::new(roots.snp_verifier().unwrap()),
                gce: Arc::new(roots.gce_verifier().unwrap()),
                snp_policies,
                ..ValidatorFactory::default()
            },
            ..ValidatorConfig::new(vec![Variant::AwsSevSnp, Variant::GcpShieldedVm], registry, signer.trust(&path))
        };
        let validators = Arc::new(Validators::load(config, &path, Arc::clone(&fixture.metrics)).unwrap());
        // The join service attests itself (mutual aTLS), as the real one does with its node's TPM.
        let own_tpm = Swtpm::start().unwrap();
        let own = QemuVtpmIssuer::new(Tpm::open(&own_tpm.tcti()).unwrap(), AkConfig::default()).unwrap();
        let (server, addr) = fixture.serve_atls(&validators, Some(Arc::new(own) as Arc<dyn AttestationIssuer>)).await;
        Self { fixture, addr, _servers: vec![kms_server, server], _own_tpm: own_tpm }
    }

    fn tokens(&self) -> usize {
        std::fs::read_dir(&self.fixture.tokens_dir).map_or(0, Iterator::count)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn aws_snp_and_gce_nodes_join_one_service_and_the_snp_attacks_are_refused() {
    let dir = attest_test_support::TempDir::new("simjoin");
    let roots = dir.path().join("roots");
    let sim = SimulatedSnp::provision(&roots, SigningKeyKind::Vlek, DEFAULT_MEASUREMENT).unwrap();
    let snp = SnpServer::start(sim, &dir.path().join("sev-guest.sock")).unwrap();
    let device = SnpDeviceAddr::Simulator(snp.socket().to_owned());

    // The AWS node: swtpm + the simulated device.
    let aws_tpm = Swtpm::start().unwrap();
    let mut config = HardwareConfig::new(&aws_tpm.tcti());
    config.snp_device = device.clone();
    let aws = Arc::new(NodeIssuer::open(VariantChoice::Fixed(Variant::AwsSevSnp), &config).unwrap());
    let aws_pcrs = aws.with_tpm(|tpm| tpm.read_pcrs(PcrMask::ALL)).unwrap().unwrap();

    // The GCE node: a swtpm provisioned as a GCE vTPM (the CA goes into the same test-root directory).
    let gce_tpm = Swtpm::start().unwrap();
    let mut tpm = Tpm::open(&gce_tpm.tcti()).unwrap();
    let image = [(9u8, b"gce kernel".to_vec())];
    let log = attest_hwsim::gce::provision(&mut tpm, &roots, &InstanceSpec::new("p", "gce-1"), GceAkKind::Ecc, &image)
        .unwrap();
    let gce_pcrs = tpm.read_pcrs(PcrMask::ALL).unwrap();
    drop(tpm);
    let mut config = HardwareConfig::new(&gce_tpm.tcti());
    config.event_log = Some(log);
    let gce = Arc::new(NodeIssuer::open(VariantChoice::Auto, &config).unwrap());
    assert_eq!(gce.variant(), Variant::GcpShieldedVm);

    // Each variant gets its own measurements: the two nodes' PCR 9 differ, so neither map fits both.
    assert_ne!(aws_pcrs.get(9), gce_pcrs.get(9));
    let service = JoinServer::start(&roots, &release_list(&map_of(&aws_pcrs), &map_of(&gce_pcrs))).await;
    for (name, issuer) in [("aws-1", Arc::clone(&aws)), ("gce-1", Arc::clone(&gce))] {
        let outcome = attempt_join(service.addr, issuer as Arc<dyn AttestationIssuer>, name).await.unwrap();
        assert!(matches!(outcome, JoinOutcome::Issued { disk_key_len: 32 }), "{name}: {outcome:?}");
    }
    assert_eq!(service.tokens(), 2);

    // Swapped measurements: each node is checked against its own variant's entry.
    let swapped = JoinServer::start(&roots, &release_list(&map_of(&gce_pcrs), &map_of(&aws_pcrs))).await;
    let outcome = attempt_join(swapped.addr, Arc::clone(&aws) as Arc<dyn AttestationIssuer>, "aws-1").await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Refused { .. }), "{outcome:?}");
    assert_eq!(swapped.tokens(), 0);

    // Replayed report: the host records a report and presents it next to fresh quotes by the node's AK.
    let attacker_tpm = Swtpm::start().unwrap();
    let qemu = QemuVtpmIssuer::new(Tpm::open(&attacker_tpm.tcti()).unwrap(), AkConfig::default()).unwrap();
    let inner = SnpIssuer::new(Variant::AwsSevSnp, qemu, SnpGuestDevice::open(&device).unwrap()).unwrap();
    let replaying = ReplayingIssuer::record(inner, b"an earlier nonce").unwrap();
    let before = service.tokens();
    let outcome = attempt_join(service.addr, Arc::new(replaying), "aws-replay").await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Refused { .. }), "{outcome:?}");
    assert_eq!(service.tokens(), before, "no token for the replay");

    // Revoked VLEK: the same roots with the CRL that revokes it.
    std::fs::copy(roots.join(REVOKING_CRL_FILE), roots.join("snp/crl-vlek.der")).unwrap();
    let revoking = JoinServer::start(&roots, &release_list(&map_of(&aws_pcrs), &map_of(&gce_pcrs))).await;
    let outcome = attempt_join(revoking.addr, Arc::clone(&aws) as Arc<dyn AttestationIssuer>, "aws-1").await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Refused { .. }), "{outcome:?}");
    assert_eq!(revoking.tokens(), 0);
    // The GCE node does not depend on the AMD CRL.
    let outcome = attempt_join(revoking.addr, gce as Arc<dyn AttestationIssuer>, "gce-1").await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Issued { .. }), "{outcome:?}");
}
