//! Join endpoints from the cloud's instance metadata (`--join-endpoints-from aws|gcp|azure`): an
//! [`EndpointSource`] next to the flags and the endpoints file.
//!
//! ```text
//!  MetadataEndpoints::endpoints() — once per join round
//!     │ aws:   IMDSv2: PUT /latest/api/token → GET /latest/meta-data/tags/instance/KEY      (aws.rs)
//!     │ gcp:   GET /computeMetadata/v1/{instance,project}/attributes/KEY, Metadata-Flavor   (gcp.rs)
//!     │ azure: GET /metadata/instance/compute?api-version=…, Metadata: true → tagsList[KEY]  (azure.rs)
//!     │        every request bounded: deadline, body size, same-origin redirects, throttling (http.rs)
//!     ▼
//!  the value: HOST[:PORT] entries (`attest-metadata`) → DNS names resolved → socket addresses
//!     error ─▶ typed MetadataError, logged; the last good list (≤ STALE_AFTER old) is used instead when the
//!              error is transient; CombinedEndpoints goes on with the node's other sources either way
//! ```
//!
//! KEY is `attest-join-endpoints` unless `--join-endpoints-key` says otherwise. Whoever creates the worker
//! instances writes the control-plane nodes' addresses (or an internal load balancer's name) into it. A
//! metadata answer is not trusted for anything but where to dial: every join service is verified by mutual
//! aTLS before a ticket is believed (`server_trust`), so a forged answer can delay a join, never subvert it.

mod aws;
mod azure;
mod gcp;
mod http;

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use attest_metadata::{
    DEFAULT_JOIN_PORT, Endpoint, MAX_METADATA_ENDPOINTS, MetadataError, error, parse_endpoint_list, value,
};

use crate::join::BoxFuture;
use crate::join::endpoints::{EndpointError, EndpointSource, MAX_JOIN_ENDPOINTS};

/// The default key (tag or attribute name) holding the endpoints.
pub const DEFAULT_KEY: &str = "attest-join-endpoints";
/// The link-local address of all three metadata services.
pub const DEFAULT_BASE_URL: &str = "http://169.254.169.254";
/// Deadline of one request: connect, answer and whole body (the services answer in milliseconds).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest answer body read (Azure's compute document with many tags is a few KiB).
pub const MAX_METADATA_BODY: usize = 64 * 1024;
/// Redirects followed for one request (same origin only).
pub const MAX_REDIRECTS: usize = 3;
/// Retries of a throttled request.
pub const MAX_THROTTLE_RETRIES: u32 = 2;
/// Longest `Retry-After` waited for within a round (longer: the round fails as throttled and the join
/// client's back-off takes over).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(2);
/// Deadline for resolving one DNS name of the value.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the last good list stands in for a metadata service that is down, slow or throttled.
pub const STALE_AFTER: Duration = Duration::from_secs(600);
/// Longest key accepted (AWS tag keys: 128 characters; GCP attribute keys: 128; Azure tag names: 512).
pub const MAX_KEY_LEN: usize = 128;

const _: () = assert!(MAX_METADATA_ENDPOINTS == MAX_JOIN_ENDPOINTS);

/// The cloud whose metadata service is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cloud {
    /// AWS IMDSv2 instance tags.
    Aws,
    /// GCP metadata server attributes (instance, then project).
    Gcp,
    /// Azure IMDS compute tags.
    Azure,
}

impl Cloud {
    /// The cloud of a name (`aws`, `gcp`, `azure`).
    pub fn from_name(name: &str) -> Option<Cloud> {
        match name {
            "aws" => Some(Cloud::Aws),
            "gcp" => Some(Cloud::Gcp),
            "azure" => Some(Cloud::Azure),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Cloud::Aws => "aws",
            Cloud::Gcp => "gcp",
            Cloud::Azure => "azure",
        }
    }
}

#[derive(Debug)]
enum Service {
    Aws(aws::Imds),
    Gcp(gcp::MetadataServer),
    Azure(azure::Imds),
}

/// The join endpoints one cloud's metadata names (module docs).
#[derive(Debug)]
pub struct MetadataEndpoints {
    cloud: Cloud,
    service: Service,
    key: String,
    last_good: Mutex<Option<(Instant, Vec<SocketAddr>)>>,
}

