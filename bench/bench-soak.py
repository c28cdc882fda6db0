#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""termlined's memory over a long life under Pod churn, as root. Prints
figures; asserts nothing (bench/README.md, "Soak: memory under churn").

  bench-soak.py --build BUILD [--minutes 20] [--concurrent 16]
                [--pod-seconds 4] [--requests 20] [--events 60]
                [--retention-bytes 4Mi] [--sample-seconds 15]

Runs `termlined --no-api` with its own cgroup root, logs dir and state dir,
and a small --retention-bytes so that closed documents are pruned within
the soak. Keeps CONCURRENT short-lived Pods alive at all times, each for
POD-SECONDS: a kubelet-style Pod cgroup with two containers, an "app" in
which BUILD/bench/bench-pod-events makes EVENTS kernel events (signals,
listen+close, fork+exit, an exec) and an "istio-proxy" holding a sleep that
gets SIGTERM at the end, plus an access log of REQUESTS lines with request
IDs in LOGS/<ns>_<pod>_<uid>/istio-proxy/0.log. At the end of its life the
Pod's processes are gone, its cgroups removed and its log directory
deleted: the agent closes its timeline (linger 1 s) and writes the
document.

Every SAMPLE-SECONDS it prints the agent's RSS (and anonymous RSS),
timelines open and closed, and the state dir's bytes and files against
--retention-bytes. At the end: the RSS slope per hour and per closed
timeline after the first pruning (least squares), and the largest state
dir seen. Removes the cgroups, processes and state it made, also on
Ctrl-C (--keep keeps the state dir)."""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
import e2elib as E  # noqa: E402


def size_arg(s):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", s)
    if not m:
        raise argparse.ArgumentTypeError(f"{s}: not a size (4Mi, 512Ki, 1048576)")
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]


def proc_kib(pid, key):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def dir_usage(path):
    """Bytes (of file contents) and regular files below path."""
    total = files = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                st = os.lstat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            total += st.st_size
            files += 1
    return total, files


def slope(xs, ys):
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")


class Pod:
    RUNTIME_PREFIX = "cri-containerd-"

    def __init__(self, root, logs, gen, n, args):
        self.uid = str(uuid.uuid4())
        self.name = f"soak-{n:06d}"
        u = self.uid.replace("-", "_")
        qos = os.path.join(root, "kubepods.slice", "kubepods-burstable.slice")
        self.pod_cg = os.path.join(qos, f"kubepods-burstable-pod{u}.slice")
        self.leaves = [os.path.join(self.pod_cg, f"{self.RUNTIME_PREFIX}{uuid.uuid4().hex}{uuid.uuid4().hex}.scope")
                       for _ in range(2)]
        for d in [self.pod_cg] + self.leaves:
            os.makedirs(d, exist_ok=True)
        self.log_dir = os.path.join(logs, f"default_{self.name}_{self.uid}")
        os.makedirs(os.path.join(self.log_dir, "istio-proxy"))
        app, proxy = self.leaves
        self.app = subprocess.Popen([gen, "--cgroup", app, "--events", str(args.events), "--rate", "500"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs = os.path.join(proxy, "cgroup.procs")
        self.proxy = subprocess.Popen(["sleep", "600"], preexec_fn=lambda: open(procs, "w").write("0"))
        with open(os.path.join(self.log_dir, "istio-proxy", "0.log"), "w", encoding="ascii") as f:
            for i in range(args.requests):
                t = time.time()
                start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
                ts = time.time_ns()
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts // 10**9)) + f".{ts % 10**9:09d}Z"
                f.write(f'{stamp} stdout F [{start}] "GET /orders/{i} HTTP/1.1" 200 - 0 42 3 2 "-" "soak" '
                        f'"{self.name}-{i:04d}-{uuid.uuid4().hex}" "web" "127.0.0.1:8080"\n')
        self.started = time.monotonic()

    def stop(self):
        self.proxy.send_signal(signal.SIGTERM)
        for p in (self.proxy, self.app):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        E.remove_dirs(self.leaves + [self.pod_cg], wait=2)
        shutil.rmtree(self.log_dir, ignore_errors=True)


def metrics(port):
    try:
        status, body, _ = E.http_get(port, "/metrics", timeout=5)
    except OSError:
        return {}
    if status != 200:
        return {}
    out = {}
    for line in body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default ./build)")
    ap.add_argument("--minutes", type=float, default=20, help="length of the churn (default 20)")
    ap.add_argument("--concurrent", type=int, default=16, help="Pods alive at once (default 16)")
    ap.add_argument("--pod-seconds", type=float, default=4, help="each Pod's life (default 4)")
    ap.add_argument("--requests", type=int, default=20, help="access-log lines per Pod (default 20)")
    ap.add_argument("--events", type=int, default=60, help="kernel events made in each app container (default 60)")
    ap.add_argument("--retention-bytes", type=size_arg, default=size_arg("4Mi"),
                    help="the agent's --retention-bytes (default 4Mi)")
    ap.add_argument("--sample-seconds", type=float, default=15, help="sampling period (default 15)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (state, logs, agent log)")
    ap.add_argument("--agent-arg", action="append", default=[], help="one more termlined argument (repeatable)")
    ap.add_argument("--termlined", default="", help="the agent to run (default BUILD/daemon/termlined), "
                    "e.g. an older build to compare")
    ap.add_argument("--wrap", default="",
                    help="run termlined under this command, e.g. \"valgrind --tool=massif "
                         "--massif-out-file=/tmp/massif.out\" (RSS is then the wrapper's)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (BPF, cgroups)")
        return 77
    build = os.path.abspath(args.build)
    os.environ["TERMLINE_BUILD_ROOT"] = build
    E.TERMLINED = os.path.abspath(args.termlined) if args.termlined else os.path.join(build, "daemon", "termlined")
    gen = os.path.join(build, "bench", "bench-pod-events")
    for exe in (E.TERMLINED, gen):
        if not os.access(exe, os.X_OK):
            print(f"bench-soak: {exe} is not built (ninja -C {build})", file=sys.stderr)
            return 2

    work = tempfile.mkdtemp(prefix="termline-soak-")
    state, logs = os.path.join(work, "state"), os.path.join(work, "pods")
    os.makedirs(logs)
    root = os.path.join(E.cgroup2_mount(), f"termline-soak-{os.getpid()}")
    os.makedirs(root, exist_ok=True)
    port = E.free_port()
    agent = E.Agent(work, ["--no-api", "--state-dir", state, "--listen", f"127.0.0.1:{port}", "--linger", "1",
                           "--cgroup-root", root, "--pod-logs-dir", logs,
                           "--retention-bytes", str(args.retention_bytes)] + args.agent_arg)
    pods, made, samples = [], 0, []
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    try:
        # not E.Agent.start: --emit-events writes every event to a file,
        # which is not what a node runs
        agent.log = open(agent.log_path, "ab")
        agent.proc = subprocess.Popen(shlex.split(args.wrap) + [E.TERMLINED] + agent.args, stdout=agent.log,
                                      stderr=agent.log)
        E.wait_for(lambda: agent.proc.poll() is not None or b"running on node" in agent.read_log(), 120,
                   "termlined to start")
        if agent.proc.poll() is not None:
            print(f"bench-soak: termlined exited: {agent.read_log().decode(errors='replace')}", file=sys.stderr)
            return 1
        pid = agent.proc.pid
        print(f"termlined pid {pid}: --no-api, --retention-bytes {args.retention_bytes}, --linger 1; "
              f"{args.concurrent} Pods alive, {args.pod_seconds:g} s each "
              f"(~{args.concurrent / args.pod_seconds * 3600:.0f} Pods/h), {args.requests} requests and "
              f"~{args.events} kernel events each; work dir {work}", flush=True)
        print("   min  made  closed  open   RSS_KiB  anon_KiB  state_KiB  files  docs", flush=True)
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        next_sample = t0
        while not stopping:
            now = time.monotonic()
            if agent.proc.poll() is not None:
                print(f"bench-soak: termlined exited with {agent.proc.returncode}", file=sys.stderr)
                return 1
            for p in [p for p in pods if now - p.started >= args.pod_seconds]:
                p.stop()
                pods.remove(p)
            if now < end:
                while len(pods) < args.concurrent:
                    made += 1
                    pods.append(Pod(root, logs, gen, made, args))
            elif not pods:
                break
            if now >= next_sample:
                m = metrics(port)
                total, files = dir_usage(state)
                docs = sum(len([n for n in ns if n.endswith(".json")])
                           for _, _, ns in os.walk(os.path.join(state, "timelines")))
                s = {"t": now - t0, "made": made, "closed": m.get("termline_timelines_closed_total", 0),
                     "open": m.get("termline_timelines_open", 0), "rss": proc_kib(pid, "VmRSS"),
                     "anon": proc_kib(pid, "RssAnon"), "bytes": total, "files": files, "docs": docs}
                samples.append(s)
                print(f"{s['t'] / 60:6.1f}  {made:4d}  {s['closed']:6.0f}  {s['open']:4.0f}  {s['rss']:8d}  "
                      f"{s['anon']:8d}  {total / 1024:9.0f}  {files:5d}  {docs:4d}", flush=True)
                next_sample += args.sample_seconds
            time.sleep(0.05)
        # the last Pods' timelines close after the linger
        time.sleep(3)
        m = metrics(port)
        total, files = dir_usage(state)
        print(f"end: {made} Pods made, {m.get('termline_timelines_closed_total', 0):.0f} timelines closed, "
              f"{m.get('termline_timelines_open', 0):.0f} open, RSS {proc_kib(pid, 'VmRSS')} KiB "
              f"(peak {proc_kib(pid, 'VmHWM')} KiB), state dir {total / 1024:.0f} KiB in {files} files", flush=True)
        pruned = [s for s in samples if s["closed"] > s["docs"]]
        if len(pruned) >= 3:
            first = pruned[0]
            xs_h = [s["t"] / 3600 for s in pruned]
            rss = [s["rss"] for s in pruned]
            anon = [s["anon"] for s in pruned]
            closed = [s["closed"] for s in pruned]
            print(f"after the first pruning (at {first['t'] / 60:.1f} min, {first['closed']:.0f} closed; "
                  f"{len(pruned)} samples over {(pruned[-1]['t'] - first['t']) / 60:.1f} min, "
                  f"{closed[-1] - closed[0]:.0f} timelines closed):")
            print(f"  RSS slope {slope(xs_h, rss) / 1024:+.2f} MiB/h, anonymous {slope(xs_h, anon) / 1024:+.2f} MiB/h; "
                  f"per closed timeline {slope(closed, rss) * 1024:+.0f} B (anonymous "
                  f"{slope(closed, anon) * 1024:+.0f} B); RSS {min(rss)}-{max(rss)} KiB")
        else:
            print("no pruning seen: run longer or lower --retention-bytes")
        biggest = max(samples, key=lambda s: s["bytes"]) if samples else None
        if biggest:
            print(f"state dir: at most {biggest['bytes'] / 1024:.0f} KiB in {biggest['files']} files "
                  f"(--retention-bytes {args.retention_bytes / 1024:.0f} KiB), "
                  f"{max(s['files'] for s in samples)} files at most", flush=True)
        return 0
    finally:
        for p in pods:
            p.stop()
        agent.stop()
        E.remove_dirs(sorted((d for d, _, _ in os.walk(root)), key=len, reverse=True), wait=2)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
