//! Result codes: a stable `#[repr(u32)]` enum in ranges per domain, the total mapping from the engine's
//! [`Error`] (and the measurements crate's), range classifiers, and the static text of each code.
//!
//! | range | domain |
//! |---|---|
//! | 0 | OK |
//! | 1000–1999 | API use: NULL arguments, bad lengths, buffers, panics, caller mistakes |
//! | 2000–2999 | SEV-SNP report and product |
//! | 3000–3999 | X.509, AMD certificates, chains, CRLs (DER/PEM included) |
//! | 4000–4999 | TPM 2.0 quotes, keys and event logs |
//! | 5000–5999 | policy (5100 + n: the failed SNP policy check; 5200 + n: the failed TDX policy check), policy and measurements files |
//! | 6000–6999 | Azure HCL and attestation variants / documents |
//! | 7000–7999 | encoding shared by several structures (truncation, trailing bytes, size limits, algorithms) |
//! | 8000–8999 | Intel TDX: quotes, PCK certificates, collateral, TCB levels, CC event log (TDX policy checks are 5200 + n in the policy range) |
//! | 9000 | an engine error this build does not classify (the engine's `Error` is `#[non_exhaustive]`) |
//!
//! Numbers are never reused or renumbered (`tests::numbers_are_pinned`); a retired code stays reserved.
//! Each domain has a generic `*_OTHER` code (x000) for engine errors added later that fit the domain but
//! have no code of their own yet.

use attest_engine::Error;
use attest_engine::snp::Check;
use attest_engine::tdx::TdxCheck;

