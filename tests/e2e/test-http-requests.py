#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Requests through a terminating Pod's sidecar, as the agent records them.

A simulated Pod (tools/termline-simpod) whose istio-proxy writes an access
log line per request to its CRI log under --pod-logs-dir; a load generator
sends requests with x-request-id through the proxy before and during the
Pod's termination (the app closes its listener at SIGTERM, the proxy keeps
accepting while it drains and answers 503 UF). Every request the client got
an HTTP status for must appear in the agent's output as one http.request
(source log) with its ID and that status, and as the legs seen on the
Pod's own sockets (source kernel: the proxy's inbound leg with the same
status; the proxy's outbound and the app's inbound leg when the app
answered); requests the client never got an answer for (the proxy's
listener already closed) must not.

--format selects the proxy's access-log format (termline-simpod
--access-log-format: envoy, istio, istio-json). --killed-proxy: the proxy
buffers its access log (written every 5 s, as Envoy flushes its file every
--file-flush-interval-msec, and once at its SIGTERM, from which the 5 s
start over) and is killed at the end of the grace period, 2 s after its
SIGTERM (the kubelet's minimum after a preStop) and before its drain ends:
the records of what it answered in those 2 s never come, the agent has
those requests from the proxy's socket only, and the timeline closes while
it still holds them waiting for a record."""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402


class Load:
    """Requests, one connection each, every 20 ms, with their IDs and what
    the client saw: an HTTP status, or 0 and the error."""

    def __init__(self, port):
        self.url = f"http://127.0.0.1:{port}/load"
        self.results = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.n = 0

    def one(self, rid):
        req = urllib.request.Request(f"{self.url}?n={self.n}", headers={"x-request-id": rid})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                r.read()
                return r.status, ""
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("x-envoy-response-flags", "")
        except OSError as e:
            return 0, type(e).__name__

    def run(self):
        while not self.stop.is_set():
            rid = f"e2e-{os.getpid()}-{self.n:05d}"
            status, detail = self.one(rid)
            self.results.append((rid, status, detail))
            self.n += 1
            time.sleep(0.02)

    def start(self):
        self.thread.start()
        return self

    def finish(self):
        self.stop.set()
        self.thread.join(10)


def capture_state(agent):
    """"attached", "detached" or None: the agent's last word on the HTTP
    capture program (its log, at info level)."""
    state = None
    for line in agent.read_log().decode(errors="replace").splitlines():
        if "HTTP capture: attached" in line:
            state = "attached"
        elif "HTTP capture: detached" in line:
            state = "detached"
    return state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="envoy", choices=["envoy", "istio", "istio-json"])
    ap.add_argument("--killed-proxy", action="store_true")
    args = ap.parse_args()
    E.require_root()
    fmt_args = ["--access-log-format", args.format]
    # Both containers get SIGTERM after the app's 1 s preStop; the app
    # closes its listener at once and the proxy answers 503 from then, for
    # its 2 s drain. A grace of 4 s lets the proxy end its drain; with a 3 s
    # drain, the kubelet's minimum of 2 s left after the preStop kills it.
    grace, drain = "4", "2"
    if args.killed_proxy:
        # longer than the 2 s from its SIGTERM to its kill: no write
        # between them, whatever the timings of this machine
        fmt_args += ["--access-log-flush-seconds", "5"]
        grace, drain = "1.5", "3"

    work = tempfile.mkdtemp(prefix="termline-e2e-http-")
    state = os.path.join(work, "state")
    logs = os.path.join(work, "pods")
    os.makedirs(logs)
    prefix = f"termline-e2e-http-{os.getpid()}"
    simstate = os.path.join(work, "simpod")
    root = os.path.join(E.cgroup2_mount(), prefix)
    os.makedirs(root, exist_ok=True)
    # The linger is how long a closed Pod's timeline still takes late
    # facts (docs/flags.md). A short one: what the capture still holds of
    # the Pod as its timeline closes (inbound legs waiting up to 2 s for
    # their log record, log lines not read yet) must be handed over before
    # the document is written, not recorded after it (checked below).
    linger = 1
    agent = E.Agent(work, ["--no-api", "--state-dir", state, "--listen", "off", "--linger", str(linger),
                           "--cgroup-root", root, "--pod-logs-dir", logs,
                           "--log-level", "debug"]).start()
    pod = None
    try:
        # --http-capture windows: no Pod in a window, nothing attached.
        assert capture_state(agent) is None, "capture attached with no Pod in a window"
        pod = E.simpod("--state-dir", simstate, "create", "--prefix", prefix, "--no-netns",
                       "--pod-logs-dir", logs, "--app-port", str(E.free_port()),
                       "--proxy-port", str(E.free_port()), "--drain-seconds", drain,
                       "--app-stop-delay", "0.3", *fmt_args)
        uid = pod["podUid"]
        ids = {c["name"]: c["containerId"] for c in pod["containers"]}
        # A new Pod opens its start-up window.
        E.wait_for(lambda: capture_state(agent) == "attached", E.deadline(10), "the capture program attached")
        load = Load(pod["proxyPort"]).start()
        E.wait_for(lambda: len(load.results) >= 20, 20, "20 requests before termination")
        term = E.simpod("--state-dir", simstate, "terminate", "--grace", grace, "--prestop-seconds", "1")
        # The proxy is gone: requests now fail to connect.
        E.wait_for(lambda: load.results and load.results[-1][1] == 0, 10, "a refused request")
        E.wait_for(lambda: sum(1 for r in load.results if r[1] == 0) >= 3, 10, "refused requests")
        load.finish()
        E.simpod("--state-dir", simstate, "delete")
        pod = None

        answered = {rid: st for rid, st, _ in load.results if st}
        refused = [rid for rid, st, _ in load.results if not st]
        statuses = sorted(set(answered.values()))
        if not (200 in statuses and 503 in statuses):
            # what the Pod did meanwhile, as the agent saw it: an app that
            # closed its listener only after the proxy had stopped leaves
            # no 503 to see
            seen = [(e["time"], e["type"], e.get("containerId", "")[:12], e.get("signal", e.get("port", "")))
                    for e in agent.events(uid) if e["type"] in ("process.signal", "socket.listen_closed")]
            raise AssertionError(f"the load saw only {statuses}: {load.results[-40:]}; containers {ids}; "
                                 f"signals and listener closes: {seen}")

        def http_events():
            return [e for e in agent.events(uid) if e["type"] == "http.request"]

        def check(evs):
            """The requests in the agent's output, as the client saw them;
            AssertionError while anything is missing or wrong."""
            log = [e for e in evs if e["source"] == "log"]
            kern = [e for e in evs if e["source"] == "kernel"]
            assert len(log) + len(kern) == len(evs), evs
            by_id = {}
            for e in log:
                assert e["container"] == "istio-proxy" and e["podUid"] == uid, e
                assert e["requestId"] not in by_id, f"request {e['requestId']} recorded twice"
                by_id[e["requestId"]] = e
            # The legs seen on the Pod's own sockets (the Pod is in a capture
            # window from its start).
            legs = {}
            for e in kern:
                key = (e["containerId"], e["direction"], e["requestId"])
                assert key not in legs, f"kernel leg recorded twice: {e}"
                legs[key] = e
            # A proxy that exits right after answering may never write its
            # last record: the proxy's socket has the request then.
            unlogged = [rid for rid in answered if rid not in by_id]
            missing = [rid for rid in unlogged if (ids["istio-proxy"], "inbound", rid) not in legs]
            assert not missing, f"{len(missing)} of {len(answered)} answered requests missing, e.g. {missing[:5]}"
            for rid in unlogged:
                e = legs[(ids["istio-proxy"], "inbound", rid)]
                assert e["status"] == answered[rid], f"{rid}: client saw {answered[rid]}: {e}"
            for rid, st in answered.items():
                if rid in unlogged:
                    continue
                e = by_id[rid]
                assert e["status"] == st, f"{rid}: client saw {st}, timeline says {e['status']}: {e}"
                assert e["method"] == "GET" and e["path"].startswith("/load?n="), e
                assert e["direction"] == "inbound", e
                assert e["durationMs"] >= 0, e
                if st == 503:
                    assert e["responseFlags"] in ("UF", "UC"), e
                else:
                    assert e["responseFlags"] == "-", e
            extra = [rid for rid in by_id if rid not in answered]
            assert not extra, f"requests the client never got an answer for are recorded: {extra[:5]}"
            assert set(refused).isdisjoint(by_id), "a refused request has an event"

            # The same requests on the Pod's own sockets: the proxy's inbound
            # leg with the client's status, and for those the app answered, the
            # proxy's outbound leg and the app's inbound one.
            joined = 0
            for rid, st in answered.items():
                if rid in unlogged:
                    continue
                # The proxy's inbound leg is joined with its log record (one
                # event, alsoSeenBy kernel), or, when the record came too late
                # for the join, recorded apart: once either way.
                e = legs.get((ids["istio-proxy"], "inbound", rid))
                if by_id[rid].get("alsoSeenBy") == "kernel":
                    joined += 1
                    assert e is None, f"{rid}: joined and recorded apart: {e}"
                    assert by_id[rid]["containerId"] == ids["istio-proxy"], by_id[rid]
                else:
                    assert e and e["status"] == st, f"{rid}: proxy's inbound leg {e}, client saw {st}"
                if st == 200:
                    for key in ((ids["istio-proxy"], "outbound", rid), (ids["app"], "inbound", rid)):
                        assert legs.get(key, {}).get("status") == 200, f"{rid}: no 200 for {key}: {legs.get(key)}"
            # A request the client got no answer for may still have a leg
            # on the Pod's sockets: read by the proxy (or the app), which
            # then closed or exited without answering. It says so: status
            # 0 and why, never a status the client did not see.
            for k, e in legs.items():
                if k[2] in answered:
                    continue
                assert k[2] in refused, f"a kernel leg for a request the load never sent: {e}"
                assert e["status"] == 0 and e.get("error") in ("closed", "reset"), \
                    f"a kernel leg with an answer for a request nobody answered: {e}"
            assert joined, "no log record joined with the proxy's inbound leg"
            return kern, unlogged, joined

        def complete():
            try:
                check(http_events())
                return True
            except AssertionError:
                return False

        # Wait for the whole picture, not for a count: the output fills in
        # over seconds after the load stops (access-log lines read as the
        # proxy writes them, inbound legs held up to 2 s for their log
        # record); a count of events was reached with the last log records
        # or the app's legs still to come. Past the deadline the check
        # below says what is missing.
        try:
            E.wait_for(complete, E.deadline(20), "every answered request in the agent's output")
        except AssertionError:
            pass
        kern, unlogged, joined = check(http_events())
        if args.killed_proxy:
            assert unlogged, (f"the killed proxy's last records came anyway: nothing was held at the close; "
                              f"the Pod's end: {term}; the last requests: {load.results[-30:]}")

        # The timeline says when capture was on: from the Pod's start (its
        # start-up window), then again from its SIGTERM (termination).
        caps = [(e["state"], e["window"]) for e in agent.events(uid) if e["type"] == "http.capture"]
        assert caps == [("on", "start-up"), ("on", "termination")], caps

        # The closed timeline holds them too, valid against the schema.
        doc_path = os.path.join(state, "timelines", "_unknown", f"{uid}.json")
        E.wait_for(lambda: os.path.exists(doc_path), 60, doc_path)
        # The Pod's timeline closed: no Pod in a window, the program detached.
        E.wait_for(lambda: capture_state(agent) == "detached", E.deadline(15), "the capture program detached")
        (doc,) = E.validate_documents([doc_path])
        in_doc = {e["requestId"]: e["status"] for e in doc["events"]
                  if e["type"] == "http.request" and e["source"] == "log"}
        for rid in unlogged:
            # (the document names no container without the API server)
            st = {e["status"] for e in doc["events"] if e["type"] == "http.request"
                  and e["requestId"] == rid and e["direction"] == "inbound"}
            if answered[rid] in st:
                in_doc[rid] = answered[rid]
        if in_doc != answered:
            differ = sorted(set(in_doc.items()) ^ set(answered.items()))[:5]
            # when the agent recorded those, against the document's last
            # event: one recorded after the timeline closed is not in it
            late = [(e["time"], e["source"], e["direction"], e["containerId"][:12], e.get("alsoSeenBy"),
                     e["requestId"]) for e in agent.events(uid)
                    if e["type"] == "http.request" and e["requestId"] in {rid for rid, _ in differ}]
            raise AssertionError(f"timeline: {len(in_doc)} requests, client: {len(answered)}; differ at {differ}; "
                                 f"in the agent's output: {late}; the document's last event: "
                                 f"{doc['events'][-1]['time'] if doc['events'] else None}")
        # Nothing the agent recorded of the Pod's requests came after the
        # close: its output and the document hold the same requests and legs.
        def keys(evs):
            return sorted((e["source"], e["direction"], e["requestId"] or "", e["status"])
                          for e in evs if e["type"] == "http.request")
        out_keys, doc_keys = keys(agent.events(uid)), keys(doc["events"])
        if out_keys != doc_keys:
            only_out = sorted(set(out_keys) - set(doc_keys))[:5]
            only_doc = sorted(set(doc_keys) - set(out_keys))[:5]
            raise AssertionError(f"agent output {len(out_keys)} requests, document {len(doc_keys)}: "
                                 f"only in the output (recorded after the close) {only_out}, "
                                 f"only in the document {only_doc}")
        rc = agent.stop(signal.SIGTERM)
        assert rc == 0, f"termlined exited {rc}"
        n503 = sum(1 for s in answered.values() if s == 503)
        print(f"ok ({args.format}): {len(answered)} answered requests recorded with their status "
              f"({n503} x 503 during termination), {len(refused)} refused ones not; "
              f"{len(kern)} more legs seen on the Pod's sockets, {joined} joined with the log, "
              f"{len(unlogged)} not logged by the proxy")
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


if __name__ == "__main__":
    sys.exit(main())
