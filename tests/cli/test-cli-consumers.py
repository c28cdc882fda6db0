#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How kubectl-termline presents a terminating Pod's consumers (docs/cli.md,
"Consumers"), on a timeline recorded by tests/e2e/test-consumers.py
(tests/cli/data/consumers: three client Pods of three workloads and the
node sent to a sidecar Pod while it terminated; api.json holds the API
objects that name them, served here by the API double; clients.json what
each client itself saw):

- explain's "Who sent" table: each consumer by name, its workload, lag,
  requests, failed requests and reused keep-alive connections, equal to
  explain -o json's traffic_after_endpoint_removed and keepalive_across_drain
  and to what the document and the clients say;
- show's CONSUMER column (PEER and CONN with -o wide) on every request, and
  each consumer's last request after the removal a key moment;
- render -o svg: well-formed, a lane per consumer named in its text, and
  with 40 more peers a lane per workload, then per kind;
- render -o trace: a track per consumer holding its requests, collapsed the
  same way past 32;
- --no-resolve (and --from without --kubeconfig): addresses, and no API call;
- peer names that would act on a terminal, escaped.

Recorded with TERMLINE_E2E_KEEP=1 (meson test --suite e2e consumers, as
root): the kept work dir's state/timelines/shop/*.json as it is, the
replicasets, nodes and client pods of its scenario.json as api.json, and
each client-MODE.json's request IDs (sent, failed) as clients.json."""
import argparse
import collections
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import ssl
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import clilib as L  # noqa: E402
import e2elib as E  # noqa: E402
from clilib import run  # noqa: E402

DATA = os.path.join(L.DATA, "consumers")
SVG_NS = "{http://www.w3.org/2000/svg}"
WIDE = {"COLUMNS": "200"}

# who sent, as the API names them (api.json) and as tests/e2e/test-consumers.py
# made them
INGRESS = "ingress-nginx/ingress-nginx-controller-7d9-x2k4q"
GATEWAY = "mesh/api-gateway-0"
PROBER = "monitoring/prober-7xk2p"
NODE = "node/node-e2e"
WORKLOADS = {INGRESS: "deploy/ingress-nginx-controller", GATEWAY: "sts/api-gateway", PROBER: "ds/prober",
             NODE: None}


def the_doc():
    d = os.path.join(DATA, "timelines", "shop")
    (name,) = os.listdir(d)
    return L.load(os.path.join(d, name))


DOC = the_doc()
POD = f"{DOC['pod']['namespace']}/{DOC['pod']['name']}"


def t_of(s):
    base, _, frac = s.rstrip("Z").partition(".")
    t = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return round(t * 1e9) + (int((frac + "000000000")[:9]) if frac else 0)


def addr_of(peer):
    return peer[1:peer.index("]")] if peer.startswith("[") else peer.rsplit(":", 1)[0]


def names_of(objects):
    """address -> consumer name, as the API objects give them"""
    out = {}
    for o in objects:
        ob = o["object"]
        if o["resource"] == "pods":
            out[ob["status"]["podIP"]] = f"{ob['metadata']['namespace']}/{ob['metadata']['name']}"
        elif o["resource"] == "nodes":
            for a in ob["status"]["addresses"]:
                if a["type"] == "InternalIP":
                    out[a["address"]] = "node/" + ob["metadata"]["name"]
    return out


def failed(e):
    return not e.get("status") or e["status"] >= 500 or e.get("responseFlags", "-") not in ("-", "")


