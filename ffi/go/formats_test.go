package attest

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// GCE attestations (go-tpm-tools protobuf) against Google's roots: accepted without a nonce only when told,
// the instance read back, a tampered quote and a foreign project refused with their codes.
func TestVerifyGCE(t *testing.T) {
	att := read(t, "go-tpm-tools/gce-cos-85-no-nonce.pb")
	v := newVerifier(t, "")
	defer v.Close()
	_, err := v.VerifyGCE(att, nil, t20250601)
	wantCode(t, err, CodeNonceRequired)
	verdict, err := v.VerifyGCE(att, nil, t20250601, AllowEmptyNonce())
	if err != nil {
		t.Fatal(err)
	}
	if verdict.Kind != 6 || verdict.Instance == nil || verdict.Instance.Zone != "us-central1-a" ||
		verdict.Instance.InstanceName != "cos-test" {
		t.Fatalf("verdict %+v instance %+v", verdict, verdict.Instance)
	}
	if o, ok := verdict.Outcome("nonce"); !ok || o != OutcomeWaived {
		t.Fatalf("nonce outcome %v %v", o, ok)
	}
	if !bytes.HasPrefix(verdict.PCRs[0], []byte{0x0f, 0x35}) {
		t.Fatalf("PCR 0 %x", verdict.PCRs[0])
	}
	_, err = v.VerifyGCE(att, []byte("9009"), t20250601)
	wantCode(t, err, CodeNonceMismatch)
	tampered := append([]byte(nil), att...)
	tampered[288+50] ^= 1
	_, err = v.VerifyGCE(tampered, nil, t20250601, AllowEmptyNonce())
	wantCode(t, err, CodeQuoteSignatureInvalid)
	if err := v.SetGCEPolicyJSON([]byte(`{"allowed_projects": ["another-project"]}`)); err != nil {
		t.Fatal(err)
	}
	_, err = v.VerifyGCE(att, nil, t20250601, AllowEmptyNonce())
	wantCode(t, err, CodePlatformPolicy)
}

// trustee's Azure SNP vTPM evidence (v0 and v1 layouts); a changed PCR and TDX evidence refused.
func TestVerifyAzureEvidence(t *testing.T) {
	v := newVerifier(t, "")
	defer v.Close()
	for _, f := range []string{"trustee-az-snp-vtpm/evidence-v0.json", "trustee-az-snp-vtpm/evidence-v1.json"} {
		verdict, err := v.VerifyAzureEvidence(read(t, f), []byte("challenge"), nil, t20250601)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if verdict.Kind != 3 || verdict.Product != "Milan" || hex.EncodeToString(verdict.PCRs[0][:2]) != "e15c" {
			t.Fatalf("%s: %+v", f, verdict)
		}
	}
	v1 := read(t, "trustee-az-snp-vtpm/evidence-v1.json")
	tampered := bytes.Replace(v1, []byte("e15c44796beabf46"), []byte("f15c44796beabf46"), 1)
	_, err := v.VerifyAzureEvidence(tampered, []byte("challenge"), nil, t20250601)
	wantCode(t, err, CodePCRDigestMismatch)
	_, err = v.VerifyAzureEvidence(v1, []byte("challenge"), []byte("short"), t20250601)
	wantCode(t, err, CodeInvalidParameter)
	_, err = v.VerifyAzureEvidence(read(t, "trustee-az-tdx-vtpm/evidence-v1.json"), []byte("challenge"), nil, t20250601)
	wantCode(t, err, CodeInvalidParameter)
	_, err = v.VerifyAzureEvidence([]byte(`{"version": 7}`), []byte("challenge"), nil, t20250601)
	wantCode(t, err, CodeEvidenceFormat)
}

// TPM quotes in trustee's JSON and az-cvm-vtpm's bincode.
func TestVerifyTPMEvidence(t *testing.T) {
	v := newVerifier(t, "")
	defer v.Close()
	nonce, _ := hex.DecodeString("a04182b506878d4f29b91ee606a71a0d3361ccf1b22db20c98adcaa537bea393ef0e41a18b3569ab678f1497fbc5c12000000000000000000000000000000000")
	if _, err := v.VerifyTPMEvidence(TPMEvidenceTrusteeJSON, read(t, "trustee-tpm/tpm_evidence.json"), nil, nonce); err != nil {
		t.Fatal(err)
	}
	quote := read(t, "azure-cvm-tooling/quote.bin")
	ak := read(t, "azure-cvm-tooling/akpub.pem")
	verdict, err := v.VerifyTPMEvidence(TPMEvidenceAzCvmVtpmBincode, quote, ak, []byte("challenge"))
	if err != nil || verdict.Kind != 2 {
		t.Fatalf("%+v %v", verdict, err)
	}
	tampered := append([]byte(nil), quote...)
	tampered[40] ^= 1
	_, err = v.VerifyTPMEvidence(TPMEvidenceAzCvmVtpmBincode, tampered, ak, []byte("challenge"))
	wantCode(t, err, CodeQuoteSignatureInvalid)
	_, err = v.VerifyTPMEvidence(TPMEvidenceHexJSON, []byte(`{"signature": "zz", "message": "00", "pcrs": []}`), ak, []byte("c"))
	wantCode(t, err, CodeEvidenceFormat)
}

// The new codes are named, classified and described.
func TestNewCodes(t *testing.T) {
	for _, c := range []Code{CodeQualifiedSigner, CodePlatformPolicy, CodeGCEInstanceInfo, CodeAKCertificateKey, CodeRuntimeUserData, CodeEvidenceFormat} {
		if !c.IsEvidenceError() || c.String() == "" || bytes.HasPrefix([]byte(c.String()), []byte("unknown")) {
			t.Fatalf("code %d: %q", uint32(c), c.String())
		}
	}
	if !CodeEvidenceFormat.IsEvidenceError() || !CodeGCEInstanceInfo.IsVariantError() || !CodeQualifiedSigner.IsTPMError() || !CodePlatformPolicy.IsPolicyError() {
		t.Fatal("classification")
	}
}
