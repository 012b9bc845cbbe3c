//! The cluster backends ([`ClusterBackend`](crate::ClusterBackend): kubeadm or a dry run), kubeadm's PKI, the
//! commands they run and the ticket files they write.

pub(crate) mod backend;
pub mod dryrun;
pub(crate) mod files;
pub mod kubeadm;
pub mod pki;
pub mod process;
