//! The TLS contexts, the per-connection state, the handshake driver and the stream.
//!
//! ```text
//!  client                                               server
//!  nonce_c ← 32 random bytes (if it verifies)           nonce_s ← 32 random bytes per connection (if it verifies)
//!  ClientHello{SNI = b64(nonce_c), ALPN h2}  ────────▶  servername cb: nonce_c ← SNI (if it attests)
//!                                                       cert cb: no credential yet → suspend (WANT_X509_LOOKUP)
//!                                                         driver: spawn_blocking(issue(nonce_c, H(spki))) → resume
//!                                                       cert cb: set the attested certificate + key
//!          ◀──────── ServerHello … CertificateRequest{CA = CN=b64(nonce_s)} Certificate CertificateVerify Finished
//!  verify cb: server certificate vs nonce_c (if it verifies)
//!  cert cb: nonce_s ← CA list (if it attests) → suspend; driver issues → resume; set certificate + key
//!  Certificate CertificateVerify Finished  ─────────▶  verify cb: client certificate vs nonce_s (if it verifies)
//! ```
//!
//! **Suspending instead of blocking.** Both sides produce their certificate from OpenSSL's certificate
//! callback (`SSL_CTX_set_cert_cb`, via `attest-openssl-ext`), which may return "retry": the handshake
//! returns `SSL_ERROR_WANT_X509_LOOKUP`, the driver runs the issuer (a TPM quote, milliseconds) on tokio's
//! blocking pool, stores the credential, and calls the handshake again, which calls the callback again.
//! The runtime's worker thread is never blocked by a quote. On the server the certificate callback runs
//! right after the servername callback, which is where the client's nonce is read (the client-hello
//! callback could suspend too, but it runs before OpenSSL has parsed the SNI, so it would have to decode
//! the raw extension itself).
//!
//! **Validation runs inside the handshake**, in OpenSSL's verify callback on the connection's task: it is
//! CPU-only (a warm `qemu-vtpm` validation is one RSA or ECDSA verify plus hashing, tens of microseconds), and
//! failing there is what makes OpenSSL abort the handshake with an alert to the peer.
//!
//! **No resumption.** Session caches and tickets are off on both sides: a resumed session would skip the
//! certificate, and with it the attestation.

use super::attestation::AttestationIssuer;
use super::cert::{self, Credential};
use super::error::{Error, NonceChannel};
use super::nonce::{self, Nonce};
use super::refusal::HandshakeRefusals;
use super::verify::{PeerAttestation, Verifier};
use attest_openssl_ext::{CertCallbackResult, client_ca_list, set_cert_callback, want_x509_lookup};
use openssl::ex_data::Index;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    AlpnError, NameType, SniError, Ssl, SslAlert, SslContext, SslMethod, SslOptions, SslRef, SslSessionCacheMode,
    SslVerifyMode, SslVersion,
};
use openssl::x509::X509VerifyResult;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// ALPN protocol list (wire format) offered and selected: HTTP/2 only, for the gRPC layer.
pub const ALPN_H2: &[u8] = b"\x02h2";

/// Which end of the connection this side is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

/// The attesting side's credential for one connection.
enum Slot {
    /// Nothing asked for yet.
    Empty,
    /// The certificate callback suspended for this peer nonce.
    Pending(Nonce),
    /// Produced; the certificate callback sets it.
    Ready(Credential),
    /// Producing failed; the certificate callback fails the handshake.
    Failed,
}

/// Per-connection state, in the SSL's ex_data.
struct ConnState {
    role: Role,
    attests: bool,
    verifier: Option<Arc<Verifier>>,
    /// The nonce this side sent (when it verifies).
    own_nonce: Option<Nonce>,
    inner: Mutex<ConnInner>,
}

struct ConnInner {
    /// The nonce the peer sent (server: read from the SNI).
    peer_nonce: Option<Nonce>,
    slot: Slot,
    /// The first failure this side detected; reported instead of OpenSSL's generic error.
    failure: Option<Error>,
    /// The verified peer.
    verified: Option<PeerAttestation>,
}

impl ConnState {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConnInner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, e: Error) {
        let mut inner = self.lock();
        if inner.failure.is_none() {
            inner.failure = Some(e);
        }
    }
}

fn state_index() -> Result<Index<Ssl, Arc<ConnState>>, Error> {
    static INDEX: OnceLock<Option<Index<Ssl, Arc<ConnState>>>> = OnceLock::new();
    INDEX.get_or_init(|| Ssl::new_ex_index().ok()).ok_or(Error::Config { what: "no SSL ex_data index left" })
}

