#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termline-wait against a scripted agent on loopback: exit codes (0 drained,
1 not drained, 2 bad usage), one line on stderr, the request it sends,
retries while the agent is busy or gone, and the fallback sleep when no
agent answers. No root needed."""
import os
import socket
import subprocess
import sys
import threading
import time

BUILD = os.environ.get("TERMLINE_BUILD_ROOT", "build")
WAIT = os.path.join(BUILD, "tools", "termline-wait")
UID = "6b1f2c3d-0000-4000-8000-00000000beef"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    else:
        print(f"ok: {what}")


class FakeAgent:
    """Accepts connections and answers each with the next scripted step:
    ("answer", status, body, delay_s), ("answer", status, body, "timeout")
    (at the end of the wait the request asked for, as the agent answers
    504) or ("drop", delay_s) (close without a response, as an agent that
    is killed mid-wait)."""

    def __init__(self, steps, port=0):
        self.steps = list(steps)
        self.requests = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data.decode(errors="replace"))
            step = self.steps.pop(0) if self.steps else ("answer", 500, "{}", 0)
            if step[0] == "drop":
                time.sleep(step[1])
                c.close()
                continue
            _, status, body, delay = step
            if delay == "timeout":
                req = self.requests[-1]
                delay = int(req.split("timeout=")[1].split("ms")[0]) / 1000 if "timeout=" in req else 0
            time.sleep(delay)
            b = body.encode()
            c.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(b)}\r\n"
                      f"Connection: close\r\n\r\n".encode() + b)
            c.close()

    def close(self):
        self.sock.close()


def run(args, env_extra=None, timeout=30):
    env = {k: v for k, v in os.environ.items() if k not in ("POD_UID", "HOST_IP", "TERMLINE_PORT")}
    env.update(env_extra or {})
    t0 = time.monotonic()
    p = subprocess.run([WAIT] + args, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr, time.monotonic() - t0


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_line(err):
    return len(err.strip().splitlines()) == 1


DRAINED = '{"uid":"%s","drained":true,"unmet":"none","summary":"endpoint out of 1 slice; last connection +1.2s"}' % UID
TIMEOUT = '{"uid":"%s","drained":false,"unmet":"traffic","summary":"3 connections since the deletion"}' % UID

# ---- usage ----
rc, err, _ = run([])
check(rc == 2 and "POD_UID" in err and one_line(err), f"no uid: exit 2 naming POD_UID ({rc}, {err!r})")
rc, err, _ = run(["--uid", UID])
check(rc == 2 and "HOST_IP" in err and one_line(err), f"no host: exit 2 naming HOST_IP ({rc}, {err!r})")
rc, err, _ = run(["--uid", "../../x", "--host", "127.0.0.1"])
check(rc == 2 and one_line(err), f"bad uid: exit 2 ({rc}, {err!r})")
rc, err, _ = run(["--uid", UID, "--host", "localhost"])
check(rc == 2 and "IP address" in err, f"a name instead of an address: exit 2 ({rc}, {err!r})")
rc, err, _ = run(["--uid", UID, "--host", "127.0.0.1", "--quiet", "soon"])
check(rc == 2 and "--quiet" in err, f"bad duration: exit 2 naming the flag ({rc}, {err!r})")
rc, err, _ = run(["--uid", UID, "--host", "127.0.0.1", "--bogus"])
check(rc == 2 and "--bogus" in err, f"unknown flag: exit 2 ({rc}, {err!r})")
rc, err, _ = run(["--help"])
check(rc == 0, "--help: exit 0")

# ---- drained: flags override the environment; the request carries quiet and timeout ----
agent = FakeAgent([("answer", 200, DRAINED, 0.3)])
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--quiet", "1.5s",
                     "--timeout", "10s"],
                    {"POD_UID": "ffffffff-0000-4000-8000-000000000000", "HOST_IP": "192.0.2.1", "TERMLINE_PORT": "1"})
check(rc == 0 and "drained after" in err and "last connection +1.2s" in err and one_line(err),
      f"200: exit 0 with the agent's summary ({rc}, {err!r})")
req = agent.requests[0] if agent.requests else ""
check(req.startswith(f"GET /v1/pods/{UID}/drained?quiet=1500ms&timeout=") and "Host: 127.0.0.1:" in req,
      f"request line and host ({req.splitlines()[0] if req else None!r})")
check(f"X-Request-Id: termline-wait-{UID}-" in req, "the gate's request carries a request ID")
tmo = int(req.split("timeout=")[1].split("ms")[0]) if "timeout=" in req else -1
check(9000 <= tmo <= 10000, f"timeout passed on is what is left of --timeout ({tmo} ms)")
agent.close()

# environment alone
agent = FakeAgent([("answer", 200, DRAINED, 0)])
rc, err, _ = run([], {"POD_UID": UID, "HOST_IP": "127.0.0.1", "TERMLINE_PORT": str(agent.port)})
check(rc == 0 and agent.requests and f"/v1/pods/{UID}/" in agent.requests[0], f"POD_UID/HOST_IP/TERMLINE_PORT ({rc}, {err!r})")
agent.close()

# ---- 504 at the end of the wait: exit 1 naming the unmet condition, within --timeout ----
agent = FakeAgent([("answer", 504, TIMEOUT, "timeout")])
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--timeout", "2s"])
check(rc == 1 and "still waiting for traffic" in err and one_line(err), f"504: exit 1 naming the condition ({rc}, {err!r})")
check(1.4 <= took <= 2.5 and len(agent.requests) == 1, f"504: one wait, answered before --timeout ({took:.2f}s)")
agent.close()

# ---- busy (429) and not synced (503): retried, then drained ----
agent = FakeAgent([("answer", 429, '{"error":"too many waiters"}', 0), ("answer", 503, '{"error":"not synced"}', 0),
                   ("answer", 200, DRAINED, 0)])
rc, err, _ = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--timeout", "10s"])
check(rc == 0 and len(agent.requests) == 3, f"429 and 503 retried ({rc}, {len(agent.requests)} requests, {err!r})")
agent.close()

# ---- the agent goes away mid-wait (a restart): reconnect, answer, even past the fallback ----
agent = FakeAgent([("drop", 1.0), ("answer", 200, DRAINED, 0.2)])
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--fallback", "500ms",
                     "--timeout", "10s"])
check(rc == 0 and len(agent.requests) == 2, f"dropped wait retried, answered ({rc}, {len(agent.requests)}, {err!r})")
check(took >= 1.0, f"the fallback does not cut short a wait the agent took ({took:.2f}s)")
agent.close()

# the agent is down when the hook starts and comes up within the fallback
port = closed_port()
late = {}


def start_late():
    time.sleep(0.8)
    late["agent"] = FakeAgent([("answer", 200, DRAINED, 0)], port=port)


threading.Thread(target=start_late, daemon=True).start()
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(port), "--fallback", "4s"])
check(rc == 0 and took < 3.5, f"retries while unreachable, then drained ({rc}, {took:.2f}s, {err!r})")
if "agent" in late:
    late["agent"].close()

# reached once, then gone for good: gives up at --timeout, exit 1
agent = FakeAgent([("drop", 0.2)])
threading.Timer(0.5, agent.close).start()
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--fallback", "500ms",
                     "--timeout", "2s"])
check(rc == 1 and 1.9 <= took <= 4.0 and "not drained" in err and one_line(err),
      f"agent gone after a wait: exit 1 at the timeout ({rc}, {took:.2f}s, {err!r})")

# ---- no agent at all: the fallback sleep, no shorter and not much longer ----
port = closed_port()
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(port), "--fallback", "1.5s",
                     "--timeout", "20s"])
check(rc == 1 and "fallback" in err and one_line(err), f"unreachable: exit 1 after the fallback ({rc}, {err!r})")
check(1.5 <= took <= 2.5, f"fallback served: {took:.2f}s for --fallback 1.5s")

# an agent that does not know the Pod (404) cannot judge: fallback too
agent = FakeAgent([("answer", 404, '{"error":"unknown pod"}', 0)] * 50)
rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--fallback", "1s"])
check(rc == 1 and "fallback" in err and took >= 1.0, f"404: fallback ({rc}, {took:.2f}s, {err!r})")
agent.close()

if failures:
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("all checks passed")
