//! Azure: the instance metadata service (IMDS, 169.254.169.254).
//!
//! ```text
//!  GET /metadata/instance/compute?api-version=2021-02-01&format=json   Metadata: true
//!      → 200, the compute document; its `tagsList` [{"name", "value"}] holds tag KEY (names compare
//!        case-insensitively, as Azure's tags do)
//!      400: the Metadata header or the api-version is missing or unknown → Refused (IMDS's JSON error text)
//!      429: more than IMDS's 5 requests per second → retried, then Throttled
//! ```
//!
//! Constellation reads its own tags (cluster uid, role) from IMDS and lists the scale set's instances
//! through Azure Resource Manager; here the endpoints are one tag of the instance — set on the worker scale
//! set, whose tags its instances carry (which is how Constellation's nodes read their cluster's tags).

use http::{Method, StatusCode};

use super::error::MetadataError;
use super::http::Client;
use super::value::azure_tag;

/// The IMDS API version asked for (a version IMDS documents as supported; the compute document's
/// `tagsList` exists since 2019-06-04).
pub(crate) const API_VERSION: &str = "2021-02-01";

/// IMDS, reading the instance's tags.
#[derive(Debug)]
pub(crate) struct Imds {
    client: Client,
}

impl Imds {
    pub(crate) fn new(client: Client) -> Imds {
        Imds { client }
    }

    /// The value of tag `key`.
    pub(crate) async fn tag(&self, key: &str) -> Result<String, MetadataError> {
        let path = format!("/metadata/instance/compute?api-version={API_VERSION}&format=json");
        let answer = self.client.send(Method::GET, &path, &[("metadata", "true")]).await?;
        if answer.status != StatusCode::OK {
            return Err(MetadataError::Refused { url: path, status: answer.status.as_u16(), detail: answer.detail() });
        }
        azure_tag(&path, &answer.body, key)
    }
}
