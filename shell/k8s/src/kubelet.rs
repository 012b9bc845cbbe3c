//! Kubelet certificates at the cost of their signature: assembled from a template prepared once per CA and
//! signed with aws-lc-rs, not through OpenSSL's generic key encoders (`X509_set_pubkey`, `X509_sign`: ≈ 0.3–0.4
//! ms with OpenSSL 3.0 against ≈ 0.02 ms of signature here). What is certified was checked before
//! (`ca::check_kubelet_csr`): this module encodes, it does not judge.
//!
//! # What a certificate contains (RFC 5280 §4.1)
//!
//! ```text
//! TBSCertificate
//!   version v3 · serial: 16 random octets, positive, first octet non-zero    ◄ per certificate
//!   signature: the CA key's algorithm (ecdsa-with-SHA256 for P-256, -SHA384 for P-384, sha256WithRSAEncryption)
//!   issuer: the CA certificate's subject, byte for byte
//!   validity: now − CLOCK_SKEW_ALLOWANCE .. now + validity (UTCTime before 2050, GeneralizedTime after)  ◄
//!   subject: O=system:nodes, CN=system:node:<name> (UTF8String)                                        ◄
//!   subjectPublicKeyInfo: the CSR's, byte for byte as its signature covered it                          ◄
//!   extensions: basicConstraints CA:FALSE (critical) · keyUsage digitalSignature (+ keyEncipherment for RSA
//!     keys; critical) ◄ · extKeyUsage clientAuth, serverAuth (the kubelet serves its API with it too) ·
//!     subjectAltName DNS = the node name of the checked subject, nothing the requester asks for ◄ ·
//!     subjectKeyIdentifier = SHA-1 of the subject key ◄ · authorityKeyIdentifier = the CA's
//!     subjectKeyIdentifier (or SHA-1 of its key when it has none)
//! ```
//!
//! Lines marked ◄ change per certificate; everything else is encoded once, when `ClusterCa::load` prepares
//! the template.

use std::fmt;

use attest_engine::der::{Reader, tag};
use attest_engine::x509::{Certificate, PublicKey};
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};

// ---- DER OIDs and fixed encodings (content octets; X.690 §8.19) --------------------------------------------

