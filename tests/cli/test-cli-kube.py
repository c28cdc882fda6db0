#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline through the API double's pod proxy (no root: agent
stand-ins serve the committed documents): a merged KUBECONFIG=a:b of two
clusters, each its own double and agent, with --context, --cluster,
--user and --kubeconfig choosing between them; pod/NAME in the context's
namespace; the not-found hints (a Pod in another namespace, a namespace
that does not exist, a Pod still running); the errors of an agent that
does not answer, of one that hangs (bounded by --request-timeout), of
refused credentials and of an API server that is not there, each once,
with a next step, the URL and answer under -v; rollout from the cluster."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import clilib as L  # noqa: E402
import e2elib as E  # noqa: E402
from clilib import RACE, run  # noqa: E402


def pod(ns, name, node, labels=None, deleting=False):
    md = {"name": name, "namespace": ns, "uid": str(uuid.uuid4()), "labels": labels or {}}
    if deleting:
        md["deletionTimestamp"] = "2026-12-01T03:00:30Z"
    return {"resource": "pods", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                                           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
                                           "status": {"phase": "Running", "podIP": "127.0.0.1"}}}


def agent(name, node):
    return pod("termline", name, node, {"app.kubernetes.io/component": "agent"})


def double(work, name, objects, proxy, namespaces=()):
    os.makedirs(os.path.join(work, name))
    d = E.KubeDouble(os.path.join(work, name), {"node": "node-a", "token": f"token-{name}", "objects": objects,
                                                "steps": [], "podProxy": proxy, "namespaces": list(namespaces)})
    return d.start()


def kubeconfig(path, ctx, cluster, user, d, ns=None, token_file=None):
    """A kubeconfig of one context with names of its own (the doubles'
    own files all say e2e/double/agent)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"""apiVersion: v1
kind: Config
current-context: {ctx}
contexts:
- name: {ctx}
  context: {{cluster: {cluster}, user: {user}{', namespace: ' + ns if ns else ''}}}
clusters:
- name: {cluster}
  cluster:
    server: https://127.0.0.1:{d.port}
    certificate-authority: {d.cert}
    tls-server-name: kube-double.test
users:
- name: {user}
  user:
    tokenFile: {token_file or d.token_file}
