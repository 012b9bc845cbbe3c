package attest

import (
	"errors"
	"testing"
)

// Every generated variant constant has the code the header gives it, and the library maps that code and
// the name to each other.
func TestVariantsMatchTheLibrary(t *testing.T) {
	if len(Variants) == 0 || len(Variants) != len(variantCodes) {
		t.Fatalf("Variants %v and variantCodes %v disagree", Variants, variantCodes)
	}
	for _, name := range Variants {
		code, err := VariantCode(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := variantCodes[name]; code != want {
			t.Fatalf("%s: library code %d, header constant %d", name, code, want)
		}
		back, err := VariantName(code)
		if err != nil || back != name {
			t.Fatalf("code %d: %q, %v", code, back, err)
		}
	}
	var ae *Error
	if _, err := VariantCode("azure"); !errors.As(err, &ae) || ae.Code != CodeUnsupportedVariant {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := VariantName(0); !errors.As(err, &ae) || ae.Code != CodeUnsupportedVariant {
		t.Fatalf("code 0: %v", err)
	}
}
