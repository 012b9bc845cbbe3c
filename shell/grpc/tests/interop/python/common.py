"""Shared by the interop peers: generates the grpctest stubs with grpc_tools.protoc into a temporary
directory (nothing generated is checked in), imports them and removes the directory."""
import importlib
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.normpath(os.path.join(HERE, ".."))


def load_stubs():
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="grpctest-stubs-")
    # grpc_tools ships the well-known types next to its module.
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", os.path.join(PROTO_DIR, "grpctest.proto")])
    if rc != 0:
        raise SystemExit(f"protoc failed with {rc}")
    sys.path.insert(0, out)
    try:
        return importlib.import_module("grpctest_pb2"), importlib.import_module("grpctest_pb2_grpc")
    finally:
        # Both modules are loaded now; the directory is not needed (and a peer killed by its test would
        # never run an exit handler).
        sys.path.remove(out)
        shutil.rmtree(out, ignore_errors=True)
