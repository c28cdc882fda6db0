#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline on the committed documents (tests/cli/data/state: the
sidecar race, the same Pod with the fix, an incomplete timeline) and on
documents made from them: explain's first lines (the verdict, then the fix
once, paste-ready), counts that reconcile, every verb's --help with an
example, flags a verb does not use rejected, -o yaml the same object as
-o json, show collapsing 10,000 requests into a screenful, list within 80
columns, the error texts (once, with a next step; the URL and answer under
-v), a hanging agent bounded by --request-timeout, the SVG (well-formed,
its text holding the verdict and the key moments' labels), the trace,
terminal injection (no control character of a document reaches the
terminal; -o json stays exact), bad times, EPIPE, colours, completion,
check's outputs and exits, --from URL. --update writes the golden files
instead of comparing."""
import argparse
import difflib
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clilib as L  # noqa: E402
from clilib import RACE, FIXED, LOSSY, RACE_FAILED, run  # noqa: E402

SRC = ["--from", L.STATE]


def golden(name, text, update):
    path = os.path.join(L.DATA, name)
    if update:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    with open(path, encoding="utf-8") as f:
        want = f.read()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), path, "output"))
        raise AssertionError(f"{name} differs from the golden file:\n{diff}")


def cols(line):
    return len(line)


def t_golden(cli, update):
    golden("show-race.txt", run(cli, "show", RACE, *SRC).stdout, update)
    golden("explain-race.txt", run(cli, "explain", RACE, *SRC).stdout, update)
    golden("explain-lossy.txt", run(cli, "explain", LOSSY, *SRC).stdout, update)
    golden("explain-fixed.txt", run(cli, "explain", FIXED, *SRC).stdout, update)


def t_explain_first(cli):
    out = run(cli, "explain", RACE, *SRC).stdout
    lines = out.splitlines()
    # the verdict is the first sentence: what failed, how many, when, the cause
    first = " ".join(ln.strip() for ln in lines[:2])
    assert first.startswith("shop/web-5d9c7-race: 14 requests failed (503 UF, +0.105\u2026+1.406 s): "
                            "app closed :8080 1.480 s before its endpoint left the slice."), first
    # then the fix, once, before the findings
    assert sum(ln.startswith("Fix:") for ln in lines) == 1, out
    fix_at = next(i for i, ln in enumerate(lines) if ln.startswith("Fix:"))
    findings_at = next(i for i, ln in enumerate(lines) if "findings, most severe first" in ln)
    assert 2 <= fix_at < findings_at, out
    assert out.count("preStop") == out.count("preStop") and out.count("seconds: 3") == 1, out
    assert "recommended:" not in out and "because" not in out, "the recommendation repeated per finding"
    assert "fix: the one above" in out
    # the patch pastes: kubectl patch with a YAML body that sets the sleep
    m = re.search(r"^  kubectl -n shop patch deployment web -p '\n(.*?)'$", out, re.S | re.M)
    assert m, out
    patch = yaml.safe_load(m.group(1))
    c = patch["spec"]["template"]["spec"]["containers"][0]
    assert c == {"name": "app", "lifecycle": {"preStop": {"sleep": {"seconds": 3}}}}, patch
    # the preStop gate is the alternative, with the grace it needs
    assert "termline-wait, --quiet, 1s, --timeout, 13s" in out and "terminationGracePeriodSeconds: 15" in out
    # wrapped to the terminal (COLUMNS=80), numbers only under -v
    assert all(cols(ln) <= 80 for ln in lines), [ln for ln in lines if cols(ln) > 80]
    assert "numbers:" not in out
    v = run(cli, "explain", RACE, *SRC, "-v", "1").stdout
    assert "numbers: forwardedBy=" in v and "because ceil(" in v, v
    # a clean termination says so first, and offers no fix
    out = run(cli, "explain", FIXED, *SRC).stdout
    assert out.startswith("shop/web-5d9c7-fixed: No request failed: the endpoint left the slice 0.516 s\n"
                          "  before app stopped serving."), out
    assert "Fix:" not in out
    # incomplete: said right after the verdict
    out = run(cli, "explain", LOSSY, *SRC).stdout.splitlines()
    assert out[2].startswith("The timeline is INCOMPLETE (kernelEventsDropped 12)"), out[:4]


def t_reconcile(cli, work):
    """Every finding says which of the failed requests it covers; the same
    count in explain, show, list, check and -o json."""
    out = " ".join(run(cli, "explain", RACE, *SRC).stdout.split())
    assert "[error] requests_after_listener_closed: all 14 requests" in out, out
    assert ("[warning] endpoint_removal_lag: the same 14 requests, seen as those sent while the "
            "endpoint was still in the slice") in out, out
    js = json.loads(run(cli, "explain", RACE, *SRC, "-o", "json").stdout)
    assert js["verdict"]["failedRequests"] == 14 and js["verdict"]["cause"] == "requests_after_listener_closed"
    # two more failures after the endpoint's removal: the listener's finding
    # has 16, the endpoint's lag 14 of them
    d = L.load(L.RACE_FILE)
    late = [e for e in d["events"] if e.get("requestId") == "demo-0024"][0]
    for i, off in enumerate(("03:00:01.600", "03:00:01.700")):
        e = dict(late, requestId=f"late-{i}", time=f"2026-12-01T{off}000000Z", start=f"2026-12-01T{off}000000Z")
        d["events"].append(e)
    d["events"].sort(key=lambda e: e["time"])
    root = L.write_state(os.path.join(work, "late"), [d])
    out = " ".join(run(cli, "explain", RACE, "--from", root).stdout.split())
    assert out.startswith("shop/web-5d9c7-race: 16 requests failed"), out
    assert "requests_after_listener_closed: all 16 requests" in out, out
    assert "endpoint_removal_lag: 14 of the 16 failed requests: those sent while the" in out, out
    show = run(cli, "show", RACE, "--from", root).stdout
    assert "16 requests failed" in show.splitlines()[0], show
    lst = json.loads(run(cli, "list", "--from", root, "-o", "json").stdout)["timelines"]
    assert lst[0]["failedRequests"] == 16, lst
    r = run(cli, "check", RACE, "--from", root, rc=1)
    assert "16 failed requests" in r.stdout, r.stdout
    # rollout: per-finding rows are "of the total", an all-clear is no Pod
    out = run(cli, "rollout", "deployment/web", "-n", "shop", *SRC).stdout
    assert "28 requests failed in 2 of 3 Pods (3 terminated): app closed :8080 1.480 s before" in \
        " ".join(out.split()), out
    assert "requests_after_listener_closed   2 Pods, 28 of the 28 failed requests" in out, out
    assert "endpoint_removal_lag             2 Pods, 28 of the 28 failed requests" in out, out
    ro = json.loads(run(cli, "rollout", "deployment/web", "-n", "shop", *SRC, "-o", "json").stdout)
    assert ro["byFinding"]["endpoint_removal_lag"] == {"pods": 2, "failedRequests": 28}, ro["byFinding"]
    assert ro["podsWithFailedRequests"] == 2 and ro["failedRequests"] == 28, ro


VERBS = ["explain", "show", "list", "render", "check", "rollout", "completion", "help"]


def t_help(cli):
    top = run(cli, "--help").stdout
    for v in VERBS:
        assert re.search(rf"^  {v} +\S", top, re.M), (v, top)
        h = run(cli, v, "--help").stdout
        assert h.startswith(f"{v}: "), h
        assert "\nUsage:\n  kubectl termline " + v in h, h
        ex = h.split("\nExamples:\n", 1)[1]
        assert re.search(rf"^  (kubectl termline {v}|kubectl-termline completion|source <\(kubectl-termline)", ex, re.M), (v, ex)
        assert run(cli, "help", v).stdout == h, v
        assert run(cli, v, "-h").stdout == h, v
        long = [ln for ln in h.splitlines() if len(ln) > 80 and not ln.startswith("  kubectl")]
        assert not long, long
    assert "--revision" in run(cli, "rollout", "--help").stdout
    assert "--revision" not in run(cli, "show", "--help").stdout
    r = run(cli, rc=2)
    assert "Verbs:" in r.stderr
    r = run(cli, "help", "frobnicate", rc=2)
    assert "no verb 'frobnicate'" in r.stderr


def t_flags(cli, work):
    """A flag the verb does not use is bad usage, in one line."""
    cases = [
        (["show", RACE, "--revision", "2"], "--revision is not a flag of show"),
        (["show", RACE, "--revision=2"], "--revision is not a flag of show"),
        (["list", "--max-failed-requests", "0"], "--max-failed-requests is not a flag of list"),
        (["explain", RACE, "--since", "0"], "--since is not a flag of explain"),
        (["explain", RACE, "--all"], "--all is not a flag of explain"),
        (["check", RACE, "--out", "x.xml"], "--out is not a flag of check"),
        (["render", RACE, "-o", "svg", "--out", "-", "--failed"], "--failed is not a flag of render"),
        (["rollout", "deployment/web", "-A"], "-A is not a flag of rollout"),
        (["completion", "bash", "-n", "x"], "-n is not a flag of completion"),
        (["rollout", "deployment/web", "--revision", "2"], "--revision needs the API server"),
        (["show", RACE, "--context", "x"], "--from reads"),
        (["show", RACE, "--all", "--failed"], "--all and --failed"),
        (["list", "-o", "svg"], "-o svg: list prints text,wide,json,yaml"),
        (["explain", RACE, "-o", "wide"], "-o wide: explain prints text,json,yaml"),
        (["show", RACE, "-o", "json", "-o", "yaml"], "-o given twice (json, then yaml)"),
        (["show", RACE, "--bogus"], "--bogus: unknown flag"),
        (["show", RACE, "extra"], "usage: kubectl termline show"),
        (["list", "stray"], "takes no arguments, got 'stray'"),
        (["show", RACE, "--request-timeout", "soon"], "--request-timeout soon: not a duration"),
        (["show", RACE, "--since", "later"], "--since later: not an offset"),
        (["show", RACE, "--color", "sometimes"], "--color sometimes: auto, always or never"),
    ]
    for args, want in cases:
        src = [] if args[0] == "completion" else SRC
        r = run(cli, *args, *src, rc=2)
        assert want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert r.stdout == "", (args, r.stdout)
    # the last -o does not win: render -o svg --out t.svg -o trace writes nothing
    t = os.path.join(work, "t.svg")
    run(cli, "render", RACE, *SRC, "-o", "svg", "--out", t, "-o", "trace", rc=2)
    assert not os.path.exists(t)
    # the format from --out's extension, and a clash between the two
    run(cli, "render", RACE, *SRC, "--out", t)
    assert open(t, encoding="utf-8").read(5) == "<?xml"
    tj = os.path.join(work, "t.json")
    run(cli, "render", RACE, *SRC, "--out", tj)
    assert "traceEvents" in json.load(open(tj, encoding="utf-8"))
    r = run(cli, "render", RACE, *SRC, "-o", "trace", "--out", t, rc=2)
    assert "-o trace but --out" in r.stderr, r.stderr
    r = run(cli, "render", RACE, *SRC, "--out", os.path.join(work, "t.png"), rc=2)
    assert "-o svg or -o trace" in r.stderr, r.stderr
    # the same flag twice with the same value is fine; kubectl's -o=, -n=
    run(cli, "show", RACE, *SRC, "-o", "json", "-o", "json")
    run(cli, "show", "web-5d9c7-race", *SRC, "-n=shop", "-o=json")
    # pod/NAME, pods/NAME, po/NAME: in -n's namespace, as kubectl
    for form in ("pod/web-5d9c7-race", "pods/web-5d9c7-race", "po/web-5d9c7-race"):
        got = json.loads(run(cli, "show", form, "-n", "shop", *SRC, "-o", "json").stdout)
        assert got["pod"]["name"] == "web-5d9c7-race", form
    r = run(cli, "show", "pod/web-5d9c7-race", *SRC, rc=1)  # in "default"
    assert "no timeline of default/web-5d9c7-race" in r.stderr, r.stderr
    run(cli, "show", "pod/", *SRC, rc=2)
    # -v alone, -v N, --v=N
    for v in (["-v"], ["-v", "1"], ["--v=1"], ["-v1"]):
        assert "numbers:" in run(cli, "explain", RACE, *SRC, *v).stdout, v


def t_yaml(cli):
    """-o yaml parses to the object -o json prints, for every verb that has both."""
    for args in (["show", RACE], ["explain", RACE], ["explain", LOSSY], ["list"],
                 ["check", RACE, FIXED], ["rollout", "deployment/web", "-n", "shop"]):
        j = run(cli, *args, *SRC, "-o", "json", rc=None)
        y = run(cli, *args, *SRC, "-o", "yaml", rc=None)
        assert j.returncode == y.returncode, (args, j.returncode, y.returncode)
        assert yaml.safe_load(y.stdout) == json.loads(j.stdout), args
    # strings YAML would read as something else stay strings
    y = run(cli, "show", RACE, *SRC, "-o", "yaml").stdout
    assert "time: \"2026-12-01T02:59:57.000000000Z\"" in y, y[:600]


def t_busy(cli, work):
    """10,000 requests at 200 a second: show is a screenful, the failed
    ones are counted, the key moments are there; --failed lists each
    failure, --all every request."""
    d, failed = L.busy_doc()
    root = L.write_state(os.path.join(work, "busy"), [d])
    out = run(cli, "show", "shop/web-5d9c7-busy", "--from", root).stdout
    lines = out.splitlines()
    assert len(lines) <= 40, f"{len(lines)} lines:\n{out}"
    assert "296 requests failed (503 UF" in " ".join(" ".join(lines[:3]).split()), lines[:3]
    runs = [ln for ln in lines if re.search(r"\d+ \u00d7 inbound GET", ln)]
    counted = sum(int(re.search(r"(\d+) \u00d7", ln).group(1)) for ln in runs)
    singles = sum(1 for ln in lines if re.search(r"inbound GET /\w+ \[log\]", ln))
    assert counted + singles == 10000, (counted, singles, out)
    assert sum(int(re.search(r"(\d+) \u00d7", ln).group(1)) for ln in runs if "503 UF" in ln) + \
        sum(1 for ln in lines if "503 UF id=" in ln) == 296, out
    assert re.search(r"^> \+0\.021 s .*503 UF id=busy-09704 .*<- first failed$", out, re.M), out
    assert re.search(r"^> \+1\.496 s .*503 UF id=busy-09999 .*<- last failed$", out, re.M), out
    for key in ("deletion requested", "SIGTERM to app", "stopped listening on 0.0.0.0:8080",
                "endpoint removed from web-x1", "app(100) exited"):
        assert re.search(rf"^> .*{re.escape(key)}", out, re.M), (key, out)
    ex = run(cli, "explain", "shop/web-5d9c7-busy", "--from", root).stdout
    assert all(len(ln) <= 80 for ln in ex.splitlines()), [ln for ln in ex.splitlines() if len(ln) > 80]
    assert re.search(r"\u2026 286 more \(-v lists them\)$", ex, re.M), ex
    out = run(cli, "show", "shop/web-5d9c7-busy", "--from", root, "--failed").stdout
    ids = re.findall(r"id=(busy-\d+)", out)
    assert ids == failed, (len(ids), len(failed))
    assert "-> 200" not in out
    out = run(cli, "show", "shop/web-5d9c7-busy", "--from", root, "--all").stdout
    assert len(re.findall(r"id=busy-\d+", out)) == 10000
    # --since: from that offset on
    out = run(cli, "show", "shop/web-5d9c7-busy", "--from", root, "--since", "1s").stdout
    offs = [float(m) for m in re.findall(r"^[> ] ([+-]\d+\.\d+) s", out, re.M)]
    assert offs and min(offs) >= 1.0, offs
    out = run(cli, "show", "shop/web-5d9c7-busy", "--from", root, "--since", "-500ms", "--all").stdout
    offs = [float(m) for m in re.findall(r"^[> ] ([+-]\d+\.\d+) s", out, re.M)]
    assert min(offs) >= -0.5 and len(offs) > 100, (min(offs), len(offs))
    return root


def t_list(cli, work, busy_root):
    """80 columns: NAMESPACE, POD, AGE, FAILED, TOP FINDING, COMPLETE; the
    rest in -o wide."""
    long = L.renamed(L.load(L.RACE_FILE), ns="payments-production-eu", name="checkout-service-7d9f8b6c5d-x2x9q",
                     uid="66666666-6666-4666-8666-666666666666")
    root = L.write_state(os.path.join(work, "list"), [long, L.load(L.RACE_FILE), L.load(L.FIXED_FILE)])
    for src in (SRC, ["--from", root], ["--from", busy_root]):
        out = run(cli, "list", *src).stdout
        lines = out.splitlines()
        assert lines[0].split() == ["NAMESPACE", "POD", "AGE", "FAILED", "TOP", "FINDING", "COMPLETE"], lines[0]
        assert all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
        for ln in lines[1:]:
            assert re.search(r"\s(\d+[smhdy]\d*[smhd]?)\s+\d+\s", ln), ln
    out = run(cli, "list", "--from", root).stdout
    assert re.search(r"\u2026[a-z-]*-7d9f8b6c5d-x2x9q ", out), out  # a name keeps its end
    assert "requests_after_listener_closed" not in out or len(max(out.splitlines(), key=len)) <= 80
    wide = run(cli, "list", "--from", root, "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:12] == ["NAMESPACE", "POD", "AGE", "FAILED", "TOP", "FINDING", "COMPLETE", "OWNER",
                                    "NODE", "STATE", "DELETION", "DURATION"], wide[0]
    assert any("checkout-service-7d9f8b6c5d-x2x9q" in ln and "requests_after_listener_closed" in ln and
               "66666666-6666-4666-8666-666666666666" in ln for ln in wide), wide
    lst = json.loads(run(cli, "list", *SRC, "-o", "json").stdout)["timelines"]
    assert [(t["name"], t["failedRequests"], t["complete"], t["topFinding"]) for t in lst] == [
        ("web-5d9c7-fixed", 0, True, None), ("web-5d9c7-lossy", 14, False, "requests_after_listener_closed"),
        ("web-5d9c7-race", 14, True, "requests_after_listener_closed")], lst
    assert json.loads(run(cli, "list", *SRC, "-n", "other", "-o", "json").stdout)["timelines"] == []


def t_errors(cli, work):
    # a Pod in another namespace: said, with the command that finds it
    r = run(cli, "show", "default/web-5d9c7-race", *SRC, rc=1)
    assert r.stderr.splitlines()[0] == (f"kubectl-termline show: no timeline of default/web-5d9c7-race; there is one "
                                        f"of web-5d9c7-race in namespace shop"), r.stderr
    assert "  next: kubectl termline show shop/web-5d9c7-race" in r.stderr
    # a namespace with no timeline at all
    r = run(cli, "explain", "nowhere/web", *SRC, rc=1)
    assert "none in namespace nowhere at all" in r.stderr and "timelines are in: shop" in r.stderr, r.stderr
    # the Pod is not there
    r = run(cli, "show", "shop/no-such-pod", *SRC, rc=1)
    assert r.stderr.count("kubectl-termline") == 1 and "no timeline of shop/no-such-pod in" in r.stderr
    # an agent that does not answer: short, a next step, the URL under -v
    r = run(cli, "list", "--from", "http://127.0.0.1:1", rc=2)
    lines = r.stderr.splitlines()
    assert lines[0].startswith("kubectl-termline list: cannot reach the termline agent at http://127.0.0.1:1"), r.stderr
    assert lines[1] == "  next: curl http://127.0.0.1:1/healthz (is termlined listening there?)", r.stderr
    assert all(len(ln) < 200 for ln in lines) and "/v1/timelines" not in r.stderr, r.stderr
    r = run(cli, "list", "--from", "http://127.0.0.1:1", "-v", "1", rc=2)
    assert "GET http://127.0.0.1:1/v1/timelines" in r.stderr, r.stderr
    # an agent's error answer: its message, the body under -v, printed once
    srv, port = L.serve([], error_body=b'{"error": "disk on fire"}')
    try:
        r = run(cli, "check", RACE, "--from", f"http://127.0.0.1:{port}", rc=2)
        assert r.stderr == "", r.stderr
        assert r.stdout.count("answered HTTP 500: disk on fire") == 1, r.stdout
        r = run(cli, "show", RACE, "--from", f"http://127.0.0.1:{port}", rc=2)
        assert r.stderr.count("answered HTTP 500: disk on fire") == 1, r.stderr
    finally:
        srv.shutdown()
    r = run(cli, "list", "--from", "/nonexistent/state", rc=2)
    assert "--from /nonexistent/state: not a directory or http:// URL" in r.stderr, r.stderr
    run(cli, "frobnicate", rc=2)


def t_timeout(cli):
    """A hanging agent: bounded by --request-timeout."""
    srv, port = L.serve([], hang=True)
    try:
        t0 = time.monotonic()
        r = run(cli, "show", RACE, "--from", f"http://127.0.0.1:{port}", "--request-timeout", "1s", rc=2)
        took = time.monotonic() - t0
        assert took < 4, took
        assert "did not answer within 1 s (--request-timeout)" in r.stderr, r.stderr
        t0 = time.monotonic()
        run(cli, "list", "--from", f"http://127.0.0.1:{port}", "--request-timeout", "500ms", rc=2)
        assert time.monotonic() - t0 < 3
    finally:
        srv.shutdown()


def svg_texts(path):
    """Every <text> of the SVG, as the reader sees it."""
    ns = "{http://www.w3.org/2000/svg}"
    return ["".join(t.itertext()) for t in ET.parse(path).getroot().iter(ns + "text")]


def t_svg(cli, work, src):
    out = os.path.join(work, "race.svg")
    run(cli, "render", RACE, *src, "-o", "svg", "--out", out)
    subprocess.run(["xmllint", "--noout", out], check=True)
    with open(out, encoding="utf-8") as f:
        svg = f.read()
    # every failed request is a red tick with its ID on hover; the lanes are there
    for rid in RACE_FAILED:
        assert f"id={rid} " in svg, rid
    assert svg.count('class="req failed"') == len(RACE_FAILED), svg.count('class="req failed"')
    texts = svg_texts(out)
    joined = " ".join(texts)
    for lane in ("API / endpoint", "app", "istio-proxy"):
        assert lane in texts, lane
    # the verdict under the title, the fix in it
    assert ("14 requests failed (503 UF, +0.105\u2026+1.406 s): app closed :8080 1.480 s before its endpoint "
            "left the slice. Fix: preStop sleep 3 s on app") in joined, joined
    # the key moments, labelled where they happened, with their offsets
    for label in ("\u25c0 endpoint removed +1.500 s", "app stops listening :8080 +0.020 s",
                  "SIGTERM to every container +0.010 s", "app exits +1.020 s", "not ready +0.005 s",
                  "deletion +0.000 s", "Pod deleted +4.500 s", "istio-proxy exits +4.012 s"):
        assert any(label in t for t in texts), (label, texts)
    # the failure window, counted
    assert "14 \u00d7 503 UF (+0.105\u2026+1.406 s)" in texts, texts
    assert 'class="window"' in svg
    # state bands with their names
    for state in ("endpoint ready in the slice", "terminating, still in the slice", "app listening :8080",
                  "istio-proxy draining (still forwarding)"):
        assert state in texts, (state, texts)
    # the legend draws what the plot draws
    for item in ("SIGTERM", "SIGKILL", "listener closed", "endpoint removed", "failed request",
                 "failure window", "deletion", "draining", "stopping"):
        assert item in texts, item
    png = os.path.join(work, "race.png")
    subprocess.run(["rsvg-convert", "-o", png, out], check=True)
    assert os.path.getsize(png) > 10000
    # the sandbox (pause) is left out: its SIGKILL is no event of the story
    d = L.load(L.RACE_FILE)
    d["containers"].append({"name": "POD", "containerID": "containerd://" + "c" * 64, "role": None, "cgroupId": 4003})
    d["events"].append({"time": "2026-12-01T03:00:04.300000000Z", "source": "kernel", "type": "process.signal",
                        "container": "POD", "sandbox": True, "signal": "SIGKILL", "signo": 9, "pid": 50,
                        "comm": "pause", "senderPid": 9, "senderComm": "containerd-shim", "result": "delivered"})
    # and as the agent writes it when the pause process has no container
    d["events"].append({"time": "2026-12-01T03:00:04.310000000Z", "source": "kernel", "type": "process.signal",
                        "container": None, "signal": "SIGKILL", "signo": 9, "pid": 51, "comm": "pause",
                        "senderPid": 9, "senderComm": "containerd-shim", "result": "delivered"})
    d["events"].sort(key=lambda e: e["time"])
    root = L.write_state(os.path.join(work, "sandbox"), [d])
    out2 = os.path.join(work, "sandbox.svg")
    run(cli, "render", RACE, "--from", root, "--out", out2)
    assert "pause" not in open(out2, encoding="utf-8").read()
    assert "SIGKILL" not in " ".join(t for t in svg_texts(out2) if t != "SIGKILL")
    tr = json.loads(run(cli, "render", RACE, "--from", root, "-o", "trace").stdout)
    assert not [e for e in tr["traceEvents"] if "SIGKILL" in e["name"]], "the sandbox's SIGKILL in the trace"
    show = run(cli, "show", RACE, "--from", root).stdout
    kills = [ln for ln in show.splitlines() if "SIGKILL to pause" in ln]
    assert len(kills) == 2 and all(not ln.startswith(">") and "*" not in ln for ln in kills), kills
    assert "(POD, the sandbox)" in kills[0] and "(no container: the sandbox, or not attributed)" in kills[1], kills


def t_prestop(cli, work):
    """The preStop hook is drawn as such, also when the kernel saw its exec
    a little before the API's word of the deletion reached the agent."""
    for at, label in (("03:00:00.006", "+0.006 s"), ("02:59:59.960", "-0.040 s")):
        d = L.load(L.FIXED_FILE)
        for e in d["events"]:
            if e["type"] == "process.exec":
                e["time"] = f"2026-12-01T{at}000000Z"
        d["events"].sort(key=lambda e: e["time"])
        root = L.write_state(os.path.join(work, "prestop" + label), [d])
        svg = os.path.join(root, "p.svg")
        run(cli, "render", FIXED, "--from", root, "--out", svg)
        texts = svg_texts(svg)
        assert "preStop" in texts and any(f"preStop {label}" in t for t in texts), (label, texts)
        tr = json.loads(run(cli, "render", FIXED, "--from", root, "-o", "trace").stdout)
        pre = [e for e in tr["traceEvents"] if e["ph"] == "X" and e["name"] == "preStop"]
        assert len(pre) == 1 and abs(pre[0]["dur"] - (2006000 - (6000 if at.endswith("006") else -40000))) < 1, pre


def t_trace(cli, work, src):
    out = os.path.join(work, "race.json")
    run(cli, "render", RACE, *src, "-o", "trace", "--out", out)
    with open(out, encoding="utf-8") as f:
        tr = json.load(f)
    evs = tr["traceEvents"]
    need = {"name", "ph", "ts", "pid", "tid"}
    for e in evs:
        assert need <= set(e), f"missing {need - set(e)} in {e}"
        # Perfetto refuses negative timestamps
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert e["ph"] in ("X", "b", "e", "i", "M"), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] in ("b", "e"):
            assert "id" in e and "cat" in e, e
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t"), e
            assert not e["name"].startswith(("pod.", "process.", "socket.", "endpoint.")), e["name"]
            assert re.fullmatch(r"[+-]\d+\.\d{3} s", e["args"]["offset"]), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and "name" in e["args"], e
    threads = {e["args"]["name"]: e["tid"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(threads) == {"API / endpoints", "app", "istio-proxy", "findings"}, threads
    begins = {e["id"]: e for e in evs if e["ph"] == "b"}
    ends = {e["id"]: e for e in evs if e["ph"] == "e"}
    assert begins.keys() == ends.keys() and len(begins) == 25, (len(begins), len(ends))
    failed = sorted(e["args"]["requestId"] for e in begins.values() if "failed" in e["cat"])
    assert failed == RACE_FAILED, failed
    assert any(e["ph"] == "X" and e["name"] == "stop" for e in evs), "no stop span"
    # the deletion: a global instant at the reference
    dele = [e for e in evs if e["ph"] == "i" and e["s"] == "g"]
    assert len(dele) == 1 and dele[0]["name"] == "deletion requested", dele
    assert abs(dele[0]["ts"] - tr["otherData"]["referenceTs"]) < 0.01, (dele, tr["otherData"])
    assert dele[0]["args"]["offset"] == "+0.000 s"
    # the findings track: a slice per finding over its window
    fs = [e for e in evs if e["ph"] == "X" and e["tid"] == threads["findings"]]
    assert sorted(e["name"] for e in fs) == ["endpoint_removal_lag (warning)",
                                             "requests_after_listener_closed (error)"], fs
    lc = [e for e in fs if e["name"].startswith("requests_after")][0]
    assert abs(lc["ts"] - (tr["otherData"]["referenceTs"] + 20000)) < 1 and abs(lc["dur"] - 1480000) < 1, lc
    assert lc["args"]["requestIds"] == RACE_FAILED
    sig = [e for e in evs if e["ph"] == "i" and e["name"] == "SIGTERM to app"]
    assert sig and "SIGTERM to app(100)" in sig[0]["args"]["event"], sig


def t_hostile(cli, work):
    """Terminal injection: a document whose names, IDs, paths and commands
    carry ESC sequences, C1, bidi overrides, NUL and bytes that are not
    UTF-8 reaches the terminal inert through every text output; -o json
    stays exact."""
    d, name = L.hostile_doc()
    data = L.hostile_bytes(d)
    root = os.path.join(work, "hostile")
    os.makedirs(os.path.join(root, "timelines", "shop"))
    with open(os.path.join(root, "timelines", "shop", f"evil_{d['pod']['uid']}.json"), "wb") as f:
        f.write(data)
    target = "shop/" + name
    src = ["--from", root]
    outputs = {
        "show": run(cli, "show", target, *src, text=False),
        "show --all": run(cli, "show", target, *src, "--all", text=False),
        "show --failed": run(cli, "show", target, *src, "--failed", text=False),
        "list": run(cli, "list", *src, text=False),
        "list -o wide": run(cli, "list", *src, "-o", "wide", text=False),
        "explain": run(cli, "explain", target, *src, text=False),
        "explain -v": run(cli, "explain", target, *src, "-v", "1", text=False),
        "check": run(cli, "check", target, *src, "--require-graceful", "--max-endpoint-lag", "0", rc=1, text=False),
        "check -o junit": run(cli, "check", target, *src, "-o", "junit", rc=1, text=False),
        "rollout": run(cli, "rollout", "deployment/web", "-n", "shop", *src, text=False),
        "not found": run(cli, "show", "shop/x\x1b[2Jy\x07", *src, rc=1, text=False),
    }
    for what, r in outputs.items():
        L.assert_inert(what + " (stdout)", r.stdout)
        L.assert_inert(what + " (stderr)", r.stderr)
        assert r.stdout or r.stderr, what
    show = outputs["show --all"].stdout.decode()
    # escaped visibly, not dropped
    assert "id=demo-0011id-\\x1b]8;;http://evil.example/\\x1b\\click" in show, show[:2000]
    assert "\\xff\\xfe\\xc3(\\xc0\\xaf" in show and "\\r\\nX-Injected: 1\\x1b[5m" in show, show[:3000]
    assert "a\\x1b[31mpp" in show and "web-\\x07x1\\r\\nFAKE LINE" in show
    assert "x\\x1b[2Jy\\x07" in outputs["not found"].stderr.decode()
    assert "web-\\u009b31mx" in outputs["list -o wide"].stdout.decode()
    # the picture and the trace: well-formed, no control character
    svg = os.path.join(work, "hostile.svg")
    run(cli, "render", target, *src, "--out", svg)
    subprocess.run(["xmllint", "--noout", svg], check=True)
    L.assert_inert("svg", open(svg, "rb").read().replace(b"\n", b""))
    tr = os.path.join(work, "hostile.json")
    run(cli, "render", target, *src, "--out", tr)
    json.loads(open(tr, "rb").read().decode("utf-8"))
    # an agent's error body with ESC in it, under -v
    srv, port = L.serve([], error_body=b'{"error": "\\u001b]0;owned\\u0007 \x1b[2J"}')
    try:
        for v in ([], ["-v", "1"]):
            r = run(cli, "show", target, "--from", f"http://127.0.0.1:{port}", *v, rc=2, text=False)
            L.assert_inert("agent error" + " ".join(v), r.stderr)
            assert b"\\x1b]0;owned\\x07" in r.stderr, r.stderr
    finally:
        srv.shutdown()
    # -o json: the document exact, control characters and all
    j = run(cli, "show", target, *src, "-o", "json", text=False).stdout
    assert json.loads(j.decode("utf-8", "surrogateescape")) == json.loads(data.decode("utf-8", "surrogateescape"))
    # -o yaml cannot carry bytes that are not UTF-8: said, nothing half-printed
    r = run(cli, "show", target, *src, "-o", "yaml", rc=2)
    assert r.stdout == "" and "not UTF-8" in r.stderr, r.stderr
    # and with only controls (valid UTF-8) -o yaml is the same object
    clean = json.loads(json.dumps(d))
    for e in clean["events"]:
        if e.get("path") == L.BAD_PATH_MARK:
            e["path"] = "/x"
    root2 = L.write_state(os.path.join(work, "hostile2"), [clean])
    y = run(cli, "show", target, "--from", root2, "-o", "yaml").stdout
    assert yaml.safe_load(y) == clean


def t_bad_times(cli, work):
    """Times the document does not hold validly are said to be invalid,
    never printed as offsets of decades."""
    d = L.load(L.RACE_FILE)
    d["events"][0]["time"] = "not a time"
    d["events"][1]["time"] = "0001-01-01T00:00:00Z"
    d["events"][-1]["time"] = "9999-12-31T23:59:59Z"
    root = L.write_state(os.path.join(work, "badtime"), [d])
    out = run(cli, "show", RACE, "--from", root, "--all").stdout
    assert out.count("invalid time") == 3, out
    assert '[time "not a time"]' in out and '[time "0001-01-01T00:00:00Z"]' in out, out
    assert not re.search(r"[+-]\d{5,}\.\d{3} s", out), out
    assert "-0.000" not in out
    run(cli, "explain", RACE, "--from", root)
    run(cli, "render", RACE, "--from", root, "--out", os.path.join(work, "badtime.svg"))


def t_epipe(cli, busy_root):
    """show | head ends quietly: exit 0, nothing on stderr."""
    e = dict(os.environ, **L.ENV)
    p = subprocess.Popen([cli, "show", "shop/web-5d9c7-busy", "--from", busy_root, "--all"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(30) == 0, p.returncode
    assert err == b"", err
    sh = subprocess.run(["bash", "-c", f"set -o pipefail; '{cli}' show shop/web-5d9c7-busy --from '{busy_root}' "
                         "--all | head -1 >/dev/null"], capture_output=True, env=e)
    assert sh.returncode == 0 and sh.stderr == b"", (sh.returncode, sh.stderr)


def in_pty(cli, args, env):
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(cli, [cli] + args, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st), out


def t_color(cli):
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    base["LC_ALL"] = "C.UTF-8"
    cases = [({"TERM": "xterm"}, [], True), ({"TERM": "xterm", "NO_COLOR": "1"}, [], False),
             ({"TERM": "dumb"}, [], False), ({"TERM": "xterm"}, ["--color", "never"], False),
             ({"TERM": "dumb"}, ["--color=always"], True)]
    for env, flags, want in cases:
        rc, out = in_pty(cli, ["show", RACE, *SRC, *flags], dict(base, **env))
        assert rc == 0 and (b"\033[" in out) == want, (env, flags, out[:300])
    assert "\033[" in run(cli, "show", RACE, *SRC, "--color", "always").stdout
    assert "\033[" not in run(cli, "show", RACE, *SRC, env={"NO_COLOR": ""}).stdout
    # no picture or trace on a terminal without --out -
    rc, out = in_pty(cli, ["render", RACE, *SRC, "-o", "svg"], dict(base, TERM="xterm"))
    assert rc == 2 and b"not writing SVG to a terminal" in out and b"<svg" not in out, out
    rc, out = in_pty(cli, ["render", RACE, *SRC, "-o", "svg", "--out", "-"], dict(base, TERM="xterm"))
    assert rc == 0 and b"<svg" in out
    # piped, stdout is fine
    assert run(cli, "render", RACE, *SRC, "-o", "trace").stdout.startswith("{")


def t_completion(cli, work):
    bindir = os.path.dirname(cli)
    comp = os.path.join(os.path.dirname(L.HERE), "..", "tools", "kubectl-termline", "kubectl_complete-termline")
    assert os.access(comp, os.X_OK), comp
    env = dict(os.environ, PATH=f"{bindir}:{os.path.dirname(comp)}:{os.environ['PATH']}")
    r = subprocess.run([comp, "sh"], capture_output=True, text=True, env=env)
    assert r.stdout == "show\n:4\n", r.stdout
    r = subprocess.run([comp, "render", "-o", ""], capture_output=True, text=True, env=env)
    assert r.stdout == "svg\ntrace\n:4\n", r.stdout
    r = subprocess.run([comp, "explain", "--from", L.STATE, "shop/web-5d9c7-r"], capture_output=True, text=True, env=env)
    assert r.stdout == "shop/web-5d9c7-race\n:4\n", r.stdout
    r = subprocess.run([comp, "rollout", "--re"], capture_output=True, text=True, env=env)
    assert sorted(r.stdout.splitlines()) == ["--request-timeout", "--revision", ":4"], r.stdout
    r = subprocess.run([comp, "render", "--out", "we"], capture_output=True, text=True, env=env)
    assert r.stdout == ":0\n", r.stdout  # file names
    # bash: the script parses and completes
    script = run(cli, "completion", "bash").stdout
    sh = (f"source <(kubectl-termline completion bash); COMP_WORDS=(kubectl-termline ex); COMP_CWORD=1; "
          f"_kubectl_termline; echo \"${{COMPREPLY[@]}}\"; "
          f"COMP_WORDS=(kubectl-termline check --max); COMP_CWORD=2; _kubectl_termline; echo \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, env=env)
    assert r.stdout.splitlines() == ["explain", "--max-failed-requests --max-failed-ratio --max-endpoint-lag"], \
        (r.stdout, r.stderr)
    assert "complete -F _kubectl_termline kubectl-termline" in script
    for shell, mark in (("zsh", "#compdef kubectl-termline"), ("fish", "complete -c kubectl-termline")):
        s = run(cli, "completion", shell).stdout
        assert mark in s and "kubectl-termline __complete" in s, shell
        if shutil.which(shell):
            subprocess.run([shell, "-n" if shell == "zsh" else "--no-execute", "-c", s], check=True)
    run(cli, "completion", "tcsh", rc=2)
    # through kubectl itself, when it is installed (1.26+ runs kubectl_complete-termline)
    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "__complete", "termline", "sh"], capture_output=True, text=True, env=env)
        assert r.stdout.splitlines()[:2] == ["show", ":4"], (r.stdout, r.stderr)


def t_check(cli, work):
    """check: 1 when an assertion fails, 0 when all pass, 2 when a timeline
    is missing or incomplete whatever the others say; -o json and junit."""
    r = run(cli, "check", RACE, *SRC, rc=1)
    assert "FAIL shop/web-5d9c7-race failed-requests: 14 failed requests (at most 0 allowed)" in r.stdout, r.stdout
    r = run(cli, "check", FIXED, *SRC, "--max-failed-requests", "0", "--require-graceful", rc=0)
    assert r.stdout.count("PASS") == 2 and "FAIL" not in r.stdout, r.stdout
    run(cli, "check", RACE, *SRC, "--max-failed-requests", "14", rc=0)
    run(cli, "check", FIXED, *SRC, "--max-endpoint-lag", "0", rc=0)
    r = run(cli, "check", RACE, *SRC, "--max-endpoint-lag", "1", rc=1)
    assert "1.480 s after the app stopped serving (at most 1.000 s allowed)" in r.stdout, r.stdout
    r = run(cli, "check", LOSSY, *SRC, "--max-failed-requests", "100", rc=2)
    assert "INCOMPLETE" in r.stdout, r.stdout
    # a missing timeline: its reason once, in the result, nothing else on stderr
    r = run(cli, "check", FIXED, "shop/no-such-pod", *SRC, rc=2)
    assert r.stdout.count("no timeline of shop/no-such-pod") == 1 and r.stderr == "", (r.stdout, r.stderr)
    run(cli, "check", FIXED, RACE, *SRC, rc=1)
    j = json.loads(run(cli, "check", RACE, FIXED, "shop/no-such-pod", *SRC, "-o", "json", rc=2).stdout)
    assert [x["status"] for x in j["results"]] == ["failed", "passed", "missing"], j
    assert j["passed"] is False and j["exitStatus"] == 2
    assert j["results"][0]["assertions"] == [{"name": "failed-requests", "passed": False,
                                              "evidence": "14 failed requests (at most 0 allowed)"}], j
    x = run(cli, "check", RACE, FIXED, LOSSY, "shop/no-such-pod", *SRC, "-o", "junit", rc=2).stdout
    root = ET.fromstring(x)
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "2" and \
        root.get("errors") == "2", ET.tostring(root)
    suites = {s.get("name"): s for s in root}
    assert suites[RACE].find("testcase/failure").get("message") == "14 failed requests (at most 0 allowed)"
    assert suites[FIXED].find("testcase/failure") is None
    assert suites["shop/no-such-pod"].find("testcase/error") is not None
    p = os.path.join(work, "junit.xml")
    with open(p, "w") as f:
        f.write(x)
    subprocess.run(["xmllint", "--noout", p], check=True)


def t_noapi(cli, work):
    # a timeline recorded without the API (--no-api) has no name: _unknown/UID
    d = L.load(L.RACE_FILE)
    d["pod"].update({"namespace": None, "name": None, "owner": None})
    root = L.write_state(os.path.join(work, "noapi"), [d])
    got = json.loads(run(cli, "explain", "_unknown/" + d["pod"]["uid"], "--from", root, "-o", "json").stdout)
    assert got["findings"][0]["requestIds"] == RACE_FAILED, got


def t_from_url(cli, work):
    """--from URL: the same answers from an agent's HTTP API."""
    docs = [L.load(os.path.join(L.SHOP, n)) for n in sorted(os.listdir(L.SHOP))]
    srv, port = L.serve(docs)
    url = ["--from", f"http://127.0.0.1:{port}"]
    try:
        golden("show-race.txt", run(cli, "show", RACE, *url).stdout, False)
        golden("explain-race.txt", run(cli, "explain", RACE, *url).stdout, False)
        assert run(cli, "list", *url).stdout == run(cli, "list", *SRC).stdout
        r = run(cli, "show", "shop/no-such-pod", *url, rc=1)
        assert "no timeline of shop/no-such-pod" in r.stderr
        r = run(cli, "show", "default/web-5d9c7-race", *url, rc=1)
        assert "there is one of web-5d9c7-race in namespace shop" in r.stderr, r.stderr
        run(cli, "check", RACE, *url, rc=1)
        t_svg(cli, work, url)
    finally:
        srv.shutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    cli = a.cli
    work = tempfile.mkdtemp(prefix="termline-cli-")
    try:
        t_golden(cli, a.update)
        t_explain_first(cli)
        t_reconcile(cli, work)
        t_help(cli)
        t_flags(cli, work)
        t_yaml(cli)
        busy = t_busy(cli, work)
        t_list(cli, work, busy)
        t_errors(cli, work)
        t_timeout(cli)
        t_svg(cli, work, SRC)
        t_trace(cli, work, SRC)
        t_prestop(cli, work)
        t_hostile(cli, work)
        t_bad_times(cli, work)
        t_epipe(cli, busy)
        t_color(cli)
        t_completion(cli, work)
        t_check(cli, work)
        t_noapi(cli, work)
        t_from_url(cli, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok: explain's verdict and fix, reconciled counts, help, flags, yaml, 10k requests, list, errors, "
          "timeout, SVG, trace, terminal injection, bad times, EPIPE, colour, completion, check, --from URL")


if __name__ == "__main__":
    sys.exit(main())
