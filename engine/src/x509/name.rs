//! X.501 distinguished names, kept as borrowed DER and compared byte for byte (RFC 5280 §7.1 permits
//! binary comparison; AMD's issuer and subject names are byte-identical).

use crate::der::{Reader, oid, tag};
use crate::error::Error;

/// Most RDNs walked in one name.
pub const MAX_RDNS: usize = 16;

/// A distinguished name (the whole `Name` TLV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    pub(crate) fn from_tlv(tlv: &'a [u8]) -> Result<Self, Error> {
        let name = Self(tlv);
        // Validate the structure once so accessors cannot fail later.
        let mut count = 0;
        name.walk(|_, _| {
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

    fn walk(&self, mut f: impl FnMut(&'a [u8], &'a [u8])) -> Result<(), Error> {
        let mut outer = Reader::new(self.0, "Name");
        let mut rdns = outer.sequence("Name")?;
        outer.finish()?;
        while !rdns.is_empty() {
            let mut set = Reader::new(rdns.read(tag::SET)?, "RelativeDistinguishedName");
            while !set.is_empty() {
                let mut atv = set.sequence("AttributeTypeAndValue")?;
                let ty = atv.read(tag::OID)?;
                let (_, value, _) = atv.read_any()?;
                atv.finish()?;
                f(ty, value);
            }
        }
        Ok(())
    }

    /// The first commonName attribute, if it is valid UTF-8.
    pub fn common_name(&self) -> Option<&'a str> {
        let mut cn = None;
        let _ = self.walk(|ty, value| {
            if cn.is_none() && ty == oid::COMMON_NAME {
                cn = core::str::from_utf8(value).ok();
            }
        });
        cn
    }
}
