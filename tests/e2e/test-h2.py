#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""HTTP/2 and gRPC through a Pod's termination, as the agent records them
from the Pod's own sockets (docs/http-capture.md, "HTTP/2").

A simulated Pod (tools/termline-simpod, known to the API double) whose app
container runs a gRPC server (Debian's python3-grpcio, generic handlers, no
generated code) and whose istio-proxy container runs a gRPC client: both
in the Pod's cgroups, so each call is seen twice, as the app's inbound
stream and the client's outbound one. The agent runs with --http-capture
always, so the client's connection, opened before the deletion, is
followed from its preface and its header blocks are decoded. The client
starts slow calls, each with its own x-request-id in its metadata; the
Pod is deleted while they are in flight; the app gets SIGTERM:

--mode graceful  the server's SIGTERM handler calls server.stop(grace):
                 GOAWAY (gRPC's two: 2^31-1, then the last stream), the
                 in-flight calls finish OK. No HTTP/2 finding fires.
--mode killed    the server has no SIGTERM handler and dies: no GOAWAY,
                 its connection ends under the calls (the client sees
                 UNAVAILABLE). no_goaway_before_close and
                 streams_reset_during_drain name every call.
--mode cancel    the handler calls server.stop(None): GOAWAY, each call
                 ends with grpc-status UNAVAILABLE in its trailers, then
                 a RST_STREAM of its stream. streams_reset_during_drain
                 names every call by request ID and status.
--mode midstream the graceful stop with the default --http-capture windows:
                 the connection, opened before the termination window,
                 is first seen mid-stream: no call gets guessed headers,
                 its streams are counted with their headers unknown, its
                 GOAWAYs reported.
--mode h2load    plain h2: nghttpd in the app container, h2load in the
                 proxy's, pipelined streams (-m 10) on two connections,
                 during the termination: every request is an h2
                 http.request on both sides with its stream, and each
                 connection's http2.connection counts its streams; then
                 header blocks in HEADERS + CONTINUATION with a smaller
                 encoder table (a dynamic-table size update).

In every mode the closed document validates against the schema, and
`kubectl-termline explain NS/POD --from STATE` is run on it.
--keep-doc PATH copies the closed document there (tests/cli/data/h2)."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

NODE = "node-e2e"
NAMESPACE = "shop"
GRACE = 10
LINGER = 2
WAIT = 60
CALLS = 4          # in flight at the deletion
CALL_MS = 4000     # each call's work on the server: in flight past the SIGTERM, sanitizers too
METHOD = "/e2e.Slow/Call"
H2LOAD_N = 400
H2LOAD_BIG_N = 20
CLI = os.path.join(E.BUILD, "tools", "kubectl-termline", "kubectl-termline")
H2_RULES = ("no_goaway_before_close", "streams_after_goaway", "streams_reset_during_drain")


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- the gRPC server and client, run inside the Pod's cgroups ----

def server_main(port, mode, ready):
    """A gRPC server of one method that sleeps the milliseconds its request
    names; SIGTERM as --mode says."""
    from concurrent import futures
    import threading
    import grpc

    def call(req, ctx):
        time.sleep(int(req or b"0") / 1000)
        return b"ok:" + req

    handler = grpc.method_handlers_generic_handler(
        "e2e.Slow", {"Call": grpc.unary_unary_rpc_method_handler(call)})
    server = grpc.server(futures.ThreadPoolExecutor(16))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    if mode == "killed":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # dies at SIGTERM
    stop = threading.Event()
    if mode != "killed":
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(ready, "w"):
        pass
    while not stop.wait(0.1):
        pass
    server.stop(5 if mode == "graceful" else None).wait()
    return 0


def client_main(port, out, n, ms):
    """n concurrent calls of ms each on one channel, each with its own
    x-request-id; writes what each got (gRPC's code and details)."""
    import threading
    import grpc

    ch = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(ch).result(timeout=20)
    f = ch.unary_unary(METHOD)
    res = {}

    def one(rid, wait):
        t0 = time.time()
        try:
            f(str(wait).encode(), metadata=(("x-request-id", rid),), timeout=20)
            res[rid] = {"code": "OK", "details": "", "start": t0, "end": time.time()}
        except grpc.RpcError as e:
            res[rid] = {"code": e.code().name, "details": e.details() or "", "start": t0, "end": time.time()}

    # a quick call first (the connection is up, its tables in use), then
    # the slow ones, in flight together
    one(f"h2e-{os.getpid()}-warm", 10)
    ts = [threading.Thread(target=one, args=(f"h2e-{os.getpid()}-{i:02d}", ms)) for i in range(n)]
    for t in ts:
        t.start()
        time.sleep(0.05)  # stream ids in the calls' order
    with open(out + ".started", "w"):
        pass
    for t in ts:
        t.join()
    with open(out + ".tmp", "w") as fh:
        json.dump(res, fh)
    os.replace(out + ".tmp", out)
    ch.close()
    return 0


def in_cgroup(cgroup_dir):
    """preexec_fn: the child moves itself into the container's cgroup
    before it execs, so every socket it makes is the container's."""
    def f():
        with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    return f


# ---- the API double's view of the Pod ----

def make_scenario(pod, start_gate, stopped_gate):
    uid, name = pod["podUid"], pod["name"]
    ids = {c["name"]: c["containerId"] for c in pod["containers"]}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    started = rfc3339(now - timedelta(minutes=5))

    def cond(t, s):
        return {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": started}

    def cstatus(n, state, ready):
        return {"name": n, "containerID": "containerd://" + ids[n], "image": "x", "imageID": "x",
                "ready": ready, "restartCount": 0, "started": "running" in state, "state": state}

    def pod_obj(deleting=False, terminated=False):
        md = {"name": name, "namespace": NAMESPACE, "uid": uid, "labels": {"app": "grpc"},
              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "grpc-5d9c7",
                                   "uid": "rs-h2", "controller": True}],
              "creationTimestamp": started}
        if deleting:
            md["deletionTimestamp"] = rfc3339(now + timedelta(seconds=GRACE))
            md["deletionGracePeriodSeconds"] = GRACE
        st = ({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                              "finishedAt": rfc3339(now)}}
              if terminated else {"running": {"startedAt": started}})
        r = "False" if deleting else "True"
        return {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": GRACE,
                         "containers": [{"name": "app", "image": "x"}, {"name": "istio-proxy", "image": "x"}]},
                "status": {"phase": "Succeeded" if terminated else "Running", "podIP": pod["ip"],
                           "podIPs": [{"ip": pod["ip"]}], "startTime": started,
                           "conditions": [cond("Ready", r), cond("ContainersReady", r)],
                           "containerStatuses": [cstatus("app", st, not deleting),
                                                 cstatus("istio-proxy", st, not deleting)]}}

    P = "pods"
    steps = [
        {"at": 0.0, "op": "wait_file", "path": start_gate},
        {"at": 0.0, "op": "modify", "resource": P, "object": pod_obj(deleting=True)},
        {"at": 0.1, "op": "wait_file", "path": stopped_gate},
        {"at": 0.2, "op": "modify", "resource": P, "object": pod_obj(deleting=True, terminated=True)},
        {"at": 0.4, "op": "delete", "resource": P, "uid": uid},
        {"at": 0.6, "op": "end"},
    ]
    return {"node": NODE, "token": "t0", "objects": [{"resource": P, "object": pod_obj()}], "steps": steps}