def expected(doc, names):
    """Per consumer, from the document alone: requests and failed (from the
    deletion on, a request ID once), lag (its last request after the
    endpoint's removal), reused (connections opened before the first
    SIGTERM and used after it), the peers and connection numbers of its
    requests."""
    evs = doc["events"]
    t_del = t_of(next(e["time"] for e in evs if e["type"] == "pod.deletion_requested"))
    t_rm = t_of(next(e["time"] for e in evs if e["type"] == "endpoint.removed"))
    sig = min(t_of(e["time"]) for e in evs if e["type"] == "process.signal" and e.get("signal") == "SIGTERM"
              and not e.get("sandbox"))
    own = doc["pod"]["ip"]
    out = collections.defaultdict(lambda: {"ids": set(), "failed": set(), "last_rm": None, "reused": set(),
                                           "all": 0, "peers": set(), "last": None,
                                           "failed_all": set()})
    for e in evs:
        if e["type"] != "http.request" or e.get("direction") != "inbound" or not e.get("peer"):
            continue
        a = addr_of(e["peer"])
        if a == own or a.startswith("127."):
            continue
        c = out[names.get(a, a)]
        c["all"] += 1
        c["peers"].add(e["peer"])
        start = t_of(e["start"])
        if e.get("conn") and start >= sig and (e.get("connStart") is None or t_of(e["connStart"]) < sig):
            c["reused"].add((e["peer"], e["conn"]))
        c["last"] = max(c["last"] or 0, start)
        if failed(e):
            c["failed_all"].add(e["requestId"])
        if start < t_del:
            continue
        c["ids"].add(e["requestId"])
        if failed(e):
            c["failed"].add(e["requestId"])
        if start >= t_rm and (c["last_rm"] is None or start > c["last_rm"]):
            c["last_rm"] = start
    return dict(out), t_rm


def offset(ns):
    """fmt_offset: +0.020 s, -1.500 s"""
    s = f"{abs(ns) / 1e9:.3f}"
    return ("-" if ns < 0 and s != "0.000" else "+") + s + " s"


def table(text, head="CONSUMER"):
    """explain's consumer table: {name: {column: cell}}"""
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [head])
    cols = re.split(r"\s{2,}", lines[i].strip())
    rows = {}
    for ln in lines[i + 1:]:
        if not ln.startswith("  ") or not ln.strip() or ln.strip().startswith("\u2026"):
            break
        cells = re.split(r"\s{2,}", ln.strip())
        assert len(cells) == len(cols), (cols, ln)
        rows[cells[0]] = dict(zip(cols, cells))
    return cols, rows


def svg_texts(svg):
    root = ET.fromstring(svg)
    return root, [("".join(t.itertext()), t.get("class") or "") for t in root.iter(SVG_NS + "text")]


def lanes_of(svg):
    """The consumers' lanes, top to bottom: (the name shown, its <title>,
    the line under it)."""
    root, _ = svg_texts(svg)
    texts = list(root.iter(SVG_NS + "text"))
    out = []
    for i, t in enumerate(texts):
        if (t.get("class") or "") == "lane consumer":
            title = t.find(SVG_NS + "title")
            out.append((t.text or "", title.text if title is not None else None, "".join(texts[i + 1].itertext())))
    return out


def cut_middle(s, cols):
    """consumers.c's cut_middle with the UTF-8 ellipsis"""
    if len(s) <= cols:
        return s
    head = (cols - 1) // 2
    tail = cols - 1 - head
    return s[:head] + "\u2026" + s[len(s) - tail:]


class Cluster:
    """The API double serving api.json's objects (plus extra ones), and a
    kubeconfig for it."""

    def __init__(self, work, name, extra=()):
        with open(os.path.join(DATA, "api.json"), encoding="utf-8") as f:
            self.objects = json.load(f)["objects"] + list(extra)
        os.makedirs(os.path.join(work, name))
        self.d = E.KubeDouble(os.path.join(work, name), {"node": "node-e2e", "token": "t0", "objects": self.objects,
                                                         "steps": []}).start()
        self.kubeconfig = self.d.kubeconfig

    def api_calls(self):
        ctx = ssl.create_default_context(cafile=self.d.cert)
        ctx.check_hostname = False
        with urllib.request.urlopen(f"https://127.0.0.1:{self.d.port}/debug/requests", context=ctx) as r:
            return json.load(r)["requests"]

    def stop(self):
        self.d.stop()


