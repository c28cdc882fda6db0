#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl termline check rollout/NAME, an Argo Rollout as the rollout gate
(docs/cli.md "check", docs/export.md "Rollout gates"), no root, through
the API double (tests/kube/kube-double.py) serving argoproj.io/v1alpha1:

- the Rollout web at revision 3 (status.currentPodHash 7f8b9) owning its
  ReplicaSets directly (ownerReferences kind Rollout, the
  rollouts-pod-template-hash label, the rollout.argoproj.io/revision
  annotation), created at known times: the replaced Pods since the current
  ReplicaSet was created (the default), since --since, of --revision N;
  exit 1 and 0 by the failed requests; --max-failed-requests and
  --max-failed-ratio over all of them; -o json and junit; the aliases
  rollouts/, ro/, rollout.argoproj.io/;
- kept out: another Rollout's Pods (api), the current ReplicaSet's Pods
  (api's told by its currentPodHash alone: its Rollout carries no revision
  annotation), a ReplicaSet named web-<hash> owned by a Deployment web;
- rollout NAME (the verb) over the same Rollout;
- a Rollout that does not exist; an API server without the Rollout CRD (the
  group absent, or argoproj.io served for Argo CD alone): one line, exit 2;
- --from DIR: the ReplicaSets told by their name, as for a Deployment;
- manifests/examples/argo-rollouts-analysis.yaml's Job runs check
  rollout/NAME: its arguments, as Argo fills them in, against the double;
  manifests/user-rbac.yaml grants get/list on rollouts.argoproj.io;
