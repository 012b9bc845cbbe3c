#!/usr/bin/env bash
# Creates the Python virtualenv `.venv` at the repository root with the third-party gRPC peers that the
# interop tests drive (docs/ARCHITECTURE.md, "Tests with real components"): `grpcio` (client and server) and `grpcio-tools` (protoc + Python stub
# generation at test time). Idempotent: pip runs only when a package is missing from the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  echo "setup-python: creating $venv"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import grpc, grpc_tools.protoc' 2>/dev/null; then
  echo "setup-python: installing grpcio, grpcio-tools into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'grpcio==1.*' 'grpcio-tools==1.*'
fi
"$venv/bin/python" -c 'import grpc; print("setup-python: grpcio", grpc.__version__, "ok")'
