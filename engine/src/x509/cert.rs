//! A borrowed view of an X.509 v3 certificate (RFC 5280 §4.1).
//!
//! Parsing checks structure only: DER well-formedness, version 3, identical inner and outer signature
//! algorithms, a supported key, unique extensions and no unknown critical extension. Signatures, validity
//! and AMD-specific meaning are checked by the chain verifier ([`crate::snp::SnpVerifier`]).

use super::alg::{PublicKey, SignatureAlgorithm};
use super::amd::AmdExtensions;
use super::eku::ExtKeyUsage;
use super::name::Name;
use crate::der::{Reader, oid, tag};
use crate::error::Error;
use crate::time::UnixTime;

/// Most extensions a certificate may carry (AMD VCEKs carry 10; the limit bounds duplicate detection).
pub const MAX_EXTENSIONS: usize = 32;
/// Longest serial number accepted (RFC 5280 §4.1.2.2: at most 20 octets; one more for a sign byte).
pub const MAX_SERIAL_LEN: usize = 21;

/// A parsed certificate borrowing from its DER encoding.
#[derive(Clone, Debug)]
pub struct Certificate<'a> {
    der: &'a [u8],
    tbs: &'a [u8],
    signature_algorithm: SignatureAlgorithm,
    signature: &'a [u8],
    serial: &'a [u8],
    issuer: Name<'a>,
    subject: Name<'a>,
    not_before: UnixTime,
    not_after: UnixTime,
    spki: &'a [u8],
    public_key: PublicKey<'a>,
    extensions: Option<&'a [u8]>,
    ca: Option<bool>,
    path_len: Option<u64>,
    key_usage: Option<u16>,
    eku: Option<ExtKeyUsage<'a>>,
}

impl<'a> Certificate<'a> {
    /// Parses a DER certificate; the input must hold exactly one certificate.
    pub fn from_der(der: &'a [u8]) -> Result<Self, Error> {
        let mut outer = Reader::new(der, "Certificate");
        let mut cert = outer.sequence("Certificate")?;
        outer.finish()?;
        let (tbs_value, tbs) = cert.read_tlv(tag::SEQUENCE)?;
        let (outer_alg_value, outer_alg) = cert.read_tlv(tag::SEQUENCE)?;
        let signature = cert.bit_string_bytes()?;
        cert.finish()?;

        let mut t = Reader::new(tbs_value, "TBSCertificate");
        let version = t.read(tag::context(0))?;
        let mut v = Reader::new(version, "Version");
        if v.small_uint()? != 2 {
            return Err(Error::UnsupportedAlgorithm { what: "certificate version (need v3)" });
        }
        v.finish()?;
        let serial = t.integer()?;
        if serial.len() > MAX_SERIAL_LEN {
            return Err(Error::LimitExceeded {
                what: "serial number length",
                limit: MAX_SERIAL_LEN,
                found: serial.len(),
            });
        }
        let inner_alg = t.read_tlv(tag::SEQUENCE)?.1;
        // RFC 5280 §4.1.1.2: the two algorithm identifiers MUST be identical.
        if inner_alg != outer_alg {
            return Err(Error::Der {
                structure: "Certificate",
                offset: 0,
                reason: "signature algorithm differs from TBSCertificate.signature",
            });
        }
        let signature_algorithm = SignatureAlgorithm::from_der(outer_alg_value)?;
        let issuer = Name::from_tlv(t.read_tlv(tag::SEQUENCE)?.1)?;
        let mut validity = t.sequence("Validity")?;
        let not_before = read_time(&mut validity)?;
        let not_after = read_time(&mut validity)?;
        validity.finish()?;
        let subject = Name::from_tlv(t.read_tlv(tag::SEQUENCE)?.1)?;
        let (spki_value, spki) = t.read_tlv(tag::SEQUENCE)?;
        let public_key = PublicKey::from_spki(spki_value)?;
        // issuerUniqueID [1] / subjectUniqueID [2] (IMPLICIT BIT STRING, primitive tags 0x81 / 0x82).
        t.read_optional(0x81)?;
        t.read_optional(0x82)?;
        let extensions = match t.read_optional(tag::context(3))? {
            Some(v) => {
                let mut r = Reader::new(v, "Extensions");
                let list = r.read(tag::SEQUENCE)?;
                r.finish()?;
                Some(list)
            }
            None => None,
        };
        t.finish()?;

        let mut cert = Self {
            der,
            tbs,
            signature_algorithm,
            signature,
            serial,
            issuer,
            subject,
            not_before,
            not_after,
            spki,
            public_key,
            extensions,
            ca: None,
            path_len: None,
            key_usage: None,
            eku: None,
        };
        cert.check_extensions()?;
        Ok(cert)
    }

