#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined --no-api against a simulated Pod of real processes in
kubelet-style cgroups: the events an operator sees with --emit-events, the
timeline file written when the Pod's cgroups are gone, and a clean stop."""
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-noapi-")
    state = os.path.join(work, "state")
    prefix = f"termline-e2e-{os.getpid()}"
    simstate = os.path.join(work, "simpod")
    # The agent maps only this test's subtree: other pods on the machine
    # (benchmarks, other tests) must not load it or show up here.
    root = os.path.join(E.cgroup2_mount(), prefix)
    os.makedirs(root, exist_ok=True)
    agent = E.Agent(work, ["--no-api", "--state-dir", state, "--listen", "off", "--linger", "1",
                           "--cgroup-root", root, "--log-level", "debug"]).start()
    pod = None
    try:
        # Least privilege: after start-up only CAP_BPF (39) and
        # CAP_DAC_READ_SEARCH (2) are left, in every set, and no new ones
        # can be gained. The Pod below is tracked after this drop.
        status = dict(l.split(":\t", 1) for l in open(f"/proc/{agent.proc.pid}/status").read().splitlines() if ":\t" in l)
        want = (1 << 39) | (1 << 2)
        for key in ("CapEff", "CapPrm", "CapBnd"):
            assert int(status[key], 16) == want, f"{key} {status[key]} != {want:016x}"
        assert int(status["CapAmb"], 16) == 0 and status["NoNewPrivs"].strip() == "1", status
        pod = E.simpod("--state-dir", simstate, "create", "--prefix", prefix, "--no-netns",
                       "--app-port", str(E.free_port()), "--proxy-port", str(E.free_port()),
                       "--drain-seconds", "10", "--app-stop-delay", "0.5")
        uid = pod["podUid"]
        ids = {c["name"]: c["containerId"] for c in pod["containers"]}
        term = E.simpod("--state-dir", simstate, "terminate", "--grace", "3", "--prestop-seconds", "1")
        E.simpod("--state-dir", simstate, "delete")
        pod = None
        doc_path = os.path.join(state, "timelines", "_unknown", f"{uid}.json")
        E.wait_for(lambda: os.path.exists(doc_path), 60, doc_path)
        evs = agent.events(uid)
        by = lambda name: [e for e in evs if e["containerId"] == ids[name]]  # noqa: E731

        # Every event of this Pod belongs to one of its containers (or is Pod-wide).
        for e in evs:
            assert e["containerId"] in set(ids.values()) | {None}, e
            assert e["source"] == "kernel", e

        app, proxy, pause = by("app"), by("istio-proxy"), by("pause")
        # preStop: an exec of /bin/sleep in the app's cgroup, exiting 0, before any SIGTERM.
        i_pre, pre = E.first(app, lambda e: e["type"] == "process.exec" and e["filename"] == "/bin/sleep", "preStop exec")
        i_pre_exit, _ = E.first(app, lambda e: e["type"] == "process.exit" and e["pid"] == pre["pid"] and e["exitCode"] == 0, "preStop exit")
        app_pid = next(c["pid"] for c in pod_containers(term, "app"))
        i_term, sig = E.first(app, lambda e: e["type"] == "process.signal" and e["signal"] == "SIGTERM" and e["pid"] == app_pid, "SIGTERM to app")
        assert sig["signo"] == 15 and sig["result"] == "delivered" and sig["senderComm"] == "termline-simpod", sig
        assert i_pre < i_pre_exit < i_term, (i_pre, i_pre_exit, i_term)
        # The app closes its listener, then exits 0.
        i_close, close = E.first(app, lambda e: e["type"] == "socket.listen_closed", "app listener closed")
        i_exit, ex = E.first(app, lambda e: e["type"] == "process.exit" and e["pid"] == app_pid, "app exit")
        assert i_term < i_close < i_exit and ex["exitCode"] == 0 and ex["exitSignal"] == 0, (close, ex)
        # The proxy drains longer than the grace period: SIGTERM, then SIGKILL, exit by signal 9.
        E.first(proxy, lambda e: e["type"] == "process.signal" and e["signal"] == "SIGTERM", "SIGTERM to istio-proxy")
        E.first(proxy, lambda e: e["type"] == "process.signal" and e["signal"] == "SIGKILL", "SIGKILL to istio-proxy")
        E.first(proxy, lambda e: e["type"] == "process.exit" and e["exitSignal"] == 9, "istio-proxy killed")
        E.first(pause, lambda e: e["type"] == "process.exit" and e["exitSignal"] == 9, "pause killed")
        # The sender (termline-simpod) lives in no tracked cgroup: none of its own execs show up.
        assert not [e for e in agent.events() if e["type"] == "process.exec" and e.get("comm") == "termline-simpod"]

        (doc,) = E.validate_documents([doc_path])
        assert doc["pod"]["uid"] == uid and doc["pod"]["name"] is None, doc["pod"]
        types = [e["type"] for e in doc["events"]]
        assert types.count("process.signal") >= 4 and "pod.cgroups_removed" in types, types
        times = [e["time"] for e in doc["events"]]
        assert times == sorted(times), "events out of order"
        assert doc["complete"] is True and doc["loss"]["kernelEventsDropped"] == 0, doc["loss"]

        rc = agent.stop(signal.SIGTERM)
        assert rc == 0, f"termlined exited {rc} on SIGTERM"
        print(f"ok: {len(evs)} events for pod {uid}, timeline {doc_path}")
        return 0
    finally:
        if pod is not None:
            E.simpod("--state-dir", simstate, "delete", check=False)
        agent.stop(signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.rmdir(root)
        except OSError:
            pass


def pod_containers(term, name):
    return [c for c in term["containers"] if c["name"] == name]


if __name__ == "__main__":
    sys.exit(main())
