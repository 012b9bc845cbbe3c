//! Azure vTPM evidence in trustee's JSON wire formats (SNP and TDX confidential VMs), and the SNP report +
//! runtime data form Constellation stores.
//!
//! | version | layout | SNP | TDX |
//! |---|---|---|---|
//! | 0 (no `version`) | byte arrays as JSON number arrays | `{quote: {signature, message, pcrs}, report, vcek: PEM}` | `{tpm_quote: {…}, hcl_report, td_quote}` |
//! | 1 | `"version": 1`; `tpm_quote` fields hex; `hcl_report` (and `td_quote`) base64url; `vcek` base64 DER | yes | yes |
//! | 2 | as 1 with `"version": 2`; the attester also wrote the verifier's report data into the vTPM's user-data NV index, so the HCL runtime data's `"user-data"` carries it (bound by the hardware report) | yes | yes |
//!
//! What v2 adds is checked through [`UserData`]: the caller states the 64 bytes it expects, or waives the
//! check explicitly; a v2 document is never verified without the caller saying which.
//!
//! Verification: [`verify_azure_snp_evidence`] (the existing [`crate::azure::verify_azure_snp`]: SNP chain →
//! report → HCL runtime data → HCLAkPub → quote → PCRs, plus [`UserData`]). For TDX, [`verify_azure_tdx_vtpm`]
//! verifies everything but the TD quote, which it hands back as bytes with the REPORTDATA it must carry.

use super::tpm::{RawHexQuote, TpmQuoteParts, azure_parts};
use super::{bad, base64_bytes, check_json_size};
use crate::azure::{AzureSnpRequest, HardwareReportType, HclReport, RuntimeData, VerifiedAzureSnp, verify_azure_snp};
use crate::crypto::CryptoProvider;
use crate::error::{Bytes, Error};
use crate::snp::SnpPolicy;
use crate::snp::SnpVerifier;
use crate::time::UnixTime;
use crate::tpm::attest::PCR_COUNT;
use crate::tpm::{PcrValues, QuoteRequest, VerifiedQuote, verify_quote};
use serde::Deserialize;

const FORMAT: &str = "trustee Azure vTPM evidence";

/// Largest TD quote carried (Intel's v4/v5 quotes with a PCK chain are ≈5 KiB).
pub const MAX_TD_QUOTE_SIZE: usize = 16 * 1024;

/// Which hardware the vTPM evidence comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AzureHardware {
    /// AMD SEV-SNP: carries the VCEK.
    Snp,
    /// Intel TDX: carries the TD quote.
    Tdx,
}