/// A result code. C callers receive it as `uint32_t` (`attest_result`); accept codes from C as `u32`,
/// never as this enum, since C may pass any number.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attest_result {
    /// Success.
    Ok = 0,

    // ---- 1000: API use -----------------------------------------------------------------------------
    /// A Rust panic was caught at the FFI boundary (a bug in attest; nothing was written).
    Panic = 1000,
    /// A required pointer argument was NULL (or a NULL input with a nonzero length).
    NullParameter = 1001,
    /// An argument is invalid (wrong length, unknown enum value, text that is not UTF-8, …).
    InvalidParameter = 1002,
    /// The output buffer is too small; `*out_n` holds the size needed.
    InsufficientSize = 1003,
    /// The verdict has no such item (e.g. the TCB of a TPM-only verdict, a check index past the end).
    NotAvailable = 1004,
    /// No certificate was given and the verifier has none cached for this report (chip id, TCB, signer).
    CertificateNotCached = 1005,
    /// The engine reports an API misuse (e.g. an expected REPORT_DATA that is not 64 bytes).
    Misuse = 1006,
    /// An empty nonce was passed without `ATTEST_VERIFY_ALLOW_EMPTY_NONCE`: the verification would say
    /// nothing about freshness.
    NonceRequired = 1007,

    // ---- 2000: SEV-SNP report -------------------------------------------------------------------------
    /// Another SEV-SNP report error.
    SnpOther = 2000,
    /// Report VERSION is not 2, 3 or 5.
    UnsupportedReportVersion = 2001,
    /// Report SIGNATURE_ALGO is not ECDSA P-384 with SHA-384.
    UnsupportedReportSignatureAlgorithm = 2002,
    /// A reserved report field is not zero.
    ReservedNonZero = 2003,
    /// SIGNING_KEY names neither the VCEK nor the VLEK.
    UnsupportedSigningKey = 2004,
    /// The report signature does not verify under the VCEK/VLEK.
    ReportSignatureInvalid = 2005,
    /// The product (Milan, Genoa, Turin) could not be determined.
    ProductUnknown = 2006,
    /// A productName or CPUID names an unsupported product.
    UnsupportedProduct = 2007,
    /// Two sources disagree on the product.
    ProductMismatch = 2008,
    /// The report's SIGNING_KEY does not match the certificate kind (VCEK/VLEK).
    SigningKeyMismatch = 2009,
    /// REPORTED_TCB differs from the certificate's TCB.
    TcbMismatch = 2010,
    /// CHIP_ID differs from the VCEK's hwID.
    ChipIdMismatch = 2011,

    // ---- 3000: X.509 and chains -------------------------------------------------------------------------
    /// Another certificate or CRL error.
    X509Other = 3000,
    /// Malformed DER.
    Der = 3001,
    /// Malformed PEM.
    Pem = 3002,
    /// A critical extension the engine does not understand.
    UnsupportedCriticalExtension = 3003,
    /// A malformed AMD certificate extension.
    AmdExtension = 3004,
    /// A required AMD certificate extension is missing.
    MissingAmdExtension = 3005,
    /// A certificate signature does not verify under its issuer.
    CertSignatureInvalid = 3006,
    /// A certificate's issuer name differs from its issuer's subject.
    IssuerMismatch = 3007,
    /// An issuing certificate is not a CA.
    NotACa = 3008,
    /// A supplied ARK/ASK/ASVK is not the pinned AMD one.
    UntrustedCertificate = 3009,
    /// A certificate is expired at the trusted time.
    CertExpired = 3010,
    /// A certificate is not yet valid at the trusted time.
    CertNotYetValid = 3011,
    /// The VCEK/VLEK key is not ECDSA P-384.
    LeafKeyNotP384 = 3012,
    /// A certificate is revoked by the ARK's CRL.
    Revoked = 3013,
    /// No trusted issuer was found.
    UnknownIssuer = 3014,
    /// Path building exceeded its budget.
    PathBudgetExceeded = 3015,
    /// The CRL is not signed by a trusted ARK.
    CrlSignatureInvalid = 3016,
    /// The CRL's nextUpdate has passed.
    CrlStale = 3017,
    /// The CRL's thisUpdate is in the future.
    CrlNotYetValid = 3018,
    /// The policy requires a CRL and none was installed.
    CrlMissing = 3019,
    /// An issuer's pathLenConstraint allows fewer intermediates below it than the path has.
    PathLenConstraintViolated = 3020,
    /// A certificate's extended key usage does not list the required purpose.
    ExtendedKeyUsageNotPermitted = 3021,

    // ---- 4000: TPM ----------------------------------------------------------------------------------------
    /// Another TPM error.
    TpmOther = 4000,
    /// A malformed TPM structure.
    TpmMalformed = 4001,
    /// An unsupported TPM algorithm.
    UnsupportedTpmAlgorithm = 4002,
    /// TPMS_ATTEST.magic is not TPM_GENERATED_VALUE.
    TpmMagic = 4003,
    /// TPMS_ATTEST.type is not a quote.
    TpmAttestType = 4004,
    /// The attestation key is not a restricted signing key.
    AkAttributes = 4005,
    /// The quote's extraData is not the expected nonce.
    NonceMismatch = 4006,
    /// pcrDigest does not match the presented PCR values.
    PcrDigestMismatch = 4007,
    /// A quoted PCR has no presented value (or one of the wrong length).
    PcrValueMissing = 4008,
    /// SHA-1 was refused.
    Sha1Refused = 4009,
    /// The quote signature does not verify under the attestation key.
    QuoteSignatureInvalid = 4010,
    /// A malformed TCG event log.
    EventLog = 4011,
    /// The event log does not replay to the quoted PCRs.
    EventLogReplayMismatch = 4012,
    /// A quote's qualifiedSigner is not the attestation key's qualified name (GCE: the TPM says another key
    /// signed).
    QualifiedSignerMismatch = 4013,

    // ---- 5000: policy ---------------------------------------------------------------------------------------
    /// A policy check failed (a check without a code of its own).
    PolicyViolation = 5000,
    /// The policy file (JSON) is invalid.
    PolicyFile = 5001,
    /// The measurements file (JSON/YAML) is invalid.
    MeasurementsFile = 5002,
    /// An SNP-based variant's policy pins no launch measurement (a TDX variant's: no MRTD) and does not set
    /// `dangerous_allow_unpinned_launch`.
    LaunchUnpinned = 5003,
    /// A platform policy check failed (GCE: production VM, project, confidential technology).
    PlatformPolicy = 5004,
    /// Policy check `report_structure` failed.
    PolicyReportStructure = 5101,
    /// Policy check `product` failed (product not allowed).
    PolicyProduct = 5102,
    /// Policy check `certificate_chain` failed.
    PolicyCertificateChain = 5103,
    /// Policy check `certificate_validity` failed.
    PolicyCertificateValidity = 5104,
    /// Policy check `revocation` failed.
    PolicyRevocation = 5105,
    /// Policy check `signing_key` failed (e.g. a variant needs a VLEK and got a VCEK).
    PolicySigningKey = 5106,
    /// Policy check `tcb_binding` failed.
    PolicyTcbBinding = 5107,
    /// Policy check `chip_id_binding` failed.
    PolicyChipIdBinding = 5108,
    /// Policy check `report_signature` failed.
    PolicyReportSignature = 5109,
    /// Policy check `report_version` failed.
    PolicyReportVersion = 5110,
    /// Policy check `report_data` failed (REPORT_DATA is not the expected value).
    PolicyReportData = 5111,
    /// Policy check `measurement` failed.
    PolicyMeasurement = 5112,
    /// Policy check `host_data` failed.
    PolicyHostData = 5113,
    /// Policy check `id_key_digest` failed.
    PolicyIdKeyDigest = 5114,
    /// Policy check `author_key_digest` failed.
    PolicyAuthorKeyDigest = 5115,
    /// Policy check `family_id` failed.
    PolicyFamilyId = 5116,
    /// Policy check `image_id` failed.
    PolicyImageId = 5117,
    /// Policy check `guest_svn` failed.
    PolicyGuestSvn = 5118,
    /// Policy check `debug` failed (the guest allows debugging).
    PolicyDebug = 5119,
    /// Policy check `migration_agent` failed.
    PolicyMigrationAgent = 5120,
    /// Policy check `smt` failed.
    PolicySmt = 5121,
    /// Policy check `single_socket` failed.
    PolicySingleSocket = 5122,
    /// Policy check `abi_version` failed.
    PolicyAbiVersion = 5123,
    /// Policy check `vmpl` failed.
    PolicyVmpl = 5124,
    /// Policy check `platform_info` failed.
    PolicyPlatformInfo = 5125,
    /// Policy check `chip_id` failed.
    PolicyChipId = 5126,
    /// Policy check `tcb_consistency` failed.
    PolicyTcbConsistency = 5127,
    /// Policy check `min_reported_tcb` failed.
    PolicyMinReportedTcb = 5128,
    /// Policy check `min_committed_tcb` failed.
    PolicyMinCommittedTcb = 5129,
    /// Policy check `min_launch_tcb` failed.
    PolicyMinLaunchTcb = 5130,
    /// Policy check `min_current_tcb` failed.
    PolicyMinCurrentTcb = 5131,
    /// Policy check `provisional_firmware` failed.
    PolicyProvisionalFirmware = 5132,
    /// A TDX policy check failed (a check without a code of its own).
    PolicyTdxViolation = 5200,
    /// TDX policy check `trailing_bytes` failed (bytes after the quote the policy does not allow).
    PolicyTdxTrailingBytes = 5201,
    /// TDX policy check `tcb_status` failed (a TCB status the policy does not accept).
    PolicyTdxTcbStatus = 5202,
    /// TDX policy check `advisory_ids` failed (an advisory ID the policy does not allow).
    PolicyTdxAdvisoryIds = 5203,
    /// TDX policy check `report_data` failed.
    PolicyTdxReportData = 5204,
    /// TDX policy check `mrtd` failed.
    PolicyTdxMrtd = 5205,
    /// TDX policy check `rtmr0` failed.
    PolicyTdxRtmr0 = 5206,
    /// TDX policy check `rtmr1` failed.
    PolicyTdxRtmr1 = 5207,
    /// TDX policy check `rtmr2` failed.
    PolicyTdxRtmr2 = 5208,
    /// TDX policy check `rtmr3` failed.
    PolicyTdxRtmr3 = 5209,
    /// TDX policy check `mr_config_id` failed.
    PolicyTdxMrConfigId = 5210,
    /// TDX policy check `mr_owner` failed.
    PolicyTdxMrOwner = 5211,
    /// TDX policy check `mr_owner_config` failed.
    PolicyTdxMrOwnerConfig = 5212,
    /// TDX policy check `mr_seam` failed.
    PolicyTdxMrSeam = 5213,
    /// TDX policy check `mr_signer_seam` failed.
    PolicyTdxMrSignerSeam = 5214,
    /// TDX policy check `debug` failed (a debuggable TD).
    PolicyTdxDebug = 5215,
    /// TDX policy check `td_attributes` failed.
    PolicyTdxTdAttributes = 5216,
    /// TDX policy check `xfam` failed.
    PolicyTdxXfam = 5217,
    /// TDX policy check `min_tee_tcb_svn` failed.
    PolicyTdxMinTeeTcbSvn = 5218,
    /// TDX policy check `service_td` failed (a TD bound to service TDs).
    PolicyTdxServiceTd = 5219,
    /// TDX policy check `debug_class` failed (another TUD bit: a TD under debug).
    PolicyTdxDebugClass = 5220,
    /// TDX policy check `reserved_attributes` failed (a reserved TD attribute bit).
    PolicyTdxReservedAttributes = 5221,
    /// TDX policy check `sept_ve_disable` failed (a TD without SEPT_VE_DISABLE).
    PolicyTdxSeptVeDisable = 5222,
    /// TDX policy check `migratable` failed (a migratable TD).
    PolicyTdxMigratable = 5223,

    // ---- 6000: Azure and variants ---------------------------------------------------------------------------
    /// Another Azure or attestation-variant error.
    VariantOther = 6000,
    /// The HCL runtime data is malformed or lacks the attestation key.
    RuntimeData = 6001,
    /// The document names another variant than the one asked for.
    VariantMismatch = 6002,
    /// Evidence the variant needs is missing.
    MissingEvidence = 6003,
    /// The attestation key is not trusted.
    AkNotTrusted = 6004,
    /// The hardware report does not bind the attestation key.
    AkBindingMismatch = 6005,
    /// An enforced PCR does not have its expected value.
    PcrMismatch = 6006,
    /// The attestation document (protobuf) is malformed.
    DocumentMalformed = 6007,
    /// The variant name is not one this build supports.
    UnsupportedVariant = 6008,
    /// The SNP report does not bind this attestation's AK and nonce (a replayed or foreign report).
    FreshnessBindingMismatch = 6009,
    /// Google's instance-information extension of a GCE AK certificate is malformed or disagrees with the
    /// attestation's unsigned copy.
    GceInstanceInfo = 6010,
    /// The AK certificate certifies another key than the attestation key.
    AkCertificateKeyMismatch = 6011,
    /// The Azure HCL runtime data's user-data is not the expected value (trustee v2 evidence).
    RuntimeUserDataMismatch = 6012,

    // ---- 7000: shared encoding ---------------------------------------------------------------------------
    /// Another encoding error.
    EncodingOther = 7000,
    /// An input is shorter than its structure.
    Truncated = 7001,
    /// Bytes follow a complete structure.
    TrailingData = 7002,
    /// A count or length exceeds its limit.
    LimitExceeded = 7003,
    /// An unsupported algorithm, key type or parameter.
    UnsupportedAlgorithm = 7004,
    /// Evidence in another tool's format (trustee JSON, az-cvm-vtpm bincode, go-tpm-tools protobuf) is
    /// malformed.
    EvidenceFormat = 7005,

    // ---- 8000: Intel TDX ------------------------------------------------------------------------------
    /// Another TDX error.
    TdxOther = 8000,
    /// A TD quote structure is malformed.
    TdxQuoteMalformed = 8001,
    /// A quote field holds a value the engine does not accept (version, TEE type, key type, QE vendor, …).
    TdxUnsupported = 8002,
    /// The QE report signature does not verify under the PCK key.
    QeReportSignatureInvalid = 8003,
    /// QE REPORTDATA does not bind the attestation key and QE authentication data.
    QeReportDataMismatch = 8004,
    /// The TD quote signature does not verify under the attestation key.
    TdQuoteSignatureInvalid = 8005,
    /// The PCK certificate's SGX extension is malformed or incomplete.
    SgxExtension = 8006,
    /// TDX collateral (TCB Info, QE Identity, bundle JSON) is malformed.
    CollateralMalformed = 8007,
    /// A collateral signature does not verify (TCB Info, QE Identity, a CRL).
    CollateralSignatureInvalid = 8008,
    /// A collateral part's nextUpdate lies before the trusted time.
    CollateralExpired = 8009,
    /// A collateral part's issueDate lies after the trusted time.
    CollateralNotYetValid = 8010,
    /// No collateral is installed for the quote's platform (FMSPC).
    CollateralMissing = 8011,
    /// The platform and the collateral disagree (FMSPC, PCE-ID, PCK CRL issuer).
    CollateralMismatch = 8012,
    /// No TCB level of the collateral is met.
    TcbLevelNotFound = 8013,
    /// The QE report or TDX module does not match its identity in the collateral.
    IdentityMismatch = 8014,
    /// A chain does not end in the pinned Intel SGX Root CA.
    UntrustedIntelRoot = 8015,
    /// The CC event log does not replay to the quote's RTMRs.
    RtmrReplayMismatch = 8016,

    // ---- 9000 -------------------------------------------------------------------------------------------
    /// An engine error this build of the FFI does not classify (see the detail text).
    Unclassified = 9000,
}

