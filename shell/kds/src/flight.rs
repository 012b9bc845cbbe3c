//! Single-flight and the negative cache.
//!
//! ```text
//!  caller A ──┐                        ┌──► A: result
//!  caller B ──┼─► flights[key] ─ one ──┼──► B: the same result (cloned)
//!  caller C ──┘     OnceCell      fetch └──► C: …          then the entry is removed
//! ```
//!
//! The first caller for a key runs the fetch; everyone arriving while it runs awaits the same
//! `tokio::sync::OnceCell`. If the running caller is cancelled, the cell stays empty and the next waiter
//! runs its own fetch, so no waiter hangs. After completion the entry is removed: the result is in the
//! store by then (or was an error, which the next caller retries; 404s go to the negative cache).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Most keys remembered as "not found" at once; when full, expired entries are dropped, and if none
/// expired, new 404s are not remembered.
pub const MAX_NEGATIVE_ENTRIES: usize = 4096;

pub(crate) struct Flights<K, V> {
    map: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K: Eq + Hash + Clone, V: Clone> Flights<K, V> {
    pub(crate) fn new() -> Self {
        Self { map: Mutex::new(HashMap::new()) }
    }

    pub(crate) async fn run<F, Fut>(&self, key: &K, f: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let cell = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(map.entry(key.clone()).or_default())
        };
        let value = cell.get_or_init(f).await.clone();
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.get(key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            map.remove(key);
        }
        value
    }
}

pub(crate) struct NegativeCache<K> {
    ttl: Duration,
    map: Mutex<HashMap<K, Instant>>,
}

impl<K: Eq + Hash + Clone> NegativeCache<K> {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self { ttl, map: Mutex::new(HashMap::new()) }
    }

    pub(crate) fn contains(&self, key: &K) -> bool {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        match map.get(key) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                map.remove(key);
                false
            }
            None => false,
        }
    }

    pub(crate) fn insert(&self, key: K) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_NEGATIVE_ENTRIES {
            map.retain(|_, until| *until > now);
            if map.len() >= MAX_NEGATIVE_ENTRIES {
                return;
            }
        }
        map.insert(key, now + self.ttl);
    }
}
