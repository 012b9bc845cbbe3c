//! TCB_VERSION decoding per product (SNP ABI spec 56860, Table 3 "TCB_VERSION Structure"; Turin layout per
//! the same table's Family 1Ah variant).
//!
//! ```text
//! byte:          0      1      2      3      4      5      6      7
//! Milan, Genoa:  BL     TEE    rsvd   rsvd   rsvd   rsvd   SNP    UCODE
//! Turin:         FMC    BL     TEE    SNP    rsvd   rsvd   rsvd   UCODE
//! ```

use crate::amd::Product;
use crate::error::Error;
use core::fmt;

/// A TCB component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcbComponent {
    /// Firmware mask chip / FMC SPL (Turin).
    Fmc,
    /// Boot loader SPL.
    Bootloader,
    /// TEE (PSP OS) SPL.
    Tee,
    /// SNP firmware SPL.
    Snp,
    /// Microcode SPL.
    Microcode,
}

impl TcbComponent {
    /// Name as in AMD's certificate extensions.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fmc => "fmc",
            Self::Bootloader => "bootloader",
            Self::Tee => "tee",
            Self::Snp => "snp",
            Self::Microcode => "microcode",
        }
    }
}

impl fmt::Display for TcbComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded TCB version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcbVersion {
    /// FMC SPL (Turin only; `None` on Milan/Genoa).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fmc: Option<u8>,
    /// Boot loader SPL.
    #[serde(alias = "bl")]
    pub bootloader: u8,
    /// TEE SPL.
    pub tee: u8,
    /// SNP firmware SPL.
    pub snp: u8,
    /// Microcode SPL.
    #[serde(alias = "ucode")]
    pub microcode: u8,
}

impl TcbVersion {
    /// Decodes a raw TCB_VERSION for `product`; reserved bytes must be zero.
    pub fn decode(raw: u64, product: Product) -> Result<Self, Error> {
        Self::decode_field(raw, product, "TCB_VERSION", 0)
    }

    /// [`Self::decode`] for the report field `field` at `offset`, so errors name the reserved byte's offset.
    pub(crate) fn decode_field(raw: u64, product: Product, field: &'static str, offset: usize) -> Result<Self, Error> {
        let b = raw.to_le_bytes();
        match product {
            Product::Milan | Product::Genoa => {
                if let Some(i) = (2..6).find(|i| b[*i] != 0) {
                    return Err(Error::ReservedNonZero { field, offset: offset + i });
                }
                Ok(Self { fmc: None, bootloader: b[0], tee: b[1], snp: b[6], microcode: b[7] })
            }
            Product::Turin => {
                if let Some(i) = (4..7).find(|i| b[*i] != 0) {
                    return Err(Error::ReservedNonZero { field, offset: offset + i });
                }
                Ok(Self { fmc: Some(b[0]), bootloader: b[1], tee: b[2], snp: b[3], microcode: b[7] })
            }
        }
    }

    /// Encodes for `product` (the inverse of [`Self::decode`]).
    pub fn encode(&self, product: Product) -> u64 {
        let mut b = [0u8; 8];
        match product {
            Product::Milan | Product::Genoa => {
                b[0] = self.bootloader;
                b[1] = self.tee;
                b[6] = self.snp;
            }
            Product::Turin => {
                b[0] = self.fmc.unwrap_or(0);
                b[1] = self.bootloader;
                b[2] = self.tee;
                b[3] = self.snp;
            }
        }
        b[7] = self.microcode;
        u64::from_le_bytes(b)
    }

    /// The components with their values (FMC only when present).
    pub fn components(&self) -> impl Iterator<Item = (TcbComponent, u8)> {
        [
            self.fmc.map(|v| (TcbComponent::Fmc, v)),
            Some((TcbComponent::Bootloader, self.bootloader)),
            Some((TcbComponent::Tee, self.tee)),
            Some((TcbComponent::Snp, self.snp)),
            Some((TcbComponent::Microcode, self.microcode)),
        ]
        .into_iter()
        .flatten()
    }

    /// The value of one component (`None` for FMC on Milan/Genoa).
    pub fn get(&self, c: TcbComponent) -> Option<u8> {
        match c {
            TcbComponent::Fmc => self.fmc,
            TcbComponent::Bootloader => Some(self.bootloader),
            TcbComponent::Tee => Some(self.tee),
            TcbComponent::Snp => Some(self.snp),
            TcbComponent::Microcode => Some(self.microcode),
        }
    }

    /// The first component where `self` is below `min`, as `(component, min, found)`. A minimum FMC value
    /// against a TCB without FMC is a shortfall (found 0).
    pub fn first_below(&self, min: &TcbVersion) -> Option<(TcbComponent, u8, u8)> {
        min.components().find_map(|(c, want)| {
            let have = self.get(c).unwrap_or(0);
            (have < want).then_some((c, want, have))
        })
    }
}

impl fmt::Display for TcbVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(fmc) = self.fmc {
            write!(f, "fmc={fmc} ")?;
        }
        write!(f, "bl={} tee={} snp={} ucode={}", self.bootloader, self.tee, self.snp, self.microcode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        // AWS Milan report: current_tcb 0xdc18000000000004.
        let t = TcbVersion::decode(0xdc18_0000_0000_0004, Product::Milan).unwrap();
        assert_eq!((t.bootloader, t.tee, t.snp, t.microcode, t.fmc), (4, 0, 24, 220, None));
        assert_eq!(t.encode(Product::Milan), 0xdc18_0000_0000_0004);
        let turin = TcbVersion { fmc: Some(1), bootloader: 2, tee: 3, snp: 4, microcode: 9 };
        let raw = turin.encode(Product::Turin);
        assert_eq!(raw, 0x0900_0000_0403_0201);
        assert_eq!(TcbVersion::decode(raw, Product::Turin).unwrap(), turin);
        // The same bits mean something else on Milan: byte 2/3 are reserved there.
        assert!(TcbVersion::decode(raw, Product::Milan).is_err());
        assert!(TcbVersion::decode(0x0000_0100_0000_0000, Product::Turin).is_err());
    }

    #[test]
    fn ordering() {
        let have = TcbVersion { fmc: None, bootloader: 3, tee: 0, snp: 8, microcode: 115 };
        let min = TcbVersion { fmc: None, bootloader: 3, tee: 0, snp: 8, microcode: 116 };
        assert_eq!(have.first_below(&min), Some((TcbComponent::Microcode, 116, 115)));
        assert_eq!(have.first_below(&have), None);
    }
}
