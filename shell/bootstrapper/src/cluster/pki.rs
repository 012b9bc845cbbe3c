//! The cluster PKI in kubeadm's layout, created by the dry-run initializer so that a local cluster without
//! Kubernetes still has the certificate authority the join service signs kubelet certificates with.
//!
//! ```text
//! STATE/pki/ca.crt, ca.key                     cluster CA        (CN=kubernetes)
//! STATE/pki/sa.key, sa.pub                     service-account signing key pair (no certificate)
//! STATE/pki/front-proxy-ca.crt, .key           front-proxy CA    (CN=front-proxy-ca)
//! STATE/pki/etcd/ca.crt, ca.key                etcd CA           (CN=etcd-ca)
//! ```
//!
//! As kubeadm does by default: RSA-2048 keys (PEM, PKCS#1 `RSA PRIVATE KEY`; `sa.pub` a PKIX `PUBLIC KEY`),
//! self-signed CA certificates valid for [`CA_VALIDITY_DAYS`] with basicConstraints CA:TRUE (critical), keyUsage
//! digitalSignature, keyEncipherment, keyCertSign (critical), a subject key identifier, and the CA's own name
//! as DNS subjectAltName. Existing pairs are reused, as `kubeadm init` reuses certificates it finds.
//!
//! The admin kubeconfig's client certificate is signed by the cluster CA: CN=`kubernetes-admin`,
//! O=`kubeadm:cluster-admins` (the group kubeadm ≥ 1.29 gives `admin.conf`), clientAuth, valid
//! [`CLIENT_VALIDITY_DAYS`], on a P-256 key.

use std::path::{Path, PathBuf};

use base64::Engine;
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName, SubjectKeyIdentifier,
};
use openssl::x509::{X509, X509Builder, X509NameRef, X509Ref};
use zeroize::Zeroizing;

use crate::atomic::{FileError, PUBLIC_FILE_MODE, SECRET_FILE_MODE, write_atomic};
use attest_atls::x509::{self, Tbs};

/// Validity of the CA certificates (kubeadm: ten years).
pub const CA_VALIDITY_DAYS: u32 = 3650;
/// Validity of client certificates (kubeadm: one year).
pub const CLIENT_VALIDITY_DAYS: u32 = 365;
/// RSA key size of the CAs and the service-account key (kubeadm's default `RSA-2048`).
pub const RSA_BITS: u32 = 2048;
/// Largest PKI file read, in bytes.
pub const MAX_PKI_FILE_SIZE: u64 = 64 * 1024;

/// The cluster CA certificate, relative to the state directory.
pub const CA_CERT: &str = "pki/ca.crt";
/// The cluster CA key.
pub const CA_KEY: &str = "pki/ca.key";
/// The service-account signing key.
pub const SA_KEY: &str = "pki/sa.key";
/// The service-account verification key.
pub const SA_PUB: &str = "pki/sa.pub";
/// The front-proxy CA certificate.
pub const FRONT_PROXY_CA_CERT: &str = "pki/front-proxy-ca.crt";
/// The front-proxy CA key.
pub const FRONT_PROXY_CA_KEY: &str = "pki/front-proxy-ca.key";
/// The etcd CA certificate.
pub const ETCD_CA_CERT: &str = "pki/etcd/ca.crt";
/// The etcd CA key.
pub const ETCD_CA_KEY: &str = "pki/etcd/ca.key";

/// Why the PKI could not be created or read.
#[derive(Debug)]
pub enum PkiError {
    /// OpenSSL failed.
    Crypto(openssl::error::ErrorStack),
    /// A file could not be read or written.
    File(FileError),
    /// A file exists but is not what it should be.
    Malformed {
        /// The file.
        path: PathBuf,
    },
}

impl std::fmt::Display for PkiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PkiError::Crypto(e) => write!(f, "OpenSSL: {e}"),
            PkiError::File(e) => write!(f, "{e}"),
            PkiError::Malformed { path } => write!(f, "{} is not a PEM file of the expected kind", path.display()),
        }
    }
}

impl std::error::Error for PkiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PkiError::Crypto(e) => Some(e),
            PkiError::File(e) => Some(e),
            PkiError::Malformed { .. } => None,
        }
    }
}

