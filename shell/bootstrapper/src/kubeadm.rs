//! The real cluster initializer/joiner: `kubeadm init --config F` / `kubeadm join --config F` with a
//! configuration generated here, output streamed line by line.
//!
//! # Configuration (kubeadm configuration API, `kubeadm.k8s.io`)
//!
//! [`KubeadmApi::for_version`] picks the API: `v1beta4` for Kubernetes ≥ 1.31 (where it was introduced;
//! `v1beta3` is deprecated there), `v1beta3` before. Only fields that have the same shape in both are used:
//!
//! ```yaml
//! apiVersion: kubeadm.k8s.io/v1beta4         # init: two documents
//! kind: InitConfiguration
//! nodeRegistration: {name: NODE}
//! ---
//! kind: ClusterConfiguration
//! clusterName: NAME
//! kubernetesVersion: v1.31.1
//! networking: {serviceSubnet: 10.96.0.0/12}
//! apiServer: {certSANs: [...]}
//! ```
//!
//! ```yaml
//! kind: JoinConfiguration                    # join
//! discovery: {bootstrapToken: {apiServerEndpoint: HOST:6443, token: T, caCertHashes: [sha256:…]}}
//! nodeRegistration: {name: NODE}
//! controlPlane: {}                           # control-plane nodes only
//! ```
//!
//! Every string is written as a YAML double-quoted scalar (the JSON string syntax, which YAML 1.2 reads the
//! same), so no value can break out of its field. The join configuration holds the bootstrap token and is
//! written with mode 0600.
//!
//! `kubeadm init` runs with `--skip-token-print`: its own bootstrap token is a credential and the log is
//! streamed to the client. The admin kubeconfig is read from `/etc/kubernetes/admin.conf` afterwards.
//! For a join, the ticket's files are written first: control-plane certificates into
//! `/etc/kubernetes/pki` (kubeadm's layout, so `kubeadm join --control-plane` uses them instead of
//! downloading them), the kubelet certificate and key into `/var/lib/kubelet/pki`.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use zeroize::Zeroizing;

use super::atomic::{SECRET_FILE_MODE, write_atomic};
use super::backend::{BackendError, ClusterBackend, InitOutput, InitParams, JoinParams};
use super::files::write_join_files;
use super::process::run_streaming;

/// Where kubeadm keeps the cluster configuration, kubeconfigs and PKI.
pub const KUBERNETES_DIR: &str = "/etc/kubernetes";
/// The kubelet's certificate directory.
pub const KUBELET_PKI_DIR: &str = "/var/lib/kubelet/pki";
/// The init configuration's file name in the work directory.
pub const INIT_CONFIG_NAME: &str = "kubeadm-init.yaml";
/// The join configuration's file name in the work directory.
pub const JOIN_CONFIG_NAME: &str = "kubeadm-join.yaml";
/// First Kubernetes minor version whose kubeadm reads `v1beta4`.
pub const V1BETA4_MIN_MINOR: u32 = 31;
/// Largest admin kubeconfig read, in bytes.
pub const MAX_KUBECONFIG_SIZE: u64 = 1024 * 1024;

/// The kubeadm configuration API version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubeadmApi {
    /// `kubeadm.k8s.io/v1beta3` (Kubernetes 1.22–1.30).
    V1Beta3,
    /// `kubeadm.k8s.io/v1beta4` (Kubernetes ≥ 1.31).
    V1Beta4,
}

impl KubeadmApi {
    /// The API for Kubernetes `version` (`v1.31.1`); unparsable versions get the newest.
    pub fn for_version(version: &str) -> KubeadmApi {
        let minor = version.trim_start_matches('v').split('.').nth(1).and_then(|m| m.parse::<u32>().ok());
        match minor {
            Some(m) if m < V1BETA4_MIN_MINOR => KubeadmApi::V1Beta3,
            _ => KubeadmApi::V1Beta4,
        }
    }

    /// The `apiVersion` value.
    pub fn api_version(self) -> &'static str {
        match self {
            KubeadmApi::V1Beta3 => "kubeadm.k8s.io/v1beta3",
            KubeadmApi::V1Beta4 => "kubeadm.k8s.io/v1beta4",
        }
    }
}

