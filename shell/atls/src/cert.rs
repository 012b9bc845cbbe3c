//! The attesting side's certificate: a fresh P-256 key and a self-signed X.509 v3 certificate per
//! handshake, carrying the attestation document in a non-critical extension whose OID is the variant's.
//!
//! ```text
//! Certificate (RFC 5280 §4.1), signed ecdsa-with-SHA256 by its own key
//!   version v3, serial: 16 random bytes (positive), issuer = subject = CN=attest-atls
//!   validity: now − 1 min .. now + 5 min (freshness comes from the nonce, not the dates; a verifier does
//!             not check them, so clock skew between nodes cannot break a handshake)
//!   subjectPublicKeyInfo: id-ecPublicKey / prime256v1, generated for this handshake only
//!   extension <variant OID> (non-critical): extnValue = the protobuf AttestationDocument bytes, whose
//!             user_data = SHA-256(subjectPublicKeyInfo DER)
//! ```
//!
//! The side that does not attest (the server in server-side verification) presents the same kind of
//! certificate without the extension; nobody checks it.

use super::attestation::AttestationIssuer;
use super::error::Error;
use super::nonce::Nonce;
use crate::x509::{self, Tbs};
use openssl::asn1::{Asn1Integer, Asn1Object, Asn1OctetString, Asn1Time};
use openssl::bn::BigNum;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::{X509, X509Extension};

/// The subject and issuer CommonName of aTLS certificates.
pub const SUBJECT_CN: &str = "attest-atls";
/// How far back `notBefore` lies (tolerates a peer whose clock is behind, for TLS stacks that check dates).
pub const NOT_BEFORE_SKEW_SECS: i64 = 60;
/// Certificate lifetime after issuance.
pub const LIFETIME_SECS: i64 = 300;

/// A certificate and its private key.
#[derive(Clone)]
pub struct Credential {
    /// The self-signed certificate.
    pub certificate: X509,
    /// Its key.
    pub key: PKey<Private>,
}

impl core::fmt::Debug for Credential {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Credential").field("subject", self.certificate.subject_name()).finish_non_exhaustive()
    }
}

/// A fresh key and a certificate carrying `issuer`'s document for `nonce` (blocking: the issuer may quote
/// a TPM).
pub fn attested(issuer: &dyn AttestationIssuer, nonce: &Nonce) -> Result<Credential, Error> {
    attested_with_key(issuer, nonce, fresh_key()?)
}

/// A certificate for `key` carrying `issuer`'s document for `nonce` (the caller keeps using `key`, e.g. as
/// its kubelet key: [`crate::AtlsConnector::with_key`]).
pub fn attested_with_key(
    issuer: &dyn AttestationIssuer,
    nonce: &Nonce,
    key: PKey<Private>,
) -> Result<Credential, Error> {
    let user_data = openssl::sha::sha256(&key.public_key_to_der()?);
    let document = issuer.issue(nonce, &user_data).map_err(|source| Error::IssueFailed { source })?;
    let extension = (issuer.oid(), document.as_slice());
    Ok(Credential { certificate: build(&key, Some(extension))?, key })
}

/// A fresh key and a certificate without attestation (the side that does not attest).
pub fn plain() -> Result<Credential, Error> {
    let key = fresh_key()?;
    Ok(Credential { certificate: build(&key, None)?, key })
}

/// A certificate for `key` with an optional `(oid, value)` extension — exposed for tests that play a
/// misbehaving peer (a certificate with an unknown OID, or with a document made for another key).
pub fn build(key: &PKey<Private>, extension: Option<(&str, &[u8])>) -> Result<X509, Error> {
    let name = x509::name(&[(Nid::COMMONNAME, SUBJECT_CN)])?;
    let serial = serial()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2));
    let not_before = Asn1Time::from_unix(now - NOT_BEFORE_SKEW_SECS)?;
    let not_after = Asn1Time::from_unix(now + LIFETIME_SECS)?;
    let mut b = x509::builder(&Tbs {
        serial: &serial,
        subject: &name,
        issuer: &name,
        public_key: key,
        not_before: &not_before,
        not_after: &not_after,
    })?;
    if let Some((oid, value)) = extension {
        let oid = Asn1Object::from_str(oid)?;
        let value = Asn1OctetString::new_from_bytes(value)?;
        b.append_extension(X509Extension::new_from_der(&oid, false, &value)?)?;
    }
    Ok(x509::sign(b, key)?)
}

/// A P-256 key from OpenSSL's CSPRNG.
pub fn fresh_key() -> Result<PKey<Private>, Error> {
    Ok(x509::p256_key()?)
}

/// 16 random bytes with the top bit clear: positive and at most 20 octets (RFC 5280 §4.1.2.2).
fn serial() -> Result<Asn1Integer, Error> {
    let mut bytes = [0u8; 16];
    openssl::rand::rand_bytes(&mut bytes)?;
    bytes[0] &= 0x7F;
    bytes[0] |= 0x01; // never zero, never a leading zero octet to strip
    Ok(BigNum::from_slice(&bytes)?.to_asn1_integer()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spki_hash_is_over_the_certificates_own_spki_bytes() {
        let key = fresh_key().unwrap();
        let cert = build(&key, Some(("1.3.9900.5.1", b"doc"))).unwrap();
        let der = cert.to_der().unwrap();
        let parsed = attest_engine::x509::Certificate::from_der(&der).unwrap();
        assert_eq!(parsed.spki(), key.public_key_to_der().unwrap().as_slice());
        let ext: Vec<_> = parsed.extensions().map(Result::unwrap).collect();
        assert_eq!(ext.len(), 1);
        assert_eq!(ext[0].value, b"doc");
        assert!(!ext[0].critical);
        assert!(cert.verify(&key).unwrap());
    }
}
