//! Who may call the key service (`attest_keyservice::tls`): only a TLS 1.3 client presenting a certificate of
//! the cluster's key-service CA for an allowed name. Every other caller — plaintext HTTP/2, TLS without a
//! client certificate, a certificate of another CA, a cluster certificate for another name or purpose — is
//! refused before a single key is derived (`KeyService::keys_served` stays 0), and the join service's side
//! refuses a key service that is not the cluster's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use attest_grpc::{Channel, ChannelConfig, Metadata, Router, Server, ServerConfig, Status};
use attest_keyservice::tls::{
    CertRole, JOIN_SERVICE_CLIENT_NAME, KEY_SERVICE_NAME, KmsAcceptor, KmsCa, KmsConnector, PkiOutcome, TlsFiles,
    files, generate_pki,
};
use attest_keyservice::{KeyService, MasterSecret};
use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode, SslVersion};
use zeroize::Zeroizing;

const TIMEOUT: Duration = Duration::from_secs(10);

fn temp_dir(tag: &str) -> PathBuf {
    let mut r = [0u8; 6];
    openssl::rand::rand_bytes(&mut r).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kms-tls-{tag}-{}", hex::encode(r)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The cluster's PKI (generated once per test binary).
fn cluster() -> &'static PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("cluster");
        assert_eq!(generate_pki(&dir).unwrap(), PkiOutcome::Created);
        dir
    })
}