impl MetadataEndpoints {
    /// `cloud`'s metadata service at `base_url` (`http://HOST[:PORT]`; [`DEFAULT_BASE_URL`] on the cloud),
    /// reading key `key`.
    pub fn new(cloud: Cloud, base_url: &str, key: &str) -> Result<MetadataEndpoints, MetadataError> {
        Self::with_timeout(cloud, base_url, key, REQUEST_TIMEOUT)
    }

    /// As [`MetadataEndpoints::new`] with another per-request deadline (tests of slow services).
    pub fn with_timeout(
        cloud: Cloud,
        base_url: &str,
        key: &str,
        timeout: Duration,
    ) -> Result<MetadataEndpoints, MetadataError> {
        let key_ok = !key.is_empty()
            && key.len() <= MAX_KEY_LEN
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !key_ok {
            return Err(MetadataError::BadEndpoint {
                entry: error::clip(key, 200),
                reason: format!("a metadata key is 1–{MAX_KEY_LEN} letters, digits, '-', '_' or '.'"),
            });
        }
        let client = http::Client::new(base_url)?.with_timeout(timeout);
        let service = match cloud {
            Cloud::Aws => Service::Aws(aws::Imds::new(client)),
            Cloud::Gcp => Service::Gcp(gcp::MetadataServer::new(client)),
            Cloud::Azure => Service::Azure(azure::Imds::new(client)),
        };
        Ok(MetadataEndpoints { cloud, service, key: key.to_owned(), last_good: Mutex::new(None) })
    }

    /// The cloud asked.
    pub fn cloud(&self) -> Cloud {
        self.cloud
    }

    /// The raw value of the key.
    pub async fn value(&self) -> Result<String, MetadataError> {
        match &self.service {
            Service::Aws(s) => s.tag(&self.key).await,
            Service::Gcp(s) => s.attribute(&self.key).await,
            Service::Azure(s) => s.tag(&self.key).await,
        }
    }

    /// The endpoints the metadata names now, names resolved (no stale fallback: [`EndpointSource`] adds it).
    pub async fn fetch(&self) -> Result<Vec<SocketAddr>, MetadataError> {
        let value = self.value().await?;
        let endpoints = parse_endpoint_list(&value, DEFAULT_JOIN_PORT)?;
        resolve(&endpoints).await
    }

    async fn endpoints_or_stale(&self) -> Result<Vec<SocketAddr>, MetadataError> {
        match self.fetch().await {
            Ok(list) => {
                *self.last_good.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some((Instant::now(), list.clone()));
                Ok(list)
            }
            Err(e) => {
                let stale = self.last_good.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                match stale {
                    Some((at, list)) if e.is_transient() && at.elapsed() < STALE_AFTER => {
                        tracing::warn!(cloud = self.cloud.name(), error = %e, age = ?at.elapsed(),
                            "metadata: join endpoints unavailable, using the last good list");
                        Ok(list)
                    }
                    _ => {
                        tracing::warn!(cloud = self.cloud.name(), error = %e, "metadata: no join endpoints");
                        Err(e)
                    }
                }
            }
        }
    }
}

impl EndpointSource for MetadataEndpoints {
    fn endpoints(&self) -> BoxFuture<'_, Result<Vec<SocketAddr>, EndpointError>> {
        Box::pin(async move {
            self.endpoints_or_stale()
                .await
                .map_err(|e| EndpointError::Metadata { cloud: self.cloud.name(), source: Box::new(e) })
        })
    }
}

/// Socket addresses of `endpoints`, names resolved (each name's addresses, in the resolver's order).
pub async fn resolve(endpoints: &[Endpoint]) -> Result<Vec<SocketAddr>, MetadataError> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for e in endpoints {
        match e {
            Endpoint::Addr(a) => out.push(*a),
            Endpoint::Name { host, port } => {
                let entry = e.to_string();
                let addrs = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host.as_str(), *port)))
                    .await
                    .map_err(|_| MetadataError::BadEndpoint {
                        entry: entry.clone(),
                        reason: format!("not resolved within {RESOLVE_TIMEOUT:?}"),
                    })?
                    .map_err(|err| MetadataError::BadEndpoint { entry: entry.clone(), reason: err.to_string() })?;
                out.extend(addrs);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|a| seen.insert(*a));
    out.truncate(MAX_JOIN_ENDPOINTS);
    Ok(out)
}
