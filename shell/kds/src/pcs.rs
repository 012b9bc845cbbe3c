//! Intel PCS collateral supply for TDX verification: TCB Info, QE Identity, PCK CRL and root CA CRL, with
//! the issuer chains Intel sends in response headers — from the on-disk store first, Intel's Provisioning
//! Certification Service (PCS) second, and fully offline from a pre-filled store.
//!
//! ```text
//!  collateral(fmspc, ca) ──► store: the four objects (and their chains) ──vet the set──► fresh? ──► use
//!        │ absent, wrong or stale                                                          │ stale
//!        ▼                                                                                 │
//!  per object: negative cache (404) ─► single-flight[key] ─► GET (shared gate: 429 + Retry-After,
//!        back-off, timeouts, size limit) ─► issuer-chain header, URL-decoded
//!        ▼
//!  vet the set (the engine: both JSON signatures under the TCB Signing key, every chain to the pinned
//!  Intel SGX Root CA, CRL signatures, FMSPC and PCK CA as requested) ─► atomic store writes ─► use
//!        │ network down: the stale stored set, marked not fresh (the engine refuses it at verification)
//! ```
//!
//! | object ([`PcsKey`]) | request (PCS API v4) | issuer-chain header |
//! |---|---|---|
//! | TCB Info for an FMSPC | `GET {pcs}/tdx/certification/v4/tcb?fmspc=<hex>` | `TCB-Info-Issuer-Chain` |
//! | QE Identity (TD_QE) | `GET {pcs}/tdx/certification/v4/qe/identity` | `SGX-Enclave-Identity-Issuer-Chain` |
//! | PCK CRL | `GET {pcs}/sgx/certification/v4/pckcrl?ca=platform\|processor&encoding=der` | `SGX-PCK-CRL-Issuer-Chain` |
//! | root CA CRL | `GET {certs}/IntelSGXRootCA.der` (the root certificate's CRL distribution point) | — |
//!
//! "Vet" is the engine's [`TdxVerifier::set_collateral`] on the assembled [`Collateral::from_pcs`], which
//! checks signatures and chains once and independently of time; time windows are reported
//! ([`CollateralInfo`]) and judged again by the engine at every verification. Objects are stored only when
//! the whole set verified, so a wrong, truncated or mis-chained response is never stored; nothing read
//! from the store is used before it verified again. Store layout: [`Store::pcs_path`].
//!
//! Plain `http://` base URLs are accepted (mirrors, tests): integrity rests on Intel's signatures and the
//! pinned root, not on TLS.

use super::error::KdsError;
use super::flight::{Flights, NegativeCache};
use super::http::{Http, HttpOptions};
use super::store::Store;
use super::{Clock, Source};
use attest_engine::crypto::{CryptoProvider, default_provider};
use attest_engine::tdx::collateral::MAX_ISSUER_CHAIN_CERTS;
use attest_engine::tdx::{Collateral, CollateralInfo, PcsResponses, SgxExtensions, TdQuote, TdxVerifier};
use attest_engine::x509::Certificate;
use attest_engine::x509::pem::certificates_from_pem_or_der;
use http::header::HeaderName;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Intel's Provisioning Certification Service.
pub const DEFAULT_PCS_BASE_URL: &str = "https://api.trustedservices.intel.com";
/// Where Intel publishes the SGX Root CA's CRL (the root certificate's CRL distribution point host).
pub const DEFAULT_INTEL_CERTS_URL: &str = "https://certificates.trustedservices.intel.com";

/// The CA that issues a platform's PCK certificates, and so signs its PCK CRL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PckCa {
    /// "Intel SGX PCK Platform CA" (multi-package platforms; every TDX quote in the testdata).
    Platform,
    /// "Intel SGX PCK Processor CA".
    Processor,
}

impl PckCa {
    /// Both CAs.
    pub const ALL: [PckCa; 2] = [PckCa::Platform, PckCa::Processor];

