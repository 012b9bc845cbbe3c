//! TDX collateral: Intel's TCB Info and QE Identity (signed JSON), the CRLs, and the certificate chains
//! that sign them — accepted in two shapes, and verified once into a [`VerifiedCollateral`].
//!
//! * **Intel PCS responses** ([`PcsResponses`]): the bodies of `GET /tdx/certification/v4/tcb` (`{"tcbInfo":
//!   {…},"signature":"<hex r‖s>"}`) and `GET /tdx/certification/v4/qe/identity` (`{"enclaveIdentity":{…},
//!   "signature":…}`), the URL-decoded issuer-chain headers (PEM), the PCK CRL and the root CA CRL (DER or
//!   PEM).
//! * **The shared JSON bundle** ([`Collateral::from_bundle_json`]) several verifiers use (dcap-qvl's
//!   `QuoteCollateralV3`): `pck_crl_issuer_chain`, `tcb_info_issuer_chain`, `qe_identity_issuer_chain` (PEM
//!   text), `root_ca_crl`, `pck_crl` (hex of the DER, or an array of byte values), `tcb_info`, `qe_identity`
//!   (the signed JSON object as a string), `tcb_info_signature`, `qe_identity_signature` (hex of r‖s, or
//!   byte arrays).
//!
//! Intel signs the **exact bytes** of the `tcbInfo` / `enclaveIdentity` object (ECDSA P-256 / SHA-256, raw
//! r‖s): a PCS body is never re-serialized; its object is cut out of the received text (serde_json's
//! `RawValue`), and a bundle carries that text verbatim.
//!
//! [`Collateral::verify`] checks, once and independently of time: both issuer chains and the PCK CRL issuer
//! chain end in the pinned Intel SGX Root CA and verify; the root CA CRL is signed by the root and the PCK
//! CRL by its PCK CA; neither the TCB Signing certificate nor the PCK CA is revoked by the root CA CRL; both
//! JSON signatures verify under the TCB Signing key; both JSON objects decode with the right id and version.
//! What depends on time — every certificate's validity, each CRL's thisUpdate..nextUpdate, each JSON's
//! issueDate..nextUpdate — is recorded and checked at each verification
//! ([`VerifiedCollateral::check_time`]), with the same rules as the AMD CRLs (a CRL is fresh from
//! thisUpdate through nextUpdate inclusive).

use super::qe_identity::QeIdentity;
use super::tcb_info::{TcbInfo, bad};
use crate::crypto::CryptoProvider;
use crate::error::{CertRole, Error};
use crate::time::UnixTime;
use crate::x509::{Certificate, Crl, PublicKey};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Largest collateral document accepted (a PCS body or a JSON bundle): 1 MiB. Source: real TCB Info bodies
/// are 2–5 KiB and a bundle with three PEM chains and two CRLs ≈17 KiB.
pub const MAX_COLLATERAL_SIZE: usize = 1024 * 1024;
/// Most certificates in one issuer chain (Intel's are two: TCB Signing or PCK CA, and the root).
pub const MAX_ISSUER_CHAIN_CERTS: usize = 4;

/// The Intel PCS responses that make up the collateral, as received.
#[derive(Clone, Copy, Debug)]
pub struct PcsResponses<'a> {
    /// Body of `GET /tdx/certification/v4/tcb?fmspc=…`.
    pub tcb_info: &'a [u8],
    /// Its `TCB-Info-Issuer-Chain` header, URL-decoded (PEM).
    pub tcb_info_issuer_chain: &'a [u8],
    /// Body of `GET /tdx/certification/v4/qe/identity`.
    pub qe_identity: &'a [u8],
    /// Its `SGX-Enclave-Identity-Issuer-Chain` header, URL-decoded (PEM).
    pub qe_identity_issuer_chain: &'a [u8],
    /// Body of `GET /sgx/certification/v4/pckcrl?ca=platform|processor` (DER or PEM); `None` when absent.
    pub pck_crl: Option<&'a [u8]>,
    /// Its `SGX-PCK-CRL-Issuer-Chain` header, URL-decoded (PEM).
    pub pck_crl_issuer_chain: &'a [u8],
    /// The Intel SGX Root CA CRL (DER or PEM); `None` when absent.
    pub root_ca_crl: Option<&'a [u8]>,
}