# ---- checks ----

def explain(state, pod, *extra):
    r = subprocess.run([CLI, "explain", f"{NAMESPACE}/{pod['name']}", "--from", state] + list(extra),
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NO_COLOR="1", COLUMNS="200"))
    assert r.returncode == 0, f"explain exited {r.returncode}: {r.stderr}"
    return r.stdout


def h2_requests(doc, container, direction):
    return [e for e in doc["events"] if e["type"] == "http.request" and e.get("protocol") == "h2"
            and e["container"] == container and e["direction"] == direction]


def check_grpc(mode, doc, results, state, pod):
    evs = doc["events"]
    rids = sorted(r for r in results if not r.endswith("-warm"))
    # what the client saw
    want_code = {"graceful": "OK", "killed": "UNAVAILABLE", "cancel": "UNAVAILABLE"}[mode]
    got = {r: results[r]["code"] for r in rids}
    assert set(got.values()) == {want_code}, f"the client saw {got}, wanted {want_code} for each"

    # every call, on both sides, with its ID, h2, its stream and its status
    legs = {}
    for ctr, direction in (("app", "inbound"), ("istio-proxy", "outbound")):
        by_id = {}
        for e in h2_requests(doc, ctr, direction):
            assert e["requestId"] not in by_id, f"{ctr} {direction}: {e['requestId']} twice"
            by_id[e["requestId"]] = e
        for rid in rids:
            e = by_id.get(rid)
            assert e, (f"{ctr} {direction}: no h2 http.request for {rid}; h2 requests: "
                       f"{[(x['requestId'], x.get('streamId')) for x in by_id.values()]}")
            assert e["source"] == "kernel" and e["method"] == "POST" and e["path"] == METHOD, e
            assert e["streamId"] % 2 == 1, e
            if mode == "graceful":
                assert e["status"] == 200 and e.get("grpcStatus") == 0 and "error" not in e, e
            elif mode == "cancel":
                assert e["status"] == 200 and e.get("grpcStatus") == 14, e
                assert e.get("grpcMessage") == results[rid]["details"], (e, results[rid])
            else:
                assert "grpcStatus" not in e and e.get("error") in ("closed", "reset"), e
        legs[ctr] = by_id
        # the two sides agree on each call's stream
        streams = sorted(by_id[r]["streamId"] for r in rids)
        assert len(set(streams)) == len(rids), streams
    for rid in rids:
        a, p = legs["app"][rid], legs["istio-proxy"][rid]
        assert a["streamId"] == p["streamId"], (a, p)
    last = max(legs["app"][r]["streamId"] for r in rids)

    goaways = [e for e in evs if e["type"] == "http2.goaway"]
    rsts = [e for e in evs if e["type"] == "http2.rst_stream"]
    conns = [e for e in evs if e["type"] == "http2.connection"]
    sent = [g for g in goaways if g["container"] == "app" and g["direction"] == "sent"]
    if mode == "killed":
        assert not sent, f"a GOAWAY from a server killed at SIGTERM: {sent}"
    else:
        # gRPC's graceful shutdown: 2^31-1 first, then the last stream it took
        assert [g["lastStreamId"] for g in sent] == [2147483647, last], sent
        assert sent[-1]["errorName"] == ("NO_ERROR" if mode == "graceful" else "INTERNAL_ERROR"), sent
        assert all(g["connDirection"] == "inbound" for g in sent), sent
        recv = [g for g in goaways if g["container"] == "istio-proxy" and g["direction"] == "received"]
        assert [g["lastStreamId"] for g in recv] == [2147483647, last], recv
    if mode == "cancel":
        # each call's stream reset by the server after its trailers
        want = sorted(legs["app"][r]["streamId"] for r in rids)
        rs = sorted(e["streamId"] for e in rsts if e["container"] == "app" and e["direction"] == "sent")
        assert rs == want, f"RST_STREAMs sent {rs}, the calls' streams {want}"
        assert all("requestId" not in e or isinstance(e["requestId"], str) for e in rsts), rsts
    else:
        assert not [e for e in rsts if e["container"] == "app"], rsts
    app_conns = [c for c in conns if c["container"] == "app"]
    assert len(app_conns) == 1, conns
    c = app_conns[0]
    assert c["direction"] == "inbound" and c["decoded"] is True and c["streams"] == len(rids) + 1, c
    assert c["goawaysSent"] == (0 if mode == "killed" else 2), c
    assert c["streamsOpenAtEnd"] == (len(rids) if mode == "killed" else 0), c

    # the findings: the document's own and explain's
    rules = {f["rule"]: f for f in doc["findings"]}
    out = json.loads(explain(state, pod, "-o", "json"))
    erules = {f["rule"]: f for f in out["findings"]}
    assert sorted(r for r in rules if r in H2_RULES) == sorted(r for r in erules if r in H2_RULES), \
        f"the document's findings (termline-findings at its close) {list(rules)}, explain's {list(erules)}"
    text = explain(state, pod)
    if mode == "graceful":
        fired = [r for r in erules if r in H2_RULES]
        assert not fired, f"graceful stop: {fired}: {json.dumps([erules[r] for r in fired], indent=1)[:2000]}"
        return text
    f = erules.get("streams_reset_during_drain")
    assert f, f"no streams_reset_during_drain: {list(erules)}"
    assert sorted(f["requestIds"]) == rids, (f["requestIds"], rids)
    outcome = "UNAVAILABLE" if mode == "cancel" else None
    for call in f["calls"]:
        if outcome:
            assert call["outcome"] == outcome and call["grpcStatus"] == 14, call
        else:
            assert call["outcome"].startswith("no status (") and call["grpcStatus"] is None, call
    if mode == "killed":
        g = erules.get("no_goaway_before_close")
        assert g, f"no no_goaway_before_close: {list(erules)}"
        assert sorted(g["requestIds"]) == rids, (g["requestIds"], rids)
        assert g["severity"] == "error" and g["numbers"]["streamsOpenAtEnd"] >= len(rids), g
        assert "server.stop(grace)" in g["recommendation"]["setting"], g["recommendation"]
    else:
        assert "no_goaway_before_close" not in erules, erules["no_goaway_before_close"]
    assert "streams_after_goaway" not in erules, erules["streams_after_goaway"]
    # explain's text names each failed call by its request ID and status
    for rid in rids:
        assert rid in text, f"explain does not name {rid}:\n{text}"
    if mode == "cancel":
        assert "UNAVAILABLE" in text, text
    return text


