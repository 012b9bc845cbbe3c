//! The real cluster initializer/joiner: `kubeadm init --config F` / `kubeadm join --config F` with a
//! configuration generated here, output streamed line by line.
//!
//! # Configuration (kubeadm configuration API `kubeadm.k8s.io/v1beta4`)
//!
//! Always `v1beta4` ([`KUBEADM_API_VERSION`]: introduced with Kubernetes 1.31, the version kubeadm reads
//! today; `v1beta3` is deprecated), so Kubernetes versions below 1.31 are refused before the node lock
//! ([`check_kubernetes_version`]). A highly available control plane needs every control-plane node to
//! agree on one `controlPlaneEndpoint` (a load balancer or DNS name in front of all API servers) and each to
//! advertise its own address:
//!
//! ```yaml
//! apiVersion: kubeadm.k8s.io/v1beta4         # init: two documents
//! kind: InitConfiguration
//! nodeRegistration:
//!   name: NODE
//!   kubeletExtraArgs:                        # v1beta4: a list of {name, value}
//!   - {name: node-ip, value: 10.0.0.1}       # --node-ip
//!   - {name: provider-id, value: …}          # --provider-id, where known
//! localAPIEndpoint: {advertiseAddress: 10.0.0.1, bindPort: 6443}   # with --node-ip
//! ---
//! kind: ClusterConfiguration
//! clusterName: NAME
//! kubernetesVersion: v1.31.1
//! controlPlaneEndpoint: HOST:PORT            # --control-plane-endpoint, else the API server endpoint
//! networking: {serviceSubnet: 10.96.0.0/12}
//! apiServer: {certSANs: [...]}
//! ```
//!
//! ```yaml
//! kind: JoinConfiguration                    # join
//! discovery: {bootstrapToken: {apiServerEndpoint: HOST:6443, token: T, caCertHashes: [sha256:…]}}
//! nodeRegistration: {name: NODE, kubeletExtraArgs: [...]}
//! controlPlane:                              # control-plane nodes only
//!   localAPIEndpoint: {advertiseAddress: 10.0.0.2, bindPort: 6443}   # with --node-ip; else {}
//! ```
//!
//! A second control-plane node joins with the cluster's CA files from its ticket (`control_plane_files`,
//! written to `/etc/kubernetes/pki` before `kubeadm join`), so no `certificateKey` or `kubeadm init
//! phase upload-certs` is involved. The tests check every generated file against a strict schema of these
//! v1beta4 fields, written from the published API reference (kubeadm itself is not installable here):
//! unknown fields and wrong types are refused.
//!
//! # The kubelet's serving certificate
//!
//! Where the kubelet reads it without flags: `kubelet.crt` / `kubelet.key` in its certificate directory
//! (`/var/lib/kubelet/pki`). A joining node gets it in its ticket (signed by the join service: clientAuth
//! and serverAuth, DNS SAN = the node name); the init node signs its own with the cluster CA it creates
//! before `kubeadm init` (which reuses an existing CA): DNS SAN = the node name, IP SAN = `--node-ip`.
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

use crate::atomic::{SECRET_FILE_MODE, write_atomic};
use crate::cluster::backend::{BackendError, ClusterBackend, InitOutput, InitParams, JoinParams};
use crate::cluster::files::{KUBELET_CERT_NAME, KUBELET_KEY_NAME, write_join_files};
use crate::cluster::process::run_streaming;

/// Where kubeadm keeps the cluster configuration, kubeconfigs and PKI.
pub const KUBERNETES_DIR: &str = "/etc/kubernetes";
/// The kubelet's certificate directory.
pub const KUBELET_PKI_DIR: &str = "/var/lib/kubelet/pki";
/// The init configuration's file name in the work directory.
pub const INIT_CONFIG_NAME: &str = "kubeadm-init.yaml";
/// The join configuration's file name in the work directory.
pub const JOIN_CONFIG_NAME: &str = "kubeadm-join.yaml";
/// The kubeadm configuration API written.
pub const KUBEADM_API_VERSION: &str = "kubeadm.k8s.io/v1beta4";
/// First Kubernetes minor version whose kubeadm reads `v1beta4`.
pub const V1BETA4_MIN_MINOR: u32 = 31;
/// Largest admin kubeconfig read, in bytes.
pub const MAX_KUBECONFIG_SIZE: u64 = 1024 * 1024;
/// The API server's port on each control-plane node.
pub const API_SERVER_BIND_PORT: u16 = 6443;

/// Refuses Kubernetes versions whose kubeadm cannot read [`KUBEADM_API_VERSION`] (`vMAJOR.MINOR…`).
pub fn check_kubernetes_version(version: &str) -> Result<(), &'static str> {
    let mut parts = version.strip_prefix('v').unwrap_or(version).split('.');
    let major = parts.next().and_then(|m| m.parse::<u32>().ok());
    let minor = parts.next().and_then(|m| m.parse::<u32>().ok());
    match (major, minor) {
        (Some(1), Some(m)) if m >= V1BETA4_MIN_MINOR => Ok(()),
        (Some(1), Some(_)) => Err("older than v1.31: kubeadm cannot read the v1beta4 configuration"),
        _ => Err("not vMAJOR.MINOR.PATCH of Kubernetes 1.x"),
    }
}

