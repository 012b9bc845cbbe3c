//! What can be asked of KDS, and the URL of each object (AMD "Versioned Chip Endorsement Key (VCEK)
//! Certificate and KDS Interface Specification" 57230 §4; the VLEK spec 58369 for `/vlek/`).
//!
//! | object | path |
//! |---|---|
//! | VCEK, Milan/Genoa | `/vcek/v1/{Milan,Genoa}/{hwID: 64 bytes hex}?blSPL=&teeSPL=&snpSPL=&ucodeSPL=` |
//! | VCEK, Turin | `/vcek/v1/Turin/{hwID: 8 bytes hex}?fmcSPL=&blSPL=&teeSPL=&snpSPL=&ucodeSPL=` |
//! | ASK + ARK | `/vcek/v1/{product}/cert_chain` (PEM, ASK first) |
//! | ASVK + ARK | `/vlek/v1/{product}/cert_chain` (PEM, ASVK first) |
//! | CRL of ASK + VCEKs | `/vcek/v1/{product}/crl` (DER, signed by the ARK) |
//! | CRL of ASVK + VLEKs | `/vlek/v1/{product}/crl` (DER, signed by the ARK) |
//!
//! SPLs are decimal without padding, hwIDs lower-case hex (KDS accepts either case).

use super::KdsError;
use attest_engine::snp::{Product, Report, TcbVersion};
use std::fmt;

/// Length of a Milan/Genoa hwID: the whole 64-byte CHIP_ID.
pub const HWID_LEN: usize = 64;
/// Length of a Turin hwID: the first 8 bytes of CHIP_ID (the rest of CHIP_ID is zero).
pub const TURIN_HWID_LEN: usize = 8;

/// The hwID length KDS uses for `product`.
pub fn hw_id_len(product: Product) -> usize {
    match product {
        Product::Turin => TURIN_HWID_LEN,
        Product::Milan | Product::Genoa => HWID_LEN,
    }
}

/// A chip's hardware id as KDS names it: 64 bytes (Milan, Genoa) or 8 bytes (Turin).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HwId {
    bytes: [u8; HWID_LEN],
    len: u8,
}

impl HwId {
    /// The hwID of `product` with exactly these bytes (64, or 8 on Turin).
    pub fn new(product: Product, bytes: &[u8]) -> Result<Self, KdsError> {
        if bytes.len() != hw_id_len(product) {
            return Err(KdsError::InvalidKey { reason: "hwID length is wrong for the product (64 bytes; Turin 8)" });
        }
        if bytes.iter().all(|b| *b == 0) {
            return Err(KdsError::InvalidKey { reason: "hwID is all zero (MASK_CHIP_ID is set)" });
        }
        let mut buf = [0u8; HWID_LEN];
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(Self { bytes: buf, len: bytes.len() as u8 })
    }

    /// The hwID of a report's 64-byte CHIP_ID: all of it, or on Turin the first 8 bytes (the remaining 56
    /// must then be zero, as the engine also requires).
    pub fn from_chip_id(product: Product, chip_id: &[u8; 64]) -> Result<Self, KdsError> {
        let n = hw_id_len(product);
        if chip_id[n..].iter().any(|b| *b != 0) {
            return Err(KdsError::InvalidKey { reason: "Turin CHIP_ID has non-zero bytes after the 8-byte hwID" });
        }
        Self::new(product, &chip_id[..n])
    }

    /// Parses hex (either case); the length must fit the product.
    pub fn from_hex(product: Product, text: &str) -> Result<Self, KdsError> {
        let bytes = hex::decode(text.trim()).map_err(|_| KdsError::InvalidKey { reason: "hwID is not hex" })?;
        Self::new(product, &bytes)
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Lower-case hex, as in KDS URLs and store paths.
    pub fn to_hex(&self) -> String {
        hex::encode(self.as_bytes())
    }
}

impl fmt::Debug for HwId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HwId({self})")
    }
}

/// Abbreviated: the first 8 hex digits and the length.
impl fmt::Display for HwId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.to_hex();
        write!(f, "{}…({} B)", &h[..8], self.len)
    }
}

/// One VCEK: per product, chip and TCB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VcekKey {
    /// The product.
    pub product: Product,
    /// The chip.
    pub hw_id: HwId,
    /// The TCB (the report's REPORTED_TCB).
    pub tcb: TcbVersion,
}

impl VcekKey {
    /// A key; the TCB must have an FMC SPL exactly on Turin.
    pub fn new(product: Product, hw_id: HwId, tcb: TcbVersion) -> Result<Self, KdsError> {
        if tcb.fmc.is_some() != (product == Product::Turin) {
            return Err(KdsError::InvalidKey { reason: "an FMC SPL is given exactly for Turin" });
        }
        if hw_id.as_bytes().len() != hw_id_len(product) {
            return Err(KdsError::InvalidKey { reason: "hwID length is wrong for the product (64 bytes; Turin 8)" });
        }
        Ok(Self { product, hw_id, tcb })
    }

    /// The key a VCEK-signed report needs: its CHIP_ID and REPORTED_TCB.
    pub fn from_report(report: &Report<'_>, product: Product) -> Result<Self, KdsError> {
        if report.mask_chip_key() {
            return Err(KdsError::InvalidKey { reason: "the report masks its chip id (MASK_CHIP_KEY)" });
        }
        let tcb = TcbVersion::decode(report.reported_tcb(), product).map_err(KdsError::Report)?;
        Self::new(product, HwId::from_chip_id(product, report.chip_id())?, tcb)
    }