/// One table for the text of each code; the `match` in `text` has no wildcard, so a code missing here does
/// not compile, and `ALL` is generated from the same list.
macro_rules! result_table {
    ($($name:ident => $text:literal,)*) => {
        impl attest_result {
            /// Every code.
            pub(crate) const ALL: &'static [attest_result] = &[$(attest_result::$name,)*];
            /// The code's static description.
            pub(crate) fn text(self) -> &'static str {
                match self {
                    $(attest_result::$name => $text,)*
                }
            }
        }
    };
}

result_table! {
    Ok => "OK",
    Panic => "internal error: a panic was caught at the FFI boundary",
    NullParameter => "a required pointer argument was NULL",
    InvalidParameter => "an argument is invalid",
    InsufficientSize => "the output buffer is too small",
    NotAvailable => "the verdict has no such item",
    CertificateNotCached => "no certificate given and none cached for this report",
    Misuse => "API misuse reported by the engine",
    NonceRequired => "an empty nonce needs ATTEST_VERIFY_ALLOW_EMPTY_NONCE",
    SnpOther => "SEV-SNP report error",
    UnsupportedReportVersion => "unsupported SEV-SNP report version",
    UnsupportedReportSignatureAlgorithm => "unsupported SEV-SNP report signature algorithm",
    ReservedNonZero => "a reserved SEV-SNP report field is not zero",
    UnsupportedSigningKey => "unsupported SEV-SNP SIGNING_KEY",
    ReportSignatureInvalid => "SEV-SNP report signature does not verify",
    ProductUnknown => "AMD product could not be determined",
    UnsupportedProduct => "unsupported AMD product",
    ProductMismatch => "AMD product mismatch",
    SigningKeyMismatch => "report SIGNING_KEY does not match the certificate kind",
    TcbMismatch => "REPORTED_TCB does not match the certificate's TCB",
    ChipIdMismatch => "CHIP_ID does not match the VCEK hwID",
    X509Other => "certificate error",
    Der => "malformed DER",
    Pem => "malformed PEM",
    UnsupportedCriticalExtension => "unsupported critical certificate extension",
    AmdExtension => "malformed AMD certificate extension",
    MissingAmdExtension => "missing AMD certificate extension",
    CertSignatureInvalid => "certificate signature does not verify",
    IssuerMismatch => "certificate issuer mismatch",
    NotACa => "issuer is not a CA",
    UntrustedCertificate => "certificate is not the pinned AMD certificate",
    CertExpired => "certificate expired",
    CertNotYetValid => "certificate not yet valid",
    LeafKeyNotP384 => "VCEK/VLEK key is not ECDSA P-384",
    Revoked => "certificate revoked",
    UnknownIssuer => "unknown certificate issuer",
    PathBudgetExceeded => "certificate path building budget exceeded",
    CrlSignatureInvalid => "CRL not signed by a trusted ARK",
    CrlStale => "CRL is stale",
    CrlNotYetValid => "CRL not yet valid",
    CrlMissing => "CRL required but missing",
    PathLenConstraintViolated => "certificate path longer than an issuer's pathLenConstraint allows",
    ExtendedKeyUsageNotPermitted => "certificate does not allow the required extended key usage",
    TpmOther => "TPM error",
    TpmMalformed => "malformed TPM structure",
    UnsupportedTpmAlgorithm => "unsupported TPM algorithm",
    TpmMagic => "TPMS_ATTEST magic is not TPM_GENERATED_VALUE",
    TpmAttestType => "TPMS_ATTEST is not a quote",
    AkAttributes => "attestation key is not a restricted signing key",
    NonceMismatch => "quote nonce mismatch",
    PcrDigestMismatch => "quote PCR digest does not match the PCR values",
    PcrValueMissing => "quoted PCR value missing",
    Sha1Refused => "SHA-1 refused",
    QuoteSignatureInvalid => "quote signature does not verify",
    EventLog => "malformed event log",
    QualifiedSignerMismatch => "quote qualifiedSigner is not the attestation key's qualified name",
    EventLogReplayMismatch => "event log does not replay to the quoted PCRs",
    PolicyViolation => "policy check failed",
    PolicyFile => "invalid policy file",
    MeasurementsFile => "invalid measurements file",
    LaunchUnpinned => "policy pins no launch measurement",
    PlatformPolicy => "a platform policy check failed (GCE: production, project, technology)",
    PolicyReportStructure => "policy check failed: report_structure",
    PolicyProduct => "policy check failed: product",
    PolicyCertificateChain => "policy check failed: certificate_chain",
    PolicyCertificateValidity => "policy check failed: certificate_validity",
    PolicyRevocation => "policy check failed: revocation",
    PolicySigningKey => "policy check failed: signing_key",
    PolicyTcbBinding => "policy check failed: tcb_binding",
    PolicyChipIdBinding => "policy check failed: chip_id_binding",
    PolicyReportSignature => "policy check failed: report_signature",
    PolicyReportVersion => "policy check failed: report_version",
    PolicyReportData => "policy check failed: report_data",
    PolicyMeasurement => "policy check failed: measurement",
    PolicyHostData => "policy check failed: host_data",
    PolicyIdKeyDigest => "policy check failed: id_key_digest",
    PolicyAuthorKeyDigest => "policy check failed: author_key_digest",
    PolicyFamilyId => "policy check failed: family_id",
    PolicyImageId => "policy check failed: image_id",
    PolicyGuestSvn => "policy check failed: guest_svn",
    PolicyDebug => "policy check failed: debug",
    PolicyMigrationAgent => "policy check failed: migration_agent",
    PolicySmt => "policy check failed: smt",
    PolicySingleSocket => "policy check failed: single_socket",
    PolicyAbiVersion => "policy check failed: abi_version",
    PolicyVmpl => "policy check failed: vmpl",
    PolicyPlatformInfo => "policy check failed: platform_info",
    PolicyChipId => "policy check failed: chip_id",
    PolicyTcbConsistency => "policy check failed: tcb_consistency",
    PolicyMinReportedTcb => "policy check failed: min_reported_tcb",
    PolicyMinCommittedTcb => "policy check failed: min_committed_tcb",
    PolicyMinLaunchTcb => "policy check failed: min_launch_tcb",
    PolicyMinCurrentTcb => "policy check failed: min_current_tcb",
    PolicyProvisionalFirmware => "policy check failed: provisional_firmware",
    PolicyTdxViolation => "TDX policy check failed",
    PolicyTdxTrailingBytes => "TDX policy check failed: trailing_bytes",
    PolicyTdxTcbStatus => "TDX policy check failed: tcb_status",
    PolicyTdxAdvisoryIds => "TDX policy check failed: advisory_ids",
    PolicyTdxReportData => "TDX policy check failed: report_data",
    PolicyTdxMrtd => "TDX policy check failed: mrtd",
    PolicyTdxRtmr0 => "TDX policy check failed: rtmr0",
    PolicyTdxRtmr1 => "TDX policy check failed: rtmr1",
    PolicyTdxRtmr2 => "TDX policy check failed: rtmr2",
    PolicyTdxRtmr3 => "TDX policy check failed: rtmr3",
    PolicyTdxMrConfigId => "TDX policy check failed: mr_config_id",
    PolicyTdxMrOwner => "TDX policy check failed: mr_owner",
    PolicyTdxMrOwnerConfig => "TDX policy check failed: mr_owner_config",
    PolicyTdxMrSeam => "TDX policy check failed: mr_seam",
    PolicyTdxMrSignerSeam => "TDX policy check failed: mr_signer_seam",
    PolicyTdxDebug => "TDX policy check failed: debug",
    PolicyTdxTdAttributes => "TDX policy check failed: td_attributes",
    PolicyTdxXfam => "TDX policy check failed: xfam",
    PolicyTdxMinTeeTcbSvn => "TDX policy check failed: min_tee_tcb_svn",
    PolicyTdxServiceTd => "TDX policy check failed: service_td",
    PolicyTdxDebugClass => "TDX policy check failed: debug_class",
    PolicyTdxReservedAttributes => "TDX policy check failed: reserved_attributes",
    PolicyTdxSeptVeDisable => "TDX policy check failed: sept_ve_disable",
    PolicyTdxMigratable => "TDX policy check failed: migratable",
    VariantOther => "attestation variant error",
    RuntimeData => "malformed HCL runtime data",
    VariantMismatch => "attestation variant mismatch",
    MissingEvidence => "evidence missing from the attestation document",
    AkNotTrusted => "attestation key not trusted",
    AkBindingMismatch => "hardware report does not bind the attestation key",
    PcrMismatch => "PCR does not have its expected value",
    DocumentMalformed => "malformed attestation document",
    UnsupportedVariant => "unsupported attestation variant",
    FreshnessBindingMismatch => "SNP report does not bind this attestation's key and nonce",
    GceInstanceInfo => "GCE instance information is malformed or inconsistent",
    AkCertificateKeyMismatch => "the AK certificate certifies another key",
    RuntimeUserDataMismatch => "HCL runtime user-data is not the expected value",
    EncodingOther => "encoding error",
    Truncated => "input truncated",
    TrailingData => "trailing data after a structure",
    LimitExceeded => "size or count limit exceeded",
    UnsupportedAlgorithm => "unsupported algorithm",
    TdxOther => "TDX error",
    TdxQuoteMalformed => "malformed TD quote",
    TdxUnsupported => "unsupported TD quote field value",
    QeReportSignatureInvalid => "QE report signature does not verify under the PCK key",
    QeReportDataMismatch => "QE report data does not bind the attestation key",
    TdQuoteSignatureInvalid => "TD quote signature does not verify",
    SgxExtension => "malformed PCK certificate SGX extension",
    CollateralMalformed => "malformed TDX collateral",
    CollateralSignatureInvalid => "TDX collateral signature does not verify",
    CollateralExpired => "TDX collateral expired",
    CollateralNotYetValid => "TDX collateral not yet valid",
    CollateralMissing => "no TDX collateral for the quote's platform",
    CollateralMismatch => "TDX collateral does not match the platform",
    TcbLevelNotFound => "no TCB level of the TDX collateral is met",
    IdentityMismatch => "QE or TDX module identity mismatch",
    UntrustedIntelRoot => "chain does not end in the pinned Intel SGX Root CA",
    RtmrReplayMismatch => "CC event log does not replay to the quote's RTMRs",
    EvidenceFormat => "malformed evidence in another tool's format",
    Unclassified => "unclassified engine error",
}

