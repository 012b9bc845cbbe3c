//! Every node attests on its own hardware: for each variant of the table that a node can attest as,
//! on SIMULATED hardware (`attest-hwsim`, test roots), a node of the variant verifies a join service of the
//! same variant — the real join service and key service, the service attesting with *its* node's hardware
//! through the node's issuer (`NodeIssuer`) — with the validator of the variant from the one factory, and
//! joins. No EK certificate is configured anywhere except for `qemu-vtpm`, whose AK is trusted only through
//! credential activation against one (and which is refused without it); the `aws-sev-snp` vTPMs have no EK
//! certificate at all (the table's column: NitroTPM has none), and the machines follow the table's columns,
//! never a variant's name.
//!
//! Before it joins, the same node refuses each impostor and stays untouched (its lock register — PCR 15, or RTMR3 on
//! a TD without a vTPM — zero, no state, no key):
//!
//! | impostor | refused by |
//! |---|---|
//! | a genuine machine of the variant booting another kernel (PCR 9) | the measurements |
//! | another node's hardware: a genuine node's evidence for this handshake's nonce, bound to another key (relayed) | the key binding |
//! | a document recorded for an earlier nonce (replayed), for this handshake's key | the nonce |
//! | `aws-sev-snp`/`gcp-sev-snp`: the host's replay of an earlier SNP report next to a fresh quote | the report's binding of the AK and the nonce |
//! | a genuine, measured machine of the variant that is not a node of this cluster (PCR 15; `qemu-tdx`: RTMR3) | the cluster binding, after the ticket |
//! | a `qemu-vtpm` join service (the weaker path) where the node expects its own variant | no validator for the OID |
//!
//! One test walks the table (≈ 35 s here for the seven variants a node can join as). A variant that gains an
//! issuer but no simulated platform here fails it until one is added ([`Platform::start`]); a variant a node
//! can attest as but not yet join with is named in [`CANNOT_JOIN_YET`], checked to still fall short, so that
//! list only shrinks.

#[path = "../../shell/joinservice/tests/join_support/mod.rs"]
mod join_support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::{AtlsAcceptor, AttestationIssuer};
use attest_attester::issuer::gce::GceAkKind;
use attest_attester::issuer::select::{HardwareConfig, IssuerKind, NodeIssuer, VariantChoice};
use attest_attester::issuer::{QemuVtpmIssuer, QuoteEndpoint, SnpDeviceAddr, SnpGuestDevice, SnpIssuer, TdxPaths};
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_bootstrapper::cluster::dryrun::DryRunBackend;
use attest_bootstrapper::{
    AtlsTicketSource, BOOTSTRAP_PCR, JoinClient, JoinConfig, JoinError, JoinServiceTrust, KeyFileDisk, Node,
    NodeConfig, NodeLock, Outcome, PcrBackend, ServerTrustError, Startup,
};
use attest_engine::LaunchPinning;
use attest_engine::crypto::{Digest, default_provider};
use attest_engine::policy::Hex;
use attest_engine::snp::{SigningKey, SnpPolicy};
use attest_engine::tdx::TdxPolicy;
use attest_engine::variant::{AkBasis, AkTrust, Hardware, LockRegister, TABLE, Variant};
use attest_grpc::{Router, Server, ServerConfig};
use attest_hwsim::attack::{Borrowed, ReplayingIssuer};
use attest_hwsim::snp::{DEFAULT_MEASUREMENT, LEAF_FILE, SimulatedSnp, SnpServer};
use attest_hwsim::tdx::{
    AZURE_TD_ATTRIBUTES, DEFAULT_MRTD, QuoteEndpointServer, SimulatedTd, TD_ATTRIBUTES, TdConfig, TdPlatform, TdServer,
};
use attest_hwtests::Swtpm;
use attest_joinservice::{ValidatorConfig, Validators};
use attest_kds::test_roots::TestRoots;
use attest_keyservice::{MasterSecret, cluster_id, measurement_secret};
use attest_registration::{EkCaBundle, FileAkRegistry, ak_digest};
use attest_test_support::SigningKeyKind;
use attest_test_support::gce::InstanceSpec;
use attest_trust::{SignatureState, Trust, ValidatorFactory};

