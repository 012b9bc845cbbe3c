//! AMD products and their pinned trust anchors.

mod roots;

use crate::error::{Error, ProductSource};
use core::fmt;

/// An AMD EPYC product line with SEV-SNP. The product decides the TCB layout and the trust anchors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Product {
    /// 3rd generation EPYC (Zen 3, family 19h models 00h–0Fh).
    Milan,
    /// 4th generation EPYC (Zen 4, family 19h models 10h–1Fh and A0h–AFh).
    Genoa,
    /// 5th generation EPYC (Zen 5, family 1Ah models 00h–1Fh).
    Turin,
}

/// The pinned certificates of one product, as DER.
#[derive(Clone, Copy, Debug)]
pub struct TrustAnchors {
    /// The product.
    pub product: Product,
    /// The self-signed AMD Root Key.
    pub ark: &'static [u8],
    /// The AMD SEV Key (issuer of VCEKs).
    pub ask: &'static [u8],
    /// The AMD SEV VLEK Key (issuer of VLEKs).
    pub asvk: &'static [u8],
}

impl Product {
    /// All supported products.
    pub const ALL: [Product; 3] = [Product::Milan, Product::Genoa, Product::Turin];

    /// AMD's name for the product ("Milan", "Genoa", "Turin"), as used in KDS URLs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Milan => "Milan",
            Self::Genoa => "Genoa",
            Self::Turin => "Turin",
        }
    }

    /// Parses a product name as written by users ("milan", "Genoa").
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Decodes a VCEK/VLEK productName extension: the product, optionally followed by `-` and the stepping
    /// (`Milan-B0`, `Genoa`, `Turin`).
    pub fn from_product_name(value: &str) -> Result<Self, Error> {
        let base = value.split_once('-').map_or(value, |(b, _)| b);
        Self::ALL
            .into_iter()
            .find(|p| p.name() == base)
            .ok_or(Error::UnsupportedProduct { source: ProductSource::CertificateProductName })
    }

    /// Decodes the report's CPUID family and model (report version 3 and later, offsets 0x188/0x189).
    /// Only documented family/model ranges map to a product; anything else is an error, never a guess.
    pub fn from_cpuid(family: u8, model: u8) -> Result<Self, Error> {
        match (family, model) {
            (0x19, 0x00..=0x0F) => Ok(Self::Milan),
            (0x19, 0x10..=0x1F | 0xA0..=0xAF) => Ok(Self::Genoa),
            (0x1A, 0x00..=0x1F) => Ok(Self::Turin),
            _ => Err(Error::UnsupportedProduct { source: ProductSource::ReportCpuid }),
        }
    }

    /// The pinned ARK, ASK and ASVK of this product.
    pub fn trust_anchors(self) -> TrustAnchors {
        match self {
            Self::Milan => {
                TrustAnchors { product: self, ark: roots::ARK_MILAN, ask: roots::ASK_MILAN, asvk: roots::ASVK_MILAN }
            }
            Self::Genoa => {
                TrustAnchors { product: self, ark: roots::ARK_GENOA, ask: roots::ASK_GENOA, asvk: roots::ASVK_GENOA }
            }
            Self::Turin => {
                TrustAnchors { product: self, ark: roots::ARK_TURIN, ask: roots::ASK_TURIN, asvk: roots::ASVK_TURIN }
            }
        }
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(Product::from_product_name("Milan-B0").unwrap(), Product::Milan);
        assert_eq!(Product::from_product_name("Genoa").unwrap(), Product::Genoa);
        assert_eq!(Product::from_product_name("Turin").unwrap(), Product::Turin);
        assert!(Product::from_product_name("Naples").is_err());
        assert!(Product::from_product_name("milan").is_err(), "productName is case-sensitive");
        assert_eq!(Product::from_cpuid(0x19, 0x01).unwrap(), Product::Milan);
        assert_eq!(Product::from_cpuid(0x19, 0x11).unwrap(), Product::Genoa);
        assert_eq!(Product::from_cpuid(0x1A, 0x02).unwrap(), Product::Turin);
        assert!(Product::from_cpuid(0x17, 0x31).is_err());
        assert!(Product::from_cpuid(0, 0).is_err());
    }

    #[test]
    fn embedded_roots_parse() {
        for p in Product::ALL {
            let a = p.trust_anchors();
            for der in [a.ark, a.ask, a.asvk] {
                crate::x509::Certificate::from_der(der).unwrap();
            }
        }
    }
}
