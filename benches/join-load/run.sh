#!/usr/bin/env bash
# The join service under load, on 127.0.0.1 only, every step bounded in time.
#
# Builds release, writes a fixture (`join-load setup`: software AKs pinned in the AK registry file, signed
# measurements, salt, master secret, the key-service PKI, Kubernetes settings, kubeadm PKI) into a temp dir,
# starts a swtpm for the join service's own attestation (mutual aTLS: each handshake also costs one quote on it),
# `key-service` (mutual TLS) and `join-service` as processes on port 0 (addresses parsed from their `listening on`
# lines) and runs `join-load run` against them:
#
#   (a) throughput/latency: 16 and 64 concurrent clients, JOINS joins each (default 5000; bound 300 s each), after
#       the floor benchmark (benches/benches/join_floor.rs), and each run's CPU per join as a multiple of it; then
#       the transport floor (`join-load mtls`: JOINS fresh mutual-TLS connections + one gRPC call each to the key
#       service, its CPU per connection) and what a join costs beyond it;
#   (b) scaling: the join service pinned to 1 core vs 2 cores (`taskset`; the generator and the key service get the
#       other core, resp. share both), its tokio workers 1 vs 2 (TOKIO_WORKER_THREADS, unpinned), and the
#       validation path alone on 1 vs 2 threads (`join-load validate`);
#   (c) soak: SOAK seconds (default 600) at SOAK_RATE joins/s (default 50) from 16 clients, sampling the join
#       service's VmRSS every 10 s: first/last/max and the least-squares slope (all samples, second half);
#       SOAK_ATTACK=1 holds the attack of (d) (idle and slow-loris sockets) for the whole soak;
#   (d) attacked vs unattacked: JOINS/5 joins from 16 clients (one loopback address each) without an
#       attack, then with 1,100 idle sockets on the join service and 2,000 on the key service, with 400
#       slow-loris handshakes, and with both (`join-load attack`, a process of its own started 5 s before the
#       genuine load and held to its end; 150 attacker addresses, each socket re-opened 1 s after the server
#       closes it): the genuine success rate and latency, and the join service's admission counters.
#
# Each join-service instance is scraped for its /metrics counters before it stops (refusals must stay 0), and its
# CPU time (utime + stime from /proc/PID/stat) gives the cores it used and its CPU time per join. `uptime` is
# recorded before and after every run. The dry-run token issuer writes one Secret manifest per join (create, fsync,
# link, unlink) into TOKENS_BASE (default /dev/shm when it exists, else the temp dir); TOKENS_BASE=/tmp measures
# the same on the disk file system.
#
# Usage: benches/join-load/run.sh [--joins N] [--soak SECONDS] [--soak-rate R] [--skip-soak] [--only a|b|c|d]
# Environment: OUT=DIR keeps the raw JSON, logs and /metrics scrapes there (default: inside the temp dir, which is
# removed at exit along with the fixture); BIN=DIR uses prebuilt binaries; ACTIVATE=1 adds credential activation
# per join; PERF=SECONDS records `perf record --call-graph dwarf` of the join service for that long during the 16-client run
# (into OUT/perf-a.data).
# Output: Markdown tables on stdout; progress on stderr. Exit status 1 if any join failed or was refused.
set -euo pipefail
cd "$(dirname "$0")/../.."

JOINS=5000
SOAK=600
SOAK_RATE=50
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --joins) JOINS=$2; shift 2 ;;
    --soak) SOAK=$2; shift 2 ;;
    --soak-rate) SOAK_RATE=$2; shift 2 ;;
    --skip-soak) SOAK=0; shift ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d /tmp/join-load.XXXXXX)
out=${OUT:-$work/out}
mkdir -p "$out"
if [ -z "${TOKENS_BASE:-}" ]; then
  if [ -d /dev/shm ]; then TOKENS_BASE=/dev/shm; else TOKENS_BASE=$work; fi
fi
tokens_root=$(mktemp -d "$TOKENS_BASE/join-load-tokens.XXXXXX")
pids=()
sampler=""
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tokens_root" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "run.sh: $*" >&2; }
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
clk_tck=$(getconf CLK_TCK)

