"""grpcio client against our Rust server (shell/grpc/tests/grpc_interop_python.rs starts the server and runs this
with the address as argument). Prints one line per check and a closing 'N passed, N failed' line; exits 1 on
any failure."""
import concurrent.futures
import sys
import time
import traceback

import grpc

from common import load_stubs

pb, pb_grpc = load_stubs()
ADDR = sys.argv[1]
CODES = {sc.value[0]: sc for sc in grpc.StatusCode}
results = []


def check(name):
    def wrap(fn):
        try:
            fn()
            results.append((name, None))
            print(f"PASS {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and keep going
            results.append((name, e))
            print(f"FAIL {name}: {e!r}", flush=True)
            traceback.print_exc()
        return fn
    return wrap


def expect_error(fn, code, details=None):
    try:
        fn()
    except grpc.RpcError as e:
        assert e.code() == code, f"expected {code}, got {e.code()} ({e.details()!r})"
        if details is not None:
            assert e.details() == details, f"details {e.details()!r} != {details!r}"
        return e
    raise AssertionError(f"expected {code}, call succeeded")


channel = grpc.insecure_channel(ADDR)
stub = pb_grpc.TestStub(channel)
grpc.channel_ready_future(channel).result(timeout=10)


@check("unary echo with ascii and -bin metadata")
def _():
    md = (("x-user", "alice"), ("x-blob-bin", b"\x00\x01\xfe\xff"))
    reply, call = stub.Echo.with_call(pb.EchoRequest(payload=b"hello"), metadata=md, timeout=10)
    assert reply.payload == b"hello"
    got = dict(call.initial_metadata())
    assert got.get("x-user") == "alice", got
    assert got.get("x-blob-bin") == b"\x00\x01\xfe\xff", got
    assert call.code() == grpc.StatusCode.OK


@check("empty request and reply messages")
def _():
    assert stub.Echo(pb.EchoRequest(), timeout=10) == pb.EchoReply()


@check("unknown method -> UNIMPLEMENTED")
def _():
    expect_error(lambda: stub.Missing(pb.EchoRequest(), timeout=10), grpc.StatusCode.UNIMPLEMENTED)
    raw = channel.unary_unary("/grpctest.Nope/Echo")
    expect_error(lambda: raw(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED)


@check("every status code with UTF-8 messages and trailing metadata")
def _():
    for value, code in CODES.items():
        if value == 0:
            continue
        for msg in ["plain", "100% sure", "ünïcödé — 日本語 🚀", "line\nbreak\ttab"]:
            e = expect_error(lambda: stub.Echo(pb.EchoRequest(fail_code=value, fail_message=msg), timeout=10),
                             code, msg)
            assert dict(e.trailing_metadata()).get("x-fail") == "yes"


@check("undecodable request -> INTERNAL")
def _():
    raw = channel.unary_unary("/grpctest.Test/Echo")
    expect_error(lambda: raw(b"\xff\xff\xff", timeout=10), grpc.StatusCode.INTERNAL)


@check("gzip-compressed request -> UNIMPLEMENTED")
def _():
    expect_error(lambda: stub.Echo(pb.EchoRequest(payload=b"z" * 100), timeout=10,
                                   compression=grpc.Compression.Gzip), grpc.StatusCode.UNIMPLEMENTED)


@check("deadline -> DEADLINE_EXCEEDED")
def _():
    start = time.monotonic()
    expect_error(lambda: stub.Echo(pb.EchoRequest(sleep_ms=5000), timeout=0.2), grpc.StatusCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - start < 2


@check("3 MB message both ways")
def _():
    reply = stub.Echo(pb.EchoRequest(payload=b"m" * 3_000_000), timeout=20)
    assert len(reply.payload) == 3_000_000


@check("5 MiB message -> RESOURCE_EXHAUSTED, channel still usable")
def _():
    expect_error(lambda: stub.Echo(pb.EchoRequest(payload=b"x" * (5 * 1024 * 1024)), timeout=20),
                 grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert stub.Echo(pb.EchoRequest(payload=b"after"), timeout=10).payload == b"after"


@check("100 concurrent calls on one channel")
def _():
    futures = [stub.Echo.future(pb.EchoRequest(payload=str(i).encode(), sleep_ms=100), timeout=20)
               for i in range(100)]
    start = time.monotonic()
    for i, f in enumerate(futures):
        assert f.result().payload == str(i).encode()
    # Concurrent, not sequential (100 × 100 ms).
    assert time.monotonic() - start < 5


@check("server streaming")
def _():
    replies = list(stub.Stream(pb.EchoRequest(payload=b"s", count=20), metadata=(("x-s", "v"),), timeout=10))
    assert [r.index for r in replies] == list(range(20))
    assert all(r.payload == b"s" for r in replies)
    assert list(stub.Stream(pb.EchoRequest(count=0), timeout=10)) == []


@check("server streaming: messages then error status")
def _():
    got = []

    def run():
        for r in stub.Stream(pb.EchoRequest(count=3, fail_code=10, fail_message="stop ✋"), timeout=10):
            got.append(r.index)
    expect_error(run, grpc.StatusCode.ABORTED, "stop ✋")
    assert got == [0, 1, 2]


@check("server streaming: deadline")
def _():
    def run():
        for _ in stub.Stream(pb.EchoRequest(count=100, sleep_ms=50), timeout=0.3):
            pass
    expect_error(run, grpc.StatusCode.DEADLINE_EXCEEDED)


@check("server streaming: client cancel")
def _():
    it = stub.Stream(pb.EchoRequest(count=1000, sleep_ms=5), timeout=10)
    assert next(it).index == 0
    it.cancel()
    assert stub.Echo(pb.EchoRequest(payload=b"ok"), timeout=10).payload == b"ok"


@check("large streamed replies")
def _():
    replies = list(stub.Stream(pb.EchoRequest(count=5, reply_size=1_000_000), timeout=20))
    assert [len(r.payload) for r in replies] == [1_000_000] * 5


passed = sum(1 for _, e in results if e is None)
failed = len(results) - passed
print(f"{passed} passed, {failed} failed", flush=True)
channel.close()
sys.exit(1 if failed else 0)
