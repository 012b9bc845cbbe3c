//! The SEV-SNP `ATTESTATION_REPORT` (AMD SEV-SNP ABI specification 56860, §7.3 Table 22 "ATTESTATION_REPORT
//! Structure", and Table 23 for the signature), as a zero-copy view over the received bytes.
//!
//! Layout facts (little-endian, 0x4A0 bytes):
//!
//! ```text
//! 0x000 VERSION            0x004 GUEST_SVN        0x008 POLICY           0x010 FAMILY_ID[16]
//! 0x020 IMAGE_ID[16]       0x030 VMPL             0x034 SIGNATURE_ALGO   0x038 CURRENT_TCB
//! 0x040 PLATFORM_INFO      0x048 key info (AUTHOR_KEY_EN b0, MASK_CHIP_KEY b1, SIGNING_KEY b4:2)
//! 0x04C reserved           0x050 REPORT_DATA[64]  0x090 MEASUREMENT[48]  0x0C0 HOST_DATA[32]
//! 0x0E0 ID_KEY_DIGEST[48]  0x110 AUTHOR_KEY_DIGEST[48]                   0x140 REPORT_ID[32]
//! 0x160 REPORT_ID_MA[32]   0x180 REPORTED_TCB     0x188 CPUID_FAM/MOD/STEP (v3+; reserved in v2)
//! 0x18B reserved[21]       0x1A0 CHIP_ID[64]      0x1E0 COMMITTED_TCB    0x1E8 CURRENT_BUILD/MINOR/MAJOR
//! 0x1EB reserved           0x1EC COMMITTED_BUILD/MINOR/MAJOR             0x1EF reserved
//! 0x1F0 LAUNCH_TCB         0x1F8 LAUNCH_MIT_VECTOR (v5)                  0x200 CURRENT_MIT_VECTOR (v5)
//! 0x208 reserved[152]      0x2A0 SIGNATURE: R[72] S[72] (little-endian) reserved[368]
//! ```
//!
//! The signature covers bytes `0..0x2A0` exactly as received ([`Report::signed_bytes`]); nothing is ever
//! re-encoded for verification.

use crate::amd::Product;
use crate::error::{CertRole, Error};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// Size of an attestation report.
pub const REPORT_SIZE: usize = 0x4A0;
/// End of the signed region.
pub const SIGNED_LEN: usize = 0x2A0;

/// The raw report layout. Every reserved range is named by its offset.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RawReport {
    /// 0x000 VERSION.
    pub version: U32,
    /// 0x004 GUEST_SVN.
    pub guest_svn: U32,
    /// 0x008 POLICY (guest policy).
    pub policy: U64,
    /// 0x010 FAMILY_ID.
    pub family_id: [u8; 16],
    /// 0x020 IMAGE_ID.
    pub image_id: [u8; 16],
    /// 0x030 VMPL.
    pub vmpl: U32,
    /// 0x034 SIGNATURE_ALGO.
    pub signature_algo: U32,
    /// 0x038 CURRENT_TCB.
    pub current_tcb: U64,
    /// 0x040 PLATFORM_INFO.
    pub platform_info: U64,
    /// 0x048 AUTHOR_KEY_EN (bit 0), MASK_CHIP_KEY (bit 1), SIGNING_KEY (bits 4:2), reserved (31:5).
    pub key_info: U32,
    /// 0x04C reserved.
    pub reserved_0x04c: [u8; 4],
    /// 0x050 REPORT_DATA.
    pub report_data: [u8; 64],
    /// 0x090 MEASUREMENT.
    pub measurement: [u8; 48],
    /// 0x0C0 HOST_DATA.
    pub host_data: [u8; 32],
    /// 0x0E0 ID_KEY_DIGEST.
    pub id_key_digest: [u8; 48],
    /// 0x110 AUTHOR_KEY_DIGEST.
    pub author_key_digest: [u8; 48],
    /// 0x140 REPORT_ID.
    pub report_id: [u8; 32],
    /// 0x160 REPORT_ID_MA.
    pub report_id_ma: [u8; 32],
    /// 0x180 REPORTED_TCB.
    pub reported_tcb: U64,
    /// 0x188 CPUID_FAM_ID, CPUID_MOD_ID, CPUID_STEP (version 3+; reserved in version 2).
    pub cpuid: [u8; 3],
    /// 0x18B reserved.
    pub reserved_0x18b: [u8; 21],
    /// 0x1A0 CHIP_ID.
    pub chip_id: [u8; 64],
    /// 0x1E0 COMMITTED_TCB.
    pub committed_tcb: U64,
    /// 0x1E8 CURRENT_BUILD, CURRENT_MINOR, CURRENT_MAJOR.
    pub current_version: [u8; 3],
    /// 0x1EB reserved.
    pub reserved_0x1eb: u8,
    /// 0x1EC COMMITTED_BUILD, COMMITTED_MINOR, COMMITTED_MAJOR.
    pub committed_version: [u8; 3],
    /// 0x1EF reserved.
    pub reserved_0x1ef: u8,
    /// 0x1F0 LAUNCH_TCB.
    pub launch_tcb: U64,
    /// 0x1F8 LAUNCH_MIT_VECTOR (version 5; reserved before).
    pub launch_mit_vector: U64,
    /// 0x200 CURRENT_MIT_VECTOR (version 5; reserved before).
    pub current_mit_vector: U64,
    /// 0x208 reserved.
    pub reserved_0x208: [u8; 152],
    /// 0x2A0 signature R, little-endian, 72 bytes (48 significant).
    pub signature_r: [u8; 72],
    /// 0x2E8 signature S, little-endian, 72 bytes (48 significant).
    pub signature_s: [u8; 72],
    /// 0x330 reserved (rest of the 512-byte signature area).
    pub reserved_0x330: [u8; 368],
}

