#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Validate timeline documents against schema/timeline.schema.json.

validate.py --schema SCHEMA PATH...      every *.json under PATH must be valid
validate.py --schema SCHEMA --sample EXE run EXE DIR (writes documents), validate
                                         them, and check that broken copies fail
Exit 0 when all is well, 1 on an invalid document, 2 when there was nothing
to check (a vacuous pass would hide a broken producer).
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

from jsonschema import Draft202012Validator

REQUIRED_FIELDS = {
    "pod.deletion_requested": ["gracePeriodSeconds"],
    "pod.condition": ["condition", "status"],
    "container.terminated": ["exitCode", "reason"],
    "pod.deleted": [],
    "endpoint.condition": ["service", "endpointSlice", "ready", "serving", "terminating"],
    "endpoint.removed": ["service", "endpointSlice"],
    "process.signal": ["signal", "signo", "pid", "comm", "senderPid", "senderComm", "result"],
    "process.exec": ["pid", "comm", "filename"],
    "process.exit": ["pid", "comm", "exitCode", "exitSignal"],
    "socket.listen": ["address", "port"],
    "socket.listen_closed": ["address", "port"],
    "tcp.reset_sent": ["local", "remote"],
    "tcp.reset_received": ["local", "remote"],
    "http.request": ["requestId", "method", "path", "status", "start", "durationMs", "direction", "responseFlags"],  # the samples come from logs
}
TOP = ["apiVersion", "pod", "containers", "events", "findings", "complete", "loss", "recorder"]


def documents(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, _dirs, files in os.walk(p):
            for f in sorted(files):
                if f.endswith(".json") and not f.startswith("."):
                    yield os.path.join(root, f)


def check_valid(validator, paths):
    n = bad = 0
    for path in documents(paths):
        n += 1
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:5]:
            print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
        if errors:
            bad += 1
        else:
            times = [ev["time"] for ev in doc["events"]]
            if times != sorted(times):
                print(f"{path}: events not sorted by time", file=sys.stderr)
                bad += 1
    return n, bad


def mutations(doc):
    """Copies of a valid document that the schema must reject."""
    for key in TOP:
        d = copy.deepcopy(doc)
        del d[key]
        yield f"without {key}", d
    for key in ["uid", "namespace", "terminationGracePeriodSeconds"]:
        d = copy.deepcopy(doc)
        del d["pod"][key]
        yield f"pod without {key}", d
    for key in ["recordingSince", "probes", "configDigest", "kernel", "agentVersion", "node"]:
        d = copy.deepcopy(doc)
        del d["recorder"][key]
        yield f"recorder without {key}", d
    d = copy.deepcopy(doc)
    del d["loss"]["kernelEventsDropped"]
    yield "loss without kernelEventsDropped", d
    d = copy.deepcopy(doc)
    d["complete"] = not d["complete"]
    yield "complete contradicting loss", d
    seen = set()
    for i, ev in enumerate(doc["events"]):
        for key in ["time", "source", "type", "container"]:
            d = copy.deepcopy(doc)
            del d["events"][i][key]
            yield f"event {i} without {key}", d
        t = ev["type"]
        if t in seen:
            continue
        seen.add(t)
        for key in REQUIRED_FIELDS.get(t, []):
            d = copy.deepcopy(doc)
            del d["events"][i][key]
            yield f"{t} without {key}", d
        d = copy.deepcopy(doc)
        d["events"][i]["time"] = "yesterday"
        yield f"{t} with a bad time", d
        if t == "process.signal":
            # The agent writes the kernel's result names, nothing else.
            d = copy.deepcopy(doc)
            d["events"][i]["result"] = "already_pending"
            yield f"{t} with a result the agent never writes", d


def check_negative(validator, paths):
    types = set()
    failures = 0
    for path in documents(paths):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for ev in doc["events"]:
            types.add(ev["type"])
        for what, d in mutations(doc):
            if validator.is_valid(d):
                print(f"{path}: accepted a document {what}", file=sys.stderr)
                failures += 1
    missing = set(REQUIRED_FIELDS) - types
    if missing:
        print(f"sample documents lack event types {sorted(missing)}", file=sys.stderr)
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", required=True)
    ap.add_argument("--sample")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    with open(args.schema, encoding="utf-8") as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    with tempfile.TemporaryDirectory() as tmp:
        paths = list(args.paths)
        if args.sample:
            subprocess.run([args.sample, tmp], check=True)
            paths.append(tmp)
        n, bad = check_valid(validator, paths)
        if n == 0:
            print("no documents to validate", file=sys.stderr)
            return 2
        if bad:
            return 1
        if args.sample and check_negative(validator, [tmp]):
            return 1
    print(f"{n} document(s) valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
