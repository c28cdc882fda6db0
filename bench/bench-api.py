#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined against an API double (tests/hostile/hostile-double.py), as
root. Prints figures; asserts nothing (bench/README.md, "API").

  bench-api.py --build BUILD memory [--pods 110,1000] [--rounds 3]
      agent RSS and fds with N Pods of this node listed and watched
  bench-api.py --build BUILD watch [--rate 10000] [--seconds 10] [--pods 110]
      the double sends RATE Pod changes a second (a condition flipping,
      its lastTransitionTime the send time) for SECONDS: agent CPU per
      change, and the lag from the change to the event the agent emits
      (--emit-events), p50/p99/max."""
import argparse
import datetime
import json
import os
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
import e2elib as E  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "hostile"))
import importlib.util  # noqa: E402
_spec = importlib.util.spec_from_file_location("hapi", os.path.join(SRC, "tests", "hostile", "test-hostile-api.py"))
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_agent(work, root, d, name):
    port = E.free_port()
    a = H.agent(work, H.kubeconfig(work, d.port, f"    token: {H.TOKEN}\n"), root, port, name).start()
    E.wait_for(lambda: E.http_get(port, "/readyz")[0] == 200, 60, "/readyz")
    return a, port


def memory(args, work, root):
    print("pods  round  RSS_KiB  peak_KiB  fds")
    for n in [int(x) for x in args.pods.split(",")]:
        for r in range(args.rounds):
            d = H.Double(work, "--own-pods", str(n))
            a, port = run_agent(work, root, d, f"mem-{n}-{r}")
            try:
                time.sleep(5)
                pid = a.proc.pid
                print(f"{n:5d}  {r:5d}  {H.proc_status(pid, 'VmRSS'):7d}  {H.proc_status(pid, 'VmHWM'):8d}"
                      f"  {len(os.listdir(f'/proc/{pid}/fd')):3d}", flush=True)
            finally:
                a.stop()
                d.stop()


def parse_ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def watch(args, work, root):
    d = H.Double(work, "--own-pods", str(args.pods), "--churn-rate", str(args.rate),
                 "--churn-seconds", str(args.seconds), "--churn-delay", "5")
    a, port = run_agent(work, root, d, "watch")
    try:
        pid = a.proc.pid
        E.wait_for(lambda: "churn start" in d.output(), 30, "the churn to start")
        c0, t0 = cpu_s(pid), time.monotonic()
        E.wait_for(lambda: "churn end" in d.output(), args.seconds * 3 + 30, "the churn to end")
        time.sleep(2)
        c1, t1 = cpu_s(pid), time.monotonic()
        sent = int(d.output().split("churn end ")[1].split()[0])
        lags = []
        for e in a.events():
            if e.get("type") != "pod.condition" or "lastTransitionTime" not in e:
                continue
            lags.append(parse_ts(e["time"]) - parse_ts(e["lastTransitionTime"]))
        lags.sort()
        cpu = c1 - c0
        print(f"changes sent {sent} in {args.seconds}s ({sent / args.seconds:.0f}/s), pods {args.pods}")
        print(f"agent CPU {cpu:.2f}s over {t1 - t0:.1f}s wall: {cpu / max(sent, 1) * 1e6:.1f} us per change")
        if lags:
            q = lambda p: lags[min(len(lags) - 1, int(p * len(lags)))] * 1000  # noqa: E731
            print(f"events {len(lags)}; lag ms p50 {q(0.5):.1f} p99 {q(0.99):.1f} max {lags[-1] * 1000:.1f}")
        else:
            print("no pod.condition events seen")
    finally:
        a.stop()
        d.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("what", choices=["memory", "watch"])
    ap.add_argument("--pods", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    E.TERMLINED = os.path.join(os.path.abspath(args.build), "daemon", "termlined")
    work = tempfile.mkdtemp(prefix="termline-bench-api-")
    root = os.path.join(E.cgroup2_mount(), f"termline-bench-api-{os.getpid()}")
    os.makedirs(root, exist_ok=True)
    try:
        if args.what == "memory":
            args.pods = args.pods or "110,1000"
            memory(args, work, root)
        else:
            args.pods = int(args.pods or 110)
            watch(args, work, root)
    finally:
        try:
            os.rmdir(root)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