- completion offers rollout/ and, with --from DIR, rollout/NAME."""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import clilib as L  # noqa: E402
import e2elib as E  # noqa: E402
from clilib import run  # noqa: E402

# the Deployment tests' helpers: documents moved in time, owned by a ReplicaSet
gate = __import__("test-check-gate")
pod_doc, j = gate.pod_doc, gate.j

CRD = "rollouts.argoproj.io"


def rs(name, rev, created, owner_kind, owner, owner_uid):
    argo = owner_kind == "Rollout"
    md = {"name": name, "namespace": "shop", "uid": f"rs-{name}", "creationTimestamp": created,
          "annotations": {("rollout.argoproj.io/revision" if argo else "deployment.kubernetes.io/revision"):
                          str(rev)},
          "labels": {"app": owner, ("rollouts-pod-template-hash" if argo else "pod-template-hash"):
                     name.rsplit("-", 1)[1]},
          "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1" if argo else "apps/v1",
                               "kind": owner_kind, "name": owner, "uid": owner_uid,
                               "controller": True, "blockOwnerDeletion": True}]}
    return {"resource": "replicasets", "object": {"kind": "ReplicaSet", "apiVersion": "apps/v1", "metadata": md}}


def rollout(name, uid, rev, pod_hash):
    md = {"name": name, "namespace": "shop", "uid": uid}
    if rev:
        md["annotations"] = {"rollout.argoproj.io/revision": str(rev)}
    return {"resource": "rollouts", "object": {
        "kind": "Rollout", "apiVersion": "argoproj.io/v1alpha1", "metadata": md,
        "spec": {"strategy": {"canary": {"steps": [{"setWeight": 25}]}}},
        "status": {"currentPodHash": pod_hash, "stableRS": pod_hash}}}


AGENT = {"resource": "pods", "object": {
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "termline-a", "namespace": "termline", "uid": "agent-a",
                 "labels": {"app.kubernetes.io/component": "agent"}},
    "spec": {"nodeName": "node-a", "containers": [{"name": "termlined", "image": "x"}]},
    "status": {"phase": "Running", "podIP": "127.0.0.1"}}}


def double(work, name, port, objects, crds):
    os.makedirs(os.path.join(work, name))
    return E.KubeDouble(os.path.join(work, name), {
        "node": "node-a", "token": "token-argo", "objects": [AGENT, *objects], "steps": [], "crds": crds,
        "podProxy": {"termline/termline-a:9440": f"127.0.0.1:{port}"}, "namespaces": ["shop"]}).start()


def t_api(cli, work, race, fixed):
    docs = [
        pod_doc(race, "web-5d9c7-a", "cccccccc-0000-4000-8000-000000000001", "web-5d9c7", 0),      # 03:00
        pod_doc(race, "web-6b8d4-b", "cccccccc-0000-4000-8000-000000000002", "web-6b8d4", 3600),   # 04:00
        pod_doc(fixed, "web-6b8d4-c", "cccccccc-0000-4000-8000-000000000003", "web-6b8d4", 6000),  # 04:40
        pod_doc(race, "web-7f8b9-d", "cccccccc-0000-4000-8000-000000000004", "web-7f8b9", 7200),   # 05:00
        # another Rollout's: replaced, and of its current ReplicaSet
        pod_doc(race, "api-5d9c7-e", "cccccccc-0000-4000-8000-000000000005", "api-5d9c7", 3600),
        pod_doc(race, "api-6b8d4-f", "cccccccc-0000-4000-8000-000000000006", "api-6b8d4", 3600),
        # a ReplicaSet named like web's, owned by a Deployment web (before
        # the move to a Rollout), its Pod replaced at 04:10
        pod_doc(race, "web-1a2b3-g", "cccccccc-0000-4000-8000-000000000007", "web-1a2b3", 4200),
    ]
    srv, port = L.serve(docs)
    objects = [
        rollout("web", "ro-web", 3, "7f8b9"), rollout("api", "ro-api", None, "6b8d4"),
        {"resource": "deployments", "object": {
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "shop", "uid": "dep-web",
                         "annotations": {"deployment.kubernetes.io/revision": "2"}}}},
        rs("web-5d9c7", 1, "2026-12-01T02:00:00Z", "Rollout", "web", "ro-web"),
        rs("web-6b8d4", 2, "2026-12-01T03:30:00Z", "Rollout", "web", "ro-web"),
        rs("web-7f8b9", 3, "2026-12-01T04:30:00Z", "Rollout", "web", "ro-web"),
        rs("api-5d9c7", 1, "2026-12-01T01:00:00Z", "Rollout", "api", "ro-api"),
        rs("api-6b8d4", 2, "2026-12-01T01:30:00Z", "Rollout", "api", "ro-api"),
        rs("web-1a2b3", 1, "2026-12-01T01:00:00Z", "Deployment", "web", "dep-web"),
    ]
    d = double(work, "double", port, objects, [CRD, "applications.argoproj.io"])
    k = ["--kubeconfig", d.kubeconfig, "-n", "shop"]
    try:
        # the default: since revision 3's ReplicaSet was created (04:30):
        # web-6b8d4-c alone, the fix: a pass
        r = run(cli, "check", "rollout/web", *k, rc=0)
        assert " ".join(r.stdout.split()).startswith(
            "rollout shop/web: 1 Pod of web-5d9c7, web-6b8d4 replaced since 2026-12-01T04:30:00Z "
            "(when the current revision's ReplicaSet was created) PASS"), r.stdout
        assert "PASS rollout/web failed-requests: 0 failed requests in 0 of 1 Pod (at most 0 allowed)" \
            in r.stdout, r.stdout
        o = j(run(cli, "check", "rollout/web", *k, "-o", "json", rc=0))
        assert "deployment" not in o, o
        ro = o["rollout"]
        assert (ro["kind"], ro["name"], ro["namespace"]) == ("Rollout", "web", "shop"), ro
        assert ro["replicaSets"] == ["web-5d9c7", "web-6b8d4"], ro
        assert ro["since"] == "2026-12-01T04:30:00Z" and ro["revision"] is None, ro
        assert (ro["pods"], ro["failedRequests"], ro["status"]) == (1, 0, "passed"), ro
        assert [x["pod"] for x in o["results"]] == ["shop/web-6b8d4-c"] and o["exitStatus"] == 0, o
        # kubectl's other names of the kind select the same
        for alias in ("rollouts/web", "ro/web", "rollout.argoproj.io/web", "rollouts.argoproj.io/web"):
            assert j(run(cli, "check", alias, *k, "-o", "json", rc=0)) == o, alias

        # --since a time: the race of 04:00 too, never the Deployment's
        # web-1a2b3-g of 04:10
        r = run(cli, "check", "rollout/web", *k, "--since", "2026-12-01T03:30:00Z", rc=1)
        assert "FAIL rollout/web failed-requests: 14 failed requests in 1 of 2 Pods (at most 0 allowed): " \
               "web-6b8d4-b 14" in r.stdout, r.stdout
        o = j(run(cli, "check", "rollout/web", *k, "--since", "2026-12-01T02:00:00Z", "-o", "json", rc=1))
        ro = o["rollout"]
        assert sorted(x["pod"] for x in o["results"]) == \
            ["shop/web-5d9c7-a", "shop/web-6b8d4-b", "shop/web-6b8d4-c"], o["results"]
        assert (ro["pods"], ro["failedRequests"], ro["podsWithFailedRequests"]) == (3, 28, 2), ro
        requests = ro["requests"]
        assert requests == sum(x["requests"] for x in o["results"]) and requests > 28, o
        # after every replacement: nothing to judge, exit 2
        r = run(cli, "check", "rollout/web", *k, "--since", "2026-12-01T06:00:00Z", rc=2)
        assert "MISSING rollout/web: no timeline of a Pod of web-5d9c7, web-6b8d4 replaced since " \
               "2026-12-01T06:00:00Z" in r.stdout, r.stdout

        # --revision N: that revision's ReplicaSet, by Argo's annotation
        o = j(run(cli, "check", "ro/web", *k, "--revision", "1", "-o", "json", rc=1))
        assert o["rollout"]["replicaSets"] == ["web-5d9c7"] and o["rollout"]["revision"] == 1, o
        assert [x["pod"] for x in o["results"]] == ["shop/web-5d9c7-a"], o
        o = j(run(cli, "check", "ro/web", *k, "--revision", "2", "-o", "json", rc=1))
        assert o["rollout"]["replicaSets"] == ["web-6b8d4"] and o["rollout"]["pods"] == 2, o
        run(cli, "check", "ro/web", *k, "--revision", "2", "--since", "2026-12-01T04:30:00Z", rc=0)
        r = run(cli, "check", "ro/web", *k, "--revision", "9", rc=2)
        assert "no replaced ReplicaSet" in r.stdout and "MISSING" in r.stdout, r.stdout

        # another Rollout: its replaced Pods alone; its current ReplicaSet
        # is told by status.currentPodHash (no revision annotation on it)
        o = j(run(cli, "check", "rollout/api", *k, "--since", "2026-12-01T00:00:00Z", "-o", "json", rc=1))
        assert o["rollout"]["replicaSets"] == ["api-5d9c7"], o["rollout"]
        assert [x["pod"] for x in o["results"]] == ["shop/api-5d9c7-e"], o["results"]
        # ... and the Deployment web, its own ReplicaSet's Pods (revision 1)
        o = j(run(cli, "check", "deployment/web", *k, "--revision", "1", "-o", "json", rc=1))
        assert "rollout" not in o and o["deployment"]["kind"] == "Deployment", o
        assert [x["pod"] for x in o["results"]] == ["shop/web-1a2b3-g"], o["results"]

        # thresholds over all the Pods together
        since = ["--since", "2026-12-01T02:00:00Z"]
        run(cli, "check", "rollout/web", *k, *since, "--max-failed-requests", "28", rc=0)
        run(cli, "check", "rollout/web", *k, *since, "--max-failed-requests", "27", rc=1)
        ratio = 28 / requests
        r = run(cli, "check", "rollout/web", *k, *since, "--max-failed-ratio", f"{ratio + 0.001:.4f}", rc=0)
        assert f"PASS rollout/web failed-ratio: 28 of {requests} captured requests failed in 3 Pods, " \
               f"{ratio * 100:.3f} %" in r.stdout, r.stdout
        run(cli, "check", "rollout/web", *k, *since, "--max-failed-ratio", f"{ratio - 0.001:.4f}", rc=1)
        # JUnit: the Rollout's testsuite
        x = ET.fromstring(run(cli, "check", "rollout/web", *k, *since, "-o", "junit", rc=1).stdout)
        suites = {s.get("name"): s for s in x}
        assert list(suites) == ["rollout/shop/web"], list(suites)
        assert suites["rollout/shop/web"].find("testcase/failure").get("message").startswith(
            "28 failed requests in 2 of 3 Pods"), ET.tostring(x)

        # the rollout verb: every replaced Pod of the Rollout
        o = j(run(cli, "rollout", "ro/web", *k, "-o", "json", rc=0))
        assert (o["rollout"], o["kind"], o["namespace"]) == ("web", "Rollout", "shop") and "deployment" not in o, o
        assert o["replicaSets"] == ["web-5d9c7", "web-6b8d4"] and o["pods"] == 3, o
        assert o["failedRequests"] == 28 and o["podsWithFailedRequests"] == 2, o
        r = run(cli, "rollout", "rollout/web", *k, rc=0)
        assert r.stdout.startswith("rollout shop/web: 28 requests failed in 2 of 3 Pods"), r.stdout

        # the example AnalysisTemplate's Job, its arguments as Argo fills
        # them in: web's rollout passes, api's (its replaced Pod failed 14) fails
        for workload, want in (("web", 0), ("api", 1)):
            c = job_container()
            args = [re.sub(r"\{\{args\.([a-z-]+)\}\}", lambda m: {"workload": workload, "namespace": "shop"}.get(
                m.group(1)) or ARGS[m.group(1)], a) for a in c["args"]]
            assert args[:2] == ["check", f"rollout/{workload}"], args
            run(cli, *args, "--kubeconfig", d.kubeconfig, rc=want)

        # no such Rollout: said once, with the next step
        r = run(cli, "check", "rollout/nope", *k, rc=2)
        assert "rollout shop/nope not found" in r.stderr and "kubectl -n shop get rollouts.argoproj.io" \
            in r.stderr and r.stdout == "", (r.stdout, r.stderr)
        run(cli, "rollout", "rollout/nope", *k, rc=1)
    finally:
        d.stop()

    # no Rollout CRD: the argoproj.io group absent, or served for Argo CD's
    # Applications alone; check says so in one line and fails (exit 2)
    for name, crds in (("no-group", []), ("argo-cd", ["applications.argoproj.io"])):
        d = double(work, name, port, objects[2:], crds)
        try:
            r = run(cli, "check", "rollout/web", "--kubeconfig", d.kubeconfig, "-n", "shop", rc=2)
            errs = [x for x in r.stderr.splitlines() if not x.startswith("  next:")]
            assert len(errs) == 1 and errs[0].endswith(
                "rollout shop/web: the API server has no rollouts.argoproj.io (Argo Rollouts' CRD is not "
                "installed)"), (name, r.stderr)
            assert "next: kubectl get crd rollouts.argoproj.io" in r.stderr and r.stdout == "", (name, r)
            run(cli, "rollout", "ro/web", "--kubeconfig", d.kubeconfig, "-n", "shop", rc=2)
            # the Deployment is still read
            run(cli, "check", "deployment/web", "--kubeconfig", d.kubeconfig, "-n", "shop", "--revision", "1",
                rc=1)
        finally:
            d.stop()
    srv.shutdown()


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "manifests", "examples",
                       "argo-rollouts-analysis.yaml")
ARGS = {}


def job_container():
    """The check container of the example AnalysisTemplate's job provider;
    ARGS: its args' default values."""
    with open(EXAMPLE, encoding="utf-8") as f:
        t = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "AnalysisTemplate"][0]
    ARGS.update({a["name"]: a["value"] for a in t["spec"]["args"] if "value" in a})
    jobs = [m["provider"]["job"] for m in t["spec"]["metrics"] if "job" in m["provider"]]
    assert len(jobs) == 1, jobs
    return jobs[0]["spec"]["template"]["spec"]["containers"][0]


