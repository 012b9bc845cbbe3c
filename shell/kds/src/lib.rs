//! # attest-kds
//!
//! AMD certificate supply for SEV-SNP verification: VCEKs, `cert_chain`s and CRLs from the evidence, an
//! on-disk store, and AMD's Key Distribution Service (KDS), in that order (`docs/ARCHITECTURE.md`, "Caching").
//! Intel TDX collateral (TCB Info, QE Identity, PCK and root CA CRLs) from Intel's PCS, with the same store,
//! HTTP stack, single-flight and back-off: [`Pcs`] (module `pcs`).
//!
//! **May depend on:** `attest-engine` (chain requests, certificate parsing), hyper's HTTP/1.1 client and
//! OpenSSL (TLS to the KDS), `attest-util`. **Must not depend on:** gRPC, aTLS or any service; it hands the engine bytes and
//! never verifies evidence itself.
//!
//! KDS allows about one VCEK request per 10 s per client address, answers 429 beyond that, and has outages;
//! verifiers that fetch per verification break. This module makes each certificate an upstream request at
//! most once per machine (the store), once per process at a time (single-flight), within a bounded number of
//! concurrent requests, honouring `Retry-After`, and works fully offline from a pre-filled store.
//!
//! ```text
//!  evidence certificates ──vet──► use (and write through to the store)
//!        │ absent or wrong
//!        ▼
//!  store  <root>/<Product>/…  ──read──vet──► use
//!        │ absent or wrong
//!        ▼
//!  negative cache (404 within TTL)? ──► NotFound
//!        ▼
//!  single-flight[key] ──► semaphore ──► KDS GET (timeouts, size limit, retries, Retry-After)
//!                                          │
//!                                          ▼
//!                            vet ──► atomic store write ──► every waiter gets the same result
//! ```
//!
//! "Vet" means the engine verified it for exactly the key it is used or stored under ([`vet`](self#vetting)):
//! a VCEK verifies to the pinned ARK at the current time and has the requested hwID and SPLs; a chain's ARK
//! is the pinned one; a CRL is signed by it. A wrong certificate is never returned, never stored.
//!
//! - Store layout and atomicity: [`Store`].
//! - Evidence formats: the certificates the evidence carries are read by the engine (the extended-report
//!   certificate table, `attest_engine::snp::CertTable`, and Azure's THIM JSON,
//!   `attest_engine::azure::parse_thim`) and handed to [`Kds::snp_certificates`] as
//!   `attest_engine::snp::CarriedCerts`.
//! - URLs: [`VcekKey::kds_path`], [`ChainKind::kds_path`], [`ChainKind::crl_path`].
//! - CRLs: [`Kds::crl_of`] returns a [`CrlStatus`] (fresh / stale / unavailable) and the caller's [`CrlPolicy`]
//!   decides; the default fails closed. [`CrlKeeper`] keeps a verifier's CRL set loaded at start and replaced
//!   before its nextUpdate.
//! - Simulated hardware: with the cargo feature `dangerous-test-roots` only, `test_roots` supplies the trust
//!   anchors of a generated test PKI (the demo and tests; never a release build).
//!
//! The base URL is configurable (default [`DEFAULT_BASE_URL`]; `None` means offline). Plain `http://` is
//! accepted (tests, mirrors): integrity does not rest on TLS, since everything is verified to AMD's pinned
//! roots before use. Certificate bytes are never logged, only keys and outcomes.
//!
//! # Vetting
//!
//! | object | checks |
//! |---|---|
//! | VCEK | `SnpVerifier::verify_chain_only` at the current time, VCEK role, product, then hwID and SPLs equal to the key's |
//! | VLEK | the same chain verification, VLEK role, product |
//! | cert_chain | intermediate then ARK; the ARK is the pinned one; the intermediate chains to it now and has AMD's name |
//! | CRL | signed by the product's pinned ARK; thisUpdate not in the future |

#![forbid(unsafe_code)]