""")
    return path


def one_line_then_next(r, want):
    lines = r.stderr.splitlines()
    assert lines and want in lines[0], (want, r.stderr)
    assert r.stderr.count("kubectl-termline") == 1, r.stderr
    assert len(lines) >= 2 and lines[1].startswith("  next: "), r.stderr
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    cli = ap.parse_args().cli
    work = tempfile.mkdtemp(prefix="termline-cli-kube-")
    servers, doubles = [], []
    try:
        docs = {n: L.load(os.path.join(L.SHOP, f)) for n, f in
                (("race", "web-5d9c7-race_11111111-1111-4111-8111-111111111111.json"),
                 ("fixed", "web-5d9c7-fixed_22222222-2222-4222-8222-222222222222.json"),
                 ("lossy", "web-5d9c7-lossy_33333333-3333-4333-8333-333333333333.json"))}
        sa, pa = L.serve([docs["race"], docs["fixed"]])
        sb, pb = L.serve([docs["lossy"]])
        ss, ps = L.serve([], hang=True)
        servers += [sa, sb, ss]
        rs = [{"resource": "deployments", "object": {
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "shop", "uid": "dep-1",
                         "annotations": {"deployment.kubernetes.io/revision": "2"}}}}]
        rs += [{"resource": "replicasets", "object": {
            "kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": n, "namespace": "shop", "uid": f"rs-{rev}",
                         "annotations": {"deployment.kubernetes.io/revision": str(rev)},
                         "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "dep-1"}]}}}
            for n, rev in (("web-5d9c7", 1), ("web-7f8b9", 2))]
        one = double(work, "one", [agent("termline-a", "node-a"), pod("shop", "web-running", "node-a")] + rs,
                     {"termline/termline-a:9440": f"127.0.0.1:{pa}"}, namespaces=["default"])
        two = double(work, "two", [agent("termline-b", "node-b")], {"termline/termline-b:9440": f"127.0.0.1:{pb}"})
        bad = double(work, "bad", [agent("termline-dead", "node-x"), agent("termline-slow", "node-y"),
                                   pod("shop", "on-dead", "node-x"), pod("shop", "on-slow", "node-y")],
                     {"termline/termline-dead:9440": "127.0.0.1:1", "termline/termline-slow:9440": f"127.0.0.1:{ps}"})
        doubles += [one, two, bad]
        kc1 = kubeconfig(os.path.join(work, "kc-one"), "one", "c1", "u1", one, ns="shop")
        kc2 = kubeconfig(os.path.join(work, "kc-two"), "two", "c2", "u2", two)
        kc3 = kubeconfig(os.path.join(work, "kc-bad"), "bad", "c3", "u3", bad)
        merged = {"KUBECONFIG": f"{kc1}:{os.path.join(work, 'absent')}:{kc2}"}

        def name_of(r):
            return json.loads(r.stdout)["pod"]["name"]

        # the merged KUBECONFIG: the first file's current-context, --context the other's
        assert name_of(run(cli, "show", RACE, "-o", "json", env=merged)) == "web-5d9c7-race"
        run(cli, "show", "shop/web-5d9c7-lossy", env=merged, rc=1)
        assert name_of(run(cli, "show", "shop/web-5d9c7-lossy", "--context", "two", "-o", "json",
                           env=merged)) == "web-5d9c7-lossy"
        run(cli, "show", RACE, "--context", "two", env=merged, rc=1)
        # --cluster and --user over the context's: context one (namespace
        # shop) on cluster two
        assert name_of(run(cli, "show", "web-5d9c7-lossy", "--cluster", "c2", "--user", "u2", "-o", "json",
                           env=merged)) == "web-5d9c7-lossy"
        # --kubeconfig wins over $KUBECONFIG
        assert name_of(run(cli, "show", "shop/web-5d9c7-lossy", "--kubeconfig", kc2, "-o", "json",
                           env=merged)) == "web-5d9c7-lossy"
        r = run(cli, "show", RACE, "--context", "three", env=merged, rc=2)
        assert 'no entry named "three" (from --context)' in r.stderr and "kubectl config get-contexts" in r.stderr, \
            r.stderr
        # pod/NAME and a bare name: in the context's namespace (shop), -n wins
        assert name_of(run(cli, "show", "pod/web-5d9c7-race", "-o", "json", env=merged)) == "web-5d9c7-race"
        assert name_of(run(cli, "explain", "web-5d9c7-race", "-o", "json", env=merged, rc=0).stdout and
                       run(cli, "show", "web-5d9c7-race", "-o", "json", env=merged)) == "web-5d9c7-race"
        run(cli, "show", "pod/web-5d9c7-race", "-n", "default", env=merged, rc=1)
        # every verb through the proxy
        out = run(cli, "explain", RACE, env=merged).stdout
        assert out.startswith("shop/web-5d9c7-race: 14 requests failed"), out
        assert len(run(cli, "list", env=merged).stdout.splitlines()) == 3
        run(cli, "check", RACE, env=merged, rc=1)
        ro = json.loads(run(cli, "rollout", "deployment/web", "-o", "json", env=merged).stdout)
        assert ro["replicaSets"] == ["web-5d9c7"] and ro["pods"] == 2 and ro["failedRequests"] == 14, ro
        run(cli, "rollout", "deployment/web", "--revision", "2", env=merged, rc=1)

        # the hints of a timeline not found
        r = run(cli, "show", "default/web-5d9c7-race", env=merged, rc=1)
        one_line_then_next(r, "no timeline of default/web-5d9c7-race; there is one of web-5d9c7-race in "
                              "namespace shop")
        assert "next: kubectl termline show shop/web-5d9c7-race" in r.stderr, r.stderr
        r = run(cli, "explain", "nope-ns/web", env=merged, rc=1)
        one_line_then_next(r, "namespace nope-ns does not exist")
        assert "next: kubectl get namespaces; timelines are in shop" in r.stderr, r.stderr
        r = run(cli, "explain", "shop/web-running", env=merged, rc=1)
        one_line_then_next(r, "no timeline of shop/web-running yet: the Pod is running (not deleted) on node "
                              "node-a, and the termline agent there has recorded nothing of it")
        assert "kubectl termline explain shop/web-running once it terminated" in r.stderr, r.stderr
        r = run(cli, "show", "default/ghost", env=merged, rc=1)
        one_line_then_next(r, "no timeline of default/ghost: no such Pod, and none of the 1 termline agent has one")

        # an agent that does not answer: who, where, what to run; the URL under -v
        r = run(cli, "show", "shop/on-dead", "--kubeconfig", kc3, rc=2)
        lines = one_line_then_next(r, "the termline agent termline/termline-dead on node node-x did not answer "
                                      "through the API server (HTTP 502: error trying to reach 127.0.0.1:1")
        assert "kubectl -n termline logs termline-dead" in lines[1], lines
        assert "-v 1 shows the request" in r.stderr and "/proxy/" not in r.stderr, r.stderr
        r = run(cli, "show", "shop/on-dead", "--kubeconfig", kc3, "-v", "1", rc=2)
        assert "GET https://" in r.stderr and "/api/v1/namespaces/termline/pods/termline-dead:9440/proxy/v1/" \
            "timelines/shop/on-dead -> HTTP 502" in r.stderr, r.stderr
        r = run(cli, "check", "shop/on-dead", "--kubeconfig", kc3, rc=2)
        assert r.stderr == "" and r.stdout.count("did not answer through the API server") == 1, (r.stdout, r.stderr)
        # one that hangs: bounded by --request-timeout
        t0 = time.monotonic()
        r = run(cli, "show", "shop/on-slow", "--kubeconfig", kc3, "--request-timeout", "1s", rc=2)
        assert time.monotonic() - t0 < 6, time.monotonic() - t0
        assert "the termline agent termline/termline-slow on node node-y did not answer within 1 s " \
               "(--request-timeout)" in r.stderr, r.stderr
        # refused credentials; no API server at all
        wrong = os.path.join(work, "wrong-token")
        with open(wrong, "w") as f:
            f.write("not-the-token\n")
        kcw = kubeconfig(os.path.join(work, "kc-wrong"), "w", "cw", "uw", one, token_file=wrong)
        r = run(cli, "list", "--kubeconfig", kcw, rc=2)
        lines = one_line_then_next(r, "refused the request (HTTP 401: Unauthorized)")
        assert "auth whoami" in lines[1], lines
        with open(kc1) as f, open(os.path.join(work, "kc-gone"), "w") as g:
            g.write(f.read().replace(f"127.0.0.1:{one.port}", "127.0.0.1:1"))
        r = run(cli, "list", "--kubeconfig", os.path.join(work, "kc-gone"), "--request-timeout", "5s", rc=2)
        lines = one_line_then_next(r, "cannot reach the API server (https://127.0.0.1:1)")
        assert "kubectl cluster-info" in lines[1], lines
        r = run(cli, "list", "--kubeconfig", os.path.join(work, "nope"), rc=2)
        assert "kubeconfig " + os.path.join(work, "nope") + ": cannot read" in r.stderr, r.stderr
    finally:
        for s in servers:
            s.shutdown()
        for d in doubles:
            d.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("ok: merged KUBECONFIG with --context/--cluster/--user/--kubeconfig, pod/NAME, hints, agent errors, "
          "--request-timeout, refused credentials, rollout through the pod proxy")


if __name__ == "__main__":
    sys.exit(main())
