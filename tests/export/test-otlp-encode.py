#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The OTLP encoder (daemon/export, through termline-otlp encode) checked by
the official OTLP definitions (otlp-decode.js): for the CLI's fixture
documents and documents built here, in http/protobuf and http/json, traces
and logs:

- one trace, whose id is the Pod UID; one root span, every other span its
  child; span ids unique, and the same bytes when encoded again;
- a span per http.request with the HTTP semantic conventions (method,
  url.path, status code, x-request-id as a string array, error.type, peer,
  a link to a valid traceparent), every other event a span event on the
  span of its phase, every finding an event on the root span with its
  recommendation: the counts match the document;
- the phases (preStop, SIGTERM -> exit, the proxy's drain, the grace period,
  the preStop gate) with their times and statuses;
- resources per the Kubernetes conventions (the Deployment from the
  ReplicaSet's name, container ids), OTEL_SERVICE_NAME;
- protobuf and JSON decode to the same request; a log record per event and
  finding; strings that are not UTF-8 arrive as U+FFFD;
- a document past 512 spans is cut into pieces that are one request again;
  past 20000 request spans, the failed ones are kept."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlplib as O  # noqa: E402

ROOT_NAME = "pod termination"
# Envoy response flags that mean the request failed (docs/findings.md)
FAILED_FLAGS = {"UF", "UC", "URX", "UH", "LR", "DC", "UO", "NR", "UT"}


def is_failed(e):
    flags = set((e.get("responseFlags") or "").split(","))
    return e["status"] == 0 or e["status"] >= 500 or bool(flags & FAILED_FLAGS)


def check_doc(path, doc, what):
    uid = doc["pod"]["uid"]
    tid = O.trace_id_of(uid)
    body, counts = O.encode(path)
    req = O.decode(body)
    # the JSON encoding says the same, and passes the strict round trip
    jbody, jcounts = O.encode(path, "http/json")
    assert json.loads(jbody), what
    jreq = O.decode(jbody, fmt="json")
    assert req == jreq, f"{what}: protobuf and JSON decode differently"
    assert counts == jcounts, (counts, jcounts)
    # idempotent: the same document, the same bytes
    again, _ = O.encode(path)
    assert again == body, f"{what}: a second encoding differs"

    sp = O.spans(req)
    assert sp, what
    assert {s["traceId"] for _, s in sp} == {tid}, f"{what}: more than one trace, or not the UID"
    ids = [s["spanId"] for _, s in sp]
    assert len(ids) == len(set(ids)), f"{what}: span ids repeat"
    roots = [s for _, s in sp if "parentSpanId" not in s]
    assert len(roots) == 1 and roots[0]["name"] == ROOT_NAME, f"{what}: roots {roots}"
    root = roots[0]
    assert all(s["parentSpanId"] == root["spanId"] for _, s in sp if s is not root), what
    for ra, _ in sp:
        assert ra["k8s.pod.uid"] == uid and ra["k8s.namespace.name"] == doc["pod"]["namespace"], ra
        assert ra["k8s.pod.name"] == doc["pod"]["name"] and ra["k8s.node.name"] == doc["pod"]["node"], ra
        assert ra["service.name"] == "termline", ra
    assert int(root["startTimeUnixNano"]) == O.ns_of(next(e["time"] for e in doc["events"]
                                                         if e["type"] == "pod.deletion_requested"))
    assert int(root["endTimeUnixNano"]) == O.ns_of(next(e["time"] for e in doc["events"]
                                                       if e["type"] == "pod.deleted"))

    # requests: one span each, as the document says
    reqs = [e for e in doc["events"] if e["type"] == "http.request"]
    rspans = [(ra, s) for ra, s in sp if s["kind"] in (2, 3)]
    assert len(rspans) == len(reqs) == counts["requestSpans"], (len(rspans), len(reqs), counts)
    by_start = {}
    for ra, s in rspans:
        by_start.setdefault(s["startTimeUnixNano"], []).append((ra, s))
    for e in reqs:
        cands = by_start.get(str(O.ns_of(e.get("start", e["time"]))), [])
        match = [(ra, s) for ra, s in cands
                 if O.attrs(s.get("attributes")).get("http.request.header.x-request-id") ==
                 ([e["requestId"]] if e.get("requestId") else None)]
        assert len(match) == 1, f"{what}: request {e} has {len(match)} spans"
        ra, s = match[0]
        a = O.attrs(s.get("attributes"))
        assert s["kind"] == (3 if e.get("direction") == "outbound" else 2), s
        assert ra.get("k8s.container.name") == e["container"], (ra, e)
        assert a["url.path"] == e["path"].split("?")[0], a
        if e["status"]:
            assert a["http.response.status_code"] == e["status"], a
        else:
            assert "http.response.status_code" not in a, a
        failed = is_failed(e)
        assert a["termline.failed"] == failed, (a, e)
        if failed or (e.get("direction") == "outbound" and e["status"] >= 400):
            assert s.get("status", {}).get("code") == 2, f"{what}: failed request without error status: {s}"
            assert "error.type" in a, a
        else:
            assert "status" not in s, s
        assert int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"]) == int(e.get("durationMs", 0) * 1e6), s

    # every other event is a span event; every finding one on the root
    evs = [(s, x) for _, s in sp for x in s.get("events", [])]
    want = sorted([e["type"] for e in doc["events"] if e["type"] != "http.request"] +
                  ["termline.finding"] * len(doc["findings"]))
    assert sorted(x["name"] for _, x in evs) == want, f"{what}: span events differ from the document"
    assert counts["spanEvents"] == len(want) and counts["spans"] == len(sp), counts
    fevs = [x for s, x in evs if x["name"] == "termline.finding"]
    assert all(s is root for s, x in evs if x["name"] == "termline.finding"), what
    for f, x in zip(doc["findings"], fevs):
        a = O.attrs(x.get("attributes"))
        assert a["termline.finding.rule"] == f["rule"] and a["termline.finding.severity"] == f["severity"], a
        if f.get("recommendation"):
            assert a["termline.recommendation.setting"] == f["recommendation"]["setting"], a
            assert a["termline.recommendation.value"] == f["recommendation"]["value"], a
        assert a.get("termline.finding.request_ids", []) == f["requestIds"], a
    for _, x in evs:
        assert int(x["timeUnixNano"]) > 0, x
    return req, sp, root, counts


def check_logs(path, doc, sp, what):
    for fmt in ("protobuf", "json"):
        body, counts = O.encode(path, "http/" + fmt, "logs")
        recs = O.records(O.decode(body, "logs", fmt))
        want = sorted([e["type"] for e in doc["events"]] + ["termline.finding"] * len(doc["findings"]))
        assert sorted(r["eventName"] for _, r in recs) == want, f"{what}: log records differ ({fmt})"
        assert counts["logRecords"] == len(want), counts
        span_ids = {s["spanId"] for _, s in sp}
        tid = O.trace_id_of(doc["pod"]["uid"])
        for ra, r in recs:
            assert r["traceId"] == tid and r["spanId"] in span_ids, r
            assert r["severityNumber"] in (9, 13, 17), r
        failed = [r for _, r in recs if r["eventName"] == "http.request" and r["severityNumber"] == 17]
        n_failed = sum(1 for e in doc["events"] if e["type"] == "http.request" and is_failed(e))
        assert len(failed) == n_failed, (len(failed), n_failed)


def span_named(sp, name):
    m = [(ra, s) for ra, s in sp if s["name"] == name]
    assert len(m) == 1, f"{name}: {len(m)} spans among {[s['name'] for _, s in sp]}"
    return m[0]


def check_rich(work):
    doc = O.rich_doc()
    path = os.path.join(work, "rich.json")
    O.write_doc(path, doc)
    req, sp, root, counts = check_doc(path, doc, "rich")
    check_logs(path, doc, sp, "rich")
    t = {e["type"] + "/" + str(e.get("container")) + "/" + str(e.get("pid")): O.ns_of(e["time"])
         for e in doc["events"]}
    # the phases
    _, pre = span_named(sp, "preStop app")
    assert int(pre["startTimeUnixNano"]) == t["process.exec/app/300"], pre
    assert int(pre["endTimeUnixNano"]) == t["process.signal/app/100"], pre
    ra, stop = span_named(sp, "SIGTERM → exit app")
    assert ra["k8s.container.name"] == "app" and ra["container.id"] == "a" * 64, ra
    assert int(stop["endTimeUnixNano"]) == t["process.exit/app/100"] and "status" not in stop, stop
    _, pstop = span_named(sp, "SIGTERM → exit istio-proxy")
    assert pstop["status"]["code"] == 2 and O.attrs(pstop["attributes"])["termline.sigkill"] is True, pstop
    _, drain = span_named(sp, "proxy drain istio-proxy")
    assert O.attrs(drain["attributes"])["termline.istio.termination_drain_seconds"] == 5, drain
    _, grace = span_named(sp, "grace period")
    assert int(grace["endTimeUnixNano"]) - int(grace["startTimeUnixNano"]) == 5 * 10**9, grace
    assert grace["status"]["code"] == 2, grace
    _, gate = span_named(sp, "preStop gate wait")
    ga = O.attrs(gate["attributes"])
    assert ga["termline.outcome"] == "drained" and ga["termline.held_ms"] == 870 and "status" not in gate, gate
    assert counts["spans"] == 1 + 6 + 4, counts
    # events on the span of their phase
    on = {x["name"] + "@" + s["name"] for _, s in sp for x in s.get("events", [])}
    assert "process.exec@preStop app" in on and "process.exit@preStop app" in on, on
    assert "socket.listen_closed@SIGTERM → exit app" in on, on
    assert "process.signal@proxy drain istio-proxy" in on, on
    assert "drain.wait_started@preStop gate wait" in on and "drain.wait_ended@preStop gate wait" in on, on
    assert "tcp.reset_sent@" + ROOT_NAME in on and "endpoint.removed@" + ROOT_NAME in on, on
    # event attributes: termline.<snake_case>, the container's name
    sig = next(x for _, s in sp for x in s.get("events", []) if x["name"] == "process.signal")
    a = O.attrs(sig["attributes"])
    assert a["termline.sender_comm"] == "containerd-shim" and a["termline.signo"] == 15, a
    assert a["k8s.container.name"] == "app", a
    # not UTF-8 in the document: U+FFFD in OTLP
    ex = next(x for _, s in sp for x in s.get("events", [])
              if x["name"] == "process.exit" and O.attrs(x["attributes"])["termline.pid"] == 100)
    assert O.attrs(ex["attributes"])["termline.comm"] == "app\ufffd", ex
    # requests: peers, protocol, links, unknown methods
    rs = {tuple(O.attrs(s["attributes"]).get("http.request.header.x-request-id") or ["-"])[0]: s
          for _, s in sp if s["kind"] in (2, 3)}
    a1 = O.attrs(rs["r-1"]["attributes"])
    assert a1["client.address"] == "10.0.0.9" and a1["client.port"] == 51234, a1
    assert a1["network.peer.address"] == "10.0.0.9" and a1["error.type"] == "503", a1
    assert a1["termline.response_flags"] == "UF", a1
    assert rs["r-1"]["status"] == {"code": 2, "message": "503 UF"}, rs["r-1"]
    assert rs["r-1"]["links"] == [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                                   "traceState": "vendor=x", "flags": 1}], rs["r-1"]
    a2 = O.attrs(rs["r-2"]["attributes"])
    assert a2["client.address"] == "fd00::9" and a2["network.protocol.version"] == "2", a2
    assert a2["error.type"] == "reset" and "http.response.status_code" not in a2, a2
    a3 = O.attrs(rs["r-3"]["attributes"])
    assert rs["r-3"]["kind"] == 3 and a3["error.type"] == "404", rs["r-3"]
    brew = rs["-"]
    ab = O.attrs(brew["attributes"])
    assert brew["name"] == "HTTP" and ab["http.request.method"] == "_OTHER", brew
    assert ab["http.request.method_original"] == "BREW" and ab["url.query"] == "x=1", ab
    assert "links" not in brew, "a malformed traceparent became a link"
    # resources
    pod_res = next(ra for ra, s in sp if s is root)
    assert pod_res["k8s.deployment.name"] == "web" and pod_res["k8s.replicaset.name"] == "web-7f9c4b8d5f", pod_res
    assert "k8s.container.name" not in pod_res, pod_res
    ra = O.attrs(O.decode(O.encode(path, env={"OTEL_SERVICE_NAME": "shop-terminations"})[0])
                 ["resourceSpans"][0]["resource"]["attributes"])
    assert ra["service.name"] == "shop-terminations", ra
    # the root says what failed
    r = O.attrs(root["attributes"])
    assert r["termline.failed_requests"] == 2 and r["termline.requests"] == 4, r
    assert root["status"]["code"] == 2 and "listener" in root["status"]["message"], root


