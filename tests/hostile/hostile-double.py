#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile Kubernetes API server (plain HTTP on 127.0.0.1) for termlined's
hostile-input tests. It answers the agent's Pod and EndpointSlice LISTs and
WATCHes with what a real server would never send:

  --other-pods N     N Pods of another node in the Pod LIST (the field
                     selector ignored), in pages of the asked limit
  --own-pods K       K Pods of the agent's node (--node)
  --bomb-mib M       the first Pod WATCH sends one event of M MiB of
                     {},{},... inside an object (then holds the stream)
  --churn-rate R     the first Pod WATCH sends R changes a second to the
                     own Pods for --churn-seconds, after --churn-delay: the
                     Ready condition flips, its lastTransitionTime the time
                     of sending (bench/bench-api.py measures the lag)

Every request is checked for the bearer token (--token) and logged as one
JSON line: method, path, headers (--log). --port-file receives the port."""
import argparse
import datetime
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def pod(i, node, ns="hostile"):
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": f"p-{i}", "namespace": ns, "uid": f"00000000-0000-4000-8000-{i:012d}",
                         "resourceVersion": "100"},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "containerID": f"containerd://{i:064x}",
                                              "state": {"running": {}}}]}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        with self.server.log_lock:
            self.server.log.write(json.dumps({"method": self.command, "path": self.path,
                                              "headers": [[k, v] for k, v in self.headers.items()]}) + "\n")
            self.server.log.flush()

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        a = self.server.args
        if self.headers.get("Authorization") != f"Bearer {a.token}":
            return self.send_json(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if q.get("watch") == ["1"]:
            return self.watch(u.path)
        if u.path == "/api/v1/pods":
            items = self.server.pods
        elif u.path == "/apis/discovery.k8s.io/v1/endpointslices":
            items = []
        else:
            return self.send_json(404, {"kind": "Status", "code": 404})
        limit = int(q.get("limit", ["500"])[0] or 500)
        start = int(q.get("continue", ["0"])[0] or 0)
        page = items[start:start + limit]
        md = {"resourceVersion": "100"}
        if start + limit < len(items):
            md["continue"] = str(start + limit)
        self.send_json(200, {"kind": "List", "apiVersion": "v1", "metadata": md, "items": page})

    def churn(self):
        churn_loop(self)

    def watch(self, path):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            if path == "/api/v1/pods" and self.server.args.bomb_mib and not self.server.bombed:
                self.server.bombed = True
                n = self.server.args.bomb_mib << 20
                head = json.dumps({"type": "ADDED", "object": pod(999999, self.server.args.node)})[:-2]
                self.wfile.write(head.encode() + b', "bomb": [')
                chunk = b"{}," * 21845
                sent = 0
                while sent < n:
                    self.wfile.write(chunk)
                    sent += len(chunk)
                self.wfile.write(b"{}]}}\n")
                self.wfile.flush()
                print(f"hostile-double: bomb of {sent} bytes sent", flush=True)
            if path == "/api/v1/pods" and self.server.args.churn_rate and not self.server.churned:
                self.server.churned = True
                self.churn()
            # hold the stream: nothing more happens
            time.sleep(300)
        except (BrokenPipeError, ConnectionResetError):
            pass


def churn_loop(h):
    a = h.server.args
    own = h.server.pods[a.other_pods:]
    time.sleep(a.churn_delay)
    print("hostile-double: churn start", flush=True)
    step = 0.01
    per_step = max(1, int(a.churn_rate * step))
    t0 = time.monotonic()
    sent, rv, ready = 0, 1000, {}
    while time.monotonic() - t0 < a.churn_seconds:
        buf = []
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for _ in range(per_step):
            p = own[sent % len(own)]
            uid = p["metadata"]["uid"]
            ready[uid] = not ready.get(uid, True)
            rv += 1
            p["metadata"]["resourceVersion"] = str(rv)
            p["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready[uid] else "False",
                                          "lastTransitionTime": now}]
            buf.append(json.dumps({"type": "MODIFIED", "object": p}))
            sent += 1
        h.wfile.write(("\n".join(buf) + "\n").encode())
        h.wfile.flush()
        nxt = t0 + (sent / per_step) * step
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(f"hostile-double: churn end {sent} changes", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--node", default="node-a")
    ap.add_argument("--other-pods", type=int, default=0)
    ap.add_argument("--own-pods", type=int, default=0)
    ap.add_argument("--bomb-mib", type=int, default=0)
    ap.add_argument("--churn-rate", type=int, default=0)
    ap.add_argument("--churn-seconds", type=float, default=10)
    ap.add_argument("--churn-delay", type=float, default=5)
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.args = a
    srv.bombed = False
    srv.churned = False
    srv.log = open(a.log, "a", encoding="utf-8")
    srv.log_lock = threading.Lock()
    srv.pods = [pod(i, "node-other") for i in range(a.other_pods)]
    srv.pods += [pod(a.other_pods + i, a.node) for i in range(a.own_pods)]
    with open(a.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    print(f"hostile-double: listening on {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