/// What the node knows of its network (flags of the command): what makes a highly available control
/// plane possible.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeNetwork {
    /// The node's address: the kubelet's `--node-ip`, the API server's advertise address on control-plane
    /// nodes, an IP SAN of the init node's kubelet serving certificate.
    pub node_ip: Option<std::net::IpAddr>,
    /// `HOST:PORT` in front of every API server (load balancer, DNS name); default: the API server endpoint.
    pub control_plane_endpoint: Option<String>,
    /// The cloud provider's id of this machine (the kubelet's `--provider-id`), where known.
    pub provider_id: Option<String>,
}

/// A YAML double-quoted scalar.
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

fn node_registration(y: &mut String, name: &str, net: &NodeNetwork) {
    let _ = writeln!(y, "nodeRegistration:\n  name: {}", q(name));
    let args: Vec<(&str, String)> = [
        net.node_ip.map(|ip| ("node-ip", ip.to_string())),
        net.provider_id.as_ref().map(|p| ("provider-id", p.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !args.is_empty() {
        y.push_str("  kubeletExtraArgs:\n");
        for (name, value) in args {
            let _ = writeln!(y, "  - name: {}\n    value: {}", q(name), q(&value));
        }
    }
}

fn local_api_endpoint(y: &mut String, indent: &str, net: &NodeNetwork) {
    if let Some(ip) = net.node_ip {
        let _ = writeln!(
            y,
            "{indent}localAPIEndpoint:\n{indent}  advertiseAddress: {}\n{indent}  bindPort: {API_SERVER_BIND_PORT}",
            q(&ip.to_string())
        );
    }
}

/// The `kubeadm init` configuration (module docs).
pub fn init_config(p: &InitParams, net: &NodeNetwork) -> String {
    let api = KUBEADM_API_VERSION;
    let mut y = format!("apiVersion: {api}\nkind: InitConfiguration\n");
    node_registration(&mut y, &p.node_name, net);
    local_api_endpoint(&mut y, "", net);
    let endpoint = net.control_plane_endpoint.as_deref().unwrap_or(&p.api_server_endpoint);
    let _ = write!(
        y,
        "---\napiVersion: {api}\nkind: ClusterConfiguration\nclusterName: {cluster}\nkubernetesVersion: {version}\n\
         controlPlaneEndpoint: {endpoint}\nnetworking:\n  serviceSubnet: {svc}\napiServer:\n  certSANs:",
        cluster = q(&p.cluster_name),
        version = q(&p.kubernetes_version),
        endpoint = q(endpoint),
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

/// The `kubeadm join` configuration (contains the bootstrap token; module docs).
pub fn join_config(p: &JoinParams, net: &NodeNetwork) -> Zeroizing<String> {
    let mut y = Zeroizing::new(format!(
        "apiVersion: {KUBEADM_API_VERSION}\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    \
         apiServerEndpoint: {ep}\n    token: {token}\n    caCertHashes:\n    - {hash}\n",
        ep = q(&p.api_server_endpoint),
        token = q(&p.token),
        hash = q(&p.ca_cert_hash),
    ));
    node_registration(&mut y, &p.node_name, net);
    if p.control_plane {
        if net.node_ip.is_some() {
            y.push_str("controlPlane:\n");
            local_api_endpoint(&mut y, "  ", net);
        } else {
            y.push_str("controlPlane: {}\n");
        }
    }
    y
}

/// Signs this node's kubelet serving (and client) certificate with the cluster CA of `pki` and writes it,
/// with its key, where the kubelet reads it (`kubelet_pki_dir/kubelet.{crt,key}`). Returns the paths.
pub fn write_kubelet_serving_cert(
    pki: &crate::cluster::pki::ClusterPki,
    node_name: &str,
    net: &NodeNetwork,
    kubelet_pki_dir: &Path,
) -> Result<Vec<PathBuf>, BackendError> {
    let (cert, key) = pki.kubelet_serving_cert(node_name, net.node_ip)?;
    let (cert_path, key_path) = (kubelet_pki_dir.join(KUBELET_CERT_NAME), kubelet_pki_dir.join(KUBELET_KEY_NAME));
    write_atomic(&key_path, &key, SECRET_FILE_MODE)?;
    write_atomic(&cert_path, &cert, crate::atomic::PUBLIC_FILE_MODE)?;
    Ok(vec![cert_path, key_path])
}

/// Runs the real `kubeadm`.
#[derive(Debug)]
pub struct KubeadmBackend {
    program: PathBuf,
    work_dir: PathBuf,
    kubernetes_dir: PathBuf,
    kubelet_pki_dir: PathBuf,
    network: NodeNetwork,
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
            network: NodeNetwork::default(),
        }
    }

    /// Uses this node's network facts in the configurations.
    pub fn with_network(mut self, network: NodeNetwork) -> KubeadmBackend {
        self.network = network;
        self
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
        // The cluster CA first (kubeadm init reuses it), so the kubelet's serving certificate can be signed.
        let pki = crate::cluster::pki::ClusterPki::create_or_load(&self.kubernetes_dir)?;
        let written = write_kubelet_serving_cert(&pki, &params.node_name, &self.network, &self.kubelet_pki_dir)?;
        log(&format!("kubelet serving certificate written to {}", written[0].display()));
        let config = self.work_dir.join(INIT_CONFIG_NAME);
        write_atomic(&config, init_config(params, &self.network).as_bytes(), SECRET_FILE_MODE)?;
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
        let kubeconfig = read().map_err(|source| crate::atomic::FileError { path: admin.clone(), source })?;
        Ok(InitOutput { kubeconfig: Zeroizing::new(kubeconfig) })
    }

    fn restart(&self, role: crate::life::state::Role, log: &mut dyn FnMut(&str)) -> Result<(), BackendError> {
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
        write_atomic(&config, join_config(params, &self.network).as_bytes(), SECRET_FILE_MODE)?;
        log(&format!("running {} join --config {}", self.program.display(), config.display()));
        let mut cmd = Command::new(&self.program);
        cmd.arg("join").arg("--config").arg(&config);
        run_streaming(cmd, log).map_err(BackendError::Command)
    }
}

#[cfg(test)]
mod schema;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::process::CommandError;

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

    pub(crate) fn join_params(control_plane: bool) -> JoinParams {
        JoinParams {
            node_name: "node-2".into(),
            control_plane,
            api_server_endpoint: "10.0.0.1:6443".into(),
            token: Zeroizing::new("abcdef.0123456789abcdef".into()),
            ca_cert_hash: format!("sha256:{}", "ab".repeat(32)),
            kubernetes_version: "v1.32.4".into(),
            kubelet_cert_pem: b"CERT".to_vec(),
            kubelet_key_pem: Zeroizing::new(b"KEY".to_vec()),
            control_plane_files: vec![],
        }
    }

    #[test]
    fn kubernetes_versions() {
        assert!(check_kubernetes_version("v1.31.1").is_ok());
        assert!(check_kubernetes_version("v1.33.0").is_ok());
        assert!(check_kubernetes_version("1.32.2").is_ok());
        assert!(check_kubernetes_version("v1.30.4").unwrap_err().contains("v1beta4"));
        assert!(check_kubernetes_version("v2.0.0").is_err());
        assert!(check_kubernetes_version("garbage").is_err());
    }

    fn network() -> NodeNetwork {
        NodeNetwork {
            node_ip: Some("10.0.0.2".parse().unwrap()),
            control_plane_endpoint: Some("api.cluster.example:6443".into()),
            provider_id: Some("gce://project/zone/node-2".into()),
        }
    }

    #[test]
    fn init_configuration() {
        let y = init_config(&init_params(), &NodeNetwork::default());
        assert_eq!(
            y,
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: \"node-1\"\n---\n\
             apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: \"demo\"\n\
             kubernetesVersion: \"v1.31.1\"\ncontrolPlaneEndpoint: \"10.0.0.1:6443\"\nnetworking:\n  \
             serviceSubnet: \"10.96.0.0/12\"\napiServer:\n  certSANs:\n  - \"10.0.0.1\"\n  - \"api.example\"\n"
        );
        let y = init_config(&init_params(), &network());
        assert!(y.contains("  kubeletExtraArgs:\n  - name: \"node-ip\"\n    value: \"10.0.0.2\"\n"), "{y}");
        assert!(y.contains("  - name: \"provider-id\"\n    value: \"gce://project/zone/node-2\"\n"), "{y}");
        assert!(y.contains("localAPIEndpoint:\n  advertiseAddress: \"10.0.0.2\"\n  bindPort: 6443\n"), "{y}");
        assert!(y.contains("controlPlaneEndpoint: \"api.cluster.example:6443\"\n"), "{y}");
        let mut p = init_params();
        p.apiserver_cert_sans.clear();
        p.cluster_name = "a\"\nkind: Evil".into();
        let y = init_config(&p, &NodeNetwork::default());
        assert!(y.contains("certSANs: []"));
        assert!(y.contains(r#"clusterName: "a\"\nkind: Evil""#), "{y}");
    }

    #[test]
    fn join_configuration() {
        let y = join_config(&join_params(false), &NodeNetwork::default());
        assert!(y.starts_with("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"));
        assert!(y.contains("    apiServerEndpoint: \"10.0.0.1:6443\"\n    token: \"abcdef.0123456789abcdef\"\n"));
        assert!(y.contains(&format!("    caCertHashes:\n    - \"sha256:{}\"\n", "ab".repeat(32))));
        assert!(!y.contains("controlPlane"));
        assert!(join_config(&join_params(true), &NodeNetwork::default()).ends_with("controlPlane: {}\n"));
        let y = join_config(&join_params(true), &network());
        assert!(
            y.ends_with("controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: \"10.0.0.2\"\n    bindPort: 6443\n"),
            "{}",
            *y
        );
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