const _: () = assert!(size_of::<RawReport>() == REPORT_SIZE);
const _: () = assert!(core::mem::offset_of!(RawReport, report_data) == 0x50);
const _: () = assert!(core::mem::offset_of!(RawReport, reported_tcb) == 0x180);
const _: () = assert!(core::mem::offset_of!(RawReport, chip_id) == 0x1A0);
const _: () = assert!(core::mem::offset_of!(RawReport, launch_tcb) == 0x1F0);
const _: () = assert!(core::mem::offset_of!(RawReport, signature_r) == SIGNED_LEN);
const _: () = assert!(core::mem::offset_of!(RawReport, signature_s) == 0x2E8);

/// Which key signed the report (SIGNING_KEY, bits 4:2 of offset 0x48).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SigningKey {
    /// The chip's VCEK (0).
    Vcek,
    /// The cloud provider's VLEK (1).
    Vlek,
}

impl SigningKey {
    /// The certificate role that must sign.
    pub fn role(self) -> CertRole {
        match self {
            Self::Vcek => CertRole::Vcek,
            Self::Vlek => CertRole::Vlek,
        }
    }
}

/// Firmware version triple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FirmwareVersion {
    /// Major.
    pub major: u8,
    /// Minor.
    pub minor: u8,
    /// Build.
    pub build: u8,
}

impl core::fmt::Display for FirmwareVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{} build {}", self.major, self.minor, self.build)
    }
}

/// A structurally checked report borrowing from the received bytes. Unverified: its signature has not been
/// checked yet. Reach [`crate::snp::VerifiedReport`] through [`crate::snp::SnpVerifier::verify`].
#[derive(Clone, Copy)]
pub struct Report<'a> {
    bytes: &'a [u8],
    raw: &'a RawReport,
}

impl core::fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Report")
            .field("version", &self.version())
            .field("signing_key", &self.signing_key())
            .field("vmpl", &self.vmpl())
            .finish_non_exhaustive()
    }
}

fn zero(field: &'static str, offset: usize, bytes: &[u8]) -> Result<(), Error> {
    if bytes.iter().all(|b| *b == 0) { Ok(()) } else { Err(Error::ReservedNonZero { field, offset }) }
}

