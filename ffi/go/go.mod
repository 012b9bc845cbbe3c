module attest

go 1.19
