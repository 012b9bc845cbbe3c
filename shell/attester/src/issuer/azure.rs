//! The `azure-sev-snp` issuer: the HCL report from the paravisor's vTPM (NV index 0x01400001) and a quote
//! by the HCL attestation key (persistent handle 0x81000003).
//!
//! ```text
//! HCL report = header ‖ SNP report (REPORT_DATA = SHA-256(runtime data) ‖ 0³²) ‖ runtime data (JSON, "HCLAkPub")
//! document   = { variant "azure-sev-snp",
//!                tpm { ak_public: empty (the AK comes from the runtime data), quote_attest,
//!                      quote_signature (TPMT_SIGNATURE), pcrs[0..24] SHA-256 },
//!                snp { leaf_certificate: the VCEK },  hcl_report,  instance_info, user_data }
//! ```
//!
//! The quote's extraData is `SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce))` ([`Validator::quote_nonce`]).
//! The vTPM runs inside the TEE (the paravisor at VMPL 0), so the quote it signs is the freshness proof;
//! the HCL report binds the AK (`attest_engine::variant::binding` says why no fresh SNP report is needed).
//! The issuer reads the PCRs after the quote and checks them against the quote's pcrDigest, quoting again
//! on a mismatch, like the `qemu-vtpm` issuer.
//!
//! **TPM access.** Through this crate's [`Tpm`] on any TCTI: `device:/dev/tpmrm0` on Azure, or a swtpm that
//! a simulator provisioned exactly as the paravisor provisions the vTPM (`attest-hwsim`). Microsoft's
//! `az-cvm-vtpm` crate reads the same index and key, but always opens `/dev/tpm0` through tss-esapi's
//! default TCTI, which would make the simulated vTPM unreachable through the real code path; the two
//! operations it would contribute (an NV read with owner authorization, TPM2_Quote with the key's own
//! scheme) are a few lines on [`Tpm`]. The AK's template is the paravisor's, not ours, so the key is taken
//! as found ([`Tpm::existing_attestation_key`]: restricted signing RSA-2048 or ECC P-256).
//!
//! The VCEK is not in the vTPM: on Azure it comes from the instance metadata service (THIM, at
//! `http://169.254.169.254/metadata/THIM/amd/certification`) — fetching it is the caller's business, so the
//! issuer takes it as an input (a certificate, or THIM's JSON document).
//!
//! [`AzureSnpIssuer::new`] fails with [`HwIssuerError::DeviceNotPresent`] when the NV index or the AK is
//! absent (every non-Azure TPM); [`azure_document`] builds the same document from parts for tests.

use super::error::HwIssuerError;
use crate::tpm::{AttestationKey, PcrMask, QuotedPcrs, Tpm};
use attest_engine::azure::HclReport;
use attest_engine::crypto::{HashAlgorithm, default_provider};
use attest_engine::tpm::Attest;
use attest_engine::tpm::alg::{TPM_ALG_RSASSA, TPM_ALG_SHA256};
use attest_engine::variant::{Validator, Variant};
use attest_proto::attest::v1::{AttestationDocument, PcrValue, SnpEvidence, TpmEvidence};
use std::sync::Mutex;

pub use crate::tpm::nv::{AZURE_AK_HANDLE, AZURE_HCL_REPORT_NV_INDEX as HCL_REPORT_NV_INDEX};

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

/// The parts of an Azure vTPM quote: TPMS_ATTEST, the TPMT_SIGNATURE, SHA-256 PCRs 0..=23.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VtpmQuote {
    /// TPMS_ATTEST.
    pub attest: Vec<u8>,
    /// The TPMT_SIGNATURE (a bare RSASSA/SHA-256 signature, as `az-cvm-vtpm` returns it, is wrapped with
    /// [`tpmt_signature_rsassa_sha256`]).
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
    let tpm = vtpm_evidence(quote);
    Ok(AttestationDocument {
        snp: Some(SnpEvidence { leaf_certificate: vcek, ..SnpEvidence::default() }),
        hcl_report,
        ..super::tpm_document(Variant::AzureSevSnp, tpm, instance_info, user_data)
    })
}

/// The TPM evidence of a paravisor vTPM quote: the quote and SHA-256 PCRs 0..=23. The HCL AK's public area,
/// the event log and the certificates are not sent (the verifier takes the AK from the HCL report's runtime
/// data).
pub(crate) fn vtpm_evidence(quote: VtpmQuote) -> TpmEvidence {
    let pcrs = quote
        .pcrs
        .iter()
        .zip(0u32..)
        .map(|(v, index)| PcrValue { hash_alg: u32::from(TPM_ALG_SHA256), index, value: v.to_vec() })
        .collect();
    TpmEvidence { quote_attest: quote.attest, quote_signature: quote.signature, pcrs, ..TpmEvidence::default() }
}

