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
    // The real cluster backend, never a dry run.
    assert!(args.windows(2).any(|w| w == ["--backend", "kubeadm"]), "the unit must use the kubeadm backend");
    assert!(!args.iter().any(|a| a.contains("dry-run") || a.contains("dangerous")), "{args:?}");
}
