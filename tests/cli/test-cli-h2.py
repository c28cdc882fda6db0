#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline on HTTP/2 and gRPC timelines recorded by the agent
(tests/cli/data/h2/state, from tests/e2e/test-h2.py --keep-doc: a gRPC
server in a Pod's app container and a client in its proxy container, four
slow calls in flight when the Pod was deleted):

- grpc-killed: the server died at SIGTERM, no GOAWAY, its connection
  closed under the calls;
- grpc-cancel: server.stop(None): GOAWAY, each call answered UNAVAILABLE
  over HTTP 200, its stream then reset;
- grpc-graceful: server.stop(grace): GOAWAY, every call finished OK.

explain names each failing call by request ID and gRPC status (or why it
has none), -v lists them with their streams, the graceful stop has no
HTTP/2 finding; check and list count a gRPC call that failed over HTTP
200; show describes the HTTP/2 events. What is expected is read from each
document's own events (every call's ID, stream and status), so the
assertions hold for any recording of the same scenario."""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clilib as L  # noqa: E402
from clilib import run  # noqa: E402

STATE = os.path.join(HERE, "data", "h2", "state")
NS = "shop"
H2_RULES = ("no_goaway_before_close", "streams_after_goaway", "streams_reset_during_drain")
GRPC = {0: "OK", 14: "UNAVAILABLE"}


def docs():
    """{mode: (NS/NAME, document)} of the committed recordings."""
    out = {}
    d = os.path.join(STATE, "timelines", NS)
    for f in sorted(os.listdir(d)):
        doc = L.load(os.path.join(d, f))
        mode = doc["pod"]["name"].split("-")[1]  # grpc-<mode>-...
        out[mode] = (f"{NS}/{doc['pod']['name']}", doc)
    assert sorted(out) == ["cancel", "graceful", "killed"], sorted(out)
    return out


def calls(doc):
    """The calls in flight at the deletion, as the server saw them:
    {requestId: its inbound http.request}."""
    return {e["requestId"]: e for e in doc["events"]
            if e["type"] == "http.request" and e.get("protocol") == "h2" and e["container"] == "app"
            and e["direction"] == "inbound" and not e["requestId"].endswith("-warm")}


def explain(cli, pod, *extra):
    return run(cli, "explain", pod, "--from", STATE, *extra, env={"COLUMNS": "200"}).stdout


def flat(text):
    """The text with its lines joined (explain wraps at 100 columns)."""
    return " ".join(text.split())


def t_killed(cli, pod, doc):
    want = calls(doc)
    assert len(want) == 4 and all("grpcStatus" not in e and e.get("error") for e in want.values()), want
    j = json.loads(explain(cli, pod, "-o", "json"))
    rules = {f["rule"]: f for f in j["findings"]}
    g = rules["no_goaway_before_close"]
    assert sorted(g["requestIds"]) == sorted(want), g["requestIds"]
    assert g["severity"] == "error", g
    assert "server.stop(grace)" in g["recommendation"]["setting"], g["recommendation"]
    # the calls were cut by the app's death: its client's RST_STREAMs that
    # followed do not make it the proxy's drain
    r = rules["streams_reset_during_drain"]
    assert sorted(r["requestIds"]) == sorted(want), r["requestIds"]
    assert r["recommendation"]["setting"].startswith("spec.containers[app]"), r["recommendation"]
    text = explain(cli, pod)
    lines = text.splitlines()
    text = flat(text)
    # the verdict: the four calls failed, and why (the first clause of
    # the finding, its times whole)
    assert text.startswith(f"{pod}: 4 requests failed (no response, "), text
    assert "): app exited at +0." in text and " s with 1 HTTP/2 connection open and sent no GOAWAY" in text, text
    at = next(i for i, ln in enumerate(lines) if "no_goaway_before_close" in ln)
    block = "\n".join(lines[at:at + 8])
    assert "app exited" in block and "sent no GOAWAY" in block, block
    for rid, e in want.items():
        # named with why it has no status
        assert f"{rid} (/e2e.Slow/Call) no status (connection closed)" in text or \
            f"{rid} (/e2e.Slow/Call) no status (reset)" in text, (rid, text)
    v = flat(explain(cli, pod, "-v", "1"))
    for rid, e in want.items():
        assert re.search(rf"{rid} /e2e\.Slow/Call: no status \([a-z ]+\) \((in|out)bound, connection \d+, "
                         rf"stream {e['streamId']}\)", v), (rid, v)


def t_cancel(cli, pod, doc):
    want = calls(doc)
    assert len(want) == 4 and all(e.get("grpcStatus") == 14 and e["status"] == 200 for e in want.values()), want
    j = json.loads(explain(cli, pod, "-o", "json"))
    rules = {f["rule"]: f for f in j["findings"]}
    assert "no_goaway_before_close" not in rules, rules["no_goaway_before_close"]
    r = rules["streams_reset_during_drain"]
    assert sorted(r["requestIds"]) == sorted(want), r["requestIds"]
    assert {c["requestId"]: (c["grpcStatus"], c["outcome"], c["streamId"]) for c in r["calls"]} == \
        {rid: (14, "UNAVAILABLE", e["streamId"]) for rid, e in want.items()}, r["calls"]
    text = flat(explain(cli, pod))
    # the verdict counts the calls that failed over HTTP 200, by their status
    assert text.startswith(f"{pod}: 4 requests failed (gRPC UNAVAILABLE, "), text
    for rid in want:
        assert f"{rid} (/e2e.Slow/Call) UNAVAILABLE" in text, (rid, text)
    v = flat(explain(cli, pod, "-v", "1"))
    for rid, e in want.items():
        # one line per call (the leg that started first), with its stream
        assert re.search(rf"{rid} /e2e\.Slow/Call: UNAVAILABLE \((in|out)bound, connection \d+, "
                         rf"stream {e['streamId']}\)", v), (rid, v)
    # check fails the Pod on them, list counts them
    c = run(cli, "check", pod, "--from", STATE, rc=1).stdout
    assert f"FAIL {pod} failed-requests: 4 failed requests (at most 0 allowed)" in c, c
    # show: the GOAWAYs and resets in words, each call with its stream and status
    s = flat(run(cli, "show", pod, "--from", STATE, env={"COLUMNS": "200"}).stdout)
    last = max(e["streamId"] for e in want.values())
    assert "GOAWAY sent on connection" in s and f"last-stream-id {last}, INTERNAL_ERROR" in s, s
    assert "RST_STREAM sent on connection" in s, s
    # each call's stream and status, alone or in a run of like calls, and
    # no run of them said as plain 200s
    for e in want.values():
        assert f"h2 stream {e['streamId']} grpc UNAVAILABLE" in s or \
            re.search(r"\d × (in|out)bound POST /e2e\.Slow/Call -> 200 grpc UNAVAILABLE", s), (e, s)
    assert not re.search(r"POST /e2e\.Slow/Call -> 200,", s), s


def t_graceful(cli, pod, doc):
    want = calls(doc)
    assert len(want) == 4 and all(e.get("grpcStatus") == 0 for e in want.values()), want
    j = json.loads(explain(cli, pod, "-o", "json"))
    fired = [f["rule"] for f in j["findings"] if f["rule"] in H2_RULES]
    assert not fired, fired
    run(cli, "check", pod, "--from", STATE, rc=0)
    s = flat(run(cli, "show", pod, "--from", STATE, env={"COLUMNS": "200"}).stdout)
    assert "last-stream-id 2147483647, NO_ERROR" in s, s
    for e in want.values():
        assert f"h2 stream {e['streamId']} grpc OK" in s or \
            re.search(r"\d × (in|out)bound POST /e2e\.Slow/Call -> 200 grpc OK", s), (e, s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    ds = docs()
    t_killed(a.cli, *ds["killed"])
    t_cancel(a.cli, *ds["cancel"])
    t_graceful(a.cli, *ds["graceful"])
    # every fixture is valid against the schema and its text inert
    from jsonschema import Draft202012Validator
    v = Draft202012Validator(L.load(os.path.join(os.path.dirname(os.path.dirname(HERE)), "schema",
                                                 "timeline.schema.json")))
    for pod, doc in ds.values():
        errs = [f"{list(e.path)}: {e.message}" for e in v.iter_errors(doc)]
        assert not errs, (pod, errs[:3])
        L.assert_inert(pod, explain(a.cli, pod, "-v", "1"))
    print("ok: explain names the failing gRPC calls by request ID and status; check, show, -v")
    return 0


if __name__ == "__main__":
    sys.exit(main())