    /// The `ca=` value PCS takes: `platform` or `processor`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Platform => "platform",
            Self::Processor => "processor",
        }
    }

    /// Parses [`Self::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The CA certificate's common name.
    pub fn common_name(self) -> &'static str {
        match self {
            Self::Platform => "Intel SGX PCK Platform CA",
            Self::Processor => "Intel SGX PCK Processor CA",
        }
    }

    fn from_common_name(cn: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.common_name() == cn)
    }
}

impl fmt::Display for PckCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a TD quote needs from PCS: its platform's FMSPC and the CA of its PCK certificate, read from the
/// quote's PCK chain (structure only: the quote is verified later, by the engine, against what is fetched).
pub fn quote_platform(quote: &[u8]) -> Result<([u8; 6], PckCa), KdsError> {
    let bad = |error| KdsError::Verification { object: "TD quote", error };
    let q = TdQuote::parse_prefix(quote).map_err(bad)?;
    let certs = certificates_from_pem_or_der(q.pck_chain_pem()).map_err(bad)?;
    let leaf = certs.first().ok_or(KdsError::PcsResponse { object: "TD quote", reason: "no PCK certificate" })?;
    let leaf = Certificate::from_der(leaf).map_err(bad)?;
    let ext = SgxExtensions::from_cert(&leaf).map_err(bad)?;
    let ca = leaf.issuer().common_name().and_then(PckCa::from_common_name).ok_or(KdsError::PcsResponse {
        object: "TD quote",
        reason: "the PCK certificate's issuer is no Intel PCK CA",
    })?;
    Ok((ext.fmspc, ca))
}

/// One PCS object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PcsKey {
    /// The TDX TCB Info of a platform (FMSPC).
    TcbInfo([u8; 6]),
    /// The TD quoting enclave's identity.
    QeIdentity,
    /// A PCK CA's CRL.
    PckCrl(PckCa),
    /// The Intel SGX Root CA's CRL.
    RootCaCrl,
}

impl PcsKey {
    /// The object's name in messages.
    pub fn object(self) -> &'static str {
        match self {
            Self::TcbInfo(_) => "TCB Info",
            Self::QeIdentity => "QE Identity",
            Self::PckCrl(_) => "PCK CRL",
            Self::RootCaCrl => "root CA CRL",
        }
    }

    /// The request path and query below its host's base URL (see the module table).
    pub fn pcs_path(self) -> String {
        match self {
            Self::TcbInfo(fmspc) => format!("/tdx/certification/v4/tcb?fmspc={}", hex::encode(fmspc)),
            Self::QeIdentity => "/tdx/certification/v4/qe/identity".to_owned(),
            Self::PckCrl(ca) => format!("/sgx/certification/v4/pckcrl?ca={}&encoding=der", ca.name()),
            Self::RootCaCrl => "/IntelSGXRootCA.der".to_owned(),
        }
    }

    /// The response header carrying the object's issuer chain (URL-encoded PEM), if it has one.
    pub fn issuer_chain_header(self) -> Option<&'static str> {
        match self {
            Self::TcbInfo(_) => Some("TCB-Info-Issuer-Chain"),
            Self::QeIdentity => Some("SGX-Enclave-Identity-Issuer-Chain"),
            Self::PckCrl(_) => Some("SGX-PCK-CRL-Issuer-Chain"),
            Self::RootCaCrl => None,
        }
    }
}

impl fmt::Display for PcsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TcbInfo(fmspc) => write!(f, "TCB Info fmspc={}", hex::encode(fmspc)),
            Self::PckCrl(ca) => write!(f, "PCK CRL ca={ca}"),
            other => f.write_str(other.object()),
        }
    }
}

