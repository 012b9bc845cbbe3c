//! Policy for SEV-SNP evidence, and the verdict that records every check.
//!
//! Secure by default: [`SnpPolicy::default`] forbids debug and migration agents, requires VMPL 0, refuses
//! provisional firmware and reports outside versions 2–5. Checks that compare against expected values
//! (measurement, host data, key digests, chip ids, minimum TCBs, …) run when the policy configures them;
//! otherwise the verdict records them as [`Outcome::Waived`], so a reader sees exactly what was checked.
//! Expected values must have their exact length; nothing is padded or truncated.
//!
//! # Launch measurements of attestation variants
//!
//! A bare SNP verification may leave MEASUREMENT open (e.g. `attest snp verify` on a report of unknown
//! origin). An attestation *variant* may not: whoever runs any image that binds its own AK would otherwise
//! be admitted. [`SnpPolicy::launch_pinning`] says how a policy pins the launch — a MEASUREMENT allow-list
//! (`measurements`), or an ID_KEY_DIGEST allow-list (`id_key_digests`: the firmware admits a launch with an ID
//! block only when the block's signed launch digest equals MEASUREMENT, SNP ABI spec `SNP_LAUNCH_FINISH`) —
//! or fails with [`Error::LaunchUnpinned`]. The only way around it is the named waiver
//! `dangerous_allow_unpinned_launch`, which every validation reports ([`LaunchPinning::DangerouslyUnpinned`]).
//! Services call it at start and refuse to start on error; the variant validator calls it on every
//! validation as well.
//!
//! Policies load from TOML or JSON ([`SnpPolicy::from_toml`], [`SnpPolicy::from_json`]); unknown keys are
//! errors. `vmpl` is an integer 0–3 or the string `"any"`; a missing `vmpl` means the default, 0.

use crate::amd::Product;
use crate::error::{Bytes, Error, PolicyViolation, Value};
use crate::policy::{Hex, LaunchPinning, Outcome, Revocation, checks, from_json, from_toml};
use crate::snp::TcbVersion;
use core::fmt;
use serde::{Deserialize, Serialize};

checks! {
/// Every check the SNP verifier performs, in the order it runs them.
Check {
    /// The report parses: version, signature algorithm, reserved fields.
    ReportStructure => "report_structure",
    /// The product is determined consistently (caller, CPUID, productName).
    Product => "product",
    /// VCEK/VLEK → ASK/ASVK → ARK signatures, names and CA flags, up to a pinned ARK.
    CertificateChain => "certificate_chain",
    /// Every certificate is valid at the trusted time.
    CertificateValidity => "certificate_validity",
    /// Neither the intermediate nor the leaf is revoked by the ARK-signed CRL.
    Revocation => "revocation",
    /// The report's SIGNING_KEY matches the leaf kind (VCEK or VLEK).
    SigningKey => "signing_key",
    /// The leaf's TCB SPLs equal REPORTED_TCB.
    TcbBinding => "tcb_binding",
    /// The VCEK's hwID equals CHIP_ID (not applicable to VLEKs or with MASK_CHIP_KEY).
    ChipIdBinding => "chip_id_binding",
    /// The report signature verifies under the leaf key.
    ReportSignature => "report_signature",
    /// VERSION within the allowed range.
    ReportVersion => "report_version",
    /// REPORT_DATA equals the expected value.
    ReportData => "report_data",
    /// MEASUREMENT is allowed.
    Measurement => "measurement",
    /// HOST_DATA equals the expected value.
    HostData => "host_data",
    /// ID_KEY_DIGEST is allowed.
    IdKeyDigest => "id_key_digest",
    /// AUTHOR_KEY_DIGEST is allowed.
    AuthorKeyDigest => "author_key_digest",
    /// FAMILY_ID equals the expected value.
    FamilyId => "family_id",
    /// IMAGE_ID equals the expected value.
    ImageId => "image_id",
    /// GUEST_SVN at least the minimum.
    GuestSvn => "guest_svn",
    /// Guest policy: debugging.
    Debug => "debug",
    /// Guest policy: migration agent.
    MigrationAgent => "migration_agent",
    /// Guest policy: SMT.
    Smt => "smt",
    /// Guest policy: single socket.
    SingleSocket => "single_socket",
    /// Guest policy: minimum ABI version.
    AbiVersion => "abi_version",
    /// VMPL equals the required level.
    Vmpl => "vmpl",
    /// PLATFORM_INFO flags required / forbidden.
    PlatformInfo => "platform_info",
    /// CHIP_ID is allowed.
    ChipId => "chip_id",
    /// REPORTED_TCB and COMMITTED_TCB do not exceed CURRENT_TCB.
    TcbConsistency => "tcb_consistency",
    /// REPORTED_TCB at least the minimum.
    MinReportedTcb => "min_reported_tcb",
    /// COMMITTED_TCB at least the minimum.
    MinCommittedTcb => "min_committed_tcb",
    /// LAUNCH_TCB at least the minimum.
    MinLaunchTcb => "min_launch_tcb",
    /// CURRENT_TCB at least the minimum.
    MinCurrentTcb => "min_current_tcb",
    /// Firmware not provisional (current TCB and version equal the committed ones).
    ProvisionalFirmware => "provisional_firmware",
}
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The record of every check of one verification. Fixed-size: building it never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    outcomes: [Outcome; Check::COUNT],
}