pub(crate) const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
pub(crate) const OID_ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0A];
const OID_SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1D, 0x0E];
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x0F];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1D, 0x13];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1D, 0x23];
const OID_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x25];
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1D, 0x11];
/// id-kp-serverAuth, id-kp-clientAuth (RFC 5280 §4.2.1.12).
const OID_KP_SERVER_AUTH: &[u8] = &[0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const OID_KP_CLIENT_AUTH: &[u8] = &[0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
/// GeneralName `dNSName` (`[2] IMPLICIT IA5String`, RFC 5280 §4.2.1.6).
const DNS_NAME: u8 = 0x82;
/// AlgorithmIdentifier ecdsa-with-SHA256 (RFC 5758 §3.2: parameters absent).
const ALG_ECDSA_SHA256: &[u8] = &[0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02];
/// AlgorithmIdentifier ecdsa-with-SHA384.
const ALG_ECDSA_SHA384: &[u8] = &[0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03];
/// AlgorithmIdentifier sha256WithRSAEncryption (RFC 4055 §5: parameters NULL).
const ALG_RSA_SHA256: &[u8] =
    &[0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B, 0x05, 0x00];
/// UTF8String (RFC 5280 §4.1.2.6: the string type for new names).
pub(crate) const UTF8_STRING: u8 = 0x0C;
/// keyUsage bits (RFC 5280 §4.2.1.3) as the BIT STRING contents: unused-bit count, then the bits.
const KU_DIGITAL_SIGNATURE: [u8; 2] = [0x07, 0x80];
const KU_DIGITAL_SIGNATURE_KEY_ENCIPHERMENT: [u8; 2] = [0x05, 0xA0];
/// Serial number octets (RFC 5280 §4.1.2.2: at most 20).
const SERIAL_LEN: usize = 16;

// ---- The template ---------------------------------------------------------------------------------------

/// What a kubelet certificate certifies (checked by the caller: `ca::check_kubelet_csr`).
pub(crate) struct Leaf<'a> {
    /// The SubjectPublicKeyInfo TLV, as the CSR carried it.
    pub(crate) spki: &'a [u8],
    /// `system:node:<name>`.
    pub(crate) common_name: &'a str,
    /// The node name: the one DNS SAN.
    pub(crate) dns_name: &'a str,
    /// An RSA key (keyUsage then includes keyEncipherment).
    pub(crate) rsa: bool,
}

/// The CA's signing key, parsed once.
enum SigningKey {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// Everything of a kubelet certificate that does not depend on the node, encoded once; signs with the
/// cluster CA's key through aws-lc-rs.
pub(crate) struct KubeletTemplate {
    key: SigningKey,
    rng: SystemRandom,
    /// AlgorithmIdentifier TLV of the CA's signature.
    algorithm: &'static [u8],
    /// The CA certificate's subject TLV (the issuer of every kubelet certificate).
    issuer: Vec<u8>,
    /// The organization RDN (`O=system:nodes`; a SET TLV).
    organization_rdn: Vec<u8>,
    /// basicConstraints and extKeyUsage (clientAuth, serverAuth) extensions (TLVs).
    fixed_extensions: Vec<u8>,
    /// The authorityKeyIdentifier extension (TLV).
    authority_key_id: Vec<u8>,
}

impl fmt::Debug for KubeletTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeletTemplate").field("issuer_len", &self.issuer.len()).finish_non_exhaustive()
    }
}

/// Why a CA certificate and key cannot sign kubelet certificates.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum TemplateError {
    /// The CA certificate could not be read.
    Certificate(attest_engine::Error),
    /// The key is not a valid key of the certificate's kind.
    Key(aws_lc_rs::error::KeyRejected),
    /// The certificate's key is neither EC P-256/P-384 nor RSA.
    UnsupportedKey,
    /// The key does not belong to the CA certificate.
    KeyMismatch,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Certificate(e) => write!(f, "CA certificate: {e}"),
            Self::Key(e) => write!(f, "CA key: {e}"),
            Self::UnsupportedKey => f.write_str("CA key: not EC P-256/P-384 or RSA"),
            Self::KeyMismatch => f.write_str("CA key: does not belong to the CA certificate"),
        }
    }
}

impl std::error::Error for TemplateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Certificate(e) => Some(e),
            Self::Key(e) => Some(e),
            Self::UnsupportedKey | Self::KeyMismatch => None,
        }
    }
}