impl Store {
    /// Where a PCS object lives in the store (below the same root as the AMD objects, which use product
    /// directories):
    ///
    /// ```text
    /// <root>/tdx/tcb/<fmspc-hex>.json          PCS body of the TCB Info ({"tcbInfo":…,"signature":…}), as received
    /// <root>/tdx/qe-identity.json              PCS body of the QE Identity
    /// <root>/sgx/pckcrl-<platform|processor>.der   the PCK CRL (DER)
    /// <root>/sgx/root-ca-crl.der               the Intel SGX Root CA CRL (DER)
    /// <path>.issuer-chain.pem                  the URL-decoded issuer-chain header of each object that has one
    /// ```
    ///
    /// A chain is written before its body; a torn pair (a crash between the two writes) does not verify as
    /// a set and is fetched again, never used.
    pub fn pcs_path(&self, key: PcsKey) -> PathBuf {
        match key {
            PcsKey::TcbInfo(fmspc) => self.root().join("tdx").join("tcb").join(format!("{}.json", hex::encode(fmspc))),
            PcsKey::QeIdentity => self.root().join("tdx").join("qe-identity.json"),
            PcsKey::PckCrl(ca) => self.root().join("sgx").join(format!("pckcrl-{}.der", ca.name())),
            PcsKey::RootCaCrl => self.root().join("sgx").join("root-ca-crl.der"),
        }
    }

    /// Where the issuer chain of a PCS object lives (`None` for the root CA CRL, which has none).
    pub fn pcs_chain_path(&self, key: PcsKey) -> Option<PathBuf> {
        key.issuer_chain_header()?;
        let mut p = self.pcs_path(key).into_os_string();
        p.push(".issuer-chain.pem");
        Some(PathBuf::from(p))
    }
}

/// Configuration of a [`Pcs`] supply.
#[derive(Clone, Debug)]
pub struct PcsConfig {
    /// The store directory (`None`: no disk store).
    pub store: Option<PathBuf>,
    /// The PCS base URL (`None`: offline, the store only).
    pub base_url: Option<String>,
    /// The base URL the root CA CRL is fetched from (`None`: the store only).
    pub certs_url: Option<String>,
    /// Certificates (DER) the TLS client trusts besides the system's (a mirror's CA; tests).
    pub tls_roots: Vec<Vec<u8>>,
    /// Most upstream requests in flight at once, per host.
    pub max_concurrent_requests: usize,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Timeout until the response head has arrived.
    pub request_timeout: Duration,
    /// Timeout for reading the whole body.
    pub body_timeout: Duration,
    /// Attempts per request (first try included) for 429, 5xx, timeouts and broken connections.
    pub max_attempts: u32,
    /// First back-off delay (doubled per attempt, with jitter).
    pub initial_backoff: Duration,
    /// Largest back-off delay.
    pub max_backoff: Duration,
    /// Longest Retry-After honoured by waiting; a longer one fails the request at once.
    pub max_retry_after: Duration,
    /// How long a 404 is remembered.
    pub negative_ttl: Duration,
    /// Largest response body accepted (the engine accepts collateral documents up to 1 MiB).
    pub max_response_size: usize,
    /// The crypto provider for vetting.
    pub provider: &'static CryptoProvider,
    /// A root to vet against instead of Intel's pinned SGX Root CA — for a test PKI only.
    pub dangerous_root_ca: Option<Vec<u8>>,
    /// The clock.
    pub clock: Clock,
}

impl Default for PcsConfig {
    fn default() -> Self {
        Self {
            store: None,
            base_url: Some(DEFAULT_PCS_BASE_URL.to_owned()),
            certs_url: Some(DEFAULT_INTEL_CERTS_URL.to_owned()),
            tls_roots: Vec::new(),
            max_concurrent_requests: 4,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            max_attempts: 4,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(300),
            max_response_size: attest_engine::tdx::collateral::MAX_COLLATERAL_SIZE,
            provider: default_provider(),
            dangerous_root_ca: None,
            clock: Clock::system(),
        }
    }
}

