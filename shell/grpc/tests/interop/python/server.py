"""grpcio server for our Rust client (shell/grpc/tests/grpc_interop_python.rs). Binds 127.0.0.1 on a free port,
prints 'PORT <n>', and serves until its standard input closes (the test's end) or it is killed."""
import sys
import threading
import time
from concurrent import futures

import grpc

from common import load_stubs

pb, pb_grpc = load_stubs()
CODES = {sc.value[0]: sc for sc in grpc.StatusCode}


def echo_metadata(context):
    return tuple((k, v) for k, v in context.invocation_metadata() if k.startswith("x-"))


def reply_payload(req):
    return b"r" * req.reply_size if req.reply_size else req.payload


def fail(req, context):
    context.set_trailing_metadata((("x-fail", "yes"),))
    context.abort(CODES.get(req.fail_code, grpc.StatusCode.UNKNOWN), req.fail_message)


class Test(pb_grpc.TestServicer):
    def Echo(self, req, context):
        context.send_initial_metadata(echo_metadata(context))
        if req.sleep_ms:
            deadline = time.monotonic() + req.sleep_ms / 1000
            while time.monotonic() < deadline and context.is_active():
                time.sleep(0.01)
        if req.fail_code:
            fail(req, context)
        return pb.EchoReply(payload=reply_payload(req))

    def Stream(self, req, context):
        context.send_initial_metadata(echo_metadata(context))
        for i in range(req.count):
            if req.sleep_ms:
                time.sleep(req.sleep_ms / 1000)
            if not context.is_active():
                return
            yield pb.EchoReply(payload=reply_payload(req), index=i)
        if req.fail_code:
            fail(req, context)


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=120), maximum_concurrent_rpcs=200)
    pb_grpc.add_TestServicer_to_server(Test(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), server.stop(0)), daemon=True).start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
