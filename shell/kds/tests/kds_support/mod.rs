//! A small, deliberately misbehaving KDS on 127.0.0.1 that serves the real certificates of
//! `$ATTEST_TESTDATA` with AMD's URL scheme, plus helpers to inspect a store.
//!
//! The server maps requests to files independently of the client's URL builder: it indexes every real
//! VCEK by (product, hwID, SPLs) read from the certificate itself, and parses each request's path and query
//! into the same tuple.
#![allow(dead_code, unreachable_pub)]

use attest_engine::UnixTime;
use attest_engine::snp::{ChainRequest, Product, SnpPolicy, SnpVerifier, TcbVersion};
use attest_engine::x509::Certificate;
use attest_engine::x509::pem::certificates_from_pem_or_der;
use attest_kds::KdsConfig;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// The testdata directory (`None` with a notice when absent; a failure under `CI=true`) and its files.
#[allow(unused_imports)] // not every test binary that includes this module reads testdata
pub use attest_test_support::testdata::{dir as testdata, read};

/// The first certificate of a PEM or DER file.
#[track_caller]
pub fn first_cert(dir: &Path, rel: &str) -> Vec<u8> {
    certificates_from_pem_or_der(&read(dir, rel)).unwrap().remove(0)
}

/// The real VCEKs in testdata (path, product).
pub const VCEKS: &[&str] = &[
    "go-sev-guest/vcek.testcer",
    "virtee-sev/vcek_milan.der",
    "constellation-azure-snp/vcek.cert",
    "trustee-az-snp-vtpm/vcek.pem",
    "trustee-az-snp-vtpm/vcek-genoa.pem",
    "azure-cvm-tooling/certs.pem",
    "virtee-sev/vcek_turin.der",
];

/// What a VCEK is for, read from its extensions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VcekId {
    pub product: Product,
    pub hw_id_hex: String,
    pub tcb: TcbVersion,
}

/// Reads product, hwID and SPLs from a VCEK.
pub fn vcek_id(der: &[u8]) -> VcekId {
    let cert = Certificate::from_der(der).unwrap();
    let ext = cert.amd_extensions().unwrap();
    let product = Product::from_product_name(ext.product_name.unwrap()).unwrap();
    VcekId {
        product,
        hw_id_hex: hex::encode(ext.hw_id.unwrap()),
        tcb: TcbVersion {
            fmc: (product == Product::Turin).then(|| ext.fmc_spl.unwrap()),
            bootloader: ext.bl_spl.unwrap(),
            tee: ext.tee_spl.unwrap(),
            snp: ext.snp_spl.unwrap(),
            microcode: ext.ucode_spl.unwrap(),
        },
    }
}

/// A way to misbehave on one request.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer with this status and an empty body.
    Status(u16),
    /// 429, with this Retry-After header when given.
    TooMany(Option<String>),
    /// Wait before sending the response head.
    SlowHeaders(Duration),
    /// Send half the body, wait, then the rest.
    SlowBody(Duration),
    /// Serve only the first n bytes of the right body.
    Truncate(usize),
    /// Serve these bytes instead of the right body.
    Replace(Vec<u8>),
}

#[derive(Default)]
struct State {
    files: HashMap<String, Vec<u8>>,
    script: Mutex<VecDeque<Fault>>,
    always: Mutex<Option<Fault>>,
    total: AtomicU32,
    inflight: AtomicU32,
    max_inflight: AtomicU32,
    per_route: Mutex<HashMap<String, u32>>,
}

/// The running server.
pub struct KdsServer {
    pub base_url: String,
    state: Arc<State>,
}

impl KdsServer {
    /// Starts a KDS on 127.0.0.1 serving the real VCEKs, cert_chains and any `extra` (route → body).
    pub async fn start(data: &Path) -> Self {
        Self::start_with(data, HashMap::new()).await
    }