impl PcsConfig {
    fn http_options(&self) -> HttpOptions<'_> {
        HttpOptions {
            max_concurrent_requests: self.max_concurrent_requests,
            connect_timeout: self.connect_timeout,
            request_timeout: self.request_timeout,
            body_timeout: self.body_timeout,
            max_attempts: self.max_attempts,
            initial_backoff: self.initial_backoff,
            max_backoff: self.max_backoff,
            max_retry_after: self.max_retry_after,
            max_response_size: self.max_response_size,
            tls_roots: &self.tls_roots,
        }
    }
}

/// A verified collateral set for one platform.
#[derive(Clone, Debug)]
pub struct PcsCollateral {
    /// The collateral, ready for [`TdxVerifier::set_collateral`] or [`Collateral::to_bundle_json`].
    pub collateral: Collateral,
    /// What it covers and its validity window (the latest start and the earliest end of its parts).
    pub info: CollateralInfo,
    /// [`Source::Store`] when every object came from the store, else [`Source::Pcs`].
    pub source: Source,
    /// Whether the clock's now lies in the validity window. A set that is not fresh is returned only when
    /// nothing fresher could be obtained (offline, PCS down); the engine refuses it at verification. (A
    /// [`Pcs::refresh`] that could not reach PCS may return a stored set that is still fresh.)
    pub fresh: bool,
}

/// One object's bytes: the body and, where the object has one, its issuer chain (PEM).
type Object = (Vec<u8>, Option<Vec<u8>>);
type FlightResult = Result<Object, KdsError>;

struct Inner {
    store: Option<Store>,
    pcs: Option<Http>,
    certs: Option<Http>,
    flights: Flights<PcsKey, FlightResult>,
    negative: NegativeCache<PcsKey>,
    provider: &'static CryptoProvider,
    root: Option<Vec<u8>>,
    clock: Clock,
}

/// The Intel PCS collateral supply. Cheap to clone; clones share the store, the HTTP clients and the
/// single-flight table. Must be used inside a tokio runtime.
#[derive(Clone)]
pub struct Pcs {
    inner: Arc<Inner>,
}

impl fmt::Debug for Pcs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pcs")
            .field("store", &self.inner.store.as_ref().map(Store::root))
            .field("online", &self.inner.pcs.is_some())
            .finish_non_exhaustive()
    }
}