/// Issues `azure-sev-snp` documents from the paravisor's vTPM.
#[derive(Debug)]
pub struct AzureSnpIssuer {
    tpm: Mutex<Tpm>,
    ak: AttestationKey,
    vcek: Vec<u8>,
}

impl AzureSnpIssuer {
    /// An issuer over `tpm` sending `vcek` (DER, PEM, or the THIM JSON document). Fails with
    /// [`HwIssuerError::DeviceNotPresent`] when the HCL report's NV index or the HCL AK does not exist.
    pub fn new(mut tpm: Tpm, vcek: &[u8]) -> Result<Self, HwIssuerError> {
        if !tpm.handle_exists(HCL_REPORT_NV_INDEX)? {
            return Err(HwIssuerError::DeviceNotPresent { device: "vTPM NV index 0x01400001 (HCL report)" });
        }
        if !tpm.handle_exists(AZURE_AK_HANDLE)? {
            return Err(HwIssuerError::DeviceNotPresent { device: "vTPM persistent key 0x81000003 (HCL AK)" });
        }
        let ak = tpm.existing_attestation_key(AZURE_AK_HANDLE)?;
        let vcek = vcek_from(vcek)?;
        Ok(Self { tpm: Mutex::new(tpm), ak, vcek })
    }

    /// The HCL attestation key.
    pub fn attestation_key(&self) -> &AttestationKey {
        &self.ak
    }

    /// Runs `f` with exclusive use of the TPM (e.g. to extend a PCR).
    pub fn with_tpm<T>(&self, f: impl FnOnce(&mut Tpm) -> T) -> T {
        f(&mut self.tpm.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The HCL report as the vTPM holds it now (the paravisor refreshes it at boot).
    pub fn hcl_report(&self) -> Result<Vec<u8>, HwIssuerError> {
        Ok(self.with_tpm(|tpm| tpm.nv_read(HCL_REPORT_NV_INDEX))?)
    }

    /// A quote by the HCL AK over SHA-256 PCRs 0..=23 with `extra_data`, and the PCRs read after it
    /// ([`Tpm::consistent_quote`]).
    pub fn quote(&self, extra_data: &[u8]) -> Result<VtpmQuote, HwIssuerError> {
        let QuotedPcrs { quote, values } =
            self.with_tpm(|tpm| tpm.consistent_quote(&self.ak, PcrMask::ALL, extra_data))?;
        let pcrs = values.iter().map(|(_, v)| *v).collect();
        Ok(VtpmQuote { attest: quote.attest, signature: quote.signature, pcrs })
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
        let quote = self.quote(&extra)?;
        azure_document(hcl, self.vcek.clone(), quote, instance_info, user_data)
    }
}

/// The VCEK from a certificate (DER or PEM) or from THIM's JSON document (`vcekCert`, read by the engine's
/// THIM parser, as the verifier reads it).
fn vcek_from(input: &[u8]) -> Result<Vec<u8>, HwIssuerError> {
    let text = input.trim_ascii_start();
    let vcek = if text.starts_with(b"{") {
        attest_engine::azure::parse_thim(text)?.vcek.map(std::borrow::Cow::into_owned)
    } else {
        attest_engine::x509::pem::certificates_from_pem_or_der(input)?.into_iter().next()
    };
    vcek.ok_or(HwIssuerError::MissingLeafCertificate { want: "VCEK" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use attest_test_support::{LeafSpec, Product, SigningKeyKind, TestPki, pem};

    #[test]
    fn the_vcek_comes_from_der_pem_or_a_thim_document() {
        let pki = TestPki::new(Product::Milan, SigningKeyKind::Vcek);
        let vcek = pki.issue_leaf(&LeafSpec::new());
        let pem = pem("CERTIFICATE", &vcek.der);
        let thim = serde_json::json!({ "vcekCert": pem, "certificateChain": "", "tcbm": "DB18000000000004" });
        for input in [vcek.der.clone(), pem.clone().into_bytes(), thim.to_string().into_bytes()] {
            assert_eq!(vcek_from(&input).unwrap(), vcek.der);
        }
        assert!(matches!(vcek_from(br#"{"tcbm": "DB18000000000004"}"#), Err(HwIssuerError::Engine(_))));
        assert!(vcek_from(b"").is_err());
    }
}
