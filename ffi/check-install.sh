#!/usr/bin/env bash
# Installs the library into a scratch prefix with `make -C ffi install` and builds and runs the C API test
# against it through pkg-config, shared and static.
set -euo pipefail
cd "$(dirname "$0")"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
make -s -C . install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists attest
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Werror -I tests/c tests/c/api.c $(pkg-config --cflags --libs attest) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/api-shared"
"$prefix/api-shared"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Werror -I tests/c tests/c/api.c $(pkg-config --cflags attest) "$prefix/lib/libattest_ffi.a" \
    $(pkg-config --static --libs-only-other --libs-only-l attest | sed 's/-lattest_ffi//') -o "$prefix/api-static"
"$prefix/api-static"
echo "check-install: ok (pkg-config attest $(pkg-config --modversion attest))"