impl KubeletTemplate {
    /// The template of the CA `ca_der` (DER certificate) whose private key is `key_pkcs8` (PKCS #8 DER; the
    /// caller checked that it belongs to the certificate).
    pub(crate) fn new(ca_der: &[u8], key_pkcs8: &[u8], organization: &str) -> Result<KubeletTemplate, TemplateError> {
        let ca = Certificate::from_der(ca_der).map_err(TemplateError::Certificate)?;
        let bad_key = TemplateError::Key;
        let (key, algorithm) = match ca.public_key() {
            PublicKey::EcP256 { .. } => (
                SigningKey::Ecdsa(
                    EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, key_pkcs8).map_err(bad_key)?,
                ),
                ALG_ECDSA_SHA256,
            ),
            PublicKey::EcP384 { .. } => (
                SigningKey::Ecdsa(
                    EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P384_SHA384_ASN1_SIGNING, key_pkcs8).map_err(bad_key)?,
                ),
                ALG_ECDSA_SHA384,
            ),
            PublicKey::Rsa { .. } => {
                (SigningKey::Rsa(RsaKeyPair::from_pkcs8(key_pkcs8).map_err(bad_key)?), ALG_RSA_SHA256)
            }
            _ => return Err(TemplateError::UnsupportedKey),
        };
        // The key must be the certificate's (checked by the caller with OpenSSL; checked again here on the
        // bytes this module signs with).
        let public = match &key {
            SigningKey::Ecdsa(k) => k.public_key().as_ref().to_vec(),
            SigningKey::Rsa(k) => k.public_key().as_ref().to_vec(),
        };
        if subject_public_key(ca.spki()).map_err(TemplateError::Certificate)? != public {
            return Err(TemplateError::KeyMismatch);
        }
        let ca_key_id = ca
            .extensions()
            .filter_map(Result::ok)
            .find(|e| e.oid == OID_SUBJECT_KEY_ID)
            .map(|e| {
                let mut r = Reader::new(e.value, "SubjectKeyIdentifier");
                let id = r.read(tag::OCTET_STRING)?;
                r.finish().map(|()| id.to_vec())
            })
            .transpose()
            .map_err(TemplateError::Certificate)?
            .unwrap_or_else(|| sha1(&public).to_vec());

        let mut organization_rdn = Vec::new();
        rdn(&mut organization_rdn, OID_ORGANIZATION, organization.as_bytes());
        let mut fixed_extensions = Vec::new();
        // basicConstraints: critical, SEQUENCE {} (cA FALSE is the default, so absent).
        extension(&mut fixed_extensions, OID_BASIC_CONSTRAINTS, true, &[0x30, 0x00]);
        let mut eku = Vec::new();
        tlv(&mut eku, tag::OID, OID_KP_CLIENT_AUTH);
        tlv(&mut eku, tag::OID, OID_KP_SERVER_AUTH);
        let mut eku_seq = Vec::new();
        tlv(&mut eku_seq, tag::SEQUENCE, &eku);
        extension(&mut fixed_extensions, OID_EXT_KEY_USAGE, false, &eku_seq);
        let mut aki = Vec::new();
        tlv(&mut aki, 0x80, &ca_key_id); // [0] IMPLICIT KeyIdentifier
        let mut aki_seq = Vec::new();
        tlv(&mut aki_seq, tag::SEQUENCE, &aki);
        let mut authority_key_id = Vec::new();
        extension(&mut authority_key_id, OID_AUTHORITY_KEY_ID, false, &aki_seq);

        Ok(KubeletTemplate {
            key,
            rng: SystemRandom::new(),
            algorithm,
            issuer: ca.subject().as_der().to_vec(),
            organization_rdn,
            fixed_extensions,
            authority_key_id,
        })
    }

    /// The DER certificate for `leaf`, valid from `not_before` to `not_after` (Unix seconds).
    pub(crate) fn sign(&self, leaf: &Leaf<'_>, not_before: u64, not_after: u64) -> Result<Vec<u8>, &'static str> {
        let mut serial = [0u8; SERIAL_LEN];
        self.rng.fill(&mut serial).map_err(|_| "no randomness for the serial number")?;
        // Positive (top bit clear) and minimal (first octet non-zero): always 16 octets.
        serial[0] = (serial[0] & 0x7F).max(1);
        let subject_key = subject_public_key(leaf.spki).map_err(|_| "the subject key is not a SubjectPublicKeyInfo")?;

        let mut tbs = Vec::with_capacity(512 + leaf.spki.len() + self.issuer.len());
        tbs.extend_from_slice(&[0xA0, 0x03, 0x02, 0x01, 0x02]); // [0] EXPLICIT Version v3
        tlv(&mut tbs, tag::INTEGER, &serial);
        tbs.extend_from_slice(self.algorithm);
        tbs.extend_from_slice(&self.issuer);
        let mut validity = Vec::with_capacity(34);
        time(&mut validity, not_before);
        time(&mut validity, not_after);
        tlv(&mut tbs, tag::SEQUENCE, &validity);
        let mut subject = self.organization_rdn.clone();
        rdn(&mut subject, OID_COMMON_NAME, leaf.common_name.as_bytes());
        tlv(&mut tbs, tag::SEQUENCE, &subject);
        tbs.extend_from_slice(leaf.spki);
        let mut extensions = Vec::with_capacity(160);
        extensions.extend_from_slice(&self.fixed_extensions[..]);
        let mut ku = Vec::with_capacity(4);
        tlv(
            &mut ku,
            tag::BIT_STRING,
            if leaf.rsa { &KU_DIGITAL_SIGNATURE_KEY_ENCIPHERMENT } else { &KU_DIGITAL_SIGNATURE },
        );
        extension(&mut extensions, OID_KEY_USAGE, true, &ku);
        // The kubelet also serves with this certificate: the one name the node proved in its CSR subject (a
        // DNS-1123 name, so valid IA5String), never a name or address the requester asks for.
        let mut dns = Vec::with_capacity(leaf.dns_name.len() + 4);
        tlv(&mut dns, DNS_NAME, leaf.dns_name.as_bytes());
        let mut san = Vec::with_capacity(dns.len() + 4);
        tlv(&mut san, tag::SEQUENCE, &dns);
        extension(&mut extensions, OID_SUBJECT_ALT_NAME, false, &san);
        let mut ski = Vec::with_capacity(22);
        tlv(&mut ski, tag::OCTET_STRING, &sha1(subject_key));
        extension(&mut extensions, OID_SUBJECT_KEY_ID, false, &ski);
        extensions.extend_from_slice(&self.authority_key_id);
        let mut list = Vec::with_capacity(extensions.len() + 4);
        tlv(&mut list, tag::SEQUENCE, &extensions);
        tlv(&mut tbs, tag::context(3), &list);
        let mut tbs_tlv = Vec::with_capacity(tbs.len() + 4);
        tlv(&mut tbs_tlv, tag::SEQUENCE, &tbs);

        let sig = self.signature(&tbs_tlv)?;
        let mut body = tbs_tlv;
        body.extend_from_slice(self.algorithm);
        let mut bits = Vec::with_capacity(sig.len() + 1);
        bits.push(0); // no unused bits
        bits.extend_from_slice(&sig);
        tlv(&mut body, tag::BIT_STRING, &bits);
        let mut der = Vec::with_capacity(body.len() + 4);
        tlv(&mut der, tag::SEQUENCE, &body);
        Ok(der)
    }

    fn signature(&self, message: &[u8]) -> Result<Vec<u8>, &'static str> {
        let failed = || "the CA key could not sign";
        match &self.key {
            SigningKey::Ecdsa(k) => Ok(k.sign(&self.rng, message).map_err(|_| failed())?.as_ref().to_vec()),
            SigningKey::Rsa(k) => {
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut sig).map_err(|_| failed())?;
                Ok(sig)
            }
        }
    }
}

