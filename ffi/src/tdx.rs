//! Intel TDX through the C ABI: collateral installation, the TDX policy, and TD quote verification.
//!
//! ```c
//! attest_verifier_set_tdx_collateral(v, bundle_json, bundle_len);   // once per platform (FMSPC), and
//!                                                                   // again before its nextUpdate
//! attest_verifier_set_tdx_policy_json(v, "{\"mrtd\": [\"…\"]}", n); // optional; strict by default
//! attest_verdict *vd = NULL;
//! attest_result rc = attest_verifier_verify_td_quote(v, quote, quote_len, expected_rd, 64, ATTEST_TIME_NOW, &vd);
//! attest_str status; attest_verdict_tdx_tcb_status(vd, &status);  // "UpToDate", …
//! ```
//!
//! Collateral lives in the verifier (one set per FMSPC; the engine verifies its signatures and chains to
//! Intel's pinned SGX Root CA once, on installation, and checks its validity window at every verification).
//! It comes from the shell's PCS client or an offline store (`attest pcs fetch --bundle`), never from the
//! evidence. Codes: TDX errors 8000–8999 (`attest_result_is_tdx_error`), TDX policy checks 5200–5299.

use crate::handle::OutPtr;
use crate::result::attest_result;
use crate::verdict::{Verdict, attest_evidence_kind, attest_verdict};
use crate::verifier::{
    Failure, TDX, attest_verifier, call, finish, input, misuse, out_param, required, trusted_time, verify_call,
};
use attest_engine::ear::Appraisal;
use attest_engine::tdx::{Collateral, TdxPolicy, TdxRequest};
use std::sync::{Arc, PoisonError};

/// The FMSPC and validity window of installed collateral (`attest_verifier_set_tdx_collateral`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct attest_tdx_collateral_info {
    /// The platform (FMSPC of the TCB Info).
    pub fmspc: [u8; 6],
    /// tcbEvaluationDataNumber of the TCB Info.
    pub tcb_evaluation_data_number: u32,
    /// The latest start of the collateral's validity windows, seconds since 1970.
    pub valid_from: u64,
    /// The earliest end of them (refresh before this), seconds since 1970.
    pub expires: u64,
    /// Whether both CRLs (PCK CA and root CA) are present.
    pub has_crls: bool,
}

/// Installs TDX collateral from the shared JSON bundle (`(json, json_len)`; fields `pck_crl_issuer_chain`,
/// `root_ca_crl`, `pck_crl`, `tcb_info_issuer_chain`, `tcb_info`, `tcb_info_signature`,
/// `qe_identity_issuer_chain`, `qe_identity`, `qe_identity_signature`, as `attest pcs fetch --bundle` writes
/// them). The engine verifies both signed JSON objects, every chain to Intel's pinned root and both CRLs
/// first; on success the set replaces what was installed for its FMSPC and, when `out` is not NULL,
/// `*out` describes it. On failure nothing changes (`ATTEST_RESULT_COLLATERAL_*`, `ATTEST_RESULT_CRL_*`, …).
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_set_tdx_collateral(
    verifier: *const attest_verifier,
    json: *const u8,
    json_len: usize,
    out: *mut attest_tdx_collateral_info,
) -> attest_result {
    call(verifier, |v| {
        let json = required(json, json_len, "json")?;
        let out = OutPtr::new(out);
        let collateral = Collateral::from_bundle_json(json)?;
        let info = v.tdx.set_collateral(&collateral)?;
        if let Some(out) = out {
            out.write(attest_tdx_collateral_info {
                fmspc: info.fmspc,
                tcb_evaluation_data_number: info.tcb_evaluation_data_number,
                valid_from: info.valid_from.as_secs(),
                expires: info.expires.as_secs(),
                has_crls: info.has_crls,
            });
        }
        Ok(())
    })
}

/// Replaces the TDX policy with one parsed from JSON (`(json, json_len)`, UTF-8; the engine's `TdxPolicy`
/// fields, unknown keys rejected, missing keys take the strict defaults: TCB status UpToDate only, no
/// advisory IDs, no debug TDs, CRLs required; `{}` is the default). On error the previous policy stays.
/// Applies to TD quote and TDX document verifications.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_set_tdx_policy_json(
    verifier: *const attest_verifier,
    json: *const u8,
    json_len: usize,
) -> attest_result {
    call(verifier, |v| {
        let json = required(json, json_len, "json")?;
        let text = std::str::from_utf8(json).map_err(|_| misuse("policy JSON is not UTF-8"))?;
        let policy = TdxPolicy::from_json(text)?;
        *v.tdx_policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
        Ok(())
    })
}

