//! SEV-SNP evidence as tools hand it over, the one entry point the CLI, the C ABI and Go share: a raw
//! `ATTESTATION_REPORT` (0x4A0 bytes), the report followed by the 20-byte IGVM request-data header (as
//! Azure's HCL places it), or a whole Azure HCL report (`HCLA`) whose hardware report is SEV-SNP — then
//! REPORT_DATA[0..32] must be SHA-256 of the HCL runtime data, checked after the report verifies.
//!
//! Classification is by structure, never a guess: any other length, an IGVM header that is not one, or
//! an HCL report of another kind is malformed input ([`Error::EvidenceFormat`], [`Error::Truncated`],
//! [`Error::TrailingData`]).

use crate::azure::HclReport;
use crate::azure::hcl::{HardwareReportType, IGVM_REQUEST_HEADER_SIZE};
use crate::error::Error;
use crate::snp::{REPORT_SIZE, SnpRequest, SnpVerifier, VerifiedReport};
use crate::snp::{SnpPolicy, Verdict};

/// Where the SNP report sits in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnpContainer {
    /// Exactly one 0x4A0-byte ATTESTATION_REPORT.
    Raw,
    /// A report followed by the 20-byte IGVM request-data header (Azure, without the HCL header).
    RawWithIgvmHeader,
    /// An Azure HCL report (`HCLA`), SNP report at offset 0x20.
    Hcl,
}

impl SnpContainer {
    /// A stable identifier (`raw`, `raw+igvm-header`, `azure-hcl`).
    pub fn id(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::RawWithIgvmHeader => "raw+igvm-header",
            Self::Hcl => "azure-hcl",
        }
    }

    /// A description for people.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Raw => "raw SEV-SNP report (0x4A0 bytes)",
            Self::RawWithIgvmHeader => "raw SEV-SNP report + 20-byte IGVM request-data header",
            Self::Hcl => "Azure HCL report (HCLA) containing an SEV-SNP report",
        }
    }
}

/// SEV-SNP evidence, classified (borrowed).
#[derive(Clone, Copy, Debug)]
pub struct SnpEvidence<'a> {
    data: &'a [u8],
    container: SnpContainer,
}

const FORMAT: &str = "SEV-SNP report";

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl<'a> SnpEvidence<'a> {
    /// Classifies `data` (see the module documentation).
    pub fn parse(data: &'a [u8]) -> Result<Self, Error> {
        if HclReport::looks_like(data) {
            let hcl = HclReport::parse(data)?;
            return match hcl.report_type() {
                HardwareReportType::Snp => Ok(Self { data, container: SnpContainer::Hcl }),
                HardwareReportType::Tdx => Err(Error::EvidenceFormat {
                    format: FORMAT,
                    reason: "an Azure HCL report containing an Intel TDX report, not SEV-SNP",
                }),
            };
        }
        if data.len() < REPORT_SIZE {
            return Err(Error::Truncated { structure: FORMAT, needed: REPORT_SIZE, found: data.len() });
        }
        if data.len() == REPORT_SIZE {
            return Ok(Self { data, container: SnpContainer::Raw });
        }
        if data.len() == REPORT_SIZE + IGVM_REQUEST_HEADER_SIZE {
            let h = &data[REPORT_SIZE..];
            let (data_size, version, report_type, hash_type, var_size) =
                (u32_at(h, 0), u32_at(h, 4), u32_at(h, 8), u32_at(h, 12), u32_at(h, 16));
            let ok = version == 1
                && report_type == 2
                && (1..=3).contains(&hash_type)
                && var_size.checked_add(20) == Some(data_size);
            if ok {
                return Ok(Self { data, container: SnpContainer::RawWithIgvmHeader });
            }
            return Err(Error::EvidenceFormat {
                format: FORMAT,
                reason: "the 20 bytes after the report are not an SNP IGVM request-data header",
            });
        }
        Err(Error::TrailingData { structure: FORMAT, extra: data.len() - REPORT_SIZE })
    }

    /// The container.
    pub fn container(&self) -> SnpContainer {
        self.container
    }

    /// The 0x4A0 report bytes, exactly as received.
    pub fn report(&self) -> &'a [u8] {
        match self.container {
            SnpContainer::Raw => self.data,
            SnpContainer::RawWithIgvmHeader => &self.data[..REPORT_SIZE],
            SnpContainer::Hcl => &self.data[0x20..0x20 + REPORT_SIZE],
        }
    }

    /// The HCL report, when the container is one.
    pub fn hcl(&self) -> Option<HclReport<'a>> {
        match self.container {
            SnpContainer::Hcl => HclReport::parse(self.data).ok(),
            SnpContainer::Raw | SnpContainer::RawWithIgvmHeader => None,
        }
    }

    /// Verifies the report (`req.report` is replaced by this evidence's report) and, for an HCL report,
    /// the REPORT_DATA binding of its runtime data; `verdict` records the checks as they run.
    pub fn verify<'r>(
        &self,
        verifier: &SnpVerifier,
        req: &SnpRequest<'r>,
        policy: &SnpPolicy,
        verdict: &mut Verdict,
    ) -> Result<VerifiedReport<'r>, Error>
    where
        'a: 'r,
    {
        let req = SnpRequest { report: self.report(), ..*req };
        let ok = verifier.verify_recording(&req, policy, verdict)?;
        if let Some(hcl) = self.hcl() {
            hcl.check_binding(verifier.provider())?;
        }
        Ok(ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn classification() {
        let mut r = vec![0u8; REPORT_SIZE];
        r[0] = 2;
        assert_eq!(SnpEvidence::parse(&r).unwrap().container(), SnpContainer::Raw);
        let mut igvm = r.clone();
        for v in [604u32, 1, 2, 1, 584] {
            igvm.extend_from_slice(&v.to_le_bytes());
        }
        let e = SnpEvidence::parse(&igvm).unwrap();
        assert_eq!((e.container(), e.report()), (SnpContainer::RawWithIgvmHeader, &r[..]));
        igvm[REPORT_SIZE + 8] = 4;
        assert_eq!(SnpEvidence::parse(&igvm).unwrap_err().class(), ErrorClass::Malformed);
        for n in [0, 1, REPORT_SIZE - 1, REPORT_SIZE + 1, REPORT_SIZE + 64] {
            let e = SnpEvidence::parse(&vec![0u8; n]).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Malformed, "{n}: {e}");
        }
        assert!(SnpEvidence::parse(b"HCLA\x01\0\0\0").is_err());
    }

    proptest::proptest! {
        /// Never panics; an accepted input's report is 0x4A0 bytes of it, and errors are malformed input.
        #[test]
        fn parse_is_total(data in proptest::collection::vec(proptest::num::u8::ANY, 0..0x600)) {
            match SnpEvidence::parse(&data) {
                Ok(ev) => {
                    proptest::prop_assert_eq!(ev.report().len(), REPORT_SIZE);
                    let at = ev.report().as_ptr() as usize - data.as_ptr() as usize;
                    proptest::prop_assert!(at + REPORT_SIZE <= data.len());
                }
                Err(e) => proptest::prop_assert_eq!(e.class(), ErrorClass::Malformed),
            }
        }
    }
}
