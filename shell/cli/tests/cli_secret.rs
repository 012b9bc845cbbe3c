//! `attest secret new`: a fresh master secret, 0600, loadable by the key service, never overwritten and
//! never printed; `attest secret key-service-pki`: the key service's mutual-TLS PKI, keys 0600, never
//! replaced.

mod common;

use attest_keyservice::MasterSecret;
use base64::Engine as _;
use common::{attest, scratch};
use std::os::unix::fs::PermissionsExt;

#[test]
fn new_master_secret_is_private_loadable_and_never_overwritten() {
    let path = scratch("master-secret.json");
    let _ = std::fs::remove_file(&path);
    let p = path.display().to_string();

    let run = attest(std::path::Path::new("."), &["secret", "new", "--out", &p]);
    assert_eq!(run.code, 0, "{run:?}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let secret = MasterSecret::from_file(&path).unwrap();
    assert_eq!(secret.key().len(), 32);
    assert_eq!(secret.salt().len(), 32);
    let b64 = base64::engine::general_purpose::STANDARD;
    for shown in [&run.stdout, &run.stderr] {
        assert!(!shown.contains(&b64.encode(secret.key())) && !shown.contains(&hex::encode(secret.key())));
    }

    // A second secret differs; the existing file is refused and left as it was.
    let before = std::fs::read(&path).unwrap();
    let again = attest(std::path::Path::new("."), &["secret", "new", "--out", &p]);
    assert_eq!(again.code, 2, "{again:?}");
    assert!(again.stderr.contains("already exists"), "{again:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let other = scratch("master-secret-2.json");
    let _ = std::fs::remove_file(&other);
    assert_eq!(attest(std::path::Path::new("."), &["secret", "new", "--out", &other.display().to_string()]).code, 0);
    assert_ne!(MasterSecret::from_file(&other).unwrap().key(), secret.key());
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&other);
}

#[test]
fn key_service_pki_is_created_once_with_private_keys() {
    let dir = scratch("kms-pki");
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let r = attest(&dir, &["secret", "key-service-pki", "--out", &d]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("created"), "{r:?}");
    for (f, mode) in [("ca.key", 0o600), ("key-service.key", 0o600), ("join-service.key", 0o600), ("ca.crt", 0o644)] {
        assert_eq!(std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777, mode, "{f}");
    }
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let r = attest(&dir, &["secret", "key-service-pki", "--out", &d]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("kept"), "{r:?}");
    assert_eq!(std::fs::read(dir.join("ca.crt")).unwrap(), ca, "an existing CA is never replaced");
}
