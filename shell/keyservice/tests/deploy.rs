//! The Kubernetes manifest of `key-service` in `deploy/` stays runnable (parsing and flag checks in
//! `attest_test_support::deploy`).

use attest_test_support::deploy::*;

#[test]
fn key_service_manifest() {
    let docs = documents(&deploy("kubernetes/key-service.yaml"));
    let deployment = find(&docs, "Deployment");
    check_workload(
        deployment,
        env!("CARGO_BIN_EXE_key-service"),
        &["listen", "master-secret", "tls-ca", "tls-cert", "tls-key", "allowed-client"],
    );
    // The Service selects the Deployment's pods and targets a declared port.
    let service = find(&docs, "Service");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v);
    }
    assert_eq!(service["spec"]["type"], "ClusterIP");
    // The master secret and the TLS key come from Secrets, read-only, owner-only.
    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_sequence().unwrap();
    assert_eq!(volumes.len(), 2);
    for volume in volumes {
        assert!(volume["secret"]["secretName"].is_string());
        assert_eq!(volume["secret"]["defaultMode"].as_u64(), Some(0o400));
    }
    // Only the join service may call, by its client certificate's name.
    let args = strs(&deployment["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert!(args.contains(&"--allowed-client=attest-join-service"), "{args:?}");
    // A NetworkPolicy admits only the join service's pods, on the gRPC port, and no egress.
    let policy = find(&docs, "NetworkPolicy");
    assert_eq!(policy["metadata"]["namespace"], "kube-system");
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"].as_mapping().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v, "the policy selects the key service's pods");
    }
    assert_eq!(strs(&policy["spec"]["policyTypes"]), ["Ingress", "Egress"]);
    let ingress = policy["spec"]["ingress"].as_sequence().unwrap();
    assert_eq!(ingress.len(), 1);
    let from = ingress[0]["from"].as_sequence().unwrap();
    assert_eq!(from.len(), 1);
    assert_eq!(from[0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "attest-join-service");
    assert_eq!(ingress[0]["ports"][0]["port"].as_u64(), Some(9010));
    assert_eq!(policy["spec"]["egress"].as_sequence().map(Vec::len), Some(0));
}
