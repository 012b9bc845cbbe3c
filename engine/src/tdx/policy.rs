//! Policy for TD quotes ([`TdxPolicy`]), the checks a TDX verification runs ([`TdxCheck`]) and the record
//! of their outcomes ([`TdxVerdict`]).
//!
//! Secure by default, like [`crate::snp::SnpPolicy`]: only the TCB status `UpToDate` is accepted, no advisory ID
//! is allowed, a TD bound to service TDs (non-zero MRSERVICETD) is refused, CRLs are required, and only zero
//! padding may follow the quote. TD attributes are judged as Intel's ecosystem (dcap-qvl, Intel's QVL
//! appraisal policies) does, each bit group by a check of its own with a waiver of its own:
//!
//! | TDATTRIBUTES bits | check | refused by default when | waiver |
//! |---|---|---|---|
//! | 0 DEBUG | `debug` | set | `allow_debug` |
//! | 1–7 (rest of TUD, "TD under debug") | `debug_class` | any set | `allow_debug_class` |
//! | 8–27, 32–62 (reserved) | `reserved_attributes` | any set | `allow_reserved_attributes` |
//! | 28 SEPT_VE_DISABLE | `sept_ve_disable` | clear | `allow_missing_sept_ve_disable` |
//! | 29 MIGRATABLE | `migratable` | set | `allow_migratable` |
//! | 30 PKS, 31 KL, 63 PERFMON | — | never | — |
//!
//! A variant whose platform cannot pass one of these checks waives exactly that one in its row of the
//! variant table (`td_waivers`: Azure's TD-partitioned guests run without SEPT_VE_DISABLE), applied with
//! [`TdxPolicy::with_waived`]; the verdict records it as [`Outcome::Waived`]. Measurement checks (MRTD, RTMRs, MRCONFIGID,
//! MROWNER, MROWNERCONFIG, MRSEAM, MRSIGNERSEAM, attributes, XFAM, minimum TEE_TCB_SVN, REPORT_DATA) run when
//! configured and are recorded as [`Outcome::Waived`] otherwise. Expected values must have their exact length;
//! nothing is padded or truncated. Policies load from TOML or JSON; unknown keys are errors.

use super::status::TcbStatus;
use crate::error::{Error, TdxPolicyViolation, Value};
use crate::policy::{Hex, LaunchPinning, Outcome, Revocation, checks};
use serde::{Deserialize, Serialize};

