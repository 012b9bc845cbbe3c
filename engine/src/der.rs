//! A borrowed DER reader (ITU-T X.690 §8, §10), just large enough for X.509 certificates and CRLs.
//!
//! Public so that the crates above the engine that read a few DER structures themselves (the measurements
//! signing key, EK certificates in the AK registration) use this reader instead of writing their own.
//!
//! Hand-written on purpose: the AMD certificate extensions need raw access to TLVs (hwID is stored both as
//! raw octets and as a DER OCTET STRING, SPLs as 1- or 2-byte INTEGERs), and the hot path must not allocate.
//! Every value returned borrows from the input. Only definite, minimal lengths are accepted (DER), and
//! every length is bounded by [`MAX_LEN`] and by the enclosing value.

use crate::error::Error;

/// Largest single DER value accepted (certificates and CRLs we read are far smaller; AMD's Milan CRL is
/// about 3 KiB, a KDS certificate chain about 4.6 KiB). Source of the limit: headroom × 16 over AMD CRLs.
pub const MAX_LEN: usize = 64 * 1024;

/// Largest nesting depth walked by [`skip_any`].
const MAX_DEPTH: usize = 32;

/// Universal and context tags used in X.509 (X.690 §8.1.2).
pub mod tag {
    /// BOOLEAN.
    pub const BOOLEAN: u8 = 0x01;
    /// INTEGER.
    pub const INTEGER: u8 = 0x02;
    /// BIT STRING.
    pub const BIT_STRING: u8 = 0x03;
    /// OCTET STRING.
    pub const OCTET_STRING: u8 = 0x04;
    /// NULL.
    pub const NULL: u8 = 0x05;
    /// OBJECT IDENTIFIER.
    pub const OID: u8 = 0x06;
    /// IA5String.
    pub const IA5_STRING: u8 = 0x16;
    /// UTCTime.
    pub const UTC_TIME: u8 = 0x17;
    /// GeneralizedTime.
    pub const GENERALIZED_TIME: u8 = 0x18;
    /// SEQUENCE (constructed).
    pub const SEQUENCE: u8 = 0x30;
    /// SET (constructed).
    pub const SET: u8 = 0x31;
    /// `[n]` constructed, context-specific.
    pub const fn context(n: u8) -> u8 {
        0xA0 | n
    }
}