/// Azure vTPM evidence, decoded from one of trustee's layouts (owned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AzureVtpmEvidence {
    /// The layout version (0, 1 or 2).
    pub version: u32,
    /// SNP or TDX.
    pub hardware: AzureHardware,
    /// The HCL report (vTPM NV index 0x01400001).
    pub hcl_report: Vec<u8>,
    /// SNP: the VCEK (DER).
    pub vcek: Vec<u8>,
    /// TDX: the TD quote, as received (verified by the TDX verifier, not here).
    pub td_quote: Vec<u8>,
    /// The vTPM quote.
    pub quote: TpmQuoteParts,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArrayQuote {
    signature: Vec<u8>,
    message: Vec<u8>,
    pcrs: Vec<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnpV0 {
    quote: RawArrayQuote,
    report: Vec<u8>,
    vcek: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TdxV0 {
    tpm_quote: RawArrayQuote,
    hcl_report: Vec<u8>,
    td_quote: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Versioned {
    version: u32,
    tpm_quote: RawHexQuote,
    hcl_report: String,
    #[serde(default)]
    vcek: Option<String>,
    #[serde(default)]
    td_quote: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Versioned(Versioned),
    SnpV0(SnpV0),
    TdxV0(TdxV0),
}

fn array_parts(q: RawArrayQuote) -> Result<TpmQuoteParts, Error> {
    if q.pcrs.len() > PCR_COUNT {
        return Err(Error::LimitExceeded { what: "PCR values", limit: PCR_COUNT, found: q.pcrs.len() });
    }
    azure_parts(q.message, q.signature, q.pcrs)
}

fn check_td_quote(td_quote: &[u8]) -> Result<(), Error> {
    if td_quote.len() > MAX_TD_QUOTE_SIZE {
        return Err(Error::LimitExceeded { what: "TD quote", limit: MAX_TD_QUOTE_SIZE, found: td_quote.len() });
    }
    Ok(())
}

impl AzureVtpmEvidence {
    /// Reads trustee's `az-snp-vtpm` or `az-tdx-vtpm` evidence in any of its layouts (v0, v1, v2).
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        check_json_size(FORMAT, json)?;
        let raw: Raw = serde_json::from_slice(json).map_err(|_| bad(FORMAT, "not one of the known JSON layouts"))?;
        let ev = match raw {
            Raw::SnpV0(v) => {
                let vcek = crate::x509::pem::certificates_from_pem_or_der(v.vcek.as_bytes())?;
                let [vcek] = <[Vec<u8>; 1]>::try_from(vcek).map_err(|_| bad(FORMAT, "vcek must be one certificate"))?;
                Self {
                    version: 0,
                    hardware: AzureHardware::Snp,
                    hcl_report: v.report,
                    vcek,
                    td_quote: Vec::new(),
                    quote: array_parts(v.quote)?,
                }
            }
            Raw::TdxV0(v) => Self {
                version: 0,
                hardware: AzureHardware::Tdx,
                hcl_report: v.hcl_report,
                vcek: Vec::new(),
                td_quote: v.td_quote,
                quote: array_parts(v.tpm_quote)?,
            },
            Raw::Versioned(v) => {
                if !matches!(v.version, 1 | 2) {
                    return Err(bad(FORMAT, "unknown version (1 and 2 are known)"));
                }
                let (hardware, vcek, td_quote) = match (v.vcek, v.td_quote) {
                    (Some(vcek), None) => (AzureHardware::Snp, base64_bytes(FORMAT, &vcek)?, Vec::new()),
                    (None, Some(td)) => (AzureHardware::Tdx, Vec::new(), base64_bytes(FORMAT, &td)?),
                    _ => return Err(bad(FORMAT, "exactly one of vcek (SNP) and td_quote (TDX) is required")),
                };
                Self {
                    version: v.version,
                    hardware,
                    hcl_report: base64_bytes(FORMAT, &v.hcl_report)?,
                    vcek,
                    td_quote,
                    quote: v.tpm_quote.into_parts()?,
                }
            }
        };
        if ev.hcl_report.len() > crate::azure::hcl::MAX_HCL_REPORT_SIZE {
            return Err(Error::LimitExceeded {
                what: "HCL report size",
                limit: crate::azure::hcl::MAX_HCL_REPORT_SIZE,
                found: ev.hcl_report.len(),
            });
        }
        check_td_quote(&ev.td_quote)?;
        let hcl = HclReport::parse(&ev.hcl_report)?;
        let expected = match ev.hardware {
            AzureHardware::Snp => HardwareReportType::Snp,
            AzureHardware::Tdx => HardwareReportType::Tdx,
        };
        if hcl.report_type() != expected {
            return Err(bad(FORMAT, "the HCL report's hardware type does not match the evidence kind"));
        }
        Ok(ev)
    }
}

/// What the HCL runtime data's `"user-data"` must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserData<'a> {
    /// Exactly these 64 bytes (v2 evidence: the report data the verifier asked for, as the attester
    /// wrote it to the vTPM's user-data NV index).
    Exactly(&'a [u8; 64]),
    /// Not checked (v0/v1 evidence carries no verifier data there; the vTPM quote's nonce still binds
    /// the evidence to the request). Refused for v2 evidence unless [`UserData::DangerousIgnore`].
    NotRequired,
    /// Not checked, even for v2 evidence.
    DangerousIgnore,
}

fn check_user_data(version: u32, runtime: &RuntimeData, want: UserData<'_>) -> Result<(), Error> {
    match want {
        UserData::Exactly(expected) => match runtime.user_data() {
            Some(found) if found == expected => Ok(()),
            found => Err(Error::RuntimeUserDataMismatch {
                expected: Bytes::new(expected),
                found: Bytes::new(found.map_or(&[][..], |f| &f[..])),
            }),
        },
        UserData::NotRequired if version >= 2 => Err(Error::Misuse {
            reason: "v2 evidence binds the report data in the runtime user-data: give the expected user-data, or waive the check explicitly",
        }),
        UserData::NotRequired | UserData::DangerousIgnore => Ok(()),
    }
}

/// Verifies Azure SNP vTPM evidence: [`verify_azure_snp`] on its parts, then the runtime user-data.
/// `pcrs` must come from `ev.quote.pcr_values()`.
pub fn verify_azure_snp_evidence<'a>(
    verifier: &SnpVerifier,
    ev: &'a AzureVtpmEvidence,
    pcrs: &'a PcrValues<'a>,
    nonce: &'a [u8],
    user_data: UserData<'_>,
    time: UnixTime,
    policy: &SnpPolicy,
) -> Result<VerifiedAzureSnp<'a>, Error> {
    if ev.hardware != AzureHardware::Snp {
        return Err(Error::Misuse { reason: "SNP verification of TDX evidence" });
    }
    let req = AzureSnpRequest {
        hcl_report: &ev.hcl_report,
        vcek: &ev.vcek,
        intermediate: None,
        attest: &ev.quote.attest,
        signature: ev.quote.signature(),
        pcrs,
        quote_nonce: nonce,
        time,
    };
    let ok = verify_azure_snp(verifier, &req, policy)?;
    check_user_data(ev.version, &ok.runtime, user_data)?;
    Ok(ok)
}

