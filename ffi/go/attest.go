// Package attest verifies confidential-VM attestation evidence (AMD SEV-SNP reports, Intel TDX quotes,
// TPM 2.0 quotes, Azure SNP vTPM bundles and trustee's JSON evidence, GCE vTPM attestations from
// go-tpm-tools, attestation documents) through the attest C library (ffi/include/attest.h). TDX: install
// collateral with SetTDXCollateral, then VerifyTDQuote.
//
// A Verifier is safe for concurrent use by many goroutines; create one, configure it (SetPolicyJSON,
// SetCRL, PinAK), share it, and Close it when done. Verification returns a Verdict (a Go value, copied
// out of the library) for accepted evidence, or an error that wraps the library's stable result code:
//
//	v, err := attest.NewVerifier()
//	if err != nil {
//		return err
//	}
//	defer v.Close()
//	verdict, err := v.VerifySNP(report, vcek, attest.WithReportData(nonceHash))
//	var ae *attest.Error
//	if errors.As(err, &ae) && ae.Code == attest.CodeCertExpired {
//		// the VCEK expired: fetch a fresh one
//	}
//	fmt.Println(verdict.Product, verdict.Signer, len(verdict.Checks))
//
// Build: the module is github.com/attest-rs/attest/ffi/go (package attest; standard library only, so it
// builds offline) and links the installed C library through pkg-config ("#cgo pkg-config: attest"):
// install it with `make -C ffi install PREFIX=...` and point PKG_CONFIG_PATH at PREFIX/lib/pkgconfig (and
// the dynamic loader at PREFIX/lib, e.g. LD_LIBRARY_PATH, unless PREFIX is a system prefix). README.md in
// this directory has a runnable example. NewVerifier refuses a library of another ABI major version
// (ABIVersion, ErrABIMismatch).
package attest

