#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The preStop gate end to end (docs/drain.md): termlined with the API double
and simulated sidecar Pods of real processes in their own network
namespaces, terminated under load three ways:

  no preStop            the app closes its listener while the Services still
                        route to it: failed requests;
  preStop: sleep 0.5    too short for the endpoint change to reach every
                        dataplane: failed requests;
  preStop: termline-wait  released once the endpoint was out of rotation and
                        no connection arrived for --quiet: zero failures, after
                        the endpoint change and the last request, and well
                        before the generous sleep it replaces (both printed).

"Propagation" is simulated as it happens on a cluster: the load (standing for
every node's kube-proxy) keeps opening connections to the Pod for
PROPAGATION seconds after the EndpointSlice change. Also: the agent killed
and restarted while a termline-wait is pending (the client retries and is
answered), an unreachable agent (termline-wait serves its fallback sleep),
the drain.wait_* events and the Pod's Istio settings in the timeline."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

WAIT_BIN = os.path.join(E.BUILD, "tools", "termline-wait")
NODE = "node-drain"
NAMESPACE = "shop"
SERVICE = "web"
PROPAGATION = 1.5   # s the dataplanes keep routing to the Pod after the slice change
QUIET = 1.0         # termline-wait --quiet
SHORT_SLEEP = 0.5   # the preStop: sleep that is too short
GENEROUS_SLEEP = 10.0  # the sleep a team would pick to be safe
GRACE = 30
WAIT = 60
REQ_INTERVAL = 0.02


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def ts(s):
    """RFC 3339 with nanoseconds -> seconds since the epoch (float)."""
    base, _, frac = s.rstrip("Z").partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


def host_ip_of(pod):
    """The host end of the Pod's veth /30 (termline-simpod: host .1, pod .2)."""
    a = pod["ip"].split(".")
    return ".".join(a[:3] + [str(int(a[3]) - 1)])


def pod_obj(pod, started, deleting=False):
    md = {"name": pod["name"], "namespace": NAMESPACE, "uid": pod["podUid"],
          "labels": {"app": SERVICE},
          "annotations": {"proxy.istio.io/config": "terminationDrainDuration: 10s\nholdApplicationUntilProxyStarts: true\n",
                          "sidecar.istio.io/inject": "true"},
          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{SERVICE}-5d9c7",
                               "uid": "rs-drain", "controller": True}],
          "creationTimestamp": started}
    if deleting:
        md["deletionTimestamp"] = rfc3339(datetime.now(timezone.utc) + timedelta(seconds=GRACE))
        md["deletionGracePeriodSeconds"] = GRACE
    ids = {c["name"]: c["containerId"] for c in pod["containers"]}

    def status(name):
        return {"name": name, "containerID": "containerd://" + ids[name], "image": "x", "imageID": "x",
                "ready": True, "restartCount": 0, "started": True, "state": {"running": {"startedAt": started}}}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": md,
            "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": GRACE,
                     "containers": [{"name": "app", "image": "shop/web:1.4"},
                                    {"name": "istio-proxy", "image": "istio/proxyv2:1.24"}]},
            "status": {"phase": "Running", "podIP": pod["ip"], "podIPs": [{"ip": pod["ip"]}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [status("app"), status("istio-proxy")]}}


def slice_obj(pod, i, cond):
    eps = [{"addresses": ["192.0.2.99"], "conditions": {"ready": True, "serving": True, "terminating": False},
            "nodeName": "node-other",
            "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": "web-elsewhere",
                          "uid": "0d7a0000-0000-4000-8000-0000000000ff"}},
           {"addresses": [pod["ip"]], "conditions": cond, "nodeName": NODE,
            "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": pod["name"], "uid": pod["podUid"]}}]
    return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": {"name": f"{SERVICE}-d{i}", "namespace": NAMESPACE, "uid": f"0d7a5115-0000-4000-8000-{i:012d}",
                         "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": pod["proxyPort"], "protocol": "TCP"}],
            "endpoints": eps}