/// Azure TDX vTPM evidence with everything but the TD quote verified.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedAzureTdxVtpm<'a> {
    /// The vTPM quote, verified under the HCL runtime data's AK.
    pub quote: VerifiedQuote<'a>,
    /// The runtime data.
    pub runtime: RuntimeData,
    /// The TD quote, **not verified here**: verify it with the TDX verifier and require its REPORTDATA to
    /// equal [`VerifiedAzureTdxVtpm::td_report_data`]; only then is the AK (and so the quote) bound to
    /// the TD.
    pub td_quote: &'a [u8],
    /// REPORTDATA the TD quote must carry: SHA-256(runtime data) ‖ 32 zero bytes.
    pub td_report_data: [u8; 64],
}

/// Verifies the vTPM part of Azure TDX evidence: the HCL report (TDX), the runtime data's AK, the quote
/// under it with `nonce`, its PCR digest, and the runtime user-data. The TD quote is returned unverified
/// (another verifier's job) with the REPORTDATA that binds the runtime data.
pub fn verify_azure_tdx_vtpm<'a>(
    provider: &CryptoProvider,
    ev: &'a AzureVtpmEvidence,
    pcrs: &'a PcrValues<'a>,
    nonce: &[u8],
    user_data: UserData<'_>,
) -> Result<VerifiedAzureTdxVtpm<'a>, Error> {
    if ev.hardware != AzureHardware::Tdx {
        return Err(Error::Misuse { reason: "TDX verification of SNP evidence" });
    }
    let hcl = HclReport::parse(&ev.hcl_report)?;
    if hcl.hash_type() != 1 {
        return Err(Error::UnsupportedAlgorithm { what: "HCL runtime-data hash (need SHA-256)" });
    }
    let runtime = RuntimeData::parse(hcl.variable_data())?;
    let quote = verify_quote(
        provider,
        &QuoteRequest {
            attest: &ev.quote.attest,
            signature: ev.quote.signature(),
            ak: runtime.ak().ak_public(),
            ak_scheme: None,
            pcrs,
            nonce,
            allow_sha1: false,
        },
    )?;
    check_user_data(ev.version, &runtime, user_data)?;
    let mut td_report_data = [0u8; 64];
    td_report_data[..32].copy_from_slice(&provider.digests.sha256(hcl.variable_data()));
    Ok(VerifiedAzureTdxVtpm { quote, runtime, td_quote: &ev.td_quote, td_report_data })
}

/// The SNP report + runtime data form (Constellation's Azure evidence keeps them apart; its report may
/// carry the 20-byte IGVM request header after it): verifies the report under the VCEK and that
/// REPORT_DATA = SHA-256(runtime data) ‖ 32 zero bytes, and returns the runtime data (with the AK).
pub fn verify_snp_runtime_data<'a>(
    verifier: &SnpVerifier,
    report: &'a [u8],
    runtime_data: &[u8],
    vcek: &'a [u8],
    time: UnixTime,
    policy: &SnpPolicy,
) -> Result<(crate::snp::VerifiedReport<'a>, RuntimeData), Error> {
    let report = match report.len() {
        crate::snp::REPORT_SIZE => report,
        n if n == crate::snp::REPORT_SIZE + crate::azure::IGVM_REQUEST_HEADER_SIZE => {
            &report[..crate::snp::REPORT_SIZE]
        }
        _ => {
            return Err(bad(
                "SNP report + runtime data",
                "the report is neither 0x4A0 bytes nor followed by the 20-byte IGVM header",
            ));
        }
    };
    let mut expected = [0u8; 64];
    expected[..32].copy_from_slice(&verifier.provider().digests.sha256(runtime_data));
    let ok = verifier.verify(&crate::snp::SnpRequest::new(report, vcek, time), policy)?;
    let found = ok.report().report_data();
    if found != &expected {
        return Err(Error::AkBindingMismatch { expected: Bytes::new(&expected), found: Bytes::new(found) });
    }
    Ok((ok, RuntimeData::parse(runtime_data)?))
}
