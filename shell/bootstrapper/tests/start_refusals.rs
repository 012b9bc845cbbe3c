//! `attest-bootstrapper` refuses to start (exit 3, before it touches the TPM, writing nothing) when it would
//! otherwise run on trust it cannot have: no `kubeadm` for the kubeadm backend (never a silent dry run, also
//! for `--backend auto`), a join service it could not verify — an unsigned or altered measurements file, an
//! SNP join service variant without a pinned launch measurement (also an SNP node's own variant, which its join
//! service is expected to attest with by default), a `qemu-vtpm` join service without the CA of its EK
//! certificate. A chosen dry run is announced.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_attest-bootstrapper");

fn temp_dir(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("boot-refusals-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the bootstrapper with a TPM nobody serves (it must refuse before opening it) and `extra` flags, with
/// `PATH` holding no `kubeadm`.
fn run(dir: &Path, extra: &[String]) -> (Option<i32>, String) {
    std::fs::write(dir.join("init-secret.sha256"), format!("{}\n", "ab".repeat(32))).unwrap();
    let out = Command::new(BIN)
        .env("PATH", dir.join("no-bin"))
        .arg("--tpm=swtpm:host=127.0.0.1,port=1")
        .arg(format!("--state-dir={}", dir.join("state").display()))
        .arg(format!("--init-secret-hash={}", dir.join("init-secret.sha256").display()))
        .arg("--disk=key-file")
        .arg("--init-listen=127.0.0.1:0")
        .arg("--node-name=node-1")
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    (out.status.code(), text)
}

fn signed_measurements(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use openssl::ec::{EcGroup, EcKey};
    let text = format!(r#"{{"4":{{"expected":"{}","warnOnly":false}}}}"#, "11".repeat(32));
    let group = EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
    let key = openssl::pkey::PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
    let mut signer = openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), &key).unwrap();
    let (file, sig, public) = (dir.join("m.json"), dir.join("m.json.sig"), dir.join("m.pub"));
    std::fs::write(&file, &text).unwrap();
    std::fs::write(&sig, signer.sign_oneshot_to_vec(text.as_bytes()).unwrap()).unwrap();
    std::fs::write(&public, key.public_key_to_pem().unwrap()).unwrap();
    (file, sig, public)
}

#[test]
fn no_kubeadm_is_a_configuration_error_never_a_silent_dry_run() {
    let dir = temp_dir("kubeadm");
    for backend in ["kubeadm", "auto"] {
        let (code, text) = run(&dir, &[format!("--backend={backend}")]);
        assert_eq!(code, Some(3), "{backend}: {text}");
        assert!(text.contains("kubeadm is not on PATH"), "{backend}: {text}");
        assert!(!text.contains("DRY RUN"), "{backend}: {text}");
    }
    // The default is kubeadm too.
    let (code, text) = run(&dir, &[]);
    assert_eq!(code, Some(3), "{text}");
    // A dry run happens only when chosen, and says so (here it then stops at the TPM nobody serves).
    let (code, text) = run(&dir, &["--backend=dry-run".into()]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("DRY RUN (--backend dry-run)"), "{text}");
    assert!(!dir.join("state/node-state.json").exists());
}

#[test]
fn a_join_service_that_cannot_be_verified_stops_the_start() {
    let dir = temp_dir("join-trust");
    let (file, sig, public) = signed_measurements(&dir);
    let join = |extra: &[&str]| {
        let mut v: Vec<String> =
            vec!["--backend=dry-run".into(), "--join-service=127.0.0.1:1".into(), "--kds-url=offline".into()];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let m = format!("--measurements={}", file.display());
    let s = format!("--measurements-signature={}", sig.display());
    let k = format!("--measurements-public-key={}", public.display());
    let ek = format!("--join-service-ek-ca={}", public.display()); // any PEM: never reached in these cases

    // --join-service without measurements: a usage error.
    let (code, text) = run(&dir, &join(&[]));
    assert_eq!(code, Some(2), "{text}");
    // Unsigned.
    let (code, text) = run(&dir, &join(&[&m, &ek]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("must be signed") && text.contains(r#""event":"refused""#), "{text}");
    // Altered after signing.
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace("11", "12")).unwrap();
    let (code, text) = run(&dir, &join(&[&m, &s, &k, &ek]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("does not verify"), "{text}");
    let (file, sig, public) = signed_measurements(&dir);
    let (m, s, k) = (
        format!("--measurements={}", file.display()),
        format!("--measurements-signature={}", sig.display()),
        format!("--measurements-public-key={}", public.display()),
    );
    // An SNP join service variant without a pinned launch.
    let (code, text) = run(&dir, &join(&[&m, &s, &k, "--join-service-variant=gcp-sev-snp"]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("pins no launch measurement"), "{text}");
    // By default the join service is expected to attest with the node's own variant: an SNP node's service is
    // an SNP service, whose launch must be pinned (and which needs no EK CA).
    let (code, text) = run(&dir, &join(&[&m, &s, &k, "--variant=aws-sev-snp"]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("pins no launch measurement") && !text.contains("--join-service-ek-ca"), "{text}");
    // A qemu-vtpm join service (a qemu-vtpm node's default) whose TPM the node has no EK CA for.
    let (code, text) = run(&dir, &join(&[&m, &s, &k, "--variant=qemu-vtpm"]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("--join-service-ek-ca"), "{text}");
    let (code, text) = run(&dir, &join(&[&m, &s, &k, "--join-service-variant=qemu-vtpm"]));
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("--join-service-ek-ca"), "{text}");
    assert!(!dir.join("state/node-state.json").exists(), "nothing written");
}

#[test]
fn join_endpoints_from_metadata_needs_a_plain_http_metadata_url_a_cloud_and_measurements() {
    let dir = temp_dir("metadata");
    let (file, sig, public) = signed_measurements(&dir);
    let trust = [
        format!("--measurements={}", file.display()),
        format!("--measurements-signature={}", sig.display()),
        format!("--measurements-public-key={}", public.display()),
        "--backend=dry-run".to_owned(),
    ];
    // Metadata services speak plain HTTP on a link-local address: TLS, a path or credentials in the URL are
    // usage errors at start, not a failure in every join round.
    for url in ["https://169.254.169.254", "http://169.254.169.254/latest", "http://user@169.254.169.254"] {
        let mut args = vec!["--join-endpoints-from=aws".to_owned(), format!("--metadata-url={url}")];
        args.extend(trust.iter().cloned());
        let (code, text) = run(&dir, &args);
        assert_eq!(code, Some(2), "{url}: {text}");
        assert!(text.contains("is not http://HOST[:PORT]"), "{url}: {text}");
    }
    let mut args = vec!["--join-endpoints-from=aws".to_owned(), "--join-endpoints-key=../iam".to_owned()];
    args.extend(trust.iter().cloned());
    assert_eq!(run(&dir, &args).0, Some(2));
    // Unknown cloud; no measurements to verify the join service with.
    assert_eq!(run(&dir, &["--join-endpoints-from=openstack".to_owned()]).0, Some(2));
    let (code, text) = run(&dir, &["--join-endpoints-from=gcp".to_owned()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("--measurements"), "{text}");
}