def check_midstream(doc, results, state, pod):
    """The client's connection was opened before the capture attached (the
    default --http-capture windows: the termination window opens at the
    deletion): its header blocks cannot be decoded, so no call of it is an
    http.request with guessed headers; its streams are counted, its
    GOAWAYs reported with their last-stream-id."""
    evs = doc["events"]
    rids = sorted(r for r in results if not r.endswith("-warm"))
    assert {results[r]["code"] for r in rids} == {"OK"}, results
    h2 = [e for e in evs if e["type"] == "http.request" and e.get("protocol") == "h2"]
    assert not h2, f"HTTP/2 requests with headers from a connection first seen mid-stream: {h2[:3]}"
    sent = [g for g in evs if g["type"] == "http2.goaway" and g["container"] == "app" and g["direction"] == "sent"]
    last = 2 * len(rids) + 1  # the warm call's stream 1, then 3, 5, ...
    assert [g["lastStreamId"] for g in sent] == [2147483647, last], sent
    conns = [c for c in evs if c["type"] == "http2.connection" and c["container"] == "app"]
    assert len(conns) == 1, conns
    c = conns[0]
    assert c["decoded"] is False and "connStart" not in c, c
    assert c["streamsHeadersUnknown"] == len(rids) and c["streams"] == len(rids), c
    assert c["goawaysSent"] == 2 and c["streamsOpenAtEnd"] == 0, c
    out = json.loads(explain(state, pod, "-o", "json"))
    fired = [f["rule"] for f in out["findings"] if f["rule"] in H2_RULES]
    assert not fired, fired
    return (f"{len(rids)} calls on a connection first seen mid-stream: no headers guessed, "
            f"{c['streamsHeadersUnknown']} streams counted, GOAWAY last-stream-id {last}")


