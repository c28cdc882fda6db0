#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A Kubernetes API server double for tests: HTTPS, bearer tokens, LIST with
limit/continue, chunked WATCH from a resourceVersion with bookmarks, field and
label selectors, driven by a scenario file of timed steps with fault
injection. Only the Python standard library.

Scenario (JSON):
  {"node": "n1", "token": "t0", "pageSize": 2,
   "objects": [{"resource": "pods", "object": {...}}, ...],     # initial state
   "steps": [{"at": 0.5, "op": "modify", "resource": "pods", "object": {...}},
             {"at": 0.7, "op": "fault", "fault": "cut", "resource": "pods"}, ...],
   "expect": {...}}                                               # for the test
ops: add, modify (the object replaces the stored one with the same
metadata.uid), delete (by uid), patch (uid + "merge": dict merged in),
fault, rotate_token, wait_file (holds the later steps until "path" exists,
then times them from that moment: a test releases them once real processes
have done their part), end.
faults: cut (next event on the resource's watch stops halfway and the
connection drops), error410 (ERROR 410 on the watch, versions before now
expire), list500 / list429 (next "count" LISTs fail; list429 carries
"retryAfter"), list410 (next continued LIST page gets 410), garbage (bytes
that are not JSON on the stream), drip (next "count" events sent one byte per
chunk), eof (the watch ends cleanly), bookmark (a BOOKMARK at the newest
resourceVersion of all resources, after any pending events),
endless_error_body (the next WATCH is answered 500 with a body that never
ends). A LIST fault may carry "then": a step applied the moment the failing
answer is sent (a change that lands between two attempts of one LIST).
WATCH applies the same field and label selectors as LIST.

Nodes ("resource": "nodes") are served by a cluster-wide LIST,
GET /api/v1/nodes, never watched. The cluster-wide Pod LIST takes field
selectors on any path, status.podIP among them (kubectl-termline finds a
peer address's Pod with it).

Namespaced reads, as kubectl-termline makes them: GET
/api/v1/namespaces/NS/pods[/NAME] (a list filtered by namespace, or one
object, 404 when absent), /apis/apps/v1/namespaces/NS/{deployments,
replicasets}[/NAME] and /apis/discovery.k8s.io/v1/namespaces/NS/endpointslices.
Deployments and ReplicaSets are held like the other objects ("resource":
"deployments" / "replicasets" in "objects" and steps) but have no WATCH.
Argo Rollouts ("resource": "rollouts"), GET
/apis/argoproj.io/v1alpha1/namespaces/NS/rollouts[/NAME], and the group's
discovery, GET /apis/argoproj.io/v1alpha1 (an APIResourceList), are served
only when the scenario's "crds" names rollouts.argoproj.io (the discovery
when it names any *.argoproj.io, listing those); otherwise they are the API
server's plain 404 of a path it does not serve (no CRD).
GET /api/v1/namespaces/NS answers a Namespace when the scenario's
"namespaces" list names it or an object is held in it, else 404.
The pod proxy, GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH, is
forwarded (plain HTTP, GET only, query kept) to the address the scenario's
"podProxy" gives for "NS/NAME:PORT" (e.g. {"termline/termline-a:9440":
"127.0.0.1:40123"}): 404 when the Pod is not held, 503 when it has no
address, 502 when the address does not answer.