    /// [`Self::start`] with extra routes (e.g. `crl|Milan`).
    pub async fn start_with(data: &Path, extra: HashMap<String, Vec<u8>>) -> Self {
        let mut files = extra;
        for rel in VCEKS {
            let der = first_cert(data, rel);
            files.insert(vcek_route(&vcek_id(&der)), der);
        }
        for (product, vcek, vlek) in [
            (Product::Milan, "ask_ark_milan.pem", "ask_ark_milan_vlek.pem"),
            (Product::Genoa, "ask_ark_genoa.pem", "ask_ark_genoa_vlek.pem"),
            (Product::Turin, "ask_ark_turin_vcek.pem", "ask_ark_turin_vlek.pem"),
        ] {
            files.insert(format!("chain|vcek|{}", product.name()), read(data, &format!("amd-kds-roots/{vcek}")));
            files.insert(format!("chain|vlek|{}", product.name()), read(data, &format!("amd-kds-roots/{vlek}")));
        }
        let state = Arc::new(State { files, ..State::default() });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let st = Arc::clone(&state);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let st = Arc::clone(&st);
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(Arc::clone(&st), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self { base_url, state }
    }

    /// Queues faults for the next requests, in order.
    pub fn push_faults(&self, faults: impl IntoIterator<Item = Fault>) {
        self.state.script.lock().unwrap().extend(faults);
    }

    /// Misbehaves the same way on every request (after the queue), until cleared with `None`.
    pub fn set_always(&self, fault: Option<Fault>) {
        *self.state.always.lock().unwrap() = fault;
    }

    /// Requests received so far.
    pub fn total(&self) -> u32 {
        self.state.total.load(Ordering::SeqCst)
    }

    /// The most requests handled at the same time.
    pub fn max_inflight(&self) -> u32 {
        self.state.max_inflight.load(Ordering::SeqCst)
    }

    /// Requests received for one route (see [`vcek_route`]).
    pub fn count(&self, route: &str) -> u32 {
        self.state.per_route.lock().unwrap().get(route).copied().unwrap_or(0)
    }
}

/// The route of a VCEK: independent of the client's URL builder.
pub fn vcek_route(id: &VcekId) -> String {
    let t = &id.tcb;
    format!(
        "vcek|{}|{}|fmc={:?}|bl={}|tee={}|snp={}|ucode={}",
        id.product.name(),
        id.hw_id_hex,
        t.fmc,
        t.bootloader,
        t.tee,
        t.snp,
        t.microcode
    )
}

/// Parses a KDS request into a route, following AMD's URL scheme.
fn route(path: &str, query: Option<&str>) -> Option<String> {
    let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match seg[..] {
        [kind @ ("vcek" | "vlek"), "v1", product, "cert_chain"] => Some(format!("chain|{kind}|{product}")),
        ["vcek", "v1", product, "crl"] => Some(format!("crl|{product}")),
        ["vlek", "v1", product, "crl"] => Some(format!("crl-vlek|{product}")),
        ["vcek", "v1", product, hw] => {
            let product = Product::from_name(product)?;
            let want_len = if product == Product::Turin { 16 } else { 128 };
            if hw.len() != want_len {
                return None;
            }
            let params: HashMap<&str, u8> = query?
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| Some((k, v.parse().ok()?)))
                .collect::<Option<_>>()?;
            let fmc = params.get("fmcSPL").copied();
            if fmc.is_some() != (product == Product::Turin) {
                return None;
            }
            let tcb = TcbVersion {
                fmc,
                bootloader: *params.get("blSPL")?,
                tee: *params.get("teeSPL")?,
                snp: *params.get("snpSPL")?,
                microcode: *params.get("ucodeSPL")?,
            };
            Some(vcek_route(&VcekId { product, hw_id_hex: hw.to_ascii_lowercase(), tcb }))
        }
        _ => None,
    }
}

type Resp = Response<BoxBody<Bytes, Infallible>>;

