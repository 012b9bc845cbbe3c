//! The variant table: every fact about an attestation variant, in one `const` row per variant.
//!
//! Everything else reads these rows — the engine's [`Validator`](super::Validator) (how the AK is trusted,
//! which evidence carries the nonce, which signer an SNP report needs), the CRLs a verifier loads, the
//! attester's choice of leaf certificate, the measurements file's entry for a variant, parsing and printing
//! variant names, the command-line tools' possible values and help, and the C ABI's variant codes (with the Go
//! constants generated from them). No code outside this file and the attester's hardware drivers decides
//! anything by a variant's name.
//!
//! | name | OID | Constellation entry | hardware | AK trusted by | nonce carried by | launch pinned by | measured by | node lock | vTPM EK certificate | TD checks waived | C code |
//! |---|---|---|---|---|---|---|---|---|---|---|---|
//! | `qemu-vtpm` | 1.3.9900.5.1 | qemu / qemu-vtpm | none | AK registry | quote | — | PCRs | PCR 15 | yes | — | 1 |
//! | `azure-sev-snp` | 1.3.9900.4.1 | azure / azure-sev-snp | SEV-SNP, VCEK | HCL runtime data | quote | SNP policy | PCRs | PCR 15 | yes | — | 2 |
//! | `aws-sev-snp` | 1.3.9900.2.2 | aws / aws-sev-snp | SEV-SNP, VLEK | fresh report binding | quote and report | SNP policy | PCRs | PCR 15 | none | — | 3 |
//! | `gcp-sev-snp` | 1.3.9900.3.2 | gcp / gcp-sev-snp | SEV-SNP, VCEK | fresh report binding | quote and report | SNP policy | PCRs | PCR 15 | yes | — | 4 |
//! | `gcp-shielded-vm` | 1.3.9900.3.99 | gcp / gcp-sev-es | none | provider certificate | quote | — | PCRs | PCR 15 | yes | — | 5 |
//! | `azure-tdx` | 1.3.9900.4.3 | azure / azure-tdx | TDX | HCL runtime data | quote | TDX policy (MRTD) | PCRs | PCR 15 | yes | sept_ve_disable | 6 |
//! | `qemu-tdx` | 1.3.9900.5.99 | qemu / qemu-tdx | TDX | — (no vTPM) | TD quote | TDX policy (MRTD) | MRTD, RTMR0–3 | RTMR3 | — (no vTPM) | — | 7 |
//!
//! "node lock" is the register a bootstrapped node binds its cluster id into ([`LockRegister`]): the vTPM's
//! PCR 15 wherever there is a vTPM, a TD's RTMR3 where there is none.
//!
//! "TD checks waived" lists the TD-attribute checks of [`TdxPolicy`](crate::tdx::TdxPolicy) that the
//! variant's platform is known not to pass, waived in the variant's default policy and recorded as waived in
//! every verdict: Azure runs TDX guests as TD partitions under its paravisor, without SEPT_VE_DISABLE
//! (every real Azure TD quote has TDATTRIBUTES 0).
//!
//! (`engine/tests/variant_table.rs` checks that this table says what [`TABLE`] holds.)
//!
//! The EK certificate column is what the cloud provisions in the vTPM (the TCG EK Credential Profile's NV
//! indices 0x01C00002 / 0x01C0000A): swtpm's or QEMU's CA, Azure's vTPM CA, Google's EK CA — and nothing on
//! AWS, whose NitroTPM has an EK but no certificate for it. Only a variant whose AK is trusted through a
//! registry needs it (credential activation); every other variant's evidence proves its AK without it, which
//! is why a node verifies a join service of such a variant with no EK CA configured.
//!
//! The OIDs are the values Constellation assigns (its `variant` package: AWS under 1.3.9900.2, GCP under .3,
//! Azure under .4, QEMU under .5), so that aTLS certificates name the same variant in both projects;
//! `qemu-tdx`'s .5.99 is marked a placeholder there. `gcp-shielded-vm` has no Constellation counterpart
//! (Constellation's `gcp-sev-es`, .3.1, trusts the AK through the Compute API, not through Google's AK
//! certificate), so it takes 1.3.9900.3.99 in the GCP arc, following the `.99` convention; it reads its
//! measurements from Constellation's `gcp-sev-es` entry, which measures the same vTPM.
//!
//! Adding a variant (docs/ARCHITECTURE.md, "Adding a variant"): a [`Variant`] arm and a row here; for an
//! SNP-like variant the validator, the CRLs, the measurements entry, the names and codes follow from the row,
//! and the attester needs one arm that opens its hardware. The enums of a row's columns are deliberately not
//! `#[non_exhaustive]`: code that branches on a column (never on a name) must handle a new kind of AK trust
//! or hardware, and the compiler says where.