/// Unverified collateral, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collateral {
    /// The exact text of the signed `tcbInfo` object.
    pub tcb_info: Vec<u8>,
    /// Its signature, r ‖ s.
    pub tcb_info_signature: [u8; 64],
    /// TCB Signing certificate and root, DER, in order.
    pub tcb_info_issuer_chain: Vec<Vec<u8>>,
    /// The exact text of the signed `enclaveIdentity` object.
    pub qe_identity: Vec<u8>,
    /// Its signature, r ‖ s.
    pub qe_identity_signature: [u8; 64],
    /// TCB Signing certificate and root, DER, in order.
    pub qe_identity_issuer_chain: Vec<Vec<u8>>,
    /// The PCK CA's CRL, DER.
    pub pck_crl: Option<Vec<u8>>,
    /// PCK CA and root, DER, in order.
    pub pck_crl_issuer_chain: Vec<Vec<u8>>,
    /// The root CA's CRL, DER.
    pub root_ca_crl: Option<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum BytesField {
    Hex(String),
    Array(Vec<u8>),
}

impl BytesField {
    fn decode(self, what: &'static str) -> Result<Vec<u8>, Error> {
        match self {
            Self::Array(v) => Ok(v),
            Self::Hex(s) => hex::decode(s.trim()).map_err(|_| bad(what, "not hex")),
        }
    }
}

#[derive(Deserialize)]
struct Bundle {
    pck_crl_issuer_chain: String,
    root_ca_crl: Option<BytesField>,
    pck_crl: Option<BytesField>,
    tcb_info_issuer_chain: String,
    tcb_info: String,
    tcb_info_signature: BytesField,
    qe_identity_issuer_chain: String,
    qe_identity: String,
    qe_identity_signature: BytesField,
}

#[derive(Deserialize)]
struct PcsBody<'a> {
    #[serde(rename = "tcbInfo", borrow, default)]
    tcb_info: Option<&'a RawValue>,
    #[serde(rename = "enclaveIdentity", borrow, default)]
    enclave_identity: Option<&'a RawValue>,
    signature: String,
}

fn signature(v: Vec<u8>, what: &'static str) -> Result<[u8; 64], Error> {
    v.try_into().map_err(|_| bad(what, "signature is not 64 bytes (r ‖ s)"))
}

fn size_ok(bytes: &[u8], what: &'static str) -> Result<(), Error> {
    if bytes.len() > MAX_COLLATERAL_SIZE {
        return Err(Error::LimitExceeded { what, limit: MAX_COLLATERAL_SIZE, found: bytes.len() });
    }
    Ok(())
}

fn chain(pem: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    let certs = crate::x509::pem::certificates_from_pem_or_der(pem)?;
    if certs.len() > MAX_ISSUER_CHAIN_CERTS {
        return Err(Error::LimitExceeded {
            what: "certificates in an issuer chain",
            limit: MAX_ISSUER_CHAIN_CERTS,
            found: certs.len(),
        });
    }
    Ok(certs)
}

/// A CRL as DER, from DER or PEM ("X509 CRL").
fn crl_der(input: &[u8]) -> Result<Vec<u8>, Error> {
    if input.first() == Some(&0x30) {
        return Ok(input.to_vec());
    }
    crate::x509::pem::parse_pem(input)?
        .into_iter()
        .find(|b| b.label == "X509 CRL")
        .map(|b| b.der)
        .ok_or(Error::Pem { reason: "no X509 CRL block" })
}

/// Cuts the signed object and its signature out of a PCS body.
fn pcs_body(body: &[u8], key: &'static str) -> Result<(Vec<u8>, [u8; 64]), Error> {
    size_ok(body, "TDX collateral size")?;
    let parsed: PcsBody<'_> = serde_json::from_slice(body).map_err(|_| bad(key, "not a PCS response body"))?;
    let raw = match key {
        "tcbInfo" => parsed.tcb_info,
        _ => parsed.enclave_identity,
    }
    .ok_or(bad(key, "object missing from the PCS response"))?;
    let sig = hex::decode(&parsed.signature).map_err(|_| bad(key, "signature is not hex"))?;
    Ok((raw.get().as_bytes().to_vec(), signature(sig, key)?))
}

