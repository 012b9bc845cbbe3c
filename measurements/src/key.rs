//! The measurements-signing public key: a PEM `PUBLIC KEY` (RFC 7468 §13) holding a DER
//! SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) for an ECDSA P-256 key (RFC 5480 §2):
//!
//! ```text
//! SEQUENCE {
//!   SEQUENCE { OID 1.2.840.10045.2.1 (id-ecPublicKey), OID 1.2.840.10045.3.1.7 (secp256r1) }
//!   BIT STRING { 0 unused bits, 04 ‖ X(32) ‖ Y(32) }
//! }
//! ```
//!
//! The DER is walked with the engine's borrowed reader ([`attest_engine::der`]: definite, minimal lengths;
//! every structure consumed exactly).

use crate::MAX_PUBLIC_KEY_SIZE;
use crate::error::Error;
use attest_engine::der::{Reader, tag};
use attest_engine::x509::pem;
use core::fmt;

/// DER of OID 1.2.840.10045.2.1 (id-ecPublicKey), contents only.
const ID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// DER of OID 1.2.840.10045.3.1.7 (secp256r1 / prime256v1), contents only.
const SECP256R1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// Uncompressed SEC1 P-256 point length: 04 ‖ X ‖ Y.
const P256_POINT_LEN: usize = 65;

/// An ECDSA P-256 public key for verifying measurements signatures.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    point: [u8; P256_POINT_LEN],
}

impl VerifyingKey {
    /// Reads a PEM document holding exactly one `PUBLIC KEY` block (text around it is ignored).
    pub fn from_pem(pem_text: &[u8]) -> Result<Self, Error> {
        if pem_text.len() > MAX_PUBLIC_KEY_SIZE {
            return Err(Error::LimitExceeded {
                what: "public key bytes",
                limit: MAX_PUBLIC_KEY_SIZE,
                found: pem_text.len(),
            });
        }
        let blocks = pem::parse_pem(pem_text).map_err(|_| Error::InvalidPublicKey { reason: "malformed PEM" })?;
        match blocks.as_slice() {
            [block] if block.label == "PUBLIC KEY" => Self::from_spki_der(&block.der),
            [_] => Err(Error::InvalidPublicKey { reason: "PEM label is not PUBLIC KEY" }),
            [] => Err(Error::InvalidPublicKey { reason: "no PEM block" }),
            _ => Err(Error::InvalidPublicKey { reason: "more than one PEM block" }),
        }
    }

    /// Reads a DER SubjectPublicKeyInfo.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, Error> {
        let bad = |reason| Error::InvalidPublicKey { reason };
        let der_bad = |reason| move |_: attest_engine::Error| bad(reason);
        let spki = read_all(der, tag::SEQUENCE).map_err(der_bad("not a DER SubjectPublicKeyInfo"))?;
        let mut spki = Reader::new(spki, "SubjectPublicKeyInfo");
        let alg = spki.read(tag::SEQUENCE).map_err(der_bad("missing AlgorithmIdentifier"))?;
        let key_bits = spki.read(tag::BIT_STRING).map_err(der_bad("missing subjectPublicKey BIT STRING"))?;
        spki.finish().map_err(der_bad("missing subjectPublicKey BIT STRING"))?;
        let mut alg = Reader::new(alg, "AlgorithmIdentifier");
        let alg_oid = alg.read(tag::OID).map_err(der_bad("malformed AlgorithmIdentifier"))?;
        if alg_oid != ID_EC_PUBLIC_KEY {
            return Err(Error::KeyNotP256);
        }
        // RFC 5480 §2.1.1: parameters are a namedCurve OID (implicit/specified curves are not allowed).
        let curve = alg.read(tag::OID).map_err(|_| Error::KeyNotP256)?;
        alg.finish().map_err(|_| Error::KeyNotP256)?;
        if curve != SECP256R1 {
            return Err(Error::KeyNotP256);
        }
        let [0, point @ ..] = key_bits else {
            return Err(bad("BIT STRING has unused bits"));
        };
        // Only the uncompressed form (RFC 5480 §2.2 says it MUST be supported; compressed MAY be).
        let point: [u8; P256_POINT_LEN] = match point {
            [0x04, ..] => point.try_into().map_err(|_| bad("P-256 point has the wrong length"))?,
            _ => return Err(bad("P-256 point is not uncompressed")),
        };
        Ok(Self { point })
    }

    /// The uncompressed SEC1 point `04 ‖ X ‖ Y`.
    pub fn point(&self) -> &[u8] {
        &self.point
    }
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VerifyingKey").field(&hex::encode(self.point)).finish()
    }
}

/// Reads one TLV with `tag` that must span all of `input`, returning its contents.
pub(crate) fn read_all(input: &[u8], tag: u8) -> Result<&[u8], attest_engine::Error> {
    let mut r = Reader::new(input, "DER value");
    let contents = r.read(tag)?;
    r.finish()?;
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        assert_eq!(read_all(&[0x30, 0x01, 0xaa], 0x30).ok(), Some(&[0xaa][..]));
        assert!(read_all(&[0x30, 0x81, 0x7f], 0x30).is_err(), "non-minimal long form");
        assert!(read_all(&[0x30, 0x82, 0x00, 0x80], 0x30).is_err(), "non-minimal two-byte length");
        assert!(read_all(&[0x30, 0x80], 0x30).is_err(), "indefinite length");
        assert!(read_all(&[0x30, 0x02, 0xaa], 0x30).is_err(), "truncated");
        assert!(read_all(&[0x31, 0x00], 0x30).is_err(), "wrong tag");
        assert!(read_all(&[0x30, 0x00, 0x00], 0x30).is_err(), "trailing bytes");
        let long = [&[0x30, 0x81, 0x80][..], &[0u8; 0x80]].concat();
        assert_eq!(read_all(&long, 0x30).map(<[u8]>::len).ok(), Some(0x80));
    }
}
