#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined against an API double (tests/hostile/hostile-double.py), as
root. Prints figures; asserts nothing (bench/README.md, "API").

  bench-api.py --build BUILD memory [--pods 110,1000] [--rounds 3]
      agent RSS and fds with N Pods of this node listed and watched
  bench-api.py --build BUILD memory-events [--pods 110,1000] [--events 10000]
               [--rounds 1] [--parallel 2] [--rate 20000]
      the same, after each Pod's container made EVENTS kernel events that
      the agent (default settings, no --emit-events) holds in the Pod's
      open timeline: each Pod's container cgroup is real (kubepods/
      besteffort/pod<uid>/<container id> below the agent's --cgroup-root,
      the ids the double serves) and BUILD/bench/bench-pod-events runs in
      it, PARALLEL Pods at a time, each paced at RATE events/s (a mix of
      signals, listen+close, fork+exit and exec; bench-pod-events.c).
      Prints RSS, peak, fds and the events the agent holds, ring-buffer
      drops and the agent's CPU per event. Removes the cgroups, processes
      and state it made, also on Ctrl-C.
  bench-api.py --build BUILD watch [--rate 10000] [--seconds 10] [--pods 110]
      the double sends RATE Pod changes a second (a condition flipping,
      its lastTransitionTime the send time) for SECONDS: agent CPU per
      change, and the lag from the change to the event the agent emits
      (--emit-events), p50/p99/max."""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
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
# the double's Pods (uid, container ids), to make their cgroups
_dspec = importlib.util.spec_from_file_location("hdouble", os.path.join(SRC, "tests", "hostile", "hostile-double.py"))
HD = importlib.util.module_from_spec(_dspec)
_dspec.loader.exec_module(HD)


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


# ---- memory-events: each Pod's container makes kernel events ----

class PodCgroups:
    """kubepods/besteffort/pod<uid>/<container id> below root for the
    double's Pods 0..n-1 (cgroupfs driver layout, docs/architecture.md,
    "Attribution by cgroup"): termlined maps the leaf's id to the Pod by
    the containerID the double serves."""

    def __init__(self, root, n):
        self.root = root
        self.leaves = []
        base = os.path.join(root, "kubepods", "besteffort")
        os.makedirs(base, exist_ok=True)
        for i in range(n):
            p = HD.pod(i, "node-a")
            cid = p["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
            leaf = os.path.join(base, "pod" + p["metadata"]["uid"], cid)
            os.makedirs(leaf)
            self.leaves.append(leaf)

    def kill_all(self):
        """SIGKILL to whatever is still in the Pods' cgroups."""
        for leaf in self.leaves:
            try:
                with open(os.path.join(leaf, "cgroup.procs"), encoding="ascii") as f:
                    pids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self):
        """rmdir bottom-up (a cgroup's control files go with it); retried
        while the last tasks are being released."""
        self.kill_all()
        top = os.path.join(self.root, "kubepods")
        if not os.path.isdir(top):
            return
        E.remove_dirs([d for d, _, _ in os.walk(top, topdown=False)], wait=5)


def start_plain_agent(work, root, d, name):
    """termlined as deployed (default settings, no --emit-events), with its
    own state dir, a loopback listener and the test cgroup root."""
    port = E.free_port()
    state = os.path.join(work, f"state-{name}")
    log_path = os.path.join(work, f"{name}.log")
    log = open(log_path, "ab")
    kc = H.kubeconfig(work, d.port, f"    token: {H.TOKEN}\n")
    proc = subprocess.Popen([E.TERMLINED, "--kubeconfig", kc, "--node", "node-a", "--state-dir", state,
                             "--listen", f"127.0.0.1:{port}", "--cgroup-root", root],
                            stdout=log, stderr=log)
    log.close()

    def read_log():
        with open(log_path, "rb") as f:
            return f.read().decode(errors="replace")
    def ready():
        if proc.poll() is not None:
            return True
        try:
            return E.http_get(port, "/readyz")[0] == 200
        except OSError:
            return False
    try:
        E.wait_for(ready, 90, "/readyz")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.poll() is not None:
        raise AssertionError(f"termlined exited {proc.returncode}:\n{read_log()[-3000:]}")
    return proc, port, state, read_log


