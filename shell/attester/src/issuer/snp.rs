//! The `aws-sev-snp` and `gcp-sev-snp` issuers: a **fresh** SEV-SNP attestation report for every
//! attestation, whose REPORT_DATA binds the vTPM's attestation key *and* this attestation's nonce, next to a
//! TPM quote by that key carrying the same nonce.
//!
//! ```text
//! QUOTE_NONCE = SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))             (Validator::quote_nonce)
//! REPORT_DATA = SHA-512(label ‖ u64be(len AK) ‖ AK TPM2B_PUBLIC ‖ QUOTE_NONCE)   (snp_vtpm_report_data)
//! document    = { variant "aws-sev-snp" | "gcp-sev-snp",
//!                 tpm { ak_public, quote_attest (extraData = QUOTE_NONCE), quote_signature, pcrs[..], … },
//!                 snp { report, leaf_certificate (VLEK on AWS, VCEK on GCP), intermediate?, root? },
//!                 instance_info, user_data }
//! ```
//!
//! On AWS and GCP the vTPM runs outside the guest's TEE, so the host holds the AK and could sign any quote;
//! only the report, which the AMD secure processor signs for this guest, proves freshness. A report
//! recorded once and replayed next to a freshly signed quote no longer matches (the verifier recomputes
//! REPORT_DATA from the document's AK and its own nonce; `attest_engine::variant::binding`).
//!
//! The report comes from the SEV-SNP guest device ([`SnpGuestDevice`]: `/dev/sev-guest`, or a simulator in
//! tests and the demo) as an extended report, so the host's certificate table comes with it when the host
//! provides one (AWS supplies the VLEK that way); otherwise a leaf configured with
//! [`SnpIssuer::with_leaf_certificate`] is sent (on GCP the VCEK comes from AMD's KDS by chip id and TCB —
//! fetching it is the caller's business). Reports are requested for VMPL 0, where the guest kernel of
//! these clouds runs.
//!
//! [`snp_document`] builds the same document from parts for tests.

use super::QemuVtpmIssuer;
pub use super::error::HwIssuerError;
use super::sevguest::SnpGuestDevice;
use attest_engine::crypto::default_provider;
use attest_engine::snp::{CertKind, CertTable, SigningKey};
use attest_engine::variant::{AkTrust, Validator, Variant, snp_vtpm_report_data};
use attest_engine::x509::pem::certificates_from_pem_or_der;
use attest_proto::attest::v1::{AttestationDocument, SnpEvidence};

pub use super::sevguest::SEV_GUEST;

/// The VMPL reports are requested for (the guest kernel on AWS and GCP runs at VMPL 0).
pub const REPORT_VMPL: u32 = 0;

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
    /// Picks the certificates from an extended report's certificate table (GHCB layout; empty: none): the
    /// leaf of the key that signs the variant's reports (the variant table's signer: VLEK on AWS, VCEK on GCP), the ASK (the table has no ASVK slot; AMD's ASK
    /// GUID carries whichever intermediate the host put there) and the ARK. Entries may be DER or PEM.
    pub fn from_cert_table(variant: Variant, table: &[u8]) -> Result<Self, HwIssuerError> {
        let want = leaf_type(variant)?;
        if table.is_empty() {
            return Ok(Self::default());
        }
        let table = CertTable::parse(table).map_err(|e| HwIssuerError::Device {
            op: "reading the extended report's certificate table",
            reason: e.to_string(),
        })?;
        let der = |kind: CertKind| -> Result<Vec<u8>, HwIssuerError> {
            let Some(data) = table.get(kind) else { return Ok(Vec::new()) };
            let mut certs = certificates_from_pem_or_der(data)?;
            Ok(if certs.is_empty() { Vec::new() } else { certs.swap_remove(0) })
        };
        Ok(Self { leaf: der(want)?, intermediate: der(CertKind::Ask)?, root: der(CertKind::Ark)? })
    }
}

/// The AMD key that signs `variant`'s reports, from the variant table: this issuer serves the variants whose
/// AK a fresh SNP report binds.
fn signer(variant: Variant) -> Result<SigningKey, HwIssuerError> {
    let info = variant.info();
    match (info.ak, info.snp_signer()) {
        (AkTrust::FreshReportBinding, Some(signer)) => Ok(signer),
        _ => Err(HwIssuerError::UnsupportedVariant(variant)),
    }
}

fn leaf_type(variant: Variant) -> Result<CertKind, HwIssuerError> {
    Ok(match signer(variant)? {
        SigningKey::Vcek => CertKind::Vcek,
        SigningKey::Vlek => CertKind::Vlek,
    })
}

fn leaf_name(variant: Variant) -> &'static str {
    match signer(variant) {
        Ok(SigningKey::Vlek) => "VLEK",
        Ok(SigningKey::Vcek) | Err(_) => "VCEK",
    }
}

/// REPORT_DATA of one attestation: the AK (TPM2B_PUBLIC) and the quote's nonce
/// ([`snp_vtpm_report_data`], with `quote_nonce` = [`Validator::quote_nonce`]).
pub fn report_data(ak_tpm2b_public: &[u8], quote_nonce: &[u8; 32]) -> [u8; 64] {
    snp_vtpm_report_data(default_provider(), ak_tpm2b_public, quote_nonce)
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

/// Issues `aws-sev-snp` or `gcp-sev-snp` documents: a fresh SNP report per attestation from the guest
/// device, quotes from a TPM.
#[derive(Debug)]
pub struct SnpIssuer {
    variant: Variant,
    device: SnpGuestDevice,
    tpm: QemuVtpmIssuer,
    leaf: Vec<u8>,
}

impl SnpIssuer {
    /// An issuer for `variant` (`aws-sev-snp` or `gcp-sev-snp`) over an opened guest `device`; the quotes
    /// come from `tpm`, whose AK each report binds.
    pub fn new(variant: Variant, tpm: QemuVtpmIssuer, device: SnpGuestDevice) -> Result<Self, HwIssuerError> {
        leaf_type(variant)?;
        Ok(Self { variant, device, tpm, leaf: Vec::new() })
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

    /// The guest device.
    pub fn device(&self) -> &SnpGuestDevice {
        &self.device
    }

    /// The TPM issuer (its AK is the one the reports bind).
    pub fn tpm_issuer(&self) -> &QemuVtpmIssuer {
        &self.tpm
    }

    /// A fresh extended SNP report for one attestation (REPORT_DATA = [`report_data`] of the AK and
    /// `quote_nonce`), with the certificates from the host's table (the configured leaf when the table has
    /// none).
    pub fn report(&self, quote_nonce: &[u8; 32]) -> Result<(Vec<u8>, SnpCertificates), HwIssuerError> {
        let data = report_data(self.tpm.attestation_key().tpm2b_public(), quote_nonce);
        let (report, table) = self.device.ext_report(&data, REPORT_VMPL)?;
        let mut certs = SnpCertificates::from_cert_table(self.variant, &table)?;
        if certs.leaf.is_empty() {
            certs.leaf.clone_from(&self.leaf);
        }
        Ok((report, certs))
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` and `instance_info`: a quote whose
    /// extraData is the quote nonce and a fresh SNP report binding the AK and that same quote nonce.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let quote_nonce = Validator::quote_nonce(default_provider(), instance_info, user_data, nonce);
        let (report, certs) = self.report(&quote_nonce)?;
        // The qemu-vtpm issuer quotes with extraData = Validator::quote_nonce of the same inputs.
        let tpm_doc = self.tpm.issue(nonce, user_data, instance_info)?;
        snp_document(self.variant, tpm_doc, report, certs)
    }
}