def t_explain(cli, cl):
    names = names_of(cl.objects)
    want, t_rm = expected(DOC, names)
    assert set(want) == {INGRESS, GATEWAY, PROBER, NODE}, sorted(want)
    src = ["--from", DATA, "--kubeconfig", cl.kubeconfig]
    j = json.loads(run(cli, "explain", POD, *src, "-o", "json").stdout)
    by_rule = {f["rule"]: f for f in j["findings"]}
    f = by_rule["traffic_after_endpoint_removed"]
    cons = {c["consumer"]: c for c in f["consumers"]}
    keep = by_rule["keepalive_across_drain"]
    reused = collections.Counter(names.get(addr_of(c["peer"]), addr_of(c["peer"])) for c in keep["connections"])
    with open(os.path.join(DATA, "clients.json"), encoding="utf-8") as fh:
        clients = json.load(fh)

    text = run(cli, "explain", POD, *src, env=WIDE).stdout
    L.assert_inert("explain", text)
    head = " ".join(text[text.index("Who sent ("):text.index("CONSUMER")].split())
    assert head == f"Who sent ({len(want)} consumers from the deletion on; LAG: its last request after the " \
                   f"endpoint left every slice at {offset(t_rm - t_of(DOC['events'][0]['time']))}; REUSED: " \
                   "keep-alive connections opened before SIGTERM and used after it):", head
    cols, rows = table(text)
    assert cols == ["CONSUMER", "WORKLOAD", "LAG", "REQUESTS", "FAILED", "REUSED"], cols
    # the slowest first, as the finding lists them
    assert list(rows) == [c["consumer"] for c in f["consumers"]], (list(rows), list(cons))
    assert list(rows)[0] == GATEWAY, list(rows)
    for name, w in want.items():
        row, c = rows[name], cons[name]
        # the table is the finding's
        assert row["REQUESTS"] == str(c["requests"]) and row["FAILED"] == str(c["failed"]), (row, c)
        assert row["LAG"] == offset(round(c["lagSeconds"] * 1e9)), (row, c["lagSeconds"])
        assert row["REUSED"] == str(reused[name]), (row, reused)
        assert row["WORKLOAD"] == (WORKLOADS[name] or "-"), row
        # and what the document holds
        assert c["requests"] == len(w["ids"]) and c["failed"] == len(w["failed"]), (name, c, len(w["ids"]))
        assert sorted(c["failedRequestIds"]) == sorted(w["failed"]), name
        if w["last_rm"] is not None:
            assert row["LAG"] == offset(w["last_rm"] - t_rm), (row, offset(w["last_rm"] - t_rm))
        assert len(w["reused"]) == reused[name], (name, w["reused"], reused)
        # and what the clients saw
        if name in clients:
            assert sorted(c["failedRequestIds"]) == sorted(clients[name]["failed"]), name
    # the prober's keep-alive connection is the one reused; the others opened
    # a connection per request
    assert rows[PROBER]["REUSED"] == "1" and rows[GATEWAY]["REUSED"] == "0" and rows[INGRESS]["REUSED"] == "0", rows
    # the lagging gateway: about 2 s after the removal, as its client logged
    assert 1.9 <= cons[GATEWAY]["lagSeconds"] <= 2.1, cons[GATEWAY]
    for name in (INGRESS, GATEWAY, PROBER):
        assert int(rows[name]["FAILED"]) > 0, rows[name]

    # at 80 columns the names are cut in their middle: the namespace and the
    # Pod's hash stay
    narrow = run(cli, "explain", POD, *src).stdout
    assert all(len(ln) <= 80 for ln in narrow.splitlines()), narrow
    _, nrows = table(narrow)
    cut = [k for k in nrows if "\u2026" in k]
    assert cut and all(any(k.startswith(n[:4]) and k.endswith(n[-5:]) for n in want) for k in cut), cut
    assert len(nrows) == len(want), nrows
    print(f"ok explain: {len(want)} consumers, " + ", ".join(
        f"{n} {rows[n]['LAG']} {rows[n]['REQUESTS']}/{rows[n]['FAILED']} reused {rows[n]['REUSED']}" for n in rows))
    return want, rows


