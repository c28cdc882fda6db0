#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Who was still sending: a simulated sidecar Pod (tools/termline-simpod, in
its own network namespace) terminates while three client Pods, each in a
network namespace of its own with its own address and known to the API
double as a Pod of its own workload, send requests with unique IDs:

- ingress-nginx/ingress-nginx-controller-7d9-x2k4q (Deployment, through its
  ReplicaSet) stops when the endpoint is removed;
- mesh/api-gateway-0 (StatefulSet) keeps sending for 2 s after the removal;
- monitoring/prober-7xk2p (DaemonSet) reuses a keep-alive connection opened
  before the deletion, for 1 s after the removal;

and the node itself (the root network namespace, whose address on the
Pod's link is the Node's InternalIP in the double: kube-proxy's SNAT)
sends a few too. The Pod's proxy keeps accepting while it drains and
answers 503 once its app closed its listener (at SIGTERM).

`kubectl-termline explain -o json --kubeconfig` must name every client by
namespace/name and workload in traffic_after_endpoint_removed, each lag
within 100 ms of what the client itself logged (its last request's send
time minus the endpoint's removal in the timeline), the failed request IDs
per consumer exactly those the client saw fail; the node's requests are the
node's, not a Pod's; keepalive_across_drain names the prober's connection.
With --no-resolve the consumers are addresses."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

NODE = "node-e2e"
NAMESPACE = "shop"
SERVICE = "web"
GRACE = 14
DRAIN = 9  # the proxy keeps accepting this long after its SIGTERM
LINGER = 2
WAIT = 60
CLI = os.path.join(E.BUILD, "tools", "kubectl-termline", "kubectl-termline")
REMOVE_AT = 2.5  # the endpoint leaves its slice this long after the deletion
INTERVAL = 0.1

CLIENTS = [
    {"mode": "stopper", "ns": "ingress-nginx", "name": "ingress-nginx-controller-7d9-x2k4q",
     "owner": ("ReplicaSet", "ingress-nginx-controller-7d9"), "workload": ("Deployment", "ingress-nginx-controller"),
     "after": 0.0},
    {"mode": "lagger", "ns": "mesh", "name": "api-gateway-0", "owner": ("StatefulSet", "api-gateway"),
     "workload": ("StatefulSet", "api-gateway"), "after": 2.0},
    {"mode": "keepalive", "ns": "monitoring", "name": "prober-7xk2p", "owner": ("DaemonSet", "prober"),
     "workload": ("DaemonSet", "prober"), "after": 1.0},
]


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s):
    """RFC 3339 with nanoseconds -> float seconds since the epoch."""
    base, _, frac = s.rstrip("Z").partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


# ---- a client, run inside its network namespace ----

def client_main(mode, target, stopfile, out):
    """Requests with unique IDs every INTERVAL until the time in stopfile
    (when it exists) has passed; logs each one's send time and outcome."""
    host, port = target.rsplit(":", 1)
    log = []
    conn = None
    i = 0
    while True:
        stop_at = None
        if os.path.exists(stopfile):
            with open(stopfile) as f:
                txt = f.read().strip()
            if txt:
                stop_at = float(txt)
        now = time.time()
        if stop_at is not None and now >= stop_at:
            break
        rid = f"{mode}-{i:04d}"
        i += 1
        rec = {"id": rid, "sent": now, "status": 0, "error": "", "fresh": conn is None or mode != "keepalive"}
        try:
            if conn is None or mode != "keepalive":
                if conn is not None:
                    conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=5)
            rec["sent"] = time.time()
            conn.request("GET", f"/{mode}", headers={"x-request-id": rid})
            r = conn.getresponse()
            r.read()
            rec["status"] = r.status
            if r.getheader("connection", "").lower() == "close" or mode != "keepalive":
                conn.close()
                conn = None
        except OSError as e:
            rec["error"] = str(e)
            conn = None
        log.append(rec)
        with open(out + ".tmp", "w") as f:
            json.dump(log, f)
        os.replace(out + ".tmp", out)
        time.sleep(INTERVAL)
    return 0


# ---- the scenario ----

