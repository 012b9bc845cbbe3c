#!/usr/bin/env bash
# Regenerates ffi/include/attest.h with the pinned cbindgen, or with --check fails when the checked-in
# header differs from what the sources generate (CI). Installs cbindgen 0.29.0 from crates.io when missing
# (Debian's 0.24 cannot read edition-2024 `#[unsafe(no_mangle)]`).
set -euo pipefail
cd "$(dirname "$0")"
version=0.29.0
if ! cbindgen --version 2>/dev/null | grep -qx "cbindgen $version"; then
  echo "gen-header: installing cbindgen $version"
  cargo install cbindgen --version "$version" --locked --quiet
fi
out=include/attest.h
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp)
  trap 'rm -f "$tmp"' EXIT
  cbindgen --config cbindgen.toml --crate attest-ffi --output "$tmp" --quiet .
  if ! diff -u "$out" "$tmp"; then
    echo "gen-header: $out is stale; run ffi/gen-header.sh and commit the result" >&2
    exit 1
  fi
  echo "gen-header: $out is up to date"
else
  cbindgen --config cbindgen.toml --crate attest-ffi --output "$out" --quiet .
  echo "gen-header: wrote ffi/$out"
fi