mod crl;
mod error;
mod flight;
mod http;
mod key;
mod pcs;
mod revocation;
mod store;
#[cfg(feature = "dangerous-test-roots")]
pub mod test_roots;
mod vet;

pub use crl::{CrlPolicy, CrlStatus};
pub use error::{KdsError, Phase};
pub use flight::MAX_NEGATIVE_ENTRIES;
pub use http::{MAX_KEPT_HEADER, parse_retry_after};
pub use key::{ChainKind, HWID_LEN, HwId, TURIN_HWID_LEN, VcekKey, crl_path, hw_id_len};
pub use pcs::{
    DEFAULT_INTEL_CERTS_URL, DEFAULT_PCS_BASE_URL, PckCa, Pcs, PcsCollateral, PcsConfig, PcsKey, decode_issuer_chain,
    quote_platform,
};
pub use revocation::{
    CRL_REFRESH_MARGIN, CrlKeeper, CrlWanted, MAX_CRL_REFRESH_INTERVAL, MIN_CRL_REFRESH_INTERVAL, RevocationState,
};
pub use store::{MAX_STORED_FILE, Store};
pub use vet::CertChain;

use attest_engine::crypto::{CryptoProvider, default_provider};
use attest_engine::snp::{CarriedCerts, OwnedTrustAnchors, Product, Report, SigningKey, SnpRequest};
use attest_engine::x509::Certificate;
use attest_engine::{CertRole, UnixTime};
use flight::{Flights, NegativeCache};
use key::ObjectKey;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use vet::{CrlDates, Vetter};

/// AMD's KDS.
pub const DEFAULT_BASE_URL: &str = "https://kdsintf.amd.com";

/// The source of the current time for validity and CRL freshness (injectable for tests).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> UnixTime + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Arc::new(|| {
            let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            UnixTime::from_secs(secs)
        }))
    }

    /// A clock that always says `t`.
    pub fn fixed(t: UnixTime) -> Self {
        Self(Arc::new(move || t))
    }

    /// A clock computed by `f`.
    pub fn from_fn(f: impl Fn() -> UnixTime + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The current time.
    pub fn now(&self) -> UnixTime {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clock(now = {})", self.now())
    }
}

/// Configuration of a [`Kds`] supply.
#[derive(Clone, Debug)]
pub struct KdsConfig {
    /// The store directory (`None`: no disk store; every miss goes upstream).
    pub store: Option<PathBuf>,
    /// The KDS base URL (`None`: offline, the store and the evidence only).
    pub base_url: Option<String>,
    /// Most upstream requests in flight at once.
    pub max_concurrent_requests: usize,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Timeout until the response head has arrived (connect and TLS included).
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
    /// Largest response body accepted.
    pub max_response_size: usize,
    /// The crypto provider for vetting.
    pub provider: &'static CryptoProvider,
    /// The trusted roots (`None`: AMD's pinned Milan, Genoa and Turin anchors).
    pub trust_anchors: Option<Vec<OwnedTrustAnchors>>,
    /// The clock.
    pub clock: Clock,
}

impl Default for KdsConfig {
    fn default() -> Self {
        Self {
            store: None,
            base_url: Some(DEFAULT_BASE_URL.to_owned()),
            max_concurrent_requests: 4,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            max_attempts: 4,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(300),
            max_response_size: 64 * 1024,
            provider: default_provider(),
            trust_anchors: None,
            clock: Clock::system(),
        }
    }
}

/// Where a certificate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Carried in the evidence.
    Evidence,
    /// The on-disk store.
    Store,
    /// Fetched from KDS (and written to the store).
    Kds,
    /// Fetched from Intel PCS (and written to the store).
    Pcs,
}

impl Source {
    /// A short name: `evidence`, `store`, `kds` or `pcs`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Evidence => "evidence",
            Self::Store => "store",
            Self::Kds => "kds",
            Self::Pcs => "pcs",
        }
    }
}