def make_scenario(pods, gates):
    started = rfc3339(datetime.now(timezone.utc) - timedelta(minutes=5))
    ready = {"ready": True, "serving": True, "terminating": False}
    out_of_rotation = {"ready": False, "serving": True, "terminating": True}
    objects, steps = [], []
    for i, (pod, gate) in enumerate(zip(pods, gates)):
        objects.append({"resource": "pods", "object": pod_obj(pod, started)})
        objects.append({"resource": "endpointslices", "object": slice_obj(pod, i, ready)})
        # The deletion, then the EndpointSlice controller's change, held
        # until the test opens this Pod's gate.
        steps.append({"at": 0.0, "op": "wait_file", "path": gate})
        steps.append({"at": 0.0, "op": "modify", "resource": "pods", "object": pod_obj(pod, started, deleting=True)})
        steps.append({"at": 0.05, "op": "modify", "resource": "endpointslices",
                      "object": slice_obj(pod, i, out_of_rotation)})
    return {"node": NODE, "token": "t0", "pageSize": 50, "objects": objects, "steps": steps}


class Load:
    """Every node's dataplane, as the Pod sees it: a new connection per
    request to the Pod's proxy port, until told the endpoint change reached
    it. Records (wall time sent, ok)."""

    def __init__(self, ip, port):
        self.ip, self.port = ip, port
        self.results = []
        self.stop_at = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def one(self):
        t = time.time()
        try:
            with socket.create_connection((self.ip, self.port), timeout=5) as s:
                s.sendall(f"GET /order?n={len(self.results)} HTTP/1.1\r\nHost: web\r\n"
                          f"x-request-id: drain-{len(self.results)}\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            ok = data.startswith(b"HTTP/1.") and data[9:12] == b"200"
        except OSError:
            ok = False
        self.results.append((t, ok))

    def run(self):
        while not self.done.is_set():
            if self.stop_at is not None and time.time() >= self.stop_at:
                break
            self.one()
            time.sleep(REQ_INTERVAL)
        self.done.set()

    def start(self):
        self.thread.start()
        return self

    def finish(self, timeout=30):
        self.thread.join(timeout)
        self.done.set()

    def failed(self):
        return [t for t, ok in self.results if not ok]

    def last_sent(self):
        return max(t for t, _ in self.results)


def wait_event(agent, uid, pred, what, timeout=WAIT):
    return E.wait_for(lambda: next((e for e in agent.events(uid) if pred(e)), None) or
                      (agent.proc.poll() is not None and
                       (_ for _ in ()).throw(AssertionError(f"termlined exited {agent.proc.returncode} "
                                                            f"while waiting for {what}"))),
                      timeout, what)


def wait_ready(agent, port, host):
    def ready():
        if agent.proc.poll() is not None:
            raise AssertionError(f"termlined exited {agent.proc.returncode}:\n{agent.read_log().decode(errors='replace')}")
        return http_status(host, port, "/readyz") == 200
    E.wait_for(ready, WAIT, "/readyz 200")


def http_status(host, port, path):
    import http.client
    try:
        c = http.client.HTTPConnection(host, port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return 0


def terminate(simstate, pod, gate, mode, env_extra):
    """The kubelet, started ahead and acting the moment the deletion lands."""
    cmd = [E.SIMPOD, "--state-dir", simstate, "terminate", "--pod-uid", pod["podUid"], "--grace", str(GRACE),
           "--when-file", gate, "--parallel-prestop"]
    if mode == "none":
        cmd.append("--no-prestop")
    elif mode == "sleep":
        cmd += ["--prestop-seconds", str(SHORT_SLEEP)]
    else:
        cmd += ["--prestop-cmd", f"{WAIT_BIN} --quiet {QUIET}s --timeout 20s --fallback 5s"]
    env = dict(os.environ, **env_extra)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_one(mode, pod, gate, simstate, agent, agent_env):
    load = Load(pod["ip"], pod["proxyPort"]).start()
    E.wait_for(lambda: len(load.results) >= 10, 20, "load running")
    assert not load.failed(), f"{mode}: requests failed before the termination"
    term = terminate(simstate, pod, gate, mode, agent_env)
    # The deletion only once the simulated kubelet watches for it (it
    # writes GATE.waiting): a fixed pause here let the SIGTERM come up to
    # 1 s late on a loaded machine, after the dataplanes had stopped, and
    # the race the test shows did not happen.
    E.wait_for(lambda: os.path.exists(gate + ".waiting") or term.poll() is not None, E.deadline(30),
               f"{mode}: the simulated kubelet watching")
    if term.poll() is not None:
        raise AssertionError(f"{mode}: termline-simpod terminate exited {term.returncode}: {term.communicate()[1]}")
    t_gate = time.time()
    with open(gate, "w", encoding="utf-8") as f:
        f.write("delete\n")
    # the dataplanes learn of the change PROPAGATION s after the slice changed
    ep = wait_event(agent, pod["podUid"], lambda e: e["type"] == "endpoint.condition" and not e["ready"],
                    f"{mode}: endpoint ready=false")
    load.stop_at = ts(ep["time"]) + PROPAGATION
    out, err = term.communicate(timeout=GRACE + 30)
    load.finish()
    assert term.returncode == 0, f"{mode}: termline-simpod terminate exited {term.returncode}: {err}"
    result = json.loads(out)
    return {"mode": mode, "load": load, "term": result, "endpoint_time": ts(ep["time"]), "t_gate": t_gate,
            "stderr": err}


def app_sigterm_time(agent, pod):
    app_pid = next(c["pid"] for c in pod["containers"] if c["name"] == "app")
    e = wait_event(agent, pod["podUid"], lambda e: e["type"] == "process.signal" and e["pid"] == app_pid and
                   e["signal"] == "SIGTERM", "SIGTERM to the app")
    return ts(e["time"])


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-drain-")
    state = os.path.join(work, "state")
    simstate = os.path.join(work, "simpod")
    prefix = f"termline-e2e-drain-{os.getpid()}"
    port = E.free_port()
    pods, agent, double = [], None, None
    try:
        names = ["none", "sleep", "gate", "restart"]
        for n in names:
            pods.append(E.simpod("--state-dir", simstate, "create", "--prefix", prefix, "--namespace", NAMESPACE,
                                 "--name", f"{SERVICE}-{n}-{os.getpid()}", "--app-stop-delay", "0.3",
                                 "--drain-seconds", "10"))
        gates = [os.path.join(work, f"delete-{n}") for n in names]
        # The agent listens on the host end of the first Pod's veth: a local
        # address every simulated Pod's namespace routes to, as a node's
        # status.hostIP is to real Pods; nothing leaves the machine.
        host = host_ip_of(pods[0])
        double = E.KubeDouble(work, make_scenario(pods, gates)).start()
        cgroup_root = os.path.join(pods[0]["cgroupRoot"], prefix)
        args = ["--kubeconfig", double.kubeconfig, "--node", NODE, "--state-dir", state,
                "--cgroup-root", cgroup_root, "--listen", f"{host}:{port}", "--linger", "600",
                "--log-level", "debug"]
        agent = E.Agent(work, args).start()
        wait_ready(agent, port, host)
        print(f"agent on {host}:{port}; pods: " + ", ".join(f"{n}={p['ip']}" for n, p in zip(names, pods)))

        results = {}
        for i, mode in enumerate(["none", "sleep", "gate"]):
            pod = pods[i]
            env = {"POD_UID": pod["podUid"], "HOST_IP": host, "TERMLINE_PORT": str(port)}
            r = run_one(mode, pod, gates[i], simstate, agent, env)
            r["sigterm"] = app_sigterm_time(agent, pod)
            results[mode] = r
            load = r["load"]
            # when the app closed its listener, as the agent saw it: says
            # why a run had no failed request (the app that late)
            closed = next((ts(e["time"]) - r["endpoint_time"] for e in agent.events(pod["podUid"])
                           if e["type"] == "socket.listen_closed" and e.get("container") == "app"), None)
            print(f"{mode:5}: {len(load.results)} requests, {len(load.failed())} failed; app SIGTERM "
                  f"{r['sigterm'] - r['endpoint_time']:+.2f}s after the endpoint change, its listener closed "
                  + (f"{closed:+.2f}s" if closed is not None else "(not seen)")
                  + f"; last request {load.last_sent() - r['endpoint_time']:+.2f}s")

        assert results["none"]["load"].failed(), "no preStop: the race should fail requests"
        assert results["sleep"]["load"].failed(), f"preStop: sleep {SHORT_SLEEP}: the race should fail requests"
        g = results["gate"]
        assert not g["load"].failed(), f"termline-wait: {len(g['load'].failed())} requests failed"
        pre = g["term"]["preStop"]
        assert pre and pre["exitCode"] == 0, f"termline-wait did not exit 0: {pre}"
        # it returned after the endpoint change and after the last request
        assert g["sigterm"] > g["endpoint_time"], (g["sigterm"], g["endpoint_time"])
        assert g["sigterm"] > g["load"].last_sent(), (g["sigterm"], g["load"].last_sent())
        held = pre["durationMs"] / 1000.0
        assert held >= PROPAGATION, f"released after {held:.2f}s, before the dataplanes stopped"
        assert held < GENEROUS_SLEEP * 0.6, f"released after {held:.2f}s: not well before a {GENEROUS_SLEEP}s sleep"
        print(f"termline-wait released the Pod after {held:.2f}s (preStop); a safe preStop: sleep would be "
              f"{GENEROUS_SLEEP:.0f}s, {GENEROUS_SLEEP - held:.1f}s longer per Pod; requests failed: "
              f"none {len(results['none']['load'].failed())}, sleep {SHORT_SLEEP}s "
              f"{len(results['sleep']['load'].failed())}, termline-wait 0")

        # The gate is in the timeline: started, ended drained, held by traffic
        uid = pods[2]["podUid"]
        ended = wait_event(agent, uid, lambda e: e["type"] == "drain.wait_ended", "drain.wait_ended")
        started = wait_event(agent, uid, lambda e: e["type"] == "drain.wait_started", "drain.wait_started")
        assert ended["outcome"] == "drained" and ended["heldBy"] == "traffic", ended
        assert started["quietMs"] == int(QUIET * 1000), started
        assert ended["connections"] > 0, f"no inbound connection counted: {ended}"
        assert ts(ended["lastTraffic"]) >= g["load"].last_sent() - 0.05, (ended, g["load"].last_sent())
        doc = E.wait_for(lambda: http_json(host, port, f"/v1/timelines/{NAMESPACE}/{pods[2]['name']}"), WAIT,
                         "the gate Pod's timeline")
        istio = doc["pod"].get("istio")
        assert istio and istio["proxyConfig"]["terminationDrainDuration"] == "10s", doc["pod"]
        assert istio["proxyConfig"]["holdApplicationUntilProxyStarts"] is True, istio
        assert istio["annotations"] == {"sidecar.istio.io/inject": "true"}, istio
        kinds = [e["type"] for e in doc["events"]]
        assert "drain.wait_started" in kinds and "drain.wait_ended" in kinds, kinds
        # the document with the gate's events and pod.istio is schema-valid
        doc_path = os.path.join(work, "gate-timeline.json")
        with open(doc_path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        E.validate_documents([doc_path])

        # ---- the agent restarted while a wait is pending ----
        pod = pods[3]
        env = dict(os.environ, POD_UID=pod["podUid"], HOST_IP=host, TERMLINE_PORT=str(port))
        waiter = subprocess.Popen([WAIT_BIN, "--quiet", "500ms", "--timeout", "40s", "--fallback", "2s"], env=env,
                                  stderr=subprocess.PIPE, text=True)
        wait_event(agent, pod["podUid"], lambda e: e["type"] == "drain.wait_started", "the pending wait")
        agent.proc.kill()
        agent.proc.wait()
        time.sleep(0.5)
        agent = E.Agent(work, args, name="termlined-2").start()
        wait_ready(agent, port, host)
        # the client found the new agent and waits there
        wait_event(agent, pod["podUid"], lambda e: e["type"] == "drain.wait_started", "the wait, retried")
        assert waiter.poll() is None, f"termline-wait returned before the deletion: {waiter.stderr.read()}"
        with open(gates[3], "w", encoding="utf-8") as f:
            f.write("delete\n")
        _, werr = waiter.communicate(timeout=40)
        assert waiter.returncode == 0 and "drained after" in werr, (waiter.returncode, werr)
        print(f"agent restarted mid-wait: {werr.strip()}")

        # ---- no agent answers: the fallback sleep, from inside a Pod ----
        dead = E.free_port()
        t0 = time.monotonic()
        r = subprocess.run(["ip", "netns", "exec", pods[0]["netns"], WAIT_BIN, "--uid", pods[0]["podUid"],
                            "--host", host, "--port", str(dead), "--fallback", "2s"],
                           capture_output=True, text=True, timeout=30)
        took = time.monotonic() - t0
        assert r.returncode == 1 and "fallback" in r.stderr, (r.returncode, r.stderr)
        assert 2.0 <= took < 4.0, f"fallback 2s took {took:.2f}s"
        print(f"unreachable agent: {r.stderr.strip()} ({took:.2f}s)")
        print("drain e2e: ok")
    finally:
        if agent and agent.proc and agent.proc.poll() is None:
            agent.stop()
        if double:
            double.stop()
        for p in pods:
            subprocess.run([E.SIMPOD, "--state-dir", simstate, "delete", "--pod-uid", p["podUid"]],
                           capture_output=True)
        if os.environ.get("TERMLINE_KEEP_WORK") != "1":
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}")


def http_json(host, port, path):
    import http.client
    try:
        c = http.client.HTTPConnection(host, port, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return json.loads(body) if r.status == 200 else None
    except OSError:
        return None


if __name__ == "__main__":
    main()
