#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined's per-workload metrics and the rollout gate after the sidecar
race, end to end (root: real BPF, a simulated Pod of real processes, the
API double).

The race is the demo's (tools/termline-demo): a Pod of the Deployment
web's old ReplicaSet (web-5d9c7) with an istio-proxy terminates under load
with no preStop, the app closes its listener while the proxy still
forwards, and requests fail with 503. Then (docs/export.md):

- /metrics, through the tests' strict Prometheus text parser, counts one
  termination of workload web in namespace shop with outcome
  failed_requests, and its failed requests under the rules the document's
  findings explain them by (each failed request once, under the first
  finding that lists it), in total the document's failed requests as
  kubectl-termline counts them; the endpoint-removal lag in the bucket of
  the document's lagS; no preStop gate wait;
- every metric the example gates and the Grafana dashboard
  (manifests/examples/) query is in that /metrics (test-rollout-gates.py
  --metrics, which also parses the manifests);
- kubectl termline check deployment/web, through the API double's pod
  proxy as the Argo Rollouts Job runs it: exit 1 with the same failed
  requests, 0 with --max-failed-requests at that number, 1 with a
  --max-failed-ratio below the Pod's, 2 for --revision 2 (nothing
  replaced: no pass)."""
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

WAIT = 60
CLI = os.path.join(E.BUILD, "tools", "kubectl-termline", "kubectl-termline")
LAG_BUCKETS = [0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]


def load_demo():
    path = os.path.join(E.SRC, "tools", "termline-demo")
    loader = importlib.machinery.SourceFileLoader("termline_demo", path)
    spec = importlib.util.spec_from_loader("termline_demo", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def scrape(port):
    status, body, ctype = E.http_get(port, "/metrics")
    assert status == 200, status
    return E.parse_prometheus(body.decode()), body.decode()


def explained(doc, total):
    """{rule: failed requests} as the findings explain them: each failed
    request under the first finding (most severe first) that lists its ID;
    what a finding counts beyond the IDs it lists from those no finding
    lists, in the same order; the rest under "none"."""
    out, claimed, extra = {}, set(), []
    for f in doc["findings"]:
        ids = f.get("requestIds") or []
        for rid in ids:
            if rid in claimed:
                continue
            claimed.add(rid)
            out[f["rule"]] = out.get(f["rule"], 0) + 1
        counted = (f.get("numbers") or {}).get("failedRequests") or 0
        extra.append((f["rule"], max(counted - len(set(ids)), 0)))
    pool = total - len(claimed)
    for rule, n in extra:
        take = min(n, pool)
        if take:
            out[rule] = out.get(rule, 0) + take
        pool -= take
    if pool:
        out["none"] = pool
    return out


def cli(run, *args, rc):
    r = subprocess.run([CLI, *args, "--kubeconfig", run.kubeconfig, "--request-timeout", "20s"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == rc, f"kubectl-termline {' '.join(args)}: exit {r.returncode}, not {rc}\n" \
        f"{r.stdout[-2000:]}{r.stderr[-2000:]}"
    return r


def main():
    E.require_root()
    D = load_demo()
    work = tempfile.mkdtemp(prefix="termline-e2e-metrics-")
    run = D.Run(type("A", (), {})(), work, "race")
    port = E.free_port()
    agent_log = None
    try:
        run.pod = pod = run.simpod("create", "--prefix", f"termline-e2e-metrics-{os.getpid()}", "--namespace",
                                   D.NS, "--name", f"{D.RS_OLD}-{uuid.uuid4().hex[:5]}", "--drain-seconds", "3",
                                   "--app-stop-delay", "1", "--access-log-format", "istio",
                                   "--pod-logs-dir", run.logs)
        gate_delete, gate_stopped = os.path.join(run.work, "delete"), os.path.join(run.work, "stopped")
        run.start_double(D.scenario(pod, port, gate_delete, gate_stopped))
        cgroup_root = os.path.join(pod["cgroupRoot"], pod["podCgroupPath"].split("/")[0])
        agent_log = os.path.join(run.work, "termlined.log")
        run.agent = subprocess.Popen(
            [E.TERMLINED, "--kubeconfig", run.kubeconfig, "--node", D.NODE, "--state-dir", run.state,
             "--cgroup-root", cgroup_root, "--pod-logs-dir", run.logs, "--listen", f"127.0.0.1:{port}",
             "--linger", "1", "--metrics-max-workloads", "50"],
            stdout=open(agent_log, "wb"), stderr=subprocess.STDOUT)
        E.wait_for(lambda: run.agent.poll() is not None or (_up(port) and E.http_get(port, "/readyz")[0] == 200),
                   WAIT, "termlined ready")
        assert run.agent.poll() is None, open(agent_log).read()[-3000:]

        # before any termination: every family, at 0
        s, _ = scrape(port)
        for fam in ("termline_terminations_total", "termline_termination_failed_requests_total",
                    "termline_endpoint_removal_lag_seconds_count", "termline_drain_wait_seconds_count",
                    "termline_metrics_workloads_overflow_total"):
            assert s.get((fam, frozenset())) == 0, f"{fam} is not at 0 before a termination"
        for o in ("clean", "failed_requests", "sigkill", "incomplete"):
            assert s[("termline_terminations_by_outcome_total", frozenset({("outcome", o)}))] == 0, o

        run.load = D.Load(pod, run.api_port, "metrics", 0.05)
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
        assert doc["complete"], "the race's timeline is not complete"

        # the document's failed requests, as the CLI counts them
        r = subprocess.run([CLI, "check", f"{D.NS}/{pod['name']}", "--from", run.state, "-o", "json"],
                           capture_output=True, text=True)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        total = json.loads(r.stdout)["results"][0]["failedRequests"]
        client_failed = {rid for rid, st, _ in run.load.failed() if st}
        assert total > 0 and total >= len(client_failed) > 0, (total, len(client_failed))
        want_rules = explained(doc, total)
        assert sum(want_rules.values()) == total, (want_rules, total)

        wl = {"namespace": D.NS, "workload": D.SERVICE}

        def counted():
            s, _ = scrape(port)
            return s if s.get(("termline_terminations_total", frozenset(wl.items()))) == 1 else None
        E.wait_for(counted, WAIT, "the termination in /metrics")
        _, text = scrape(port)
        samples = E.parse_prometheus(text)
        terms = {frozenset(ls.items()): v for ls, v in E.metric_series(samples, "termline_terminations_total")}
        assert terms == {frozenset(wl.items()): 1}, f"terminations: {terms}"
        got_rules = {ls["rule"]: v for ls, v in
                     E.metric_series(samples, "termline_termination_failed_requests_total", **wl)}
        assert got_rules == want_rules, f"failed requests by rule: /metrics {got_rules}, findings {want_rules}"
        others = [ls for ls, _ in E.metric_series(samples, "termline_termination_failed_requests_total")
                  if (ls.get("namespace"), ls.get("workload")) != (D.NS, D.SERVICE)]
        assert not others, others
        outcomes = {ls["outcome"]: v for ls, v in E.metric_series(samples, "termline_terminations_by_outcome_total")}
        assert outcomes == {"clean": 0, "failed_requests": 1, "sigkill": 0, "incomplete": 0}, outcomes
        assert samples[("termline_metrics_workloads", frozenset())] == 1
        assert samples[("termline_metrics_workloads_overflow_total", frozenset())] == 0
        assert samples[("termline_drain_wait_seconds_count", frozenset())] == 0
        lag = [f["numbers"]["lagS"] for f in doc["findings"] if f["rule"] == "endpoint_removal_lag"
               and isinstance(f.get("numbers", {}).get("lagS"), (int, float))]
        buckets = {ls["le"]: v for ls, v in E.metric_series(samples, "termline_endpoint_removal_lag_seconds_bucket")}
        assert samples[("termline_endpoint_removal_lag_seconds_count", frozenset())] == len(lag), (lag, buckets)
        for b in LAG_BUCKETS:
            want = 1 if lag and max(lag[0], 0) <= b else 0
            assert buckets[f"{b:g}"] == want, f"removal lag {lag}: le={b:g} is {buckets[f'{b:g}']}, not {want}"
        assert buckets["+Inf"] == len(lag)

        # every metric the gates and the dashboard query is served
        # (the termline_otlp_* ones are otlp-e2e's: this agent does not export)
        for prefix in ("termline_termination", "termline_endpoint_", "termline_drain_"):
            gates = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "test-rollout-gates.py"), "--metrics",
                                    f"http://127.0.0.1:{port}/metrics", "--only", prefix],
                                   capture_output=True, text=True)
            assert gates.returncode == 0, gates.stderr
            assert "ok:" in gates.stdout, gates.stdout

        # the gate, as the Argo Rollouts Job runs it, through the API
        # server's pod proxy to this agent
        j = json.loads(cli(run, "check", "deployment/web", "-n", D.NS, "-o", "json", rc=1).stdout)
        dep = j["deployment"]
        assert dep["replicaSets"] == [D.RS_OLD] and dep["pods"] == 1, dep
        assert dep["failedRequests"] == total and dep["podsWithFailedRequests"] == 1, (dep, total)
        assert dep["status"] == "failed" and j["exitStatus"] == 1 and j["passed"] is False, j
        assert [a["name"] for a in dep["assertions"]] == ["failed-requests"], dep
        assert j["results"][0]["pod"] == f"{D.NS}/{pod['name']}", j["results"]
        t = cli(run, "check", "deployment/web", "-n", D.NS, rc=1).stdout
        assert f"FAIL deployment/web failed-requests: {total} failed request" in t, t
        cli(run, "check", "deployment/web", "-n", D.NS, "--max-failed-requests", str(total), rc=0)
        cli(run, "check", "deployment/web", "-n", D.NS, "--since", "10m", rc=1)
        later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        r = cli(run, "check", "deployment/web", "-n", D.NS, "--since", later, rc=2)
        assert "MISSING deployment/web" in r.stdout, r.stdout
        ratio = dep["failedRequests"] / dep["requests"]
        cli(run, "check", "deployment/web", "-n", D.NS, "--max-failed-ratio", f"{ratio / 2:.6f}", rc=1)
        cli(run, "check", "deployment/web", "-n", D.NS, "--max-failed-ratio", "1", rc=0)
        cli(run, "check", "deployment/web", "-n", D.NS, "--revision", "1", rc=1)
        r = cli(run, "check", "deployment/web", "-n", D.NS, "--revision", "2", rc=2)
        assert "MISSING deployment/web" in r.stdout, r.stdout

        assert run.agent.poll() is None, "termlined died"
        run.agent.send_signal(signal.SIGTERM)
        assert run.agent.wait(20) == 0
        print(f"ok: pod {pod['podUid']}: /metrics counts 1 termination of {D.NS}/{D.SERVICE} (failed_requests), "
              f"{total} failed requests by rule {got_rules}, removal lag {lag}; the examples' metrics served; "
              f"check deployment/web exits 1, 0, 2 as documented")
        return 0
    except AssertionError:
        if agent_log and os.path.exists(agent_log):
            sys.stderr.write(f"--- termlined (tail)\n{open(agent_log, errors='replace').read()[-5000:]}\n")
        raise
    finally:
        run.cleanup()
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
