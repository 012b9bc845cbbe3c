//! The `azure-sev-snp` issuer: the HCL report from the paravisor's vTPM (NV index 0x01400001) and a quote
//! by the HCL attestation key (persistent handle 0x81000003), read with Microsoft's `az-cvm-vtpm` crate.
//!
//! ```text
//! HCL report = header ‖ SNP report (REPORT_DATA = SHA-256(runtime data) ‖ 0³²) ‖ runtime data (JSON, "HCLAkPub")
//! document   = { variant "azure-sev-snp",
//!                tpm { ak_public: empty (the AK comes from the runtime data), quote_attest,
//!                      quote_signature (TPMT_SIGNATURE, RSASSA/SHA-256), pcrs[0..24] SHA-256 },
//!                snp { leaf_certificate: the VCEK },  hcl_report,  instance_info, user_data }
//! ```
//!
//! The quote's extraData is `SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))` ([`Validator::quote_nonce`]).
//! `az-cvm-vtpm` returns the bare RSASSA signature bytes; the issuer wraps them in the TPMT_SIGNATURE the
//! document carries ([`tpmt_signature_rsassa_sha256`]: the HCL AK is an RSA-2048 RSASSA/SHA-256 key, and a
//! different hash would make the verifier reject the quote, not accept a wrong one). It reads the PCRs after
//! the quote, so, like the `qemu-vtpm` issuer, it checks them against the quote's pcrDigest and quotes again
//! on a mismatch.
//!
//! The VCEK is not in the vTPM: on Azure it comes from the instance metadata service (THIM, at
//! `http://169.254.169.254/metadata/THIM/amd/certification`) — fetching it is the caller's business, so the
//! issuer takes it as an input.
//!
//! `az-cvm-vtpm` 0.8.2 builds here against Debian 12's libtss2 (through tss-esapi 7.7) with its `attester`
//! feature only; it depends on `sev` 7 while this crate uses `sev` 8, which Cargo keeps apart (two
//! semver-incompatible versions), so no rename is needed. It always opens the TPM at `/dev/tpm0`
//! (tss-esapi's default device TCTI), so that is the device this issuer looks for.
//!
//! [`AzureSnpIssuer::new`] fails with [`HwIssuerError::DeviceNotPresent`] when `/dev/tpm0` or the NV index is
//! absent (every non-Azure machine, including ones with a TPM); [`azure_document`] builds the same document
//! from parts for tests.

use super::snp::HwIssuerError;
use attest_engine::azure::HclReport;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::tpm::Attest;
use attest_engine::tpm::alg::{TPM_ALG_RSASSA, TPM_ALG_SHA256};
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, SnpEvidence, TpmEvidence};
use std::path::Path;

/// The TPM device `az-cvm-vtpm` opens.
pub const VTPM_DEVICE: &str = "/dev/tpm0";
/// The NV index holding the HCL report.
pub const HCL_REPORT_NV_INDEX: u32 = 0x0140_0001;
/// How often the issuer quotes before giving up on PCRs that keep changing under it.
pub const MAX_QUOTE_ATTEMPTS: usize = 3;

/// A TPMT_SIGNATURE for a bare RSASSA-PKCS1-v1_5/SHA-256 signature: sigAlg 0x0014, hash 0x000B, TPM2B.
pub fn tpmt_signature_rsassa_sha256(sig: &[u8]) -> Result<Vec<u8>, HwIssuerError> {
    let len = u16::try_from(sig.len())
        .map_err(|_| crate::tpm::Error::InvalidArgument { what: "an RSA signature above 65535 bytes" })?;
    let mut out = Vec::with_capacity(6 + sig.len());
    out.extend_from_slice(&TPM_ALG_RSASSA.to_be_bytes());
    out.extend_from_slice(&TPM_ALG_SHA256.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(sig);
    Ok(out)
}

/// The parts of an Azure vTPM quote: TPMS_ATTEST, the bare RSASSA/SHA-256 signature, SHA-256 PCRs 0..=23.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VtpmQuote {
    /// TPMS_ATTEST.
    pub attest: Vec<u8>,
    /// The bare RSA signature.
    pub signature: Vec<u8>,
    /// SHA-256 PCRs 0..=23, in index order.
    pub pcrs: Vec<[u8; 32]>,
}

impl VtpmQuote {
    /// Whether the PCR values hash to the quote's pcrDigest (they were read after the quote).
    pub fn pcrs_match(&self) -> Result<bool, HwIssuerError> {
        let attest = Attest::parse(&self.attest)?;
        let values: Vec<&[u8]> = self.pcrs.iter().map(|v| &v[..]).collect();
        Ok(default_provider().digests.digest(HashAlgorithm::Sha256, &values).as_bytes() == attest.pcr_digest())
    }
}

