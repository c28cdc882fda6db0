#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""--http-capture always: a Pod already running when the agent starts is in
no capture window, so its requests are counted per second (http.summary per
container and direction) instead of recorded one by one; once its
termination starts (SIGTERM, no API server) the last seconds come back in
full (preRoll) and every request is recorded in full again (http.request)."""
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402


def get(port, rid):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/s", headers={"x-request-id": rid})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-always-")
    prefix = f"termline-e2e-always-{os.getpid()}"
    simstate = os.path.join(work, "simpod")
    root = os.path.join(E.cgroup2_mount(), prefix)
    os.makedirs(root, exist_ok=True)
    agent = None
    pod = E.simpod("--state-dir", simstate, "create", "--prefix", prefix, "--no-netns",
                   "--pod-logs-dir", os.path.join(work, "pods"), "--app-port", str(E.free_port()),
                   "--proxy-port", str(E.free_port()), "--drain-seconds", "3", "--app-stop-delay", "2")
    try:
        uid = pod["podUid"]
        app_id = next(c["containerId"] for c in pod["containers"] if c["name"] == "app")
        # Started after the Pod: no start-up window for it.
        port = E.free_port()
        agent = E.Agent(work, ["--no-api", "--state-dir", os.path.join(work, "state"),
                               "--listen", f"127.0.0.1:{port}",
                               "--linger", "1", "--cgroup-root", root, "--log-level", "debug",
                               "--pod-logs-dir", os.path.join(work, "no-logs"),
                               "--http-capture", "always"]).start()
        n = 60
        assert [get(pod["appPort"], f"sum-{i}") for i in range(n)] == [200] * n
        E.wait_for(lambda: sum(e["count"] for e in agent.events(uid) if e["type"] == "http.summary"
                               and e["containerId"] == app_id) >= n, 10, f"{n} requests summarized")
        evs = agent.events(uid)
        sums = [e for e in evs if e["type"] == "http.summary"]
        app_in = [e for e in sums if e["containerId"] == app_id and e["direction"] == "inbound"]
        assert sum(e["count"] for e in app_in) == n and all(e["failed"] == 0 for e in app_in), sums
        assert all(e["intervalMs"] == 1000 and e["source"] == "kernel" for e in sums), sums
        assert not [e for e in evs if e["type"] == "http.request" and e["requestId"].startswith("sum-")], \
            "requests outside a window recorded one by one"

        # The pairing's own view in /metrics: a connection whose request
        # head has not ended yet is followed (its head kept for the next
        # read); once answered and closed it is forgotten. Nothing was
        # given up on the way.
        def gauge(name):
            _, body, _ = E.http_get(port, "/metrics")
            series = E.metric_series(E.parse_prometheus(body.decode()), name)
            assert series, f"/metrics has no {name}"
            return series[0][1]
        E.wait_for(lambda: gauge("termline_http_capture_connections") == 0, 10,
                   "the summarized requests' connections forgotten")
        with socket.create_connection(("127.0.0.1", pod["appPort"]), timeout=5) as s:
            s.sendall(b"GET /s HTTP/1.1\r\nHost: app\r\nx-request-id: open-0\r\n")
            E.wait_for(lambda: gauge("termline_http_capture_connections") == 1, 10,
                       "the open connection followed")
            s.sendall(b"\r\n")
            reply = s.recv(4096)
            assert reply.startswith(b"HTTP/1.0 200") or reply.startswith(b"HTTP/1.1 200"), reply
        E.wait_for(lambda: gauge("termline_http_capture_connections") == 0, 10,
                   "the closed connection forgotten")
        for name in ("termline_http_capture_connections_evicted_total",
                     "termline_http_capture_requests_overflowed_total", "termline_http_capture_requests_lost_total",
                     "termline_http_capture_responses_unmatched_total",
                     "termline_http_capture_connections_not_http_total"):
            assert gauge(name) == 0, f"{name}: {gauge(name)}"

        # Termination: the SIGTERM opens the Pod's window. The app closes
        # its listener at once, the proxy keeps answering (503) while it
        # drains: these requests are recorded in full.
        results = []
        stop = threading.Event()

        def load():
            i = 0
            while not stop.is_set():
                results.append((f"term-{i}", get(pod["proxyPort"], f"term-{i}")))
                i += 1
                time.sleep(0.05)
        t = threading.Thread(target=load, daemon=True)
        term = threading.Thread(target=lambda: E.simpod("--state-dir", simstate, "terminate", "--grace", "5",
                                                        "--no-prestop"), daemon=True)
        term.start()
        E.wait_for(lambda: [e for e in agent.events(uid) if e["type"] == "http.capture"
                            and e["window"] == "termination"], 10, "the termination window")
        t.start()
        time.sleep(1.5)
        stop.set()
        t.join(10)
        term.join(30)
        answered = {rid: st for rid, st in results if st}
        assert answered, results
        # The seconds before the termination come back in full, flagged:
        # those requests were counted in the summaries already.
        pre = [e for e in agent.events(uid) if e["type"] == "http.request" and e["requestId"].startswith("sum-")]
        assert all(e.get("preRoll") is True and e["status"] == 200 for e in pre), pre[:3]
        assert len({e["requestId"] for e in pre}) == len(pre) <= n, pre

        def proxy_legs():
            return {e["requestId"]: e for e in agent.events(uid) if e["type"] == "http.request"
                    and e["requestId"] and e["requestId"].startswith("term-") and e["direction"] == "inbound"
                    and e["containerId"] != app_id}
        E.wait_for(lambda: set(answered) <= set(proxy_legs()), 10, "every request of the termination in full")
        legs = proxy_legs()
        for rid, st in answered.items():
            assert legs[rid]["status"] == st, (rid, st, legs[rid])
        print(f"ok: {n} requests before termination in {len(app_in)} summaries, {len(pre)} of them back "
              f"in full as pre-roll; {len(answered)} during termination in full ({sorted(set(answered.values()))})")
        return 0
    finally:
        E.simpod("--state-dir", simstate, "delete", check=False)
        if agent:
            agent.stop(signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.rmdir(root)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())
