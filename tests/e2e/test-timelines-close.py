#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Timelines that would never close (docs/hostile-peers.md): 1,100
<ns>_<pod>_<uid> access-log directories, each with one access-log line, are
created and removed under --pod-logs-dir with --max-open-timelines 64. Each
opens a timeline that no pod.deleted will ever end: the removal of its log
directory closes it ("logsRemoved"), at the cap the least recently active
one closes to make room ("openLimit"), no Pod is refused, the open count
stays bounded, and a new Pod is recorded afterwards. Then, across a restart
with the directories removed while the agent was stopped, the replayed
timelines close (without the API at the start, "cgroupsRemoved"; with the
API double, after its first LIST, "unknownToApi") and a new Pod is recorded
again.

--api runs termlined against tests/kube's API double, which reports no Pod;
there, a Pod of real processes in kubelet-style cgroups (termline-simpod)
that the API never reports closes when its cgroups go ("cgroupsRemoved")."""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

NODE = "node-close"
NS = "churn"
CAP = 64
TOTAL = 1100
# Past the cap with each batch, but never more than 64 closes to make room
# needed within one loop iteration (more are refused, by design: the bound
# on timelines in memory while closes are in progress): 32 left open + 80
# new = 48 over the cap.
BATCH = 80
WAIT = E.deadline(60)


def uid_of(tag, i):
    return f"{tag:08x}-0000-4000-8000-{i:012x}"


def access_line():
    now = datetime.now(timezone.utc)
    cri = now.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
    env = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    rec = (f'[{env}] "GET /items HTTP/1.1" 200 - 0 12 1 - "-" "curl/8" "req-1" '
           f'"127.0.0.1:15006" "-"')
    return f"{cri} stdout F {rec}\n"


def make_pod_dir(logs, name, uid):
    d = os.path.join(logs, f"{NS}_{name}_{uid}", "istio-proxy")
    os.makedirs(d)
    with open(os.path.join(d, "0.log"), "w", encoding="utf-8") as f:
        f.write(access_line())
    return os.path.dirname(d)


class Metrics:
    def __init__(self, port):
        self.port = port

    def get(self):
        status, body, _ = E.http_get(self.port, "/metrics")
        assert status == 200, status
        return E.parse_prometheus(body.decode())

    def value(self, name, **labels):
        s = E.metric_series(self.get(), name, **labels)
        return sum(v for _, v in s)


def seen_uids(agent):
    return {e["podUid"] for e in agent.events() if e.get("type") == "http.request" and e.get("podUid")}


def docs_of(state):
    """The documents written: without the API's metadata a Pod's namespace
    and name are unknown (timeline-format.md), its file is _unknown/UID.json."""
    return sorted(glob.glob(os.path.join(state, "timelines", "_unknown", "*.json")))


def read_doc(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def churn(agent, m, logs, tag, total):
    """total directories in batches, each removed once its line was read;
    returns the most timelines seen open at once."""
    most = 0
    for b in range(0, total, BATCH):
        dirs = [make_pod_dir(logs, f"p-{tag}-{i}", uid_of(tag, i)) for i in range(b, min(b + BATCH, total))]
        want = {uid_of(tag, i) for i in range(b, min(b + BATCH, total))}
        E.wait_for(lambda: want <= seen_uids(agent), WAIT, f"batch {b} of access logs read")
        most = max(most, m.value("termline_timelines_open"))
        for d in dirs:
            shutil.rmtree(d)
        # the next batch once the removed ones' lingers have mostly ended
        E.wait_for(lambda: m.value("termline_timelines_open") <= CAP // 2, WAIT, "the closes")
    return most


def new_pod_recorded(agent, m, logs, tag):
    """A new Pod's directory: its request is recorded (a timeline opened,
    nothing refused), and its removal closes it."""
    uid = uid_of(tag, 0xfffff)
    d = make_pod_dir(logs, f"new-{tag}", uid)
    E.wait_for(lambda: uid in seen_uids(agent), WAIT, "the new Pod's request")
    assert m.value("termline_timelines_refused_total") == 0, agent.read_log().decode(errors="replace")[-2000:]
    shutil.rmtree(d)
    return uid


def wait_all_closed(m, what):
    E.wait_for(lambda: m.value("termline_timelines_open") == 0, WAIT, f"every timeline closed ({what})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", action="store_true", help="with the API double (no Pod reported)")
    opt = ap.parse_args()
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-close-")
    state, logs = os.path.join(work, "state"), os.path.join(work, "logs")
    os.makedirs(logs)
    # an empty cgroup subtree: no Pod of the machine shows up here
    root = os.path.join(E.cgroup2_mount(), f"termline-e2e-close-{os.getpid()}")
    os.makedirs(root, exist_ok=True)
    port = E.free_port()
    double = None
    agent = None
    try:
        args = ["--state-dir", state, "--pod-logs-dir", logs, "--cgroup-root", root,
                "--listen", f"127.0.0.1:{port}", "--linger", "1",
                "--max-open-timelines", str(CAP), "--http-capture", "off"]
        if opt.api:
            double = E.KubeDouble(work, {"node": NODE, "token": "t0", "objects": [], "steps": []}).start()
            args += ["--kubeconfig", double.kubeconfig, "--node", NODE]
        else:
            args += ["--no-api"]
        agent = E.Agent(work, args).start()
        m = Metrics(port)
        E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200, WAIT, "/readyz")

        # ---- 1,100 directories created and removed ----
        t0 = time.monotonic()
        most = churn(agent, m, logs, 1, TOTAL)
        new_uid = new_pod_recorded(agent, m, logs, 1)
        wait_all_closed(m, "after the churn")
        took = time.monotonic() - t0
        refused = m.value("termline_timelines_refused_total")
        by_limit = m.value("termline_timelines_evicted_total", reason="openLimit")
        by_logs = m.value("termline_timelines_evicted_total", reason="logsRemoved")
        assert refused == 0, f"{refused} refused"
        # never more open than the cap and the closes it started
        assert most <= CAP + 64, most
        assert by_limit > 0 and by_logs > 0, (by_limit, by_logs)
        # each of the 1,101 closed once, for one reason
        assert by_limit + by_logs == TOTAL + 1, (by_limit, by_logs)
        paths = docs_of(state)
        assert len(paths) == TOTAL + 1, len(paths)
        reasons = {}
        for p in paths:
            d = read_doc(p)
            reasons[d["closeReason"]] = reasons.get(d["closeReason"], 0) + 1
            assert len(d["events"]) == 1 and d["events"][0]["type"] == "http.request", p
            loss = d["loss"]
            # closed without its Pod's end: nothing lost for it
            assert loss["diskErrors"] == 0 and loss["eventsDropped"] == 0 and loss["agentRestarts"] == 0, (p, loss)
            assert d["complete"] == (loss["kernelEventsDropped"] == 0), (p, d["complete"], loss)
        assert reasons == {"openLimit": by_limit, "logsRemoved": by_logs}, reasons
        new_doc = read_doc(os.path.join(state, "timelines", "_unknown", f"{new_uid}.json"))
        assert new_doc["closeReason"] == "logsRemoved", new_doc.get("closeReason")
        E.validate_documents(paths[:40] + paths[-40:])

        if opt.api:
            # ---- kubelet-style cgroups of a Pod the API never reports ----
            # (termline-simpod: real processes in them); their removal ends
            # its timeline: no pod.deleted will come
            simstate = os.path.join(work, "simpod")
            pod = E.simpod("--state-dir", simstate, "create", "--prefix", os.path.basename(root),
                           "--no-netns", "--app-port", str(E.free_port()),
                           "--proxy-port", str(E.free_port()))
            sim_uid = pod["podUid"]
            E.simpod("--state-dir", simstate, "delete")
            sim_doc = os.path.join(state, "timelines", "_unknown", f"{sim_uid}.json")
            E.wait_for(lambda: os.path.exists(sim_doc), WAIT, sim_doc)
            d = read_doc(sim_doc)
            assert d["closeReason"] == "cgroupsRemoved", d.get("closeReason")
            assert any(e["source"] == "kernel" for e in d["events"]), d["events"]
            assert m.value("termline_timelines_evicted_total", reason="cgroupsRemoved") == 1
            E.validate_documents([sim_doc])
            os.makedirs(root, exist_ok=True)  # termline-simpod removed its prefix

        # ---- across a restart, the directories removed while stopped ----
        before = set(docs_of(state))
        dirs = [make_pod_dir(logs, f"p-2-{i}", uid_of(2, i)) for i in range(CAP)]
        want = {uid_of(2, i) for i in range(CAP)}
        E.wait_for(lambda: want <= seen_uids(agent), WAIT, "the restart batch read")
        assert m.value("termline_timelines_open") == CAP
        assert agent.stop() == 0, agent.read_log().decode(errors="replace")[-2000:]
        for d in dirs:
            shutil.rmtree(d)
        agent = E.Agent(work, args, name="termlined-restarted").start()
        E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200, WAIT, "/readyz after the restart")
        wait_all_closed(m, "after the restart")
        replayed = sorted(set(docs_of(state)) - before)
        assert len(replayed) == CAP, len(replayed)
        want_reason = "unknownToApi" if opt.api else "cgroupsRemoved"
        for p in replayed:
            d = read_doc(p)
            assert d["closeReason"] == want_reason, (p, d.get("closeReason"))
            assert d["loss"]["agentRestarts"] == 1 and not d["complete"], (p, d["loss"])
            assert d["loss"]["diskErrors"] == 0, (p, d["loss"])
        assert m.value("termline_timelines_evicted_total", reason=want_reason) == CAP
        E.validate_documents(replayed[:10])
        new_pod_recorded(agent, m, logs, 2)
        print(f"ok: {TOTAL} directories in {took:.1f}s, at most {most:.0f} open, "
              f"{by_limit:.0f} closed at the cap, {by_logs:.0f} on their directory's removal; "
              f"after a restart {CAP} closed ({want_reason}); new Pods recorded")
    finally:
        if agent:
            agent.stop()
        if double:
            double.stop()
        E.remove_dirs([root])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
