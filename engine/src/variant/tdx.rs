//! The TDX attestation variants: `azure-tdx` and `qemu-tdx` (Constellation's names and OIDs).
//!
//! | variant | hardware evidence | freshness | what the TD quote binds |
//! |---|---|---|---|
//! | `azure-tdx` | TD quote + the vTPM's HCL report (report type 4, TDX) + a vTPM quote | the vTPM quote's extraData, as for the SNP variants | REPORTDATA = SHA-256(HCL runtime data) ‖ 32 zero bytes; the runtime data carries the vTPM attestation key ("HCLAkPub"), so the AK is trusted because the TD quote binds it |
//! | `qemu-tdx` | TD quote (no vTPM) | the TD quote itself | REPORTDATA = SHA-256(user data ‖ nonce) ‖ 32 zero bytes; measurements are MRTD and RTMR0–3 (`TdxPolicy`), optionally with the CC event log replayed |
//!
//! Collateral (TCB Info, QE Identity, CRLs) comes from the verifier side — the [`TdxVerifier`] the
//! validator holds, filled by the shell's PCS client or an offline store — never from the document.
//!
//! `azure-tdx`, step by step: the HCL report parses and is of TDX type with a SHA-256 binding; the TD quote
//! verifies (PCK chain, QE report, signatures, collateral, TCB, [`TdxPolicy`]) with the expected REPORTDATA
//! computed from the HCL runtime data; the TD report inside the HCL report must agree with the quote
//! (REPORTDATA and MRTD: the HCL report and the quote are of one TD); the vTPM quote verifies under the
//! runtime data's AK with extraData = SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce)); the quoted SHA-256
//! PCRs meet the [`PcrPolicy`]; a TCG event log, when present, replays to them.

use super::{AkBasis, Document, PcrOutcome, PcrPolicy, Validator};
use crate::azure::hcl::HardwareReportType;
use crate::azure::{HclReport, RuntimeData};
use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::{Bytes, Error};
use crate::tdx::ccel::{self, RtmrReplay};
use crate::tdx::{TdxPolicy, TdxRequest, TdxVerifier, VerifiedTdQuote};
use crate::time::UnixTime;
use crate::tpm::{QuoteRequest, VerifiedQuote, verify_quote};
use core::fmt;
use std::sync::Arc;

/// Offset of REPORTMACSTRUCT.REPORTDATA in a TDREPORT (TDX module ABI, "TDREPORT_STRUCT").
const TDREPORT_REPORTDATA: usize = 128;
/// Offset of TDINFO.MRTD in a TDREPORT (TDINFO starts at 512; ATTRIBUTES 8, XFAM 8, then MRTD).
const TDREPORT_MRTD: usize = 528;
/// TDREPORT's REPORTTYPE.TYPE for TDX.
const TDREPORT_TYPE_TDX: u8 = 0x81;

/// A TDX attestation variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TdxVariant {
    /// Azure TDX confidential VM with the paravisor's vTPM.
    AzureTdx,
    /// QEMU/KVM TD without a vTPM.
    QemuTdx,
}

impl TdxVariant {
    /// Both variants.
    pub const ALL: [TdxVariant; 2] = [TdxVariant::AzureTdx, TdxVariant::QemuTdx];

    /// The variant's name in documents and configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::AzureTdx => "azure-tdx",
            Self::QemuTdx => "qemu-tdx",
        }
    }

    /// Parses a variant name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The aTLS certificate-extension OID of the variant's document (Constellation's arcs: Azure 1.3.9900.3,
    /// QEMU 1.3.9900.5).
    pub fn oid(self) -> &'static str {
        match self {
            Self::AzureTdx => "1.3.9900.3.3",
            Self::QemuTdx => "1.3.9900.5.99",
        }
    }

    /// The variant whose OID is `dotted`.
    pub fn from_oid(dotted: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.oid() == dotted)
    }
}