    /// Walks the extensions once: unique OIDs, known critical ones, basicConstraints and keyUsage decoded.
    fn check_extensions(&mut self) -> Result<(), Error> {
        let mut seen: [&[u8]; MAX_EXTENSIONS] = [&[]; MAX_EXTENSIONS];
        for (n, ext) in self.extensions().enumerate() {
            let ext = ext?;
            if n == MAX_EXTENSIONS {
                return Err(Error::LimitExceeded {
                    what: "certificate extensions",
                    limit: MAX_EXTENSIONS,
                    found: n + 1,
                });
            }
            if seen[..n].contains(&ext.oid) {
                return Err(Error::Der {
                    structure: "Extensions",
                    offset: 0,
                    reason: "duplicate extension (RFC 5280 §4.2)",
                });
            }
            seen[n] = ext.oid;
            if ext.oid == oid::BASIC_CONSTRAINTS {
                let mut r = Reader::new(ext.value, "BasicConstraints");
                let mut seq = r.sequence("BasicConstraints")?;
                let ca = if seq.peek_tag() == Some(tag::BOOLEAN) { seq.boolean()? } else { false };
                // pathLenConstraint (RFC 5280 §4.2.1.9), enforced by path building.
                if !seq.is_empty() {
                    self.path_len = Some(seq.small_uint()?);
                }
                seq.finish()?;
                r.finish()?;
                self.ca = Some(ca);
            } else if ext.oid == oid::KEY_USAGE {
                let mut r = Reader::new(ext.value, "KeyUsage");
                let bits = r.read(tag::BIT_STRING)?;
                r.finish()?;
                let (unused, bytes) = bits.split_first().ok_or(Error::Der {
                    structure: "KeyUsage",
                    offset: 0,
                    reason: "empty BIT STRING",
                })?;
                if *unused > 7 || bytes.is_empty() || bytes.len() > 2 {
                    return Err(Error::Der { structure: "KeyUsage", offset: 0, reason: "bad BIT STRING" });
                }
                let mut v = u16::from(bytes[0]) << 8;
                if let Some(b) = bytes.get(1) {
                    v |= u16::from(*b);
                }
                self.key_usage = Some(v);
            } else if ext.oid == oid::EXT_KEY_USAGE {
                self.eku = Some(ExtKeyUsage::from_extension_value(ext.value)?);
            } else if ext.critical && oid::is_amd(ext.oid).is_none() && ext.oid != oid::SUBJECT_ALT_NAME {
                // subjectAltName is critical in TPM EK/AK certificates with an empty subject (TCG EK
                // Credential Profile §3.2.9); it is exposed to callers, not interpreted.
                // Unknown critical extension: RFC 5280 §4.2 requires rejecting the certificate.
                return Err(Error::UnsupportedCriticalExtension);
            }
        }
        Ok(())
    }