impl From<openssl::error::ErrorStack> for PkiError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        PkiError::Crypto(e)
    }
}

impl From<FileError> for PkiError {
    fn from(e: FileError) -> Self {
        PkiError::File(e)
    }
}

/// A CA: certificate and key.
pub struct CertificateAuthority {
    /// The certificate.
    pub cert: X509,
    /// The private key.
    pub key: PKey<Private>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority").field("subject", &self.cert.subject_name()).finish_non_exhaustive()
    }
}

/// The cluster PKI of a state directory.
#[derive(Debug)]
pub struct ClusterPki {
    /// The cluster CA (signs kubelet and admin certificates).
    pub ca: CertificateAuthority,
}

fn read_limited(path: &Path) -> Result<Option<Zeroizing<Vec<u8>>>, PkiError> {
    use std::io::Read;
    match std::fs::File::open(path) {
        Ok(f) => {
            let mut out = Zeroizing::new(Vec::new());
            f.take(MAX_PKI_FILE_SIZE)
                .read_to_end(&mut out)
                .map_err(|source| FileError { path: path.to_owned(), source })?;
            Ok(Some(out))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FileError { path: path.to_owned(), source }.into()),
    }
}

fn serial() -> Result<openssl::asn1::Asn1Integer, PkiError> {
    let mut bn = BigNum::new()?;
    bn.rand(127, MsbOption::MAYBE_ZERO, false)?;
    Ok(bn.to_asn1_integer()?)
}

fn new_ca(common_name: &str, days: u32) -> Result<CertificateAuthority, PkiError> {
    let key = PKey::from_rsa(Rsa::generate(RSA_BITS)?)?;
    let name = x509::name(&[(Nid::COMMONNAME, common_name)])?;
    let (serial, not_before, not_after) = (serial()?, Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(days)?);
    let mut b = x509::builder(&Tbs {
        serial: &serial,
        subject: &name,
        issuer: &name,
        public_key: &key,
        not_before: &not_before,
        not_after: &not_after,
    })?;
    b.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    b.append_extension(KeyUsage::new().critical().digital_signature().key_encipherment().key_cert_sign().build()?)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(ski)?;
    let san = SubjectAlternativeName::new().dns(common_name).build(&b.x509v3_context(None, None))?;
    b.append_extension(san)?;
    let cert = x509::sign(b, &key)?;
    Ok(CertificateAuthority { cert, key })
}

/// Loads the CA pair at `cert`/`key` under `dir`, or creates and writes it.
fn load_or_create_ca(dir: &Path, cert: &str, key: &str, common_name: &str) -> Result<CertificateAuthority, PkiError> {
    let (cert_path, key_path) = (dir.join(cert), dir.join(key));
    if let (Some(c), Some(k)) = (read_limited(&cert_path)?, read_limited(&key_path)?) {
        let cert = X509::from_pem(&c).map_err(|_| PkiError::Malformed { path: cert_path.clone() })?;
        let key = PKey::private_key_from_pem(&k).map_err(|_| PkiError::Malformed { path: key_path.clone() })?;
        if !cert.public_key()?.public_eq(&key) {
            return Err(PkiError::Malformed { path: key_path });
        }
        return Ok(CertificateAuthority { cert, key });
    }
    let ca = new_ca(common_name, CA_VALIDITY_DAYS)?;
    write_atomic(&key_path, &Zeroizing::new(ca.key.rsa()?.private_key_to_pem()?), SECRET_FILE_MODE)?;
    write_atomic(&cert_path, &ca.cert.to_pem()?, PUBLIC_FILE_MODE)?;
    Ok(ca)
}

