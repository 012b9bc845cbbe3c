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
//! The engine's SPKI parser is crate-private, so this module walks the few DER bytes itself (definite,
//! minimal lengths; every structure consumed exactly).

use crate::MAX_PUBLIC_KEY_SIZE;
use crate::error::Error;
use attest_engine::x509::pem;
use core::fmt;

/// DER of OID 1.2.840.10045.2.1 (id-ecPublicKey), contents only.
const ID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// DER of OID 1.2.840.10045.3.1.7 (secp256r1 / prime256v1), contents only.
const SECP256R1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// Uncompressed SEC1 P-256 point length: 04 ‖ X ‖ Y.
const P256_POINT_LEN: usize = 65;

pub(crate) const TAG_SEQUENCE: u8 = 0x30;
const TAG_OID: u8 = 0x06;
const TAG_BIT_STRING: u8 = 0x03;

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
        let spki = read_all(der, TAG_SEQUENCE).ok_or(bad("not a DER SubjectPublicKeyInfo"))?;
        let (alg, rest) = read_tlv(spki, TAG_SEQUENCE).ok_or(bad("missing AlgorithmIdentifier"))?;
        let key_bits = read_all(rest, TAG_BIT_STRING).ok_or(bad("missing subjectPublicKey BIT STRING"))?;
        let (alg_oid, params) = read_tlv(alg, TAG_OID).ok_or(bad("malformed AlgorithmIdentifier"))?;
        if alg_oid != ID_EC_PUBLIC_KEY {
            return Err(Error::KeyNotP256);
        }
        // RFC 5480 §2.1.1: parameters are a namedCurve OID (implicit/specified curves are not allowed).
        let curve = read_all(params, TAG_OID).ok_or(Error::KeyNotP256)?;
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

/// Reads one TLV with `tag`, returning its contents and the bytes after it. Lengths must be definite and
/// minimally encoded (X.690 §10.1), at most two length bytes (keys are tiny).
pub(crate) fn read_tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = input.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        0..=0x7f => (usize::from(first), rest),
        0x81 => match rest.split_first()? {
            (&n, rest) if n >= 0x80 => (usize::from(n), rest),
            _ => return None,
        },
        0x82 => match rest {
            [hi, lo, rest @ ..] if *hi != 0 => (usize::from(*hi) << 8 | usize::from(*lo), rest),
            _ => return None,
        },
        _ => return None,
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// Reads one TLV with `tag` that must span all of `input`.
pub(crate) fn read_all(input: &[u8], tag: u8) -> Option<&[u8]> {
    match read_tlv(input, tag)? {
        (contents, []) => Some(contents),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        assert_eq!(read_tlv(&[0x30, 0x01, 0xaa, 0xbb], 0x30), Some((&[0xaa][..], &[0xbb][..])));
        assert_eq!(read_tlv(&[0x30, 0x81, 0x7f], 0x30), None, "non-minimal long form");
        assert_eq!(read_tlv(&[0x30, 0x82, 0x00, 0x80], 0x30), None, "non-minimal two-byte length");
        assert_eq!(read_tlv(&[0x30, 0x80], 0x30), None, "indefinite length");
        assert_eq!(read_tlv(&[0x30, 0x02, 0xaa], 0x30), None, "truncated");
        assert_eq!(read_tlv(&[0x31, 0x00], 0x30), None, "wrong tag");
        assert_eq!(read_all(&[0x30, 0x00, 0x00], 0x30), None, "trailing bytes");
        let long = [&[0x30, 0x81, 0x80][..], &[0u8; 0x80]].concat();
        assert_eq!(read_all(&long, 0x30).map(<[u8]>::len), Some(0x80));
    }
}
