//! Synthetic SEV-SNP ATTESTATION_REPORT structures (AMD SEV-SNP ABI spec 56860, little-endian).

use crate::leaf::Leaf;
use crate::pki::SigningKeyKind;

/// Size of an ATTESTATION_REPORT.
pub const REPORT_LEN: usize = 0x4A0;
/// Number of leading bytes covered by the signature.
pub const SIGNED_LEN: usize = 0x2A0;
/// Offset of the signature (R at 0x2A0, S at 0x2E8, 72 little-endian bytes each).
pub const SIGNATURE_OFFSET: usize = 0x2A0;

/// Builds an ATTESTATION_REPORT byte by byte. Every setter writes its field at the ABI
/// offset, whatever the version, so a test can also produce non-conforming reports (e.g. a
/// CPUID in a version 2 report).
///
/// Defaults: version 3, policy `0x30000` (reserved bit 17 and SMT allowed), signature
/// algorithm 1 (ECDSA P-384 with SHA-384), everything else zero.
#[derive(Clone, Debug)]
pub struct ReportBuilder {
    bytes: [u8; REPORT_LEN],
    /// CPUID written at build time if the version is 3 or later (set by `for_leaf`).
    auto_cpuid: Option<[u8; 3]>,
}

impl Default for ReportBuilder {
    fn default() -> Self {
        ReportBuilder { bytes: [0; REPORT_LEN], auto_cpuid: None }.version(3).policy(0x3_0000).signature_algo(1)
    }
}

impl ReportBuilder {
    /// Same as `ReportBuilder::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A report consistent with `leaf`: all four TCB fields set to `leaf.tcb` (encoded for its
    /// product), CHIP_ID from its hwID, SIGNING_KEY from its kind, and — if the final version
    /// is 3 or later and [`ReportBuilder::cpuid`] is not called — the product's CPUID
    /// ([`crate::Product::cpuid`]).
    pub fn for_leaf(leaf: &Leaf) -> Self {
        let tcb = leaf.tcb.encode(leaf.product);
        let (family, model, stepping) = leaf.product.cpuid();
        let mut builder = ReportBuilder::new()
            .current_tcb(tcb)
            .reported_tcb(tcb)
            .committed_tcb(tcb)
            .launch_tcb(tcb)
            .chip_id(leaf.chip_id())
            .signing_key(leaf.kind);
        builder.auto_cpuid = Some([family, model, stepping]);
        builder
    }

    /// Writes `data` at `offset` (escape hatch for reserved bytes and malformed reports).
    ///
    /// # Panics
    /// If the bytes do not fit in the report.
    pub fn raw(mut self, offset: usize, data: &[u8]) -> Self {
        self.bytes[offset..offset + data.len()].copy_from_slice(data);
        self
    }

    fn u32_at(self, offset: usize, value: u32) -> Self {
        self.raw(offset, &value.to_le_bytes())
    }

    fn u64_at(self, offset: usize, value: u64) -> Self {
        self.raw(offset, &value.to_le_bytes())
    }

    fn key_info(&self) -> u32 {
        u32::from_le_bytes(self.bytes[0x48..0x4C].try_into().expect("4 bytes"))
    }

    /// VERSION (0x00): 2, 3 or 5 in practice.
    pub fn version(self, version: u32) -> Self {
        self.u32_at(0x00, version)
    }

    /// GUEST_SVN (0x04).
    pub fn guest_svn(self, svn: u32) -> Self {
        self.u32_at(0x04, svn)
    }

    /// POLICY (0x08).
    pub fn policy(self, policy: u64) -> Self {
        self.u64_at(0x08, policy)
    }

    /// FAMILY_ID (0x10).
    pub fn family_id(self, id: [u8; 16]) -> Self {
        self.raw(0x10, &id)
    }

    /// IMAGE_ID (0x20).
    pub fn image_id(self, id: [u8; 16]) -> Self {
        self.raw(0x20, &id)
    }

    /// VMPL (0x30).
    pub fn vmpl(self, vmpl: u32) -> Self {
        self.u32_at(0x30, vmpl)
    }

    /// SIGNATURE_ALGO (0x34): 1 is ECDSA P-384 with SHA-384.
    pub fn signature_algo(self, algo: u32) -> Self {
        self.u32_at(0x34, algo)
    }

    /// CURRENT_TCB (0x38).
    pub fn current_tcb(self, tcb: u64) -> Self {
        self.u64_at(0x38, tcb)
    }

    /// PLATFORM_INFO (0x40).
    pub fn platform_info(self, info: u64) -> Self {
        self.u64_at(0x40, info)
    }

    /// The whole u32 at 0x48 (AUTHOR_KEY_EN bit 0, MASK_CHIP_KEY bit 1, SIGNING_KEY bits 4:2).
    pub fn key_info_raw(self, value: u32) -> Self {
        self.u32_at(0x48, value)
    }

