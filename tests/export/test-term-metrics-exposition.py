#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The per-workload metrics' exposition (docs/export.md, "Metrics per
workload") through the tests' strict Prometheus text parser
(tests/e2e/e2elib.py parse_prometheus): a few thousand terminations of
seeded random workloads, namespaces, owners (ReplicaSets with and without
a hash, CronJobs' Jobs, bare Pods, names with quotes, backslashes and
newlines), outcomes, failed requests by rule and removal lags, counted by
term-metrics-expose; every family typed once, each series once, the
values equal to what this script counts from the same input, the
histograms cumulative with the documented buckets, and the series bounded
by the cap however many workloads come.

usage: test-term-metrics-exposition.py --expose BUILD/tests/export/term-metrics-expose"""
import argparse
import os
import random
import re
import subprocess
import sys

SRC = os.environ.get("TERMLINE_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
import e2elib as E  # noqa: E402

RULES = ["requests_after_listener_closed", "requests_after_sidecar_exit", "sigkill_after_grace",
         "endpoint_removal_lag", "streams_reset_during_drain"]
LAG_BUCKETS = ["0", "0.05", "0.1", "0.25", "0.5", "1", "2", "5", "10", "30", "60", "+Inf"]
WAIT_BUCKETS = ["0.5", "1", "2", "5", "10", "15", "30", "60", "120", "300", "+Inf"]
HASH = "bcdfghjklmnpqrstvwxz2456789"
TYPES = {
    "termline_terminations_total": "counter",
    "termline_termination_failed_requests_total": "counter",
    "termline_terminations_by_outcome_total": "counter",
    "termline_endpoint_removal_lag_seconds": "histogram",
    "termline_drain_wait_seconds": "histogram",
    "termline_metrics_workloads": "gauge",
    "termline_metrics_workloads_overflow_total": "counter",
}


def esc(s):
    return "-" if s is None else s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def workload(kind, name):
    """(workload) as daemon/findings/workload.c names it, None: none."""
    if not kind or not name:
        return None
    if kind == "ReplicaSet":
        base, _, h = name.rpartition("-")
        if base and h and len(h) <= 10 and all(c in HASH for c in h):
            return base
    if kind == "Job":
        base, _, t = name.rpartition("-")
        if base and t.isdigit() and 8 <= len(t) <= 10:
            return base
    return name


class Model:
    """What the metrics must say, counted here."""

    def __init__(self, cap):
        self.cap, self.admitted, self.overflowed = cap, [], []
        self.terms, self.failed, self.outcomes = {}, {}, dict.fromkeys(
            ["clean", "failed_requests", "sigkill", "incomplete"], 0)
        self.overflow, self.lags, self.waits = 0, [], []

    def labels(self, ns, kind, owner):
        ns = ns or "_unknown"
        w = workload(kind, owner) or "_none"
        key = (ns, w)
        if key in self.admitted or len(self.admitted) < self.cap:
            if key not in self.admitted:
                self.admitted.append(key)
            return key
        self.overflow += 1
        if ns in self.overflowed or len(self.overflowed) < self.cap:
            if ns not in self.overflowed:
                self.overflowed.append(ns)
            return (ns, "_other")
        return ("_other", "_other")

    def closed(self, ns, kind, owner, flags, failed, lag_ms):
        summary = "s" not in flags
        terminated = "t" in flags if summary else "d" in flags
        if not terminated:
            return
        key = self.labels(ns, kind, owner)
        self.terms[key] = self.terms.get(key, 0) + 1
        total = sum(failed.values())
        if summary and total:
            out = "failed_requests"
        elif summary and "k" in flags:
            out = "sigkill"
        elif not summary or "c" not in flags:
            out = "incomplete"
        else:
            out = "clean"
        self.outcomes[out] += 1
        if summary:
            for rule, n in failed.items():
                if n:
                    self.failed[key + (rule,)] = self.failed.get(key + (rule,), 0) + n
            if lag_ms is not None:
                self.lags.append(max(lag_ms, 0) / 1000)


def owner(rng, i):
    r = rng.random()
    base = rng.choice(["web", "api", "checkout-service", "db", "cache", "worker"]) + str(i % 40)
    if r < 0.45:
        return "ReplicaSet", base + "-" + "".join(rng.choice(HASH) for _ in range(rng.choice([5, 9, 10])))
    if r < 0.55:
        return "ReplicaSet", base + "-" + rng.choice(["abc", "x1", "bcdfghjklmn"])  # no hash: itself
    if r < 0.65:
        return "Job", base + "-" + str(rng.randrange(10**7, 10**10))
    if r < 0.75:
        return rng.choice(["StatefulSet", "DaemonSet"]), base
    if r < 0.8:
        return None, None
    if r < 0.85:
        return "StatefulSet", rng.choice(['we"b', "a\\b", "new\nline", 'x",workload="y', "t\tab"])
    return "ReplicaSet", base + "-5d9c7"


def scenario(seed, n, cap):
    rng = random.Random(seed)
    model, lines = Model(cap), []
    for i in range(n):
        if rng.random() < 0.1:
            ms = rng.choice([-1, 0, 500, 501, 15000, 299999, 300001, rng.randrange(0, 400000)])
            lines.append(f"wait {ms}")
            if ms >= 0:
                model.waits.append(ms / 1000)
            continue
        ns = rng.choice(["shop", "payments", "batch", None, 'we"ird'] + [f"ns-{k}" for k in range(rng.choice([3, 30]))])
        kind, name = owner(rng, i)
        flags = "".join(c for c in "tkcds" if rng.random() < {"t": 0.9, "k": 0.1, "c": 0.9, "d": 0.8, "s": 0.05}[c])
        failed = {}
        if rng.random() < 0.4:
            for rule in rng.sample(RULES, rng.randrange(1, 3)):
                failed[rule] = rng.randrange(0, 50)
        if rng.random() < 0.2:
            failed["none"] = rng.randrange(1, 5)
        lag = rng.choice([None, None, -300, 0, 50, 1480, 2000, 60000, 61000, rng.randrange(0, 70000)])
        field = ",".join(([str(failed["none"])] if "none" in failed else []) +
                         [f"{r}={v}" for r, v in failed.items() if r != "none"]) or "0"
        lines.append("\t".join([esc(ns), esc(kind), esc(name), flags or "-", field,
                                "-" if lag is None else str(lag)]))
        model.closed(ns, kind, name, flags, failed, lag)
    return model, "\n".join(lines) + "\n"


def unesc(v):
    """A label value as the exposition format escapes it, read back."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v, flags=re.S)