impl fmt::Display for TdxVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A validated TDX document.
#[derive(Clone, Debug)]
pub struct ValidatedTdx<'a> {
    /// The variant.
    pub variant: TdxVariant,
    /// The verified TD quote (TCB status, advisories, verdict).
    pub td: VerifiedTdQuote<'a>,
    /// `azure-tdx`: the verified vTPM quote.
    pub quote: Option<VerifiedQuote<'a>>,
    /// `azure-tdx`: why the AK is trusted (the TD quote binds it).
    pub ak_basis: Option<AkBasis>,
    /// `azure-tdx`: each expected PCR's outcome.
    pub pcrs: Vec<(u8, PcrOutcome)>,
    /// `azure-tdx`: whether a TCG event log was replayed against the vTPM quote.
    pub event_log_replayed: bool,
    /// The CC event log's replay, when the document carries one (it must match the quote's RTMRs).
    pub ccel: Option<RtmrReplay>,
    /// The user data bound by the evidence.
    pub user_data: &'a [u8],
}

/// Validates documents of one TDX variant.
#[derive(Clone, Debug)]
pub struct TdxValidator {
    variant: TdxVariant,
    tdx: Arc<TdxVerifier>,
    policy: TdxPolicy,
    pcrs: PcrPolicy,
}

impl TdxValidator {
    /// A validator for `variant` that verifies TD quotes with `tdx` (and the collateral installed there) under
    /// `policy`; `pcrs` are the expected vTPM PCRs (`azure-tdx`; `qemu-tdx` has no vTPM and takes its
    /// measurements from `policy`'s MRTD and RTMRs).
    pub fn new(variant: TdxVariant, tdx: Arc<TdxVerifier>, policy: TdxPolicy, pcrs: PcrPolicy) -> Self {
        Self { variant, tdx, policy, pcrs }
    }

    /// The variant.
    pub fn variant(&self) -> TdxVariant {
        self.variant
    }

    /// The REPORTDATA a `qemu-tdx` quote must carry for `nonce`: SHA-256(user_data ‖ nonce) ‖ 32 zero bytes.
    pub fn qemu_report_data(provider: &CryptoProvider, user_data: &[u8], nonce: &[u8]) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[..32].copy_from_slice(provider.digests.digest(HashAlgorithm::Sha256, &[user_data, nonce]).as_bytes());
        out
    }

    /// Validates `doc` for `nonce` at the trusted `time`.
    pub fn validate<'a>(&self, doc: &Document<'a>, nonce: &[u8], time: UnixTime) -> Result<ValidatedTdx<'a>, Error> {
        if doc.variant != self.variant.name() {
            return Err(Error::VariantMismatch {
                expected: self.variant.name(),
                found: Bytes::new(&doc.variant.as_bytes()[..doc.variant.len().min(64)]),
            });
        }
        if doc.td_quote.is_empty() {
            return Err(Error::MissingEvidence { what: "a TD quote" });
        }
        match self.variant {
            TdxVariant::QemuTdx => self.validate_qemu(doc, nonce, time),
            TdxVariant::AzureTdx => self.validate_azure(doc, nonce, time),
        }
    }

    fn ccel(&self, doc: &Document<'_>, td: &VerifiedTdQuote<'_>) -> Result<Option<RtmrReplay>, Error> {
        if doc.td_event_log.is_empty() {
            return Ok(None);
        }
        ccel::check_against(self.tdx.provider(), doc.td_event_log, &td.body()).map(Some)
    }

    fn validate_qemu<'a>(&self, doc: &Document<'a>, nonce: &[u8], time: UnixTime) -> Result<ValidatedTdx<'a>, Error> {
        let expected = Self::qemu_report_data(self.tdx.provider(), doc.user_data, nonce);
        let req = TdxRequest { quote: doc.td_quote, report_data: Some(&expected), time };
        let td = self.tdx.verify(&req, &self.policy)?;
        let ccel = self.ccel(doc, &td)?;
        Ok(ValidatedTdx {
            variant: self.variant,
            td,
            quote: None,
            ak_basis: None,
            pcrs: Vec::new(),
            event_log_replayed: false,
            ccel,
            user_data: doc.user_data,
        })
    }

    fn validate_azure<'a>(&self, doc: &Document<'a>, nonce: &[u8], time: UnixTime) -> Result<ValidatedTdx<'a>, Error> {
        let provider = self.tdx.provider();
        let tpm = doc.tpm.as_ref().ok_or(Error::MissingEvidence { what: "TPM evidence" })?;
        let hcl = HclReport::parse(doc.hcl_report)?;
        let expected = hcl_report_data(provider, &hcl)?;
        let req = TdxRequest { quote: doc.td_quote, report_data: Some(&expected), time };
        let td = self.tdx.verify(&req, &self.policy).map_err(|e| match e {
            // A quote that verifies but binds other runtime data does not bind this AK.
            Error::TdxPolicy(v) if v.check == crate::tdx::TdxCheck::ReportData => Error::AkBindingMismatch {
                expected: Bytes::new(&expected),
                found: match v.found {
                    crate::error::Value::Bytes(b) => b,
                    _ => Bytes::new(&[]),
                },
            },
            e => e,
        })?;
        // The HCL report's own TD report must be the quoted TD's (it is not MAC-checked outside the TD).
        let mr_td = &hcl.hardware_report()[TDREPORT_MRTD..TDREPORT_MRTD + 48];
        if mr_td != td.body().mr_td() {
            return Err(Error::AkBindingMismatch { expected: Bytes::new(td.body().mr_td()), found: Bytes::new(mr_td) });
        }

        let runtime = RuntimeData::parse(hcl.variable_data())?;
        let tpm_nonce = Validator::quote_nonce(provider, doc.instance_info, doc.user_data, nonce);
        let quote = verify_quote(
            provider,
            &QuoteRequest {
                attest: tpm.attest,
                signature: tpm.signature,
                ak: runtime.ak().ak_public(),
                ak_scheme: None,
                pcrs: tpm.pcrs,
                nonce: &tpm_nonce,
                allow_sha1: false,
            },
        )?;
        let event_log_replayed = !tpm.event_log.is_empty() && super::check_event_log(provider, tpm.event_log, &quote)?;
        let pcrs = self.pcrs.evaluate(&quote)?;
        let ccel = self.ccel(doc, &td)?;
        Ok(ValidatedTdx {
            variant: self.variant,
            td,
            quote: Some(quote),
            ak_basis: Some(AkBasis::HardwareReport),
            pcrs,
            event_log_replayed,
            ccel,
            user_data: doc.user_data,
        })
    }
}

