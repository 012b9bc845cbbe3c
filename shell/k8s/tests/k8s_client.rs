//! The Kubernetes client and token issuers against a local HTTPS API server on 127.0.0.1 (hyper + OpenSSL,
//! a CA generated here) that speaks the two endpoints the join service uses, answering with the response
//! shapes a real kube-apiserver (v1.30) returns: the created Secret with server-set metadata and
//! `managedFields` (201), `Status` objects for 409 `AlreadyExists`, 403 `Forbidden`, 401, 500, and the
//! `Status` `Success` of a delete.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use attest_k8s::{
    DEFAULT_TOKEN_TTL, DryRunTokenIssuer, K8sError, KubeClient, KubeConfig, KubeTokenIssuer, TokenIssuer,
};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use openssl::asn1::Asn1Time;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{Ssl, SslAcceptor, SslMethod};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

const SA_TOKEN: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06am9pbi1zZXJ2aWNlIn0.c2ln";

// ---- Test PKI -------------------------------------------------------------------------------------------

fn key() -> PKey<Private> {
    let group = openssl::ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(openssl::ec::EcKey::generate(&group).unwrap()).unwrap()
}

fn cert(subject: &str, key: &PKey<Private>, issuer: Option<(&X509, &PKey<Private>)>, ca: bool) -> X509 {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, subject).unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    let serial = openssl::bn::BigNum::from_u32(rand_u32()).unwrap().to_asn1_integer().unwrap();
    b.set_serial_number(&serial).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(issuer.map_or(&name, |(c, _)| c.subject_name())).unwrap();
    b.set_pubkey(key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    if ca {
        b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
    } else {
        let san = SubjectAlternativeName::new()
            .ip("127.0.0.1")
            .dns("kubernetes.default.svc")
            .build(&b.x509v3_context(None, None))
            .unwrap();
        b.append_extension(san).unwrap();
    }
    b.sign(issuer.map_or(key, |(_, k)| k), MessageDigest::sha256()).unwrap();
    b.build()
}

fn rand_u32() -> u32 {
    let mut b = [0u8; 4];
    openssl::rand::rand_bytes(&mut b).unwrap();
    u32::from_le_bytes(b) >> 1
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("attest-k8s-{tag}-{:08x}", rand_u32()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- The fake API server --------------------------------------------------------------------------------

/// What the server does with the next request.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// 201 with the created Secret (POST) / 200 Status Success (DELETE).
    Ok,
    /// 409 AlreadyExists.
    Conflict,
    /// 403 Forbidden (RBAC).
    Forbidden,
    /// 401 Unauthorized.
    Unauthorized,
    /// 500 with an etcd timeout message.
    ServerError,
    /// 404 NotFound (DELETE of a missing Secret).
    NotFound,
    /// 201 with a 2 MiB body.
    Huge,
    /// Never answers within the client's timeout.
    Slow,
}

#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    authorization: String,
    content_type: String,
    body: Vec<u8>,
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Script>>,
    recorded: Mutex<Vec<Recorded>>,
}