use super::lock::LockRegister;
use crate::snp::SigningKey;
use crate::tdx::TdxCheck;
use core::fmt;

/// An attestation variant: which hardware and which trust path a node's attestation document uses. Every
/// fact about it is in its [`VariantInfo`] row ([`Variant::info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// QEMU/swtpm vTPM without confidential hardware.
    QemuVtpm,
    /// Azure SEV-SNP confidential VM with the paravisor's vTPM.
    AzureSevSnp,
    /// AWS SEV-SNP instance (VLEK) with a vTPM.
    AwsSevSnp,
    /// GCP SEV-SNP instance (VCEK) with a vTPM.
    GcpSevSnp,
    /// GCE Shielded VM / Confidential VM whose vTPM AK Google's CA certifies.
    GcpShieldedVm,
    /// Azure TDX confidential VM with the paravisor's vTPM.
    AzureTdx,
    /// QEMU/KVM TD without a vTPM.
    QemuTdx,
}

/// The confidential hardware whose evidence a variant's documents carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hardware {
    /// None: a vTPM only.
    None,
    /// An AMD SEV-SNP attestation report, signed by the AMD key `signer` (a VCEK chained through the ASK, or
    /// a cloud provider's VLEK chained through the ASVK).
    SevSnp {
        /// The key that must sign the variant's reports.
        signer: SigningKey,
    },
    /// An Intel TDX quote (DCAP v4/v5) with its PCK chain.
    Tdx,
}

/// How the attestation key (AK) of a variant's vTPM quote comes to be trusted — the choice that defines a
/// variant, as in Constellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AkTrust {
    /// Looked up in an [`AkRegistry`](super::AkRegistry): registered by credential activation against a
    /// certified EK, or pinned — never trusted unconditionally.
    Registry,
    /// Carried in the HCL runtime data ("HCLAkPub") that the hardware evidence binds (Azure's paravisor
    /// vTPM runs inside the TEE).
    HclRuntimeData,
    /// A fresh hardware report per attestation whose REPORT_DATA binds the AK and this attestation's quote
    /// nonce ([`super::binding`]): the vTPM runs outside the TEE, so the host holds the AK.
    FreshReportBinding,
    /// An AK certificate from the cloud provider's CA, chained to pinned roots (Google's EK/AK CA).
    ProviderCertificate,
    /// No vTPM, so no AK: the hardware quote itself binds the nonce.
    NoAk,
}

/// Which evidence carries the verifier's nonce (freshness).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NonceCarrier {
    /// The vTPM quote's extraData ([`Validator::quote_nonce`](super::Validator::quote_nonce)).
    Quote,
    /// The vTPM quote's extraData and, because the host holds the AK, the hardware report's REPORT_DATA.
    QuoteAndReport,
    /// The TD quote's REPORTDATA.
    TdQuote,
}

/// What pins the guest's launch (the confidential hardware's measurement of the initial image).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaunchPin {
    /// Nothing: the variant has no confidential launch to pin.
    NotApplicable,
    /// The SNP policy's MEASUREMENT or ID_KEY_DIGEST allow-list.
    SnpPolicy,
    /// The TDX policy's MRTD allow-list.
    TdxMrtd,
}

/// Which registers a variant's measurements file speaks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Measured {
    /// The vTPM's SHA-256 PCRs 0–23.
    Pcrs,
    /// The TD's MRTD and RTMR0–3 (Constellation's layout: 0 = MRTD, 1–4 = RTMR0–3, 48-byte values).
    TdRegisters,
}

/// The (CSP, attestationVariant) entry of a Constellation release measurements list that holds a variant's
/// measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConstellationEntry {
    /// The CSP name (`aws`, `azure`, `gcp`, `qemu`, …).
    pub csp: &'static str,
    /// The attestation variant name of the entry.
    pub variant: &'static str,
}

/// Everything about one variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantInfo {
    /// The variant.
    pub variant: Variant,
    /// Its name in documents, configuration and command lines.
    pub name: &'static str,
    /// The X.509 extension OID (dotted) that carries its document in aTLS certificates.
    pub oid: &'static str,
    /// The Constellation measurements entry for it.
    pub constellation: ConstellationEntry,
    /// One line for people: what runs there (help texts).
    pub summary: &'static str,
    /// Its confidential hardware.
    pub hardware: Hardware,
    /// How its AK is trusted.
    pub ak: AkTrust,
    /// Which evidence carries the nonce.
    pub nonce: NonceCarrier,
    /// What pins the launch.
    pub launch: LaunchPin,
    /// What its measurements file measures.
    pub measured: Measured,
    /// The register its node lock binds the cluster id into ([`super::lock`]).
    pub lock: LockRegister,
    /// Whether its vTPM comes with an EK certificate from the platform's CA (`false` without a vTPM). Only
    /// [`AkTrust::Registry`] relies on it (credential activation against a certified EK).
    pub ek_certificate: bool,
    /// The TD-attribute checks its platform cannot pass, waived in its TDX policy (TDX variants; empty
    /// elsewhere). Visible in every verdict as waived.
    pub td_waivers: &'static [TdxCheck],
    /// Its stable code in the C ABI (`ATTEST_VARIANT_*`; never reused).
    pub ffi_code: u32,
}

