#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The OTLP sender (daemon/export/otlp-export.c, through termline-otlp send)
against the test receiver (otlp-receiver.js, the official definitions):

- 429 with Retry-After (seconds and HTTP-date), 503, 502, 504, a dropped
  connection and an answer slower than --timeout are retried, the wait
  after a 429 is at least its Retry-After, and every span and log record
  of every document arrives (at least once: span ids are deterministic);
- a 400 is not retried: its spans are counted as failed, exit status 1;
- a partial success counts the rejected spans as failed;
- no receiver at all: retried until the retries run out, then failed;
- a queue too small for the documents: spans dropped and counted;
- headers, content types, http/json, and the OTEL_EXPORTER_OTLP_* variables
  with the flags winning over them."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlplib as O  # noqa: E402


def send(files, *args, env=None, timeout=120):
    r = subprocess.run([O.TOOL, "send", *args, *files], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    stats = json.loads(r.stdout) if r.stdout.strip() else None
    return r.returncode, stats, r.stderr


def expected(files, logs=False):
    """{(traceId, spanId)} and the number of log records of the documents."""
    spans, n_logs = set(), 0
    for f in files:
        body, _ = O.encode(f)
        spans |= {(s["traceId"], s["spanId"]) for _, s in O.spans(O.decode(body))}
        if logs:
            _, c = O.encode(f, signal_="logs")
            n_logs += c["logRecords"]
    return spans, n_logs


def arrived(rec):
    spans, logs = set(), set()
    for r in rec.accepted("/v1/traces"):
        spans |= {(s["traceId"], s["spanId"]) for _, s in O.spans(r["request"])}
    for r in rec.accepted("/v1/logs"):
        logs |= {(x["spanId"], x["timeUnixNano"], x["eventName"], x["body"]["stringValue"])
                 for _, x in O.records(r["request"])}
    return spans, logs


def with_receiver(work, faults, fn):
    rec = O.Receiver(work, faults).start()
    try:
        return fn(rec)
    except AssertionError:
        sys.stderr.write(f"--- receiver records\n{json.dumps([{k: v for k, v in r.items() if k != 'request'} for r in rec.records()], indent=1)[-4000:]}\n")
        sys.stderr.write(f"--- receiver log\n{rec.read_log()[-2000:]}\n")
        raise
    finally:
        rec.stop()


def faults_cost_nothing(work, docs, want_spans, want_logs):
    def run(rec):
        rc, st, err = send(docs, "--endpoint", rec.endpoint, "--logs", "--timeout", "1s",
                           "--retry-initial-ms", "200", "--headers", "authorization=Bearer%20t0k,x-tenant=a")
        assert rc == 0, (rc, st, err)
        spans, logs = arrived(rec)
        assert spans == want_spans, f"{len(want_spans - spans)} spans missing, {len(spans - want_spans)} unknown"
        assert len(logs) == want_logs and st["logRecordsSent"] == want_logs, (len(logs), want_logs, st)
        assert st["spansSent"] == len(want_spans) and st["spansFailed"] == 0 and st["spansDropped"] == 0, st
        # a retry per fault (the slow answer timed out); a connection
        # closed without an answer may be retried by curl itself, at once,
        # on a new connection
        assert st["retries"] in (6, 7), (st, err)
        recs = sorted(rec.records(), key=lambda r: r["n"])
        faults = [r["fault"] for r in recs]
        assert faults[:7] == ["429:1", "429date:2", "503", "disconnect", "slow:2500", "502", "504"], faults
        # the waits after the 429s: at least their Retry-After (the date has whole seconds)
        assert recs[1]["time"] - recs[0]["time"] >= 1000, (recs[0]["time"], recs[1]["time"])
        assert recs[2]["time"] - recs[1]["time"] >= 1000, (recs[1]["time"], recs[2]["time"])
        for r in recs:
            h = r["headers"]
            assert h["authorization"] == "Bearer t0k" and h["x-tenant"] == "a", h
            assert h["content-type"] == "application/x-protobuf" and h["user-agent"].startswith("termlined/"), h
        # batched: every document's spans in one request, the logs in another
        ok = [r for r in recs if r["status"] == 200 and r["fault"] != "slow:2500"]
        assert [r["path"] for r in ok] == ["/v1/traces", "/v1/logs"], [(r["path"], r["fault"]) for r in recs]
        return st
    return with_receiver(work, "429:1,429date:2,503,disconnect,slow:2500,502,504", run)


def in_child(work, docs, want_spans, want_logs):
    """Documents encoded by termline-otlp pieces in a child, as termlined
    does: the same spans and records, and a bad document reported."""
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"pod": {}}')

    def run(rec):
        rc, st, err = send(docs + [bad], "--endpoint", rec.endpoint, "--logs", "--in-child",
                           env={"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"})
        assert rc == 1 and st["documentErrors"] == 1 and "bad.json" in err, (rc, st, err)
        spans, logs = arrived(rec)
        assert spans == want_spans and len(logs) == want_logs, (len(spans), len(logs))
        for r in rec.accepted():
            for rs in r["request"]["resourceSpans"]:
                ra = O.attrs(rs["resource"]["attributes"])
                assert ra["deployment.environment"] == "test" and ra["service.name"] == "termline", ra
    with_receiver(work, "503", run)


