#!/usr/bin/env bash
# The side-by-side test (run.py): builds the three columns — the `attest` CLI (debug), a C program against
# the installed C library (make -C ffi install into target/go-prefix, as ffi/go/test.sh does, so Go's build
# cache stays valid) and a Go program over the Go package — and runs one table of inputs through all three.
# Without Go the Go column is left out with a NOTICE (a failure under CI=true).
#   ffi/tests/side-by-side/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"
cargo build -q -p attest-cli --bin attest
prefix="$root/target/go-prefix"
rm -rf "$prefix"
make -s -C ffi install PREFIX="$prefix" >/dev/null
out="$root/target/side-by-side"
mkdir -p "$out"
# The C program as a user compiles it: the installed header and library through pkg-config, warnings as errors.
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -I ffi/tests/c "$here/driver.c" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs attest) -Wl,-rpath,"$prefix/lib" \
  -o "$out/driver-c"
go=()
if command -v go >/dev/null; then
  (
    cd ffi/go
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig" GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off
    export GOPATH="$root/target/gopath" GOCACHE="${GOCACHE:-$root/target/gocache-module}"
    mkdir -p "$GOPATH" "$GOCACHE"
    go build -ldflags "-r $prefix/lib" -o "$out/driver-go" ./internal/sidebyside
  )
  go=(--go "$out/driver-go")
elif [ "${CI:-}" = true ]; then
  echo "side-by-side: go is required under CI=true (apt-get install golang-go)" >&2
  exit 1
else
  echo "NOTICE: side-by-side: no go; the Go column is left out (apt-get install golang-go)"
fi
python3 "$here/run.py" --cli target/debug/attest --c "$out/driver-c" "${go[@]}"
