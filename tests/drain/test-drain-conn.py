#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The kernel's count of accepted inbound connections per tracked cgroup
(the "accepted" map of bpf/net.bpf.c, read by daemon/drain/drain-conn.c): a
listener in its own cgroup inside a network namespace; connections from
outside the namespace are counted exactly, with the time of the latest;
connections from the namespace's loopback and from its own address are not
(a sidecar talking to its app); a second poll reports only what is new; a
listener in a cgroup the agent does not track is not counted. Both program
variants: tp_btf and the classic tracepoint. Needs root."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2elib as E  # noqa: E402

DRIVER = os.path.join(E.BUILD, "tests", "drain", "drain-conn-driver")
LISTENER = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(128)
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.close()
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def main():
    E.require_root()
    tag = f"tldc{os.getpid() % 100000}"
    ns, hif = f"tl-{tag}", f"tlh{tag}"
    host_ip, pod_ip = "169.254.253.1", "169.254.253.2"
    cg = os.path.join(E.cgroup2_mount(), f"termline-test-drain-conn-{os.getpid()}")
    cg_other = cg + "-untracked"
    listener = other = driver = None
    try:
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", hif, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(["ip", "addr", "add", f"{host_ip}/30", "dev", hif])
        run(["ip", "link", "set", hif, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", ns, "addr", "add", f"{pod_ip}/30", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        os.mkdir(cg)
        os.mkdir(cg_other)
        cg_id, other_id = os.stat(cg).st_ino, os.stat(cg_other).st_ino

        def start_listener(cgroup, port):
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", LISTENER, str(port)],
                stdout=subprocess.PIPE, text=True,
                preexec_fn=lambda: open(os.path.join(cgroup, "cgroup.procs"), "w").write(str(os.getpid())))
            assert p.stdout.readline().strip() == "listening"
            return p

        # the listener: in the test cgroup and the namespace; another in a
        # cgroup the driver does not track
        listener = start_listener(cg, 18081)
        other = start_listener(cg_other, 18082)
        for variant, probe in (("--tp-btf", "tp_btf"), ("--tracepoint", "tracepoint")):
            args = [DRIVER] + (["--tracepoint"] if variant == "--tracepoint" else []) + [str(cg_id)]
            driver = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            line = driver.stdout.readline().strip()
            assert line == f"ready inet_sock_set_state:{probe}", f"driver {variant}: {line!r}"

            def poll():
                driver.stdin.write("poll\n")
                driver.stdin.flush()
                return json.loads(driver.stdout.readline())

            poll()  # whatever the node accepted before this test
            n = 25
            t0 = time.time()
            for _ in range(n):
                with socket.create_connection((pod_ip, 18081), timeout=5) as s:
                    s.recv(1)
                with socket.create_connection((pod_ip, 18082), timeout=5) as s:
                    s.recv(1)
            t1 = time.time()
            # from the namespace itself: loopback and the Pod's own address
            run(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c",
                 "import socket\n"
                 "for a in ['127.0.0.1', '%s'] * 5:\n"
                 "    socket.create_connection((a, 18081), timeout=5).recv(1)\n" % pod_ip])
            polled = poll()
            got = polled.get(str(cg_id))
            assert got is not None, f"{probe}: no count for the listener's cgroup {cg_id}"
            count, last_ns = got
            assert count == n, f"{probe}: counted {count} connections, made {n} from outside (and 10 from inside)"
            assert t0 - 0.5 <= last_ns / 1e9 <= t1 + 0.5, (probe, t0, last_ns / 1e9, t1)
            assert str(other_id) not in polled, f"{probe}: the untracked cgroup's connections were counted"
            assert str(cg_id) not in poll(), f"{probe}: a second poll reported the same connections again"
            with socket.create_connection((pod_ip, 18081), timeout=5) as s:
                s.recv(1)
            assert poll().get(str(cg_id), [0])[0] == 1, f"{probe}: one more connection, one more count"
            driver.stdin.close()
            driver.wait(10)
            print(f"ok ({probe}): {n} outside connections counted in cgroup {cg_id}, 10 from inside ignored")
    finally:
        for p in (driver, listener, other):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        E.remove_dirs([cg, cg_other], wait=5)


if __name__ == "__main__":
    main()