impl ClusterPki {
    /// Creates the PKI under `state_dir` (or loads the parts that exist), in kubeadm's layout.
    pub fn create_or_load(state_dir: &Path) -> Result<ClusterPki, PkiError> {
        let ca = load_or_create_ca(state_dir, CA_CERT, CA_KEY, "kubernetes")?;
        load_or_create_ca(state_dir, FRONT_PROXY_CA_CERT, FRONT_PROXY_CA_KEY, "front-proxy-ca")?;
        load_or_create_ca(state_dir, ETCD_CA_CERT, ETCD_CA_KEY, "etcd-ca")?;
        let (sa_key, sa_pub) = (state_dir.join(SA_KEY), state_dir.join(SA_PUB));
        if read_limited(&sa_key)?.is_none() || read_limited(&sa_pub)?.is_none() {
            let rsa = Rsa::generate(RSA_BITS)?;
            write_atomic(&sa_key, &Zeroizing::new(rsa.private_key_to_pem()?), SECRET_FILE_MODE)?;
            write_atomic(&sa_pub, &PKey::from_rsa(rsa)?.public_key_to_pem()?, PUBLIC_FILE_MODE)?;
        }
        Ok(ClusterPki { ca })
    }

    /// An admin kubeconfig for cluster `cluster_name` at `https://<api_server_endpoint>`, with a fresh client
    /// certificate signed by the cluster CA (see the module docs).
    pub fn admin_kubeconfig(
        &self,
        cluster_name: &str,
        api_server_endpoint: &str,
    ) -> Result<Zeroizing<Vec<u8>>, PkiError> {
        let key = x509::p256_key()?;
        let name =
            x509::name(&[(Nid::ORGANIZATIONNAME, "kubeadm:cluster-admins"), (Nid::COMMONNAME, "kubernetes-admin")])?;
        let b = self.leaf_builder(&name, &key, ExtendedKeyUsage::new().client_auth())?;
        let cert = self.sign_leaf(b)?;

        let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
        let user = "kubernetes-admin";
        let context = format!("{user}@{cluster_name}");
        let q = |s: &str| serde_json::to_string(s).expect("a string always serializes");
        Ok(Zeroizing::new(
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    \
                 server: {server}\n  name: {cluster}\ncontexts:\n- context:\n    cluster: {cluster}\n    user: {user}\n  \
                 name: {context}\ncurrent-context: {context}\npreferences: {{}}\nusers:\n- name: {user}\n  user:\n    \
                 client-certificate-data: {cert}\n    client-key-data: {key}\n",
                ca = b64(&self.ca.cert.to_pem()?),
                server = q(&format!("https://{api_server_endpoint}")),
                cluster = q(cluster_name),
                user = q(user),
                context = q(&context),
                cert = b64(&cert.to_pem()?),
                key = b64(&Zeroizing::new(key.private_key_to_pem_pkcs8()?)),
            )
            .into_bytes(),
        ))
    }
}

impl ClusterPki {
    /// A kubelet certificate for `node_name`, signed by the cluster CA, that the kubelet both serves with and
    /// authenticates with: CN=`system:node:<name>`, O=`system:nodes`, clientAuth and serverAuth, SANs DNS =
    /// the node name and IP = `ip` (when known), valid [`CLIENT_VALIDITY_DAYS`], on a fresh P-256 key.
    /// Returns the certificate and key, PEM.
    pub fn kubelet_serving_cert(
        &self,
        node_name: &str,
        ip: Option<std::net::IpAddr>,
    ) -> Result<(Vec<u8>, Zeroizing<Vec<u8>>), PkiError> {
        let key = x509::p256_key()?;
        let name = x509::name(&[
            (Nid::ORGANIZATIONNAME, "system:nodes"),
            (Nid::COMMONNAME, &format!("system:node:{node_name}")),
        ])?;
        let mut b = self.leaf_builder(&name, &key, ExtendedKeyUsage::new().client_auth().server_auth())?;
        let mut san = SubjectAlternativeName::new();
        san.dns(node_name);
        if let Some(ip) = ip {
            san.ip(&ip.to_string());
        }
        let san = san.build(&b.x509v3_context(Some(&self.ca.cert), None))?;
        b.append_extension(san)?;
        let cert = self.sign_leaf(b)?;
        Ok((cert.to_pem()?, Zeroizing::new(key.private_key_to_pem_pkcs8()?)))
    }

