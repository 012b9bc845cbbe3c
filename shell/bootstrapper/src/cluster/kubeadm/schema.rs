//! The generated kubeadm configurations against a strict schema of `kubeadm.k8s.io/v1beta4`.
//!
//! kubeadm is not installable on this machine, so its own `kubeadm config validate` cannot run here. The
//! types below are written from the published v1beta4 API reference ("kubeadm Configuration (v1beta4)":
//! `InitConfiguration`, `ClusterConfiguration`, `JoinConfiguration` and the types they use), restricted to
//! the fields this crate emits plus their documented siblings, with kubeadm's field names and types; every
//! struct refuses unknown fields, so a field that v1beta4 does not have (a typo, a v1beta3-only shape such as
//! `kubeletExtraArgs` as a map) fails the test. What the schema cannot show — that kubeadm accepts the
//! values — is left to a machine with kubeadm.

#![allow(dead_code, non_snake_case)] // the schema mirrors kubeadm's camelCase field names; fields are parsed, not read

use super::tests::{init_params, join_params};
use super::*;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arg {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Taint {
    key: String,
    value: Option<String>,
    effect: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeRegistrationOptions {
    name: Option<String>,
    criSocket: Option<String>,
    taints: Option<Vec<Taint>>,
    /// v1beta4: a list of `{name, value}` (a map in v1beta3).
    kubeletExtraArgs: Option<Vec<Arg>>,
    ignorePreflightErrors: Option<Vec<String>>,
    imagePullPolicy: Option<String>,
    imagePullSerial: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiEndpoint {
    advertiseAddress: Option<String>,
    bindPort: Option<i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InitConfiguration {
    apiVersion: String,
    kind: String,
    bootstrapTokens: Option<Vec<serde_yaml_ng::Value>>,
    dryRun: Option<bool>,
    nodeRegistration: Option<NodeRegistrationOptions>,
    localAPIEndpoint: Option<ApiEndpoint>,
    certificateKey: Option<String>,
    skipPhases: Option<Vec<String>>,
    patches: Option<serde_yaml_ng::Value>,
    timeouts: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Networking {
    serviceSubnet: Option<String>,
    podSubnet: Option<String>,
    dnsDomain: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiServer {
    extraArgs: Option<Vec<Arg>>,
    extraVolumes: Option<Vec<serde_yaml_ng::Value>>,
    extraEnvs: Option<Vec<serde_yaml_ng::Value>>,
    certSANs: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterConfiguration {
    apiVersion: String,
    kind: String,
    etcd: Option<serde_yaml_ng::Value>,
    networking: Option<Networking>,
    kubernetesVersion: Option<String>,
    controlPlaneEndpoint: Option<String>,
    apiServer: Option<ApiServer>,
    controllerManager: Option<serde_yaml_ng::Value>,
    scheduler: Option<serde_yaml_ng::Value>,
    dns: Option<serde_yaml_ng::Value>,
    proxy: Option<serde_yaml_ng::Value>,
    certificatesDir: Option<String>,
    imageRepository: Option<String>,
    featureGates: Option<std::collections::BTreeMap<String, bool>>,
    clusterName: Option<String>,
    encryptionAlgorithm: Option<String>,
    certificateValidityPeriod: Option<String>,
    caCertificateValidityPeriod: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BootstrapTokenDiscovery {
    token: String,
    apiServerEndpoint: Option<String>,
    caCertHashes: Option<Vec<String>>,
    unsafeSkipCAVerification: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Discovery {
    bootstrapToken: Option<BootstrapTokenDiscovery>,
    file: Option<serde_yaml_ng::Value>,
    tlsBootstrapToken: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinControlPlane {
    localAPIEndpoint: Option<ApiEndpoint>,
    certificateKey: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinConfiguration {
    apiVersion: String,
    kind: String,
    dryRun: Option<bool>,
    nodeRegistration: Option<NodeRegistrationOptions>,
    caCertPath: Option<String>,
    discovery: Discovery,
    controlPlane: Option<JoinControlPlane>,
    skipPhases: Option<Vec<String>>,
    patches: Option<serde_yaml_ng::Value>,
    timeouts: Option<serde_yaml_ng::Value>,
}

fn networks() -> [NodeNetwork; 2] {
    [
        NodeNetwork::default(),
        NodeNetwork {
            node_ip: Some("fd00::2".parse().unwrap()),
            control_plane_endpoint: Some("api.cluster.example:6443".into()),
            provider_id: Some("aws:///eu-central-1a/i-0123456789".into()),
        },
    ]
}

#[test]
fn init_configuration_matches_the_v1beta4_schema() {
    for net in networks() {
        let text = init_config(&init_params(), &net);
        let docs: Vec<&str> = text.split("\n---\n").collect();
        assert_eq!(docs.len(), 2);
        let init: InitConfiguration = serde_yaml_ng::from_str(docs[0]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!((init.apiVersion.as_str(), init.kind.as_str()), (KUBEADM_API_VERSION, "InitConfiguration"));
        let args = init.nodeRegistration.unwrap().kubeletExtraArgs.unwrap_or_default();
        assert_eq!(args.iter().any(|a| a.name == "node-ip"), net.node_ip.is_some());
        assert_eq!(init.localAPIEndpoint.is_some(), net.node_ip.is_some());
        let cluster: ClusterConfiguration = serde_yaml_ng::from_str(docs[1]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(cluster.kind, "ClusterConfiguration");
        assert!(cluster.controlPlaneEndpoint.is_some(), "every init names the control-plane endpoint");
    }
}

#[test]
fn join_configurations_match_the_v1beta4_schema() {
    for net in networks() {
        for control_plane in [false, true] {
            let text = join_config(&join_params(control_plane), &net);
            let join: JoinConfiguration = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{}", *text));
            assert_eq!((join.apiVersion.as_str(), join.kind.as_str()), (KUBEADM_API_VERSION, "JoinConfiguration"));
            assert!(join.discovery.bootstrapToken.unwrap().caCertHashes.unwrap().len() == 1);
            assert_eq!(join.controlPlane.is_some(), control_plane);
            if let Some(cp) = join.controlPlane {
                assert_eq!(cp.localAPIEndpoint.is_some(), net.node_ip.is_some());
                assert!(cp.certificateKey.is_none(), "the CA files come in the ticket, not through upload-certs");
            }
        }
    }
}

#[test]
fn the_schema_refuses_fields_v1beta4_does_not_have() {
    // v1beta3's map form of kubeletExtraArgs, and an unknown field.
    let v1beta3 = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    node-ip: 10.0.0.1\n";
    assert!(serde_yaml_ng::from_str::<InitConfiguration>(v1beta3).is_err());
    let unknown = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoints: x\n";
    assert!(serde_yaml_ng::from_str::<ClusterConfiguration>(unknown).is_err());
}
