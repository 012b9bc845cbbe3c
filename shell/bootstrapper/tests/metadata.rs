//! The cloud metadata sources of the join endpoints (`attest_bootstrapper::metadata`) against local stand-ins
//! on 127.0.0.1 that speak each service's request and response format: AWS IMDSv2 (session token PUT with its
//! TTL header, the token header on every GET, 401 for a missing or expired token, 404 for an absent tag or
//! instance tags not exposed, 403 when the service is off), the GCP metadata server (`Metadata-Flavor:
//! Google` both ways, 403 without it, instance then project attributes) and Azure IMDS (`Metadata: true`,
//! `api-version`, 400 with IMDS's JSON error and `newest-versions`, the compute document's `tagsList`,
//! 429 past its rate). Then the hostile answers — oversized (declared and streamed), not HTTP, malformed
//! JSON, redirect loops and redirects away, a stalled and a trickling service, endless throttling — each a
//! typed error, while the node's other endpoint sources still answer.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use attest_bootstrapper::join::endpoints::{CombinedEndpoints, EndpointSource, StaticEndpoints};
use attest_bootstrapper::metadata::{
    Cloud, DEFAULT_KEY, MAX_METADATA_BODY, MAX_REDIRECTS, MetadataEndpoints, MetadataError,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the stand-in read it.
#[derive(Debug)]
struct Req {
    method: String,
    target: String,
    headers: HashMap<String, String>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    fn query(&self, key: &str) -> Option<&str> {
        let q = self.target.split_once('?')?.1;
        q.split('&').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    }
}

/// What the stand-in sends back.
enum Reply {
    Http {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// These bytes, then close.
    Raw(Vec<u8>),
    /// Nothing, for longer than any client deadline.
    Stall,
    /// A valid head announcing 1000 bytes, then one byte every 100 ms.
    Trickle,
    /// A chunked 200 whose body never ends (until 1 MiB or the client leaves).
    Endless,
}

fn http(status: u16, headers: &[(&'static str, &str)], body: impl Into<Vec<u8>>) -> Reply {
    Reply::Http { status, headers: headers.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(), body: body.into() }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

type Handler = dyn Fn(&Req) -> Reply + Send + Sync;

/// A stand-in on 127.0.0.1: one request per connection (the client opens a fresh one per request).
struct StandIn {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StandIn {
    async fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let count = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (handler, count) = (Arc::clone(&handler), Arc::clone(&count));
                tokio::spawn(async move {
                    let _ = answer(stream, handler.as_ref(), &count).await;
                });
            }
        });
        StandIn { addr, requests, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Req> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 || buf.len() > 16 * 1024 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let target = first.next().unwrap_or("").to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Req { method, target, headers })
}

async fn answer(mut stream: TcpStream, handler: &Handler, count: &AtomicUsize) -> std::io::Result<()> {
    let req = read_request(&mut stream).await?;
    count.fetch_add(1, Ordering::SeqCst);
    match handler(&req) {
        Reply::Http { status, headers, body } => {
            let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for (k, v) in headers {
                let _ = write!(out, "{k}: {v}\r\n");
            }
            let _ = write!(out, "Content-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(out.as_bytes()).await?;
            stream.write_all(&body).await?;
        }
        Reply::Raw(bytes) => stream.write_all(&bytes).await?,
        Reply::Stall => tokio::time::sleep(Duration::from_secs(30)).await,
        Reply::Trickle => {
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n").await?;
            for _ in 0..1000 {
                stream.write_all(b"x").await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Reply::Endless => {
            stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").await?;
            let chunk = format!("4000\r\n{}\r\n", "1".repeat(0x4000));
            for _ in 0..64 {
                stream.write_all(chunk.as_bytes()).await?;
            }
        }
    }
    stream.shutdown().await
}

// ---------------------------------------------------------------------------------------------------------
// AWS IMDSv2.

/// What the AWS stand-in does beyond the happy path.
#[derive(Default)]
struct AwsState {
    tags: HashMap<String, String>,
    /// Instance tags not exposed in the metadata (InstanceMetadataTags disabled): every tags path is 404.
    tags_disabled: bool,
    /// The metadata service turned off for the instance: 403 to everything.
    disabled: bool,
    /// Tokens issued, and those since revoked (answered with 401).
    issued: Vec<String>,
    revoked: Vec<String>,
    /// Answer this many requests with 429 first.
    throttle: usize,
    token_puts: usize,
}

fn aws(state: Arc<Mutex<AwsState>>) -> impl Fn(&Req) -> Reply + Send + Sync + 'static {
    move |req| {
        let mut s = state.lock().unwrap();
        let text = [("Content-Type", "text/plain"), ("Server", "EC2ws")];
        if s.disabled {
            return http(403, &text, "");
        }
        if s.throttle > 0 {
            s.throttle -= 1;
            return http(429, &[("Retry-After", "0")], "");
        }
        if req.path() == "/latest/api/token" {
            if req.method != "PUT" {
                return http(405, &text, "");
            }
            if req.header("x-forwarded-for").is_some() {
                return http(403, &text, "");
            }
            let ttl = req.header("x-aws-ec2-metadata-token-ttl-seconds").and_then(|v| v.parse::<u32>().ok());
            let Some(ttl) = ttl.filter(|t| (1..=21600).contains(t)) else {
                return http(400, &text, "");
            };
            s.token_puts += 1;
            let token = format!("AQAEA{:0>51}", s.issued.len());
            s.issued.push(token.clone());
            return http(200, &[("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", &ttl.to_string())], token);
        }
        // IMDSv2 required: no token or an unknown or revoked one is 401.
        let token = req.header("x-aws-ec2-metadata-token").unwrap_or("");
        if !s.issued.iter().any(|t| t == token) || s.revoked.iter().any(|t| t == token) {
            return http(401, &text, "");
        }
        if req.method != "GET" {
            return http(405, &text, "");
        }
        match req.path().strip_prefix("/latest/meta-data/tags/instance/") {
            Some(_) if s.tags_disabled => http(404, &text, ""),
            Some("") => {
                let keys: Vec<&str> = s.tags.keys().map(String::as_str).collect();
                http(200, &text, keys.join("\n"))
            }
            Some(key) => match s.tags.get(key) {
                Some(v) => http(200, &text, v.clone()),
                None => http(404, &text, ""),
            },
            None => http(404, &text, ""),
        }
    }
}

fn aws_with(tag: &str) -> Arc<Mutex<AwsState>> {
    let mut s = AwsState::default();
    s.tags.insert(DEFAULT_KEY.to_owned(), tag.to_owned());
    s.tags.insert("Name".to_owned(), "worker-0".to_owned());
    Arc::new(Mutex::new(s))
}

fn source(cloud: Cloud, url: &str) -> MetadataEndpoints {
    MetadataEndpoints::with_timeout(cloud, url, DEFAULT_KEY, Duration::from_millis(500)).unwrap()
}

fn addrs(list: &[&str]) -> Vec<SocketAddr> {
    list.iter().map(|a| a.parse().unwrap()).collect()
}

#[tokio::test]
async fn aws_imdsv2_token_then_tag() {
    let state = aws_with("10.0.0.10 10.0.0.11:30091 [fd00::12]");
    let imds = StandIn::start(aws(Arc::clone(&state))).await;
    let m = source(Cloud::Aws, &imds.url());
    assert_eq!(m.fetch().await.unwrap(), addrs(&["10.0.0.10:30090", "10.0.0.11:30091", "[fd00::12]:30090"]));
    // The session token is reused while it lives.
    assert_eq!(m.fetch().await.unwrap().len(), 3);
    assert_eq!(state.lock().unwrap().token_puts, 1);
    assert_eq!(imds.requests(), 3);
    // A revoked token (401) is replaced once, and the answer still comes.
    {
        let mut s = state.lock().unwrap();
        let t = s.issued[0].clone();
        s.revoked.push(t);
    }
    assert_eq!(m.fetch().await.unwrap().len(), 3);
    assert_eq!(state.lock().unwrap().token_puts, 2);
}

#[tokio::test]
async fn aws_refusals_are_typed() {
    // No such tag, and instance tags not exposed in the metadata: 404.
    let state = aws_with("10.0.0.10");
    let imds = StandIn::start(aws(Arc::clone(&state))).await;
    let other = MetadataEndpoints::new(Cloud::Aws, &imds.url(), "no-such-tag").unwrap();
    assert!(matches!(other.fetch().await, Err(MetadataError::NotFound { .. })));
    state.lock().unwrap().tags_disabled = true;
    assert!(matches!(source(Cloud::Aws, &imds.url()).fetch().await, Err(MetadataError::NotFound { .. })));
    // The service off for this instance: the token PUT is refused.
    state.lock().unwrap().disabled = true;
    let err = source(Cloud::Aws, &imds.url()).fetch().await.unwrap_err();
    assert!(matches!(err, MetadataError::Refused { status: 403, ref url, .. } if url == "/latest/api/token"), "{err}");
    // A token that keeps being refused: one renewal, then a typed refusal (no endless loop).
    let state = aws_with("10.0.0.10");
    let imds = StandIn::start(aws(Arc::clone(&state))).await;
    let m = source(Cloud::Aws, &imds.url());
    m.fetch().await.unwrap();
    let always_401 = StandIn::start(|req: &Req| {
        if req.path() == "/latest/api/token" { http(200, &[], "AQAEAtoken") } else { http(401, &[], "") }
    })
    .await;
    let err = source(Cloud::Aws, &always_401.url()).fetch().await.unwrap_err();
    assert!(matches!(err, MetadataError::Refused { status: 401, .. }), "{err}");
    assert_eq!(always_401.requests(), 4, "token, GET, fresh token, GET");
    // A token that is not one (control characters, empty).
    let bad_token = StandIn::start(|_: &Req| http(200, &[], "tok\u{1}en")).await;
    assert!(matches!(source(Cloud::Aws, &bad_token.url()).fetch().await, Err(MetadataError::Malformed { .. })));
    // A tag value that names no usable endpoint.
    let state = aws_with("10.0.0.1 not/an/endpoint");
    let imds = StandIn::start(aws(state)).await;
    assert!(matches!(source(Cloud::Aws, &imds.url()).fetch().await, Err(MetadataError::BadEndpoint { .. })));
}

#[tokio::test]
async fn aws_throttling_is_retried_then_typed() {
    let state = aws_with("10.0.0.10");
    state.lock().unwrap().throttle = 2;
    let imds = StandIn::start(aws(Arc::clone(&state))).await;
    assert_eq!(source(Cloud::Aws, &imds.url()).fetch().await.unwrap(), addrs(&["10.0.0.10:30090"]));
    state.lock().unwrap().throttle = 100;
    let err = source(Cloud::Aws, &imds.url()).fetch().await.unwrap_err();
    assert!(matches!(err, MetadataError::Throttled { status: 429, .. }), "{err}");
    assert!(err.is_transient());
}

// ---------------------------------------------------------------------------------------------------------
// GCP metadata server.

fn gcp(instance: Option<&'static str>, project: Option<&'static str>) -> impl Fn(&Req) -> Reply + Send + Sync {
    move |req| {
        let genuine =
            [("Metadata-Flavor", "Google"), ("Content-Type", "application/text"), ("Server", "Metadata Server for VM")];
        if req.header("x-forwarded-for").is_some() {
            return http(403, &genuine, "");
        }
        if req.header("metadata-flavor") != Some("Google") {
            return http(403, &genuine, "Missing Metadata-Flavor:Google header.");
        }
        let value = match req.path() {
            p if p == format!("/computeMetadata/v1/instance/attributes/{DEFAULT_KEY}") => instance,
            p if p == format!("/computeMetadata/v1/project/attributes/{DEFAULT_KEY}") => project,
            _ => None,
        };
        match value {
            Some(v) => http(200, &genuine, v),
            None => http(404, &genuine, "Not Found"),
        }
    }
}

#[tokio::test]
async fn gcp_instance_then_project_attribute() {
    let server = StandIn::start(gcp(Some("10.128.0.2,10.128.0.3"), Some("10.128.0.9"))).await;
    assert_eq!(
        source(Cloud::Gcp, &server.url()).fetch().await.unwrap(),
        addrs(&["10.128.0.2:30090", "10.128.0.3:30090"])
    );
    let server = StandIn::start(gcp(None, Some("localhost:30095"))).await;
    let got = source(Cloud::Gcp, &server.url()).fetch().await.unwrap();
    assert!(got.iter().all(|a| a.ip().is_loopback() && a.port() == 30095) && !got.is_empty(), "{got:?}");
    assert_eq!(server.requests(), 2, "instance (404), then project");
    let server = StandIn::start(gcp(None, None)).await;
    assert!(matches!(source(Cloud::Gcp, &server.url()).fetch().await, Err(MetadataError::NotFound { .. })));
}

#[tokio::test]
async fn gcp_flavor_header_both_ways() {
    // The request carries the header (the stand-in answers 403 without it, as the metadata server does).
    let server = StandIn::start(gcp(Some("10.128.0.2"), None)).await;
    source(Cloud::Gcp, &server.url()).fetch().await.unwrap();
    // An answer without `Metadata-Flavor: Google` is not the metadata server's, whatever it says.
    let impostor = StandIn::start(|_: &Req| http(200, &[("Content-Type", "text/plain")], "203.0.113.66")).await;
    let err = source(Cloud::Gcp, &impostor.url()).fetch().await.unwrap_err();
    assert!(matches!(err, MetadataError::Malformed { ref what, .. } if what.contains("Metadata-Flavor")), "{err}");
    // 503 under load is retried like 429.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let busy = StandIn::start(move |_: &Req| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            http(503, &[("Metadata-Flavor", "Google")], "")
        } else {
            http(200, &[("Metadata-Flavor", "Google")], "10.128.0.2")
        }
    })
    .await;
    assert_eq!(source(Cloud::Gcp, &busy.url()).fetch().await.unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------------------------
// Azure IMDS.

const AZURE_VERSIONS: &str = r#""newest-versions":["2023-07-01","2023-05-01","2021-02-01"]"#;

fn azure_compute(tags: &str) -> String {
    format!(
        r#"{{"azEnvironment":"AzurePublicCloud","location":"westeurope","name":"worker_0","osType":"Linux",
"resourceGroupName":"attest-rg","securityProfile":{{"secureBootEnabled":"true","virtualTpmEnabled":"true"}},
"subscriptionId":"00000000-0000-0000-0000-000000000000","tags":"",
"tagsList":[{tags}],"vmId":"11111111-2222-3333-4444-555555555555","vmScaleSetName":"workers","zone":"1"}}"#
    )
}

fn azure(body: String, rate: Arc<AtomicUsize>, limit: usize) -> impl Fn(&Req) -> Reply + Send + Sync {
    move |req| {
        let json = [("Content-Type", "application/json; charset=utf-8"), ("Server", "Microsoft-IIS/10.0")];
        if req.header("x-forwarded-for").is_some() {
            return http(403, &json, r#"{"error":"Bad request. Proxied requests are not supported"}"#);
        }
        if req.header("metadata") != Some("true") {
            return http(400, &json, r#"{"error":"Bad request. Required metadata header not specified"}"#);
        }
        match req.query("api-version") {
            None => {
                return http(
                    400,
                    &json,
                    format!(
                        r#"{{"error":"Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds",{AZURE_VERSIONS}}}"#
                    ),
                );
            }
            Some("2021-02-01" | "2023-07-01") => {}
            Some(_) => {
                return http(
                    400,
                    &json,
                    format!(
                        r#"{{"error":"Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds",{AZURE_VERSIONS}}}"#
                    ),
                );
            }
        }
        if rate.fetch_add(1, Ordering::SeqCst) < limit {
            return http(429, &json, r#"{"error":"Too many requests"}"#);
        }
        if req.path() != "/metadata/instance/compute" || req.query("format") != Some("json") {
            return http(404, &json, r#"{"error":"Not found"}"#);
        }
        http(200, &json, body.clone())
    }
}

#[tokio::test]
async fn azure_imds_compute_tags() {
    let body = azure_compute(
        r#"{"name":"attest-cluster","value":"prod"},{"name":"attest-join-endpoints","value":"10.1.0.4, 10.1.0.5"}"#,
    );
    let imds = StandIn::start(azure(body, Arc::new(AtomicUsize::new(0)), 0)).await;
    assert_eq!(source(Cloud::Azure, &imds.url()).fetch().await.unwrap(), addrs(&["10.1.0.4:30090", "10.1.0.5:30090"]));
    // Throttled twice (IMDS: 5 requests a second), then answered.
    let body = azure_compute(r#"{"name":"attest-join-endpoints","value":"10.1.0.4"}"#);
    let imds = StandIn::start(azure(body.clone(), Arc::new(AtomicUsize::new(0)), 2)).await;
    assert_eq!(source(Cloud::Azure, &imds.url()).fetch().await.unwrap().len(), 1);
    assert_eq!(imds.requests(), 3);
    // No such tag; a document that is not the compute JSON.
    let imds = StandIn::start(azure(azure_compute(""), Arc::new(AtomicUsize::new(0)), 0)).await;
    assert!(matches!(source(Cloud::Azure, &imds.url()).fetch().await, Err(MetadataError::NotFound { .. })));
    let imds = StandIn::start(azure("{\"tagsList\": [1, 2".into(), Arc::new(AtomicUsize::new(0)), 0)).await;
    assert!(matches!(source(Cloud::Azure, &imds.url()).fetch().await, Err(MetadataError::Malformed { .. })));
}

#[tokio::test]
async fn azure_header_and_version_refusals_are_typed() {
    // What IMDS says to a client that forgets the header: the stand-in's 400, surfaced with IMDS's text.
    let forgetful = StandIn::start(|req: &Req| {
        assert_eq!(req.header("metadata"), Some("true"), "the client always sends Metadata: true");
        assert_eq!(req.query("api-version"), Some("2021-02-01"));
        http(400, &[], r#"{"error":"Bad request. api-version is invalid or was not specified in the request."}"#)
    })
    .await;
    let err = source(Cloud::Azure, &forgetful.url()).fetch().await.unwrap_err();
    assert!(
        matches!(err, MetadataError::Refused { status: 400, ref detail, .. } if detail.contains("api-version")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Hostile answers: the same for every cloud (the shared client), each a typed error within its bounds.

const CLOUDS: [Cloud; 3] = [Cloud::Aws, Cloud::Gcp, Cloud::Azure];

async fn hostile(reply: impl Fn() -> Reply + Send + Sync + 'static) -> Vec<MetadataError> {
    let server = StandIn::start(move |_: &Req| reply()).await;
    let mut out = Vec::new();
    for cloud in CLOUDS {
        out.push(source(cloud, &server.url()).fetch().await.unwrap_err());
    }
    out
}

#[tokio::test]
async fn oversized_answers() {
    let declared = || http(200, &[("Metadata-Flavor", "Google")], vec![b'1'; MAX_METADATA_BODY + 1]);
    for e in hostile(declared).await {
        assert!(matches!(e, MetadataError::TooLarge { limit: MAX_METADATA_BODY, .. }), "{e}");
    }
    for e in hostile(|| Reply::Endless).await {
        assert!(matches!(e, MetadataError::TooLarge { .. }), "{e}");
    }
}

#[tokio::test]
async fn malformed_answers() {
    for e in hostile(|| Reply::Raw(b"SSH-2.0-OpenSSH_9.2\r\n".to_vec())).await {
        assert!(matches!(e, MetadataError::Malformed { .. }), "{e}");
    }
    for e in hostile(|| Reply::Raw(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort".to_vec())).await {
        assert!(matches!(e, MetadataError::Malformed { .. }), "{e}");
    }
    let not_utf8 = || http(200, &[("Metadata-Flavor", "Google")], vec![0xff, 0xfe, b'1']);
    for (cloud, e) in CLOUDS.into_iter().zip(hostile(not_utf8).await) {
        // AWS reads the token first, GCP the value: both refuse non-UTF-8; Azure's JSON parser refuses it too.
        assert!(matches!(e, MetadataError::Malformed { .. }), "{cloud:?}: {e}");
    }
}

#[tokio::test]
async fn redirects() {
    // A loop: the same path again and again.
    let server = StandIn::start(|req: &Req| http(302, &[("Location", &req.target.clone())], "")).await;
    for cloud in CLOUDS {
        let e = source(cloud, &server.url()).fetch().await.unwrap_err();
        assert!(matches!(e, MetadataError::TooManyRedirects { limit: MAX_REDIRECTS, .. }), "{e}");
    }
    assert_eq!(server.requests(), CLOUDS.len() * (MAX_REDIRECTS + 1), "bounded");
    // Away from the metadata service: never followed.
    for location in ["http://203.0.113.7/latest/api/token", "//203.0.113.7/x", "https://169.254.169.254/"] {
        let l = location.to_owned();
        for e in hostile(move || http(301, &[("Location", &l)], "")).await {
            assert!(matches!(e, MetadataError::RedirectRefused { .. }), "{location}: {e}");
        }
    }
    // Within the service: followed.
    let server = StandIn::start(|req: &Req| {
        if req.path().ends_with("-moved") {
            http(200, &[("Metadata-Flavor", "Google")], "10.9.9.9")
        } else {
            http(301, &[("Location", &format!("{}-moved", req.path()))], "")
        }
    })
    .await;
    assert_eq!(source(Cloud::Gcp, &server.url()).fetch().await.unwrap(), addrs(&["10.9.9.9:30090"]));
}

#[tokio::test]
async fn slow_services() {
    let started = std::time::Instant::now();
    for e in hostile(|| Reply::Stall).await {
        assert!(matches!(e, MetadataError::Timeout { .. }), "{e}");
        assert!(e.is_transient());
    }
    for e in hostile(|| Reply::Trickle).await {
        assert!(matches!(e, MetadataError::Timeout { .. }), "{e}");
    }
    // Six requests of 500 ms each, not 30 s stalls or 100 s trickles.
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[tokio::test]
async fn throttled_past_the_budget() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    for e in hostile(move || {
        c.fetch_add(1, Ordering::SeqCst);
        http(429, &[("Retry-After", "0")], "")
    })
    .await
    {
        assert!(matches!(e, MetadataError::Throttled { status: 429, .. }), "{e}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3 * 3, "one try and two retries per cloud");
    // A Retry-After longer than a round may wait: no retry at all.
    for e in hostile(|| http(429, &[("Retry-After", "3600")], "")).await {
        assert!(
            matches!(e, MetadataError::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(3600)),
            "{e}"
        );
    }
}

#[tokio::test]
async fn unreachable_and_bad_configuration() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    for cloud in CLOUDS {
        let e = source(cloud, &format!("http://{closed}")).fetch().await.unwrap_err();
        assert!(matches!(e, MetadataError::Unreachable { .. }), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
    assert!(matches!(
        MetadataEndpoints::new(Cloud::Aws, "https://169.254.169.254", DEFAULT_KEY),
        Err(MetadataError::BadBaseUrl { .. })
    ));
    assert!(MetadataEndpoints::new(Cloud::Aws, "http://169.254.169.254", "../meta-data/iam").is_err());
    assert!(MetadataEndpoints::new(Cloud::Aws, "http://169.254.169.254", "").is_err());
}

// ---------------------------------------------------------------------------------------------------------
// The node keeps its other sources.

#[tokio::test]
async fn other_sources_still_answer_while_metadata_is_hostile() {
    let fixed: SocketAddr = "127.0.0.1:30090".parse().unwrap();
    for reply in [Reply::Stall, Reply::Endless] {
        let server = StandIn::start(move |_: &Req| match reply {
            Reply::Stall => Reply::Stall,
            _ => Reply::Endless,
        })
        .await;
        for cloud in CLOUDS {
            let combined = CombinedEndpoints(vec![
                Arc::new(source(cloud, &server.url())) as Arc<dyn EndpointSource>,
                Arc::new(StaticEndpoints(vec![fixed])),
            ]);
            assert_eq!(combined.endpoints().await.unwrap(), [fixed], "{cloud:?}");
        }
    }
    // Alone, the metadata source's failure is the round's error, naming the cloud.
    let server = StandIn::start(|_: &Req| Reply::Raw(b"garbage".to_vec())).await;
    let alone = CombinedEndpoints(vec![Arc::new(source(Cloud::Azure, &server.url())) as Arc<dyn EndpointSource>]);
    let e = alone.endpoints().await.unwrap_err().to_string();
    assert!(e.starts_with("azure metadata:"), "{e}");
}

#[tokio::test]
async fn last_good_list_outlives_an_outage_but_not_a_removed_tag() {
    let state = aws_with("10.0.0.10");
    let imds = StandIn::start(aws(Arc::clone(&state))).await;
    let m = source(Cloud::Aws, &imds.url());
    assert_eq!(m.endpoints().await.unwrap(), addrs(&["10.0.0.10:30090"]));
    // Throttled past the budget (transient): the last good list stands in.
    state.lock().unwrap().throttle = 100;
    assert_eq!(m.endpoints().await.unwrap(), addrs(&["10.0.0.10:30090"]));
    // The tag removed (not transient): no stale answer.
    {
        let mut s = state.lock().unwrap();
        s.throttle = 0;
        s.tags.clear();
    }
    assert!(m.endpoints().await.unwrap_err().to_string().contains("not set"));
}
