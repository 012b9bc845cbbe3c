//! The key service client: `kms.API/GetDataKey` over mutual TLS (the join service's client certificate of the
//! cluster's key-service CA, [`attest_keyservice::tls`]), one shared HTTP/2 connection, re-established when
//! it breaks. There is no plaintext mode.
//!
//! Every call is bounded by the smaller of the configured timeout and what is left of the joining node's
//! own deadline, and its latency is recorded. The key service's failures keep their meaning:
//! unreachable → `UNAVAILABLE`, too slow → `DEADLINE_EXCEEDED` (see [`KeyServiceError`]).
//!
//! **Cluster-wide keys** (the measurement secret and the SSH CA seed: the same bytes for every node) are
//! fetched by [`KeyServiceClient::get_cluster_key`] at most once per [`CLUSTER_KEY_TTL`] and reused for the
//! joins in between, so a join costs one key-service call (its node's disk key) instead of three. The join
//! service receives these keys on every join anyway; keeping them for a minute in zeroized memory adds no
//! exposure, and it changes no refusal: the disk key is still fetched per join, so a join still fails when
//! the key service is down. A failed fetch is never cached.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use attest_proto::kms::{GetDataKeyRequest, GetDataKeyResponse};
use attest_proto::paths;
use zeroize::Zeroizing;

use super::metrics::Metrics;
use attest_grpc::{Channel, ChannelConfig, Code, Metadata, Status};
use attest_keyservice::tls::KmsConnector;

/// Default time allowed for one key service call (connect included).
pub const DEFAULT_KEY_SERVICE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest response accepted from the key service (a data key is at most 4 KiB).
pub const MAX_KEY_RESPONSE_SIZE: usize = 16 * 1024;

/// How long a cluster-wide key fetched by [`KeyServiceClient::get_cluster_key`] is reused.
pub const CLUSTER_KEY_TTL: Duration = Duration::from_secs(60);

/// Why a key could not be obtained.
#[derive(Debug)]
pub enum KeyServiceError {
    /// The key service could not be reached, or its connection broke.
    Unavailable(Status),
    /// The call did not finish within its deadline.
    DeadlineExceeded(Status),
    /// The key service refused or answered something unusable.
    Failed(Status),
    /// The key has another length than requested.
    WrongLength {
        /// The data key id.
        id: String,
        /// The requested length.
        expected: usize,
        /// The received length.
        found: usize,
    },
}

impl std::fmt::Display for KeyServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyServiceError::Unavailable(s) => write!(f, "key service unavailable: {}", s.message),
            KeyServiceError::DeadlineExceeded(s) => write!(f, "key service deadline exceeded: {}", s.message),
            KeyServiceError::Failed(s) => write!(f, "key service failed: {s}"),
            KeyServiceError::WrongLength { id, expected, found } => {
                write!(f, "key service returned {found} bytes for {id:?}, {expected} requested")
            }
        }
    }
}

impl std::error::Error for KeyServiceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unavailable(status) | Self::DeadlineExceeded(status) | Self::Failed(status) => Some(status),
            Self::WrongLength { .. } => None,
        }
    }
}

/// A `kms.API` client.
#[derive(Debug)]
pub struct KeyServiceClient {
    addr: SocketAddr,
    tls: KmsConnector,
    timeout: Duration,
    channel: tokio::sync::Mutex<Option<Channel>>,
    metrics: Arc<Metrics>,
    cluster_keys: ClusterKeyCache,
}

/// The cluster-wide keys of [`KeyServiceClient::get_cluster_key`], each with the time it was fetched.
#[derive(Debug, Default)]
struct ClusterKeyCache {
    entries: std::sync::Mutex<Vec<CachedKey>>,
}

impl ClusterKeyCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CachedKey>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The key `id` of `length` bytes if it was fetched less than [`CLUSTER_KEY_TTL`] before `now`.
    fn get(&self, id: &str, length: usize, now: Instant) -> Option<Zeroizing<Vec<u8>>> {
        self.lock()
            .iter()
            .find(|c| c.id == id && c.length == length && now.saturating_duration_since(c.fetched) < CLUSTER_KEY_TTL)
            .map(|c| c.key.clone())
    }

    /// Keeps `key` as the copy of `id` fetched at `fetched` (replacing an older one).
    fn put(&self, id: &'static str, length: usize, fetched: Instant, key: Zeroizing<Vec<u8>>) {
        let mut entries = self.lock();
        entries.retain(|c| !(c.id == id && c.length == length));
        entries.push(CachedKey { id, length, fetched, key });
    }
}

/// A cluster-wide key and when it was fetched (never printed: no `Debug` of the bytes).
struct CachedKey {
    id: &'static str,
    length: usize,
    fetched: Instant,
    key: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for CachedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedKey").field("id", &self.id).field("length", &self.length).finish_non_exhaustive()
    }
}

impl KeyServiceClient {
    /// A client for the key service at `addr`, reached over mutual TLS with `tls`; connects on first use.
    pub fn new(addr: SocketAddr, tls: KmsConnector, timeout: Duration, metrics: Arc<Metrics>) -> KeyServiceClient {
        KeyServiceClient {
            addr,
            tls,
            timeout,
            channel: tokio::sync::Mutex::new(None),
            metrics,
            cluster_keys: ClusterKeyCache::default(),
        }
    }