impl Pcs {
    /// A supply with `config`.
    pub fn new(config: PcsConfig) -> Result<Self, KdsError> {
        let store = config.store.as_ref().map(Store::open).transpose()?;
        let options = config.http_options();
        let pcs = config.base_url.as_deref().map(|u| Http::new(u, &options)).transpose()?;
        let certs = config.certs_url.as_deref().map(|u| Http::new(u, &options)).transpose()?;
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                pcs,
                certs,
                flights: Flights::new(),
                negative: NegativeCache::new(config.negative_ttl),
                provider: config.provider,
                root: config.dangerous_root_ca,
                clock: config.clock,
            }),
        })
    }

    /// The store, when configured.
    pub fn store(&self) -> Option<&Store> {
        self.inner.store.as_ref()
    }

    /// Requests sent upstream so far (each attempt counts), both hosts.
    pub fn upstream_requests(&self) -> u64 {
        self.inner.pcs.as_ref().map_or(0, Http::requests) + self.inner.certs.as_ref().map_or(0, Http::requests)
    }

    /// The verified collateral for the platform `fmspc` whose PCK certificates `ca` issues: the stored set
    /// when it verifies and is fresh; else the four objects from PCS, vetted as a set and then stored; else
    /// (PCS unreachable or refusing) a stored set that verifies but is no longer fresh.
    pub async fn collateral(&self, fmspc: [u8; 6], ca: PckCa) -> Result<PcsCollateral, KdsError> {
        self.obtain(fmspc, ca, Duration::ZERO).await
    }

    /// As [`Self::collateral`], but a stored set counts as fresh only if it stays valid for `margin` more:
    /// what a service calls ahead of the collateral's nextUpdate, so that PCS is asked before the installed
    /// set expires (PCS publishes the next set well before; [`PcsCollateral::fresh`] still means "valid now").
    pub async fn refresh(&self, fmspc: [u8; 6], ca: PckCa, margin: Duration) -> Result<PcsCollateral, KdsError> {
        self.obtain(fmspc, ca, margin).await
    }

    async fn obtain(&self, fmspc: [u8; 6], ca: PckCa, margin: Duration) -> Result<PcsCollateral, KdsError> {
        let keys = [PcsKey::TcbInfo(fmspc), PcsKey::QeIdentity, PcsKey::PckCrl(ca), PcsKey::RootCaCrl];
        let mut stale = None;
        if let Some(set) = self.stored_set(&keys) {
            match self.vet_set(&set, fmspc, ca) {
                Ok((collateral, info)) if self.is_fresh(&info) && self.lasts(&info, margin) => {
                    return Ok(PcsCollateral { collateral, info, source: Source::Store, fresh: true });
                }
                Ok(valid) => stale = Some(valid),
                Err(e) => {
                    tracing::warn!(%ca, fmspc = %hex::encode(fmspc), error = %e, "ignoring stored TDX collateral that does not verify");
                }
            }
        }
        let (tcb, qe, pck_crl, root_crl) =
            tokio::join!(self.fetch(keys[0]), self.fetch(keys[1]), self.fetch(keys[2]), self.fetch(keys[3]));
        let fetched = match (tcb, qe, pck_crl, root_crl) {
            (Ok(tcb), Ok(qe), Ok(pck_crl), Ok(root_crl)) => [tcb, qe, pck_crl, root_crl],
            failed => {
                let first = [failed.0.err(), failed.1.err(), failed.2.err(), failed.3.err()];
                let error = first.into_iter().flatten().next().unwrap_or(KdsError::Offline);
                return match stale {
                    Some((collateral, info)) => {
                        let fresh = self.is_fresh(&info);
                        tracing::warn!(%error, fresh, "PCS unavailable: using the stored TDX collateral");
                        Ok(PcsCollateral { collateral, info, source: Source::Store, fresh })
                    }
                    None => Err(error),
                };
            }
        };
        let (collateral, info) = self.vet_set(&fetched, fmspc, ca)?;
        // Keep what the store has if it is newer (a mirror serving old data must not roll the store back).
        if stale.as_ref().is_none_or(|(_, old)| old.expires <= info.expires) {
            for (key, object) in keys.into_iter().zip(&fetched) {
                self.persist(key, object).await;
            }
        }
        let fresh = self.is_fresh(&info);
        Ok(PcsCollateral { collateral, info, source: Source::Pcs, fresh })
    }

    fn is_fresh(&self, info: &CollateralInfo) -> bool {
        let now = self.inner.clock.now();
        info.valid_from <= now && now <= info.expires
    }

    /// Whether `info` stays valid `margin` past now.
    fn lasts(&self, info: &CollateralInfo, margin: Duration) -> bool {
        let until = self.inner.clock.now().as_secs().saturating_add(margin.as_secs());
        info.expires.as_secs() >= until
    }

    /// The four objects from the store, when all are there (with their chains).
    fn stored_set(&self, keys: &[PcsKey; 4]) -> Option<[Object; 4]> {
        let store = self.inner.store.as_ref()?;
        let read = |key: PcsKey| -> Option<Object> {
            let read_one = |path: &std::path::Path| match store.read(path) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(error = %e, "store read failed");
                    None
                }
            };
            let body = read_one(&store.pcs_path(key))?;
            let chain = match store.pcs_chain_path(key) {
                Some(p) => Some(read_one(&p)?),
                None => None,
            };
            Some((body, chain))
        };
        Some([read(keys[0])?, read(keys[1])?, read(keys[2])?, read(keys[3])?])
    }

    /// Assembles the set and has the engine verify it; then checks it is for the FMSPC and CA asked for.
    fn vet_set(&self, set: &[Object; 4], fmspc: [u8; 6], ca: PckCa) -> Result<(Collateral, CollateralInfo), KdsError> {
        let verification = |error| KdsError::Verification { object: "TDX collateral", error };
        let chain = |o: &Object| o.1.clone().unwrap_or_default();
        let (tcb_chain, qe_chain, crl_chain) = (chain(&set[0]), chain(&set[1]), chain(&set[2]));
        let collateral = Collateral::from_pcs(&PcsResponses {
            tcb_info: &set[0].0,
            tcb_info_issuer_chain: &tcb_chain,
            qe_identity: &set[1].0,
            qe_identity_issuer_chain: &qe_chain,
            pck_crl: Some(&set[2].0),
            pck_crl_issuer_chain: &crl_chain,
            root_ca_crl: Some(&set[3].0),
        })
        .map_err(verification)?;
        let verifier = match &self.inner.root {
            Some(root) => TdxVerifier::dangerous_with_root(self.inner.provider, root.clone()),
            None => TdxVerifier::with_provider(self.inner.provider),
        };
        let info = verifier.set_collateral(&collateral).map_err(verification)?;
        if info.fmspc != fmspc {
            return Err(KdsError::PcsResponse { object: "TCB Info", reason: "it is for another FMSPC" });
        }
        let issuer = collateral
            .pck_crl_issuer_chain
            .first()
            .and_then(|der| Certificate::from_der(der).ok())
            .and_then(|c| c.subject().common_name().and_then(PckCa::from_common_name));
        if issuer != Some(ca) {
            return Err(KdsError::PcsResponse { object: "PCK CRL", reason: "it is not the requested PCK CA's" });
        }
        Ok((collateral, info))
    }

    /// One object from PCS, single-flight per key; 404s are remembered for the negative TTL.
    async fn fetch(&self, key: PcsKey) -> FlightResult {
        if self.inner.negative.contains(&key) {
            return Err(KdsError::NotFound);
        }
        let this = self.clone();
        self.inner.flights.run(&key, move || async move { this.download(key).await }).await
    }

    async fn download(&self, key: PcsKey) -> FlightResult {
        let http = match key {
            PcsKey::RootCaCrl => self.inner.certs.as_ref(),
            _ => self.inner.pcs.as_ref(),
        }
        .ok_or(KdsError::Offline)?;
        // `from_bytes` lower-cases the name (header names compare case-insensitively).
        let header = key.issuer_chain_header().and_then(|n| HeaderName::from_bytes(n.as_bytes()).ok());
        tracing::debug!(%key, "fetching from Intel PCS");
        let (body, value) = match http.get_with_header(&key.pcs_path(), header.as_ref()).await {
            Err(KdsError::NotFound) => {
                self.inner.negative.insert(key);
                return Err(KdsError::NotFound);
            }
            other => other?,
        };
        let chain = if header.is_some() {
            let value = value.ok_or(KdsError::PcsResponse {
                object: key.object(),
                reason: "the response has no issuer-chain header",
            })?;
            Some(decode_issuer_chain(&value, key.object())?)
        } else {
            None
        };
        Ok((body, chain))
    }

    /// Writes a vetted object (chain first, then body). A failed write is logged, not fatal.
    async fn persist(&self, key: PcsKey, object: &Object) {
        let Some(store) = self.inner.store.clone() else { return };
        let object = object.clone();
        let result = tokio::task::spawn_blocking(move || {
            if let (Some(path), Some(chain)) = (store.pcs_chain_path(key), &object.1) {
                store.write_atomic(&path, chain)?;
            }
            store.write_atomic(&store.pcs_path(key), &object.0)
        })
        .await;
        match result {
            Ok(Ok(())) => tracing::debug!(%key, "stored"),
            Ok(Err(e)) => tracing::warn!(%key, error = %e, "could not store"),
            Err(_) => tracing::warn!(%key, "store task failed"),
        }
    }
}

