//! The engine's one error type.
//!
//! Every rejection names what was checked and, where it compares values, the expected and the found value.
//! Variants carry small, allocation-free context (except [`Error::PolicyFile`], which is configuration,
//! not evidence). Caller mistakes ([`Error::Misuse`]) are kept apart from bad evidence.
//!
//! # The import cycle with `amd`, `snp::policy`, `snp::tcb` and `policy` (deliberate)
//!
//! Variants carry domain values — [`Product`], [`Check`], [`TcbComponent`] — so callers can branch on
//! them, and the modules defining those types hold the parsers and checks that return this error: a
//! file-level cycle. It is kept, as webpki keeps its error enum naming its own types: the three are
//! fieldless enums that use nothing of this module, so nothing *about the types* depends on the error;
//! moving them into leaf files would only separate each type from the code that gives it meaning. `policy`
//! (the vocabulary every evidence policy shares, which `snp::policy` reads) is in the cycle because its
//! policy-file readers return this error.
//! `test-support/tests/layering.rs` lists this cycle, so a module newly joining it fails that test.

use crate::amd::Product;
use crate::snp::policy::Check;
use crate::snp::tcb::TcbComponent;
use crate::tdx::TdxCheck;
use crate::time::UnixTime;
use core::fmt;

mod class;
pub use class::ErrorClass;

/// The role a certificate plays in an AMD chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CertRole {
    /// AMD Root Key (self-signed, per product).
    Ark,
    /// AMD SEV Key: the intermediate for VCEKs.
    Ask,
    /// AMD SEV VLEK Key: the intermediate for VLEKs.
    Asvk,
    /// Versioned Chip Endorsement Key (per chip and TCB).
    Vcek,
    /// Versioned Loaded Endorsement Key (per cloud provider).
    Vlek,
    /// The end-entity certificate of a generic path (e.g. a TPM AK or EK certificate).
    Leaf,
    /// An intermediate CA of a generic path.
    Intermediate,
    /// The trust anchor of a generic path.
    Root,
    /// Intel's PCK certificate (per platform and TCB; signs the TDX quoting enclave's report).
    Pck,
    /// Intel SGX PCK Platform CA or PCK Processor CA: the issuer of PCK certificates.
    PckCa,
    /// Intel SGX TCB Signing certificate: signs TCB Info and QE Identity collateral.
    TcbSigning,
    /// The Intel SGX Root CA (self-signed, pinned).
    IntelRootCa,
}

impl CertRole {
    /// The role's AMD name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ark => "ARK",
            Self::Ask => "ASK",
            Self::Asvk => "ASVK",
            Self::Vcek => "VCEK",
            Self::Vlek => "VLEK",
            Self::Leaf => "leaf certificate",
            Self::Intermediate => "intermediate CA certificate",
            Self::Root => "root CA certificate",
            Self::Pck => "PCK certificate",
            Self::PckCa => "PCK CA certificate",
            Self::TcbSigning => "TCB Signing certificate",
            Self::IntelRootCa => "Intel SGX Root CA",
        }
    }

    /// The revocation list that can revoke a certificate of this role.
    pub fn revocation_list(self) -> &'static str {
        match self {
            Self::Ark | Self::Ask | Self::Asvk | Self::Vcek | Self::Vlek => "the ARK's CRL",
            Self::Pck => "the PCK CA's CRL",
            Self::PckCa | Self::TcbSigning | Self::IntelRootCa => "the Intel SGX Root CA's CRL",
            Self::Leaf | Self::Intermediate | Self::Root => "its issuer's CRL",
        }
    }
}

impl fmt::Display for CertRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a product determination came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductSource {
    /// Given by the caller.
    Caller,
    /// The report's CPUID family/model fields (report version 3 and later).
    ReportCpuid,
    /// The VCEK/VLEK productName extension.
    CertificateProductName,
    /// The supplied ARK/ASK chain.
    Chain,
}

impl fmt::Display for ProductSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Caller => "caller",
            Self::ReportCpuid => "report CPUID",
            Self::CertificateProductName => "certificate productName",
            Self::Chain => "certificate chain",
        })
    }
}

/// A byte string in an error (report fields, serial numbers), shown as hex. Errors are off the hot path,
/// so the bytes are boxed to keep [`Error`] small.
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(Box<[u8]>);