impl<'a> Report<'a> {
    /// Parses exactly one report (0x4A0 bytes): version 2, 3 or 5, SIGNATURE_ALGO 1, a known SIGNING_KEY,
    /// zero reserved fields, and signature components below 2^384.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        if bytes.len() < REPORT_SIZE {
            return Err(Error::Truncated { structure: "ATTESTATION_REPORT", needed: REPORT_SIZE, found: bytes.len() });
        }
        if bytes.len() > REPORT_SIZE {
            return Err(Error::TrailingData { structure: "ATTESTATION_REPORT", extra: bytes.len() - REPORT_SIZE });
        }
        let raw = RawReport::ref_from_bytes(bytes).map_err(|_| Error::Truncated {
            structure: "ATTESTATION_REPORT",
            needed: REPORT_SIZE,
            found: bytes.len(),
        })?;
        let version = raw.version.get();
        if !matches!(version, 2 | 3 | 5) {
            return Err(Error::UnsupportedReportVersion { found: version });
        }
        let algo = raw.signature_algo.get();
        if algo != 1 {
            return Err(Error::UnsupportedReportSignatureAlgorithm { found: algo });
        }
        let key_info = raw.key_info.get();
        let signing_key = (key_info >> 2) & 0b111;
        if signing_key > 1 {
            return Err(Error::UnsupportedSigningKey { found: signing_key });
        }
        if key_info >> 5 != 0 {
            return Err(Error::ReservedNonZero { field: "key info bits 31:5", offset: 0x48 });
        }
        zero("reserved", 0x4C, &raw.reserved_0x04c)?;
        if version < 3 {
            zero("CPUID (reserved before version 3)", 0x188, &raw.cpuid)?;
        }
        zero("reserved", 0x18B, &raw.reserved_0x18b)?;
        zero("reserved", 0x1EB, &[raw.reserved_0x1eb])?;
        zero("reserved", 0x1EF, &[raw.reserved_0x1ef])?;
        if version < 5 {
            zero("mitigation vectors (reserved before version 5)", 0x1F8, &bytes[0x1F8..0x208])?;
        }
        zero("reserved", 0x208, &raw.reserved_0x208)?;
        zero("signature R above 384 bits", 0x2A0 + 48, &raw.signature_r[48..])?;
        zero("signature S above 384 bits", 0x2E8 + 48, &raw.signature_s[48..])?;
        zero("signature reserved", 0x330, &raw.reserved_0x330)?;
        Ok(Self { bytes, raw })
    }

    /// The raw layout (every field, including reserved ones).
    pub fn raw(&self) -> &'a RawReport {
        self.raw
    }
    /// All 0x4A0 bytes as received.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// Bytes 0..0x2A0 as received: what the VCEK/VLEK signed.
    pub fn signed_bytes(&self) -> &'a [u8] {
        &self.bytes[..SIGNED_LEN]
    }
    /// VERSION (2, 3 or 5).
    pub fn version(&self) -> u32 {
        self.raw.version.get()
    }
    /// GUEST_SVN.
    pub fn guest_svn(&self) -> u32 {
        self.raw.guest_svn.get()
    }
    /// POLICY.
    pub fn policy(&self) -> GuestPolicy {
        GuestPolicy(self.raw.policy.get())
    }
    /// FAMILY_ID.
    pub fn family_id(&self) -> &'a [u8; 16] {
        &self.raw.family_id
    }
    /// IMAGE_ID.
    pub fn image_id(&self) -> &'a [u8; 16] {
        &self.raw.image_id
    }
    /// VMPL.
    pub fn vmpl(&self) -> u32 {
        self.raw.vmpl.get()
    }
    /// CURRENT_TCB (raw; decode with [`crate::snp::TcbVersion::decode`]).
    pub fn current_tcb(&self) -> u64 {
        self.raw.current_tcb.get()
    }
    /// REPORTED_TCB (raw).
    pub fn reported_tcb(&self) -> u64 {
        self.raw.reported_tcb.get()
    }
    /// COMMITTED_TCB (raw).
    pub fn committed_tcb(&self) -> u64 {
        self.raw.committed_tcb.get()
    }
    /// LAUNCH_TCB (raw).
    pub fn launch_tcb(&self) -> u64 {
        self.raw.launch_tcb.get()
    }
    /// PLATFORM_INFO.
    pub fn platform_info(&self) -> PlatformInfo {
        PlatformInfo(self.raw.platform_info.get())
    }
    /// AUTHOR_KEY_EN.
    pub fn author_key_en(&self) -> bool {
        self.raw.key_info.get() & 1 != 0
    }
    /// MASK_CHIP_KEY: CHIP_ID is zeroed when set.
    pub fn mask_chip_key(&self) -> bool {
        self.raw.key_info.get() & 2 != 0
    }
    /// SIGNING_KEY.
    pub fn signing_key(&self) -> SigningKey {
        if (self.raw.key_info.get() >> 2) & 0b111 == 1 { SigningKey::Vlek } else { SigningKey::Vcek }
    }
    /// REPORT_DATA.
    pub fn report_data(&self) -> &'a [u8; 64] {
        &self.raw.report_data
    }
    /// MEASUREMENT.
    pub fn measurement(&self) -> &'a [u8; 48] {
        &self.raw.measurement
    }
    /// HOST_DATA.
    pub fn host_data(&self) -> &'a [u8; 32] {
        &self.raw.host_data
    }
    /// ID_KEY_DIGEST.
    pub fn id_key_digest(&self) -> &'a [u8; 48] {
        &self.raw.id_key_digest
    }
    /// AUTHOR_KEY_DIGEST.
    pub fn author_key_digest(&self) -> &'a [u8; 48] {
        &self.raw.author_key_digest
    }
    /// REPORT_ID.
    pub fn report_id(&self) -> &'a [u8; 32] {
        &self.raw.report_id
    }
    /// REPORT_ID_MA.
    pub fn report_id_ma(&self) -> &'a [u8; 32] {
        &self.raw.report_id_ma
    }
    /// CHIP_ID.
    pub fn chip_id(&self) -> &'a [u8; 64] {
        &self.raw.chip_id
    }
    /// CPUID family, model and stepping (version 3 and later).
    pub fn cpuid(&self) -> Option<(u8, u8, u8)> {
        (self.version() >= 3).then(|| (self.raw.cpuid[0], self.raw.cpuid[1], self.raw.cpuid[2]))
    }
    /// The product named by the CPUID fields (version 3 and later).
    pub fn cpuid_product(&self) -> Option<Result<Product, Error>> {
        self.cpuid().map(|(fam, model, _)| Product::from_cpuid(fam, model))
    }
    /// CURRENT_MAJOR/MINOR/BUILD.
    pub fn current_version(&self) -> FirmwareVersion {
        let v = self.raw.current_version;
        FirmwareVersion { build: v[0], minor: v[1], major: v[2] }
    }
    /// COMMITTED_MAJOR/MINOR/BUILD.
    pub fn committed_version(&self) -> FirmwareVersion {
        let v = self.raw.committed_version;
        FirmwareVersion { build: v[0], minor: v[1], major: v[2] }
    }
    /// LAUNCH_MIT_VECTOR (version 5).
    pub fn launch_mit_vector(&self) -> Option<u64> {
        (self.version() >= 5).then(|| self.raw.launch_mit_vector.get())
    }
    /// CURRENT_MIT_VECTOR (version 5).
    pub fn current_mit_vector(&self) -> Option<u64> {
        (self.version() >= 5).then(|| self.raw.current_mit_vector.get())
    }
    /// The signature as big-endian fixed-width `r ‖ s` (96 bytes), ready for an ECDSA verifier.
    pub fn signature_fixed(&self) -> [u8; 96] {
        let mut out = [0u8; 96];
        // Upper bytes were checked to be zero in `parse`.
        crate::crypto::le72_to_be48(&self.raw.signature_r, &mut out[..48]);
        crate::crypto::le72_to_be48(&self.raw.signature_s, &mut out[48..]);
        out
    }
}

