#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 10) over its seed corpus; exits non-zero on the first crash,
# leak, timeout or build failure. Works on the stable toolchain (`-s none`: no sanitizer, libFuzzer's
# coverage instrumentation only). New inputs go to a scratch corpus, never into fuzz/corpus.
#
#   fuzz/smoke.sh            # 10 s per target
#   fuzz/smoke.sh 60         # 60 s per target
#   TARGETS="snp_report pem" fuzz/smoke.sh 30
set -euo pipefail

seconds="${1:-10}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz not found: cargo install cargo-fuzz --locked" >&2; exit 2; }

targets="${TARGETS:-$(cargo fuzz list)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

cargo fuzz build -s none
# Seeds derived from the real evidence are generated, not committed (fuzz/seed.py).
python3 "$here/seed.py" "$scratch/seeds"

failed=()
for t in $targets; do
    mkdir -p "$scratch/$t" "$here/artifacts/$t" "$here/corpus/$t" "$scratch/seeds/$t"
    echo "=== $t: ${seconds}s"
    # -timeout: one input taking longer than 10 s is a hang; -rss_limit_mb: libFuzzer's default 2048.
    if ! cargo fuzz run "$t" -s none "$scratch/$t" "$here/corpus/$t" "$scratch/seeds/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        2>"$scratch/$t.log"; then
        tail -n 60 "$scratch/$t.log" >&2
        echo "*** $t FAILED (artifacts in fuzz/artifacts/$t)" >&2
        failed+=("$t")
    else
        grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|Done)' "$scratch/$t.log" || true
    fi
done

if ((${#failed[@]})); then
    echo "crashing targets: ${failed[*]}" >&2
    exit 1
fi
echo "all targets ran ${seconds}s without a crash"