/*
#cgo pkg-config: attest
#include <stdlib.h>
#include "attest.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Code is a stable result code of the library (attest_result); see ffi/src/result.rs for the table.
type Code uint32

// Result codes Go callers commonly branch on. Every code the library returns is a Code; these are named.
const (
	CodeOK                     Code = C.ATTEST_RESULT_OK
	CodePanic                  Code = C.ATTEST_RESULT_PANIC
	CodeNullParameter          Code = C.ATTEST_RESULT_NULL_PARAMETER
	CodeInvalidParameter       Code = C.ATTEST_RESULT_INVALID_PARAMETER
	CodeCertificateNotCached   Code = C.ATTEST_RESULT_CERTIFICATE_NOT_CACHED
	CodeMisuse                 Code = C.ATTEST_RESULT_MISUSE
	CodeReportSignatureInvalid Code = C.ATTEST_RESULT_REPORT_SIGNATURE_INVALID
	CodeChipIDMismatch         Code = C.ATTEST_RESULT_CHIP_ID_MISMATCH
	CodeCertExpired            Code = C.ATTEST_RESULT_CERT_EXPIRED
	CodeCertNotYetValid        Code = C.ATTEST_RESULT_CERT_NOT_YET_VALID
	CodeRevoked                Code = C.ATTEST_RESULT_REVOKED
	CodeNonceMismatch          Code = C.ATTEST_RESULT_NONCE_MISMATCH
	CodePCRDigestMismatch      Code = C.ATTEST_RESULT_PCR_DIGEST_MISMATCH
	CodeQuoteSignatureInvalid  Code = C.ATTEST_RESULT_QUOTE_SIGNATURE_INVALID
	CodePolicyFile             Code = C.ATTEST_RESULT_POLICY_FILE
	CodePolicyReportData       Code = C.ATTEST_RESULT_POLICY_REPORT_DATA
	CodePolicyMeasurement      Code = C.ATTEST_RESULT_POLICY_MEASUREMENT
	CodePolicyDebug            Code = C.ATTEST_RESULT_POLICY_DEBUG
	CodeAKBindingMismatch      Code = C.ATTEST_RESULT_AK_BINDING_MISMATCH
	CodeAKNotTrusted           Code = C.ATTEST_RESULT_AK_NOT_TRUSTED
	CodePCRMismatch            Code = C.ATTEST_RESULT_PCR_MISMATCH
	CodeNonceRequired          Code = C.ATTEST_RESULT_NONCE_REQUIRED
	CodeLaunchUnpinned         Code = C.ATTEST_RESULT_LAUNCH_UNPINNED
	CodeFreshnessBinding       Code = C.ATTEST_RESULT_FRESHNESS_BINDING_MISMATCH
	CodeQualifiedSigner        Code = C.ATTEST_RESULT_QUALIFIED_SIGNER_MISMATCH
	CodePlatformPolicy         Code = C.ATTEST_RESULT_PLATFORM_POLICY
	CodeGCEInstanceInfo        Code = C.ATTEST_RESULT_GCE_INSTANCE_INFO
	CodeAKCertificateKey       Code = C.ATTEST_RESULT_AK_CERTIFICATE_KEY_MISMATCH
	CodeRuntimeUserData        Code = C.ATTEST_RESULT_RUNTIME_USER_DATA_MISMATCH
	CodeEvidenceFormat         Code = C.ATTEST_RESULT_EVIDENCE_FORMAT
	CodeUnsupportedVariant     Code = C.ATTEST_RESULT_UNSUPPORTED_VARIANT
	CodeTruncated              Code = C.ATTEST_RESULT_TRUNCATED
	CodeTrailingData           Code = C.ATTEST_RESULT_TRAILING_DATA
)

// ABIVersion is the ABI of the loaded library, major<<16 | minor (attest_abi_version()).
func ABIVersion() uint32 { return uint32(C.attest_abi_version()) }

// ABIVersionCompiled is the ABI of the header this package was compiled against (ATTEST_ABI_VERSION).
const ABIVersionCompiled uint32 = C.ATTEST_ABI_VERSION

// ErrABIMismatch: the loaded library's ABI major version is not the one this package was compiled against.
var ErrABIMismatch = errors.New("attest: the C library's ABI major version differs from the header's")

// String is the code's static description.
func (c Code) String() string {
	var buf [256]C.char
	var n C.size_t
	if C.attest_result_text(C.uint32_t(c), &buf[0], C.size_t(len(buf)), &n) != C.ATTEST_RESULT_OK {
		return fmt.Sprintf("attest result %d", uint32(c))
	}
	return C.GoStringN(&buf[0], C.int(n))
}

// IsAPIError reports whether c is a caller mistake or internal error (1000–1999), not bad evidence.
func (c Code) IsAPIError() bool { return bool(C.attest_result_is_api_error(C.uint32_t(c))) }

// IsSNPError reports whether c is an SEV-SNP report error (2000–2999).
func (c Code) IsSNPError() bool { return bool(C.attest_result_is_snp_error(C.uint32_t(c))) }

// IsX509Error reports whether c is a certificate, chain or CRL error (3000–3999).
func (c Code) IsX509Error() bool { return bool(C.attest_result_is_x509_error(C.uint32_t(c))) }

// IsTPMError reports whether c is a TPM error (4000–4999).
func (c Code) IsTPMError() bool { return bool(C.attest_result_is_tpm_error(C.uint32_t(c))) }

// IsPolicyError reports whether c is a policy error (5000–5999).
func (c Code) IsPolicyError() bool { return bool(C.attest_result_is_policy_error(C.uint32_t(c))) }

// IsVariantError reports whether c is an Azure or attestation-variant error (6000–6999).
func (c Code) IsVariantError() bool { return bool(C.attest_result_is_variant_error(C.uint32_t(c))) }

// IsEvidenceError reports whether c rejects the evidence (anything but OK and API errors).
func (c Code) IsEvidenceError() bool { return bool(C.attest_result_is_evidence_error(C.uint32_t(c))) }

// Error is a failed call: the result code and the library's detailed message, and for a verification
// that judged the evidence, its result object (schema attest-result/1: the failed check, whether the
// input was malformed or refused, the policy key that governs the check).
type Error struct {
	Code    Code
	Message string
	Result  []byte
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("attest: %s (%d)", e.Code, uint32(e.Code))
	}
	return fmt.Sprintf("attest: %s (%d): %s", e.Code, uint32(e.Code), e.Message)
}

// Is matches another *Error with the same code, so errors.Is(err, &attest.Error{Code: attest.CodeCertExpired})
// works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrClosed is returned by calls on a closed Verifier.
var ErrClosed = errors.New("attest: verifier is closed")

// Verifier holds AMD's roots, the SNP policy and the verified-chain cache. Safe for concurrent use.
type Verifier struct {
	mu  sync.RWMutex // Close takes it exclusively, so no call runs while the handle is freed.
	ptr *C.attest_verifier
}

// NewVerifier creates a verifier with AMD's Milan, Genoa and Turin roots and the strict default policy.
func NewVerifier() (*Verifier, error) {
	if ABIVersion()>>16 != ABIVersionCompiled>>16 || ABIVersion()&0xffff < ABIVersionCompiled&0xffff {
		return nil, fmt.Errorf("%w: library %#x, header %#x", ErrABIMismatch, ABIVersion(), ABIVersionCompiled)
	}
	var p *C.attest_verifier
	if rc := C.attest_verifier_new(&p); rc != C.ATTEST_RESULT_OK {
		return nil, &Error{Code: Code(rc)}
	}
	v := &Verifier{ptr: p}
	runtime.SetFinalizer(v, func(v *Verifier) { v.Close() })
	return v, nil
}

// Close frees the verifier. Verdicts stay valid (they are Go values). Close is idempotent.
func (v *Verifier) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ptr != nil {
		C.attest_verifier_free(v.ptr)
		v.ptr = nil
	}
	return nil
}

// bytesArg passes a Go slice to C for the duration of one call (C never keeps it): (NULL, 0) when empty.
func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// noBytes backs evidenceArg's empty input.
var noBytes [1]byte

// evidenceArg passes evidence to C for one call: like bytesArg, but empty evidence is an empty input, never
// NULL, so the library judges it (malformed, with its result object) as it judges every other input.
func evidenceArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&noBytes[0])), 0
	}
	return bytesArg(b)
}

// call runs f on the C verifier with the goroutine locked to its OS thread, so that the thread-local
// detailed error read after a failure is this call's.
func (v *Verifier) call(f func(p *C.attest_verifier) C.attest_result) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.ptr == nil {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := f(v.ptr)
	if rc == C.ATTEST_RESULT_OK {
		return nil
	}
	return &Error{Code: Code(rc), Message: lastError(v.ptr), Result: lastResult(v.ptr)}
}

// lastResult copies this thread's result object of its latest verification on p (nil: none).
func lastResult(p *C.attest_verifier) []byte {
	return copyText(func(buf *C.char, n C.size_t, out *C.size_t) C.attest_result {
		return C.attest_verifier_last_result_json(p, buf, n, out)
	})
}

// copyText runs a C text getter twice, the size query and then the copy; nil when there is no text.
func copyText(get func(buf *C.char, n C.size_t, out *C.size_t) C.attest_result) []byte {
	var n C.size_t
	if get(nil, 0, &n) != C.ATTEST_RESULT_INSUFFICIENT_SIZE || n == 0 {
		return nil
	}
	buf := make([]byte, int(n))
	if get((*C.char)(unsafe.Pointer(&buf[0])), n, &n) != C.ATTEST_RESULT_OK {
		return nil
	}
	return buf[:n]
}

func lastError(p *C.attest_verifier) string {
	var buf [1024]C.char
	var n C.size_t
	rc := C.attest_verifier_last_error(p, &buf[0], C.size_t(len(buf)), &n)
	if rc == C.ATTEST_RESULT_INSUFFICIENT_SIZE {
		big := make([]byte, int(n))
		if C.attest_verifier_last_error(p, (*C.char)(unsafe.Pointer(&big[0])), n, &n) == C.ATTEST_RESULT_OK {
			return string(big[:n])
		}
		return ""
	}
	if rc != C.ATTEST_RESULT_OK {
		return ""
	}
	return C.GoStringN(&buf[0], C.int(n))
}

// SetPolicyJSON replaces the SNP policy (the engine's SnpPolicy as JSON; "{}" is the default policy).
func (v *Verifier) SetPolicyJSON(policy []byte) error {
	p, n := bytesArg(policy)
	return v.call(func(h *C.attest_verifier) C.attest_result { return C.attest_verifier_set_policy_json(h, p, n) })
}

// SetCRL installs an ARK-signed CRL (DER or PEM).
func (v *Verifier) SetCRL(crl []byte) error {
	p, n := bytesArg(crl)
	return v.call(func(h *C.attest_verifier) C.attest_result { return C.attest_verifier_set_crl(h, p, n) })
}

// PinAK trusts an attestation key (its TPM2B_PUBLIC) for qemu-vtpm documents.
func (v *Verifier) PinAK(tpm2bPublic []byte) error {
	p, n := bytesArg(tpm2bPublic)
	return v.call(func(h *C.attest_verifier) C.attest_result { return C.attest_verifier_pin_ak(h, p, n) })
}

type snpOptions struct {
	chain, reportData []byte
	time              time.Time
}

// SNPOption configures VerifySNP.
type SNPOption func(*snpOptions)

// WithChain supplies the ASK/ASVK (and optionally the ARK), DER or PEM.
func WithChain(chain []byte) SNPOption { return func(o *snpOptions) { o.chain = chain } }

// WithReportData requires REPORT_DATA to equal rd (exactly 64 bytes).
func WithReportData(rd []byte) SNPOption { return func(o *snpOptions) { o.reportData = rd } }

// WithTime sets the trusted time (default: now).
func WithTime(t time.Time) SNPOption { return func(o *snpOptions) { o.time = t } }

func unixTime(t time.Time) C.uint64_t {
	if t.IsZero() {
		return C.ATTEST_TIME_NOW
	}
	return C.uint64_t(t.Unix())
}

// VerifySNP verifies an SEV-SNP report (0x4A0 bytes) with its VCEK or VLEK (DER or PEM; nil to use the
// certificate the verifier remembers for this chip and TCB) against the verifier's policy.
func (v *Verifier) VerifySNP(report, vcek []byte, opts ...SNPOption) (Verdict, error) {
	var o snpOptions
	for _, opt := range opts {
		opt(&o)
	}
	rp, rn := evidenceArg(report)
	lp, ln := bytesArg(vcek)
	cp, cn := bytesArg(o.chain)
	dp, dn := bytesArg(o.reportData)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_snp(h, rp, rn, lp, ln, cp, cn, dp, dn, unixTime(o.time), &out)
	})
	return takeVerdict(out, err)
}

// SignatureFormat says how a quote's signature is encoded.
type SignatureFormat uint32

const (
	// SignatureTPMT is a marshalled TPMT_SIGNATURE (TPM2_Quote's output).
	SignatureTPMT SignatureFormat = C.ATTEST_QUOTE_SIGNATURE_TPMT
	// SignatureRSASSASHA256 is a bare RSASSA-PKCS1-v1_5/SHA-256 signature (Azure vTPM bundles).
	SignatureRSASSASHA256 SignatureFormat = C.ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256
	// SignatureRSAPSSSHA256 is a bare RSASSA-PSS/SHA-256 signature.
	SignatureRSAPSSSHA256 SignatureFormat = C.ATTEST_QUOTE_SIGNATURE_RSAPSS_SHA256
)

// PCR is one presented PCR value.
type PCR struct {
	HashAlg uint16 // TPM_ALG_ID: 0x000B SHA-256, 0x000C SHA-384, 0x000D SHA-512
	Index   uint8
	Value   []byte
}

// SHA256Bank presents values[i] as SHA-256 PCR i.
func SHA256Bank(values [][]byte) []PCR {
	out := make([]PCR, len(values))
	for i, v := range values {
		out[i] = PCR{HashAlg: 0x000B, Index: uint8(i), Value: v}
	}
	return out
}

func pcrArg(pcrs []PCR) ([]C.attest_pcr_value, error) {
	out := make([]C.attest_pcr_value, len(pcrs))
	for i, p := range pcrs {
		if len(p.Value) > len(out[i].value) {
			return nil, &Error{Code: CodeInvalidParameter, Message: "PCR value longer than 64 bytes"}
		}
		out[i].hash_alg = C.uint16_t(p.HashAlg)
		out[i].index = C.uint8_t(p.Index)
		out[i].value_len = C.uint8_t(len(p.Value))
		for j, b := range p.Value {
			out[i].value[j] = C.uint8_t(b)
		}
	}
	return out, nil
}

func pcrPtr(p []C.attest_pcr_value) (*C.attest_pcr_value, C.size_t) {
	if len(p) == 0 {
		return nil, 0
	}
	return &p[0], C.size_t(len(p))
}

// VerifyOption adjusts a quote, Azure bundle or document verification.
type VerifyOption func(*C.uint32_t)

// AllowEmptyNonce accepts an empty nonce (ATTEST_VERIFY_ALLOW_EMPTY_NONCE). Without it an empty nonce is
// refused with CodeNonceRequired: evidence verified for no nonce says nothing about freshness.
func AllowEmptyNonce() VerifyOption {
	return func(flags *C.uint32_t) { *flags |= C.ATTEST_VERIFY_ALLOW_EMPTY_NONCE }
}

func verifyFlags(opts []VerifyOption) C.uint32_t {
	var flags C.uint32_t
	for _, o := range opts {
		o(&flags)
	}
	return flags
}

// VerifyTPMQuote verifies a TPM 2.0 quote by ak (SPKI DER, PEM, or TPM2B_PUBLIC) over pcrs with
// extraData = nonce (non-empty unless AllowEmptyNonce is given).
func (v *Verifier) VerifyTPMQuote(ak, attestBytes, signature []byte, format SignatureFormat, pcrs []PCR, nonce []byte, opts ...VerifyOption) (Verdict, error) {
	cpcrs, err := pcrArg(pcrs)
	if err != nil {
		return Verdict{}, err
	}
	ap, an := bytesArg(ak)
	tp, tn := evidenceArg(attestBytes)
	sp, sn := bytesArg(signature)
	np, nn := bytesArg(nonce)
	var out *C.attest_verdict
	err = v.call(func(h *C.attest_verifier) C.attest_result {
		pp, pn := pcrPtr(cpcrs)
		return C.attest_verifier_verify_tpm_quote(h, ap, an, tp, tn, sp, sn, C.uint32_t(format), pp, pn, np, nn, verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}

// VerifyAzureSNP verifies an Azure SNP vTPM bundle: HCL report + VCEK + the vTPM quote for nonce
// (non-empty unless AllowEmptyNonce is given).
func (v *Verifier) VerifyAzureSNP(hclReport, vcek, attestBytes, signature []byte, format SignatureFormat, pcrs []PCR, nonce []byte, t time.Time, opts ...VerifyOption) (Verdict, error) {
	cpcrs, err := pcrArg(pcrs)
	if err != nil {
		return Verdict{}, err
	}
	hp, hn := evidenceArg(hclReport)
	vp, vn := bytesArg(vcek)
	tp, tn := evidenceArg(attestBytes)
	sp, sn := bytesArg(signature)
	np, nn := bytesArg(nonce)
	var out *C.attest_verdict
	err = v.call(func(h *C.attest_verifier) C.attest_result {
		pp, pn := pcrPtr(cpcrs)
		return C.attest_verifier_verify_azure_snp(h, hp, hn, vp, vn, tp, tn, sp, sn, C.uint32_t(format), pp, pn, np, nn, unixTime(t), verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}

// VerifyDocument validates an attestation document (protobuf) of variant against a measurements file
// (JSON or YAML) for nonce (non-empty unless AllowEmptyNonce is given) at time t (zero: now). The SNP
// variants need a policy that pins the launch measurement (else CodeLaunchUnpinned).
func (v *Verifier) VerifyDocument(variant string, document, measurements, nonce []byte, t time.Time, opts ...VerifyOption) (Verdict, error) {
	vb := []byte(variant)
	vp, vn := bytesArg(vb)
	dp, dn := evidenceArg(document)
	mp, mn := bytesArg(measurements)
	np, nn := bytesArg(nonce)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_document(h, vp, vn, dp, dn, mp, mn, np, nn, unixTime(t), verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}

// SetGCEPolicyJSON replaces the GCE policy (the engine's GcePolicy as JSON; "{}" is the default: a
// production VM and an event log required).
func (v *Verifier) SetGCEPolicyJSON(policy []byte) error {
	p, n := bytesArg(policy)
	return v.call(func(h *C.attest_verifier) C.attest_result { return C.attest_verifier_set_gce_policy_json(h, p, n) })
}

// VerifyGCE verifies a GCE Shielded VM / Confidential VM attestation (go-tpm-tools' Attestation protobuf)
// against Google's pinned EK/AK CA roots for nonce (the quotes' extraData; empty only with
// AllowEmptyNonce) at time t (zero: now). The verdict's Instance names the VM.
func (v *Verifier) VerifyGCE(attestation, nonce []byte, t time.Time, opts ...VerifyOption) (Verdict, error) {
	ap, an := evidenceArg(attestation)
	np, nn := bytesArg(nonce)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_gce(h, ap, an, np, nn, unixTime(t), verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}

// IgnoreUserData skips the HCL runtime user-data check of trustee's v2 Azure evidence
// (ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA); VerifyAzureEvidence only.
func IgnoreUserData() VerifyOption {
	return func(flags *C.uint32_t) { *flags |= C.ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA }
}

// VerifyAzureEvidence verifies Azure SNP vTPM evidence in trustee's JSON layouts (v0, v1, v2) for nonce
// (the vTPM quote's extraData). userData is what v2 evidence's runtime user-data must hold (64 bytes; nil
// for v0/v1, or with IgnoreUserData; v2 evidence with neither is CodeInvalidParameter, before anything is
// verified).
func (v *Verifier) VerifyAzureEvidence(json, nonce, userData []byte, t time.Time, opts ...VerifyOption) (Verdict, error) {
	jp, jn := evidenceArg(json)
	np, nn := bytesArg(nonce)
	up, un := bytesArg(userData)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_azure_evidence(h, jp, jn, np, nn, up, un, unixTime(t), verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}

// TPMEvidenceFormat names another tool's TPM quote format.
type TPMEvidenceFormat uint32

const (
	// TPMEvidenceTrusteeJSON is trustee's TPM evidence JSON (AK and quote together; pass no AK).
	TPMEvidenceTrusteeJSON TPMEvidenceFormat = C.ATTEST_TPM_EVIDENCE_TRUSTEE_JSON
	// TPMEvidenceAzCvmVtpmBincode is az-cvm-vtpm's bincode quote bundle.
	TPMEvidenceAzCvmVtpmBincode TPMEvidenceFormat = C.ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE
	// TPMEvidenceHexJSON is trustee's hex quote JSON {signature, message, pcrs}.
	TPMEvidenceHexJSON TPMEvidenceFormat = C.ATTEST_TPM_EVIDENCE_HEX_JSON
)

// VerifyTPMEvidence verifies a TPM quote in another tool's format by ak (SPKI DER/PEM, TPM2B_PUBLIC or
// TPMT_PUBLIC; nil for TPMEvidenceTrusteeJSON, which carries it) with extraData = nonce.
func (v *Verifier) VerifyTPMEvidence(format TPMEvidenceFormat, evidence, ak, nonce []byte, opts ...VerifyOption) (Verdict, error) {
	ep, en := evidenceArg(evidence)
	kp, kn := bytesArg(ak)
	np, nn := bytesArg(nonce)
	var out *C.attest_verdict
	err := v.call(func(h *C.attest_verifier) C.attest_result {
		return C.attest_verifier_verify_tpm_evidence(h, C.uint32_t(format), ep, en, kp, kn, np, nn, verifyFlags(opts), &out)
	})
	return takeVerdict(out, err)
}