impl VariantInfo {
    /// Whether the variant's documents carry a vTPM quote.
    pub const fn has_vtpm(&self) -> bool {
        !matches!(self.ak, AkTrust::NoAk)
    }

    /// The AMD key that signs the variant's SNP reports (SEV-SNP variants).
    pub const fn snp_signer(&self) -> Option<SigningKey> {
        match self.hardware {
            Hardware::SevSnp { signer } => Some(signer),
            Hardware::None | Hardware::Tdx => None,
        }
    }

    /// Whether the variant's hardware evidence is an Intel TDX quote.
    pub const fn is_tdx(&self) -> bool {
        matches!(self.hardware, Hardware::Tdx)
    }

    /// The name of the C ABI constant of the variant: `ATTEST_VARIANT_` and the name in upper snake case.
    pub fn ffi_constant(&self) -> String {
        format!("ATTEST_VARIANT_{}", self.name.to_ascii_uppercase().replace('-', "_"))
    }

    /// The name of the Go constant of the variant: `Variant` and the name in camel case (`VariantQemuVtpm`).
    pub fn go_constant(&self) -> String {
        let mut out = String::from("Variant");
        for part in self.name.split('-') {
            let mut chars = part.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.extend(chars);
            }
        }
        out
    }
}

/// Every variant, in [`Variant`] order (`TABLE[v as usize].variant == v`, checked at compile time).
pub const TABLE: [VariantInfo; 7] = [
    VariantInfo {
        variant: Variant::QemuVtpm,
        name: "qemu-vtpm",
        oid: "1.3.9900.5.1",
        constellation: ConstellationEntry { csp: "qemu", variant: "qemu-vtpm" },
        summary: "QEMU/KVM or swtpm vTPM, no confidential hardware; AK by credential activation or pin",
        hardware: Hardware::None,
        ak: AkTrust::Registry,
        nonce: NonceCarrier::Quote,
        launch: LaunchPin::NotApplicable,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        ek_certificate: true,
        td_waivers: &[],
        ffi_code: 1,
    },
    VariantInfo {
        variant: Variant::AzureSevSnp,
        name: "azure-sev-snp",
        oid: "1.3.9900.4.1",
        constellation: ConstellationEntry { csp: "azure", variant: "azure-sev-snp" },
        summary: "Azure SEV-SNP CVM: HCL report (VCEK) binds the paravisor vTPM's AK",
        hardware: Hardware::SevSnp { signer: SigningKey::Vcek },
        ak: AkTrust::HclRuntimeData,
        nonce: NonceCarrier::Quote,
        launch: LaunchPin::SnpPolicy,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        ek_certificate: true,
        td_waivers: &[],
        ffi_code: 2,
    },
    VariantInfo {
        variant: Variant::AwsSevSnp,
        name: "aws-sev-snp",
        oid: "1.3.9900.2.2",
        constellation: ConstellationEntry { csp: "aws", variant: "aws-sev-snp" },
        summary: "AWS SEV-SNP instance: a fresh VLEK-signed report binds the vTPM's AK and the nonce",
        hardware: Hardware::SevSnp { signer: SigningKey::Vlek },
        ak: AkTrust::FreshReportBinding,
        nonce: NonceCarrier::QuoteAndReport,
        launch: LaunchPin::SnpPolicy,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        // NitroTPM: an EK, but no certificate for it.
        ek_certificate: false,
        td_waivers: &[],
        ffi_code: 3,
    },
    VariantInfo {
        variant: Variant::GcpSevSnp,
        name: "gcp-sev-snp",
        oid: "1.3.9900.3.2",
        constellation: ConstellationEntry { csp: "gcp", variant: "gcp-sev-snp" },
        summary: "GCP SEV-SNP instance: a fresh VCEK-signed report binds the vTPM's AK and the nonce",
        hardware: Hardware::SevSnp { signer: SigningKey::Vcek },
        ak: AkTrust::FreshReportBinding,
        nonce: NonceCarrier::QuoteAndReport,
        launch: LaunchPin::SnpPolicy,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        ek_certificate: true,
        td_waivers: &[],
        ffi_code: 4,
    },
    VariantInfo {
        variant: Variant::GcpShieldedVm,
        name: "gcp-shielded-vm",
        oid: "1.3.9900.3.99",
        constellation: ConstellationEntry { csp: "gcp", variant: "gcp-sev-es" },
        summary: "GCE Shielded/Confidential VM: the vTPM's AK certified by Google's CA",
        hardware: Hardware::None,
        ak: AkTrust::ProviderCertificate,
        nonce: NonceCarrier::Quote,
        launch: LaunchPin::NotApplicable,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        ek_certificate: true,
        td_waivers: &[],
        ffi_code: 5,
    },
    VariantInfo {
        variant: Variant::AzureTdx,
        name: "azure-tdx",
        oid: "1.3.9900.4.3",
        constellation: ConstellationEntry { csp: "azure", variant: "azure-tdx" },
        summary: "Azure TDX CVM: the TD quote binds the HCL runtime data with the paravisor vTPM's AK",
        hardware: Hardware::Tdx,
        ak: AkTrust::HclRuntimeData,
        nonce: NonceCarrier::Quote,
        launch: LaunchPin::TdxMrtd,
        measured: Measured::Pcrs,
        lock: LockRegister::Pcr(15),
        ek_certificate: true,
        td_waivers: &[TdxCheck::SeptVeDisable],
        ffi_code: 6,
    },
    VariantInfo {
        variant: Variant::QemuTdx,
        name: "qemu-tdx",
        oid: "1.3.9900.5.99",
        constellation: ConstellationEntry { csp: "qemu", variant: "qemu-tdx" },
        summary: "QEMU/KVM TD without a vTPM: the TD quote binds the nonce; MRTD and RTMRs are measured",
        hardware: Hardware::Tdx,
        ak: AkTrust::NoAk,
        nonce: NonceCarrier::TdQuote,
        launch: LaunchPin::TdxMrtd,
        measured: Measured::TdRegisters,
        lock: LockRegister::Rtmr(3),
        ek_certificate: false,
        td_waivers: &[],
        ffi_code: 7,
    },
];

