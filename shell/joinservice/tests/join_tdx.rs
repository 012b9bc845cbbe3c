//! A running join service accepting `qemu-tdx`: joining nodes attest over real aTLS (127.0.0.1) with TD
//! quotes made by test-support's Intel-like PKI, whose root the test trusts through the library API
//! (`TdxVerifier::dangerous_with_root`, and `PcsConfig::dangerous_root_ca` for the store) — no binary flag
//! trusts a test root. The platform's collateral is read from a PCS store directory at start, as the
//! `join-service` command does (`attest_joinservice::tdx::install`). A node with the expected MRTD and RTMRs
//! gets its ticket; a tampered quote, another MRTD, another RTMR, a quote for another nonce and a platform
//! without collateral are refused in the handshake, and no ticket or token is issued for them.

mod join_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use attest_atls::nonce::Nonce;
use attest_atls::{AttestationIssuer, BoxError};
use attest_engine::UnixTime;
use attest_engine::crypto::default_provider;
use attest_engine::tdx::{Collateral, TdxPolicy, TdxVerifier};
use attest_engine::variant::Variant;
use attest_engine::variant::tdx::qemu_report_data;
use attest_grpc::{ChannelConfig, Metadata, Status};
use attest_joinservice::tdx::{TdxPlatform, install};
use attest_joinservice::{ValidatorConfig, Validators};
use attest_kds::{PckCa, Pcs, PcsConfig, PcsKey, Store};
use attest_keyservice::MasterSecret;
use attest_proto::attest::v1::{AttestationDocument, TdxEvidence};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;
use attest_registration::FileAkRegistry;
use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec, pem, qe_identity_json, tcb_info_json};
use attest_trust::ValidatorFactory;
use join_support::{Captured, MeasurementsSigner, fixture};
use prost::Message as _;
use zeroize::Zeroizing;

const DISK_UUID: &str = "0b7c3e5a-2d4f-4c6b-9a8e-1f2a3b4c5d6e";
const MRTD: [u8; 48] = [0x11; 48];
const RTMRS: [[u8; 48]; 4] = [[0x21; 48], [0x22; 48], [0x23; 48], [0; 48]];

fn comps(prefix: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..prefix.len()].copy_from_slice(prefix);
    c
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// Writes the PKI's collateral for the default test platform into a PCS store, in the layout `attest pcs`
/// fills (PCS bodies, issuer chains, CRLs), valid from a day ago for 30 days.
fn fill_store(pki: &IntelPki, store: &std::path::Path) {
    let (from, to) = (now() - 86_400, now() + 30 * 86_400);
    let (from_s, to_s) = (UnixTime::from_secs(from).to_string(), UnixTime::from_secs(to).to_string());
    let tcb = tcb_info_json(
        PckSpec::default().fmspc,
        (&from_s, &to_s),
        &[(comps(&[5, 5, 2, 2, 3, 1, 0, 3]), 11, comps(&[3, 0, 5]), "UpToDate", &[])],
        &[(4, "UpToDate")],
    );
    let qe = qe_identity_json((&from_s, &to_s), &[(4, "UpToDate")]);
    let bundle = pki.bundle(&tcb, &qe, (i64::try_from(from).unwrap(), i64::try_from(to).unwrap()), &[], &[]);
    let c = Collateral::from_bundle_json(bundle.as_bytes()).unwrap();
    let chain = |certs: &[Vec<u8>]| certs.iter().map(|d| pem(d)).collect::<String>();
    let body = |key: &str, text: &[u8], sig: &[u8; 64]| {
        format!("{{\"{key}\":{},\"signature\":\"{}\"}}", String::from_utf8_lossy(text), hex::encode(sig))
    };
    let s = Store::open(store).unwrap();
    let write = |key: PcsKey, bytes: &[u8], issuer_chain: Option<String>| {
        if let Some(c) = issuer_chain {
            s.write_atomic(&s.pcs_chain_path(key).unwrap(), c.as_bytes()).unwrap();
        }
        s.write_atomic(&s.pcs_path(key), bytes).unwrap();
    };
    let fmspc = PckSpec::default().fmspc;
    write(
        PcsKey::TcbInfo(fmspc),
        body("tcbInfo", &c.tcb_info, &c.tcb_info_signature).as_bytes(),
        Some(chain(&c.tcb_info_issuer_chain)),
    );
    write(
        PcsKey::QeIdentity,
        body("enclaveIdentity", &c.qe_identity, &c.qe_identity_signature).as_bytes(),
        Some(chain(&c.qe_identity_issuer_chain)),
    );
    write(PcsKey::PckCrl(PckCa::Platform), c.pck_crl.as_ref().unwrap(), Some(chain(&c.pck_crl_issuer_chain)));
    write(PcsKey::RootCaCrl, c.root_ca_crl.as_ref().unwrap(), None);
}

