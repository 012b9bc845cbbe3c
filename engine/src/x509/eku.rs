//! Extended key usage (RFC 5280 §4.2.1.12): `ExtKeyUsageSyntax ::= SEQUENCE SIZE (1..MAX) OF KeyPurposeId`.

use crate::der::{Reader, tag};
use crate::error::Error;

/// Most key purposes read from one extKeyUsage extension (real certificates list one to four).
pub const MAX_KEY_PURPOSES: usize = 16;

/// A key purpose: the content octets of its OBJECT IDENTIFIER.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyPurposeId<'a>(&'a [u8]);

impl<'a> KeyPurposeId<'a> {
    /// id-kp-serverAuth (1.3.6.1.5.5.7.3.1).
    pub const SERVER_AUTH: KeyPurposeId<'static> = KeyPurposeId(&[0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01]);
    /// id-kp-clientAuth (1.3.6.1.5.5.7.3.2).
    pub const CLIENT_AUTH: KeyPurposeId<'static> = KeyPurposeId(&[0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02]);
    /// tcg-kp-EKCertificate (2.23.133.8.1), TCG EK Credential Profile §3.2.16.
    pub const TCG_EK_CERTIFICATE: KeyPurposeId<'static> = KeyPurposeId(&[0x67, 0x81, 0x05, 0x08, 0x01]);
    /// tcg-kp-AIKCertificate (2.23.133.8.3), TCG EK Credential Profile / AK certificate profiles.
    pub const TCG_AIK_CERTIFICATE: KeyPurposeId<'static> = KeyPurposeId(&[0x67, 0x81, 0x05, 0x08, 0x03]);
    /// anyExtendedKeyUsage (2.5.29.37.0). Path verification does **not** treat it as a wildcard: a
    /// certificate must name the purpose the caller requires.
    pub const ANY: KeyPurposeId<'static> = KeyPurposeId(&[0x55, 0x1D, 0x25, 0x00]);

    /// A purpose from its OID's DER content octets (without tag and length).
    pub const fn from_oid_content(oid: &'a [u8]) -> Self {
        Self(oid)
    }

    /// The OID's content octets.
    pub fn oid_content(&self) -> &'a [u8] {
        self.0
    }
}

/// A certificate's extKeyUsage extension, validated when the certificate was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtKeyUsage<'a>(&'a [u8]);

impl<'a> ExtKeyUsage<'a> {
    /// Validates an extnValue: one SEQUENCE of 1..=[`MAX_KEY_PURPOSES`] non-empty OIDs, nothing after it.
    pub(crate) fn from_extension_value(value: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(value, "ExtKeyUsageSyntax");
        let list = r.read(tag::SEQUENCE)?;
        r.finish()?;
        let mut count = 0;
        let mut items = Reader::new(list, "ExtKeyUsageSyntax");
        while !items.is_empty() {
            count += 1;
            if count > MAX_KEY_PURPOSES {
                return Err(Error::LimitExceeded {
                    what: "extended key usages",
                    limit: MAX_KEY_PURPOSES,
                    found: count,
                });
            }
            if items.read(tag::OID)?.is_empty() {
                return Err(Error::Der { structure: "KeyPurposeId", offset: 0, reason: "empty OBJECT IDENTIFIER" });
            }
        }
        if count == 0 {
            return Err(Error::Der { structure: "ExtKeyUsageSyntax", offset: 0, reason: "SIZE (1..MAX): empty" });
        }
        Ok(Self(list))
    }

    /// The listed purposes, in order.
    pub fn purposes(&self) -> impl Iterator<Item = KeyPurposeId<'a>> + 'a {
        let mut r = Reader::new(self.0, "ExtKeyUsageSyntax");
        // Validated in `from_extension_value`: reads cannot fail.
        core::iter::from_fn(move || if r.is_empty() { None } else { r.read(tag::OID).ok().map(KeyPurposeId) })
    }

    /// Whether `purpose` is listed (exactly; anyExtendedKeyUsage is not a wildcard).
    pub fn permits(&self, purpose: KeyPurposeId<'_>) -> bool {
        self.purposes().any(|p| p.0 == purpose.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_permit() {
        // SEQUENCE { serverAuth, clientAuth }
        let mut v = vec![0x30, 20, 0x06, 8];
        v.extend_from_slice(KeyPurposeId::SERVER_AUTH.oid_content());
        v.extend_from_slice(&[0x06, 8]);
        v.extend_from_slice(KeyPurposeId::CLIENT_AUTH.oid_content());
        let eku = ExtKeyUsage::from_extension_value(&v).unwrap();
        assert_eq!(eku.purposes().count(), 2);
        assert!(eku.permits(KeyPurposeId::CLIENT_AUTH));
        assert!(!eku.permits(KeyPurposeId::TCG_AIK_CERTIFICATE));
        // Empty list, empty OID, trailing bytes.
        assert!(ExtKeyUsage::from_extension_value(&[0x30, 0]).is_err());
        assert!(ExtKeyUsage::from_extension_value(&[0x30, 2, 0x06, 0]).is_err());
        assert!(ExtKeyUsage::from_extension_value(&[0x30, 3, 0x06, 1, 0x2A, 0]).is_err());
        // anyExtendedKeyUsage is a purpose like any other, not a wildcard.
        let any = [0x30, 6, 0x06, 4, 0x55, 0x1D, 0x25, 0x00];
        assert!(!ExtKeyUsage::from_extension_value(&any).unwrap().permits(KeyPurposeId::SERVER_AUTH));
    }

    #[test]
    fn purposes_beyond_the_limit_are_refused() {
        let mut list = Vec::new();
        for _ in 0..=MAX_KEY_PURPOSES {
            list.extend_from_slice(&[0x06, 1, 0x2A]);
        }
        let mut v = vec![0x30, list.len() as u8];
        v.extend_from_slice(&list);
        assert!(matches!(ExtKeyUsage::from_extension_value(&v), Err(Error::LimitExceeded { .. })));
    }
}
