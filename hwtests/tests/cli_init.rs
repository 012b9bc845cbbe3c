//! `attest init` and `attest verify` against a small in-test bootstrapper: an swtpm-backed `qemu-vtpm` issuer
//! attesting over aTLS, serving `init.API/Init` (a few log lines, then success or failure) and
//! `attest.v1.CredentialActivation` — the same two services the real bootstrapper's init server mounts.
//!
//! The commands run in-process (`cli::init::run`, `cli::verify::run` with a captured stdout) on the test
//! thread; the node runs on a runtime of its own.

use attest_atls::AtlsAcceptor;
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::registration::ActivationService;
use attest_attester::tpm::{AkConfig, PcrMask, Tpm};
use attest_cli::{Cli, Command, Status, UsageError};
use attest_grpc::{Request, Response, Router, Server, ServerConfig, Streaming};
use attest_hwtests::Swtpm;
use attest_keyservice::{MasterSecret, cluster_id, measurement_secret};
use attest_proto::init::{
    InitFailureResponse, InitRequest, InitResponse, InitSuccessResponse, LogResponseType, init_response,
};
use attest_proto::paths;
use attest_registration::{FileAkRegistry, ak_digest};
use clap::Parser;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const KUBECONFIG: &[u8] = b"apiVersion: v1\nkind: Config\nclusters: []\n";
const OWNER_ID: [u8; 32] = [0x0D; 32];

/// The in-test bootstrapper.
struct Node {
    sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<InitRequest>>>,
    _server: Server,
    _rt: tokio::runtime::Runtime,
}

impl Node {
    /// A node answering `Init` with success, or with `init_failure` when `fail` is set.
    #[track_caller]
    fn start(fail: bool) -> Self {
        let sw = Swtpm::start().expect("start swtpm");
        let mut tpm = Tpm::open(&sw.tcti()).expect("open TPM");
        let ek = tpm.ek_certificate().unwrap();
        let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

        let mut router = Router::new();
        router.add_service(Arc::new(ActivationService::new(issuer.clone(), ek)));
        let seen = requests.clone();
        router.server_streaming(paths::INIT_INIT, move |req: Request<InitRequest>| {
            let seen = seen.clone();
            async move {
                let request = req.message;
                seen.lock().unwrap().push(request.clone());
                let (tx, stream) = Streaming::channel(4);
                tokio::spawn(async move {
                    let log = |s: &str| InitResponse {
                        kind: Some(init_response::Kind::Log(LogResponseType { log: s.as_bytes().to_vec() })),
                    };
                    for line in ["[init] checking the init secret", "[init] kubeadm init (dry run)\n[init] done\n"] {
                        let _ = tx.send(Ok(log(line))).await;
                    }
                    let kind = if fail {
                        init_response::Kind::InitFailure(InitFailureResponse {
                            error: "kubeadm init failed: exit 1".into(),
                        })
                    } else {
                        let master = MasterSecret::from_kms_uri(&request.kms_uri).unwrap();
                        let id = cluster_id(&measurement_secret(&master), &request.measurement_salt);
                        init_response::Kind::InitSuccess(InitSuccessResponse {
                            kubeconfig: KUBECONFIG.to_vec(),
                            owner_id: OWNER_ID.to_vec(),
                            cluster_id: id.to_vec(),
                            node_name: "node-1".into(),
                            disk_uuid: "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d".into(),
                        })
                    };
                    let _ = tx.send(Ok(InitResponse { kind: Some(kind) })).await;
                });
                Ok(Response::new(stream))
            }
        });
        let server = Server::new(router, ServerConfig::default());
        let acceptor = Arc::new(AtlsAcceptor::new(Some(issuer.clone()), None).unwrap());
        let addr = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            attest_atls::grpc::serve(&server, listener, acceptor).unwrap()
        });
        Self { sw, issuer, addr, requests, _server: server, _rt: rt }
    }

    fn dir(&self) -> &Path {
        self.sw.dir()
    }

    fn endpoint(&self) -> String {
        self.addr.to_string()
    }

    fn ak_digest(&self) -> [u8; 32] {
        ak_digest(self.issuer.attestation_key().tpm2b_public()).unwrap()
    }

    /// A measurements file expecting this node's PCRs 0, 4, 7 and 15, with PCR `wrong` (if any) altered.
    fn measurements(&self, name: &str, wrong: Option<u8>) -> PathBuf {
        let pcrs = self.issuer.with_tpm(|tpm, _| tpm.read_pcrs(PcrMask::ALL)).unwrap();
        let mut map = serde_json::Map::new();
        for i in [0u8, 4, 7, 15] {
            let mut v = *pcrs.get(i).unwrap();
            if Some(i) == wrong {
                v[0] ^= 1;
            }
            map.insert(i.to_string(), serde_json::json!({"expected": hex::encode(v), "warnOnly": false}));
        }
        let path = self.dir().join(name);
        let bytes = serde_json::to_vec(&map).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        // Signed, as an operator publishes measurements: `<name>.sig` under `measurements.pub` (see `run`).
        let key = measurements_key();
        std::fs::write(self.dir().join("measurements.pub"), key.public_key_to_pem().unwrap()).unwrap();
        let mut signer = openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), key).unwrap();
        std::fs::write(signature_of(&path), signer.sign_oneshot_to_vec(&bytes).unwrap()).unwrap();
        path
    }
}