/// How a simulated TD misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Td {
    Good,
    /// One MRTD byte changed after the quote was signed.
    Tampered,
    /// A TD with another MRTD (a correctly signed quote).
    OtherMrtd,
    /// A TD whose RTMR1 differs (another kernel).
    OtherRtmr,
    /// A quote whose REPORTDATA binds another nonce (a replayed quote).
    StaleNonce,
    /// A platform with no collateral at the service.
    OtherPlatform,
}

/// A `qemu-tdx` attester: a fresh TD quote per handshake, REPORTDATA = SHA-256(user data ‖ nonce) ‖ 0³².
struct TdIssuer {
    pki: Arc<IntelPki>,
    td: Td,
}

impl std::fmt::Debug for TdIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TdIssuer").field("td", &self.td).finish_non_exhaustive()
    }
}

impl AttestationIssuer for TdIssuer {
    fn oid(&self) -> &str {
        Variant::QemuTdx.oid()
    }

    fn issue(&self, nonce: &Nonce, user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        let nonce = if self.td == Td::StaleNonce { &[0u8; 32][..] } else { &nonce[..] };
        let mut spec = QuoteSpec {
            report_data: qemu_report_data(default_provider(), user_data, nonce),
            mr_td: MRTD,
            rtmrs: RTMRS,
            ..QuoteSpec::default()
        };
        match self.td {
            Td::OtherMrtd => spec.mr_td = [0x12; 48],
            Td::OtherRtmr => spec.rtmrs[1][0] ^= 1,
            _ => {}
        }
        let mut pck = PckSpec::default();
        if self.td == Td::OtherPlatform {
            pck.fmspc = [0x00, 0x99, 0x99, 0x99, 0x99, 0x99];
        }
        let mut quote = self.pki.quote(&self.pki.issue_pck(&pck), &spec);
        if self.td == Td::Tampered {
            quote[184] ^= 1;
        }
        let doc = AttestationDocument {
            variant: Variant::QemuTdx.name().into(),
            user_data: user_data.to_vec(),
            tdx: Some(TdxEvidence { quote, event_log: Vec::new() }),
            ..AttestationDocument::default()
        };
        Ok(doc.encode_to_vec())
    }
}