// Row i describes variant i, so `Variant::info` is an index.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].variant as usize == i, "TABLE rows must follow the order of Variant");
        i += 1;
    }
};

impl Variant {
    /// All variants, in table order.
    pub const ALL: [Variant; TABLE.len()] = {
        let mut out = [Variant::QemuVtpm; TABLE.len()];
        let mut i = 0;
        while i < TABLE.len() {
            out[i] = TABLE[i].variant;
            i += 1;
        }
        out
    };

    /// The variant's row of the [`TABLE`].
    pub const fn info(self) -> &'static VariantInfo {
        &TABLE[self as usize]
    }

    /// The variant's name in documents and configuration.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// The X.509 extension OID that carries this variant's document in aTLS certificates, as dotted text.
    pub const fn oid(self) -> &'static str {
        self.info().oid
    }

    /// Whether the variant's hardware evidence is an Intel TDX quote.
    pub const fn is_tdx(self) -> bool {
        self.info().is_tdx()
    }

    /// Whether documents of this variant carry a vTPM quote.
    pub const fn has_vtpm(self) -> bool {
        self.info().has_vtpm()
    }

    /// Parses a variant name.
    pub fn from_name(name: &str) -> Option<Self> {
        TABLE.iter().find(|row| row.name == name).map(|row| row.variant)
    }

    /// The variant whose OID is `dotted`.
    pub fn from_oid(dotted: &str) -> Option<Self> {
        TABLE.iter().find(|row| row.oid == dotted).map(|row| row.variant)
    }

    /// The variant whose C ABI code is `code`.
    pub fn from_ffi_code(code: u32) -> Option<Self> {
        TABLE.iter().find(|row| row.ffi_code == code).map(|row| row.variant)
    }

    /// Every variant's name, comma-separated, in table order (help texts and error messages).
    pub fn names(filter: impl Fn(&VariantInfo) -> bool) -> String {
        TABLE.iter().filter(|row| filter(row)).map(|row| row.name).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A variant name that is not in the [`TABLE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVariant {
    /// The name as given (at most 64 bytes of it).
    pub name: String,
}

impl fmt::Display for UnknownVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown attestation variant {:?} (known: {})", self.name, Variant::names(|_| true))
    }
}

impl std::error::Error for UnknownVariant {}

impl core::str::FromStr for Variant {
    type Err = UnknownVariant;

    fn from_str(s: &str) -> Result<Self, UnknownVariant> {
        Variant::from_name(s).ok_or_else(|| UnknownVariant { name: s.chars().take(64).collect() })
    }
}
