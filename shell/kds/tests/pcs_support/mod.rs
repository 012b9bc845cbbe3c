//! A small Intel PCS on 127.0.0.1 over HTTPS (OpenSSL, a certificate for 127.0.0.1 from a CA generated
//! here), serving the real PCS bodies of `$ATTEST_TESTDATA/go-tdx-guest` with PCS's URL scheme and
//! issuer-chain headers (URL-encoded PEM, as Intel sends them), and misbehaving per route on request.
//!
//! Routes are parsed independently of the client's URL builder:
//!
//! | request | body | header |
//! |---|---|---|
//! | `/tdx/certification/v4/tcb?fmspc=50806f000000` | `sample_tcbInfo_response` | `TCB-Info-Issuer-Chain`: `tcb_info_issuer_chain.pem` |
//! | `/tdx/certification/v4/tcb?fmspc=90c06f000000` | `sample_tcbinfo_response_v5` | the same chain |
//! | `/tdx/certification/v4/qe/identity` | `sample_qeIdentity_response` | `SGX-Enclave-Identity-Issuer-Chain`: `qe_identity_issuer_chain.pem` |
//! | `/sgx/certification/v4/pckcrl?ca=platform&encoding=der` | `pckcrl` | `SGX-PCK-CRL-Issuer-Chain`: `pck_crl_issuer_chain.pem` |
//! | `/IntelSGXRootCA.der` | `rootcrl.der` | — |
//!
//! Anything else is 404.
#![allow(dead_code, unreachable_pub)]

use bytes::Bytes;
use http_body_util::BodyExt as _;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use openssl::asn1::Asn1Time;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{Ssl, SslAcceptor, SslMethod};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use attest_test_support::testdata::{dir as testdata, read};

/// The routes of the module table.
pub const TCB: &str = "tcb|50806f000000";
pub const TCB_V5: &str = "tcb|90c06f000000";
pub const QE: &str = "qe";
pub const PCK_CRL: &str = "pckcrl|platform";
pub const ROOT_CRL: &str = "rootcrl";

/// A way to misbehave on one request of a route.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status and an empty body.
    Status(u16),
    /// 429, with this Retry-After when given.
    TooMany(Option<String>),
    /// The first n bytes of the right body, as a complete response (Content-Length n).
    Truncate(usize),
    /// These bytes instead of the right body (headers as usual).
    Replace(Vec<u8>),
    /// The issuer-chain header carries this PEM (URL-encoded) instead of the right chain.
    Chain(Vec<u8>),
    /// No issuer-chain header.
    NoChain,
    /// Wait before answering.
    Slow(Duration),
}