/// A vetted certificate (DER) and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Supplied {
    /// The DER (or PEM, for a `cert_chain`).
    pub bytes: Vec<u8>,
    /// Where it came from.
    pub source: Source,
}

/// What a report needs from the supply, ready for [`attest_engine::snp::SnpVerifier::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnpCertificates {
    /// The product.
    pub product: Product,
    /// VCEK or VLEK.
    pub signer: CertRole,
    /// The vetted leaf (DER).
    pub leaf: Vec<u8>,
    /// Where the leaf came from.
    pub leaf_source: Source,
    /// The VCEK key (VCEK-signed reports).
    pub vcek_key: Option<VcekKey>,
}

impl SnpCertificates {
    /// An engine request for `report` at `time` with this leaf (the engine's pinned intermediates and root).
    pub fn request<'a>(&'a self, report: &'a [u8], time: UnixTime) -> SnpRequest<'a> {
        SnpRequest {
            report,
            leaf: &self.leaf,
            intermediate: None,
            root: None,
            product: Some(self.product),
            report_data: None,
            time,
        }
    }
}

type FlightResult = Result<(Vec<u8>, Source), KdsError>;
/// A verified CRL in memory: its DER and dates.
type CachedCrl = (Vec<u8>, CrlDates);

struct Inner {
    store: Option<Store>,
    http: Option<http::Http>,
    vetter: Vetter,
    flights: Flights<ObjectKey, FlightResult>,
    negative: NegativeCache<ObjectKey>,
    crls: Mutex<HashMap<(Product, ChainKind), CachedCrl>>,
    clock: Clock,
}

/// The certificate supply. Cheap to clone; clones share the store, the HTTP client and the single-flight
/// table. Must be used inside a tokio runtime.
#[derive(Clone)]
pub struct Kds {
    inner: Arc<Inner>,
}

impl fmt::Debug for Kds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kds")
            .field("store", &self.inner.store.as_ref().map(Store::root))
            .field("online", &self.inner.http.is_some())
            .finish_non_exhaustive()
    }
}