const KMS_URI: &str = "kms://cluster-kms?key=Q0NDQ0NDQ0NDQ0NDQ0NDQw==&salt=";
const TIMEOUT: Duration = Duration::from_secs(90);

/// The image a genuine node boots, and the one an impostor boots (another kernel).
const GOOD: &[(u8, &[u8])] = &[(4, b"boot loader v1"), (9, b"kernel v1")];
const PATCHED: &[(u8, &[u8])] = &[(4, b"boot loader v1"), (9, b"kernel v1 (patched)")];
/// The PCRs the measurements file speaks of.
const MEASURED: [u8; 3] = [0, 4, 9];

/// Variants a node can attest as but cannot join with yet, and why.
/// (Empty: every variant a node can attest as can join; a variant added with an issuer but no node lock
/// would be named here.)
const CANNOT_JOIN_YET: &[(&str, &str)] = &[];

/// The simulated hardware of one variant: its test roots and the chip every machine of the test shares — an
/// SEV-SNP guest device, or a TD (Azure's: the paravisor's quote endpoint; a TD without a vTPM: its
/// configfs-tsm interface).
struct Platform {
    variant: Variant,
    dir: attest_test_support::TempDir,
    snp: Option<SnpServer>,
    td: Option<(Arc<SimulatedTd>, TdServer, QuoteEndpointServer)>,
    /// A TD without a vTPM (`qemu-tdx`): the platform each machine boots a TD of its own on (its own RTMR3).
    td_host: Option<Arc<TdPlatform>>,
}

/// One machine of a platform: its TPM (manufactured as the variant's cloud manufactures it) and where its
/// evidence comes from.
struct Machine {
    _tpm: Option<Swtpm>,
    /// A TD without a vTPM: the machine's own TD and its kernel interfaces.
    td: Option<(Arc<SimulatedTd>, TdServer)>,
    config: HardwareConfig,
}

impl Platform {
    /// The platform of `variant`, from its row's columns.
    fn start(variant: Variant) -> Platform {
        let dir = attest_test_support::TempDir::new("svcvar");
        let roots = dir.path().join("roots");
        let (mut snp, mut td, mut td_host) = (None, None, None);
        match variant.info().hardware {
            Hardware::None => {}
            Hardware::SevSnp { signer } => {
                let kind = match signer {
                    SigningKey::Vcek => SigningKeyKind::Vcek,
                    SigningKey::Vlek => SigningKeyKind::Vlek,
                };
                let sim = SimulatedSnp::provision(&roots, kind, DEFAULT_MEASUREMENT).unwrap();
                snp = Some(SnpServer::start(sim, &dir.path().join("sev-guest.sock")).unwrap());
            }
            Hardware::Tdx if !variant.info().has_vtpm() => {
                td_host = Some(Arc::new(TdPlatform::generate(&roots).unwrap()));
            }
            Hardware::Tdx => {
                // Azure's TD partitions run without SEPT_VE_DISABLE (the row waives it); other TDs have it.
                let attributes = if variant.info().td_waivers.is_empty() { TD_ATTRIBUTES } else { AZURE_TD_ATTRIBUTES };
                let sim = SimulatedTd::provision(&roots, &dir.path().join("td"), DEFAULT_MRTD, attributes).unwrap();
                let sim = Arc::new(sim);
                let tsm = TdServer::start(&sim).unwrap();
                let endpoint = QuoteEndpointServer::start(Arc::clone(&sim), "127.0.0.1:0".parse().unwrap()).unwrap();
                td = Some((sim, tsm, endpoint));
            }
        }
        Platform { variant, dir, snp, td, td_host }
    }

