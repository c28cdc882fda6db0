#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined with the Kubernetes API double and a simulated Pod of real
processes: a scripted Pod termination with every fault of the watch protocol
injected (a stream cut in the middle of an object, ERROR 410, LIST answered
500, 429 with Retry-After and 410 on a continued page, garbage bytes, one
byte per chunk, token rotation).

Default mode: every API event is recorded exactly once, kernel events of the
Pod carry its container names, the agent stays up and ready, and the closed
timeline (on disk and over HTTP) is schema-valid with API and kernel events
in causal order; /healthz, /readyz and /metrics; a config file with a bad key
exits 2 naming the file and line.

--crash: the agent is killed with SIGKILL after SIGTERM reached the
containers and before pod.deleted, and restarted on the same state dir: the
final document holds everything journaled before the kill and what came
after, says complete:false with one agent restart and its gap, and closes
after pod.deleted and the linger as usual."""
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
SERVICE = "web"
GRACE = 3  # --crash: 6, room to hold the kubelet between its SIGTERM and its SIGKILL
LINGER = 2
PROXY_EXIT = 137  # what the kubelet reports for a container killed by SIGKILL
WAIT = 60  # generous: a failure to converge, not a timing assertion


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_scenario(pod, gate):
    """The double's scenario for the simulated pod: its real UID, name, IP and
    container ids; faults spread over the termination; the steps after the
    real processes have stopped held behind the gate file."""
    ids = {c["name"]: c["containerId"] for c in pod["containers"]}
    uid, name, ip = pod["podUid"], pod["name"], pod["ip"]
    now = datetime.now(timezone.utc).replace(microsecond=0)
    started = rfc3339(now - timedelta(minutes=5))

    def cond(t, s):
        return {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": started}

    def status(name_, state, ready):
        return {"name": name_, "containerID": "containerd://" + ids[name_], "image": "x", "imageID": "x",
                "ready": ready, "restartCount": 0, "started": "running" in state, "state": state}

    def pod_obj(deleting=False, ready=True, terminated=False):
        md = {"name": name, "namespace": NAMESPACE, "uid": uid,
              "labels": {"app": SERVICE, "pod-template-hash": "5d9c7"},
              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{SERVICE}-5d9c7",
                                   "uid": "rs-e2e", "controller": True, "blockOwnerDeletion": True}],
              "creationTimestamp": started}
        if deleting:
            md["deletionTimestamp"] = rfc3339(now + timedelta(seconds=GRACE))
            md["deletionGracePeriodSeconds"] = GRACE
        r = "True" if ready else "False"
        if terminated:
            st_app = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                     "finishedAt": rfc3339(now), "containerID": "containerd://" + ids["app"]}}
            st_proxy = {"terminated": {"exitCode": PROXY_EXIT, "reason": "Error", "signal": 9, "startedAt": started,
                                       "finishedAt": rfc3339(now),
                                       "containerID": "containerd://" + ids["istio-proxy"]}}
        else:
            st_app = st_proxy = {"running": {"startedAt": started}}
        return {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": GRACE, "restartPolicy": "Always",
                         "containers": [
                             {"name": "app", "image": "shop/web:1.4", "ports": [{"containerPort": pod["appPort"]}],
                              "lifecycle": {"preStop": {"exec": {"command": ["/bin/sleep", "1"]}}}},
                             {"name": "istio-proxy", "image": "istio/proxyv2:1.24"}]},
                "status": {"phase": "Failed" if terminated else "Running", "hostIP": "192.0.2.10",
                           "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": "Burstable", "startTime": started,
                           "conditions": [cond("PodReadyToStartContainers", "True"), cond("Initialized", "True"),
                                          cond("Ready", r), cond("ContainersReady", r),
                                          cond("PodScheduled", "True")],
                           "containerStatuses": [status("app", st_app, ready and not terminated),
                                                 status("istio-proxy", st_proxy, ready and not terminated)]}}

    # Another Pod on the node: with pageSize 1 every LIST of pods is paged
    # (so the continue token can expire); it never changes.
    bystander = {"kind": "Pod", "apiVersion": "v1",
                 "metadata": {"name": "bystander-0", "namespace": NAMESPACE,
                              "uid": "0e2e0000-0000-4000-8000-000000000001", "creationTimestamp": started},
                 "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "x"}]},
                 "status": {"phase": "Running", "podIP": "192.0.2.77", "podIPs": [{"ip": "192.0.2.77"}],
                            "conditions": [cond("Ready", "True")], "containerStatuses": []}}

    def slice_obj(ours):
        eps = [{"addresses": ["192.0.2.99"], "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": "node-other",
                "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": "web-elsewhere",
                              "uid": "0e2e0000-0000-4000-8000-0000000000ff"}}]
        if ours is not None:
            eps.insert(0, {"addresses": [ip], "conditions": ours, "nodeName": NODE,
                           "targetRef": {"kind": "Pod", "namespace": NAMESPACE, "name": name, "uid": uid}})
        return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                "metadata": {"name": f"{SERVICE}-e2e7x", "namespace": NAMESPACE, "uid": "0e2e5115-0000-4000-8000-1",
                             "labels": {"kubernetes.io/service-name": SERVICE,
                                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4", "ports": [{"name": "http", "port": pod["appPort"], "protocol": "TCP"}],
                "endpoints": eps}

    def step(at, op, res=None, **kw):
        s = {"at": at, "op": op}
        if res:
            s["resource"] = res
        s.update(kw)
        return s

    P, S = "pods", "endpointslices"
    steps = [
        step(0.3, "fault", P, fault="garbage"),
        step(0.4, "fault", S, fault="garbage"),
        # the deletion itself arrives cut in half: the client must not lose it nor report it twice
        step(0.8, "fault", P, fault="cut"),
        step(1.0, "modify", P, object=pod_obj(deleting=True)),
        step(1.0, "modify", S, object=slice_obj({"ready": False, "serving": True, "terminating": True})),
        # the watch expires and the relist fails twice with 500, then its second page with 410
        step(1.5, "fault", P, fault="list500", count=2),
        step(1.5, "fault", P, fault="list410"),
        step(1.5, "fault", P, fault="error410"),
        step(1.7, "modify", P, object=pod_obj(deleting=True, ready=False)),
        step(2.0, "fault", S, fault="list429", retryAfter=1),
        step(2.0, "fault", S, fault="error410"),
        step(2.2, "modify", S, object=slice_obj({"ready": False, "serving": False, "terminating": True})),
        step(2.6, "rotate_token", token="t1-rotated"),
        # the kubelet reports terminated containers once they really are
        step(3.0, "wait_file", path=gate),
        step(3.1, "fault", P, fault="drip", count=1),
        step(3.2, "modify", P, object=pod_obj(deleting=True, ready=False, terminated=True)),
        step(3.4, "fault", S, fault="eof"),
        step(3.5, "modify", S, object=slice_obj(None)),
        step(3.7, "rotate_token", token="t2-rotated"),
        step(4.0, "delete", P, uid=uid),
        step(4.5, "end"),
    ]
    return {"node": NODE, "token": "t0-initial", "pageSize": 1,
            "objects": [{"resource": P, "object": pod_obj()}, {"resource": P, "object": bystander},
                        {"resource": S, "object": slice_obj({"ready": True, "serving": True, "terminating": False})}],
            "steps": steps}


# What the API side must say about the Pod, each exactly once, in this order.
def expected_api(ids):
    pods = [
        {"type": "pod.deletion_requested", "gracePeriodSeconds": GRACE},
        {"type": "pod.condition", "condition": "Ready", "status": "False"},
        {"type": "pod.condition", "condition": "ContainersReady", "status": "False"},
        {"type": "container.terminated", "container": "app", "containerId": ids["app"], "exitCode": 0,
         "reason": "Completed"},
        {"type": "container.terminated", "container": "istio-proxy", "containerId": ids["istio-proxy"],
         "exitCode": PROXY_EXIT, "reason": "Error"},
        {"type": "pod.deleted"},
    ]
    ep = {"service": SERVICE, "endpointSlice": f"{SERVICE}-e2e7x"}
    slices = [
        dict(ep, type="endpoint.condition", ready=False, serving=True, terminating=True),
        dict(ep, type="endpoint.condition", ready=False, serving=False, terminating=True),
        dict(ep, type="endpoint.removed"),
    ]
    return pods, slices


def matches(want, got):
    # the document's events carry no ids (its "containers" map names to ids)
    return all(got.get(k) == v for k, v in want.items() if k in got or k != "containerId")


def check_api_events(evs, ids, what):
    pods_want, slices_want = expected_api(ids)
    api = [e for e in evs if e["source"] == "api"]
    got_p = [e for e in api if not e["type"].startswith("endpoint.")]
    got_s = [e for e in api if e["type"].startswith("endpoint.")]
    for got, want, res in ((got_p, pods_want, "pod"), (got_s, slices_want, "endpoint")):
        if len(got) != len(want) or not all(matches(w, g) for w, g in zip(want, got)):
            raise AssertionError(f"{what}: {res} API events differ (each must appear exactly once, in order)\n"
                                 f"want: {json.dumps(want, indent=1)}\ngot:  {json.dumps(got, indent=1)}")
        for g in got:
            assert g["time"].endswith("Z"), g


def canon(e):
    """An event as the timeline document holds it (no ids)."""
    return json.dumps({k: v for k, v in e.items() if k not in ("podUid", "containerId")}, sort_keys=True)


def journal_events(path):
    """The events of a timeline journal (binary frames, docs/journal-format.md),
    as termline-journal prints them: one {"k":"ev","e":{...}} line each."""
    out = []
    if not os.path.exists(path):
        return out
    tool = os.path.join(os.environ.get("TERMLINE_BUILD_ROOT", "build"), "daemon", "store",
                        "termline-journal")
    res = subprocess.run([tool, path], capture_output=True, text=True, check=False)
    for ln in res.stdout.splitlines():
        rec = json.loads(ln)
        if rec.get("k") == "ev":
            out.append(rec["e"])
    return out


def canon_but_time(e):
    return json.dumps({k: v for k, v in e.items() if k not in ("podUid", "containerId", "time")}, sort_keys=True)


def check_kernel_names(evs, ids, what):
    """Every kernel event of the Pod names its container (the pause
    container is in no containerStatuses: no name)."""
    names = {ids["app"]: "app", ids["istio-proxy"]: "istio-proxy", ids["pause"]: None}
    kern = [e for e in evs if e["source"] == "kernel"]
    for e in kern:
        if e["type"] == "tcp.reset_sent" and e["containerId"] is None and e["container"] is None:
            continue  # a refused connection: no socket, tied to the Pod by its IP
        if e["type"] == "http.capture" and e["containerId"] is None:
            continue  # when HTTP capture was on: a fact about the whole Pod
        if e["containerId"] not in names:
            raise AssertionError(f"{what}: kernel event of an unknown container: {e}")
        if e["container"] != names[e["containerId"]]:
            raise AssertionError(f"{what}: kernel event with container {e['container']!r}, "
                                 f"want {names[e['containerId']]!r}: {e}")
    return kern


def wait_ready(agent, port):
    def ready():
        if agent.proc.poll() is not None:
            raise AssertionError(f"termlined exited {agent.proc.returncode}:\n{agent.read_log().decode(errors='replace')}")
        return E.http_get(port, "/readyz")[0] == 200
    E.wait_for(ready, WAIT, "/readyz 200 (probes attached, both LISTs synced)")


def wait_event(agent, uid, pred, what):
    return E.wait_for(lambda: next((e for e in agent.events(uid) if pred(e)), None) or
                      (agent.proc.poll() is not None and
                       (_ for _ in ()).throw(AssertionError(f"termlined exited {agent.proc.returncode} "
                                                            f"while waiting for {what}"))),
                      WAIT, what)


def is_signal(pid, sig):
    return lambda e: e["type"] == "process.signal" and e["pid"] == pid and e["signal"] == sig


def check_document(doc, pod, ids, cgroup_ids, evs):
    uid = pod["podUid"]
    p = doc["pod"]
    assert (p["namespace"], p["name"], p["uid"], p["node"], p["ip"]) == (NAMESPACE, pod["name"], uid, NODE, pod["ip"]), p
    assert p["owner"] == {"kind": "ReplicaSet", "name": f"{SERVICE}-5d9c7"} and \
        p["terminationGracePeriodSeconds"] == GRACE, p
    ctrs = {c["name"]: c for c in doc["containers"]}
    for n in ("app", "istio-proxy"):
        assert ctrs[n]["containerID"] == "containerd://" + ids[n], ctrs
        assert ctrs[n]["cgroupId"] == cgroup_ids[n], (n, ctrs[n], cgroup_ids[n])
    assert ctrs["app"]["role"] == "main" and ctrs["istio-proxy"]["role"] == "sidecar", ctrs
    times = [e["time"] for e in doc["events"]]
    assert times == sorted(times), "events out of order"
    # The document holds exactly what was recorded for this Pod: nothing lost, nothing twice.
    got = sorted(canon(e) for e in doc["events"])
    want = sorted(canon(e) for e in evs)
    if got != want:
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        raise AssertionError(f"document events differ from the recorded ones: missing {missing[:5]}, "
                             f"extra {extra[:5]}, {len(got)} vs {len(want)}")


def causal_order(doc, term, pre_kill_sigkill=True):
    """Orderings the scenario forces (not timings): deletion before the
    kubelet's SIGTERM, SIGKILL before the kubelet reports the containers
    terminated (the gate), everything before pod.deleted."""
    app_pid = next(c["pid"] for c in term["containers"] if c["name"] == "app")
    proxy_pid = next(c["pid"] for c in term["containers"] if c["name"] == "istio-proxy")
    evs = doc["events"]

    def idx(pred, what):
        return E.first(evs, pred, what)[0]
    i_del = idx(lambda e: e["type"] == "pod.deletion_requested", "pod.deletion_requested")
    i_pre = idx(lambda e: e["type"] == "process.exec" and e["filename"] == "/bin/sleep" and e["container"] == "app",
                "preStop exec in app")
    i_term_app = idx(lambda e: is_signal(app_pid, "SIGTERM")(e) and e["container"] == "app", "SIGTERM to app")
    i_term_proxy = idx(lambda e: is_signal(proxy_pid, "SIGTERM")(e) and e["container"] == "istio-proxy",
                       "SIGTERM to istio-proxy")
    i_kill = idx(lambda e: is_signal(proxy_pid, "SIGKILL")(e) and e["container"] == "istio-proxy",
                 "SIGKILL to istio-proxy")
    i_pexit = idx(lambda e: e["type"] == "process.exit" and e["pid"] == proxy_pid and e["exitSignal"] == 9 and
                  e["container"] == "istio-proxy", "istio-proxy killed")
    i_aexit = idx(lambda e: e["type"] == "process.exit" and e["pid"] == app_pid and e["exitCode"] == 0 and
                  e["container"] == "app", "app exit 0")
    i_ct = idx(lambda e: e["type"] == "container.terminated", "container.terminated")
    i_gone = idx(lambda e: e["type"] == "pod.deleted", "pod.deleted")
    assert i_del < i_pre < i_term_app < i_aexit < i_ct, (i_del, i_pre, i_term_app, i_aexit, i_ct)
    assert i_del < i_term_proxy < i_kill < i_pexit < i_ct < i_gone, (i_term_proxy, i_kill, i_pexit, i_ct, i_gone)
    assert i_gone == max(i for i, e in enumerate(evs) if e["source"] == "api"), "an API event after pod.deleted"


def check_http(port, pod, doc_path, doc, state):
    uid = pod["podUid"]
    lst = E.http_json(port, "/v1/timelines")["timelines"]
    mine = [t for t in lst if t["uid"] == uid]
    assert mine == [{"namespace": NAMESPACE, "name": pod["name"], "uid": uid, "state": "closed",
                     "events": len(doc["events"]), "findings": len(doc["findings"])}], lst
    served = E.http_json(port, f"/v1/timelines/{NAMESPACE}/{pod['name']}")
    assert served == doc, "GET /v1/timelines/NS/NAME differs from the file"
    assert E.http_json(port, f"/v1/timelines/{NAMESPACE}/{pod['name']}?uid={uid}") == doc
    other = "0e2e0000-0000-4000-8000-00000000dead"
    assert E.http_get(port, f"/v1/timelines/{NAMESPACE}/{pod['name']}?uid={other}")[0] == 404
    assert E.http_get(port, f"/v1/timelines/{NAMESPACE}/no-such-pod")[0] == 404
    assert os.path.dirname(doc_path) == os.path.join(state, "timelines", NAMESPACE)


def check_metrics(port):
    status, body, ctype = E.http_get(port, "/metrics")
    assert status == 200 and ctype.startswith("text/plain"), (status, ctype)
    m = E.parse_prometheus(body.decode())

    def total(name, **labels):
        return sum(v for _, v in E.metric_series(m, name, **labels))
    assert E.metric_series(m, "termline_events_total", source="kernel"), "no kernel series"
    assert E.metric_series(m, "termline_events_total", source="api"), "no api series"
    assert total("termline_events_total", source="api", type="pod.deleted") >= 1
    assert total("termline_events_total", source="kernel", type="process.signal") >= 3
    # every fault left its trace
    assert total("termline_relists_total", resource="pods") >= 2, m
    assert total("termline_relists_total", resource="endpointslices") >= 1, m
    assert total("termline_api_errors_total", resource="pods", kind="http_5xx") >= 2, m
    assert total("termline_api_errors_total", resource="pods", kind="http_410") >= 1, m
    assert total("termline_api_errors_total", resource="endpointslices", kind="http_429") >= 1, m
    assert total("termline_api_errors_total", resource="pods", kind="truncated") >= 1, m
    assert total("termline_api_errors_total", resource="pods", kind="expired") >= 1, m
    assert total("termline_api_errors_total", resource="endpointslices", kind="expired") >= 1, m
    assert total("termline_api_malformed_events_total") >= 2, m
    # (the token rotations are proven by pod.deleted: it is served only after the second one)
    return m


def api_errors(m):
    return ", ".join(f"{ls['resource']}/{ls['kind']} {int(v)}"
                     for ls, v in sorted(E.metric_series(m, "termline_api_errors_total"),
                                         key=lambda x: (x[0]["resource"], x[0]["kind"])))


def check_bad_config(work):
    bad = os.path.join(work, "bad.yaml")
    with open(bad, "w", encoding="utf-8") as f:
        f.write("node: n1\nlinger: 5\nlingr: 7\n")
    r = subprocess.run([E.TERMLINED, "--config", bad], capture_output=True, text=True, timeout=30)
    lines = r.stderr.strip().split("\n")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and f"{bad}:3" in lines[0] and "lingr" in lines[0], r.stderr


def run(crash):
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-term-")
    state = os.path.join(work, "state")
    simstate = os.path.join(work, "simpod")
    gate = os.path.join(work, "containers-stopped")
    port = E.free_port()
    agent = agent2 = double = pod = term_proc = None
    t_start = time.monotonic()
    try:
        if not crash:
            check_bad_config(work)
        pod = E.simpod("--state-dir", simstate, "create", "--prefix", f"termline-e2e-{os.getpid()}",
                       "--namespace", NAMESPACE, "--name", f"{SERVICE}-5d9c7-{os.getpid()}",
                       "--app-stop-delay", "0.5", "--drain-seconds", "30" if crash else "10")
        uid = pod["podUid"]
        ids = {c["name"]: c["containerId"] for c in pod["containers"]}
        cgroup_ids = {c["name"]: c["cgroupId"] for c in pod["containers"]}
        double = E.KubeDouble(work, make_scenario(pod, gate)).start()
        # Only this test's cgroups: other root tests on the machine make their own kubepods trees.
        cgroup_root = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
        args = ["--kubeconfig", double.kubeconfig, "--node", NODE, "--state-dir", state,
                "--cgroup-root", cgroup_root,
                "--listen", f"127.0.0.1:{port}", "--linger", str(LINGER), "--log-level", "debug"]
        agent = E.Agent(work, args).start()
        assert E.http_get(port, "/healthz")[0] == 200
        wait_ready(agent, port)
        # the timeline is open from the first LIST on
        lst = E.http_json(port, "/v1/timelines")["timelines"]
        assert [t["state"] for t in lst if t["uid"] == uid] == ["open"], lst
        # the Pod's IP is in the kernel's filter for resets without a socket
        E.wait_for(lambda: E.kernel_pod_ip_maps(pod["ip"]), WAIT, f"pod IP {pod['ip']} in a pod_ips map")

        # The kubelet starts when it sees the deletion (served cut in half).
        wait_event(agent, uid, lambda e: e["type"] == "pod.deletion_requested", "pod.deletion_requested")
        term_cmd = [E.SIMPOD, "--state-dir", simstate, "terminate", "--grace", str(GRACE), "--prestop-seconds", "1"]
        term_proc = subprocess.Popen(term_cmd, stdout=subprocess.PIPE, text=True)
        pids = {c["name"]: c["pid"] for c in pod["containers"]}
        journal = os.path.join(state, "journal", f"{uid}.tlj")
        if crash:
            # SIGTERM is out to both containers: hold the kubelet before its
            # SIGKILL, let the API side reach Ready=False and serving=false,
            # then kill the agent.
            wait_event(agent, uid, is_signal(pids["app"], "SIGTERM"), "SIGTERM to app")
            wait_event(agent, uid, is_signal(pids["istio-proxy"], "SIGTERM"), "SIGTERM to istio-proxy")
            os.kill(term_proc.pid, signal.SIGSTOP)
            wait_event(agent, uid, lambda e: e["type"] == "pod.condition" and e["condition"] == "ContainersReady",
                       "ContainersReady=False")
            wait_event(agent, uid, lambda e: e["type"] == "endpoint.condition" and not e["serving"],
                       "endpoint serving=false")
            wait_event(agent, uid, lambda e: e["type"] == "process.exit" and e["pid"] == pids["app"], "app exit")
            # Nothing more happens to the Pod until SIGCONT and the gate:
            # once the journal holds all that was emitted, kill.
            E.wait_for(lambda: {canon(e) for e in agent.events(uid)} <= {canon(e) for e in journal_events(journal)},
                       WAIT, "the journal to catch up with --emit-events")
            agent.proc.kill()
            agent.proc.wait()
            before = agent.events(uid)
            journaled = journal_events(journal)
            assert journaled and not [e for e in agent.events() if e.get("podUid") == uid
                                      and e["type"] == "pod.deleted"], "pod.deleted before the kill"
            agent2 = E.Agent(work, args, name="termlined-restarted").start()
            wait_ready(agent2, port)
            os.kill(term_proc.pid, signal.SIGCONT)
        out, _ = term_proc.communicate(timeout=WAIT)
        assert term_proc.returncode == 0, term_proc.returncode
        term = json.loads(out)
        term_proc = None
        by = {c["name"]: c for c in term["containers"]}
        assert by["app"]["exitCode"] == 0 and by["istio-proxy"]["signal"] == "SIGKILL", term
        if not crash:
            # A connection refused by the Pod (its app is gone) is answered by
            # a reset that has no socket, hence no cgroup: termlined ties it
            # to the Pod by its IP.
            import socket
            try:
                socket.create_connection((pod["ip"], pod["appPort"]), timeout=5).close()
                raise AssertionError(f"{pod['ip']}:{pod['appPort']} still accepts after the app exited")
            except ConnectionRefusedError:
                pass
            refused = wait_event(agent, uid, lambda e: e["type"] == "tcp.reset_sent"
                                 and e["local"] == f"{pod['ip']}:{pod['appPort']}", "the refused connection's reset")
            assert refused["containerId"] is None and refused["container"] is None, refused
        with open(gate, "w"):
            pass  # the kubelet may now report the containers terminated

        live = agent2 or agent
        doc_path = os.path.join(state, "timelines", NAMESPACE, f"{pod['name']}_{uid}.json")
        E.wait_for(lambda: os.path.exists(doc_path) or (live.proc.poll() is not None and
                   (_ for _ in ()).throw(AssertionError("termlined exited"))), WAIT, doc_path)
        # written first, then the journal goes
        E.wait_for(lambda: not os.path.exists(journal), WAIT, "the journal of the closed timeline removed")
        (doc,) = E.validate_documents([doc_path])
        assert live.proc.poll() is None, "termlined died"
        assert E.http_get(port, "/readyz")[0] == 200, "not ready after the faults"
        assert E.http_get(port, "/healthz")[0] == 200

        if not crash:
            evs = agent.events(uid)
            check_api_events(evs, ids, "--emit-events")
            check_api_events(doc["events"], ids, "timeline document")
            kern = check_kernel_names(evs, ids, "--emit-events")
            check_document(doc, pod, ids, cgroup_ids, evs)
            causal_order(doc, term)
            assert doc["complete"] is True and doc["loss"]["kernelEventsDropped"] == 0, doc["loss"]
            check_http(port, pod, doc_path, doc, state)
            # The Pod's IP left the kernel's reset filter once late resets
            # could no longer land (linger + a few seconds), so the filter
            # does not fill up as Pods come and go.
            E.wait_for(lambda: not E.kernel_pod_ip_maps(pod["ip"]), LINGER + 30,
                       f"pod IP {pod['ip']} removed from the kernel's pod_ips map")
            m = check_metrics(port)
            summary = f"{len(evs)} events ({len(kern)} kernel), " \
                      f"{int(sum(v for _, v in E.metric_series(m, 'termline_relists_total')))} relists, " \
                      f"API errors: {api_errors(m)}"
        else:
            after = agent2.events(uid)
            kern = check_kernel_names(before + after, ids, "--emit-events")
            assert after and [e for e in after if e["source"] == "kernel"], "nothing recorded after the restart"
            docset = {canon(e) for e in doc["events"]}
            lost = [e for e in journaled if canon(e) not in docset]
            assert not lost, f"journaled before the kill but not in the document: {lost[:3]}"
            # The restarted agent's first LIST restates the deletion; the
            # document holds that fact once, as first recorded.
            # (The capture window the restated deletion opens again is a new
            # fact of the restarted agent: http.capture is kept, not restated.)
            restated = [e for e in after if e["type"] != "http.capture" and
                        canon_but_time(e) in {canon_but_time(j) for j in journaled}]
            assert all(e["source"] == "api" and e["type"] in ("pod.deletion_requested", "container.terminated")
                       for e in restated), restated
            after = [e for e in after if e not in restated]
            lost = [e for e in before + after if canon(e) not in docset]
            assert not lost, f"recorded but not in the document: {lost[:3]}"
            causal_order(doc, term)
            check_api_events(doc["events"], ids, "timeline document after a restart")
            # The truth about the restart: one, with its gap, so not complete.
            assert doc["complete"] is False, doc["loss"]
            assert doc["loss"]["agentRestarts"] == 1, doc["loss"]
            gaps = doc["recorder"]["gaps"]
            assert len(gaps) == 1 and gaps[0]["from"] <= gaps[0]["to"], gaps
            last_before = max(e["time"] for e in before)
            first_after = min(e["time"] for e in after)
            assert last_before <= gaps[0]["from"] and gaps[0]["to"] <= first_after, (last_before, gaps, first_after)
            check_document(doc, pod, ids, cgroup_ids, before + after)
            check_http(port, pod, doc_path, doc, state)
            summary = f"{len(journaled)} events journaled before the kill, {len(after)} recorded after the " \
                      f"restart ({len(restated)} restated API facts kept once)"

        rc = live.stop(signal.SIGTERM)
        assert rc == 0, f"termlined exited {rc} on SIGTERM"
        print(f"ok{' (crash)' if crash else ''}: pod {uid}: {summary}; {time.monotonic() - t_start:.1f}s")
        return 0
    except AssertionError:
        for a in (agent, agent2):
            if a:
                sys.stderr.write(f"--- {a.log_path} (tail)\n{a.read_log().decode(errors='replace')[-6000:]}\n")
        if double:
            sys.stderr.write(f"--- API double\n{double.read_log()[-3000:]}\n")
        raise
    finally:
        if term_proc is not None and term_proc.poll() is None:
            os.kill(term_proc.pid, signal.SIGCONT)
            term_proc.kill()
            term_proc.wait()
        if pod is not None:
            E.simpod("--state-dir", simstate, "delete", check=False)
        for a in (agent, agent2):
            if a and a.proc and a.proc.poll() is None:
                a.proc.kill()
                a.proc.wait()
        if double:
            double.stop()
        if os.environ.get("TERMLINE_E2E_KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main():
    global GRACE
    ap = argparse.ArgumentParser()
    ap.add_argument("--crash", action="store_true", help="kill the agent mid-termination and restart it")
    crash = ap.parse_args().crash
    if crash:
        GRACE = 6
    return run(crash)


if __name__ == "__main__":
    sys.exit(main())
