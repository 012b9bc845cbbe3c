#!/usr/bin/env bash
# Side-by-side h2load run: attest's hand-rolled gRPC server (benches/src/bin/grpc-bench-server.rs) vs a tonic
# server with the same proto and response (benches/grpc/tonic-server), both serving join.API/IssueJoinTicket
# over h2c on 127.0.0.1. Scenarios: 1 client × 1 stream, 10 clients × 10 streams, 1 client × 100 streams;
# DURATION seconds each (default 5) after a 1 s warm-up, RUNS runs (default 3) alternating servers.
# Prints a Markdown table of medians (req/s, p50, p99 from h2load's per-request log) and ratios.
# Needs h2load (Debian nghttp2-client) and python3. Usage: benches/grpc/run.sh [RUNS] [DURATION]
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
DURATION=${2:-5}
OURS_PORT=${OURS_PORT:-50551}
TONIC_PORT=${TONIC_PORT:-50552}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

command -v h2load >/dev/null || { echo "run.sh: h2load missing (apt-get install nghttp2-client)" >&2; exit 1; }
cargo build --release -q -p attest-benches --bin grpc-bench-server
CARGO_TARGET_DIR="$PWD/target/tonic-bench" cargo build --release -q --manifest-path benches/grpc/tonic-server/Cargo.toml

target/release/grpc-bench-server "$OURS_PORT" >/dev/null & pids+=($!)
target/tonic-bench/release/attest-tonic-bench-server "$TONIC_PORT" >/dev/null & pids+=($!)
sleep 1

# The request: prefix + IssueJoinTicketRequest{disk_uuid (36 chars), certificate_request (300 bytes)}.
python3 - "$work/req.bin" <<'PY'
import struct, sys
def field(tag, b):
    n, v = len(b), b""
    while True:
        x, n = n & 0x7F, n >> 7
        v += bytes([x | 0x80 if n else x])
        if not n: break
    return bytes([tag << 3 | 2]) + v + b
m = field(1, b"8e0c3b2a-5f7d-4a61-9c3e-2b1d4f6a7e90") + field(2, bytes(range(256)) + bytes(44))
open(sys.argv[1], "wb").write(b"\0" + struct.pack(">I", len(m)) + m)
PY

scenarios=("1x1:-c1 -m1" "10x10:-c10 -m10" "1x100:-c1 -m100")
for run in $(seq "$RUNS"); do
  for sc in "${scenarios[@]}"; do
    name=${sc%%:*}; args=${sc#*:}
    for server in ours tonic; do
      port=$OURS_PORT; [ "$server" = tonic ] && port=$TONIC_PORT
      log="$work/$server-$name-$run"
      # shellcheck disable=SC2086
      h2load $args -t1 -D "$DURATION" --warm-up-time=1 -d "$work/req.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$log.tsv" \
        "http://127.0.0.1:$port/join.API/IssueJoinTicket" >"$log.out" 2>&1
      grep -q ' 0 failed, 0 errored' "$log.out" || { cat "$log.out" >&2; echo "run.sh: $server $name had failures" >&2; exit 1; }
      echo "run $run $name $server: $(grep -o '[0-9.]* req/s' "$log.out")" >&2
    done
  done
done

python3 - "$work" "$RUNS" <<'PY'
import glob, os, re, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
def stats(server, name):
    rps, p50, p99 = [], [], []
    for run in range(1, runs + 1):
        base = os.path.join(work, f"{server}-{name}-{run}")
        out = open(base + ".out").read()
        rps.append(float(re.search(r"([0-9.]+) req/s", out).group(1)))
        lat = sorted(int(l.split("\t")[2]) for l in open(base + ".tsv") if l.strip())
        p50.append(lat[len(lat) // 2]); p99.append(lat[min(len(lat) - 1, int(len(lat) * 0.99))])
    return statistics.median(rps), statistics.median(p50), statistics.median(p99)
print("| scenario | ours req/s | tonic req/s | ratio | ours p50 µs | tonic p50 µs | ours p99 µs | tonic p99 µs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in ["1x1", "10x10", "1x100"]:
    o, t = stats("ours", name), stats("tonic", name)
    print(f"| {name} | {o[0]:.0f} | {t[0]:.0f} | {o[0] / t[0]:.2f} | {o[1]:.0f} | {t[1]:.0f} | {o[2]:.0f} | {t[2]:.0f} |")
PY
