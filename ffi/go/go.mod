module github.com/attest-rs/attest/ffi/go

go 1.19
