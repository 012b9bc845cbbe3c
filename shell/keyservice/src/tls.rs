//! Mutual TLS between the key service and its callers, under a cluster-internal CA.
//!
//! The key service derives every node's disk key and the measurement secret: whoever can call it holds the
//! cluster. It is therefore reached only over TLS 1.3 with client certificates, and only by callers whose
//! certificate the cluster's own **key-service CA** issued for an allowed name (by default only
//! [`JOIN_SERVICE_CLIENT_NAME`]; the bootstrapper derives its init keys from the master secret it is given and
//! never calls the key service). Nothing else is trusted: no system roots, no other CA.
//!
//! ```text
//!  attest init / attest secret key-service-pki ─► DIR/ca.crt, ca.key             (the CA; ca.key stays with the operator)
//!                                                DIR/key-service.crt, .key      (server: DNS attest-key-service[.kube-system.svc[.cluster.local]])
//!                                                DIR/join-service.crt, .key     (client: CN attest-join-service, EKU clientAuth)
//!
//!  join service ── TCP ─► TLS 1.3, ALPN h2 ──────────────────────────────► key service
//!    verifies: server chain → ca.crt, DNS name = attest-key-service          verifies: client chain → ca.crt, EKU clientAuth,
//!                                                                                     name ∈ allowed callers
//!                                                                            then kms.API over HTTP/2 on the TLS stream
//! ```
//!
//! | caller | outcome |
//! |---|---|
//! | plaintext HTTP/2 (h2c) | the TLS handshake fails on the first bytes; the connection is closed before HTTP/2 |
//! | TLS without a client certificate | `certificate_required` alert (TLS 1.3), connection closed |
//! | a certificate from another CA | `unknown_ca` alert |
//! | a certificate of the cluster CA for a name that may not call | connection closed after the handshake, before any call |
//! | the join service's certificate | `kms.API/GetDataKey` served; each call logs the caller's name |
//!
//! Certificates are P-256 ECDSA with SHA-256, valid for [`CERT_VALIDITY_DAYS`]; the CA is valid as long. The
//! files are written atomically, private keys with mode 0600 ([`attest_util::fs`]). In Kubernetes they are
//! Secrets (`deploy/kubernetes/key-service.yaml`, `join-service.yaml`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    AlpnError, SslAcceptor, SslConnector, SslContextBuilder, SslFiletype, SslMethod, SslVerifyMode, SslVersion,
    select_next_proto,
};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName, SubjectKeyIdentifier,
};
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::verify::X509CheckFlags;
use openssl::x509::{X509, X509NameBuilder, X509PurposeId, X509Ref};
use tokio::net::{TcpListener, TcpStream};

use attest_grpc::{Channel, ChannelConfig, Counted, PeerInfo, Server, Status};

/// The DNS name in the key service's certificate, and the name clients verify (the Service's name).
pub const KEY_SERVICE_NAME: &str = "attest-key-service";
/// The name (CommonName and DNS SAN) of the join service's client certificate: the one caller allowed by
/// default.
pub const JOIN_SERVICE_CLIENT_NAME: &str = "attest-join-service";
/// Validity of the CA and of the certificates it issues, in days.
pub const CERT_VALIDITY_DAYS: u32 = 825;
/// ALPN of the gRPC connection.
pub const ALPN_H2: &[u8] = b"h2";
/// Largest PEM file read (certificate or key).
pub const MAX_PEM_FILE_SIZE: u64 = 64 * 1024;

/// File names written by [`generate_pki`].
pub mod files {
    /// The CA certificate (public; every party trusts it).
    pub const CA_CERT: &str = "ca.crt";
    /// The CA key (the operator keeps it; no service needs it).
    pub const CA_KEY: &str = "ca.key";
    /// The key service's certificate.
    pub const SERVER_CERT: &str = "key-service.crt";
    /// The key service's key.
    pub const SERVER_KEY: &str = "key-service.key";
    /// The join service's client certificate.
    pub const CLIENT_CERT: &str = "join-service.crt";
    /// The join service's client key.
    pub const CLIENT_KEY: &str = "join-service.key";
}