/// Verifies an Intel TDX quote (DCAP v4 or v5; bytes after the quote are judged by the policy's
/// `trailing_bytes`): PCK chain to Intel's pinned root, QE report and its binding, quote signature,
/// collateral of the quote's platform (installed before), TCB level and the verifier's TDX policy.
///
/// - `report_data`: optional (NULL, 0) expected REPORTDATA, exactly 64 bytes (else `ATTEST_RESULT_MISUSE`).
/// - `time`: the trusted time, seconds since 1970; `ATTEST_TIME_NOW` (0) uses the system clock.
///
/// On success `*out` holds a verdict of kind `ATTEST_EVIDENCE_KIND_TD_QUOTE`: every TDX check,
/// `attest_verdict_tdx_tcb_status`, the advisory IDs, the FMSPC and the TD report body.
#[unsafe(no_mangle)]
#[allow(unsafe_code)] // exported symbol; see handle.rs. No unsafe code in the body.
pub extern "C" fn attest_verifier_verify_td_quote(
    verifier: *const attest_verifier,
    quote: *const u8,
    quote_len: usize,
    report_data: *const u8,
    report_data_len: usize,
    time: u64,
    out: *mut *mut attest_verdict,
) -> attest_result {
    verify_call(verifier, &TDX, time, |v| {
        let quote = required(quote, quote_len, "quote")?;
        let report_data = input(report_data, report_data_len)?;
        let out = out_param(out)?;
        let time = trusted_time(time)?;
        let req = TdxRequest { quote, report_data: (!report_data.is_empty()).then_some(report_data), time };
        // As the CLI reports it: a refusal lists every TDX check, the failed one `failed`.
        let ok = v
            .tdx
            .verify(&req, &v.tdx_policy())
            .map_err(|e| Failure::with_checks(e, Appraisal::tdx_checks_not_run()))?;
        finish(
            v,
            out,
            Verdict::new(attest_evidence_kind::TdQuote).with_tdx(&ok),
            &Appraisal::from_tdx(&ok),
            &TDX,
            time,
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    //! The C ABI's TDX calls against the generated Intel-like PKI (a test root, through the crate-private
    //! constructor; the C ABI itself trusts only Intel's root): a TCB level with advisory IDs, the
    //! `qemu-tdx` document path with the measurements file layout, and the refusals.
    #![allow(clippy::borrow_as_ptr)] // the tests call the C ABI as C does: out-parameters by address
    use super::*;
    use crate::handle::arc_into_ptr;
    use crate::verdict::{
        attest_bytes, attest_str, attest_verdict_free, attest_verdict_kind, attest_verdict_td_report,
        attest_verdict_tdx_advisory_count, attest_verdict_tdx_advisory_id, attest_verdict_tdx_fmspc,
        attest_verdict_tdx_tcb_status,
    };
    use crate::verifier::{Verifier, attest_verifier_free, attest_verifier_verify_document};
    use attest_engine::crypto::default_provider;
    use attest_engine::tdx::TdxVerifier;
    use attest_test_support::intel::{IntelPki, PckSpec, QuoteSpec, qe_identity_json, tcb_info_json};

    const NOW: u64 = 1_705_276_800; // 2024-01-15

    fn comps(prefix: &[u8]) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..prefix.len()].copy_from_slice(prefix);
        c
    }

    fn text(s: attest_str) -> String {
        let bytes: &[u8] = crate::handle::try_slice(s.data.cast::<u8>(), s.len).unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn bytes(b: attest_bytes) -> Vec<u8> {
        crate::handle::try_slice(b.data, b.len).unwrap().to_vec()
    }

    /// A verifier trusting `pki`'s root, with collateral whose only platform level needs hardening and
    /// names an advisory.
    fn verifier(pki: &IntelPki) -> *const attest_verifier {
        let window = ("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z");
        let tcb = tcb_info_json(
            PckSpec::default().fmspc,
            window,
            &[(comps(&[5, 5, 2, 2, 3, 1, 0, 3]), 11, comps(&[3, 0, 5]), "SWHardeningNeeded", &["INTEL-SA-00837"])],
            &[(4, "UpToDate")],
        );
        let qe = qe_identity_json(window, &[(4, "UpToDate")]);
        let v =
            Verifier::with_tdx_verifier(TdxVerifier::dangerous_with_root(default_provider(), pki.root_der().to_vec()));
        let ptr = arc_into_ptr(Arc::new(v));
        let bundle = pki.bundle(&tcb, &qe, (1_704_067_200, 1_706_745_600), &[], &[]);
        let mut info = attest_tdx_collateral_info::default();
        assert_eq!(
            attest_verifier_set_tdx_collateral(ptr, bundle.as_ptr(), bundle.len(), &mut info),
            attest_result::Ok
        );
        assert_eq!((info.fmspc, info.has_crls, info.expires), (PckSpec::default().fmspc, true, 1_706_745_600));
        ptr
    }

    fn set_policy(v: *const attest_verifier, json: &str) -> attest_result {
        attest_verifier_set_tdx_policy_json(v, json.as_ptr(), json.len())
    }

    #[test]
    fn td_quote_verdict_reports_status_and_advisories() {
        let pki = IntelPki::new();
        let v = verifier(&pki);
        let quote = pki.quote(&pki.issue_pck(&PckSpec::default()), &QuoteSpec::default());
        let verify = |rd: &[u8], out: &mut *mut attest_verdict| {
            attest_verifier_verify_td_quote(v, quote.as_ptr(), quote.len(), rd.as_ptr(), rd.len(), NOW, out)
        };
        let mut vd: *mut attest_verdict = std::ptr::null_mut();
        // Strict default: SWHardeningNeeded is not accepted.
        assert_eq!(verify(&[], &mut vd), attest_result::PolicyTdxTcbStatus);
        assert!(vd.is_null());
        assert_eq!(set_policy(v, r#"{"accepted_tcb_statuses": ["SWHardeningNeeded"]}"#), attest_result::Ok);
        assert_eq!(verify(&[], &mut vd), attest_result::PolicyTdxAdvisoryIds);
        let policy = r#"{"accepted_tcb_statuses": ["SWHardeningNeeded"], "allowed_advisory_ids": ["INTEL-SA-00837"]}"#;
        assert_eq!(set_policy(v, policy), attest_result::Ok);
        assert_eq!(verify(&[0u8; 64], &mut vd), attest_result::Ok);
        assert_eq!(attest_verdict_kind(vd), attest_evidence_kind::TdQuote as u32);
        let mut s = attest_str { data: std::ptr::null(), len: 0 };
        assert_eq!(attest_verdict_tdx_tcb_status(vd, &mut s), attest_result::Ok);
        assert_eq!(text(s), "SWHardeningNeeded");
        assert_eq!(attest_verdict_tdx_advisory_count(vd), 1);
        assert_eq!(attest_verdict_tdx_advisory_id(vd, 0, &mut s), attest_result::Ok);
        assert_eq!(text(s), "INTEL-SA-00837");
        assert_eq!(attest_verdict_tdx_advisory_id(vd, 1, &mut s), attest_result::NotAvailable);
        let mut b = attest_bytes { data: std::ptr::null(), len: 0 };
        assert_eq!(attest_verdict_tdx_fmspc(vd, &mut b), attest_result::Ok);
        assert_eq!(bytes(b), PckSpec::default().fmspc);
        assert_eq!(attest_verdict_td_report(vd, &mut b), attest_result::Ok);
        let body = bytes(b);
        assert_eq!((body.len(), &body[136..184]), (584, &[0x11u8; 48][..]), "MRTD at 136");
        attest_verdict_free(vd);
        // REPORTDATA: a wrong value, and one of the wrong length (never padded).
        let mut vd: *mut attest_verdict = std::ptr::null_mut();
        assert_eq!(verify(&[1u8; 64], &mut vd), attest_result::PolicyTdxReportData);
        assert_eq!(verify(&[0u8; 32], &mut vd), attest_result::Misuse);
        // A tampered quote; a bad policy (the old one stays); bad collateral; NULLs.
        let mut tampered = quote.clone();
        tampered[184] ^= 1;
        let rc =
            attest_verifier_verify_td_quote(v, tampered.as_ptr(), tampered.len(), std::ptr::null(), 0, NOW, &mut vd);
        assert_eq!(rc, attest_result::TdQuoteSignatureInvalid);
        assert_eq!(set_policy(v, r#"{"accepted_tcb_statuses": ["Revoked"]}"#), attest_result::PolicyFile);
        assert_eq!(verify(&[], &mut vd), attest_result::Ok);
        attest_verdict_free(vd);
        let junk = b"{\"tcb_info\": 1}";
        let rc = attest_verifier_set_tdx_collateral(v, junk.as_ptr(), junk.len(), std::ptr::null_mut());
        assert_eq!(rc, attest_result::CollateralMalformed);
        let rc = attest_verifier_verify_td_quote(v, std::ptr::null(), 0, std::ptr::null(), 0, NOW, &mut vd);
        assert_eq!(rc, attest_result::NullParameter);
        let rc = attest_verifier_verify_td_quote(
            v,
            quote.as_ptr(),
            quote.len(),
            std::ptr::null(),
            0,
            NOW,
            std::ptr::null_mut(),
        );
        assert_eq!(rc, attest_result::NullParameter);
        // Outside the collateral's window.
        let later = 1_706_745_601;
        let rc = attest_verifier_verify_td_quote(v, quote.as_ptr(), quote.len(), std::ptr::null(), 0, later, &mut vd);
        // (The generated CRLs end with the JSON windows; whichever the engine meets first is reported.)
        assert!(matches!(rc, attest_result::CrlStale | attest_result::CollateralExpired), "{rc:?}");
        attest_verifier_free(v);
    }

    #[test]
    fn qemu_tdx_documents_take_their_measurements_from_the_file() {
        use attest_proto::attest::v1::{AttestationDocument, TdxEvidence};
        use prost::Message as _;
        let pki = IntelPki::new();
        let v = verifier(&pki);
        let policy = r#"{"accepted_tcb_statuses": ["SWHardeningNeeded"], "allowed_advisory_ids": ["INTEL-SA-00837"]}"#;
        assert_eq!(set_policy(v, policy), attest_result::Ok);
        let (nonce, user_data) = (b"document nonce".as_slice(), b"spki hash".as_slice());
        let rd = attest_engine::variant::tdx::qemu_report_data(default_provider(), user_data, nonce);
        let rtmrs = [[0x21; 48], [0x22; 48], [0; 48], [0; 48]];
        let quote = pki
            .quote(&pki.issue_pck(&PckSpec::default()), &QuoteSpec { report_data: rd, rtmrs, ..QuoteSpec::default() });
        let doc = AttestationDocument {
            variant: "qemu-tdx".into(),
            user_data: user_data.to_vec(),
            tdx: Some(TdxEvidence { quote, event_log: Vec::new() }),
            ..AttestationDocument::default()
        }
        .encode_to_vec();
        let run = |measurements: &str, out: &mut *mut attest_verdict| {
            let variant = "qemu-tdx";
            attest_verifier_verify_document(
                v,
                variant.as_ptr(),
                variant.len(),
                doc.as_ptr(),
                doc.len(),
                measurements.as_ptr(),
                measurements.len(),
                nonce.as_ptr(),
                nonce.len(),
                NOW,
                0,
                out,
            )
        };
        let m =
            |mrtd: &str, rtmr0: &str| format!(r#"{{"0": {{"expected": "{mrtd}"}}, "1": {{"expected": "{rtmr0}"}}}}"#);
        let mut vd: *mut attest_verdict = std::ptr::null_mut();
        assert_eq!(run(&m(&"11".repeat(48), &"21".repeat(48)), &mut vd), attest_result::Ok);
        let mut s = attest_str { data: std::ptr::null(), len: 0 };
        assert_eq!(crate::verdict::attest_verdict_variant(vd, &mut s), attest_result::Ok);
        assert_eq!(text(s), "qemu-tdx");
        assert_eq!(crate::verdict::attest_verdict_ak_basis(vd, &mut s), attest_result::NotAvailable, "no AK");
        assert_eq!(attest_verdict_tdx_tcb_status(vd, &mut s), attest_result::Ok);
        attest_verdict_free(vd);
        assert_eq!(run(&m(&"12".repeat(48), &"21".repeat(48)), &mut vd), attest_result::PolicyTdxMrtd);
        assert_eq!(run(&m(&"11".repeat(48), &"20".repeat(48)), &mut vd), attest_result::PolicyTdxRtmr0);
        // 32-byte values are a PCR map, not TD measurements.
        let pcr_map = format!(r#"{{"0": {{"expected": "{}"}}}}"#, "11".repeat(32));
        assert_eq!(run(&pcr_map, &mut vd), attest_result::MeasurementsFile);
        // Another nonce: REPORTDATA does not bind it.
        let variant = "qemu-tdx";
        let ms = m(&"11".repeat(48), &"21".repeat(48));
        let other = b"other nonce";
        let rc = attest_verifier_verify_document(
            v,
            variant.as_ptr(),
            variant.len(),
            doc.as_ptr(),
            doc.len(),
            ms.as_ptr(),
            ms.len(),
            other.as_ptr(),
            other.len(),
            NOW,
            0,
            &mut vd,
        );
        assert_eq!(rc, attest_result::PolicyTdxReportData);
        attest_verifier_free(v);
    }
}
