//! # attest-metadata
//!
//! The values a cloud's instance-metadata service hands a node about where its join service is: the join
//! endpoints list (one tag or attribute: `HOST`, `HOST:PORT`, `IPv4[:PORT]`, `IPv6`, `[IPv6]:PORT` entries)
//! and Azure IMDS's `compute` document (its `tagsList`), with [`MetadataError`], the error every metadata
//! source reports. Pure: text or bytes in, endpoints or a typed error out. The bootstrapper's metadata
//! sources (`attest_bootstrapper::metadata`: AWS IMDSv2, GCP's metadata server, Azure IMDS, each bounded in
//! time and size) do the HTTP and re-export this crate; the fuzz target `metadata_value` calls it directly.
//!
//! **May depend on:** the standard library, `serde` and `serde_json`. **Must not depend on:** any HTTP
//! client, async runtime, TPM library or other attest crate.

#![forbid(unsafe_code)]

pub mod error;
pub mod value;

pub use error::MetadataError;
pub use value::{Endpoint, MAX_HOST_NAME, MAX_METADATA_ENDPOINTS, azure_tag, parse_endpoint, parse_endpoint_list};

/// The join service's node port, where an entry names no port (as Constellation's `JoinServiceNodePort`).
pub const DEFAULT_JOIN_PORT: u16 = 30090;