checks! {
/// Every check the TDX verifier performs, in the order it runs them.
TdxCheck {
    /// The quote parses: version 4/5, ECDSA P-256 key, TDX TEE type, Intel QE, certification data 6 → 5.
    QuoteStructure => "quote_structure",
    /// What follows the quote in the input is allowed by the policy.
    TrailingBytes => "trailing_bytes",
    /// TCB Info and QE Identity signatures under the TCB Signing key, chained to the pinned root; CRL signatures.
    CollateralSignature => "collateral_signature",
    /// Collateral issueDate..nextUpdate, CRL thisUpdate..nextUpdate and collateral certificates valid at the trusted time.
    CollateralValidity => "collateral_validity",
    /// PCK certificate → PCK CA → pinned Intel SGX Root CA: names, CA flags, signatures.
    CertificateChain => "certificate_chain",
    /// PCK certificate and PCK CA valid at the trusted time.
    CertificateValidity => "certificate_validity",
    /// PCK certificate not on the PCK CRL, PCK CA not on the root CA CRL.
    Revocation => "revocation",
    /// The QE report is signed by the PCK key.
    QeReportSignature => "qe_report_signature",
    /// QE REPORTDATA = SHA-256(attestation key ‖ QE authentication data) ‖ 32 zero bytes.
    QeReportData => "qe_report_data",
    /// The QE report matches the QE Identity (MRSIGNER, ISVPRODID, MISCSELECT, ATTRIBUTES) and meets a QE TCB level.
    QeIdentity => "qe_identity",
    /// The quote is signed by the attestation key over header ‖ body as received.
    QuoteSignature => "quote_signature",
    /// The TCB Info is for the PCK certificate's platform (FMSPC, PCE-ID).
    PlatformBinding => "platform_binding",
    /// MRSIGNERSEAM and SEAMATTRIBUTES match the TDX module identity selected by `TEE_TCB_SVN[1]`.
    TdxModuleIdentity => "tdx_module_identity",
    /// The TCB status is one the policy accepts.
    TcbStatus => "tcb_status",
    /// Every advisory ID of the matched TCB levels is allowed by the policy.
    AdvisoryIds => "advisory_ids",
    /// REPORTDATA equals the expected value (request and/or policy).
    ReportData => "report_data",
    /// MRTD is allowed.
    Mrtd => "mrtd",
    /// RTMR0 equals the expected value.
    Rtmr0 => "rtmr0",
    /// RTMR1 equals the expected value.
    Rtmr1 => "rtmr1",
    /// RTMR2 equals the expected value.
    Rtmr2 => "rtmr2",
    /// RTMR3 equals the expected value.
    Rtmr3 => "rtmr3",
    /// MRCONFIGID equals the expected value.
    MrConfigId => "mr_config_id",
    /// MROWNER equals the expected value.
    MrOwner => "mr_owner",
    /// MROWNERCONFIG equals the expected value.
    MrOwnerConfig => "mr_owner_config",
    /// MRSEAM is allowed.
    MrSeam => "mr_seam",
    /// MRSIGNERSEAM equals the expected value.
    MrSignerSeam => "mr_signer_seam",
    /// TDATTRIBUTES.DEBUG (bit 0) is clear (or debugging is explicitly allowed).
    Debug => "debug",
    /// The other TUD ("TD under debug") bits of TDATTRIBUTES, 1–7, are clear (or explicitly allowed).
    DebugClass => "debug_class",
    /// The reserved TDATTRIBUTES bits (SEC 8–27, OTHER 32–62) are clear (or explicitly allowed).
    ReservedAttributes => "reserved_attributes",
    /// TDATTRIBUTES.SEPT_VE_DISABLE (bit 28) is set (or its absence is explicitly allowed).
    SeptVeDisable => "sept_ve_disable",
    /// TDATTRIBUTES.MIGRATABLE (bit 29) is clear (or migratable TDs are explicitly allowed).
    Migratable => "migratable",
    /// TDATTRIBUTES match the expected value under the mask.
    TdAttributes => "td_attributes",
    /// XFAM matches the expected value under the mask.
    Xfam => "xfam",
    /// Every byte of TEE_TCB_SVN is at least the policy's.
    MinTeeTcbSvn => "min_tee_tcb_svn",
    /// MRSERVICETD is zero (TDX 1.5; or service TDs are explicitly allowed).
    ServiceTd => "service_td",
}
}

impl core::fmt::Display for TdxCheck {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The record of every check of one TDX verification. Fixed-size: building it never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TdxVerdict {
    outcomes: [Outcome; TdxCheck::COUNT],
}

impl Default for TdxVerdict {
    fn default() -> Self {
        Self { outcomes: [Outcome::NotRun; TdxCheck::COUNT] }
    }
}

impl TdxVerdict {
    /// The outcome of `check`.
    pub fn outcome(&self, check: TdxCheck) -> Outcome {
        self.outcomes[check as usize]
    }
    pub(crate) fn set(&mut self, check: TdxCheck, outcome: Outcome) {
        self.outcomes[check as usize] = outcome;
    }
    /// Every check with its outcome, in order.
    pub fn iter(&self) -> impl Iterator<Item = (TdxCheck, Outcome)> + '_ {
        TdxCheck::ALL.iter().copied().zip(self.outcomes.iter().copied())
    }
    /// The waived checks.
    pub fn waived(&self) -> impl Iterator<Item = TdxCheck> + '_ {
        self.iter().filter(|(_, o)| *o == Outcome::Waived).map(|(c, _)| c)
    }
}