fn state(ssl: &SslRef) -> Option<Arc<ConnState>> {
    ssl.ex_data(state_index().ok()?).cloned()
}

/// Attestations one acceptor (the server side) produces at once. Each is a TPM quote (or an SNP report),
/// serialized on the node's one TPM anyway; bounding them keeps the handshakes waiting for one as futures —
/// dropped, and never quoted for, when their connection is shed or closed — instead of blocking-pool jobs
/// that would run for connections long gone (a flood of ClientHellos would queue TPM work without end).
pub const MAX_CONCURRENT_ISSUES: usize = 2;

/// How one side of aTLS behaves: whether it attests (with an issuer) and whether it verifies the peer.
#[derive(Clone, Debug)]
struct Side {
    issuer: Option<Arc<dyn AttestationIssuer>>,
    verifier: Option<Arc<Verifier>>,
    /// Permits to produce an attestation ([`MAX_CONCURRENT_ISSUES`]), shared by this side's connections.
    issuing: Arc<tokio::sync::Semaphore>,
}

impl Side {
    /// A side producing at most `issues` attestations at once.
    fn new(
        issuer: Option<Arc<dyn AttestationIssuer>>,
        verifier: Option<Arc<Verifier>>,
        issues: usize,
    ) -> Result<Self, Error> {
        if issuer.is_none() && verifier.is_none() {
            return Err(Error::Config { what: "an aTLS side must attest, verify, or both" });
        }
        Ok(Self { issuer, verifier, issuing: Arc::new(tokio::sync::Semaphore::new(issues)) })
    }

    fn context(role: Role) -> Result<SslContext, Error> {
        let method = match role {
            Role::Client => SslMethod::tls_client(),
            Role::Server => SslMethod::tls_server(),
        };
        let mut b = SslContext::builder(method)?;
        // TLS 1.3 only: in TLS 1.2 the certificates — both attestation documents, with PCRs and EK
        // certificates — travel in clear, and 1.2 offers nothing aTLS needs. A 1.2-only peer is refused in
        // the ClientHello/ServerHello (`protocol_version`), counted and logged ([`crate::refusal`]).
        b.set_min_proto_version(Some(SslVersion::TLS1_3))?;
        b.set_session_cache_mode(SslSessionCacheMode::OFF);
        b.set_options(SslOptions::NO_TICKET | SslOptions::NO_RENEGOTIATION);
        match role {
            Role::Client => b.set_alpn_protos(ALPN_H2)?,
            Role::Server => {
                b.set_num_tickets(0)?;
                b.set_alpn_select_callback(|_, offered| {
                    openssl::ssl::select_next_proto(ALPN_H2, offered).ok_or(AlpnError::NOACK)
                });
                b.set_servername_callback(servername_callback);
            }
        }
        set_cert_callback(&mut b, cert_callback)?;
        // Peer verification is per connection (it needs the nonce); the context verifies nothing.
        b.set_verify(SslVerifyMode::NONE);
        Ok(b.build())
    }

    /// A new SSL for one connection, with its nonce and state.
    fn ssl(&self, ctx: &SslContext, role: Role) -> Result<(Ssl, Arc<ConnState>), Error> {
        let mut ssl = Ssl::new(ctx)?;
        let own_nonce = match &self.verifier {
            Some(_) => Some(nonce::fresh()?),
            None => None,
        };
        let st = Arc::new(ConnState {
            role,
            attests: self.issuer.is_some(),
            verifier: self.verifier.clone(),
            own_nonce,
            inner: Mutex::new(ConnInner { peer_nonce: None, slot: Slot::Empty, failure: None, verified: None }),
        });
        if let Some(n) = &own_nonce {
            match role {
                Role::Client => ssl.set_hostname(&nonce::encode(n))?,
                Role::Server => ssl.set_client_ca_list(nonce::ca_names(n)?),
            }
            let mode = match role {
                Role::Client => SslVerifyMode::PEER,
                Role::Server => SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT,
            };
            let st2 = st.clone();
            ssl.set_verify_callback(mode, move |_preverified, x509| verify_callback(&st2, x509));
        }
        ssl.set_ex_data(state_index()?, st.clone());
        Ok((ssl, st))
    }

