//! What kind of failure an [`Error`] is, which check it failed, and which policy key governs that check —
//! the facts every output path (CLI exit status and messages, the result schema, EAR, the C ABI) reports
//! the same way.
//!
//! | class | meaning | `attest` exit status |
//! |---|---|---|
//! | [`ErrorClass::Malformed`] | the input is not the structure it must be: wrong version or magic, bad length, truncated or trailing bytes, undecodable encoding | 2 |
//! | [`ErrorClass::Refused`] | the input is well-formed evidence and a check said no (signature, chain, binding, policy) | 1 |
//! | [`ErrorClass::Misuse`] | the caller's request or configuration is wrong (not a property of the evidence) | 2 |
//!
//! New error variants default to `Refused`; a variant that means "this is not the structure" belongs in
//! the `Malformed` list of [`Error::class`].

use super::Error;
use crate::snp::policy::Check;
use crate::tdx::TdxCheck;

/// The kind of an [`Error`] (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The input is not the structure it must be.
    Malformed,
    /// Well-formed evidence that a check refused.
    Refused,
    /// The caller's request or configuration is wrong.
    Misuse,
}

impl ErrorClass {
    /// A stable name: `malformed`, `refused`, `misuse`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Refused => "refused",
            Self::Misuse => "misuse",
        }
    }
}

