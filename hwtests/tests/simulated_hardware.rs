//! Every variant's issuer on SIMULATED hardware (`attest-hwsim`, test roots): the simulated SEV-SNP guest
//! device, a swtpm provisioned as Azure's paravisor provisions the vTPM, and a swtpm provisioned as a GCE
//! vTPM. The issuers run unchanged (only the SNP device's transport differs from real hardware), variant
//! detection is checked on each machine shape, and the engine validates the documents against the test
//! roots — and refuses a replayed SNP report, a revoked VCEK and a directory without the test-root marker.

use attest_atls::AttestationIssuer;
use attest_attester::issuer::gce::GceAkKind;
use attest_attester::issuer::select::{HardwareConfig, NodeIssuer, VariantChoice, detect};
use attest_attester::issuer::{GceIssuer, HwIssuerError, QemuVtpmIssuer, SnpDeviceAddr, SnpGuestDevice, SnpIssuer};
use attest_attester::issuer::{document, pcr_values};
use attest_attester::tpm::{AkConfig, Tpm};
use attest_engine::Error;
use attest_engine::gce::{ExpectedNonce, GcePolicy, GceRequest};
use attest_engine::policy::Hex;
use attest_engine::snp::SnpPolicy;
use attest_engine::variant::{AkBasis, PcrPolicy, Validator, Variant};
use attest_hwsim::attack::ReplayingIssuer;
use attest_hwsim::snp::{DEFAULT_MEASUREMENT, REVOKING_CRL_FILE, SimulatedSnp, SnpServer};
use attest_hwtests::Swtpm;
use attest_hwtests::support::{now, random32};
use attest_kds::test_roots::TestRoots;
use attest_proto::attest::v1::AttestationDocument;
use attest_test_support::SigningKeyKind;
use attest_test_support::gce::InstanceSpec;
use prost::Message as _;
use std::path::Path;
use std::sync::Arc;

struct Sim {
    server: SnpServer,
    roots: std::path::PathBuf,
    _dir: attest_test_support::TempDir,
}

impl Sim {
    fn start(kind: SigningKeyKind) -> Self {
        let dir = attest_test_support::TempDir::new("hwsim");
        let roots = dir.path().join("roots");
        let sim = SimulatedSnp::provision(&roots, kind, DEFAULT_MEASUREMENT).unwrap();
        let server = SnpServer::start(sim, &dir.path().join("sev-guest.sock")).unwrap();
        Self { server, roots, _dir: dir }
    }

    fn addr(&self) -> SnpDeviceAddr {
        SnpDeviceAddr::Simulator(self.server.socket().to_owned())
    }

    fn device(&self) -> SnpGuestDevice {
        SnpGuestDevice::open(&self.addr()).unwrap()
    }
}

fn pinned_policy() -> SnpPolicy {
    SnpPolicy { measurements: vec![Hex(DEFAULT_MEASUREMENT)], ..SnpPolicy::default() }
}

fn validator(roots: &Path, variant: Variant) -> Validator {
    let roots = TestRoots::load(roots).unwrap();
    let mut v =
        Validator::new(variant, Arc::new(roots.snp_verifier_or_default()), pinned_policy(), PcrPolicy::default());
    if let Some(gce) = roots.gce_verifier() {
        // The simulated VM is a production VM of the test CA.
        v = v.with_gce(Arc::new(gce), GcePolicy::default());
    }
    v
}

trait OrDefault {
    fn snp_verifier_or_default(&self) -> attest_engine::snp::SnpVerifier;
}

impl OrDefault for TestRoots {
    fn snp_verifier_or_default(&self) -> attest_engine::snp::SnpVerifier {
        if self.has_snp() { self.snp_verifier().unwrap() } else { attest_engine::snp::SnpVerifier::new() }
    }
}

fn validate(v: &Validator, doc: &AttestationDocument, nonce: &[u8]) -> Result<AkBasis, Error> {
    let pcrs = pcr_values(doc).unwrap();
    // Every variant here has a vTPM: its AK basis is always there.
    v.validate(&document(doc, &pcrs), nonce, now()).map(|ok| ok.ak_basis.expect("a vTPM variant"))
}

/// The document an aTLS issuer produces for `nonce` and `user_data`.
fn atls_document(issuer: &dyn AttestationIssuer, nonce: &[u8; 32], user_data: &[u8; 32]) -> AttestationDocument {
    AttestationDocument::decode(&issuer.issue(nonce, user_data).unwrap()[..]).unwrap()
}