# BIN=DIR runs prebuilt join-service, key-service and join-load from DIR (a before/after comparison in one
# session: build each state once, copy its three binaries aside); otherwise build this tree's.
if [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  cargo build --release -q -p attest-joinservice -p attest-keyservice --bin join-service --bin key-service
  cargo build --release -q -p attest-benches --bin join-load
  bin=target/release
fi
fx=$work/fixture
$bin/join-load setup --dir "$fx" --aks 8 >&2

# The join service attests itself (mutual aTLS) with a TPM: a swtpm of its own on loopback.
# Its EK certificate comes from a local CA of this run (not /var/lib/swtpm-localca): the generator checks the
# service's AK by credential activation against it, as a joining qemu-vtpm node does.
tpm_dir=$work/join-service-tpm
ek_ca=$work/ek-ca
mkdir -p "$tpm_dir" "$ek_ca"
printf 'statedir = %s\nsigningkey = %s/signkey.pem\nissuercert = %s/issuercert.pem\ncertserial = %s/certserial\n' \
  "$ek_ca" "$ek_ca" "$ek_ca" "$ek_ca" >"$work/swtpm-localca.conf"
printf 'create_certs_tool = /usr/bin/swtpm_localca\ncreate_certs_tool_config = %s\ncreate_certs_tool_options = /etc/swtpm-localca.options\nactive_pcr_banks = sha256\n' \
  "$work/swtpm-localca.conf" >"$work/swtpm_setup.conf"
swtpm_setup --tpm2 --tpmstate "$tpm_dir" --createek --create-ek-cert --create-platform-cert --lock-nvram \
  --overwrite --config "$work/swtpm_setup.conf" >"$work/swtpm_setup.log" 2>&1
# Every join verifies the service's attestation in the handshake (mutual aTLS: the service quotes its swtpm for
# each client's nonce). ACTIVATE=1 also activates the service's AK per join, as a qemu-vtpm node does: two
# swtpm commands per join then make the TPM the bottleneck (≈ 17 joins/s here), so it is off by default.
if [ "${ACTIVATE:-0}" = 1 ]; then
  server_check=(--server-ek-ca "$ek_ca/swtpm-localca-rootca-cert.pem" --server-ek-ca "$ek_ca/issuercert.pem")
else
  server_check=(--verify-server)
fi
tpm_port=$(python3 -c 'import socket
for _ in range(64):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]; b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except (OSError, OverflowError): pass  # p + 1 taken, or p = 65535
    finally: a.close(); b.close()')
if [ -z "$tpm_port" ]; then echo "run.sh: no two adjacent free ports for swtpm" >&2; exit 1; fi
swtpm socket --tpm2 --tpmstate dir="$tpm_dir" --server type=tcp,port="$tpm_port",bindaddr=127.0.0.1 \
  --ctrl type=tcp,port=$((tpm_port + 1)),bindaddr=127.0.0.1 --flags not-need-init,startup-clear --daemon \
  --pid file="$tpm_dir/swtpm.pid"
for _ in $(seq 100); do [ -s "$tpm_dir/swtpm.pid" ] && break; sleep 0.05; done
tpm_pid=$(cat "$tpm_dir/swtpm.pid")
pids+=("$tpm_pid")
tpm_tcti="swtpm:host=127.0.0.1,port=$tpm_port"

# wait_listen FILE PID: the first `listening on ADDR` line of FILE (10 s bound).
wait_listen() {
  for _ in $(seq 100); do
    addr=$(sed -n 's/^listening on //p' "$1" | head -n 1)
    if [ -n "$addr" ]; then echo "$addr"; return 0; fi
    kill -0 "$2" 2>/dev/null || { log "process $2 exited early; its log:"; cat "${1%.out}.err" >&2; return 1; }
    sleep 0.1
  done
  log "no 'listening on' line in $1 after 10 s"; return 1
}

# start_key_service CPUS
start_key_service() {
  taskset -c "$1" $bin/key-service --listen 127.0.0.1:0 --master-secret "$fx/master-secret" --log-level warn \
    --tls-ca "$fx/kms-pki/ca.crt" --tls-cert "$fx/kms-pki/key-service.crt" --tls-key "$fx/kms-pki/key-service.key" \
    >"$out/key-service.out" 2>"$out/key-service.err" &
  ks_pid=$!; pids+=("$ks_pid")
  ks_addr=$(wait_listen "$out/key-service.out" "$ks_pid")
}

# forget PID: a stopped process leaves the cleanup list (its PID may be reused).
forget() {
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}

stop_key_service() { kill -TERM "$ks_pid"; wait "$ks_pid" || true; forget "$ks_pid"; }

# start_join_service LABEL CPUS [ENV…]: sets js_pid, js_addr, js_metrics.
start_join_service() {
  local label=$1 cpus=$2; shift 2
  mkdir -p "$tokens_root/$label"
  # A cluster state of its own per run (nodes bound to their AKs as they join).
  echo '{"version": 1}' >"$tokens_root/$label.cluster-state.json"
  env "$@" taskset -c "$cpus" $bin/join-service --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --key-service "$ks_addr" --measurements "$fx/measurements.json" --measurement-salt "$fx/measurement-salt" \
    --measurements-signature "$fx/measurements.json.sig" --measurements-public-key "$fx/measurements.pub" \
    --key-service-ca "$fx/kms-pki/ca.crt" --key-service-cert "$fx/kms-pki/join-service.crt" \
    --key-service-key "$fx/kms-pki/join-service.key" --tpm "$tpm_tcti" --kds-url offline \
    --ak-registry "$fx/aks.json" --pki-dir "$fx/pki" --kubernetes-config "$fx/kubernetes.json" \
    --api-server-endpoint 10.0.0.1:6443 --token-issuer dry-run --dry-run-dir "$tokens_root/$label" \
    --cluster-state "$tokens_root/$label.cluster-state.json" --log-level warn >"$out/js-$label.out" 2>"$out/js-$label.err" &
  js_pid=$!; pids+=("$js_pid")
  js_addr=$(wait_listen "$out/js-$label.out" "$js_pid")
  js_metrics=$(sed -n 's/^listening on //p' "$out/js-$label.out" | sed -n 2p)
}

# stop_join_service LABEL: scrapes /metrics, stops it, removes its tokens.
stop_join_service() {
  curl -s --max-time 5 "http://$js_metrics/metrics" >"$out/metrics-$1.txt" || true
  kill -TERM "$js_pid"; wait "$js_pid" || true; forget "$js_pid"
  rm -rf "${tokens_root:?}/$1"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure LABEL GEN_CPUS JOIN-LOAD-ARGS…: one `join-load run` against the current join service.
failed=0
measure() {
  local label=$1 cpus=$2; shift 2
  local la0 la1 c0 c1 t0 t1 rc=0
  la0=$(load_avg); c0=$(cpu_ticks "$js_pid"); t0=$(date +%s.%N)
  local k0 p0 k1 p1
  k0=$(cpu_ticks "$ks_pid"); p0=$(cpu_ticks "$tpm_pid")
  log "$label: join-load $* (load $la0)"
  # In the background and waited for, so that a signal to this script runs the cleanup trap at once.
  taskset -c "$cpus" $bin/join-load run --fixture "$fx" --addr "$js_addr" --json "${server_check[@]}" "$@" >"$out/$label.json" &
  local gen=$!; pids+=("$gen")
  wait "$gen" || rc=$?
  forget "$gen"
  t1=$(date +%s.%N); c1=$(cpu_ticks "$js_pid"); la1=$(load_avg)
  k1=$(cpu_ticks "$ks_pid"); p1=$(cpu_ticks "$tpm_pid")
  [ "$rc" -eq 0 ] || { failed=1; log "$label: join-load exited with $rc"; }
  python3 - "$out/$label.json" "$label" "$la0" "$la1" "$c0" "$c1" "$t0" "$t1" "$clk_tck" "$k0" "$k1" "$p0" "$p1" <<'PY'
import json, sys
path, label, la0, la1, c0, c1, t0, t1, tck, k0, k1, p0, p1 = sys.argv[1:]
r = json.load(open(path))
cpu = (float(c1) - float(c0)) / float(tck)
n = max(1, r["joins_ok"] + r["warmup_joins"])
# The key service (mutual TLS, HKDF) and the service's swtpm (one quote per handshake) run beside it.
r.update(key_service_cpu_ms_per_join=round((float(k1) - float(k0)) / float(tck) * 1000 / n, 3),
         tpm_cpu_ms_per_join=round((float(p1) - float(p0)) / float(tck) * 1000 / n, 3))
wall = float(t1) - float(t0)
r.update(label=label, load_before=la0, load_after=la1, server_cpu_s=round(cpu, 2),
         server_cores=round(cpu / wall, 2), server_cpu_ms_per_join=round(cpu * 1000 / max(1, r["joins_ok"] + r["warmup_joins"]), 2),
         client_cpu_ms_per_join=round(r["client_cpu_s"] * 1000 / max(1, r["joins_ok"] + r["warmup_joins"]), 2))
json.dump(r, open(path, "w"))
t = r["latency_ms"]["total"]
print(f'run.sh: {label}: {r["joins_ok"]} ok, {r["errors_total"]} errors, {r["throughput_per_s"]}/s, p50 {t["p50"]} ms, '
      f'p99 {t["p99"]} ms, server {r["server_cores"]} cores, {r["server_cpu_ms_per_join"]} ms CPU/join '
      f'(key service {r["key_service_cpu_ms_per_join"]}, swtpm {r["tpm_cpu_ms_per_join"]})', file=sys.stderr)
PY
}

# measure_transport CPUS: the transport floor — `join-load mtls` opens JOINS fresh mutual-TLS connections to the
# key service with one gRPC call each; the key service's CPU per connection goes to $out/transport.json.
measure_transport() {
  local k0 k1 rc=0
  k0=$(cpu_ticks "$ks_pid")
  log "transport: join-load mtls --connections $JOINS --concurrency 16 (load $(load_avg))"
  taskset -c "$1" $bin/join-load mtls --fixture "$fx" --addr "$ks_addr" --connections "$JOINS" --concurrency 16 --json \
    >"$out/transport-run.json" &
  local gen=$!; pids+=("$gen")
  wait "$gen" || rc=$?
  forget "$gen"
  k1=$(cpu_ticks "$ks_pid")
  [ "$rc" -eq 0 ] || { failed=1; log "transport: join-load mtls exited with $rc"; }
  python3 - "$out" "$k0" "$k1" "$clk_tck" <<'PY'
import json, os, sys
out, k0, k1, tck = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
r = json.load(open(os.path.join(out, "transport-run.json")))
r["key_service_cpu_ms_per_connection"] = round((k1 - k0) / tck * 1000 / max(1, r["ok"]), 3)
json.dump(r, open(os.path.join(out, "transport.json"), "w"))
print(f'run.sh: transport: {r["ok"]} connections, {r["errors"]} errors, {r["per_second"]:.1f}/s, key service '
      f'{r["key_service_cpu_ms_per_connection"]} ms CPU per connection', file=sys.stderr)
PY
}

check_metrics() {
  python3 - "$out/metrics-$1.txt" "$1" <<'PY' || failed=1
import re, sys
text = open(sys.argv[1]).read()
def total(name, label=None):
    return sum(float(v) for l, v in re.findall(r'^(%s(?:\{[^}]*\})?) (\S+)$' % name, text, re.M) if label is None or label in l)
issued, refused = total("attest_join_tickets_issued_total", 'kind="join"'), total("attest_join_refused_total")
rejected = total("attest_join_attestations_total", 'outcome="rejected"')
kerr = total("attest_join_key_service_calls_total", 'outcome="error"')
att = total("attest_join_attestation_seconds_sum") / max(1, total("attest_join_attestation_seconds_count"))
kms = total("attest_join_key_service_seconds_sum") / max(1, total("attest_join_key_service_seconds_count"))
print(f"run.sh: {sys.argv[2]}: /metrics joins issued {issued:.0f}, refused {refused:.0f}, attestations rejected {rejected:.0f}, "
      f"key service errors {kerr:.0f}; mean in-handshake validation {att * 1e3:.3f} ms, mean key service call {kms * 1e3:.3f} ms", file=sys.stderr)
sys.exit(1 if refused or rejected or kerr else 0)
PY
}

table() {
  python3 - "$out" "$@" <<'PY'
import json, os, sys
out, labels = sys.argv[1], sys.argv[2:]
print("| run | load before → after | joins ok | errors | joins/s | p50 ms | p90 ms | p99 ms | max ms | handshake p50 | rpc p50 | server cores | server CPU ms/join | joins/s per server core | key service CPU ms/join | swtpm CPU ms/join | generator CPU ms/join |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for label in labels:
    r = json.load(open(os.path.join(out, label + ".json")))
    t, h, c = r["latency_ms"]["total"], r["latency_ms"]["handshake"], r["latency_ms"]["rpc"]
    errors = r["errors_total"] + sum(r["warmup_errors"].values())
    print(f'| {label} | {r["load_before"]} → {r["load_after"]} | {r["joins_ok"]} | {errors} | {r["throughput_per_s"]} | '
          f'{t["p50"]} | {t["p90"]} | {t["p99"]} | {t["max"]} | {h["p50"]} | {c["p50"]} | {r["server_cores"]} | {r["server_cpu_ms_per_join"]} | '
          f'{round(r["throughput_per_s"] / r["server_cores"]) if r["server_cores"] else "–"} | {r.get("key_service_cpu_ms_per_join", "–")} | {r.get("tpm_cpu_ms_per_join", "–")} | {r.get("client_cpu_ms_per_join", "–")} |')
PY
}

# The cryptographic floor of one join (benches/benches/join_floor.rs), measured in this run before the load:
# the raw aws-lc-rs operations one join costs the join service, back to back (FLOOR=0 skips it and reuses the
# last estimate under target/criterion, if any).
floor_json=target/criterion/join_floor/all/new/estimates.json
if { [ -z "$ONLY" ] || [ "$ONLY" = a ]; } && [ "${FLOOR:-1}" != 0 ]; then
  log "floor: cargo bench -p attest-benches --bench join_floor (load $(load_avg))"
  cargo bench -q -p attest-benches --bench join_floor -- 'join_floor/' --warm-up-time 1 --measurement-time 5 \
    >"$out/floor.txt" 2>&1 || log "floor benchmark failed (see $out/floor.txt)"
fi

# floor_report LABEL…: each run's join-service CPU per join as a multiple of the floor.
floor_report() {
  [ -f "$floor_json" ] || { log "no floor estimate at $floor_json"; return 0; }
  python3 - "$out" "$floor_json" "$@" <<'PY'
import json, os, sys
out, floor_path, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
base = os.path.dirname(os.path.dirname(floor_path))
median = lambda path: json.load(open(path))["median"]["point_estimate"] / 1000.0
floor = median(floor_path)
parts = sorted(d for d in os.listdir(os.path.dirname(base)) if d != "all" and os.path.exists(os.path.join(os.path.dirname(base), d, "new", "estimates.json")))
print(f"Floor (`join_floor/all`, raw aws-lc-rs, back to back): **{floor:.1f} µs** per join; parts (µs): " +
      ", ".join(f"{p} {median(os.path.join(os.path.dirname(base), p, 'new', 'estimates.json')):.1f}" for p in parts))
print()
cpu = {label: json.load(open(os.path.join(out, label + ".json")))["server_cpu_ms_per_join"] * 1000 for label in labels}
print("| run | join-service CPU µs/join | floor µs | ratio (goal ≤ 1.3) |")
print("|---|---:|---:|---:|")
for label in labels:
    print(f"| {label} | {cpu[label]:.0f} | {floor:.1f} | {cpu[label] / floor:.2f} |")
print()
# Against the transport floor (a bare mutual-TLS connection + one gRPC call, measured on the key service):
# what a join adds to it, next to the cryptography a join adds to a bare handshake.
tpath = os.path.join(out, "transport.json")
if os.path.exists(tpath):
    t = json.load(open(tpath))["key_service_cpu_ms_per_connection"] * 1000
    added = ["server_credential", "quote", "csr_signature", "kubelet_signature", "ssh_ca", "key_service_mtls", "randomness"]
    known = {p: median(os.path.join(os.path.dirname(base), p, "new", "estimates.json")) for p in parts}
    f_att = sum(known.get(p, 0.0) for p in added)
    print(f"Transport floor (`join-load mtls`: fresh mutual TLS 1.3 + one gRPC call, key service CPU per connection): "
          f"**{t:.0f} µs**; cryptography a join adds to it ({', '.join(added)}): **{f_att:.1f} µs**")
    print()
    print("| run | join-service CPU µs/join | transport µs | join − transport µs | ÷ added cryptography |")
    print("|---|---:|---:|---:|---:|")
    for label in labels:
        print(f"| {label} | {cpu[label]:.0f} | {t:.0f} | {cpu[label] - t:.0f} | {(cpu[label] - t) / f_att:.2f} |")
    print()
PY
}

echo "# join-load $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, tokens on $TOKENS_BASE"
echo

# ---- (a) throughput and latency ----------------------------------------------------------------------------
if [ -z "$ONLY" ] || [ "$ONLY" = a ]; then
  start_key_service 0,1
  start_join_service a 0,1
  profiler=""
  if [ -n "${PERF:-}" ]; then
    # After the 3 s warm-up; bounded by its own duration.
    ( sleep 4; perf record -q -F 499 --call-graph dwarf,16384 -p "$js_pid" -o "$out/perf-a.data" -- sleep "$PERF" >/dev/null 2>&1 ) &
    profiler=$!
  fi
  measure a-c16 0,1 --concurrency 16 --joins "$JOINS" --duration 300 --warmup 3
  [ -n "$profiler" ] && wait "$profiler"
  measure a-c64 0,1 --concurrency 64 --joins "$JOINS" --duration 300 --warmup 3
  stop_join_service a; check_metrics a
  measure_transport 0,1
  stop_key_service
  echo "## (a) throughput and latency ($JOINS joins per run, 8 AKs, everything on cores 0,1)"
  echo
  table a-c16 a-c64
  echo
  floor_report a-c16 a-c64
fi

# ---- (b) scaling ---------------------------------------------------------------------------------------------
if [ -z "$ONLY" ] || [ "$ONLY" = b ]; then
  n=$(( JOINS * 3 / 5 ))
  for round in 1 2; do
    # Pinned: the join service alone on core 0, generator + key service on core 1; then all on both cores.
    start_key_service 1
    start_join_service "b-pin1-r$round" 0
    measure "b-pin1-r$round" 1 --concurrency 32 --joins "$n" --duration 120 --warmup 2
    stop_join_service "b-pin1-r$round"; check_metrics "b-pin1-r$round"
    stop_key_service
    start_key_service 0,1
    start_join_service "b-pin2-r$round" 0,1
    measure "b-pin2-r$round" 0,1 --concurrency 32 --joins "$n" --duration 120 --warmup 2
    stop_join_service "b-pin2-r$round"; check_metrics "b-pin2-r$round"
    # Unpinned, tokio workers 1 vs 2.
    start_join_service "b-w1-r$round" 0,1 TOKIO_WORKER_THREADS=1
    measure "b-w1-r$round" 0,1 --concurrency 32 --joins "$n" --duration 120 --warmup 2
    stop_join_service "b-w1-r$round"; check_metrics "b-w1-r$round"
    start_join_service "b-w2-r$round" 0,1 TOKIO_WORKER_THREADS=2
    measure "b-w2-r$round" 0,1 --concurrency 32 --joins "$n" --duration 120 --warmup 2
    stop_join_service "b-w2-r$round"; check_metrics "b-w2-r$round"
    stop_key_service
  done
  la0=$(load_avg)
  $bin/join-load validate --fixture "$fx" --threads 1,2 --per-thread 2000 --rounds 3 --json >"$out/b-validate.json" &
  gen=$!; pids+=("$gen"); wait "$gen"; forget "$gen"
  la1=$(load_avg)
  echo "## (b) scaling ($n joins per run, 32 clients; pin1 = join service on core 0 alone, generator + key service on core 1;"
  echo "pin2 = all three on cores 0,1; w1/w2 = unpinned, TOKIO_WORKER_THREADS=1/2)"
  echo
  table b-pin1-r1 b-pin2-r1 b-w1-r1 b-w2-r1 b-pin1-r2 b-pin2-r2 b-w1-r2 b-w2-r2
  echo
  python3 - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
get = lambda l: json.load(open(os.path.join(out, l + ".json")))
for a, b in [("pin1", "pin2"), ("w1", "w2")]:
    ra = [get(f"b-{a}-r{i}")["throughput_per_s"] for i in (1, 2)]
    rb = [get(f"b-{b}-r{i}")["throughput_per_s"] for i in (1, 2)]
    print(f"- {b} / {a} throughput: " + ", ".join(f"{y / x:.2f}" for x, y in zip(ra, rb)) + " (round 1, round 2)")
PY
  echo
  echo "Validation path alone (\`join-load validate\`, 2000 documents per thread, 3 rounds; load $la0 → $la1):"
  echo
  python3 - "$out/b-validate.json" <<'PY'
import json, statistics, sys
pts = json.load(open(sys.argv[1]))
print("| threads | validations/s (rounds) | median | on-CPU µs/validation | run-queue wait ms | blocked ms |")
print("|---:|---|---:|---:|---:|---:|")
by = {}
for p in pts:
    by.setdefault(p["threads"], []).append(p)
for t, ps in sorted(by.items()):
    print(f'| {t} | {", ".join(str(int(p["per_second"])) for p in ps)} | {statistics.median(p["per_second"] for p in ps):.0f} | '
          f'{statistics.median(p["cpu_us_per_validation"] for p in ps)} | {statistics.median(p["runqueue_ms"] for p in ps)} | '
          f'{statistics.median(p["blocked_ms"] for p in ps)} |')
if 1 in by and 2 in by:
    m = lambda t: statistics.median(p["per_second"] for p in by[t])
    print(f"\nScaling ratio (2 threads / 1 thread, medians): {m(2) / m(1):.2f}")
PY
  echo
fi

# ---- (c) soak --------------------------------------------------------------------------------------------------
if { [ -z "$ONLY" ] || [ "$ONLY" = c ]; } && [ "$SOAK" != 0 ]; then
  start_key_service 0,1
  start_join_service c 0,1
  rss_file=$out/c-rss.tsv
  : >"$rss_file"
  (
    start=$(date +%s)
    while kill -0 "$js_pid" 2>/dev/null; do
      echo -e "$(( $(date +%s) - start ))\t$(awk '/^VmRSS/ {print $2}' "/proc/$js_pid/status")\t$(cut -d' ' -f1 /proc/loadavg)" >>"$rss_file"
      sleep 10
    done
  ) &
  sampler=$!
  soak_attacker=""
  if [ "${SOAK_ATTACK:-0}" = 1 ]; then
    taskset -c 0,1 $bin/join-load attack --addr "$js_addr" --json --attack-idle 1100 --attack-slow 400 \
      --attack-kms "$ks_addr" --attack-kms-idle 2000 --attack-peers 150 >"$out/c-soak-attack.json" &
    soak_attacker=$!; pids+=("$soak_attacker")
    sleep 5
  fi
  measure c-soak 0,1 --concurrency 16 --rate "$SOAK_RATE" --duration "$SOAK" --warmup 0 --progress 60
  if [ -n "$soak_attacker" ]; then
    kill -TERM "$soak_attacker"; wait "$soak_attacker" || true; forget "$soak_attacker"
    log "c-soak attack: $(cat "$out/c-soak-attack.json")"
  fi
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=""
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$js_pid/status")
  stop_join_service c; check_metrics c
  stop_key_service
  echo "## (c) soak: $SOAK s at $SOAK_RATE joins/s, 16 clients$([ "${SOAK_ATTACK:-0}" = 1 ] && echo ", under the attack of (d) throughout")"
  echo
  table c-soak
  echo
  python3 - "$rss_file" "$hwm" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l.strip()]
t = [float(r[0]) for r in rows]; rss = [float(r[1]) for r in rows]; la = [float(r[2]) for r in rows]
def slope(ts, ys):
    n = len(ts)
    if n < 2: return 0.0
    mt, my = sum(ts) / n, sum(ys) / n
    den = sum((x - mt) ** 2 for x in ts)
    return sum((x - mt) * (y - my) for x, y in zip(ts, ys)) / den * 60 if den else 0.0
half = len(t) // 2
print(f"VmRSS (KiB), {len(rss)} samples every 10 s: first {rss[0]:.0f}, last {rss[-1]:.0f}, min {min(rss):.0f}, max {max(rss):.0f}, "
      f"VmHWM {sys.argv[2]}; slope {slope(t, rss):.1f} KiB/min over all samples, {slope(t[half:], rss[half:]):.1f} KiB/min "
      f"over the second half; load average (1 min) {min(la)}–{max(la)}.")
print()
print("Series (s: KiB): " + ", ".join(f"{int(a)}: {int(b)}" for a, b in zip(t, rss)))
PY
  echo
fi

# ---- (d) attacked vs unattacked ------------------------------------------------------------------------------
if [ -z "$ONLY" ] || [ "$ONLY" = d ]; then
  n=$(( JOINS / 5 ))
  start_key_service 0,1
  start_join_service d 0,1
  attack_idle=(--attack-idle 1100 --attack-kms "$ks_addr" --attack-kms-idle 2000 --attack-peers 150)
  attack_slow=(--attack-slow 400 --attack-peers 150)
  # attacked LABEL ATTACK-ARGS…: the attacker in a process of its own, then the genuine load, then the attacker's
  # report merged into the run's JSON.
  attacked() {
    local label=$1; shift
    taskset -c 0,1 $bin/join-load attack --addr "$js_addr" --json "$@" >"$out/$label-attack.json" &
    local attacker=$!; pids+=("$attacker")
    sleep 5
    measure "$label" 0,1 --concurrency 16 --joins "$n" --duration 300 --warmup 3
    kill -TERM "$attacker"; wait "$attacker" || true; forget "$attacker"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["attack"]=json.load(open(sys.argv[2])); json.dump(r, open(sys.argv[1], "w"))' \
      "$out/$label.json" "$out/$label-attack.json"
  }
  measure d-none 0,1 --concurrency 16 --joins "$n" --duration 300 --warmup 3
  attacked d-idle "${attack_idle[@]}"
  attacked d-slow "${attack_slow[@]}"
  attacked d-both "${attack_idle[@]}" --attack-slow 400
  stop_join_service d; check_metrics d
  stop_key_service
  echo "## (d) attacked vs unattacked ($n joins per run, 16 clients, one loopback address each; attackers on 150 other addresses)"
  echo
  python3 - "$out" "$out/metrics-d.txt" <<'PY'
import json, os, re, sys
out, metrics = sys.argv[1], open(sys.argv[2]).read()
what = {"d-none": "no attack", "d-idle": "1,100 idle sockets on the join service + 2,000 on the key service",
        "d-slow": "400 slow-loris handshakes on the join service", "d-both": "all of them"}
print("| run | attack | genuine joins ok / tried | success rate | joins/s | p50 ms | p99 ms | max ms | attacker sockets opened (re-opened) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for label, text in what.items():
    r = json.load(open(os.path.join(out, label + ".json")))
    t = r["latency_ms"]["total"]
    tried = r["joins_ok"] + r["errors_total"]
    a = r.get("attack")
    att = f'{a["opened"]} ({a["closed_by_server"]})' if a else "–"
    print(f'| {label} | {text} | {r["joins_ok"]} / {tried} | {100.0 * r["joins_ok"] / max(1, tried):.2f} % | {r["throughput_per_s"]} | '
          f'{t["p50"]} | {t["p99"]} | {t["max"]} | {att} |')
print()
ev = dict(re.findall(r'^attest_admission_events_total\{server="join",event="(\w+)"\} (\d+)$', metrics, re.M))
print("Join service admission over the four runs (`/metrics`, `attest_admission_events_total{server=\"join\"}`): " +
      ", ".join(f"{k} {v}" for k, v in ev.items()))
PY
  echo
fi

if [ "$failed" -ne 0 ]; then log "some joins failed or were refused (see $out)"; exit 1; fi
