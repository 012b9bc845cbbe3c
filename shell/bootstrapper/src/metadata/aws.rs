//! AWS: the instance metadata service, IMDSv2 only (session tokens; IMDSv1's plain GETs are the kind a
//! server-side request forgery can reach, so they are never used).
//!
//! ```text
//!  PUT /latest/api/token          X-aws-ec2-metadata-token-ttl-seconds: 21600   → 200, the token (text)
//!  GET /latest/meta-data/tags/instance/KEY   X-aws-ec2-metadata-token: TOKEN    → 200, the tag's value
//!        401: the token expired or was revoked → one fresh token, one more try
//!        404: no such tag, or instance tags are not exposed in the metadata (the instance's
//!             InstanceMetadataTags option) → NotFound
//!        403: the metadata service is turned off for this instance → Refused
//! ```
//!
//! Constellation reads its cluster's tags the same way (`tags/instance/<tag>`) and then lists the
//! control-plane instances through the EC2 API; a node that has not joined holds no cloud credentials here,
//! so the endpoints are the value of one instance tag, written by whoever creates the worker instances (e.g.
//! the launch template: the control-plane nodes' private addresses, or an internal load balancer's name).

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use tokio::sync::Mutex;

use super::error::MetadataError;
use super::http::Client;

/// Lifetime asked for a session token (AWS allows 1 s to 6 h).
pub(crate) const TOKEN_TTL: Duration = Duration::from_secs(6 * 3600);
/// A token is renewed this long before its lifetime ends.
const TOKEN_MARGIN: Duration = Duration::from_secs(60);
/// Longest token accepted (AWS's are about 56 characters).
pub(crate) const MAX_TOKEN_LEN: usize = 1024;

const TOKEN_PATH: &str = "/latest/api/token";

/// IMDSv2 with a cached session token.
#[derive(Debug)]
pub(crate) struct Imds {
    client: Client,
    token: Mutex<Option<(String, Instant)>>,
}

impl Imds {
    pub(crate) fn new(client: Client) -> Imds {
        Imds { client, token: Mutex::new(None) }
    }

    async fn fresh_token(&self) -> Result<String, MetadataError> {
        let ttl = TOKEN_TTL.as_secs().to_string();
        let answer =
            self.client.send(Method::PUT, TOKEN_PATH, &[("x-aws-ec2-metadata-token-ttl-seconds", &ttl)]).await?;
        if answer.status != StatusCode::OK {
            return Err(MetadataError::Refused {
                url: TOKEN_PATH.into(),
                status: answer.status.as_u16(),
                detail: answer.detail(),
            });
        }
        let token = answer.text(TOKEN_PATH)?.trim();
        if token.is_empty() || token.len() > MAX_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(MetadataError::Malformed {
                url: TOKEN_PATH.into(),
                what: format!("not a session token ({} bytes)", token.len()),
            });
        }
        Ok(token.to_owned())
    }

    async fn token(&self, renew: bool) -> Result<String, MetadataError> {
        let mut cached = self.token.lock().await;
        if !renew
            && let Some((t, expires)) = cached.as_ref()
            && Instant::now() < *expires
        {
            return Ok(t.clone());
        }
        let t = self.fresh_token().await?;
        *cached = Some((t.clone(), Instant::now() + TOKEN_TTL.saturating_sub(TOKEN_MARGIN)));
        Ok(t)
    }

    /// The value of instance tag `key`.
    pub(crate) async fn tag(&self, key: &str) -> Result<String, MetadataError> {
        let path = format!("/latest/meta-data/tags/instance/{key}");
        let mut renew = false;
        loop {
            let token = self.token(renew).await?;
            let answer = self.client.send(Method::GET, &path, &[("x-aws-ec2-metadata-token", &token)]).await?;
            match answer.status {
                StatusCode::OK => return Ok(answer.text(&path)?.to_owned()),
                StatusCode::UNAUTHORIZED if !renew => {
                    tracing::info!("metadata (aws): session token refused, asking for a fresh one");
                    renew = true;
                }
                StatusCode::NOT_FOUND => return Err(MetadataError::NotFound { url: path }),
                s => return Err(MetadataError::Refused { url: path, status: s.as_u16(), detail: answer.detail() }),
            }
        }
    }
}
