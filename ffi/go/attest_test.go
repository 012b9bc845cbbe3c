package attest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	t20250601 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	t20260101 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t20250101 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

const lenient = `{"allow_provisional_firmware": true}`

// testdata returns the vectors directory, or skips with a NOTICE (fails under CI=true).
func testdata(tb testing.TB) string {
	dir := os.Getenv("ATTEST_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "testdata")
	}
	if _, err := os.Stat(filepath.Join(dir, "INDEX.md")); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("testdata not found at %s (set ATTEST_TESTDATA); required under CI=true", dir)
		}
		tb.Skipf("NOTICE: skipping real-evidence test: testdata not found at %s", dir)
	}
	return dir
}

func read(tb testing.TB, rel string) []byte {
	b, err := os.ReadFile(filepath.Join(testdata(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func newVerifier(tb testing.TB, policy string) *Verifier {
	v, err := NewVerifier()
	if err != nil {
		tb.Fatal(err)
	}
	if policy != "" {
		if err := v.SetPolicyJSON([]byte(policy)); err != nil {
			tb.Fatal(err)
		}
	}
	return v
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *attest.Error (want code %d)", err, code)
	}
	if ae.Code != code {
		t.Fatalf("code %d (%v), want %d (%v)", ae.Code, err, code, code)
	}
	if !errors.Is(err, &Error{Code: code}) {
		t.Fatalf("errors.Is does not match code %d", code)
	}
}

func azureReportData(t testing.TB) []byte {
	rd := make([]byte, 64)
	h, _ := hex.DecodeString("0ccc0895ef2f2c3b8c8568f5a2bb65ff5bf9387a09359742ad41e686cacfd38b")
	copy(rd, h)
	return rd
}

func TestVerifySNPAcceptsAndCaches(t *testing.T) {
	report := read(t, "constellation-azure-snp/attestation.bin")[:0x4A0]
	vcek := read(t, "constellation-azure-snp/vcek.cert")
	chain := read(t, "constellation-azure-snp/certchain.pem")
	v := newVerifier(t, "")
	defer v.Close()
	verdict, err := v.VerifySNP(report, vcek, WithChain(chain), WithReportData(azureReportData(t)), WithTime(t20250601))
	if err != nil {
		t.Fatal(err)
	}
	if verdict.Product != "Milan" || verdict.Signer != "VCEK" || verdict.CacheHit {
		t.Fatalf("verdict %+v", verdict)
	}
	if tcb := verdict.ReportedTCB; tcb == nil || tcb.Bootloader != 2 || tcb.SNP != 6 || tcb.Microcode != 93 || tcb.HasFMC {
		t.Fatalf("TCB %+v", verdict.ReportedTCB)
	}
	if !bytes.Equal(verdict.Measurement, report[0x90:0xC0]) || !bytes.Equal(verdict.ReportData, azureReportData(t)) {
		t.Fatal("measurement or report_data")
	}
	if o, ok := verdict.Outcome("report_signature"); !ok || o != OutcomePassed {
		t.Fatal("report_signature not passed")
	}
	if o, _ := verdict.Outcome("measurement"); o != OutcomeWaived {
		t.Fatal("measurement not waived")
	}
	// The result object: the same schema as the CLI's --json.
	var result map[string]interface{}
	if err := json.Unmarshal(verdict.JSON, &result); err != nil {
		t.Fatalf("verdict JSON: %v: %s", err, verdict.JSON)
	}
	if result["schema"] != "attest-result/1" || result["accepted"] != true || result["verifier"] != "snp" {
		t.Fatalf("result %v", result)
	}
	// The input as the CLI reads it: the report with its IGVM request-data header verifies too.
	whole := read(t, "constellation-azure-snp/attestation.bin")
	if len(whole) != 0x4A0+20 {
		t.Fatalf("attestation.bin is %d bytes", len(whole))
	}
	if _, err := v.VerifySNP(whole, vcek, WithChain(chain), WithTime(t20250601)); err != nil {
		t.Fatalf("report + IGVM header: %v", err)
	}
	warm, err := v.VerifySNP(report, vcek, WithTime(t20250601))
	if err != nil || !warm.CacheHit {
		t.Fatalf("warm: %v %v", err, warm.CacheHit)
	}
	// From the cache without a certificate.
	if _, err := v.VerifySNP(report, nil, WithTime(t20250601)); err != nil {
		t.Fatal(err)
	}
	fresh := newVerifier(t, "")
	defer fresh.Close()
	_, err = fresh.VerifySNP(report, nil, WithTime(t20250601))
	wantCode(t, err, CodeCertificateNotCached)
}

func TestVerifySNPRejections(t *testing.T) {
	report := read(t, "constellation-azure-snp/attestation.bin")[:0x4A0]
	vcek := read(t, "constellation-azure-snp/vcek.cert")
	v := newVerifier(t, "")
	defer v.Close()
	_, err := v.VerifySNP(report, vcek, WithReportData(make([]byte, 64)), WithTime(t20250601))
	wantCode(t, err, CodePolicyReportData)
	var ae *Error
	errors.As(err, &ae)
	if !ae.Code.IsPolicyError() || ae.Code.IsSNPError() || ae.Message == "" {
		t.Fatalf("classification or message: %+v", ae)
	}
	var result struct {
		Accepted bool
		Failure  struct {
			Check, Class string
			PolicyKey    *string `json:"policy_key"`
		}
	}
	if err := json.Unmarshal(ae.Result, &result); err != nil || result.Accepted || result.Failure.Check != "report_data" ||
		result.Failure.Class != "refused" || result.Failure.PolicyKey == nil || *result.Failure.PolicyKey != "report_data" {
		t.Fatalf("refusal's result %v: %s", err, ae.Result)
	}
	// Bytes after the report that are not its IGVM header: malformed, as in the CLI.
	_, err = v.VerifySNP(append(append([]byte(nil), report...), 1, 2, 3), vcek, WithTime(t20250601))
	wantCode(t, err, CodeTrailingData)
	_, err = v.VerifySNP(report, vcek, WithReportData(make([]byte, 32)), WithTime(t20250601))
	wantCode(t, err, CodeMisuse)
	// No report bytes are an empty report (malformed, as in the CLI and C), not a NULL parameter.
	_, err = v.VerifySNP(nil, vcek)
	wantCode(t, err, CodeTruncated)
	bad := append([]byte(nil), report...)
	bad[0x50] ^= 1
	_, err = v.VerifySNP(bad, vcek, WithTime(t20250601))
	wantCode(t, err, CodeReportSignatureInvalid)
	if err := v.SetPolicyJSON([]byte(`{"unknown": 1}`)); err == nil {
		t.Fatal("bad policy accepted")
	} else {
		wantCode(t, err, CodePolicyFile)
	}

	aws := read(t, "constellation-aws-snp/report.bin")[:0x4A0]
	vlek := read(t, "constellation-aws-snp/vlek.pem")
	lv := newVerifier(t, lenient)
	defer lv.Close()
	_, err = lv.VerifySNP(aws, vlek, WithTime(t20260101))
	wantCode(t, err, CodeCertExpired)
	verdict, err := lv.VerifySNP(aws, vlek, WithTime(t20250601))
	if err != nil || verdict.Signer != "VLEK" {
		t.Fatalf("%v %+v", err, verdict.Signer)
	}
	hcl := read(t, "azure-cvm-tooling/hcl-report-snp.bin")
	_, err = lv.VerifySNP(hcl[32:32+0x4A0], read(t, "azure-cvm-tooling/certs.pem"), WithTime(t20250101))
	wantCode(t, err, CodeChipIDMismatch)
}

// bincode parses Azure's quote bundle: u64-LE length + signature, u64-LE length + TPMS_ATTEST, u64-LE
// count + 32-byte PCRs.
func bincode(t testing.TB, b []byte) (sig, msg []byte, pcrs [][]byte) {
	take := func(n int) []byte { out := b[:n]; b = b[n:]; return out }
	n := int(binary.LittleEndian.Uint64(take(8)))
	sig = take(n)
	n = int(binary.LittleEndian.Uint64(take(8)))
	msg = take(n)
	n = int(binary.LittleEndian.Uint64(take(8)))
	for i := 0; i < n; i++ {
		pcrs = append(pcrs, append([]byte(nil), take(32)...))
	}
	return
}

func TestVerifyTPMQuote(t *testing.T) {
	sig, msg, pcrs := bincode(t, read(t, "azure-cvm-tooling/quote.bin"))
	ak := read(t, "azure-cvm-tooling/akpub.pem")
	v := newVerifier(t, "")
	defer v.Close()
	verdict, err := v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("challenge"))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(verdict.PCRs[0]) != "f3a7e99a5f819a034386bce753a48a73cfdaa0bea0ecfc124bedbf5a8c4799be" {
		t.Fatalf("PCR0 %x", verdict.PCRs[0])
	}
	_, err = v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("challeng"))
	wantCode(t, err, CodeNonceMismatch)
	_, err = v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), nil)
	wantCode(t, err, CodeNonceRequired)
	_, err = v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), nil, AllowEmptyNonce())
	wantCode(t, err, CodeNonceMismatch)
	pcrs[0][0] ^= 1
	_, err = v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("challenge"))
	wantCode(t, err, CodePCRDigestMismatch)
	pcrs[0][0] ^= 1
	sig = append([]byte(nil), sig...)
	sig[0] ^= 1
	_, err = v.VerifyTPMQuote(ak, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("challenge"))
	wantCode(t, err, CodeQuoteSignatureInvalid)
	var ae *Error
	if !errors.As(err, &ae) || !ae.Code.IsTPMError() {
		t.Fatal("not a TPM error")
	}
}