    /// The cluster-wide data key `id` of `length` bytes: the copy fetched less than [`CLUSTER_KEY_TTL`] ago,
    /// else a fresh one from the key service (as [`get_data_key`](Self::get_data_key), which it then keeps).
    /// Only for keys that are the same for every node; a node's own key must use `get_data_key`.
    pub async fn get_cluster_key(
        &self,
        id: &'static str,
        length: usize,
        deadline: Option<Instant>,
    ) -> Result<Zeroizing<Vec<u8>>, KeyServiceError> {
        if let Some(key) = self.cluster_keys.get(id, length, Instant::now()) {
            return Ok(key);
        }
        let fetched = Instant::now();
        let key = self.get_data_key(id, length, deadline).await?;
        self.cluster_keys.put(id, length, fetched, key.clone());
        Ok(key)
    }

    /// The data key `id` of `length` bytes, within `deadline` (the caller's) and the configured timeout.
    pub async fn get_data_key(
        &self,
        id: &str,
        length: usize,
        deadline: Option<Instant>,
    ) -> Result<Zeroizing<Vec<u8>>, KeyServiceError> {
        let started = Instant::now();
        let mut budget = self.timeout;
        if let Some(d) = deadline {
            budget = budget.min(d.saturating_duration_since(started));
        }
        let result = tokio::time::timeout(budget, self.call(id, length, budget)).await.unwrap_or_else(|_| {
            Err(KeyServiceError::DeadlineExceeded(Status::deadline_exceeded(format!("no answer within {budget:?}"))))
        });
        self.metrics.key_service_call(started.elapsed(), result.is_ok());
        result
    }

    async fn call(&self, id: &str, length: usize, budget: Duration) -> Result<Zeroizing<Vec<u8>>, KeyServiceError> {
        let request =
            GetDataKeyRequest { data_key_id: id.to_owned(), length: u32::try_from(length).unwrap_or(u32::MAX) };
        // One retry on a fresh connection when a cached one turns out to be broken.
        for fresh in [false, true] {
            let (channel, reused) = self.channel(budget, fresh).await?;
            let outcome = channel
                .unary::<_, GetDataKeyResponse>(paths::KMS_GET_DATA_KEY, request.clone(), Metadata::new(), Some(budget))
                .await;
            match outcome {
                Ok(response) => {
                    let key = Zeroizing::new(response.message.data_key);
                    if key.len() != length {
                        return Err(KeyServiceError::WrongLength {
                            id: id.to_owned(),
                            expected: length,
                            found: key.len(),
                        });
                    }
                    return Ok(key);
                }
                Err(status) => {
                    if status.code == Code::Unavailable || status.code == Code::Internal {
                        // A broken connection: forget it so the next call reconnects.
                        self.forget(&channel).await;
                        if reused && !fresh {
                            continue;
                        }
                    }
                    return Err(classify(status));
                }
            }
        }
        Err(KeyServiceError::Unavailable(Status::unavailable("key service connection keeps breaking")))
    }

    /// The shared channel (connecting if there is none, or if `fresh`); also says whether it was reused.
    async fn channel(&self, budget: Duration, fresh: bool) -> Result<(Channel, bool), KeyServiceError> {
        let mut slot = self.channel.lock().await;
        if !fresh && let Some(c) = slot.as_ref() {
            return Ok((c.clone(), true));
        }
        let config = ChannelConfig {
            max_message_size: MAX_KEY_RESPONSE_SIZE,
            connect_timeout: budget,
            ..ChannelConfig::default()
        };
        let channel = self.tls.connect(self.addr, config).await.map_err(KeyServiceError::Unavailable)?;
        *slot = Some(channel.clone());
        Ok((channel, false))
    }

    async fn forget(&self, _broken: &Channel) {
        *self.channel.lock().await = None;
    }
}

fn classify(status: Status) -> KeyServiceError {
    match status.code {
        Code::Unavailable => KeyServiceError::Unavailable(status),
        Code::DeadlineExceeded => KeyServiceError::DeadlineExceeded(status),
        _ => KeyServiceError::Failed(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_keys_are_reused_for_their_ttl_only() {
        let cache = ClusterKeyCache::default();
        let t0 = Instant::now();
        assert!(cache.get("measurementSecret", 32, t0).is_none());
        cache.put("measurementSecret", 32, t0, Zeroizing::new(vec![1; 32]));
        assert_eq!(cache.get("measurementSecret", 32, t0).unwrap().as_slice(), &[1; 32]);
        assert_eq!(cache.get("measurementSecret", 32, t0 + CLUSTER_KEY_TTL / 2).unwrap().as_slice(), &[1; 32]);
        // Expired, another id, another length: not served.
        assert!(cache.get("measurementSecret", 32, t0 + CLUSTER_KEY_TTL).is_none());
        assert!(cache.get("ca_emergency_ssh", 32, t0).is_none());
        assert!(cache.get("measurementSecret", 16, t0).is_none());
        // A newer fetch replaces the old copy.
        let t1 = t0 + CLUSTER_KEY_TTL;
        cache.put("measurementSecret", 32, t1, Zeroizing::new(vec![2; 32]));
        assert_eq!(cache.get("measurementSecret", 32, t1).unwrap().as_slice(), &[2; 32]);
        assert_eq!(cache.lock().len(), 1);
        // The bytes never appear in a debug print.
        assert!(!format!("{cache:?}").contains("2, 2"));
    }
}
