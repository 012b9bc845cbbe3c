package attest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

var t20230701 = time.Date(2023, 7, 1, 0, 0, 0, 0, time.UTC)

func tdxVerifier(t *testing.T, bundle string) *Verifier {
	v := newVerifier(t, "")
	info, err := v.SetTDXCollateral(read(t, bundle))
	if err != nil {
		t.Fatal(err)
	}
	if bundle == "go-tdx-guest/collateral_SPR_E4.json" {
		if hex.EncodeToString(info.FMSPC[:]) != "50806f000000" || !info.HasCRLs || info.TCBEvaluationDataNumber != 15 {
			t.Fatalf("collateral info %+v", info)
		}
		if !info.Expires.Equal(time.Date(2023, 7, 8, 7, 24, 59, 0, time.UTC)) {
			t.Fatalf("expires %v", info.Expires)
		}
	}
	return v
}

// trustee's tdx_quote_4 (a debug TD, UpToDate under go-tdx-guest's collateral) and its tampered copies.
func TestVerifyTDQuote(t *testing.T) {
	quote := read(t, "trustee-tdx/tdx_quote_4.dat")
	v := tdxVerifier(t, "go-tdx-guest/collateral_SPR_E4.json")
	defer v.Close()
	_, err := v.VerifyTDQuote(quote, nil, t20230701)
	wantCode(t, err, CodePolicyTDXDebug)
	var ae *Error
	if !errors.As(err, &ae) || !ae.Code.IsPolicyError() || ae.Code.IsTDXError() {
		t.Fatalf("classification: %v", err)
	}
	if err := v.SetTDXPolicyJSON([]byte(`{"allow_debug": true}`)); err != nil {
		t.Fatal(err)
	}
	verdict, err := v.VerifyTDQuote(quote, quote[48+520:48+584], t20230701)
	if err != nil {
		t.Fatal(err)
	}
	if verdict.Kind != 5 || verdict.TDX == nil || verdict.Report != nil {
		t.Fatalf("verdict %+v", verdict)
	}
	td := verdict.TDX
	if td.TCBStatus != "UpToDate" || len(td.AdvisoryIDs) != 0 || hex.EncodeToString(td.FMSPC) != "50806f000000" {
		t.Fatalf("TDX %+v", td)
	}
	if !bytes.Equal(td.MRTD, quote[184:232]) || !strings.HasPrefix(hex.EncodeToString(td.MRTD), "705ee9381b8633a9") {
		t.Fatalf("MRTD %x", td.MRTD)
	}
	if !bytes.Equal(td.ReportData, quote[48+520:48+584]) || !bytes.Equal(td.RTMRs[1], quote[48+376:48+424]) {
		t.Fatal("REPORTDATA or RTMR1")
	}
	if o, _ := verdict.Outcome("debug"); o != OutcomeWaived {
		t.Fatal("debug not waived")
	}
	if o, _ := verdict.Outcome("quote_signature"); o != OutcomePassed {
		t.Fatal("quote_signature not passed")
	}
	// Tampered copies and wrong inputs.
	for _, c := range []struct {
		at   int
		code Code
	}{{184, CodeTdQuoteSignatureInvalid}, {48 + 584 + 4, CodeTdQuoteSignatureInvalid}, {48 + 584 + 4 + 64 + 64 + 6 + 0x30, CodeQeReportSignatureInvalid}} {
		bad := append([]byte(nil), quote...)
		bad[c.at] ^= 1
		_, err := v.VerifyTDQuote(bad, nil, t20230701)
		wantCode(t, err, c.code)
		var ae *Error
		if !errors.As(err, &ae) || !ae.Code.IsTDXError() || !ae.Code.IsEvidenceError() {
			t.Fatalf("classification: %v", err)
		}
	}
	_, err = v.VerifyTDQuote(quote, make([]byte, 64), t20230701)
	wantCode(t, err, CodePolicyTDXReportData)
	_, err = v.VerifyTDQuote(quote, make([]byte, 32), t20230701)
	wantCode(t, err, CodeMisuse)
	_, err = v.VerifyTDQuote(quote, nil, time.Date(2023, 7, 20, 0, 0, 0, 0, time.UTC))
	wantCode(t, err, CodeCollateralExpired)
	_, err = v.VerifyTDQuote(nil, nil, t20230701)
	wantCode(t, err, CodeTruncated)
}

func TestTDXRejections(t *testing.T) {
	v := tdxVerifier(t, "go-tdx-guest/collateral_SPR_E4.json")
	defer v.Close()
	_, err := v.VerifyTDQuote(read(t, "go-tdx-guest/tdx_prod_quote_SPR_E4.dat"), nil, t20230701)
	wantCode(t, err, CodePolicyTDXTrailingBytes)
	if err := v.SetTDXPolicyJSON([]byte(`{"trailing_bytes": "any"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = v.VerifyTDQuote(read(t, "go-tdx-guest/tdx_prod_quote_SPR_E4.dat"), nil, t20230701)
	wantCode(t, err, CodeTcbLevelNotFound)
	for _, q := range []string{"trustee-tdx/tdx_quote_6.dat", "go-tdx-guest/ccel/cos-113-tdx-quote.dat", "trustee-az-tdx-vtpm/td-quote.bin"} {
		_, err = v.VerifyTDQuote(read(t, q), nil, t20230701)
		wantCode(t, err, CodeCollateralMissing)
	}
	_, err = v.SetTDXCollateral([]byte("{}"))
	wantCode(t, err, CodeCollateralMalformed)
	bundle := string(read(t, "go-tdx-guest/collateral_SPR_E4.json"))
	key := `"tcb_info_signature": "`
	i := strings.Index(bundle, key) + len(key)
	flipped := bundle[:i] + map[bool]string{true: "1", false: "0"}[bundle[i] == '0'] + bundle[i+1:]
	_, err = v.SetTDXCollateral([]byte(flipped))
	wantCode(t, err, CodeCollateralSignatureInvalid)
	if err := v.SetTDXPolicyJSON([]byte(`{"accepted_tcb_statuses": ["Revoked"]}`)); err == nil {
		t.Fatal("a policy accepting Revoked was taken")
	}
	// A qemu-tdx document whose platform has no collateral here: refused, never accepted.
	_, err = v.VerifyDocument("qemu-tdx", []byte{0x0a, 0x08, 'q', 'e', 'm', 'u', '-', 't', 'd', 'x'}, []byte(`{"0": {"expected": "`+strings.Repeat("00", 48)+`"}}`), []byte("n"), t20230701)
	wantCode(t, err, Code(6003)) // missing evidence: the document has no TD quote
}

// BenchmarkWarmVerifyTDQuote is a warm TD quote verify through cgo (PCK chain and collateral cached).
func BenchmarkWarmVerifyTDQuote(b *testing.B) {
	quote := read(b, "trustee-tdx/tdx_quote_4.dat")
	v := newVerifier(b, "")
	defer v.Close()
	if _, err := v.SetTDXCollateral(read(b, "go-tdx-guest/collateral_SPR_E4.json")); err != nil {
		b.Fatal(err)
	}
	if err := v.SetTDXPolicyJSON([]byte(`{"allow_debug": true}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := v.VerifyTDQuote(quote, nil, t20230701); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.VerifyTDQuote(quote, nil, t20230701); err != nil {
			b.Fatal(err)
		}
	}
}
