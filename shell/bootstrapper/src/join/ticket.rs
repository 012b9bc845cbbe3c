//! The join client's side of a join ticket: the kubelet key and CSR it sends, and the checks every ticket
//! field passes before the node takes the lock on it.
//!
//! # Kubelet key and CSR
//!
//! A fresh P-256 key per attempt; the CSR (PKCS#10, DER, signed with SHA-256) has subject
//! `O=system:nodes, CN=system:node:<node name>` — the identity the Kubernetes Node authorizer expects of a
//! kubelet. The private key never leaves the node.
//!
//! # Ticket checks ([`check_ticket`])
//!
//! | field | rule |
//! |---|---|
//! | `state_disk_key`, `measurement_secret` | exactly 32 bytes |
//! | `measurement_salt` | exactly 32 bytes |
//! | `kubelet_cert` | one certificate, PEM or DER, for **our** kubelet key |
//! | `api_server_endpoint` | `host:port` (IPv6 in brackets), host an IP or DNS name |
//! | `token` | a bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}` |
//! | `discovery_token_ca_cert_hash` | `sha256:` + 64 hex digits |
//! | `control_plane_files` | none for a worker; ≤ [`MAX_CONTROL_PLANE_FILES`], names checked (`files`), each ≤ [`MAX_CONTROL_PLANE_FILE_SIZE`] |
//! | `kubernetes_version` | empty (→ default) or `vMAJOR.MINOR.PATCH[-suffix]`, ≥ v1.31 (kubeadm's v1beta4) |
//!
//! A worker that receives control-plane keys refuses the ticket: CA keys have no business on a worker, and a
//! join service that sends them is misconfigured. The secrets are moved into zeroizing buffers at once and
//! the message's own copies wiped.

use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::{X509, X509NameBuilder, X509ReqBuilder};
use zeroize::{Zeroize, Zeroizing};

use attest_proto::join::IssueJoinTicketResponse;

use crate::cluster::backend::JoinParams;
use crate::cluster::files::check_file_name;
use crate::life::state::MEASUREMENT_SALT_LENGTH;
use crate::serve::request::{DEFAULT_KUBERNETES_VERSION, MAX_VERSION_LENGTH, is_dns_name};

/// Length of the state-disk key and of the measurement secret in a ticket, in bytes.
pub const TICKET_KEY_LENGTH: usize = 32;
/// Most control-plane files in a ticket.
pub const MAX_CONTROL_PLANE_FILES: usize = 32;
/// Largest control-plane file, in bytes.
pub const MAX_CONTROL_PLANE_FILE_SIZE: usize = 64 * 1024;
/// Longest API server endpoint, in bytes (a DNS name and a port).
pub const MAX_ENDPOINT_LENGTH: usize = 260;

/// Why a ticket is refused. Names the field, never its (possibly secret) value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketError {
    /// The proto field.
    pub field: &'static str,
    /// What is wrong.
    pub reason: &'static str,
}

impl std::fmt::Display for TicketError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "join ticket refused: {}: {}", self.field, self.reason)
    }
}

impl std::error::Error for TicketError {}

fn bad(field: &'static str, reason: &'static str) -> TicketError {
    TicketError { field, reason }
}

/// The kubelet's key and its CSR.
pub struct KubeletKey {
    key: PKey<Private>,
    csr_der: Vec<u8>,
}

impl std::fmt::Debug for KubeletKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletKey").field("csr_der_len", &self.csr_der.len()).finish_non_exhaustive()
    }
}

impl KubeletKey {
    /// A fresh P-256 key and a CSR for `system:node:<node_name>` in `system:nodes`.
    pub fn generate(node_name: &str) -> Result<KubeletKey, openssl::error::ErrorStack> {
        let key = PKey::from_ec_key(EcKey::generate(EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?.as_ref())?)?;
        let mut name = X509NameBuilder::new()?;
        name.append_entry_by_nid(Nid::ORGANIZATIONNAME, "system:nodes")?;
        name.append_entry_by_nid(Nid::COMMONNAME, &format!("system:node:{node_name}"))?;
        let mut req = X509ReqBuilder::new()?;
        req.set_subject_name(&name.build())?;
        req.set_pubkey(&key)?;
        req.sign(&key, MessageDigest::sha256())?;
        let csr_der = req.build().to_der()?;
        Ok(KubeletKey { key, csr_der })
    }

