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
//! # The binding (one definition)
//!
//! The paravisor asks the hardware for a report whose REPORT_DATA is
//!
//! ```text
//! REPORT_DATA[0..32]  = SHA-256(variable data)      (hash_type 1; the only one accepted)
//! REPORT_DATA[32..64] = 32 zero bytes
//! ```
//!
//! [`hcl_report_data`] computes those 64 bytes and [`HclReport::check_report_data`] compares **all 64** of them
//! (never a 32-byte prefix: bytes the comparison skips are bytes an attacker may choose). Every consumer —
//! the Azure bundle verifier ([`crate::azure::verify_azure_snp`]), the `azure-sev-snp` variant and the CLI —
//! goes through these two functions.

use crate::crypto::CryptoProvider;
use crate::error::{Bytes, Error};
use crate::snp::REPORT_SIZE;

/// Offset of REPORT_DATA in an SNP ATTESTATION_REPORT (SNP ABI spec 56860, Table "ATTESTATION_REPORT").
const SNP_REPORT_DATA: core::ops::Range<usize> = 0x50..0x90;

/// The REPORT_DATA a hardware report inside an HCL report carries for `runtime_data`: SHA-256 of it followed
/// by 32 zero bytes (see the module documentation).
pub fn hcl_report_data(provider: &CryptoProvider, runtime_data: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&provider.digests.sha256(runtime_data));
    out
}

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

    /// The REPORT_DATA the hardware report must carry for this report's variable data ([`hcl_report_data`]).
    /// Only hash type 1 (SHA-256) is accepted.
    pub fn expected_report_data(&self, provider: &CryptoProvider) -> Result<[u8; 64], Error> {
        if self.hash_type != 1 {
            return Err(Error::UnsupportedAlgorithm { what: "HCL runtime-data hash (need SHA-256)" });
        }
        Ok(hcl_report_data(provider, self.var_data))
    }

    /// Checks `found` — the REPORT_DATA of the hardware report, taken from a *verified* report — against
    /// [`HclReport::expected_report_data`], all 64 bytes. A mismatch is [`Error::AkBindingMismatch`]: the
    /// runtime data carries the vTPM attestation key, so an unbound runtime data is an unbound key.
    pub fn check_report_data(&self, provider: &CryptoProvider, found: &[u8; 64]) -> Result<(), Error> {
        let expected = self.expected_report_data(provider)?;
        if &expected != found {
            return Err(Error::AkBindingMismatch { expected: Bytes::new(&expected), found: Bytes::new(found) });
        }
        Ok(())
    }

    /// Checks the SNP hardware report's own REPORT_DATA (all 64 bytes) against the variable data, without
    /// verifying the report's signature: a structural check for tools that inspect reports; verifiers call
    /// [`HclReport::check_report_data`] with the REPORT_DATA of the verified report instead.
    pub fn check_binding(&self, provider: &CryptoProvider) -> Result<(), Error> {
        let report = self.snp_report().ok_or(Error::Misuse { reason: "binding check needs an SNP HCL report" })?;
        let mut found = [0u8; 64];
        found.copy_from_slice(&report[SNP_REPORT_DATA]);
        self.check_report_data(provider, &found)
    }
}
