#!/usr/bin/env bash
# Builds ffi/bench/bench_snp.c (-O2, release staticlib) and runs it pinned to one CPU.
#   ffi/bench/run.sh [calls per round] [rounds] [cpu]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p attest-ffi
out=target/release/ffi-bench-snp
gcc -std=c11 -O2 -Wall -Werror -I ffi/include ffi/bench/bench_snp.c target/release/libattest_ffi.a \
    -ldl -lpthread -lm -o "$out"
export ATTEST_TESTDATA="${ATTEST_TESTDATA:-$(cd .. && pwd)/shared/testdata}"
echo "uptime: $(uptime)"
taskset -c "${3:-1}" "$out" "${1:-2000}" "${2:-7}"
