//! GCP: the metadata server (`metadata.google.internal`, 169.254.169.254).
//!
//! ```text
//!  GET /computeMetadata/v1/instance/attributes/KEY   Metadata-Flavor: Google  → 200, the value (text)
//!      404 → GET /computeMetadata/v1/project/attributes/KEY (project-wide metadata) → 200 / 404 NotFound
//!  every genuine answer carries `Metadata-Flavor: Google`; one without it is not the metadata server
//!  (the request header is what keeps a forged browser or proxy request out; the answer header what keeps a
//!  stray listener on the address from being believed)
//! ```
//!
//! Constellation finds its control-plane instances through the Compute API with the instance's service
//! account; here the endpoints are one metadata attribute, set on the worker instance template or once for
//! the project.

use http::{Method, StatusCode};

use super::error::MetadataError;
use super::http::{Answer, Client};

/// The metadata server, reading attributes.
#[derive(Debug)]
pub(crate) struct MetadataServer {
    client: Client,
}

impl MetadataServer {
    pub(crate) fn new(client: Client) -> MetadataServer {
        MetadataServer { client }
    }

    async fn get(&self, path: &str) -> Result<Answer, MetadataError> {
        let answer = self.client.send(Method::GET, path, &[("metadata-flavor", "Google")]).await?;
        let flavor = answer.headers.get("metadata-flavor").and_then(|v| v.to_str().ok());
        if flavor != Some("Google") {
            return Err(MetadataError::Malformed {
                url: path.to_owned(),
                what: "the answer lacks `Metadata-Flavor: Google`: not the metadata server".into(),
            });
        }
        Ok(answer)
    }

    /// Attribute `key` of the instance, else of the project.
    pub(crate) async fn attribute(&self, key: &str) -> Result<String, MetadataError> {
        for scope in ["instance", "project"] {
            let path = format!("/computeMetadata/v1/{scope}/attributes/{key}");
            let answer = self.get(&path).await?;
            match answer.status {
                StatusCode::OK => return Ok(answer.text(&path)?.to_owned()),
                StatusCode::NOT_FOUND => {}
                s => return Err(MetadataError::Refused { url: path, status: s.as_u16(), detail: answer.detail() }),
            }
        }
        Err(MetadataError::NotFound { url: format!("/computeMetadata/v1/{{instance,project}}/attributes/{key}") })
    }
}