    /// The whole DER encoding.
    pub fn der(&self) -> &'a [u8] {
        self.der
    }
    /// The `TBSCertificate` TLV exactly as received (what the issuer signed).
    pub fn tbs(&self) -> &'a [u8] {
        self.tbs
    }
    /// The signature algorithm (inner and outer are identical).
    pub fn signature_algorithm(&self) -> SignatureAlgorithm {
        self.signature_algorithm
    }
    /// The signature value bytes.
    pub fn signature(&self) -> &'a [u8] {
        self.signature
    }
    /// The serial number INTEGER content octets (AMD VCEKs use serial 0: `[0x00]`).
    pub fn serial(&self) -> &'a [u8] {
        self.serial
    }
    /// The issuer name.
    pub fn issuer(&self) -> Name<'a> {
        self.issuer
    }
    /// The subject name.
    pub fn subject(&self) -> Name<'a> {
        self.subject
    }
    /// Start of the validity period.
    pub fn not_before(&self) -> UnixTime {
        self.not_before
    }
    /// End of the validity period (inclusive, RFC 5280 §4.1.2.5).
    pub fn not_after(&self) -> UnixTime {
        self.not_after
    }
    /// The SubjectPublicKeyInfo TLV.
    pub fn spki(&self) -> &'a [u8] {
        self.spki
    }
    /// The subject public key.
    pub fn public_key(&self) -> PublicKey<'a> {
        self.public_key
    }
    /// `Some(true)` when basicConstraints says cA; `None` when absent.
    pub fn is_ca(&self) -> Option<bool> {
        self.ca
    }
    /// basicConstraints' pathLenConstraint, when present: how many non-self-issued intermediate CA
    /// certificates may follow this one in a path (RFC 5280 §4.2.1.9).
    pub fn path_len_constraint(&self) -> Option<u64> {
        self.path_len
    }
    /// The extKeyUsage extension, when present (RFC 5280 §4.2.1.12; absent means no restriction).
    pub fn extended_key_usage(&self) -> Option<ExtKeyUsage<'a>> {
        self.eku
    }
    /// keyUsage bits (bit 0 = digitalSignature is the top bit of the first byte, RFC 5280 §4.2.1.3).
    pub fn key_usage(&self) -> Option<u16> {
        self.key_usage
    }
    /// Whether keyUsage permits keyCertSign (bit 5), or keyUsage is absent.
    pub fn may_sign_certificates(&self) -> bool {
        self.key_usage.is_none_or(|ku| ku & (0x8000 >> 5) != 0)
    }
    /// Whether keyUsage permits cRLSign (bit 6), or keyUsage is absent.
    pub fn may_sign_crls(&self) -> bool {
        self.key_usage.is_none_or(|ku| ku & (0x8000 >> 6) != 0)
    }

    /// Iterates over the extensions.
    pub fn extensions(&self) -> Extensions<'a> {
        Extensions { r: Reader::new(self.extensions.unwrap_or(&[]), "Extensions") }
    }

    /// Decodes AMD's SEV extensions (1.3.6.1.4.1.3704.1.*).
    pub fn amd_extensions(&self) -> Result<AmdExtensions<'a>, Error> {
        AmdExtensions::from_cert(self)
    }

    /// Verifies this certificate's signature over the TBSCertificate as received with `issuer`, the key of
    /// its issuer — its own [`Certificate::public_key`] for a self-signed certificate (an aTLS peer's).
    pub fn verify_signature_with(
        &self,
        provider: &crate::crypto::CryptoProvider,
        issuer: &PublicKey<'_>,
    ) -> Result<(), crate::crypto::CryptoError> {
        self.signature_algorithm.verify(provider, issuer, self.tbs, self.signature)
    }

    /// Whether this certificate's validity covers `time`.
    pub fn check_validity(&self, time: UnixTime, role: crate::error::CertRole) -> Result<(), Error> {
        if time < self.not_before {
            return Err(Error::CertNotYetValid { role, time, not_before: self.not_before });
        }
        if time > self.not_after {
            return Err(Error::CertExpired { role, time, not_after: self.not_after });
        }
        Ok(())
    }
}

/// One extension: OID content octets, criticality, and the extnValue OCTET STRING contents.
#[derive(Clone, Copy, Debug)]
pub struct Extension<'a> {
    /// extnID content octets.
    pub oid: &'a [u8],
    /// The critical flag.
    pub critical: bool,
    /// extnValue (contents of the OCTET STRING).
    pub value: &'a [u8],
}

/// Iterator over a certificate's extensions.
#[derive(Clone, Debug)]
pub struct Extensions<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for Extensions<'a> {
    type Item = Result<Extension<'a>, Error>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.r.is_empty() {
            return None;
        }
        let item = (|| {
            let mut e = self.r.sequence("Extension")?;
            let oid = e.read(tag::OID)?;
            let critical = if e.peek_tag() == Some(tag::BOOLEAN) { e.boolean()? } else { false };
            let value = e.read(tag::OCTET_STRING)?;
            e.finish()?;
            Ok(Extension { oid, critical, value })
        })();
        if item.is_err() {
            // Stop after the first error.
            self.r = Reader::new(&[], "Extensions");
        }
        Some(item)
    }
}

pub(crate) fn read_time(r: &mut Reader<'_>) -> Result<UnixTime, Error> {
    let bad = Error::Der { structure: "Time", offset: 0, reason: "invalid UTCTime/GeneralizedTime" };
    match r.peek_tag() {
        Some(tag::UTC_TIME) => UnixTime::from_utc_time(r.read(tag::UTC_TIME)?).ok_or(bad),
        Some(tag::GENERALIZED_TIME) => {
            let t = UnixTime::from_generalized_time(r.read(tag::GENERALIZED_TIME)?).ok_or(bad.clone())?;
            // RFC 5280 §4.1.2.5: dates through 2049 MUST be UTCTime.
            if t.to_civil().0 < 2050 {
                return Err(bad);
            }
            Ok(t)
        }
        _ => Err(bad),
    }
}