def t_show(cli, cl, want):
    names = names_of(cl.objects)
    src = ["--from", DATA, "--kubeconfig", cl.kubeconfig]
    out = run(cli, "show", POD, *src, "--all", "-o", "wide").stdout
    L.assert_inert("show", out)
    hdr = next(ln for ln in out.splitlines() if ln.strip().startswith("OFFSET"))
    assert re.search(r"\bCONSUMER\s+PEER\s+CONN\s+EVENT$", hdr), hdr
    n = 0
    for e in DOC["events"]:
        if e["type"] != "http.request" or not e.get("peer"):
            continue
        a = addr_of(e["peer"])
        # the Pod's own sidecar forwarding to its app is no consumer: "self"
        who = "self" if a == DOC["pod"]["ip"] or a.startswith("127.") else names.get(a, a)
        if e["direction"] == "outbound":
            who = "\u2192 " + who
        else:
            n += who != "self"
        lines = [ln for ln in out.splitlines() if f"id={e['requestId']} " in ln and f" {e['peer']} " in ln
                 and f" {e['direction']} " in ln]
        assert len(lines) == 1, (e["requestId"], lines)
        assert re.search(rf"\s{re.escape(who)}\s+{re.escape(e['peer'])}\s+#{e['conn']}\s", lines[0]), (who, lines[0])
    # every consumer's last request after the endpoint's removal: a key moment
    _, t_rm = expected(DOC, names)
    for name, w in want.items():
        if w["last_rm"] is None:
            continue
        tail = f"<- its last, {offset(w['last_rm'] - t_rm)[1:]} after the endpoint's removal"
        marked = [ln for ln in out.splitlines() if tail in ln]
        assert len(marked) == 1 and marked[0].startswith(">") and f" {name} " in marked[0], (name, tail, marked)
    # without -o wide the column is at most 22 columns, cut in the middle
    out = run(cli, "show", POD, *src, "--all", env=WIDE).stdout
    col = cut_middle(INGRESS, 22)
    assert f" {col} " in out and INGRESS not in out, col
    assert f" {GATEWAY} " in out and "PEER" not in out
    # runs of like requests stay one consumer's (4 consumers: at most 12)
    runs = [ln for ln in run(cli, "show", POD, *src, env=WIDE).stdout.splitlines() if " \u00d7 inbound " in ln]
    assert runs and all(any(f" {cut_middle(c, 22)} " in ln for c in list(want) + ["self"]) for ln in runs), runs
    assert [ln for ln in runs if " mesh/api-gateway-0 " in ln] and not [ln for ln in runs if " consumers " in ln]
    print(f"ok show: {n} requests each with its consumer, peer and connection; the last ones marked")


def t_svg(cli, cl, want, rows, work):
    src = ["--from", DATA, "--kubeconfig", cl.kubeconfig]
    out = os.path.join(work, "consumers.svg")
    run(cli, "render", POD, *src, "-o", "svg", "--out", out)
    subprocess.run(["xmllint", "--noout", out], check=True)
    svg = open(out, encoding="utf-8").read()
    _, texts = svg_texts(svg)
    joined = [t for t, _ in texts]
    assert f"Who sent: {len(want)} consumers (requests, failed red; orange: still sending after the endpoint " \
           "left every slice)" in joined, joined
    lanes = lanes_of(svg)
    # a lane per consumer, the slowest first, as explain lists them
    assert [ti or t for t, ti, _ in lanes] == list(rows), lanes
    for t, ti, sub in lanes:
        name = ti or t
        assert t == cut_middle(name, 21), (t, name)
        assert sub == (WORKLOADS[name] or "Node: SNAT, NodePort")[:23] + (
            "\u2026" if len(WORKLOADS[name] or "") > 24 else ""), (name, sub)
    # each lane's label: its lag and failures, as explain counts them... over
    # the whole document (the picture shows every request)
    t_rm = expected(DOC, names_of(cl.objects))[1]
    for name, w in want.items():
        if w["last_rm"] is not None:
            said = f"kept sending {offset(w['last_rm'] - t_rm)[1:]} after the removal"
        else:
            said = f"stopped {offset(t_rm - w['last'])[1:]} before the removal"
        lab = [t for t in joined if t.startswith(f"\u25c0 {name} ")]
        assert lab == [f"\u25c0 {name} {said}; {len(w['failed'])} of its {w['all']} requests failed"], (lab, said, w["all"])
    # the ingress controller stopped before the removal; the others did not
    assert want[INGRESS]["last_rm"] is None and None not in [want[n]["last_rm"] for n in (GATEWAY, PROBER, NODE)]
    # each of a consumer's requests twice, on the container's lane and on
    # its own, failed ones red; the Pod's own (its sidecar to its app) once
    root, _ = svg_texts(svg)
    ticks = collections.Counter()
    for r in root.iter(SVG_NS + "rect"):
        if (r.get("class") or "").startswith("req"):
            title = r.find(SVG_NS + "title").text
            who = title[title.index(" from ") + 6:] if " from " in title else "-"
            ticks[who, r.get("class")] += 1
    for name, w in want.items():
        assert ticks[name, "req failed"] == 2 * len(w["failed_all"]), (name, ticks)
        assert ticks[name, "req"] == 2 * (w["all"] - len(w["failed_all"])), (name, ticks)
    n_req = sum(1 for e in DOC["events"] if e["type"] == "http.request")
    assert ticks["-", "req"] + ticks["-", "req failed"] == n_req - sum(w["all"] for w in want.values()), ticks
    print(f"ok render -o svg: {len(lanes)} consumer lanes, " + "; ".join(t for t in joined if "kept sending" in t))