/// An 8-byte field compared under a mask (bytes in quote order, little-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Masked {
    /// The expected value.
    pub value: Hex<8>,
    /// Which bits are compared.
    pub mask: Hex<8>,
}

impl Masked {
    fn matches(&self, found: u64) -> bool {
        let (v, m) = (u64::from_le_bytes(self.value.0), u64::from_le_bytes(self.mask.0));
        found & m == v & m
    }
}

/// What may follow the quote in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrailingBytes {
    /// Nothing.
    None,
    /// Zero bytes only (fixed-size quote buffers); recorded as passed.
    #[default]
    ZeroPadding,
    /// Anything (explicit waiver; recorded as waived). The bytes are never interpreted.
    Any,
}

/// The TDX policy. See the module documentation for defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TdxPolicy {
    /// TCB statuses accepted (default: `UpToDate`). `Revoked` cannot be listed.
    pub accepted_tcb_statuses: Vec<TcbStatus>,
    /// Advisory IDs accepted on the matched TCB levels (default: none).
    pub allowed_advisory_ids: Vec<String>,
    /// Expected REPORTDATA (exactly 64 bytes). Per-verification values (nonces) go in the request instead.
    pub report_data: Option<Hex<64>>,
    /// Allowed MRTD values (empty: waived).
    pub mrtd: Vec<Hex<48>>,
    /// Expected RTMR0.
    pub rtmr0: Option<Hex<48>>,
    /// Expected RTMR1.
    pub rtmr1: Option<Hex<48>>,
    /// Expected RTMR2.
    pub rtmr2: Option<Hex<48>>,
    /// Expected RTMR3.
    pub rtmr3: Option<Hex<48>>,
    /// Expected MRCONFIGID.
    pub mr_config_id: Option<Hex<48>>,
    /// Expected MROWNER.
    pub mr_owner: Option<Hex<48>>,
    /// Expected MROWNERCONFIG.
    pub mr_owner_config: Option<Hex<48>>,
    /// Allowed MRSEAM values (empty: waived).
    pub mr_seam: Vec<Hex<48>>,
    /// Expected MRSIGNERSEAM (beyond the collateral's module identity check).
    pub mr_signer_seam: Option<Hex<48>>,
    /// Accept debuggable TDs (TDATTRIBUTES bit 0).
    pub allow_debug: bool,
    /// Accept TDs with any of the other TUD bits (TDATTRIBUTES bits 1–7; a TD under debug).
    pub allow_debug_class: bool,
    /// Accept TDs with reserved TDATTRIBUTES bits set (bits 8–27 and 32–62).
    pub allow_reserved_attributes: bool,
    /// Accept TDs without SEPT_VE_DISABLE (TDATTRIBUTES bit 28): the guest kernel then receives #VE for EPT
    /// violations the host can provoke. Azure's TD-partitioned guests run this way (the `azure-tdx` row of
    /// the variant table waives it).
    pub allow_missing_sept_ve_disable: bool,
    /// Accept migratable TDs (TDATTRIBUTES bit 29): the TD's state may leave this platform.
    pub allow_migratable: bool,
    /// Expected TDATTRIBUTES under a mask.
    pub td_attributes: Option<Masked>,
    /// Expected XFAM under a mask.
    pub xfam: Option<Masked>,
    /// Minimum TEE_TCB_SVN, byte by byte.
    pub min_tee_tcb_svn: Option<Hex<16>>,
    /// Accept a non-zero MRSERVICETD (TDX 1.5 TDs bound to service TDs).
    pub allow_service_td: bool,
    /// What may follow the quote.
    pub trailing_bytes: TrailingBytes,
    /// Revocation checking (default: CRLs required).
    pub revocation: Revocation,
    /// The TDX attestation variants (`qemu-tdx`, `azure-tdx`) refuse a policy whose `mrtd` allow-list is
    /// empty — nothing would pin what the TD booted — unless this waiver is set; every validation then
    /// reports [`LaunchPinning::DangerouslyUnpinned`]. A plain quote verification ([`super::TdxVerifier::verify`])
    /// does not consult it.
    pub dangerous_allow_unpinned_launch: bool,
}

