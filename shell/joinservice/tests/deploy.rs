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
            "tpm",
            "measurements",
            "measurements-signature",
            "measurements-public-key",
            "measurement-salt",
            "ak-registry",
            "pki-dir",
            "api-server-endpoint",
            "kubernetes-config",
            "key-service-ca",
            "key-service-cert",
            "key-service-key",
            "cluster-state",
        ],
    );
    // The node's TPM reaches the unprivileged container through a device plugin.
    let resources = &ds["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(resources["limits"]["squat.ai/tpm"].as_u64(), Some(1));
    // Real backends only: bootstrap tokens through the API server, never the dry run; no waiver flags.
    let args = strs(&ds["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert!(args.contains(&"--token-issuer=kubernetes"), "{args:?}");
    assert!(!args.iter().any(|a| a.contains("dry-run") || a.contains("dangerous")), "{args:?}");
    // Its pod carries the label the key service's NetworkPolicy admits, and joining nodes reach it on the
    // node port.
    assert_eq!(ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"], "attest-join-service");
    let service = find(&docs, "Service");
    assert_eq!(service["spec"]["type"], "NodePort");
    assert_eq!(service["spec"]["ports"][0]["nodePort"].as_u64(), Some(30090));
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
