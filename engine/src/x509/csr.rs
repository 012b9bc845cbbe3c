//! A borrowed view of a PKCS #10 certification request (RFC 2986 §4), as a kubelet sends it to the join
//! service.
//!
//! ```text
//! CertificationRequest ::= SEQUENCE {
//!   certificationRequestInfo  SEQUENCE {            -- the signed bytes, kept as received
//!     version        INTEGER { v1(0) },             -- only 0
//!     subject        Name,
//!     subjectPKInfo  SubjectPublicKeyInfo,          -- kept as a whole TLV (copied into the certificate)
//!     attributes     [0] IMPLICIT SET OF Attribute  -- SEQUENCE { type OID, values SET }; ≤ MAX_CSR_ATTRIBUTES
//!   },
//!   signatureAlgorithm  AlgorithmIdentifier,        -- decoded lazily: ECDSA SHA-256/384, RSA PKCS #1, PSS
//!   signature           BIT STRING }                -- no unused bits
//! ```
//!
//! Parsing checks structure only (DER well-formedness, version, the attribute count) and allocates nothing.
//! The subject key and the signature algorithm are decoded lazily ([`CertificationRequest::public_key`],
//! [`CertificationRequest::signature_algorithm`]), so a caller can tell an unsupported key or algorithm from
//! a malformed request;
//! [`CertificationRequest::verify_signature`] checks the self-signature over the received
//! `certificationRequestInfo` bytes — never a re-encoding. Requested extensions are not interpreted here.

use super::alg::{PublicKey, SignatureAlgorithm};
use super::name::Name;
use crate::crypto::{CryptoError, CryptoProvider};
use crate::der::{Reader, tag};
use crate::error::Error;

/// Most attributes a request may carry (a kubelet's has none; OpenSSL and Go write at most an
/// extensionRequest and a challengePassword). Bounds the walk over them.
pub const MAX_CSR_ATTRIBUTES: usize = 16;

/// A parsed certification request borrowing from its DER encoding.
#[derive(Clone, Debug)]
pub struct CertificationRequest<'a> {
    der: &'a [u8],
    info: &'a [u8],
    subject: Name<'a>,
    spki: &'a [u8],
    spki_value: &'a [u8],
    attributes: &'a [u8],
    signature_algorithm: &'a [u8],
    signature: &'a [u8],
}

impl<'a> CertificationRequest<'a> {
    /// Parses a DER request; the input must hold exactly one request.
    pub fn from_der(der: &'a [u8]) -> Result<Self, Error> {
        let mut outer = Reader::new(der, "CertificationRequest");
        let mut req = outer.sequence("CertificationRequest")?;
        outer.finish()?;
        let (info_value, info) = req.read_tlv(tag::SEQUENCE)?;
        let signature_algorithm = req.read(tag::SEQUENCE)?;
        let signature = req.bit_string_bytes()?;
        req.finish()?;

        let mut r = Reader::new(info_value, "CertificationRequestInfo");
        // RFC 2986 §4.1: version is 0 for this version of the standard.
        if r.small_uint()? != 0 {
            return Err(Error::Der {
                structure: "CertificationRequestInfo",
                offset: 0,
                reason: "version must be 0 (v1)",
            });
        }
        let subject = Name::from_tlv(r.read_tlv(tag::SEQUENCE)?.1)?;
        let (spki_value, spki) = r.read_tlv(tag::SEQUENCE)?;
        // `[0] IMPLICIT SET OF Attribute`: constructed context tag 0, required (it may be empty).
        let attributes = r.read(tag::context(0))?;
        r.finish()?;
        let mut count = 0;
        let mut list = Reader::new(attributes, "Attributes");
        while !list.is_empty() {
            count += 1;
            if count > MAX_CSR_ATTRIBUTES {
                return Err(Error::LimitExceeded {
                    what: "certification request attributes",
                    limit: MAX_CSR_ATTRIBUTES,
                    found: count,
                });
            }
            let mut attribute = list.sequence("Attribute")?;
            attribute.read(tag::OID)?;
            attribute.read(tag::SET)?;
            attribute.finish()?;
        }
        Ok(Self { der, info, subject, spki, spki_value, attributes, signature_algorithm, signature })
    }