/// Why TLS to or from the key service could not be set up or completed.
#[derive(Debug)]
pub enum TlsError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is not what it should be (not PEM, key and certificate do not match, too large).
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// OpenSSL failed to build a context or a certificate.
    OpenSsl(openssl::error::ErrorStack),
    /// The TLS handshake failed (the peer's certificate refused, no certificate, not TLS at all).
    Handshake(String),
    /// The client's certificate is from the cluster CA but for a name that may not call the key service.
    CallerNotAllowed {
        /// The certificate's CommonName (or `<none>`).
        name: String,
    },
    /// The peer did not negotiate HTTP/2 (ALPN `h2`).
    NoAlpn,
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TlsError::Invalid { path, reason } => write!(f, "{}: {reason}", path.display()),
            TlsError::OpenSsl(e) => write!(f, "OpenSSL: {e}"),
            TlsError::Handshake(e) => write!(f, "TLS handshake: {e}"),
            TlsError::CallerNotAllowed { name } => {
                write!(f, "client certificate for {name:?}, which may not call the key service")
            }
            TlsError::NoAlpn => f.write_str("the peer did not negotiate HTTP/2 (ALPN h2)"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::OpenSsl(e) => Some(e),
            Self::Invalid { .. } | Self::Handshake(_) | Self::CallerNotAllowed { .. } | Self::NoAlpn => None,
        }
    }
}

impl From<openssl::error::ErrorStack> for TlsError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        TlsError::OpenSsl(e)
    }
}

/// One party's TLS files: the CA it trusts, its certificate and its key (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The cluster's key-service CA certificate.
    pub ca: PathBuf,
    /// This party's certificate.
    pub cert: PathBuf,
    /// This party's private key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// The key service's files in a directory written by [`generate_pki`].
    pub fn server_in(dir: &Path) -> TlsFiles {
        TlsFiles { ca: dir.join(files::CA_CERT), cert: dir.join(files::SERVER_CERT), key: dir.join(files::SERVER_KEY) }
    }

    /// The join service's client files in a directory written by [`generate_pki`].
    pub fn client_in(dir: &Path) -> TlsFiles {
        TlsFiles { ca: dir.join(files::CA_CERT), cert: dir.join(files::CLIENT_CERT), key: dir.join(files::CLIENT_KEY) }
    }
}

fn read_pem(path: &Path) -> Result<Vec<u8>, TlsError> {
    use std::io::Read as _;
    let io = |source| TlsError::Io { path: path.to_owned(), source };
    let mut out = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(MAX_PEM_FILE_SIZE + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > MAX_PEM_FILE_SIZE {
        return Err(TlsError::Invalid {
            path: path.to_owned(),
            reason: format!("larger than {MAX_PEM_FILE_SIZE} bytes"),
        });
    }
    Ok(out)
}

fn load_ca(path: &Path) -> Result<X509, TlsError> {
    let pem = read_pem(path)?;
    X509::from_pem(&pem)
        .map_err(|e| TlsError::Invalid { path: path.to_owned(), reason: format!("not a PEM certificate: {e}") })
}

/// What both sides set up alike: TLS 1.3 only, this party's key and certificate (checked to match), and a
/// verification store holding the cluster CA alone — never the system roots. Returns the CA.
fn configure(b: &mut SslContextBuilder, files: &TlsFiles) -> Result<X509, TlsError> {
    let ca = load_ca(&files.ca)?;
    b.set_min_proto_version(Some(SslVersion::TLS1_3))?;
    b.set_private_key_file(&files.key, SslFiletype::PEM)
        .map_err(|e| TlsError::Invalid { path: files.key.clone(), reason: format!("not a PEM private key: {e}") })?;
    b.set_certificate_chain_file(&files.cert)
        .map_err(|e| TlsError::Invalid { path: files.cert.clone(), reason: format!("not a PEM certificate: {e}") })?;
    b.check_private_key().map_err(|_| TlsError::Invalid {
        path: files.key.clone(),
        reason: "the key does not belong to the certificate".into(),
    })?;
    let mut store = X509StoreBuilder::new()?;
    store.add_cert(ca.clone())?;
    b.set_verify_cert_store(store.build())?;
    Ok(ca)
}

/// The certificate's CommonName, if it has exactly one.
fn common_name(cert: &X509Ref) -> Option<String> {
    let mut entries = cert.subject_name().entries_by_nid(Nid::COMMONNAME);
    let first = entries.next()?;
    if entries.next().is_some() {
        return None;
    }
    std::str::from_utf8(first.data().as_slice()).ok().map(str::to_owned)
}

// ---------------------------------------------------------------------------------------------------------------
// Server side.

/// The key service's TLS acceptor: TLS 1.3 only, ALPN `h2`, client certificates required, verified against the
/// cluster CA alone for the TLS-client purpose, and the caller's name checked against an allow-list.
pub struct KmsAcceptor {
    acceptor: SslAcceptor,
    allowed: Vec<String>,
}

impl std::fmt::Debug for KmsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsAcceptor").field("allowed", &self.allowed).finish_non_exhaustive()
    }
}

