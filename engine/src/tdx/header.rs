//! The DCAP quote header (Intel "TDX DCAP Quoting Library API", Appendix A.3 "Quote Header"; the same
//! 48 bytes in quote versions 4 and 5), as a zero-copy view.
//!
//! ```text
//! 0x00 VERSION u16 (4, 5)        0x02 ATT_KEY_TYPE u16 (2 = ECDSA-256 with P-256)
//! 0x04 TEE_TYPE u32 (0x81 = TDX) 0x08 QE_SVN u16 (reserved in TDX)   0x0A PCE_SVN u16 (reserved in TDX)
//! 0x0C QE_VENDOR_ID [16]         0x1C USER_DATA [20] (first 16 bytes: the QE's platform identifier)
//! ```

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// Size of the quote header.
pub const HEADER_SIZE: usize = 48;
/// ATT_KEY_TYPE 2: ECDSA-256 with the P-256 curve (the only type Intel's TD QE produces).
pub const ATT_KEY_TYPE_ECDSA_P256: u16 = 2;
/// TEE_TYPE of a TD quote.
pub const TEE_TYPE_TDX: u32 = 0x81;
/// Intel's quoting enclave vendor id.
pub const INTEL_QE_VENDOR_ID: [u8; 16] =
    [0x93, 0x9a, 0x72, 0x33, 0xf7, 0x9c, 0x4c, 0xa9, 0x94, 0x0a, 0x0d, 0xb3, 0x95, 0x7f, 0x06, 0x07];

/// The raw header.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned, Debug)]
#[repr(C)]
pub struct RawHeader {
    /// 0x00 VERSION.
    pub version: U16,
    /// 0x02 ATT_KEY_TYPE.
    pub att_key_type: U16,
    /// 0x04 TEE_TYPE.
    pub tee_type: U32,
    /// 0x08 QE_SVN (SGX quotes; reserved in TD quotes).
    pub qe_svn: U16,
    /// 0x0A PCE_SVN (SGX quotes; reserved in TD quotes).
    pub pce_svn: U16,
    /// 0x0C QE_VENDOR_ID.
    pub qe_vendor_id: [u8; 16],
    /// 0x1C USER_DATA.
    pub user_data: [u8; 20],
}

const _: () = assert!(size_of::<RawHeader>() == HEADER_SIZE);
const _: () = assert!(core::mem::offset_of!(RawHeader, tee_type) == 0x04);
const _: () = assert!(core::mem::offset_of!(RawHeader, qe_vendor_id) == 0x0C);
const _: () = assert!(core::mem::offset_of!(RawHeader, user_data) == 0x1C);

/// A header view.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a>(pub(crate) &'a RawHeader);

impl<'a> Header<'a> {
    /// VERSION (4 or 5 after parsing).
    pub fn version(&self) -> u16 {
        self.0.version.get()
    }
    /// ATT_KEY_TYPE (2 after parsing).
    pub fn att_key_type(&self) -> u16 {
        self.0.att_key_type.get()
    }
    /// TEE_TYPE (0x81 after parsing).
    pub fn tee_type(&self) -> u32 {
        self.0.tee_type.get()
    }
    /// QE_SVN field (reserved for TDX).
    pub fn qe_svn(&self) -> u16 {
        self.0.qe_svn.get()
    }
    /// PCE_SVN field (reserved for TDX).
    pub fn pce_svn(&self) -> u16 {
        self.0.pce_svn.get()
    }
    /// QE_VENDOR_ID (Intel's after parsing).
    pub fn qe_vendor_id(&self) -> &'a [u8; 16] {
        &self.0.qe_vendor_id
    }
    /// USER_DATA.
    pub fn user_data(&self) -> &'a [u8; 20] {
        &self.0.user_data
    }
    /// The raw fields.
    pub fn raw(&self) -> &'a RawHeader {
        self.0
    }
}
