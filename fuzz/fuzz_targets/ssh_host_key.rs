//! The join service's SSH host-key parser and host-certificate principals (`attest_keys::ssh`, which the join
//! service re-exports as `attest_joinservice::ssh`): a host key (wire format or `authorized_keys` line) and
//! principals from the input; never panics, refuses every principal that is not the node's own name, and a
//! certificate it issues is an `authorized_keys` line whose blob names its own type.
#![no_main]

use attest_keys::ssh;
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;

const NODE: &str = "node-1";
const DOMAIN: &str = "cluster.example";

fuzz_target!(|data: &[u8]| {
    static CA: std::sync::OnceLock<ssh::SshCa> = std::sync::OnceLock::new();
    let ca = CA.get_or_init(|| ssh::SshCa::from_seed(&[7; 32]).expect("a 32-byte seed"));
    // Host key, then principals separated by newlines after the first 0xFF.
    let (key, rest) = match data.iter().position(|b| *b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let principals: Vec<String> = String::from_utf8_lossy(rest).split('\n').map(str::to_owned).collect();
    let principals = if rest.is_empty() { Vec::new() } else { principals };
    let Ok(cert) = ca.sign_host_key(key, &principals, NODE, &[DOMAIN.to_owned()]) else { return };
    for p in &principals {
        assert!(p == NODE || *p == format!("{NODE}.{DOMAIN}"), "issued for a principal not the node's own: {p:?}");
    }
    let text = std::str::from_utf8(&cert).expect("an authorized_keys line is ASCII");
    let (kind, blob) = text.trim_end().split_once(' ').expect("type and blob");
    assert!(kind.ends_with("-cert-v01@openssh.com"), "{kind}");
    let blob = base64::engine::general_purpose::STANDARD.decode(blob).expect("base64");
    assert_eq!(&blob[4..4 + kind.len()], kind.as_bytes());
});