    async fn handshake<S>(
        &self,
        ctx: &SslContext,
        role: Role,
        io: S,
        key: Option<PKey<Private>>,
    ) -> Result<AtlsStream<S>, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let (ssl, st) = self.ssl(ctx, role)?;
        let mut stream = tokio_openssl::SslStream::new(ssl, io)?;
        loop {
            let step = match role {
                Role::Client => Pin::new(&mut stream).connect().await,
                Role::Server => Pin::new(&mut stream).accept().await,
            };
            match step {
                Ok(()) => break,
                Err(e) if e.code() == want_x509_lookup() => self.produce(&st, key.clone()).await,
                Err(e) => {
                    let failure = st.lock().failure.take();
                    if failure.is_some() {
                        // We sent the alert: let it reach the peer before the socket closes.
                        lingering_close(stream.get_mut()).await;
                    }
                    return Err(failure.unwrap_or_else(|| match role {
                        Role::Server if st.verifier.is_some() => no_certificate_or_tls(e),
                        _ => Error::from_tls(e),
                    }));
                }
            }
        }
        let peer = {
            let mut inner = st.lock();
            match (&st.verifier, inner.verified.take()) {
                (Some(_), None) => return Err(Error::NoPeerCertificate),
                (_, verified) => verified,
            }
        };
        Ok(AtlsStream { inner: stream, peer })
    }

    /// Runs the issuer for the nonce the certificate callback suspended on, off the runtime's workers.
    async fn produce(&self, st: &ConnState, key: Option<PKey<Private>>) {
        let pending = std::mem::replace(&mut st.lock().slot, Slot::Empty);
        let (Slot::Pending(peer_nonce), Some(issuer)) = (pending, self.issuer.clone()) else {
            st.fail(Error::Config { what: "the handshake suspended without a pending attestation" });
            st.lock().slot = Slot::Failed;
            return;
        };
        // Wait for a permit as a future: a connection closed meanwhile drops this wait and costs no quote.
        let Ok(permit) = Arc::clone(&self.issuing).acquire_owned().await else {
            st.fail(Error::Config { what: "the attestation permits were closed" });
            st.lock().slot = Slot::Failed;
            return;
        };
        let made = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            match key {
                Some(key) => cert::attested_with_key(&*issuer, &peer_nonce, key),
                None => cert::attested(&*issuer, &peer_nonce),
            }
        })
        .await;
        let next = match made {
            Ok(Ok(credential)) => Slot::Ready(credential),
            Ok(Err(e)) => {
                st.fail(e);
                Slot::Failed
            }
            Err(join) => {
                st.fail(Error::IssueFailed { source: Box::new(join) });
                Slot::Failed
            }
        };
        st.lock().slot = next;
    }
}

/// How long a side that aborted a handshake keeps draining the peer's bytes before closing.
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(200);