def series(samples, name, *keys):
    """{(label values in keys' order): value} of name's labelled series."""
    return {tuple(unesc(dict(ls)[k]) for k in keys): v for (n, ls), v in samples.items() if n == name and ls}


def check_histogram(samples, name, bounds, observed):
    buckets = {dict(ls)["le"]: v for ls, v in
               ((ls, v) for (n, ls), v in samples.items() if n == name + "_bucket")}
    assert list(buckets) == bounds or sorted(buckets, key=lambda b: float(b)) == sorted(bounds, key=float), \
        f"{name}: buckets {list(buckets)}, not {bounds}"
    prev = 0
    for b in bounds:
        assert buckets[b] >= prev, f"{name}: le={b} {buckets[b]} < {prev}: not cumulative"
        prev = buckets[b]
        want = sum(1 for v in observed if b == "+Inf" or v <= float(b) + 1e-12)
        assert buckets[b] == want, f"{name}: le={b} {buckets[b]}, want {want}"
    assert samples[(name + "_count", frozenset())] == len(observed) == buckets["+Inf"], name
    assert abs(samples[(name + "_sum", frozenset())] - sum(observed)) < 1e-6 * max(1, len(observed)), name


def run(expose, seed, n, cap):
    model, text = scenario(seed, n, cap)
    r = subprocess.run([expose, str(cap)], input=text.encode(), capture_output=True, check=True)
    out = r.stdout.decode()
    samples = E.parse_prometheus(out)  # raises on anything but strict 0.0.4
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", out, re.M))
    for fam, t in TYPES.items():
        assert types.get(fam) == t, f"{fam}: TYPE {types.get(fam)}, not {t}"

    got = series(samples, "termline_terminations_total", "namespace", "workload")
    want = {k: v for k, v in model.terms.items()}
    assert got == want, f"seed {seed}: terminations differ: {sorted(set(got.items()) ^ set(want.items()))[:6]}"
    got = series(samples, "termline_termination_failed_requests_total", "namespace", "workload", "rule")
    assert got == model.failed, \
        f"seed {seed}: failed requests differ: {sorted(set(got.items()) ^ set(model.failed.items()))[:6]}"
    for out_name, v in model.outcomes.items():
        got = samples[("termline_terminations_by_outcome_total", frozenset({("outcome", out_name)}))]
        assert got == v, f"seed {seed}: outcome {out_name} {got}, want {v}"
    assert sum(model.outcomes.values()) == sum(model.terms.values())
    assert samples[("termline_metrics_workloads", frozenset())] == len(model.admitted)
    assert samples[("termline_metrics_workloads_overflow_total", frozenset())] == model.overflow
    check_histogram(samples, "termline_endpoint_removal_lag_seconds", LAG_BUCKETS, model.lags)
    check_histogram(samples, "termline_drain_wait_seconds", WAIT_BUCKETS, model.waits)
    # bounded: the workloads, an "_other" per overflowed namespace (at most
    # the cap), one namespace="_other"
    n_terms = sum(1 for (nm, ls) in samples if nm == "termline_terminations_total" and ls)
    assert n_terms <= 2 * cap + 1, f"seed {seed}: {n_terms} series past the bound {2 * cap + 1}"
    return model, samples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expose", required=True)
    a = ap.parse_args()
    # no cap reached, a cap reached in a few namespaces, a cap of 1
    m, s = run(a.expose, 1, 3000, 10000)
    assert m.overflow == 0 and any(w == "_none" for _, w in m.terms), m.overflow
    assert any("\n" in w or '"' in w for _, w in m.terms), "the hostile names were not drawn"
    m, s = run(a.expose, 2, 3000, 20)
    assert m.overflow > 0 and ("_other", "_other") in m.terms, sorted(m.terms)[:10]
    m, s = run(a.expose, 3, 500, 1)
    assert len(m.terms) <= 3, m.terms
    # nothing counted: every family present, at 0
    r = subprocess.run([a.expose, "500"], input=b"", capture_output=True, check=True)
    samples = E.parse_prometheus(r.stdout.decode())
    for fam in ("termline_terminations_total", "termline_termination_failed_requests_total",
                "termline_metrics_workloads", "termline_metrics_workloads_overflow_total",
                "termline_endpoint_removal_lag_seconds_count", "termline_drain_wait_seconds_count"):
        assert samples[(fam, frozenset())] == 0, fam
    for o in ("clean", "failed_requests", "sigkill", "incomplete"):
        assert samples[("termline_terminations_by_outcome_total", frozenset({("outcome", o)}))] == 0, o
    print("ok: the per-workload metrics parse strictly and equal the counts of 6,500 terminations "
          "under caps of 10000, 20 and 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