def make_scenario(pod, host_ip, clients, start_gate, stopped_gate):
    uid, name, ip = pod["podUid"], pod["name"], pod["ip"]
    ids = {c["name"]: c["containerId"] for c in pod["containers"]}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    started = rfc3339(now - timedelta(minutes=5))

    def cond(t, s):
        return {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": started}

    def cstatus(n, state, ready):
        return {"name": n, "containerID": "containerd://" + ids[n], "image": "x", "imageID": "x",
                "ready": ready, "restartCount": 0, "started": "running" in state, "state": state}

    def pod_obj(deleting=False, terminated=False):
        md = {"name": name, "namespace": NAMESPACE, "uid": uid, "labels": {"app": SERVICE},
              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{SERVICE}-5d9c7",
                                   "uid": "rs-e2e", "controller": True}],
              "creationTimestamp": started}
        if deleting:
            md["deletionTimestamp"] = rfc3339(now + timedelta(seconds=GRACE))
            md["deletionGracePeriodSeconds"] = GRACE
        st = ({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": rfc3339(now)}}
              if terminated else {"running": {"startedAt": started}})
        r = "False" if deleting else "True"
        return {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": GRACE,
                         "containers": [{"name": "app", "image": "x"}, {"name": "istio-proxy", "image": "x"}]},
                "status": {"phase": "Succeeded" if terminated else "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                           "startTime": started,
                           "conditions": [cond("Ready", r), cond("ContainersReady", r)],
                           "containerStatuses": [cstatus("app", st, not deleting),
                                                 cstatus("istio-proxy", st, not deleting)]}}

    def client_pod(c, i):
        kind, oname = c["owner"]
        return {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": c["name"], "namespace": c["ns"], "uid": f"0c11e000-0000-4000-8000-00000000000{i}",
                             "creationTimestamp": started,
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": oname,
                                                  "uid": f"owner-{i}", "controller": True}]},
                "spec": {"nodeName": "node-clients", "containers": [{"name": "main", "image": "x"}]},
                "status": {"phase": "Running", "podIP": c["ip"], "podIPs": [{"ip": c["ip"]}]}}

    def node(n, addr, uidn):
        return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": n, "uid": uidn},
                "status": {"addresses": [{"type": "InternalIP", "address": addr}, {"type": "Hostname", "address": n}]}}

    def slice_obj(ours):
        eps = []
        if ours is not None:
            eps.append({"addresses": [ip], "conditions": ours, "nodeName": NODE,
                        "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": name, "uid": uid}})
        return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                "metadata": {"name": f"{SERVICE}-c0n5", "namespace": NAMESPACE, "uid": "0c115115-0000-4000-8000-1",
                             "labels": {"kubernetes.io/service-name": SERVICE}},
                "addressType": "IPv4", "ports": [{"name": "http", "port": pod["proxyPort"], "protocol": "TCP"}],
                "endpoints": eps}

    def step(at, op, res=None, **kw):
        s = {"at": at, "op": op}
        if res:
            s["resource"] = res
        s.update(kw)
        return s

    P, S = "pods", "endpointslices"
    rs = {"kind": "ReplicaSet", "apiVersion": "apps/v1",
          "metadata": {"name": "ingress-nginx-controller-7d9", "namespace": "ingress-nginx", "uid": "owner-0",
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "ingress-nginx-controller", "uid": "dep-0", "controller": True}]}}
    objects = [{"resource": P, "object": pod_obj()},
               {"resource": S, "object": slice_obj({"ready": True, "serving": True, "terminating": False})},
               {"resource": "replicasets", "object": rs},
               {"resource": "nodes", "object": node(NODE, host_ip, "node-uid-0")},
               {"resource": "nodes", "object": node("node-clients", "192.0.2.50", "node-uid-1")}]
    objects += [{"resource": P, "object": client_pod(c, i)} for i, c in enumerate(clients)]
    steps = [
        step(0.0, "wait_file", path=start_gate),
        step(0.0, "modify", P, object=pod_obj(deleting=True)),
        step(0.3, "modify", S, object=slice_obj({"ready": False, "serving": True, "terminating": True})),
        step(REMOVE_AT, "modify", S, object=slice_obj(None)),
        step(REMOVE_AT + 0.1, "wait_file", path=stopped_gate),
        step(REMOVE_AT + 0.2, "modify", P, object=pod_obj(deleting=True, terminated=True)),
        step(REMOVE_AT + 0.4, "delete", P, uid=uid),
        step(REMOVE_AT + 0.6, "end"),
    ]
    return {"node": NODE, "token": "t0", "objects": objects, "steps": steps}