struct Route {
    body: Vec<u8>,
    header: Option<(&'static str, Vec<u8>)>,
}

#[derive(Default)]
struct State {
    routes: HashMap<&'static str, Route>,
    faults: Mutex<HashMap<String, VecDeque<Fault>>>,
    counts: Mutex<HashMap<String, u32>>,
}

/// The running server.
pub struct PcsServer {
    /// `https://127.0.0.1:<port>`.
    pub base_url: String,
    /// The DER of the CA that issued the server's certificate (for `PcsConfig::tls_roots`).
    pub ca_der: Vec<u8>,
    state: Arc<State>,
}

impl PcsServer {
    /// Starts the server on 127.0.0.1 with the bodies of `data/go-tdx-guest`.
    pub async fn start(data: &Path) -> Self {
        let g = |f: &str| read(data, &format!("go-tdx-guest/{f}"));
        let tcb_chain = g("tcb_info_issuer_chain.pem");
        let mut routes = HashMap::new();
        routes.insert(
            TCB,
            Route { body: g("sample_tcbInfo_response"), header: Some(("TCB-Info-Issuer-Chain", tcb_chain.clone())) },
        );
        routes.insert(
            TCB_V5,
            Route { body: g("sample_tcbinfo_response_v5"), header: Some(("TCB-Info-Issuer-Chain", tcb_chain)) },
        );
        routes.insert(
            QE,
            Route {
                body: g("sample_qeIdentity_response"),
                header: Some(("SGX-Enclave-Identity-Issuer-Chain", g("qe_identity_issuer_chain.pem"))),
            },
        );
        routes.insert(
            PCK_CRL,
            Route { body: g("pckcrl"), header: Some(("SGX-PCK-CRL-Issuer-Chain", g("pck_crl_issuer_chain.pem"))) },
        );
        routes.insert(ROOT_CRL, Route { body: g("rootcrl.der"), header: None });
        let state = Arc::new(State { routes, ..State::default() });

        let ca_key = key();
        let ca_cert = cert("attest test PCS CA", &ca_key, None, true);
        let server_key = key();
        let server_cert = cert("127.0.0.1", &server_key, Some((&ca_cert, &ca_key)), false);
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
        acceptor.set_private_key(&server_key).unwrap();
        acceptor.set_certificate(&server_cert).unwrap();
        let acceptor = acceptor.build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("https://{}", listener.local_addr().unwrap());
        let st = Arc::clone(&state);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let ssl = Ssl::new(acceptor.context()).unwrap();
                let st = Arc::clone(&st);
                tokio::spawn(async move {
                    let mut tls = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
                    if std::pin::Pin::new(&mut tls).accept().await.is_err() {
                        return;
                    }
                    let svc = hyper::service::service_fn(move |req| {
                        let st = Arc::clone(&st);
                        async move { Ok::<_, Infallible>(respond(&st, &req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        Self { base_url, ca_der: ca_cert.to_der().unwrap(), state }
    }

    /// Queues faults for the next requests of `route`, in order.
    pub fn push_faults(&self, route: &str, faults: impl IntoIterator<Item = Fault>) {
        self.state.faults.lock().unwrap().entry(route.to_owned()).or_default().extend(faults);
    }

    /// Requests received for `route` (any route name, also unknown ones: `tcb|<fmspc>`, `pckcrl|<ca>`).
    pub fn count(&self, route: &str) -> u32 {
        self.state.counts.lock().unwrap().get(route).copied().unwrap_or(0)
    }

    /// Requests received in total.
    pub fn total(&self) -> u32 {
        self.state.counts.lock().unwrap().values().sum()
    }
}

/// Parses a PCS request into a route name.
fn route(path: &str, query: Option<&str>) -> String {
    let params: HashMap<&str, &str> = query.unwrap_or("").split('&').filter_map(|kv| kv.split_once('=')).collect();
    match path {
        "/tdx/certification/v4/tcb" => format!("tcb|{}", params.get("fmspc").unwrap_or(&"").to_ascii_lowercase()),
        "/tdx/certification/v4/qe/identity" => QE.to_owned(),
        "/sgx/certification/v4/pckcrl" if params.get("encoding") == Some(&"der") => {
            format!("pckcrl|{}", params.get("ca").unwrap_or(&""))
        }
        "/IntelSGXRootCA.der" => ROOT_CRL.to_owned(),
        other => format!("unknown|{other}"),
    }
}

type Resp = Response<BoxBody<Bytes, Infallible>>;

/// Percent-encodes everything but RFC 3986's unreserved characters (what Intel's PCS does to the PEM).
pub fn url_encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn respond(state: &State, req: &Request<Incoming>) -> Resp {
    let name = route(req.uri().path(), req.uri().query());
    *state.counts.lock().unwrap().entry(name.clone()).or_default() += 1;
    let fault = state.faults.lock().unwrap().get_mut(&name).and_then(VecDeque::pop_front);
    let Some(r) = state.routes.get(name.as_str()) else { return status(404) };
    let mut body = r.body.clone();
    let mut header = r.header.as_ref().map(|(n, pem)| (*n, url_encode(pem)));
    match fault {
        None => {}
        Some(Fault::Status(s)) => return status(s),
        Some(Fault::TooMany(retry_after)) => {
            let mut b = Response::builder().status(429);
            if let Some(v) = retry_after {
                b = b.header("retry-after", v);
            }
            return b.body(Full::new(Bytes::new()).boxed()).unwrap();
        }
        Some(Fault::Truncate(n)) => body.truncate(n),
        Some(Fault::Replace(b)) => body = b,
        Some(Fault::Chain(pem)) => header = header.map(|(n, _)| (n, url_encode(&pem))),
        Some(Fault::NoChain) => header = None,
        Some(Fault::Slow(d)) => tokio::time::sleep(d).await,
    }
    let mut b = Response::builder().status(200).header("content-type", "application/octet-stream");
    if let Some((n, v)) = header {
        b = b.header(n, v);
    }
    b.body(Full::new(Bytes::from(body)).boxed()).unwrap()
}

fn status(s: u16) -> Resp {
    Response::builder().status(s).body(Full::new(Bytes::new()).boxed()).unwrap()
}

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
    let mut serial = [0u8; 8];
    openssl::rand::rand_bytes(&mut serial).unwrap();
    serial[0] &= 0x7F;
    b.set_serial_number(&openssl::bn::BigNum::from_slice(&serial).unwrap().to_asn1_integer().unwrap()).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(issuer.map_or(&name, |(c, _)| c.subject_name())).unwrap();
    b.set_pubkey(key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    if ca {
        b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
    } else {
        let san = SubjectAlternativeName::new().ip("127.0.0.1").build(&b.x509v3_context(None, None)).unwrap();
        b.append_extension(san).unwrap();
    }
    b.sign(issuer.map_or(key, |(_, k)| k), MessageDigest::sha256()).unwrap();
    b.build()
}

/// Every file below `root` (relative path), sorted.
pub fn file_names(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}
