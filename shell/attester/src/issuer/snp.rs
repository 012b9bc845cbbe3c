//! The `aws-sev-snp` and `gcp-sev-snp` issuers: an SEV-SNP attestation report from `/dev/sev-guest` (the
//! virtee `sev` crate) that binds the vTPM's attestation key, next to a TPM quote by that key.
//!
//! ```text
//! REPORT_DATA = SHA-512(TPM2B_PUBLIC of the AK)                         (Validator::ak_binding)
//! document    = { variant "aws-sev-snp" | "gcp-sev-snp",
//!                 tpm { ak_public, quote_attest, quote_signature, pcrs[..] , … }   (the qemu-vtpm issuer's)
//!                 snp { report, leaf_certificate (VLEK on AWS, VCEK on GCP), intermediate?, root? },
//!                 instance_info, user_data }
//! ```
//!
//! The report is requested with `SNP_GET_EXT_REPORT` so that the host's certificate table comes with it
//! when the host provides one (AWS supplies the VLEK that way); otherwise a leaf configured with
//! [`SnpIssuer::with_leaf_certificate`] is sent (on GCP the VCEK comes from AMD's KDS by chip id and TCB —
//! fetching it is the caller's business). Freshness comes from the quote (its extraData binds the
//! verifier's nonce); the report binds the AK, so it is the same for every nonce, but it is requested anew
//! for every document so that it carries the current TCB.
//!
//! The issuer is only usable where `/dev/sev-guest` exists: [`SnpIssuer::new`] fails with
//! [`HwIssuerError::DeviceNotPresent`] elsewhere, and [`snp_document`] builds the same document from parts
//! for tests.

use super::QemuVtpmIssuer;
use attest_engine::crypto::default_provider;
use attest_engine::variant::{Validator, Variant};
use attest_engine::x509::pem::certificates_from_pem_or_der;
use attest_proto::attest::v1::{AttestationDocument, SnpEvidence};
use core::fmt;
use sev::firmware::guest::Firmware;
use sev::firmware::host::{CertTableEntry, CertType};
use std::sync::Mutex;

/// The SEV-SNP guest device.
pub const SEV_GUEST: &str = "/dev/sev-guest";

/// SNP_GET_REPORT message version used (1: the only one every kernel accepts).
const MESSAGE_VERSION: u32 = 1;

/// Why a hardware-backed issuer could not be made or could not issue.
#[derive(Debug)]
#[non_exhaustive]
pub enum HwIssuerError {
    /// The device (or the vTPM NV index) does not exist on this machine: not a confidential VM of this kind.
    DeviceNotPresent {
        /// The device path or NV index.
        device: &'static str,
    },
    /// The device exists but a request to it failed.
    Device {
        /// What we were doing.
        op: &'static str,
        /// The device's or driver's error.
        reason: String,
    },
    /// The variant is not one this issuer produces.
    UnsupportedVariant(Variant),
    /// No leaf certificate (VCEK/VLEK): the host's certificate table lacks it and none was configured.
    MissingLeafCertificate {
        /// Which key the variant needs ("VLEK" or "VCEK").
        want: &'static str,
    },
    /// The TPM side failed.
    Tpm(crate::tpm::Error),
    /// The device returned something the engine cannot parse.
    Engine(attest_engine::Error),
}

impl fmt::Display for HwIssuerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeviceNotPresent { device } => write!(f, "{device} not present"),
            Self::Device { op, reason } => write!(f, "{op} failed: {reason}"),
            Self::UnsupportedVariant(v) => write!(f, "this issuer does not produce {v} documents"),
            Self::MissingLeafCertificate { want } => {
                write!(f, "no {want}: the host's certificate table lacks it and none was configured")
            }
            Self::Tpm(e) => write!(f, "{e}"),
            Self::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HwIssuerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Tpm(e) => Some(e),
            Self::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::tpm::Error> for HwIssuerError {
    fn from(e: crate::tpm::Error) -> Self {
        Self::Tpm(e)
    }
}

impl From<attest_engine::Error> for HwIssuerError {
    fn from(e: attest_engine::Error) -> Self {
        Self::Engine(e)
    }
}

/// The certificates sent with an SNP report (DER); empty means "not sent".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnpCertificates {
    /// VCEK or VLEK.
    pub leaf: Vec<u8>,
    /// ASK or ASVK.
    pub intermediate: Vec<u8>,
    /// ARK.
    pub root: Vec<u8>,
}

impl SnpCertificates {
    /// Picks the certificates from an extended report's certificate table: the leaf the variant needs
    /// (`VLEK` for AWS, `VCEK` for GCP), the ASK (the table has no ASVK slot; AMD's ASK GUID carries whichever
    /// intermediate the host put there) and the ARK. Entries may be DER or PEM.
    pub fn from_cert_table(variant: Variant, table: &[CertTableEntry]) -> Result<Self, HwIssuerError> {
        let want = leaf_type(variant)?;
        let der = |ty: &CertType| -> Result<Vec<u8>, HwIssuerError> {
            let Some(entry) = table.iter().find(|e| e.cert_type == *ty) else { return Ok(Vec::new()) };
            let mut certs = certificates_from_pem_or_der(entry.data())?;
            Ok(if certs.is_empty() { Vec::new() } else { certs.swap_remove(0) })
        };
        Ok(Self { leaf: der(&want)?, intermediate: der(&CertType::ASK)?, root: der(&CertType::ARK)? })
    }
}