impl Default for TdxPolicy {
    fn default() -> Self {
        Self {
            accepted_tcb_statuses: vec![TcbStatus::UpToDate],
            allowed_advisory_ids: Vec::new(),
            report_data: None,
            mrtd: Vec::new(),
            rtmr0: None,
            rtmr1: None,
            rtmr2: None,
            rtmr3: None,
            mr_config_id: None,
            mr_owner: None,
            mr_owner_config: None,
            mr_seam: Vec::new(),
            mr_signer_seam: None,
            allow_debug: false,
            allow_debug_class: false,
            allow_reserved_attributes: false,
            allow_missing_sept_ve_disable: false,
            allow_migratable: false,
            td_attributes: None,
            xfam: None,
            min_tee_tcb_svn: None,
            allow_service_td: false,
            trailing_bytes: TrailingBytes::ZeroPadding,
            revocation: Revocation::Require,
            dangerous_allow_unpinned_launch: false,
        }
    }
}

impl TdxPolicy {
    /// Parses a TOML policy.
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        crate::policy::from_toml::<Self>(text)?.validate("toml")
    }

    /// Parses a JSON policy.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        crate::policy::from_json::<Self>(text)?.validate("json")
    }

    /// Parses TOML or JSON, chosen by the first non-blank character (`{` means JSON).
    pub fn from_text(text: &str) -> Result<Self, Error> {
        if text.trim_start().starts_with('{') { Self::from_json(text) } else { Self::from_toml(text) }
    }

    fn validate(self, format: &'static str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::PolicyFile { format, reason: reason.into() };
        if self.accepted_tcb_statuses.contains(&TcbStatus::Revoked) {
            return Err(bad("a Revoked TCB is never accepted"));
        }
        if self.accepted_tcb_statuses.is_empty() {
            return Err(bad("accepted_tcb_statuses is empty: no quote could pass"));
        }
        Ok(self)
    }

    /// How this policy pins the TD's launch: [`LaunchPinning::Measurement`] when `mrtd` lists the allowed
    /// TD measurements, [`LaunchPinning::DangerouslyUnpinned`] under the named waiver, else
    /// [`Error::LaunchUnpinned`]. MRTD is the TDX module's measurement of the initial TD memory (the virtual
    /// firmware); RTMRs are extended by that firmware, so without MRTD they prove nothing.
    pub fn launch_pinning(&self) -> Result<LaunchPinning, Error> {
        if !self.mrtd.is_empty() {
            Ok(LaunchPinning::Measurement)
        } else if self.dangerous_allow_unpinned_launch {
            Ok(LaunchPinning::DangerouslyUnpinned)
        } else {
            Err(Error::LaunchUnpinned)
        }
    }

    /// This policy with the TD-attribute checks in `waived` waived, as a variant whose platform cannot pass
    /// them needs (the variant table's `td_waivers`). Only the TD-attribute checks ([`TdxPolicy::WAIVABLE_FOR_PLATFORM`]) have waivers; other checks in `waived` are not waivable this way and are ignored
    /// (the variant table's test keeps its rows to waivable checks).
    pub fn with_waived(mut self, waived: &[TdxCheck]) -> Self {
        for check in waived {
            match check {
                TdxCheck::Debug => self.allow_debug = true,
                TdxCheck::DebugClass => self.allow_debug_class = true,
                TdxCheck::ReservedAttributes => self.allow_reserved_attributes = true,
                TdxCheck::SeptVeDisable => self.allow_missing_sept_ve_disable = true,
                TdxCheck::Migratable => self.allow_migratable = true,
                TdxCheck::ServiceTd => self.allow_service_td = true,
                _ => {}
            }
        }
        self
    }

    /// The checks [`TdxPolicy::with_waived`] can waive.
    pub const WAIVABLE_FOR_PLATFORM: [TdxCheck; 6] = [
        TdxCheck::Debug,
        TdxCheck::DebugClass,
        TdxCheck::ReservedAttributes,
        TdxCheck::SeptVeDisable,
        TdxCheck::Migratable,
        TdxCheck::ServiceTd,
    ];

    /// The TD-attribute checks with their waivers and the TDATTRIBUTES bits each judges (set bits fail,
    /// except for SEPT_VE_DISABLE, whose absence fails), in verdict order.
    pub(crate) fn attribute_checks(&self) -> [(TdxCheck, bool, u64); 5] {
        use super::body::{
            TD_ATTRIBUTE_DEBUG, TD_ATTRIBUTE_MIGRATABLE, TD_ATTRIBUTE_SEPT_VE_DISABLE, TD_ATTRIBUTES_RESERVED,
            TD_ATTRIBUTES_TUD_OTHER,
        };
        [
            (TdxCheck::Debug, self.allow_debug, TD_ATTRIBUTE_DEBUG),
            (TdxCheck::DebugClass, self.allow_debug_class, TD_ATTRIBUTES_TUD_OTHER),
            (TdxCheck::ReservedAttributes, self.allow_reserved_attributes, TD_ATTRIBUTES_RESERVED),
            (TdxCheck::SeptVeDisable, self.allow_missing_sept_ve_disable, TD_ATTRIBUTE_SEPT_VE_DISABLE),
            (TdxCheck::Migratable, self.allow_migratable, TD_ATTRIBUTE_MIGRATABLE),
        ]
    }

    /// The RTMR expectations in index order.
    pub(crate) fn rtmrs(&self) -> [(TdxCheck, Option<&Hex<48>>); 4] {
        [
            (TdxCheck::Rtmr0, self.rtmr0.as_ref()),
            (TdxCheck::Rtmr1, self.rtmr1.as_ref()),
            (TdxCheck::Rtmr2, self.rtmr2.as_ref()),
            (TdxCheck::Rtmr3, self.rtmr3.as_ref()),
        ]
    }
}