/// Who called over an accepted connection (handed to every call as its [`PeerInfo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KmsCaller {
    /// The client certificate's CommonName.
    pub name: String,
}

impl KmsAcceptor {
    /// An acceptor with the key service's `files`, admitting client certificates of the CA in `files.ca`
    /// whose CommonName is one of `allowed` (empty: [`JOIN_SERVICE_CLIENT_NAME`] only).
    pub fn new(files: &TlsFiles, allowed: &[String]) -> Result<KmsAcceptor, TlsError> {
        let mut b = SslAcceptor::mozilla_modern_v5(SslMethod::tls_server())?;
        let ca = configure(&mut b, files)?;
        b.verify_param_mut().set_purpose(X509PurposeId::SSL_CLIENT)?;
        b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        let mut names = openssl::stack::Stack::new()?;
        names.push(ca.subject_name().to_owned()?)?;
        b.set_client_ca_list(names);
        b.set_alpn_select_callback(|_, client| select_next_proto(ALPN_H2_WIRE, client).ok_or(AlpnError::ALERT_FATAL));
        // No resumption: every connection presents and verifies its certificate.
        b.set_session_cache_mode(openssl::ssl::SslSessionCacheMode::OFF);
        b.set_options(openssl::ssl::SslOptions::NO_TICKET);
        let allowed = if allowed.is_empty() { vec![JOIN_SERVICE_CLIENT_NAME.to_owned()] } else { allowed.to_vec() };
        Ok(KmsAcceptor { acceptor: b.build(), allowed })
    }

    /// The names that may call.
    pub fn allowed(&self) -> &[String] {
        &self.allowed
    }

    /// Runs the server handshake on `tcp`; returns the TLS stream and the verified caller.
    pub async fn accept<S>(&self, tcp: S) -> Result<(tokio_openssl::SslStream<S>, KmsCaller), TlsError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let ssl = openssl::ssl::Ssl::new(self.acceptor.context())?;
        let mut tls = tokio_openssl::SslStream::new(ssl, tcp)?;
        Pin::new(&mut tls).accept().await.map_err(|e| TlsError::Handshake(e.to_string()))?;
        if tls.ssl().selected_alpn_protocol() != Some(ALPN_H2) {
            return Err(TlsError::NoAlpn);
        }
        let cert = tls.ssl().peer_certificate().ok_or_else(|| TlsError::Handshake("no client certificate".into()))?;
        let name = common_name(&cert).unwrap_or_else(|| "<none>".to_owned());
        if !self.allowed.contains(&name) {
            return Err(TlsError::CallerNotAllowed { name });
        }
        Ok((tls, KmsCaller { name }))
    }
}

