//! The dry-run cluster initializer/joiner: chosen only explicitly (`--backend dry-run`: the local demo, CI),
//! never as a fallback, and announced by the node wherever it reports ([`ClusterBackend::is_dry_run`]).
//!
//! It runs nothing, but leaves in the state directory what the real path would have produced, so the rest
//! of the system (the join service reading the cluster CA, the CLI writing the kubeconfig) works for real:
//!
//! | | writes |
//! |---|---|
//! | init | `kubeadm-init.yaml` (the configuration `kubeadm init` would get), the cluster PKI in kubeadm's layout ([`crate::cluster::pki`]), the kubelet's serving certificate `kubelet/pki/kubelet.crt` + `.key` (signed by the cluster CA), `admin.conf` (client certificate signed by the cluster CA) |
//! | join | `kubeadm-join.yaml` (0600: it holds the token), `kubelet/pki/kubelet.crt` + `.key`, `ca-cert-hash`, control-plane files under `pki/` |
//!
//! Each step is reported as a log line, so an init streams a readable account of what happened.

use std::path::{Path, PathBuf};

use crate::atomic::{PUBLIC_FILE_MODE, SECRET_FILE_MODE, write_atomic};
use crate::cluster::backend::{BackendError, ClusterBackend, InitOutput, InitParams, JoinParams};
use crate::cluster::files::write_join_files;
use crate::cluster::kubeadm::{INIT_CONFIG_NAME, JOIN_CONFIG_NAME, init_config, join_config};
use crate::cluster::pki::{ClusterPki, ca_cert_hash};

/// The admin kubeconfig's name in the state directory.
pub const ADMIN_KUBECONFIG_NAME: &str = "admin.conf";
/// The file holding the discovery CA hash a joined node received.
pub const CA_HASH_FILE_NAME: &str = "ca-cert-hash";
/// The kubelet PKI directory, relative to the state directory.
pub const KUBELET_PKI_SUBDIR: &str = "kubelet/pki";

/// Writes configuration and PKI; runs nothing.
#[derive(Debug)]
pub struct DryRunBackend {
    state_dir: PathBuf,
    network: crate::cluster::kubeadm::NodeNetwork,
}

impl DryRunBackend {
    /// A dry run writing into `state_dir`.
    pub fn new(state_dir: &Path) -> DryRunBackend {
        DryRunBackend { state_dir: state_dir.to_owned(), network: crate::cluster::kubeadm::NodeNetwork::default() }
    }

    /// Uses this node's network facts in the configurations.
    pub fn with_network(mut self, network: crate::cluster::kubeadm::NodeNetwork) -> DryRunBackend {
        self.network = network;
        self
    }
}