impl Default for Verdict {
    fn default() -> Self {
        Self { outcomes: [Outcome::NotRun; Check::COUNT] }
    }
}

impl Verdict {
    fn index(check: Check) -> usize {
        check as usize
    }
    /// The outcome of `check`.
    pub fn outcome(&self, check: Check) -> Outcome {
        self.outcomes[Self::index(check)]
    }
    pub(crate) fn set(&mut self, check: Check, outcome: Outcome) {
        self.outcomes[Self::index(check)] = outcome;
    }
    /// Every check with its outcome, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Check, Outcome)> + '_ {
        Check::ALL.iter().copied().zip(self.outcomes.iter().copied())
    }
    /// Names of the waived checks.
    pub fn waived(&self) -> impl Iterator<Item = Check> + '_ {
        self.iter().filter(|(_, o)| *o == Outcome::Waived).map(|(c, _)| c)
    }
}

/// A PLATFORM_INFO flag (SNP ABI spec Table 24).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlatformFlag {
    /// Bit 0.
    SmtEnabled,
    /// Bit 1.
    TsmeEnabled,
    /// Bit 2.
    EccEnabled,
    /// Bit 3.
    RaplDisabled,
    /// Bit 4.
    CiphertextHidingEnabled,
    /// Bit 5.
    AliasCheckComplete,
}

impl PlatformFlag {
    fn bit(self) -> u64 {
        1 << (self as u32)
    }
}

/// Minimum ABI version in the guest policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbiVersion {
    /// ABI major.
    pub major: u8,
    /// ABI minor.
    pub minor: u8,
}

/// The SEV-SNP policy. See the module documentation for defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnpPolicy {
    /// Lowest accepted report VERSION.
    pub min_report_version: u32,
    /// Highest accepted report VERSION.
    pub max_report_version: u32,
    /// Products accepted (empty: any supported product).
    pub products: Vec<Product>,
    /// Required VMPL, 0–3 (`None`: any VMPL, recorded as waived; written `vmpl = "any"` in policy files).
    #[serde(with = "vmpl_field")]
    pub vmpl: Option<u32>,
    /// Permit guests with debugging allowed (POLICY bit 19).
    pub allow_debug: bool,
    /// Permit guests with a migration agent (POLICY bit 18).
    pub allow_migration_agent: bool,
    /// Permit guests with SMT allowed (POLICY bit 16).
    pub allow_smt: bool,
    /// Require the single-socket policy bit (POLICY bit 20).
    pub require_single_socket: bool,
    /// Minimum ABI version in POLICY.
    pub min_abi: Option<AbiVersion>,
    /// Minimum GUEST_SVN.
    pub min_guest_svn: Option<u32>,
    /// Expected REPORT_DATA (exactly 64 bytes). Per-verification values (nonces) go in the request instead.
    pub report_data: Option<Hex<64>>,
    /// Allowed MEASUREMENT values (empty: waived).
    pub measurements: Vec<Hex<48>>,
    /// Expected HOST_DATA.
    pub host_data: Option<Hex<32>>,
    /// Allowed ID_KEY_DIGEST values (empty: waived).
    pub id_key_digests: Vec<Hex<48>>,
    /// Allowed AUTHOR_KEY_DIGEST values (empty: waived).
    pub author_key_digests: Vec<Hex<48>>,
    /// Expected FAMILY_ID.
    pub family_id: Option<Hex<16>>,
    /// Expected IMAGE_ID.
    pub image_id: Option<Hex<16>>,
    /// Allowed CHIP_ID values (empty: waived).
    pub chip_ids: Vec<Hex<64>>,
    /// PLATFORM_INFO flags that must be set.
    pub required_platform_info: Vec<PlatformFlag>,
    /// PLATFORM_INFO flags that must be clear.
    pub forbidden_platform_info: Vec<PlatformFlag>,
    /// Minimum REPORTED_TCB.
    pub min_reported_tcb: Option<TcbVersion>,
    /// Minimum COMMITTED_TCB.
    pub min_committed_tcb: Option<TcbVersion>,
    /// Minimum LAUNCH_TCB.
    pub min_launch_tcb: Option<TcbVersion>,
    /// Minimum CURRENT_TCB.
    pub min_current_tcb: Option<TcbVersion>,
    /// Accept firmware whose current TCB or version differs from the committed one.
    pub allow_provisional_firmware: bool,
    /// Revocation checking.
    pub revocation: Revocation,
    /// Accept a CRL whose nextUpdate has passed (explicit waiver).
    pub allow_stale_crl: bool,
    /// Accept attestation variants without a pinned launch (no `measurements` and no `id_key_digests`):
    /// any guest image that binds its own AK is then admitted. Dangerous; reported by every validation
    /// ([`LaunchPinning::DangerouslyUnpinned`]). Without it, [`SnpPolicy::launch_pinning`] fails.
    pub dangerous_allow_unpinned_launch: bool,
}