    /// The whole request as received.
    pub fn der(&self) -> &'a [u8] {
        self.der
    }

    /// The signed bytes: the `certificationRequestInfo` TLV as received.
    pub fn info(&self) -> &'a [u8] {
        self.info
    }

    /// The subject name.
    pub fn subject(&self) -> Name<'a> {
        self.subject
    }

    /// The SubjectPublicKeyInfo TLV as received (what a certificate for this request carries).
    pub fn spki(&self) -> &'a [u8] {
        self.spki
    }

    /// The subject key; [`Error::UnsupportedAlgorithm`] for a key type or curve the engine does not use.
    pub fn public_key(&self) -> Result<PublicKey<'a>, Error> {
        PublicKey::from_spki(self.spki_value)
    }

    /// The `attributes` contents (a sequence of `Attribute` TLVs), uninterpreted.
    pub fn attributes(&self) -> &'a [u8] {
        self.attributes
    }

    /// The signature algorithm; [`Error::UnsupportedAlgorithm`] for one the engine does not verify.
    pub fn signature_algorithm(&self) -> Result<SignatureAlgorithm, Error> {
        SignatureAlgorithm::from_der(self.signature_algorithm)
    }

    /// The signature bytes.
    pub fn signature(&self) -> &'a [u8] {
        self.signature
    }

    /// Verifies the self-signature (RFC 2986 §3: the requester proves it holds the key) over the received
    /// `certificationRequestInfo` with `provider`. A key the engine cannot use fails here too.
    pub fn verify_signature(&self, provider: &CryptoProvider) -> Result<(), CryptoError> {
        let key = self.public_key().map_err(|_| CryptoError)?;
        let algorithm = self.signature_algorithm().map_err(|_| CryptoError)?;
        algorithm.verify(provider, &key, self.info, self.signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match content.len() {
            n @ 0..=0x7F => out.push(n as u8),
            n @ 0x80..=0xFF => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(content);
        out
    }

    const NAME: &[u8] = &[0x30, 0x0B, 0x31, 0x09, 0x30, 0x07, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0C, 0x00];
    const SPKI: &[u8] = &[0x30, 0x02, 0x30, 0x00];
    const ALG: &[u8] = &[0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02];

    /// A request with `version` and `attributes`, ecdsa-with-SHA256 and a dummy signature.
    fn request(version: u8, attributes: &[u8]) -> Vec<u8> {
        let mut info = vec![0x02, 0x01, version];
        info.extend_from_slice(NAME);
        info.extend_from_slice(SPKI);
        info.extend(tlv(0xA0, attributes));
        let mut body = tlv(0x30, &info);
        body.extend_from_slice(ALG);
        body.extend(tlv(0x03, &[0x00, 0x30, 0x00]));
        tlv(0x30, &body)
    }

    #[test]
    fn structure_is_checked_and_the_key_lazily() {
        let der = request(0, &[]);
        let csr = CertificationRequest::from_der(&der).unwrap();
        assert_eq!(csr.spki(), SPKI);
        assert_eq!(csr.subject().as_der(), NAME);
        assert!(csr.attributes().is_empty());
        assert_eq!(csr.signature_algorithm(), Ok(SignatureAlgorithm::EcdsaSha256));
        // The key is not one the engine uses: refused when asked for, and by the signature check.
        assert!(matches!(csr.public_key(), Err(Error::Der { .. })));
        assert_eq!(csr.verify_signature(crate::crypto::default_provider()), Err(CryptoError));

        assert!(CertificationRequest::from_der(&request(1, &[])).is_err(), "version 1");
        let mut trailing = der.clone();
        trailing.push(0);
        assert!(matches!(CertificationRequest::from_der(&trailing), Err(Error::TrailingData { .. })));
    }

    #[test]
    fn attributes_are_bounded() {
        let one = [0x30, 0x05, 0x06, 0x01, 0x2A, 0x31, 0x00];
        let many = |n: usize| one.iter().copied().cycle().take(one.len() * n).collect::<Vec<u8>>();
        let csr = request(0, &many(MAX_CSR_ATTRIBUTES));
        assert!(CertificationRequest::from_der(&csr).is_ok());
        assert!(matches!(
            CertificationRequest::from_der(&request(0, &many(MAX_CSR_ATTRIBUTES + 1))),
            Err(Error::LimitExceeded { limit: MAX_CSR_ATTRIBUTES, .. })
        ));
        // An attribute without its SET of values.
        assert!(CertificationRequest::from_der(&request(0, &[0x30, 0x03, 0x06, 0x01, 0x2A])).is_err());
    }
}
