#!/usr/bin/env bash
# Installable: `cargo install --path shell/cli` into a scratch root runs and prints its version and commit;
# `cargo package` (with its verification build) succeeds for the crates meant for reuse: the engine,
# measurements, proto, the validator factory and the C ABI (whose normal dependencies hold no HTTP client,
# async runtime or service crate: checked below).
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
# README's "Verify your first report", command by command as a new user runs it, with the installed attest
# first on PATH and its scratch directory in place of /tmp/first: each command must exit as its comment
# says ("exit N"; no comment: 0), so the first screen of README cannot drift from what the CLI does.
first=$(mktemp -d)
trap 'rm -rf "$root" "$first"' EXIT
block=$(awk '/^## Verify your first report/ {s = 1} s && /^```sh/ {b = 1; next} b && /^```/ {exit} b' README.md)
[ -n "$block" ] || { echo "check-packaging: README has no 'Verify your first report' block" >&2; exit 1; }
ran=0
while IFS= read -r cmd; do
  [ -n "$cmd" ] || continue
  want=$(grep -o 'exit [0-9]' <<<"$cmd" | tail -n 1 | cut -d' ' -f2 || true)
  set +e
  PATH="$root/bin:$PATH" bash -c "${cmd//\/tmp\/first/$first}" >"$first/out" 2>&1
  got=$?
  set -e
  if [ "$got" != "${want:-0}" ]; then
    echo "check-packaging: README's first report: exit $got (README says ${want:-0}): $cmd" >&2
    cat "$first/out" >&2
    exit 1
  fi
  ran=$((ran + 1))
done < <(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' <<<"$block")
[ "$ran" -ge 3 ] || { echo "check-packaging: README's first report has $ran commands, expected 3" >&2; exit 1; }
echo "check-packaging: README's first report ok ($ran commands)"
# The C library links the engine and the validator factory, never the services' side.
service=$(cargo tree --locked -q -p attest-ffi -e normal --prefix none \
  | grep -E '^(hyper|hyper-util|reqwest|tokio|clap|attest-(trust|kds|util|grpc|atls|attester)) ' | sort -u || true)
[ -z "$service" ] || { echo "check-packaging: attest-ffi links service code:" >&2; echo "$service" >&2; exit 1; }
crates=(attest-engine attest-measurements attest-proto attest-validators attest-ffi)
args=()
for c in "${crates[@]}"; do args+=(-p "$c"); done
# The verification builds read the packaged crates from a local overlay registry that cargo extracts into
# $CARGO_HOME/registry/src/-<hash of the overlay's path>/NAME-VERSION, and cargo treats a registry crate of a
# given name and version as immutable: it never re-extracts it and reuses its compiled artifacts. A tree
# packaged earlier from the same path (an earlier clone, an earlier commit) would then verify against stale
# sources. So the overlay's extracted copies of this workspace's crates are removed first (crates.io's
# directory is not touched), and the verification builds in a target directory of their own, made afresh.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
for c in "${crates[@]}"; do
  rm -rf "$cargo_home"/registry/src/-*/"$c"-[0-9]*
done
verify_target=target/package-verify
rm -rf "$verify_target"
CARGO_TARGET_DIR="$verify_target" cargo package --quiet --locked --allow-dirty "${args[@]}"
for c in "${crates[@]}"; do
  ls "$verify_target/package/$c-"*.crate >/dev/null
done
echo "check-packaging: cargo package ok (${crates[*]})"