/// The subjectPublicKey bits of a SubjectPublicKeyInfo TLV (RFC 5280 §4.1.2.7).
fn subject_public_key(spki: &[u8]) -> Result<&[u8], attest_engine::Error> {
    let mut r = Reader::new(spki, "SubjectPublicKeyInfo");
    let mut s = r.sequence("SubjectPublicKeyInfo")?;
    r.finish()?;
    s.read(tag::SEQUENCE)?;
    let key = s.bit_string_bytes()?;
    s.finish()?;
    Ok(key)
}

/// SHA-1 of `data`: the key identifier of RFC 5280 §4.2.1.2 method (1), what OpenSSL and Go compute.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut out = [0; 20];
    out.copy_from_slice(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, data).as_ref());
    out
}

// ---- A minimal DER writer (X.690 §8.1: definite, minimal lengths) ------------------------------------------

/// Appends `tag ‖ length ‖ value`.
fn tlv(out: &mut Vec<u8>, tag: u8, value: &[u8]) {
    out.push(tag);
    let len = value.len();
    match len {
        0..=0x7F => out.push(len as u8),
        0x80..=0xFF => out.extend_from_slice(&[0x81, len as u8]),
        0x100..=0xFFFF => out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]),
        _ => out.extend_from_slice(&[0x83, (len >> 16) as u8, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(value);
}

/// Appends `SET { SEQUENCE { type, UTF8String value } }`: one single-valued RDN.
fn rdn(out: &mut Vec<u8>, oid: &[u8], value: &[u8]) {
    let mut atv = Vec::with_capacity(value.len() + oid.len() + 8);
    tlv(&mut atv, tag::OID, oid);
    tlv(&mut atv, UTF8_STRING, value);
    let mut seq = Vec::with_capacity(atv.len() + 4);
    tlv(&mut seq, tag::SEQUENCE, &atv);
    tlv(out, tag::SET, &seq);
}

/// Appends `Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }`.
fn extension(out: &mut Vec<u8>, oid: &[u8], critical: bool, value: &[u8]) {
    let mut e = Vec::with_capacity(value.len() + oid.len() + 10);
    tlv(&mut e, tag::OID, oid);
    if critical {
        e.extend_from_slice(&[tag::BOOLEAN, 0x01, 0xFF]);
    }
    tlv(&mut e, tag::OCTET_STRING, value);
    tlv(out, tag::SEQUENCE, &e);
}

/// Appends `Time` for Unix seconds `secs`: UTCTime `YYMMDDHHMMSSZ` for 1950–2049, GeneralizedTime
/// `YYYYMMDDHHMMSSZ` from 2050 on (RFC 5280 §4.1.2.5).
fn time(out: &mut Vec<u8>, secs: u64) {
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(secs / 86_400);
    let mut s = Vec::with_capacity(15);
    let two = |s: &mut Vec<u8>, v: u64| s.extend_from_slice(&[b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8]);
    let tag = if year < 2050 {
        two(&mut s, year % 100);
        tag::UTC_TIME
    } else {
        let y = year.min(9999);
        two(&mut s, y / 100);
        two(&mut s, y % 100);
        tag::GENERALIZED_TIME
    };
    for v in [u64::from(month), u64::from(day), rem / 3600, rem / 60 % 60, rem % 60] {
        two(&mut s, v);
    }
    s.push(b'Z');
    tlv(out, tag, &s);
}

/// The proleptic Gregorian date of the day `days` after 1970-01-01 (the era-based conversion: 400-year eras
/// of 146,097 days, years starting in March so that the leap day falls last).
fn civil_from_days(days: u64) -> (u64, u32, u32) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = z % 146_097; // day of era, 0..=146_096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era, 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year, 0..=365
    let mp = (5 * doy + 2) / 153; // March-based month, 0..=11
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(29_220), (2050, 1, 1));
        let mut out = Vec::new();
        time(&mut out, 2_524_607_999); // 2049-12-31T23:59:59Z
        assert_eq!(out, b"\x17\x0d491231235959Z");
        out.clear();
        time(&mut out, 2_524_608_000);
        assert_eq!(out, b"\x18\x0f20500101000000Z");
    }

    #[test]
    fn lengths_are_minimal() {
        for (len, head) in [(0usize, vec![0x04, 0x00]), (0x7F, vec![0x04, 0x7F]), (0x80, vec![0x04, 0x81, 0x80])] {
            let mut out = Vec::new();
            tlv(&mut out, 0x04, &vec![0; len]);
            assert_eq!(out[..head.len()], head[..]);
            assert_eq!(out.len(), head.len() + len);
        }
        let mut out = Vec::new();
        tlv(&mut out, 0x04, &[0; 0x100]);
        assert_eq!(out[..4], [0x04, 0x82, 0x01, 0x00]);
    }
}