/// ALPN wire form of `h2`.
const ALPN_H2_WIRE: &[u8] = b"\x02h2";

/// Serves `server`'s routes (the key service) over mutual TLS on `listener` until the server shuts down. A
/// failed handshake or a caller that may not call closes that connection only (logged at warn: every refused
/// caller is worth a line). Returns the local address.
pub fn serve(server: &Server, listener: TcpListener, acceptor: Arc<KmsAcceptor>) -> std::io::Result<SocketAddr> {
    server.serve_with(listener, move |tcp: Counted<TcpStream>| {
        let acceptor = Arc::clone(&acceptor);
        async move {
            let peer = tcp.peer_addr().ok();
            match acceptor.accept(tcp).await {
                Ok((tls, caller)) => {
                    tracing::debug!(caller = %caller.name, ?peer, "kms: mutual TLS connection accepted");
                    Ok((tls, Some(Arc::new(caller) as PeerInfo)))
                }
                Err(e) => {
                    tracing::warn!(?peer, error = %e, outcome = "refused", "kms: connection refused");
                    Err(e)
                }
            }
        }
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Client side.

/// The join service's side: TLS 1.3 to the key service with its client certificate, the server verified
/// against the cluster CA alone and for the name [`KEY_SERVICE_NAME`] (or another given name).
pub struct KmsConnector {
    connector: SslConnector,
    server_name: String,
}

impl std::fmt::Debug for KmsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsConnector").field("server_name", &self.server_name).finish_non_exhaustive()
    }
}

impl KmsConnector {
    /// A connector presenting `files.cert` / `files.key` and trusting only `files.ca`, verifying the server's
    /// certificate for `server_name` (DNS SAN).
    pub fn new(files: &TlsFiles, server_name: &str) -> Result<KmsConnector, TlsError> {
        let mut b = SslConnector::builder(SslMethod::tls_client())?;
        configure(&mut b, files)?;
        b.set_verify(SslVerifyMode::PEER);
        b.set_alpn_protos(ALPN_H2_WIRE)?;
        Ok(KmsConnector { connector: b.build(), server_name: server_name.to_owned() })
    }

    /// Connects to `addr` (TCP within `config.connect_timeout`), runs the TLS handshake and speaks gRPC on it.
    pub async fn connect(&self, addr: SocketAddr, config: ChannelConfig) -> Result<Channel, Status> {
        let timeout = config.connect_timeout;
        let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Status::unavailable(format!("connect to {addr}: timed out")))?
            .map_err(|e| Status::unavailable(format!("connect to {addr}: {e}")))?;
        let _ = tcp.set_nodelay(true);
        let mut cfg = self.connector.configure().map_err(|e| Status::internal(format!("TLS set-up: {e}")))?;
        cfg.set_verify_hostname(false);
        let param = cfg.param_mut();
        param.set_hostflags(X509CheckFlags::NO_PARTIAL_WILDCARDS);
        param.set_host(&self.server_name).map_err(|e| Status::internal(format!("TLS set-up: {e}")))?;
        let ssl = cfg.into_ssl(&self.server_name).map_err(|e| Status::internal(format!("TLS set-up: {e}")))?;
        let mut tls =
            tokio_openssl::SslStream::new(ssl, tcp).map_err(|e| Status::internal(format!("TLS set-up: {e}")))?;
        tokio::time::timeout(timeout, Pin::new(&mut tls).connect())
            .await
            .map_err(|_| Status::unavailable(format!("TLS handshake with {addr}: timed out")))?
            .map_err(|e| Status::unavailable(format!("TLS handshake with the key service at {addr}: {e}")))?;
        if tls.ssl().selected_alpn_protocol() != Some(ALPN_H2) {
            return Err(Status::unavailable("the key service did not negotiate HTTP/2"));
        }
        Channel::handshake(tls, &self.server_name, config).await
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The PKI.

fn p256_key() -> Result<PKey<Private>, openssl::error::ErrorStack> {
    PKey::from_ec_key(EcKey::generate(EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?.as_ref())?)
}

fn serial() -> Result<openssl::asn1::Asn1Integer, openssl::error::ErrorStack> {
    let mut bn = BigNum::new()?;
    bn.rand(127, MsbOption::MAYBE_ZERO, false)?;
    bn.to_asn1_integer()
}

fn name(common_name: &str) -> Result<openssl::x509::X509Name, openssl::error::ErrorStack> {
    let mut n = X509NameBuilder::new()?;
    n.append_entry_by_nid(Nid::ORGANIZATIONNAME, "attest")?;
    n.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
    Ok(n.build())
}

/// The role of a certificate the key-service CA issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertRole {
    /// A TLS server (the key service).
    Server,
    /// A TLS client (a caller of the key service).
    Client,
}

/// A generated CA: certificate and key.
pub struct KmsCa {
    /// The CA certificate.
    pub cert: X509,
    key: PKey<Private>,
}

impl std::fmt::Debug for KmsCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsCa").field("subject", &common_name(&self.cert)).finish_non_exhaustive()
    }
}

