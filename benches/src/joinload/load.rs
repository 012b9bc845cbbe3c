//! The load generator proper: `concurrency` clients, each running joins back to back (or at a target
//! rate), every join the way a joining node does it:
//!
//! ```text
//!  TCP connect ─► aTLS handshake (client attests: fresh P-256 key, quote by a software AK, certificate;
//!     with a [`ServerCheck`]: the service attests too, verified, and its AK activated) ─► HTTP/2 handshake ─► join.API/IssueJoinTicket { disk_uuid, kubelet CSR } ─► check the ticket ─► close
//!  |◄────────────── handshake ──────────────►|◄──────────────── rpc ─────────────────►|
//! ```
//!
//! A warm-up phase (same clients, results kept apart) precedes the measured phase, which ends when the
//! requested number of joins has been claimed or the time bound is reached, whichever is first; joins in
//! flight then finish. Latencies are kept per join (three `u32` microsecond values) and sorted at the end;
//! with `rate`, a join's latency counts from its actual start (a late start is not charged to the service).
//! In TLS 1.3 the client's handshake is complete once it has sent its certificate and Finished; the server
//! validates that certificate as it reads the flight, so part of the server's validation time lands in `rpc`.
//! Failures are counted by kind: `tcp <io kind>`, `atls <aTLS error variant>`, `http2 <code>`, `grpc <code>`,
//! `timeout`, `ticket <what is wrong>`.

// Counts and rates become f64 for reporting; the counts here stay far below 2^52.
#![allow(clippy::cast_precision_loss)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use attest_atls::grpc::{ConnectError, connect, connect_over};
use attest_atls::{AtlsConnector, AttestationIssuer};
use attest_grpc::{ChannelConfig, Metadata};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;
use openssl::pkey::{PKey, Public};
use openssl::x509::X509;

use super::fixture::BoxError;
use super::issuer::SoftAkIssuer;
use super::server_check::ServerCheck;

/// How a load run is shaped.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The join service (aTLS).
    pub addr: SocketAddr,
    /// Concurrent clients (each runs one join at a time).
    pub concurrency: usize,
    /// Stop after this many measured joins (`None`: only the time bound stops the run).
    pub joins: Option<u64>,
    /// Time bound of the measured phase.
    pub max_duration: Duration,
    /// Target joins per second over all clients (`None`: each client starts its next join at once).
    pub rate: Option<f64>,
    /// Length of the warm-up phase.
    pub warmup: Duration,
    /// Time allowed for one join (connect, each handshake, and the call).
    pub timeout: Duration,
    /// Print a progress line to stderr this often.
    pub progress: Option<Duration>,
    /// Local addresses the clients connect from, client `i` from `sources[i % len]` (one simulated node per
    /// address, as the services' per-peer limits expect); empty: the system's choice.
    pub sources: Vec<IpAddr>,
}

/// What one joining node sends: its name, disk UUID and kubelet CSR (generated once, reused).
#[derive(Clone, Debug)]
pub struct NodeRequest {
    /// The node name (the CSR's CN is `system:node:<name>`).
    pub node: String,
    /// A random UUID.
    pub disk_uuid: String,
    /// The kubelet client CSR (DER; P-256 key, O=system:nodes).
    pub csr: Vec<u8>,
}

/// A fresh P-256 kubelet key and its CSR for `system:node:<node>` in `system:nodes` (DER).
pub fn kubelet_csr(node: &str) -> Result<(PKey<openssl::pkey::Private>, Vec<u8>), BoxError> {
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::x509::{X509NameBuilder, X509ReqBuilder};
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "system:nodes")?;
    name.append_entry_by_nid(Nid::COMMONNAME, &format!("system:node:{node}"))?;
    let mut b = X509ReqBuilder::new()?;
    b.set_subject_name(&name.build())?;
    b.set_pubkey(&key)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok((key, b.build().to_der()?))
}

/// `n` node requests `load-node-0` … with fresh P-256 kubelet keys.
pub fn node_requests(n: usize) -> Result<Vec<NodeRequest>, BoxError> {
    (0..n)
        .map(|i| {
            let node = format!("load-node-{i}");
            let (_, csr) = kubelet_csr(&node)?;
            let mut r = [0u8; 16];
            openssl::rand::rand_bytes(&mut r)?;
            r[6] = (r[6] & 0x0F) | 0x40;
            r[8] = (r[8] & 0x3F) | 0x80;
            let h = hex::encode(r);
            let disk_uuid = format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
            Ok(NodeRequest { node, disk_uuid, csr })
        })
        .collect()
}