func TestVerifyAzureSNP(t *testing.T) {
	hcl := read(t, "trustee-az-snp-vtpm/hcl-report.bin")
	vcek := read(t, "trustee-az-snp-vtpm/vcek.pem")
	sig, msg, pcrs := bincode(t, read(t, "trustee-az-snp-vtpm/quote.bin"))
	v := newVerifier(t, lenient)
	defer v.Close()
	verdict, err := v.VerifyAzureSNP(hcl, vcek, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("challenge"), t20250601)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := verdict.Outcome("ak_binding"); o != OutcomePassed || verdict.ReportedTCB.Microcode != 115 || len(verdict.PCRs) != 24 {
		t.Fatalf("verdict %+v", verdict)
	}
	_, err = v.VerifyAzureSNP(hcl, vcek, msg, sig, SignatureRSASSASHA256, SHA256Bank(pcrs), []byte("egnellahc"), t20250601)
	wantCode(t, err, CodeNonceMismatch)
}

func TestVerifyDocumentErrors(t *testing.T) {
	v := newVerifier(t, "")
	defer v.Close()
	nonce := []byte("nonce")
	_, err := v.VerifyDocument("no-such-variant", []byte{1}, []byte("{}"), nonce, time.Time{})
	wantCode(t, err, Code(6008))
	measurements := []byte(`{"4": {"expected": "` + hex.EncodeToString(make([]byte, 32)) + `", "warnOnly": false}}`)
	_, err = v.VerifyDocument("qemu-vtpm", []byte{0xff, 0xff}, measurements, nonce, time.Time{})
	wantCode(t, err, Code(6007))
	// An empty nonce is refused unless the caller allows it explicitly.
	_, err = v.VerifyDocument("qemu-vtpm", []byte{0xff, 0xff}, measurements, nil, time.Time{})
	wantCode(t, err, CodeNonceRequired)
	_, err = v.VerifyDocument("qemu-vtpm", []byte{0xff, 0xff}, measurements, nil, time.Time{}, AllowEmptyNonce())
	wantCode(t, err, Code(6007))
}