def stop_agent(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def timelines(port):
    return E.http_json(port, "/v1/timelines?detail=true")["timelines"]


def metrics(port):
    status, body, _ = E.http_get(port, "/metrics")
    assert status == 200, status
    out = {}
    for (name, _), v in E.parse_prometheus(body.decode()).items():
        out[name] = out.get(name, 0) + v
    return out


def smaps_rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def smaps_top(pid, n):
    """The n mappings with the most resident memory: (KiB, what)."""
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                cur = [0, parts[5] if len(parts) > 5 else "[anon]", parts[1]]
                maps.append(cur)
            elif cur is not None and parts and parts[0] == "Rss:":
                cur[0] = int(parts[1])
    maps.sort(key=lambda m: -m[0])
    return [(kib, f"{what} ({perm})") for kib, what, perm in maps[:n]]


def dir_bytes(d):
    n = 0
    for dp, _, files in os.walk(d):
        for f in files:
            try:
                n += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return n


def wait_stable(fn, quiet_s, timeout_s):
    """Polls fn() until its value has not changed for quiet_s; returns it."""
    deadline = time.monotonic() + timeout_s
    last, since = fn(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        v = fn()
        if v != last:
            last, since = v, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return v
    return last


def run_generators(args, cg, port, gen):
    """bench-pod-events in every leaf, args.parallel at a time. Returns the
    events they report and the largest ring-buffer drop count seen."""
    pending = list(enumerate(cg.leaves))
    running, made, failed = [], 0, 0
    t0, last_print = time.monotonic(), 0.0
    try:
        while pending or running:
            while pending and len(running) < args.parallel:
                i, leaf = pending.pop(0)
                cmd = [gen, "--cgroup", leaf, "--events", str(args.events)]
                if args.rate:
                    cmd += ["--rate", str(args.rate)]
                running.append((i, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                    text=True)))
            time.sleep(0.02)
            still = []
            for i, p in running:
                if p.poll() is None:
                    still.append((i, p))
                    continue
                out, err = p.communicate()
                if p.returncode != 0:
                    failed += 1
                    print(f"pod {i}: bench-pod-events exited {p.returncode}: {err.strip()}", flush=True)
                else:
                    made += json.loads(out)["events"]
            running = still
            now = time.monotonic()
            if now - last_print > 30:
                last_print = now
                done = len(cg.leaves) - len(pending) - len(running)
                print(f"  {done}/{len(cg.leaves)} Pods' generators done after {now - t0:.0f}s, "
                      f"ring drops so far {metrics(port).get('termline_ringbuf_dropped_total', 0):.0f}",
                      flush=True)
    finally:
        for _, p in running:
            if p.poll() is None:
                p.kill()
            p.wait()
    return made, failed, time.monotonic() - t0


def memory_events(args, work, root):
    gen = os.path.join(os.path.abspath(args.build), "bench", "bench-pod-events")
    if not os.access(gen, os.X_OK):
        raise SystemExit(f"{gen} is missing: build it (ninja -C BUILD)")
    rows = []
    for n in [int(x) for x in args.pods.split(",")]:
        for r in range(args.rounds):
            name = f"memev-{n}-{r}"
            cg = d = proc = None
            try:
                cg = PodCgroups(root, n)
                d = H.Double(work, "--own-pods", str(n))
                proc, port, state, read_log = start_plain_agent(work, root, d, name)
                pid = proc.pid
                E.wait_for(lambda: len([t for t in timelines(port) if t["state"] == "open"]) >= n, 120,
                           f"{n} open timelines")
                E.wait_for(lambda: metrics(port).get("termline_cgroups_tracked", 0) >= 2 * n, 60,
                           f"the {n} Pods' cgroups tracked")
                time.sleep(3)
                rss0 = H.proc_status(pid, "VmRSS")
                held0 = sum(t["events"] for t in timelines(port))
                m0, cpu0 = metrics(port), cpu_s(pid)
                print(f"{n} Pods listed, cgroups tracked: RSS {rss0} KiB, {held0} events held; "
                      f"generating {args.events} events per Pod, {args.parallel} at a time"
                      f"{f', {args.rate}/s each' if args.rate else ''}", flush=True)
                made, failed, gen_s = run_generators(args, cg, port, gen)
                # the agent drains its ring and appends: wait until the count settles
                wait_stable(lambda: sum(t["events"] for t in timelines(port)), 5, 600)
                time.sleep(2)
                cpu1 = cpu_s(pid)
                tls = timelines(port)
                m1 = metrics(port)
                sm = smaps_rollup(pid)
                row = {
                    "pods": n, "round": r, "made": made, "failed": failed, "gen_s": gen_s,
                    "held": sum(t["events"] for t in tls),
                    "held_min": min((t["events"] for t in tls), default=0),
                    "held_max": max((t["events"] for t in tls), default=0),
                    "open": sum(1 for t in tls if t["state"] == "open"),
                    "incomplete": sum(1 for t in tls if not t.get("complete", True)),
                    "rss0": rss0, "held0": held0, "rss": H.proc_status(pid, "VmRSS"), "hwm": H.proc_status(pid, "VmHWM"),
                    "anon": sm.get("Rss", 0) - sm.get("Shared_Clean", 0) - sm.get("Shared_Dirty", 0),
                    "rss_anon": H.proc_status(pid, "RssAnon"), "rss_file": H.proc_status(pid, "RssFile"),
                    "pss": sm.get("Pss", 0),
                    "fds": len(os.listdir(f"/proc/{pid}/fd")),
                    "drops": m1.get("termline_ringbuf_dropped_total", 0) - m0.get("termline_ringbuf_dropped_total", 0),
                    "unattributed": m1.get("termline_events_unattributed_total", 0)
                    - m0.get("termline_events_unattributed_total", 0),
                    "duplicates": m1.get("termline_timeline_duplicate_events_total", 0)
                    - m0.get("termline_timeline_duplicate_events_total", 0),
                    "late": m1.get("termline_timeline_late_events_total", 0)
                    - m0.get("termline_timeline_late_events_total", 0),
                    "cpu": cpu1 - cpu0, "journal": dir_bytes(state),
                }
                rows.append(row)
                per = (row["rss"] - rss0) * 1024 / max(row["held"] - held0, 1)
                print(f"{n} Pods x {args.events} events: made {made} ({failed} generators failed) in {gen_s:.0f}s; "
                      f"held {row['held']} (per Pod {row['held_min']}..{row['held_max']}, {row['open']} open, "
                      f"{row['incomplete']} incomplete); ring drops {row['drops']:.0f}, unattributed "
                      f"{row['unattributed']:.0f}, dropped as duplicates {row['duplicates']:.0f}, "
                      f"late {row['late']:.0f}", flush=True)
                print(f"  VmRSS {row['rss']} KiB (RssAnon {row['rss_anon']}, RssFile {row['rss_file']}; Pss {row['pss']}), "
                      f"VmHWM {row['hwm']} KiB, fds {row['fds']}; RSS before the events {rss0} KiB, "
                      f"{per:.1f} B per held event; agent CPU {row['cpu']:.1f}s, "
                      f"{row['cpu'] / max(row['held'] - held0, 1) * 1e6:.2f} us per event; "
                      f"state dir {row['journal'] / 1e6:.1f} MB", flush=True)
                if args.smaps:
                    for kib, what in smaps_top(pid, args.smaps):
                        print(f"    {kib:8d} KiB  {what}")
            finally:
                if proc is not None:
                    stop_agent(proc)
                if d is not None:
                    d.stop()
                if cg is not None:
                    cg.remove()
                if proc is not None:
                    shutil.rmtree(state, ignore_errors=True)
    print()
    print("| Pods | events made | held | ring drops | VmRSS | Pss | VmHWM | fds | agent CPU per event |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['pods']:,} | {row['made']:,} | {row['held']:,} | {row['drops']:,.0f} "
              f"| {row['rss'] / 1024:.1f} MiB | {row['pss'] / 1024:.1f} MiB | {row['hwm'] / 1024:.1f} MiB | {row['fds']} "
              f"| {row['cpu'] / max(row['held'] - row['held0'], 1) * 1e6:.2f} us |")


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
    ap.add_argument("what", choices=["memory", "memory-events", "watch"])
    ap.add_argument("--pods", default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--rate", type=int, default=None,
                    help="watch: changes/s (10000); memory-events: events/s per Pod's generator (20000, 0 unpaced)")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--events", type=int, default=10000, help="memory-events: events per Pod")
    ap.add_argument("--parallel", type=int, default=2, help="memory-events: Pods generating at once")
    ap.add_argument("--smaps", type=int, default=0, metavar="N",
                    help="memory-events: also print the agent's N largest mappings by RSS")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    E.TERMLINED = os.path.join(os.path.abspath(args.build), "daemon", "termlined")
    # SIGINT (even when started with it ignored, as a shell's background
    # job is), SIGTERM and SIGHUP unwind through the clean-ups below
    def interrupted(signo, _frame):
        raise KeyboardInterrupt(f"signal {signo}")
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    work = tempfile.mkdtemp(prefix="termline-bench-api-")
    root = os.path.join(E.cgroup2_mount(), f"termline-bench-api-{os.getpid()}")
    os.makedirs(root, exist_ok=True)
    try:
        if args.what == "memory":
            args.pods = args.pods or "110,1000"
            args.rounds = args.rounds or 3
            memory(args, work, root)
        elif args.what == "memory-events":
            args.pods = args.pods or "110,1000"
            args.rounds = args.rounds or 1
            args.rate = 20000 if args.rate is None else args.rate
            memory_events(args, work, root)
        else:
            args.pods = int(args.pods or 110)
            args.rate = args.rate or 10000
            watch(args, work, root)
    except KeyboardInterrupt:
        print("interrupted: cleaned up", file=sys.stderr)
        return 130
    finally:
        try:
            os.rmdir(root)
        except OSError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