impl Kds {
    /// A supply with `config`.
    pub fn new(config: KdsConfig) -> Result<Self, KdsError> {
        let store = config.store.as_ref().map(Store::open).transpose()?;
        let http = config.base_url.as_deref().map(|u| http::Http::new(u, &(&config).into())).transpose()?;
        let anchors = config
            .trust_anchors
            .clone()
            .unwrap_or_else(|| Product::ALL.iter().map(|p| p.trust_anchors().into()).collect());
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                http,
                vetter: Vetter::new(config.provider, anchors),
                flights: Flights::new(),
                negative: NegativeCache::new(config.negative_ttl),
                crls: Mutex::new(HashMap::new()),
                clock: config.clock,
            }),
        })
    }

    /// The store, when configured.
    pub fn store(&self) -> Option<&Store> {
        self.inner.store.as_ref()
    }

    /// Requests sent to KDS so far (each attempt counts).
    pub fn upstream_requests(&self) -> u64 {
        self.inner.http.as_ref().map_or(0, http::Http::requests)
    }

    fn now(&self) -> UnixTime {
        self.inner.clock.now()
    }

    /// The VCEK for `key`: store, then KDS.
    pub async fn vcek(&self, key: &VcekKey) -> Result<Supplied, KdsError> {
        let (bytes, source) = self.obtain(ObjectKey::Vcek(*key)).await?;
        Ok(Supplied { bytes, source })
    }

    /// A product's `cert_chain` (ASK or ASVK, then ARK): store, then KDS.
    pub async fn cert_chain(&self, product: Product, kind: ChainKind) -> Result<(CertChain, Source), KdsError> {
        let (pem, source) = self.obtain(ObjectKey::Chain(product, kind)).await?;
        Ok((self.inner.vetter.chain(&pem, product, kind, self.now())?, source))
    }

    /// The certificates `report` needs. `carried` are those that came with the evidence (an extended
    /// report's certificate table, a THIM document); `product` is required for version 2 reports unless a
    /// carried certificate or the store tells it.
    pub async fn snp_certificates(
        &self,
        report: &[u8],
        carried: &CarriedCerts<'_>,
        product: Option<Product>,
    ) -> Result<SnpCertificates, KdsError> {
        let report = Report::parse(report).map_err(KdsError::Report)?;
        let now = self.now();
        match report.signing_key() {
            SigningKey::Vlek => {
                let leaf = carried.vlek.as_deref().ok_or(KdsError::VlekNotCarried)?;
                let product = self.product_of(&report, product, Some(leaf))?;
                self.inner.vetter.vlek(leaf, product, now)?;
                Ok(SnpCertificates {
                    product,
                    signer: CertRole::Vlek,
                    leaf: leaf.to_vec(),
                    leaf_source: Source::Evidence,
                    vcek_key: None,
                })
            }
            SigningKey::Vcek => {
                let product = self.product_of(&report, product, carried.vcek.as_deref())?;
                let key = VcekKey::from_report(&report, product)?;
                if let Some(leaf) = carried.vcek.as_deref() {
                    match self.inner.vetter.vcek(leaf, &key, now) {
                        Ok(_) => {
                            self.write_through(ObjectKey::Vcek(key), leaf).await;
                            return Ok(SnpCertificates {
                                product,
                                signer: CertRole::Vcek,
                                leaf: leaf.to_vec(),
                                leaf_source: Source::Evidence,
                                vcek_key: Some(key),
                            });
                        }
                        Err(e) => tracing::warn!(%key, error = %e, "ignoring the VCEK carried in the evidence"),
                    }
                }
                let s = self.vcek(&key).await?;
                Ok(SnpCertificates {
                    product,
                    signer: CertRole::Vcek,
                    leaf: s.bytes,
                    leaf_source: s.source,
                    vcek_key: Some(key),
                })
            }
        }
    }

    /// The product of `report`: the caller's, the report's CPUID (version 3+), a carried leaf's productName
    /// (only a hint: the leaf is then vetted against that product's root), or the one product under which
    /// the store holds this chip.
    pub fn product_of(
        &self,
        report: &Report<'_>,
        hint: Option<Product>,
        leaf: Option<&[u8]>,
    ) -> Result<Product, KdsError> {
        let cpuid = report.cpuid_product().transpose().map_err(KdsError::Report)?;
        match (hint, cpuid) {
            (Some(h), Some(c)) if h != c => return Err(KdsError::ProductMismatch { expected: h, found: c }),
            (Some(p), _) | (None, Some(p)) => return Ok(p),
            (None, None) => {}
        }
        let from_leaf = leaf
            .and_then(|d| Certificate::from_der(d).ok())
            .and_then(|c| c.amd_extensions().ok()?.product_name.map(Product::from_product_name))
            .and_then(Result::ok);
        if let Some(p) = from_leaf {
            return Ok(p);
        }
        if let Some(store) = &self.inner.store {
            let found: Vec<Product> = [Product::Milan, Product::Genoa]
                .into_iter()
                .filter(|p| store.has_chip(*p, &hex::encode(report.chip_id())))
                .collect();
            if let [p] = found[..] {
                return Ok(p);
            }
        }
        Err(KdsError::ProductUnknown)
    }

    /// A product's VCEK CRL: the cached one until its nextUpdate, then KDS; if KDS cannot deliver, the old one
    /// as [`CrlStatus::Stale`] or [`CrlStatus::Unavailable`]. Call it when installing or refreshing the
    /// verifier's CRL (at start and after nextUpdate), not per verification. [`Kds::crl_of`] for either kind
    /// and for refreshing ahead of nextUpdate.
    pub async fn crl(&self, product: Product) -> CrlStatus {
        self.crl_of(product, ChainKind::Vcek, Duration::ZERO).await
    }

    /// A product's CRL of one key kind (`/vcek/v1/{product}/crl` or `/vlek/v1/{product}/crl`). The memory
    /// or store copy is used while it stays fresh for `ahead` more (offline first); otherwise KDS is asked,
    /// and when KDS cannot deliver, the copy comes back as [`CrlStatus::Fresh`] while its nextUpdate has not
    /// passed, else as [`CrlStatus::Stale`] (no copy at all: [`CrlStatus::Unavailable`]). A refresher passes
    /// its margin as `ahead` so that a new CRL is in place before the old one expires.
    pub async fn crl_of(&self, product: Product, kind: ChainKind, ahead: Duration) -> CrlStatus {
        let now = self.now();
        let later = UnixTime::from_secs(now.as_secs().saturating_add(ahead.as_secs()));
        let cached = self.cached_crl(product, kind, now);
        if let Some((der, dates)) = &cached
            && let (true, Some(next_update)) = (dates.is_fresh(later), dates.next_update)
        {
            return CrlStatus::Fresh { der: der.clone(), next_update };
        }
        let key = ObjectKey::Crl(product, kind);
        let fetched = if self.inner.negative.contains(&key) {
            Err(KdsError::NotFound)
        } else {
            let this = self.clone();
            self.inner.flights.run(&key, move || async move { this.fetch_crl(product, kind, later).await }).await
        };
        let fetched = fetched.and_then(|(der, _)| Ok((self.inner.vetter.crl(&der, product, now)?, der)));
        match (fetched, cached) {
            (Ok((dates, der)), _) => match dates.next_update {
                Some(next_update) if dates.is_fresh(now) => CrlStatus::Fresh { der, next_update },
                next_update => CrlStatus::Stale { der, next_update },
            },
            (Err(e), Some((der, dates))) => match dates.next_update {
                Some(next_update) if dates.is_fresh(now) => {
                    tracing::warn!(%product, kind = kind.segment(), error = %e,
                        "could not fetch a newer CRL; the current one is still fresh");
                    CrlStatus::Fresh { der, next_update }
                }
                next_update => CrlStatus::Stale { der, next_update },
            },
            (Err(reason), None) => CrlStatus::Unavailable { reason },
        }
    }

    /// The newest verified CRL in memory or the store, fresh or not.
    fn cached_crl(&self, product: Product, kind: ChainKind, now: UnixTime) -> Option<(Vec<u8>, CrlDates)> {
        let mem = self.inner.crls.lock().unwrap_or_else(PoisonError::into_inner).get(&(product, kind)).cloned();
        if mem.as_ref().is_some_and(|(_, d)| d.is_fresh(now)) {
            return mem;
        }
        let disk = self.inner.store.as_ref().and_then(|s| {
            let path = s.crl_path_of(product, kind);
            let der = s.read(&path).ok()??;
            match self.inner.vetter.crl(&der, product, now) {
                Ok(dates) => Some((der, dates)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring a stored CRL that does not verify");
                    None
                }
            }
        });
        let best = match (mem, disk) {
            (Some(m), Some(d)) => Some(if d.1.this_update > m.1.this_update { d } else { m }),
            (m, d) => m.or(d),
        };
        if let Some(b) = &best {
            self.inner.crls.lock().unwrap_or_else(PoisonError::into_inner).insert((product, kind), b.clone());
        }
        best
    }

    /// The flight body of a CRL: the cached copy if it is fresh until `later`, else KDS (vetted, and kept
    /// when it is newer than the cached copy).
    async fn fetch_crl(&self, product: Product, kind: ChainKind, later: UnixTime) -> FlightResult {
        let now = self.now();
        let cached = self.cached_crl(product, kind, now);
        if let Some((der, dates)) = &cached
            && dates.is_fresh(later)
        {
            return Ok((der.clone(), Source::Store));
        }
        let key = ObjectKey::Crl(product, kind);
        let der = self.download(&key).await?;
        let dates = self.inner.vetter.crl(&der, product, now)?;
        if cached.as_ref().is_none_or(|(_, c)| c.this_update <= dates.this_update) {
            self.inner
                .crls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert((product, kind), (der.clone(), dates));
            self.persist(&key, &der).await;
        }
        Ok((der, Source::Kds))
    }

    /// Store, then single-flight KDS, for VCEKs and chains.
    async fn obtain(&self, key: ObjectKey) -> FlightResult {
        if let Some(bytes) = self.stored(&key) {
            return Ok((bytes, Source::Store));
        }
        if self.inner.negative.contains(&key) {
            return Err(KdsError::NotFound);
        }
        let this = self.clone();
        self.inner.flights.run(&key, move || async move { this.fetch(key).await }).await
    }

    /// The flight body: the store again (another flight may have just filled it), then KDS, vet, store.
    async fn fetch(&self, key: ObjectKey) -> FlightResult {
        if let Some(bytes) = self.stored(&key) {
            return Ok((bytes, Source::Store));
        }
        let bytes = self.download(&key).await?;
        self.vet(&key, &bytes)?;
        self.persist(&key, &bytes).await;
        Ok((bytes, Source::Kds))
    }

    async fn download(&self, key: &ObjectKey) -> Result<Vec<u8>, KdsError> {
        if self.inner.negative.contains(key) {
            return Err(KdsError::NotFound);
        }
        let http = self.inner.http.as_ref().ok_or(KdsError::Offline)?;
        tracing::debug!(%key, "fetching from KDS");
        match http.get(&key.kds_path()).await {
            Err(KdsError::NotFound) => {
                self.inner.negative.insert(*key);
                Err(KdsError::NotFound)
            }
            other => other,
        }
    }

    fn vet(&self, key: &ObjectKey, bytes: &[u8]) -> Result<(), KdsError> {
        let now = self.now();
        let v = &self.inner.vetter;
        match key {
            ObjectKey::Vcek(k) => v.vcek(bytes, k, now).map(drop),
            ObjectKey::Chain(p, kind) => v.chain(bytes, *p, *kind, now).map(drop),
            ObjectKey::Crl(p, _) => v.crl(bytes, *p, now).map(drop),
        }
    }

    fn path(&self, key: &ObjectKey) -> Option<PathBuf> {
        let s = self.inner.store.as_ref()?;
        Some(match key {
            ObjectKey::Vcek(k) => s.vcek_path(k),
            ObjectKey::Chain(p, kind) => s.chain_path(*p, *kind),
            ObjectKey::Crl(p, kind) => s.crl_path_of(*p, *kind),
        })
    }

    /// A stored object that still vets; anything else (absent, unreadable, wrong, expired) is a miss.
    fn stored(&self, key: &ObjectKey) -> Option<Vec<u8>> {
        let path = self.path(key)?;
        let bytes = match self.inner.store.as_ref()?.read(&path) {
            Ok(b) => b?,
            Err(e) => {
                tracing::warn!(error = %e, "store read failed");
                return None;
            }
        };
        match self.vet(key, &bytes) {
            Ok(()) => Some(bytes),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring a stored file that does not verify");
                None
            }
        }
    }

    /// Writes a vetted object to the store. A failed write is logged, not fatal: the object is vetted and
    /// usable; it just is not cached.
    async fn persist(&self, key: &ObjectKey, bytes: &[u8]) {
        let (Some(store), Some(path)) = (self.inner.store.clone(), self.path(key)) else { return };
        let bytes = bytes.to_vec();
        let result = tokio::task::spawn_blocking(move || store.write_atomic(&path, &bytes)).await;
        match result {
            Ok(Ok(())) => tracing::debug!(%key, "stored"),
            Ok(Err(e)) => tracing::warn!(%key, error = %e, "could not store"),
            Err(_) => tracing::warn!(%key, "store task failed"),
        }
    }

    /// Writes an evidence certificate (already vetted) to the store unless it is there.
    async fn write_through(&self, key: ObjectKey, bytes: &[u8]) {
        if self.path(&key).is_some_and(|p| !p.exists()) {
            self.persist(&key, bytes).await;
        }
    }
}