struct ApiServer {
    addr: SocketAddr,
    state: Arc<State>,
    dir: PathBuf,
    ca_file: PathBuf,
    token_file: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl ApiServer {
    async fn start() -> ApiServer {
        let dir = temp_dir("api");
        let ca_key = key();
        let ca = cert("kubernetes", &ca_key, None, true);
        let server_key = key();
        let server_cert = cert("kube-apiserver", &server_key, Some((&ca, &ca_key)), false);
        let ca_file = dir.join("ca.crt");
        std::fs::write(&ca_file, ca.to_pem().unwrap()).unwrap();
        let token_file = dir.join("token");
        std::fs::write(&token_file, format!("{SA_TOKEN}\n")).unwrap();

        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
        acceptor.set_private_key(&server_key).unwrap();
        acceptor.set_certificate(&server_cert).unwrap();
        let acceptor = acceptor.build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let st = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let ssl = Ssl::new(acceptor.context()).unwrap();
                let st = Arc::clone(&st);
                tokio::spawn(async move {
                    let mut tls = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
                    if std::pin::Pin::new(&mut tls).accept().await.is_err() {
                        return;
                    }
                    let service = hyper::service::service_fn(move |req| {
                        let st = Arc::clone(&st);
                        async move { Ok::<_, std::convert::Infallible>(handle(&st, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        ApiServer { addr, state, dir, ca_file, token_file, task }
    }

    fn script(&self, steps: &[Script]) {
        self.state.script.lock().unwrap().extend(steps);
    }

    fn recorded(&self) -> Vec<Recorded> {
        self.state.recorded.lock().unwrap().clone()
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.addr.port())
    }

    fn config(&self) -> KubeConfig {
        let mut c = KubeConfig::explicit(&self.url(), &self.ca_file, &self.token_file).unwrap();
        c.request_timeout = Duration::from_millis(800);
        c.body_timeout = Duration::from_millis(800);
        c
    }

    fn issuer(&self) -> KubeTokenIssuer {
        KubeTokenIssuer::new(KubeClient::new(self.config()).unwrap())
    }
}

fn status_body(code: u16, reason: &str, message: &str, details: &serde_json::Value) -> String {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "details": details, "code": code,
    })
    .to_string()
}

async fn handle(st: &State, req: http::Request<hyper::body::Incoming>) -> http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
    let header =
        |n: http::header::HeaderName| parts.headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    st.recorded.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        authorization: header(http::header::AUTHORIZATION),
        content_type: header(http::header::CONTENT_TYPE),
        body: body.clone(),
    });
    let step = st.script.lock().unwrap().pop_front().unwrap_or(Script::Ok);
    let post = parts.method == http::Method::POST;
    let name = if post {
        serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.pointer("/metadata/name").and_then(|n| n.as_str().map(str::to_owned)))
            .unwrap_or_default()
    } else {
        parts.uri.path().rsplit('/').next().unwrap_or_default().to_owned()
    };
    let (code, text) = match step {
        Script::Ok if post => (201, created_secret(&body)),
        Script::Ok => (
            200,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "kind": "secrets", "uid": "0b5c8c4e-5f0e-4f8e-9d6a-2f1f3c1a7e11"},
            })
            .to_string(),
        ),
        Script::Conflict => (
            409,
            status_body(
                409,
                "AlreadyExists",
                &format!("secrets \"{name}\" already exists"),
                &serde_json::json!({"name": name, "kind": "secrets"}),
            ),
        ),
        Script::Forbidden => (
            403,
            status_body(
                403,
                "Forbidden",
                "secrets is forbidden: User \"system:serviceaccount:kube-system:join-service\" cannot create resource \"secrets\" in API group \"\" in the namespace \"kube-system\"",
                &serde_json::json!({"kind": "secrets"}),
            ),
        ),
        Script::Unauthorized => (401, status_body(401, "Unauthorized", "Unauthorized", &serde_json::json!({}))),
        Script::ServerError => (
            500,
            status_body(
                500,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
                &serde_json::json!({"causes": [{"message": "etcdserver: request timed out"}]}),
            ),
        ),
        Script::NotFound => (
            404,
            status_body(
                404,
                "NotFound",
                &format!("secrets \"{name}\" not found"),
                &serde_json::json!({"name": name, "kind": "secrets"}),
            ),
        ),
        Script::Huge => (201, "x".repeat(2 << 20)),
        Script::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            (500, String::new())
        }
    };
    let mut resp = http::Response::new(Full::new(Bytes::from(text)));
    *resp.status_mut() = http::StatusCode::from_u16(code).unwrap();
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp.headers_mut().insert("audit-id", http::HeaderValue::from_static("4f1f0c3e-6c0a-4c52-9d7a-6f4a0c2d9b11"));
    resp
}

/// The API server's answer to a Secret create: the object as stored, with server-set metadata.
fn created_secret(request: &[u8]) -> String {
    let req: serde_json::Value = serde_json::from_slice(request).unwrap();
    let fields: serde_json::Map<String, serde_json::Value> =
        req["data"].as_object().unwrap().keys().map(|k| (format!("f:{k}"), serde_json::json!({}))).collect();
    let mut data_fields = serde_json::Map::new();
    data_fields.insert(".".into(), serde_json::json!({}));
    data_fields.extend(fields);
    serde_json::json!({
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {
            "name": req["metadata"]["name"],
            "namespace": "kube-system",
            "uid": "9d5e7f0a-3b1c-4e2d-8f6a-7c9b0d1e2f3a",
            "resourceVersion": "48213",
            "creationTimestamp": "2025-06-01T12:00:00Z",
            "labels": req["metadata"]["labels"],
            "managedFields": [{
                "manager": "attest-join-service",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2025-06-01T12:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": data_fields, "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/managed-by": {}}}, "f:type": {}}
            }]
        },
        "data": req["data"],
        "type": "bootstrap.kubernetes.io/token"
    })
    .to_string()
}