/// An issuer-chain header (RFC 3986 percent-encoded PEM, as PCS sends it) → PEM bytes holding 1 to
/// `MAX_ISSUER_CHAIN_CERTS` (the engine's limit, 4) certificates. Anything else is refused: a malformed escape, a value that decodes to
/// no certificate.
pub fn decode_issuer_chain(value: &str, object: &'static str) -> Result<Vec<u8>, KdsError> {
    let bad = |reason| KdsError::PcsResponse { object, reason };
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or(bad("a truncated %-escape in the issuer chain"))?;
                let s = std::str::from_utf8(hex).map_err(|_| bad("an invalid %-escape in the issuer chain"))?;
                out.push(u8::from_str_radix(s, 16).map_err(|_| bad("an invalid %-escape in the issuer chain"))?);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    let certs = certificates_from_pem_or_der(&out).map_err(|_| bad("the issuer chain is not PEM certificates"))?;
    match certs.len() {
        0 => Err(bad("the issuer chain holds no certificate")),
        n if n > MAX_ISSUER_CHAIN_CERTS => Err(KdsError::LimitExceeded {
            what: "certificates in an issuer chain",
            limit: MAX_ISSUER_CHAIN_CERTS,
            found: n,
        }),
        _ => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_pcs_requests() {
        let f = [0x50, 0x80, 0x6f, 0, 0, 0];
        assert_eq!(PcsKey::TcbInfo(f).pcs_path(), "/tdx/certification/v4/tcb?fmspc=50806f000000");
        assert_eq!(PcsKey::QeIdentity.pcs_path(), "/tdx/certification/v4/qe/identity");
        assert_eq!(
            PcsKey::PckCrl(PckCa::Processor).pcs_path(),
            "/sgx/certification/v4/pckcrl?ca=processor&encoding=der"
        );
        assert_eq!(PcsKey::RootCaCrl.pcs_path(), "/IntelSGXRootCA.der");
        assert_eq!(PcsKey::RootCaCrl.issuer_chain_header(), None);
        for ca in PckCa::ALL {
            assert_eq!(PckCa::from_name(ca.name()), Some(ca));
            assert_eq!(PckCa::from_common_name(ca.common_name()), Some(ca));
        }
        let h = HeaderName::from_bytes(b"TCB-Info-Issuer-Chain").unwrap();
        assert_eq!(h.as_str(), "tcb-info-issuer-chain");
    }

    #[test]
    fn issuer_chain_escapes() {
        assert!(matches!(decode_issuer_chain("%2", "x"), Err(KdsError::PcsResponse { .. })));
        assert!(matches!(decode_issuer_chain("%zz", "x"), Err(KdsError::PcsResponse { .. })));
        assert!(matches!(decode_issuer_chain("hello", "x"), Err(KdsError::PcsResponse { .. })));
        assert!(matches!(decode_issuer_chain("", "x"), Err(KdsError::PcsResponse { .. })));
    }

    #[test]
    fn store_layout() {
        let tmp = attest_test_support::TempDir::new("pcs-store");
        let store = Store::open(tmp.path().join("s")).unwrap();
        let root = store.root().to_owned();
        let f = [0, 0x11, 0x22, 0x33, 0x44, 0x55];
        assert_eq!(store.pcs_path(PcsKey::TcbInfo(f)), root.join("tdx/tcb/001122334455.json"));
        assert_eq!(
            store.pcs_chain_path(PcsKey::TcbInfo(f)).unwrap(),
            root.join("tdx/tcb/001122334455.json.issuer-chain.pem")
        );
        assert_eq!(store.pcs_path(PcsKey::PckCrl(PckCa::Platform)), root.join("sgx/pckcrl-platform.der"));
        assert_eq!(store.pcs_chain_path(PcsKey::RootCaCrl), None);
    }
}