impl Error {
    /// Whether the input was malformed, refused by a check, or the call was wrong.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Der { .. }
            | Self::TrailingData { .. }
            | Self::Truncated { .. }
            | Self::LimitExceeded { .. }
            | Self::Pem { .. }
            | Self::UnsupportedAlgorithm { .. }
            | Self::AmdExtension { .. }
            | Self::MissingAmdExtension { .. }
            | Self::UnsupportedReportVersion { .. }
            | Self::UnsupportedReportSignatureAlgorithm { .. }
            | Self::ReservedNonZero { .. }
            | Self::UnsupportedSigningKey { .. }
            | Self::SnpCertTable { .. }
            | Self::Tpm { .. }
            | Self::UnsupportedTpmAlgorithm { .. }
            | Self::TpmMagic { .. }
            | Self::TpmAttestType { .. }
            | Self::EventLog { .. }
            | Self::RuntimeData { .. }
            | Self::MissingEvidence { .. }
            | Self::GceInstanceInfo { .. }
            | Self::EvidenceFormat { .. }
            | Self::TdxQuote { .. }
            | Self::TdxUnsupported { .. }
            | Self::SgxExtension { .. }
            | Self::Collateral { .. } => ErrorClass::Malformed,
            Self::PolicyFile { .. } | Self::Misuse { .. } => ErrorClass::Misuse,
            _ => ErrorClass::Refused,
        }
    }

    /// The stable name of the check this error failed, in the vocabulary of the verdicts (`Check`,
    /// `TdxCheck`, `GceCheck` names and the variant checks `ak_trust`, `pcr_policy`, …). `None` for
    /// malformed input (the caller names its structure check) and for misuse.
    pub fn failed_check(&self) -> Option<&'static str> {
        Some(match self {
            Self::Policy(v) => v.check.name(),
            Self::TdxPolicy(v) => v.check.name(),
            Self::PlatformPolicy { check, .. } => check,
            Self::ReportSignatureInvalid => Check::ReportSignature.name(),
            Self::ProductUnknown | Self::UnsupportedProduct { .. } | Self::ProductMismatch { .. } => {
                Check::Product.name()
            }
            Self::CertSignatureInvalid { .. }
            | Self::IssuerMismatch { .. }
            | Self::NotACa { .. }
            | Self::UntrustedCertificate { .. }
            | Self::UnsupportedCriticalExtension
            | Self::LeafKeyNotP384 { .. }
            | Self::UnknownIssuer { .. }
            | Self::PathBudgetExceeded
            | Self::PathLenConstraintViolated { .. }
            | Self::ExtendedKeyUsageNotPermitted { .. }
            | Self::UntrustedIntelRoot => Check::CertificateChain.name(),
            Self::CertExpired { .. } | Self::CertNotYetValid { .. } => Check::CertificateValidity.name(),
            Self::Revoked { .. }
            | Self::CrlSignatureInvalid
            | Self::CrlStale { .. }
            | Self::CrlNotYetValid { .. }
            | Self::CrlMissing => Check::Revocation.name(),
            Self::SigningKeyMismatch { .. } => Check::SigningKey.name(),
            Self::TcbMismatch { .. } => Check::TcbBinding.name(),
            Self::ChipIdMismatch { .. } => Check::ChipIdBinding.name(),
            Self::AkAttributes { .. } => "ak_attributes",
            Self::NonceMismatch { .. } => "nonce",
            Self::PcrDigestMismatch { .. } | Self::PcrValueMissing { .. } => "pcr_digest",
            Self::Sha1Refused => "sha1_banks",
            Self::QuoteSignatureInvalid | Self::TdQuoteSignatureInvalid => "quote_signature",
            Self::EventLogReplayMismatch { .. } => "event_log_replay",
            Self::VariantMismatch { .. } => "variant",
            Self::AkNotTrusted { .. } => "ak_trust",
            Self::AkBindingMismatch { .. } => "ak_binding",
            Self::FreshnessBindingMismatch { .. } => "freshness_binding",
            Self::PcrMismatch { .. } => "pcr_policy",
            Self::AkCertificateKeyMismatch => "ak_certificate_key",
            Self::QualifiedSignerMismatch { .. } => "ak_qualified_name",
            Self::RuntimeUserDataMismatch { .. } => "user_data",
            Self::QeReportSignatureInvalid => TdxCheck::QeReportSignature.name(),
            Self::QeReportDataMismatch { .. } => TdxCheck::QeReportData.name(),
            Self::CollateralSignatureInvalid { .. } => TdxCheck::CollateralSignature.name(),
            Self::CollateralExpired { .. } | Self::CollateralNotYetValid { .. } | Self::CollateralMissing { .. } => {
                TdxCheck::CollateralValidity.name()
            }
            Self::CollateralMismatch { .. } => TdxCheck::PlatformBinding.name(),
            Self::TcbLevelNotFound { .. } => TdxCheck::TcbStatus.name(),
            Self::IdentityMismatch { what, .. } if what.contains("QE") => TdxCheck::QeIdentity.name(),
            Self::IdentityMismatch { .. } => TdxCheck::TdxModuleIdentity.name(),
            Self::RtmrReplayMismatch { .. } => "ccel_replay",
            Self::LaunchUnpinned => "launch_pinning",
            _ => return None,
        })
    }

    /// The policy key that governs the failed check: setting it (as the example policies in
    /// `examples/policies/` show) accepts such evidence knowingly. `None` when no policy key can.
    pub fn policy_key(&self) -> Option<&'static str> {
        match self {
            Self::Policy(v) => snp_policy_key(v.check),
            Self::TdxPolicy(v) => tdx_policy_key(v.check),
            Self::PlatformPolicy { check, .. } => match *check {
                "production" => Some("require_production"),
                "project" => Some("allowed_projects"),
                "confidential_technology" => Some("allowed_technologies"),
                "event_log_replay" => Some("require_event_log"),
                _ => None,
            },
            Self::Sha1Refused => Some("allow_sha1"),
            Self::CrlStale { .. } => Some("allow_stale_crl"),
            Self::CrlMissing => Some("revocation"),
            Self::LaunchUnpinned => Some("dangerous_allow_unpinned_launch"),
            _ => None,
        }
    }
}

