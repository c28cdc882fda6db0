#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The gRPC server and client of tests/capture/h2/grpc.cap (Debian's
python3-grpcio; raw bytes, no generated code).

    grpc_pair.py server PORT     serves termline.test.Echo on 127.0.0.1:PORT
                                 until stdin closes
    grpc_pair.py client PORT     makes the calls below on one channel, exits 0
                                 when every one came back as expected

Calls, each with metadata x-request-id: grpc-<n>:
  1 Say("hello")      -> OK, "hello"
  2 Say("again")      -> OK, "again"
  3 Fail("42")        -> NOT_FOUND (5), details "no such item: 42" (trailers only)
  4 Count("3")        -> OK, three messages (server streaming)
  5 FailLate("after-data") -> INTERNAL (13), "broke after after-data", after
                         one message (headers, DATA, trailers)"""
import sys
from concurrent import futures

import grpc

SVC = "termline.test.Echo"


def ident(b):
    return b


def server(port):
    def say(req, ctx):
        return req

    def fail(req, ctx):
        ctx.abort(grpc.StatusCode.NOT_FOUND, "no such item: " + req.decode())

    def count(req, ctx):
        for i in range(int(req.decode())):
            yield b"item %d" % i

    def fail_late(req, ctx):
        yield b"partial"
        ctx.abort(grpc.StatusCode.INTERNAL, "broke after " + req.decode())

    handlers = {
        "Say": grpc.unary_unary_rpc_method_handler(say, ident, ident),
        "Fail": grpc.unary_unary_rpc_method_handler(fail, ident, ident),
        "Count": grpc.unary_stream_rpc_method_handler(count, ident, ident),
        "FailLate": grpc.unary_stream_rpc_method_handler(fail_late, ident, ident),
    }
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                      options=[("grpc.http2.bdp_probe", 0)])
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SVC, handlers),))
    srv.add_insecure_port("127.0.0.1:%d" % port)
    srv.start()
    print("grpc_pair.py: serving on %d" % port, flush=True)
    sys.stdin.read()
    srv.stop(grace=1).wait()


def client(port):
    ch = grpc.insecure_channel("127.0.0.1:%d" % port,
                               options=[("grpc.enable_http_proxy", 0), ("grpc.http2.bdp_probe", 0)])
    say = ch.unary_unary("/%s/Say" % SVC, ident, ident)
    fail = ch.unary_unary("/%s/Fail" % SVC, ident, ident)
    count = ch.unary_stream("/%s/Count" % SVC, ident, ident)
    fail_late = ch.unary_stream("/%s/FailLate" % SVC, ident, ident)

    def md(n):
        return (("x-request-id", "grpc-%d" % n),)

    assert say(b"hello", metadata=md(1), timeout=10) == b"hello"
    assert say(b"again", metadata=md(2), timeout=10) == b"again"
    try:
        fail(b"42", metadata=md(3), timeout=10)
        raise SystemExit("grpc_pair.py: Fail succeeded")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.NOT_FOUND, e
        assert e.details() == "no such item: 42", e
    assert list(count(b"3", metadata=md(4), timeout=10)) == [b"item 0", b"item 1", b"item 2"]
    got = []
    try:
        for m in fail_late(b"after-data", metadata=md(5), timeout=10):
            got.append(m)
        raise SystemExit("grpc_pair.py: FailLate succeeded")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INTERNAL, e
        assert got == [b"partial"], got
    ch.close()
    print("grpc_pair.py: 5 calls as expected")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("server", "client"):
        sys.exit(__doc__)
    (server if sys.argv[1] == "server" else client)(int(sys.argv[2]))