impl Collateral {
    /// Reads the shared JSON bundle.
    pub fn from_bundle_json(json: &[u8]) -> Result<Self, Error> {
        size_ok(json, "TDX collateral size")?;
        let b: Bundle = serde_json::from_slice(json).map_err(|_| bad("bundle", "not a TDX collateral JSON bundle"))?;
        Ok(Self {
            tcb_info: b.tcb_info.into_bytes(),
            tcb_info_signature: signature(b.tcb_info_signature.decode("tcb_info_signature")?, "tcb_info_signature")?,
            tcb_info_issuer_chain: chain(b.tcb_info_issuer_chain.as_bytes())?,
            qe_identity: b.qe_identity.into_bytes(),
            qe_identity_signature: signature(
                b.qe_identity_signature.decode("qe_identity_signature")?,
                "qe_identity_signature",
            )?,
            qe_identity_issuer_chain: chain(b.qe_identity_issuer_chain.as_bytes())?,
            pck_crl: b.pck_crl.map(|c| c.decode("pck_crl")).transpose()?,
            pck_crl_issuer_chain: chain(b.pck_crl_issuer_chain.as_bytes())?,
            root_ca_crl: b.root_ca_crl.map(|c| c.decode("root_ca_crl")).transpose()?,
        })
    }

    /// Assembles collateral from Intel PCS responses.
    pub fn from_pcs(r: &PcsResponses<'_>) -> Result<Self, Error> {
        let (tcb_info, tcb_info_signature) = pcs_body(r.tcb_info, "tcbInfo")?;
        let (qe_identity, qe_identity_signature) = pcs_body(r.qe_identity, "enclaveIdentity")?;
        Ok(Self {
            tcb_info,
            tcb_info_signature,
            tcb_info_issuer_chain: chain(r.tcb_info_issuer_chain)?,
            qe_identity,
            qe_identity_signature,
            qe_identity_issuer_chain: chain(r.qe_identity_issuer_chain)?,
            pck_crl: r.pck_crl.map(crl_der).transpose()?,
            pck_crl_issuer_chain: chain(r.pck_crl_issuer_chain)?,
            root_ca_crl: r.root_ca_crl.map(crl_der).transpose()?,
        })
    }

    /// Writes the shared JSON bundle (hex for binary fields), readable by [`Self::from_bundle_json`].
    pub fn to_bundle_json(&self) -> String {
        let pem = |certs: &[Vec<u8>]| {
            use base64::Engine as _;
            let mut s = String::new();
            for c in certs {
                s.push_str("-----BEGIN CERTIFICATE-----\n");
                let b64 = base64::engine::general_purpose::STANDARD.encode(c);
                for line in b64.as_bytes().chunks(64) {
                    s.push_str(core::str::from_utf8(line).unwrap_or_default());
                    s.push('\n');
                }
                s.push_str("-----END CERTIFICATE-----\n");
            }
            s
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        serde_json::json!({
            "pck_crl_issuer_chain": pem(&self.pck_crl_issuer_chain),
            "root_ca_crl": self.root_ca_crl.as_ref().map(hex::encode),
            "pck_crl": self.pck_crl.as_ref().map(hex::encode),
            "tcb_info_issuer_chain": pem(&self.tcb_info_issuer_chain),
            "tcb_info": text(&self.tcb_info),
            "tcb_info_signature": hex::encode(self.tcb_info_signature),
            "qe_identity_issuer_chain": pem(&self.qe_identity_issuer_chain),
            "qe_identity": text(&self.qe_identity),
            "qe_identity_signature": hex::encode(self.qe_identity_signature),
        })
        .to_string()
    }

    /// Verifies the collateral's signatures and structure under the pinned Intel SGX Root CA (see the
    /// module docs). Time-dependent checks are left to [`VerifiedCollateral::check_time`].
    pub fn verify(&self, provider: &CryptoProvider) -> Result<VerifiedCollateral, Error> {
        self.verify_under(provider, crate::intel::SGX_ROOT_CA)
    }

    pub(crate) fn verify_under(&self, provider: &CryptoProvider, root_der: &[u8]) -> Result<VerifiedCollateral, Error> {
        let root = Certificate::from_der(root_der)?;
        let mut windows = Vec::new();
        windows.push(Window::cert(CertRole::IntelRootCa, &root));

        // Root CA CRL.
        let root_revoked = match &self.root_ca_crl {
            Some(der) => {
                let crl = Crl::from_der(der)?;
                check_crl_signature(provider, &crl, &root)?;
                windows.push(Window::crl("root CA CRL", &crl));
                Some(crl.revoked_serials().map(Box::from).collect::<Vec<Box<[u8]>>>())
            }
            None => None,
        };
        let revoked_by_root = |serial: &[u8]| root_revoked.as_ref().is_some_and(|r| r.iter().any(|s| &**s == serial));

        // TCB Signing chain(s), then the two signed objects.
        let tcb_signer = verify_issued_by_root(provider, &self.tcb_info_issuer_chain, &root, CertRole::TcbSigning)?;
        let qe_signer = verify_issued_by_root(provider, &self.qe_identity_issuer_chain, &root, CertRole::TcbSigning)?;
        for signer in [&tcb_signer, &qe_signer] {
            if revoked_by_root(signer.serial()) {
                return Err(Error::Revoked {
                    role: CertRole::TcbSigning,
                    serial: crate::error::Bytes::new(signer.serial()),
                });
            }
            windows.push(Window::cert(CertRole::TcbSigning, signer));
        }
        verify_raw_signature(provider, &tcb_signer, &self.tcb_info, &self.tcb_info_signature, "TCB Info")?;
        verify_raw_signature(provider, &qe_signer, &self.qe_identity, &self.qe_identity_signature, "QE Identity")?;
        let tcb_info = TcbInfo::from_json(&self.tcb_info)?;
        let qe_identity = QeIdentity::from_json(&self.qe_identity)?;
        windows.push(Window::json("TCB Info", tcb_info.issue_date, tcb_info.next_update));
        windows.push(Window::json("QE Identity", qe_identity.issue_date, qe_identity.next_update));

        // PCK CA and its CRL.
        let pck_ca = verify_issued_by_root(provider, &self.pck_crl_issuer_chain, &root, CertRole::PckCa)?;
        if revoked_by_root(pck_ca.serial()) {
            return Err(Error::Revoked { role: CertRole::PckCa, serial: crate::error::Bytes::new(pck_ca.serial()) });
        }
        windows.push(Window::cert(CertRole::PckCa, &pck_ca));
        let pck_crl = match &self.pck_crl {
            Some(der) => {
                let crl = Crl::from_der(der)?;
                check_crl_signature(provider, &crl, &pck_ca)?;
                windows.push(Window::crl("PCK CRL", &crl));
                Some(PckCrl {
                    issuer: crl.issuer().as_der().into(),
                    revoked: crl.revoked_serials().map(Box::from).collect(),
                })
            }
            None => None,
        };
        let ca = VerifiedCa::from_cert(&pck_ca)?;
        Ok(VerifiedCollateral { tcb_info, qe_identity, windows, root_revoked, pck_crl, pck_ca: ca })
    }
}

/// A certificate chain `[cert, root]` (or `[cert]`) whose first certificate the pinned root issued.
fn verify_issued_by_root<'c>(
    provider: &CryptoProvider,
    chain: &'c [Vec<u8>],
    root: &Certificate<'_>,
    role: CertRole,
) -> Result<Certificate<'c>, Error> {
    let (first, rest) = chain.split_first().ok_or(bad("issuer chain", "empty"))?;
    match rest {
        [] => {}
        [r] if r.as_slice() == root.der() => {}
        _ => return Err(Error::UntrustedIntelRoot),
    }
    let cert = Certificate::from_der(first)?;
    verify_ca_issued(provider, &cert, root, role)?;
    Ok(cert)
}

