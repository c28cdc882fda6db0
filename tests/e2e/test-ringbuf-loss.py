#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A full ring buffer loses events, never silently: termlined with a 64 KiB
ring and a container flooding it with signals. Every event the kernel saw is
either recorded or counted as dropped (termline_events_total +
termline_ringbuf_dropped_total == what the flood sent), and the Pod's
timeline says complete: false with the same count in loss."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as E  # noqa: E402

UID = "0d1e2f30-4152-4637-8899-aabbccddeeff"
CID = "f1" * 32


def metric_sum(samples, name, **labels):
    return sum(v for (_, v) in E.metric_series(samples, name, **labels))


def main():
    E.require_root()
    work = tempfile.mkdtemp(prefix="termline-e2e-ring-")
    root = os.path.join(E.cgroup2_mount(), f"termline-e2e-ring-{os.getpid()}")
    leaf = os.path.join(root, "kubepods.slice", "kubepods-besteffort.slice",
                        f"kubepods-besteffort-pod{UID.replace('-', '_')}.slice", f"cri-containerd-{CID}.scope")
    os.makedirs(leaf)
    port = E.free_port()
    agent = E.Agent(work, ["--no-api", "--cgroup-root", root, "--ring-buffer-kib", "64", "--linger", "1",
                           "--listen", f"127.0.0.1:{port}", "--state-dir", os.path.join(work, "state")]).start()
    try:
        # Two floods at once in the container: the ring (64 KiB) fills far
        # faster than one consumer drains it.
        cmd = f"echo $$ > {leaf}/cgroup.procs && exec /usr/bin/python3 {os.path.dirname(os.path.abspath(__file__))}/flood.py 2"
        floods = [subprocess.Popen(["sh", "-c", cmd], stdout=subprocess.PIPE, text=True) for _ in range(2)]
        sent = sum(int(p.communicate(timeout=60)[0]) for p in floods)
        assert all(p.returncode == 0 for p in floods)
        kinds = ("process.signal", "process.signal_delivered")

        def settled():
            s = E.parse_prometheus(E.http_get(port, "/metrics")[1].decode())
            got = sum(metric_sum(s, "termline_events_total", type=k, source="kernel") for k in kinds)
            lost = sum(metric_sum(s, "termline_ringbuf_dropped_total", kind=k) for k in kinds)
            return (got, lost) if got + lost >= 2 * sent else None
        got, lost = E.wait_for(settled, 60, "every signal event recorded or counted as dropped")
        assert got + lost == 2 * sent, (got, lost, sent)
        assert lost > 0, f"no drops with a 64 KiB ring and {sent} signals: the test proves nothing"

        os.rmdir(leaf)  # the Pod is gone: its timeline closes after the linger
        doc_path = os.path.join(work, "state", "timelines", "_unknown", f"{UID}.json")
        E.wait_for(lambda: os.path.exists(doc_path), 60, doc_path)
        (doc,) = E.validate_documents([doc_path])
        assert doc["complete"] is False, doc["loss"]
        # The timeline is charged with every drop while it was open, of any
        # kind (the flood's own exec and exit can be lost too): the same
        # total the metrics count.
        s = E.parse_prometheus(E.http_get(port, "/metrics")[1].decode())
        lost_all = metric_sum(s, "termline_ringbuf_dropped_total")
        assert doc["loss"]["kernelEventsDropped"] == lost_all >= lost, (doc["loss"], lost_all, lost)
        assert b"ring buffer full" in agent.read_log()
        assert agent.stop(signal.SIGTERM) == 0
        print(f"ok: {sent} signals, {got} events recorded, {lost} counted as dropped")
        return 0
    finally:
        agent.stop(signal.SIGKILL)
        E.remove_dirs((leaf, os.path.dirname(leaf), os.path.dirname(os.path.dirname(leaf)),
                       os.path.join(root, "kubepods.slice"), root))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
