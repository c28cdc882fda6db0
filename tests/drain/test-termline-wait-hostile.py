#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termline-wait against hostile or broken agents on loopback: --timeout is a
hard bound on the whole run (a silent, slow or garbage-answering agent
included), only an answer saying "drained": true opens the gate before it,
and what it quotes of an answer reaches the terminal escaped. No root
needed.

The timing checks are bounds a user relies on (a preStop must end within
the grace period), not speed targets: the gate must neither open before
--timeout on an answer that is no verdict, nor run past --timeout by more
than SLACK (process start-up and scheduling on a loaded machine)."""
import concurrent.futures
import os
import socket
import subprocess
import sys
import threading
import time

BUILD = os.environ.get("TERMLINE_BUILD_ROOT", "build")
WAIT = os.path.join(BUILD, "tools", "termline-wait")
UID = "6b1f2c3d-0000-4000-8000-00000000beef"
TIMEOUT = 3.0
SLACK = 1.0
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    else:
        print(f"ok: {what}")


class Agent:
    """Accepts connections; each is handled by behave(conn, request_text)
    in its own thread."""

    def __init__(self, behave):
        self.behave = behave
        self.requests = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data.decode(errors="replace"))
            self.behave(c, self)
        except OSError:
            pass  # the client gave up: what it should do
        finally:
            c.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def head(status=200, extra="", length=None):
    h = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
    if length is not None:
        h += f"Content-Length: {length}\r\n"
    return (h + extra + "Connection: close\r\n\r\n").encode()


def answer(status, body, extra=""):
    b = body.encode() if isinstance(body, str) else body

    def behave(c, agent):
        c.sendall(head(status, extra, len(b)) + b)
    return behave


def silent(c, agent):
    agent.stop.wait(60)


def trickle(c, agent):
    """A valid drained answer, one byte every 50 ms: complete after ~15 s."""
    b = ('{"uid":"%s","drained":true}' % UID).encode()
    for byte in head(200, "", len(b)) + b:
        if agent.stop.wait(0.05):
            return
        c.sendall(bytes([byte]))


def big_body(c, agent):
    c.sendall(head(200, "", 10 << 20))
    block = b"{" * 65536
    for _ in range(160):
        c.sendall(block)


def big_header(c, agent):
    c.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    block = b"a" * 65536
    for _ in range(160):
        c.sendall(block)
    c.sendall(b"\r\nContent-Length: 2\r\n\r\n{}")


def endless_chunked(c, agent):
    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    chunk = b"1000\r\n" + b"{" * 4096 + b"\r\n"
    while not agent.stop.is_set():
        c.sendall(chunk)


def chunked_drained(c, agent):
    """A drained answer in small chunks, each write on its own."""
    body = ('{"uid":"%s","drained":true,"summary":"chunked and fine"}' % UID).encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    for i in range(0, len(body), 7):
        piece = body[i:i + 7]
        c.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        time.sleep(0.01)
    c.sendall(b"0\r\n\r\n")


def run(args):
    env = {k: v for k, v in os.environ.items() if k not in ("POD_UID", "HOST_IP", "TERMLINE_PORT")}
    t0 = time.monotonic()
    p = subprocess.run([WAIT] + args, env=env, capture_output=True, text=True, timeout=60,
                       errors="surrogateescape")
    return p.returncode, p.stderr, time.monotonic() - t0


def gate(agent, timeout=TIMEOUT, extra=()):
    return run(["--uid", UID, "--host", "127.0.0.1", "--port", str(agent.port), "--timeout", f"{timeout}s",
                "--fallback", "1s"] + list(extra))


def one_line(err):
    return len(err.strip().splitlines()) == 1


def raw_controls(err):
    """Control characters other than the final newline."""
    return [ch for ch in err.rstrip("\n") if ord(ch) < 0x20 or ord(ch) == 0x7f or 0x80 <= ord(ch) <= 0x9f]


def not_drained_at_timeout(name, behave, timeout=TIMEOUT, want=None):
    """The gate stays shut until --timeout, then exits 1, and not later."""
    agent = Agent(behave)
    rc, err, took = gate(agent, timeout)
    agent.close()
    check(rc == 1, f"{name}: not drained, exit 1 ({rc}, {err!r})")
    check(timeout - 0.1 <= took <= timeout + SLACK,
          f"{name}: returned at --timeout {timeout}s, not before, not past +{SLACK}s ({took:.2f}s)")
    check(one_line(err) and "not drained" in err and not raw_controls(err), f"{name}: one clean line ({err!r})")
    if want:
        check(want in err, f"{name}: says why ({want!r} in {err!r})")
    return agent


# Each case takes --timeout whatever happens: they run side by side.
cases = []


def case(*a, **kw):
    cases.append((a, kw))


# ---- --timeout is a hard bound ----
def silent_case():
    agent = not_drained_at_timeout("silent agent", silent, want="did not answer within the timeout")
    check(len(agent.requests) == 1, f"silent agent: asked once ({len(agent.requests)})")
    tmo = int(agent.requests[0].split("timeout=")[1].split("ms")[0]) if agent.requests else -1
    check(0 < tmo <= TIMEOUT * 1000 - 400, f"the agent is asked to answer before the deadline ({tmo} ms)")


def fallback_case():
    # no agent with a fallback longer than the timeout: the timeout wins
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    closed = port.getsockname()[1]
    port.close()
    rc, err, took = run(["--uid", UID, "--host", "127.0.0.1", "--port", str(closed), "--timeout", "2s",
                         "--fallback", "10s"])
    check(rc == 1 and 1.9 <= took <= 2.0 + SLACK and "fallback" in err,
          f"fallback past --timeout: ends at --timeout ({rc}, {took:.2f}s, {err!r})")


case("silent agent, --timeout 1s", silent, timeout=1.0)
case("slow agent (a valid answer a byte at a time)", trickle)
case("an agent answering 500 at once", answer(500, "{}"), want="500")
case("an agent busy all along (429)", answer(429, '{"error":"busy"}'), want="429")

# ---- only "drained": true opens the gate; answers are read within bounds ----
case("200 with {{{{{", answer(200, "{{{{{"), want="no verdict")
case("200 with an empty body", answer(200, ""))
case("200 with a JSON array", answer(200, "[true]"))
case("200 with \"drained\": false", answer(200, '{"uid":"%s","drained":false}' % UID))
case("200 with \"drained\": \"true\"", answer(200, '{"uid":"%s","drained":"true"}' % UID))
case("200 for another Pod", answer(200, '{"uid":"ffffffff-0000","drained":true}'))
case("200 with trailing garbage", answer(200, '{"uid":"%s","drained":true} {"drained":false}' % UID))
case("200 nested 100,000 deep", answer(200, "[" * 100000 + "]" * 100000))
case("200, 10 MB body", big_body, want="past the bounds")
case("200, endless chunked stream", endless_chunked, want="past the bounds")
case("200, 10 MB header", big_header, want="past the bounds")
case("200, length and chunked both", answer(200, '{"drained":true}', "Transfer-Encoding: chunked\r\n"))
case("not HTTP", lambda c, a: c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"))
case("504 long before the wait's end", answer(504, '{"uid":"%s","drained":false,"unmet":"traffic"}' % UID))

with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
    futures = [pool.submit(silent_case), pool.submit(fallback_case)]
    futures += [pool.submit(not_drained_at_timeout, *a, **kw) for a, kw in cases]
    for f in futures:
        f.result()

# a drained answer in chunks and one closed without a length still open the gate
for name, behave in (("chunked", chunked_drained),
                     ("close-delimited", lambda c, a: c.sendall(
                         b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" +
                         ('{"uid":"%s","drained":true}' % UID).encode()))):
    agent = Agent(behave)
    rc, err, took = gate(agent)
    agent.close()
    check(rc == 0 and took < 2.0, f"{name} drained answer: exit 0 ({rc}, {took:.2f}s, {err!r})")

# ---- item: the agent's text is escaped, JSON escapes decoded first ----
hostile = '{"uid":"%s","drained":true,"summary":"a\\u001b]0;owned\\u0007b\\u001b[2Jc\\nd\\u009be\\u202ef"}' % UID
agent = Agent(answer(200, hostile))
rc, err, _ = gate(agent)
agent.close()
check(rc == 0 and not raw_controls(err) and one_line(err), f"control characters not raw ({err!r})")
check("a\\x1b]0;owned\\x07b\\x1b[2Jc\\nd\\u009be\\u202ef" in err and "u001b" not in err,
      f"shown escaped, \\u001b as ESC ({err!r})")
agent = Agent(answer(200, b'{"uid":"%s","drained":true,"summary":"caf\xc3\xa9 \xff\xfe ok"}' % UID.encode()))
rc, err, _ = gate(agent)
agent.close()
check(rc == 0 and "caf\u00e9 \\xff\\xfe ok" in err, f"UTF-8 kept, invalid bytes shown as \\xNN ({err!r})")
agent = Agent(answer(200, '{"uid":"%s","drained":true,"summary":"%s"}' % (UID, "\\u001b" * 5000)))
rc, err, _ = gate(agent)
agent.close()
check(rc == 0 and one_line(err) and len(err) < 700 and err.rstrip().endswith("..."),
      f"a long summary is cut, marked ({len(err)} bytes)")


def timeout_504(c, agent):
    """The agent's 504 at the end of the wait asked for, with a hostile unmet."""
    tmo = int(agent.requests[-1].split("timeout=")[1].split("ms")[0])
    agent.stop.wait(tmo / 1000)
    answer(504, '{"uid":"%s","drained":false,"unmet":"tr\\u001b[31maffic"}' % UID)(c, agent)


agent = Agent(timeout_504)
rc, err, took = gate(agent)
agent.close()
check(rc == 1 and "tr\\x1b[31maffic" in err and not raw_controls(err) and took <= TIMEOUT + SLACK,
      f"504 at the timeout: unmet escaped ({rc}, {took:.2f}s, {err!r})")

if failures:
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("all checks passed")
