#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""HTTP capture on real sockets (bpf/http.bpf.c through its loader and the
pairing in daemon/capture): servers and clients run in a tracked cgroup,
requests carry x-request-id, and every exchange the driver prints is
checked one by one: ID, status, direction, error.

Servers: a Python HTTP/1.1 server (--serve, the same BaseHTTPRequestHandler
the simulated Pod's app uses) and nginx from Debian. Cases: keep-alive,
connection per request, pipelined, chunked, 404, headers split across
writes, a reset mid-request (read by the server, and never read by it), a
request read on one thread and answered from another, a server moved into
the tracked cgroup after it made its listener (followed by the caller's
cgroup in the sys_exit variants, not at all in the sock variant, which
follows the sockets' own cgroup), the listener closed
mid-load, an outbound client, a server in an untracked cgroup that must
produce nothing, a tracked cgroup untracked (nothing) and tracked again
(seen), a tracked id that spilled out of the programs' table into
its hash map (seen), and a ring too small for the load (losses counted,
nothing misread)."""
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2elib as E  # noqa: E402

BUILD = os.environ.get("TERMLINE_BUILD_ROOT", "build")
DRIVER = os.path.join(BUILD, "tests", "bpf", "http-capture-driver")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


# ---- the server run inside the tracked cgroup ----

def serve(port):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            rid = self.headers.get("x-request-id", "")
            path, _, q = self.path.partition("?")
            if path.startswith("/status/"):
                code = int(path.rsplit("/", 1)[1])
            else:
                code = 200
            if path in ("/slow", "/drop"):
                time.sleep(int(q.split("=")[1]) / 1000)
            if path == "/drop":
                # no answer, no further read: the connection is closed
                # without this process ever seeing what the peer did
                self.close_connection = True
                return
            body = f"{rid}\n".encode()
            self.send_response(code)
            self.send_header("x-request-id", rid)
            if path == "/chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None  # the reset case: a write to a reset connection

    def close_listener(*_):
        # Stop accepting; requests already in progress are still answered.
        threading.Thread(target=lambda: (srv.shutdown(), srv.socket.close()), daemon=True).start()

    signal.signal(signal.SIGUSR1, close_listener)
    print("serving", flush=True)
    srv.serve_forever(poll_interval=0.05)
    time.sleep(30)  # keep answering in-flight requests until killed


def serve_split(port):
    """Reads each request on one thread and answers it from another, as
    servers with a reader thread and a worker pool do."""
    import queue
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)
    work = queue.Queue()

    def worker():
        while True:
            conn, rid = work.get()
            body = f"{rid}\n".encode()
            try:
                conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\nx-request-id: %s\r\n\r\n%s"
                             % (len(body), rid.encode(), body))
            except OSError:
                pass  # the port probe: connected and left
            conn.close()

    threading.Thread(target=worker, daemon=True).start()
    print("serving", flush=True)
    while True:
        conn, _ = ls.accept()
        head = b""
        while b"\r\n\r\n" not in head:
            b = conn.recv(4096)
            if not b:
                break
            head += b
        rid = ""
        for line in head.decode(errors="replace").split("\r\n"):
            if line.lower().startswith("x-request-id:"):
                rid = line.split(":", 1)[1].strip()
        work.put((conn, rid))


# ---- test helpers ----

def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def cg_home(cgroup_id):
    """tl_cg_home() of bpf/include/termline-cgtab.h: an id's first slot."""
    return ((cgroup_id * 0x9E3779B97F4A7C15) & (2**64 - 1)) >> (64 - 12)


def spawn_in(cgroup, argv, **kw):
    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return subprocess.Popen(argv, preexec_fn=enter, **kw)


class Driver:
    def __init__(self, cgroup_ids, opts=()):
        self.p = subprocess.Popen([DRIVER] + list(opts) + [str(c) for c in cgroup_ids], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if line[:1] != ["ready"] or len(line) != 2:
            raise AssertionError(f"driver did not start: {line!r} {self.p.stderr.read()}")
        self.variant = line[1]  # the hooks loaded (http-bpf.h)
        self.lines = []
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            self.lines.append(json.loads(line))

    def by_id(self, rid):
        return [x for x in self.lines if x["id"] == rid]

    def wait(self, rid, n=1, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.by_id(rid)) >= n:
                time.sleep(0.1)  # a duplicate would show up now
                return self.by_id(rid)
            time.sleep(0.02)
        raise AssertionError(f"no exchange {rid!r}; seen: {[x['id'] for x in self.lines][-30:]}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(10)
        self.t.join(5)
        return self.p.stderr.read()


def expect(d, rid, status, direction="inbound", error="", n=1):
    xs = d.wait(rid, n)
    assert len(xs) == n, f"{rid}: {len(xs)} exchanges, want {n}: {xs}"
    for x in xs:
        assert x["status"] == status and x["error"] == error, f"{rid}: {x}, want {status} {error!r}"
    dirs = sorted(x["direction"] for x in xs)
    want = sorted(direction if isinstance(direction, list) else [direction] * n)
    assert dirs == want, f"{rid}: directions {dirs}, want {want}"
    return xs


def get(conn, path, rid):
    conn.request("GET", path, headers={"x-request-id": rid})
    r = conn.getresponse()
    r.read()
    return r.status


def raw(port, data, parts_delay=0.0, read=True):
    s = socket.create_connection(("127.0.0.1", port))
    for i, p in enumerate(data):
        if i:
            time.sleep(parts_delay)
        s.sendall(p)
    out = b""
    if read:
        s.settimeout(5)
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
                if out.count(b"HTTP/1.") >= len([1 for p in data for _ in range(p.count(b"x-request-id"))]) and out.endswith(b"\n"):
                    break
        except socket.timeout:
            pass
    s.close()
    return out


def nginx_conf(work, port):
    root = os.path.join(work, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello from nginx\n")
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {work}/tmp;
    proxy_temp_path {work}/tmp;
    fastcgi_temp_path {work}/tmp;
    uwsgi_temp_path {work}/tmp;
    scgi_temp_path {work}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /teapot {{ return 418 "tea\\n"; }}
    }}
}}
""")
    return conf


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
        return 0
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-split":
        serve_split(int(sys.argv[2]))
        return 0
    E.require_root()
    base = os.path.join(E.cgroup2_mount(), f"termline-bpf-http-{os.getpid()}")
    tracked, untracked = os.path.join(base, "tracked"), os.path.join(base, "untracked")
    os.makedirs(tracked)
    os.makedirs(untracked)
    work = tempfile.mkdtemp(prefix="termline-bpf-http-")
    procs = []
    d = None
    try:
        d = Driver([os.stat(tracked).st_ino])
        # The socket send/receive tracepoints are there from 6.3 on,
        # bpf_rdonly_cast() from 6.2: the cheapest variant that loads
        release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
        want_variant = "sock" if release >= (6, 3) else "rdonly_cast" if release >= (6, 2) else "probe_read"
        assert d.variant == want_variant, f"kernel {os.uname().release}: loaded {d.variant}, want {want_variant}"
        me = os.path.abspath(__file__)
        py_port, ng_port, un_port, sp_port = E.free_port(), E.free_port(), E.free_port(), E.free_port()
        py = spawn_in(tracked, ["/usr/bin/python3", me, "--serve", str(py_port)])
        procs.append(py)
        procs.append(spawn_in(untracked, ["/usr/bin/python3", me, "--serve", str(un_port)]))
        os.makedirs(os.path.join(work, "tmp"))
        procs.append(spawn_in(tracked, [NGINX, "-c", nginx_conf(work, ng_port), "-e", os.path.join(work, "nginx-error.log")],
                              stderr=subprocess.DEVNULL))
        procs.append(spawn_in(tracked, ["/usr/bin/python3", me, "--serve-split", str(sp_port)]))
        for p in (py_port, ng_port, un_port, sp_port):
            wait_port(p)

        # keep-alive: one connection, three requests, a 404 among them
        c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
        assert [get(c, "/a", "ka-1"), get(c, "/status/404", "ka-2"), get(c, "/b", "ka-3")] == [200, 404, 200]
        c.close()
        expect(d, "ka-1", 200)
        expect(d, "ka-2", 404)
        expect(d, "ka-3", 200)
        x = d.by_id("ka-2")[0]
        assert x["method"] == "GET" and x["path"] == "/status/404" and x["tgid"] == py.pid, x

        # a connection per request
        for i in range(3):
            c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
            get(c, f"/cpr?{i}", f"cpr-{i}")
            c.close()
        for i in range(3):
            expect(d, f"cpr-{i}", 200)

        # pipelined: three requests in one write, answered in order
        req = lambda rid, path="/p": f"GET {path} HTTP/1.1\r\nHost: x\r\nx-request-id: {rid}\r\n\r\n".encode()  # noqa: E731
        out = raw(py_port, [req("pl-1") + req("pl-2", "/status/503") + req("pl-3")])
        assert out.count(b"HTTP/1.1 ") == 3, out
        expect(d, "pl-1", 200)
        expect(d, "pl-2", 503)
        expect(d, "pl-3", 200)

        # chunked response
        c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
        assert get(c, "/chunked", "ch-1") == 200
        assert get(c, "/after-chunked", "ch-2") == 200
        c.close()
        expect(d, "ch-1", 200)
        expect(d, "ch-2", 200)

        # the head split across two writes (and so across two reads)
        raw(py_port, [b"GET /split HTTP/1.1\r\nHost: x\r\n", b"x-request-id: split-1\r\n\r\n"], parts_delay=0.1)
        expect(d, "split-1", 200)

        # reset mid-request: the client aborts (RST) while the server works
        s = socket.create_connection(("127.0.0.1", py_port))
        s.sendall(req("rst-1", "/slow?ms=300"))
        time.sleep(0.05)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        expect(d, "rst-1", 0, error="reset")

        # the client resets while the server works, and the server then
        # closes without reading or writing again: only the socket's end
        # says it was reset (the sock variant reads the socket's pending
        # error there; the sys_exit variants see a plain close())
        s = socket.create_connection(("127.0.0.1", py_port))
        s.sendall(req("rst-unread", "/drop?ms=300"))
        time.sleep(0.05)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        expect(d, "rst-unread", 0, error="reset" if d.variant == "sock" else "closed")

        # a server that made its listener in an untracked cgroup, then was
        # moved into the tracked one: its sockets stay in the cgroup they
        # were made in. The sock variant follows a socket of a tracked
        # cgroup, whoever calls: nothing of it, not even a connection's end
        # to wait for. The sys_exit variants follow the tracked caller: its
        # requests are seen, and one on a connection it closes without
        # answering ends "closed" (said at its close())
        mv_port = E.free_port()
        mv = spawn_in(untracked, ["/usr/bin/python3", me, "--serve", str(mv_port)])
        procs.append(mv)
        wait_port(mv_port)
        with open(os.path.join(tracked, "cgroup.procs"), "w") as f:
            f.write(str(mv.pid))
        c = http.client.HTTPConnection("127.0.0.1", mv_port, timeout=5)
        assert get(c, "/a", "mv-1") == 200
        c.close()
        s = socket.create_connection(("127.0.0.1", mv_port))
        s.settimeout(5)
        s.sendall(req("mv-drop", "/drop?ms=10"))
        assert s.recv(100) == b""
        s.close()
        if d.variant == "sock":
            moved_ids = ("mv-1", "mv-drop")
        else:
            expect(d, "mv-1", 200)
            expect(d, "mv-drop", 0, error="closed")
            moved_ids = ()

        # read on one thread, answered from another
        for i in range(3):
            c = http.client.HTTPConnection("127.0.0.1", sp_port, timeout=5)
            assert get(c, "/split-threads", f"thr-{i}") == 202
            c.close()
        for i in range(3):
            expect(d, f"thr-{i}", 202)

        # nginx: keep-alive, 404, a return 418
        c = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
        assert [get(c, "/index.html", "ng-1"), get(c, "/missing", "ng-2"), get(c, "/teapot", "ng-3")] == [200, 404, 418]
        c.close()
        expect(d, "ng-1", 200)
        expect(d, "ng-2", 404)
        expect(d, "ng-3", 418)

        # outbound: a client in the tracked cgroup calls the untracked server
        # (one outbound exchange) and the tracked nginx (outbound + inbound)
        client = ("import http.client,sys\n"
                  "for port, rid in ((int(sys.argv[1]), 'out-1'), (int(sys.argv[2]), 'out-2')):\n"
                  "    c = http.client.HTTPConnection('127.0.0.1', port, timeout=5)\n"
                  "    c.request('GET', '/index.html', headers={'x-request-id': rid})\n"
                  "    c.getresponse().read(); c.close()\n")
        cl = spawn_in(tracked, ["/usr/bin/python3", "-c", client, str(un_port), str(ng_port)])
        assert cl.wait(20) == 0
        expect(d, "out-1", 200, "outbound")
        expect(d, "out-2", 200, ["inbound", "outbound"], n=2)

        # untracked server, untracked client: nothing
        c = http.client.HTTPConnection("127.0.0.1", un_port, timeout=5)
        assert get(c, "/quiet", "untracked-1") == 200
        c.close()

        # a cgroup untracked (its slot in the kernel's table emptied, its map
        # entry deleted) produces nothing; tracked again, it is seen again.
        # Also on a keep-alive connection that carried HTTP before
        ka = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
        assert get(ka, "/index.html", "ka-tracked-1") == 200
        expect(d, "ka-tracked-1", 200)
        d.p.send_signal(signal.SIGUSR1)
        time.sleep(1)
        c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
        assert get(c, "/a", "untracked-again-1") == 200
        c.close()
        assert get(ka, "/index.html", "ka-untracked") == 200
        d.p.send_signal(signal.SIGUSR2)
        time.sleep(1)
        c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
        assert get(c, "/a", "tracked-again-1") == 200
        c.close()
        assert get(ka, "/index.html", "ka-tracked-2") == 200
        ka.close()
        expect(d, "tracked-again-1", 200)
        expect(d, "ka-tracked-2", 200)
        assert not d.by_id("untracked-again-1"), d.by_id("untracked-again-1")
        assert not d.by_id("ka-untracked"), d.by_id("ka-untracked")

        # the listener closes mid-load: the request in flight is answered
        # and recorded; connections after it are refused and leave nothing
        res = {}

        def slow():
            c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=5)
            res["lc-1"] = get(c, "/slow?ms=400", "lc-1")
            c.close()
        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.1)
        py.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        refused = 0
        while time.monotonic() < deadline and refused < 3:
            try:
                c = http.client.HTTPConnection("127.0.0.1", py_port, timeout=1)
                get(c, "/late", f"late-{refused}")
                c.close()
                time.sleep(0.05)
            except OSError:
                refused += 1
        t.join(5)
        assert res.get("lc-1") == 200 and refused == 3, (res, refused)
        expect(d, "lc-1", 200)

        time.sleep(0.3)
        for rid in moved_ids:
            assert not d.by_id(rid), d.by_id(rid)
        assert not d.by_id("untracked-1"), d.by_id("untracked-1")
        assert not d.by_id("untracked-again-1"), d.by_id("untracked-again-1")
        for i in range(3):
            assert not d.by_id(f"refused-{i}")
        ids = [x["id"] for x in d.lines]
        for rid in set(ids):
            # nothing twice, except out-2 seen from both of its ends
            assert ids.count(rid) == (2 if rid == "out-2" else 1) or rid.startswith("late-"), (rid, ids.count(rid))
        stderr = d.stop()
        d = None
        assert "dropped 0" in stderr, stderr
        # The sock variant keeps a state only while a socket has a mark (the
        # split heads above had one): none is left once they are spent.
        if want_variant == "sock":
            assert "states 0" in stderr, stderr

        # The raw sys_exit fallbacks, for kernels without the socket
        # tracepoints: the fd walk through bpf_rdonly_cast() (>= 6.2) and a
        # probe read per hop (older). The same answers, nothing from the
        # untracked server
        for variant in ("rdonly_cast", "probe_read"):
            if variant == "rdonly_cast" and release < (6, 2):
                continue
            d = Driver([os.stat(tracked).st_ino], ["--variant", variant])
            assert d.variant == variant, (variant, d.variant)
            p = variant[:2] + "-"
            # (the Python server closed its listener above: nginx)
            c = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
            assert [get(c, "/index.html", p + "1"), get(c, "/missing", p + "2")] == [200, 404]
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
            assert get(c, "/index.html", p + "ng") == 200
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", un_port, timeout=5)
            assert get(c, "/a", p + "untracked") == 200
            c.close()
            expect(d, p + "1", 200)
            expect(d, p + "2", 404)
            expect(d, p + "ng", 200)
            time.sleep(0.3)
            assert not d.by_id(p + "untracked"), d.by_id(p + "untracked")
            stderr = d.stop()
            d = None
            assert "dropped 0" in stderr, stderr

        # A tracked id whose window of the programs' table is full of others
        # is only in the hash map (termline-cgtab.h): eight ids with the
        # same home slot are tracked first, so the Pod's cgroup spills and
        # is still captured (the programs look in the map while the table
        # says an id spilled).
        real = os.stat(tracked).st_ino
        home = cg_home(real)
        fillers = [i for i in range(1 << 40, (1 << 40) + (1 << 20)) if cg_home(i) == home][:8]
        assert len(fillers) == 8, fillers
        spilled = Driver(fillers + [real])
        try:
            c = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
            assert [get(c, "/index.html", "spill-1"), get(c, "/missing", "spill-2")] == [200, 404]
            c.close()
            expect(spilled, "spill-1", 200)
            expect(spilled, "spill-2", 404)
        finally:
            stderr = spilled.stop()
        assert "dropped 0" in stderr, stderr

        # The programs wake the agent each time the records reach another
        # half of the ring: with a 64 KiB ring and a drain timer of ten
        # minutes, 400 requests (~350 KiB of records, in batches of 10, 20
        # ms apart) are drained by the wake-ups alone while they come, and
        # none is lost. Without them nothing would be drained before the
        # stop and the ring would overflow after ~70 requests.
        woken = Driver([os.stat(tracked).st_ino], ["--ring", "65536", "--drain-ms", "600000"])
        try:
            c = http.client.HTTPConnection("127.0.0.1", ng_port, timeout=5)
            for i in range(400):
                assert get(c, "/index.html", f"wake-{i}") == 200
                if i % 10 == 9:
                    time.sleep(0.02)
            c.close()
            time.sleep(0.3)
            seen_running = len([x for x in woken.lines if x["id"].startswith("wake-")])
        finally:
            stderr = woken.stop()
        assert "dropped 0" in stderr, f"64 KiB ring drained by its wake-ups: {stderr}"
        # (what the last half-ring held waits for the stop's drain)
        assert seen_running >= 300, f"{seen_running} of 400 exchanges drained before the stop"
        for i in range(400):
            expect(woken, f"wake-{i}", 200)

        # A ring too small for the load: what is lost is counted, never
        # silent, and what arrives is still paired right: requests for 200
        # and for 418 alternate on every connection, so a response paired
        # with the wrong request after a loss would show.
        script = os.path.join(work, "alternate.lua")
        with open(script, "w") as f:
            f.write('n = 0\n'
                    'request = function()\n'
                    '  n = n + 1\n'
                    '  local path = (n % 2 == 0) and "/teapot" or "/index.html"\n'
                    '  return wrk.format("GET", path, {["x-request-id"] = path .. "-" .. n})\n'
                    'end\n')
        small = Driver([os.stat(tracked).st_ino], ["--ring", "4096"])
        try:
            w = subprocess.run(["wrk", "-t1", "-c16", "-d2s", "-s", script, f"http://127.0.0.1:{ng_port}/"],
                               capture_output=True, text=True, timeout=30)
        finally:
            stderr = small.stop()
        assert w.returncode == 0, w.stderr
        sent = int(w.stdout.split(" requests in")[0].split()[-1])
        dropped = int(stderr.split("dropped ")[1].split()[0])
        assert dropped > 0, f"{sent} requests through a 4 KiB ring and nothing dropped"
        want = {"/index.html": 200, "/teapot": 418}
        bad = [x for x in small.lines if x["status"] and (x["path"] not in want or x["status"] != want[x["path"]]
                                                          or not x["id"].startswith(x["path"] + "-"))]
        assert not bad, f"{len(bad)} of {len(small.lines)} exchanges misread after losses: {bad[:3]}"
        assert len({x["status"] for x in small.lines} & {200, 418}) == 2, "the load did not alternate"
        print(f"ok: {len(ids)} exchanges checked; 64 KiB ring drained by wake-ups: {seen_running} of 400 "
              f"while they came; 4 KiB ring: {sent} requests, {dropped} records "
              f"dropped and counted, {len(small.lines)} exchanges")
        return 0
    finally:
        if d:
            d.stop()
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
        E.remove_dirs([tracked, untracked, base], wait=5)


if __name__ == "__main__":
    sys.exit(main())