    fn roots(&self) -> PathBuf {
        self.dir.path().join("roots")
    }

    fn device(&self) -> Option<SnpDeviceAddr> {
        self.snp.as_ref().map(|s| SnpDeviceAddr::Simulator(s.socket().to_owned()))
    }

    /// A machine of the variant booting `image`, bound to `cluster` (PCR 15, or a TD's RTMR3) when given: its vTPM with an EK
    /// certificate only where the table says the cloud provisions one, provisioned by the cloud's AK trust
    /// (Azure's paravisor, Google's AK certificate).
    fn machine(&self, name: &str, image: &[(u8, &[u8])], cluster: Option<[u8; 32]>) -> Machine {
        let info = self.variant.info();
        if !info.has_vtpm() {
            // A TD without a vTPM, booted on the platform: the image measured into RTMR2 (the firmware and the
            // kernel into RTMR0-1), the cluster binding in RTMR3 as the node lock extends it.
            let platform = self.td_host.as_ref().expect("a TDX platform");
            let mut td_config = TdConfig::new(DEFAULT_MRTD, TD_ATTRIBUTES);
            td_config.events.extend(image.iter().map(|(_, blob)| (2, blob.to_vec())));
            let root = self.dir.path().join(format!("td-{name}"));
            let td = Arc::new(SimulatedTd::boot(Arc::clone(platform), &root, &td_config).unwrap());
            if let Some(id) = cluster {
                let digest = LockRegister::Rtmr(3).extend_digest(default_provider(), &id);
                td.extend(3, digest.as_bytes().try_into().unwrap());
            }
            let server = TdServer::start(&td).unwrap();
            let mut config = HardwareConfig::new("swtpm:host=127.0.0.1,port=1");
            config.tdx = TdxPaths::under(&root);
            return Machine { _tpm: None, td: Some((td, server)), config };
        }
        let sw = if info.ek_certificate { Swtpm::start() } else { Swtpm::start_without_ek_certificate() }.unwrap();
        let mut tpm = Tpm::open(&sw.tcti()).unwrap();
        assert_eq!(tpm.ek_certificate().is_ok(), info.ek_certificate, "{}: the vTPM's EK certificate", self.variant);
        let mut config = HardwareConfig::new(&sw.tcti());
        if info.ak == AkTrust::ProviderCertificate {
            // Google's vTPM: the AK certificate from the (test) Google CA, and a measured boot with its event log.
            let image: Vec<(u8, Vec<u8>)> = image.iter().map(|(i, b)| (*i, b.to_vec())).collect();
            let spec = InstanceSpec::new("attest-svcvar", name);
            let log = attest_hwsim::gce::provision(&mut tpm, &self.roots(), &spec, GceAkKind::Ecc, &image).unwrap();
            config.event_log = Some(log);
        } else {
            for (pcr, blob) in image {
                tpm.extend_pcr(*pcr, &openssl::sha::sha256(blob)).unwrap();
            }
        }
        if let Some(id) = cluster {
            tpm.extend_pcr(BOOTSTRAP_PCR, &id).unwrap();
        }
        if let Some((td, _, endpoint)) = &self.td {
            // Azure's paravisor on TDX: the HCL report of TDX type binding its AK; TD quotes from its endpoint.
            td.provision_azure(&mut tpm).unwrap();
            config.tdx = TdxPaths::under(td.root());
            config.tdx_quote_endpoint = QuoteEndpoint::parse(&endpoint.url()).unwrap();
        }
        if let Some(device) = self.device() {
            if info.ak == AkTrust::HclRuntimeData {
                // Azure's paravisor: the HCL report binding its AK, from the chip; the guest sees no SNP device.
                attest_hwsim::azure::provision(&mut tpm, &SnpGuestDevice::open(&device).unwrap()).unwrap();
                config.snp_leaf = Some(std::fs::read(self.roots().join(LEAF_FILE)).unwrap());
            } else {
                config.snp_device = device;
            }
        }
        Machine { _tpm: Some(sw), td: None, config }
    }

