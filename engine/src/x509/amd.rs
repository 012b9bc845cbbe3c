//! AMD's SEV certificate extensions (OID arc 1.3.6.1.4.1.3704.1; AMD "Versioned Chip Endorsement Key"
//! specification 57230 §3 and the VLEK spec 58369).
//!
//! | arc | meaning | encoding seen in real certificates |
//! |---|---|---|
//! | .1 | structVersion | INTEGER |
//! | .2 | productName | IA5String, e.g. "Milan-B0", "Genoa", "Turin" |
//! | .3.1 / .3.2 / .3.3 | blSPL / teeSPL / snpSPL | INTEGER, 1 byte or 2 bytes (`02 02 00 d9`) |
//! | .3.4–.3.7 | reserved SPLs | INTEGER |
//! | .3.8 | ucodeSPL | INTEGER |
//! | .3.9 | fmcSPL (Turin) | INTEGER |
//! | .4 | hwID (VCEK only) | raw octets (64 B, Turin 8 B) or a DER OCTET STRING around them |
//! | .5 | csp_id (VLEK only) | IA5String |

use super::cert::Certificate;
use crate::der::{Reader, oid, tag, uint_from_integer};
use crate::error::Error;

/// The decoded AMD extensions of a VCEK or VLEK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmdExtensions<'a> {
    /// `.1` structVersion.
    pub struct_version: Option<u64>,
    /// `.2` productName.
    pub product_name: Option<&'a str>,
    /// `.3.1` boot loader SPL.
    pub bl_spl: Option<u8>,
    /// `.3.2` TEE SPL.
    pub tee_spl: Option<u8>,
    /// `.3.3` SNP firmware SPL.
    pub snp_spl: Option<u8>,
    /// `.3.4`–`.3.7` reserved SPLs, in order.
    pub reserved_spl: [Option<u8>; 4],
    /// `.3.8` microcode SPL.
    pub ucode_spl: Option<u8>,
    /// `.3.9` FMC SPL (Turin and later).
    pub fmc_spl: Option<u8>,
    /// `.4` hardware id (chip id): 64 bytes, or 8 bytes on Turin.
    pub hw_id: Option<&'a [u8]>,
    /// `.5` cloud service provider id (VLEK).
    pub csp_id: Option<&'a str>,
}

impl<'a> AmdExtensions<'a> {
    pub(crate) fn from_cert(cert: &Certificate<'a>) -> Result<Self, Error> {
        let mut out = Self::default();
        for ext in cert.extensions() {
            let ext = ext?;
            let Some(arc) = oid::is_amd(ext.oid) else { continue };
            match arc {
                [0x01] => out.struct_version = Some(integer(ext.value, "structVersion")?),
                [0x02] => out.product_name = Some(ia5(ext.value, "productName")?),
                [0x03, 0x01] => out.bl_spl = Some(spl(ext.value, "blSPL")?),
                [0x03, 0x02] => out.tee_spl = Some(spl(ext.value, "teeSPL")?),
                [0x03, 0x03] => out.snp_spl = Some(spl(ext.value, "snpSPL")?),
                [0x03, n @ 0x04..=0x07] => {
                    out.reserved_spl[usize::from(n - 4)] = Some(spl(ext.value, "reserved SPL")?);
                }
                [0x03, 0x08] => out.ucode_spl = Some(spl(ext.value, "ucodeSPL")?),
                [0x03, 0x09] => out.fmc_spl = Some(spl(ext.value, "fmcSPL")?),
                [0x04] => out.hw_id = Some(hw_id(ext.value)?),
                [0x05] => out.csp_id = Some(ia5(ext.value, "csp_id")?),
                _ => {} // Future AMD extensions are non-critical; ignore.
            }
        }
        Ok(out)
    }
}

fn bad(extension: &'static str, reason: &'static str) -> Error {
    Error::AmdExtension { extension, reason }
}

fn integer(value: &[u8], name: &'static str) -> Result<u64, Error> {
    let mut r = Reader::new(value, name);
    let v = r.integer().map_err(|_| bad(name, "not a DER INTEGER"))?;
    r.finish().map_err(|_| bad(name, "trailing bytes"))?;
    uint_from_integer(v).ok_or(bad(name, "negative or too large"))
}

fn spl(value: &[u8], name: &'static str) -> Result<u8, Error> {
    u8::try_from(integer(value, name)?).map_err(|_| bad(name, "SPL above 255"))
}

fn ia5<'a>(value: &'a [u8], name: &'static str) -> Result<&'a str, Error> {
    let mut r = Reader::new(value, name);
    let v = r.read(tag::IA5_STRING).map_err(|_| bad(name, "not an IA5String"))?;
    r.finish().map_err(|_| bad(name, "trailing bytes"))?;
    if !v.is_ascii() {
        return Err(bad(name, "IA5String with non-ASCII bytes"));
    }
    core::str::from_utf8(v).map_err(|_| bad(name, "IA5String with non-ASCII bytes"))
}

/// hwID: raw octets (64 bytes; 8 on Turin) or the same wrapped in a DER OCTET STRING. The two encodings
/// are told apart by length alone, so no raw value can be mistaken for a wrapped one.
fn hw_id(value: &[u8]) -> Result<&[u8], Error> {
    match value {
        [tag::OCTET_STRING, 0x40, rest @ ..] if rest.len() == 64 => Ok(rest),
        [tag::OCTET_STRING, 0x08, rest @ ..] if rest.len() == 8 => Ok(rest),
        raw if raw.len() == 64 || raw.len() == 8 => Ok(raw),
        _ => Err(bad("hwID", "neither 64 nor 8 bytes, raw or as an OCTET STRING")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hw_id_encodings() {
        let raw = [7u8; 64];
        assert_eq!(hw_id(&raw).unwrap(), &raw);
        let mut wrapped = vec![0x04, 0x40];
        wrapped.extend(raw);
        assert_eq!(hw_id(&wrapped).unwrap(), &raw);
        assert_eq!(hw_id(&[1u8; 8]).unwrap(), &[1u8; 8]);
        assert!(hw_id(&[1u8; 65]).is_err());
        assert!(hw_id(&[]).is_err());
        // A raw 64-byte value that happens to start with 04 3E is still raw.
        let mut tricky = [0u8; 64];
        tricky[0] = 0x04;
        tricky[1] = 0x3E;
        assert_eq!(hw_id(&tricky).unwrap(), &tricky);
    }

    #[test]
    fn spl_widths() {
        assert_eq!(spl(&[0x02, 0x01, 0x5d], "x").unwrap(), 0x5d);
        assert_eq!(spl(&[0x02, 0x02, 0x00, 0xd9], "x").unwrap(), 0xd9);
        assert!(spl(&[0x02, 0x02, 0x01, 0x00], "x").is_err(), "256 is not an SPL");
        assert!(spl(&[0x02, 0x01, 0x80], "x").is_err(), "negative");
        assert!(spl(&[0x02, 0x02, 0x00, 0x10], "x").is_err(), "non-minimal");
    }
}