/// The guest POLICY field (SNP ABI spec Table 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestPolicy(pub u64);

impl GuestPolicy {
    /// ABI_MINOR (bits 7:0).
    pub fn abi_minor(self) -> u8 {
        self.0 as u8
    }
    /// ABI_MAJOR (bits 15:8).
    pub fn abi_major(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// SMT allowed (bit 16).
    pub fn smt(self) -> bool {
        self.0 & (1 << 16) != 0
    }
    /// Migration agent allowed (bit 18).
    pub fn migrate_ma(self) -> bool {
        self.0 & (1 << 18) != 0
    }
    /// Debugging allowed (bit 19).
    pub fn debug(self) -> bool {
        self.0 & (1 << 19) != 0
    }
    /// Single socket required (bit 20).
    pub fn single_socket(self) -> bool {
        self.0 & (1 << 20) != 0
    }
    /// CXL allowed (bit 21).
    pub fn cxl_allow(self) -> bool {
        self.0 & (1 << 21) != 0
    }
    /// AES-256-XTS memory encryption required (bit 22).
    pub fn mem_aes_256_xts(self) -> bool {
        self.0 & (1 << 22) != 0
    }
    /// RAPL must be disabled (bit 23).
    pub fn rapl_dis(self) -> bool {
        self.0 & (1 << 23) != 0
    }
    /// Ciphertext hiding required (bit 24).
    pub fn ciphertext_hiding(self) -> bool {
        self.0 & (1 << 24) != 0
    }
    /// Page swap disabled (bit 25).
    pub fn page_swap_disable(self) -> bool {
        self.0 & (1 << 25) != 0
    }
}

/// PLATFORM_INFO (SNP ABI spec Table 24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformInfo(pub u64);

impl PlatformInfo {
    /// SMT enabled on the platform (bit 0).
    pub fn smt_enabled(self) -> bool {
        self.0 & 1 != 0
    }
    /// TSME enabled (bit 1).
    pub fn tsme_enabled(self) -> bool {
        self.0 & 2 != 0
    }
    /// ECC memory in use (bit 2).
    pub fn ecc_enabled(self) -> bool {
        self.0 & 4 != 0
    }
    /// RAPL disabled (bit 3).
    pub fn rapl_disabled(self) -> bool {
        self.0 & 8 != 0
    }
    /// Ciphertext hiding enabled (bit 4).
    pub fn ciphertext_hiding_enabled(self) -> bool {
        self.0 & 16 != 0
    }
    /// Alias check complete (bit 5).
    pub fn alias_check_complete(self) -> bool {
        self.0 & 32 != 0
    }
}