def check_h2load(doc, load_out, state, pod):
    evs = doc["events"]
    m = [ln for ln in load_out.splitlines() if ln.startswith("requests:")]
    assert m, load_out
    # "requests: 400 total, 400 started, 400 done, 400 succeeded, 0 failed, ..."
    fields = {v.split(" ", 1)[1].strip(): int(v.split(" ", 1)[0]) for v in
              (p.strip() for p in m[0][len("requests:"):].split(","))}
    succeeded = fields["succeeded"]
    assert succeeded > 0, load_out
    big = [e for e in doc["events"] if e["type"] == "http.request" and e.get("requestId") == "h2load-big-id"]
    for ctr, direction in (("app", "inbound"), ("istio-proxy", "outbound")):
        b = [e for e in big if e["container"] == ctr and e["direction"] == direction]
        assert len(b) == H2LOAD_BIG_N and all(e["status"] == 200 and e["protocol"] == "h2" and
                                              e["path"] == "/index.html" for e in b), \
            f"{ctr}: {len(b)} of {H2LOAD_BIG_N} requests with HEADERS + CONTINUATION: {b[:2]}"
    doc = dict(doc, events=[e for e in doc["events"] if e not in big])
    inb = h2_requests(doc, "app", "inbound")
    outb = h2_requests(doc, "istio-proxy", "outbound")
    ok_in = [e for e in inb if e["status"] == 200]
    ok_out = [e for e in outb if e["status"] == 200]
    assert succeeded == H2LOAD_N, load_out
    assert len(ok_out) == succeeded, f"client: {succeeded} succeeded, timeline: {len(ok_out)} outbound 200s"
    assert len(ok_in) == succeeded, f"client: {succeeded} succeeded, timeline: {len(ok_in)} inbound 200s"
    for e in ok_in:
        assert e["method"] == "GET" and e["path"] == "/index.html" and e["requestId"] == "h2load-fixed-id", e
        assert e["streamId"] % 2 == 1, e
    # per connection, distinct streams 1, 3, 5, ...
    per = {}
    for e in ok_in:
        per.setdefault(e["conn"], []).append(e["streamId"])
    assert len(per) == 2, f"two connections wanted: {list(per)}"
    # every stream of each connection (-m 10: ten in flight at once), none
    # missing: 1, 3, 5, ...
    for conn, ids in per.items():
        assert sorted(ids) == list(range(1, 2 * len(ids), 2)), f"conn {conn}: streams {sorted(ids)[:20]}..."
    conns = [c for c in evs if c["type"] == "http2.connection" and c["container"] == "app"]
    assert len(conns) == 3 and all(c["decoded"] and c["direction"] == "inbound" and
                                   c["streamsHeadersUnknown"] == 0 and c["end"] == "closed" for c in conns), conns
    assert sorted(c["streams"] for c in conns) == sorted([H2LOAD_BIG_N] + [len(v) for v in per.values()]), \
        (conns, {k: len(v) for k, v in per.items()})
    explain(state, pod)
    return (f"{succeeded} requests on {len(per)} connections, 10 streams at once; "
            f"{H2LOAD_BIG_N} with HEADERS + CONTINUATION")