impl Bytes {
    /// Copies `v`.
    pub fn new(v: &[u8]) -> Self {
        Self(v.into())
    }
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A value in a policy comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Value {
    /// An integer.
    Int(u64),
    /// A byte string.
    Bytes(Bytes),
    /// A flag.
    Bool(bool),
    /// One of `n` values configured in the policy.
    OneOf(usize),
    /// An inclusive range.
    Range(u64, u64),
    /// "At least" this integer.
    AtLeast(u64),
    /// "At most" this integer.
    AtMost(u64),
    /// A fixed description.
    Text(&'static str),
    /// A text from the evidence (e.g. a project id).
    Str(Box<str>),
    /// A TCB component's value.
    Component(TcbComponent, u8),
    /// A TCB component's minimum.
    ComponentAtLeast(TcbComponent, u8),
    /// A TCB component's maximum.
    ComponentAtMost(TcbComponent, u8),
    /// A name from the evidence or its collateral (a TCB status, an advisory ID).
    Name(Box<str>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Bytes(b) => write!(f, "{b}"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::OneOf(n) => write!(f, "one of {n} allowed value(s)"),
            Self::Range(a, b) => write!(f, "{a}..={b}"),
            Self::AtLeast(v) => write!(f, ">= {v}"),
            Self::AtMost(v) => write!(f, "<= {v}"),
            Self::Text(t) => f.write_str(t),
            Self::Str(t) => write!(f, "{t:?}"),
            Self::Component(c, v) => write!(f, "{c}={v}"),
            Self::ComponentAtLeast(c, v) => write!(f, "{c}>={v}"),
            Self::ComponentAtMost(c, v) => write!(f, "{c}<={v}"),
            Self::Name(n) => f.write_str(n),
        }
    }
}

/// Why a policy check failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyViolation {
    /// The check that failed.
    pub check: Check,
    /// What the policy required.
    pub expected: Value,
    /// What the evidence showed.
    pub found: Value,
}

/// Why a TDX policy check failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdxPolicyViolation {
    /// The check that failed.
    pub check: TdxCheck,
    /// What the policy required.
    pub expected: Value,
    /// What the evidence showed.
    pub found: Value,
}