impl KmsCa {
    /// A fresh self-signed CA named `common_name`.
    pub fn generate(common_name: &str) -> Result<KmsCa, TlsError> {
        let key = p256_key()?;
        let mut b = X509::builder()?;
        b.set_version(2)?;
        let serial = serial()?;
        b.set_serial_number(&serial)?;
        let n = name(common_name)?;
        b.set_subject_name(&n)?;
        b.set_issuer_name(&n)?;
        b.set_pubkey(&key)?;
        let (not_before, not_after) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(CERT_VALIDITY_DAYS)?);
        b.set_not_before(&not_before)?;
        b.set_not_after(&not_after)?;
        b.append_extension(BasicConstraints::new().critical().ca().pathlen(0).build()?)?;
        b.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().build()?)?;
        let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
        b.append_extension(ski)?;
        b.sign(&key, MessageDigest::sha256())?;
        Ok(KmsCa { cert: b.build(), key })
    }

    /// Loads a CA written by [`generate_pki`] (`ca.crt`, `ca.key`).
    pub fn load(dir: &Path) -> Result<KmsCa, TlsError> {
        let cert = load_ca(&dir.join(files::CA_CERT))?;
        let key_path = dir.join(files::CA_KEY);
        let key = PKey::private_key_from_pem(&read_pem(&key_path)?)
            .map_err(|e| TlsError::Invalid { path: key_path.clone(), reason: format!("not a PEM private key: {e}") })?;
        if !cert.public_key().is_ok_and(|p| p.public_eq(&key)) {
            return Err(TlsError::Invalid { path: key_path, reason: "the key does not belong to ca.crt".into() });
        }
        Ok(KmsCa { cert, key })
    }

    /// Issues a certificate for `common_name` (also its DNS SAN, with `extra_dns`) in `role`; returns it with
    /// its fresh key.
    pub fn issue(
        &self,
        common_name: &str,
        extra_dns: &[&str],
        role: CertRole,
    ) -> Result<(X509, PKey<Private>), TlsError> {
        let key = p256_key()?;
        let mut b = X509::builder()?;
        b.set_version(2)?;
        let serial = serial()?;
        b.set_serial_number(&serial)?;
        let subject = name(common_name)?;
        b.set_subject_name(&subject)?;
        b.set_issuer_name(self.cert.subject_name())?;
        b.set_pubkey(&key)?;
        let (not_before, not_after) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(CERT_VALIDITY_DAYS)?);
        b.set_not_before(&not_before)?;
        b.set_not_after(&not_after)?;
        b.append_extension(BasicConstraints::new().critical().build()?)?;
        b.append_extension(KeyUsage::new().critical().digital_signature().build()?)?;
        let mut eku = ExtendedKeyUsage::new();
        match role {
            CertRole::Server => eku.server_auth(),
            CertRole::Client => eku.client_auth(),
        };
        b.append_extension(eku.build()?)?;
        let mut san = SubjectAlternativeName::new();
        san.dns(common_name);
        for d in extra_dns {
            san.dns(d);
        }
        let san = san.build(&b.x509v3_context(Some(&self.cert), None))?;
        b.append_extension(san)?;
        let aki = AuthorityKeyIdentifier::new().keyid(true).build(&b.x509v3_context(Some(&self.cert), None))?;
        b.append_extension(aki)?;
        b.sign(&self.key, MessageDigest::sha256())?;
        Ok((b.build(), key))
    }
}

