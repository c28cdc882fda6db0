# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of kubectl-termline's tests: running the CLI, the fixture
documents and documents made from them (10,000 requests, hostile bytes,
bad times), an agent stand-in serving documents over HTTP, and the check
that text output holds nothing a terminal would act on."""
import copy
import http.server
import json
import os
import socketserver
import subprocess
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
STATE = os.path.join(DATA, "state")
SHOP = os.path.join(STATE, "timelines", "shop")
RACE, FIXED, LOSSY = "shop/web-5d9c7-race", "shop/web-5d9c7-fixed", "shop/web-5d9c7-lossy"
RACE_FAILED = ["demo-%04d" % i for i in range(11, 25)]
RACE_FILE = os.path.join(SHOP, "web-5d9c7-race_11111111-1111-4111-8111-111111111111.json")
FIXED_FILE = os.path.join(SHOP, "web-5d9c7-fixed_22222222-2222-4222-8222-222222222222.json")
ENV = {"NO_COLOR": "1", "LC_ALL": "C.UTF-8", "COLUMNS": "80", "TERM": "xterm"}


def run(cli, *args, rc=0, env=None, timeout=60, text=True):
    e = dict(os.environ, **ENV)
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    r = subprocess.run([cli] + list(args), capture_output=True, text=text, env=e, timeout=timeout)
    if rc is not None and r.returncode != rc:
        raise AssertionError(f"{' '.join(map(str, args))}: exit {r.returncode}, wanted {rc}\n"
                             f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def write_state(root, docs):
    """A state dir holding docs: root/timelines/NS/NAME_UID.json."""
    for d in docs:
        ns = d["pod"]["namespace"] or "_unknown"
        os.makedirs(os.path.join(root, "timelines", ns), exist_ok=True)
        name = f"{d['pod']['name']}_{d['pod']['uid']}.json" if d["pod"]["name"] else d["pod"]["uid"] + ".json"
        with open(os.path.join(root, "timelines", ns, name), "w", encoding="utf-8") as f:
            json.dump(d, f)
    return root


def renamed(doc, ns=None, name=None, uid=None):
    d = copy.deepcopy(doc)
    if ns:
        d["pod"]["namespace"] = ns
    if name:
        d["pod"]["name"] = name
    if uid:
        d["pod"]["uid"] = uid
    return d


def busy_doc(n=10000, rps=200):
    """The race at real traffic: n requests at rps through the proxy, the
    last ones in the window between the app's listener closing (+0.020 s)
    and the endpoint's removal (+1.500 s)."""
    d = renamed(load(RACE_FILE), name="web-5d9c7-busy", uid="44444444-4444-4444-8444-444444444444")
    zero = datetime(2026, 12, 1, 3, 0, 0, tzinfo=timezone.utc)
    keep = [e for e in d["events"] if e["type"] != "http.request"]
    step = 1.0 / rps
    first = 1.5 - n * step
    reqs, failed = [], []
    for i in range(n):
        at = first + i * step
        start = zero + timedelta(seconds=at)
        bad = 0.020 < at < 1.5
        rid = f"busy-{i:05d}"
        if bad:
            failed.append(rid)
        reqs.append({"time": ts(start + timedelta(milliseconds=1)), "source": "log", "type": "http.request",
                     "container": "istio-proxy", "requestId": rid, "method": "GET",
                     "path": "/orders" if i % 3 else "/cart", "status": 503 if bad else 200,
                     "start": ts(start), "durationMs": 1, "direction": "inbound",
                     "responseFlags": "UF" if bad else "-"})
    # the listeners open before the first request
    for e in keep:
        if e["type"] == "socket.listen":
            e["time"] = ts(zero + timedelta(seconds=first - 1))
    d["events"] = sorted(keep + reqs, key=lambda e: e["time"])
    return d, failed


ESC_ID = "id-\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
BAD_PATH_MARK = "/orders-INVALID-UTF8"