fn leaf_type(variant: Variant) -> Result<CertType, HwIssuerError> {
    match variant {
        Variant::AwsSevSnp => Ok(CertType::VLEK),
        Variant::GcpSevSnp => Ok(CertType::VCEK),
        v => Err(HwIssuerError::UnsupportedVariant(v)),
    }
}

fn leaf_name(variant: Variant) -> &'static str {
    if variant == Variant::AwsSevSnp { "VLEK" } else { "VCEK" }
}

/// REPORT_DATA for an AK: SHA-512 of its TPM2B_PUBLIC ([`Validator::ak_binding`]).
pub fn report_data(ak_tpm2b_public: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out.copy_from_slice(Validator::ak_binding(default_provider(), ak_tpm2b_public).as_bytes());
    out
}

/// Turns a `qemu-vtpm` document (the TPM evidence) into an `aws-sev-snp` / `gcp-sev-snp` document with the
/// SNP `report` and its certificates. Fails for other variants, for a document without TPM evidence, and
/// when `certs` has no leaf.
pub fn snp_document(
    variant: Variant,
    mut tpm_doc: AttestationDocument,
    report: Vec<u8>,
    certs: SnpCertificates,
) -> Result<AttestationDocument, HwIssuerError> {
    leaf_type(variant)?;
    if tpm_doc.tpm.is_none() {
        return Err(crate::tpm::Error::InvalidArgument { what: "a document without TPM evidence" }.into());
    }
    if certs.leaf.is_empty() {
        return Err(HwIssuerError::MissingLeafCertificate { want: leaf_name(variant) });
    }
    variant.name().clone_into(&mut tpm_doc.variant);
    tpm_doc.snp = Some(SnpEvidence {
        report,
        leaf_certificate: certs.leaf,
        intermediate_certificate: certs.intermediate,
        root_certificate: certs.root,
    });
    Ok(tpm_doc)
}

/// Issues `aws-sev-snp` or `gcp-sev-snp` documents: SNP reports from `/dev/sev-guest`, quotes from a TPM.
#[derive(Debug)]
pub struct SnpIssuer {
    variant: Variant,
    firmware: Mutex<Firmware>,
    tpm: QemuVtpmIssuer,
    leaf: Vec<u8>,
    report_data: [u8; 64],
}

impl SnpIssuer {
    /// Opens `/dev/sev-guest` for `variant` (`aws-sev-snp` or `gcp-sev-snp`); the quotes come from `tpm`,
    /// whose AK the reports bind. [`HwIssuerError::DeviceNotPresent`] when the device does not exist.
    pub fn new(variant: Variant, tpm: QemuVtpmIssuer) -> Result<Self, HwIssuerError> {
        leaf_type(variant)?;
        let firmware = Firmware::open().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => HwIssuerError::DeviceNotPresent { device: SEV_GUEST },
            _ => HwIssuerError::Device { op: "opening /dev/sev-guest", reason: e.to_string() },
        })?;
        let report_data = report_data(tpm.attestation_key().tpm2b_public());
        Ok(Self { variant, firmware: Mutex::new(firmware), tpm, leaf: Vec::new(), report_data })
    }

    /// Sends this leaf (DER or PEM; VLEK for AWS, VCEK for GCP) when the host's certificate table has none.
    pub fn with_leaf_certificate(mut self, cert: &[u8]) -> Result<Self, HwIssuerError> {
        let mut certs = certificates_from_pem_or_der(cert)?;
        if certs.is_empty() {
            return Err(HwIssuerError::MissingLeafCertificate { want: leaf_name(self.variant) });
        }
        self.leaf = certs.swap_remove(0);
        Ok(self)
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The TPM issuer (its AK is the one the reports bind).
    pub fn tpm_issuer(&self) -> &QemuVtpmIssuer {
        &self.tpm
    }

    /// An extended SNP report binding the AK (REPORT_DATA = SHA-512(TPM2B_PUBLIC)), with the certificates
    /// from the host's table (the configured leaf when the table has none).
    pub fn report(&self) -> Result<(Vec<u8>, SnpCertificates), HwIssuerError> {
        let mut fw = self.firmware.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (report, table) = fw
            .get_ext_report(Some(MESSAGE_VERSION), Some(self.report_data), None)
            .map_err(|e| HwIssuerError::Device { op: "SNP_GET_EXT_REPORT", reason: e.to_string() })?;
        drop(fw);
        let mut certs = SnpCertificates::from_cert_table(self.variant, table.as_deref().unwrap_or_default())?;
        if certs.leaf.is_empty() {
            certs.leaf.clone_from(&self.leaf);
        }
        // Catch a malformed report here rather than at the verifier.
        attest_engine::snp::Report::parse(&report)?;
        Ok((report, certs))
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` and `instance_info` (as the
    /// `qemu-vtpm` issuer does) and adding a fresh SNP report.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let tpm_doc = self.tpm.issue(nonce, user_data, instance_info)?;
        let (report, certs) = self.report()?;
        snp_document(self.variant, tpm_doc, report, certs)
    }
}
