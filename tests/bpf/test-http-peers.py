#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Who is at the other end: the peer, the connection's start and number on
every exchange the HTTP capture pairs (bpf/http.bpf.c, daemon/capture/
http-pair.c), for every program variant the kernel loads.

A dual-stack server in a tracked cgroup; clients from distinct loopback
addresses so that each connection's peer is known in advance:
- a keep-alive connection opened (and used) before the programs are
  attached, used again after: its peer comes from the request record, its
  start is unknown (connStart 0);
- a new connection over IPv4 to the dual-stack socket (an IPv4-mapped
  peer, said as IPv4), two requests on it: one connection number, the
  start of the accept, an OPEN record with the same peer;
- a connection over IPv6 (::1): "[::1]:port";
- a connection that sends nothing: only its OPEN record says it came;
- a response with "Connection: close": connClose;
- an outbound call from the tracked cgroup: the OPEN says connected, the
  peer is the server's address."""
import http.client
import http.server
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2elib as E  # noqa: E402

BUILD = os.environ.get("TERMLINE_BUILD_ROOT", "build")
DRIVER = os.path.join(BUILD, "tests", "bpf", "http-capture-driver")


def serve(port):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            close = self.path.startswith("/close")
            self.send_response(200)
            self.send_header("Content-Length", "3")
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(b"ok\n")

        def log_message(self, *a):
            pass

    class S(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6
        daemon_threads = True

        def server_bind(self):
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    S(("::", port), H).serve_forever()


def client_from(src, port, family=socket.AF_INET):
    """An HTTP connection whose source address is src."""
    c = http.client.HTTPConnection("::1" if family == socket.AF_INET6 else "127.0.0.1", port, timeout=5,
                                   source_address=(src, 0))
    c.connect()
    return c


def get(c, path, rid):
    c.request("GET", path, headers={"x-request-id": rid})
    r = c.getresponse()
    r.read()
    return r.status


def spawn_in(cgroup, argv, **kw):
    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return subprocess.Popen(argv, preexec_fn=enter, **kw)


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


class Driver:
    def __init__(self, cgroup_ids, opts=()):
        import json
        self.json = json
        self.p = subprocess.Popen([DRIVER, "--opens", "1"] + list(opts) + [str(c) for c in cgroup_ids],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if line[:1] != ["ready"] or len(line) != 2:
            raise AssertionError(f"driver did not start: {line!r} {self.p.stderr.read()}")
        self.variant = line[1]
        self.lines = []
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            self.lines.append(self.json.loads(line))

    def one(self, rid, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            xs = [x for x in self.lines if x["id"] == rid]
            if xs:
                time.sleep(0.1)
                xs = [x for x in self.lines if x["id"] == rid]
                assert len(xs) == 1, f"{rid}: {xs}"
                return xs[0]
            time.sleep(0.02)
        raise AssertionError(f"no exchange {rid!r}; seen {[x['id'] for x in self.lines]}")

    def opens(self, peer):
        return [x for x in self.lines if x.get("open") == peer]

    def stop(self):
        self.p.terminate()
        self.p.wait(10)
        self.t.join(5)
        return self.p.stderr.read()


def run_variant(variant, tracked, untracked, me, port, out_port):
    # The keep-alive connection of before the capture
    old = client_from("127.0.0.2", port)
    assert get(old, "/before", f"{variant}-before") == 200
    old_port = old.sock.getsockname()[1]
    d = Driver([os.stat(tracked).st_ino], [] if variant == "auto" else ["--variant", variant])
    try:
        v = d.variant
        assert get(old, "/again", f"{v}-old") == 200
        x = d.one(f"{v}-old")
        assert x["peer"] == f"127.0.0.2:{old_port}", x
        assert x["connStart"] == 0, f"a connection of before the capture has no start: {x}"
        assert x["direction"] == "inbound", x

        # IPv4 to the dual-stack listener: an IPv4-mapped peer, said as IPv4
        t0 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        c = client_from("127.0.0.3", port)
        cport = c.sock.getsockname()[1]
        assert get(c, "/one", f"{v}-v4-1") == 200
        assert get(c, "/two", f"{v}-v4-2") == 200
        a, b = d.one(f"{v}-v4-1"), d.one(f"{v}-v4-2")
        peer = f"127.0.0.3:{cport}"
        assert a["peer"] == peer and b["peer"] == peer, (a, b)
        assert a["conn"] == b["conn"] and a["conn"] != x["conn"], (x, a, b)
        assert t0 <= a["connStart"] <= a["startNs"], (t0, a)
        assert a["connStart"] == b["connStart"], (a, b)
        op = d.opens(peer)
        assert len(op) == 1 and op[0]["accepted"] and op[0]["startNs"] == a["connStart"], op
        assert not a["connClose"], a

        # "Connection: close" on the response
        assert get(c, "/close", f"{v}-close") == 200
        assert d.one(f"{v}-close")["connClose"] is True
        c.close()

        # IPv6
        c6 = client_from("::1", port, socket.AF_INET6)
        c6port = c6.sock.getsockname()[1]
        assert get(c6, "/six", f"{v}-v6") == 200
        c6.close()
        y = d.one(f"{v}-v6")
        assert y["peer"] == f"[::1]:{c6port}" and y["connStart"] > 0, y
        assert d.opens(f"[::1]:{c6port}"), d.lines[-5:]

        # a connection that never sends a request is still seen
        s = socket.socket()
        s.bind(("127.0.0.4", 0))
        s.connect(("127.0.0.1", port))
        silent = f"127.0.0.4:{s.getsockname()[1]}"
        time.sleep(0.2)
        s.close()
        deadline = time.monotonic() + 5
        while not d.opens(silent) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(d.opens(silent)) == 1 and d.opens(silent)[0]["accepted"], d.lines[-5:]

        # outbound: a client in the tracked cgroup, the server not tracked
        out = subprocess.run(["/usr/bin/python3", "-c",
                              "import http.client,sys;c=http.client.HTTPConnection('127.0.0.1',int(sys.argv[1]),timeout=5);"
                              "c.request('GET','/out',headers={'x-request-id':sys.argv[2]});print(c.getresponse().status)",
                              str(out_port), f"{v}-out"], preexec_fn=lambda: open(os.path.join(tracked, "cgroup.procs"), "w").write(str(os.getpid())),
                             capture_output=True, text=True, timeout=20)
        assert out.stdout.strip() == "200", out
        o = d.one(f"{v}-out")
        assert o["direction"] == "outbound" and o["peer"] == f"127.0.0.1:{out_port}" and o["connStart"] > 0, o
        assert [z for z in d.opens(f"127.0.0.1:{out_port}") if not z["accepted"]], d.lines[-5:]
        old.close()
    finally:
        stderr = d.stop()
    assert "dropped 0" in stderr, stderr
    print(f"ok {d.variant}: peers, starts, numbers, Connection: close, OPEN records")
    return d.variant


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
        return 0
    E.require_root()
    base = os.path.join(E.cgroup2_mount(), f"termline-bpf-peers-{os.getpid()}")
    tracked, untracked = os.path.join(base, "tracked"), os.path.join(base, "untracked")
    os.makedirs(tracked)
    os.makedirs(untracked)
    me = os.path.abspath(__file__)
    procs = []
    try:
        port, out_port = E.free_port(), E.free_port()
        procs.append(spawn_in(tracked, ["/usr/bin/python3", me, "--serve", str(port)]))
        procs.append(spawn_in(untracked, ["/usr/bin/python3", me, "--serve", str(out_port)]))
        wait_port(port)
        wait_port(out_port)
        release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
        variants = ["auto"]
        if release >= (6, 3):
            variants.append("rdonly_cast")
        if release >= (6, 2):
            variants.append("probe_read")
        seen = [run_variant(v, tracked, untracked, me, port, out_port) for v in variants]
        assert len(set(seen)) == len(seen), seen
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for cg in (tracked, untracked):
            for _ in range(50):
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.1)
        try:
            os.rmdir(base)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