fn full(status: u16, body: Vec<u8>) -> Resp {
    Response::builder().status(status).body(Full::new(Bytes::from(body)).boxed()).unwrap()
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Resp, Infallible> {
    state.total.fetch_add(1, Ordering::SeqCst);
    let now_inflight = state.inflight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_inflight.fetch_max(now_inflight, Ordering::SeqCst);
    let resp = respond(&state, &req).await;
    state.inflight.fetch_sub(1, Ordering::SeqCst);
    Ok(resp)
}

async fn respond(state: &State, req: &Request<Incoming>) -> Resp {
    let route = route(req.uri().path(), req.uri().query());
    if let Some(r) = &route {
        *state.per_route.lock().unwrap().entry(r.clone()).or_default() += 1;
    }
    let fault = state.script.lock().unwrap().pop_front().or_else(|| state.always.lock().unwrap().clone());
    let body = route.as_ref().and_then(|r| state.files.get(r)).cloned();
    match (fault, body) {
        (Some(Fault::Status(s)), _) => full(s, Vec::new()),
        (Some(Fault::TooMany(retry_after)), _) => {
            let mut b = Response::builder().status(StatusCode::TOO_MANY_REQUESTS);
            if let Some(v) = retry_after {
                b = b.header("retry-after", v);
            }
            b.body(Full::new(Bytes::new()).boxed()).unwrap()
        }
        (Some(Fault::Replace(bytes)), _) => full(200, bytes),
        (_, None) => full(404, Vec::new()),
        (Some(Fault::SlowHeaders(d)), Some(body)) => {
            tokio::time::sleep(d).await;
            full(200, body)
        }
        (Some(Fault::SlowBody(d)), Some(body)) => {
            let half = body.len() / 2;
            let slow = SlowBody {
                first: Some(Bytes::copy_from_slice(&body[..half])),
                rest: Some(Bytes::copy_from_slice(&body[half..])),
                sleep: Box::pin(tokio::time::sleep(d)),
            };
            Response::builder().status(200).header("content-length", body.len().to_string()).body(slow.boxed()).unwrap()
        }
        (Some(Fault::Truncate(n)), Some(body)) => full(200, body[..n.min(body.len())].to_vec()),
        (None, Some(body)) => full(200, body),
    }
}

struct SlowBody {
    first: Option<Bytes>,
    rest: Option<Bytes>,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Body for SlowBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(b) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        if self.rest.is_some() {
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            return Poll::Ready(self.rest.take().map(|b| Ok(Frame::data(b))));
        }
        Poll::Ready(None)
    }
}

/// A base URL where nothing listens (the port was bound, then released).
pub fn dead_base_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

/// A fresh, empty store directory.
pub fn temp_store(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "attest-kds-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A configuration with tiny timeouts and back-offs for tests.
pub fn fast_config(base_url: &str, store: &Path) -> KdsConfig {
    KdsConfig {
        store: Some(store.to_path_buf()),
        base_url: Some(base_url.to_owned()),
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_millis(400),
        body_timeout: Duration::from_millis(400),
        max_attempts: 3,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(3),
        negative_ttl: Duration::from_secs(60),
        ..KdsConfig::default()
    }
}

/// Every file below `root` (relative path, bytes), sorted.
pub fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push((p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Asserts that the store holds only complete, verified files at the right paths (no temporaries, no
/// partial or wrong certificates), and returns their relative paths.
#[track_caller]
pub fn assert_store_clean(root: &Path, now: UnixTime) -> Vec<String> {
    let verifier = SnpVerifier::new();
    let mut names = Vec::new();
    for (rel, bytes) in files(root) {
        let parts: Vec<&str> = rel.split('/').collect();
        assert!(!parts.iter().any(|p| p.starts_with('.')), "hidden or temporary file left in the store: {rel}");
        let product = Product::from_name(parts[0]).unwrap_or_else(|| panic!("unexpected top-level entry {rel}"));
        match parts[1..] {
            ["vcek", hw, file] => {
                let id = vcek_id(&bytes);
                assert_eq!(id.product, product, "{rel}");
                assert_eq!(id.hw_id_hex, hw, "{rel}: VCEK for another chip");
                assert_eq!(format!("{:016x}.der", id.tcb.encode(product)), file, "{rel}: VCEK for another TCB");
                let req =
                    ChainRequest { leaf: &bytes, intermediate: None, root: None, product: Some(product), time: now };
                verifier.verify_chain_only(&req, &SnpPolicy::default()).unwrap_or_else(|e| panic!("{rel}: {e}"));
            }
            ["cert_chain.pem"] | ["vlek", "cert_chain.pem"] => {
                let certs = certificates_from_pem_or_der(&bytes).unwrap();
                assert_eq!(certs.len(), 2, "{rel}");
                assert_eq!(certs[1], product.trust_anchors().ark, "{rel}: not the pinned ARK");
            }
            ["crl.der"] | ["vlek", "crl.der"] => {
                attest_engine::x509::Crl::from_der(&bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
            }
            _ => panic!("unexpected file in the store: {rel}"),
        }
        names.push(rel);
    }
    names
}

/// Now, from the system clock.
pub fn now() -> UnixTime {
    UnixTime::from_secs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs())
}
