package attest

// #include "attest.h"
import "C"

import "unsafe"

// VariantCode is the stable C ABI code (ATTEST_VARIANT_*) of the variant named name; an *Error with
// CodeUnsupportedVariant for a name the library does not know.
func VariantCode(name string) (uint32, error) {
	b := []byte(name)
	if len(b) == 0 {
		return 0, &Error{Code: Code(C.ATTEST_RESULT_UNSUPPORTED_VARIANT), Message: "empty variant name"}
	}
	var code C.uint32_t
	rc := C.attest_variant_code((*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b)), &code)
	if rc != C.ATTEST_RESULT_OK {
		return 0, &Error{Code: Code(rc), Message: "unknown attestation variant " + name}
	}
	return uint32(code), nil
}

// VariantName is the name of the variant with C ABI code code (ATTEST_VARIANT_*); an *Error with
// CodeUnsupportedVariant for a code the library does not know.
func VariantName(code uint32) (string, error) {
	var s C.attest_str
	rc := C.attest_variant_name(C.uint32_t(code), &s)
	if rc != C.ATTEST_RESULT_OK {
		return "", &Error{Code: Code(rc), Message: "unknown attestation variant code"}
	}
	return goString(s), nil
}
