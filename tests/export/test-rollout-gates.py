#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The rollout gates and the dashboard in manifests/examples/ (docs/export.md):

- the Argo Rollouts AnalysisTemplate (and its ServiceAccount and bindings),
  the Flagger MetricTemplate and the Grafana dashboard parse, with the
  fields their controllers require, every {{args.X}} declared, every
  dashboard variable defined;
- every metric their PromQL names is one of termlined's, with labels it
  has: with --metrics FILE|URL (termlined's /metrics), each must be in it;
  without, each must be one the agent documents (docs/export.md), so a
  rename on either side fails here.

usage: test-rollout-gates.py [--metrics FILE|http://HOST:PORT/metrics] [--only PREFIX]"""
import argparse
import json
import os
import re
import sys
import urllib.request

import yaml

SRC = os.environ.get("TERMLINE_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLES = os.path.join(SRC, "manifests", "examples")
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))

# termlined's metrics the examples may use: family -> (type, labels), as
# docs/export.md lists them.
METRICS = {
    "termline_terminations_total": ("counter", {"namespace", "workload"}),
    "termline_termination_failed_requests_total": ("counter", {"namespace", "workload", "rule"}),
    "termline_terminations_by_outcome_total": ("counter", {"outcome"}),
    "termline_endpoint_removal_lag_seconds": ("histogram", {"le"}),
    "termline_drain_wait_seconds": ("histogram", {"le"}),
    "termline_otlp_spans_sent_total": ("counter", set()),
    "termline_otlp_spans_failed_total": ("counter", set()),
    "termline_otlp_spans_dropped_total": ("counter", set()),
    "termline_otlp_queue_length": ("gauge", {"signal"}),
}
NAME = re.compile(r"\b(termline_[a-z0-9_]+)(\{[^}]*\})?")
BY = re.compile(r"\bby\s*\(([^)]*)\)")
LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def family(name):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and METRICS.get(base, ("",))[0] == "histogram":
            return base
    return name


def queries():
    """[(where, PromQL)] of every example."""
    out = []
    with open(os.path.join(EXAMPLES, "argo-rollouts-analysis.yaml"), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    at = [d for d in docs if d.get("kind") == "AnalysisTemplate"]
    if check(len(at) == 1, "argo-rollouts-analysis.yaml: one AnalysisTemplate"):
        t = at[0]
        check(t["apiVersion"] == "argoproj.io/v1alpha1", "AnalysisTemplate apiVersion")
        declared = {a["name"] for a in t["spec"].get("args", [])}
        used = set(re.findall(r"\{\{\s*args\.([a-zA-Z0-9_-]+)\s*\}\}", json.dumps(t)))
        check(used <= declared, f"AnalysisTemplate: undeclared args {used - declared}")
        kinds = set()
        for m in t["spec"]["metrics"]:
            check(m.get("name"), "AnalysisTemplate metric without a name")
            prov = m["provider"]
            kinds |= set(prov)
            if "prometheus" in prov:
                check(prov["prometheus"].get("address") and prov["prometheus"].get("query"),
                      f"{m['name']}: prometheus needs address and query")
                check(m.get("successCondition") or m.get("failureCondition"), f"{m['name']}: no condition")
                out.append((f"AnalysisTemplate/{m['name']}", prov["prometheus"]["query"]))
            if "job" in prov:
                pod = prov["job"]["spec"]["template"]["spec"]
                check(pod.get("restartPolicy") in ("Never", "OnFailure"), f"{m['name']}: job restartPolicy")
                c = pod["containers"][0]
                check(c.get("command") == ["kubectl-termline"] and c.get("args", [""])[0] == "check",
                      f"{m['name']}: the job runs kubectl-termline check")
                sa = pod.get("serviceAccountName")
                check(any(d.get("kind") == "ServiceAccount" and d["metadata"]["name"] == sa for d in docs),
                      f"{m['name']}: ServiceAccount {sa} is not in the file")
        check({"prometheus", "job"} <= kinds, "AnalysisTemplate: a prometheus and a job provider")
        for d in docs:
            if d.get("kind") in ("ClusterRoleBinding", "RoleBinding"):
                check(d["roleRef"]["name"] == "termline-user", f"{d['kind']}: binds manifests/user-rbac.yaml's role")
    with open(os.path.join(EXAMPLES, "flagger-metrictemplate.yaml"), encoding="utf-8") as f:
        mt = yaml.safe_load(f)
    check(mt["apiVersion"] == "flagger.app/v1beta1" and mt["kind"] == "MetricTemplate", "Flagger MetricTemplate")
    check(mt["spec"]["provider"]["type"] == "prometheus" and mt["spec"]["provider"].get("address"),
          "MetricTemplate provider")
    out.append(("MetricTemplate", mt["spec"]["query"]))
    with open(os.path.join(EXAMPLES, "grafana-dashboard.json"), encoding="utf-8") as f:
        dash = json.load(f)
    check(dash.get("uid") and dash.get("title") and dash.get("panels"), "dashboard: uid, title, panels")
    variables = {v["name"] for v in dash.get("templating", {}).get("list", [])}
    for v in dash["templating"]["list"]:
        q = v.get("query")
        if isinstance(q, dict):
            out.append((f"dashboard variable {v['name']}", q["query"]))
    for p in dash["panels"]:
        check(p.get("targets"), f"panel {p.get('title')}: no targets")
        for t in p.get("targets", []):
            out.append((f"panel {p['title']}", t["expr"]))
    text = json.dumps(dash)
    for v in set(re.findall(r"\$\{?([a-zA-Z_]+)", text)):
        check(v.startswith("__") or v in variables, f"dashboard: ${v} is not a variable")
    return out


def referenced(qs):
    """{family: {labels}} the queries use."""
    out = {}
    for where, q in qs:
        q = re.sub(r"\{\{[^}]*\}\}", "X", q)  # templating
        by = set()
        for m in BY.finditer(q):
            by |= {x.strip() for x in m.group(1).split(",") if x.strip()}
        for m in NAME.finditer(q):
            fam = family(m.group(1))
            labels = set(x for x, _ in LABEL.findall(m.group(2) or ""))
            out.setdefault(fam, set()).update(labels | by)
            check(fam in METRICS, f"{where}: {m.group(1)} is no metric termlined documents")
    for fam, labels in out.items():
        if fam in METRICS:
            extra = labels - METRICS[fam][1] - {"le"}
            check(not extra, f"{fam}: labels {sorted(extra)} are not the metric's")
    return out


def exposed(source):
    import e2elib as E
    if source.startswith("http"):
        with urllib.request.urlopen(source, timeout=10) as r:
            text = r.read().decode()
    else:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    return {n for (n, _) in E.parse_prometheus(text)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", help="termlined's /metrics (file or URL): every referenced metric must be in it")
    ap.add_argument("--only", default="", help="with --metrics: only the names with this prefix")
    args = ap.parse_args()
    qs = queries()
    ref = referenced(qs)
    if args.metrics:
        names = exposed(args.metrics)
        for fam in sorted(ref):
            if not fam.startswith(args.only):
                continue
            want = fam + "_bucket" if METRICS.get(fam, ("",))[0] == "histogram" else fam
            check(want in names, f"{fam}: not in {args.metrics}")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"ok: {len(qs)} queries in the examples, metrics: {', '.join(sorted(ref))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
