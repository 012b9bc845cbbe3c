//! Hostile clients against the join service as it is deployed: aTLS with server-side verification in front of
//! `join.API`. `shell/grpc/tests/grpc_hostile.rs` covers the gRPC server's HTTP/2 handling frame by frame
//! over cleartext; this file covers what only the real service has: the TLS handshake before HTTP/2 (garbage,
//! truncated and stalled ClientHellos, a client that disconnects at any point of its handshake, clients that
//! do not attest), HTTP/2 abuse by a client that did attest, and the join handler's own side effects under
//! abuse — a bootstrap token created for a call that is then reset, cancelled or cut off must be deleted.
//!
//! The services run in this process from the `join-load` fixture (software AKs pinned in the AK registry file,
//! measurements file, dry-run token issuer; see `attest_benches::joinload::inprocess`), so the server's
//! connection and call counters and this process's RSS are at hand. After every case a genuine node still
//! joins, the counters return to zero, and every bootstrap token left on disk belongs to an issued ticket.
//! No case depends on wall-clock speed: each runs under a `tokio::time::timeout` only so that a hang fails
//! instead of stalling the suite, and the cases run one at a time so that RSS readings are not disturbed.
#![forbid(unsafe_code)]

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use attest_atls::{AtlsConnector, AttestationIssuer};
use attest_benches::joinload::inprocess::Services;
use attest_benches::joinload::{self, LoadConfig, NodeRequest, SoftAkIssuer};
use attest_grpc::{Channel, ChannelConfig, Code, Metadata, ServerConfig};
use attest_proto::join::{IssueJoinTicketRequest, IssueJoinTicketResponse};
use attest_proto::paths;
use attest_test_support::TempDir;
use attest_test_support::h2raw::*;
use attest_test_support::tpm::AkKind;
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use prost::Message as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// Upper bound on one case (a hang is a failure, not a slow pass).
const CASE_LIMIT: Duration = Duration::from_secs(180);
/// RSS growth allowed while an attack is under way; an unbounded server would exceed it many times over.
const RSS_SLACK_KIB: u64 = 96 * 1024;
/// The join service's handshake timeout in these tests (the binary uses the 10 s default): short, so that the
/// stalled-handshake cases end quickly. Only its effect (the connection is closed) is asserted, never its
/// duration.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// The request body timeout in these tests (default 30 s), for the slowloris body case.
const BODY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long counters may take to settle once the clients are gone.
const SETTLE: Duration = Duration::from_secs(20);

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs one case alone, bounded by [`CASE_LIMIT`].
async fn case(name: &str, body: impl Future<Output = ()>) {
    let _serial = SERIAL.lock().await;
    let finished = tokio::time::timeout(CASE_LIMIT, body).await.is_ok();
    assert!(finished, "{name}: did not finish within {CASE_LIMIT:?}");
}

/// The services, a genuine node's issuer and its join request.
struct Fixture {
    services: Services,
    issuer: Arc<SoftAkIssuer>,
    connector: AtlsConnector,
    node: NodeRequest,
    _dir: TempDir,
}

impl Fixture {
    async fn start() -> Fixture {
        let dir = TempDir::new("join-hostile");
        joinload::write_fixture(dir.path(), 1, AkKind::EccP256).unwrap();
        let config = ServerConfig {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            request_body_timeout: BODY_TIMEOUT,
            ..ServerConfig::default()
        };
        let services = Services::start(dir.path(), config).await.unwrap();
        let issuer = joinload::load_issuers(dir.path()).unwrap().remove(0);
        let connector = AtlsConnector::new(Some(Arc::clone(&issuer) as Arc<dyn AttestationIssuer>), None).unwrap();
        let node = joinload::node_requests(1).unwrap().remove(0);
        Fixture { services, issuer, connector, node, _dir: dir }
    }

    fn addr(&self) -> SocketAddr {
        self.services.addr
    }

    /// A join request with `csr` (the kubelet CSR of the connection it goes over: the join service signs only a
    /// CSR for the key the node proved in that handshake).
    fn request(&self, csr: Vec<u8>) -> IssueJoinTicketRequest {
        IssueJoinTicketRequest {
            disk_uuid: self.node.disk_uuid.clone(),
            certificate_request: csr,
            ..IssueJoinTicketRequest::default()
        }
    }

