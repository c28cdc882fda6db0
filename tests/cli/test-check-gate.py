#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl termline check deployment/NAME as a rollout gate (docs/cli.md,
docs/export.md "Rollout gates"), no root:

- through the API double's pod proxy (an agent stand-in serving the
  committed race and fix, moved in time and owned by three revisions of
  the Deployment web): the replaced Pods since the current revision's
  ReplicaSet was created (the default), since --since (a time, how long
  ago), of --revision N; with and without failed requests; exit 1, 0 and
  2 (nothing to judge is no pass); --max-failed-requests and
  --max-failed-ratio over all the Pods together; -o json, yaml and junit;
  a Deployment that does not exist;
- with --from DIR (no API server): the ReplicaSets told by their name,
  NAME-<hash>, never another Deployment's (web-canary-..., webshop-...);
- usage errors: a Deployment with Pods, --since or --revision without a
  Deployment, a ratio out of range."""
import argparse
import datetime
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

TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$")


def shifted(doc, seconds):
    """doc with every time in it moved by seconds."""
    def move(v):
        if isinstance(v, dict):
            return {k: move(x) for k, x in v.items()}
        if isinstance(v, list):
            return [move(x) for x in v]
        if isinstance(v, str):
            m = TIME.match(v)
            if m:
                frac = (m.group(2) or "").ljust(9, "0")
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S") + \
                    datetime.timedelta(seconds=seconds)
                return t.strftime("%Y-%m-%dT%H:%M:%S") + "." + frac + "Z"
        return v
    return move(doc)


def pod_doc(base, name, uid, owner, seconds):
    d = shifted(L.renamed(base, name=name, uid=uid), seconds)
    d["pod"]["owner"] = {"kind": "ReplicaSet", "name": owner}
    return d


def j(r):
    return json.loads(r.stdout)


def t_api(cli, work, race, fixed):
    """Through the API double: Deployment web at revision 3; ReplicaSets
    web-5d9c7 (1), web-6b8d4 (2), web-7f8b9 (3, created 04:30)."""
    docs = [
        pod_doc(race, "web-5d9c7-a", "aaaaaaaa-0000-4000-8000-000000000001", "web-5d9c7", 0),      # 03:00
        pod_doc(race, "web-6b8d4-b", "aaaaaaaa-0000-4000-8000-000000000002", "web-6b8d4", 3600),   # 04:00
        pod_doc(fixed, "web-6b8d4-c", "aaaaaaaa-0000-4000-8000-000000000003", "web-6b8d4", 6000),  # 04:40
        pod_doc(race, "web-7f8b9-d", "aaaaaaaa-0000-4000-8000-000000000004", "web-7f8b9", 7200),   # 05:00
        # another Deployment's Pod, in the same namespace
        pod_doc(race, "api-5d9c7-e", "aaaaaaaa-0000-4000-8000-000000000005", "api-5d9c7", 3600),
    ]
    srv, port = L.serve(docs)

    def rs(name, rev, created, dep="web", dep_uid="dep-web"):
        return {"resource": "replicasets", "object": {
            "kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": "shop", "uid": f"rs-{name}", "creationTimestamp": created,
                         "annotations": {"deployment.kubernetes.io/revision": str(rev)},
                         "ownerReferences": [{"kind": "Deployment", "name": dep, "uid": dep_uid,
                                              "controller": True}]}}}

    def dep(name, rev, uid):
        return {"resource": "deployments", "object": {
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": "shop", "uid": uid,
                         "annotations": {"deployment.kubernetes.io/revision": str(rev)}}}}

    agent = {"resource": "pods", "object": {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "termline-a", "namespace": "termline", "uid": "agent-a",
                     "labels": {"app.kubernetes.io/component": "agent"}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "termlined", "image": "x"}]},
        "status": {"phase": "Running", "podIP": "127.0.0.1"}}}
    objects = [agent, dep("web", 3, "dep-web"), dep("api", 2, "dep-api"),
               rs("web-5d9c7", 1, "2026-12-01T02:00:00Z"), rs("web-6b8d4", 2, "2026-12-01T03:30:00Z"),
               rs("web-7f8b9", 3, "2026-12-01T04:30:00Z"),
               rs("api-5d9c7", 1, "2026-12-01T01:00:00Z", "api", "dep-api"),
               rs("api-6b8d4", 2, "2026-12-01T01:30:00Z", "api", "dep-api")]
    os.makedirs(os.path.join(work, "double"))
    d = E.KubeDouble(os.path.join(work, "double"), {
        "node": "node-a", "token": "token-gate", "objects": objects, "steps": [],
        "podProxy": {"termline/termline-a:9440": f"127.0.0.1:{port}"}, "namespaces": ["shop"]}).start()
    k = ["--kubeconfig", d.kubeconfig, "-n", "shop"]
    try:
        # the default: replaced since revision 3's ReplicaSet was created
        # (04:30): web-6b8d4-c alone, the fix: a pass
        r = run(cli, "check", "deployment/web", *k, rc=0)
        # the selection first (wrapped to the terminal), then the assertions
        assert " ".join(r.stdout.split()).startswith(
            "deployment shop/web: 1 Pod of web-5d9c7, web-6b8d4 replaced since 2026-12-01T04:30:00Z "
            "(when the current revision's ReplicaSet was created) PASS"), r.stdout
        assert "PASS deployment/web failed-requests: 0 failed requests in 0 of 1 Pod (at most 0 allowed)" \
            in r.stdout, r.stdout
        o = j(run(cli, "check", "deployment/web", *k, "-o", "json", rc=0))
        dep_o = o["deployment"]
        assert dep_o["name"] == "web" and dep_o["namespace"] == "shop", dep_o
        assert dep_o["replicaSets"] == ["web-5d9c7", "web-6b8d4"], dep_o
        assert dep_o["since"] == "2026-12-01T04:30:00Z" and dep_o["revision"] is None, dep_o
        assert (dep_o["pods"], dep_o["failedRequests"], dep_o["podsWithFailedRequests"]) == (1, 0, 0), dep_o
        assert dep_o["status"] == "passed" and o["passed"] is True and o["exitStatus"] == 0, o
        assert [x["pod"] for x in o["results"]] == ["shop/web-6b8d4-c"], o["results"]
        # per Pod: the numbers, no assertion of its own (they are the Deployment's)
        assert o["results"][0]["assertions"] == [] and o["results"][0]["failedRequests"] == 0, o["results"]

        # --since a time: the race of 04:00 too; the evidence names the Pod
        r = run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T03:30:00Z", rc=1)
        assert "FAIL deployment/web failed-requests: 14 failed requests in 1 of 2 Pods (at most 0 allowed): " \
               "web-6b8d4-b 14" in r.stdout, r.stdout
        o = j(run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T03:30:00Z", "-o", "json", rc=1))
        assert sorted(x["pod"] for x in o["results"]) == ["shop/web-6b8d4-b", "shop/web-6b8d4-c"], o
        assert o["deployment"]["failedRequests"] == 14 and o["deployment"]["status"] == "failed", o
        # ... since 02:00: both races, never revision 3's Pod nor api's
        o = j(run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T02:00:00Z", "-o", "json", rc=1))
        dep_o = o["deployment"]
        assert (dep_o["pods"], dep_o["failedRequests"], dep_o["podsWithFailedRequests"]) == (3, 28, 2), dep_o
        assert sorted(x["pod"] for x in o["results"]) == \
            ["shop/web-5d9c7-a", "shop/web-6b8d4-b", "shop/web-6b8d4-c"], o["results"]
        requests = dep_o["requests"]
        assert requests == sum(x["requests"] for x in o["results"]) and requests > 28, o
        # ... after every replacement: nothing to judge, exit 2
        r = run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T06:00:00Z", rc=2)
        assert "MISSING deployment/web: no timeline of a Pod of web-5d9c7, web-6b8d4 replaced since " \
               "2026-12-01T06:00:00Z" in r.stdout and "next: kubectl termline list -n shop" in r.stdout, r.stdout
        o = j(run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T06:00:00Z", "-o", "json", rc=2))
        assert o["deployment"]["status"] == "missing" and o["exitStatus"] == 2 and o["results"] == [], o
        # ... how long ago: the documents are days old
        run(cli, "check", "deployment/web", *k, "--since", "15m", rc=2)
        run(cli, "check", "deployment/web", *k, "--since", "1000h", rc=1)

        # --revision N: that revision's Pods whenever they were replaced
        o = j(run(cli, "check", "deployment/web", *k, "--revision", "1", "-o", "json", rc=1))
        assert o["deployment"]["replicaSets"] == ["web-5d9c7"] and o["deployment"]["revision"] == 1, o
        assert [x["pod"] for x in o["results"]] == ["shop/web-5d9c7-a"], o
        o = j(run(cli, "check", "deployment/web", *k, "--revision", "2", "-o", "json", rc=1))
        assert o["deployment"]["replicaSets"] == ["web-6b8d4"] and o["deployment"]["pods"] == 2, o
        r = run(cli, "check", "deployment/web", *k, "--revision", "2", "--since", "2026-12-01T04:30:00Z", rc=0)
        assert "web-6b8d4 replaced since 2026-12-01T04:30:00Z (revision 2)" in " ".join(r.stdout.split()), r.stdout
        r = run(cli, "check", "deployment/web", *k, "--revision", "9", rc=2)
        assert "no replaced ReplicaSet" in r.stdout and "MISSING" in r.stdout, r.stdout
        # another Deployment: its own Pods
        o = j(run(cli, "check", "deploy/api", *k, "-o", "json", "--since", "2026-12-01T00:00:00Z", rc=1))
        assert [x["pod"] for x in o["results"]] == ["shop/api-5d9c7-e"], o

        # thresholds over all the Pods together (28 of `requests`)
        since = ["--since", "2026-12-01T02:00:00Z"]
        run(cli, "check", "deployment/web", *k, *since, "--max-failed-requests", "28", rc=0)
        r = run(cli, "check", "deployment/web", *k, *since, "--max-failed-requests", "27", rc=1)
        assert "FAIL deployment/web failed-requests: 28 failed requests in 2 of 3 Pods (at most 27 allowed): " \
               "web-6b8d4-b 14, web-5d9c7-a 14" in r.stdout or \
               "FAIL deployment/web failed-requests: 28 failed requests in 2 of 3 Pods (at most 27 allowed): " \
               "web-5d9c7-a 14, web-6b8d4-b 14" in r.stdout, r.stdout
        ratio = 28 / requests
        r = run(cli, "check", "deployment/web", *k, *since, "--max-failed-ratio", f"{ratio + 0.001:.4f}", rc=0)
        want = f"PASS deployment/web failed-ratio: 28 of {requests} captured requests failed in 3 Pods, " \
               f"{ratio * 100:.3f} %"
        assert want in r.stdout and "failed-requests" not in r.stdout, (want, r.stdout)
        r = run(cli, "check", "deployment/web", *k, *since, "--max-failed-ratio", f"{ratio - 0.001:.4f}", rc=1)
        assert "FAIL deployment/web failed-ratio: " in r.stdout, r.stdout
        # a percentage
        run(cli, "check", "deployment/web", *k, *since, "--max-failed-ratio", f"{ratio * 100 + 0.1:.2f}%", rc=0)
        run(cli, "check", "deployment/web", *k, *since, "--max-failed-ratio", f"{ratio * 100 - 0.1:.2f}%", rc=1)
        # both: one fails, the gate fails
        o = j(run(cli, "check", "deployment/web", *k, *since, "--max-failed-requests", "100",
                  "--max-failed-ratio", "0.0001", "-o", "json", rc=1))
        assert [(a["name"], a["passed"]) for a in o["deployment"]["assertions"]] == \
            [("failed-requests", True), ("failed-ratio", False)], o["deployment"]
        # the fix alone passes a ratio of 0
        run(cli, "check", "deployment/web", *k, "--max-failed-ratio", "0", rc=0)

        # -o yaml is -o json; -o junit: a testsuite for the Deployment
        args = ["check", "deployment/web", *k, *since]
        assert yaml.safe_load(run(cli, *args, "-o", "yaml", rc=1).stdout) == j(run(cli, *args, "-o", "json", rc=1))
        x = ET.fromstring(run(cli, *args, "-o", "junit", rc=1).stdout)
        suites = {s.get("name"): s for s in x}
        assert list(suites) == ["deployment/shop/web"], list(suites)  # the Pods assert nothing alone
        s = suites["deployment/shop/web"]
        assert (s.get("tests"), s.get("failures"), s.get("errors")) == ("1", "1", "0"), ET.tostring(s)
        assert s.find("testcase/failure").get("message").startswith("28 failed requests in 2 of 3 Pods"), \
            ET.tostring(s)
        x = ET.fromstring(run(cli, "check", "deployment/web", *k, "--since", "2026-12-01T06:00:00Z", "-o", "junit",
                              rc=2).stdout)
        assert x.get("errors") == "1" and x.find("testsuite/testcase/error") is not None, ET.tostring(x)
        # per-Pod assertions still per Pod: --require-graceful (given alone,
        # no failed-requests assertion: the three exited gracefully)
        o = j(run(cli, "check", "deployment/web", *k, *since, "--require-graceful", "-o", "json", rc=0))
        assert all([a["name"] for a in x["assertions"]] == ["graceful"] for x in o["results"]), o["results"]
        assert [a["name"] for a in o["deployment"]["assertions"]] == [], o["deployment"]

        # no such Deployment: said once, with the next step; exit 2
        r = run(cli, "check", "deployment/nope", *k, rc=2)
        assert "deployment shop/nope not found" in r.stderr and "kubectl -n shop get deployments" in r.stderr, \
            r.stderr
        assert r.stdout == "", r.stdout
    finally:
        srv.shutdown()
        d.stop()


def t_from_dir(cli, work, race, fixed):
    """--from DIR: no API server; the Deployment's ReplicaSets are those
    named web-<hash>."""
    root = L.write_state(os.path.join(work, "state"), [
        pod_doc(race, "web-5d9c7-a", "bbbbbbbb-0000-4000-8000-000000000001", "web-5d9c7", 0),
        pod_doc(fixed, "web-6b8d4-b", "bbbbbbbb-0000-4000-8000-000000000002", "web-6b8d4", 3600),
        pod_doc(race, "web-canary-5d9c7-c", "bbbbbbbb-0000-4000-8000-000000000003", "web-canary-5d9c7", 3600),
        pod_doc(race, "webshop-5d9c7-d", "bbbbbbbb-0000-4000-8000-000000000004", "webshop-5d9c7", 3600),
    ])
    f = ["--from", root, "-n", "shop"]
    o = j(run(cli, "check", "deployment/web", *f, "-o", "json", rc=1))
    dep_o = o["deployment"]
    assert sorted(x["pod"] for x in o["results"]) == ["shop/web-5d9c7-a", "shop/web-6b8d4-b"], o["results"]
    assert (dep_o["pods"], dep_o["failedRequests"]) == (2, 14) and dep_o["replicaSets"] == [], dep_o
    assert dep_o["selection"] == "deployment shop/web: 2 Pods of the ReplicaSets named web-<hash> " \
                                 "(--from has no API server to ask)", dep_o["selection"]
    r = run(cli, "check", "deployment/web", *f, "--since", "2026-12-01T03:30:00Z", rc=0)
    assert "PASS deployment/web failed-requests: 0 failed requests in 0 of 1 Pod" in r.stdout, r.stdout
    run(cli, "check", "deployment/web", *f, "--max-failed-requests", "14", rc=0)
    o = j(run(cli, "check", "deployment/web-canary", *f, "-o", "json", rc=1))
    assert [x["pod"] for x in o["results"]] == ["shop/web-canary-5d9c7-c"], o["results"]
    run(cli, "check", "deployment/nothing", *f, rc=2)


def t_usage(cli):
    S = ["--from", L.STATE]
    r = run(cli, "check", "deployment/web", L.RACE, *S, rc=2)
    assert "check deployment/web takes no other Pod" in r.stderr, r.stderr
    for flag in (["--since", "10m", *S], ["--revision", "2", "--kubeconfig", "/nonexistent"]):
        r = run(cli, "check", L.RACE, *flag, rc=2)
        assert "--since and --revision choose a Deployment's replaced Pods" in r.stderr, r.stderr
    # a revision is the API server's to tell
    r = run(cli, "check", "deployment/web", "--revision", "2", *S, rc=2)
    assert "--revision needs the API server (the workload's revisions); --from has none" in r.stderr, r.stderr
    for bad in ("1.5", "-0.1", "x", "150%", "%", ""):
        r = run(cli, "check", L.RACE, *S, "--max-failed-ratio", bad, rc=2)
        assert "a ratio from 0 to 1 (0.01) or a percentage (1%)" in r.stderr, (bad, r.stderr)
    r = run(cli, "check", "deployment/web", *S, "--since", "yesterday", rc=2)
    assert "a time (2026-12-04T17:00:00Z) or how long ago" in r.stderr, r.stderr
    # a Pod's ratio: 14 of the race's requests
    o = j(run(cli, "check", L.RACE, *S, "--max-failed-ratio", "1", "-o", "json", rc=0))
    res = o["results"][0]
    assert res["failedRequests"] == 14 and res["assertions"][0]["name"] == "failed-ratio", res
    ratio = 14 / res["requests"]
    run(cli, "check", L.RACE, *S, "--max-failed-ratio", f"{ratio - 0.001:.4f}", rc=1)
    run(cli, "check", L.FIXED, *S, "--max-failed-ratio", "0", rc=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    cli = ap.parse_args().cli
    work = tempfile.mkdtemp(prefix="termline-check-gate-")
    try:
        race, fixed = L.load(L.RACE_FILE), L.load(L.FIXED_FILE)
        t_usage(cli)
        t_from_dir(cli, work, race, fixed)
        t_api(cli, work, race, fixed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok: check deployment/NAME through the API double and --from DIR: since the current revision, "
          "--since, --revision, --max-failed-requests, --max-failed-ratio, exits 0/1/2, json, yaml, junit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