/// Half-closes `io` and discards what the peer still sends, for at most [`LINGER`].
///
/// A TLS 1.3 client sends its Certificate, Finished and (having completed its handshake) its first
/// application data in one go. If the server refused the certificate and simply closed the socket, those
/// unread bytes would make the kernel send a TCP RST, and the client could lose the alert that says why
/// (it sees "connection reset" instead). So the side that aborts sends FIN and drains briefly — the
/// "lingering close" web servers use for the same reason.
async fn lingering_close<S: AsyncRead + AsyncWrite + Unpin>(io: &mut S) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let drain = async {
        let _ = io.shutdown().await;
        let mut sink = [0u8; 4096];
        while matches!(io.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// A verifying server's handshake error: [`Error::NoPeerCertificate`] when OpenSSL refused a client without
/// a certificate (FAIL_IF_NO_PEER_CERT, reason "peer did not return a certificate"), else as usual.
fn no_certificate_or_tls(e: openssl::ssl::Error) -> Error {
    let missing = e.ssl_error().is_some_and(|s| {
        s.errors().iter().any(|x| x.reason().is_some_and(|r| r.contains("did not return a certificate")))
    });
    if missing { Error::NoPeerCertificate } else { Error::from_tls(e) }
}

/// Server: read the client's nonce from the SNI (when this server attests).
fn servername_callback(ssl: &mut SslRef, alert: &mut SslAlert) -> Result<(), SniError> {
    let Some(st) = state(ssl) else { return Ok(()) };
    if !st.attests {
        return Ok(());
    }
    let channel = NonceChannel::ServerName;
    let read = match ssl.servername(NameType::HOST_NAME) {
        None => Err(Error::MissingNonce { channel }),
        Some(name) => nonce::decode(name, channel),
    };
    match read {
        Ok(n) => {
            st.lock().peer_nonce = Some(n);
            Ok(())
        }
        Err(e) => {
            st.fail(e);
            *alert = SslAlert::UNRECOGNIZED_NAME;
            Err(SniError::ALERT_FATAL)
        }
    }
}

/// Both roles: hand OpenSSL this side's certificate, producing it first if needed (suspending).
fn cert_callback(ssl: &mut SslRef) -> CertCallbackResult {
    let Some(st) = state(ssl) else { return CertCallbackResult::Fail };
    if !st.attests {
        return match st.role {
            // A client that does not attest sends no certificate (a verifying server then refuses it).
            Role::Client => CertCallbackResult::Ready,
            Role::Server => match cert::plain() {
                Ok(c) => set_credential(ssl, &st, &c),
                Err(e) => {
                    st.fail(e);
                    CertCallbackResult::Fail
                }
            },
        };
    }
    let mut inner = st.lock();
    match std::mem::replace(&mut inner.slot, Slot::Empty) {
        Slot::Ready(c) => {
            drop(inner);
            set_credential(ssl, &st, &c)
        }
        Slot::Failed => {
            inner.slot = Slot::Failed;
            CertCallbackResult::Fail
        }
        Slot::Empty | Slot::Pending(_) => {
            let peer_nonce = match st.role {
                Role::Server => inner.peer_nonce.ok_or(Error::MissingNonce { channel: NonceChannel::ServerName }),
                Role::Client => nonce::from_ca_names(client_ca_list(ssl)),
            };
            match peer_nonce {
                Ok(n) => {
                    inner.slot = Slot::Pending(n);
                    CertCallbackResult::Retry
                }
                Err(e) => {
                    inner.slot = Slot::Failed;
                    drop(inner);
                    st.fail(e);
                    CertCallbackResult::Fail
                }
            }
        }
    }
}

fn set_credential(ssl: &mut SslRef, st: &ConnState, c: &Credential) -> CertCallbackResult {
    match ssl.set_certificate(&c.certificate).and_then(|()| ssl.set_private_key(&c.key)) {
        Ok(()) => CertCallbackResult::Ready,
        Err(e) => {
            st.fail(e.into());
            CertCallbackResult::Fail
        }
    }
}

/// The per-connection verify callback: the leaf is judged once (OpenSSL calls back per certificate and
/// per chain error; a self-signed leaf always yields at least one call at depth 0), and the verdict is
/// repeated for later calls.
fn verify_callback(st: &ConnState, x509: &mut openssl::x509::X509StoreContextRef) -> bool {
    let (Some(verifier), Some(own_nonce)) = (&st.verifier, &st.own_nonce) else { return false };
    {
        let inner = st.lock();
        if inner.verified.is_some() {
            return true;
        }
        if inner.failure.is_some() {
            x509.set_error(X509VerifyResult::APPLICATION_VERIFICATION);
            return false;
        }
    }
    if x509.error_depth() != 0 {
        // Chain-building complaints above the leaf (there is no CA here) are not our checks.
        return true;
    }
    let Some(leaf) = x509.current_cert() else { return false };
    let channel = match st.role {
        Role::Client => NonceChannel::ServerName,
        Role::Server => NonceChannel::AcceptableCa,
    };
    match verifier.verify(leaf, own_nonce, channel) {
        Ok(peer) => {
            st.lock().verified = Some(peer);
            true
        }
        Err(e) => {
            st.fail(e);
            // OpenSSL maps this to a handshake_failure alert to the peer.
            x509.set_error(X509VerifyResult::APPLICATION_VERIFICATION);
            false
        }
    }
}

/// Accepts aTLS connections (the server side).
#[derive(Clone, Debug)]
pub struct AtlsAcceptor {
    side: Side,
    ctx: SslContext,
    refusals: Arc<HandshakeRefusals>,
}

impl AtlsAcceptor {
    /// A server that attests with `issuer` (client-side verification), verifies clients with `verifier`
    /// (server-side verification), or both (mutual). At least one must be given.
    pub fn new(issuer: Option<Arc<dyn AttestationIssuer>>, verifier: Option<Arc<Verifier>>) -> Result<Self, Error> {
        let side = Side::new(issuer, verifier, MAX_CONCURRENT_ISSUES)?;
        let ctx = Side::context(Role::Server)?;
        Ok(Self { side, ctx, refusals: Arc::new(HandshakeRefusals::new()) })
    }

    /// Counts and logs refused handshakes into `refusals` (shared with a service's metrics) instead of an
    /// acceptor-own set.
    pub fn with_refusals(mut self, refusals: Arc<HandshakeRefusals>) -> Self {
        self.refusals = refusals;
        self
    }

    /// The refused handshakes counted so far ([`crate::refusal`]).
    pub fn refusals(&self) -> &Arc<HandshakeRefusals> {
        &self.refusals
    }

    /// Runs the server handshake on `io`; a refusal is counted and logged ([`crate::refusal`]).
    pub async fn accept<S>(&self, io: S) -> Result<AtlsStream<S>, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.accept_from(io, None).await
    }

    /// [`AtlsAcceptor::accept`] for a connection from `peer` (named in the refusal log).
    pub async fn accept_from<S>(&self, io: S, peer: Option<std::net::SocketAddr>) -> Result<AtlsStream<S>, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let result = self.side.handshake(&self.ctx, Role::Server, io, None).await;
        if let Err(e) = &result {
            self.refusals.record("server", peer, e);
        }
        result
    }
}

