#!/usr/bin/env bash
# Builds the static library and runs the Go package's vet and tests (cgocheck=2 and -race) in GOPATH mode
# with Debian's golang-go: no module downloads (the package uses only the standard library).
#   ffi/go/test.sh            tests
#   ffi/go/test.sh -bench .   also benchmarks (extra arguments go to `go test`)
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "ffi/go: go is required (apt-get install golang-go)" >&2; exit 1; }
cargo build --release -q -p attest-ffi
export GO111MODULE=off GOFLAGS= GOPROXY=off
export GOPATH="${GOPATH_OVERRIDE:-$(cd ../.. && pwd)/target/gopath}"
export GOCACHE="${GOCACHE:-$(cd ../.. && pwd)/target/gocache}"
mkdir -p "$GOPATH" "$GOCACHE"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "ffi/go: gofmt needed: $unformatted" >&2; exit 1; }
go vet .
GODEBUG=cgocheck=2 go test -count=1 "$@" .
go test -race -count=1 -run . .