/// A cursor over DER bytes. `what` names the structure for error messages ([`Error::Der`],
/// [`Error::TrailingData`]).
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over `input`, which `what` names in errors.
    pub fn new(input: &'a [u8], what: &'static str) -> Self {
        Self { input, pos: 0, what }
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.input.len()
    }

    fn err(&self, reason: &'static str) -> Error {
        Error::Der { structure: self.what, offset: self.pos, reason }
    }

    /// Peeks at the next tag without consuming it.
    pub fn peek_tag(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// Reads one TLV; returns `(tag, value, whole_tlv)`.
    pub fn read_any(&mut self) -> Result<(u8, &'a [u8], &'a [u8]), Error> {
        let start = self.pos;
        let tag = *self.input.get(self.pos).ok_or_else(|| self.err("missing tag"))?;
        if tag & 0x1F == 0x1F {
            return Err(self.err("high tag numbers are not used in X.509"));
        }
        self.pos += 1;
        let first = *self.input.get(self.pos).ok_or_else(|| self.err("missing length"))?;
        self.pos += 1;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7F);
            if n == 0 {
                return Err(self.err("indefinite length is not DER"));
            }
            if n > 3 {
                return Err(self.err("length field too long"));
            }
            let bytes = self.input.get(self.pos..self.pos + n).ok_or_else(|| self.err("truncated length"))?;
            if bytes[0] == 0 {
                return Err(self.err("non-minimal length"));
            }
            let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            if len < 0x80 {
                return Err(self.err("non-minimal length"));
            }
            self.pos += n;
            len
        };
        if len > MAX_LEN {
            return Err(Error::LimitExceeded { what: "DER value length", limit: MAX_LEN, found: len });
        }
        let end = self
            .pos
            .checked_add(len)
            .filter(|end| *end <= self.input.len())
            .ok_or_else(|| self.err("value runs past its container"))?;
        let value = &self.input[self.pos..end];
        self.pos = end;
        Ok((tag, value, &self.input[start..end]))
    }

    /// Reads a TLV that must have tag `expected`; returns its value.
    pub fn read(&mut self, expected: u8) -> Result<&'a [u8], Error> {
        Ok(self.read_tlv(expected)?.0)
    }

    /// Reads a TLV with tag `expected`; returns `(value, whole_tlv)`.
    pub fn read_tlv(&mut self, expected: u8) -> Result<(&'a [u8], &'a [u8]), Error> {
        match self.peek_tag() {
            Some(t) if t == expected => {}
            Some(_) => return Err(self.err("unexpected tag")),
            None => return Err(self.err("missing value")),
        }
        let (_, value, whole) = self.read_any()?;
        Ok((value, whole))
    }

    /// Reads an optional TLV with tag `expected`.
    pub fn read_optional(&mut self, expected: u8) -> Result<Option<&'a [u8]>, Error> {
        if self.peek_tag() == Some(expected) { self.read(expected).map(Some) } else { Ok(None) }
    }

    /// Reads a SEQUENCE and returns a reader over its contents.
    pub fn sequence(&mut self, what: &'static str) -> Result<Reader<'a>, Error> {
        Ok(Reader::new(self.read(tag::SEQUENCE)?, what))
    }

    /// Requires that everything has been consumed.
    pub fn finish(&self) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingData { structure: self.what, extra: self.input.len() - self.pos })
        }
    }

    /// Reads an INTEGER and returns its content octets (two's complement, minimal).
    pub fn integer(&mut self) -> Result<&'a [u8], Error> {
        let v = self.read(tag::INTEGER)?;
        check_integer(v).map_err(|r| self.err(r))?;
        Ok(v)
    }

    /// Reads a non-negative INTEGER that fits in a `u64`.
    pub fn small_uint(&mut self) -> Result<u64, Error> {
        let v = self.integer()?;
        uint_from_integer(v).ok_or_else(|| self.err("integer negative or too large"))
    }

    /// Reads a BOOLEAN (DER: 0x00 or 0xFF).
    pub fn boolean(&mut self) -> Result<bool, Error> {
        match self.read(tag::BOOLEAN)? {
            [0x00] => Ok(false),
            [0xFF] => Ok(true),
            _ => Err(self.err("BOOLEAN must be 0x00 or 0xFF")),
        }
    }

    /// Reads a BIT STRING with no unused bits and returns its bytes.
    pub fn bit_string_bytes(&mut self) -> Result<&'a [u8], Error> {
        match self.read(tag::BIT_STRING)? {
            [0, rest @ ..] => Ok(rest),
            _ => Err(self.err("BIT STRING with unused bits")),
        }
    }
}

/// Checks DER INTEGER content rules: non-empty and minimal (X.690 §8.3.2).
pub(crate) fn check_integer(v: &[u8]) -> Result<(), &'static str> {
    match v {
        [] => Err("empty INTEGER"),
        [0x00, next, ..] if next & 0x80 == 0 => Err("non-minimal INTEGER"),
        [0xFF, next, ..] if next & 0x80 != 0 => Err("non-minimal INTEGER"),
        _ => Ok(()),
    }
}

/// Interprets minimal INTEGER content as a non-negative `u64`.
pub(crate) fn uint_from_integer(v: &[u8]) -> Option<u64> {
    if v.first()? & 0x80 != 0 {
        return None;
    }
    let v = if v[0] == 0 { &v[1..] } else { v };
    if v.len() > 8 {
        return None;
    }
    Some(v.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
}

/// Skips any value, checking that constructed values nest properly (bounded depth).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn skip_any(r: &mut Reader<'_>, depth: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::LimitExceeded { what: "DER nesting depth", limit: MAX_DEPTH, found: depth });
    }
    let (tag, value, _) = r.read_any()?;
    if tag & 0x20 != 0 {
        let mut inner = Reader::new(value, r.what);
        while !inner.is_empty() {
            skip_any(&mut inner, depth + 1)?;
        }
    }
    Ok(())
}