/// Checks that `t` is a complete worker ticket for `node`: 32-byte keys, salt, endpoint, a `<6>.<16>`
/// token, a `sha256:<hex>` discovery hash, no control-plane files, a Kubernetes version, and a kubelet
/// certificate for `system:node:<node>` (signed by `ca` when given).
pub fn check_ticket(t: &IssueJoinTicketResponse, node: &str, ca: Option<&PKey<Public>>) -> Result<(), &'static str> {
    if t.state_disk_key.len() != 32 {
        return Err("state_disk_key is not 32 bytes");
    }
    if t.measurement_secret.len() != 32 {
        return Err("measurement_secret is not 32 bytes");
    }
    if t.measurement_salt.is_empty() || t.api_server_endpoint.is_empty() || t.kubernetes_version.is_empty() {
        return Err("salt, API server endpoint or Kubernetes version missing");
    }
    let token_part =
        |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    match t.token.split_once('.') {
        Some((id, secret)) if token_part(id, 6) && token_part(secret, 16) => {}
        _ => return Err("token is not <id:6>.<secret:16>"),
    }
    match t.discovery_token_ca_cert_hash.strip_prefix("sha256:") {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {}
        _ => return Err("discovery hash is not sha256:<hex>"),
    }
    if !t.control_plane_files.is_empty() {
        return Err("control-plane files in a worker ticket");
    }
    let cert = X509::from_der(&t.kubelet_cert).map_err(|_| "kubelet_cert is not a DER certificate")?;
    let cn = cert
        .subject_name()
        .entries_by_nid(openssl::nid::Nid::COMMONNAME)
        .next()
        .and_then(|e| e.data().to_string().ok());
    if cn.as_deref() != Some(&format!("system:node:{node}")) {
        return Err("kubelet_cert is for another node");
    }
    if let Some(ca) = ca
        && !cert.verify(ca).unwrap_or(false)
    {
        return Err("kubelet_cert is not signed by the cluster CA");
    }
    Ok(())
}

/// Latency percentiles of one measure, in milliseconds (nearest rank).
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    /// Fastest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Percentiles {
    /// Percentiles of `micros` (sorted here).
    pub fn of(micros: &mut [u32]) -> Percentiles {
        if micros.is_empty() {
            return Percentiles::default();
        }
        micros.sort_unstable();
        let n = micros.len();
        let ms = |us: u32| f64::from(us) / 1000.0;
        // Nearest rank: the smallest value with at least p·n values at or below it.
        let rank = |p: f64| {
            let r = (p * n as f64).ceil();
            // r is in 1..=n for p in (0, 1]; the float-to-int conversion is exact for these sizes.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let r = r as usize;
            ms(micros[r.clamp(1, n) - 1])
        };
        let sum: u64 = micros.iter().map(|&u| u64::from(u)).sum();
        Percentiles {
            min: ms(micros[0]),
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            p999: rank(0.999),
            max: ms(micros[n - 1]),
            mean: sum as f64 / n as f64 / 1000.0,
        }
    }

    fn json(&self) -> serde_json::Value {
        let r = |v: f64| (v * 1000.0).round() / 1000.0;
        serde_json::json!({
            "min": r(self.min), "p50": r(self.p50), "p90": r(self.p90), "p99": r(self.p99),
            "p999": r(self.p999), "max": r(self.max), "mean": r(self.mean),
        })
    }
}

/// The outcome of a load run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Concurrent clients.
    pub concurrency: usize,
    /// Software AKs the clients rotated through.
    pub aks: usize,
    /// Target rate, if any.
    pub rate: Option<f64>,
    /// Joins completed (and failed) during the warm-up.
    pub warmup_joins: u64,
    /// Failures during the warm-up, by kind.
    pub warmup_errors: BTreeMap<String, u64>,
    /// Joins that returned a well-formed ticket in the measured phase.
    pub joins_ok: u64,
    /// Failures in the measured phase, by kind.
    pub errors: BTreeMap<String, u64>,
    /// The first few failure messages (warm-up or measured).
    pub error_examples: Vec<String>,
    /// Length of the measured phase (until the last join finished).
    pub elapsed: Duration,
    /// Successful joins per second in the measured phase.
    pub throughput: f64,
    /// Whole join latency.
    pub total: Percentiles,
    /// TCP + aTLS + HTTP/2 handshake.
    pub handshake: Percentiles,
    /// The IssueJoinTicket call (and the ticket check).
    pub rpc: Percentiles,
    /// CPU time (user + system) this process used during the run, warm-up included: the generator's share of
    /// a machine it shares with the service.
    pub client_cpu: Duration,
}