impl attest_result {
    /// The code with number `code`, if any.
    pub(crate) fn from_u32(code: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| *r as u32 == code)
    }

    /// The code for a failed policy check.
    fn for_check(check: Check) -> Self {
        match check {
            Check::ReportStructure => Self::PolicyReportStructure,
            Check::Product => Self::PolicyProduct,
            Check::CertificateChain => Self::PolicyCertificateChain,
            Check::CertificateValidity => Self::PolicyCertificateValidity,
            Check::Revocation => Self::PolicyRevocation,
            Check::SigningKey => Self::PolicySigningKey,
            Check::TcbBinding => Self::PolicyTcbBinding,
            Check::ChipIdBinding => Self::PolicyChipIdBinding,
            Check::ReportSignature => Self::PolicyReportSignature,
            Check::ReportVersion => Self::PolicyReportVersion,
            Check::ReportData => Self::PolicyReportData,
            Check::Measurement => Self::PolicyMeasurement,
            Check::HostData => Self::PolicyHostData,
            Check::IdKeyDigest => Self::PolicyIdKeyDigest,
            Check::AuthorKeyDigest => Self::PolicyAuthorKeyDigest,
            Check::FamilyId => Self::PolicyFamilyId,
            Check::ImageId => Self::PolicyImageId,
            Check::GuestSvn => Self::PolicyGuestSvn,
            Check::Debug => Self::PolicyDebug,
            Check::MigrationAgent => Self::PolicyMigrationAgent,
            Check::Smt => Self::PolicySmt,
            Check::SingleSocket => Self::PolicySingleSocket,
            Check::AbiVersion => Self::PolicyAbiVersion,
            Check::Vmpl => Self::PolicyVmpl,
            Check::PlatformInfo => Self::PolicyPlatformInfo,
            Check::ChipId => Self::PolicyChipId,
            Check::TcbConsistency => Self::PolicyTcbConsistency,
            Check::MinReportedTcb => Self::PolicyMinReportedTcb,
            Check::MinCommittedTcb => Self::PolicyMinCommittedTcb,
            Check::MinLaunchTcb => Self::PolicyMinLaunchTcb,
            Check::MinCurrentTcb => Self::PolicyMinCurrentTcb,
            Check::ProvisionalFirmware => Self::PolicyProvisionalFirmware,
            // `Check` is #[non_exhaustive]: a check added later reports the generic policy code.
            _ => Self::PolicyViolation,
        }
    }
}