def t_trace(cli, cl, want):
    names = names_of(cl.objects)
    src = ["--from", DATA, "--kubeconfig", cl.kubeconfig]
    tr = json.loads(run(cli, "render", POD, *src, "-o", "trace").stdout)
    evs = tr["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    cons = {tid: n for tid, n in tracks.items() if n.startswith("from ")}
    assert sorted(cons.values()) == sorted(f"from {n} ({WORKLOADS[n] or 'Node: SNAT, NodePort'})" for n in want), \
        cons
    # the findings' track after the consumers'
    assert tracks[max(tracks)] == "findings" and max(cons) == max(tracks) - 1, tracks
    for tid, n in cons.items():
        name = n[5:n.rindex(" (")]
        begins = [e for e in evs if e["tid"] == tid and e["ph"] == "b"]
        assert len(begins) == want[name]["all"], (name, len(begins))
        assert all(e["args"]["consumer"] == name and e["args"]["peer"] in want[name]["peers"] for e in begins), name
        assert sum("failed" in e["cat"] for e in begins) == len(want[name]["failed_all"]), name
        # and its accepted connections
        acc = [e for e in evs if e["tid"] == tid and e.get("cat") == "tcp.accepted"]
        peers = sorted(e["peer"] for e in DOC["events"] if e["type"] == "tcp.accepted"
                       and names.get(addr_of(e["peer"])) == name)
        assert sorted(re.search(r" from (\S+)", e["args"]["event"]).group(1) for e in acc) == peers, (name, acc)
    assert sum(1 for e in evs if e.get("cat") == "tcp.accepted") == sum(
        1 for e in DOC["events"] if e["type"] == "tcp.accepted")
    print(f"ok render -o trace: {len(cons)} consumer tracks")


def t_no_resolve(cli, cl, work):
    names = names_of(cl.objects)
    by_name = {v: k for k, v in names.items()}
    before = len(cl.api_calls())
    src = ["--from", DATA, "--kubeconfig", cl.kubeconfig, "--no-resolve"]
    j = json.loads(run(cli, "explain", POD, *src, "-o", "json").stdout)
    f = next(x for x in j["findings"] if x["rule"] == "traffic_after_endpoint_removed")
    assert {c["consumer"] for c in f["consumers"]} == {by_name[n] for n in (INGRESS, GATEWAY, PROBER, NODE)}, f
    text = run(cli, "explain", POD, *src, env=WIDE).stdout
    cols, rows = table(text)
    assert cols == ["CONSUMER", "LAG", "REQUESTS", "FAILED", "REUSED"], cols
    assert set(rows) == {c["consumer"] for c in f["consumers"]}, rows
    for c in f["consumers"]:
        assert rows[c["consumer"]]["REQUESTS"] == str(c["requests"]), (rows, c)
    show = run(cli, "show", POD, *src, "--all", env=WIDE).stdout
    assert by_name[GATEWAY] in show and GATEWAY not in show and "ingress-nginx" not in show
    svg = run(cli, "render", POD, *src, "-o", "svg").stdout
    assert [t for t, _, _ in lanes_of(svg)] == [c["consumer"] for c in f["consumers"]], lanes_of(svg)
    tr = json.loads(run(cli, "render", POD, *src, "-o", "trace").stdout)
    assert GATEWAY not in json.dumps(tr)
    # not one question to the API server
    assert len(cl.api_calls()) == before, cl.api_calls()[before:]
    # --from without --kubeconfig: the same addresses
    plain = run(cli, "explain", POD, "--from", DATA, env=WIDE).stdout
    assert table(plain)[1] == rows, (table(plain), rows)
    # with it, the calls the resolution needs: the nodes, a Pod per address
    # not a node's, a ReplicaSet (the ingress controller's Deployment)
    run(cli, "explain", POD, "--from", DATA, "--kubeconfig", cl.kubeconfig)
    calls = cl.api_calls()[before:]
    assert len(calls) == 1 + 3 + 1, calls
    assert sorted(c["resource"] for c in calls) == ["nodes", "pods", "pods", "pods", "replicasets"], calls
    paths = calls
    print("ok --no-resolve: " + ", ".join(sorted(rows)) + f"; resolving asks {len(paths)} times")


def t_log_twice(cli, cl, rows, work):
    """Every request of the consumers also in the proxy's access log (a
    record with the peer and no connection, its start a little earlier, as
    the log's millisecond resolution puts it): each request counted once,
    and the prober's keep-alive connection still reused."""
    d = copy.deepcopy(DOC)
    logs = []
    for e in d["events"]:
        if e["type"] == "http.request" and e["direction"] == "inbound" and e["container"] == "istio-proxy":
            x = {k: v for k, v in e.items() if k not in ("conn", "connStart", "protocol")}
            x["source"] = "log"
            x["start"] = x["start"][:23] + "000000Z"
            x["time"] = x["start"]
            logs.append(x)
    d["events"] = sorted(d["events"] + logs, key=lambda e: e["time"])
    root = L.write_state(os.path.join(work, "logged"), [d])
    src = ["--from", root, "--kubeconfig", cl.kubeconfig]
    _, got = table(run(cli, "explain", POD, *src, env=WIDE).stdout)
    assert got == rows, (got, rows)
    svg = run(cli, "render", POD, *src, "-o", "svg").stdout
    labels = [t for t, _ in svg_texts(svg)[1] if t.startswith("\u25c0 mesh/api-gateway-0 ")]
    assert labels == ["\u25c0 mesh/api-gateway-0 kept sending 1.941 s after the removal; 41 of its 43 requests failed"], labels
    print(f"ok every request also in the access log: the same table, {len(logs)} requests counted once")


def many_peers(doc, n, workloads, externals=0):
    """The document with n more client Pods (in `workloads` Deployments,
    round robin; 0: a Pod without an owner each) sending the gateway's
    requests, plus `externals` addresses no API object has; and the API
    objects naming them."""
    d = copy.deepcopy(doc)
    gw = [e for e in d["events"] if e["type"] == "http.request" and e.get("path") == "/lagger"]
    assert gw, "no request of the gateway in the fixture"
    objects, extra = [], []
    for i in range(n + externals):
        ip = f"10.77.{i // 200}.{i % 200 + 10}"
        for k, e in enumerate(gw[:3]):
            x = copy.deepcopy(e)
            x["peer"] = f"{ip}:{40000 + k}"
            x["requestId"] = f"many-{i:03d}-{k}"
            x["conn"] = 100000 + i * 10 + k
            extra.append(x)
        if i >= n:
            continue
        md = {"name": f"client-{i:03d}", "namespace": "load", "uid": f"many-{i}"}
        if workloads:
            w = f"load-{i % workloads}"
            md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{w}-5f6d",
                                      "uid": f"rs-{w}", "controller": True}]
        objects.append({"resource": "pods", "object": {
            "kind": "Pod", "apiVersion": "v1", "metadata": md, "spec": {"nodeName": "node-x", "containers": []},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}}})
    for k in range(workloads):
        w = f"load-{k}"
        objects.append({"resource": "replicasets", "object": {
            "kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": f"{w}-5f6d", "namespace": "load", "uid": f"rs-{w}",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": w,
                                              "uid": f"dep-{w}", "controller": True}]}}})
    d["events"] = sorted(d["events"] + extra, key=lambda e: e["time"])
    return d, objects


