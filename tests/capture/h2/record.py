#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Records one TCP connection into the capture format of
tests/capture/h2-replay.h: a relay between a client and a server, one
chunk per recv() of either side.

    record.py --upstream PORT --out FILE [--listen PORT] [--note TEXT] -- CLIENT ARGS...

Listens on 127.0.0.1 (an ephemeral port unless --listen), runs the client with "{port}"
in its arguments replaced by that port, relays the first connection it
accepts to 127.0.0.1:PORT (the server) and writes FILE when both sides
closed and the client exited:

    termline-h2-capture 1\\n
    then per chunk: "<dir> <ts_ns> <len>\\n", len raw bytes, "\\n"

dir 0: the client's bytes (what the server read), 1: the server's, 2: a
note (--note, first). ts_ns: CLOCK_MONOTONIC when the relay received the
chunk. Connections after the first are refused (closed at once)."""
import argparse
import select
import socket
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", type=int, required=True, help="the server's port on 127.0.0.1")
    ap.add_argument("--out", required=True)
    ap.add_argument("--note", default=None)
    ap.add_argument("--listen", type=int, default=0, help="the relay's port (0: any)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.exit("record.py: no client command")

    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", a.listen))
    lst.listen(8)
    port = lst.getsockname()[1]
    client = subprocess.Popen([c.replace("{port}", str(port)) for c in cmd])

    chunks = []
    if a.note:
        chunks.append((2, time.monotonic_ns(), a.note.encode()))
    deadline = time.monotonic() + a.timeout
    down = None
    up = None
    open_ = {}
    while True:
        if time.monotonic() > deadline:
            client.kill()
            sys.exit("record.py: timed out")
        rl = [lst] + [s for s in (down, up) if s is not None and open_.get(s)]
        if down is not None and not rl[1:] and client.poll() is not None:
            break
        if down is None and client.poll() is not None:
            sys.exit("record.py: the client exited without connecting (%d)" % client.returncode)
        r, _, _ = select.select(rl, [], [], 0.2)
        for s in r:
            if s is lst:
                c, _ = lst.accept()
                if down is not None:
                    c.close()
                    continue
                down = c
                up = socket.create_connection(("127.0.0.1", a.upstream))
                for x in (down, up):
                    x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                open_ = {down: True, up: True}
                continue
            data = s.recv(65536)
            ts = time.monotonic_ns()
            peer = up if s is down else down
            if not data:
                open_[s] = False
                try:
                    peer.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                continue
            chunks.append((0 if s is down else 1, ts, data))
            try:
                peer.sendall(data)
            except OSError:
                open_[s] = False
    rc = client.wait()
    for s in (down, up, lst):
        s.close()
    with open(a.out, "wb") as f:
        f.write(b"termline-h2-capture 1\n")
        for d, ts, data in chunks:
            f.write(b"%d %d %d\n" % (d, ts, len(data)))
            f.write(data)
            f.write(b"\n")
    n = sum(len(c[2]) for c in chunks if c[0] < 2)
    print("record.py: %s: %d chunks, %d bytes (client exit %d)" % (a.out, len(chunks), n, rc))
    sys.exit(rc)


if __name__ == "__main__":
    main()