def json_protocol(work, docs, want_spans):
    def run(rec):
        rc, st, err = send(docs, "--endpoint", rec.endpoint + "/", "--protocol", "http/json")
        assert rc == 0, (rc, err)
        assert arrived(rec)[0] == want_spans
        assert {r["contentType"] for r in rec.records()} == {"application/json"}
    with_receiver(work, "", run)


def bad_request_not_retried(work, docs, want_spans):
    def run(rec):
        rc, st, err = send(docs, "--endpoint", rec.endpoint, "--retry-initial-ms", "100")
        assert rc == 1, (rc, st, err)
        assert st["spansFailed"] == len(want_spans) and st["spansSent"] == 0 and st["retries"] == 0, st
        assert len(rec.records()) == 1, [r["fault"] for r in rec.records()]
        assert "HTTP 400" in err and "failed" in err, err
    with_receiver(work, "400", run)


def partial_success(work, docs, want_spans):
    def run(rec):
        rc, st, err = send(docs, "--endpoint", rec.endpoint)
        assert rc == 1, (rc, err)
        assert st["spansFailed"] == 2 and st["spansSent"] == len(want_spans) - 2, st
        assert "2 rejected" in err, err
    with_receiver(work, "partial:2", run)


def no_receiver(work, docs, want_spans):
    port = O.Receiver(work)  # for a free port: bind and close
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    del port
    rc, st, err = send(docs, "--endpoint", f"http://127.0.0.1:{free}", "--retry-initial-ms", "100",
                       "--retry-max-elapsed-ms", "1500")
    assert rc == 1, (rc, err)
    assert st["spansFailed"] == len(want_spans) and st["retries"] >= 2, st
    assert "retrying" in err and "failed" in err, err


def queue_full(work, docs, want_spans):
    def run(rec):
        rc, st, err = send(docs, "--endpoint", rec.endpoint, "--queue-bytes", "6000")
        assert rc == 1, (rc, err)
        assert st["spansDropped"] > 0 and st["spansSent"] + st["spansDropped"] == len(want_spans), st
        assert "dropped" in err, err
        assert len(arrived(rec)[0]) == st["spansSent"]
    with_receiver(work, "", run)


def environment(work, docs, want_spans):
    def run(rec):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": rec.endpoint, "OTEL_EXPORTER_OTLP_HEADERS": "x-env=1",
               "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
        rc, st, err = send(docs, env=env)
        assert rc == 0, (rc, err)
        assert {(r["headers"].get("x-env"), r["contentType"]) for r in rec.records()} == {("1", "application/json")}
        # the flag wins over the variables
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:1/v1/traces"
        rc, st, err = send(docs, "--endpoint", rec.endpoint, env=env)
        assert rc == 0, (rc, err)
        assert arrived(rec)[0] == want_spans
        # a variable that is wrong: one line naming it, exit 2
        rc, st, err = send(docs, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
        assert rc == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in err and len(err.strip().splitlines()) == 1, err
    with_receiver(work, "", run)


def main():
    work = tempfile.mkdtemp(prefix="termline-otlp-send-")
    try:
        docs = [os.path.join(O.FIXTURES, n) for n in sorted(os.listdir(O.FIXTURES))]
        rich = os.path.join(work, "rich.json")
        O.write_doc(rich, O.rich_doc())
        docs.append(rich)
        # more than a pipe holds (64 KiB): termline-otlp pieces writes to a
        # pipe the exporter reads without blocking
        big = os.path.join(work, "big.json")
        O.write_doc(big, O.rich_doc(uid="5e5e5e5e-0000-4000-8000-0000000b1650", n_extra_requests=400))
        docs.append(big)
        want_spans, want_logs = expected(docs, logs=True)
        st = faults_cost_nothing(work, docs, want_spans, want_logs)
        in_child(work, docs, want_spans, want_logs)
        json_protocol(work, docs, want_spans)
        bad_request_not_retried(work, docs, want_spans)
        partial_success(work, docs, want_spans)
        no_receiver(work, docs, want_spans)
        queue_full(work, docs, want_spans)
        environment(work, docs, want_spans)
        print(f"ok: {len(docs)} documents, {len(want_spans)} spans and {want_logs} log records through "
              f"{st['retries']} injected faults; 400, partial success, no receiver, full queue, environment")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
