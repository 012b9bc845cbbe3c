package attest_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	attest "github.com/attest-rs/attest/ffi/go"
)

// Example verifies an SEV-SNP report the way a program embedding the library does. Bytes that are not
// a report are refused with a stable code before any certificate is looked at.
func Example() {
	v, err := attest.NewVerifier()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()
	fmt.Println("same ABI major:", attest.ABIVersion()>>16 == attest.ABIVersionCompiled>>16)

	_, err = v.VerifySNP(make([]byte, 100), nil)
	var ae *attest.Error
	fmt.Println("refused:", errors.As(err, &ae), ae.Code == attest.CodeTruncated)
	// Output:
	// same ABI major: true
	// refused: true true
}

// ExampleVerifier_VerifySNP verifies a real report and its VCEK (paths from the environment; it prints
// nothing when they are not set, so it has no Output check).
func ExampleVerifier_VerifySNP() {
	report, err1 := os.ReadFile(os.Getenv("ATTEST_EXAMPLE_REPORT"))
	vcek, err2 := os.ReadFile(os.Getenv("ATTEST_EXAMPLE_VCEK"))
	if err1 != nil || err2 != nil {
		return
	}
	v, err := attest.NewVerifier()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()
	verdict, err := v.VerifySNP(report, vcek, attest.WithTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println("accepted:", verdict.Product, verdict.Signer)
	fmt.Println(string(verdict.JSON))
}