/// A YAML double-quoted scalar.
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// The `kubeadm init` configuration.
pub fn init_config(p: &InitParams) -> String {
    let api = KubeadmApi::for_version(&p.kubernetes_version).api_version();
    let mut y = format!(
        "apiVersion: {api}\nkind: InitConfiguration\nnodeRegistration:\n  name: {node}\n---\n\
         apiVersion: {api}\nkind: ClusterConfiguration\nclusterName: {cluster}\nkubernetesVersion: {version}\n\
         networking:\n  serviceSubnet: {svc}\napiServer:\n  certSANs:",
        node = q(&p.node_name),
        cluster = q(&p.cluster_name),
        version = q(&p.kubernetes_version),
        svc = q(&p.service_cidr),
    );
    if p.apiserver_cert_sans.is_empty() {
        y.push_str(" []\n");
    } else {
        y.push('\n');
        for san in &p.apiserver_cert_sans {
            let _ = writeln!(y, "  - {}", q(san));
        }
    }
    y
}

/// The `kubeadm join` configuration (contains the bootstrap token).
pub fn join_config(p: &JoinParams) -> Zeroizing<String> {
    let api = KubeadmApi::for_version(&p.kubernetes_version).api_version();
    let mut y = Zeroizing::new(format!(
        "apiVersion: {api}\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: {ep}\n    \
         token: {token}\n    caCertHashes:\n    - {hash}\nnodeRegistration:\n  name: {node}\n",
        ep = q(&p.api_server_endpoint),
        token = q(&p.token),
        hash = q(&p.ca_cert_hash),
        node = q(&p.node_name),
    ));
    if p.control_plane {
        y.push_str("controlPlane: {}\n");
    }
    y
}

/// Runs the real `kubeadm`.
#[derive(Debug)]
pub struct KubeadmBackend {
    program: PathBuf,
    work_dir: PathBuf,
    kubernetes_dir: PathBuf,
    kubelet_pki_dir: PathBuf,
}

impl KubeadmBackend {
    /// `program` (normally `kubeadm`), writing its configuration files into `work_dir`, with kubeadm's
    /// standard directories ([`KUBERNETES_DIR`], [`KUBELET_PKI_DIR`]).
    pub fn new(program: PathBuf, work_dir: &Path) -> KubeadmBackend {
        KubeadmBackend {
            program,
            work_dir: work_dir.to_owned(),
            kubernetes_dir: PathBuf::from(KUBERNETES_DIR),
            kubelet_pki_dir: PathBuf::from(KUBELET_PKI_DIR),
        }
    }

    /// Uses other directories than kubeadm's defaults (tests).
    pub fn with_dirs(mut self, kubernetes_dir: &Path, kubelet_pki_dir: &Path) -> KubeadmBackend {
        kubernetes_dir.clone_into(&mut self.kubernetes_dir);
        kubelet_pki_dir.clone_into(&mut self.kubelet_pki_dir);
        self
    }
}

