//! TDREPORT_STRUCT (Intel TDX module ABI, "TDREPORT_STRUCT"): the 1024-byte report `TDG.MR.REPORT` returns
//! inside a TD — what `/dev/tdx_guest` (`TDX_CMD_GET_REPORT0`) hands to user space and what Azure's HCL
//! report carries for a TD. It is MAC'ed with a key of the platform, so it proves nothing outside it; a
//! quoting enclave turns it into a signed TD quote. The attester reads RTMRs back from it; Azure's quote
//! provider is given it.
//!
//! ```text
//! 0x000 REPORTMACSTRUCT 256: REPORTTYPE 4 (type 0x81 = TDX, subtype, version, reserved) · reserved 12 ·
//!       CPUSVN 16 · TEE_TCB_INFO_HASH 48 · TEE_INFO_HASH 48 · REPORTDATA 64 · reserved 32 · MAC 32
//! 0x100 TEE_TCB_INFO 239: VALID 8 · TEE_TCB_SVN 16 · MRSEAM 48 · MRSIGNERSEAM 48 · ATTRIBUTES 8 ·
//!       TEE_TCB_SVN2 16 · reserved 95
//! 0x1EF reserved 17
//! 0x200 TDINFO 512: ATTRIBUTES 8 · XFAM 8 · MRTD 48 · MRCONFIGID 48 · MROWNER 48 · MROWNERCONFIG 48 ·
//!       RTMR0..3 4×48 · SERVTD_HASH 48 · reserved 64
//! ```

use crate::error::Error;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Size of a TDREPORT_STRUCT.
pub const TDREPORT_SIZE: usize = 1024;
/// REPORTTYPE.TYPE of a TDX report.
pub const TDREPORT_TYPE_TDX: u8 = 0x81;

/// The raw TDREPORT_STRUCT.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, PartialEq, Eq)]
#[repr(C)]
pub struct RawTdReportStruct {
    /// 0x000 REPORTTYPE: type, subtype, version, reserved.
    pub report_type: [u8; 4],
    /// 0x004 reserved.
    _reserved_0x004: [u8; 12],
    /// 0x010 CPUSVN.
    pub cpu_svn: [u8; 16],
    /// 0x020 TEE_TCB_INFO_HASH: SHA-384 of TEE_TCB_INFO.
    pub tee_tcb_info_hash: [u8; 48],
    /// 0x050 TEE_INFO_HASH: SHA-384 of TDINFO.
    pub tee_info_hash: [u8; 48],
    /// 0x080 REPORTDATA.
    pub report_data: [u8; 64],
    /// 0x0C0 reserved.
    _reserved_0x0c0: [u8; 32],
    /// 0x0E0 MAC over REPORTMACSTRUCT (platform key).
    pub mac: [u8; 32],
    /// 0x100 TEE_TCB_INFO.VALID.
    pub tcb_valid: [u8; 8],
    /// 0x108 TEE_TCB_SVN.
    pub tee_tcb_svn: [u8; 16],
    /// 0x118 MRSEAM.
    pub mr_seam: [u8; 48],
    /// 0x148 MRSIGNERSEAM.
    pub mr_signer_seam: [u8; 48],
    /// 0x178 SEAM ATTRIBUTES.
    pub seam_attributes: [u8; 8],
    /// 0x180 TEE_TCB_SVN2 (TDX 1.5).
    pub tee_tcb_svn2: [u8; 16],
    /// 0x190 reserved (TEE_TCB_INFO's and after it).
    _reserved_0x190: [u8; 112],
    /// 0x200 TDINFO.ATTRIBUTES.
    pub td_attributes: [u8; 8],
    /// 0x208 XFAM.
    pub xfam: [u8; 8],
    /// 0x210 MRTD.
    pub mr_td: [u8; 48],
    /// 0x240 MRCONFIGID.
    pub mr_config_id: [u8; 48],
    /// 0x270 MROWNER.
    pub mr_owner: [u8; 48],
    /// 0x2A0 MROWNERCONFIG.
    pub mr_owner_config: [u8; 48],
    /// 0x2D0 RTMR0..3.
    pub rtmr: [[u8; 48]; 4],
    /// 0x390 SERVTD_HASH.
    pub servtd_hash: [u8; 48],
    /// 0x3C0 reserved.
    _reserved_0x3c0: [u8; 64],
}

const _: () = assert!(size_of::<RawTdReportStruct>() == TDREPORT_SIZE);
const _: () = assert!(core::mem::offset_of!(RawTdReportStruct, report_data) == 128);
const _: () = assert!(core::mem::offset_of!(RawTdReportStruct, td_attributes) == 512);
const _: () = assert!(core::mem::offset_of!(RawTdReportStruct, mr_td) == 528);
const _: () = assert!(core::mem::offset_of!(RawTdReportStruct, rtmr) == 0x2D0);

impl RawTdReportStruct {
    /// A view of `bytes` (exactly [`TDREPORT_SIZE`]) whose REPORTTYPE is TDX.
    pub fn parse(bytes: &[u8]) -> Result<&Self, Error> {
        if bytes.len() < TDREPORT_SIZE {
            return Err(Error::Truncated { structure: "TDREPORT_STRUCT", needed: TDREPORT_SIZE, found: bytes.len() });
        }
        if bytes.len() > TDREPORT_SIZE {
            return Err(Error::TrailingData { structure: "TDREPORT_STRUCT", extra: bytes.len() - TDREPORT_SIZE });
        }
        let raw = Self::ref_from_bytes(bytes).map_err(|_| Error::Truncated {
            structure: "TDREPORT_STRUCT",
            needed: TDREPORT_SIZE,
            found: bytes.len(),
        })?;
        if raw.report_type[0] != TDREPORT_TYPE_TDX {
            return Err(Error::TdxQuote {
                structure: "TDREPORT_STRUCT",
                offset: 0,
                reason: "REPORTTYPE is not TDX (0x81)",
            });
        }
        Ok(raw)
    }

    /// TDATTRIBUTES as a number.
    pub fn td_attributes(&self) -> u64 {
        u64::from_le_bytes(self.td_attributes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_type() {
        let mut b = vec![0u8; TDREPORT_SIZE];
        assert!(RawTdReportStruct::parse(&b).is_err(), "type 0 is not TDX");
        b[0] = TDREPORT_TYPE_TDX;
        b[0x2D0] = 7;
        let r = RawTdReportStruct::parse(&b).unwrap();
        assert_eq!(r.rtmr[0][0], 7);
        assert!(matches!(RawTdReportStruct::parse(&b[..1023]), Err(Error::Truncated { .. })));
        b.push(0);
        assert!(matches!(RawTdReportStruct::parse(&b), Err(Error::TrailingData { .. })));
    }
}
