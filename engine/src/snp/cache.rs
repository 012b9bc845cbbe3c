//! A bounded cache of verified leaf certificates (VCEK/VLEK), keyed by SHA-256 of the leaf DER.
//!
//! An entry holds what a warm verification needs — the prepared P-384 key and the leaf's decoded AMD
//! extensions — so a warm verify is one SHA-256 lookup, one SHA-384 and one P-384 check, and allocates
//! nothing. Entries expire at the earliest notAfter in the chain and at the CRL's nextUpdate; an entry
//! verified under another CRL set than the installed one is not used, and installing CRLs clears the cache. Eviction is least-recently-used. The lock is held only for lookups and
//! inserts, never across a signature verification.

use crate::amd::Product;
use crate::crypto::PreparedEcdsaKey;
use crate::error::CertRole;
use crate::snp::TcbVersion;
use crate::time::UnixTime;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Default number of cached leaves.
pub const DEFAULT_CACHE_CAPACITY: usize = 256;

/// What a verified leaf contributes to later verifications.
#[derive(Debug)]
pub(crate) struct VerifiedLeaf {
    pub(crate) product: Product,
    pub(crate) role: CertRole,
    pub(crate) key: Box<dyn PreparedEcdsaKey>,
    pub(crate) tcb: TcbVersion,
    pub(crate) hw_id: Option<([u8; 64], usize)>,
    pub(crate) not_before: UnixTime,
    /// Earliest of the chain's notAfter values and the CRL's nextUpdate (when a CRL was used).
    pub(crate) expires: UnixTime,
    /// SHA-256 of the intermediate it was verified under.
    pub(crate) intermediate_sha256: [u8; 32],
    /// Whether revocation was checked against a fresh CRL.
    pub(crate) crl_checked: bool,
    /// Whether the verification may be reused (false when it relied on a per-policy waiver).
    pub(crate) cacheable: bool,
    /// The CRL set generation it was verified under; usable only while that set is installed.
    pub(crate) crl_generation: u64,
}

/// What a cache entry must say about its own validity.
pub(crate) trait CacheEntry {
    /// Before this time the entry must not be used.
    fn not_before(&self) -> UnixTime;
    /// After this time the entry is dropped.
    fn expires(&self) -> UnixTime;
}

impl CacheEntry for VerifiedLeaf {
    fn not_before(&self) -> UnixTime {
        self.not_before
    }
    fn expires(&self) -> UnixTime {
        self.expires
    }
}

struct Slot<T> {
    leaf: Arc<T>,
    last_used: u64,
}

struct Inner<T> {
    map: HashMap<[u8; 32], Slot<T>>,
    tick: u64,
}

/// The leaf cache (also used for TDX PCK certificates, with another entry type).
pub(crate) struct LeafCache<T = VerifiedLeaf> {
    capacity: usize,
    inner: Mutex<Inner<T>>,
}

impl<T: CacheEntry> LeafCache<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { capacity, inner: Mutex::new(Inner { map: HashMap::with_capacity(capacity), tick: 0 }) }
    }

    /// Returns the entry for `key` if it is valid at `time`; drops it if it has expired.
    pub(crate) fn get(&self, key: &[u8; 32], time: UnixTime) -> Option<Arc<T>> {
        if self.capacity == 0 {
            return None;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.tick += 1;
        let tick = inner.tick;
        let slot = inner.map.get_mut(key)?;
        if time > slot.leaf.expires() {
            inner.map.remove(key);
            return None;
        }
        if time < slot.leaf.not_before() {
            return None;
        }
        slot.last_used = tick;
        Some(Arc::clone(&slot.leaf))
    }

    pub(crate) fn insert(&self, key: [u8; 32], leaf: Arc<T>) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.tick += 1;
        let tick = inner.tick;
        if !inner.map.contains_key(&key)
            && inner.map.len() >= self.capacity
            && let Some(oldest) = inner.map.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| *k)
        {
            inner.map.remove(&oldest);
        }
        inner.map.insert(key, Slot { leaf, last_used: tick });
    }

    pub(crate) fn clear(&self) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).map.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).map.len()
    }
}