/// What [`generate_pki`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PkiOutcome {
    /// A new CA and certificates were written.
    Created,
    /// The directory already held a complete PKI; nothing was written.
    Existing,
}

fn write(path: &Path, data: &[u8], mode: u32) -> Result<(), TlsError> {
    attest_util::fs::write_atomic(path, data, mode).map_err(|e| TlsError::Io { path: e.path, source: e.source })
}

/// Creates the key-service PKI in `dir` (see the [module docs](self)) unless it already holds one: a CA, the
/// key service's server certificate (DNS names [`KEY_SERVICE_NAME`] and its in-cluster forms) and the join
/// service's client certificate ([`JOIN_SERVICE_CLIENT_NAME`]). Keys are written 0600, certificates 0644. A
/// directory with some but not all of the files is refused (it is someone's half-made PKI).
pub fn generate_pki(dir: &Path) -> Result<PkiOutcome, TlsError> {
    let all =
        [files::CA_CERT, files::CA_KEY, files::SERVER_CERT, files::SERVER_KEY, files::CLIENT_CERT, files::CLIENT_KEY];
    let present = all.iter().filter(|f| dir.join(f).exists()).count();
    if present == all.len() {
        return Ok(PkiOutcome::Existing);
    }
    if present != 0 {
        return Err(TlsError::Invalid {
            path: dir.to_owned(),
            reason: format!("holds {present} of the {} key-service PKI files; complete or remove it", all.len()),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Io { path: dir.to_owned(), source })?;
    let ca = KmsCa::generate("attest key-service CA")?;
    let in_cluster =
        [format!("{KEY_SERVICE_NAME}.kube-system.svc"), format!("{KEY_SERVICE_NAME}.kube-system.svc.cluster.local")];
    let extra: Vec<&str> = in_cluster.iter().map(String::as_str).collect();
    let (server, server_key) = ca.issue(KEY_SERVICE_NAME, &extra, CertRole::Server)?;
    let (client, client_key) = ca.issue(JOIN_SERVICE_CLIENT_NAME, &[], CertRole::Client)?;
    use attest_util::fs::{PUBLIC_FILE_MODE, SECRET_FILE_MODE};
    // Keys first, the CA certificate last: a crash leaves an incomplete directory, which is refused above.
    write(&dir.join(files::CA_KEY), &ca.key.private_key_to_pem_pkcs8()?, SECRET_FILE_MODE)?;
    write(&dir.join(files::SERVER_KEY), &server_key.private_key_to_pem_pkcs8()?, SECRET_FILE_MODE)?;
    write(&dir.join(files::CLIENT_KEY), &client_key.private_key_to_pem_pkcs8()?, SECRET_FILE_MODE)?;
    write(&dir.join(files::SERVER_CERT), &server.to_pem()?, PUBLIC_FILE_MODE)?;
    write(&dir.join(files::CLIENT_CERT), &client.to_pem()?, PUBLIC_FILE_MODE)?;
    write(&dir.join(files::CA_CERT), &ca.cert.to_pem()?, PUBLIC_FILE_MODE)?;
    Ok(PkiOutcome::Created)
}