    /// AUTHOR_KEY_EN (bit 0 of 0x48).
    pub fn author_key_en(self, enabled: bool) -> Self {
        let v = (self.key_info() & !1) | u32::from(enabled);
        self.u32_at(0x48, v)
    }

    /// MASK_CHIP_KEY (bit 1 of 0x48).
    pub fn mask_chip_key(self, masked: bool) -> Self {
        let v = (self.key_info() & !2) | (u32::from(masked) << 1);
        self.u32_at(0x48, v)
    }

    /// SIGNING_KEY (bits 4:2 of 0x48): 0 VCEK, 1 VLEK, 7 none.
    pub fn signing_key(self, kind: SigningKeyKind) -> Self {
        self.signing_key_raw(kind.report_value())
    }

    /// SIGNING_KEY from its raw 3-bit value (only the low 3 bits are used).
    pub fn signing_key_raw(self, value: u8) -> Self {
        let v = (self.key_info() & !0x1C) | (u32::from(value & 7) << 2);
        self.u32_at(0x48, v)
    }

    /// REPORT_DATA (0x50).
    pub fn report_data(self, data: [u8; 64]) -> Self {
        self.raw(0x50, &data)
    }

    /// MEASUREMENT (0x90).
    pub fn measurement(self, measurement: [u8; 48]) -> Self {
        self.raw(0x90, &measurement)
    }

    /// HOST_DATA (0xC0).
    pub fn host_data(self, data: [u8; 32]) -> Self {
        self.raw(0xC0, &data)
    }

    /// ID_KEY_DIGEST (0xE0).
    pub fn id_key_digest(self, digest: [u8; 48]) -> Self {
        self.raw(0xE0, &digest)
    }

    /// AUTHOR_KEY_DIGEST (0x110).
    pub fn author_key_digest(self, digest: [u8; 48]) -> Self {
        self.raw(0x110, &digest)
    }

    /// REPORT_ID (0x140).
    pub fn report_id(self, id: [u8; 32]) -> Self {
        self.raw(0x140, &id)
    }

    /// REPORT_ID_MA (0x160).
    pub fn report_id_ma(self, id: [u8; 32]) -> Self {
        self.raw(0x160, &id)
    }

    /// REPORTED_TCB (0x180).
    pub fn reported_tcb(self, tcb: u64) -> Self {
        self.u64_at(0x180, tcb)
    }

    /// CPUID_FAM_ID, CPUID_MOD_ID, CPUID_STEP (0x188..0x18A; defined from version 3).
    pub fn cpuid(mut self, family: u8, model: u8, stepping: u8) -> Self {
        self.auto_cpuid = None;
        self.raw(0x188, &[family, model, stepping])
    }

    /// CHIP_ID (0x1A0).
    pub fn chip_id(self, id: [u8; 64]) -> Self {
        self.raw(0x1A0, &id)
    }

    /// COMMITTED_TCB (0x1E0).
    pub fn committed_tcb(self, tcb: u64) -> Self {
        self.u64_at(0x1E0, tcb)
    }

    /// CURRENT_BUILD, CURRENT_MINOR, CURRENT_MAJOR (bytes 0x1E8, 0x1E9, 0x1EA).
    pub fn current_version(self, major: u8, minor: u8, build: u8) -> Self {
        self.raw(0x1E8, &[build, minor, major])
    }

    /// COMMITTED_BUILD, COMMITTED_MINOR, COMMITTED_MAJOR (bytes 0x1EC, 0x1ED, 0x1EE).
    pub fn committed_version(self, major: u8, minor: u8, build: u8) -> Self {
        self.raw(0x1EC, &[build, minor, major])
    }

    /// LAUNCH_TCB (0x1F0).
    pub fn launch_tcb(self, tcb: u64) -> Self {
        self.u64_at(0x1F0, tcb)
    }

    /// LAUNCH_MIT_VECTOR (0x1F8; defined from version 5).
    pub fn launch_mit_vector(self, vector: u64) -> Self {
        self.u64_at(0x1F8, vector)
    }

    /// CURRENT_MIT_VECTOR (0x200; defined from version 5).
    pub fn current_mit_vector(self, vector: u64) -> Self {
        self.u64_at(0x200, vector)
    }

    /// The report with an all-zero signature.
    pub fn build_unsigned(&self) -> [u8; REPORT_LEN] {
        let mut report = self.bytes;
        let version = u32::from_le_bytes(report[..4].try_into().expect("4 bytes"));
        if let (Some(cpuid), 3..) = (self.auto_cpuid, version) {
            report[0x188..0x18B].copy_from_slice(&cpuid);
        }
        report
    }

    /// The report signed by `leaf` (see [`Leaf::sign_report`]).
    pub fn sign(&self, leaf: &Leaf) -> [u8; REPORT_LEN] {
        let mut report = self.build_unsigned();
        leaf.sign_report(&mut report);
        report
    }
}