impl attest_result {
    /// The code for a failed TDX policy check.
    fn for_tdx_check(check: TdxCheck) -> Self {
        match check {
            TdxCheck::TrailingBytes => Self::PolicyTdxTrailingBytes,
            TdxCheck::TcbStatus => Self::PolicyTdxTcbStatus,
            TdxCheck::AdvisoryIds => Self::PolicyTdxAdvisoryIds,
            TdxCheck::ReportData => Self::PolicyTdxReportData,
            TdxCheck::Mrtd => Self::PolicyTdxMrtd,
            TdxCheck::Rtmr0 => Self::PolicyTdxRtmr0,
            TdxCheck::Rtmr1 => Self::PolicyTdxRtmr1,
            TdxCheck::Rtmr2 => Self::PolicyTdxRtmr2,
            TdxCheck::Rtmr3 => Self::PolicyTdxRtmr3,
            TdxCheck::MrConfigId => Self::PolicyTdxMrConfigId,
            TdxCheck::MrOwner => Self::PolicyTdxMrOwner,
            TdxCheck::MrOwnerConfig => Self::PolicyTdxMrOwnerConfig,
            TdxCheck::MrSeam => Self::PolicyTdxMrSeam,
            TdxCheck::MrSignerSeam => Self::PolicyTdxMrSignerSeam,
            TdxCheck::Debug => Self::PolicyTdxDebug,
            TdxCheck::TdAttributes => Self::PolicyTdxTdAttributes,
            TdxCheck::Xfam => Self::PolicyTdxXfam,
            TdxCheck::MinTeeTcbSvn => Self::PolicyTdxMinTeeTcbSvn,
            TdxCheck::ServiceTd => Self::PolicyTdxServiceTd,
            TdxCheck::DebugClass => Self::PolicyTdxDebugClass,
            TdxCheck::ReservedAttributes => Self::PolicyTdxReservedAttributes,
            TdxCheck::SeptVeDisable => Self::PolicyTdxSeptVeDisable,
            TdxCheck::Migratable => Self::PolicyTdxMigratable,
            // The other checks fail with errors of their own (signatures, collateral, TCB); a check added
            // later reports the generic TDX policy code.
            _ => Self::PolicyTdxViolation,
        }
    }
}