def t_rbac():
    """manifests/user-rbac.yaml: the users' ClusterRole reads Rollouts."""
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "manifests", "user-rbac.yaml"),
              encoding="utf-8") as f:
        role = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "ClusterRole"][0]
    rules = [r for r in role["rules"] if "argoproj.io" in r["apiGroups"]]
    assert rules and any("rollouts" in r["resources"] and {"get", "list"} <= set(r["verbs"]) for r in rules) \
        and all(set(r["verbs"]) <= {"get", "list", "watch"} for r in rules), rules


def t_from_dir(cli, work, race, fixed):
    """--from DIR: no API server; the Rollout's ReplicaSets are those named
    web-<hash> (Argo names them NAME-<pod template hash>)."""
    root = L.write_state(os.path.join(work, "state"), [
        pod_doc(race, "web-5d9c7-a", "dddddddd-0000-4000-8000-000000000001", "web-5d9c7", 0),
        pod_doc(fixed, "web-6b8d4-b", "dddddddd-0000-4000-8000-000000000002", "web-6b8d4", 3600),
        pod_doc(race, "webshop-5d9c7-d", "dddddddd-0000-4000-8000-000000000004", "webshop-5d9c7", 3600),
    ])
    o = j(run(cli, "check", "rollout/web", "--from", root, "-n", "shop", "-o", "json", rc=1))
    assert o["rollout"]["selection"] == "rollout shop/web: 2 Pods of the ReplicaSets named web-<hash> " \
                                        "(--from has no API server to ask)", o["rollout"]
    assert sorted(x["pod"] for x in o["results"]) == ["shop/web-5d9c7-a", "shop/web-6b8d4-b"], o["results"]
    # completion: the kind, and with --from DIR the Rollouts by their Pods' names
    assert run(cli, "__complete", "check", "ro").stdout == "rollout/\n:4\n"
    assert run(cli, "__complete", "rollout", "").stdout.splitlines() == ["deployment/", "rollout/", ":4"]
    assert sorted(run(cli, "__complete", "check", "--from", root, "rollout/w").stdout.splitlines()) == \
        [":4", "rollout/web", "rollout/webshop"]
    # usage: one Rollout, no Pods with it; no name
    r = run(cli, "check", "rollout/web", L.RACE, "--from", root, rc=2)
    assert "check rollout/web takes no other Pod" in r.stderr, r.stderr
    r = run(cli, "check", "ro/", "--from", root, rc=2)
    assert "no Rollout name" in r.stderr, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    cli = ap.parse_args().cli
    work = tempfile.mkdtemp(prefix="termline-check-argo-")
    try:
        race, fixed = L.load(L.RACE_FILE), L.load(L.FIXED_FILE)
        t_rbac()
        t_from_dir(cli, work, race, fixed)
        t_api(cli, work, race, fixed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok: check rollout/NAME (an Argo Rollout) through the API double and --from DIR: since the current "
          "revision, --since, --revision, thresholds, another Rollout kept out, rollout NAME, no CRD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
