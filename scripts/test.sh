#!/usr/bin/env bash
# The whole test suite: formatting, lints, docs, unit/integration tests with both crypto providers, and a
# one-iteration smoke run of every benchmark. `make test` runs this after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# One build per configuration, never edited in place: incremental caches would only add GiBs to the build tree.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step() { echo; echo "=== $* ==="; }

disk() { echo "disk: $(df -h --output=avail . | tail -n 1 | tr -d ' ') free"; du -sh target fuzz/target 2>/dev/null || true; }
step "disk before"
disk

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (workspace, -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo clippy (engine with the ring provider only)"
cargo clippy -p attest-engine --no-default-features --features ring --all-targets -- -D warnings
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
step "cargo test (workspace)"
cargo test --workspace
step "cargo test (engine, aws-lc-rs and ring providers)"
cargo test -p attest-engine --features ring
step "cargo test (engine, ring provider only)"
cargo test -p attest-engine --no-default-features --features ring
step "the main job on SIMULATED SEV-SNP and TDX hardware (test roots): azure-sev-snp, aws-sev-snp, gcp-sev-snp, qemu-tdx, azure-tdx"
# Debug binaries built with the feature dangerous-test-roots (the only builds that trust test roots), kept in
# target/simulated-debug for the plain demo's SNP attacks, then rebuilt without it, so that target/debug is a
# default build again.
simulated="attest-cli/dangerous-test-roots,attest-joinservice/dangerous-test-roots,attest-bootstrapper/dangerous-test-roots"
cargo build -q --features "$simulated" --bin attest --bin key-service --bin join-service --bin attest-bootstrapper \
  --bin attest-hwsim
rm -rf target/simulated-debug && mkdir -p target/simulated-debug
cp target/debug/attest target/debug/key-service target/debug/join-service target/debug/attest-bootstrapper \
  target/debug/attest-hwsim target/simulated-debug/
for variant in azure-sev-snp aws-sev-snp gcp-sev-snp qemu-tdx azure-tdx; do
  python3 scripts/demo-cluster.py target/simulated-debug --variant "$variant"
done
step "the main job: local attested cluster on loopback (scripts/demo-cluster.py, debug binaries)"
cargo build -q --bin attest --bin key-service --bin join-service --bin attest-bootstrapper
python3 scripts/demo-cluster.py target/debug --snp-attacks target/simulated-debug
step "deployment: every kustomization rendered, validated against Kubernetes' schemas, security checks (scripts/check-deploy.py)"
.venv/bin/python scripts/check-deploy.py --self-test
step "container images: two builds give one digest; runc runs both services (scripts/container-test.py)"
# The debug binaries just built (no second, release build in CI); `make images` builds the release ones.
python3 scripts/container-test.py target/debug
step "crash matrix: a crash at every persistence point, SIGKILL and power cut (scripts/crash-matrix.py)"
# Debug binaries built with the feature fault-injection (the only builds that honour ATTEST_FAULT_POINTS), kept in
# target/fault-debug, then rebuilt without it, so that target/debug is a default build again.
faults="attest-bootstrapper/fault-injection,attest-joinservice/fault-injection,attest-keyservice/fault-injection"
cargo build -q --features "$faults" --bin attest-bootstrapper --bin join-service --bin key-service
rm -rf target/fault-debug && mkdir -p target/fault-debug
cp target/debug/attest-bootstrapper target/debug/join-service target/debug/key-service target/fault-debug/
cargo build -q --bin attest --bin attest-bootstrapper --bin join-service --bin key-service
cp target/debug/attest target/fault-debug/
python3 scripts/crash-matrix.py target/fault-debug
step "ffi: attest.h matches the sources (pinned cbindgen 0.29.0, installed when missing)"
ffi/gen-header.sh --check
step "ffi: make install + pkg-config, C program linked shared and static"
ffi/check-install.sh
step "ffi: Go module (cgo via pkg-config against the installed library, module mode, no module downloads)"
ffi/go/test.sh
step "side by side: one table of real, refused and malformed inputs through the CLI, C and Go (ffi/tests/side-by-side)"
ffi/tests/side-by-side/run.sh
step "installable: cargo install --path shell/cli (attest --version, README's first report), cargo package of engine, measurements, proto, validators, ffi"
scripts/check-packaging.sh
if [ -d benches/benches ]; then
  step "benchmark smoke run (each benchmark once)"
  cargo bench -p attest-benches -- --test
fi
if [ -x fuzz/smoke.sh ]; then
  step "fuzz smoke run (5 s per target; long runs: fuzz/README.md)"
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
  fuzz/smoke.sh 5
fi
step "disk after"
disk
echo; echo "all tests passed"