impl Report {
    /// All failures, warm-up included.
    pub fn error_count(&self) -> u64 {
        self.errors.values().chain(self.warmup_errors.values()).sum()
    }

    /// The report as JSON (latencies in milliseconds).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "concurrency": self.concurrency,
            "aks": self.aks,
            "rate_target": self.rate,
            "warmup_joins": self.warmup_joins,
            "warmup_errors": self.warmup_errors,
            "joins_ok": self.joins_ok,
            "errors_total": self.errors.values().sum::<u64>(),
            "errors": self.errors,
            "error_examples": self.error_examples,
            "elapsed_s": (self.elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
            "client_cpu_s": (self.client_cpu.as_secs_f64() * 100.0).round() / 100.0,
            "throughput_per_s": (self.throughput * 10.0).round() / 10.0,
            "latency_ms": {
                "total": self.total.json(),
                "handshake": self.handshake.json(),
                "rpc": self.rpc.json(),
            },
        })
    }

    /// A few human-readable lines.
    pub fn text(&self) -> String {
        let line = |name: &str, p: &Percentiles| {
            format!(
                "  {name:<9} p50 {:>8.2}  p90 {:>8.2}  p99 {:>8.2}  p99.9 {:>8.2}  max {:>8.2}  mean {:>8.2} ms\n",
                p.p50, p.p90, p.p99, p.p999, p.max, p.mean
            )
        };
        let mut s = format!(
            "joins ok {} in {:.2} s = {:.1} joins/s (concurrency {}, {} AKs{}); errors {} (warm-up: {} joins, {} errors); generator CPU {:.2} s\n",
            self.joins_ok,
            self.elapsed.as_secs_f64(),
            self.throughput,
            self.concurrency,
            self.aks,
            self.rate.map_or_else(String::new, |r| format!(", target {r}/s")),
            self.errors.values().sum::<u64>(),
            self.warmup_joins,
            self.warmup_errors.values().sum::<u64>(),
            self.client_cpu.as_secs_f64(),
        );
        s += &line("total", &self.total);
        s += &line("handshake", &self.handshake);
        s += &line("rpc", &self.rpc);
        for (kind, n) in self.errors.iter().chain(&self.warmup_errors) {
            let _ = writeln!(s, "  error {kind}: {n}");
        }
        for e in &self.error_examples {
            let _ = writeln!(s, "  e.g. {e}");
        }
        s
    }
}

/// CPU time (user + system) of this process so far, from `/proc/self/stat` (fields 14 and 15, in USER_HZ =
/// 100 ticks per second, which Linux fixes for this interface); zero where it is unavailable.
pub fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may contain spaces; the fields after it follow its closing parenthesis.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// Everything the clients share.
struct Shared {
    addr: SocketAddr,
    sources: Vec<IpAddr>,
    connectors: Vec<AtlsConnector>,
    server: Option<Arc<ServerCheck>>,
    nodes: Vec<NodeRequest>,
    ca: Option<PKey<Public>>,
    timeout: Duration,
}

/// One phase's bounds and counters.
struct Phase {
    start: Instant,
    deadline: Instant,
    limit: Option<u64>,
    rate: Option<f64>,
    claimed: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
}

#[derive(Default)]
struct ClientLog {
    total: Vec<u32>,
    handshake: Vec<u32>,
    rpc: Vec<u32>,
    errors: BTreeMap<String, u64>,
    examples: Vec<String>,
}

/// How many failure messages a report keeps.
const MAX_EXAMPLES: usize = 5;

struct Failure {
    kind: String,
    message: String,
}