def check_big(work):
    # 1201 requests: pieces of 512 spans, that join into one request again
    doc = O.rich_doc(uid="5e5e5e5e-0000-4000-8000-0000000b1600", n_extra_requests=1200)
    path = os.path.join(work, "big.json")
    O.write_doc(path, doc)
    _, sp, _, counts = check_doc(path, doc, "big")
    assert counts["pieces"] >= 3, counts
    # past the cap of 20000 request spans, the failed ones are kept
    doc = O.rich_doc(uid="5e5e5e5e-0000-4000-8000-0000000b1601", n_extra_requests=20010)
    path = os.path.join(work, "huge.json")
    O.write_doc(path, doc)
    body, counts = O.encode(path)
    n_req = sum(1 for e in doc["events"] if e["type"] == "http.request")
    assert counts["requestSpans"] == 20000 and counts["requestsUnexported"] == n_req - 20000, counts
    sp = O.spans(O.decode(body))
    ids = {(O.attrs(s["attributes"]).get("http.request.header.x-request-id") or ["-"])[0]
           for _, s in sp if s["kind"] in (2, 3)}
    assert {"bulk-failed", "r-1", "r-2"} <= ids, "a failed request was left out"


def check_not_a_document(work):
    import subprocess
    for name, text in (("empty.json", "{}"), ("noevents.json", '{"pod":{"uid":"x"}}'), ("junk.json", "[1,")):
        p = os.path.join(work, name)
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run([O.TOOL, "encode", p], capture_output=True, text=True)
        assert r.returncode == 2 and p in r.stderr and r.stdout == "", (name, r.returncode, r.stderr)


def main():
    work = tempfile.mkdtemp(prefix="termline-otlp-encode-")
    try:
        n = 0
        for name in sorted(os.listdir(O.FIXTURES)):
            path = os.path.join(O.FIXTURES, name)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            _, sp, _, _ = check_doc(path, doc, name)
            check_logs(path, doc, sp, name)
            n += 1
        check_rich(work)
        check_big(work)
        check_not_a_document(work)
        print(f"ok: {n} fixture documents and 3 built ones, protobuf and JSON, traces and logs, "
              f"decoded by the official definitions")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
