#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline against real agents (root): two simulated nodes, each a
termlined with its own simulated Pod of the Deployment `web`, behind one
API double holding both Pods, their ReplicaSets and Deployment, the
EndpointSlice and the two agent Pods. Both Pods terminate under load with
the sidecar race. Then every source: the kubeconfig (the agent on the
Pod's node through the API server's pod proxy), --from DIR (a state dir),
--from URL (one agent); `check` exits; and `rollout deployment/web` over
both nodes' agents: every Pod, the failed requests in total and by
finding, and one recommendation that covers every Pod."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
import e2elib as E  # noqa: E402

CLI = os.path.join(E.BUILD, "tools", "kubectl-termline", "kubectl-termline")
NS = "shop"
NODES = ["node-a", "node-b"]
REMOVE_AFTER = 1.5


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_scenario(pods, agent_ports, gate, gate2):
    now = datetime.now(timezone.utc).replace(microsecond=0)
    started = rfc3339(now - timedelta(minutes=2))

    def cond(t, s):
        return {"type": t, "status": s, "lastTransitionTime": started}

    def pod_obj(pod, node, deleting=False, ready=True, terminated=False):
        ids = {c["name"]: c["containerId"] for c in pod["containers"]}
        md = {"name": pod["name"], "namespace": NS, "uid": pod["podUid"], "labels": {"app": "web"},
              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c7",
                                   "uid": "rs-1", "controller": True}], "creationTimestamp": started}
        if deleting:
            md["deletionTimestamp"] = rfc3339(now + timedelta(seconds=60))
            md["deletionGracePeriodSeconds"] = 6
        r = "True" if ready else "False"
        state = ({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": started}}
                 if terminated else {"running": {"startedAt": started}})
        return {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 6,
                         "containers": [{"name": "app", "image": "x"}, {"name": "istio-proxy", "image": "x"}]},
                "status": {"phase": "Succeeded" if terminated else "Running", "podIP": pod["ip"],
                           "podIPs": [{"ip": pod["ip"]}], "conditions": [cond("Ready", r), cond("ContainersReady", r)],
                           "containerStatuses": [
                               {"name": n, "containerID": "containerd://" + ids[n], "ready": ready and not terminated,
                                "restartCount": 0, "image": "x", "imageID": "x", "state": state}
                               for n in ("app", "istio-proxy")]}}

    def slice_obj(cond_):
        eps = []
        if cond_ is not None:
            eps = [{"addresses": [p["ip"]], "conditions": cond_, "nodeName": n,
                    "targetRef": {"kind": "Pod", "namespace": NS, "name": p["name"], "uid": p["podUid"]}}
                   for p, n in zip(pods, NODES)]
        return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                "metadata": {"name": "web-q8x2z", "namespace": NS, "uid": "slice-1",
                             "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4", "ports": [{"port": 15006}], "endpoints": eps}

    def agent(n, node):
        return {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": f"termline-{n}", "namespace": "termline", "uid": str(uuid.uuid4()),
                             "labels": {"app.kubernetes.io/component": "agent"}},
                "spec": {"nodeName": node, "containers": [{"name": "termlined", "image": "x"}]},
                "status": {"phase": "Running", "podIP": "127.0.0.1"}}

    def rs(name, rev):
        return {"kind": "ReplicaSet", "apiVersion": "apps/v1",
                "metadata": {"name": name, "namespace": NS, "uid": f"rs-{rev}",
                             "annotations": {"deployment.kubernetes.io/revision": str(rev)},
                             "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "dep-1"}]}}
    P, S = "pods", "endpointslices"
    objects = [{"resource": P, "object": pod_obj(p, n)} for p, n in zip(pods, NODES)]
    objects += [{"resource": P, "object": agent(n[-1], n)} for n in NODES]
    objects += [{"resource": S, "object": slice_obj({"ready": True, "serving": True, "terminating": False})},
                {"resource": "deployments", "object": {
                    "kind": "Deployment", "apiVersion": "apps/v1",
                    "metadata": {"name": "web", "namespace": NS, "uid": "dep-1",
                                 "annotations": {"deployment.kubernetes.io/revision": "2"}}}},
                {"resource": "replicasets", "object": rs("web-5d9c7", 1)},
                {"resource": "replicasets", "object": rs("web-7f8b9", 2)}]
    steps = [{"at": 0, "op": "wait_file", "path": gate}]
    steps += [{"at": 0, "op": "modify", "resource": P, "object": pod_obj(p, n, deleting=True)} for p, n in zip(pods, NODES)]
    steps += [{"at": 0, "op": "modify", "resource": S, "object": slice_obj({"ready": False, "serving": True, "terminating": True})},
              {"at": REMOVE_AFTER, "op": "modify", "resource": S, "object": slice_obj(None)},
              {"at": REMOVE_AFTER, "op": "wait_file", "path": gate2}]
    steps += [{"at": REMOVE_AFTER + 0.2, "op": "modify", "resource": P,
               "object": pod_obj(p, n, deleting=True, ready=False, terminated=True)} for p, n in zip(pods, NODES)]
    steps += [{"at": REMOVE_AFTER + 0.4, "op": "delete", "resource": P, "uid": p["podUid"]} for p in pods]
    return {"node": NODES[0], "token": "e2e-token", "objects": objects, "steps": steps,
            "podProxy": {f"termline/termline-{n[-1]}:9440": f"127.0.0.1:{port}" for n, port in zip(NODES, agent_ports)}}


class Load(threading.Thread):
    """Requests with unique IDs to one Pod's proxy until told to stop."""

    def __init__(self, pod, prefix):
        super().__init__(daemon=True)
        self.pod, self.prefix, self.results, self.stop = pod, prefix, [], threading.Event()

    def run(self):
        n = 0
        while not self.stop.is_set():
            rid, status = f"{self.prefix}-{n:04d}", 0
            n += 1
            try:
                c = http.client.HTTPConnection(self.pod["ip"], self.pod["proxyPort"], timeout=3)
                c.request("GET", "/orders", headers={"x-request-id": rid})
                r = c.getresponse()
                r.read()
                status = r.status
                c.close()
            except (OSError, http.client.HTTPException):
                pass
            self.results.append((rid, status))
            self.stop.wait(0.1)

    def failed(self):
        return sorted(r for r, s in self.results if s != 200)


def cli(*args, rc=0, kubeconfig=None):
    cmd = [CLI] + list(args) + (["--kubeconfig", kubeconfig] if kubeconfig else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ, NO_COLOR="1"))
    if rc is not None and r.returncode != rc:
        raise AssertionError(f"{' '.join(args)}: exit {r.returncode}, wanted {rc}\n{r.stdout}\n{r.stderr}")
    return r


def ids_of(text):
    return sorted({i for f in json.loads(text)["findings"] for i in f["requestIds"]})


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-cli-")
    pods, agents, loads, double = [], [], [], None
    simstates = [os.path.join(work, f"simpod-{n}") for n in NODES]
    try:
        for n, st in zip(NODES, simstates):
            pods.append(E.simpod("--state-dir", st, "create", "--prefix", f"termline-e2e-cli-{os.getpid()}-{n}",
                                 "--namespace", NS, "--name", f"web-5d9c7-{n[-1]}{os.getpid()}",
                                 "--drain-seconds", "4", "--app-stop-delay", "0.5",
                                 "--access-log-format", "istio-json" if n == "node-a" else "istio",
                                 "--pod-logs-dir", os.path.join(work, f"logs-{n}")))
        ports = [E.free_port() for _ in NODES]
        gate, gate2 = os.path.join(work, "delete"), os.path.join(work, "stopped")
        double = E.KubeDouble(work, make_scenario(pods, ports, gate, gate2)).start()
        # A short linger: as a timeline closes, the capture hands over what it
        # still holds of the Pod (log lines not read yet, inbound legs waiting
        # for their record), so explain's document has every failed request.
        linger = 2
        for n, pod, port in zip(NODES, pods, ports):
            state = os.path.join(work, f"state-{n}")
            cgroot = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
            agents.append(E.Agent(work, ["--kubeconfig", double.kubeconfig, "--node", n, "--state-dir", state,
                                         "--cgroup-root", cgroot, "--pod-logs-dir", os.path.join(work, f"logs-{n}"),
                                         "--listen", f"127.0.0.1:{port}", "--linger", str(linger)], name=f"termlined-{n}").start())
        for port in ports:
            E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200, 30, "termlined ready")
        # while the Pods exist: the agent on each Pod's node (from the Pod's
        # spec.nodeName), its timeline still open
        for n, pod in zip(NODES, pods):
            got = json.loads(cli("show", f"{NS}/{pod['name']}", "-o", "json", kubeconfig=double.kubeconfig).stdout)
            assert got["pod"]["uid"] == pod["podUid"] and got["recorder"]["node"] == n, (n, got["recorder"])
        for n, pod in zip(NODES, pods):
            loads.append(Load(pod, f"req-{n}"))
            loads[-1].start()
        # each node's kubelet, already watching: it acts when the deletion lands
        kgates = [f"{gate}-{n}" for n in NODES]
        kubelets = [subprocess.Popen([E.SIMPOD, "--state-dir", st, "terminate", "--grace", "6", "--no-prestop",
                                      "--when-file", kg], stdout=subprocess.DEVNULL)
                    for st, kg in zip(simstates, kgates)]
        E.wait_for(lambda: all(os.path.exists(kg + ".waiting") for kg in kgates), 30, "the kubelets waiting")
        time.sleep(0.5)
        for g in [gate] + kgates:
            open(g, "w").close()
        # a Service's dataplane stops sending once the endpoint is gone
        time.sleep(REMOVE_AFTER)
        for ld in loads:
            ld.stop.set()
            ld.join()
        for k in kubelets:
            assert k.wait(30) == 0
        open(gate2, "w").close()
        docs = [os.path.join(work, f"state-{n}", "timelines", NS, f"{p['name']}_{p['podUid']}.json")
                for n, p in zip(NODES, pods)]
        E.wait_for(lambda: all(os.path.exists(d) for d in docs), 30, "both closed timelines")
        failed = [ld.failed() for ld in loads]
        assert all(failed), f"no failed requests in the race: {failed}"
        kc = double.kubeconfig

        # the kubeconfig: the agent on each Pod's node, through the pod proxy
        for n, pod, doc, fl in zip(NODES, pods, docs, failed):
            target = f"{NS}/{pod['name']}"
            with open(doc) as f:
                want = json.load(f)
            got = json.loads(cli("show", target, "-o", "json", kubeconfig=kc).stdout)
            assert got["pod"]["uid"] == pod["podUid"] and got["events"] == want["events"], n
            got_ids = ids_of(cli("explain", target, "-o", "json", kubeconfig=kc).stdout)
            if got_ids != fl:
                st = dict(r for ld in loads for r in ld.results)
                reqs = {e["requestId"]: (e["source"], e.get("direction"), e["status"], e.get("error"), e["time"])
                        for e in want["events"] if e["type"] == "http.request"}
                raise AssertionError(f"{n}: explain names {len(got_ids)} failed requests, the client saw {len(fl)} fail; "
                                     f"only explain: {[(i, st.get(i), reqs.get(i)) for i in got_ids if i not in fl]}; "
                                     f"only the client: {[(i, st.get(i), reqs.get(i)) for i in fl if i not in got_ids]}; "
                                     f"the document's last event: {want['events'][-1]['time'] if want['events'] else None}")
            cli("check", target, kubeconfig=kc, rc=1)
        lst = json.loads(cli("list", "-n", NS, "-o", "json", kubeconfig=kc).stdout)["timelines"]
        assert sorted(t["name"] for t in lst) == sorted(p["name"] for p in pods), lst
        assert {t["name"]: t["failedRequests"] for t in lst} == {p["name"]: len(f) for p, f in zip(pods, failed)}, lst
        cli("show", f"{NS}/no-such-pod", kubeconfig=kc, rc=1)
        cli("check", f"{NS}/{pods[0]['name']}", f"{NS}/no-such-pod", kubeconfig=kc, rc=2)

        # --from DIR (node a's state dir) and --from URL (node b's agent)
        a_dir = os.path.join(work, f"state-{NODES[0]}")
        assert ids_of(cli("explain", f"{NS}/{pods[0]['name']}", "--from", a_dir, "-o", "json").stdout) == failed[0]
        b_url = f"http://127.0.0.1:{ports[1]}"
        assert ids_of(cli("explain", f"{NS}/{pods[1]['name']}", "--from", b_url, "-o", "json").stdout) == failed[1]
        cli("show", f"{NS}/{pods[1]['name']}", "--from", a_dir, rc=1)

        # rollout over both nodes' agents
        ro = json.loads(cli("rollout", "deployment/web", "-n", NS, "-o", "json", kubeconfig=kc).stdout)
        assert ro["replicaSets"] == ["web-5d9c7"], ro
        assert ro["pods"] == 2 and ro["podsTerminated"] == 2, ro
        assert ro["failedRequests"] == len(failed[0]) + len(failed[1]), (ro, failed)
        bf = ro["byFinding"]["requests_after_listener_closed"]
        assert bf == {"pods": 2, "failedRequests": len(failed[0]) + len(failed[1])}, bf
        # worst first: the list is every Pod, by failed requests, most first
        # (Pods with as many failures as each other may come in either order)
        expect = sorted(({"pod": p["name"], "failedRequests": len(f)} for p, f in zip(pods, failed)),
                        key=lambda w: (-w["failedRequests"], w["pod"]))
        got = ro["worstPods"]
        assert [w["failedRequests"] for w in got] == [w["failedRequests"] for w in expect], got
        assert sorted(got, key=lambda w: (-w["failedRequests"], w["pod"])) == expect, got
        rec = ro["recommendation"]
        assert rec["setting"] == "spec.containers[app].lifecycle.preStop.sleep.seconds" and rec["value"] >= 2, rec
        # the value covers every Pod: no Pod's own recommendation is larger
        for pod in pods:
            for f in json.loads(cli("explain", f"{NS}/{pod['name']}", "-o", "json", kubeconfig=kc).stdout)["findings"]:
                if f["rule"] == "requests_after_listener_closed":
                    assert f["recommendation"]["value"] <= rec["value"], (f, rec)
        text = cli("rollout", "deployment/web", "-n", NS, kubeconfig=kc).stdout
        flat = " ".join(text.split())
        total = len(failed[0]) + len(failed[1])
        assert flat.startswith(f"deployment {NS}/web: {total} requests failed in 2 of 2 Pods (2 terminated): "
                               "app closed :8080"), text
        assert f"Fix: hold app in a {rec['value']} s preStop sleep" in flat, text
        assert f"kubectl -n {NS} patch deployment web -p '" in text, text
        cli("rollout", "deployment/web", "-n", NS, "--revision", "2", kubeconfig=kc, rc=1)
        cli("rollout", "deployment/nope", "-n", NS, kubeconfig=kc, rc=1)

        # a context with a namespace: names without one are in it, as with
        # kubectl; -n still wins
        kc_ns = os.path.join(work, "kubeconfig-ns")
        with open(kc) as f, open(kc_ns, "w") as g:
            text_kc = f.read()
            assert "context: {cluster: double, user: agent}" in text_kc, text_kc
            g.write(text_kc.replace("context: {cluster: double, user: agent}",
                                    f"context: {{cluster: double, user: agent, namespace: {NS}}}"))
        got = json.loads(cli("show", pods[0]["name"], "-o", "json", kubeconfig=kc_ns).stdout)
        assert got["pod"]["uid"] == pods[0]["podUid"], got["pod"]
        cli("show", pods[0]["name"], kubeconfig=kc, rc=1)  # "default" without one
        cli("show", pods[0]["name"], "-n", "elsewhere", kubeconfig=kc_ns, rc=1)
        ro_ns = json.loads(cli("rollout", "deployment/web", "-o", "json", kubeconfig=kc_ns).stdout)
        assert ro_ns["failedRequests"] == ro["failedRequests"] and ro_ns["pods"] == 2, ro_ns
        print(f"ok: kubeconfig (pod proxy), --from DIR and URL, check, rollout over 2 agents; "
          f"failed requests {len(failed[0])} + {len(failed[1])}")
    finally:
        for ld in loads:
            ld.stop.set()
        for a in agents:
            a.stop()
        if double:
            double.stop()
        for st in simstates:
            if os.path.isdir(st):
                subprocess.run([E.SIMPOD, "--state-dir", st, "delete"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
