//! The Kubernetes manifest of `join-service` in `deploy/` stays runnable (parsing and flag checks in
//! `attest_test_support::deploy`).

use attest_test_support::deploy::*;

#[test]
fn join_service_manifest() {
    let docs = documents(&deploy("kubernetes/join-service.yaml"));
    let ds = find(&docs, "DaemonSet");
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    check_workload(
        ds,
        env!("CARGO_BIN_EXE_join-service"),
        &[
            "listen",
            "measurements",
            "measurement-salt",
            "ak-registry",
            "pki-dir",
            "api-server-endpoint",
            "kubernetes-config",
        ],
    );
    // The pod's service account may create and delete Secrets in kube-system (bootstrap tokens), nothing
    // else, and the binding grants exactly that role to exactly that account.
    let role = find(&docs, "Role");
    assert_eq!(role["metadata"]["namespace"], "kube-system");
    let rules = role["rules"].as_sequence().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(strs(&rules[0]["apiGroups"]), [""]);
    assert_eq!(strs(&rules[0]["resources"]), ["secrets"]);
    assert_eq!(strs(&rules[0]["verbs"]), ["create", "delete"]);
    let binding = find(&docs, "RoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    let sa = find(&docs, "ServiceAccount");
    assert_eq!(binding["subjects"][0]["name"], sa["metadata"]["name"]);
    assert_eq!(ds["spec"]["template"]["spec"]["serviceAccountName"], sa["metadata"]["name"]);
    assert!(docs.iter().all(|d| kind(d) != "ClusterRole" && kind(d) != "ClusterRoleBinding"));
}