#[test]
fn aws_and_gcp_snp_issue_a_fresh_report_per_attestation() {
    for (kind, variant) in [(SigningKeyKind::Vlek, Variant::AwsSevSnp), (SigningKeyKind::Vcek, Variant::GcpSevSnp)] {
        let sim = Sim::start(kind);
        let sw = Swtpm::start().unwrap();
        let mut config = HardwareConfig::new(&sw.tcti());
        config.snp_device = sim.addr();
        let issuer = NodeIssuer::open(VariantChoice::Fixed(variant), &config).unwrap();
        assert!(issuer.is_simulated());
        let v = validator(&sim.roots, variant);

        let before = sim.server.served();
        let (n1, n2) = (random32(), random32());
        let d1 = issuer.issue(&n1, b"user data", b"").unwrap();
        let d2 = issuer.issue(&n2, b"user data", b"").unwrap();
        assert_eq!(sim.server.served(), before + 2, "one report request per attestation");
        assert_ne!(d1.snp.as_ref().unwrap().report, d2.snp.as_ref().unwrap().report);
        assert_eq!(validate(&v, &d1, &n1).unwrap(), AkBasis::HardwareReport, "{variant}");
        assert_eq!(validate(&v, &d2, &n2).unwrap(), AkBasis::HardwareReport, "{variant}");
        assert!(validate(&v, &d1, &n2).is_err(), "another nonce is refused");

        // Replay: d1's report next to a fresh quote for n2 by the same AK.
        let mut replayed = d2.clone();
        replayed.snp = d1.snp.clone();
        assert!(matches!(validate(&v, &replayed, &n2), Err(Error::FreshnessBindingMismatch { .. })));

        // The launch measurement must be pinned, and pinned to this guest.
        let other = SnpPolicy { measurements: vec![Hex([0x77; 48])], ..SnpPolicy::default() };
        let v2 = Validator::new(
            variant,
            Arc::new(TestRoots::load(&sim.roots).unwrap().snp_verifier().unwrap()),
            other,
            PcrPolicy::default(),
        );
        assert!(validate(&v2, &d1, &n1).is_err());
    }
}

#[test]
fn the_replaying_attacker_is_refused_over_atls_issuance() {
    let sim = Sim::start(SigningKeyKind::Vlek);
    let sw = Swtpm::start().unwrap();
    let qemu = QemuVtpmIssuer::new(Tpm::open(&sw.tcti()).unwrap(), AkConfig::default()).unwrap();
    let inner = SnpIssuer::new(Variant::AwsSevSnp, qemu, sim.device()).unwrap();
    let attacker = ReplayingIssuer::record(inner, b"earlier").unwrap();
    let (nonce, user_data) = (random32(), [0x42; 32]);
    let doc = atls_document(&attacker, &nonce, &user_data);
    assert_eq!(doc.snp.as_ref().unwrap().report, attacker.recorded_report());
    let v = validator(&sim.roots, Variant::AwsSevSnp);
    assert!(matches!(validate(&v, &doc, &nonce), Err(Error::FreshnessBindingMismatch { .. })));
}

#[test]
fn a_revoked_vcek_is_refused() {
    let sim = Sim::start(SigningKeyKind::Vcek);
    let sw = Swtpm::start().unwrap();
    let mut config = HardwareConfig::new(&sw.tcti());
    config.snp_device = sim.addr();
    let issuer = NodeIssuer::open(VariantChoice::Fixed(Variant::GcpSevSnp), &config).unwrap();
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"u", b"").unwrap();
    assert!(validate(&validator(&sim.roots, Variant::GcpSevSnp), &doc, &nonce).is_ok());
    // The same directory with the CRL that revokes the VCEK.
    std::fs::copy(sim.roots.join(REVOKING_CRL_FILE), sim.roots.join("snp/crl-vcek.der")).unwrap();
    let err = validate(&validator(&sim.roots, Variant::GcpSevSnp), &doc, &nonce).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("revoked"), "{err}");
}

#[test]
fn azure_paravisor_simulation_attests_through_the_azure_issuer() {
    let sim = Sim::start(SigningKeyKind::Vcek);
    let sw = Swtpm::start().unwrap();
    let mut tpm = Tpm::open(&sw.tcti()).unwrap();
    attest_hwsim::azure::provision(&mut tpm, &sim.device()).unwrap();
    // Detection: the HCL report and AK, no SEV-SNP device (the paravisor owns it).
    let (variant, found) = detect(&mut tpm, &SnpDeviceAddr::Simulator("/nonexistent".into())).unwrap();
    assert_eq!(variant, Variant::AzureSevSnp, "{found}");
    drop(tpm);

    let mut config = HardwareConfig::new(&sw.tcti());
    config.snp_device = SnpDeviceAddr::Simulator("/nonexistent".into());
    config.snp_leaf = Some(std::fs::read(sim.roots.join(attest_hwsim::snp::LEAF_FILE)).unwrap());
    let issuer = NodeIssuer::open(VariantChoice::Auto, &config).unwrap();
    assert_eq!(issuer.variant(), Variant::AzureSevSnp);
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user data", b"instance").unwrap();
    let v = validator(&sim.roots, Variant::AzureSevSnp);
    assert_eq!(validate(&v, &doc, &nonce).unwrap(), AkBasis::HardwareReport);
    // A quote for another nonce with the same HCL report is refused.
    assert!(validate(&v, &doc, &random32()).is_err());
}