    /// The validator factory of a verifier of this platform: the test roots (and their TDX collateral), the
    /// simulated guest's launch pinned.
    fn factory(&self) -> ValidatorFactory {
        let mut factory = ValidatorFactory::default();
        if self.roots().exists() {
            let roots = TestRoots::load(&self.roots()).unwrap().verifiers().unwrap();
            factory.snp = Arc::new(roots.snp);
            factory.gce = Arc::new(roots.gce);
            factory.tdx = Arc::new(roots.tdx.unwrap_or_default());
        }
        factory.snp_policy = SnpPolicy { measurements: vec![Hex(DEFAULT_MEASUREMENT)], ..SnpPolicy::default() };
        factory.tdx_policy = TdxPolicy { mrtd: vec![Hex(DEFAULT_MRTD)], ..TdxPolicy::default() };
        factory
    }
}

impl Machine {
    /// The node's issuer of `variant` on this machine.
    fn issuer(&self, variant: Variant) -> Arc<NodeIssuer> {
        Arc::new(NodeIssuer::open(VariantChoice::Fixed(variant), &self.config).unwrap())
    }
}

/// `{"0": …, "4": …, "9": …}`: the measured PCRs of `issuer`'s machine; a TD without a vTPM: `{"0": MRTD,
/// "1"–"3": RTMR0–2}` (RTMR3, index 4, is the node lock's, left out as PCR 15 is).
fn measurements_of(machine: &Machine, issuer: &NodeIssuer) -> String {
    if let Some((td, _)) = &machine.td {
        let s = td.state();
        let mut entries = vec![format!(r#""0": {{"expected": "{}", "warnOnly": false}}"#, hex::encode(s.mr_td))];
        for (i, rtmr) in s.rtmrs[..3].iter().enumerate() {
            entries.push(format!(r#""{}": {{"expected": "{}", "warnOnly": false}}"#, i + 1, hex::encode(rtmr)));
        }
        return format!("{{{}}}", entries.join(", "));
    }
    let pcrs = issuer.with_tpm(|tpm| tpm.read_pcrs(PcrMask::from_indices(&MEASURED).unwrap())).unwrap().unwrap();
    let entries: Vec<String> = MEASURED
        .iter()
        .map(|i| format!(r#""{i}": {{"expected": "{}", "warnOnly": false}}"#, hex::encode(pcrs.get(*i).unwrap())))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// The cluster of the key service's master secret and the fixtures' measurement salt.
fn cluster() -> [u8; 32] {
    cluster_id(&measurement_secret(&MasterSecret::from_kms_uri(KMS_URI).unwrap()), &join_support::MEASUREMENT_SALT)
}

/// The real join service (and its key service), admitting nodes of `variant` against `measurements`, that
/// attests itself with `own` — and, where its issuer is a `qemu-vtpm` one with an EK certificate, serves
/// credential activation for its AK on the same port, as the binary does.
struct JoinServer {
    fixture: join_support::Fixture,
    addr: SocketAddr,
    _servers: Vec<Server>,
}

impl JoinServer {
    async fn start(
        platform: &Platform,
        measurements: &str,
        node_ak: Option<[u8; 32]>,
        own: Arc<dyn AttestationIssuer>,
        activation: Option<Arc<ActivationService>>,
    ) -> JoinServer {
        let (kms, kms_addr) = join_support::key_service(MasterSecret::from_kms_uri(KMS_URI).unwrap()).await;
        let fixture = join_support::fixture(kms_addr, Duration::from_secs(5), None);
        let registry = Arc::new(FileAkRegistry::open(fixture.dir.join("aks.json")).unwrap());
        if let Some(digest) = node_ak {
            registry.register(digest, AkBasis::Pinned).unwrap();
        }
        let path = fixture.dir.join("measurements.json");
        let signer = join_support::MeasurementsSigner::new(&fixture.dir);
        signer.write(&path, measurements);
        let config = ValidatorConfig {
            factory: platform.factory(),
            ..ValidatorConfig::new(vec![platform.variant], registry, signer.trust(&path))
        };
        let validators = Arc::new(Validators::load(config, &path, Arc::clone(&fixture.metrics)).unwrap());
        let mut router = Router::new();
        router.add_service(Arc::clone(&fixture.service));
        if let Some(a) = activation {
            router.add_service(a);
        }
        let server = Server::new(router, ServerConfig::default());
        let verifier = attest_atls::Verifier::new(validators.attestation_validators());
        let acceptor = AtlsAcceptor::new(Some(own), Some(Arc::new(verifier))).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = attest_atls::grpc::serve(&server, listener, Arc::new(acceptor)).unwrap();
        JoinServer { fixture, addr, _servers: vec![kms, server] }
    }

    /// A join service attesting as `service`'s node, with its node's issuer.
    async fn of_node(
        platform: &Platform,
        measurements: &str,
        node_ak: Option<[u8; 32]>,
        service: &Arc<NodeIssuer>,
    ) -> JoinServer {
        let activation = service
            .qemu()
            .filter(|q| !q.ek_certificate().is_empty())
            .map(|q| Arc::new(ActivationService::new(Arc::clone(q), q.ek_certificate().to_vec())));
        Self::start(platform, measurements, node_ak, Arc::clone(service) as Arc<dyn AttestationIssuer>, activation)
            .await
    }

    fn tokens(&self) -> usize {
        std::fs::read_dir(&self.fixture.tokens_dir).map_or(0, Iterator::count)
    }
}

/// A joining node of the platform's variant: its machine, issuer and directory, and how it verifies join
/// services (no EK CA unless the variant's AK is trusted through a registry).
struct JoiningNode {
    machine: Machine,
    issuer: Arc<NodeIssuer>,
    dir: attest_test_support::TempDir,
    trust: Arc<JoinServiceTrust>,
}

impl JoiningNode {
    fn new(platform: &Platform, measurements: &str) -> JoiningNode {
        let v = platform.variant;
        let machine = platform.machine("node", GOOD, None);
        let issuer = machine.issuer(v);
        let document = attest_measurements::parse_document(measurements.as_bytes()).unwrap();
        let trust = Arc::new(Trust {
            measurements: SignatureState::Verified,
            launch: vec![(v, LaunchPinning::NotApplicable)],
            revocation: None,
        });
        let factory = platform.factory();
        let ek_ca = if v.info().ak == AkTrust::Registry {
            // Only a registry variant reads an EK CA — and it cannot do without one.
            let none = JoinServiceTrust::new(&[v], &document, &factory, None, Arc::clone(&trust)).unwrap_err();
            assert!(matches!(none, ServerTrustError::NoEkCa), "{v}: {none}");
            Some(EkCaBundle::from_swtpm_localca(&Swtpm::ca_dir().unwrap()).unwrap())
        } else {
            None
        };
        let trust = Arc::new(JoinServiceTrust::new(&[v], &document, &factory, ek_ca, trust).unwrap());
        JoiningNode { machine, issuer, dir: attest_test_support::TempDir::new("svcvar-node"), trust }
    }

    fn node(&self) -> Arc<Node> {
        let lock = Arc::new(NodeLock::open(Arc::clone(&self.issuer) as Arc<dyn PcrBackend>).unwrap());
        let config = NodeConfig {
            state_dir: self.dir.path().join("state"),
            node_name: "node-svcvar".into(),
            control_plane: false,
            api_server_endpoint: "127.0.0.1:6443".into(),
        };
        let backend = Arc::new(DryRunBackend::new(&self.dir.path().join("state")));
        Arc::new(Node::new(config, lock, Arc::new(KeyFileDisk::new(&self.dir.path().join("run"))), backend))
    }

    /// The node lock's register (PCR 15, or RTMR3 on a TD without a vTPM), read as the lock reads it.
    fn lock(&self) -> Digest {
        PcrBackend::read_bootstrap_pcr(&*self.issuer).unwrap()
    }

    async fn join(&self, addr: SocketAddr) -> Result<Outcome, JoinError> {
        let source = AtlsTicketSource::new(
            addr,
            Arc::clone(&self.issuer) as Arc<dyn AttestationIssuer>,
            Arc::clone(&self.trust),
        )
        .unwrap()
        .with_timeouts(Duration::from_secs(30), Duration::from_secs(10));
        let config = JoinConfig {
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
            max_refusals: 1,
        };
        tokio::time::timeout(TIMEOUT, JoinClient::new(self.node(), Arc::new(source), config).run())
            .await
            .expect("the join client ends in time")
    }

    /// The node refuses the join service at `service` for `why`, and is untouched.
    async fn refuses(&self, service: &JoinServer, what: &str, why: &str) {
        let v = self.issuer.variant();
        println!("{v}: {what}");
        let before = service.tokens();
        match self.join(service.addr).await {
            Err(JoinError::GaveUp { last, .. }) => {
                assert!(
                    last.contains("join service refused by this node") && last.contains(why),
                    "{v}, {what}: {last}"
                );
            }
            other => panic!("{v}, {what}: expected a refusal, got {other:?}"),
        }
        let register = v.info().lock;
        assert_eq!(self.lock(), register.unbound(), "{v}, {what}: {register} unchanged");
        assert!(matches!(self.node().startup().unwrap(), Ok(Startup::Fresh)), "{v}, {what}: no state written");
        assert!(!self.dir.path().join("run/state-disk.key").exists(), "{v}, {what}: no disk key kept");
        // Refused in the handshake, the node never asked; a ticket of another cluster arrived and was dropped.
        let asked = why.contains("not a node of the cluster");
        assert_eq!(service.tokens(), before + usize::from(asked), "{v}, {what}: tickets issued");
    }
}

async fn each_variant_verifies_its_own_join_service(platform: &Platform) {
    let v = platform.variant;
    let id = cluster();
    let service_node = platform.machine("service", GOOD, Some(id));
    let service = service_node.issuer(v);
    assert_eq!(service.variant(), v);
    let measurements = measurements_of(&service_node, &service);
    let node = JoiningNode::new(platform, &measurements);
    assert_eq!(measurements_of(&node.machine, &node.issuer), measurements, "{v}: the node boots the service's image");
    let node_ak = node.issuer.qemu().map(|q| ak_digest(q.attestation_key().tpm2b_public()).unwrap());

    // 1. A genuine machine of the variant booting another kernel.
    let patched_hw = platform.machine("patched", PATCHED, Some(id));
    let patched = patched_hw.issuer(v);
    let s = JoinServer::of_node(platform, &measurements, node_ak, &patched).await;
    let patched_register = if v.info().has_vtpm() { "PCR 9" } else { "rtmr2" };
    node.refuses(&s, "other measurements", patched_register).await;
    drop((s, patched, patched_hw));

    // 2. Another node's hardware, relayed; 3. a document recorded for an earlier nonce.
    let s =
        JoinServer::start(platform, &measurements, node_ak, Arc::new(Borrowed::Relayed(Arc::clone(&service))), None)
            .await;
    node.refuses(&s, "relayed evidence", "the attestation binds key hash").await;
    let s =
        JoinServer::start(platform, &measurements, node_ak, Arc::new(Borrowed::Replayed(Arc::clone(&service))), None)
            .await;
    // A TD without a vTPM: the nonce is bound by the TD quote's REPORTDATA alone.
    let stale = if v.info().has_vtpm() { "nonce" } else { "TDX policy check report_data" };
    node.refuses(&s, "replayed document", stale).await;
    drop(s);

    // 4. Where the host holds the vTPM: an earlier SNP report next to a fresh quote by the AK.
    if v.info().ak == AkTrust::FreshReportBinding {
        let host = platform.machine("host", GOOD, Some(id));
        let qemu = QemuVtpmIssuer::new(Tpm::open(&host.config.tcti).unwrap(), AkConfig::default()).unwrap();
        let snp = SnpIssuer::new(v, qemu, SnpGuestDevice::open(&host.config.snp_device).unwrap()).unwrap();
        let replaying = Arc::new(ReplayingIssuer::record(snp, b"an earlier attestation").unwrap());
        let s = JoinServer::start(platform, &measurements, node_ak, replaying, None).await;
        node.refuses(&s, "replayed SNP report", "does not bind this attestation's key and nonce").await;
    }

    // 5. A genuine, measured machine that is a node of another cluster: refused once its ticket arrived.
    let stranger_hw = platform.machine("stranger", GOOD, Some([0x77; 32]));
    let stranger = stranger_hw.issuer(v);
    let s = JoinServer::of_node(platform, &measurements, node_ak, &stranger).await;
    node.refuses(&s, "another cluster's node", "not a node of the cluster").await;
    drop((s, stranger, stranger_hw));

    // 6. The weaker path: a join service attesting as a bare qemu-vtpm where the node expects its variant.
    if v.info().ak != AkTrust::Registry {
        let sw = Swtpm::start().unwrap();
        let mut tpm = Tpm::open(&sw.tcti()).unwrap();
        for (pcr, blob) in GOOD {
            tpm.extend_pcr(*pcr, &openssl::sha::sha256(blob)).unwrap();
        }
        tpm.extend_pcr(BOOTSTRAP_PCR, &id).unwrap();
        drop(tpm);
        let qemu = Arc::new(
            NodeIssuer::open(VariantChoice::Fixed(Variant::QemuVtpm), &HardwareConfig::new(&sw.tcti())).unwrap(),
        );
        let s = JoinServer::of_node(platform, &measurements, node_ak, &qemu).await;
        node.refuses(&s, "a qemu-vtpm join service", "no validator accepts attestation extension OID").await;
    }

    // The genuine join service of the variant, on its node's hardware: verified, and the node joins.
    let s = JoinServer::of_node(platform, &measurements, node_ak, &service).await;
    let outcome = node.join(s.addr).await.unwrap_or_else(|e| panic!("{v}: {e}"));
    assert_eq!(outcome, Outcome::Joined { cluster_id: id }, "{v}");
    assert_eq!(node.lock(), v.info().lock.bound(default_provider(), &id), "{v}");
    assert_eq!(s.tokens(), 1, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_each_variant_verifies_a_join_service_of_its_variant_without_an_ek_certificate() {
    let mut covered = Vec::new();
    for row in TABLE.iter().filter(|r| IssuerKind::of(r.variant).is_some()) {
        let platform = Platform::start(row.variant);
        if let Some((_, why)) = CANNOT_JOIN_YET.iter().find(|(name, _)| *name == row.name) {
            // It attests, but cannot lock: once it can, it leaves the list and is covered like the others.
            let issuer = platform.machine("node", GOOD, None).issuer(row.variant);
            let lock = NodeLock::open(issuer as Arc<dyn PcrBackend>);
            assert!(lock.is_err(), "{} can lock a node now: remove it from CANNOT_JOIN_YET ({why})", row.name);
            println!("{}: not covered yet: {why}", row.name);
            continue;
        }
        each_variant_verifies_its_own_join_service(&platform).await;
        covered.push(row.name);
    }
    println!("verified a join service of its own variant: {}", covered.join(", "));
    assert!(covered.len() >= 7, "{covered:?}");
}