def run(cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def link_client(i, pod_netns, pod_ip, tag):
    """A network namespace of the client's own, linked to the Pod's by a veth
    pair on a link-local /30 (169.254.251.0/24 is a range termline-simpod
    never gives a Pod), with a route to the Pod's address."""
    ns = f"tlc{tag}{i}"
    a, b = f"tc{tag}{i}", f"tp{tag}{i}"
    cip, pip = f"169.254.251.{4 * i + 2}", f"169.254.251.{4 * i + 1}"
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
    run(["ip", "link", "set", a, "netns", ns])
    run(["ip", "link", "set", b, "netns", pod_netns])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    run(["ip", "-n", ns, "addr", "add", f"{cip}/30", "dev", a])
    run(["ip", "-n", ns, "link", "set", a, "up"])
    run(["ip", "-n", pod_netns, "addr", "add", f"{pip}/30", "dev", b])
    run(["ip", "-n", pod_netns, "link", "set", b, "up"])
    run(["ip", "-n", ns, "route", "add", f"{pod_ip}/32", "via", pip])
    return ns, cip


def host_ip_of(pod_ip):
    """termline-simpod's /30: the host end is the Pod's address minus one."""
    a = pod_ip.split(".")
    return ".".join(a[:3] + [str(int(a[3]) - 1)])


def node_traffic(target, stop, log):
    """The node itself sends (from the root network namespace)."""
    host, port = target.rsplit(":", 1)
    i = 0
    while not stop.is_set():
        rid = f"node-{i:04d}"
        i += 1
        rec = {"id": rid, "sent": time.time(), "status": 0}
        try:
            c = http.client.HTTPConnection(host, int(port), timeout=5)
            c.request("GET", "/node", headers={"x-request-id": rid, "connection": "close"})
            r = c.getresponse()
            r.read()
            rec["status"] = r.status
            c.close()
        except OSError as e:
            rec["error"] = str(e)
        log.append(rec)
        stop.wait(0.25)


def explain(doc_port, kubeconfig, pod_name, *extra):
    r = subprocess.run([CLI, "explain", f"{NAMESPACE}/{pod_name}", "-o", "json", "--from",
                        f"http://127.0.0.1:{doc_port}", "--kubeconfig", kubeconfig] + list(extra),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return json.loads(r.stdout)["findings"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        return client_main(*sys.argv[2:6])
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-consumers-")
    state, simstate = os.path.join(work, "state"), os.path.join(work, "simpod")
    start_gate, stopped_gate = os.path.join(work, "start"), os.path.join(work, "stopped")
    port = E.free_port()
    tag = f"{os.getpid() % 100000}"
    agent = double = pod = term_proc = None
    netns, procs, node_stop, node_log = [], [], threading.Event(), []
    try:
        pod = E.simpod("--state-dir", simstate, "create", "--prefix", f"termline-e2e-cons-{os.getpid()}",
                       "--namespace", NAMESPACE, "--name", f"{SERVICE}-5d9c7-{os.getpid()}",
                       "--app-stop-delay", "0.5", "--drain-seconds", str(DRAIN))
        uid, pod_ip = pod["podUid"], pod["ip"]
        assert pod["netns"], pod
        target = f"{pod_ip}:{pod['proxyPort']}"
        host_ip = host_ip_of(pod_ip)
        clients = [dict(c) for c in CLIENTS]
        for i, c in enumerate(clients):
            ns, cip = link_client(i, pod["netns"], pod_ip, tag)
            netns.append(ns)
            c["netns"], c["ip"] = ns, cip
            c["stopfile"] = os.path.join(work, f"stop-{c['mode']}")
            c["log"] = os.path.join(work, f"client-{c['mode']}.json")
        double = E.KubeDouble(work, make_scenario(pod, host_ip, clients, start_gate, stopped_gate)).start()
        cgroup_root = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
        logs = os.path.join(work, "no-pod-logs")
        os.makedirs(logs)
        agent = E.Agent(work, ["--kubeconfig", double.kubeconfig, "--node", NODE, "--state-dir", state,
                               "--cgroup-root", cgroup_root, "--pod-logs-dir", logs,
                               "--listen", f"127.0.0.1:{port}", "--linger", str(LINGER)]).start()
        E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200 or (agent.proc.poll() is not None and (_ for _ in ()).throw(
            AssertionError(f"termlined exited: {agent.read_log()}"))), WAIT, "/readyz")

        # The clients start before the deletion: the prober's keep-alive
        # connection is older than the Pod's termination.
        me = os.path.abspath(__file__)
        for c in clients:
            procs.append(subprocess.Popen(["ip", "netns", "exec", c["netns"], "/usr/bin/python3", me, "--client",
                                           c["mode"], target, c["stopfile"], c["log"]]))
        for c in clients:
            E.wait_for(lambda c=c: os.path.exists(c["log"]) and
                       any(r["status"] == 200 for r in json.load(open(c["log"]))), WAIT, f"{c['mode']} answered")
        node_thread = threading.Thread(target=node_traffic, args=(target, node_stop, node_log), daemon=True)
        node_thread.start()
        time.sleep(0.5)
        with open(start_gate, "w"):
            pass

        # The kubelet starts at the deletion: SIGTERM at once (no preStop).
        def event(pred, what):
            return E.wait_for(lambda: next((e for e in agent.events(uid) if pred(e)), None), WAIT, what)
        event(lambda e: e["type"] == "pod.deletion_requested", "pod.deletion_requested")
        term_proc = subprocess.Popen([E.SIMPOD, "--state-dir", simstate, "terminate", "--grace", str(GRACE),
                                      "--no-prestop"], stdout=subprocess.PIPE, text=True)
        removed = event(lambda e: e["type"] == "endpoint.removed", "endpoint.removed")
        t_removed = parse_time(removed["time"])
        node_stop.set()
        for c in clients:
            with open(c["stopfile"], "w") as f:
                f.write(str(t_removed + c["after"]))
        for p in procs:
            assert p.wait(WAIT) == 0
        procs = []
        out, _ = term_proc.communicate(timeout=WAIT)
        term_proc = None
        with open(stopped_gate, "w"):
            pass
        doc_path = os.path.join(state, "timelines", NAMESPACE, f"{pod['name']}_{uid}.json")
        E.wait_for(lambda: os.path.exists(doc_path), WAIT, doc_path)
        (doc,) = E.validate_documents([doc_path])

        findings = explain(port, double.kubeconfig, pod["name"])
        by_rule = {f["rule"]: f for f in findings}
        assert "traffic_after_endpoint_removed" in by_rule, json.dumps(findings, indent=1)[:3000]
        f = by_rule["traffic_after_endpoint_removed"]
        cons = {c["consumer"]: c for c in f["consumers"]}
        for c in clients:
            key = f"{c['ns']}/{c['name']}"
            assert key in cons, (key, list(cons))
            got = cons[key]
            assert got["kind"] == "Pod" and got["namespace"] == c["ns"] and got["name"] == c["name"], got
            assert got["workload"] == {"kind": c["workload"][0], "name": c["workload"][1]}, got
            assert got["address"] == c["ip"], got
            log = json.load(open(c["log"]))
            last = max(r["sent"] for r in log)
            want_lag = last - t_removed
            assert abs(got["lagSeconds"] - want_lag) <= 0.1, (key, got["lagSeconds"], want_lag)
            failed = sorted(r["id"] for r in log if r["status"] != 200)
            assert all(r["status"] for r in log), f"{key}: a request without an HTTP answer: {log}"
            assert failed, f"{key} saw no failure: the app closed its listener at SIGTERM"
            assert sorted(got["failedRequestIds"]) == failed, (key, got["failedRequestIds"], failed)
            assert got["failed"] == len(failed), got
            print(f"ok {key} ({got['workload']['kind']} {got['workload']['name']}): lag {got['lagSeconds']:.3f} s "
                  f"(client: {want_lag:.3f} s), {len(failed)} failed")
        # the worst, named in words
        assert f["severity"] == "error", f
        assert f["summary"].startswith("mesh/api-gateway-0 kept sending"), f["summary"]
        # the node's own requests are the node's
        node = cons.get(f"node/{NODE}")
        assert node and node["kind"] == "Node", list(cons)
        assert node["requests"] >= 1 and not [k for k in cons if k.startswith(("169.254.", host_ip))], list(cons)
        # the prober's keep-alive connection opened before the deletion
        k = by_rule.get("keepalive_across_drain")
        assert k, json.dumps(findings, indent=1)[:3000]
        prober = clients[2]
        kc = [c for c in k["connections"] if c["peer"].startswith(prober["ip"] + ":")]
        assert len(kc) == 1 and kc[0]["connStartS"] is None and kc[0]["requests"] >= 5, k
        plog = json.load(open(prober["log"]))
        assert [r for r in plog if r["fresh"]] == plog[:1], "the prober reconnected: not one connection"
        assert sorted(kc[0]["failedRequestIds"]) == sorted(r["id"] for r in plog if r["status"] != 200), kc
        print(f"ok keepalive_across_drain: {prober['ns']}/{prober['name']}'s connection, "
              f"{kc[0]['requests']} requests after SIGTERM")

        # without the API: addresses
        plain = {x["rule"]: x for x in explain(port, double.kubeconfig, pod["name"], "--no-resolve")}
        keys = {c["consumer"] for c in plain["traffic_after_endpoint_removed"]["consumers"]}
        assert {c["ip"] for c in clients} | {host_ip} <= keys, keys
        print("ok --no-resolve: consumers by address")
    finally:
        node_stop.set()
        for p in procs:
            p.kill()
            p.wait()
        if term_proc:
            term_proc.kill()
            term_proc.wait()
        if agent:
            agent.stop()
        if double:
            double.stop()
        for ns in netns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        if pod:
            E.simpod("--state-dir", simstate, "delete", check=False)
        # TERMLINE_E2E_KEEP=1: the state dir, the clients' logs and the
        # double's scenario stay (tests/cli/data/consumers was recorded so)
        if os.environ.get("TERMLINE_E2E_KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