/// An `azure-sev-snp` document from its parts. Checks that the HCL report parses and holds an SNP report.
pub fn azure_document(
    hcl_report: Vec<u8>,
    vcek: Vec<u8>,
    quote: VtpmQuote,
    instance_info: &[u8],
    user_data: &[u8],
) -> Result<AttestationDocument, HwIssuerError> {
    let hcl = HclReport::parse(&hcl_report)?;
    if hcl.snp_report().is_none() {
        return Err(HwIssuerError::Device { op: "reading the HCL report", reason: "not an SNP HCL report".into() });
    }
    let pcrs = quote
        .pcrs
        .iter()
        .zip(0u32..)
        .map(|(v, index)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index, value: v.to_vec() })
        .collect();
    Ok(AttestationDocument {
        variant: Variant::AzureSevSnp.name().to_owned(),
        tpm: Some(TpmEvidence {
            ak_public: Vec::new(),
            quote_attest: quote.attest,
            quote_signature: tpmt_signature_rsassa_sha256(&quote.signature)?,
            pcrs,
            event_log: Vec::new(),
            ak_certificate: Vec::new(),
            ek_certificate: Vec::new(),
        }),
        snp: Some(SnpEvidence { leaf_certificate: vcek, ..SnpEvidence::default() }),
        hcl_report,
        instance_info: instance_info.to_vec(),
        user_data: user_data.to_vec(),
        tdx: None,
    })
}

/// Issues `azure-sev-snp` documents from the paravisor's vTPM.
#[derive(Debug)]
pub struct AzureSnpIssuer {
    vcek: Vec<u8>,
}

impl AzureSnpIssuer {
    /// An issuer sending `vcek` (DER or PEM; from Azure's THIM endpoint). Fails with
    /// [`HwIssuerError::DeviceNotPresent`] when `/dev/tpm0` or the HCL report's NV index does not exist.
    pub fn new(vcek: &[u8]) -> Result<Self, HwIssuerError> {
        if !Path::new(VTPM_DEVICE).exists() {
            return Err(HwIssuerError::DeviceNotPresent { device: VTPM_DEVICE });
        }
        if !hcl_index_present()? {
            return Err(HwIssuerError::DeviceNotPresent { device: "vTPM NV index 0x01400001 (HCL report)" });
        }
        let mut certs = attest_engine::x509::pem::certificates_from_pem_or_der(vcek)?;
        if certs.is_empty() {
            return Err(HwIssuerError::MissingLeafCertificate { want: "VCEK" });
        }
        Ok(Self { vcek: certs.swap_remove(0) })
    }

    /// The HCL report as the vTPM holds it now (the paravisor refreshes it at boot).
    pub fn hcl_report(&self) -> Result<Vec<u8>, HwIssuerError> {
        az_cvm_vtpm::vtpm::get_report()
            .map_err(|e| HwIssuerError::Device { op: "reading NV index 0x01400001", reason: e.to_string() })
    }

    /// A quote by the HCL AK over SHA-256 PCRs 0..=23 with `extra_data`, and the PCRs read after it.
    pub fn quote(&self, extra_data: &[u8]) -> Result<VtpmQuote, HwIssuerError> {
        let q = az_cvm_vtpm::vtpm::get_quote(extra_data)
            .map_err(|e| HwIssuerError::Device { op: "quoting with the HCL AK", reason: e.to_string() })?;
        Ok(VtpmQuote { attest: q.message(), signature: q.signature(), pcrs: q.pcrs_sha256().copied().collect() })
    }

    /// Issues a document for the verifier's `nonce`, binding `user_data` and `instance_info`.
    pub fn issue(
        &self,
        nonce: &[u8],
        user_data: &[u8],
        instance_info: &[u8],
    ) -> Result<AttestationDocument, HwIssuerError> {
        let extra = Validator::quote_nonce(default_provider(), instance_info, user_data, nonce);
        let hcl = self.hcl_report()?;
        for _ in 0..MAX_QUOTE_ATTEMPTS {
            let quote = self.quote(&extra)?;
            if quote.pcrs_match()? {
                return azure_document(hcl, self.vcek.clone(), quote, instance_info, user_data);
            }
        }
        Err(crate::tpm::Error::UnexpectedTpmOutput {
            what: "PCRs changed between every quote and the PCR read that followed it",
        }
        .into())
    }
}

/// Whether NV index 0x01400001 exists (TPM2_GetCapability(TPM_CAP_HANDLES) from that index).
fn hcl_index_present() -> Result<bool, HwIssuerError> {
    use std::str::FromStr as _;
    use tss_esapi::constants::CapabilityType;
    use tss_esapi::structures::CapabilityData;
    let tpm_err = |op| move |e: tss_esapi::Error| HwIssuerError::Device { op, reason: e.to_string() };
    let conf = tss_esapi::tcti_ldr::TctiNameConf::from_str(&format!("device:{VTPM_DEVICE}"))
        .map_err(tpm_err("parsing the TCTI string"))?;
    let mut ctx = tss_esapi::Context::new(conf).map_err(tpm_err("opening /dev/tpm0"))?;
    let (data, _) = ctx
        .execute_without_session(|ctx| ctx.get_capability(CapabilityType::Handles, HCL_REPORT_NV_INDEX, 1))
        .map_err(tpm_err("TPM2_GetCapability (NV handles)"))?;
    Ok(matches!(data, CapabilityData::Handles(list) if list.iter().any(|h| u32::from(*h) == HCL_REPORT_NV_INDEX)))
}
