//! The systemd unit of `attest-bootstrapper` in `deploy/` stays runnable (parsing and flag checks in
//! `attest_test_support::deploy`).

use attest_test_support::deploy::*;
use std::collections::BTreeSet;

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
    // The bootstrapper runs for the node's life (verify service): restarted on failure, except where a
    // restart cannot help; exit 4 (marked for reset) reboots the node.
    assert_eq!(get("Service", "Type"), Some("simple"));
    assert_eq!(get("Service", "Restart"), Some("on-failure"));
    let prevent: BTreeSet<&str> = get("Service", "RestartPreventExitStatus").unwrap().split_whitespace().collect();
    assert_eq!(prevent, BTreeSet::from(["2", "3", "4", "5", "6"]));
    let post = get("Service", "ExecStopPost").expect("ExecStopPost");
    assert!(post.contains("\"$EXIT_STATUS\" = 4") && post.contains("reboot"), "{post}");
    for ns in ["PrivateTmp", "ProtectSystem", "ProtectHome"] {
        assert_eq!(get("Service", ns), None, "{ns} would hide the state-disk mount from the kubelet");
    }
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
    for r in ["tpm", "state-dir", "init-secret-hash", "init-listen", "disk", "recover-listen", "verify-listen"] {
        assert!(used.iter().any(|u| u == r), "the unit lacks --{r}");
    }
    assert!(args.windows(2).any(|w| w == ["--init-listen", "0.0.0.0:9000"]), "init server on port 9000");
    // The real cluster backend, never a dry run.
    assert!(args.windows(2).any(|w| w == ["--backend", "kubeadm"]), "the unit must use the kubeadm backend");
    assert!(!args.iter().any(|a| a.contains("dry-run") || a.contains("dangerous")), "{args:?}");
    assert!(args.windows(2).any(|w| w[0] == "--disk" && w[1].starts_with("luks:")), "a LUKS2 state disk");
    assert!(args.windows(2).any(|w| w == ["--verify-listen", "0.0.0.0:30081"]), "verify service on 30081");
    assert!(args.windows(2).any(|w| w == ["--recover-listen", "0.0.0.0:9999"]), "recovery on 9999");
}