/// Object identifiers used by the engine, as DER content octets.
pub(crate) mod oid {
    /// 1.2.840.113549.1.1.1 rsaEncryption
    pub(crate) const RSA_ENCRYPTION: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01];
    /// 1.2.840.113549.1.1.10 id-RSASSA-PSS
    pub(crate) const RSASSA_PSS: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0A];
    /// 1.2.840.113549.1.1.8 id-mgf1
    pub(crate) const MGF1: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x08];
    /// 1.2.840.113549.1.1.12 sha384WithRSAEncryption
    pub(crate) const SHA384_WITH_RSA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0C];
    /// 1.2.840.113549.1.1.11 sha256WithRSAEncryption
    pub(crate) const SHA256_WITH_RSA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B];
    /// 2.16.840.1.101.3.4.2.2 id-sha384
    pub(crate) const SHA384: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02];
    /// 1.2.840.10045.2.1 id-ecPublicKey
    pub(crate) const EC_PUBLIC_KEY: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01];
    /// 1.3.132.0.34 secp384r1
    pub(crate) const SECP384R1: &[u8] = &[0x2B, 0x81, 0x04, 0x00, 0x22];
    /// 1.2.840.10045.3.1.7 prime256v1
    pub(crate) const SECP256R1: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07];
    /// 1.2.840.10045.4.3.3 ecdsa-with-SHA384
    pub(crate) const ECDSA_WITH_SHA384: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03];
    /// 1.2.840.10045.4.3.2 ecdsa-with-SHA256
    pub(crate) const ECDSA_WITH_SHA256: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02];
    /// 2.5.4.3 commonName
    pub(crate) const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    /// 2.5.29.19 basicConstraints
    pub(crate) const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1D, 0x13];
    /// 2.5.29.17 subjectAltName
    pub(crate) const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1D, 0x11];
    /// 2.5.29.37 extKeyUsage
    pub(crate) const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x25];
    /// 2.5.29.15 keyUsage
    pub(crate) const KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x0F];
    /// 1.3.6.1.4.1.3704.1 — AMD's SEV certificate extension arc (prefix).
    pub(crate) const AMD_ARC: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0x9C, 0x78, 0x01];

    /// Returns the arcs after 1.3.6.1.4.1.3704.1 when `oid` lies in AMD's arc.
    pub(crate) fn is_amd(oid: &[u8]) -> Option<&[u8]> {
        oid.strip_prefix(AMD_ARC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        let mut r = Reader::new(&[0x04, 0x81, 0x80], "t");
        assert!(r.read_any().is_err(), "truncated");
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([7u8; 0x80]);
        let mut r = Reader::new(&long, "t");
        assert_eq!(r.read(tag::OCTET_STRING).unwrap().len(), 0x80);
        r.finish().unwrap();
        // non-minimal long form
        let mut r = Reader::new(&[0x04, 0x81, 0x01, 0x00], "t");
        assert!(r.read_any().is_err());
        // leading zero in length
        let mut r = Reader::new(&[0x04, 0x82, 0x00, 0x90], "t");
        assert!(r.read_any().is_err());
        // indefinite
        let mut r = Reader::new(&[0x30, 0x80, 0x00, 0x00], "t");
        assert!(r.read_any().is_err());
    }

    #[test]
    fn integers() {
        assert!(check_integer(&[]).is_err());
        assert!(check_integer(&[0x00, 0x01]).is_err());
        assert!(check_integer(&[0x00, 0x80]).is_ok());
        assert!(check_integer(&[0xFF, 0x80]).is_err());
        assert_eq!(uint_from_integer(&[0x00, 0xD9]), Some(0xD9));
        assert_eq!(uint_from_integer(&[0x80]), None);
        assert_eq!(uint_from_integer(&[0]), Some(0));
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| {
            let mut v = vec![0x05, 0x00];
            for _ in 0..depth {
                let mut outer = vec![0x30, v.len() as u8];
                outer.extend(&v);
                v = outer;
            }
            v
        };
        skip_any(&mut Reader::new(&nested(10), "t"), 0).unwrap();
        let err = skip_any(&mut Reader::new(&nested(40), "t"), 0).unwrap_err();
        assert!(matches!(err, Error::LimitExceeded { what: "DER nesting depth", .. }), "{err}");
    }
}
