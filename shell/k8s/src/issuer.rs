//! [`TokenIssuer`]: creates and deletes bootstrap tokens — through the Kubernetes API
//! ([`KubeTokenIssuer`]) or, on machines without Kubernetes, by writing the Secret manifest it would have
//! created into a directory ([`DryRunTokenIssuer`]).
//!
//! Both retry a token-id collision (409 `AlreadyExists`, or an existing manifest file) with a fresh id, up to
//! [`MAX_CREATE_ATTEMPTS`] times; both treat deleting a token that is already gone as success.

use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use super::client::KubeClient;
use super::error::K8sError;
use super::token::{BOOTSTRAP_TOKEN_NAMESPACE, BootstrapToken, is_valid_token_id, secret_name};

/// Most token ids tried before giving up on collisions.
pub const MAX_CREATE_ATTEMPTS: u32 = 5;
/// Time allowed for the best-effort delete after a create whose outcome is unknown (a timeout or a broken
/// connection after the request was sent).
pub const UNKNOWN_OUTCOME_DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// A boxed future borrowing the issuer.
pub type IssueFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, K8sError>> + Send + 'a>>;

/// Creates and deletes bootstrap tokens.
pub trait TokenIssuer: Send + Sync + std::fmt::Debug {
    /// Creates a fresh token valid for `ttl` (clamped to the token module's bounds).
    fn create(&self, ttl: Duration) -> IssueFuture<'_, BootstrapToken>;

    /// Deletes token `id`; a token that does not exist counts as deleted.
    fn delete<'a>(&'a self, id: &'a str) -> IssueFuture<'a, ()>;

    /// A short name for logs (`kubernetes`, `dry-run`).
    fn kind(&self) -> &'static str;
}

/// Creates tokens as Secrets through the Kubernetes API.
#[derive(Debug)]
pub struct KubeTokenIssuer {
    client: KubeClient,
}

impl KubeTokenIssuer {
    /// An issuer using `client`.
    pub fn new(client: KubeClient) -> KubeTokenIssuer {
        KubeTokenIssuer { client }
    }

    async fn create_inner(&self, ttl: Duration) -> Result<BootstrapToken, K8sError> {
        for attempt in 1..=MAX_CREATE_ATTEMPTS {
            let token = BootstrapToken::generate(ttl)?;
            let name = token.secret_name();
            match self.client.create_secret(BOOTSTRAP_TOKEN_NAMESPACE, &name, &token.secret_manifest()).await {
                Ok(()) => return Ok(token),
                Err(K8sError::AlreadyExists(_)) => {
                    tracing::info!(token_id = token.id(), attempt, "bootstrap token id collision, retrying");
                }
                Err(e @ (K8sError::Timeout { .. } | K8sError::Transport { .. })) => {
                    // The API server may have stored the Secret before the answer was lost: remove it so that
                    // no usable token outlives a failed ticket (its expiration bounds it otherwise).
                    let cleanup = tokio::time::timeout(
                        UNKNOWN_OUTCOME_DELETE_TIMEOUT,
                        self.client.delete_secret(BOOTSTRAP_TOKEN_NAMESPACE, &name),
                    )
                    .await;
                    if !matches!(cleanup, Ok(Ok(_))) {
                        tracing::warn!(token_id = token.id(), "could not delete a token whose creation timed out");
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(K8sError::TokenIdsExhausted { attempts: MAX_CREATE_ATTEMPTS })
    }
}

impl TokenIssuer for KubeTokenIssuer {
    fn create(&self, ttl: Duration) -> IssueFuture<'_, BootstrapToken> {
        Box::pin(self.create_inner(ttl))
    }

    fn delete<'a>(&'a self, id: &'a str) -> IssueFuture<'a, ()> {
        Box::pin(async move {
            if !is_valid_token_id(id) {
                return Err(K8sError::InvalidTokenId);
            }
            self.client.delete_secret(BOOTSTRAP_TOKEN_NAMESPACE, &secret_name(id)).await.map(|_| ())
        })
    }

    fn kind(&self) -> &'static str {
        "kubernetes"
    }
}

/// The [`TokenIssuer::kind`] of [`DryRunTokenIssuer`]: services check it to announce a dry run.
pub const DRY_RUN_ISSUER_KIND: &str = "dry-run";

/// Writes the Secret manifest of each token to `<dir>/bootstrap-token-<id>.json` (mode 0600: it holds the
/// token secret) instead of creating it, and removes the file on delete. Never a default: a join service
/// uses it only when told to (`--token-issuer dry-run`, the local demo without Kubernetes), and announces it
/// in every ticket it issues ([`DRY_RUN_ISSUER_KIND`]). The rest of the join runs unchanged, and the files
/// show what would have been created.
#[derive(Debug)]
pub struct DryRunTokenIssuer {
    dir: PathBuf,
}

impl DryRunTokenIssuer {
    /// An issuer writing into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Result<DryRunTokenIssuer, K8sError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| K8sError::Io { path: dir.clone(), source })?;
        Ok(DryRunTokenIssuer { dir })
    }

    /// The manifest directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest file of token `id`.
    pub fn manifest_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", secret_name(id)))
    }

