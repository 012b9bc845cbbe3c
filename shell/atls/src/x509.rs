//! Certificate issuance shared by the aTLS certificates ([`crate::cert`]) and the dry-run cluster PKI
//! (`attest-bootstrapper`'s `pki`): names, the to-be-signed fields every certificate sets (RFC 5280 §4.1:
//! version v3, serial, issuer, validity, subject, subjectPublicKeyInfo), signing, and P-256 key generation.
//!
//! The callers keep what differs: how the serial is drawn, the validity window, the extensions and the key
//! types. Errors are OpenSSL's [`ErrorStack`], which both callers' error types convert from.

use openssl::asn1::{Asn1IntegerRef, Asn1TimeRef};
use openssl::ec::{EcGroup, EcKey};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, PKeyRef, Private};
use openssl::x509::{X509, X509Builder, X509Name, X509NameBuilder, X509NameRef};
use std::sync::OnceLock;

/// The fields of a certificate's TBSCertificate other than its extensions.
pub struct Tbs<'a> {
    /// The serial number (positive, at most 20 octets: RFC 5280 §4.1.2.2).
    pub serial: &'a Asn1IntegerRef,
    /// The subject's name.
    pub subject: &'a X509NameRef,
    /// The issuer's name (the subject's own for a self-signed certificate).
    pub issuer: &'a X509NameRef,
    /// The subject's public key.
    pub public_key: &'a PKeyRef<Private>,
    /// Start of the validity period.
    pub not_before: &'a Asn1TimeRef,
    /// End of the validity period.
    pub not_after: &'a Asn1TimeRef,
}

/// A name of `(attribute, value)` entries, in order.
pub fn name(entries: &[(Nid, &str)]) -> Result<X509Name, ErrorStack> {
    let mut name = X509NameBuilder::new()?;
    for &(nid, value) in entries {
        name.append_entry_by_nid(nid, value)?;
    }
    Ok(name.build())
}

/// An X.509 v3 certificate builder with `tbs` set. The caller appends its extensions (the builder gives the
/// `x509v3_context` some of them need), then hands it to [`sign`].
pub fn builder(tbs: &Tbs<'_>) -> Result<X509Builder, ErrorStack> {
    let mut b = X509::builder()?;
    b.set_version(2)?;
    b.set_serial_number(tbs.serial)?;
    b.set_subject_name(tbs.subject)?;
    b.set_issuer_name(tbs.issuer)?;
    b.set_pubkey(tbs.public_key)?;
    b.set_not_before(tbs.not_before)?;
    b.set_not_after(tbs.not_after)?;
    Ok(b)
}

/// Signs the certificate with SHA-256 and the issuer's `key` (ecdsa-with-SHA256 or sha256WithRSAEncryption,
/// by the key's type).
pub fn sign(mut b: X509Builder, key: &PKeyRef<Private>) -> Result<X509, ErrorStack> {
    b.sign(key, MessageDigest::sha256())?;
    Ok(b.build())
}

/// A P-256 key from OpenSSL's CSPRNG.
///
/// The curve's `EC_GROUP` is built once per process and shared (OpenSSL 3.0 spends ≈ 1.5 % of a join
/// service's CPU on building it per key otherwise); it is immutable, and every key holds its own reference.
pub fn p256_key() -> Result<PKey<Private>, ErrorStack> {
    static P256: OnceLock<EcGroup> = OnceLock::new();
    let group = if let Some(group) = P256.get() {
        group
    } else {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
        P256.get_or_init(|| group)
    };
    PKey::from_ec_key(EcKey::generate(group)?)
}