    /// An attested connection under a fresh kubelet key, and the join request (a gRPC message, 5-byte prefix)
    /// whose CSR is for that key, as a genuine node sends it.
    async fn raw_joining(&self) -> (RawConn, Vec<u8>) {
        let (key, csr) = joinload::load::kubelet_csr(&self.node.node).unwrap();
        let tcp = TcpStream::connect(self.addr()).await.unwrap();
        let tls = self.connector.clone().with_key(key).connect(tcp).await.unwrap();
        (RawConn::handshake_over(tls, &[]).await, prefixed(&self.request(csr).encode_to_vec()))
    }

    /// A gRPC channel under a fresh kubelet key, and a join request for that key.
    async fn channel_joining(&self) -> (Channel, IssueJoinTicketRequest) {
        let (key, csr) = joinload::load::kubelet_csr(&self.node.node).unwrap();
        let tcp = TcpStream::connect(self.addr()).await.unwrap();
        let tls = self.connector.clone().with_key(key).connect(tcp).await.unwrap();
        let channel = Channel::handshake(tls, "join-service", ChannelConfig::default()).await.unwrap();
        (channel, self.request(csr))
    }

    /// An attested aTLS connection (the handshake done, nothing else sent).
    async fn attested(&self) -> attest_atls::AtlsStream<TcpStream> {
        let tcp = TcpStream::connect(self.addr()).await.unwrap();
        self.connector.connect(tcp).await.unwrap()
    }

    /// A raw HTTP/2 peer on an attested aTLS connection.
    async fn raw(&self) -> RawConn {
        RawConn::handshake_over(self.attested().await, &[]).await
    }

    /// A gRPC channel on an attested aTLS connection.
    /// A genuine node joins: the ticket is well formed and its kubelet certificate is for the node.
    async fn joins(&self) {
        let config = LoadConfig {
            addr: self.addr(),
            concurrency: 1,
            joins: Some(1),
            max_duration: Duration::from_secs(120),
            rate: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(30),
            progress: None,
            sources: Vec::new(),
        };
        let report = joinload::load::run(&config, std::slice::from_ref(&self.issuer), vec![self.node.clone()], None)
            .await
            .unwrap();
        assert_eq!((report.joins_ok, report.error_count()), (1, 0), "{}", report.text());
    }

    /// Once every client is gone: no connection, no call, and a bootstrap token only for each issued ticket
    /// (a token created for a call that did not complete has been deleted).
    async fn quiesces(&self) {
        let server = &self.services.join;
        let settled = eventually(SETTLE, || server.open_connections() == 0 && server.in_flight_calls() == 0).await;
        assert!(
            settled,
            "join service did not settle: {} connections, {} calls in flight",
            server.open_connections(),
            server.in_flight_calls()
        );
        let issued = usize::try_from(self.services.metrics.issued_count().0).unwrap();
        let tokens_match = eventually(SETTLE, || self.services.live_tokens() == issued).await;
        assert!(tokens_match, "{} bootstrap tokens on disk for {issued} issued tickets", self.services.live_tokens());
    }

    /// The end of every case.
    async fn still_healthy(&self) {
        self.joins().await;
        self.quiesces().await;
    }
}

fn prefixed(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    v.extend_from_slice(body);
    v
}

#[track_caller]
fn assert_rss_bounded(what: &str, before: u64) {
    let now = rss_kib();
    assert!(now < before + RSS_SLACK_KIB, "{what}: RSS grew from {before} KiB to {now} KiB");
    println!("{what}: RSS {before} KiB → {now} KiB");
}

/// The first TLS record the real aTLS client sends: its ClientHello (captured over an in-memory pipe).
async fn client_hello(connector: &AtlsConnector) -> Vec<u8> {
    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    let read = async move {
        let mut head = [0u8; 5];
        theirs.read_exact(&mut head).await.unwrap();
        assert_eq!(head[0], 22, "a handshake record");
        let mut record = head.to_vec();
        record.resize(5 + usize::from(u16::from_be_bytes([head[3], head[4]])), 0);
        theirs.read_exact(&mut record[5..]).await.unwrap();
        record // `theirs` is dropped here: the handshake fails
    };
    let (handshake, record) = tokio::join!(connector.connect(ours), read);
    assert!(handshake.is_err());
    record
}