def t_collapse(cli, work):
    # 40 more Pods of 2 Deployments: 44 consumers, a lane per workload
    d, objs = many_peers(DOC, 40, 2)
    root = L.write_state(os.path.join(work, "many"), [d])
    cl = Cluster(work, "many-api", objs)
    try:
        src = ["--from", root, "--kubeconfig", cl.kubeconfig]
        svg = run(cli, "render", POD, *src, "-o", "svg").stdout
        ET.fromstring(svg)
        _, texts = svg_texts(svg)
        assert "Who sent: 44 consumers, a lane per workload (requests, failed red; orange: still sending after " \
               "the endpoint left every slice)" in [t for t, _ in texts], texts[:8]
        lanes = {(ti or t): sub for t, ti, sub in lanes_of(svg)}
        # a workload of one keeps its consumer's name
        assert set(lanes) == {GATEWAY, INGRESS, PROBER, NODE, "load/deploy/load-0", "load/deploy/load-1"}, lanes
        assert lanes["load/deploy/load-0"] == "20 consumers" and lanes[GATEWAY] == "sts/api-gateway", lanes
        # each request of the 40 on its workload's lane: its own tick, with its consumer
        for i in (0, 1, 39):
            assert svg.count(f"id=many-{i:03d}-0 ") == 2, i
            assert f" from load/client-{i:03d}</title>" in svg, i
        # the trace: 44 consumers, 32 tracks at most: a track per workload too
        tr = json.loads(run(cli, "render", POD, *src, "-o", "trace").stdout)
        tracks = sorted(e["args"]["name"] for e in tr["traceEvents"] if e["ph"] == "M"
                        and e["args"]["name"].startswith("from "))
        assert tracks == sorted([f"from {GATEWAY} (sts/api-gateway)",
                                 f"from {INGRESS} (deploy/ingress-nginx-controller)",
                                 f"from {PROBER} (ds/prober)", f"from {NODE} (Node: SNAT, NodePort)",
                                 "from load/deploy/load-0 (20 consumers)", "from load/deploy/load-1 (20 consumers)"]), \
            tracks
        tid = next(e["tid"] for e in tr["traceEvents"] if e["ph"] == "M" and e["args"]["name"].startswith(
            "from load/deploy/load-1 "))
        got = {e["args"]["consumer"] for e in tr["traceEvents"] if e.get("tid") == tid and e["ph"] == "b"}
        assert got == {f"load/client-{i:03d}" for i in range(1, 40, 2)}, got
        # explain still lists every consumer, ten without -v
        text = run(cli, "explain", POD, *src, env=WIDE).stdout
        assert len(table(text)[1]) == 10 and "\u2026 34 more consumers (-v lists them; -o json has each)" in text
        assert len(table(run(cli, "explain", POD, *src, "-v", env=WIDE).stdout)[1]) == 44
    finally:
        cl.stop()
    print("ok 44 consumers: a lane per workload (svg), a track per workload (trace)")

    # 40 Pods of no workload and 3 external addresses: a lane per kind
    d, objs = many_peers(DOC, 40, 0, externals=3)
    root = L.write_state(os.path.join(work, "kinds"), [d])
    cl = Cluster(work, "kinds-api", objs)
    try:
        src = ["--from", root, "--kubeconfig", cl.kubeconfig]
        svg = run(cli, "render", POD, *src, "-o", "svg").stdout
        _, texts = svg_texts(svg)
        assert any(t.startswith("Who sent: 47 consumers, a lane per kind (") for t, _ in texts), texts[:8]
        lanes = {(ti or t): sub for t, ti, sub in lanes_of(svg)}
        assert lanes == {"Pods": "43 consumers", NODE: "Node: SNAT, NodePort", "external": "3 consumers"}, lanes
        tr = json.loads(run(cli, "render", POD, *src, "-o", "trace").stdout)
        tracks = sorted(e["args"]["name"] for e in tr["traceEvents"] if e["ph"] == "M"
                        and e["args"]["name"].startswith("from "))
        assert tracks == ["from Pods (43 consumers)", "from external (3 consumers)",
                          f"from {NODE} (Node: SNAT, NodePort)"], tracks
        # without the API: 47 addresses, one lane of them
        svg = run(cli, "render", POD, "--from", root, "-o", "svg").stdout
        assert [(ti or t, sub) for t, ti, sub in lanes_of(svg)] == [("addresses", "47 consumers")], lanes_of(svg)
        assert any(t.startswith("Who sent: 47 consumers, a lane per kind (") for t, _ in svg_texts(svg)[1]), \
            svg_texts(svg)[1][:8]
    finally:
        cl.stop()
    print("ok 47 consumers: a lane per kind; unresolved, one lane of addresses")


