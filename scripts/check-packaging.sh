#!/usr/bin/env bash
# Installable: `cargo install --path shell/cli` into a scratch root runs and prints its version and commit;
# `cargo package` (with its verification build) succeeds for the crates meant for reuse. attest-ffi is not
# packaged for crates.io (it depends on attest-trust and, through its service feature, on unpublished shell
# crates; ffi/Cargo.toml says why): the C library installs from the tree (ffi/check-install.sh).
#   scripts/check-packaging.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# --debug and the workspace's target directory: the install reuses what the tests built.
cargo install --quiet --locked --debug --path shell/cli --root "$root" --target-dir target
version=$("$root/bin/attest" --version)
echo "check-packaging: cargo install ok: $version"
[[ "$version" =~ ^attest\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ ([0-9a-f]{12}|unknown)\)$ ]] || {
  echo "check-packaging: unexpected --version output: $version" >&2
  exit 1
}
"$root/bin/attest" --help | grep -q "Exit status:" || { echo "check-packaging: --help lacks the exit-status table" >&2; exit 1; }
cargo package --quiet --locked --allow-dirty -p attest-engine -p attest-measurements -p attest-proto
for c in attest-engine attest-measurements attest-proto; do
  ls "target/package/$c-"*.crate >/dev/null
done
echo "check-packaging: cargo package ok (attest-engine, attest-measurements, attest-proto)"
