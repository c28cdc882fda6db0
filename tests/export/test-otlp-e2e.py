#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined exporting the sidecar race to the test's OTLP receiver, end to
end (root: real BPF, a simulated Pod of real processes, the API double).

The race is the demo's (tools/termline-demo): a Pod with an istio-proxy
terminates under load with no preStop, the app closes its listener while
the proxy still forwards, and requests fail with 503. termlined runs with
--otlp-endpoint (and --otlp-logs) pointed at otlp-receiver.js, which
answers the first requests 503, 429 with Retry-After and a dropped
connection. Then, decoded by the official definitions:

- one trace for the terminated Pod, its id the Pod UID; span ids unique;
  resources with the Pod's k8s.* names, its Deployment, the containers'
  names and ids, OTEL_SERVICE_NAME;
- a span per http.request of the document and a span event per other
  event and finding: the counts match the document on disk;
- every request the load generator saw fail with a status is a span with
  an error status, that status code and its x-request-id;
- a log record per event and finding;
- the faults cost nothing: every span arrived, the agent's
  termline_otlp_* metrics count them as sent with the retries, none failed
  or dropped, and the document stays on disk."""
import http.client
import importlib.machinery
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import e2elib as E  # noqa: E402
import otlplib as O  # noqa: E402

WAIT = 60


def load_demo():
    path = os.path.join(E.SRC, "tools", "termline-demo")
    loader = importlib.machinery.SourceFileLoader("termline_demo", path)
    spec = importlib.util.spec_from_loader("termline_demo", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def metrics(port):
    status, body, _ = E.http_get(port, "/metrics")
    assert status == 200, status
    m = E.parse_prometheus(body.decode())
    return {n: v for (n, ls), v in m.items() if n.startswith("termline_otlp_") and not ls}


def main():
    E.require_root()
    D = load_demo()
    work = tempfile.mkdtemp(prefix="termline-e2e-otlp-")
    rec = O.Receiver(work, "503,429:1,disconnect").start()
    run = D.Run(type("A", (), {})(), work, "race")
    port = E.free_port()
    agent_log = None
    try:
        run.pod = pod = run.simpod("create", "--prefix", f"termline-e2e-otlp-{os.getpid()}", "--namespace", D.NS,
                                   "--name", f"{D.RS_OLD}-{uuid.uuid4().hex[:5]}", "--drain-seconds", "3",
                                   "--app-stop-delay", "1", "--access-log-format", "istio",
                                   "--pod-logs-dir", run.logs)
        gate_delete, gate_stopped = os.path.join(run.work, "delete"), os.path.join(run.work, "stopped")
        run.start_double(D.scenario(pod, port, gate_delete, gate_stopped))
        cgroup_root = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
        agent_log = os.path.join(run.work, "termlined.log")
        run.agent = subprocess.Popen(
            [E.TERMLINED, "--kubeconfig", run.kubeconfig, "--node", D.NODE, "--state-dir", run.state,
             "--cgroup-root", cgroup_root, "--pod-logs-dir", run.logs, "--listen", f"127.0.0.1:{port}",
             "--linger", "1", "--otlp-endpoint", rec.endpoint, "--otlp-logs", "--otlp-timeout", "3s"],
            stdout=open(agent_log, "wb"), stderr=subprocess.STDOUT,
            env=dict(os.environ, OTEL_SERVICE_NAME="e2e-shop",
                     OTEL_RESOURCE_ATTRIBUTES="deployment.environment=e2e"))
        E.wait_for(lambda: run.agent.poll() is not None or (_up(port) and E.http_get(port, "/readyz")[0] == 200),
                   WAIT, "termlined ready")
        assert run.agent.poll() is None, open(agent_log).read()[-3000:]

        run.load = D.Load(pod, run.api_port, "otlp", 0.05)
        run.load.start()
        term = [D.SIMPOD, "--state-dir", run.simstate, "terminate", "--grace", "6", "--when-file", gate_delete,
                "--no-prestop"]
        run.kubelet = kubelet = subprocess.Popen(term, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        E.wait_for(lambda: os.path.exists(gate_delete + ".waiting") or kubelet.poll() is not None, 30,
                   "the simulated kubelet")
        time.sleep(0.5)
        open(gate_delete, "w").close()
        _, err = kubelet.communicate(timeout=WAIT)
        assert kubelet.returncode == 0, err
        run.load.stop.set()
        run.load.join()
        open(gate_stopped, "w").close()
        doc_path = os.path.join(run.state, "timelines", D.NS, f"{pod['name']}_{pod['podUid']}.json")
        E.wait_for(lambda: os.path.exists(doc_path), WAIT, doc_path)
        (doc,) = E.validate_documents([doc_path])
        uid, tid = pod["podUid"], O.trace_id_of(pod["podUid"])

        n_req = sum(1 for e in doc["events"] if e["type"] == "http.request")
        want_events = len(doc["events"]) - n_req + len(doc["findings"])
        want_logs = len(doc["events"]) + len(doc["findings"])

        def ours():
            sp = {}
            for r in rec.accepted("/v1/traces"):
                for ra, s in O.spans(r["request"]):
                    if ra.get("k8s.pod.uid") == uid:
                        sp[s["spanId"]] = (ra, s)
            logs = set()
            for r in rec.accepted("/v1/logs"):
                for ra, x in O.records(r["request"]):
                    if ra.get("k8s.pod.uid") == uid:
                        logs.add((x["spanId"], x["timeUnixNano"], x["eventName"], x["body"]["stringValue"]))
            return sp, logs

        E.wait_for(lambda: sum(1 for _, s in ours()[0].values() if s["kind"] in (2, 3)) >= n_req and
                   len(ours()[1]) >= want_logs, WAIT, "the trace and the log records at the receiver")
        sp, logs = ours()
        spans = list(sp.values())
        assert {s["traceId"] for _, s in spans} == {tid}, "not one trace, or not the Pod UID"
        roots = [s for _, s in spans if "parentSpanId" not in s]
        assert len(roots) == 1 and roots[0]["name"] == "pod termination", roots
        for ra, _ in spans:
            assert ra["k8s.namespace.name"] == D.NS and ra["k8s.pod.name"] == pod["name"], ra
            assert ra["k8s.node.name"] == D.NODE and ra["k8s.deployment.name"] == D.SERVICE, ra
            assert ra["service.name"] == "e2e-shop" and ra["deployment.environment"] == "e2e", ra
        ids = {c["name"]: c["containerId"] for c in pod["containers"]}
        for ra, _ in spans:
            if "k8s.container.name" in ra:
                assert ra["container.id"] == ids[ra["k8s.container.name"]], ra

        rspans = [s for _, s in spans if s["kind"] in (2, 3)]
        assert len(rspans) == n_req, (len(rspans), n_req)
        n_events = sum(len(s.get("events", [])) for _, s in spans)
        assert n_events == want_events, (n_events, want_events)
        assert len(logs) == want_logs, (len(logs), want_logs)

        # the failed requests, as the load generator saw them
        failed = [(rid, st) for rid, st, _ in run.load.failed() if st]
        assert failed, f"the race failed no request: {run.load.results[-10:]}"
        by_id = {}
        for s in rspans:
            a = O.attrs(s["attributes"])
            for rid in a.get("http.request.header.x-request-id", []):
                by_id.setdefault(rid, []).append((s, a))
        for rid, st in failed:
            got = [(s, a) for s, a in by_id.get(rid, []) if a.get("http.response.status_code") == st]
            assert got, f"failed request {rid} ({st}) is no span with that status: {by_id.get(rid)}"
            for s, a in got:
                assert s.get("status", {}).get("code") == 2 and a["error.type"] == str(st), (s, a)
        finding_events = [x for _, s in spans for x in s.get("events", []) if x["name"] == "termline.finding"]
        assert len(finding_events) == len(doc["findings"]) and doc["findings"], doc["findings"]

        # the faults cost nothing, and the agent counted it all
        faults = [r["fault"] for r in sorted(rec.records(), key=lambda r: r["n"])][:3]
        assert faults == ["503", "429:1", "disconnect"], faults

        def settled():
            m = metrics(port)
            return m if m.get("termline_otlp_queue_bytes") == 0 and \
                m.get("termline_otlp_log_records_sent_total", 0) >= want_logs else None
        m = E.wait_for(settled, WAIT, "the exporter to finish")
        assert m["termline_otlp_spans_sent_total"] >= len(spans), (m, len(spans))
        assert m["termline_otlp_spans_failed_total"] == 0 and m["termline_otlp_spans_dropped_total"] == 0, m
        assert m["termline_otlp_retries_total"] >= 2, m
        assert m["termline_otlp_document_errors_total"] == 0, m
        assert os.path.exists(doc_path)
        # the dashboard's termline_otlp_* queries name metrics the agent serves
        gates = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "test-rollout-gates.py"), "--metrics",
                                f"http://127.0.0.1:{port}/metrics", "--only", "termline_otlp_"],
                               capture_output=True, text=True)
        assert gates.returncode == 0, gates.stderr
        assert run.agent.poll() is None, "termlined died"
        run.agent.send_signal(signal.SIGTERM)
        assert run.agent.wait(20) == 0
        print(f"ok: pod {uid}: {len(spans)} spans ({n_req} requests, {len(failed)} failed with a status), "
              f"{n_events} span events, {len(logs)} log records through {int(m['termline_otlp_retries_total'])} "
              f"retries")
        return 0
    except AssertionError:
        if agent_log and os.path.exists(agent_log):
            sys.stderr.write(f"--- termlined (tail)\n{open(agent_log, errors='replace').read()[-5000:]}\n")
        sys.stderr.write("--- receiver\n" + json.dumps([{k: v for k, v in r.items() if k not in ("request", "headers")}
                                                        for r in rec.records()])[-3000:] + "\n")
        raise
    finally:
        run.cleanup()
        rec.stop()
        if os.environ.get("TERMLINE_E2E_KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _up(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/healthz")
        return c.getresponse().status == 200
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