async fn join(
    addr: SocketAddr,
    pki: &Arc<IntelPki>,
    td: Td,
) -> Result<IssueJoinTicketResponse, Box<dyn std::error::Error + Send + Sync>> {
    let issuer = Arc::new(TdIssuer { pki: Arc::clone(pki), td });
    let (connector, csr) = join_support::kubelet_connector(issuer as Arc<dyn AttestationIssuer>, None, "td-1");
    let (channel, _) = attest_atls::grpc::connect(addr, &connector, ChannelConfig::default()).await?;
    let request =
        IssueJoinTicketRequest { disk_uuid: DISK_UUID.into(), certificate_request: csr, ..Default::default() };
    channel
        .unary::<_, IssueJoinTicketResponse>(
            paths::JOIN_ISSUE_JOIN_TICKET,
            request,
            Metadata::new(),
            Some(Duration::from_secs(30)),
        )
        .await
        .map(|r| r.message)
        .map_err(|s: Status| s.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_td_joins_and_tampered_or_foreign_tds_do_not() {
    // The refusal reasons are read from the service's log (the client sees only a failed handshake).
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this test binary");
    let pki = Arc::new(IntelPki::new());
    let master =
        MasterSecret::new(Zeroizing::new(vec![0x42; 32]), Zeroizing::new(vec![0x17; 32])).expect("master secret");
    let (_kms, kms) = join_support::key_service(master).await;
    let fixture = fixture(kms, Duration::from_secs(2), None);

    // The platform's collateral, from the PCS store (offline), verified under the test root.
    let store = fixture.dir.join("pcs");
    fill_store(&pki, &store);
    let root = pki.root_der().to_vec();
    let tdx = Arc::new(TdxVerifier::dangerous_with_root(default_provider(), root.clone()));
    let pcs = Pcs::new(PcsConfig {
        store: Some(store),
        base_url: None,
        certs_url: None,
        dangerous_root_ca: Some(root),
        ..PcsConfig::default()
    })
    .unwrap();
    let platform = TdxPlatform { fmspc: PckSpec::default().fmspc, ca: PckCa::Platform };
    let installed = install(&pcs, &tdx, &[platform]).await.unwrap();
    assert_eq!(installed[0].fmspc, platform.fmspc);

    // Measurements in Constellation's TDX layout: 0 = MRTD, 1–3 = RTMR0–2.
    let measurements = format!(
        r#"{{"0": {{"expected": "{}"}}, "1": {{"expected": "{}"}}, "2": {{"expected": "{}"}}, "3": {{"expected": "{}"}}}}"#,
        hex::encode(MRTD),
        hex::encode(RTMRS[0]),
        hex::encode(RTMRS[1]),
        hex::encode(RTMRS[2])
    );
    let path = fixture.dir.join("measurements.json");
    let signer = MeasurementsSigner::new(&fixture.dir);
    signer.write(&path, &measurements);
    let registry = Arc::new(FileAkRegistry::open(fixture.dir.join("aks.json")).unwrap());
    let config = ValidatorConfig {
        factory: ValidatorFactory {
            tdx: Arc::clone(&tdx),
            tdx_policy: TdxPolicy::default(),
            ..ValidatorFactory::default()
        },
        ..ValidatorConfig::new(vec![Variant::QemuTdx], registry, signer.trust(&path))
    };
    let validators = Arc::new(Validators::load(config, &path, Arc::clone(&fixture.metrics)).unwrap());
    let (_server, addr) = fixture.serve_atls(&validators, None).await;

    let ticket = join(addr, &pki, Td::Good).await.expect("the expected TD joins");
    assert_eq!(ticket.state_disk_key.len(), 32);
    let kubelet = openssl::x509::X509::from_der(&ticket.kubelet_cert).unwrap();
    assert!(kubelet.verify(&fixture.ca.certificate().public_key().unwrap()).unwrap(), "signed by the cluster CA");
    assert!(!ticket.token.is_empty());
    assert_eq!(fixture.metrics.issued_count(), (1, 0));

    for (td, reason) in [
        (Td::Tampered, "TD quote signature does not verify"),
        (Td::OtherMrtd, "TDX policy check mrtd"),
        (Td::OtherRtmr, "TDX policy check rtmr1"),
        (Td::StaleNonce, "TDX policy check report_data"),
        (Td::OtherPlatform, "no TDX collateral installed for FMSPC 009999999999"),
    ] {
        let before = captured.text().len();
        join(addr, &pki, td).await.expect_err("refused");
        let log = captured.text()[before..].to_owned();
        assert!(log.contains("joining node's attestation refused") && log.contains(reason), "{td:?}: {log}");
    }
    assert_eq!(fixture.metrics.issued_count(), (1, 0), "no ticket for a refused TD");
    let tokens = std::fs::read_dir(&fixture.tokens_dir).unwrap().count();
    assert_eq!(tokens, 1, "one token, the good TD's");

    // A measurements file that pins no MRTD is refused (the validators stay).
    signer.write(&path, &format!(r#"{{"1": {{"expected": "{}"}}}}"#, hex::encode(RTMRS[0])));
    let e = validators.reload().unwrap_err();
    assert!(e.to_string().contains("nothing pins the TD's launch"), "{e}");
    join(addr, &pki, Td::Good).await.expect("the old validators still admit the expected TD");
}