impl ClusterBackend for KubeadmBackend {
    fn name(&self) -> &'static str {
        "kubeadm"
    }

    fn init(&self, params: &InitParams, log: &mut dyn FnMut(&str)) -> Result<InitOutput, BackendError> {
        let config = self.work_dir.join(INIT_CONFIG_NAME);
        write_atomic(&config, init_config(params).as_bytes(), SECRET_FILE_MODE)?;
        log(&format!("running {} init --config {}", self.program.display(), config.display()));
        let mut cmd = Command::new(&self.program);
        cmd.arg("init").arg("--config").arg(&config).arg("--skip-token-print");
        run_streaming(cmd, log).map_err(BackendError::Command)?;
        let admin = self.kubernetes_dir.join("admin.conf");
        let read = || -> std::io::Result<Vec<u8>> {
            use std::io::Read;
            let mut out = Vec::new();
            std::fs::File::open(&admin)?.take(MAX_KUBECONFIG_SIZE).read_to_end(&mut out)?;
            Ok(out)
        };
        let kubeconfig = read().map_err(|source| super::atomic::FileError { path: admin.clone(), source })?;
        Ok(InitOutput { kubeconfig: Zeroizing::new(kubeconfig) })
    }

    fn restart(&self, role: super::state::Role, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        // kubeadm installed the kubelet's configuration (and, on a control-plane node, the static pods it
        // starts) on the state disk; the kubelet only needs starting again.
        log(&format!("restarting the kubelet ({role}): systemctl restart kubelet"));
        let mut cmd = Command::new("systemctl");
        cmd.args(["restart", "kubelet"]);
        run_streaming(cmd, log).map_err(BackendError::Command)
    }

    fn join(&self, params: &JoinParams, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
        let written = write_join_files(
            &self.kubernetes_dir.join("pki"),
            &self.kubelet_pki_dir,
            &params.kubelet_cert_pem,
            &params.kubelet_key_pem,
            &params.control_plane_files,
        )?;
        log(&format!("wrote {} certificate and key files", written.len()));
        let config = self.work_dir.join(JOIN_CONFIG_NAME);
        write_atomic(&config, join_config(params).as_bytes(), SECRET_FILE_MODE)?;
        log(&format!("running {} join --config {}", self.program.display(), config.display()));
        let mut cmd = Command::new(&self.program);
        cmd.arg("join").arg("--config").arg(&config);
        run_streaming(cmd, log).map_err(BackendError::Command)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::process::CommandError;

    pub(crate) fn init_params() -> InitParams {
        InitParams {
            node_name: "node-1".into(),
            cluster_name: "demo".into(),
            kubernetes_version: "v1.31.1".into(),
            apiserver_cert_sans: vec!["10.0.0.1".into(), "api.example".into()],
            service_cidr: "10.96.0.0/12".into(),
            api_server_endpoint: "10.0.0.1:6443".into(),
        }
    }

    fn join_params(control_plane: bool) -> JoinParams {
        JoinParams {
            node_name: "node-2".into(),
            control_plane,
            api_server_endpoint: "10.0.0.1:6443".into(),
            token: Zeroizing::new("abcdef.0123456789abcdef".into()),
            ca_cert_hash: format!("sha256:{}", "ab".repeat(32)),
            kubernetes_version: "v1.30.4".into(),
            kubelet_cert_pem: b"CERT".to_vec(),
            kubelet_key_pem: Zeroizing::new(b"KEY".to_vec()),
            control_plane_files: vec![],
        }
    }

    #[test]
    fn api_versions() {
        assert_eq!(KubeadmApi::for_version("v1.31.1"), KubeadmApi::V1Beta4);
        assert_eq!(KubeadmApi::for_version("v1.33.0"), KubeadmApi::V1Beta4);
        assert_eq!(KubeadmApi::for_version("v1.30.4"), KubeadmApi::V1Beta3);
        assert_eq!(KubeadmApi::for_version("1.29.0"), KubeadmApi::V1Beta3);
        assert_eq!(KubeadmApi::for_version("garbage"), KubeadmApi::V1Beta4);
    }

    #[test]
    fn init_configuration() {
        let y = init_config(&init_params());
        assert_eq!(
            y,
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: \"node-1\"\n---\n\
             apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: \"demo\"\n\
             kubernetesVersion: \"v1.31.1\"\nnetworking:\n  serviceSubnet: \"10.96.0.0/12\"\napiServer:\n  certSANs:\n\
             \x20 - \"10.0.0.1\"\n  - \"api.example\"\n"
        );
        let mut p = init_params();
        p.apiserver_cert_sans.clear();
        p.cluster_name = "a\"\nkind: Evil".into();
        let y = init_config(&p);
        assert!(y.contains("certSANs: []"));
        assert!(y.contains(r#"clusterName: "a\"\nkind: Evil""#), "{y}");
    }

    #[test]
    fn join_configuration() {
        let y = join_config(&join_params(false));
        assert!(y.starts_with("apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n"));
        assert!(y.contains("    apiServerEndpoint: \"10.0.0.1:6443\"\n    token: \"abcdef.0123456789abcdef\"\n"));
        assert!(y.contains(&format!("    caCertHashes:\n    - \"sha256:{}\"\n", "ab".repeat(32))));
        assert!(!y.contains("controlPlane"));
        assert!(join_config(&join_params(true)).ends_with("controlPlane: {}\n"));
    }

    /// A fake kubeadm that prints and fails: the init fails with its streamed lines and exit status.
    #[test]
    fn failing_kubeadm_reports_its_output() {
        let tmp = attest_test_support::TempDir::new("kubeadm");
        let dir = tmp.path();
        let fake = dir.join("kubeadm");
        std::fs::write(&fake, "#!/bin/sh\necho \"[init] args: $*\"\necho '[preflight] failed' >&2\nexit 1\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let backend = KubeadmBackend::new(fake, dir).with_dirs(&dir.join("k8s"), &dir.join("kubelet"));
        let mut lines = Vec::new();
        let err = backend.init(&init_params(), &mut |l| lines.push(l.to_owned())).unwrap_err();
        assert!(lines.iter().any(|l| l.contains("[preflight] failed")), "{lines:?}");
        let init = lines.iter().find(|l| l.starts_with("[init] args:")).unwrap();
        assert!(init.ends_with(&format!("init --config {} --skip-token-print", dir.join(INIT_CONFIG_NAME).display())));
        match err {
            BackendError::Command(CommandError::Failed { status, tail, .. }) => {
                assert_eq!(status.code(), Some(1));
                assert!(tail.iter().any(|l| l.contains("[preflight] failed")));
            }
            other => panic!("{other:?}"),
        }
    }
}
