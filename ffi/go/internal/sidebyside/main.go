// Command sidebyside is the Go column of the side-by-side test (ffi/tests/side-by-side/run.py): one
// verification through the Go package, and its outcome on stdout as one JSON line,
// {"rc": <result code>, "result": <the result object, or null>}. Arguments as the C column's
// (ffi/tests/side-by-side/driver.c):
//
//	sidebyside KIND INPUT AUX1 AUX2 NONCE_HEX DATA_HEX TIME POLICY_JSON FLAGS VARIANT
package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	attest "github.com/attest-rs/attest/ffi/go"
)

func main() {
	if len(os.Args) != 11 {
		fail("usage: sidebyside KIND INPUT AUX1 AUX2 NONCE_HEX DATA_HEX TIME POLICY_JSON FLAGS VARIANT")
	}
	a := os.Args[1:]
	kind, in, aux1, aux2 := a[0], file(a[1]), file(a[2]), file(a[3])
	nonce, data := hexArg(a[4]), hexArg(a[5])
	secs, err := strconv.ParseInt(a[6], 10, 64)
	if err != nil {
		fail(err.Error())
	}
	var at time.Time // zero: now
	if secs != 0 {
		at = time.Unix(secs, 0)
	}
	flags, err := strconv.ParseUint(a[8], 10, 32)
	if err != nil {
		fail(err.Error())
	}
	var opts []attest.VerifyOption
	if flags&1 != 0 {
		opts = append(opts, attest.AllowEmptyNonce())
	}
	if flags&2 != 0 {
		opts = append(opts, attest.IgnoreUserData())
	}
	policy := file(a[7])

	v, err := attest.NewVerifier()
	if err != nil {
		fail(err.Error())
	}
	defer v.Close()
	setPolicy := func(set func([]byte) error) {
		if policy != nil {
			if err := set(policy); err != nil {
				fail("policy: " + err.Error())
			}
		}
	}
	var verdict attest.Verdict
	switch kind {
	case "snp":
		setPolicy(v.SetPolicyJSON)
		snpOpts := []attest.SNPOption{attest.WithChain(aux2), attest.WithTime(at)}
		if data != nil {
			snpOpts = append(snpOpts, attest.WithReportData(data))
		}
		verdict, err = v.VerifySNP(in, aux1, snpOpts...)
	case "tdx":
		setPolicy(v.SetTDXPolicyJSON)
		if _, err := v.SetTDXCollateral(aux1); err != nil {
			fail("collateral: " + err.Error())
		}
		verdict, err = v.VerifyTDQuote(in, data, at)
	case "tpm-bincode":
		verdict, err = v.VerifyTPMEvidence(attest.TPMEvidenceAzCvmVtpmBincode, in, aux1, nonce, opts...)
	case "tpm-parts":
		sig, msg, pcrs := bincode(in)
		verdict, err = v.VerifyTPMQuote(aux1, msg, sig, attest.SignatureRSASSASHA256, attest.SHA256Bank(pcrs), nonce, opts...)
	case "tpm-trustee":
		verdict, err = v.VerifyTPMEvidence(attest.TPMEvidenceTrusteeJSON, in, nil, nonce, opts...)
	case "azure-parts":
		setPolicy(v.SetPolicyJSON)
		sig, msg, pcrs := bincode(aux2)
		verdict, err = v.VerifyAzureSNP(in, aux1, msg, sig, attest.SignatureRSASSASHA256, attest.SHA256Bank(pcrs), nonce, at, opts...)
	case "azure-evidence":
		setPolicy(v.SetPolicyJSON)
		verdict, err = v.VerifyAzureEvidence(in, nonce, data, at, opts...)
	case "gce":
		setPolicy(v.SetGCEPolicyJSON)
		verdict, err = v.VerifyGCE(in, nonce, at, opts...)
	case "document":
		setPolicy(v.SetPolicyJSON)
		verdict, err = v.VerifyDocument(a[9], in, aux1, nonce, at, opts...)
	default:
		fail("unknown kind " + kind)
	}
	out := struct {
		RC     uint32          `json:"rc"`
		Result json.RawMessage `json:"result"`
	}{Result: verdict.JSON}
	var ae *attest.Error
	switch {
	case err == nil:
	case errors.As(err, &ae):
		out.RC, out.Result = uint32(ae.Code), ae.Result
	default:
		fail(err.Error())
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	line, err := json.Marshal(out)
	if err != nil {
		fail(err.Error())
	}
	fmt.Println(string(line))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "sidebyside:", msg)
	os.Exit(2)
}

// file reads a file argument ("-": none).
func file(path string) []byte {
	if path == "-" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fail(err.Error())
	}
	return b
}

// hexArg decodes a hex argument ("-": none).
func hexArg(s string) []byte {
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		fail(err.Error())
	}
	return b
}

// bincode splits az-cvm-vtpm's quote bundle: u64-LE length + signature, u64-LE length + TPMS_ATTEST,
// u64-LE count + 32-byte SHA-256 PCRs.
func bincode(b []byte) (sig, msg []byte, pcrs [][]byte) {
	next := func(n uint64) []byte {
		if n > uint64(len(b)) {
			fail("bad bincode quote")
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	u64 := func() uint64 { return binary.LittleEndian.Uint64(next(8)) }
	sig = next(u64())
	msg = next(u64())
	count := u64()
	if count > 24 {
		fail("bad bincode quote")
	}
	for i := uint64(0); i < count; i++ {
		pcrs = append(pcrs, next(32))
	}
	return sig, msg, pcrs
}
