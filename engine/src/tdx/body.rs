//! The TD report body of a TD quote (Intel "TDX DCAP Quoting Library API", A.3.2 "TD Quote Body" for TDX
//! 1.0, and the TDX 1.5 body of quote version 5), as zero-copy views.
//!
//! ```text
//! TDX 1.0, 584 bytes                              TDX 1.5, 648 bytes = TDX 1.0 ‖
//! 0x000 TEE_TCB_SVN [16]   0x010 MRSEAM [48]       0x248 TEE_TCB_SVN2 [16]
//! 0x040 MRSIGNERSEAM [48]  0x070 SEAMATTRIBUTES 8  0x258 MRSERVICETD [48]
//! 0x078 TDATTRIBUTES 8     0x080 XFAM 8
//! 0x088 MRTD [48]          0x0B8 MRCONFIGID [48]
//! 0x0E8 MROWNER [48]       0x118 MROWNERCONFIG [48]
//! 0x148 RTMR0..3 [4×48]    0x208 REPORTDATA [64]
//! ```
//!
//! TEE_TCB_SVN byte 0 is the TDX module's ISVSVN, byte 1 its major version (which selects the module identity
//! `TDX_<major>` in TCB Info v3); the other bytes are TDX TCB components. TDATTRIBUTES bit 0 is DEBUG,
//! bit 28 SEPT_VE_DISABLE, bit 29 MIGRATABLE, bit 30 PKS, bit 31 KL, bit 63 PERFMON (TDX module ABI spec,
//! "ATTRIBUTES").

use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// Size of a TDX 1.0 TD report body.
pub const TD_REPORT10_SIZE: usize = 584;
/// Size of a TDX 1.5 TD report body.
pub const TD_REPORT15_SIZE: usize = 648;

/// TDATTRIBUTES bit 0: the TD is debuggable (the host can read and write its memory and state).
pub const TD_ATTRIBUTE_DEBUG: u64 = 1 << 0;
/// TDATTRIBUTES bit 28: EPT violations are not converted to #VE (SEPT_VE_DISABLE).
pub const TD_ATTRIBUTE_SEPT_VE_DISABLE: u64 = 1 << 28;
/// TDATTRIBUTES bit 29: the TD may be migrated.
pub const TD_ATTRIBUTE_MIGRATABLE: u64 = 1 << 29;
/// TDATTRIBUTES bit 30: protection keys for supervisor pages (PKS) enabled; allowed.
pub const TD_ATTRIBUTE_PKS: u64 = 1 << 30;
/// TDATTRIBUTES bit 31: key locker (KL) enabled; allowed.
pub const TD_ATTRIBUTE_KL: u64 = 1 << 31;
/// TDATTRIBUTES bit 63: performance monitoring (PERFMON) enabled; allowed.
pub const TD_ATTRIBUTE_PERFMON: u64 = 1 << 63;
/// TDATTRIBUTES bits 1–7: the rest of the "TUD" (TD under debug) group. Reserved in TDX 1.0/1.5 and, being
/// in the debug group, any of them set means the TD is under debug.
pub const TD_ATTRIBUTES_TUD_OTHER: u64 = 0xFE;
/// The reserved TDATTRIBUTES bits outside the TUD group: "SEC" bits 8–27 and "OTHER" bits 32–62.
pub const TD_ATTRIBUTES_RESERVED: u64 = 0x0FFF_FF00 | 0x7FFF_FFFF_0000_0000;

// Every TDATTRIBUTES bit belongs to exactly one of the groups the policy judges.
const _: () = {
    let groups = [
        TD_ATTRIBUTE_DEBUG,
        TD_ATTRIBUTES_TUD_OTHER,
        TD_ATTRIBUTES_RESERVED,
        TD_ATTRIBUTE_SEPT_VE_DISABLE,
        TD_ATTRIBUTE_MIGRATABLE,
        TD_ATTRIBUTE_PKS,
        TD_ATTRIBUTE_KL,
        TD_ATTRIBUTE_PERFMON,
    ];
    let mut all = 0u64;
    let mut i = 0;
    while i < groups.len() {
        assert!(all & groups[i] == 0, "TDATTRIBUTES groups overlap");
        all |= groups[i];
        i += 1;
    }
    assert!(all == u64::MAX, "a TDATTRIBUTES bit belongs to no group");
};

/// The raw TDX 1.0 body.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned, Debug)]
#[repr(C)]
pub struct RawTdReport10 {
    /// 0x000 TEE_TCB_SVN.
    pub tee_tcb_svn: [u8; 16],
    /// 0x010 MRSEAM: measurement of the TDX module.
    pub mr_seam: [u8; 48],
    /// 0x040 MRSIGNERSEAM: signer of the TDX module (zero for Intel's).
    pub mr_signer_seam: [u8; 48],
    /// 0x070 SEAMATTRIBUTES.
    pub seam_attributes: [u8; 8],
    /// 0x078 TDATTRIBUTES.
    pub td_attributes: [u8; 8],
    /// 0x080 XFAM.
    pub xfam: [u8; 8],
    /// 0x088 MRTD: the TD's build-time measurement.
    pub mr_td: [u8; 48],
    /// 0x0B8 MRCONFIGID.
    pub mr_config_id: [u8; 48],
    /// 0x0E8 MROWNER.
    pub mr_owner: [u8; 48],
    /// 0x118 MROWNERCONFIG.
    pub mr_owner_config: [u8; 48],
    /// 0x148 RTMR0..RTMR3.
    pub rtmr: [[u8; 48]; 4],
    /// 0x208 REPORTDATA.
    pub report_data: [u8; 64],
}