    /// The CSR, DER.
    pub fn csr_der(&self) -> &[u8] {
        &self.csr_der
    }

    /// The private key: also the key of the node's aTLS certificate in the join handshake, so that the join
    /// service signs the kubelet certificate only for the key the node proved there.
    pub fn private_key(&self) -> &PKey<Private> {
        &self.key
    }

    /// The private key, PEM (PKCS#8).
    pub fn key_pem(&self) -> Result<Zeroizing<Vec<u8>>, openssl::error::ErrorStack> {
        Ok(Zeroizing::new(self.key.private_key_to_pem_pkcs8()?))
    }
}

/// A checked ticket: the keys and everything `kubeadm join` needs.
#[derive(Debug)]
pub struct CheckedTicket {
    /// The state-disk key.
    pub state_disk_key: Zeroizing<Vec<u8>>,
    /// The measurement secret.
    pub measurement_secret: Zeroizing<Vec<u8>>,
    /// The measurement salt.
    pub measurement_salt: [u8; MEASUREMENT_SALT_LENGTH],
    /// The join parameters.
    pub join: JoinParams,
}

fn is_bootstrap_token(t: &str) -> bool {
    let ok = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    t.split_once('.').is_some_and(|(id, secret)| ok(id, 6) && ok(secret, 16))
}