/// A key service over mutual TLS with the cluster PKI.
async fn start() -> (Arc<KeyService>, Server, SocketAddr) {
    let secret = MasterSecret::new(Zeroizing::new(vec![7; 32]), Zeroizing::new(vec![1; 32])).unwrap();
    let service = Arc::new(KeyService::new(secret));
    let mut router = Router::new();
    router.add_service(Arc::clone(&service));
    let server = Server::new(router, ServerConfig::default());
    let acceptor = Arc::new(KmsAcceptor::new(&TlsFiles::server_in(cluster()), &[]).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = attest_keyservice::tls::serve(&server, listener, acceptor).unwrap();
    (service, server, addr)
}

async fn get(channel: &Channel) -> Result<Vec<u8>, Status> {
    let request = GetDataKeyRequest { data_key_id: "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d".into(), length: 32 };
    channel
        .unary::<_, GetDataKeyResponse>(paths::KMS_GET_DATA_KEY, request, Metadata::new(), Some(TIMEOUT))
        .await
        .map(|r| r.message.data_key)
}

/// A hand-made TLS 1.3 client: trusts `ca` (or nothing), presents `cert`/`key` (or no certificate), then
/// speaks gRPC and asks for a key. Returns the key or why there is none.
async fn raw_client(
    addr: SocketAddr,
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let mut b = SslConnector::builder(SslMethod::tls_client()).unwrap();
    b.set_min_proto_version(Some(SslVersion::TLS1_3)).unwrap();
    b.set_ca_file(ca).unwrap();
    b.set_verify(SslVerifyMode::PEER);
    b.set_alpn_protos(b"\x02h2").unwrap();
    if let Some((cert, key)) = identity {
        b.set_certificate_chain_file(cert).unwrap();
        b.set_private_key_file(key, SslFiletype::PEM).unwrap();
    }
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let ssl = b.build().configure().unwrap().into_ssl(KEY_SERVICE_NAME).unwrap();
    let mut tls = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
    tokio::time::timeout(TIMEOUT, Pin::new(&mut tls).connect())
        .await
        .map_err(|_| "handshake timed out")?
        .map_err(|e| format!("handshake: {e}"))?;
    // In TLS 1.3 a client's handshake completes before the server has judged its certificate: the refusal
    // arrives on the first read, i.e. in the HTTP/2 handshake or the call.
    let config = ChannelConfig { connect_timeout: TIMEOUT, ..ChannelConfig::default() };
    let channel = Channel::handshake(tls, KEY_SERVICE_NAME, config).await.map_err(|s| format!("HTTP/2: {s}"))?;
    get(&channel).await.map_err(|s| format!("call: {s}").into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_service_certificate_gets_keys() {
    let (service, server, addr) = start().await;
    let connector = KmsConnector::new(&TlsFiles::client_in(cluster()), KEY_SERVICE_NAME).unwrap();
    let channel = connector.connect(addr, ChannelConfig::default()).await.unwrap();
    assert_eq!(get(&channel).await.unwrap().len(), 32);
    // The hand-made client with the same files works too (the refusals below are not the client's fault).
    let c = cluster();
    let key =
        raw_client(addr, &c.join(files::CA_CERT), Some((&c.join(files::CLIENT_CERT), &c.join(files::CLIENT_KEY))))
            .await
            .unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(service.keys_served(), 2);
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_a_client_certificate_is_refused() {
    let (service, server, addr) = start().await;
    let e = raw_client(addr, &cluster().join(files::CA_CERT), None).await.unwrap_err();
    assert!(!e.to_string().is_empty());
    assert_eq!(service.keys_served(), 0, "no key issued");
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_of_another_ca_is_refused() {
    let (service, server, addr) = start().await;
    // A complete PKI of its own: a client certificate for the right name, from the wrong CA.
    let other = temp_dir("other-ca");
    generate_pki(&other).unwrap();
    let e = raw_client(
        addr,
        &cluster().join(files::CA_CERT),
        Some((&other.join(files::CLIENT_CERT), &other.join(files::CLIENT_KEY))),
    )
    .await
    .unwrap_err();
    assert!(!e.to_string().is_empty());
    // The production connector with those files fails the same way.
    let wrong = TlsFiles {
        ca: cluster().join(files::CA_CERT),
        cert: other.join(files::CLIENT_CERT),
        key: other.join(files::CLIENT_KEY),
    };
    let result = async {
        let channel =
            KmsConnector::new(&wrong, KEY_SERVICE_NAME).unwrap().connect(addr, ChannelConfig::default()).await?;
        get(&channel).await
    }
    .await;
    assert!(result.is_err());
    assert_eq!(service.keys_served(), 0, "no key issued");
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_h2c_is_refused() {
    let (service, server, addr) = start().await;
    let config = ChannelConfig { connect_timeout: Duration::from_secs(5), ..ChannelConfig::default() };
    let outcome = match Channel::connect(addr, config).await {
        Ok(channel) => get(&channel).await.map_err(|s| s.to_string()),
        Err(s) => Err(s.to_string()),
    };
    assert!(outcome.is_err(), "{outcome:?}");
    assert_eq!(service.keys_served(), 0, "no key issued");
    // The route itself also refuses a call that reached it without an authenticated caller (served over
    // h2c by a wiring mistake).
    let mut router = Router::new();
    router.add_service(Arc::clone(&service));
    let plain = Server::new(router, ServerConfig::default());
    let plain_addr = plain.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).unwrap();
    let channel = Channel::connect(plain_addr, ChannelConfig::default()).await.unwrap();
    let status = get(&channel).await.unwrap_err();
    assert_eq!(status.code, attest_grpc::Code::Unauthenticated, "{status}");
    assert_eq!(service.keys_served(), 0, "no key issued");
    plain.shutdown(Duration::from_secs(5)).await;
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_certificates_for_other_names_or_purposes_are_refused() {
    let (service, server, addr) = start().await;
    let c = cluster();
    let ca = KmsCa::load(c).unwrap();
    let dir = temp_dir("names");
    let mut identities = Vec::new();
    // The right CA and purpose, another name.
    let (cert, key) = ca.issue("attest-bootstrapper", &[], CertRole::Client).unwrap();
    identities.push(("another name", cert, key));
    // The right name, but a server certificate (no clientAuth).
    let (cert, key) = ca.issue(JOIN_SERVICE_CLIENT_NAME, &[], CertRole::Server).unwrap();
    identities.push(("a server certificate", cert, key));
    for (what, cert, key) in identities {
        let (cert_path, key_path) = (dir.join("c.crt"), dir.join("c.key"));
        std::fs::write(&cert_path, cert.to_pem().unwrap()).unwrap();
        std::fs::write(&key_path, key.private_key_to_pem_pkcs8().unwrap()).unwrap();
        let e = raw_client(addr, &c.join(files::CA_CERT), Some((&cert_path, &key_path))).await.unwrap_err();
        assert!(!e.to_string().is_empty(), "{what}");
    }
    // The key service's own certificate is not a client certificate either.
    let e = raw_client(addr, &c.join(files::CA_CERT), Some((&c.join(files::SERVER_CERT), &c.join(files::SERVER_KEY))))
        .await
        .unwrap_err();
    assert!(!e.to_string().is_empty());
    assert_eq!(service.keys_served(), 0, "no key issued");
    server.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_service_refuses_a_key_service_that_is_not_the_clusters() {
    // A key service with a certificate of another CA (for the right name): the client refuses it.
    let other = temp_dir("rogue-kms");
    generate_pki(&other).unwrap();
    let secret = MasterSecret::new(Zeroizing::new(vec![9; 32]), Zeroizing::new(Vec::new())).unwrap();
    let mut router = Router::new();
    router.add_service(Arc::new(KeyService::new(secret)));
    let rogue = Server::new(router, ServerConfig::default());
    let acceptor = Arc::new(KmsAcceptor::new(&TlsFiles::server_in(&other), &[]).unwrap());
    let addr =
        attest_keyservice::tls::serve(&rogue, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), acceptor)
            .unwrap();
    let connector = KmsConnector::new(&TlsFiles::client_in(cluster()), KEY_SERVICE_NAME).unwrap();
    let status = connector.connect(addr, ChannelConfig::default()).await.unwrap_err();
    assert_eq!(status.code, attest_grpc::Code::Unavailable, "{status}");
    rogue.shutdown(Duration::from_secs(5)).await;

    // The cluster's key service, but the client expects another name: refused as well.
    let (service, server, addr) = start().await;
    let connector = KmsConnector::new(&TlsFiles::client_in(cluster()), "some-other-service").unwrap();
    assert!(connector.connect(addr, ChannelConfig::default()).await.is_err());
    assert_eq!(service.keys_served(), 0);
    server.shutdown(Duration::from_secs(5)).await;
}

#[test]
fn generated_pki_files_and_modes() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir("modes");
    assert_eq!(generate_pki(&dir).unwrap(), PkiOutcome::Created);
    assert_eq!(generate_pki(&dir).unwrap(), PkiOutcome::Existing);
    for (name, mode) in [
        (files::CA_CERT, 0o644),
        (files::CA_KEY, 0o600),
        (files::SERVER_CERT, 0o644),
        (files::SERVER_KEY, 0o600),
        (files::CLIENT_CERT, 0o644),
        (files::CLIENT_KEY, 0o600),
    ] {
        let m = std::fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, mode, "{name}");
    }
    // openssl verifies both leaves against the CA for their purpose.
    for (cert, purpose) in [(files::SERVER_CERT, "sslserver"), (files::CLIENT_CERT, "sslclient")] {
        let out = std::process::Command::new("openssl")
            .args(["verify", "-purpose", purpose, "-CAfile"])
            .arg(dir.join(files::CA_CERT))
            .arg(dir.join(cert))
            .output()
            .unwrap();
        assert!(out.status.success(), "{cert}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A half-made directory is refused, not completed.
    std::fs::remove_file(dir.join(files::CLIENT_KEY)).unwrap();
    assert!(generate_pki(&dir).is_err());
}