/// Reads until the server closes the connection (EOF or reset); the bytes read.
async fn read_to_close(tcp: &mut TcpStream) -> usize {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0;
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return total,
            Ok(n) => total += n,
        }
    }
}

/// A stream that writes at most `limit` bytes and then fails, as a client that disconnects there; counts
/// what was written.
struct CutStream {
    inner: TcpStream,
    limit: usize,
    written: usize,
}

impl AsyncRead for CutStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CutStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let room = self.limit - self.written;
        if room == 0 {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "cut")));
        }
        let n = buf.len().min(room);
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, &buf[..n]) {
            Poll::Ready(Ok(k)) => {
                this.written += k;
                Poll::Ready(Ok(k))
            }
            other => other,
        }
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A self-signed P-256 certificate without an attestation extension.
fn self_signed(key: &openssl::pkey::PKey<openssl::pkey::Private>) -> openssl::x509::X509 {
    let mut name = openssl::x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "not-attested").unwrap();
    let name = name.build();
    let mut b = openssl::x509::X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(key).unwrap();
    b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap()).unwrap();
    b.sign(key, openssl::hash::MessageDigest::sha256()).unwrap();
    b.build()
}

// ---- the TLS handshake ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_truncated_client_hellos_close_only_that_connection() {
    case("garbage and truncated ClientHellos", async {
        let fx = Fixture::start().await;
        let hello = client_hello(&fx.connector).await;
        let mut random = vec![0u8; 1024];
        openssl::rand::rand_bytes(&mut random).unwrap();
        let h2c = [PREFACE, &settings(&[])].concat();
        // A handshake record header announcing 16 KiB + 1 (over TLS's record limit), and one announcing a
        // 16 MiB ClientHello inside a well-formed record.
        let oversized_record = [22, 3, 1, 0x40, 0x01];
        let mut huge_hello = vec![22, 3, 1, 0x00, 0x08, 1, 0xFF, 0xFF, 0xFF];
        huge_hello.extend_from_slice(&[0; 4]);
        let garbage: [(&str, &[u8]); 6] = [
            ("random bytes", &random),
            ("HTTP/1.1", b"GET / HTTP/1.1\r\nHost: join-service\r\n\r\n"),
            ("cleartext HTTP/2", &h2c),
            ("oversized record", &oversized_record),
            ("16 MiB ClientHello", &huge_hello),
            ("alert record", &[21, 3, 3, 0, 2, 2, 40]),
        ];
        for (what, bytes) in garbage {
            // The server answers (an alert at most) and closes; it does not wait for more.
            let mut tcp = TcpStream::connect(fx.addr()).await.unwrap();
            tcp.write_all(bytes).await.unwrap();
            let answered = read_to_close(&mut tcp).await;
            println!("{what}: server sent {answered} bytes and closed");
            assert!(answered < 1024, "{what}: {answered} bytes");
        }
        // A ClientHello cut anywhere, then the client closes: 20 connections per cut point.
        for cut in [1, 5, 6, hello.len() / 2, hello.len() - 1] {
            for _ in 0..20 {
                let mut tcp = TcpStream::connect(fx.addr()).await.unwrap();
                tcp.write_all(&hello[..cut]).await.unwrap();
                drop(tcp);
            }
        }
        // The whole ClientHello, then the client closes after the server's first flight arrived.
        for _ in 0..20 {
            let mut tcp = TcpStream::connect(fx.addr()).await.unwrap();
            tcp.write_all(&hello).await.unwrap();
            let mut some = [0u8; 1];
            tcp.read_exact(&mut some).await.unwrap();
            drop(tcp);
        }
        assert_eq!(fx.services.metrics.issued_count(), (0, 0));
        fx.still_healthy().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_handshakes_are_closed_and_do_not_block_joins() {
    case("stalled handshakes", async {
        let fx = Fixture::start().await;
        let hello = client_hello(&fx.connector).await;
        let before = rss_kib();
        // 100 connections stop half-way through the ClientHello, 100 after the whole ClientHello (the server has
        // sent its flight and waits for the client's certificate), 50 after connecting without a byte — each
        // from an address of its own, so that only the listener's pending cap (not a per-peer one) bounds them.
        let mut stalled = Vec::new();
        for i in 0..250 {
            let mut tcp = connect_from(loopback_peer(i), fx.addr()).await.unwrap();
            match i % 5 {
                0 | 1 => tcp.write_all(&hello[..hello.len() / 2]).await.unwrap(),
                2 | 3 => tcp.write_all(&hello).await.unwrap(),
                _ => {}
            }
            stalled.push(tcp);
        }
        let server = &fx.services.join;
        // At most max_handshakes of them are pending at once (fair admission): the rest were shed, silent ones first.
        let cap = ServerConfig::default().max_handshakes;
        assert!(
            eventually(SETTLE, || server.admission_stats().admitted == 250 && server.open_connections() == cap).await,
            "{} open, {:?}",
            server.open_connections(),
            server.admission_stats()
        );
        // Each handshake runs in its connection's own task: a genuine node joins while they hang.
        fx.joins().await;
        // The handshake timeout closes every stalled connection.
        for tcp in &mut stalled {
            read_to_close(tcp).await;
        }
        assert_rss_bounded("250 stalled handshakes", before);
        drop(stalled);
        fx.quiesces().await;
        fx.still_healthy().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_disconnecting_at_any_point_of_its_handshake_leaves_nothing_behind() {
    case("disconnect mid-handshake", async {
        let fx = Fixture::start().await;
        // How many bytes a complete client handshake writes (ClientHello; Certificate with the attestation
        // document, CertificateVerify, Finished).
        let mut counting =
            CutStream { inner: TcpStream::connect(fx.addr()).await.unwrap(), limit: usize::MAX, written: 0 };
        let tls = fx.connector.connect(&mut counting).await.unwrap();
        drop(tls);
        let total = counting.written;
        drop(counting);
        println!("a complete aTLS client handshake writes {total} bytes");
        // Disconnect after every 50th byte of it, and just short of the end. The length varies by a few bytes
        // between handshakes (the ECDSA signatures of the quote and of CertificateVerify are DER, 70 to 72
        // bytes each), so the last cut leaves room for that.
        let mut cuts: Vec<usize> = (0..total - 8).step_by(50).collect();
        cuts.push(total - 8);
        for &limit in &cuts {
            let tcp = TcpStream::connect(fx.addr()).await.unwrap();
            let mut cut = CutStream { inner: tcp, limit, written: 0 };
            let completed = fx.connector.connect(&mut cut).await.is_ok();
            assert!(!completed, "a handshake cut after {limit} of {total} bytes completed");
            assert_eq!(cut.written, limit);
        }
        println!("{} handshakes cut short", cuts.len());
        assert_eq!(fx.services.metrics.issued_count(), (0, 0));
        fx.still_healthy().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_do_not_attest_get_no_http2() {
    case("unattested TLS clients", async {
        let fx = Fixture::start().await;
        // A plain TLS 1.3 client without a certificate, and one with a certificate that carries no attestation
        // document. TLS 1.3 lets the client finish its side of the handshake before the server has checked
        // the client's certificate, so the refusal arrives as an alert on the first read.
        let key = openssl::pkey::PKey::ec_gen("prime256v1").unwrap();
        let plain_cert = self_signed(&key);
        for with_cert in [false, true] {
            let mut b = SslConnector::builder(SslMethod::tls()).unwrap();
            b.set_verify(SslVerifyMode::NONE);
            if with_cert {
                b.set_certificate(&plain_cert).unwrap();
                b.set_private_key(&key).unwrap();
            }
            let ssl = b.build().configure().unwrap().into_ssl("join-service").unwrap();
            let tcp = TcpStream::connect(fx.addr()).await.unwrap();
            let mut tls = tokio_openssl::SslStream::new(ssl, tcp).unwrap();
            let handshake = Pin::new(&mut tls).connect().await;
            if handshake.is_ok() {
                let _ = tls.write_all(&[PREFACE, &settings(&[])].concat()).await;
                let mut buf = [0u8; 64];
                let got = tls.read(&mut buf).await;
                assert!(!matches!(got, Ok(n) if n > 0), "with_cert={with_cert}: the server spoke HTTP/2: {got:?}");
            }
        }
        assert_eq!(fx.services.metrics.issued_count(), (0, 0));
        fx.still_healthy().await;
    })
    .await;
}

// ---- HTTP/2 and gRPC abuse by a client that attested ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http2_and_hpack_bombs_from_an_attested_client() {
    case("malformed HTTP/2 and HPACK bombs over aTLS", async {
        let fx = Fixture::start().await;
        let before = rss_kib();
        // DATA on stream 0, a SETTINGS frame with a bad length, a HEADERS frame on an even stream id.
        let malformed = [
            frame(DATA, 0, 0, b"x"),
            frame(SETTINGS, 0, 0, &[0; 5]),
            frame(HEADERS, END_HEADERS, 2, &block(&grpc_fields(paths::JOIN_ISSUE_JOIN_TICKET))),
        ];
        for f in malformed {
            let mut c = fx.raw().await;
            c.send(&f).await;
            let code = c.goaway().await;
            assert!(matches!(code, Some(PROTOCOL_ERROR | FRAME_SIZE_ERROR)), "{code:?}");
        }
        // One ~4 KiB dynamic-table entry, then a frame of one-octet references to it (64 MiB decoded).
        let mut c = fx.raw().await;
        let mut seed = block(&grpc_fields(paths::JOIN_ISSUE_JOIN_TICKET));
        hpack_field(&mut seed, b"x-bomb", &vec![b'b'; 4000], true);
        c.send(&frame(HEADERS, END_HEADERS | END_STREAM, 1, &seed)).await;
        let _ = c.stream_end(1).await;
        let mut payload = block(&grpc_fields(paths::JOIN_ISSUE_JOIN_TICKET));
        for _ in 0..16_000 {
            hpack_indexed(&mut payload, 62);
        }
        c.send(&frame(HEADERS, END_HEADERS, 3, &payload[..payload.len().min(16_384)])).await;
        let end = c.stream_end(3).await;
        println!("HPACK bomb over aTLS: {end:?}, GOAWAY {:?}", c.goaways);
        assert!(
            matches!(
                end,
                StreamEnd::Ended(_) | StreamEnd::Reset(_) | StreamEnd::GoAway(ENHANCE_YOUR_CALM | COMPRESSION_ERROR)
            ),
            "{end:?}"
        );
        assert_rss_bounded("HPACK bomb over aTLS", before);
        drop(c);
        assert_eq!(fx.services.metrics.issued_count(), (0, 0));
        fx.still_healthy().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_reset_of_join_calls_leaves_no_token_behind() {
    case("rapid reset of IssueJoinTicket", async {
        let fx = Fixture::start().await;
        let before = rss_kib();
        // Complete join requests, each reset at once, in bursts of 200 without waiting for anything, until the
        // server sends GOAWAY. Calls that had started (created a token, asked the key service) are cancelled.
        let (mut c, request) = fx.raw_joining().await;
        let (opened, code) = c.rapid_reset(1, paths::JOIN_ISSUE_JOIN_TICKET, &request, 50, 200).await;
        let issued = fx.services.metrics.issued_count().0;
        println!("rapid reset: {opened} join calls opened and reset, GOAWAY {code:?}, {issued} tickets issued");
        assert_eq!(code, Some(ENHANCE_YOUR_CALM));
        drop(c);
        assert_rss_bounded("rapid reset of join calls", before);
        fx.quiesces().await;
        fx.still_healthy().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_calls_cut_off_mid_call_leave_no_token_behind() {
    case("abrupt disconnects mid-call", async {
        let fx = Fixture::start().await;
        // The request half sent, then the connection dropped.
        for _ in 0..10 {
            let (mut c, request) = fx.raw_joining().await;
            c.open(1, paths::JOIN_ISSUE_JOIN_TICKET).await;
            c.send(&frame(DATA, 0, 1, &request[..request.len() / 2])).await;
            drop(c);
        }
        // The whole request sent, the connection dropped while the call runs (or just after it ended).
        for i in 0..30 {
            let (mut c, request) = fx.raw_joining().await;
            c.open(1, paths::JOIN_ISSUE_JOIN_TICKET).await;
            c.send(&frame(DATA, END_STREAM, 1, &request)).await;
            if i % 3 == 1 {
                tokio::task::yield_now().await;
            } else if i % 3 == 2 {
                let _ = eventually(Duration::from_secs(5), || fx.services.join.in_flight_calls() > 0).await;
            }
            drop(c);
        }
        // The request body never finishing (slowloris): the request body timeout ends the call; no token.
        let (mut c, request) = fx.raw_joining().await;
        c.open(1, paths::JOIN_ISSUE_JOIN_TICKET).await;
        c.send(&frame(DATA, 0, 1, &request[..10])).await;
        let end = c.stream_end(1).await;
        println!("slowloris body: {end:?}");
        assert!(matches!(end, StreamEnd::Ended(_) | StreamEnd::Reset(_)), "{end:?}");
        drop(c);
        println!("{} tickets issued to calls cut off", fx.services.metrics.issued_count().0);
        fx.quiesces().await;
        fx.still_healthy().await;
    })
    .await;
}

/// A message with `IssueJoinTicketRequest`'s field numbers but bytes where it has strings.
#[derive(Clone, PartialEq, prost::Message)]
struct Bogus {
    #[prost(bytes = "vec", tag = "1")]
    disk_uuid: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    certificate_request: Vec<u8>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_join_requests_get_precise_statuses_and_no_token() {
    case("invalid join requests", async {
        let fx = Fixture::start().await;
        let (ch, valid) = fx.channel_joining().await;
        let call = |req: IssueJoinTicketRequest| {
            let ch = ch.clone();
            async move {
                ch.unary::<_, IssueJoinTicketResponse>(paths::JOIN_ISSUE_JOIN_TICKET, req, Metadata::new(), None)
                    .await
                    .map(|_| ())
                    .unwrap_err()
                    .code
            }
        };
        // Over the message size limit (4 MiB): refused before it is decoded.
        let mut big = valid.clone();
        big.certificate_request = vec![0x30; 5 << 20];
        assert_eq!(call(big).await, Code::ResourceExhausted);
        // Not a valid IssueJoinTicketRequest (a string field that is not UTF-8): INTERNAL, as gRPC's status code
        // table prescribes for "error parsing request proto" (grpc-go and tonic answer the same).
        let bogus = Bogus { disk_uuid: vec![0xFF, 0xFE], certificate_request: fx.node.csr.clone() };
        let status = ch
            .unary::<_, IssueJoinTicketResponse>(paths::JOIN_ISSUE_JOIN_TICKET, bogus, Metadata::new(), None)
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(status.code, Code::Internal, "{status}");
        // Well-formed protobuf, invalid content: no disk UUID; a CSR that is not DER. (Node names, reserved
        // key ids as disk UUIDs, SSH keys: shell/joinservice/tests/join_service.rs; CSR signatures: shell/k8s/src/ca_test.rs.)
        let mut no_uuid = valid.clone();
        no_uuid.disk_uuid.clear();
        assert_eq!(call(no_uuid).await, Code::InvalidArgument);
        let mut bad_csr = valid.clone();
        bad_csr.certificate_request = b"not a CSR".to_vec();
        assert_eq!(call(bad_csr).await, Code::InvalidArgument);
        // A method join.API does not have.
        let status = ch
            .unary::<_, IssueJoinTicketResponse>("/join.API/IssueEverything", valid.clone(), Metadata::new(), None)
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(status.code, Code::Unimplemented, "{status}");
        // The connection is still good for a valid call.
        let ok = ch
            .unary::<_, IssueJoinTicketResponse>(paths::JOIN_ISSUE_JOIN_TICKET, valid, Metadata::new(), None)
            .await
            .unwrap();
        joinload::check_ticket(&ok.message, &fx.node.node, None).unwrap();
        drop(ch);
        assert_eq!(fx.services.metrics.issued_count(), (1, 0));
        fx.still_healthy().await;
    })
    .await;
}
