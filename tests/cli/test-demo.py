#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The README's demo, end to end (root): tools/termline-demo as the README
runs it (the race, then the fix, --fixed being the default). The failed
request IDs the load generator saw are exactly those `explain`
lists, and explain opens with the verdict (that many failed) and the fix
once; check exits 1; with the recommended preStop applied no request
fails and check exits 0; the SVG is written. Then the demo is interrupted
with SIGINT in the middle of a run: no process, cgroup or network
namespace of it is left."""
import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
import e2elib as E  # noqa: E402

DEMO = os.path.join(E.SRC, "tools", "termline-demo")


def netns_names():
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()}


def children(pid):
    ps = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    return [int(a) for a, b in (ln.split() for ln in ps.splitlines()) if int(b) == pid]


def leftovers(pid, uid, kids):
    """What an interrupted demo (process pid, Pod uid, child processes
    kids) could leave behind: a populated cgroup cannot be removed, so no
    cgroup means no container process either."""
    root = E.cgroup2_mount()
    left = [d for d in os.listdir(root) if d == f"termline-demo-{pid}"]
    left += [f"netns {n}" for n in netns_names() if n == f"tl-{uid.replace('-', '')[:8]}"]
    for k in kids:
        try:
            os.kill(k, 0)
            left.append(f"pid {k}")
        except ProcessLookupError:
            pass
    return left


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-demo-")
    summary = os.path.join(work, "summary.json")
    t0 = time.monotonic()
    r = subprocess.run([DEMO, "--build", E.BUILD, "--summary", summary, "--out-dir", work],
                       capture_output=True, text=True, timeout=170)
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, f"demo exit {r.returncode}:\n{r.stdout}\n{r.stderr}"
    with open(summary) as f:
        runs = json.load(f)["runs"]
    race, fixed = runs
    assert race["failed"], f"the race run had no failed request:\n{r.stdout}"
    # the point of the demo: explain names exactly the requests that failed
    assert race["explainIds"] == race["failed"], (race["explainIds"], race["failed"], race.get("differ"))
    assert race["findings"][0] == "requests_after_listener_closed", race["findings"]
    assert race["checkExit"] == 1, race
    assert isinstance(race["preStopRecommended"], int) and race["preStopRecommended"] >= 2, race
    assert fixed["failed"] == [] and fixed["explainIds"] == [], fixed
    # the fix is whole: applied with the sidecar's drain it asked for (the
    # proxy drains 4 s, the sleep holds the app about as long), the proxy
    # outlives the app and nothing fires about their order
    assert race["drainRecommended"] and race["drainRecommended"] > race["drainSeconds"], race
    assert "terminationDrainDuration" in race["explainText"], race["explainText"]
    assert fixed["drainSeconds"] == race["drainRecommended"], fixed
    assert "exit_order" not in fixed["findings"], fixed["findings"]
    assert fixed["sent"] >= 10, fixed
    assert fixed["checkExit"] == 0, fixed
    # explain answers first: the verdict with the count the load generator
    # saw, then the fix once, as a kubectl patch
    ex = race["explainText"]
    flat = " ".join(ex.split())
    assert flat.startswith(f"{race['pod']}: {len(race['failed'])} request"
                           f"{'s' if len(race['failed']) != 1 else ''} failed ("), ex
    assert ex.count("\nFix:") == 1 and "kubectl -n shop patch deployment web -p '" in ex, ex
    assert f"seconds: {race['preStopRecommended']}'" in ex, ex
    assert ex.index("Fix:") < ex.index("most severe first"), ex
    # the fix says what set its number: the endpoint's removal only when
    # the number is the removal's time; a later one is the slowest
    # consumer's last request or the last failed request
    m = re.search(r"Fix: hold app in a (\d+) s preStop sleep, so that it still serves until (.+?) "
                  r"\(\+(\d+\.\d+) s; \+ 1 s margin", flat)
    removed = re.search(r"endpoint left every slice at \+(\d+\.\d+) s", flat)
    assert m and removed, flat
    if m.group(3) == removed.group(1):
        assert m.group(2) == "its endpoint has left every slice", m.group(0)
    else:
        assert float(m.group(3)) > float(removed.group(1)), (m.group(0), removed.group(0))
        assert m.group(2).startswith(("its slowest consumer, ", "the last failed request, after")), m.group(0)
    assert " ".join(fixed["explainText"].split()).startswith(f"{fixed['pod']}: No request failed"), \
        fixed["explainText"]
    for run in runs:
        with open(run["svg"]) as f:
            assert f.read(200).startswith("<?xml"), run["svg"]
        assert run["png"] and os.path.getsize(run["png"]) > 10000, run["png"]
    assert "explain lists exactly the" in r.stdout, r.stdout
    print(f"demo --fixed: {len(race['failed'])} failed of {race['sent']}, then 0 of {fixed['sent']} "
          f"with preStop {race['preStopRecommended']}s; {elapsed:.1f}s")

    # interrupted once the Pod runs: everything goes
    p = subprocess.Popen([DEMO, "--build", E.BUILD, "--out-dir", work], stdout=subprocess.PIPE, text=True)
    out = ""
    deadline = time.monotonic() + 60
    while "   Pod " not in out and time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out += line
    assert "   Pod " in out, out
    uid = out.split("(uid ", 1)[1].split(",", 1)[0]
    kids = children(p.pid)
    assert len(kids) >= 2, kids  # the API double and termlined at least
    assert leftovers(p.pid, uid, kids), "nothing to clean up: the test would prove nothing"
    p.send_signal(signal.SIGINT)
    rest, _ = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, out + rest)
    left = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = leftovers(p.pid, uid, kids)
        if not left:
            break
        time.sleep(0.1)
    assert not left, f"left behind after SIGINT: {left}"
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    print("ok: demo --fixed, and cleaned up after SIGINT")


if __name__ == "__main__":
    sys.exit(main())
