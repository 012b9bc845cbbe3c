//! The files a join service under load needs, generated into one directory (`join-load setup`), and the
//! load generator's side of them (the software AKs' private keys).
//!
//! | file | what | read by |
//! |---|---|---|
//! | [`LOAD_AKS_FILE`] | the software AKs' PKCS#8 keys (`{"version":1,"aks":[{"kind","pkcs8"}]}`, hex) | the generator |
//! | [`AK_REGISTRY_FILE`] | the AK registry (`FileAkRegistry`) pinning every AK's digest, basis `pinned` | `--ak-registry` |
//! | [`MEASUREMENTS_FILE`] | PCRs 0..=15 of [`pcr_bank`], all enforced | `--measurements` |
//! | [`MEASUREMENTS_SIGNATURE_FILE`], [`MEASUREMENTS_PUBLIC_KEY_FILE`] | its detached ECDSA P-256 signature and the key | `--measurements-signature`, `--measurements-public-key` |
//! | [`KMS_PKI_DIR`] | the key-service PKI (`attest_keyservice::tls::generate_pki`) | `key-service --tls-*`, `join-service --key-service-*` |
//! | [`SALT_FILE`] | 32-byte measurement salt | `--measurement-salt` |
//! | [`MASTER_SECRET_FILE`] | a `kms://cluster-kms?key=…&salt=…` URI | `key-service --master-secret` |
//! | [`KUBERNETES_FILE`] | Kubernetes version and one component | `--kubernetes-config` |
//! | [`PKI_DIR`] | a kubeadm PKI (`attest_k8s::generate_pki`) | `--pki-dir` |
//!
//! The registry file is written through `FileAkRegistry::register`, as the registration service or an
//! operator pinning AKs would; the join service needs no option beyond its usual `--ak-registry`.

use std::path::Path;
use std::sync::Arc;

use attest_engine::variant::AkBasis;
use attest_keyservice::MasterSecret;
use attest_registration::FileAkRegistry;
use attest_test_support::tpm::{AkKind, PcrBank, SoftAk, sha256};
use zeroize::Zeroizing;

use super::issuer::SoftAkIssuer;

/// The software AKs' private keys (the generator's secret; the service never reads it).
pub const LOAD_AKS_FILE: &str = "load-aks.json";
/// The AK registry file pinning the load AKs.
pub const AK_REGISTRY_FILE: &str = "aks.json";
/// The measurements file.
pub const MEASUREMENTS_FILE: &str = "measurements.json";
/// The measurements file's detached signature (DER).
pub const MEASUREMENTS_SIGNATURE_FILE: &str = "measurements.json.sig";
/// The public key the measurements signature verifies under (PEM).
pub const MEASUREMENTS_PUBLIC_KEY_FILE: &str = "measurements.pub";
/// The key-service PKI directory (CA, key-service and join-service certificates).
pub const KMS_PKI_DIR: &str = "kms-pki";
/// The measurement salt.
pub const SALT_FILE: &str = "measurement-salt";
/// The key service's master secret.
pub const MASTER_SECRET_FILE: &str = "master-secret";
/// Kubernetes version and components.
pub const KUBERNETES_FILE: &str = "kubernetes.json";
/// The kubeadm PKI directory.
pub const PKI_DIR: &str = "pki";

/// The master key and salt of [`MASTER_SECRET_FILE`] (fixed: the fixture is for loopback load tests only).
pub const MASTER_KEY: [u8; 32] = [0x42; 32];
/// See [`MASTER_KEY`].
pub const MASTER_SALT: [u8; 32] = [0x17; 32];
/// The measurement salt of [`SALT_FILE`].
pub const MEASUREMENT_SALT: [u8; 32] = [0x5A; 32];

/// Errors of this module and the load generator: setup and I/O failures, with context.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The PCR values every software AK quotes: PCRs 0..=15 distinct digests (as firmware, boot loader and
/// kernel would leave them), the DRTM PCRs 17..=22 all ones and PCRs 16 and 23 zero, as on a TPM after a
/// boot without DRTM.
pub fn pcr_bank() -> PcrBank {
    let mut pcrs: PcrBank = [[0; 32]; 24];
    for (i, p) in pcrs.iter_mut().enumerate() {
        *p = match i {
            0..=15 => sha256(&[b"attest join-load PCR", &[i as u8]]),
            17..=22 => [0xFF; 32],
            _ => [0; 32],
        };
    }
    pcrs
}

/// A measurements file (Constellation JSON map) enforcing PCRs 0..=15 of `pcrs`.
pub fn measurements_json(pcrs: &PcrBank) -> String {
    let entries: Vec<String> = (0..16)
        .map(|i| format!("\"{i}\": {{\"expected\": \"{}\", \"warnOnly\": false}}", hex::encode(pcrs[i])))
        .collect();
    format!("{{{}}}\n", entries.join(", "))
}

