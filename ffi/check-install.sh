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
# The SONAME carries the ABI major (ffi/src/abi.rs); the unversioned name is the link-time symlink.
major=$(sed -n 's/^pub const ATTEST_ABI_VERSION_MAJOR: u32 = \([0-9]*\);/\1/p' src/abi.rs)
soname=$(objdump -p "$prefix/lib/libattest_ffi.so.$major" | awk '/SONAME/ {print $2}')
[ "$soname" = "libattest_ffi.so.$major" ] || { echo "check-install: SONAME is '$soname', want libattest_ffi.so.$major" >&2; exit 1; }
[ "$(readlink "$prefix/lib/libattest_ffi.so")" = "libattest_ffi.so.$major" ]
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Werror -I tests/c tests/c/api.c $(pkg-config --cflags --libs attest) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/api-shared"
"$prefix/api-shared"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Werror -I tests/c tests/c/api.c $(pkg-config --cflags attest) "$prefix/lib/libattest_ffi.a" \
    $(pkg-config --static --libs-only-other --libs-only-l attest | sed 's/-lattest_ffi//') -o "$prefix/api-static"
"$prefix/api-static"
echo "check-install: ok (pkg-config attest $(pkg-config --modversion attest), SONAME $soname)"