/// `cert` was issued by `issuer` (a CA allowed to sign certificates), by name and signature.
pub(crate) fn verify_ca_issued(
    provider: &CryptoProvider,
    cert: &Certificate<'_>,
    issuer: &Certificate<'_>,
    role: CertRole,
) -> Result<(), Error> {
    if cert.issuer() != issuer.subject() {
        return Err(Error::IssuerMismatch { role });
    }
    if issuer.is_ca() != Some(true) || !issuer.may_sign_certificates() {
        return Err(Error::NotACa { role: CertRole::IntelRootCa });
    }
    cert.signature_algorithm()
        .verify(provider, &issuer.public_key(), cert.tbs(), cert.signature())
        .map_err(|_| Error::CertSignatureInvalid { role })
}

fn check_crl_signature(provider: &CryptoProvider, crl: &Crl<'_>, issuer: &Certificate<'_>) -> Result<(), Error> {
    if crl.issuer() != issuer.subject() || !issuer.may_sign_crls() {
        return Err(Error::CrlSignatureInvalid);
    }
    crl.signature_algorithm()
        .verify(provider, &issuer.public_key(), crl.tbs(), crl.signature())
        .map_err(|_| Error::CrlSignatureInvalid)
}

fn verify_raw_signature(
    provider: &CryptoProvider,
    signer: &Certificate<'_>,
    message: &[u8],
    sig: &[u8; 64],
    what: &'static str,
) -> Result<(), Error> {
    let PublicKey::EcP256 { point } = signer.public_key() else {
        return Err(Error::UnsupportedAlgorithm { what: "TCB Signing key (need ECDSA P-256)" });
    };
    provider.ecdsa_p256_sha256.verify_fixed(point, message, sig).map_err(|_| Error::CollateralSignatureInvalid { what })
}