/// The measurements signer of this test binary.
fn measurements_key() -> &'static openssl::pkey::PKey<openssl::pkey::Private> {
    static KEY: std::sync::OnceLock<openssl::pkey::PKey<openssl::pkey::Private>> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let group = openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
        openssl::pkey::PKey::from_ec_key(openssl::ec::EcKey::generate(&group).unwrap()).unwrap()
    })
}

fn signature_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_owned();
    name.push(".sig");
    path.with_file_name(name)
}

fn parse(args: &[&str]) -> Command {
    let mut argv = vec!["attest"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).expect("arguments parse").command
}

/// Runs a command line; returns its status and stdout. A `--measurements FILE` that has a signature next to
/// it (`Node::measurements` writes one) is passed with it and its public key, as an operator would.
fn run(args: &[&str]) -> (Result<Status, UsageError>, String) {
    let mut argv: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    if let Some(file) = args.windows(2).find(|w| w[0] == "--measurements").map(|w| PathBuf::from(w[1])) {
        let (sig, key) = (signature_of(&file), file.with_file_name("measurements.pub"));
        if sig.exists() && key.exists() {
            argv.extend([
                "--measurements-signature".to_owned(),
                sig.display().to_string(),
                "--measurements-public-key".to_owned(),
                key.display().to_string(),
            ]);
        }
    }
    run_exactly(&argv.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Runs exactly this command line.
fn run_exactly(args: &[&str]) -> (Result<Status, UsageError>, String) {
    let mut out = Vec::new();
    let status = match parse(args) {
        Command::Init(a) => attest_cli::init::run(&a, &mut out),
        Command::Verify(a) => attest_cli::verify::run(&a, &mut out),
        other => panic!("not init/verify: {other:?}"),
    };
    (status, String::from_utf8(out).unwrap())
}

fn ca() -> String {
    Swtpm::ca_dir().unwrap().display().to_string()
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn init_registers_the_ak_attests_the_node_and_writes_the_cluster_files() {
    let node = Node::start(false);
    let out = node.dir().join("out");
    let measurements = node.measurements("m.json", None);
    let init_secret = node.dir().join("init-secret");
    std::fs::write(&init_secret, b"the init secret\n").unwrap();
    let (m, o, s, ca) =
        (measurements.display().to_string(), out.display().to_string(), init_secret.display().to_string(), ca());
    let args = [
        "init",
        "--endpoint",
        &node.endpoint(),
        "--measurements",
        &m,
        "--ek-ca",
        &ca,
        "--init-secret",
        &s,
        "--out",
        &o,
        "--cluster-name",
        "demo",
        "--kubernetes-version",
        "v1.30.4",
        "--json",
    ];
    let (status, stdout) = run(&args);
    assert_eq!(status.unwrap(), Status::Accepted, "{stdout}");
    let summary = json(&stdout);
    assert_eq!(summary["initialized"], true);
    assert_eq!(summary["registeredNow"], true);
    assert_eq!(summary["masterSecret"]["generated"], true);
    assert_eq!(summary["attestation"]["variant"], "qemu-vtpm");
    assert_eq!(summary["attestation"]["akBasis"], "credential-activation");
    assert_eq!(summary["attestation"]["akDigest"], hex::encode(node.ak_digest()));
    assert_eq!(summary["attestation"]["pcrsChecked"].as_array().unwrap().len(), 4);
    assert_eq!(summary["attestation"]["quotedPcrs"], 24);
    assert_eq!(summary["trust"]["measurementsSignature"], "verified");
    assert_eq!(summary["trust"]["waivers"].as_array().unwrap().len(), 0);
    // The key-service PKI init created for the key service and the join service.
    assert_eq!(summary["keyServicePki"]["generated"], true);
    for f in ["ca.crt", "ca.key", "key-service.crt", "key-service.key", "join-service.crt", "join-service.key"] {
        assert!(out.join("key-service-pki").join(f).is_file(), "{f}");
    }

    // The request the node received.
    let requests = node.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.init_secret, b"the init secret\n");
    assert_eq!(req.cluster_name, "demo");
    assert_eq!(req.kubernetes_version, "v1.30.4");
    assert_eq!(req.measurement_salt.len(), 32);

    // The files: master secret (0600, the secret the node got), kubeconfig (0600), cluster.json, registry.
    use std::os::unix::fs::PermissionsExt;
    let secret_path = out.join("master-secret.json");
    assert_eq!(std::fs::metadata(&secret_path).unwrap().permissions().mode() & 0o777, 0o600);
    let master = MasterSecret::from_file(&secret_path).unwrap();
    assert_eq!((master.key().len(), master.salt().len()), (32, 32));
    assert_eq!(MasterSecret::from_kms_uri(&req.kms_uri).unwrap().key(), master.key());
    assert!(std::fs::read_to_string(&secret_path).unwrap().starts_with("{\"key\":"));
    assert_eq!(std::fs::read(out.join("kubeconfig")).unwrap(), KUBECONFIG);
    assert_eq!(std::fs::metadata(out.join("kubeconfig")).unwrap().permissions().mode() & 0o777, 0o600);
    let cluster = json(&std::fs::read_to_string(out.join("cluster.json")).unwrap());
    let id = cluster_id(&measurement_secret(&master), &req.measurement_salt);
    assert_eq!(cluster["clusterId"], hex::encode(id));
    assert_eq!(summary["clusterId"], hex::encode(id));
    assert_eq!(cluster["ownerId"], hex::encode(OWNER_ID));
    assert_eq!(cluster["measurementSalt"], hex::encode(&req.measurement_salt));
    assert_eq!(cluster["endpoint"], node.endpoint());
    let registry = FileAkRegistry::open(out.join("ak-registry.json")).unwrap();
    assert_eq!(registry.entries(), vec![(node.ak_digest(), attest_engine::variant::AkBasis::CredentialActivation)]);

    // Secrets never reach stdout.
    assert!(!stdout.contains("the init secret"));
    assert!(!stdout.contains(&std::fs::read_to_string(&secret_path).unwrap()[8..30]));

    // A second run into the same directory is refused before the node is asked: the cluster state there is
    // the earlier cluster's, and a node initialized without its state written would be half done.
    let args = ["init", "--endpoint", &node.endpoint(), "--measurements", &m, "--out", &o, "--json"];
    let state = std::fs::read(out.join("cluster-state.json")).unwrap();
    let (status, stdout) = run(&args);
    assert!(status.is_err(), "{stdout}");
    assert_eq!(node.requests.lock().unwrap().len(), 1, "the node was not asked");
    assert_eq!(std::fs::read(out.join("cluster-state.json")).unwrap(), state);
    // Moved away, a second run reuses the master secret and the registration; without --ek-ca it still works.
    std::fs::rename(out.join("cluster-state.json"), out.join("cluster-state.old.json")).unwrap();
    let (status, stdout) = run(&args);
    assert_eq!(status.unwrap(), Status::Accepted, "{stdout}");
    let summary = json(&stdout);
    assert_eq!(summary["registeredNow"], false);
    assert_eq!(summary["masterSecret"]["generated"], false);
    let requests = node.requests.lock().unwrap().clone();
    assert_eq!(MasterSecret::from_kms_uri(&requests[1].kms_uri).unwrap().key(), master.key());
    assert_ne!(requests[1].measurement_salt, requests[0].measurement_salt, "a fresh measurement salt per init");

    // attest verify against the same node and registry.
    let registry_path = out.join("ak-registry.json").display().to_string();
    let (status, stdout) = run(&[
        "verify",
        "--endpoint",
        &node.endpoint(),
        "--measurements",
        &m,
        "--ak-registry",
        &registry_path,
        "--json",
    ]);
    assert_eq!(status.unwrap(), Status::Accepted, "{stdout}");
    let v = json(&stdout);
    assert_eq!(v["verified"], true);
    assert_eq!(v["trust"]["measurementsSignature"], "verified");
    assert_eq!(v["variant"], "qemu-vtpm");
    assert_eq!(v["akBasis"], "credential-activation");
    assert_eq!(v["akDigest"], hex::encode(node.ak_digest()));
    let (status, stdout) =
        run(&["verify", "--endpoint", &node.endpoint(), "--measurements", &m, "--ak-registry", &registry_path]);
    assert_eq!(status.unwrap(), Status::Accepted);
    assert!(stdout.starts_with("VERIFIED") && stdout.contains("credential-activation"), "{stdout}");

    // A wrong measurement: verify refuses (1), and so does init — before sending anything.
    let wrong = node.measurements("wrong.json", Some(4)).display().to_string();
    let (status, stdout) = run(&[
        "verify",
        "--endpoint",
        &node.endpoint(),
        "--measurements",
        &wrong,
        "--ak-registry",
        &registry_path,
        "--json",
    ]);
    assert_eq!(status.unwrap(), Status::Rejected);
    let v = json(&stdout);
    assert_eq!(v["verified"], false);
    assert_eq!(v["refused"], true);
    assert!(v["error"].as_str().unwrap().contains("PCR"), "{v}");
    std::fs::rename(out.join("cluster-state.json"), out.join("cluster-state.2.json")).unwrap();
    let (status, stdout) =
        run(&["init", "--endpoint", &node.endpoint(), "--measurements", &wrong, "--out", &o, "--json"]);
    assert_eq!(status.unwrap(), Status::Rejected);
    assert!(!out.join("cluster-state.json").exists(), "a refused init wrote a cluster state");
    let summary = json(&stdout);
    assert_eq!(summary["initialized"], false);
    assert_eq!(summary["stage"], "attestation");
    assert_eq!(node.requests.lock().unwrap().len(), 2, "no init request after a refused attestation");
}

#[test]
fn init_and_verify_refuse_unregistered_nodes_and_report_init_failures() {
    let node = Node::start(true);
    let out = node.dir().join("out");
    let m = node.measurements("m.json", None).display().to_string();
    let o = out.display().to_string();

    // No --ek-ca and an empty registry: the AK cannot be registered → refused, nothing sent.
    let (status, stdout) = run(&["init", "--endpoint", &node.endpoint(), "--measurements", &m, "--out", &o, "--json"]);
    assert_eq!(status.unwrap(), Status::Rejected);
    let summary = json(&stdout);
    assert_eq!(summary["stage"], "registration");
    assert!(summary["error"].as_str().unwrap().contains("--ek-ca"), "{summary}");
    assert!(node.requests.lock().unwrap().is_empty());

    // verify with a registry that does not know the AK: refused.
    let empty = node.dir().join("empty.json");
    std::fs::write(&empty, "{\"version\":1,\"aks\":[]}").unwrap();
    let e = empty.display().to_string();
    let (status, stdout) = run(&["verify", "--endpoint", &node.endpoint(), "--measurements", &m, "--ak-registry", &e]);
    assert_eq!(status.unwrap(), Status::Rejected);
    assert!(stdout.starts_with("REFUSED"), "{stdout}");

    // With the CA: registered, attested, and the node's init_failure is reported with exit 1.
    let ca = ca();
    let args = ["init", "--endpoint", &node.endpoint(), "--measurements", &m, "--out", &o, "--ek-ca", &ca, "--json"];
    let (status, stdout) = run(&args);
    assert_eq!(status.unwrap(), Status::Rejected);
    let summary = json(&stdout);
    assert_eq!(summary["stage"], "init");
    assert_eq!(summary["error"], "kubeadm init failed: exit 1");
    assert!(!out.join("kubeconfig").exists());
    assert!(out.join("master-secret.json").exists(), "the master secret is kept for the next attempt");
    assert_eq!(node.requests.lock().unwrap().len(), 1);
}

/// `attest init` and `attest verify` believe a measurements file only with a valid signature: unsigned, a file
/// changed after signing, or another key → a usage error before anything is sent; the named waiver runs and
/// says so in the verdict.
#[test]
fn init_and_verify_refuse_unsigned_or_altered_measurements() {
    let node = Node::start(false);
    let m = node.measurements("m.json", None);
    let (ms, o) = (m.display().to_string(), node.dir().join("out").display().to_string());
    let endpoint = node.endpoint();
    // No signature flags at all.
    for cmd in [
        vec!["init", "--endpoint", &endpoint, "--measurements", &ms, "--out", &o],
        vec!["verify", "--endpoint", &endpoint, "--measurements", &ms],
    ] {
        let (status, _) = run_exactly(&cmd);
        let e = status.unwrap_err();
        assert!(e.0.contains("must be signed"), "{e}");
    }
    // The file changed after it was signed.
    let mut text = std::fs::read_to_string(&m).unwrap();
    text.push(' ');
    std::fs::write(&m, text).unwrap();
    let (status, _) = run(&["init", "--endpoint", &endpoint, "--measurements", &ms, "--out", &o]);
    let e = status.unwrap_err();
    assert!(e.0.contains("does not verify"), "{e}");
    assert!(node.requests.lock().unwrap().is_empty(), "nothing sent to the node");
    assert!(!node.dir().join("out/master-secret.json").exists(), "nothing written");
    // The explicit waiver: the node is verified and the verdict names the waiver.
    let ca = ca();
    let (status, stdout) = run_exactly(&[
        "init",
        "--endpoint",
        &endpoint,
        "--measurements",
        &ms,
        "--out",
        &o,
        "--ek-ca",
        &ca,
        "--dangerously-skip-measurements-signature",
        "--json",
    ]);
    assert_eq!(status.unwrap(), Status::Accepted, "{stdout}");
    let summary = json(&stdout);
    assert_eq!(summary["trust"]["measurementsSignature"], "dangerously-unsigned");
    assert_eq!(summary["trust"]["waivers"][0], "measurements-unsigned");
}

#[test]
fn usage_errors_exit_2() {
    let dir = std::env::temp_dir().join(format!("attest-cli-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.json").display().to_string();
    let (status, _) = run(&["verify", "--endpoint", "127.0.0.1:1", "--measurements", &missing]);
    assert!(status.is_err());
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"0\": {\"expected\": \"zz\"}}").unwrap();
    let bad = bad.display().to_string();
    let (status, _) =
        run(&["init", "--endpoint", "127.0.0.1:1", "--measurements", &bad, "--out", &dir.display().to_string()]);
    assert!(status.is_err());
    let (status, _) = run(&["init", "--endpoint", "no-port", "--measurements", &bad]);
    assert!(status.is_err());
    assert!(Cli::try_parse_from(["attest", "init", "--measurements", "m.json"]).is_err(), "--endpoint is required");
    assert_eq!(Status::Usage.code(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