/// `vmpl`: an integer 0–3, or `"any"` for no requirement (`None`). Absent keys take the default (0) through
/// the struct's `#[serde(default)]`.
mod vmpl_field {
    use serde::{Deserialize, Deserializer, Serializer, de};

    const EXPECTED: &str = r#"vmpl must be an integer 0-3 (SNP has four VMPLs) or "any""#;

    // serde's `with` passes the field by reference.
    #[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)]
    pub(super) fn serialize<S: Serializer>(v: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => s.serialize_u32(*n),
            None => s.serialize_str("any"),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => match n.as_u64() {
                Some(n @ 0..=3) => Ok(Some(n as u32)),
                _ => Err(de::Error::custom(EXPECTED)),
            },
            serde_json::Value::String(s) if s == "any" => Ok(None),
            _ => Err(de::Error::custom(EXPECTED)),
        }
    }
}

impl Default for SnpPolicy {
    fn default() -> Self {
        Self {
            min_report_version: 2,
            max_report_version: 5,
            products: Vec::new(),
            vmpl: Some(0),
            allow_debug: false,
            allow_migration_agent: false,
            allow_smt: true,
            require_single_socket: false,
            min_abi: None,
            min_guest_svn: None,
            report_data: None,
            measurements: Vec::new(),
            host_data: None,
            id_key_digests: Vec::new(),
            author_key_digests: Vec::new(),
            family_id: None,
            image_id: None,
            chip_ids: Vec::new(),
            required_platform_info: Vec::new(),
            forbidden_platform_info: Vec::new(),
            min_reported_tcb: None,
            min_committed_tcb: None,
            min_launch_tcb: None,
            min_current_tcb: None,
            allow_provisional_firmware: false,
            revocation: Revocation::CheckIfPresent,
            allow_stale_crl: false,
            dangerous_allow_unpinned_launch: false,
        }
    }
}

impl SnpPolicy {
    /// Parses a TOML policy.
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        from_toml::<Self>(text)?.validate("toml")
    }

    /// Parses a JSON policy.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        from_json::<Self>(text)?.validate("json")
    }

    /// Parses TOML or JSON, chosen by the first non-blank character (`{` means JSON).
    pub fn from_text(text: &str) -> Result<Self, Error> {
        if text.trim_start().starts_with('{') { Self::from_json(text) } else { Self::from_toml(text) }
    }

    /// How this policy pins a guest's launch, for attestation variants whose trust rests on an SNP report
    /// (see the module documentation): a MEASUREMENT allow-list first, else an ID_KEY_DIGEST allow-list, else
    /// the waiver `dangerous_allow_unpinned_launch`, else [`Error::LaunchUnpinned`].
    pub fn launch_pinning(&self) -> Result<LaunchPinning, Error> {
        if !self.measurements.is_empty() {
            Ok(LaunchPinning::Measurement)
        } else if !self.id_key_digests.is_empty() {
            Ok(LaunchPinning::IdKey)
        } else if self.dangerous_allow_unpinned_launch {
            Ok(LaunchPinning::DangerouslyUnpinned)
        } else {
            Err(Error::LaunchUnpinned)
        }
    }

    fn validate(self, format: &'static str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::PolicyFile { format, reason: reason.into() };
        if self.min_report_version > self.max_report_version {
            return Err(bad("min_report_version is above max_report_version"));
        }
        if self.required_platform_info.iter().any(|f| self.forbidden_platform_info.contains(f)) {
            return Err(bad("a PLATFORM_INFO flag is both required and forbidden"));
        }
        // A guest without an ID block reports ID_KEY_DIGEST = 0: allowing zero pins nothing.
        if self.id_key_digests.iter().chain(&self.author_key_digests).any(|d| d.0 == [0; 48]) {
            return Err(bad(
                "an all-zero id_key_digests / author_key_digests entry matches every guest without an ID block",
            ));
        }
        Ok(self)
    }
}