/// The Kubernetes settings of [`KUBERNETES_FILE`].
pub const KUBERNETES_JSON: &str = r#"{"kubernetesVersion":"v1.31.1","components":[{"url":"https://dl.k8s.io/v1.31.1/bin/linux/amd64/kubelet","hash":"sha256:1111111111111111111111111111111111111111111111111111111111111111","installPath":"/run/state/bin/kubelet","extract":false}]}"#;

fn kind_name(kind: AkKind) -> &'static str {
    match kind {
        AkKind::EccP256 => "ecc-p256",
        AkKind::Rsa2048 => "rsa-2048",
    }
}

/// Parses an AK kind name (`ecc-p256`, `rsa-2048`).
pub fn parse_kind(name: &str) -> Option<AkKind> {
    [AkKind::EccP256, AkKind::Rsa2048].into_iter().find(|k| kind_name(*k) == name)
}

fn write(dir: &Path, name: &str, data: &[u8]) -> Result<(), BoxError> {
    let path = dir.join(name);
    std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Writes every file of the module table into `dir` (created if missing) with `aks` fresh software AKs of
/// `kind`.
pub fn write_fixture(dir: &Path, aks: usize, kind: AkKind) -> Result<(), BoxError> {
    if aks == 0 {
        return Err("at least one AK is needed".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let keys: Vec<SoftAk> = (0..aks)
        .map(|_| match kind {
            AkKind::EccP256 => SoftAk::ecc_p256(),
            AkKind::Rsa2048 => SoftAk::rsa(),
        })
        .collect();
    let entries: Vec<serde_json::Value> = keys
        .iter()
        .map(|k| serde_json::json!({ "kind": kind_name(k.kind()), "pkcs8": hex::encode(k.to_pkcs8()) }))
        .collect();
    let file = serde_json::json!({ "version": 1, "aks": entries });
    write(dir, LOAD_AKS_FILE, &Zeroizing::new(serde_json::to_vec_pretty(&file)?))?;

    let registry = FileAkRegistry::open(dir.join(AK_REGISTRY_FILE))?;
    for k in &keys {
        registry.register(k.tpmt_digest(), AkBasis::Pinned)?;
    }
    let measurements = measurements_json(&pcr_bank());
    write(dir, MEASUREMENTS_FILE, measurements.as_bytes())?;
    let group = openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1)?;
    let signer = openssl::pkey::PKey::from_ec_key(openssl::ec::EcKey::generate(&group)?)?;
    let signature = openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), &signer)?
        .sign_oneshot_to_vec(measurements.as_bytes())?;
    write(dir, MEASUREMENTS_SIGNATURE_FILE, &signature)?;
    write(dir, MEASUREMENTS_PUBLIC_KEY_FILE, &signer.public_key_to_pem()?)?;
    attest_keyservice::tls::generate_pki(&dir.join(KMS_PKI_DIR))?;
    write(dir, SALT_FILE, &MEASUREMENT_SALT)?;
    let secret = MasterSecret::new(Zeroizing::new(MASTER_KEY.to_vec()), Zeroizing::new(MASTER_SALT.to_vec()))?;
    write(dir, MASTER_SECRET_FILE, secret.to_kms_uri().as_bytes())?;
    write(dir, KUBERNETES_FILE, KUBERNETES_JSON.as_bytes())?;
    attest_k8s::generate_pki(&dir.join(PKI_DIR))?;
    Ok(())
}

/// How the join service trusts the fixture's measurements file: its signature under the fixture's key.
pub fn measurements_trust(dir: &Path) -> Result<attest_trust::MeasurementsTrust, BoxError> {
    Ok(attest_trust::MeasurementsTrust::verify_with(
        &dir.join(MEASUREMENTS_PUBLIC_KEY_FILE),
        &dir.join(MEASUREMENTS_SIGNATURE_FILE),
    )?)
}

/// The issuers of the AKs in `dir`'s [`LOAD_AKS_FILE`], quoting [`pcr_bank`].
pub fn load_issuers(dir: &Path) -> Result<Vec<Arc<SoftAkIssuer>>, BoxError> {
    let path = dir.join(LOAD_AKS_FILE);
    let text = Zeroizing::new(std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?);
    let file: serde_json::Value = serde_json::from_slice(&text)?;
    let bad = || format!("{}: not a load AK file", path.display());
    let entries = file["aks"].as_array().ok_or_else(bad)?;
    let pcrs = pcr_bank();
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let kind = e["kind"].as_str().and_then(parse_kind).ok_or_else(bad)?;
        let der = Zeroizing::new(hex::decode(e["pkcs8"].as_str().ok_or_else(bad)?)?);
        let ak = SoftAk::from_pkcs8(kind, &der).ok_or_else(bad)?;
        out.push(Arc::new(SoftAkIssuer::new(ak, &pcrs)));
    }
    if out.is_empty() {
        return Err(format!("{}: no AKs", path.display()).into());
    }
    Ok(out)
}