def t_hostile(cli, work):
    """Names a document's peers carry (a document written with them, or an
    API server answering them) that would act on a terminal: escaped in
    every text output, the SVG and the trace."""
    names = names_of(json.load(open(os.path.join(DATA, "api.json")))["objects"])
    gw_ip = next(a for a, n in names.items() if n == GATEWAY)
    evil_ns, evil_name = "mesh\x1b]0;pwned\x07", "gw\x1b[2J\u202e-0\u009b"
    d = copy.deepcopy(DOC)
    d["peers"] = {gw_ip: {"kind": "Pod", "namespace": evil_ns, "name": evil_name,
                          "workload": {"kind": "StatefulSet", "name": "api\x1b[31mgw"}}}
    root = L.write_state(os.path.join(work, "hostile"), [d])
    shown = "mesh\\x1b]0;pwned\\x07/gw\\x1b[2J\\u202e-0\\u009b"
    ex = run(cli, "explain", POD, "--from", root, env=WIDE).stdout
    L.assert_inert("explain", ex)
    assert shown in table(ex)[1], table(ex)[1]
    assert table(ex)[1][shown]["WORKLOAD"] == "sts/api\\x1b[31mgw", table(ex)[1][shown]
    sh = run(cli, "show", POD, "--from", root, "--all", "-o", "wide").stdout
    L.assert_inert("show", sh)
    assert sh.count(shown) >= 10, sh.count(shown)
    svg = run(cli, "render", POD, "--from", root, "-o", "svg").stdout
    L.assert_inert("svg", svg)
    ET.fromstring(svg)
    assert shown in [ti for _, ti, _ in lanes_of(svg)], lanes_of(svg)
    tr = run(cli, "render", POD, "--from", root, "-o", "trace").stdout
    L.assert_inert("trace", tr)
    assert f"from {shown} (sts/api\\x1b[31mgw)" in {e["args"]["name"] for e in json.loads(tr)["traceEvents"]
                                                    if e["ph"] == "M"}
    # -o json: the document as it is
    j = json.loads(run(cli, "explain", POD, "--from", root, "-o", "json").stdout)
    assert f"{evil_ns}/{evil_name}" in {c["consumer"] for f in j["findings"] for c in f.get("consumers", [])}
    print("ok terminal-unsafe peer names escaped (explain, show, svg, trace)")