/// Opens aTLS connections (the client side).
#[derive(Clone, Debug)]
pub struct AtlsConnector {
    side: Side,
    ctx: SslContext,
    refusals: Arc<HandshakeRefusals>,
    /// The key of this side's attested certificate, when the caller chose it ([`AtlsConnector::with_key`]).
    key: Option<PKey<Private>>,
}

impl AtlsConnector {
    /// A client that verifies the server with `verifier` (client-side verification), attests with `issuer`
    /// when the server asks (server-side verification), or both (mutual). At least one must be given.
    pub fn new(issuer: Option<Arc<dyn AttestationIssuer>>, verifier: Option<Arc<Verifier>>) -> Result<Self, Error> {
        // A client attests once per connection it opens: no bound beyond its own connections.
        let side = Side::new(issuer, verifier, tokio::sync::Semaphore::MAX_PERMITS)?;
        let ctx = Side::context(Role::Client)?;
        Ok(Self { side, ctx, refusals: Arc::new(HandshakeRefusals::new()), key: None })
    }

    /// Attests with `key` (P-256) instead of a fresh key per handshake: the key the attestation binds is then
    /// one the caller holds and uses afterwards — a joining node's kubelet key, so that the join service
    /// signs a kubelet certificate only for the key the node proved in the handshake. Use a new key per
    /// connection: a verifier refuses a certificate key it accepted before ([`Error::ReplayedCertificate`]).
    pub fn with_key(mut self, key: PKey<Private>) -> Self {
        self.key = Some(key);
        self
    }

    /// Counts and logs refused handshakes into `refusals` instead of a connector-own set.
    pub fn with_refusals(mut self, refusals: Arc<HandshakeRefusals>) -> Self {
        self.refusals = refusals;
        self
    }

    /// The refused handshakes counted so far ([`crate::refusal`]).
    pub fn refusals(&self) -> &Arc<HandshakeRefusals> {
        &self.refusals
    }

    /// Runs the client handshake on `io`; a refusal is counted and logged ([`crate::refusal`]).
    pub async fn connect<S>(&self, io: S) -> Result<AtlsStream<S>, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.connect_to(io, None).await
    }

    /// [`AtlsConnector::connect`] to `peer` (named in the refusal log).
    pub async fn connect_to<S>(&self, io: S, peer: Option<std::net::SocketAddr>) -> Result<AtlsStream<S>, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let result = self.side.handshake(&self.ctx, Role::Client, io, self.key.clone()).await;
        if let Err(e) = &result {
            self.refusals.record("client", peer, e);
        }
        result
    }
}

/// An established aTLS connection: an async byte stream (for the gRPC layer) plus what the peer proved.
#[derive(Debug)]
pub struct AtlsStream<S> {
    inner: tokio_openssl::SslStream<S>,
    peer: Option<PeerAttestation>,
}

impl<S> AtlsStream<S> {
    /// What the peer's certificate proved, when this side verified it.
    pub fn peer_attestation(&self) -> Option<&PeerAttestation> {
        self.peer.as_ref()
    }

    /// The negotiated ALPN protocol (`Some(b"h2")` with an HTTP/2 peer).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.inner.ssl().selected_alpn_protocol()
    }

    /// The TLS session (peer certificate, version, cipher).
    pub fn ssl(&self) -> &SslRef {
        self.inner.ssl()
    }

    /// The underlying transport.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref()
    }
}

/// A TLS alert from the peer is turned into an `io::Error` wrapping [`Error::AlertReceived`], so that a
/// client whose attestation a TLS 1.3 server rejected after the client's handshake completed learns why.
fn map_io(e: std::io::Error) -> std::io::Error {
    let alert = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<openssl::ssl::Error>())
        .and_then(super::error::received_alert);
    match alert {
        Some(alert) => std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            Error::AlertReceived { alert, description: super::error::alert_name(alert) },
        ),
        None => e,
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for AtlsStream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf).map_err(map_io)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for AtlsStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf).map_err(map_io)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx).map_err(map_io)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx).map_err(map_io)
    }
}