def hostile_doc():
    """The race with every string a peer chooses full of terminal controls:
    ESC sequences (CSI, OSC title, OSC 8 link), BEL, C1 CSI, CR/LF, a
    bidi override, a NUL, and (marked, see hostile_bytes) bytes that are
    not UTF-8. Returns (doc, the Pod's name)."""
    d = renamed(load(RACE_FILE), name="web-\x1b]0;pwned\x07-evil", uid="55555555-5555-4555-8555-555555555555")
    app = "a\x1b[31mpp"
    d["pod"]["node"] = "node\x1b[2J\x1b[H"
    d["pod"]["owner"]["name"] = "web-\u009b31mx"
    for c in d["containers"]:
        if c["name"] == "app":
            c["name"] = app
    for i, e in enumerate(d["events"]):
        if e.get("container") == "app":
            e["container"] = app
        if "comm" in e:
            e["comm"] = e["comm"] + "\x1b[?1049h\u202e"
        if "endpointSlice" in e:
            e["endpointSlice"] = "web-\x07x1\r\nFAKE LINE"
        if e["type"] == "http.request":
            e["requestId"] = e["requestId"] + ESC_ID + ("\u0000nul" if i % 2 else "")
            e["path"] = "/orders\r\nX-Injected: 1\x1b[5m" if i % 3 else BAD_PATH_MARK
            e["method"] = "GET\x1b[H"
    return d, d["pod"]["name"]


def hostile_bytes(doc):
    """The document as JSON bytes, with bytes that are not UTF-8 where
    BAD_PATH_MARK was."""
    text = json.dumps(doc).encode("utf-8")
    return text.replace(b"INVALID-UTF8", b"\xff\xfe\xc3(\xc0\xaf")


def assert_inert(what, data):
    """No byte a terminal would act on: no C0 control but newline, no DEL,
    no C1 (raw or as UTF-8), and UTF-8 throughout."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    for i, b in enumerate(data):
        if (b < 0x20 and b != 0x0a) or b == 0x7f:
            raise AssertionError(f"{what}: control byte 0x{b:02x} at {i}: {data[max(0, i - 60):i + 20]!r}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError(f"{what}: not UTF-8: {e}: {data[max(0, e.start - 40):e.start + 10]!r}")
    for i, ch in enumerate(text):
        if 0x80 <= ord(ch) <= 0x9f or ord(ch) in (0x202e, 0x2066, 0x2069):
            raise AssertionError(f"{what}: U+{ord(ch):04X} at {i}: {text[max(0, i - 60):i + 20]!r}")


class Agent(http.server.BaseHTTPRequestHandler):
    """termlined's read-only API over documents; "hang" never answers,
    "error_body" answers every request 500 with that body."""
    docs = []
    hang = False
    error_body = None

    def do_GET(self):
        if self.hang:
            time.sleep(30)
            return
        if self.error_body is not None:
            data = self.error_body
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        parts = [urllib.parse.unquote(p) for p in u.path.split("/")]
        if u.path == "/v1/timelines":
            body = {"timelines": [{"namespace": d["pod"]["namespace"], "name": d["pod"]["name"], "uid": d["pod"]["uid"],
                                   "state": "closed", "events": len(d["events"]), "findings": 0}
                                  for d in self.docs
                                  if q.get("namespace", d["pod"]["namespace"]) == d["pod"]["namespace"]]}
        elif len(parts) == 5 and parts[:3] == ["", "v1", "timelines"]:
            m = [d for d in self.docs if d["pod"]["namespace"] == parts[3] and d["pod"]["name"] == parts[4]
                 and q.get("uid", d["pod"]["uid"]) == d["pod"]["uid"]]
            if not m:
                self.send_response(404)
                data = b'{"error": "not found"}'
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            body = m[0]
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


class LocalServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def server_bind(self):
        # no getfqdn(): no name resolution is ever needed
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def serve(docs, **kw):
    """An agent stand-in on 127.0.0.1: (server, port). kw: hang, error_body."""
    handler = type("AgentX", (Agent,), dict(docs=docs, **kw))
    srv = LocalServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]