const _: () = assert!(size_of::<RawTdReport10>() == TD_REPORT10_SIZE);
const _: () = assert!(core::mem::offset_of!(RawTdReport10, mr_td) == 0x88);
const _: () = assert!(core::mem::offset_of!(RawTdReport10, rtmr) == 0x148);
const _: () = assert!(core::mem::offset_of!(RawTdReport10, report_data) == 0x208);

/// The raw TDX 1.5 body.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned, Debug)]
#[repr(C)]
pub struct RawTdReport15 {
    /// 0x000 the TDX 1.0 fields.
    pub base: RawTdReport10,
    /// 0x248 TEE_TCB_SVN2: the TCB of the TDX module currently running (after TD-preserving updates).
    pub tee_tcb_svn2: [u8; 16],
    /// 0x258 MRSERVICETD: hash of the service TDs bound to this TD (zero when none).
    pub mr_service_td: [u8; 48],
}

const _: () = assert!(size_of::<RawTdReport15>() == TD_REPORT15_SIZE);
const _: () = assert!(core::mem::offset_of!(RawTdReport15, tee_tcb_svn2) == TD_REPORT10_SIZE);

/// The body's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// TDX 1.0 (quote v4, or v5 body type 2).
    Tdx10,
    /// TDX 1.5 (quote v5 body type 3).
    Tdx15,
}

/// A TD report body view (either kind); the accessors of the 1.5 fields return `None` for 1.0 bodies.
#[derive(Clone, Copy, Debug)]
pub struct TdReport<'a> {
    pub(crate) base: &'a RawTdReport10,
    pub(crate) ext: Option<&'a RawTdReport15>,
}

fn u64_le(b: [u8; 8]) -> u64 {
    u64::from_le_bytes(b)
}

impl<'a> TdReport<'a> {
    /// The body's kind.
    pub fn kind(&self) -> BodyKind {
        if self.ext.is_some() { BodyKind::Tdx15 } else { BodyKind::Tdx10 }
    }
    /// TEE_TCB_SVN.
    pub fn tee_tcb_svn(&self) -> &'a [u8; 16] {
        &self.base.tee_tcb_svn
    }
    /// MRSEAM.
    pub fn mr_seam(&self) -> &'a [u8; 48] {
        &self.base.mr_seam
    }
    /// MRSIGNERSEAM.
    pub fn mr_signer_seam(&self) -> &'a [u8; 48] {
        &self.base.mr_signer_seam
    }
    /// SEAMATTRIBUTES as bytes.
    pub fn seam_attributes(&self) -> &'a [u8; 8] {
        &self.base.seam_attributes
    }
    /// TDATTRIBUTES as a little-endian integer.
    pub fn td_attributes(&self) -> u64 {
        u64_le(self.base.td_attributes)
    }
    /// XFAM as a little-endian integer.
    pub fn xfam(&self) -> u64 {
        u64_le(self.base.xfam)
    }
    /// MRTD.
    pub fn mr_td(&self) -> &'a [u8; 48] {
        &self.base.mr_td
    }
    /// MRCONFIGID.
    pub fn mr_config_id(&self) -> &'a [u8; 48] {
        &self.base.mr_config_id
    }
    /// MROWNER.
    pub fn mr_owner(&self) -> &'a [u8; 48] {
        &self.base.mr_owner
    }
    /// MROWNERCONFIG.
    pub fn mr_owner_config(&self) -> &'a [u8; 48] {
        &self.base.mr_owner_config
    }
    /// RTMR0..RTMR3.
    pub fn rtmrs(&self) -> &'a [[u8; 48]; 4] {
        &self.base.rtmr
    }
    /// REPORTDATA.
    pub fn report_data(&self) -> &'a [u8; 64] {
        &self.base.report_data
    }
    /// TEE_TCB_SVN2 (TDX 1.5 only).
    pub fn tee_tcb_svn2(&self) -> Option<&'a [u8; 16]> {
        self.ext.map(|e| &e.tee_tcb_svn2)
    }
    /// MRSERVICETD (TDX 1.5 only).
    pub fn mr_service_td(&self) -> Option<&'a [u8; 48]> {
        self.ext.map(|e| &e.mr_service_td)
    }
    /// Whether the DEBUG attribute is set.
    pub fn is_debug(&self) -> bool {
        self.td_attributes() & TD_ATTRIBUTE_DEBUG != 0
    }
}
