//! The deployment files in `deploy/` stay runnable: the Kubernetes manifests parse, reference only what they
//! define, grant no more than the join service needs, and pass only flags the binaries accept (read from
//! each binary's `--help`); the systemd unit does the same for the bootstrapper.

use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn deploy(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `--flag` a binary's `--help` documents.
fn flags_of(binary: &str) -> BTreeSet<String> {
    let out = Command::new(binary).arg("--help").output().expect("running --help");
    assert!(out.status.success(), "{binary} --help failed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.trim_end_matches([',', '.', ']', ')']).split(['=', '[', '<']).next().unwrap_or("").to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The flag names of arguments like `--name=value` or `--name`.
fn flag_names<'a>(args: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    args.into_iter()
        .filter_map(|a| a.strip_prefix("--"))
        .map(|a| a.split('=').next().unwrap_or("").to_owned())
        .collect()
}

fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("valid YAML"))
        .collect()
}

fn kind(doc: &Value) -> &str {
    doc["kind"].as_str().expect("every document has a kind")
}

fn find<'a>(docs: &'a [Value], k: &str) -> &'a Value {
    docs.iter().find(|d| kind(d) == k).unwrap_or_else(|| panic!("no {k}"))
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_sequence().map(|s| s.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Checks one workload's pod template: flags known to `binary`, required flags present, every volume mount
/// backed by a volume, every named port probe pointing at a declared port.
fn check_workload(workload: &Value, binary: &str, required: &[&str]) {
    let spec = &workload["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    let known = flags_of(binary);
    let args = strs(&container["args"]);
    let used = flag_names(args.iter().copied());
    for f in &used {
        assert!(known.contains(f), "{binary}: manifest passes --{f}, which the binary does not accept");
    }
    for r in required {
        assert!(used.iter().any(|u| u == r), "{binary}: manifest lacks the required --{r}");
    }
    let volumes: BTreeSet<&str> =
        spec["volumes"].as_sequence().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    for m in container["volumeMounts"].as_sequence().unwrap() {
        let name = m["name"].as_str().unwrap();
        assert!(volumes.contains(name), "volume mount {name} has no volume");
    }
    let ports: BTreeSet<&str> =
        container["ports"].as_sequence().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    let probe = &container["readinessProbe"];
    for port in [&probe["tcpSocket"]["port"], &probe["httpGet"]["port"]] {
        if let Some(name) = port.as_str() {
            assert!(ports.contains(name), "probe port {name} is not declared");
        }
    }
    // Least privilege inside the container.
    let sc = &container["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strs(&sc["capabilities"]["drop"]), ["ALL"]);
    // Runs on control-plane nodes only (where the cluster CA and the master secret belong).
    assert!(spec["nodeSelector"]["node-role.kubernetes.io/control-plane"].is_string());
    assert!(
        spec["tolerations"].as_sequence().unwrap().iter().any(|t| t["key"] == "node-role.kubernetes.io/control-plane")
    );
}

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

#[test]
fn bootstrapper_systemd_unit() {
    let unit = deploy("systemd/attest-bootstrapper.service");
    // Sections and keys (continuation lines joined).
    let mut section = String::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let joined = unit.replace("\\\n", " ");
    for line in joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_owned();
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or_else(|| panic!("not key=value: {line}"));
        keys.push((section.clone(), k.to_owned(), v.to_owned()));
    }
    let get = |s: &str, k: &str| keys.iter().find(|(a, b, _)| a == s && b == k).map(|(_, _, v)| v.as_str());
    let sections: BTreeSet<&str> = keys.iter().map(|(s, _, _)| s.as_str()).collect();
    assert_eq!(sections, BTreeSet::from(["Install", "Service", "Unit"]));
    // The bootstrapper exits once bootstrapped: a oneshot unit that stays active.
    assert_eq!(get("Service", "Type"), Some("oneshot"));
    assert_eq!(get("Service", "RemainAfterExit"), Some("yes"));
    assert_eq!(get("Install", "WantedBy"), Some("multi-user.target"));

    let exec = get("Service", "ExecStart").expect("ExecStart");
    let mut words = exec.split_whitespace();
    assert!(words.next().unwrap().ends_with("/attest-bootstrapper"));
    let args: Vec<&str> = words.collect();
    let known = flags_of(env!("CARGO_BIN_EXE_attest-bootstrapper"));
    let used = flag_names(args.iter().copied());
    for f in &used {
        assert!(known.contains(f), "the unit passes --{f}, which attest-bootstrapper does not accept");
    }
    for r in ["tpm", "state-dir", "init-secret-hash", "init-listen"] {
        assert!(used.iter().any(|u| u == r), "the unit lacks --{r}");
    }
    assert!(args.windows(2).any(|w| w == ["--init-listen", "0.0.0.0:9000"]), "init server on port 9000");
}