impl From<&Error> for attest_result {
    /// The total mapping from the engine's error. Every variant known today is listed; the wildcard
    /// catches variants added to the `#[non_exhaustive]` enum later (`Unclassified`, with the engine's text
    /// available as the detailed error).
    fn from(e: &Error) -> Self {
        use attest_result as R;
        match e {
            Error::Der { .. } => R::Der,
            Error::TrailingData { .. } => R::TrailingData,
            Error::Truncated { .. } => R::Truncated,
            Error::LimitExceeded { .. } => R::LimitExceeded,
            Error::Pem { .. } => R::Pem,
            Error::UnsupportedAlgorithm { .. } => R::UnsupportedAlgorithm,
            Error::UnsupportedCriticalExtension => R::UnsupportedCriticalExtension,
            Error::AmdExtension { .. } => R::AmdExtension,
            Error::MissingAmdExtension { .. } => R::MissingAmdExtension,
            Error::UnsupportedReportVersion { .. } => R::UnsupportedReportVersion,
            Error::UnsupportedReportSignatureAlgorithm { .. } => R::UnsupportedReportSignatureAlgorithm,
            Error::ReservedNonZero { .. } => R::ReservedNonZero,
            Error::UnsupportedSigningKey { .. } => R::UnsupportedSigningKey,
            Error::ReportSignatureInvalid => R::ReportSignatureInvalid,
            Error::ProductUnknown => R::ProductUnknown,
            Error::UnsupportedProduct { .. } => R::UnsupportedProduct,
            Error::ProductMismatch { .. } => R::ProductMismatch,
            Error::CertSignatureInvalid { .. } => R::CertSignatureInvalid,
            Error::IssuerMismatch { .. } => R::IssuerMismatch,
            Error::NotACa { .. } => R::NotACa,
            Error::UntrustedCertificate { .. } => R::UntrustedCertificate,
            Error::CertExpired { .. } => R::CertExpired,
            Error::CertNotYetValid { .. } => R::CertNotYetValid,
            Error::LeafKeyNotP384 { .. } => R::LeafKeyNotP384,
            Error::SigningKeyMismatch { .. } => R::SigningKeyMismatch,
            Error::TcbMismatch { .. } => R::TcbMismatch,
            Error::ChipIdMismatch { .. } => R::ChipIdMismatch,
            Error::Revoked { .. } => R::Revoked,
            Error::UnknownIssuer { .. } => R::UnknownIssuer,
            Error::PathBudgetExceeded => R::PathBudgetExceeded,
            Error::PathLenConstraintViolated { .. } => R::PathLenConstraintViolated,
            Error::ExtendedKeyUsageNotPermitted { .. } => R::ExtendedKeyUsageNotPermitted,
            Error::CrlSignatureInvalid => R::CrlSignatureInvalid,
            Error::CrlStale { .. } => R::CrlStale,
            Error::CrlNotYetValid { .. } => R::CrlNotYetValid,
            Error::CrlMissing => R::CrlMissing,
            Error::Tpm { .. } => R::TpmMalformed,
            Error::UnsupportedTpmAlgorithm { .. } => R::UnsupportedTpmAlgorithm,
            Error::TpmMagic { .. } => R::TpmMagic,
            Error::TpmAttestType { .. } => R::TpmAttestType,
            Error::AkAttributes { .. } => R::AkAttributes,
            Error::NonceMismatch { .. } => R::NonceMismatch,
            Error::PcrDigestMismatch { .. } => R::PcrDigestMismatch,
            Error::PcrValueMissing { .. } => R::PcrValueMissing,
            Error::Sha1Refused => R::Sha1Refused,
            Error::QuoteSignatureInvalid => R::QuoteSignatureInvalid,
            Error::EventLog { .. } => R::EventLog,
            Error::EventLogReplayMismatch { .. } => R::EventLogReplayMismatch,
            Error::RuntimeData { .. } => R::RuntimeData,
            Error::VariantMismatch { .. } => R::VariantMismatch,
            Error::MissingEvidence { .. } => R::MissingEvidence,
            Error::AkNotTrusted { .. } => R::AkNotTrusted,
            Error::AkBindingMismatch { .. } => R::AkBindingMismatch,
            Error::FreshnessBindingMismatch { .. } => R::FreshnessBindingMismatch,
            Error::LaunchUnpinned => R::LaunchUnpinned,
            Error::PcrMismatch { .. } => R::PcrMismatch,
            Error::Policy(v) => R::for_check(v.check),
            Error::PolicyFile { .. } => R::PolicyFile,
            Error::Misuse { .. } => R::Misuse,
            Error::TdxQuote { .. } => R::TdxQuoteMalformed,
            Error::TdxUnsupported { .. } => R::TdxUnsupported,
            Error::QeReportSignatureInvalid => R::QeReportSignatureInvalid,
            Error::QeReportDataMismatch { .. } => R::QeReportDataMismatch,
            Error::TdQuoteSignatureInvalid => R::TdQuoteSignatureInvalid,
            Error::SgxExtension { .. } => R::SgxExtension,
            Error::Collateral { .. } => R::CollateralMalformed,
            Error::CollateralSignatureInvalid { .. } => R::CollateralSignatureInvalid,
            Error::CollateralExpired { .. } => R::CollateralExpired,
            Error::CollateralNotYetValid { .. } => R::CollateralNotYetValid,
            Error::CollateralMissing { .. } => R::CollateralMissing,
            Error::CollateralMismatch { .. } => R::CollateralMismatch,
            Error::TcbLevelNotFound { .. } => R::TcbLevelNotFound,
            Error::IdentityMismatch { .. } => R::IdentityMismatch,
            Error::UntrustedIntelRoot => R::UntrustedIntelRoot,
            Error::RtmrReplayMismatch { .. } => R::RtmrReplayMismatch,
            Error::TdxPolicy(v) => R::for_tdx_check(v.check),
            Error::QualifiedSignerMismatch { .. } => R::QualifiedSignerMismatch,
            Error::PlatformPolicy { .. } => R::PlatformPolicy,
            Error::GceInstanceInfo { .. } => R::GceInstanceInfo,
            Error::AkCertificateKeyMismatch => R::AkCertificateKeyMismatch,
            Error::RuntimeUserDataMismatch { .. } => R::RuntimeUserDataMismatch,
            Error::EvidenceFormat { .. } => R::EvidenceFormat,
            _ => R::Unclassified,
        }
    }
}

/// The domain ranges, `[start, end)`.
pub(crate) const API: (u32, u32) = (1000, 2000);
pub(crate) const SNP: (u32, u32) = (2000, 3000);
pub(crate) const X509: (u32, u32) = (3000, 4000);
pub(crate) const TPM: (u32, u32) = (4000, 5000);
pub(crate) const POLICY: (u32, u32) = (5000, 6000);
pub(crate) const VARIANT: (u32, u32) = (6000, 7000);
pub(crate) const ENCODING: (u32, u32) = (7000, 8000);
pub(crate) const TDX: (u32, u32) = (8000, 9000);

fn in_range(code: u32, (start, end): (u32, u32)) -> bool {
    (start..end).contains(&code)
}

/// Whether `code` is an API-use error (1000–1999): the caller's mistake or an internal error, not a
/// property of the evidence.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_api_error(code: u32) -> bool {
    in_range(code, API)
}

/// Whether `code` is a SEV-SNP report error (2000–2999).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_snp_error(code: u32) -> bool {
    in_range(code, SNP)
}

/// Whether `code` is an X.509 / certificate chain / CRL error (3000–3999).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_x509_error(code: u32) -> bool {
    in_range(code, X509)
}

/// Whether `code` is a TPM error (4000–4999).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_tpm_error(code: u32) -> bool {
    in_range(code, TPM)
}

/// Whether `code` is a policy error (5000–5999), including invalid policy and measurements files.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_policy_error(code: u32) -> bool {
    in_range(code, POLICY)
}

/// Whether `code` is an Azure / attestation-variant error (6000–6999).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_variant_error(code: u32) -> bool {
    in_range(code, VARIANT)
}

/// Whether `code` is a shared encoding error (7000–7999: truncation, trailing data, limits, algorithms).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_encoding_error(code: u32) -> bool {
    in_range(code, ENCODING)
}

/// Whether `code` is an Intel TDX error (8000–8999: quotes, PCK certificates, collateral, TCB levels, CC event
/// log). TDX policy checks are policy errors (5200–5299).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_tdx_error(code: u32) -> bool {
    in_range(code, TDX)
}