fn data(body: &[u8], key: &str) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    let raw = base64::engine::general_purpose::STANDARD.decode(v["data"][key].as_str().unwrap()).unwrap();
    String::from_utf8(raw).unwrap()
}

// ---- Tests ----------------------------------------------------------------------------------------------

#[tokio::test]
async fn creates_and_deletes_a_bootstrap_token_secret() {
    let api = ApiServer::start().await;
    let issuer = api.issuer();
    let token = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    issuer.delete(token.id()).await.unwrap();

    let rec = api.recorded();
    assert_eq!(rec.len(), 2);
    assert_eq!(rec[0].method, "POST");
    assert_eq!(rec[0].path, "/api/v1/namespaces/kube-system/secrets");
    assert_eq!(rec[0].authorization, format!("Bearer {SA_TOKEN}"));
    assert_eq!(rec[0].content_type, "application/json");
    let sent: serde_json::Value = serde_json::from_slice(&rec[0].body).unwrap();
    assert_eq!(sent["type"], "bootstrap.kubernetes.io/token");
    assert_eq!(sent["metadata"]["namespace"], "kube-system");
    assert_eq!(sent["metadata"]["name"], format!("bootstrap-token-{}", token.id()));
    assert_eq!(data(&rec[0].body, "token-id"), token.id());
    assert_eq!(data(&rec[0].body, "token-secret"), token.secret());
    assert_eq!(data(&rec[0].body, "usage-bootstrap-authentication"), "true");
    assert_eq!(data(&rec[0].body, "usage-bootstrap-signing"), "true");
    assert_eq!(data(&rec[0].body, "auth-extra-groups"), "system:bootstrappers:kubeadm:default-node-token");
    let expiration = data(&rec[0].body, "expiration");
    assert!(expiration.len() == 20 && expiration.ends_with('Z') && expiration.as_bytes()[10] == b'T', "{expiration}");
    assert_eq!(rec[1].method, "DELETE");
    assert_eq!(rec[1].path, format!("/api/v1/namespaces/kube-system/secrets/bootstrap-token-{}", token.id()));
}

#[tokio::test]
async fn a_token_id_collision_is_retried_with_a_new_id() {
    let api = ApiServer::start().await;
    api.script(&[Script::Conflict, Script::Conflict, Script::Ok]);
    let token = api.issuer().create(DEFAULT_TOKEN_TTL).await.unwrap();
    let names: Vec<String> = api
        .recorded()
        .iter()
        .map(|r| {
            serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names.len(), 3);
    assert_ne!(names[0], names[1]);
    assert_eq!(names[2], format!("bootstrap-token-{}", token.id()));

    api.script(&[Script::Conflict; 5]);
    let e = api.issuer().create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(e, K8sError::TokenIdsExhausted { attempts: 5 }), "{e}");
}

#[tokio::test]
async fn refusals_are_typed() {
    let api = ApiServer::start().await;
    let issuer = api.issuer();
    api.script(&[Script::Forbidden]);
    let e = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(
        matches!(&e, K8sError::Forbidden(s) if s.code == 403 && s.reason == "Forbidden" && s.message.contains("cannot create resource")),
        "{e}"
    );
    assert!(!e.is_transient());

    api.script(&[Script::Unauthorized]);
    let e = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(&e, K8sError::Unauthorized(s) if s.code == 401), "{e}");

    api.script(&[Script::ServerError]);
    let e = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(&e, K8sError::ServerError(s) if s.message.contains("etcdserver")), "{e}");
    assert!(e.is_transient());

    api.script(&[Script::Huge]);
    let e = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(e, K8sError::ResponseTooLarge { .. }), "{e}");

    // Deleting a token that is gone is fine; an invalid id never reaches the server.
    api.script(&[Script::NotFound]);
    issuer.delete("abcdef").await.unwrap();
    assert!(matches!(issuer.delete("../x").await, Err(K8sError::InvalidTokenId)));
}

#[tokio::test]
async fn a_timed_out_create_is_cleaned_up() {
    let api = ApiServer::start().await;
    api.script(&[Script::Slow, Script::Ok]);
    let e = api.issuer().create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(e, K8sError::Timeout { .. }), "{e}");
    assert!(e.is_transient());
    let rec = api.recorded();
    assert_eq!(rec.len(), 2, "{rec:?}");
    let created = serde_json::from_slice::<serde_json::Value>(&rec[0].body).unwrap();
    assert_eq!(rec[1].method, "DELETE");
    assert_eq!(rec[1].path.rsplit('/').next().unwrap(), created["metadata"]["name"].as_str().unwrap());
}