/// Fails a TDX check with expected/found values.
pub(crate) fn violation(check: TdxCheck, expected: Value, found: Value) -> Error {
    Error::TdxPolicy(TdxPolicyViolation { check, expected, found })
}

/// Checks `found` against one optional expected value.
pub(crate) fn exact<const N: usize>(
    verdict: &mut TdxVerdict,
    check: TdxCheck,
    expected: Option<&Hex<N>>,
    found: &[u8; N],
) -> Result<(), Error> {
    match expected {
        None => verdict.set(check, Outcome::Waived),
        Some(e) if &e.0 == found => verdict.set(check, Outcome::Passed),
        Some(e) => {
            return Err(violation(
                check,
                Value::Bytes(crate::error::Bytes::new(&e.0)),
                Value::Bytes(crate::error::Bytes::new(found)),
            ));
        }
    }
    Ok(())
}

/// Checks `found` against an allow-list; empty lists waive the check.
pub(crate) fn allow_list<const N: usize>(
    verdict: &mut TdxVerdict,
    check: TdxCheck,
    allowed: &[Hex<N>],
    found: &[u8; N],
) -> Result<(), Error> {
    if allowed.is_empty() {
        verdict.set(check, Outcome::Waived);
    } else if allowed.iter().any(|a| &a.0 == found) {
        verdict.set(check, Outcome::Passed);
    } else {
        return Err(violation(check, Value::OneOf(allowed.len()), Value::Bytes(crate::error::Bytes::new(found))));
    }
    Ok(())
}

