//! aTLS benchmarks (not tests): handshakes per second with and without the attestation verify, what one
//! handshake's parts cost, and server memory per idle aTLS connection.
//!
//! A plain binary (`harness = false`) rather than criterion: a handshake costs milliseconds and its cost is
//! dominated by one swtpm quote, so a fixed number of sequential handshakes timed end to end is the honest
//! unit; and memory needs a separate server process. Run:
//!
//! ```sh
//! cargo bench -p attest-benches --bench atls            # full run (≈1 min after the build)
//! cargo bench -p attest-benches --bench atls -- --test  # smoke: a few handshakes, 5 idle connections
//! ```
//!
//! Everything runs over 127.0.0.1 in client-side verification mode (the server attests with the swtpm-backed
//! `qemu-vtpm` issuer, the client verifies), TLS 1.3, one connection at a time.

use attest_atls::{
    AtlsAcceptor, AtlsConnector, AttestationIssuer, AttestationValidator, BoxError, EngineValidator, ValidationError,
    Verifier,
};
use attest_attester::issuer::QemuVtpmIssuer;
use attest_attester::tpm::{AkConfig, Tpm};
use attest_engine::variant::{AkBasis, PcrPolicy, StaticAkRegistry};
use attest_hwtests::Swtpm;
use attest_hwtests::support::validator;
use attest_registration::ak_digest;
use prost::Message;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

const CHILD_FLAG: &str = "--atls-serve-child";

/// Accepts any document and returns its user data: aTLS with the attestation verify excluded (the key-hash
/// check still runs, so the handshake still proves possession of the attested key).
#[derive(Debug)]
struct AcceptAll;
impl AttestationValidator for AcceptAll {
    fn oid(&self) -> &str {
        attest_engine::variant::Variant::QemuVtpm.oid()
    }
    fn validate(&self, document: &[u8], _nonce: &[u8; 32]) -> Result<Vec<u8>, ValidationError> {
        let doc = attest_proto::attest::v1::AttestationDocument::decode(document)
            .map_err(|e| ValidationError::Rejected(Box::new(e)))?;
        Ok(doc.user_data)
    }
}

/// Replays one genuine document with the user data swapped in: aTLS with the quote excluded (the TLS,
/// key-generation and certificate floor). Only meaningful with [`AcceptAll`].
#[derive(Debug)]
struct NoQuote(attest_proto::attest::v1::AttestationDocument);
impl AttestationIssuer for NoQuote {
    fn oid(&self) -> &str {
        attest_engine::variant::Variant::QemuVtpm.oid()
    }
    fn issue(&self, _nonce: &[u8; 32], user_data: &[u8; 32]) -> Result<Vec<u8>, BoxError> {
        let mut d = self.0.clone();
        d.user_data = user_data.to_vec();
        Ok(d.encode_to_vec())
    }
}

struct Node {
    _sw: Swtpm,
    issuer: Arc<QemuVtpmIssuer>,
}

fn node() -> Node {
    let sw = Swtpm::start().expect("swtpm (apt-get install swtpm swtpm-tools)");
    let tpm = Tpm::open(&sw.tcti()).expect("open TPM");
    let issuer = Arc::new(QemuVtpmIssuer::new(tpm, AkConfig::default()).expect("issuer"));
    Node { _sw: sw, issuer }
}

fn engine_validator(n: &Node) -> Arc<EngineValidator> {
    let digest = ak_digest(n.issuer.attestation_key().tpm2b_public()).unwrap();
    let registry = Arc::new(StaticAkRegistry(vec![(digest, AkBasis::Pinned)]));
    Arc::new(EngineValidator::new(validator(registry, PcrPolicy::default())))
}

/// `n` sequential handshakes (after 2 warm-up ones); returns per-handshake times.
async fn handshakes(issuer: Arc<dyn AttestationIssuer>, v: Arc<dyn AttestationValidator>, n: usize) -> Vec<Duration> {
    let acceptor = AtlsAcceptor::new(Some(issuer), None).unwrap();
    let connector = AtlsConnector::new(None, Some(Arc::new(Verifier::new(vec![v])))).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let a = acceptor.clone();
            tokio::spawn(async move { a.accept(tcp).await.map(drop) });
        }
    });
    let mut times = Vec::with_capacity(n);
    for i in 0..n + 2 {
        let start = Instant::now();
        let s = connector.connect(TcpStream::connect(addr).await.unwrap()).await.expect("handshake");
        let t = start.elapsed();
        assert!(s.peer_attestation().is_some());
        if i >= 2 {
            times.push(t);
        }
    }
    times
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let total: Duration = times.iter().sum();
    let mean = total / u32::try_from(times.len()).unwrap();
    let median = times[times.len() / 2];
    let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
    println!(
        "{name:<34} n={:<4} {:>7.1} handshakes/s   mean {:>6.2} ms   median {:>6.2} ms   p90 {:>6.2} ms",
        times.len(),
        1.0 / mean.as_secs_f64(),
        mean.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3
    );
}

