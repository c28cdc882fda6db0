#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What naming a timeline's consumers costs: kubectl-termline explain on
one timeline of --requests requests from --peers distinct addresses (the
findings, then the same with the peers resolved against the API double
holding a Pod for each address: API calls and time), and rollout over
--pods timelines of one Deployment's replaced Pods. Prints figures;
asserts nothing (bench/README.md, "bench-consumers"). Needs no root."""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import ssl
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import e2elib as E  # noqa: E402

BASE = datetime(2026, 12, 1, 3, 0, 0, tzinfo=timezone.utc)


def ts(ms):
    t = BASE + timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}000Z"


def peer_ip(i):
    return f"10.9.{i // 250}.{i % 250 + 1}"


def document(name, uid, peers, requests):
    """A timeline: deletion at 0, not ready at 100 ms, SIGTERM at 200 ms,
    the endpoint removed at 1 s; requests spread over 0..3 s from the peers
    in turn, a connection per 8 requests, 503 after the app's listener
    closed at 300 ms."""
    evs = [{"time": ts(0), "source": "api", "type": "pod.deletion_requested", "container": None,
            "gracePeriodSeconds": 30},
           {"time": ts(100), "source": "api", "type": "endpoint.condition", "container": None, "service": "web",
            "endpointSlice": "web-abc", "ready": False, "serving": True, "terminating": True},
           {"time": ts(200), "source": "kernel", "type": "process.signal", "container": "app", "signal": "SIGTERM",
            "signo": 15, "pid": 10, "comm": "app", "senderPid": 1, "senderComm": "containerd-shim",
            "result": "delivered"},
           {"time": ts(300), "source": "kernel", "type": "socket.listen_closed", "container": "app",
            "address": "0.0.0.0", "port": 8080},
           {"time": ts(1000), "source": "api", "type": "endpoint.removed", "container": None, "service": "web",
            "endpointSlice": "web-abc"}]
    for i in range(requests):
        ms = 3000.0 * i / requests
        c = i // 8
        p = c % peers
        evs.append({"time": ts(ms), "source": "kernel", "type": "http.request", "container": "istio-proxy",
                    "requestId": f"{uid[:8]}-{i:07d}", "method": "GET", "path": "/", "start": ts(ms),
                    "status": 503 if ms > 300 else 200, "durationMs": 1, "direction": "inbound",
                    "peer": f"{peer_ip(p)}:{30000 + c % 30000}", "conn": c + 1,
                    "connStart": ts(max(ms - 5, 0))})
    evs.sort(key=lambda e: e["time"])
    return {"apiVersion": "termline/v1",
            "pod": {"namespace": "shop", "name": name, "uid": uid, "node": "n1", "ip": "10.0.0.5",
                    "owner": {"kind": "ReplicaSet", "name": "web-5d9c7"}, "terminationGracePeriodSeconds": 30},
            "containers": [{"name": "app", "containerID": "containerd://a", "role": "main", "cgroupId": 1},
                           {"name": "istio-proxy", "containerID": "containerd://b", "role": "sidecar",
                            "cgroupId": 2}],
            "events": evs, "findings": [], "complete": True,
            "loss": {"kernelEventsDropped": 0, "eventsAggregated": 0, "eventsDropped": 0, "diskErrors": 0,
                     "agentRestarts": 0},
            "recorder": {}}


def write(state, doc):
    d = os.path.join(state, "timelines", "shop")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{doc['pod']['name']}_{doc['pod']['uid']}.json"), "w") as f:
        json.dump(doc, f)


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r.stdout, wall, cpu, after.ru_maxrss / 1024


def scenario(peers):
    started = "2026-11-30T00:00:00Z"
    objs = [{"resource": "nodes", "object": {"kind": "Node", "metadata": {"name": "n1", "uid": "node-1"},
                                               "status": {"addresses": [{"type": "InternalIP",
                                                                         "address": "192.0.2.1"}]}}}]
    for k in range(20):
        objs.append({"resource": "replicasets", "object": {
            "kind": "ReplicaSet", "metadata": {"name": f"client-{k}-6f8", "namespace": "load", "uid": f"rs-{k}",
                                               "ownerReferences": [{"kind": "Deployment", "name": f"client-{k}",
                                                                    "controller": True}]}}})
    for i in range(peers):
        k = i % 20
        objs.append({"resource": "pods", "object": {
            "kind": "Pod", "metadata": {"name": f"client-{k}-6f8-{i:05d}", "namespace": "load", "uid": f"p-{i}",
                                        "creationTimestamp": started,
                                        "ownerReferences": [{"kind": "ReplicaSet", "name": f"client-{k}-6f8",
                                                             "controller": True}]},
            "spec": {"nodeName": "elsewhere"}, "status": {"podIP": peer_ip(i), "podIPs": [{"ip": peer_ip(i)}]}}})
    return {"node": "n1", "token": "t0", "pageSize": 500, "objects": objs, "steps": []}


def api_calls(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/debug/requests", context=ctx, timeout=10) as r:
        return len(json.load(r)["requests"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (default ./build)")
    ap.add_argument("--peers", type=int, default=2000, help="distinct peer addresses (default 2000)")
    ap.add_argument("--requests", type=int, default=100000, help="requests in the one timeline (default 100000)")
    ap.add_argument("--pods", type=int, default=200, help="replaced Pods for rollout (default 200)")
    ap.add_argument("--pod-requests", type=int, default=500, help="requests per rollout timeline (default 500)")
    ap.add_argument("--pod-peers", type=int, default=20, help="peers per rollout timeline (default 20)")
    a = ap.parse_args()
    cli = os.path.join(a.build, "tools", "kubectl-termline", "kubectl-termline")
    work = tempfile.mkdtemp(prefix="termline-bench-consumers-")
    double = None
    try:
        one, many = os.path.join(work, "one"), os.path.join(work, "many")
        doc = document("web-big", "00000000-0000-4000-8000-000000000001", a.peers, a.requests)
        write(one, doc)
        size = os.path.getsize(os.path.join(one, "timelines", "shop",
                                            "web-big_00000000-0000-4000-8000-000000000001.json"))
        print(f"one timeline: {a.requests} requests from {a.peers} peers, {size / 1e6:.1f} MB")
        out, wall, cpu, rss = timed([cli, "explain", "shop/web-big", "--from", one, "-o", "json", "--no-resolve"])
        f = {x["rule"]: x for x in json.loads(out)["findings"]}["traffic_after_endpoint_removed"]
        print(f"  explain -o json, unresolved: {wall:.2f} s wall, {cpu:.2f} s CPU, max RSS {rss:.0f} MiB, "
              f"{len(f['consumers'])} consumers")
        double = E.KubeDouble(work, scenario(a.peers)).start()
        before = api_calls(double.port)
        out, wall, cpu, rss = timed([cli, "explain", "shop/web-big", "--from", one, "-o", "json",
                                     "--kubeconfig", double.kubeconfig])
        calls = api_calls(double.port) - before - 0
        f = {x["rule"]: x for x in json.loads(out)["findings"]}["traffic_after_endpoint_removed"]
        named = sum(1 for c in f["consumers"] if c.get("kind") == "Pod")
        print(f"  explain -o json, resolved: {wall:.2f} s wall, {cpu:.2f} s CPU, {calls} API calls "
              f"({a.peers} addresses, {a.peers + 1} Pods in the API, 20 ReplicaSets), {named} consumers named")
        for i in range(a.pods):
            write(many, document(f"web-5d9c7-{i:05d}", f"00000000-0000-4000-8000-{i:012d}", a.pod_peers,
                                 a.pod_requests))
        print(f"rollout: {a.pods} timelines x {a.pod_requests} requests from {a.pod_peers} peers each")
        out, wall, cpu, rss = timed([cli, "rollout", "deployment/web", "-n", "shop", "--from", many, "-o", "json",
                                     "--no-resolve"])
        print(f"  rollout -o json, unresolved: {wall:.2f} s wall, {cpu:.2f} s CPU, max RSS {rss:.0f} MiB, "
              f"{len(json.loads(out)['consumers'])} consumers")
        before = api_calls(double.port)
        out, wall, cpu, rss = timed([cli, "rollout", "deployment/web", "-n", "shop", "--from", many, "-o", "json",
                                     "--kubeconfig", double.kubeconfig])
        calls = api_calls(double.port) - before
        c = json.loads(out)["consumers"]
        print(f"  rollout -o json, resolved: {wall:.2f} s wall, {cpu:.2f} s CPU, {calls} API calls, "
              f"{len(c)} consumers (workloads)")
    finally:
        if double:
            double.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