/// Every way verification can fail.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    // ---- Encoding -------------------------------------------------------------------------------------
    /// Malformed DER (X.690 §8, §10).
    Der {
        /// The structure being read.
        structure: &'static str,
        /// Byte offset inside that structure.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// Bytes followed a complete structure.
    TrailingData {
        /// The structure that was complete.
        structure: &'static str,
        /// How many bytes followed.
        extra: usize,
    },
    /// Input shorter than its structure.
    Truncated {
        /// The structure.
        structure: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        found: usize,
    },
    /// An attacker-controlled count or length exceeded its named limit.
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The value found.
        found: usize,
    },
    /// Malformed PEM (RFC 7468).
    Pem {
        /// What was wrong.
        reason: &'static str,
    },
    /// An algorithm, key type or parameter set the engine does not accept.
    UnsupportedAlgorithm {
        /// What was unsupported.
        what: &'static str,
    },
    /// A certificate or CRL has a critical extension the engine does not understand (RFC 5280 §4.2).
    UnsupportedCriticalExtension,
    /// An AMD certificate extension is malformed.
    AmdExtension {
        /// The extension's name.
        extension: &'static str,
        /// What was wrong.
        reason: &'static str,
    },
    /// A required AMD extension is missing.
    MissingAmdExtension {
        /// The certificate.
        role: CertRole,
        /// The extension's name.
        extension: &'static str,
    },

    // ---- SEV-SNP report (SNP ABI spec 56860, Table "ATTESTATION_REPORT Structure") -----------------------
    /// VERSION is not 2, 3 or 5.
    UnsupportedReportVersion {
        /// The version found.
        found: u32,
    },
    /// SIGNATURE_ALGO is not 1 (ECDSA P-384 with SHA-384).
    UnsupportedReportSignatureAlgorithm {
        /// The value found.
        found: u32,
    },
    /// A reserved field is not zero.
    ReservedNonZero {
        /// The field.
        field: &'static str,
        /// Its offset in the report.
        offset: usize,
    },
    /// SIGNING_KEY names neither the VCEK (0) nor the VLEK (1).
    UnsupportedSigningKey {
        /// The value found.
        found: u32,
    },
    /// The ECDSA signature over bytes 0..0x2A0 does not verify under the VCEK/VLEK.
    ReportSignatureInvalid,
    /// The certificate table of an extended report (`SNP_GET_EXT_REPORT`, GHCB spec 56421) is malformed
    /// ([`crate::snp::CertTable`]).
    SnpCertTable {
        /// Byte offset of the offending entry.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },

    // ---- Products --------------------------------------------------------------------------------------
    /// The product could not be determined without guessing.
    ProductUnknown,
    /// A productName or CPUID does not name a supported product.
    UnsupportedProduct {
        /// Where it came from.
        source: ProductSource,
    },
    /// Two sources disagree on the product.
    ProductMismatch {
        /// The product from the first source.
        expected: Product,
        /// Where the first came from.
        expected_source: ProductSource,
        /// The conflicting product.
        found: Product,
        /// Where it came from.
        found_source: ProductSource,
    },

    // ---- Certificate chain -----------------------------------------------------------------------------
    /// A certificate's signature does not verify under its issuer's key.
    CertSignatureInvalid {
        /// The certificate.
        role: CertRole,
    },
    /// A certificate's issuer name differs from the parent's subject name.
    IssuerMismatch {
        /// The certificate.
        role: CertRole,
    },
    /// A certificate acting as an issuer is not a CA (basicConstraints / keyUsage).
    NotACa {
        /// The certificate.
        role: CertRole,
    },
    /// A supplied root or intermediate is not the pinned one for the product.
    UntrustedCertificate {
        /// The certificate.
        role: CertRole,
        /// The product it was checked against.
        product: Product,
    },
    /// A certificate is expired at the trusted time.
    CertExpired {
        /// The certificate.
        role: CertRole,
        /// The trusted time.
        time: UnixTime,
        /// Its notAfter.
        not_after: UnixTime,
    },
    /// A certificate is not yet valid at the trusted time.
    CertNotYetValid {
        /// The certificate.
        role: CertRole,
        /// The trusted time.
        time: UnixTime,
        /// Its notBefore.
        not_before: UnixTime,
    },
    /// The leaf's public key is not ECDSA P-384.
    LeafKeyNotP384 {
        /// The certificate.
        role: CertRole,
    },
    /// The report's SIGNING_KEY does not match the kind of the leaf certificate.
    SigningKeyMismatch {
        /// What the report says signed it.
        report: CertRole,
        /// What the certificate is.
        certificate: CertRole,
    },
    /// A TCB component in the VCEK/VLEK differs from the report's REPORTED_TCB.
    TcbMismatch {
        /// The component.
        component: TcbComponent,
        /// REPORTED_TCB's value.
        report: u8,
        /// The certificate's SPL.
        certificate: u8,
    },
    /// The VCEK's hwID differs from the report's CHIP_ID.
    ChipIdMismatch {
        /// CHIP_ID (the compared prefix).
        report: Bytes,
        /// hwID.
        certificate: Bytes,
    },
    /// A certificate is listed in the CRL of its issuer ([`CertRole::revocation_list`]).
    Revoked {
        /// The certificate.
        role: CertRole,
        /// Its serial number.
        serial: Bytes,
    },
    /// No issuer for a certificate was found among the intermediates and trusted roots.
    UnknownIssuer {
        /// Depth of the certificate without issuer (0 = leaf).
        depth: usize,
    },
    /// Path building exceeded its budget of signature checks or candidate issuers
    /// ([`crate::x509::path`]).
    PathBudgetExceeded,
    /// An issuer's basicConstraints pathLenConstraint allows fewer intermediates below it than the path has
    /// (RFC 5280 §4.2.1.9).
    PathLenConstraintViolated {
        /// The issuer.
        role: CertRole,
        /// Its pathLenConstraint.
        path_len: u64,
        /// Non-self-issued intermediates below it in the path.
        intermediates_below: usize,
    },
    /// A certificate's extKeyUsage does not list the purpose the caller requires (RFC 5280 §4.2.1.12).
    ExtendedKeyUsageNotPermitted {
        /// The certificate.
        role: CertRole,
        /// Its depth in the path (0 = leaf).
        depth: usize,
    },
    /// The CRL's signature does not verify under the ARK, or it was issued by someone else.
    CrlSignatureInvalid,
    /// The CRL's nextUpdate lies before the trusted time.
    CrlStale {
        /// The trusted time.
        time: UnixTime,
        /// nextUpdate (or thisUpdate when nextUpdate is absent).
        next_update: Option<UnixTime>,
    },
    /// The CRL's thisUpdate lies after the trusted time.
    CrlNotYetValid {
        /// The trusted time.
        time: UnixTime,
        /// thisUpdate.
        this_update: UnixTime,
    },
    /// The policy requires a CRL and none was supplied.
    CrlMissing,

    // ---- TPM 2.0 (TPM 2.0 Library Part 2) and TCG event logs -------------------------------------------
    /// A TPM structure is malformed.
    Tpm {
        /// The structure (TPM 2.0 Part 2 name).
        structure: &'static str,
        /// Byte offset inside the input.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// A TPM algorithm identifier the engine does not accept here.
    UnsupportedTpmAlgorithm {
        /// Where it appeared.
        what: &'static str,
        /// The TPM_ALG_ID.
        id: u16,
    },
    /// TPMS_ATTEST.magic is not TPM_GENERATED_VALUE (0xFF544347).
    TpmMagic {
        /// The value found.
        found: u32,
    },
    /// TPMS_ATTEST.type is not the expected TPM_ST_ATTEST_* value.
    TpmAttestType {
        /// Expected (0x8018 for a quote).
        expected: u16,
        /// Found.
        found: u16,
    },
    /// The attestation key is not a restricted signing key (TPM 2.0 Part 1 §25.2.3).
    AkAttributes {
        /// objectAttributes found.
        attributes: u32,
        /// What is missing or forbidden.
        reason: &'static str,
    },
    /// The quote's extraData differs from the expected nonce digest.
    NonceMismatch {
        /// Expected extraData.
        expected: Bytes,
        /// extraData in the quote.
        found: Bytes,
    },
    /// The quote's pcrDigest differs from the digest of the presented PCR values.
    PcrDigestMismatch {
        /// Digest of the presented values, in selection order.
        computed: Bytes,
        /// pcrDigest in the quote.
        quoted: Bytes,
    },
    /// A PCR selected by the quote has no presented value, or one of the wrong length.
    PcrValueMissing {
        /// The bank.
        bank: crate::crypto::HashAlgorithm,
        /// The PCR index.
        pcr: u8,
    },
    /// A SHA-1 bank or signature was presented and the caller did not allow SHA-1.
    Sha1Refused,
    /// The quote signature does not verify under the attestation key.
    QuoteSignatureInvalid,
    /// A TCG event log is malformed.
    EventLog {
        /// Byte offset of the event.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// Replaying the event log does not reproduce a quoted PCR value.
    EventLogReplayMismatch {
        /// The bank.
        bank: crate::crypto::HashAlgorithm,
        /// The PCR index.
        pcr: u8,
        /// The value from the quote / PCR read.
        expected: Bytes,
        /// The value from replaying the log.
        replayed: Bytes,
    },

    // ---- Azure ------------------------------------------------------------------------------------------
    /// The HCL runtime data (JSON claims) is malformed or lacks the attestation key.
    RuntimeData {
        /// What was wrong.
        reason: &'static str,
    },

    // ---- Attestation variants ------------------------------------------------------------------------
    /// The document names another variant than the validator's.
    VariantMismatch {
        /// The validator's variant.
        expected: &'static str,
        /// The document's variant string (truncated to 64 bytes).
        found: Bytes,
    },
    /// A part of the evidence the variant needs is absent.
    MissingEvidence {
        /// What is missing.
        what: &'static str,
    },
    /// The attestation key is not trusted by the validator's AK policy.
    AkNotTrusted {
        /// SHA-256 of the AK's TPMT_PUBLIC.
        ak_digest: Bytes,
    },
    /// The hardware report does not bind the attestation key.
    AkBindingMismatch {
        /// The expected binding value.
        expected: Bytes,
        /// The value in the report.
        found: Bytes,
    },
    /// The SNP report's REPORT_DATA does not bind this attestation's AK and nonce
    /// ([`crate::variant::binding`]): a report replayed from an earlier attestation, or one for another key.
    FreshnessBindingMismatch {
        /// The binding this attestation needs.
        expected: Bytes,
        /// REPORT_DATA of the report.
        found: Bytes,
    },
    /// An enforced PCR does not have its expected value.
    PcrMismatch {
        /// The PCR index.
        pcr: u8,
        /// The expected value.
        expected: Bytes,
        /// The quoted value (empty when the quote did not cover the PCR).
        found: Bytes,
    },

    // ---- GCE (go-tpm-tools attestations) and evidence formats -------------------------------------------
    /// Google's instance-information extension (1.3.6.1.4.1.11129.2.1.21) is malformed, or the attester's
    /// unsigned copy differs from it.
    GceInstanceInfo {
        /// What was wrong.
        reason: &'static str,
    },
    /// The AK certificate certifies another key than the attestation key (TCG EK Credential Profile: the
    /// certificate's SubjectPublicKeyInfo is the AK).
    AkCertificateKeyMismatch,
    /// A quote's qualifiedSigner is not the attestation key's qualified name (TPM 2.0 Part 1 §16): the
    /// TPM says another key signed, or the presented TPMT_PUBLIC is not the key's.
    QualifiedSignerMismatch {
        /// qualifiedSigner in the quote.
        found: Bytes,
    },
    /// A platform policy check (GCE: production, project, technology) failed.
    PlatformPolicy {
        /// The check's stable name.
        check: &'static str,
        /// What the policy required.
        expected: Value,
        /// What the evidence showed.
        found: Value,
    },
    /// An evidence file in another verifier's wire format (JSON, bincode) is malformed.
    EvidenceFormat {
        /// The format (e.g. "trustee az-snp-vtpm evidence").
        format: &'static str,
        /// What was wrong.
        reason: &'static str,
    },
    /// The HCL runtime data's "user-data" differs from what the caller expects (Azure evidence v2 binds
    /// the verifier's report data there).
    RuntimeUserDataMismatch {
        /// The expected 64 bytes.
        expected: Bytes,
        /// The runtime data's value (empty when absent).
        found: Bytes,
    },
    // ---- Intel TDX (DCAP quote v4/v5, PCK certificates, Intel PCS collateral) -------------------------
    /// A TDX quote structure is malformed (Intel TDX DCAP Quoting Library API, "Quote Format").
    TdxQuote {
        /// The structure (header, TD report body, signature data, certification data, …).
        structure: &'static str,
        /// Byte offset in the quote.
        offset: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// A quote field holds a value the engine does not accept (version, TEE type, key type, QE vendor,
    /// body type, certification data type).
    TdxUnsupported {
        /// The field.
        field: &'static str,
        /// The value found.
        found: u64,
    },
    /// The QE report signature does not verify under the PCK certificate's key.
    QeReportSignatureInvalid,
    /// QE REPORTDATA is not SHA-256(attestation key ‖ QE authentication data) followed by 32 zero bytes.
    QeReportDataMismatch {
        /// The expected 64 bytes.
        expected: Bytes,
        /// QE REPORTDATA.
        found: Bytes,
    },
    /// The quote signature over header ‖ TD report body does not verify under the attestation key.
    TdQuoteSignatureInvalid,
    /// The PCK certificate's SGX extension (OID 1.2.840.113741.1.13.1) is malformed or incomplete.
    SgxExtension {
        /// The field (e.g. "FMSPC", "TCB").
        field: &'static str,
        /// What was wrong.
        reason: &'static str,
    },
    /// TDX collateral (TCB Info, QE Identity, bundle JSON) is malformed.
    Collateral {
        /// The collateral part.
        what: &'static str,
        /// What was wrong.
        reason: &'static str,
    },
    /// A collateral signature does not verify under the TCB Signing key, or a CRL under its issuer.
    CollateralSignatureInvalid {
        /// The collateral part.
        what: &'static str,
    },
    /// A collateral part's nextUpdate lies before the trusted time.
    CollateralExpired {
        /// The collateral part.
        what: &'static str,
        /// The trusted time.
        time: UnixTime,
        /// nextUpdate.
        next_update: UnixTime,
    },
    /// A collateral part's issueDate lies after the trusted time.
    CollateralNotYetValid {
        /// The collateral part.
        what: &'static str,
        /// The trusted time.
        time: UnixTime,
        /// issueDate.
        issue_date: UnixTime,
    },
    /// No installed collateral matches the quote's platform (FMSPC and PCE-ID of the PCK certificate).
    CollateralMissing {
        /// FMSPC of the PCK certificate.
        fmspc: Bytes,
    },
    /// The platform and the collateral disagree (FMSPC, PCE-ID, TEE type of the TCB Info).
    CollateralMismatch {
        /// The field.
        field: &'static str,
        /// The evidence's value.
        evidence: Bytes,
        /// The collateral's value.
        collateral: Bytes,
    },
    /// No TCB level of the collateral is met (Intel: "TCB level not supported").
    TcbLevelNotFound {
        /// "platform", "TDX module" or "QE".
        what: &'static str,
    },
    /// The QE report or the TDX module does not match its identity in the collateral.
    IdentityMismatch {
        /// "QE identity" or "TDX module identity".
        what: &'static str,
        /// The field that differs.
        field: &'static str,
    },
    /// The root of a certificate chain is not the pinned Intel SGX Root CA.
    UntrustedIntelRoot,
    /// Replaying the CC event log does not reproduce an RTMR of the quote.
    RtmrReplayMismatch {
        /// The RTMR index (0..=3).
        rtmr: u8,
        /// The quote's RTMR.
        expected: Bytes,
        /// The value from replaying the log.
        replayed: Bytes,
    },
    /// A TDX policy check failed.
    TdxPolicy(TdxPolicyViolation),

    // ---- Policy ----------------------------------------------------------------------------------------
    /// A policy check failed.
    Policy(PolicyViolation),
    /// An SNP-based attestation variant's policy pins no launch (no `measurements`, no `id_key_digests`) and
    /// does not set the waiver `dangerous_allow_unpinned_launch` ([`crate::snp::SnpPolicy::launch_pinning`]);
    /// or a TDX variant's policy has no `mrtd` allow-list and no such waiver
    /// ([`crate::tdx::TdxPolicy::launch_pinning`]).
    LaunchUnpinned,
    /// A policy file could not be read.
    PolicyFile {
        /// "toml" or "json".
        format: &'static str,
        /// The parser's message (field names, line and column).
        reason: Box<str>,
    },
    /// The caller used the API wrongly (not a property of the evidence).
    Misuse {
        /// What was wrong.
        reason: &'static str,
    },
}

impl Error {
    /// The policy check this error corresponds to, if it is a policy rejection.
    pub fn check(&self) -> Option<Check> {
        match self {
            Self::Policy(v) => Some(v.check),
            _ => None,
        }
    }

    /// The TDX policy check this error corresponds to, if it is a TDX policy rejection.
    pub fn check_tdx(&self) -> Option<TdxCheck> {
        match self {
            Self::TdxPolicy(v) => Some(v.check),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Der { structure, offset, reason } => write!(f, "malformed DER in {structure} at offset {offset}: {reason}"),
            Self::TrailingData { structure, extra } => write!(f, "{extra} unexpected byte(s) after {structure}"),
            Self::Truncated { structure, needed, found } => {
                write!(f, "{structure} truncated: need {needed} bytes, found {found}")
            }
            Self::LimitExceeded { what, limit, found } => write!(f, "{what}: {found} exceeds the limit of {limit}"),
            Self::Pem { reason } => write!(f, "malformed PEM: {reason}"),
            Self::UnsupportedAlgorithm { what } => write!(f, "unsupported {what}"),
            Self::UnsupportedCriticalExtension => f.write_str("unsupported critical extension"),
            Self::AmdExtension { extension, reason } => write!(f, "AMD extension {extension}: {reason}"),
            Self::MissingAmdExtension { role, extension } => write!(f, "{role} lacks the AMD extension {extension}"),
            Self::UnsupportedReportVersion { found } => {
                write!(f, "report VERSION: expected 2, 3 or 5, found {found}")
            }
            Self::UnsupportedReportSignatureAlgorithm { found } => {
                write!(f, "report SIGNATURE_ALGO: expected 1 (ECDSA P-384/SHA-384), found {found}")
            }
            Self::ReservedNonZero { field, offset } => write!(f, "reserved field {field} at 0x{offset:x} is not zero"),
            Self::UnsupportedSigningKey { found } => {
                write!(f, "report SIGNING_KEY: expected 0 (VCEK) or 1 (VLEK), found {found}")
            }
            Self::ReportSignatureInvalid => f.write_str("report signature does not verify under the VCEK/VLEK"),
            Self::SnpCertTable { offset, reason } => write!(f, "certificate table at byte {offset}: {reason}"),
            Self::ProductUnknown => f.write_str(
                "product unknown: give it explicitly, or supply a report with CPUID fields (v3+) or a certificate with productName",
            ),
            Self::UnsupportedProduct { source } => write!(f, "unsupported product named by the {source}"),
            Self::ProductMismatch { expected, expected_source, found, found_source } => write!(
                f,
                "product mismatch: {expected_source} says {expected}, {found_source} says {found}"
            ),
            Self::CertSignatureInvalid { role } => write!(f, "{role} signature does not verify under its issuer"),
            Self::IssuerMismatch { role } => write!(f, "{role} issuer name does not match its issuer's subject"),
            Self::NotACa { role } => write!(f, "{role} is not allowed to sign certificates"),
            Self::UntrustedCertificate { role, product } => {
                write!(f, "{role} is not the pinned AMD {role} for {product}")
            }
            Self::CertExpired { role, time, not_after } => {
                write!(f, "{role} expired: valid until {not_after}, trusted time {time}")
            }
            Self::CertNotYetValid { role, time, not_before } => {
                write!(f, "{role} not yet valid: valid from {not_before}, trusted time {time}")
            }
            Self::LeafKeyNotP384 { role } => write!(f, "{role} key is not ECDSA P-384"),
            Self::SigningKeyMismatch { report, certificate } => {
                write!(f, "report SIGNING_KEY says {report} but the certificate is a {certificate}")
            }
            Self::TcbMismatch { component, report, certificate } => write!(
                f,
                "REPORTED_TCB {component}: report has {report}, certificate SPL is {certificate}"
            ),
            Self::ChipIdMismatch { report, certificate } => {
                write!(f, "CHIP_ID {report} does not match the VCEK hwID {certificate}")
            }
            Self::Revoked { role, serial } => write!(f, "{role} serial {serial} is revoked by {}", role.revocation_list()),
            Self::UnknownIssuer { depth } => write!(f, "no trusted issuer found for the certificate at depth {depth}"),
            Self::PathBudgetExceeded => f.write_str("certificate path building exceeded its budget"),
            Self::PathLenConstraintViolated { role, path_len, intermediates_below } => write!(
                f,
                "{role} allows {path_len} intermediate(s) below it (pathLenConstraint), the path has {intermediates_below}"
            ),
            Self::ExtendedKeyUsageNotPermitted { role, depth } => {
                write!(f, "{role} at depth {depth} does not list the required extended key usage")
            }
            Self::CrlSignatureInvalid => f.write_str("CRL is not signed by the product's ARK"),
            Self::CrlStale { time, next_update } => match next_update {
                Some(n) => write!(f, "CRL is stale: nextUpdate {n} is before the trusted time {time}"),
                None => write!(f, "CRL has no nextUpdate (trusted time {time})"),
            },
            Self::CrlNotYetValid { time, this_update } => {
                write!(f, "CRL thisUpdate {this_update} is after the trusted time {time}")
            }
            Self::CrlMissing => f.write_str("policy requires a CRL and none was supplied"),
            Self::Tpm { structure, offset, reason } => write!(f, "malformed {structure} at offset {offset}: {reason}"),
            Self::UnsupportedTpmAlgorithm { what, id } => write!(f, "unsupported TPM algorithm 0x{id:04x} for {what}"),
            Self::TpmMagic { found } => write!(f, "TPMS_ATTEST.magic: expected 0xff544347, found 0x{found:08x}"),
            Self::TpmAttestType { expected, found } => {
                write!(f, "TPMS_ATTEST.type: expected 0x{expected:04x}, found 0x{found:04x}")
            }
            Self::AkAttributes { attributes, reason } => {
                write!(f, "attestation key attributes 0x{attributes:08x}: {reason}")
            }
            Self::NonceMismatch { expected, found } if expected.as_slice().is_empty() => {
                write!(f, "quote extraData: expected no nonce (empty), found the nonce {found}")
            }
            Self::NonceMismatch { expected, found } => write!(f, "quote extraData: expected {expected}, found {found}"),
            Self::PcrDigestMismatch { computed, quoted } => {
                write!(f, "quote pcrDigest {quoted} does not match the presented PCR values (digest {computed})")
            }
            Self::PcrValueMissing { bank, pcr } => write!(f, "no valid {} value presented for quoted PCR {pcr}", bank.name()),
            Self::Sha1Refused => f.write_str("SHA-1 PCR bank or signature refused (not allowed by the caller)"),
            Self::QuoteSignatureInvalid => f.write_str("quote signature does not verify under the attestation key"),
            Self::EventLog { offset, reason } => write!(f, "malformed event log at offset {offset}: {reason}"),
            Self::EventLogReplayMismatch { bank, pcr, expected, replayed } => write!(
                f,
                "event log replay of {} PCR {pcr} gives {replayed}, expected {expected}",
                bank.name()
            ),
            Self::RuntimeData { reason } => write!(f, "HCL runtime data: {reason}"),
            Self::VariantMismatch { expected, found } => {
                write!(f, "attestation variant: expected {expected}, found {:?}", String::from_utf8_lossy(found.as_slice()))
            }
            Self::MissingEvidence { what } => write!(f, "attestation document lacks {what}"),
            Self::AkNotTrusted { ak_digest } => write!(f, "attestation key {ak_digest} is not trusted (not pinned or registered)"),
            Self::AkBindingMismatch { expected, found } => {
                write!(f, "hardware report does not bind the attestation key: expected {expected}, found {found}")
            }
            Self::FreshnessBindingMismatch { expected, found } => write!(
                f,
                "SNP report does not bind this attestation's key and nonce (replayed or foreign report): expected {expected}, found {found}"
            ),
            Self::PcrMismatch { pcr, expected, found } => {
                if found.as_slice().is_empty() {
                    write!(f, "PCR {pcr}: expected {expected}, but the quote does not cover it")
                } else {
                    write!(f, "PCR {pcr}: expected {expected}, found {found}")
                }
            }
            Self::GceInstanceInfo { reason } => write!(f, "GCE instance information: {reason}"),
            Self::AkCertificateKeyMismatch => f.write_str("the AK certificate certifies another key than the attestation key"),
            Self::QualifiedSignerMismatch { found } => {
                write!(f, "quote qualifiedSigner {found} is not the attestation key's qualified name")
            }
            Self::PlatformPolicy { check, expected, found } => {
                write!(f, "platform policy check {check}: expected {expected}, found {found}")
            }
            Self::EvidenceFormat { format, reason } => write!(f, "malformed {format}: {reason}"),
            Self::RuntimeUserDataMismatch { expected, found } => {
                if found.as_slice().is_empty() {
                    write!(f, "HCL runtime data has no user-data; expected {expected}")
                } else {
                    write!(f, "HCL runtime data user-data {found} differs from the expected {expected}")
                }
            }
            Self::TdxQuote { structure, offset, reason } => {
                write!(f, "malformed TDX quote {structure} at offset {offset}: {reason}")
            }
            Self::TdxUnsupported { field, found } => write!(f, "unsupported TDX quote {field}: {found:#x}"),
            Self::QeReportSignatureInvalid => f.write_str("QE report signature does not verify under the PCK key"),
            Self::QeReportDataMismatch { expected, found } => {
                write!(f, "QE report data {found} does not bind the attestation key (expected {expected})")
            }
            Self::TdQuoteSignatureInvalid => f.write_str("TD quote signature does not verify under the attestation key"),
            Self::SgxExtension { field, reason } => write!(f, "PCK certificate SGX extension {field}: {reason}"),
            Self::Collateral { what, reason } => write!(f, "TDX collateral {what}: {reason}"),
            Self::CollateralSignatureInvalid { what } => write!(f, "TDX collateral {what}: signature does not verify"),
            Self::CollateralExpired { what, time, next_update } => {
                write!(f, "TDX collateral {what} expired: nextUpdate {next_update}, trusted time {time}")
            }
            Self::CollateralNotYetValid { what, time, issue_date } => {
                write!(f, "TDX collateral {what} not yet valid: issued {issue_date}, trusted time {time}")
            }
            Self::CollateralMissing { fmspc } => write!(f, "no TDX collateral installed for FMSPC {fmspc}"),
            Self::CollateralMismatch { field, evidence, collateral } => {
                write!(f, "{field}: evidence has {evidence}, collateral has {collateral}")
            }
            Self::TcbLevelNotFound { what } => write!(f, "no {what} TCB level of the collateral is met"),
            Self::IdentityMismatch { what, field } => write!(f, "{what}: {field} does not match"),
            Self::UntrustedIntelRoot => f.write_str("certificate chain does not end in the pinned Intel SGX Root CA"),
            Self::RtmrReplayMismatch { rtmr, expected, replayed } => {
                write!(f, "CC event log replay of RTMR{rtmr} gives {replayed}, the quote has {expected}")
            }
            Self::TdxPolicy(v) => {
                write!(f, "TDX policy check {}: expected {}, found {}", v.check.name(), v.expected, v.found)
            }
            Self::Policy(v) => write!(f, "policy check {}: expected {}, found {}", v.check.name(), v.expected, v.found),
            Self::LaunchUnpinned => f.write_str(
                "the policy pins no launch measurement (SNP: set measurements or id_key_digests; TDX: set mrtd; or the waiver dangerous_allow_unpinned_launch)",
            ),
            Self::PolicyFile { format, reason } => write!(f, "invalid {format} policy: {reason}"),
            Self::Misuse { reason } => write!(f, "API misuse: {reason}"),
        }
    }
}

impl std::error::Error for Error {}
