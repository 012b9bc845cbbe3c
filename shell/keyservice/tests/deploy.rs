//! The Kubernetes manifest of `key-service` in `deploy/` stays runnable (parsing and flag checks in
//! `attest_test_support::deploy`).

use attest_test_support::deploy::*;

#[test]
fn key_service_manifest() {
    let docs = documents(&deploy("kubernetes/key-service.yaml"));
    let deployment = find(&docs, "Deployment");
    check_workload(deployment, env!("CARGO_BIN_EXE_key-service"), &["listen", "master-secret"]);
    // The Service selects the Deployment's pods and targets a declared port.
    let service = find(&docs, "Service");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v);
    }
    assert_eq!(service["spec"]["type"], "ClusterIP");
    // The master secret comes from a Secret, read-only, owner-only.
    let volume = &deployment["spec"]["template"]["spec"]["volumes"][0];
    assert!(volume["secret"]["secretName"].is_string());
    assert_eq!(volume["secret"]["defaultMode"].as_u64(), Some(0o400));
}