    /// A certificate for `key` under `name`, issued by the cluster CA with a fresh serial, valid from now for
    /// [`CLIENT_VALIDITY_DAYS`]: critical basicConstraints (not a CA), critical keyUsage digitalSignature and
    /// keyEncipherment, and extendedKeyUsage `eku`. Further extensions go on before [`Self::sign_leaf`].
    fn leaf_builder(
        &self,
        name: &X509NameRef,
        key: &PKey<Private>,
        eku: &mut ExtendedKeyUsage,
    ) -> Result<X509Builder, PkiError> {
        let (serial, not_before, not_after) =
            (serial()?, Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(CLIENT_VALIDITY_DAYS)?);
        let mut b = x509::builder(&Tbs {
            serial: &serial,
            subject: name,
            issuer: self.ca.cert.subject_name(),
            public_key: key,
            not_before: &not_before,
            not_after: &not_after,
        })?;
        b.append_extension(BasicConstraints::new().critical().build()?)?;
        b.append_extension(KeyUsage::new().critical().digital_signature().key_encipherment().build()?)?;
        b.append_extension(eku.build()?)?;
        Ok(b)
    }

    /// Adds the authorityKeyIdentifier (the CA's key id) last and signs with the CA key.
    fn sign_leaf(&self, mut b: X509Builder) -> Result<X509, PkiError> {
        let aki = AuthorityKeyIdentifier::new().keyid(true).build(&b.x509v3_context(Some(&self.ca.cert), None))?;
        b.append_extension(aki)?;
        Ok(x509::sign(b, &self.ca.key)?)
    }
}

/// `sha256:<hex>` of a certificate's SubjectPublicKeyInfo DER: kubeadm's `--discovery-token-ca-cert-hash`.
pub fn ca_cert_hash(cert: &X509Ref) -> Result<String, PkiError> {
    let spki = cert.public_key()?.public_key_to_der()?;
    Ok(format!("sha256:{}", hex::encode(openssl::sha::sha256(&spki))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_kubeadm_layout_reuses_it_and_signs_the_admin() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = attest_test_support::TempDir::new("pki");
        let dir = tmp.path().join("pki");
        let pki = ClusterPki::create_or_load(&dir).unwrap();
        for f in [CA_CERT, CA_KEY, SA_KEY, SA_PUB, FRONT_PROXY_CA_CERT, FRONT_PROXY_CA_KEY, ETCD_CA_CERT, ETCD_CA_KEY] {
            let mode = std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, if Path::new(f).extension().is_some_and(|e| e == "key") { 0o600 } else { 0o644 }, "{f}");
        }
        assert!(std::fs::read_to_string(dir.join(CA_KEY)).unwrap().starts_with("-----BEGIN RSA PRIVATE KEY-----"));
        assert!(std::fs::read_to_string(dir.join(SA_PUB)).unwrap().starts_with("-----BEGIN PUBLIC KEY-----"));
        let ca = X509::from_pem(&std::fs::read(dir.join(CA_CERT)).unwrap()).unwrap();
        assert!(ca.verify(&ca.public_key().unwrap()).unwrap());
        assert_eq!(ca.subject_name().entries().next().unwrap().data().as_slice(), b"kubernetes");
        // Reused, not regenerated.
        let again = ClusterPki::create_or_load(&dir).unwrap();
        assert_eq!(again.ca.cert.to_der().unwrap(), pki.ca.cert.to_der().unwrap());

        let kubeconfig = pki.admin_kubeconfig("demo", "127.0.0.1:6443").unwrap();
        let text = std::str::from_utf8(&kubeconfig).unwrap();
        assert!(text.contains("server: \"https://127.0.0.1:6443\""), "{text}");
        let field = |name: &str| {
            let line = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap();
            base64::engine::general_purpose::STANDARD.decode(line.split_once(": ").unwrap().1).unwrap()
        };
        let client = X509::from_pem(&field("client-certificate-data")).unwrap();
        assert!(client.verify(&pki.ca.cert.public_key().unwrap()).unwrap());
        let key = PKey::private_key_from_pem(&field("client-key-data")).unwrap();
        assert!(client.public_key().unwrap().public_eq(&key));
        assert_eq!(field("certificate-authority-data"), pki.ca.cert.to_pem().unwrap());
        let hash = ca_cert_hash(&pki.ca.cert).unwrap();
        assert!(hash.starts_with("sha256:") && hash.len() == 7 + 64);
    }
}