impl ClusterBackend for DryRunBackend {
    fn name(&self) -> &'static str {
        "dry-run"
    }

    fn is_dry_run(&self) -> bool {
        true
    }

    fn init(&self, params: &InitParams, log: &mut dyn FnMut(&str)) -> Result<InitOutput, BackendError> {
        let config = self.state_dir.join(INIT_CONFIG_NAME);
        write_atomic(&config, init_config(params, &self.network).as_bytes(), PUBLIC_FILE_MODE)?;
        log(&format!("[dry-run] wrote the kubeadm init configuration to {}", config.display()));
        attest_util::fault::point("backend.init.config-written");
        let pki = ClusterPki::create_or_load(&self.state_dir)?;
        attest_util::fault::point("backend.init.pki-written");
        log(&format!(
            "[dry-run] cluster PKI in {} (CA {})",
            self.state_dir.join("pki").display(),
            ca_cert_hash(&pki.ca.cert)?
        ));
        let kubelet = crate::cluster::kubeadm::write_kubelet_serving_cert(
            &pki,
            &params.node_name,
            &self.network,
            &self.state_dir.join(KUBELET_PKI_SUBDIR),
        )?;
        log(&format!("[dry-run] kubelet serving certificate (signed by the cluster CA) in {}", kubelet[0].display()));
        let kubeconfig = pki.admin_kubeconfig(&params.cluster_name, &params.api_server_endpoint)?;
        let admin = self.state_dir.join(ADMIN_KUBECONFIG_NAME);
        write_atomic(&admin, &kubeconfig, SECRET_FILE_MODE)?;
        attest_util::fault::point("backend.init.kubeconfig-written");
        log(&format!("[dry-run] admin kubeconfig written to {}", admin.display()));
        log(&format!(
            "[dry-run] kubeadm init not run: cluster {:?}, Kubernetes {}, node {}",
            params.cluster_name, params.kubernetes_version, params.node_name
        ));
        Ok(InitOutput { kubeconfig })
    }

    fn restart(&self, role: crate::life::state::Role, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        let config = self.state_dir.join(
            if role == crate::life::state::Role::ControlPlane && self.state_dir.join(INIT_CONFIG_NAME).is_file() {
                INIT_CONFIG_NAME
            } else {
                JOIN_CONFIG_NAME
            },
        );
        if !config.is_file() {
            return Err(BackendError::File(crate::atomic::FileError {
                path: config,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the reopened state disk has no kubeadm configuration",
                ),
            }));
        }
        log(&format!(
            "[dry-run] kubelet restart not run ({role}; configuration {} found on the state disk)",
            config.display()
        ));
        Ok(())
    }

    fn join(&self, params: &JoinParams, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        let written = write_join_files(
            &self.state_dir.join("pki"),
            &self.state_dir.join(KUBELET_PKI_SUBDIR),
            &params.kubelet_cert_pem,
            &params.kubelet_key_pem,
            &params.control_plane_files,
        )?;
        log(&format!("[dry-run] wrote {} certificate and key files", written.len()));
        attest_util::fault::point("backend.join.files-written");
        write_atomic(
            &self.state_dir.join(CA_HASH_FILE_NAME),
            format!("{}\n", params.ca_cert_hash).as_bytes(),
            PUBLIC_FILE_MODE,
        )?;
        let config = self.state_dir.join(JOIN_CONFIG_NAME);
        write_atomic(&config, join_config(params, &self.network).as_bytes(), SECRET_FILE_MODE)?;
        attest_util::fault::point("backend.join.config-written");
        log(&format!("[dry-run] wrote the kubeadm join configuration to {}", config.display()));
        log(&format!(
            "[dry-run] kubeadm join not run: API server {}, {}",
            params.api_server_endpoint,
            if params.control_plane { "control plane" } else { "worker" }
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::kubeadm::tests::init_params;

    #[test]
    fn init_writes_config_pki_and_kubeconfig() {
        let tmp = attest_test_support::TempDir::new("dryrun");
        let dir = tmp.path().join("dryrun");
        let network =
            crate::cluster::kubeadm::NodeNetwork { node_ip: Some("10.0.0.7".parse().unwrap()), ..Default::default() };
        let backend = DryRunBackend::new(&dir).with_network(network);
        let mut lines = Vec::new();
        let out = backend.init(&init_params(), &mut |l| lines.push(l.to_owned())).unwrap();
        assert!(std::str::from_utf8(&out.kubeconfig).unwrap().contains("client-certificate-data"));
        for f in [INIT_CONFIG_NAME, "pki/ca.crt", "pki/ca.key", "pki/etcd/ca.key", ADMIN_KUBECONFIG_NAME] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        assert!(lines.iter().any(|l| l.contains("kubeadm init not run")));
        // The init node's kubelet serving certificate: the cluster CA's, serverAuth, the node's name and IP.
        let cert = openssl::x509::X509::from_pem(&std::fs::read(dir.join("kubelet/pki/kubelet.crt")).unwrap()).unwrap();
        let ca = openssl::x509::X509::from_pem(&std::fs::read(dir.join("pki/ca.crt")).unwrap()).unwrap();
        assert!(cert.verify(&ca.public_key().unwrap()).unwrap());
        let key =
            openssl::pkey::PKey::private_key_from_pem(&std::fs::read(dir.join("kubelet/pki/kubelet.key")).unwrap());
        assert!(cert.public_key().unwrap().public_eq(&key.unwrap()));
        let sans = cert.subject_alt_names().unwrap();
        assert_eq!(sans.iter().filter_map(|n| n.dnsname()).collect::<Vec<_>>(), ["node-1"]);
        assert_eq!(sans.iter().filter_map(|n| n.ipaddress()).collect::<Vec<_>>(), [&[10u8, 0, 0, 7][..]]);
        let text = String::from_utf8(cert.to_text().unwrap()).unwrap();
        assert!(text.contains("TLS Web Server Authentication") && text.contains("TLS Web Client Authentication"));
        assert!(text.contains("CN=system:node:node-1") || text.contains("CN = system:node:node-1"), "{text}");
    }
}
