//! # attest-k8s
//!
//! The Kubernetes side of the join service: a minimal API client, bootstrap tokens, and the cluster CA.
//!
//! **May depend on:** hyper's HTTP/1.1 client, OpenSSL, `attest-util`, and the engine's DER reader and crypto
//! provider with aws-lc-rs (kubelet CSRs and certificates, [`ca`]). **Must not depend on:**
//! attestation, gRPC or a service: the join service calls it after a node attested.
//!
//! | module | what |
//! |---|---|
//! | [`config`] | where the API server is: in-cluster (env + service-account files) or explicit |
//! | [`client`] | [`KubeClient`]: HTTPS with the cluster CA and a bearer token; create/delete a Secret |
//! | [`token`] | [`BootstrapToken`]: kubeadm's token format and its Secret manifest |
//! | [`issuer`] | [`TokenIssuer`]: the Kubernetes API one and the dry-run one (manifests in a directory) |
//! | [`ca`] | [`ClusterCa`]: the kubeadm PKI directory, the discovery hash, kubelet certificates |
//! | `kubelet` | (private) the kubelet certificate template: encoded once per CA, signed with aws-lc-rs |
//! | [`error`] | [`K8sError`], with the API's `Status` objects parsed ([`ApiStatus`]) |
//!
//! # Why a hand-written client
//!
//! The join service makes two calls (create a Secret, delete it). `kube-rs` would bring its own TLS stack
//! choice, a config loader for kubeconfig files, watch machinery and `k8s-openapi`'s thousands of generated
//! types; what the service needs is one authenticated HTTPS request with a JSON body, which hyper and
//! hyper-openssl (already used by the KDS client) do in about a hundred lines.
//!
//! ```no_run
//! # async fn f() -> Result<(), attest_k8s::K8sError> {
//! use attest_k8s::{KubeClient, KubeConfig, KubeTokenIssuer, TokenIssuer, DEFAULT_TOKEN_TTL};
//! let issuer = KubeTokenIssuer::new(KubeClient::new(KubeConfig::in_cluster()?)?);
//! let token = issuer.create(DEFAULT_TOKEN_TTL).await?; // Secret kube-system/bootstrap-token-<id>
//! issuer.delete(token.id()).await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod ca;
pub mod client;
pub mod config;
pub mod error;
pub mod issuer;
mod kubelet;
pub mod token;

pub use ca::{CaError, CheckedCsr, ClusterCa, PkiFile, discovery_token_ca_cert_hash, generate_pki};
pub use client::KubeClient;
pub use config::KubeConfig;
pub use error::{ApiStatus, K8sError, Phase};
pub use issuer::{DRY_RUN_ISSUER_KIND, DryRunTokenIssuer, KubeTokenIssuer, TokenIssuer};
pub use token::{BootstrapToken, DEFAULT_TOKEN_TTL, MAX_TOKEN_TTL, MIN_TOKEN_TTL};
