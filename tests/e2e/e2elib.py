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
    sys.exit(77)  # skip: reached only outside CI (CI=true failed above)


def cgroup2_mount():
    """The cgroup2 mount point, from /proc/self/mountinfo (fields: ... mountpoint ... - fstype)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split(" ")[0] == "cgroup2":
                return pre.split(" ")[4].replace("\\040", " ")
    raise AssertionError("no cgroup2 mount in /proc/self/mountinfo")


def remove_dirs(paths, wait=0.0):
    """rmdir each path in order (children before parents; a cgroup's control
    files go with it). One that is gone is fine; one still busy is retried
    for up to wait seconds (a cgroup's last tasks being released), then left."""
    for d in paths:
        end = time.monotonic() + wait
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() >= end:
                    break
                time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Set by tools/dev for the ASan + UBSan build, where termlined runs several
# times slower: deadlines (never what a test asserts) are longer there.
SANITIZED = os.environ.get("TERMLINE_SANITIZED", "") not in ("", "0")


def deadline(seconds):
    """A wait's deadline: seconds, times 4 under the sanitizers."""
    return seconds * 4 if SANITIZED else seconds


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


# ---- the Kubernetes API double, HTTP and Prometheus helpers ----

KUBE_DOUBLE = os.path.join(SRC, "tests", "kube", "kube-double.py")


class KubeDouble:
    """tests/kube/kube-double.py on 127.0.0.1 with TLS (a certificate for a
    name the URL does not carry, so tls-server-name matters), a bearer token
    in a file it rotates, and a kubeconfig for termlined pointing at it."""

    def __init__(self, workdir, scenario):
        self.workdir = workdir
        self.scenario_path = os.path.join(workdir, "scenario.json")
        self.cert = os.path.join(workdir, "double.crt")
        self.key = os.path.join(workdir, "double.key")
        self.token_file = os.path.join(workdir, "token")
        self.port_file = os.path.join(workdir, "double.port")
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.log_path = os.path.join(workdir, "double.log")
        self.proc = None
        with open(self.scenario_path, "w", encoding="utf-8") as f:
            json.dump(scenario, f, indent=1)

    def start(self):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "1", "-subj", "/CN=kube-double.test",
                        "-addext", "subjectAltName=DNS:kube-double.test"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["/usr/bin/python3", KUBE_DOUBLE, "--scenario", self.scenario_path,
                                      "--cert", self.cert, "--key", self.key, "--token-file", self.token_file,
                                      "--port-file", self.port_file],
                                     stdout=self.log, stderr=self.log)
        wait_for(lambda: self.proc.poll() is not None or os.path.exists(self.port_file), 20, "the API double")
        if self.proc.poll() is not None:
            raise AssertionError(f"API double exited {self.proc.returncode}: {self.read_log()}")
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read())
        with open(self.kubeconfig, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: v1
kind: Config
current-context: e2e
contexts:
- name: e2e
  context: {{cluster: double, user: agent}}
clusters:
- name: double
  cluster:
    server: https://127.0.0.1:{self.port}
    certificate-authority: {self.cert}
    tls-server-name: kube-double.test
users:
- name: agent
  user:
    tokenFile: {self.token_file}
""")
        return self

    def read_log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def steps_applied(self):
        """The scenario steps the double has carried out, as logged ("op fault-or-uid")."""
        return [ln.split(" ", 3)[3] for ln in self.read_log().splitlines()
                if ln.startswith("kube-double: step ") and len(ln.split(" ", 3)) == 4]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def http_get(port, path, timeout=10):
    """(status, body bytes, content type) of GET http://127.0.0.1:port/path; no exception on 4xx/5xx."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read(), r.getheader("Content-Type", "")
    finally:
        c.close()


def http_json(port, path):
    status, body, _ = http_get(port, path)
    if status != 200:
        raise AssertionError(f"GET {path}: {status} {body[:200]!r}")
    return json.loads(body)


_PROM_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_PROM_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
_PROM_VALUE = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+|Inf|NaN)"


def parse_prometheus(text):
    """Strict parse of the Prometheus text format 0.0.4 as termlined writes
    it: '# HELP name text' and '# TYPE name counter|gauge|...' at most once
    per family and before its samples, every other line
    'name{label="v",...} value'. Returns {(name, frozenset(labels)): value}."""
    import re
    sample = re.compile(rf"^({_PROM_NAME})(?:\{{((?:{_PROM_LABEL})(?:,{_PROM_LABEL})*)?,?\}})? ({_PROM_VALUE})(?: -?[0-9]+)?$")
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
    helps, types, seen, out = set(), {}, set(), {}
    for n, line in enumerate(text.split("\n"), 1):
        if line == "":
            continue
        if line.startswith("#"):
            m = re.match(rf"^# (HELP|TYPE) ({_PROM_NAME}) (.*)$", line)
            if not m:
                if line.startswith("# HELP") or line.startswith("# TYPE"):
                    raise AssertionError(f"metrics line {n}: malformed {line!r}")
                continue  # a plain comment
            kind, name, rest = m.groups()
            if kind == "HELP":
                if name in helps:
                    raise AssertionError(f"metrics line {n}: second HELP for {name}")
                helps.add(name)
            else:
                if name in types or name in seen:
                    raise AssertionError(f"metrics line {n}: TYPE for {name} repeated or after its samples")
                if rest not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise AssertionError(f"metrics line {n}: bad type {rest!r}")
                types[name] = rest
            continue
        m = sample.match(line)
        if not m:
            raise AssertionError(f"metrics line {n}: not 'name{{labels}} value': {line!r}")
        name, labels, value = m.groups()
        seen.add(name)
        lset = frozenset(label.findall(labels or ""))
        if len(lset) != len(label.findall(labels or "")):
            raise AssertionError(f"metrics line {n}: repeated label: {line!r}")
        if (name, lset) in out:
            raise AssertionError(f"metrics line {n}: duplicate series: {line!r}")
        out[(name, lset)] = float(value)
    return out


def metric_series(samples, name, **labels):
    """[(labels dict, value)] of the series of name whose labels include these."""
    want = set(labels.items())
    return [(dict(ls), v) for (n, ls), v in samples.items() if n == name and want <= set(ls)]


def kernel_pod_ip_maps(ip):
    """Ids of the loaded 'pod_ips' BPF maps (the kernel's filter for resets
    without a socket) that hold ip, read with bpftool."""
    import ipaddress
    a = ipaddress.ip_address(ip)
    key = list((ipaddress.IPv6Address("::ffff:" + ip) if a.version == 4 else a).packed)
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True, check=True).stdout
    found = []
    for m in json.loads(out):
        if m.get("name") != "pod_ips":
            continue
        r = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(m["id"])], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # the map went away meanwhile
        for e in json.loads(r.stdout or "[]"):
            if [int(b, 16) for b in e["key"]] == key:
                found.append(m["id"])
    return found
