//! The QE report: an SGX `REPORT_BODY` (Intel SGX Developer Reference, "sgx_report_body_t"; 384 bytes) of
//! Intel's TD quoting enclave, signed by the PCK key. Zero-copy view.
//!
//! ```text
//! 0x000 CPUSVN [16]      0x010 MISCSELECT u32   0x014 reserved [12]    0x020 ISVEXTPRODID [16]
//! 0x030 ATTRIBUTES [16]  0x040 MRENCLAVE [32]   0x060 reserved [32]    0x080 MRSIGNER [32]
//! 0x0A0 reserved [32]    0x0C0 CONFIGID [64]    0x100 ISVPRODID u16    0x102 ISVSVN u16
//! 0x104 CONFIGSVN u16    0x106 reserved [42]    0x130 ISVFAMILYID [16] 0x140 REPORTDATA [64]
//! ```

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// Size of an SGX report body.
pub const QE_REPORT_SIZE: usize = 384;

/// The raw SGX report body.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned, Debug)]
#[repr(C)]
pub struct RawQeReport {
    /// 0x000 CPUSVN.
    pub cpu_svn: [u8; 16],
    /// 0x010 MISCSELECT.
    pub misc_select: U32,
    /// 0x014 reserved.
    pub reserved_0x014: [u8; 12],
    /// 0x020 ISVEXTPRODID.
    pub isv_ext_prod_id: [u8; 16],
    /// 0x030 ATTRIBUTES (flags ‖ XFRM).
    pub attributes: [u8; 16],
    /// 0x040 MRENCLAVE.
    pub mr_enclave: [u8; 32],
    /// 0x060 reserved.
    pub reserved_0x060: [u8; 32],
    /// 0x080 MRSIGNER.
    pub mr_signer: [u8; 32],
    /// 0x0A0 reserved.
    pub reserved_0x0a0: [u8; 32],
    /// 0x0C0 CONFIGID.
    pub config_id: [u8; 64],
    /// 0x100 ISVPRODID.
    pub isv_prod_id: U16,
    /// 0x102 ISVSVN.
    pub isv_svn: U16,
    /// 0x104 CONFIGSVN.
    pub config_svn: U16,
    /// 0x106 reserved.
    pub reserved_0x106: [u8; 42],
    /// 0x130 ISVFAMILYID.
    pub isv_family_id: [u8; 16],
    /// 0x140 REPORTDATA.
    pub report_data: [u8; 64],
}

const _: () = assert!(size_of::<RawQeReport>() == QE_REPORT_SIZE);
const _: () = assert!(core::mem::offset_of!(RawQeReport, mr_signer) == 0x80);
const _: () = assert!(core::mem::offset_of!(RawQeReport, isv_prod_id) == 0x100);
const _: () = assert!(core::mem::offset_of!(RawQeReport, report_data) == 0x140);

/// A QE report view.
#[derive(Clone, Copy, Debug)]
pub struct QeReport<'a> {
    pub(crate) raw: &'a RawQeReport,
    pub(crate) bytes: &'a [u8],
}

impl<'a> QeReport<'a> {
    /// The 384 bytes as received (what the PCK key signed).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// CPUSVN.
    pub fn cpu_svn(&self) -> &'a [u8; 16] {
        &self.raw.cpu_svn
    }
    /// MISCSELECT.
    pub fn misc_select(&self) -> u32 {
        self.raw.misc_select.get()
    }
    /// ATTRIBUTES.
    pub fn attributes(&self) -> &'a [u8; 16] {
        &self.raw.attributes
    }
    /// MRENCLAVE.
    pub fn mr_enclave(&self) -> &'a [u8; 32] {
        &self.raw.mr_enclave
    }
    /// MRSIGNER.
    pub fn mr_signer(&self) -> &'a [u8; 32] {
        &self.raw.mr_signer
    }
    /// ISVPRODID.
    pub fn isv_prod_id(&self) -> u16 {
        self.raw.isv_prod_id.get()
    }
    /// ISVSVN.
    pub fn isv_svn(&self) -> u16 {
        self.raw.isv_svn.get()
    }
    /// REPORTDATA.
    pub fn report_data(&self) -> &'a [u8; 64] {
        &self.raw.report_data
    }
}