fn time_each(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect()
}

fn report_part(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!("{name:<34} n={:<4} median {:>8.3} ms", times.len(), times[times.len() / 2].as_secs_f64() * 1e3);
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The server process of the memory benchmark: attests every connection and keeps it open, idle.
async fn serve_child() {
    let n = node();
    let acceptor = AtlsAcceptor::new(Some(n.issuer.clone() as Arc<dyn AttestationIssuer>), None).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("port={}", listener.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    // Stop when the parent closes our stdin (then `n` drops, which stops the swtpm).
    let (tx, mut stop) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(());
    });
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let (tcp, _) = accepted.unwrap();
                let (a, held) = (acceptor.clone(), held.clone());
                tokio::spawn(async move {
                    if let Ok(s) = a.accept(tcp).await {
                        held.lock().unwrap().push(s);
                    }
                });
            }
        }
    }
    held.lock().unwrap().clear();
    drop(n);
}

/// Opens `warm` then `n` more idle connections to a server process and reports its RSS growth per connection.
/// The server process manufactures its own swtpm (another AK), so the client here skips the document check
/// ([`AcceptAll`]); the server side, which is what is measured, is unchanged by that.
async fn idle_memory(v: Arc<dyn AttestationValidator>, warm: usize, n: usize) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg(CHILD_FLAG)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port: u16 = line.trim().strip_prefix("port=").expect("child port").parse().unwrap();
    let connector = AtlsConnector::new(None, Some(Arc::new(Verifier::new(vec![v])))).unwrap();
    let mut conns = Vec::new();
    for _ in 0..warm {
        conns.push(connector.connect(TcpStream::connect(("127.0.0.1", port)).await.unwrap()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (before, client_before) = (vm_rss_kib(child.id()), vm_rss_kib(std::process::id()));
    for _ in 0..n {
        conns.push(connector.connect(TcpStream::connect(("127.0.0.1", port)).await.unwrap()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (after, client_after) = (vm_rss_kib(child.id()), vm_rss_kib(std::process::id()));
    // KiB counts and connection counts are far below 2^52: the casts are exact.
    #[allow(clippy::cast_precision_loss)]
    let per = |grew: u64| grew as f64 / n as f64;
    println!(
        "idle connections: server RSS {before} → {after} KiB over {n} connections = {:.1} KiB per connection \
         (client process: {:.1} KiB per connection)",
        per(after.saturating_sub(before)),
        per(client_after.saturating_sub(client_before)),
    );
    drop(conns);
    drop(child.stdin.take());
    let _ = child.wait();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if args.iter().any(|a| a == CHILD_FLAG) {
        rt.block_on(serve_child());
        return;
    }
    let quick = args.iter().any(|a| a == "--test");
    let (n, idle) = if quick { (3, 5) } else { (200, 200) };

    let server = node();
    let full = engine_validator(&server);
    let issuer: Arc<dyn AttestationIssuer> = server.issuer.clone();

    // The parts of one handshake.
    let nonce = [7u8; 32];
    let doc = server.issuer.issue(&nonce, &[1u8; 32], &[]).unwrap();
    let bytes = doc.encode_to_vec();
    report_part(
        "part: issue (swtpm quote + PCR read)",
        time_each(if quick { 3 } else { 50 }, || {
            server.issuer.issue(&nonce, &[1u8; 32], &[]).unwrap();
        }),
    );
    report_part(
        "part: validate document (engine)",
        time_each(if quick { 3 } else { 500 }, || {
            full.validate(&bytes, &nonce).unwrap();
        }),
    );
    report_part(
        "part: P-256 key + certificate",
        time_each(if quick { 3 } else { 500 }, || {
            attest_atls::cert::plain().unwrap();
        }),
    );

    rt.block_on(async {
        report("handshake: quote + verify", handshakes(issuer.clone(), full.clone(), n).await);
        report("handshake: quote, verify excluded", handshakes(issuer.clone(), Arc::new(AcceptAll), n).await);
        report(
            "handshake: no quote, no verify (floor)",
            handshakes(Arc::new(NoQuote(doc)), Arc::new(AcceptAll), n).await,
        );
        idle_memory(Arc::new(AcceptAll), if quick { 2 } else { 20 }, idle).await;
    });
}
