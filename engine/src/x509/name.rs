//! X.501 distinguished names, kept as borrowed DER and compared byte for byte (RFC 5280 §7.1 permits
//! binary comparison; AMD's issuer and subject names are byte-identical).

use crate::der::{Reader, oid, tag};
use crate::error::Error;

/// Most RDNs walked in one name.
pub const MAX_RDNS: usize = 16;

/// One `AttributeTypeAndValue` of a name (X.501; RFC 5280 §4.1.2.4), borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameAttribute<'a> {
    /// The attribute type: OID content octets (2.5.4.3 commonName is `55 04 03`).
    pub oid: &'a [u8],
    /// The value's DER tag (`0x0C` UTF8String, `0x13` PrintableString, …).
    pub tag: u8,
    /// The value's content octets.
    pub value: &'a [u8],
}

/// A distinguished name (the whole `Name` TLV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    pub(crate) fn from_tlv(tlv: &'a [u8]) -> Result<Self, Error> {
        let name = Self(tlv);
        // Validate the structure once so accessors cannot fail later.
        let mut count = 0;
        name.walk(|_, _, _| {
            count += 1;
        })?;
        if count > MAX_RDNS {
            return Err(Error::LimitExceeded { what: "name attributes", limit: MAX_RDNS, found: count });
        }
        Ok(name)
    }

    /// The DER bytes of the name.
    pub fn as_der(&self) -> &'a [u8] {
        self.0
    }

    fn walk(&self, mut f: impl FnMut(&'a [u8], u8, &'a [u8])) -> Result<(), Error> {
        let mut outer = Reader::new(self.0, "Name");
        let mut rdns = outer.sequence("Name")?;
        outer.finish()?;
        while !rdns.is_empty() {
            let mut set = Reader::new(rdns.read(tag::SET)?, "RelativeDistinguishedName");
            while !set.is_empty() {
                let mut atv = set.sequence("AttributeTypeAndValue")?;
                let ty = atv.read(tag::OID)?;
                let (value_tag, value, _) = atv.read_any()?;
                atv.finish()?;
                f(ty, value_tag, value);
            }
        }
        Ok(())
    }

    /// Calls `f` with every attribute in order (multi-valued RDNs flattened): its type (OID content
    /// octets), the value's tag and the value's content octets. The name was walked once when it was
    /// parsed, so this cannot fail and allocates nothing.
    pub fn for_each_attribute(&self, mut f: impl FnMut(NameAttribute<'a>)) {
        let _ = self.walk(|oid, tag, value| f(NameAttribute { oid, tag, value }));
    }

    /// The first commonName attribute, if it is valid UTF-8.
    pub fn common_name(&self) -> Option<&'a str> {
        let mut cn = None;
        let _ = self.walk(|ty, _, value| {
            if cn.is_none() && ty == oid::COMMON_NAME {
                cn = core::str::from_utf8(value).ok();
            }
        });
        cn
    }
}