/// The leading identifier of a `Debug` rendering: the enum variant.
fn variant_name(debug: &str) -> &str {
    debug.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or(debug)
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

async fn join_once(shared: &Shared, k: u64, source: Option<IpAddr>) -> Result<(u32, u32), Failure> {
    // Each AK (a node's attested identity) joins as its own node: the join service binds a node name and disk
    // to the identity that first joined with them.
    let i = (k % shared.connectors.len() as u64) as usize;
    let node = &shared.nodes[i % shared.nodes.len()];
    let started = Instant::now();
    // As the bootstrapper: a fresh kubelet key per join, which is also the aTLS key (the join service signs
    // only a CSR for the key the node proved in the handshake).
    let (key, csr) =
        kubelet_csr(&node.node).map_err(|e| Failure { kind: "kubelet key".into(), message: e.to_string() })?;
    let connector = shared.connectors[i].clone().with_key(key);
    let config = ChannelConfig { connect_timeout: shared.timeout, ..ChannelConfig::default() };
    let connected = match source {
        None => connect(shared.addr, &connector, config).await,
        Some(source) => match tokio::time::timeout(shared.timeout, super::attack::connect_from(source, shared.addr))
            .await
        {
            Ok(Ok(tcp)) => connect_over(tcp, &connector, config).await,
            Ok(Err(e)) => Err(ConnectError::Tcp(e)),
            Err(_) => Err(ConnectError::Tcp(std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))),
        },
    };
    let (channel, peer) = connected.map_err(|e| {
        let kind = match &e {
            ConnectError::Tcp(io) => format!("tcp {:?}", io.kind()),
            ConnectError::Atls(a) => format!("atls {}", variant_name(&format!("{a:?}"))),
            ConnectError::Http2(s) => format!("http2 {:?}", s.code),
        };
        Failure { kind, message: e.to_string() }
    })?;
    if let Some(server) = &shared.server {
        server
            .establish(&channel, peer.as_ref())
            .await
            .map_err(|e| Failure { kind: "server trust".into(), message: e.to_string() })?;
    }
    let connected = Instant::now();
    let request = IssueJoinTicketRequest {
        disk_uuid: node.disk_uuid.clone(),
        certificate_request: csr,
        ..IssueJoinTicketRequest::default()
    };
    let response = channel
        .unary::<_, IssueJoinTicketResponse>(
            paths::JOIN_ISSUE_JOIN_TICKET,
            request,
            Metadata::new(),
            Some(shared.timeout),
        )
        .await
        .map_err(|s| {
            // TLS 1.3: the client's handshake completes before the server has checked the client certificate,
            // so a refused attestation arrives as the server's alert on the first call.
            let kind = if s.message.contains("aTLS: the peer aborted with TLS alert") {
                "atls AlertReceived (on the first call)".to_owned()
            } else {
                format!("grpc {:?}", s.code)
            };
            Failure { kind, message: s.to_string() }
        })?;
    drop(channel);
    check_ticket(&response.message, &node.node, shared.ca.as_ref())
        .map_err(|what| Failure { kind: format!("ticket {what}"), message: what.to_owned() })?;
    Ok((micros(connected - started), micros(connected.elapsed())))
}

