package attest

/*
#include <stdlib.h>
#include "attest.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Outcome is what happened to one check.
type Outcome uint32

const (
	OutcomeNotRun Outcome = C.ATTEST_OUTCOME_NOT_RUN
	OutcomePassed Outcome = C.ATTEST_OUTCOME_PASSED
	OutcomeWaived Outcome = C.ATTEST_OUTCOME_WAIVED
	OutcomeWarned Outcome = C.ATTEST_OUTCOME_WARNED // accepted warn-only mismatch
)

const (
	kindSNP      = C.ATTEST_EVIDENCE_KIND_SNP
	kindDocument = C.ATTEST_EVIDENCE_KIND_DOCUMENT
	kindTDQuote  = C.ATTEST_EVIDENCE_KIND_TD_QUOTE
)

// Check is one check of a verdict.
type Check struct {
	Name    string
	Outcome Outcome
}

// TCB is a decoded TCB version; FMC is set on Turin only (HasFMC).
type TCB struct {
	Bootloader, TEE, SNP, Microcode, FMC uint8
	HasFMC                               bool
}

// Verdict is the result of accepted evidence, copied out of the library.
type Verdict struct {
	Kind   uint32  // 1 SNP, 2 TPM quote, 3 Azure SNP, 4 document, 5 TD quote, 6 GCE
	Checks []Check // every check, in order
	// SNP part (nil/empty when the evidence has no SNP report).
	Report      []byte // the whole 0x4A0-byte report
	Measurement []byte // sub-slice of Report
	ReportData  []byte // sub-slice of Report
	ReportedTCB *TCB
	Product     string // "Milan", "Genoa", "Turin"
	Signer      string // "VCEK", "VLEK"
	CacheHit    bool
	// Quote part: quoted SHA-256 PCRs by index.
	PCRs map[int][]byte
	// Document part.
	Variant, AKBasis string
	// TD quote part (TD quote verdicts and TDX documents; nil otherwise).
	TDX *TDX
	// GCE part (VerifyGCE, and gcp-shielded-vm documents): the VM the AK certificate names.
	Instance *GCEInstance
	// JSON is the result object (schema attest-result/1, schemas/result-v1.schema.json in the repository):
	// the same object `attest ... verify --json` prints.
	JSON []byte
}

// GCEInstance is the VM a GCE AK certificate names (Google's instance-information extension).
type GCEInstance struct {
	Zone, ProjectID, InstanceName string
	ProjectNumber, InstanceID     uint64
}

// Outcome returns the outcome of the check named name, and whether the verdict has it.
func (v *Verdict) Outcome(name string) (Outcome, bool) {
	for _, c := range v.Checks {
		if c.Name == name {
			return c.Outcome, true
		}
	}
	return OutcomeNotRun, false
}

// Check names repeat across verdicts (the engine's are static); interning them saves an allocation each.
var (
	namesMu sync.RWMutex
	names   = make(map[string]string)
)

const maxInterned = 256

func checkName(s C.attest_str) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(s.data)), int(s.len))
	namesMu.RLock()
	name, ok := names[string(b)] // no allocation for the lookup
	namesMu.RUnlock()
	if ok {
		return name
	}
	name = string(b)
	namesMu.Lock()
	if len(names) < maxInterned {
		names[name] = name
	}
	namesMu.Unlock()
	return name
}

func goBytes(b C.attest_bytes) []byte { return C.GoBytes(unsafe.Pointer(b.data), C.int(b.len)) }
func goString(s C.attest_str) string  { return C.GoStringN(s.data, C.int(s.len)) }

// takeVerdict copies a C verdict into Go and frees it.
func takeVerdict(p *C.attest_verdict, err error) (Verdict, error) {
	if err != nil {
		return Verdict{}, err
	}
	defer C.attest_verdict_free(p)
	v := Verdict{Kind: uint32(C.attest_verdict_kind(p)), JSON: verdictJSON(p)}
	// All checks in one call (cgo calls cost ~100 ns each; a verdict has ~35 checks), into C memory so
	// that cgo need not scan a Go array of pointer-holding structs.
	n := C.attest_verdict_check_count(p)
	if n > 0 {
		buf := (*C.attest_check)(C.malloc(C.size_t(unsafe.Sizeof(C.attest_check{})) * n))
		defer C.free(unsafe.Pointer(buf))
		if C.attest_verdict_checks(p, buf, n, &n) == C.ATTEST_RESULT_OK {
			checks := unsafe.Slice(buf, int(n))
			v.Checks = make([]Check, len(checks))
			for i, c := range checks {
				v.Checks[i] = Check{Name: checkName(c.name), Outcome: Outcome(c.outcome)}
			}
		}
	}
	var b C.attest_bytes
	var s C.attest_str
	if C.attest_verdict_snp_report(p, &b) == C.ATTEST_RESULT_OK {
		v.Report = goBytes(b)
		// SNP ABI spec 56860, ATTESTATION_REPORT: REPORT_DATA at 0x50 (64 bytes), MEASUREMENT at 0x90 (48).
		v.ReportData = v.Report[0x50:0x90:0x90]
		v.Measurement = v.Report[0x90:0xC0:0xC0]
		var t C.attest_tcb
		C.attest_verdict_reported_tcb(p, &t)
		v.ReportedTCB = &TCB{uint8(t.bootloader), uint8(t.tee), uint8(t.snp), uint8(t.microcode), uint8(t.fmc), bool(t.has_fmc)}
		C.attest_verdict_product(p, &s)
		v.Product = goString(s)
		C.attest_verdict_signer(p, &s)
		v.Signer = goString(s)
		v.CacheHit = bool(C.attest_verdict_cache_hit(p))
	}
	if v.Kind == kindSNP {
		return v, nil
	}
	v.TDX = takeTDX(p)
	if v.Kind == kindTDQuote {
		return v, nil
	}
	for i := 0; i < 24; i++ {
		if C.attest_verdict_pcr(p, C.uint32_t(i), &b) == C.ATTEST_RESULT_OK {
			if v.PCRs == nil {
				v.PCRs = make(map[int][]byte)
			}
			v.PCRs[i] = goBytes(b)
		}
	}
	var inst C.attest_gce_instance
	if C.attest_verdict_gce_instance(p, &inst) == C.ATTEST_RESULT_OK {
		v.Instance = &GCEInstance{
			Zone:          goString(inst.zone),
			ProjectID:     goString(inst.project_id),
			InstanceName:  goString(inst.instance_name),
			ProjectNumber: uint64(inst.project_number),
			InstanceID:    uint64(inst.instance_id),
		}
	}
	if v.Kind != kindDocument {
		return v, nil
	}
	if C.attest_verdict_variant(p, &s) == C.ATTEST_RESULT_OK {
		v.Variant = goString(s)
	}
	if C.attest_verdict_ak_basis(p, &s) == C.ATTEST_RESULT_OK {
		v.AKBasis = goString(s)
	}
	return v, nil
}

// verdictJSON copies the verdict's result object.
func verdictJSON(p *C.attest_verdict) []byte {
	return copyText(func(buf *C.char, n C.size_t, out *C.size_t) C.attest_result {
		return C.attest_verdict_json(p, buf, n, out)
	})
}