/// The `SnpPolicy` key of an SNP policy check.
fn snp_policy_key(check: Check) -> Option<&'static str> {
    Some(match check {
        Check::Product => "products",
        Check::Revocation => "revocation",
        Check::ReportVersion => "min_report_version",
        Check::ReportData => "report_data",
        Check::Measurement => "measurements",
        Check::HostData => "host_data",
        Check::IdKeyDigest => "id_key_digests",
        Check::AuthorKeyDigest => "author_key_digests",
        Check::FamilyId => "family_id",
        Check::ImageId => "image_id",
        Check::GuestSvn => "min_guest_svn",
        Check::Debug => "allow_debug",
        Check::MigrationAgent => "allow_migration_agent",
        Check::Smt => "allow_smt",
        Check::SingleSocket => "require_single_socket",
        Check::AbiVersion => "min_abi",
        Check::Vmpl => "vmpl",
        Check::PlatformInfo => "required_platform_info",
        Check::ChipId => "chip_ids",
        Check::MinReportedTcb => "min_reported_tcb",
        Check::MinCommittedTcb => "min_committed_tcb",
        Check::MinLaunchTcb => "min_launch_tcb",
        Check::MinCurrentTcb => "min_current_tcb",
        Check::ProvisionalFirmware => "allow_provisional_firmware",
        _ => return None,
    })
}

/// The `TdxPolicy` key of a TDX policy check (new checks: add their key here).
fn tdx_policy_key(check: TdxCheck) -> Option<&'static str> {
    Some(match check {
        TdxCheck::TrailingBytes => "trailing_bytes",
        TdxCheck::Revocation => "revocation",
        TdxCheck::TcbStatus => "accepted_tcb_statuses",
        TdxCheck::AdvisoryIds => "allowed_advisory_ids",
        TdxCheck::ReportData => "report_data",
        TdxCheck::Mrtd => "mrtd",
        TdxCheck::Rtmr0 => "rtmr0",
        TdxCheck::Rtmr1 => "rtmr1",
        TdxCheck::Rtmr2 => "rtmr2",
        TdxCheck::Rtmr3 => "rtmr3",
        TdxCheck::MrConfigId => "mr_config_id",
        TdxCheck::MrOwner => "mr_owner",
        TdxCheck::MrOwnerConfig => "mr_owner_config",
        TdxCheck::MrSeam => "mr_seam",
        TdxCheck::MrSignerSeam => "mr_signer_seam",
        TdxCheck::Debug => "allow_debug",
        TdxCheck::DebugClass => "allow_debug_class",
        TdxCheck::ReservedAttributes => "allow_reserved_attributes",
        TdxCheck::SeptVeDisable => "allow_missing_sept_ve_disable",
        TdxCheck::Migratable => "allow_migratable",
        TdxCheck::TdAttributes => "td_attributes",
        TdxCheck::Xfam => "xfam",
        TdxCheck::MinTeeTcbSvn => "min_tee_tcb_svn",
        TdxCheck::ServiceTd => "allow_service_td",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{PolicyViolation, Value};

    #[test]
    fn classes_checks_and_keys() {
        assert_eq!(Error::UnsupportedReportVersion { found: 9 }.class(), ErrorClass::Malformed);
        assert_eq!(Error::Truncated { structure: "x", needed: 2, found: 1 }.class(), ErrorClass::Malformed);
        assert_eq!(Error::ReportSignatureInvalid.class(), ErrorClass::Refused);
        assert_eq!(Error::Misuse { reason: "r" }.class(), ErrorClass::Misuse);
        assert_eq!(Error::ReportSignatureInvalid.failed_check(), Some("report_signature"));
        let v = Error::Policy(PolicyViolation {
            check: Check::ProvisionalFirmware,
            expected: Value::Bool(false),
            found: Value::Bool(true),
        });
        assert_eq!(
            (v.failed_check(), v.policy_key()),
            (Some("provisional_firmware"), Some("allow_provisional_firmware"))
        );
        assert_eq!(Error::LaunchUnpinned.policy_key(), Some("dangerous_allow_unpinned_launch"));
        // Every SNP policy check that a policy key configures names one that exists in SnpPolicy.
        let keys = serde_json::to_value(crate::snp::SnpPolicy::default()).unwrap();
        for c in Check::ALL {
            if let Some(k) = snp_policy_key(*c) {
                assert!(keys.get(k).is_some(), "{k}");
            }
        }
        let keys = serde_json::to_value(crate::tdx::TdxPolicy::default()).unwrap();
        for c in TdxCheck::ALL {
            if let Some(k) = tdx_policy_key(*c) {
                assert!(keys.get(k).is_some(), "{k}");
            }
        }
    }
}