/// The REPORTDATA an `azure-tdx` TD quote must carry for `hcl`: SHA-256 of the runtime data, then 32 zero
/// bytes — after checking that the HCL report is of TDX type with a SHA-256 binding and that the TD report it
/// holds (TDREPORT type 0x81) carries that same REPORTDATA.
pub fn hcl_report_data(provider: &CryptoProvider, hcl: &HclReport<'_>) -> Result<[u8; 64], Error> {
    if hcl.report_type() != HardwareReportType::Tdx {
        return Err(Error::MissingEvidence { what: "a TDX TD report in the HCL report" });
    }
    if hcl.hash_type() != 1 {
        return Err(Error::UnsupportedAlgorithm { what: "HCL runtime-data hash (need SHA-256)" });
    }
    let mut expected = [0u8; 64];
    expected[..32].copy_from_slice(&provider.digests.sha256(hcl.variable_data()));
    let tdreport = hcl.hardware_report();
    let found = &tdreport[TDREPORT_REPORTDATA..TDREPORT_REPORTDATA + 64];
    if tdreport[0] != TDREPORT_TYPE_TDX || found != expected {
        return Err(Error::AkBindingMismatch { expected: Bytes::new(&expected), found: Bytes::new(found) });
    }
    Ok(expected)
}

impl PcrPolicy {
    /// Each expectation's outcome against a verified quote's SHA-256 bank; an enforced mismatch is an error.
    pub fn evaluate(&self, quote: &VerifiedQuote<'_>) -> Result<Vec<(u8, PcrOutcome)>, Error> {
        let mut out = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let found = quote.pcr(HashAlgorithm::Sha256, usize::from(e.index));
            if found == Some(&e.expected[..]) {
                out.push((e.index, PcrOutcome::Match));
            } else if e.warn_only {
                out.push((e.index, PcrOutcome::MismatchWarnOnly));
            } else {
                return Err(Error::PcrMismatch {
                    pcr: e.index,
                    expected: Bytes::new(&e.expected),
                    found: Bytes::new(found.unwrap_or_default()),
                });
            }
        }
        Ok(out)
    }
}