    /// The raw TCB_VERSION (SNP ABI 56860 Table 3) in the product's layout.
    pub fn tcb_raw(&self) -> u64 {
        self.tcb.encode(self.product)
    }

    /// The KDS path and query.
    pub fn kds_path(&self) -> String {
        let t = &self.tcb;
        let spls = format!("blSPL={}&teeSPL={}&snpSPL={}&ucodeSPL={}", t.bootloader, t.tee, t.snp, t.microcode);
        match t.fmc {
            Some(fmc) => format!("/vcek/v1/{}/{}?fmcSPL={fmc}&{spls}", self.product.name(), self.hw_id.to_hex()),
            None => format!("/vcek/v1/{}/{}?{spls}", self.product.name(), self.hw_id.to_hex()),
        }
    }
}

impl fmt::Display for VcekKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VCEK {} chip {} TCB {:016x}", self.product, self.hw_id, self.tcb_raw())
    }
}

/// Which `cert_chain` of a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainKind {
    /// ASK + ARK, the issuers of VCEKs (`/vcek/v1/{product}/cert_chain`).
    Vcek,
    /// ASVK + ARK, the issuers of VLEKs (`/vlek/v1/{product}/cert_chain`).
    Vlek,
}

impl ChainKind {
    /// The URL segment, `vcek` or `vlek`.
    pub fn segment(self) -> &'static str {
        match self {
            Self::Vcek => "vcek",
            Self::Vlek => "vlek",
        }
    }

    /// The KDS path of the chain.
    pub fn kds_path(self, product: Product) -> String {
        format!("/{}/v1/{}/cert_chain", self.segment(), product.name())
    }

    /// The KDS path of the ARK-signed CRL covering this kind's intermediate and leaves.
    pub fn crl_path(self, product: Product) -> String {
        format!("/{}/v1/{}/crl", self.segment(), product.name())
    }

    /// AMD's common name of the intermediate: `SEV-<product>` or `SEV-VLEK-<product>`.
    pub fn intermediate_common_name(self, product: Product) -> String {
        match self {
            Self::Vcek => format!("SEV-{}", product.name()),
            Self::Vlek => format!("SEV-VLEK-{}", product.name()),
        }
    }
}

/// The KDS path of a product's VCEK CRL (the ASK and VCEKs; [`ChainKind::crl_path`] for either kind).
pub fn crl_path(product: Product) -> String {
    ChainKind::Vcek.crl_path(product)
}

/// Every object this module fetches: the single-flight and negative-cache key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ObjectKey {
    Vcek(VcekKey),
    Chain(Product, ChainKind),
    Crl(Product, ChainKind),
}

impl ObjectKey {
    pub(crate) fn kds_path(&self) -> String {
        match self {
            Self::Vcek(k) => k.kds_path(),
            Self::Chain(p, kind) => kind.kds_path(*p),
            Self::Crl(p, kind) => kind.crl_path(*p),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Vcek(k) => k.fmt(f),
            Self::Chain(p, kind) => write!(f, "{} cert_chain {p}", kind.segment()),
            Self::Crl(p, kind) => write!(f, "{} CRL {p}", kind.segment()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let hw = HwId::new(Product::Milan, &[0xab; 64]).unwrap();
        let tcb = TcbVersion { fmc: None, bootloader: 2, tee: 0, snp: 5, microcode: 68 };
        let k = VcekKey::new(Product::Milan, hw, tcb).unwrap();
        assert_eq!(k.kds_path(), format!("/vcek/v1/Milan/{}?blSPL=2&teeSPL=0&snpSPL=5&ucodeSPL=68", "ab".repeat(64)));
        let hw = HwId::new(Product::Turin, &[0x1e, 0x55, 0x0a, 0x8e, 0xe5, 0xcf, 0x9f, 0x4d]).unwrap();
        let tcb = TcbVersion { fmc: Some(1), bootloader: 0, tee: 0, snp: 0, microcode: 9 };
        let k = VcekKey::new(Product::Turin, hw, tcb).unwrap();
        assert_eq!(k.kds_path(), "/vcek/v1/Turin/1e550a8ee5cf9f4d?fmcSPL=1&blSPL=0&teeSPL=0&snpSPL=0&ucodeSPL=9");
        assert_eq!(ChainKind::Vlek.kds_path(Product::Genoa), "/vlek/v1/Genoa/cert_chain");
        assert_eq!(crl_path(Product::Turin), "/vcek/v1/Turin/crl");
        assert_eq!(ChainKind::Vlek.crl_path(Product::Genoa), "/vlek/v1/Genoa/crl");
    }

    #[test]
    fn key_checks() {
        assert!(HwId::new(Product::Turin, &[1; 64]).is_err());
        assert!(HwId::new(Product::Milan, &[1; 8]).is_err());
        assert!(HwId::new(Product::Milan, &[0; 64]).is_err());
        let mut chip = [0u8; 64];
        chip[..8].fill(7);
        assert_eq!(HwId::from_chip_id(Product::Turin, &chip).unwrap().as_bytes(), &[7; 8]);
        chip[9] = 1;
        assert!(HwId::from_chip_id(Product::Turin, &chip).is_err());
        let hw = HwId::new(Product::Milan, &[1; 64]).unwrap();
        let turin_tcb = TcbVersion { fmc: Some(0), ..TcbVersion::default() };
        assert!(VcekKey::new(Product::Milan, hw, turin_tcb).is_err());
    }
}
