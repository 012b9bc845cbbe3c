//! Checks of the deployment files in `deploy/` against the binaries they run (feature `deploy`): each
//! service crate's `tests/deploy.rs` reads its manifest or unit and compares the flags it passes with what
//! its own binary's `--help` documents (`CARGO_BIN_EXE_*` exists only inside the binary's package, so the
//! check lives with each binary and the shared parts live here).

use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The text of `deploy/<rel>` in the repository.
pub fn deploy(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `--flag` a binary's `--help` documents.
pub fn flags_of(binary: &str) -> BTreeSet<String> {
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
pub fn flag_names<'a>(args: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    args.into_iter()
        .filter_map(|a| a.strip_prefix("--"))
        .map(|a| a.split('=').next().unwrap_or("").to_owned())
        .collect()
}

/// The YAML documents of a multi-document file.
pub fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("valid YAML"))
        .collect()
}

/// A manifest's `kind`.
pub fn kind(doc: &Value) -> &str {
    doc["kind"].as_str().expect("every document has a kind")
}

/// The first document of kind `k`.
pub fn find<'a>(docs: &'a [Value], k: &str) -> &'a Value {
    docs.iter().find(|d| kind(d) == k).unwrap_or_else(|| panic!("no {k}"))
}

/// The strings of a YAML sequence (none for anything else).
pub fn strs(v: &Value) -> Vec<&str> {
    v.as_sequence().map(|s| s.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Checks one workload's pod template: flags known to `binary`, required flags present, every volume mount
/// backed by a volume, every named port probe pointing at a declared port.
#[track_caller]
pub fn check_workload(workload: &Value, binary: &str, required: &[&str]) {
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