/// Whether `code` rejects the evidence (2000–9999): anything but OK and API-use errors. A daemon that
/// only needs "accept or not" tests `code == ATTEST_RESULT_OK`.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_result_is_evidence_error(code: u32) -> bool {
    (SNP.0..10_000).contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_engine::CertRole;
    use attest_engine::error::{Bytes, PolicyViolation, Value};

    /// The wire contract: every code with its number. Never change a number here; add new codes.
    #[test]
    fn numbers_are_pinned() {
        use attest_result as R;
        let pinned: &[(R, u32)] = &[
            (R::Ok, 0),
            (R::Panic, 1000),
            (R::NullParameter, 1001),
            (R::InvalidParameter, 1002),
            (R::InsufficientSize, 1003),
            (R::NotAvailable, 1004),
            (R::CertificateNotCached, 1005),
            (R::Misuse, 1006),
            (R::NonceRequired, 1007),
            (R::SnpOther, 2000),
            (R::UnsupportedReportVersion, 2001),
            (R::UnsupportedReportSignatureAlgorithm, 2002),
            (R::ReservedNonZero, 2003),
            (R::UnsupportedSigningKey, 2004),
            (R::ReportSignatureInvalid, 2005),
            (R::ProductUnknown, 2006),
            (R::UnsupportedProduct, 2007),
            (R::ProductMismatch, 2008),
            (R::SigningKeyMismatch, 2009),
            (R::TcbMismatch, 2010),
            (R::ChipIdMismatch, 2011),
            (R::X509Other, 3000),
            (R::Der, 3001),
            (R::Pem, 3002),
            (R::UnsupportedCriticalExtension, 3003),
            (R::AmdExtension, 3004),
            (R::MissingAmdExtension, 3005),
            (R::CertSignatureInvalid, 3006),
            (R::IssuerMismatch, 3007),
            (R::NotACa, 3008),
            (R::UntrustedCertificate, 3009),
            (R::CertExpired, 3010),
            (R::CertNotYetValid, 3011),
            (R::LeafKeyNotP384, 3012),
            (R::Revoked, 3013),
            (R::UnknownIssuer, 3014),
            (R::PathBudgetExceeded, 3015),
            (R::CrlSignatureInvalid, 3016),
            (R::CrlStale, 3017),
            (R::CrlNotYetValid, 3018),
            (R::CrlMissing, 3019),
            (R::PathLenConstraintViolated, 3020),
            (R::ExtendedKeyUsageNotPermitted, 3021),
            (R::TpmOther, 4000),
            (R::TpmMalformed, 4001),
            (R::UnsupportedTpmAlgorithm, 4002),
            (R::TpmMagic, 4003),
            (R::TpmAttestType, 4004),
            (R::AkAttributes, 4005),
            (R::NonceMismatch, 4006),
            (R::PcrDigestMismatch, 4007),
            (R::PcrValueMissing, 4008),
            (R::Sha1Refused, 4009),
            (R::QuoteSignatureInvalid, 4010),
            (R::EventLog, 4011),
            (R::EventLogReplayMismatch, 4012),
            (R::QualifiedSignerMismatch, 4013),
            (R::PolicyViolation, 5000),
            (R::PolicyFile, 5001),
            (R::MeasurementsFile, 5002),
            (R::LaunchUnpinned, 5003),
            (R::PlatformPolicy, 5004),
            (R::PolicyReportStructure, 5101),
            (R::PolicyProduct, 5102),
            (R::PolicyCertificateChain, 5103),
            (R::PolicyCertificateValidity, 5104),
            (R::PolicyRevocation, 5105),
            (R::PolicySigningKey, 5106),
            (R::PolicyTcbBinding, 5107),
            (R::PolicyChipIdBinding, 5108),
            (R::PolicyReportSignature, 5109),
            (R::PolicyReportVersion, 5110),
            (R::PolicyReportData, 5111),
            (R::PolicyMeasurement, 5112),
            (R::PolicyHostData, 5113),
            (R::PolicyIdKeyDigest, 5114),
            (R::PolicyAuthorKeyDigest, 5115),
            (R::PolicyFamilyId, 5116),
            (R::PolicyImageId, 5117),
            (R::PolicyGuestSvn, 5118),
            (R::PolicyDebug, 5119),
            (R::PolicyMigrationAgent, 5120),
            (R::PolicySmt, 5121),
            (R::PolicySingleSocket, 5122),
            (R::PolicyAbiVersion, 5123),
            (R::PolicyVmpl, 5124),
            (R::PolicyPlatformInfo, 5125),
            (R::PolicyChipId, 5126),
            (R::PolicyTcbConsistency, 5127),
            (R::PolicyMinReportedTcb, 5128),
            (R::PolicyMinCommittedTcb, 5129),
            (R::PolicyMinLaunchTcb, 5130),
            (R::PolicyMinCurrentTcb, 5131),
            (R::PolicyProvisionalFirmware, 5132),
            (R::PolicyTdxViolation, 5200),
            (R::PolicyTdxTrailingBytes, 5201),
            (R::PolicyTdxTcbStatus, 5202),
            (R::PolicyTdxAdvisoryIds, 5203),
            (R::PolicyTdxReportData, 5204),
            (R::PolicyTdxMrtd, 5205),
            (R::PolicyTdxRtmr0, 5206),
            (R::PolicyTdxRtmr1, 5207),
            (R::PolicyTdxRtmr2, 5208),
            (R::PolicyTdxRtmr3, 5209),
            (R::PolicyTdxMrConfigId, 5210),
            (R::PolicyTdxMrOwner, 5211),
            (R::PolicyTdxMrOwnerConfig, 5212),
            (R::PolicyTdxMrSeam, 5213),
            (R::PolicyTdxMrSignerSeam, 5214),
            (R::PolicyTdxDebug, 5215),
            (R::PolicyTdxTdAttributes, 5216),
            (R::PolicyTdxXfam, 5217),
            (R::PolicyTdxMinTeeTcbSvn, 5218),
            (R::PolicyTdxServiceTd, 5219),
            (R::PolicyTdxDebugClass, 5220),
            (R::PolicyTdxReservedAttributes, 5221),
            (R::PolicyTdxSeptVeDisable, 5222),
            (R::PolicyTdxMigratable, 5223),
            (R::VariantOther, 6000),
            (R::RuntimeData, 6001),
            (R::VariantMismatch, 6002),
            (R::MissingEvidence, 6003),
            (R::AkNotTrusted, 6004),
            (R::AkBindingMismatch, 6005),
            (R::PcrMismatch, 6006),
            (R::DocumentMalformed, 6007),
            (R::UnsupportedVariant, 6008),
            (R::FreshnessBindingMismatch, 6009),
            (R::GceInstanceInfo, 6010),
            (R::AkCertificateKeyMismatch, 6011),
            (R::RuntimeUserDataMismatch, 6012),
            (R::EncodingOther, 7000),
            (R::Truncated, 7001),
            (R::TrailingData, 7002),
            (R::LimitExceeded, 7003),
            (R::UnsupportedAlgorithm, 7004),
            (R::TdxOther, 8000),
            (R::TdxQuoteMalformed, 8001),
            (R::TdxUnsupported, 8002),
            (R::QeReportSignatureInvalid, 8003),
            (R::QeReportDataMismatch, 8004),
            (R::TdQuoteSignatureInvalid, 8005),
            (R::SgxExtension, 8006),
            (R::CollateralMalformed, 8007),
            (R::CollateralSignatureInvalid, 8008),
            (R::CollateralExpired, 8009),
            (R::CollateralNotYetValid, 8010),
            (R::CollateralMissing, 8011),
            (R::CollateralMismatch, 8012),
            (R::TcbLevelNotFound, 8013),
            (R::IdentityMismatch, 8014),
            (R::UntrustedIntelRoot, 8015),
            (R::RtmrReplayMismatch, 8016),
            (R::EvidenceFormat, 7005),
            (R::Unclassified, 9000),
        ];
        assert_eq!(pinned.len(), attest_result::ALL.len(), "a code was added without pinning its number");
        for (r, n) in pinned {
            assert_eq!(*r as u32, *n, "{r:?} was renumbered");
            assert_eq!(attest_result::from_u32(*n), Some(*r));
        }
    }

    #[test]
    fn every_code_is_in_its_domain_and_has_text() {
        for r in attest_result::ALL {
            let n = *r as u32;
            let domains = [
                attest_result_is_api_error(n),
                attest_result_is_snp_error(n),
                attest_result_is_x509_error(n),
                attest_result_is_tpm_error(n),
                attest_result_is_policy_error(n),
                attest_result_is_variant_error(n),
                attest_result_is_encoding_error(n),
                attest_result_is_tdx_error(n),
            ];
            let count = domains.iter().filter(|d| **d).count();
            match r {
                attest_result::Ok | attest_result::Unclassified => assert_eq!(count, 0, "{r:?}"),
                _ => assert_eq!(count, 1, "{r:?}"),
            }
            assert_eq!(attest_result_is_evidence_error(n), n >= 2000, "{r:?}");
            assert!(!r.text().is_empty());
        }
        assert_eq!(attest_result::from_u32(1999), None);
    }

    #[test]
    fn engine_errors_map_to_their_domain_never_unclassified() {
        let b = Bytes::new(&[1]);
        let t = attest_engine::UnixTime::from_secs(0);
        let samples: Vec<(Error, extern "C" fn(u32) -> bool)> = vec![
            (Error::Der { structure: "x", offset: 0, reason: "r" }, attest_result_is_x509_error),
            (Error::Pem { reason: "r" }, attest_result_is_x509_error),
            (Error::ReportSignatureInvalid, attest_result_is_snp_error),
            (Error::ChipIdMismatch { report: b.clone(), certificate: b.clone() }, attest_result_is_snp_error),
            (Error::CertExpired { role: CertRole::Vcek, time: t, not_after: t }, attest_result_is_x509_error),
            (Error::CrlMissing, attest_result_is_x509_error),
            (Error::QuoteSignatureInvalid, attest_result_is_tpm_error),
            (Error::NonceMismatch { expected: b.clone(), found: b.clone() }, attest_result_is_tpm_error),
            (Error::PcrMismatch { pcr: 4, expected: b.clone(), found: b.clone() }, attest_result_is_variant_error),
            (Error::RuntimeData { reason: "r" }, attest_result_is_variant_error),
            (Error::Truncated { structure: "x", needed: 2, found: 1 }, attest_result_is_encoding_error),
            (Error::Misuse { reason: "r" }, attest_result_is_api_error),
            (Error::PolicyFile { format: "json", reason: "r".into() }, attest_result_is_policy_error),
            (Error::LaunchUnpinned, attest_result_is_policy_error),
            (Error::FreshnessBindingMismatch { expected: b.clone(), found: b.clone() }, attest_result_is_variant_error),
            (Error::QualifiedSignerMismatch { found: b.clone() }, attest_result_is_tpm_error),
            (Error::GceInstanceInfo { reason: "r" }, attest_result_is_variant_error),
            (Error::AkCertificateKeyMismatch, attest_result_is_variant_error),
            (Error::RuntimeUserDataMismatch { expected: b.clone(), found: b.clone() }, attest_result_is_variant_error),
            (Error::EvidenceFormat { format: "f", reason: "r" }, attest_result_is_encoding_error),
            (
                Error::PathLenConstraintViolated { role: CertRole::Intermediate, path_len: 0, intermediates_below: 1 },
                attest_result_is_x509_error,
            ),
            (Error::ExtendedKeyUsageNotPermitted { role: CertRole::Leaf, depth: 0 }, attest_result_is_x509_error),
            (Error::TdQuoteSignatureInvalid, attest_result_is_tdx_error),
            (Error::TdxQuote { structure: "header", offset: 0, reason: "r" }, attest_result_is_tdx_error),
            (Error::CollateralExpired { what: "TCB Info", time: t, next_update: t }, attest_result_is_tdx_error),
            (Error::CollateralMissing { fmspc: b.clone() }, attest_result_is_tdx_error),
            (Error::TcbLevelNotFound { what: "platform" }, attest_result_is_tdx_error),
            (Error::UntrustedIntelRoot, attest_result_is_tdx_error),
            (
                Error::RtmrReplayMismatch { rtmr: 1, expected: b.clone(), replayed: b.clone() },
                attest_result_is_tdx_error,
            ),
        ];
        for (e, domain) in samples {
            let r = attest_result::from(&e);
            assert!(domain(r as u32), "{e:?} → {r:?}");
        }
        // Every check known today has its own code (named after the check), none the generic one.
        let mut seen = std::collections::HashSet::new();
        for c in Check::ALL {
            let e = Error::Policy(PolicyViolation { check: *c, expected: Value::Int(0), found: Value::Int(1) });
            let r = attest_result::from(&e);
            assert!((5101..5200).contains(&(r as u32)), "{c} → {r:?}");
            assert!(r.text().ends_with(c.name()), "{c} → {r:?}");
            assert!(seen.insert(r), "{c} shares {r:?}");
        }
        // Every TDX check a policy can fail has its own code in 5201..5300, named after it; the others (which
        // fail with errors of their own) the generic one.
        let policy_checks = [
            TdxCheck::TrailingBytes,
            TdxCheck::TcbStatus,
            TdxCheck::AdvisoryIds,
            TdxCheck::ReportData,
            TdxCheck::Mrtd,
            TdxCheck::Rtmr0,
            TdxCheck::Rtmr1,
            TdxCheck::Rtmr2,
            TdxCheck::Rtmr3,
            TdxCheck::MrConfigId,
            TdxCheck::MrOwner,
            TdxCheck::MrOwnerConfig,
            TdxCheck::MrSeam,
            TdxCheck::MrSignerSeam,
            TdxCheck::Debug,
            TdxCheck::TdAttributes,
            TdxCheck::Xfam,
            TdxCheck::MinTeeTcbSvn,
            TdxCheck::ServiceTd,
            TdxCheck::DebugClass,
            TdxCheck::ReservedAttributes,
            TdxCheck::SeptVeDisable,
            TdxCheck::Migratable,
        ];
        for c in TdxCheck::ALL {
            let e = Error::TdxPolicy(attest_engine::error::TdxPolicyViolation {
                check: *c,
                expected: Value::Int(0),
                found: Value::Int(1),
            });
            let r = attest_result::from(&e);
            assert!(attest_result_is_policy_error(r as u32), "{c} → {r:?}");
            if policy_checks.contains(c) {
                assert!((5201..5300).contains(&(r as u32)) && r.text().ends_with(c.name()), "{c} → {r:?}");
                assert!(seen.insert(r), "{c} shares {r:?}");
            } else {
                assert_eq!(r, attest_result::PolicyTdxViolation, "{c}");
            }
        }
    }
}