func TestSharedVerifierAcrossGoroutines(t *testing.T) {
	report := read(t, "constellation-azure-snp/attestation.bin")[:0x4A0]
	vcek := read(t, "constellation-azure-snp/vcek.cert")
	v := newVerifier(t, "")
	defer v.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8*20)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if (g+i)%4 == 0 {
					_, err := v.VerifySNP(report, vcek, WithReportData(bytes.Repeat([]byte{byte(g + 1)}, 64)), WithTime(t20250601))
					var ae *Error
					if !errors.As(err, &ae) || ae.Code != CodePolicyReportData || ae.Message == "" {
						errs <- err
					}
				} else if _, err := v.VerifySNP(report, vcek, WithTime(t20250601)); err != nil {
					errs <- err
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	v := newVerifier(t, "")
	v.Close()
	v.Close()
	if _, err := v.VerifySNP(make([]byte, 0x4A0), nil); err != ErrClosed {
		t.Fatalf("got %v", err)
	}
	if CodeCertExpired.String() != "certificate expired" || !CodeCertExpired.IsX509Error() {
		t.Fatal("code text or class")
	}
}

// BenchmarkWarmVerifySNP is a warm SNP verify through cgo (compare with the criterion number of the
// direct engine call, benches/README.md "FFI").
func BenchmarkWarmVerifySNP(b *testing.B) {
	report := read(b, "constellation-azure-snp/attestation.bin")[:0x4A0]
	vcek := read(b, "constellation-azure-snp/vcek.cert")
	v := newVerifier(b, "")
	defer v.Close()
	rd := azureReportData(b)
	opts := []SNPOption{WithReportData(rd), WithTime(t20250601)}
	if _, err := v.VerifySNP(report, vcek, opts...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.VerifySNP(report, vcek, opts...); err != nil {
			b.Fatal(err)
		}
	}
}
