#!/usr/bin/env bash
# The long fuzzing runs: every target (or $TARGETS) for SECONDS (default 600) with one job, from
# the committed seeds plus the seeds fuzz/seed.py derives from the real evidence; the growing corpus lives in
# fuzz/corpus-work/<target> (not committed). After each run the work corpus is minimized by edge coverage
# (libFuzzer's set-cover merge) and fuzz/keep.py folds the minimized inputs into fuzz/corpus/<target>, within
# its size budget and except any derived from the real testdata (never copied into the repository). A summary
# line per target (executions, exec/s, coverage, corpus sizes, coverage of what is committed) is appended to
# fuzz/long-runs.log.
#
#   fuzz/long.sh                       # all targets, 10 minutes each
#   TARGETS="snp_report pem" fuzz/long.sh 1200
#   FOLD_ONLY=1 fuzz/long.sh           # no fuzzing: minimize fuzz/corpus-work again and fold (keep.py changed)
#   SKIP_SEEDS=1 …                     # a second instance at once (two cores, disjoint TARGETS)
set -euo pipefail

seconds="${1:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$(dirname "$here")"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz not found: cargo install cargo-fuzz --locked" >&2; exit 2; }

# Edge coverage of running a target once over the given corpus directories (no mutation, nothing written).
coverage() {
    local t="$1" scratch
    shift
    scratch="$(mktemp -d)"
    cargo fuzz run "$t" -s none "$scratch" "$@" -- -runs=0 2>&1 | grep -oP 'INITED cov: \K\d+' | tail -n1 || echo 0
    rm -rf "$scratch"
}

targets="${TARGETS:-$(cargo fuzz list)}"
seeds="$here/corpus-seeds"
cargo fuzz build -s none
# Only the first of two instances derives the seeds.
[ -n "${SKIP_SEEDS:-}${FOLD_ONLY:-}" ] || python3 "$here/seed.py" "$seeds"

for t in $targets; do
    work="$here/corpus-work/$t"
    mkdir -p "$work" "$here/corpus/$t" "$seeds/$t" "$here/artifacts/$t"
    log="$(mktemp)"
    status=ok execs=0 rate=0 cov=0 what="${seconds}s"
    if [ -n "${FOLD_ONLY:-}" ]; then
        what=fold-only
    else
        echo "=== $t: ${seconds}s ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
        if ! cargo fuzz run "$t" -s none "$work" "$here/corpus/$t" "$seeds/$t" -- \
            -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>"$log"; then
            tail -n 40 "$log" >&2
            status=FAILED
        fi
        execs=$(grep -oP '^stat::number_of_executed_units:\s*\K\d+' "$log" || echo 0)
        rate=$(grep -oP '^stat::average_exec_per_sec:\s*\K\d+' "$log" || echo 0)
        cov=$(grep -oP '#\d+\s+DONE\s+cov: \K\d+' "$log" || grep -oP 'cov: \K\d+' "$log" | tail -n1 || echo 0)
    fi
    # Minimize by edge coverage (a greedy set cover, hit counts ignored: libFuzzer's default merge keeps an
    # input per counter bucket, thousands per target) into a fresh directory; the work corpus keeps growing.
    minimized="$(mktemp -d)"
    cargo fuzz run "$t" -s none "$minimized" "$work" -- -set_cover_merge=1 -use_counters=0 >/dev/null 2>&1 || true
    kept=$(python3 "$here/keep.py" "$t" "$minimized")
    # Coverage (edges) of the whole minimized set and of what is committed (fuzz/keep.py's size budget).
    cov_min=$(coverage "$t" "$minimized" "$here/corpus/$t")
    cov_committed=$(coverage "$t" "$here/corpus/$t")
    echo "$(date -u +%FT%TZ) $t $what $status execs=$execs exec/s=$rate cov=$cov work=$(ls "$work" | wc -l) minimized=$(ls "$minimized" | wc -l) kept=$kept cov_minimized=$cov_min cov_committed=$cov_committed load=$(cut -d' ' -f1 /proc/loadavg)" \
        | tee -a "$here/long-runs.log"
    rm -rf "$minimized" "$log"
done