async fn client(shared: Arc<Shared>, phase: Arc<Phase>, index: usize) -> ClientLog {
    let source = (!shared.sources.is_empty()).then(|| shared.sources[index % shared.sources.len()]);
    let mut log = ClientLog::default();
    loop {
        let k = phase.claimed.fetch_add(1, Ordering::Relaxed);
        if phase.limit.is_some_and(|limit| k >= limit) || Instant::now() >= phase.deadline {
            break;
        }
        if let Some(rate) = phase.rate {
            let at = phase.start + Duration::from_secs_f64(k as f64 / rate);
            if at >= phase.deadline {
                break;
            }
            tokio::time::sleep_until(at.into()).await;
        }
        let started = Instant::now();
        // Each step has its own timeout; this bounds the sum.
        let outcome = tokio::time::timeout(shared.timeout * 4, join_once(&shared, k, source))
            .await
            .unwrap_or_else(|_| Err(Failure { kind: "timeout".into(), message: "join timed out".into() }));
        match outcome {
            Ok((handshake, rpc)) => {
                log.total.push(micros(started.elapsed()));
                log.handshake.push(handshake);
                log.rpc.push(rpc);
                phase.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(f) => {
                *log.errors.entry(f.kind).or_default() += 1;
                if log.examples.len() < MAX_EXAMPLES {
                    log.examples.push(f.message);
                }
                phase.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    log
}

async fn run_phase(
    shared: &Arc<Shared>,
    concurrency: usize,
    length: Duration,
    limit: Option<u64>,
    rate: Option<f64>,
    progress: Option<Duration>,
) -> (ClientLog, Duration) {
    let start = Instant::now();
    let phase = Arc::new(Phase {
        start,
        deadline: start + length,
        limit,
        rate,
        claimed: AtomicU64::new(0),
        ok: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    });
    let reporter = progress.map(|every| {
        let phase = Arc::clone(&phase);
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(every).await;
                let (ok, failed) = (phase.ok.load(Ordering::Relaxed), phase.failed.load(Ordering::Relaxed));
                eprintln!(
                    "join-load: t={:.0}s ok={ok} ({:.1}/s over the last {:.0} s) errors={failed}",
                    phase.start.elapsed().as_secs_f64(),
                    (ok - last) as f64 / every.as_secs_f64(),
                    every.as_secs_f64(),
                );
                last = ok;
            }
        })
    });
    let clients: Vec<_> =
        (0..concurrency).map(|i| tokio::spawn(client(Arc::clone(shared), Arc::clone(&phase), i))).collect();
    let mut merged = ClientLog::default();
    for c in clients {
        let log = c.await.unwrap_or_else(|e| {
            let mut log = ClientLog::default();
            log.errors.insert("client task panicked".into(), 1);
            log.examples.push(e.to_string());
            log
        });
        merged.total.extend(log.total);
        merged.handshake.extend(log.handshake);
        merged.rpc.extend(log.rpc);
        for (k, n) in log.errors {
            *merged.errors.entry(k).or_default() += n;
        }
        merged.examples.extend(log.examples);
    }
    if let Some(r) = reporter {
        r.abort();
    }
    merged.examples.truncate(MAX_EXAMPLES);
    (merged, start.elapsed())
}

/// Runs a warm-up and a measured phase against `config.addr` with `issuers` (joins rotate through them)
/// and `nodes` (likewise); `ca` (the cluster CA's key) makes the ticket check verify kubelet certificates.
pub async fn run(
    config: &LoadConfig,
    issuers: &[Arc<SoftAkIssuer>],
    nodes: Vec<NodeRequest>,
    ca: Option<PKey<Public>>,
) -> Result<Report, BoxError> {
    run_checking_server(config, issuers, nodes, ca, None).await
}

/// [`run`], each client also verifying the join service (mutual aTLS) and, when `server` has EK CAs,
/// activating its AK over the connection before the call (the handshake latency includes both).
pub async fn run_checking_server(
    config: &LoadConfig,
    issuers: &[Arc<SoftAkIssuer>],
    nodes: Vec<NodeRequest>,
    ca: Option<PKey<Public>>,
    server: Option<Arc<ServerCheck>>,
) -> Result<Report, BoxError> {
    if config.concurrency == 0 || issuers.is_empty() || nodes.is_empty() {
        return Err("concurrency, AKs and node requests must be at least 1".into());
    }
    if nodes.len() < issuers.len() {
        // The join service binds a node name and disk to the identity (AK) that first joined with them.
        return Err(format!(
            "{} node requests for {} AKs: each AK joins as a node of its own",
            nodes.len(),
            issuers.len()
        )
        .into());
    }
    let connectors = issuers
        .iter()
        .map(|i| {
            let issuer = Arc::clone(i) as Arc<dyn AttestationIssuer>;
            match &server {
                Some(check) => check.connector(issuer),
                None => AtlsConnector::new(Some(issuer), None),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let shared = Arc::new(Shared {
        addr: config.addr,
        sources: config.sources.clone(),
        connectors,
        server,
        nodes,
        ca,
        timeout: config.timeout,
    });
    let cpu_before = process_cpu();

    let mut report =
        Report { concurrency: config.concurrency, aks: issuers.len(), rate: config.rate, ..Report::default() };
    if !config.warmup.is_zero() {
        let (log, _) = run_phase(&shared, config.concurrency, config.warmup, None, config.rate, None).await;
        report.warmup_joins = (log.total.len() as u64) + log.errors.values().sum::<u64>();
        report.warmup_errors = log.errors;
        report.error_examples = log.examples;
    }
    let (mut log, elapsed) =
        run_phase(&shared, config.concurrency, config.max_duration, config.joins, config.rate, config.progress).await;
    report.joins_ok = log.total.len() as u64;
    report.errors = log.errors;
    report.error_examples.extend(log.examples);
    report.error_examples.truncate(MAX_EXAMPLES);
    report.elapsed = elapsed;
    report.throughput = report.joins_ok as f64 / elapsed.as_secs_f64().max(1e-9);
    report.total = Percentiles::of(&mut log.total);
    report.handshake = Percentiles::of(&mut log.handshake);
    report.rpc = Percentiles::of(&mut log.rpc);
    report.client_cpu = process_cpu().saturating_sub(cpu_before);
    Ok(report)
}
