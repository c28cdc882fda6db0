#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The sidecar race on a real runtime (docs/runtime.md).

termlined runs from its image under this test's own containerd, as its
DaemonSet Pod: securityContext, volumes, resources and environment read
from manifests/daemonset.yaml, the API reached in-cluster (service account
token, KUBERNETES_SERVICE_HOST). A Pod is made through the CRI as the
kubelet makes it: a sandbox (the locally built pause image; its IP from the
bridge CNI plugin), an app container (nginx) and an istio-proxy container
(tools/termline-simpod's simulated Envoy: keeps forwarding for DRAIN
seconds after SIGTERM, Istio access lines on stdout that containerd writes
to the Pod's CRI log). The API double holds the same Pods (uids, container
ids as containerd reports them, IPs from CNI) and the Service's
EndpointSlice.

Under load with unique request IDs (tools/termline-demo's load generator)
the Pod is deleted and both containers are stopped at once with
StopContainer(timeout = grace), as the kubelet does: runc's SIGTERM, then
SIGKILL for the proxy that outlives the grace period. Then the sandbox is
stopped and removed, and the Pod deleted.

Asserted: `kubectl termline explain` (through the API double's pod proxy to
the agent's Pod IP) names exactly the failed requests the load generator
saw; the SIGTERMs and the SIGKILL are the runtime's (sent by runc, not by
this test), to the processes containerd reports, with host PIDs; the
sandbox's events are not in the app's or the proxy's lanes; the timeline
carries the runtime's container ids, the cgroup ids of their leaves and the
CNI address; the agent's process has exactly the capabilities the manifest
keeps, no_new_privs, a seccomp filter and a read-only root.

--layout cgroupfs: Pods under kubepods/besteffort/pod<uid>; --layout
systemd: under kubepods.slice/kubepods-besteffort.slice/
kubepods-besteffort-pod<uid_>.slice. containerd names the leaf by its cgroup
driver: with systemd's (SystemdCgroup, a scope made by systemd over D-Bus)
cri-containerd-<id>.scope, with cgroupfs the bare id. These machines have
no systemd as init, so both runs use the cgroupfs driver
(docs/runtime.md)."""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
from importlib.machinery import SourceFileLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rtlib as R  # noqa: E402

E = R.E
demo = SourceFileLoader("termline_demo", os.path.join(E.SRC, "tools", "termline-demo")).load_module()

GRACE = 3           # terminationGracePeriodSeconds: the proxy outlives it
DRAIN = 6           # the proxy keeps forwarding this long after SIGTERM
INTERVAL = 0.05     # between the load generator's requests
APP_PORT, PROXY_PORT = 8080, 15006
CLI = os.path.join(E.BUILD, "tools", "kubectl-termline", "kubectl-termline")
CAPS = {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_DAC_READ_SEARCH": 2}


def set_grace(obj):
    """demo.scenario's Pods with this test's grace period."""
    if isinstance(obj, dict):
        for k in list(obj):
            if k in ("terminationGracePeriodSeconds", "deletionGracePeriodSeconds"):
                obj[k] = GRACE
            else:
                set_grace(obj[k])
    elif isinstance(obj, list):
        for v in obj:
            set_grace(v)


# What the runtime reports once both are stopped (asserted below): nginx
# exits 0 on SIGTERM, the proxy is killed at the end of the grace period.
EXITS = {"app": (0, "Completed"), "istio-proxy": (137, "Error")}


def set_exit_codes(sc):
    """The kubelet's terminated statuses in the double, from EXITS."""
    for st in sc["steps"]:
        for cs in st.get("object", {}).get("status", {}).get("containerStatuses", []):
            term = cs.get("state", {}).get("terminated")
            if term:
                term["exitCode"], term["reason"] = EXITS[cs["name"]]
                if term["exitCode"] > 128:
                    term["signal"] = term["exitCode"] - 128


class Double:
    """The API double on every address (the agent's Pod reaches it at the
    bridge's gateway), with a certificate for that address."""

    def __init__(self, work, sc):
        self.work = work
        self.cert, self.key = os.path.join(work, "api.crt"), os.path.join(work, "api.key")
        self.scenario = os.path.join(work, "scenario.json")
        self.port_file = os.path.join(work, "api.port")
        self.log_path = os.path.join(work, "api.log")
        self.kubeconfig = os.path.join(work, "kubeconfig")
        with open(self.scenario, "w", encoding="utf-8") as f:
            json.dump(sc, f)
        self.proc = None

    def start(self):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "1", "-subj", "/CN=kube-double.test",
                        "-addext", f"subjectAltName=DNS:kube-double.test,IP:{R.GATEWAY}"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["/usr/bin/python3", E.KUBE_DOUBLE, "--scenario", self.scenario,
                                      "--cert", self.cert, "--key", self.key, "--port-file", self.port_file,
                                      "--listen", "0.0.0.0"], stdout=self.log, stderr=self.log)
        E.wait_for(lambda: self.proc.poll() is not None or os.path.exists(self.port_file), 20, "the API double")
        if self.proc.poll() is not None:
            raise AssertionError(f"API double exited {self.proc.returncode}")
        with open(self.port_file, encoding="utf-8") as f:
            self.port = int(f.read())
        with open(self.kubeconfig, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: v1
kind: Config
current-context: rt
contexts:
- name: rt
  context: {{cluster: double, user: user}}
clusters:
- name: double
  cluster:
    server: https://127.0.0.1:{self.port}
    certificate-authority: {self.cert}
    tls-server-name: kube-double.test
users:
- name: user
  user:
    token: {demo.TOKEN}
""")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def cli(double, *args):
    r = subprocess.run([CLI] + list(args) + ["--kubeconfig", double.kubeconfig], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, NO_COLOR="1"))
    return r


def caps_of(pid):
    out = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def cap_names(mask_hex):
    m = int(mask_hex, 16)
    names = {v: k for k, v in CAPS.items()}
    return sorted(names.get(b, f"cap{b}") for b in range(64) if m >> b & 1)


def check_agent_process(agent, pid):
    """The agent's process as the runtime made it from the manifest."""
    st = caps_of(pid)
    sc = agent.container["securityContext"]
    want = sorted("CAP_" + c for c in sc["capabilities"]["add"])
    assert sc["capabilities"]["drop"] == ["ALL"], sc
    assert cap_names(st["CapBnd"]) == want, f"bounding set {cap_names(st['CapBnd'])}, manifest adds {want}"
    # termlined drops PERFMON once attached (docs: README "Running the agent")
    assert cap_names(st["CapEff"]) == ["CAP_BPF", "CAP_DAC_READ_SEARCH"], cap_names(st["CapEff"])
    assert st["NoNewPrivs"] == "1", st["NoNewPrivs"]
    assert st["Seccomp"] == "2", f"Seccomp: {st['Seccomp']} (2 = a filter: containerd's default profile)"
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8") as f:
        mounts = {ln.split(" - ")[0].split()[4]: ln.split(" - ")[0].split()[5].split(",") for ln in f}
    assert "ro" in mounts["/"], f"root mounted {mounts['/']}"
    for m in agent.container["volumeMounts"]:
        assert m["mountPath"] in mounts, f"{m['mountPath']} not mounted in the agent"
        if m.get("readOnly"):
            assert "ro" in mounts[m["mountPath"]], f"{m['mountPath']}: {mounts[m['mountPath']]}"
    assert "ro" not in mounts["/tmp"] and "rw" in mounts["/tmp"], mounts["/tmp"]
    R.log(f"agent pid {pid}: bounding {cap_names(st['CapBnd'])}, effective {cap_names(st['CapEff'])}, "
          f"NoNewPrivs 1, Seccomp 2, / read-only")


def leaf_inode(pid):
    """The cgroup v2 id (inode) of the cgroup runc put pid in."""
    with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
        rel = next(ln[3:].strip() for ln in f if ln.startswith("0::"))
    path = E.cgroup2_mount() + rel
    R.log(f"pid {pid} in {path}")
    return os.stat(path).st_ino


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", choices=["cgroupfs", "systemd"], required=True)
    a = ap.parse_args()
    R.require()
    archives = R.build_images()
    t0 = time.monotonic()
    with R.Node(f"sidecar-{a.layout}", a.layout) as node:
        node.containerd.import_images(archives)
        node.node_name = demo.NODE
        gates = {g: os.path.join(node.work, g) for g in ("delete", "stopped")}

        # The kubelet: the agent's sandbox first (its IP goes to the
        # double's pod proxy), then the app Pod, whole.
        agent = R.AgentPod(node, R.GATEWAY, 0, "", "", extra_args=[
            # a shorter linger than the manifest's (the test waits for
            # the closed timeline), and every event as a JSON line
            "--linger=2", "--emit-events=/var/lib/termline/events.jsonl"])
        agent.name = demo.AGENT_POD
        agent.run_sandbox()
        pod = R.Pod(node, demo.NS, f"{demo.RS_OLD}-{a.layout[:4]}", qos="besteffort",
                    labels={"app": demo.SERVICE})
        pod.run_sandbox()
        pod.create("app", R.POD_IMAGE, command=["/usr/sbin/nginx", "-c", "/etc/nginx/termline-test.conf"])
        # the simulated Envoy is termline-simpod's internal _proxy mode;
        # fd 3 is where it says it is serving
        pod.create("istio-proxy", R.POD_IMAGE, command=["/bin/sh", "-c",
                   f"exec /usr/bin/python3 /usr/local/bin/termline-simpod _proxy --ready-fd 3 --listen 0.0.0.0 "
                   f"--port {PROXY_PORT} --upstream-port {APP_PORT} --drain-seconds {DRAIN} "
                   f"--access-log-format istio 3>/dev/null"])
        pod.start("app")
        pod.start("istio-proxy")
        sim = {"podUid": pod.uid, "name": pod.name, "ip": pod.ip, "appPort": APP_PORT, "proxyPort": PROXY_PORT,
               "containers": [{"name": n, "containerId": c} for n, c in pod.containers.items()]}

        sc = demo.scenario(sim, 9440, gates["delete"], gates["stopped"])
        set_grace(sc)
        set_exit_codes(sc)
        sc["podProxy"] = {f"termline/{demo.AGENT_POD}:9440": f"{agent.ip}:9440"}
        for o in sc["objects"]:
            md = o["object"]["metadata"]
            if md.get("name") == demo.AGENT_POD:
                md["uid"] = agent.uid
                o["object"]["status"]["podIP"] = agent.ip
        double = Double(node.work, sc).start()
        try:
            agent.api_port = double.port
            agent.ca_cert, agent.token = double.cert, demo.TOKEN
            agent.create_agent()
            agent.start("termlined")
            run(node, a, agent, pod, double, gates, t0)
        finally:
            double.stop()
    R.log(f"done in {time.monotonic() - t0:.1f}s after the images were ready")


def wait_ready(agent, what="/readyz 200"):
    def ready():
        st = agent.status("termlined")
        if st["state"] == R.cri.CONTAINER_EXITED:
            with open(os.path.join(agent.log_dir, "termlined", "0.log"), encoding="utf-8", errors="replace") as f:
                raise AssertionError(f"termlined exited {st['exitCode']} ({st['reason']}):\n{f.read()[-3000:]}")
        s, _, _ = http(agent.ip, "/readyz")
        return s == 200
    E.wait_for(ready, E.deadline(60), what)


def http(host, path):
    import http.client
    try:
        c = http.client.HTTPConnection(host, 9440, timeout=5)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read(), r.getheader("content-type")
    except OSError:
        return 0, b"", None


def run(node, a, agent, pod, double, gates, t0):
    wait_ready(agent)
    apid = agent.pid("termlined")
    R.log(f"termlined ready at {agent.ip}:9440 ({time.monotonic() - t0:.1f}s)")
    check_agent_process(agent, apid)
    pids = {n: pod.pid(n) for n in pod.containers}
    inodes = {n: leaf_inode(pids[n]) for n in pod.containers}

    load = demo.Load({"ip": pod.ip, "proxyPort": PROXY_PORT}, double.port, f"rt-{a.layout}", INTERVAL)
    load.start()
    E.wait_for(lambda: len(load.results) >= 10, 30, "ten requests through the proxy")
    ok_before = [r for r in load.results if r[1] == 200]
    assert ok_before, f"no request answered before the termination: {load.results[:5]}"

    # The kubelet sees the deletion and stops every container at once.
    stopped = {}

    def stop(name):
        t = time.monotonic()
        node.rt.stop_container(pod.containers[name], GRACE)
        stopped[name] = time.monotonic() - t

    open(gates["delete"], "w").close()
    time.sleep(0.05)
    threads = [threading.Thread(target=stop, args=(n,)) for n in ("app", "istio-proxy")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GRACE + 60)
    load.stop.set()
    load.join(30)
    st = {n: pod.status(n) for n in pod.containers}
    R.log("stopped: " + ", ".join(f"{n} exit {st[n]['exitCode']} ({st[n]['reason']}) after {stopped[n]:.1f}s"
                                  for n in pod.containers))
    for n, (code, reason) in EXITS.items():
        assert (st[n]["exitCode"], st[n]["reason"]) == (code, reason), (n, st[n])
    assert stopped["istio-proxy"] >= GRACE - 0.5, stopped
    pod.remove()  # StopPodSandbox, RemovePodSandbox: the pause's own end
    open(gates["stopped"], "w").close()

    failed = load.failed()
    R.log(f"load: {len(load.results)} requests, {len(failed)} failed")
    assert failed, "no request failed: the race did not happen"

    doc_path = os.path.join(node.state, "timelines", pod.namespace, f"{pod.name}_{pod.uid}.json")
    E.wait_for(lambda: os.path.exists(doc_path), E.deadline(40), f"the closed timeline {doc_path}")
    doc = E.validate_documents([doc_path])[0]
    evs = doc["events"]

    # explain, through the API server's pod proxy to the agent's Pod
    target = f"{pod.namespace}/{pod.name}"
    ex = cli(double, "explain", target, "-o", "json")
    assert ex.returncode == 0, f"explain: exit {ex.returncode}: {ex.stderr}"
    ids = sorted({i for f in json.loads(ex.stdout)["findings"] for i in f["requestIds"]})
    seen = sorted(r[0] for r in failed)
    assert ids == seen, f"explain names {len(ids)} request IDs, the load generator saw {len(seen)} fail:\n" \
                        f"only explain: {sorted(set(ids) - set(seen))}\nonly load: {sorted(set(seen) - set(ids))}"
    R.log(f"explain names exactly the {len(seen)} failed request IDs")
    print(cli(double, "explain", target).stdout, flush=True)
    print(cli(double, "show", target).stdout, flush=True)

    # the Pod as the runtime made it
    assert doc["pod"]["uid"] == pod.uid and doc["pod"]["ip"] == pod.ip, doc["pod"]
    conts = {c["name"]: c for c in doc["containers"]}
    for n, cid in pod.containers.items():
        assert conts[n]["containerID"] == "containerd://" + cid, conts[n]
        assert conts[n]["cgroupId"] == inodes[n], (n, conts[n]["cgroupId"], inodes[n])

    # signals: the runtime's, to the processes containerd started
    sig = [e for e in evs if e["type"] == "process.signal"]
    for n in ("app", "istio-proxy"):
        terms = [e for e in sig if e["container"] == n and e["signal"] == "SIGTERM" and e["pid"] == pids[n]]
        assert terms, f"no SIGTERM to {n} (pid {pids[n]}) among {json.dumps(sig, indent=1)}"
        assert terms[0]["senderComm"] == "runc", terms[0]
    kills = [e for e in sig if e["signal"] == "SIGKILL"]
    assert [e for e in kills if e["container"] == "istio-proxy" and e["senderComm"] == "runc"], \
        f"no grace-period SIGKILL from runc to istio-proxy: {json.dumps(kills, indent=1)}"
    assert not [e for e in kills if e["container"] == "app"], f"app got a SIGKILL: {kills}"
    R.log(f"SIGTERM to app (pid {pids['app']}) and istio-proxy (pid {pids['istio-proxy']}) from runc; "
          f"SIGKILL to istio-proxy after {GRACE}s")

    rules = {f["rule"]: f for f in doc["findings"]}
    assert "sigkill_after_grace" in rules and "istio-proxy" in rules["sigkill_after_grace"]["summary"], \
        sorted(rules)

    # the sandbox's own end (StopPodSandbox: runc's SIGKILL, its exit) is
    # recorded as the sandbox's, in no container's lane
    sandbox = pod.sandbox_pid
    for e in evs:
        if e.get("container") in ("app", "istio-proxy"):
            assert e.get("pid") != sandbox and e.get("comm") != "pause", f"the sandbox's event in a lane: {e}"
    own = [e for e in evs if e.get("pid") == sandbox]
    assert {e["type"] for e in own} >= {"process.signal", "process.exit"}, f"the sandbox's end: {own}"
    assert all(e.get("sandbox") is True and e.get("container") is None for e in own), own
    R.log(f"{len(evs)} events; the sandbox's (pid {sandbox}: {', '.join(e['type'] for e in own)}) marked "
          f"sandbox, none in the app's or the proxy's lanes")
    check_log_requests(evs, load)


def check_log_requests(evs, load):
    """Every request the proxy answered is in the timeline from the CRI log
    containerd wrote, with the status the client saw."""
    logged = {e["requestId"]: e for e in evs if e["type"] == "http.request" and e.get("source") == "log"}
    client = {rid: status for rid, status, _ in load.results if status}
    missing = sorted(set(client) - set(logged))
    assert not missing, f"{len(missing)} answered requests not in the timeline from the CRI log: {missing[:10]}"
    wrong = [(rid, s, logged[rid]["status"]) for rid, s in client.items() if logged[rid]["status"] != s]
    assert not wrong, f"statuses differ (id, client, log): {wrong[:10]}"
    R.log(f"{len(client)} answered requests in the timeline from containerd's CRI log")


if __name__ == "__main__":
    main()