/// Checks an 8-byte field under a mask.
pub(crate) fn masked(
    verdict: &mut TdxVerdict,
    check: TdxCheck,
    expected: Option<&Masked>,
    found: u64,
) -> Result<(), Error> {
    match expected {
        None => verdict.set(check, Outcome::Waived),
        Some(m) if m.matches(found) => verdict.set(check, Outcome::Passed),
        Some(m) => {
            return Err(violation(
                check,
                Value::Bytes(crate::error::Bytes::new(&m.value.0)),
                Value::Bytes(crate::error::Bytes::new(&found.to_le_bytes())),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_strict() {
        let p = TdxPolicy::default();
        assert_eq!(p.accepted_tcb_statuses, vec![TcbStatus::UpToDate]);
        assert!(!p.allow_debug && !p.allow_service_td);
        assert!(!p.allow_debug_class && !p.allow_reserved_attributes);
        assert!(!p.allow_missing_sept_ve_disable && !p.allow_migratable);
        assert_eq!(p.revocation, Revocation::Require);
        assert_eq!(TdxPolicy::from_toml("").unwrap(), p);
        assert_eq!(TdxPolicy::from_json("{}").unwrap(), p);
    }

    #[test]
    fn files() {
        let p = TdxPolicy::from_toml(&format!(
            "accepted_tcb_statuses = [\"UpToDate\", \"SWHardeningNeeded\"]\nallowed_advisory_ids = [\"INTEL-SA-00837\"]\n\
             mrtd = [\"{}\"]\ntd_attributes = {{ value = \"0000001000000000\", mask = \"ffffffffffffffff\" }}\n\
             trailing_bytes = \"none\"\n",
            "ab".repeat(48)
        ))
        .unwrap();
        assert_eq!(p.mrtd.len(), 1);
        assert_eq!(p.trailing_bytes, TrailingBytes::None);
        assert!(p.td_attributes.unwrap().matches(1 << 28));
        assert!(!p.td_attributes.unwrap().matches(1 << 28 | 1));
        let e = TdxPolicy::from_toml(&format!("mrtd = [\"{}\"]", "00".repeat(47))).unwrap_err();
        assert!(e.to_string().contains("exactly 48 bytes"), "{e}");
        assert!(TdxPolicy::from_toml("accepted_tcb_statuses = [\"Revoked\"]").is_err());
        assert!(TdxPolicy::from_toml("accepted_tcb_statuses = []").is_err());
        assert!(TdxPolicy::from_toml("unknown = 1").is_err());
        assert!(TdxPolicy::from_json(r#"{"report_data": "00"}"#).is_err());
    }

    #[test]
    fn launch_pinning_needs_mrtd_or_the_named_waiver() {
        assert_eq!(TdxPolicy::default().launch_pinning(), Err(Error::LaunchUnpinned));
        let m = TdxPolicy::from_toml(&format!("mrtd = [\"{}\"]", "11".repeat(48))).unwrap();
        assert_eq!(m.launch_pinning(), Ok(LaunchPinning::Measurement));
        let w = TdxPolicy::from_toml("dangerous_allow_unpinned_launch = true").unwrap();
        assert_eq!(w.launch_pinning(), Ok(LaunchPinning::DangerouslyUnpinned));
        // RTMRs alone pin nothing: the firmware that extends them is unmeasured.
        let r = TdxPolicy::from_toml(&format!("rtmr0 = \"{}\"", "22".repeat(48))).unwrap();
        assert_eq!(r.launch_pinning(), Err(Error::LaunchUnpinned));
    }

    #[test]
    fn platform_waivers_set_exactly_their_waiver() {
        let base = TdxPolicy::default();
        let w = base.clone().with_waived(&[TdxCheck::SeptVeDisable]);
        assert!(w.allow_missing_sept_ve_disable);
        assert_eq!(TdxPolicy { allow_missing_sept_ve_disable: false, ..w }, base);
        // Checks that are not TD-attribute checks cannot be waived this way.
        assert_eq!(base.clone().with_waived(&[TdxCheck::TcbStatus, TdxCheck::Mrtd]), base);
        for c in TdxPolicy::WAIVABLE_FOR_PLATFORM {
            assert_ne!(base.clone().with_waived(&[c]), base, "{c}");
        }
        let p = TdxPolicy::from_toml("allow_migratable = true\nallow_missing_sept_ve_disable = true").unwrap();
        assert!(p.allow_migratable && p.allow_missing_sept_ve_disable && !p.allow_debug_class);
    }

    #[test]
    fn check_names_unique() {
        for (i, a) in TdxCheck::ALL.iter().enumerate() {
            for b in &TdxCheck::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }
}
