#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes client against the API double through every fault of a
scenario; asserts the exact sequence of API events per resource, each exactly
once, the container-id -> name join, and that the client is still running and
ready afterwards.

The command under test comes from $TERMLINE_KUBE_E2E_CMD with {kubeconfig}
and {node} substituted; it must print events as JSON lines on stdout (the
--emit-events - format). Readiness: a {"synced":true} line, or, when
$TERMLINE_KUBE_E2E_READYZ is set, that URL answering 200.

After the run the double's record of requests (/debug/requests) is checked:
every WATCH the server ended cleanly is followed by a WATCH from the last
resourceVersion it sent (an event's or a BOOKMARK's), unless a LIST came
first. With "rewatchAfterBookmark" in the scenario's expect, at least one
such rewatch must follow a BOOKMARK newer than every event on its watch, so
only the bookmark's version is right.

--auth exec has the client get its token from a kubeconfig exec plugin
(which reads the double's token file, and counts its runs) instead of
tokenFile: a token rotation then takes a 401, one plugin run per rotation
on the client's loop, and requests that wait for it.

--check-tls first runs the command with a kubeconfig that does not name the
double's CA: it must refuse the certificate (an {"error":...} line naming
it) and never sync, since TLS is verified unless the kubeconfig says
insecure-skip-tls-verify.
"""
import argparse
import json
import os
import queue
import shlex
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

DEADLINE_S = 90  # generous: a failure to converge, not a timing assertion


def fail(msg):
    sys.stderr.write("FAIL: " + msg + "\n")
    sys.exit(1)


def reader(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def matches(want, got):
    return all(got.get(k) == v for k, v in want.items())


KUBECONFIG = """apiVersion: v1
kind: Config
current-context: e2e
contexts:
- name: e2e
  context: {cluster: double, user: agent}
clusters:
- name: double
  cluster:
    server: https://127.0.0.1:%d
%s    tls-server-name: kube-double.test
users:
- name: agent
  user:
%s"""

TOKEN_FILE_USER = "    tokenFile: %s\n"
EXEC_USER = """    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
"""
PLUGIN = """#!/bin/sh
echo run >> "$0.runs"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%%s"}}' "$(cat '%s')"
"""


def check_tls_refused(cmd_template, kubeconfig, node):
    """The command against the double without its CA: an error about the
    certificate must come, and no sync before it."""
    cmd = [w.format(kubeconfig=kubeconfig, node=node) for w in shlex.split(cmd_template)]
    agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        for line in agent.stdout:
            o = json.loads(line)
            if o.get("synced") or o.get("source") == "api":
                fail("synced with a server whose certificate nothing vouches for: %r" % line)
            if "certificate" in o.get("error", ""):
                return
            if time.monotonic() - start > DEADLINE_S:
                break
        fail("no certificate error from the command (exit %s)" % agent.poll())
    finally:
        agent.kill()
        agent.wait()


def fetch_requests(port, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False  # the URL names 127.0.0.1, the certificate the double's name
    url = "https://127.0.0.1:%d/debug/requests" % port
    with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
        return json.load(r)["requests"]


def check_rewatch_versions(reqs, want_bookmark_case):
    by_res = {}
    for r in reqs:
        if r["resource"]:
            by_res.setdefault(r["resource"], []).append(r)
    checked = bookmark_cases = 0
    for res, rs in by_res.items():
        for i, c in enumerate(rs):
            if not (c["watch"] and c.get("end") == "eof" and c.get("sent")):
                continue
            nxt = next((n for n in rs[i + 1:] if n["authOk"]), None)
            if nxt is None or not nxt["watch"]:
                continue  # nothing after it yet, or a LIST starts over
            last = c["sent"][-1]
            if nxt["resourceVersion"] != last["rv"]:
                fail("%s: watch #%d ended cleanly after %s %s, but the next watch (#%d) asked "
                     "for resourceVersion %s" % (res, c["seq"], last["type"], last["rv"],
                                                 nxt["seq"], nxt["resourceVersion"]))
            checked += 1
            events = [int(x["rv"]) for x in c["sent"] if x["type"] != "BOOKMARK"]
            if last["type"] == "BOOKMARK" and int(last["rv"]) > max(
                    events + [int(c["resourceVersion"] or 0)]):
                bookmark_cases += 1
    if want_bookmark_case and not bookmark_cases:
        fail("no watch ended right after a bookmark newer than its events: the scenario "
             "does not test what it should (%d clean ends checked)" % checked)
    return checked, bookmark_cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--double", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--cmd", default=os.environ.get("TERMLINE_KUBE_E2E_CMD"))
    ap.add_argument("--check-tls", action="store_true")
    ap.add_argument("--auth", choices=("token-file", "exec"), default="token-file")
    a = ap.parse_args()
    if not a.cmd:
        fail("no command: set TERMLINE_KUBE_E2E_CMD or --cmd")
    with open(a.scenario) as f:
        sc = json.load(f)
    expect = sc["expect"]
    tmp = tempfile.mkdtemp(prefix="tl-kube-e2e-")
    cert, key = os.path.join(tmp, "server.crt"), os.path.join(tmp, "server.key")
    # the certificate names a host the URL does not: tls-server-name must be honoured
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=kube-double.test",
                    "-addext", "subjectAltName=DNS:kube-double.test"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token_file = os.path.join(tmp, "token")
    port_file = os.path.join(tmp, "port")
    double = subprocess.Popen([sys.executable, a.double, "--scenario", a.scenario, "--cert", cert,
                               "--key", key, "--token-file", token_file, "--port-file", port_file],
                              stdout=subprocess.PIPE, text=True)
    agent = None
    try:
        t0 = time.monotonic()
        while not os.path.exists(port_file):
            if double.poll() is not None or time.monotonic() - t0 > 20:
                fail("API double did not start")
            time.sleep(0.05)
        port = int(open(port_file).read())
        user = TOKEN_FILE_USER % token_file
        plugin = os.path.join(tmp, "plugin.sh")
        if a.auth == "exec":
            with open(plugin, "w") as f:
                f.write(PLUGIN % token_file)
            os.chmod(plugin, 0o755)
            user = EXEC_USER % plugin
        if a.check_tls:
            untrusted = os.path.join(tmp, "kubeconfig-no-ca")
            with open(untrusted, "w") as f:
                f.write(KUBECONFIG % (port, "", user))
            check_tls_refused(a.cmd, untrusted, sc["node"])
        kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write(KUBECONFIG % (port, "    certificate-authority: %s\n" % cert, user))
        if os.path.exists(plugin + ".runs"):
            os.unlink(plugin + ".runs")
        cmd = [w.format(kubeconfig=kubeconfig, node=sc["node"]) for w in shlex.split(a.cmd)]
        agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        q = queue.Queue()
        threading.Thread(target=reader, args=(agent.stdout, q), daemon=True).start()

        api = {"pods": [], "endpointslices": []}
        lookups, metrics, synced = {}, None, False
        last = {"pods": expect["pods"][-1], "endpointslices": expect["endpointslices"][-1]}

        def consume(line):
            nonlocal metrics, synced
            try:
                o = json.loads(line)
            except ValueError:
                fail("not a JSON line: %r" % line)
            if o.get("synced"):
                synced = True
            elif "metrics" in o:
                metrics = o["metrics"]
            elif "lookup" in o:
                lookups[o["lookup"]] = [o["podUid"], o["container"]]
            elif o.get("source") == "api":
                res = "endpointslices" if o["type"].startswith("endpoint.") else "pods"
                api[res].append(o)

        # until the sentinel (last expected) event of each resource arrived
        start = time.monotonic()
        while not all(any(matches(last[r], e) for e in api[r]) for r in api):
            if time.monotonic() - start > DEADLINE_S:
                fail("events missing after %ds: %s" % (DEADLINE_S, json.dumps(api, indent=1)))
            if agent.poll() is not None:
                fail("agent exited with %s" % agent.returncode)
            try:
                line = q.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                fail("agent closed its output")
            consume(line)

        if agent.poll() is not None:
            fail("agent not running after the faults")
        readyz = os.environ.get("TERMLINE_KUBE_E2E_READYZ")
        if readyz:
            with urllib.request.urlopen(readyz, timeout=5) as r:
                if r.status != 200:
                    fail("not ready: %s" % r.status)
        elif not synced:
            fail("agent never reported both initial lists synced")

        agent.send_signal(signal.SIGTERM)
        while True:
            line = q.get(timeout=30)
            if line is None:
                break
            consume(line)
        rc = agent.wait(timeout=30)
        if rc != 0:
            fail("agent exit status %d" % rc)
        if a.auth == "exec":
            with open(plugin + ".runs") as f:
                runs = len(f.readlines())
            rotations = sum(1 for s in sc["steps"] if s["op"] == "rotate_token")
            # one at start, then one per rotation however many requests got 401
            if runs != 1 + rotations:
                fail("exec plugin ran %d times for %d token rotations" % (runs, rotations))
        rewatches, after_bookmark = check_rewatch_versions(
            fetch_requests(port, cert), expect.get("rewatchAfterBookmark", False))

        for res in ("pods", "endpointslices"):
            got, want = api[res], expect[res]
            ok = len(got) == len(want) and all(matches(w, g) for w, g in zip(want, got))
            if not ok:
                fail("%s events differ\nwant: %s\ngot:  %s" % (
                    res, json.dumps(want, indent=1), json.dumps(got, indent=1)))
            for g in got:
                if not g.get("time", "").endswith("Z"):
                    fail("event time is not RFC 3339 UTC: %r" % g)
        for cid, (uid, name) in expect["lookups"].items():
            if lookups.get(cid) != [uid, name]:
                fail("container %s attributed to %s, want %s/%s" % (cid, lookups.get(cid), uid, name))
        if metrics is not None:
            for k, v in expect["minimum"].items():
                if metrics.get(k, 0) < v:
                    fail("metric %s = %s, want >= %d (all: %s)" % (k, metrics.get(k), v, metrics))
            if not metrics.get("synced"):
                fail("not synced at exit")
        print("ok: %d pod events, %d endpoint events, each once; %d rewatches from the last "
              "version (%d after a bookmark); metrics %s" % (
                  len(api["pods"]), len(api["endpointslices"]), rewatches, after_bookmark,
                  json.dumps(metrics)))
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.wait()
        double.kill()
        double.wait()


if __name__ == "__main__":
    main()
