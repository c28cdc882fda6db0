#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline on fixed documents (tests/cli/data/state, the sidecar
race, the same Pod with the fix, and an incomplete timeline): the text
renderers against golden files, the SVG well-formed (xmllint) and
non-blank as PNG (rsvg-convert), the trace JSON against the Trace Event
format's required fields, check's exit statuses, and --from URL against an
agent stand-in serving the same documents. --update writes the golden
files instead of comparing."""
import argparse
import http.server
import json
import os
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
STATE = os.path.join(DATA, "state")
RACE, FIXED, LOSSY = "shop/web-5d9c7-race", "shop/web-5d9c7-fixed", "shop/web-5d9c7-lossy"
RACE_FAILED = ["demo-%04d" % i for i in range(11, 25)]


def run(cli, *args, rc=0):
    env = dict(os.environ, NO_COLOR="1")
    r = subprocess.run([cli] + list(args), capture_output=True, text=True, env=env, timeout=60)
    if rc is not None and r.returncode != rc:
        raise AssertionError(f"{' '.join(args)}: exit {r.returncode}, wanted {rc}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def golden(name, text, update):
    path = os.path.join(DATA, name)
    if update:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    with open(path, encoding="utf-8") as f:
        want = f.read()
    if text != want:
        import difflib
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), path, "output"))
        raise AssertionError(f"{name} differs from the golden file:\n{diff}")


def png_pixels(path):
    """(width, height, rows of RGBA bytes) of an 8-bit RGBA/RGB PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 4 if ctype == 6 else 3
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_svg(cli, work, src):
    out = os.path.join(work, "race.svg")
    run(cli, "render", RACE, *src, "-o", "svg", "--out", out)
    subprocess.run(["xmllint", "--noout", out], check=True)
    with open(out, encoding="utf-8") as f:
        svg = f.read()
    # every failed request is a red bar with its ID on hover; the lanes are there
    for rid in RACE_FAILED:
        assert f"id={rid} " in svg, rid
    assert svg.count('class="req failed"') == len(RACE_FAILED), svg.count('class="req failed"')
    for lane in ("API / endpoints", "app", "istio-proxy"):
        assert f">{lane}</text>" in svg, lane
    assert ">deletion</text>" in svg
    png = os.path.join(work, "race.png")
    subprocess.run(["rsvg-convert", "-o", png, out], check=True)
    w, h, bpp, rows = png_pixels(png)
    assert w >= 800 and h >= 200, (w, h)
    # non-blank: many colours, and red (failed requests) among them
    colours = set()
    for r in rows[:: max(1, h // 200)]:
        for x in range(0, w * bpp, bpp):
            colours.add(r[x:x + 3])
    assert len(colours) > 20, f"{len(colours)} colours: blank picture"
    assert any(c[0] > 180 and c[1] < 80 and c[2] < 80 for c in colours), "no red in the picture"


def check_trace(cli, work, src):
    out = os.path.join(work, "race.json")
    run(cli, "render", RACE, *src, "-o", "trace", "--out", out)
    with open(out, encoding="utf-8") as f:
        tr = json.load(f)
    evs = tr["traceEvents"]
    assert evs, "no trace events"
    need = {"name", "ph", "ts", "pid", "tid"}
    for e in evs:
        assert need <= set(e), f"missing {need - set(e)} in {e}"
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert e["ph"] in ("X", "b", "e", "i", "M"), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] in ("b", "e"):
            assert "id" in e and "cat" in e, e
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t"), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and "name" in e["args"], e
    threads = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads == {"API / endpoints", "app", "istio-proxy"}, threads
    # async request slices pair up, failed ones carry their request ID
    begins = {e["id"]: e for e in evs if e["ph"] == "b"}
    ends = {e["id"]: e for e in evs if e["ph"] == "e"}
    assert begins.keys() == ends.keys() and len(begins) == 25, (len(begins), len(ends))
    failed = sorted(e["args"]["requestId"] for e in begins.values() if "failed" in e["cat"])
    assert failed == RACE_FAILED, failed
    assert any(e["ph"] == "X" and e["name"] == "stop" for e in evs), "no stop span"
    assert any(e["ph"] == "i" and e["s"] == "p" and e["name"].startswith("deletion") for e in evs)


class Agent(http.server.BaseHTTPRequestHandler):
    """termlined's read-only API over the fixture state dir."""
    docs = []

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        parts = u.path.split("/")
        if u.path == "/v1/timelines":
            body = {"timelines": [{"namespace": d["pod"]["namespace"], "name": d["pod"]["name"], "uid": d["pod"]["uid"],
                                   "state": "closed", "events": len(d["events"]), "findings": 0} for d in self.docs]}
        elif len(parts) == 5 and parts[:3] == ["", "v1", "timelines"]:
            m = [d for d in self.docs if d["pod"]["namespace"] == parts[3] and d["pod"]["name"] == parts[4]
                 and q.get("uid", d["pod"]["uid"]) == d["pod"]["uid"]]
            if not m:
                self.send_error(404)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    cli = a.cli
    src = ["--from", STATE]
    work = tempfile.mkdtemp(prefix="termline-cli-")

    golden("list.txt", run(cli, "list", *src).stdout, a.update)
    golden("show-race.txt", run(cli, "show", RACE, *src).stdout, a.update)
    golden("explain-race.txt", run(cli, "explain", RACE, *src).stdout, a.update)
    golden("explain-lossy.txt", run(cli, "explain", LOSSY, *src).stdout, a.update)
    golden("explain-fixed.txt", run(cli, "explain", FIXED, *src).stdout, a.update)

    # -o json: the document itself, and {"findings": [...]}
    doc = json.loads(run(cli, "show", RACE, *src, "-o", "json").stdout)
    assert doc["pod"]["name"] == "web-5d9c7-race" and doc["apiVersion"] == "termline/v1"
    fs = json.loads(run(cli, "explain", RACE, *src, "-o", "json").stdout)["findings"]
    assert fs[0]["rule"] == "requests_after_listener_closed", fs
    assert fs[0]["requestIds"] == RACE_FAILED, fs[0]["requestIds"]
    assert fs[0]["recommendation"]["value"] == 3, fs[0]["recommendation"]
    assert all(f.get("incomplete") for f in json.loads(run(cli, "explain", LOSSY, *src, "-o", "json").stdout)["findings"])
    lst = json.loads(run(cli, "list", *src, "-o", "json").stdout)["timelines"]
    assert [(t["name"], t["failedRequests"], t["complete"]) for t in lst] == [
        ("web-5d9c7-fixed", 0, True), ("web-5d9c7-lossy", 14, False), ("web-5d9c7-race", 14, True)], lst
    assert json.loads(run(cli, "list", *src, "-n", "other", "-o", "json").stdout)["timelines"] == []

    check_svg(cli, work, src)
    check_trace(cli, work, src)

    # colours on a terminal only, and not with NO_COLOR
    import pty
    for no_color, want in ((None, True), ("1", False)):
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        if no_color:
            env["NO_COLOR"] = no_color
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(cli, [cli, "show", RACE, *src], env)
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.waitpid(pid, 0)
        assert (b"\033[" in out) == want, (no_color, out[:300])
    assert "\033[" not in run(cli, "show", RACE, *src).stdout

    # a timeline recorded without the API (--no-api) has no name: _unknown/UID
    noapi = os.path.join(work, "noapi")
    os.makedirs(os.path.join(noapi, "timelines", "_unknown"))
    with open(os.path.join(STATE, "timelines", "shop", "web-5d9c7-race_11111111-1111-4111-8111-111111111111.json")) as f:
        d = json.load(f)
    d["pod"].update({"namespace": None, "name": None, "owner": None})
    with open(os.path.join(noapi, "timelines", "_unknown", d["pod"]["uid"] + ".json"), "w") as f:
        json.dump(d, f)
    got = json.loads(run(cli, "explain", "_unknown/" + d["pod"]["uid"], "--from", noapi, "-o", "json").stdout)
    assert got["findings"][0]["requestIds"] == RACE_FAILED, got

    # check: 1 when an assertion fails, 0 when all pass, 2 when a
    # timeline is missing or incomplete, whatever the others say
    r = run(cli, "check", RACE, *src, rc=1)
    assert "FAIL shop/web-5d9c7-race failed-requests: 14 failed requests (at most 0 allowed)" in r.stdout, r.stdout
    r = run(cli, "check", FIXED, *src, "--max-failed-requests", "0", "--require-graceful", rc=0)
    assert r.stdout.count("PASS") == 2 and "FAIL" not in r.stdout, r.stdout
    run(cli, "check", RACE, *src, "--max-failed-requests", "14", rc=0)
    r = run(cli, "check", FIXED, *src, "--max-endpoint-lag", "0", rc=0)
    r = run(cli, "check", RACE, *src, "--max-endpoint-lag", "1", rc=1)
    assert "1.480 s after" in r.stdout, r.stdout
    r = run(cli, "check", LOSSY, *src, "--max-failed-requests", "100", rc=2)
    assert "INCOMPLETE" in r.stdout, r.stdout
    run(cli, "check", FIXED, "shop/no-such-pod", *src, rc=2)
    run(cli, "check", FIXED, RACE, *src, rc=1)

    # exit statuses: not found 1, bad usage 2, unreachable 2
    run(cli, "show", "shop/no-such-pod", *src, rc=1)
    run(cli, "show", *src, rc=2)
    run(cli, "explain", RACE, *src, "-o", "yaml", rc=2)
    run(cli, "render", RACE, *src, "-o", "png", rc=2)
    run(cli, "frobnicate", rc=2)
    run(cli, "list", "--from", "/nonexistent/state", rc=2)
    run(cli, "list", "--from", "http://127.0.0.1:1", rc=2)

    # --from URL: the same answers from an agent's HTTP API
    Agent.docs = [json.load(open(os.path.join(STATE, "timelines", "shop", n), encoding="utf-8"))
                  for n in sorted(os.listdir(os.path.join(STATE, "timelines", "shop")))]
    srv = LocalServer(("127.0.0.1", 0), Agent)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = ["--from", f"http://127.0.0.1:{srv.server_address[1]}"]
    try:
        golden("list.txt", run(cli, "list", *url).stdout, False)
        golden("show-race.txt", run(cli, "show", RACE, *url).stdout, False)
        golden("explain-race.txt", run(cli, "explain", RACE, *url).stdout, False)
        run(cli, "show", "shop/no-such-pod", *url, rc=1)
        run(cli, "check", RACE, *url, rc=1)
        check_svg(cli, work, url)
    finally:
        srv.shutdown()
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    print("ok: golden text, SVG, trace, check exits, --from DIR and URL")


if __name__ == "__main__":
    sys.exit(main())