#[test]
fn gce_vtpm_simulation_attests_and_produces_go_tpm_tools_attestations() {
    let dir = attest_test_support::TempDir::new("hwsim-gce");
    let sw = Swtpm::start().unwrap();
    let mut tpm = Tpm::open(&sw.tcti()).unwrap();
    let spec = InstanceSpec::new("attest-test", "node-7");
    let image = vec![(9u8, b"kernel".to_vec())];
    let log = attest_hwsim::gce::provision(&mut tpm, dir.path(), &spec, GceAkKind::Ecc, &image).unwrap();
    let (variant, found) = detect(&mut tpm, &SnpDeviceAddr::Simulator("/nonexistent".into())).unwrap();
    assert_eq!(variant, Variant::GcpShieldedVm, "{found}");

    let issuer = GceIssuer::new(tpm, None).unwrap().with_event_log(log);
    let nonce = random32();
    let doc = issuer.issue(&nonce, b"user data", b"").unwrap();
    let v = validator(dir.path(), Variant::GcpShieldedVm);
    assert_eq!(validate(&v, &doc, &nonce).unwrap(), AkBasis::CertifiedByProvider);

    // go-tpm-tools' format, verified by the GCE verifier against the test root.
    let att = issuer.attestation(&nonce).unwrap();
    let roots = TestRoots::load(dir.path()).unwrap();
    let ev = attest_proto::gce::evidence(&att).unwrap();
    let req = GceRequest { nonce: ExpectedNonce::Exactly(&nonce), time: now() };
    let verified = roots.gce_verifier().unwrap().verify(&ev, &req, &GcePolicy::default()).unwrap();
    assert_eq!(verified.instance().instance_name, "node-7");
    // Google's real roots do not know the test CA.
    assert!(attest_engine::gce::GceVerifier::new().verify(&ev, &req, &GcePolicy::default()).is_err());
}

#[test]
fn detection_names_what_it_found_and_never_falls_back() {
    let sw = Swtpm::start().unwrap();
    let mut tpm = Tpm::open(&sw.tcti()).unwrap();
    let none = SnpDeviceAddr::Simulator("/nonexistent".into());
    // A TPM alone is not a confidential VM: qemu-vtpm must be chosen explicitly.
    let err = detect(&mut tpm, &none).unwrap_err();
    assert!(
        matches!(&err, HwIssuerError::Detection { .. }) && err.to_string().contains("--variant qemu-vtpm"),
        "{err}"
    );

    // An SNP guest with VLEK-signed reports: AWS; with VCEK-signed reports and no GCE AK: refused.
    let aws = Sim::start(SigningKeyKind::Vlek);
    assert_eq!(detect(&mut tpm, &aws.addr()).unwrap().0, Variant::AwsSevSnp);
    let gcp = Sim::start(SigningKeyKind::Vcek);
    let err = detect(&mut tpm, &gcp.addr()).unwrap_err();
    assert!(err.to_string().contains("VCEK-signed"), "{err}");

    // With a GCE AK as well: GCP SEV-SNP.
    let dir = attest_test_support::TempDir::new("hwsim-detect");
    attest_hwsim::gce::provision(&mut tpm, dir.path(), &InstanceSpec::new("p", "n"), GceAkKind::Ecc, &[]).unwrap();
    assert_eq!(detect(&mut tpm, &gcp.addr()).unwrap().0, Variant::GcpSevSnp);

    // Two clouds' marks at once: refused, naming both.
    attest_hwsim::azure::provision(&mut tpm, &gcp.device()).unwrap();
    let err = detect(&mut tpm, &gcp.addr()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("HCL report") && text.contains("ECC AK") && text.contains("SEV-SNP guest device"), "{text}");
}

#[test]
fn test_roots_need_their_marker() {
    let sim = Sim::start(SigningKeyKind::Vcek);
    std::fs::remove_file(sim.roots.join(attest_kds::test_roots::MARKER)).unwrap();
    let err = TestRoots::load(&sim.roots).unwrap_err();
    assert!(err.to_string().contains("TEST-ROOTS-DO-NOT-TRUST"), "{err}");
}
