//! Azure SEV-SNP vTPM: SNP chain → SNP report (VCEK-signed) → runtime data (REPORT_DATA =
//! SHA-256(var data) ‖ 0³², [`super::hcl_report_data`]) → HCLAkPub → TPM quote → PCRs.
//!
//! Azure's SNP CVMs sign with VCEKs; a VLEK-signed report is refused ([`crate::snp::Check::SigningKey`]).

use super::hcl::HclReport;
use super::runtime::RuntimeData;
use crate::error::{CertRole, Error};
use crate::snp::SnpPolicy;
use crate::snp::{SnpRequest, SnpVerifier, VerifiedReport};
use crate::time::UnixTime;
use crate::tpm::{PcrValues, QuoteRequest, QuoteSignature, VerifiedQuote, verify_quote};

/// Inputs of an Azure SNP vTPM verification.
#[derive(Clone, Copy, Debug)]
pub struct AzureSnpRequest<'a> {
    /// The HCL report (vTPM NV index 0x01400001).
    pub hcl_report: &'a [u8],
    /// The VCEK (DER).
    pub vcek: &'a [u8],
    /// ASK (DER), optional.
    pub intermediate: Option<&'a [u8]>,
    /// TPMS_ATTEST of the quote.
    pub attest: &'a [u8],
    /// The quote signature.
    pub signature: QuoteSignature<'a>,
    /// The presented PCR values.
    pub pcrs: &'a PcrValues<'a>,
    /// The expected quote extraData.
    pub quote_nonce: &'a [u8],
    /// Trusted time.
    pub time: UnixTime,
}

/// A verified Azure SNP vTPM bundle.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedAzureSnp<'a> {
    /// The verified SNP report.
    pub snp: VerifiedReport<'a>,
    /// The verified quote.
    pub quote: VerifiedQuote<'a>,
    /// The runtime data claims.
    pub runtime: RuntimeData,
}

/// Verifies an Azure SNP vTPM bundle.
pub fn verify_azure_snp<'a>(
    verifier: &SnpVerifier,
    req: &AzureSnpRequest<'a>,
    policy: &SnpPolicy,
) -> Result<VerifiedAzureSnp<'a>, Error> {
    let hcl = HclReport::parse(req.hcl_report)?;
    let report = hcl.snp_report().ok_or(Error::MissingEvidence { what: "an SNP hardware report in the HCL report" })?;
    hcl.expected_report_data(verifier.provider())?;
    let snp_req = SnpRequest {
        report,
        leaf: req.vcek,
        intermediate: req.intermediate,
        root: None,
        product: None,
        report_data: None,
        time: req.time,
    };
    let snp = verifier.verify(&snp_req, policy)?;
    snp.check_signer(CertRole::Vcek)?;
    hcl.check_report_data(verifier.provider(), snp.report().report_data())?;
    let runtime = RuntimeData::parse(hcl.variable_data())?;
    let quote = verify_quote(
        verifier.provider(),
        &QuoteRequest {
            attest: req.attest,
            signature: req.signature,
            ak: runtime.ak().ak_public(),
            ak_scheme: None,
            pcrs: req.pcrs,
            nonce: req.quote_nonce,
            allow_sha1: false,
        },
    )?;
    // `quote` borrows `runtime`'s key only during verification; the result borrows the request.
    Ok(VerifiedAzureSnp { snp, quote, runtime })
}