GET /debug/requests (no token needed) answers {"requests": [...]}: every
request in arrival order with "seq", "resource", "watch", "resourceVersion"
(as asked), "authOk", "status", and for a WATCH answered 200 "sent" (the
{"type", "rv"} of every event and bookmark written, in order) and "end"
("eof": the server ended it cleanly; "error410", "cut", "closed": the client
went away or the write failed; "open": still running).
"""
import argparse
import copy
import http.client
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOURCES = {
    "/api/v1/pods": ("pods", "PodList", "v1"),
    "/apis/discovery.k8s.io/v1/endpointslices": (
        "endpointslices", "EndpointSliceList", "discovery.k8s.io/v1"),
}


# Cluster-wide lists that are never watched (kubectl-termline resolves peer
# addresses with them: docs/cli.md): LIST only, no faults, field and label
# selectors applied.
CLUSTER = {
    "/api/v1/nodes": ("nodes", "NodeList", "v1"),
}

# Held and served by namespace, never watched: the double's step clock starts
# once every RESOURCES path was listed, and nothing lists these.
APPS = {
    "deployments": ("DeploymentList", "apps/v1"),
    "replicasets": ("ReplicaSetList", "apps/v1"),
    "rollouts": ("RolloutList", "argoproj.io/v1alpha1"),
}
NAMESPACED = re.compile(r"^/(?:api/v1|apis/(?:apps|discovery\.k8s\.io)/v1|apis/argoproj\.io/v1alpha1)"
                        r"/namespaces/([^/]+)/"
                        r"(pods|deployments|replicasets|endpointslices|rollouts)(?:/([^/]+)(/proxy(/.*)?)?)?$")
ARGO = "/apis/argoproj.io/v1alpha1"
NAMESPACE = re.compile(r"^/api/v1/namespaces/([^/]+)$")
PROXY_MAX = 64 << 20


class State:
    def __init__(self, scenario, token_file):
        self.cv = threading.Condition()
        self.rv = 100
        self.log = []  # (rv, resource, type, object)
        self.initial = {r: {} for r in [v[0] for v in RESOURCES.values()] + list(APPS) +
                        [v[0] for v in CLUSTER.values()]}
        self.objs = {r: {} for r in self.initial}
        self.pod_proxy = dict(scenario.get("podProxy", {}))
        self.namespaces = list(scenario.get("namespaces", []))
        self.crds = list(scenario.get("crds", []))
        self.compacted = 0
        self.token = scenario.get("token", "t0")
        self.token_file = token_file
        self.page_size = int(scenario.get("pageSize", 500))
        self.faults = {r[0]: [] for r in RESOURCES.values()}
        self.list_faults = {r[0]: [] for r in RESOURCES.values()}
        self.watch_start_faults = {r[0]: [] for r in RESOURCES.values()}
        self.record = []  # for /debug/requests
        self.generation = 0  # bumped to end open watches
        self.requests = []
        for o in scenario.get("objects", []):
            obj = self._stamp(copy.deepcopy(o["object"]))
            self.initial[o["resource"]][obj["metadata"]["uid"]] = obj
            self.objs[o["resource"]][obj["metadata"]["uid"]] = obj
        self.base_rv = self.rv
        if token_file:
            with open(token_file, "w") as f:
                f.write(self.token + "\n")

    def _stamp(self, obj):
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return obj

    def apply(self, step):
        op = step["op"]
        res = step.get("resource")
        with self.cv:
            if op in ("add", "modify"):
                obj = self._stamp(copy.deepcopy(step["object"]))
                uid = obj["metadata"]["uid"]
                typ = "MODIFIED" if uid in self.objs[res] else "ADDED"
                self.objs[res][uid] = obj
                self.log.append((self.rv, res, typ, copy.deepcopy(obj)))
            elif op == "patch":
                obj = copy.deepcopy(self.objs[res][step["uid"]])
                merge(obj, step["merge"])
                self._stamp(obj)
                self.objs[res][step["uid"]] = obj
                self.log.append((self.rv, res, "MODIFIED", copy.deepcopy(obj)))
            elif op == "delete":
                obj = self.objs[res].pop(step["uid"])
                obj = self._stamp(copy.deepcopy(obj))
                self.log.append((self.rv, res, "DELETED", obj))
            elif op == "fault":
                f = dict(step)
                kind = f["fault"]
                if kind in ("list500", "list429", "list410"):
                    for _ in range(int(f.get("count", 1))):
                        self.list_faults[res].append(f)
                elif kind == "error410":
                    self.compacted = self.rv
                    self.faults[res].append(f)
                elif kind == "endless_error_body":
                    self.watch_start_faults[res].append(f)
                else:
                    self.faults[res].append(f)
            elif op == "rotate_token":
                self.token = step["token"]
                if self.token_file:
                    tmp = self.token_file + ".tmp"
                    with open(tmp, "w") as f:
                        f.write(self.token + "\n")
                    os.rename(tmp, self.token_file)
                # open watches end so the client must come back with the new token
                self.generation += 1
            self.cv.notify_all()

    def state_at(self, res, rv):
        """Objects of res as they were at resourceVersion rv."""
        objs = {u: o for u, o in self.initial[res].items()}
        for erv, eres, typ, obj in self.log:
            if erv > rv:
                break
            if eres != res:
                continue
            if typ == "DELETED":
                objs.pop(obj["metadata"]["uid"], None)
            else:
                objs[obj["metadata"]["uid"]] = obj
        return objs


def merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        elif v is None:
            dst.pop(k, None)
        else:
            dst[k] = v


def get_path(obj, dotted):
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def selector_match(obj, field_sel, label_sel):
    for term in filter(None, (field_sel or "").split(",")):
        k, _, v = term.partition("=")
        if str(get_path(obj, k) or "") != v:
            return False
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (label_sel or "").split(",")):
        if "=" in term:
            k, _, v = term.partition("=")
            if labels.get(k.rstrip("=")) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-double"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("kube-double: " + (fmt % args) + "\n")

    def send_json(self, code, obj, extra=None):
        if getattr(self, "rec", None) is not None and self.rec["status"] is None:
            self.rec["status"] = code
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        st = self.server.state
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path == "/debug/requests":
            self.rec = None
            with st.cv:
                body = copy.deepcopy(st.record)
            self.send_json(200, {"requests": body})
            return
        auth = self.headers.get("Authorization", "")
        with st.cv:
            st.requests.append({"path": url.path, "query": q, "auth_ok": auth == "Bearer " + st.token})
            token = st.token
            rec = {"seq": len(st.record), "resource": RESOURCES.get(url.path, (None,))[0],
                   "watch": q.get("watch") in ("1", "true"),
                   "resourceVersion": q.get("resourceVersion"),
                   "authOk": auth == "Bearer " + token, "status": None}
            st.record.append(rec)
        self.rec = rec
        if auth != "Bearer " + token:
            rec["status"] = 401
            self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        m = NAMESPACED.match(url.path)
        argo = url.path == ARGO or url.path.startswith(ARGO + "/")
        # the group is served when a CRD of it is; its rollouts only with theirs
        group = any(c.endswith(".argoproj.io") for c in st.crds)
        if argo and (not group or (url.path != ARGO and "rollouts.argoproj.io" not in st.crds)):
            # no CRD: the API server's plain 404, not a Status
            rec["status"] = 404
            self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", "19")
            self.end_headers()
            self.wfile.write(b"404 page not found\n")
            return
        if url.path == ARGO:
            rec["status"] = 200
            self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "argoproj.io/v1alpha1",
                                 "resources": [{"name": c.split(".")[0], "namespaced": True,
                                                "kind": c.split(".")[0][:-1].capitalize(),
                                                "verbs": ["get", "list", "watch"]}
                                               for c in st.crds if c.endswith(".argoproj.io")]})
            return
        if m and (m.group(2) == "rollouts") != argo:
            m = None  # rollouts only in argoproj.io, the others never there
        if m:
            self.namespaced(m, url, q)
            return
        m = NAMESPACE.match(url.path)
        if m:
            self.namespace(m.group(1))
            return
        if url.path in CLUSTER:
            res, kind, api = CLUSTER[url.path]
            rec["resource"] = res
            with st.cv:
                objs = [o for o in st.objs[res].values()
                        if selector_match(o, q.get("fieldSelector"), q.get("labelSelector"))]
                rv = str(st.rv)
            objs.sort(key=lambda o: o["metadata"]["name"])
            self.send_json(200, {"kind": kind, "apiVersion": api, "metadata": {"resourceVersion": rv},
                                 "items": objs})
            return
        if url.path not in RESOURCES:
            rec["status"] = 404
            self.send_json(404, status(404, "NotFound", "not found"))
            return
        res, kind, api = RESOURCES[url.path]
        if q.get("watch") in ("1", "true"):
            self.watch(res, q)
        else:
            self.list(res, kind, api, q)

    def namespaced(self, m, url, q):
        st = self.server.state
        ns, res, name, proxy = m.group(1), m.group(2), m.group(3), m.group(4)
        self.rec["resource"] = res
        kinds = {"pods": ("PodList", "v1"), "endpointslices": ("EndpointSliceList", "discovery.k8s.io/v1")}
        kinds.update(APPS)
        if proxy is not None:
            if res != "pods" or not name:
                self.send_json(404, status(404, "NotFound", "not found"))
                return
            self.proxy(ns, name, m.group(5) or "/", url.query)
            return
        with st.cv:
            objs = [o for o in st.objs[res].values() if o.get("metadata", {}).get("namespace") == ns]
        if name:
            found = [o for o in objs if o["metadata"].get("name") == name]
            if not found:
                self.send_json(404, status(404, "NotFound", f'{res} "{name}" not found'))
                return
            self.send_json(200, found[0])
            return
        objs = [o for o in objs if selector_match(o, q.get("fieldSelector"), q.get("labelSelector"))]
        objs.sort(key=lambda o: o["metadata"]["name"])
        with st.cv:
            rv = str(st.rv)
        self.send_json(200, {"kind": kinds[res][0], "apiVersion": kinds[res][1],
                             "metadata": {"resourceVersion": rv}, "items": objs})

    def namespace(self, name):
        """GET /api/v1/namespaces/NAME: a namespace exists when the scenario
        names it ("namespaces") or holds an object in it."""
        st = self.server.state
        self.rec["resource"] = "namespaces"
        with st.cv:
            known = set(st.namespaces) | {o.get("metadata", {}).get("namespace")
                                          for objs in st.objs.values() for o in objs.values()}
        if name not in known:
            self.send_json(404, status(404, "NotFound", f'namespaces "{name}" not found'))
            return
        self.send_json(200, {"kind": "Namespace", "apiVersion": "v1",
                             "metadata": {"name": name}, "status": {"phase": "Active"}})

    def proxy(self, ns, name_port, path, query):
        """The API server's pod proxy: to the Pod's address, as the
        scenario names it (the double has no Pod network)."""
        st = self.server.state
        name = name_port.split(":", 1)[0]
        with st.cv:
            held = any(o["metadata"].get("namespace") == ns and o["metadata"].get("name") == name
                       for o in st.objs["pods"].values())
            addr = st.pod_proxy.get(f"{ns}/{name_port}")
        if not held:
            self.send_json(404, status(404, "NotFound", f'pods "{name}" not found'))
            return
        if not addr:
            self.send_json(503, status(503, "ServiceUnavailable", f"no address for {ns}/{name_port}"))
            return
        host, _, port = addr.rpartition(":")
        try:
            c = http.client.HTTPConnection(host, int(port), timeout=30)
            c.request("GET", path + ("?" + query if query else ""))
            r = c.getresponse()
            body = r.read(PROXY_MAX + 1)
            ctype = r.getheader("Content-Type", "application/octet-stream")
            code = r.status
            c.close()
        except (OSError, http.client.HTTPException) as e:
            self.send_json(502, status(502, "BadGateway", f"error trying to reach {addr}: {e}"))
            return
        if len(body) > PROXY_MAX:
            self.send_json(502, status(502, "BadGateway", "answer too large"))
            return
        self.rec["status"] = code
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def list(self, res, kind, api, q):
        st = self.server.state
        with st.cv:
            fault = None
            lf = st.list_faults[res]
            if lf and not (lf[0]["fault"] == "list410" and not q.get("continue")):
                fault = lf.pop(0)
            if fault and fault.get("then"):
                st.apply(fault["then"])
            if fault and fault["fault"] == "list500":
                self.send_json(500, status(500, "InternalError", "injected"))
                return
            if fault and fault["fault"] == "list429":
                self.send_json(429, status(429, "TooManyRequests", "injected"),
                               {"Retry-After": str(fault.get("retryAfter", 1))})
                return
            if fault and fault["fault"] == "list410":
                self.send_json(410, status(410, "Expired", "continue token expired"))
                return
            if q.get("continue"):
                snap_rv, _, off = q["continue"].partition(":")
                snap_rv, off = int(snap_rv), int(off)
            else:
                snap_rv, off = st.rv, 0
            objs = [o for o in st.state_at(res, snap_rv).values()
                    if selector_match(o, q.get("fieldSelector"), q.get("labelSelector"))]
        objs.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        limit = min(int(q.get("limit") or 500), st.page_size)
        page = objs[off:off + limit]
        md = {"resourceVersion": str(snap_rv)}
        if off + limit < len(objs):
            md["continue"] = "%d:%d" % (snap_rv, off + limit)
        self.send_json(200, {"kind": kind, "apiVersion": api, "metadata": md, "items": page})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def sent(self, typ, rv):
        with self.server.state.cv:
            self.rec["sent"].append({"type": typ, "rv": rv})

    def ended(self, how):
        with self.server.state.cv:
            self.rec["end"] = how

    def endless_error(self):
        """500 with a Status that never finishes: a client that reads
        error bodies to their end hangs here."""
        self.rec["status"] = 500
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.chunk(b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,'
                       b'"reason":"InternalError","message":"')
            stop = time.monotonic() + 120
            while time.monotonic() < stop:
                self.chunk(b"x" * 256)
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True

    def watch(self, res, q):
        st = self.server.state
        since = int(q.get("resourceVersion") or 0)
        fsel, lsel = q.get("fieldSelector"), q.get("labelSelector")

        def mine(e):
            return e[0] > since and e[1] == res and selector_match(e[3], fsel, lsel)
        timeout = float(q.get("timeoutSeconds") or 300)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        deadline = time.monotonic() + min(timeout, self.server.max_watch)
        with st.cv:
            wsf = st.watch_start_faults[res]
            start_fault = wsf.pop(0) if wsf else None
        if start_fault:
            self.endless_error()
            return
        self.rec["status"] = 200
        self.rec["sent"] = []
        self.rec["end"] = "open"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        drip = 0
        with st.cv:
            gen = st.generation
            if since < st.compacted:
                ev = {"type": "ERROR", "object": status(410, "Expired", "too old resource version")}
                self.chunk(json.dumps(ev).encode() + b"\n")
                self.chunk(b"")
                self.rec["end"] = "error410"
                return
        last_bookmark = time.monotonic()
        try:
            while True:
                bookmark_now = False
                with st.cv:
                    pending = [e for e in st.log if mine(e)]
                    fault = st.faults[res].pop(0) if st.faults[res] else None
                    if not pending and not fault and gen == st.generation:
                        st.cv.wait(0.2)
                        continue
                    cur_gen = st.generation
                    cur_rv = st.rv
                if fault:
                    kind = fault["fault"]
                    if kind == "error410":
                        ev = {"type": "ERROR", "object": status(410, "Expired", "too old resource version")}
                        self.chunk(json.dumps(ev).encode() + b"\n")
                        self.chunk(b"")
                        self.ended("error410")
                        return
                    if kind == "eof":
                        self.chunk(b"")
                        self.ended("eof")
                        return
                    if kind == "bookmark":
                        bookmark_now = True
                    if kind == "garbage":
                        self.chunk(b'garbage \x00\xff{"type":\n')
                        self.chunk(b'{"type":"MODIFIED","object":[1,2]}\n{not json at all}\n')
                        continue
                    if kind == "drip":
                        drip += int(fault.get("count", 1))
                        continue
                    if kind == "cut":
                        # wait for the next event and send only half of it
                        with st.cv:
                            while not [e for e in st.log if mine(e)]:
                                st.cv.wait(0.2)
                            e = [e for e in st.log if mine(e)][0]
                        data = json.dumps({"type": e[2], "object": e[3]}).encode() + b"\n"
                        self.chunk(data[:len(data) // 2])
                        self.ended("cut")
                        # drop the connection without the last chunk
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                for erv, _, typ, obj in pending:
                    data = json.dumps({"type": typ, "object": obj}).encode() + b"\n"
                    if drip > 0:
                        drip -= 1
                        for i in range(len(data)):
                            self.chunk(data[i:i + 1])
                    else:
                        self.chunk(data)
                    self.sent(typ, str(erv))
                    since = erv
                if cur_gen != gen or time.monotonic() > deadline:
                    self.chunk(b"")
                    self.ended("eof")
                    return
                if bookmarks and (bookmark_now or time.monotonic() - last_bookmark > 1.0):
                    bm = {"type": "BOOKMARK", "object": {"kind": "Pod" if res == "pods" else "EndpointSlice",
                          "metadata": {"resourceVersion": str(cur_rv)}}}
                    self.chunk(json.dumps(bm).encode() + b"\n")
                    self.sent("BOOKMARK", str(cur_rv))
                    since = max(since, cur_rv)
                    last_bookmark = time.monotonic()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.ended("closed")
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        # HTTPServer.server_bind() resolves the host name (socket.getfqdn):
        # a DNS query that blocks where no resolver answers. Not needed.
        import socketserver
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--token-file", help="written with the current token (rotated in place)")
    ap.add_argument("--port-file", help="the chosen port is written here")
    ap.add_argument("--listen", default="127.0.0.1",
                    help="address to serve on (default 127.0.0.1; a Pod's network reaches the host's bridge address)")
    ap.add_argument("--max-watch", type=float, default=300.0)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    with open(a.scenario) as f:
        scenario = json.load(f)
    state = State(scenario, a.token_file)
    srv = Server((a.listen, 0), Handler)
    srv.state = state
    srv.verbose = a.verbose
    srv.max_watch = a.max_watch
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(a.port_file + ".tmp", a.port_file)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    # Steps are timed from the first moment both initial LISTs are served.
    while True:
        with state.cv:
            listed = {r["path"] for r in state.requests
                      if r["auth_ok"] and "watch" not in r["query"]}
        if len(listed) >= len(RESOURCES):
            break
        time.sleep(0.05)
    t0 = time.monotonic()
    for step in scenario.get("steps", []):
        delay = t0 + step["at"] * a.time_scale - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if step["op"] == "end":
            break
        if step["op"] == "wait_file":
            while not os.path.exists(step["path"]):
                time.sleep(0.05)
            t0 = time.monotonic() - step["at"] * a.time_scale
        state.apply(step)
        sys.stderr.write("kube-double: step %.2f %s %s\n" % (step["at"], step["op"],
                         step.get("fault", step.get("uid", ""))))
        sys.stderr.flush()
    print("done", flush=True)
    # stay up so the client's watches keep running
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