    /// Writes the manifest on the blocking pool (create, fsync, link: milliseconds on a disk, which must not
    /// stall an async worker); `Ok(false)` when a file for that id exists already (a collision).
    async fn write_new(&self, token: BootstrapToken) -> Result<(BootstrapToken, bool), K8sError> {
        let issuer = DryRunTokenIssuer { dir: self.dir.clone() };
        tokio::task::spawn_blocking(move || {
            let written = issuer.write_new_blocking(&token);
            written.map(|w| (token, w))
        })
        .await
        .map_err(|e| K8sError::Io { path: self.dir.clone(), source: std::io::Error::other(e.to_string()) })?
    }

    fn write_new_blocking(&self, token: &BootstrapToken) -> Result<bool, K8sError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = self.manifest_path(token.id());
        let tmp = self.dir.join(format!(".{}.json.tmp", token.secret_name()));
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| K8sError::Io { path, source }
        };
        if path.exists() {
            return Ok(false);
        }
        let mut f =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(io(&tmp))?;
        let written = f.write_all(&token.secret_manifest()).and_then(|()| f.sync_all());
        if let Err(source) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(K8sError::Io { path: tmp, source });
        }
        // hard_link fails if the target exists: an atomic create-if-absent of the complete file.
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(source) => Err(K8sError::Io { path, source }),
        }
    }
}

impl TokenIssuer for DryRunTokenIssuer {
    fn create(&self, ttl: Duration) -> IssueFuture<'_, BootstrapToken> {
        Box::pin(async move {
            for attempt in 1..=MAX_CREATE_ATTEMPTS {
                let (token, written) = self.write_new(BootstrapToken::generate(ttl)?).await?;
                if written {
                    tracing::debug!(token_id = token.id(), dir = %self.dir.display(), "dry run: token manifest written");
                    return Ok(token);
                }
                tracing::info!(token_id = token.id(), attempt, "bootstrap token id collision, retrying");
            }
            Err(K8sError::TokenIdsExhausted { attempts: MAX_CREATE_ATTEMPTS })
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> IssueFuture<'a, ()> {
        Box::pin(async move {
            if !is_valid_token_id(id) {
                return Err(K8sError::InvalidTokenId);
            }
            let path = self.manifest_path(id);
            let removed = {
                let path = path.clone();
                tokio::task::spawn_blocking(move || std::fs::remove_file(&path))
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
            };
            match removed {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(K8sError::Io { path, source }),
            }
        })
    }

    fn kind(&self) -> &'static str {
        DRY_RUN_ISSUER_KIND
    }
}
