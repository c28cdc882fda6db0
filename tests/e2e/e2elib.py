# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of termline's end-to-end tests: root check (skip only outside
CI), running termlined, reading its --emit-events file, the simulated pod."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

SRC = os.environ.get("TERMLINE_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("TERMLINE_BUILD_ROOT", os.path.join(SRC, "build"))
TERMLINED = os.path.join(BUILD, "daemon", "termlined")
SIMPOD = os.path.join(SRC, "tools", "termline-simpod")
SCHEMA = os.path.join(SRC, "schema", "timeline.schema.json")


def require_root():
    if os.geteuid() == 0:
        return
    if os.environ.get("CI") == "true":
        print("FAIL: this test needs root and CI=true forbids skipping", file=sys.stderr)
        sys.exit(1)
    print("SKIP: needs root")
    sys.exit(77)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Agent:
    """termlined as a child process with --emit-events into a file."""

    def __init__(self, workdir, args, name="termlined"):
        self.workdir = workdir
        self.events_path = os.path.join(workdir, f"{name}.events.jsonl")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.args = args
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        cmd = [TERMLINED, "--emit-events", self.events_path] + self.args
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        wait_for(lambda: self.proc.poll() is not None or b"running on node" in self.read_log(),
                 30, "termlined to start")
        if self.proc.poll() is not None:
            raise AssertionError(f"termlined exited with {self.proc.returncode}:\n{self.read_log().decode(errors='replace')}")
        return self

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()
        except OSError:
            return b""

    def events(self, pod_uid=None):
        out = []
        try:
            with open(self.events_path, encoding="utf-8") as f:
                for line in f:
                    if not line.endswith("\n"):
                        break  # being written
                    e = json.loads(line)
                    if pod_uid is None or e.get("podUid") == pod_uid:
                        out.append(e)
        except FileNotFoundError:
            pass
        return out

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("termlined did not stop on SIGTERM")
        return self.proc.returncode if self.proc else None


def simpod(*args, check=True):
    r = subprocess.run([SIMPOD] + list(args), capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"termline-simpod {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout) if r.stdout.strip() else None


def validate_documents(paths):
    """Validates timeline documents with python3-jsonschema; returns the parsed documents."""
    from jsonschema import Draft202012Validator
    with open(SCHEMA, encoding="utf-8") as f:
        v = Draft202012Validator(json.load(f))
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            d = json.load(f)
        errs = sorted(v.iter_errors(d), key=lambda e: list(e.path))
        if errs:
            raise AssertionError(f"{p}: not valid against the schema: " +
                                 "; ".join(f"{list(e.path)}: {e.message}" for e in errs[:5]))
        docs.append(d)
    return docs


def first(events, pred, what):
    for i, e in enumerate(events):
        if pred(e):
            return i, e
    raise AssertionError(f"no event {what} among:\n" + "\n".join(json.dumps(e) for e in events))