#[tokio::test]
async fn only_the_cluster_ca_is_trusted_and_a_rotated_token_is_read_after_a_401() {
    let api = ApiServer::start().await;
    // Another CA: the server's certificate does not verify.
    let other = temp_dir("other-ca");
    let k = key();
    std::fs::write(other.join("ca.crt"), cert("other", &k, None, true).to_pem().unwrap()).unwrap();
    let config = KubeConfig::explicit(&api.url(), &other.join("ca.crt"), &api.token_file).unwrap();
    let e = KubeTokenIssuer::new(KubeClient::new(config).unwrap()).create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(&e, K8sError::Transport { reason } if reason.contains("certificate")), "{e}");
    assert!(api.recorded().is_empty());
    let _ = std::fs::remove_dir_all(&other);

    // The token file is not read per request (TOKEN_REFRESH_INTERVAL), but a rotated service-account token
    // is picked up as soon as the API server refuses the old one.
    let issuer = api.issuer();
    issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    std::fs::write(&api.token_file, "rotated-token").unwrap();
    issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    api.script(&[Script::Unauthorized]);
    assert!(matches!(issuer.create(DEFAULT_TOKEN_TTL).await, Err(K8sError::Unauthorized(_))));
    issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    let auth: Vec<_> = api.recorded().into_iter().map(|r| r.authorization).collect();
    let old = format!("Bearer {SA_TOKEN}");
    assert_eq!(auth, [old.clone(), old.clone(), old, "Bearer rotated-token".to_owned()]);

    // Nobody listening: a transport error, transient.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = KubeConfig::explicit(&format!("https://127.0.0.1:{closed}"), &api.ca_file, &api.token_file).unwrap();
    let e = KubeTokenIssuer::new(KubeClient::new(config).unwrap()).create(DEFAULT_TOKEN_TTL).await.unwrap_err();
    assert!(matches!(e, K8sError::Transport { .. }) && e.is_transient(), "{e}");
}

#[test]
fn explicit_configuration_is_checked() {
    let dir = temp_dir("config");
    let (ca, token) = (dir.join("ca.crt"), dir.join("token"));
    std::fs::write(&ca, cert("c", &key(), None, true).to_pem().unwrap()).unwrap();
    std::fs::write(&token, "  \n").unwrap();
    assert!(matches!(KubeConfig::explicit("https://127.0.0.1:6443", &ca, &token), Err(K8sError::Config { .. })));
    std::fs::write(&token, "t0ken\n").unwrap();
    assert!(KubeConfig::explicit("https://127.0.0.1:6443", &ca, &token).is_ok());
    std::fs::write(&ca, "not pem").unwrap();
    assert!(matches!(KubeConfig::explicit("https://127.0.0.1:6443", &ca, &token), Err(K8sError::Config { .. })));
    assert!(matches!(
        KubeConfig::explicit("https://127.0.0.1:6443", Path::new("/nonexistent"), &token),
        Err(K8sError::Config { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn dry_run_writes_and_removes_the_manifest() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir("dry-run");
    let issuer = DryRunTokenIssuer::new(dir.join("tokens")).unwrap();
    let token = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    let path = issuer.manifest_path(token.id());
    let written = std::fs::read(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let manifest: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(manifest["kind"], "Secret");
    assert_eq!(manifest["type"], "bootstrap.kubernetes.io/token");
    assert_eq!(manifest["metadata"]["name"], format!("bootstrap-token-{}", token.id()));
    assert_eq!(data(&written, "token-secret"), token.secret());
    // Exactly one file, no temporary left behind.
    assert_eq!(std::fs::read_dir(issuer.dir()).unwrap().count(), 1);
    let other = issuer.create(DEFAULT_TOKEN_TTL).await.unwrap();
    assert_ne!(other.id(), token.id());
    issuer.delete(token.id()).await.unwrap();
    assert!(!path.exists());
    issuer.delete(token.id()).await.unwrap(); // already gone: fine
    assert!(matches!(issuer.delete("../../etc").await, Err(K8sError::InvalidTokenId)));
    assert_eq!(std::fs::read_dir(issuer.dir()).unwrap().count(), 1);
    assert_eq!(issuer.kind(), "dry-run");
    let _ = std::fs::remove_dir_all(&dir);
}
