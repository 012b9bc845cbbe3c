//! The TDX parts of the attestation variants `azure-tdx` and `qemu-tdx`, used by [`Validator`](super::Validator).
//!
//! | variant | hardware evidence | freshness | what the TD quote binds |
//! |---|---|---|---|
//! | `azure-tdx` | TD quote + the vTPM's HCL report (report type 4, TDX) + a vTPM quote | the vTPM quote's extraData, as for the SNP variants | REPORTDATA = SHA-256(HCL runtime data) ‖ 32 zero bytes; the runtime data carries the vTPM attestation key ("HCLAkPub"), so the AK is trusted because the TD quote binds it |
//! | `qemu-tdx` | TD quote (no vTPM) | the TD quote itself | REPORTDATA = SHA-256(user data ‖ nonce) ‖ 32 zero bytes ([`qemu_report_data`]); measurements are MRTD and RTMR0–3 (`TdxPolicy`), optionally with the CC event log replayed |
//!
//! Collateral (TCB Info, QE Identity, CRLs) comes from the verifier side — the [`TdxVerifier`] the
//! validator holds, filled by the shell's PCS client or an offline store — never from the document.
//!
//! `azure-tdx`, step by step: the HCL report parses and is of TDX type with a SHA-256 binding; the TD quote
//! verifies (PCK chain, QE report, signatures, collateral, TCB, [`TdxPolicy`]) with the expected REPORTDATA
//! computed from the HCL runtime data; the TD report inside the HCL report must agree with the quote
//! (REPORTDATA and MRTD: the HCL report and the quote are of one TD); then, in the validator, the vTPM quote
//! verifies under the runtime data's AK with extraData = SHA-256(instance_info ‖ SHA-256(user_data ‖ nonce));
//! the quoted SHA-256 PCRs meet the `PcrPolicy`; a TCG event log, when present, replays to them.
//!
//! In both variants a CC event log in the document must replay to the quote's RTMRs (`crate::tdx::ccel`).

use super::Document;
use crate::azure::HclReport;
use crate::azure::hcl::HardwareReportType;
use crate::crypto::{CryptoProvider, HashAlgorithm};
use crate::error::{Bytes, Error};
use crate::tdx::ccel::{self, RtmrReplay};
use crate::tdx::{TdxPolicy, TdxRequest, TdxVerifier, VerifiedTdQuote};
use crate::time::UnixTime;

/// Offset of REPORTMACSTRUCT.REPORTDATA in a TDREPORT (TDX module ABI, "TDREPORT_STRUCT").
const TDREPORT_REPORTDATA: usize = 128;
/// Offset of TDINFO.MRTD in a TDREPORT (TDINFO starts at 512; ATTRIBUTES 8, XFAM 8, then MRTD).
const TDREPORT_MRTD: usize = 528;
/// TDREPORT's REPORTTYPE.TYPE for TDX.
const TDREPORT_TYPE_TDX: u8 = 0x81;

/// The REPORTDATA a `qemu-tdx` quote must carry for `nonce`: SHA-256(user_data ‖ nonce) ‖ 32 zero bytes.
pub fn qemu_report_data(provider: &CryptoProvider, user_data: &[u8], nonce: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(provider.digests.digest(HashAlgorithm::Sha256, &[user_data, nonce]).as_bytes());
    out
}

fn td_quote<'a>(doc: &Document<'a>) -> Result<&'a [u8], Error> {
    if doc.td_quote.is_empty() {
        return Err(Error::MissingEvidence { what: "a TD quote" });
    }
    Ok(doc.td_quote)
}

/// `qemu-tdx`: the TD quote, verified with REPORTDATA = [`qemu_report_data`] for `nonce`.
pub(super) fn verify_qemu_td<'a>(
    tdx: &TdxVerifier,
    policy: &TdxPolicy,
    doc: &Document<'a>,
    nonce: &[u8],
    time: UnixTime,
) -> Result<VerifiedTdQuote<'a>, Error> {
    let quote = td_quote(doc)?;
    let expected = qemu_report_data(tdx.provider(), doc.user_data, nonce);
    tdx.verify(&TdxRequest { quote, report_data: Some(&expected), time }, policy)
}

/// `azure-tdx`: the TD quote, verified with the REPORTDATA the HCL report's runtime data determines, and the
/// HCL report's own TD report checked to be the quoted TD's.
pub(super) fn verify_azure_td<'a>(
    tdx: &TdxVerifier,
    policy: &TdxPolicy,
    doc: &Document<'a>,
    hcl: &HclReport<'a>,
    time: UnixTime,
) -> Result<VerifiedTdQuote<'a>, Error> {
    let quote = td_quote(doc)?;
    let expected = hcl_report_data(tdx.provider(), hcl)?;
    let td = tdx.verify(&TdxRequest { quote, report_data: Some(&expected), time }, policy).map_err(|e| match e {
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
    Ok(td)
}

/// Replays the document's CC event log against the verified quote's RTMRs (`None` when the document carries
/// no log; an error when the log does not replay to them or extends nothing).
pub(super) fn replay_ccel(
    provider: &CryptoProvider,
    doc: &Document<'_>,
    td: &VerifiedTdQuote<'_>,
) -> Result<Option<RtmrReplay>, Error> {
    if doc.td_event_log.is_empty() {
        return Ok(None);
    }
    ccel::check_against(provider, doc.td_event_log, &td.body()).map(Some)
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