/// Fails a check with expected/found values.
pub(crate) fn violation(check: Check, expected: Value, found: Value) -> Error {
    Error::Policy(PolicyViolation { check, expected, found })
}

/// Checks `found` against an allow-list; empty lists waive the check.
pub(crate) fn allow_list<const N: usize>(
    verdict: &mut Verdict,
    check: Check,
    allowed: &[Hex<N>],
    found: &[u8; N],
) -> Result<(), Error> {
    if allowed.is_empty() {
        verdict.set(check, Outcome::Waived);
        return Ok(());
    }
    if allowed.iter().any(|a| &a.0 == found) {
        verdict.set(check, Outcome::Passed);
        Ok(())
    } else {
        Err(violation(check, Value::OneOf(allowed.len()), Value::Bytes(Bytes::new(found))))
    }
}

/// Checks `found` against one optional expected value.
pub(crate) fn exact<const N: usize>(
    verdict: &mut Verdict,
    check: Check,
    expected: Option<&[u8; N]>,
    found: &[u8; N],
) -> Result<(), Error> {
    match expected {
        None => {
            verdict.set(check, Outcome::Waived);
            Ok(())
        }
        Some(e) if e == found => {
            verdict.set(check, Outcome::Passed);
            Ok(())
        }
        Some(e) => Err(violation(check, Value::Bytes(Bytes::new(e)), Value::Bytes(Bytes::new(found)))),
    }
}

