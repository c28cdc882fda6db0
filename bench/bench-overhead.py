#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What the whole agent costs a server on its node: nginx (Debian's
nginx-light, one worker) in a Pod's container cgroup under wrk, termlined
off (A) and on (B), interleaved A B B A per round. Each run starts its own
nginx in the cgroup it runs in (so its sockets are that cgroup's, as a
container's are) and warms it with a 1 s wrk run. Prints figures; asserts
nothing (bench/README.md, "overhead"). Needs root, nginx and wrk.
--protocol h2: cleartext HTTP/2 instead, nghttpd (nghttp2-server, one
thread) under h2load (nghttp2-client), --streams streams at a time on each
of --connections connections (keep-alive only; h2load reports no
percentiles: the latency figure is its mean time per request).

  bench-overhead.py --build BUILD [--protocol http1|h2] [--scenario steady,window]
                    [--mode keep-alive,close] [--rounds 2] [--seconds 5]
                    [--connections 16] [--streams 10]

Scenarios (termlined --no-api, its own state dir and loopback listener,
--cgroup-root a directory of its own below the cgroup2 mount):
  steady  the agent as it runs most of the time: the Pod was running
          before the agent started, so it is in no capture window and
          --http-capture windows (the default) attaches nothing; the
          kernel-event programs (signals, exec, exit, listeners, resets)
          are loaded.
  window  the Pod's cgroup is made after the agent started: the Pod is in
          its start-up window (120 s without an API server), the HTTP
          capture program is attached and every request is recorded in
          full, as during a termination.

Per scenario and mode (keep-alive, or close: a new connection per request)
it prints the medians of each side: requests/s and the ratio on/off, wrk's
p99 latency and what the agent added, nginx's CPU per request (its
cgroup's cpu.stat usage_usec) and what the agent added, the agent's CPU per
request (all its threads, /proc/PID/task/*/schedstat, during the wrk run
only), the run time of its BPF programs per request (their run_time_ns in
/proc/PID/fdinfo, from one more run with the agent per round with
kernel.bpf_stats_enabled on: the stats' own clock reads would otherwise
be in nginx's figures; CPU the agent adds to nginx, wrk and the kernel,
measured without the noise of throughput), requests the agent captured
(termline_http_kernel_requests_total) and ring-buffer drops. Throughput
and nginx CPU are paired within each A B B A round; a second line says
how far apart the two runs of one side (A A, B B) of a round are in
throughput: the machine's own noise, against which a ratio of a few per
cent cannot be told from 100 %. wrk runs in this process's cgroup,
untracked; nginx is pinned to CPU 0, wrk to CPU 1. Environment:
BENCH_AGENT_PREFIX, a command the agent is started under (one that execs
it: taskset, chrt, nice); BENCH_AGENT_ARGS, more agent flags."""
import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
import e2elib as E  # noqa: E402

NGINX_CONF = """daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
error_log {d}/error.log; events {{ worker_connections 1024; }}
http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d};
  fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  keepalive_requests 1000000;{gzip}
  server {{ listen 127.0.0.1:{port}; root {d}/www; }} }}
"""


PIN = False
# A command the agent is started under, from the environment (e.g.
# BENCH_AGENT_PREFIX="taskset -c 1"): where the agent runs against the
# server, without changing the agent. It must exec the agent (taskset,
# chrt, nice do): the agent's CPU is read from the process started.
AGENT_PREFIX = shlex.split(os.environ.get("BENCH_AGENT_PREFIX", ""))
# More agent flags, from the environment (e.g. BENCH_AGENT_ARGS="--http-prefix-bytes 64").
AGENT_ARGS = shlex.split(os.environ.get("BENCH_AGENT_ARGS", ""))


def die(msg):
    print(f"bench-overhead: {msg}", file=sys.stderr)
    sys.exit(1)


def write(path, s):
    with open(path, "w", encoding="ascii") as f:
        f.write(s)


def usage_usec(cg):
    with open(os.path.join(cg, "cpu.stat"), encoding="ascii") as f:
        for line in f:
            k, v = line.split()
            if k == "usage_usec":
                return int(v)
    die(f"{cg}/cpu.stat: no usage_usec")


def task_ns(pid):
    """CPU time of every thread of pid, in ns (schedstat's first field)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def bpf_run_ns(pid):
    """(run_time_ns, run_cnt, {prog_id: (run_time_ns, run_cnt)}) summed over
    the BPF programs pid holds (each once, by prog_id; counted while
    kernel.bpf_stats_enabled is 1)."""
    by_id, total, runs = {}, 0, 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
                kv = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        pid_ = kv.get("prog_id", "").strip()
        if pid_ and "run_time_ns" in kv and pid_ not in by_id:
            by_id[pid_] = (int(kv["run_time_ns"]), int(kv.get("run_cnt", 0)))
            total += by_id[pid_][0]
            runs += by_id[pid_][1]
    return total, runs, by_id


def prog_names():
    """prog_id -> name of every loaded BPF program (bpftool)."""
    r = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    try:
        return {str(p["id"]): p.get("name", "?") for p in json.loads(r.stdout)}
    except (ValueError, KeyError, TypeError):
        return {}


def per_program(b0, b1, reqs):
    """The programs that ran during a run: "name ns/req in runs/req", the
    dearest first."""
    names = prog_names()
    rows = []
    for k, (ns, n) in b1[2].items():
        ns0, n0 = b0[2].get(k, (0, 0))
        if n > n0 and (ns - ns0) / 1000 / reqs >= 0.001:
            rows.append((ns - ns0, f"{names.get(k, k)} {(ns - ns0) / 1000 / reqs:.3f} us in {(n - n0) / reqs:.1f}"))
    return ", ".join(r for _, r in sorted(rows, reverse=True))


def parse_latency(s):
    for unit, mul in (("us", 1e-3), ("ms", 1.0), ("s", 1000.0)):
        if s.endswith(unit):
            return float(s[:-len(unit)]) * mul
    return float(s)


def run_wrk(port, seconds, conns, close_each, gzip):
    cmd = (["taskset", "-c", "1"] if PIN else []) + ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency",
           "-H", "x-request-id: bench-request-0123456789"]
    if close_each:
        cmd += ["-H", "Connection: close"]
    if gzip:
        cmd += ["-H", "Accept-Encoding: gzip"]
    cmd.append(f"http://127.0.0.1:{port}/index.html")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    rps = reqs = p99 = None
    for line in r.stdout.splitlines():
        w = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(w[1])
        elif len(w) > 2 and w[1] == "requests" and w[2] == "in":
            reqs = int(w[0])
        elif len(w) == 2 and w[0] == "99%":
            p99 = parse_latency(w[1])
    if rps is None or not reqs or p99 is None:
        die(f"wrk failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
    return rps, reqs, p99


def run_h2load(port, seconds, conns, streams):
    """h2load -t1 against nghttpd: (req/s, requests, mean ms per request)."""
    cmd = (["taskset", "-c", "1"] if PIN else []) + [
        "h2load", "-t1", f"-c{conns}", f"-m{streams}", f"-D{seconds}", "-H",
        "x-request-id: bench-request-0123456789", f"http://127.0.0.1:{port}/index.html"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    rps = reqs = mean = None
    for line in r.stdout.splitlines():
        w = line.split()
        if line.startswith("finished in"):
            rps = float(w[3])
        elif line.startswith("requests:"):
            reqs = int(line.split(",")[3].split()[0])  # succeeded
        elif line.startswith("time for request:"):
            mean = parse_latency(w[5])
    if rps is None or not reqs or mean is None or r.returncode != 0:
        die(f"h2load failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
    return rps, reqs, mean


def stop_proc(proc, timeout):
    """SIGTERM, then SIGKILL after timeout seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Pod:
    """kubepods/besteffort/pod<uid>/<container id> below root (cgroupfs
    driver layout, docs/architecture.md, "Attribution by cgroup")."""

    def __init__(self, root):
        self.pod = os.path.join(root, "kubepods", "besteffort", f"pod{uuid.uuid4()}")
        self.leaf = os.path.join(self.pod, uuid.uuid4().hex + uuid.uuid4().hex)
        os.makedirs(self.leaf)

    def remove(self):
        """Removes it (what ran in it has exited)."""
        E.remove_dirs((self.leaf, self.pod), wait=5)


class Nginx:
    """One nginx started in cgroup leaf, as a container's process is: its
    listener, and so every socket it accepts, belongs to that cgroup (a
    process moved into a Pod after it made its sockets would leave them in
    the cgroup it came from). Answering (and warmed up by a 1 s wrk run)
    when made."""

    def __init__(self, work, port, leaf):
        self.proc = subprocess.Popen((["taskset", "-c", "0"] if PIN else []) +
                                     ["nginx", "-c", os.path.join(work, "nginx.conf"), "-e", "/dev/null"],
                                     preexec_fn=lambda: write(os.path.join(leaf, "cgroup.procs"), str(os.getpid())))
        try:
            E.wait_for(lambda: subprocess.run(["wrk", "-t1", "-c1", "-d1s", f"http://127.0.0.1:{port}/index.html"],
                                              capture_output=True).returncode == 0, 20, "nginx answering")
        except BaseException:
            self.stop()
            raise

    def stop(self):
        stop_proc(self.proc, 10)


class Nghttpd:
    """One nghttpd (cleartext HTTP/2, one thread) started in cgroup leaf,
    as Nginx above; warmed by a short h2load run."""

    def __init__(self, work, port, leaf):
        self.proc = subprocess.Popen((["taskset", "-c", "0"] if PIN else []) +
                                     ["nghttpd", "--no-tls", "-d", os.path.join(work, "www"), str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=lambda: write(os.path.join(leaf, "cgroup.procs"), str(os.getpid())))
        try:
            E.wait_for(lambda: subprocess.run(["h2load", "-n", "200", "-c", "1", "-m", "10",
                                               f"http://127.0.0.1:{port}/index.html"],
                                              capture_output=True).returncode == 0, 20, "nghttpd answering")
        except BaseException:
            self.stop()
            raise

    def stop(self):
        stop_proc(self.proc, 10)


class Agent:
    def __init__(self, build, work, root, n):
        self.port = E.free_port()
        self.log_path = os.path.join(work, f"agent-{n}.log")
        state = os.path.join(work, f"state-{n}")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                AGENT_PREFIX + [os.path.join(build, "daemon", "termlined"), "--no-api", "--state-dir", state,
                                "--listen", f"127.0.0.1:{self.port}", "--cgroup-root", root] + AGENT_ARGS,
                stdout=log, stderr=log)

        def ready():
            if self.proc.poll() is not None:
                die(f"termlined exited {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                return E.http_get(self.port, "/readyz")[0] == 200
            except OSError:
                return False
        E.wait_for(ready, 90, "termlined /readyz")

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def capture(self):
        """"attached", "detached" or None: the agent's last word on it."""
        state = None
        for line in self.log().splitlines():
            if "HTTP capture: attached" in line:
                state = "attached"
            elif "HTTP capture: detached" in line:
                state = "detached"
        return state

    def metric(self, name):
        _, body, _ = E.http_get(self.port, "/metrics")
        return sum(v for _, v in E.metric_series(E.parse_prometheus(body.decode()), name))

    def stop(self):
        stop_proc(self.proc, 60)


STATS = "/proc/sys/kernel/bpf_stats_enabled"


def one_run(args, scenario, mode, with_agent, root, work, n, steady_pod, stats=False):
    """One wrk run against a fresh nginx; returns a dict of its figures.
    stats: with kernel.bpf_stats_enabled on, for the programs' run time
    (which then also costs every program run two clock reads)."""
    agent = pod = ng = None
    write(STATS, "1" if stats else "0")
    try:
        if with_agent:
            if scenario == "window":
                agent = Agent(args.build, work, root, n)
                pod = Pod(root)
                ng = Server(work, args.port, pod.leaf)
                E.wait_for(lambda: agent.capture() == "attached", 30, "the HTTP capture attached")
            else:
                ng = Server(work, args.port, steady_pod.leaf)
                agent = Agent(args.build, work, root, n)
                time.sleep(1)
                if agent.capture() == "attached":
                    die("steady: the capture program is attached with no Pod in a window")
            time.sleep(0.5)
            kreq0, drop0 = agent.metric("termline_http_kernel_requests_total"), agent.metric("termline_http_ring_dropped")
            a0, b0 = task_ns(agent.proc.pid), bpf_run_ns(agent.proc.pid)
        else:
            ng = Server(work, args.port, steady_pod.leaf)
        u0 = usage_usec(steady_pod.leaf if pod is None else pod.leaf)
        if args.protocol == "h2":
            rps, reqs, p99 = run_h2load(args.port, args.seconds, args.connections, args.streams)
        else:
            rps, reqs, p99 = run_wrk(args.port, args.seconds, args.connections, mode == "close", args.gzip)
        u1 = usage_usec(steady_pod.leaf if pod is None else pod.leaf)
        out = {"rps": rps, "reqs": reqs, "p99": p99, "nginx_us": (u1 - u0) / reqs}
        if agent:
            out["agent_us"] = (task_ns(agent.proc.pid) - a0) / 1000 / reqs
            b1 = bpf_run_ns(agent.proc.pid)
            write(STATS, "0")
            out["bpf_us"] = (b1[0] - b0[0]) / 1000 / reqs
            out["bpf_runs"] = (b1[1] - b0[1]) / reqs
            out["bpf_by_prog"] = per_program(b0, b1, reqs)
            time.sleep(0.3)  # the agent's 25 ms ring poll and 1 s housekeeping
            out["captured"] = agent.metric("termline_http_kernel_requests_total") - kreq0
            out["drops"] = agent.metric("termline_http_ring_dropped") - drop0
        return out
    finally:
        if ng:
            ng.stop()
        if agent:
            agent.stop()
        if pod:
            pod.remove()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="environment: BENCH_AGENT_PREFIX, a command the agent is started under "
                                        "(one that execs it: taskset, chrt, nice); BENCH_AGENT_ARGS, more agent flags",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"), help="meson build directory (default ./build)")
    ap.add_argument("--scenario", default="steady,window", help="steady, window or both (default both)")
    ap.add_argument("--mode", help="keep-alive, close or both (default both; h2: keep-alive only)")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A rounds (default 2)")
    ap.add_argument("--seconds", type=int, default=5, help="length of each wrk run (default 5)")
    ap.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    ap.add_argument("--body-bytes", type=int, default=0,
                    help="size of the page served (default and anything up to 41: a 41-byte page); a larger "
                         "page makes each request cost the server more, the capture's cost per request "
                         "stays the same")
    ap.add_argument("--gzip", type=int, default=0, metavar="LEVEL",
                    help="nginx compresses the page at this gzip level, 1-9 (default 0: off): work per "
                         "request such as a dynamic server's, for the same capture cost")
    ap.add_argument("--protocol", default="http1", choices=["http1", "h2"],
                    help="http1: nginx under wrk (default); h2: nghttpd under h2load (cleartext HTTP/2)")
    ap.add_argument("--streams", type=int, default=10,
                    help="h2: streams at a time on each connection (h2load -m; default 10)")
    ap.add_argument("--no-pin", action="store_true",
                    help="let the scheduler place nginx and wrk (default: nginx on CPU 0, wrk on CPU 1)")
    args = ap.parse_args()
    global PIN, Server
    PIN = not args.no_pin and os.cpu_count() and os.cpu_count() >= 2
    if os.geteuid() != 0:
        print("bench-overhead: needs root (BPF, cgroups)", file=sys.stderr)
        sys.exit(77)
    Server = Nghttpd if args.protocol == "h2" else Nginx
    for tool in (("nghttpd", "h2load") if args.protocol == "h2" else ("nginx", "wrk")):
        if not shutil.which(tool):
            die(f"{tool} not found (tools/dev deps installs it)")
    if not os.access(os.path.join(args.build, "daemon", "termlined"), os.X_OK):
        die(f"{args.build}/daemon/termlined: not built")
    scenarios = [s for s in args.scenario.split(",") if s]
    modes = [m for m in (args.mode or ("keep-alive" if args.protocol == "h2" else "keep-alive,close")).split(",") if m]
    for s in scenarios:
        if s not in ("steady", "window"):
            die(f"--scenario {s}: not steady or window")
    for m in modes:
        if m not in ("keep-alive", "close"):
            die(f"--mode {m}: not keep-alive or close")
    if args.protocol == "h2" and modes != ["keep-alive"]:
        die("--protocol h2: --mode keep-alive only (h2load keeps its connections)")
    if args.protocol == "h2" and (args.gzip or not 1 <= args.streams <= 1000):
        die("--protocol h2: no --gzip; --streams between 1 and 1000")
    if args.body_bytes < 0 or args.body_bytes > 64 << 20:
        die(f"--body-bytes {args.body_bytes}: not between 0 and 64 MiB")
    if not 0 <= args.gzip <= 9:
        die(f"--gzip {args.gzip}: not a level between 0 (off) and 9")

    # The programs' run time per request (BPF_STATS_RUN_TIME) is what the
    # agent's kernel side adds, which the throughput's noise hides; but the
    # stats cost every program run two clock reads of their own, which
    # nginx would pay too. So the paired A B B A runs have them off, and
    # one more run with the agent per round has them on, for the
    # programs' figures only. Restored at the end.
    with open(STATS, encoding="ascii") as f:
        stats_was = f.read().strip()
    # SIGTERM cleans up as Ctrl-C does (the finally clauses below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = tempfile.mkdtemp(prefix="termline-bench-overhead-")
    root = os.path.join(E.cgroup2_mount(), f"termline-bench-overhead-{os.getpid()}")
    steady_pod = Pod(root)
    os.makedirs(os.path.join(work, "www"))
    page = "<html><body>termline bench</body></html>\n"
    if args.body_bytes > len(page):
        fill = args.body_bytes - len(page)
        # Lines of hex digits from a hash chain: text that compresses
        # about as a page does (--gzip has work to do), the same each run.
        h, lines = b"termline", []
        while 64 * len(lines) < fill:
            h = hashlib.sha256(h).digest()
            lines.append(h.hex()[:63] + "\n")
        page = "<html><body>termline bench" + "".join(lines)[:fill] + "</body></html>\n"
    write(os.path.join(work, "www", "index.html"), page)
    args.port = E.free_port()
    gzip = f"\n  gzip on; gzip_comp_level {args.gzip}; gzip_min_length 0;" if args.gzip else ""
    write(os.path.join(work, "nginx.conf"), NGINX_CONF.format(d=work, port=args.port, gzip=gzip))
    try:
        n = 0
        load = (f"nghttpd one thread; h2load -t1 -c{args.connections} -m{args.streams}" if args.protocol == "h2"
                else f"nginx one worker; wrk -t1 -c{args.connections}")
        print(f"termlined {args.build}/daemon/termlined; {load}, "
              f"{args.seconds} s runs, {args.rounds} A B B A rounds; a {len(page)}-byte page"
              f"{f', gzip level {args.gzip}' if args.gzip else ''}; load average {os.getloadavg()[0]:.2f}",
              flush=True)
        for scenario in scenarios:
            for mode in modes:
                runs = {False: [], True: [], "stats": []}
                lat, srv = ("mean", "nghttpd") if args.protocol == "h2" else ("p99", "nginx")
                for r in range(args.rounds):
                    for with_agent in (False, True, True, False, "stats"):
                        n += 1
                        x = one_run(args, scenario, mode, bool(with_agent), root, work, n, steady_pod,
                                    stats=with_agent == "stats")
                        runs[with_agent].append(x)
                        side = {False: "off", True: "on ", "stats": "on, BPF stats on"}[with_agent]
                        extra = (f", agent {x['agent_us']:.3f} us/req, captured {x['captured']:.0f}, "
                                 f"drops {x['drops']:.0f}") if with_agent else ""
                        if with_agent == "stats":
                            extra += (f", its programs {x['bpf_us']:.3f} us/req in {x['bpf_runs']:.1f} runs "
                                      f"({x['bpf_by_prog']})")
                        print(f"  {scenario:6s} {mode:10s} round {r} agent {side}: {x['rps']:.0f} req/s, "
                              f"{lat} {x['p99']:.3f} ms, {srv} {x['nginx_us']:.2f} us/req{extra}", flush=True)
                off, on, st = runs[False], runs[True], runs["stats"]

                def med(side, k):
                    return statistics.median(x[k] for x in side)

                # Paired within each A B B A round: the machine's speed drifts
                # between rounds more than the agent changes it.
                def paired(k, ratio):
                    per = []
                    for r in range(args.rounds):
                        a = off[2 * r][k] + off[2 * r + 1][k]
                        b = on[2 * r][k] + on[2 * r + 1][k]
                        per.append(b / a if ratio else (b - a) / 2)
                    return statistics.median(per), min(per), max(per)
                # The same pairing between the two runs of one side (A A,
                # B B): what the machine alone moves a ratio by, round to
                # round, to read the one above against.
                def same_side(side):
                    return [abs(side[2 * r + 1]["rps"] / side[2 * r]["rps"] - 1) for r in range(args.rounds)]
                aa = same_side(off) + same_side(on)
                tp, tp_lo, tp_hi = paired("rps", True)
                p99, _, _ = paired("p99", False)
                cpu, cpu_lo, cpu_hi = paired("nginx_us", False)
                print(f"{scenario} {mode}: throughput with the agent {100 * tp:.1f} % of without (rounds "
                      f"{100 * tp_lo:.1f}-{100 * tp_hi:.1f} %; medians off {med(off, 'rps'):.0f}, on "
                      f"{med(on, 'rps'):.0f} req/s); {lat} {p99:+.3f} ms (off {med(off, 'p99'):.3f} ms); {srv} CPU "
                      f"{cpu:+.2f} us/req (rounds {cpu_lo:+.2f}..{cpu_hi:+.2f}; off {med(off, 'nginx_us'):.2f}); "
                      f"agent CPU {med(on, 'agent_us'):.3f} us/req, its BPF programs' run time {med(st, 'bpf_us'):.3f} "
                      f"us/req in {med(st, 'bpf_runs'):.1f} runs (the runs with BPF stats on); captured {sum(x['captured'] for x in on):.0f} "
                      f"of {sum(x['reqs'] for x in on)} requests; ring drops {sum(x['drops'] for x in on + st):.0f}",
                      flush=True)
                print(f"{scenario} {mode}: noise: two runs of the same side in one round differ by "
                      f"{100 * statistics.median(aa):.1f} % in throughput (median of {len(aa)} pairs, largest "
                      f"{100 * max(aa):.1f} %)", flush=True)
    finally:
        write(STATS, stats_was)
        steady_pod.remove()
        E.remove_dirs((os.path.join(root, "kubepods", "besteffort"), os.path.join(root, "kubepods"), root))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