/// What is checked against the trusted time at each verification.
#[derive(Clone, Copy, Debug)]
enum WindowKind {
    Cert(CertRole),
    Crl,
    Json(&'static str),
}

#[derive(Clone, Copy, Debug)]
struct Window {
    kind: WindowKind,
    from: UnixTime,
    until: Option<UnixTime>,
}

impl Window {
    fn cert(role: CertRole, c: &Certificate<'_>) -> Self {
        Self { kind: WindowKind::Cert(role), from: c.not_before(), until: Some(c.not_after()) }
    }
    fn crl(_what: &'static str, c: &Crl<'_>) -> Self {
        Self { kind: WindowKind::Crl, from: c.this_update(), until: c.next_update() }
    }
    fn json(what: &'static str, from: UnixTime, until: UnixTime) -> Self {
        Self { kind: WindowKind::Json(what), from, until: Some(until) }
    }
    fn check(&self, time: UnixTime) -> Result<(), Error> {
        match self.kind {
            WindowKind::Cert(role) => {
                let not_after = self.until.unwrap_or(self.from);
                if time < self.from {
                    return Err(Error::CertNotYetValid { role, time, not_before: self.from });
                }
                if time > not_after {
                    return Err(Error::CertExpired { role, time, not_after });
                }
            }
            WindowKind::Crl => crate::x509::crl::check_window(self.from, self.until, time)?,
            WindowKind::Json(what) => {
                let next_update = self.until.unwrap_or(self.from);
                if time < self.from {
                    return Err(Error::CollateralNotYetValid { what, time, issue_date: self.from });
                }
                if time > next_update {
                    return Err(Error::CollateralExpired { what, time, next_update });
                }
            }
        }
        Ok(())
    }
}

/// The PCK CRL's issuer and revoked serials.
#[derive(Debug)]
pub(crate) struct PckCrl {
    pub(crate) issuer: Box<[u8]>,
    pub(crate) revoked: Vec<Box<[u8]>>,
}

/// A PCK CA verified under the root: what leaf verification needs.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedCa {
    /// The certificate's DER (compared byte for byte with the CA a quote carries).
    pub(crate) der: Box<[u8]>,
    pub(crate) subject: Box<[u8]>,
    pub(crate) point: Box<[u8]>,
    pub(crate) serial: Box<[u8]>,
    pub(crate) not_before: UnixTime,
    pub(crate) not_after: UnixTime,
}

impl VerifiedCa {
    pub(crate) fn from_cert(c: &Certificate<'_>) -> Result<Self, Error> {
        let PublicKey::EcP256 { point } = c.public_key() else {
            return Err(Error::UnsupportedAlgorithm { what: "PCK CA key (need ECDSA P-256)" });
        };
        Ok(Self {
            der: c.der().into(),
            subject: c.subject().as_der().into(),
            point: point.into(),
            serial: c.serial().into(),
            not_before: c.not_before(),
            not_after: c.not_after(),
        })
    }
}

/// Collateral whose signatures and structure verified; shared by every verification that uses it.
#[derive(Debug)]
pub struct VerifiedCollateral {
    tcb_info: TcbInfo,
    qe_identity: QeIdentity,
    windows: Vec<Window>,
    pub(crate) root_revoked: Option<Vec<Box<[u8]>>>,
    pub(crate) pck_crl: Option<PckCrl>,
    pub(crate) pck_ca: VerifiedCa,
}

impl VerifiedCollateral {
    /// The decoded TCB Info.
    pub fn tcb_info(&self) -> &TcbInfo {
        &self.tcb_info
    }
    /// The decoded QE Identity.
    pub fn qe_identity(&self) -> &QeIdentity {
        &self.qe_identity
    }
    /// Whether both CRLs are present (revocation can be checked).
    pub fn has_crls(&self) -> bool {
        self.root_revoked.is_some() && self.pck_crl.is_some()
    }
    /// Checks every certificate validity, CRL freshness and JSON issueDate..nextUpdate against `time`;
    /// the first failure is returned.
    pub fn check_time(&self, time: UnixTime) -> Result<(), Error> {
        self.windows.iter().try_for_each(|w| w.check(time))
    }
    /// The earliest end of any window (when this collateral stops being usable).
    pub fn expires(&self) -> UnixTime {
        self.windows.iter().filter_map(|w| w.until).min().unwrap_or(UnixTime::from_secs(0))
    }
    /// The latest start of any window (before it, the collateral is not yet usable).
    pub fn valid_from(&self) -> UnixTime {
        self.windows.iter().map(|w| w.from).max().unwrap_or(UnixTime::from_secs(0))
    }
}