/// Whether `s` is `host:port` with a non-zero port and an IP (IPv6 bracketed) or DNS host.
pub fn is_endpoint(s: &str) -> bool {
    if s.len() > MAX_ENDPOINT_LENGTH {
        return false;
    }
    let Some((host, port)) = s.rsplit_once(':') else { return false };
    if !port.parse::<u16>().is_ok_and(|p| p != 0) {
        return false;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    host.parse::<std::net::Ipv4Addr>().is_ok() || is_dns_name(host)
}

fn take_key(field: &'static str, v: &mut Vec<u8>) -> Result<Zeroizing<Vec<u8>>, TicketError> {
    let out = Zeroizing::new(std::mem::take(v));
    if out.len() == TICKET_KEY_LENGTH { Ok(out) } else { Err(bad(field, "not 32 bytes")) }
}

/// Checks `ticket` (rules in the module docs) for a node named `node_name` that sent `kubelet`'s CSR.
/// Consumes the message; its secret fields are wiped whatever the outcome.
pub fn check_ticket(
    mut ticket: IssueJoinTicketResponse,
    kubelet: &KubeletKey,
    node_name: &str,
    control_plane: bool,
) -> Result<CheckedTicket, TicketError> {
    let result = check_inner(&mut ticket, kubelet, node_name, control_plane);
    ticket.state_disk_key.zeroize();
    ticket.measurement_secret.zeroize();
    ticket.token.zeroize();
    for f in &mut ticket.control_plane_files {
        f.data.zeroize();
    }
    result
}

fn check_inner(
    t: &mut IssueJoinTicketResponse,
    kubelet: &KubeletKey,
    node_name: &str,
    control_plane: bool,
) -> Result<CheckedTicket, TicketError> {
    let state_disk_key = take_key("state_disk_key", &mut t.state_disk_key)?;
    let measurement_secret = take_key("measurement_secret", &mut t.measurement_secret)?;
    let measurement_salt: [u8; MEASUREMENT_SALT_LENGTH] =
        t.measurement_salt.as_slice().try_into().map_err(|_| bad("measurement_salt", "not 32 bytes"))?;
    let cert = if t.kubelet_cert.starts_with(b"-----BEGIN") {
        X509::from_pem(&t.kubelet_cert)
    } else {
        X509::from_der(&t.kubelet_cert)
    }
    .map_err(|_| bad("kubelet_cert", "not a PEM or DER certificate"))?;
    let ours = cert.public_key().is_ok_and(|k| k.public_eq(&kubelet.key));
    if !ours {
        return Err(bad("kubelet_cert", "certifies another key than the one in our CSR"));
    }
    let kubelet_cert_pem = cert.to_pem().map_err(|_| bad("kubelet_cert", "cannot be encoded"))?;
    if !is_endpoint(&t.api_server_endpoint) {
        return Err(bad("api_server_endpoint", "not host:port"));
    }
    if !is_bootstrap_token(&t.token) {
        return Err(bad("token", "not a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}"));
    }
    let hash_ok = t
        .discovery_token_ca_cert_hash
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !hash_ok {
        return Err(bad("discovery_token_ca_cert_hash", "not sha256:<64 hex digits>"));
    }
    if !control_plane && !t.control_plane_files.is_empty() {
        return Err(bad("control_plane_files", "sent to a worker node"));
    }
    if t.control_plane_files.len() > MAX_CONTROL_PLANE_FILES {
        return Err(bad("control_plane_files", "too many files"));
    }
    let mut control_plane_files = Vec::with_capacity(t.control_plane_files.len());
    for f in &mut t.control_plane_files {
        check_file_name(&f.name).map_err(|e| bad("control_plane_files.name", e.reason))?;
        if f.data.len() > MAX_CONTROL_PLANE_FILE_SIZE {
            return Err(bad("control_plane_files.data", "file too large"));
        }
        control_plane_files.push((f.name.clone(), Zeroizing::new(std::mem::take(&mut f.data))));
    }
    let kubernetes_version = if t.kubernetes_version.is_empty() {
        DEFAULT_KUBERNETES_VERSION.to_owned()
    } else if t.kubernetes_version.len() <= MAX_VERSION_LENGTH
        && t.kubernetes_version.starts_with('v')
        && t.kubernetes_version.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
    {
        t.kubernetes_version.clone()
    } else {
        return Err(bad("kubernetes_version", "not vMAJOR.MINOR.PATCH[-suffix]"));
    };
    crate::cluster::kubeadm::check_kubernetes_version(&kubernetes_version).map_err(|e| bad("kubernetes_version", e))?;
    let kubelet_key_pem = kubelet.key_pem().map_err(|_| bad("kubelet_cert", "our kubelet key cannot be encoded"))?;
    Ok(CheckedTicket {
        state_disk_key,
        measurement_secret,
        measurement_salt,
        join: JoinParams {
            node_name: node_name.to_owned(),
            control_plane,
            api_server_endpoint: t.api_server_endpoint.clone(),
            token: Zeroizing::new(std::mem::take(&mut t.token)),
            ca_cert_hash: t.discovery_token_ca_cert_hash.clone(),
            kubernetes_version,
            kubelet_cert_pem,
            kubelet_key_pem,
            control_plane_files,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::pki::ClusterPki;
    use attest_proto::join::ControlPlaneCertOrKey;
    use openssl::x509::X509Req;

    /// Signs `csr_der` with `pki`'s CA, as a join service would (PEM).
    pub(crate) fn sign_csr(pki: &ClusterPki, csr_der: &[u8]) -> Vec<u8> {
        let req = X509Req::from_der(csr_der).unwrap();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        b.set_subject_name(req.subject_name()).unwrap();
        b.set_issuer_name(pki.ca.cert.subject_name()).unwrap();
        b.set_pubkey(&req.public_key().unwrap()).unwrap();
        b.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap()).unwrap();
        b.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap()).unwrap();
        b.sign(&pki.ca.key, MessageDigest::sha256()).unwrap();
        b.build().to_pem().unwrap()
    }

    pub(crate) fn ticket(pki: &ClusterPki, kubelet: &KubeletKey) -> IssueJoinTicketResponse {
        IssueJoinTicketResponse {
            state_disk_key: vec![1; 32],
            measurement_salt: vec![2; 32],
            measurement_secret: vec![3; 32],
            kubelet_cert: sign_csr(pki, kubelet.csr_der()),
            api_server_endpoint: "10.0.0.1:6443".into(),
            token: "abcdef.0123456789abcdef".into(),
            discovery_token_ca_cert_hash: crate::cluster::pki::ca_cert_hash(&pki.ca.cert).unwrap(),
            ..IssueJoinTicketResponse::default()
        }
    }

    pub(crate) fn test_pki() -> ClusterPki {
        // The CA is loaded into memory; its files are not needed afterwards.
        let dir = attest_test_support::TempDir::new("ticket-pki");
        ClusterPki::create_or_load(dir.path()).unwrap()
    }

    #[test]
    fn csr_subject_and_signature() {
        let k = KubeletKey::generate("worker-1").unwrap();
        let req = X509Req::from_der(k.csr_der()).unwrap();
        assert!(req.verify(&req.public_key().unwrap()).unwrap());
        let subject: Vec<(String, String)> = req
            .subject_name()
            .entries()
            .map(|e| {
                (
                    e.object().nid().short_name().unwrap().to_owned(),
                    String::from_utf8(e.data().as_slice().to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(subject, [("O".into(), "system:nodes".into()), ("CN".into(), "system:node:worker-1".into())]);
        assert_eq!(req.public_key().unwrap().ec_key().unwrap().group().curve_name(), Some(Nid::X9_62_PRIME256V1));
    }

    #[test]
    fn accepts_a_good_ticket_and_each_bad_field_is_named() {
        let pki = test_pki();
        let k = KubeletKey::generate("w").unwrap();
        let t = check_ticket(ticket(&pki, &k), &k, "w", false).unwrap();
        assert_eq!(*t.state_disk_key, vec![1; 32]);
        assert_eq!(t.measurement_salt, [2; 32]);
        assert_eq!(t.join.kubernetes_version, DEFAULT_KUBERNETES_VERSION);
        // DER kubelet certificates are accepted too.
        let mut der = ticket(&pki, &k);
        der.kubelet_cert = X509::from_pem(&der.kubelet_cert).unwrap().to_der().unwrap();
        assert!(check_ticket(der, &k, "w", false).is_ok());

        let other = KubeletKey::generate("w").unwrap();
        type Mutation<'a> = Box<dyn Fn(&mut IssueJoinTicketResponse) + 'a>;
        let cases: Vec<(&str, Mutation<'_>)> = vec![
            ("state_disk_key", Box::new(|t| t.state_disk_key.pop().map(drop).unwrap())),
            ("measurement_secret", Box::new(|t| t.measurement_secret.clear())),
            ("measurement_salt", Box::new(|t| t.measurement_salt.push(0))),
            ("kubelet_cert", Box::new(|t| t.kubelet_cert = b"junk".to_vec())),
            ("kubelet_cert", Box::new(|t| t.kubelet_cert = sign_csr(&pki, other.csr_der()))),
            ("api_server_endpoint", Box::new(|t| t.api_server_endpoint = "10.0.0.1".into())),
            ("api_server_endpoint", Box::new(|t| t.api_server_endpoint = "bad host:6443".into())),
            ("token", Box::new(|t| t.token = "ABCDEF.0123456789abcdef".into())),
            ("discovery_token_ca_cert_hash", Box::new(|t| t.discovery_token_ca_cert_hash = "sha256:00".into())),
            (
                "control_plane_files",
                Box::new(|t| {
                    t.control_plane_files = vec![ControlPlaneCertOrKey { name: "ca.key".into(), data: vec![1] }];
                }),
            ),
            ("kubernetes_version", Box::new(|t| t.kubernetes_version = "1.2.3 && x".into())),
            ("kubernetes_version", Box::new(|t| t.kubernetes_version = "v1.29.3".into())),
        ];
        for (field, mutate) in cases {
            let mut t = ticket(&pki, &k);
            mutate(&mut t);
            assert_eq!(check_ticket(t, &k, "w", false).unwrap_err().field, field);
        }
        let mut t = ticket(&pki, &k);
        t.control_plane_files = vec![ControlPlaneCertOrKey { name: "../../etc/shadow".into(), data: vec![1] }];
        assert_eq!(check_ticket(t, &k, "w", true).unwrap_err().field, "control_plane_files.name");
        let mut t = ticket(&pki, &k);
        t.control_plane_files = vec![ControlPlaneCertOrKey { name: "etcd/ca.key".into(), data: vec![1] }];
        assert_eq!(check_ticket(t, &k, "w", true).unwrap().join.control_plane_files.len(), 1);
    }

    #[test]
    fn endpoints() {
        for ok in ["10.0.0.1:6443", "[fd00::1]:6443", "api.example.com:443"] {
            assert!(is_endpoint(ok), "{ok}");
        }
        for bad in ["10.0.0.1", "10.0.0.1:0", "fd00::1:6443", ":6443", "a b:1"] {
            assert!(!is_endpoint(bad), "{bad}");
        }
    }
}
