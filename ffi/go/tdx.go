package attest

/*
#include <stdlib.h>
#include "attest.h"
*/
import "C"

import "time"

// Intel TDX result codes Go callers commonly branch on (TDX errors are 8000–8999, TDX policy checks
// 5200–5299).
const (
	CodeTdQuoteSignatureInvalid    Code = C.ATTEST_RESULT_TD_QUOTE_SIGNATURE_INVALID
	CodeQeReportSignatureInvalid   Code = C.ATTEST_RESULT_QE_REPORT_SIGNATURE_INVALID
	CodeCollateralMalformed        Code = C.ATTEST_RESULT_COLLATERAL_MALFORMED
	CodeCollateralSignatureInvalid Code = C.ATTEST_RESULT_COLLATERAL_SIGNATURE_INVALID
	CodeCollateralExpired          Code = C.ATTEST_RESULT_COLLATERAL_EXPIRED
	CodeCollateralNotYetValid      Code = C.ATTEST_RESULT_COLLATERAL_NOT_YET_VALID
	CodeCollateralMissing          Code = C.ATTEST_RESULT_COLLATERAL_MISSING
	CodeTcbLevelNotFound           Code = C.ATTEST_RESULT_TCB_LEVEL_NOT_FOUND
	CodePolicyTDXTcbStatus         Code = C.ATTEST_RESULT_POLICY_TDX_TCB_STATUS
	CodePolicyTDXAdvisoryIDs       Code = C.ATTEST_RESULT_POLICY_TDX_ADVISORY_IDS
	CodePolicyTDXReportData        Code = C.ATTEST_RESULT_POLICY_TDX_REPORT_DATA
	CodePolicyTDXMrtd              Code = C.ATTEST_RESULT_POLICY_TDX_MRTD
	CodePolicyTDXDebug             Code = C.ATTEST_RESULT_POLICY_TDX_DEBUG
	CodePolicyTDXTrailingBytes     Code = C.ATTEST_RESULT_POLICY_TDX_TRAILING_BYTES
)

// IsTDXError reports whether c is an Intel TDX error (8000–8999: quote, PCK certificate, collateral, TCB
// level, CC event log). TDX policy checks are policy errors (IsPolicyError).
func (c Code) IsTDXError() bool { return bool(C.attest_result_is_tdx_error(C.uint32_t(c))) }

// TDXCollateralInfo says which platform installed collateral covers and when it must be refreshed.
type TDXCollateralInfo struct {
	FMSPC                   [6]byte
	TCBEvaluationDataNumber uint32
	ValidFrom, Expires      time.Time
	HasCRLs                 bool
}

// SetTDXCollateral verifies TDX collateral (the shared JSON bundle, as `attest pcs fetch --bundle` writes
// it) under Intel's pinned root and installs it for its platform (FMSPC), replacing what was there.
func (v *Verifier) SetTDXCollateral(bundle []byte) (TDXCollateralInfo, error) {
	p, n := bytesArg(bundle)
	var info C.attest_tdx_collateral_info
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_set_tdx_collateral(h, p, n, &info)
	})
	if err != nil {
		return TDXCollateralInfo{}, err
	}
	out := TDXCollateralInfo{
		TCBEvaluationDataNumber: uint32(info.tcb_evaluation_data_number),
		ValidFrom:               time.Unix(int64(info.valid_from), 0).UTC(),
		Expires:                 time.Unix(int64(info.expires), 0).UTC(),
		HasCRLs:                 bool(info.has_crls),
	}
	for i := range out.FMSPC {
		out.FMSPC[i] = byte(info.fmspc[i])
	}
	return out, nil
}

// SetTDXPolicyJSON replaces the TDX policy (the engine's TdxPolicy as JSON; "{}" is the strict default:
// UpToDate only, no advisory IDs, no debug TDs, CRLs required).
func (v *Verifier) SetTDXPolicyJSON(policy []byte) error {
	p, n := bytesArg(policy)
	return v.call(func(h *C.attest_verifier) C.attest_result { return C.attest_verifier_set_tdx_policy_json(h, p, n) })
}

// VerifyTDQuote verifies an Intel TDX quote (DCAP v4/v5) against the installed collateral of its platform
// and the TDX policy. reportData, when not nil, must be exactly 64 bytes and equal the quote's REPORTDATA;
// t is the trusted time (zero: now).
func (v *Verifier) VerifyTDQuote(quote, reportData []byte, t time.Time) (Verdict, error) {
	qp, qn := evidenceArg(quote)
	rp, rn := bytesArg(reportData)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_td_quote(h, qp, qn, rp, rn, unixTime(t), &out)
	})
	return takeVerdict(out, err)
}

// TDX is the TD quote part of a verdict.
type TDX struct {
	TCBStatus   string   // "UpToDate", "SWHardeningNeeded", …
	AdvisoryIDs []string // of the matched TCB levels, each allowed by the policy
	FMSPC       []byte   // 6 bytes
	TDReport    []byte   // the TD report body (584 bytes, TDX 1.5: 648)
	MRTD        []byte   // sub-slice of TDReport
	RTMRs       [4][]byte
	ReportData  []byte // sub-slice of TDReport
}

// takeTDX copies the TD quote part of a C verdict, or returns nil when it has none.
func takeTDX(p *C.attest_verdict) *TDX {
	var s C.attest_str
	if C.attest_verdict_tdx_tcb_status(p, &s) != C.ATTEST_RESULT_OK {
		return nil
	}
	t := &TDX{TCBStatus: goString(s)}
	n := int(C.attest_verdict_tdx_advisory_count(p))
	for i := 0; i < n; i++ {
		if C.attest_verdict_tdx_advisory_id(p, C.size_t(i), &s) == C.ATTEST_RESULT_OK {
			t.AdvisoryIDs = append(t.AdvisoryIDs, goString(s))
		}
	}
	var b C.attest_bytes
	if C.attest_verdict_tdx_fmspc(p, &b) == C.ATTEST_RESULT_OK {
		t.FMSPC = goBytes(b)
	}
	if C.attest_verdict_td_report(p, &b) == C.ATTEST_RESULT_OK && b.len >= 584 {
		t.TDReport = goBytes(b)
		// Intel TDX DCAP quote format, "TD Quote Body": MRTD at 136, RTMR0–3 at 328 + 48·i, REPORTDATA at 520.
		t.MRTD = t.TDReport[136:184:184]
		for i := range t.RTMRs {
			at := 328 + 48*i
			t.RTMRs[i] = t.TDReport[at : at+48 : at+48]
		}
		t.ReportData = t.TDReport[520:584:584]
	}
	return t
}