# ---- the scenario ----

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["graceful", "killed", "cancel", "midstream", "h2load"], default="graceful")
    ap.add_argument("--keep-doc")
    ap.add_argument("--server", nargs=3)
    ap.add_argument("--client", nargs=4)
    args = ap.parse_args()
    if args.server:
        return server_main(*args.server)
    if args.client:
        a = args.client
        return client_main(a[0], a[1], int(a[2]), int(a[3]))
    E.require_root()
    if args.mode != "h2load":
        try:
            import grpc  # noqa: F401
        except ImportError:
            raise AssertionError("python3-grpcio not installed for /usr/bin/python3 (tools/dev)")
    if args.mode == "h2load":
        for exe in ("nghttpd", "h2load"):
            if not shutil.which(exe):
                raise AssertionError(f"{exe} not found: install nghttp2-server and nghttp2-client (tools/dev)")

    work = tempfile.mkdtemp(prefix="termline-e2e-h2-")
    state, simstate = os.path.join(work, "state"), os.path.join(work, "simpod")
    start_gate, stopped_gate = os.path.join(work, "start"), os.path.join(work, "stopped")
    port, gport = E.free_port(), E.free_port()
    agent = double = pod = None
    procs = []
    try:
        pod = E.simpod("--state-dir", simstate, "create", "--prefix", f"termline-e2e-h2-{os.getpid()}",
                       "--namespace", NAMESPACE, "--name", f"grpc-{args.mode}-{os.getpid()}", "--no-netns",
                       "--app-port", str(E.free_port()), "--proxy-port", str(E.free_port()),
                       "--app-stop-delay", "0.2", "--drain-seconds", "0.5")
        uid = pod["podUid"]
        cg = {c["name"]: os.path.join(pod["cgroupRoot"], c["cgroupPath"]) for c in pod["containers"]}
        double = E.KubeDouble(work, make_scenario(pod, start_gate, stopped_gate)).start()
        cgroup_root = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
        logs = os.path.join(work, "no-pod-logs")
        os.makedirs(logs)
        agent = E.Agent(work, ["--kubeconfig", double.kubeconfig, "--node", NODE, "--state-dir", state,
                               "--cgroup-root", cgroup_root, "--pod-logs-dir", logs,
                               "--listen", f"127.0.0.1:{port}", "--linger", str(LINGER)] +
                        ([] if args.mode == "midstream" else ["--http-capture", "always"])).start()
        E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200, WAIT, "/readyz")
        if args.mode != "midstream":
            E.wait_for(lambda: b"HTTP capture: attached" in agent.read_log(), WAIT, "the capture attached")
        else:
            # no window open when the client connects (a Pod's start-up
            # window, if it got one, closes 10 s after it is Ready)
            E.wait_for(lambda: capture_state(agent) != "attached", E.deadline(30), "no capture window")
            print("before the client:", [ln for ln in agent.read_log().decode(errors="replace").splitlines()
                                         if "HTTP capture:" in ln])

        me = os.path.abspath(__file__)
        # the server in the app container, the client in the proxy's, both
        # started after the capture attached (their connection is followed
        # from its preface)
        if args.mode == "h2load":
            www = os.path.join(work, "www")
            os.makedirs(www)
            with open(os.path.join(www, "index.html"), "w") as fh:
                fh.write("x" * 2000)
            server = subprocess.Popen(["nghttpd", "--no-tls", "-d", www, "--address", "127.0.0.1", str(gport)],
                                      preexec_fn=in_cgroup(cg["app"]), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            procs.append(server)
            # (its socket.listen: a connection to see would be one more
            # HTTP/2 connection, nghttpd writes its SETTINGS at once)
            E.wait_for(lambda: any(e["type"] == "socket.listen" and e.get("port") == gport
                                   for e in agent.events(uid)), 20, "nghttpd listening")
        else:
            ready = os.path.join(work, "server.ready")
            out = os.path.join(work, "client.json")
            smode = "graceful" if args.mode == "midstream" else args.mode
            server = subprocess.Popen(["/usr/bin/python3", me, "--server", str(gport), smode, ready],
                                      preexec_fn=in_cgroup(cg["app"]))
            procs.append(server)
            E.wait_for(lambda: os.path.exists(ready) or server.poll() is not None, 30, "the gRPC server")
            assert server.poll() is None, f"the gRPC server exited {server.returncode}"
            client = subprocess.Popen(["/usr/bin/python3", me, "--client", str(gport), out, str(CALLS),
                                       str(CALL_MS)], preexec_fn=in_cgroup(cg["istio-proxy"]))
            procs.append(client)
            E.wait_for(lambda: os.path.exists(out + ".started") or client.poll() is not None, 30, "the calls")
            time.sleep(0.3)

        # the deletion: the termination window opens; the kubelet's SIGTERM
        with open(start_gate, "w"):
            pass
        E.wait_for(lambda: any(e["type"] == "pod.deletion_requested" for e in agent.events(uid)), WAIT,
                   "pod.deletion_requested")
        if args.mode == "midstream":
            # the termination window attaches the capture: the connection
            # is first seen now, mid-stream
            E.wait_for(lambda: capture_state(agent) == "attached", WAIT, "the capture attached")
        if args.mode == "h2load":
            # inside the termination window: the connections are followed
            # from their prefaces
            load = subprocess.run(["h2load", "-n", str(H2LOAD_N), "-c", "2", "-m", "10",
                                   "-H", "x-request-id: h2load-fixed-id",
                                   f"http://127.0.0.1:{gport}/index.html"],
                                  preexec_fn=in_cgroup(cg["istio-proxy"]), capture_output=True, text=True,
                                  timeout=WAIT)
            load_out = load.stdout + load.stderr
            assert load.returncode == 0, load_out
            # header blocks past one frame (HEADERS + CONTINUATION: a 40 KB
            # header, ~30 KB after Huffman, not indexed) and an encoder
            # table smaller than the default (a dynamic-table size update
            # in the first block)
            big = subprocess.run(["h2load", "-n", str(H2LOAD_BIG_N), "-c", "1", "-m", "10",
                                  "--encoder-header-table-size", "1024",
                                  "-H", "x-request-id: h2load-big-id", "-H", "x-big: " + "b" * 40000,
                                  f"http://127.0.0.1:{gport}/index.html"],
                                 preexec_fn=in_cgroup(cg["istio-proxy"]), capture_output=True, text=True,
                                 timeout=WAIT)
            assert big.returncode == 0 and f"{H2LOAD_BIG_N} succeeded" in big.stdout, big.stdout + big.stderr
        server.send_signal(signal.SIGTERM)
        if args.mode == "h2load":
            server.wait(10)
        else:
            assert client.wait(WAIT) == 0, "the gRPC client failed"
            rc = server.wait(WAIT)
            assert rc == (-signal.SIGTERM if args.mode == "killed" else 0), f"the gRPC server exited {rc}"
            with open(out) as fh:
                results = json.load(fh)
        procs = []
        E.simpod("--state-dir", simstate, "terminate", "--grace", "2", "--no-prestop")
        with open(stopped_gate, "w"):
            pass
        doc_path = os.path.join(state, "timelines", NAMESPACE, f"{pod['name']}_{uid}.json")
        E.wait_for(lambda: os.path.exists(doc_path), WAIT, doc_path)
        (doc,) = E.validate_documents([doc_path])
        if args.keep_doc:
            shutil.copyfile(doc_path, args.keep_doc)
        if args.mode == "h2load":
            what = check_h2load(doc, load_out, state, pod)
            print(f"ok h2load: {what}")
        elif args.mode == "midstream":
            print(f"ok midstream: {check_midstream(doc, results, state, pod)}")
        else:
            text = check_grpc(args.mode, doc, results, state, pod)
            fired = sorted(f["rule"] for f in doc["findings"] if f["rule"] in H2_RULES)
            print(f"ok {args.mode}: {CALLS} calls with their IDs, h2, streams and status; "
                  f"HTTP/2 findings: {fired or 'none'}")
            print(text)
        rc = agent.stop()
        assert rc == 0, f"termlined exited {rc}"
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if agent:
            agent.stop(signal.SIGKILL)
        if double:
            double.stop()
        if pod:
            E.simpod("--state-dir", simstate, "delete", check=False)
        shutil.rmtree(work, ignore_errors=True)


def capture_state(agent):
    """"attached", "detached" or None: the agent's last word on the HTTP
    capture program."""
    state = None
    for line in agent.read_log().decode(errors="replace").splitlines():
        if "HTTP capture: attached" in line:
            state = "attached"
        elif "HTTP capture: detached" in line:
            state = "detached"
    return state


if __name__ == "__main__":
    sys.exit(main())