/// Checks a platform-info policy.
pub(crate) fn platform_flags(verdict: &mut Verdict, policy: &SnpPolicy, found: u64) -> Result<(), Error> {
    if policy.required_platform_info.is_empty() && policy.forbidden_platform_info.is_empty() {
        verdict.set(Check::PlatformInfo, Outcome::Waived);
        return Ok(());
    }
    let required = policy.required_platform_info.iter().fold(0, |m, f| m | f.bit());
    let forbidden = policy.forbidden_platform_info.iter().fold(0, |m, f| m | f.bit());
    if found & required != required || found & forbidden != 0 {
        return Err(violation(
            Check::PlatformInfo,
            Value::Text("the required flags set and the forbidden flags clear"),
            Value::Int(found),
        ));
    }
    verdict.set(Check::PlatformInfo, Outcome::Passed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_strict() {
        let p = SnpPolicy::default();
        assert!(!p.allow_debug && !p.allow_migration_agent && !p.allow_provisional_firmware);
        assert_eq!(p.vmpl, Some(0));
        assert_eq!(SnpPolicy::from_toml("").unwrap(), p);
        assert_eq!(SnpPolicy::from_json("{}").unwrap(), p);
    }

    #[test]
    fn files() {
        let t = SnpPolicy::from_toml(
            r#"
            measurements = ["5677f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841"]
            allow_provisional_firmware = true
            revocation = "require"
            min_reported_tcb = { bl = 2, tee = 0, snp = 6, ucode = 93 }
            products = ["Milan"]
            required_platform_info = ["smt_enabled"]
            "#,
        )
        .unwrap();
        assert_eq!(t.measurements.len(), 1);
        assert_eq!(t.min_reported_tcb.unwrap().microcode, 93);
        assert_eq!(t.revocation, Revocation::Require);
        // Exact lengths: a 47-byte measurement is refused, never padded.
        let e = SnpPolicy::from_toml(&format!("measurements = [\"{}\"]", "00".repeat(47))).unwrap_err();
        assert!(e.to_string().contains("exactly 48 bytes"), "{e}");
        assert!(SnpPolicy::from_toml("unknown_key = 1").is_err());
        assert!(SnpPolicy::from_json(r#"{"report_data": "00"}"#).is_err());
        assert!(SnpPolicy::from_toml("min_report_version = 5\nmax_report_version = 3").is_err());
    }

    #[test]
    fn vmpl_any_is_explicit_and_absent_is_strict() {
        assert_eq!(SnpPolicy::from_toml("").unwrap().vmpl, Some(0));
        assert_eq!(SnpPolicy::from_toml("vmpl = 2").unwrap().vmpl, Some(2));
        assert_eq!(SnpPolicy::from_toml(r#"vmpl = "any""#).unwrap().vmpl, None);
        assert_eq!(SnpPolicy::from_json(r#"{"vmpl": "any"}"#).unwrap().vmpl, None);
        assert_eq!(SnpPolicy::from_json(r#"{"vmpl": 3}"#).unwrap().vmpl, Some(3));
        for bad in ["vmpl = 4", "vmpl = -1", r#"vmpl = "Any""#, r#"vmpl = "0""#, "vmpl = 1.0", "vmpl = true"] {
            assert!(SnpPolicy::from_toml(bad).is_err(), "{bad}");
        }
        // JSON null is not a way to say "any": it must be written out.
        assert!(SnpPolicy::from_json(r#"{"vmpl": null}"#).is_err());
        // Round trip through both formats.
        for p in [SnpPolicy::default(), SnpPolicy { vmpl: None, ..SnpPolicy::default() }] {
            assert_eq!(SnpPolicy::from_json(&serde_json::to_string(&p).unwrap()).unwrap(), p);
            assert_eq!(SnpPolicy::from_toml(&toml::to_string(&p).unwrap()).unwrap(), p);
        }
    }

    #[test]
    fn launch_pinning_needs_an_allow_list_or_the_named_waiver() {
        assert_eq!(SnpPolicy::default().launch_pinning(), Err(Error::LaunchUnpinned));
        let m = format!("measurements = [\"{}\"]", "11".repeat(48));
        assert_eq!(SnpPolicy::from_toml(&m).unwrap().launch_pinning(), Ok(LaunchPinning::Measurement));
        let k = format!("id_key_digests = [\"{}\"]", "22".repeat(48));
        assert_eq!(SnpPolicy::from_toml(&k).unwrap().launch_pinning(), Ok(LaunchPinning::IdKey));
        let w = SnpPolicy::from_toml("dangerous_allow_unpinned_launch = true").unwrap();
        assert_eq!(w.launch_pinning(), Ok(LaunchPinning::DangerouslyUnpinned));
        // An all-zero ID key digest would match every guest without an ID block.
        let zero = format!("id_key_digests = [\"{}\"]", "00".repeat(48));
        assert!(SnpPolicy::from_toml(&zero).is_err());
        // Pinned and waived at once: the pin wins (the waiver is then inert).
        let both = SnpPolicy::from_toml(&format!("{m}\ndangerous_allow_unpinned_launch = true")).unwrap();
        assert_eq!(both.launch_pinning(), Ok(LaunchPinning::Measurement));
    }

    /// The shipped example policies load, and say what their comments say.
    #[test]
    fn example_policies() {
        let cloud = SnpPolicy::from_toml(include_str!("../../../examples/policies/snp-cloud.toml")).unwrap();
        assert_eq!(cloud, SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() });
        assert_eq!(cloud.launch_pinning(), Err(Error::LaunchUnpinned));
        let strict = SnpPolicy::from_toml(include_str!("../../../examples/policies/snp.toml")).unwrap();
        assert_eq!((strict.vmpl, strict.launch_pinning()), (Some(0), Ok(LaunchPinning::Measurement)));
        let azure = SnpPolicy::from_toml(include_str!("../../../examples/policies/azure.toml")).unwrap();
        assert_eq!(azure, SnpPolicy { allow_provisional_firmware: true, ..SnpPolicy::default() });
        let tdx = crate::tdx::TdxPolicy::from_toml(include_str!("../../../examples/policies/tdx.toml")).unwrap();
        assert_eq!(tdx, crate::tdx::TdxPolicy::default());
        let gce: crate::gce::GcePolicy = toml::from_str(include_str!("../../../examples/policies/gce.toml")).unwrap();
        assert_eq!(gce, crate::gce::GcePolicy::default());
    }

    #[test]
    fn check_names_unique() {
        for (i, a) in Check::ALL.iter().enumerate() {
            for b in &Check::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }
}
