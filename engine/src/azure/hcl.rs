//! The HCL report (Azure vTPM NV index 0x01400001), a zero-copy view.
//!
//! Layout (little-endian), as produced by Azure's paravisor (HCL) and documented by Microsoft's
//! `azure-cvm-tooling` and Constellation:
//!
//! ```text
//! 0x000 "HCLA"  0x004 version  0x008 report_size  0x00C request_type  0x010 status  0x014 reserved[12]
//! 0x020 hardware report area [0x4A0]   (SNP ATTESTATION_REPORT, or a TDX TDREPORT padded to the size)
//! 0x4C0 IGVM request data: data_size u32, version u32, report_type u32 (2 SNP, 4 TDX),
//!       hash_type u32 (1 SHA-256, 2 SHA-384, 3 SHA-512), variable_data_size u32
//! 0x4D4 variable data (runtime claims JSON) [variable_data_size], then padding to the NV index size
//! ```
//!
//! For SNP the hardware report's REPORT_DATA[0..32] is SHA-256 of the variable data; [`HclReport::check_binding`]
//! checks that against the received bytes.

use crate::crypto::CryptoProvider;
use crate::error::{Bytes, Error};
use crate::snp::REPORT_SIZE;

/// Size of the HCL header.
pub const HCL_HEADER_SIZE: usize = 0x20;
/// Size of the IGVM request-data header that follows the hardware report.
pub const IGVM_REQUEST_HEADER_SIZE: usize = 20;
/// Offset of the variable (runtime) data.
pub const VARIABLE_DATA_OFFSET: usize = HCL_HEADER_SIZE + REPORT_SIZE + IGVM_REQUEST_HEADER_SIZE;
/// Largest HCL report accepted (the NV index is 2600 bytes on current Azure hosts; 16 KiB of headroom).
pub const MAX_HCL_REPORT_SIZE: usize = 16 * 1024;

/// The kind of hardware report inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HardwareReportType {
    /// AMD SEV-SNP (2).
    Snp,
    /// Intel TDX (4).
    Tdx,
}

/// A parsed HCL report.
#[derive(Clone, Copy, Debug)]
pub struct HclReport<'a> {
    bytes: &'a [u8],
    version: u32,
    report_type: HardwareReportType,
    hash_type: u32,
    var_data: &'a [u8],
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl<'a> HclReport<'a> {
    /// Whether `bytes` start with the HCL magic.
    pub fn looks_like(bytes: &[u8]) -> bool {
        bytes.starts_with(b"HCLA")
    }

    /// Parses an HCL report. Padding after the variable data is allowed (the NV index is fixed-size).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let bad = |reason| Error::Der { structure: "HCL report", offset: 0, reason };
        if bytes.len() > MAX_HCL_REPORT_SIZE {
            return Err(Error::LimitExceeded {
                what: "HCL report size",
                limit: MAX_HCL_REPORT_SIZE,
                found: bytes.len(),
            });
        }
        if bytes.len() < VARIABLE_DATA_OFFSET {
            return Err(Error::Truncated { structure: "HCL report", needed: VARIABLE_DATA_OFFSET, found: bytes.len() });
        }
        if !Self::looks_like(bytes) {
            return Err(bad("missing HCLA signature"));
        }
        let version = u32_at(bytes, 4);
        let igvm = HCL_HEADER_SIZE + REPORT_SIZE;
        let data_size = u32_at(bytes, igvm) as usize;
        let req_version = u32_at(bytes, igvm + 4);
        let report_type = match u32_at(bytes, igvm + 8) {
            2 => HardwareReportType::Snp,
            4 => HardwareReportType::Tdx,
            _ => return Err(bad("unknown hardware report type")),
        };
        let hash_type = u32_at(bytes, igvm + 12);
        if !(1..=3).contains(&hash_type) {
            return Err(bad("unknown hash type"));
        }
        if req_version != 1 {
            return Err(bad("unknown IGVM request-data version"));
        }
        let var_size = u32_at(bytes, igvm + 16) as usize;
        if data_size != var_size + IGVM_REQUEST_HEADER_SIZE {
            return Err(bad("IGVM data_size disagrees with variable_data_size"));
        }
        let var_data = bytes.get(VARIABLE_DATA_OFFSET..VARIABLE_DATA_OFFSET + var_size).ok_or(Error::Truncated {
            structure: "HCL variable data",
            needed: VARIABLE_DATA_OFFSET + var_size,
            found: bytes.len(),
        })?;
        Ok(Self { bytes, version, report_type, hash_type, var_data })
    }

    /// The HCL header version.
    pub fn version(&self) -> u32 {
        self.version
    }
    /// The kind of hardware report.
    pub fn report_type(&self) -> HardwareReportType {
        self.report_type
    }
    /// The hash type of the binding (1 = SHA-256).
    pub fn hash_type(&self) -> u32 {
        self.hash_type
    }
    /// The hardware report area (0x4A0 bytes).
    pub fn hardware_report(&self) -> &'a [u8] {
        &self.bytes[HCL_HEADER_SIZE..HCL_HEADER_SIZE + REPORT_SIZE]
    }
    /// The SNP report, when the hardware report is one.
    pub fn snp_report(&self) -> Option<&'a [u8]> {
        (self.report_type == HardwareReportType::Snp).then(|| self.hardware_report())
    }
    /// The variable (runtime) data: JSON claims including the vTPM AK ("HCLAkPub").
    pub fn variable_data(&self) -> &'a [u8] {
        self.var_data
    }

    /// Checks that the SNP report's REPORT_DATA[0..32] is SHA-256 of the variable data.
    pub fn check_binding(&self, provider: &CryptoProvider) -> Result<(), Error> {
        let report = self.snp_report().ok_or(Error::Misuse { reason: "binding check needs an SNP HCL report" })?;
        if self.hash_type != 1 {
            return Err(Error::UnsupportedAlgorithm { what: "HCL hash type (need SHA-256)" });
        }
        let digest = provider.digests.sha256(self.var_data);
        let found = &report[0x50..0x70];
        if found != digest {
            return Err(Error::Policy(crate::error::PolicyViolation {
                check: crate::policy::Check::ReportData,
                expected: crate::error::Value::Bytes(Bytes::new(&digest)),
                found: crate::error::Value::Bytes(Bytes::new(found)),
            }));
        }
        Ok(())
    }
}
