#!/usr/bin/env bash
# Installs the C library into target/go-prefix (make -C ffi install) and runs the Go module's vet and tests
# (cgocheck=2 and -race) against it through pkg-config, in module mode with no module downloads (the module
# uses only the standard library): GOFLAGS=-mod=mod GOPROXY=off.
#   ffi/go/test.sh            tests
#   ffi/go/test.sh -bench .   also benchmarks (extra arguments go to `go test`)
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "ffi/go: go is required (apt-get install golang-go)" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "ffi/go: pkg-config is required" >&2; exit 1; }
root=$(cd ../.. && pwd)
# A fixed prefix, reinstalled each run: Go's build cache keeps the -L path pkg-config gave when the package
# was first compiled, so a fresh temporary prefix per run would send a cached build to a deleted directory.
prefix="$root/target/go-prefix"
rm -rf "$prefix"
make -s -C .. install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off
export GOPATH="${GOPATH_OVERRIDE:-$root/target/gopath}"
export GOCACHE="${GOCACHE:-$root/target/gocache-module}"
mkdir -p "$GOPATH" "$GOCACHE"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "ffi/go: gofmt needed: $unformatted" >&2; exit 1; }
go vet ./...
GODEBUG=cgocheck=2 go test -count=1 "$@" ./...
go test -race -count=1 -run . ./...
