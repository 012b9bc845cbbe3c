//! The cluster initializer/joiner behind one trait: [`ClusterBackend`], implemented by the real `kubeadm`
//! ([`super::kubeadm::KubeadmBackend`]) and by a dry run ([`super::dryrun::DryRunBackend`]) that writes the
//! configuration it would use, creates the cluster PKI `kubeadm init` would create, and runs nothing.
//!
//! This module knows only the trait and what its implementations exchange; it names no implementation. The
//! command ([`crate::cmd`], the binary's wiring) picks one for `--backend kubeadm|dry-run` (`auto` is kept as a
//! name for `kubeadm`: it never falls back to the dry run), so the trait and its implementations form no
//! cycle. A dry run is never chosen silently: it is the operator's explicit `--backend dry-run`, and
//! [`ClusterBackend::is_dry_run`] makes the node announce it in its logs, its init stream, its stdout events
//! and its persisted state.
//!
//! Backends are synchronous (they run processes and write files); the node calls them on a blocking thread
//! and forwards the log lines to the init stream as they come.

use zeroize::Zeroizing;

use crate::atomic::FileError;
use crate::cluster::files::{FileNameError, JoinFilesError};
use crate::cluster::pki::PkiError;
use crate::cluster::process::CommandError;

/// What `kubeadm init` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitParams {
    /// The Kubernetes node name of this node.
    pub node_name: String,
    /// `ClusterConfiguration.clusterName`.
    pub cluster_name: String,
    /// `ClusterConfiguration.kubernetesVersion` (`v1.31.1`).
    pub kubernetes_version: String,
    /// Extra API server certificate SANs (DNS names or IP addresses).
    pub apiserver_cert_sans: Vec<String>,
    /// `networking.serviceSubnet`.
    pub service_cidr: String,
    /// `host:port` clients reach the API server at (the admin kubeconfig's server).
    pub api_server_endpoint: String,
}

/// What `kubeadm init` produced.
#[derive(Debug)]
pub struct InitOutput {
    /// The admin kubeconfig (contains the admin's private key).
    pub kubeconfig: Zeroizing<Vec<u8>>,
}

/// What `kubeadm join` needs (from the join ticket).
#[derive(Debug)]
pub struct JoinParams {
    /// The Kubernetes node name of this node.
    pub node_name: String,
    /// Whether the node joins the control plane.
    pub control_plane: bool,
    /// `host:port` of the API server.
    pub api_server_endpoint: String,
    /// The bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`): a credential, never logged.
    pub token: Zeroizing<String>,
    /// `sha256:<hex>` of the cluster CA's SubjectPublicKeyInfo.
    pub ca_cert_hash: String,
    /// The Kubernetes version the cluster runs.
    pub kubernetes_version: String,
    /// The kubelet certificate (PEM), signed by the cluster CA.
    pub kubelet_cert_pem: Vec<u8>,
    /// The kubelet's private key (PEM).
    pub kubelet_key_pem: Zeroizing<Vec<u8>>,
    /// Control-plane certificates and keys (names relative to the `pki` directory, checked).
    pub control_plane_files: Vec<(String, Zeroizing<Vec<u8>>)>,
}

/// Why the cluster initializer or joiner failed.
#[derive(Debug)]
pub enum BackendError {
    /// `kubeadm` failed (with its last output lines).
    Command(CommandError),
    /// A file could not be written or read.
    File(FileError),
    /// The cluster PKI could not be created or read.
    Pki(PkiError),
    /// A control-plane file name from the ticket is not acceptable.
    FileName(FileNameError),
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendError::Command(e) => write!(f, "{e}"),
            BackendError::File(e) => write!(f, "{e}"),
            BackendError::Pki(e) => write!(f, "cluster PKI: {e}"),
            BackendError::FileName(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BackendError::Command(e) => Some(e),
            BackendError::File(e) => Some(e),
            BackendError::Pki(e) => Some(e),
            BackendError::FileName(e) => Some(e),
        }
    }
}

impl From<FileError> for BackendError {
    fn from(e: FileError) -> Self {
        BackendError::File(e)
    }
}

impl From<PkiError> for BackendError {
    fn from(e: PkiError) -> Self {
        BackendError::Pki(e)
    }
}

impl From<JoinFilesError> for BackendError {
    fn from(e: JoinFilesError) -> Self {
        match e {
            JoinFilesError::FileName(e) => BackendError::FileName(e),
            JoinFilesError::File(e) => BackendError::File(e),
        }
    }
}

impl From<FileNameError> for BackendError {
    fn from(e: FileNameError) -> Self {
        BackendError::FileName(e)
    }
}

/// Initializes a cluster on this node, or joins this node to one. Calls block; `log` receives progress lines.
pub trait ClusterBackend: Send + Sync + std::fmt::Debug {
    /// A short name for logs (`kubeadm`, `dry-run`).
    fn name(&self) -> &'static str;
    /// Whether this backend runs nothing (a dry run): the node then reports itself as a dry run everywhere.
    fn is_dry_run(&self) -> bool {
        false
    }
    /// Initializes the cluster; returns the admin kubeconfig.
    fn init(&self, params: &InitParams, log: &mut dyn FnMut(&str)) -> Result<InitOutput, BackendError>;
    /// Joins the cluster.
    fn join(&self, params: &JoinParams, log: &mut dyn FnMut(&str)) -> Result<(), BackendError>;
    /// Restarts this node's Kubernetes components after a reboot (rejoin, recovery): their configuration and
    /// data are on the reopened state disk.
    fn restart(&self, role: crate::life::state::Role, log: &mut dyn FnMut(&str)) -> Result<(), BackendError>;
}