def t_hostile_api(cli, work):
    """The same names from the API server: explain, show and render
    resolve before they escape."""
    with open(os.path.join(DATA, "api.json"), encoding="utf-8") as f:
        objs = json.load(f)["objects"]
    for o in objs:
        if o["resource"] == "pods" and o["object"]["metadata"]["name"] == "api-gateway-0":
            o["object"]["metadata"]["name"] = "gw\x1b[2J-0"
    os.makedirs(os.path.join(work, "evil-api"))
    d = E.KubeDouble(os.path.join(work, "evil-api"), {"node": "node-e2e", "token": "t0", "objects": objs,
                                                      "steps": []}).start()
    try:
        src = ["--from", DATA, "--kubeconfig", d.kubeconfig]
        ex = run(cli, "explain", POD, *src).stdout
        L.assert_inert("explain", ex)
        assert "mesh/gw\\x1b[2J-0" in ex, ex
        sh = run(cli, "show", POD, *src, "--all", "-o", "wide").stdout
        L.assert_inert("show", sh)
        assert "mesh/gw\\x1b[2J-0" in sh
        svg = run(cli, "render", POD, *src, "-o", "svg").stdout
        L.assert_inert("svg", svg)
        assert "mesh/gw\\x1b[2J-0" in [t for t, _, _ in lanes_of(svg)], lanes_of(svg)
    finally:
        d.stop()
    print("ok names from the API escaped (explain, show, svg)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    cli = ap.parse_args().cli
    work = tempfile.mkdtemp(prefix="termline-cli-consumers-")
    cl = None
    try:
        cl = Cluster(work, "api")
        want, rows = t_explain(cli, cl)
        t_show(cli, cl, want)
        t_svg(cli, cl, want, rows, work)
        t_trace(cli, cl, want)
        t_no_resolve(cli, cl, work)
        t_log_twice(cli, cl, rows, work)
        t_collapse(cli, work)
        t_hostile(cli, work)
        t_hostile_api(cli, work)
    finally:
        if cl:
            cl.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
