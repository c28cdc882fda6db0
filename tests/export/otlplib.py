# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the OTLP export tests: termline-otlp, the decoder and the
receiver (Node.js with the official OTLP definitions), the normal form they
print (proto3 JSON: int64 as strings, enums as numbers, ids as hex) and
documents built for the tests."""
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("TERMLINE_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("TERMLINE_BUILD_ROOT", os.path.join(SRC, "build"))
TOOL = os.path.join(BUILD, "daemon", "export", "termline-otlp")
MODULES = os.environ.get("TERMLINE_OTLP_NODE_MODULES",
                         os.path.join(BUILD, "tests", "export", "node", "node_modules"))
FIXTURES = os.path.join(SRC, "tests", "cli", "data", "state", "timelines", "shop")


def node():
    """The node binary: $TERMLINE_NODE (e.g. Debian 12's 18 when the PATH has
    another), else node on the PATH."""
    n = os.environ.get("TERMLINE_NODE") or shutil.which("node") or shutil.which("nodejs")
    if not n:
        raise AssertionError("node not found (tools/dev deps installs nodejs and npm)")
    return n


def encode(path, protocol="http/protobuf", signal_="traces", logs=False, env=None):
    """(body bytes, counts dict) of termline-otlp encode."""
    args = [TOOL, "encode", "--protocol", protocol, "--signal", signal_]
    if logs:
        args.append("--logs")
    r = subprocess.run(args + [path], capture_output=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        raise AssertionError(f"termline-otlp encode {path}: {r.returncode}: {r.stderr.decode()}")
    return r.stdout, json.loads(r.stderr.decode().strip().splitlines()[-1])


def decode(body, signal_="traces", fmt="protobuf"):
    """The request decoded by the official definitions, in the normal form."""
    r = subprocess.run([node(), os.path.join(HERE, "otlp-decode.js"), "--signal", signal_, "--format", fmt,
                        "--modules", MODULES], input=body, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"the official decoder refused a {fmt} {signal_} request: {r.stderr.decode()}")
    return json.loads(r.stdout)


# ---- the normal form ----

def value(v):
    """An AnyValue as Python."""
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return attrs(v["kvlistValue"].get("values", []))
    raise AssertionError(f"unknown AnyValue {v}")


def attrs(kvs):
    out = {}
    for kv in kvs or []:
        if kv["key"] in out:
            raise AssertionError(f"attribute {kv['key']} twice")
        out[kv["key"]] = value(kv.get("value", {}))
    return out


def spans(req):
    """[(resource attributes, span)] of a decoded ExportTraceServiceRequest."""
    out = []
    for rs in req.get("resourceSpans", []):
        ra = attrs(rs.get("resource", {}).get("attributes"))
        for ss in rs.get("scopeSpans", []):
            assert ss["scope"]["name"] == "termline", ss["scope"]
            for s in ss.get("spans", []):
                out.append((ra, s))
    return out


def records(req):
    out = []
    for rl in req.get("resourceLogs", []):
        ra = attrs(rl.get("resource", {}).get("attributes"))
        for sl in rl.get("scopeLogs", []):
            for r in sl.get("logRecords", []):
                out.append((ra, r))
    return out


def ns_of(t):
    """RFC 3339 with nanoseconds -> ns since the epoch."""
    base, _, frac = t.rstrip("Z").partition(".")
    s = int(datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp())
    return s * 1_000_000_000 + int((frac + "000000000")[:9])


def trace_id_of(uid):
    return uuid.UUID(uid).hex


# ---- documents ----

def rfc3339(t0, s):
    dt = t0 + timedelta(seconds=s)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond * 1000:09d}Z"


def rich_doc(uid="5e5e5e5e-0000-4000-8000-00000000c0de", n_extra_requests=0):
    """A termination with every kind of fact the mapping reads: an exec
    preStop, SIGTERM to both containers, a listener closed, failed requests
    with peers (IPv4, IPv6), a traceparent (and a malformed one), an
    outbound request, an unknown method, a preStop gate's wait, a reset
    without a container, an aggregate, SIGKILL, findings."""
    t0 = datetime(2026, 12, 1, 3, 0, 0, tzinfo=timezone.utc)

    def ev(s, source, type_, container=None, **kw):
        e = {"time": rfc3339(t0, s), "source": source, "type": type_, "container": container}
        e.update(kw)
        return e

    def req(s, container, rid, status, source="log", **kw):
        d = {"requestId": rid, "method": "GET", "path": "/orders", "status": status,
             "start": rfc3339(t0, s), "durationMs": 3, "direction": "inbound"}
        d.update(kw)
        return ev(s, source, "http.request", container, **d)

    events = [
        ev(0.0, "api", "pod.deletion_requested", gracePeriodSeconds=5),
        ev(0.01, "api", "endpoint.condition", service="web", endpointSlice="web-x1", ready=False,
           serving=True, terminating=True),
        ev(0.02, "kernel", "process.exec", "app", pid=300, comm="sleep", filename="/bin/sleep"),
        ev(0.03, "api", "drain.wait_started", quietMs=1000, timeoutMs=20000),
        ev(0.9, "api", "drain.wait_ended", outcome="drained", heldBy="quiet", heldMs=870, connections=0,
           requests=2),
        ev(1.05, "kernel", "process.exit", "app", pid=300, comm="sleep", exitCode=0, exitSignal=0),
        ev(1.06, "kernel", "process.signal", "app", signal="SIGTERM", signo=15, pid=100, comm="app",
           senderPid=1, senderComm="containerd-shim", result="delivered"),
        ev(1.06, "kernel", "process.signal", "istio-proxy", signal="SIGTERM", signo=15, pid=200,
           comm="pilot-agent", senderPid=1, senderComm="containerd-shim", result="delivered"),
        ev(1.07, "kernel", "socket.listen_closed", "app", address="0.0.0.0", port=8080),
        req(1.1, "istio-proxy", "r-1", 503, responseFlags="UF", peer="10.0.0.9:51234",
            traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="vendor=x"),
        req(1.2, "istio-proxy", "r-2", 0, source="kernel", error="reset", peer="[fd00::9]:443",
            protocol="h2"),
        req(1.3, "app", "r-3", 404, source="kernel", direction="outbound", path="/stock"),
        req(1.35, "istio-proxy", None, 200, method="BREW", path="/pot?x=1",
            traceparent="00-00000000000000000000000000000000-b7ad6b7169203331-01"),
        ev(1.4, "kernel", "tcp.reset_sent", None, local="10.1.2.3:8080", remote="10.0.0.9:51235"),
        ev(1.5, "api", "endpoint.removed", service="web", endpointSlice="web-x1"),
        ev(2.0, "kernel", "process.exit", "app", pid=100, comm="app\udcff", exitCode=0, exitSignal=0),
        ev(3.0, "kernel", "events.aggregated", "app", aggregatedType="process.exec", intervalMs=1000,
           count=10),
        ev(6.06, "kernel", "process.signal", "istio-proxy", signal="SIGKILL", signo=9, pid=200,
           comm="pilot-agent", senderPid=1, senderComm="containerd-shim", result="delivered"),
        ev(6.07, "kernel", "process.exit", "istio-proxy", pid=200, comm="pilot-agent", exitCode=0,
           exitSignal=9),
        ev(6.1, "api", "container.terminated", "istio-proxy", exitCode=137, reason="Error"),
        ev(6.2, "kernel", "process.exec", None, sandbox=True, pid=5, comm="pause", filename="/pause"),
        ev(6.5, "api", "pod.deleted", observedBy="watch"),
    ]
    for i in range(n_extra_requests):
        events.append(req(1.0 + i * 0.0001, "istio-proxy", f"bulk-{i:06d}", 200))
    if n_extra_requests:
        events.append(req(1.0 + n_extra_requests * 0.0001, "istio-proxy", "bulk-failed", 503,
                          responseFlags="UC"))
    events.sort(key=lambda e: e["time"])
    return {
        "apiVersion": "termline/v1",
        "pod": {"namespace": "shop", "name": "web-7f9c4b8d5f-abcde", "uid": uid, "node": "node-a",
                "ip": "10.1.2.3", "owner": {"kind": "ReplicaSet", "name": "web-7f9c4b8d5f"},
                "terminationGracePeriodSeconds": 5,
                "istio": {"proxyConfig": {"terminationDrainDuration": "5s", "terminationDrainSeconds": 5}}},
        "containers": [
            {"name": "app", "containerID": "containerd://" + "a" * 64, "role": "main", "cgroupId": 11},
            {"name": "istio-proxy", "containerID": "containerd://" + "b" * 64, "role": "sidecar",
             "cgroupId": 12}],
        "events": events,
        "findings": [
            {"rule": "requests_after_listener_closed", "severity": "error",
             "summary": "1 request reached app after it closed its listener", "requestIds": ["r-1"],
             "numbers": {"failedRequests": 1, "listenerClosedAt": 1.07},
             "recommendation": {"setting": "containers[app].lifecycle.preStop.sleep.seconds", "value": 3,
                                "formula": "endpoint removed (1.50 s) + margin 1 s, rounded up"}},
            {"rule": "sigkill_after_grace", "severity": "warning", "summary": "istio-proxy was killed",
             "requestIds": [], "numbers": {"graceSeconds": 5},
             "recommendation": {"setting": "terminationGracePeriodSeconds", "value": 8, "formula": "x"}},
        ],
        "complete": True,
        "loss": {"kernelEventsDropped": 0, "eventsAggregated": 10, "eventsDropped": 0, "diskErrors": 0,
                 "agentRestarts": 0},
        "recorder": {"agentVersion": "0.1.0", "node": "node-a", "kernel": "6.1.0", "probes": [],
                     "configDigest": "sha256:0", "recordingSince": rfc3339(t0, -60)},
    }


def write_doc(path, doc):
    """Writes doc; a lone surrogate in a string (\\udcff) becomes that raw
    byte, so documents can carry bytes that are not UTF-8."""
    text = json.dumps(doc, ensure_ascii=False)
    with open(path, "wb") as f:
        f.write(text.encode("utf-8", "surrogateescape"))


# ---- the receiver ----

class Receiver:
    """otlp-receiver.js on 127.0.0.1 with the given faults; its records."""

    def __init__(self, workdir, faults="", name="receiver"):
        self.out = os.path.join(workdir, f"{name}.jsonl")
        self.port_file = os.path.join(workdir, f"{name}.port")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.faults = faults
        self.proc = None
        self.port = None

    def start(self):
        for p in (self.out, self.port_file):
            if os.path.exists(p):
                os.unlink(p)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([node(), os.path.join(HERE, "otlp-receiver.js"), "--port-file",
                                      self.port_file, "--out", self.out, "--faults", self.faults,
                                      "--modules", MODULES], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the receiver exited {self.proc.returncode}: {self.read_log()}")
            if os.path.exists(self.port_file) and open(self.port_file).read().strip():
                self.port = int(open(self.port_file).read())
                return self
            time.sleep(0.05)
        raise AssertionError("the receiver did not start")

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def read_log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def records(self):
        try:
            with open(self.out, encoding="utf-8") as f:
                return [json.loads(ln) for ln in f if ln.endswith("\n")]
        except FileNotFoundError:
            return []

    def accepted(self, path="/v1/traces"):
        return [r for r in self.records() if r["path"] == path and r["status"] == 200]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
