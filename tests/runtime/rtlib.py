# SPDX-License-Identifier: Apache-2.0
"""The runtime suite's node: its own containerd (own root, state, socket and
config; never the host's) with Debian's runc and CNI plugins, Pods made
through the CRI as the kubelet makes them, and termlined's DaemonSet Pod
translated from manifests/daemonset.yaml into CRI calls (docs/runtime.md).

What a kubelet host has that these machines may lack is said, not faked:
systemd as init makes every mount shared at boot, which containerd's
HostToContainer propagation needs; here the suite runs in a mount namespace
of its own whose mounts it makes shared (the host's stay as they are)."""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import e2elib as E  # noqa: E402
import cri  # noqa: E402

CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
RUNC = "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"
PODMAN = "/usr/bin/podman"
DEV = os.path.join(E.SRC, "tools", "dev")
MANIFEST = os.path.join(E.SRC, "manifests", "daemonset.yaml")
CONFIG_YAML = os.path.join(E.SRC, "manifests", "config.yaml")
PAUSE_BIN = os.path.join(E.BUILD, "tests", "runtime", "pause")
IMAGES_DIR = os.path.join(E.BUILD, "tests", "runtime", "images")
SANDBOX_IMAGE = "localhost/termline-test/pause:1"
POD_IMAGE = "localhost/termline-test/pod:1"

# The Pods' network: a bridge and a link-local /24 that nothing routes off
# the machine (termline-simpod's /30s stay below 169.254.251.0).
BRIDGE = "tlrt0"
SUBNET = "169.254.252.0/24"
GATEWAY = "169.254.252.1"

CLONE_NEWNS = 0x00020000


def log(msg):
    print(f"runtime: {msg}", flush=True)


def require():
    """Root and every piece the suite runs; under CI=true a missing one
    fails, elsewhere the test is skipped (exit 77)."""
    E.require_root()
    missing = [p for p in (CONTAINERD, CTR, RUNC, PODMAN, f"{CNI_BIN}/bridge", f"{CNI_BIN}/host-local",
                           f"{CNI_BIN}/loopback") if not os.access(p, os.X_OK)]
    try:
        import grpc  # noqa: F401
    except ImportError:
        missing.append("python3-grpcio")
    if missing:
        msg = "missing " + ", ".join(missing) + " (tools/dev deps installs them)"
        if os.environ.get("CI") == "true":
            print(f"FAIL: {msg}", file=sys.stderr)
            sys.exit(1)
        print(f"SKIP: {msg}")
        sys.exit(77)


def own_mount_namespace():
    """A mount namespace for this process and its children (containerd, its
    shims, the containers), with every mount shared within it as systemd
    makes them on a node: containerd refuses HostToContainer propagation
    from a private mount. Its mounts (snapshots, tmpfs volumes, netns
    files) vanish with it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare(CLONE_NEWNS): {os.strerror(e)}")
    subprocess.run(["mount", "--make-rshared", "/"], check=True)


def chrooted():
    """True inside a chroot (the CI's fresh Debian): runc's pivot_root
    needs a root that is a mount of its own namespace's tree."""
    try:
        s, p = os.stat("/"), os.stat("/proc/1/root")
    except OSError:
        return False
    return (s.st_dev, s.st_ino) != (p.st_dev, p.st_ino)


def cgroup_hierarchies():
    """Every cgroup mount point (v1 hierarchies and the v2 one): runc's
    cgroupfs driver makes a container's path in each."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split(" ")[0] in ("cgroup", "cgroup2"):
                out.append(pre.split(" ")[4].replace("\\040", " "))
    return out


def build_images():
    """tools/dev image --runtime-test: termlined's image from Containerfile
    (and its Debian base, made once), the sandbox and workload images;
    archives in IMAGES_DIR, rewritten only when an image changed."""
    t0 = time.monotonic()
    r = subprocess.run([DEV, "image", "--runtime-test", IMAGES_DIR, PAUSE_BIN], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"tools/dev image failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    for line in r.stdout.splitlines():
        if line.startswith("tools/dev:"):
            log(line)
    log(f"images ready in {time.monotonic() - t0:.1f}s")
    return [os.path.join(IMAGES_DIR, n) for n in ("termlined.tar", "pause.tar", "pod.tar")]


def normalize_image(ref):
    """An image reference as containerd's CRI resolves it (docker's
    normalisation): no registry -> docker.io, one component -> library/."""
    first, _, rest = ref.partition("/")
    if not rest:
        return f"docker.io/library/{ref}"
    if "." in first or ":" in first or first == "localhost":
        return ref
    return f"docker.io/{ref}"


class Containerd:
    """containerd with its own root (on a tmpfs), state dir, socket and
    config; the CRI plugin with runc and the bridge CNI plugin."""

    def __init__(self, work, systemd_cgroup=False):
        self.work = work
        self.sock = os.path.join(work, "containerd.sock")
        self.log_path = os.path.join(work, "containerd.log")
        self.config = os.path.join(work, "containerd.toml")
        self.cni_conf = os.path.join(work, "cni")
        self.systemd_cgroup = systemd_cgroup
        self.proc = None
        self.rt = None

    def write_config(self):
        os.makedirs(self.cni_conf, exist_ok=True)
        no_pivot = chrooted()
        with open(self.config, "w", encoding="utf-8") as f:
            f.write(f"""version = 2
root = "{self.work}/root"
state = "{self.work}/state"
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{self.work}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  netns_mounts_under_state_dir = true
  # This machine refuses any negative oom_score_adj (EIO), the sandbox's
  # -998 included: no score below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
        Root = "{self.work}/runc"
        SystemdCgroup = {str(self.systemd_cgroup).lower()}
        NoPivotRoot = {str(no_pivot).lower()}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{self.cni_conf}"
    max_conf_num = 1
""")
        with open(os.path.join(self.cni_conf, "10-termline-rt.conflist"), "w", encoding="utf-8") as f:
            json.dump({"cniVersion": "1.0.0", "name": "termline-rt", "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY}]],
                          "dataDir": os.path.join(self.work, "cni-ipam")}}]}, f, indent=1)
        if no_pivot:
            log("runc without pivot_root (no_pivot): this root is a chroot")

    def start(self):
        self.write_config()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([CONTAINERD, "--config", self.config, "--log-level", "info"],
                                     stdout=self.log, stderr=self.log, start_new_session=True)
        E.wait_for(lambda: self.proc.poll() is not None or os.path.exists(self.sock), 30, "containerd's socket")
        if self.proc.poll() is not None:
            raise AssertionError(f"containerd exited {self.proc.returncode}:\n{self.read_log()[-3000:]}")
        self.rt = cri.Runtime(self.sock)
        v = E.wait_for(lambda: self._version(), 30, "containerd's CRI")
        log(f"containerd {v['runtimeVersion']} ({v['runtimeName']}, CRI {v['runtimeApiVersion']}) on {self.sock}")
        return self

    def _version(self):
        import grpc
        try:
            return self.rt.version()
        except grpc.RpcError:
            return None

    def read_log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def ctr(self, *args):
        r = subprocess.run([CTR, "--address", self.sock, "--namespace", "k8s.io"] + list(args),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"ctr {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def import_images(self, archives):
        t0 = time.monotonic()
        for a in archives:
            self.ctr("images", "import", a)
        log(f"imported {len(archives)} images into containerd in {time.monotonic() - t0:.1f}s")

    def shim_pids(self):
        """The shims of this containerd (they outlive it by design)."""
        out = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and self.sock.encode() in argv:
                out.append(int(p))
        return out

    def stop(self):
        """Every sandbox stopped and removed as a kubelet would, then
        containerd and whatever shim is left."""
        if self.rt:
            try:
                for sb in self.rt.list_pod_sandbox():
                    try:
                        self.rt.stop_pod_sandbox(sb["id"])
                        self.rt.remove_pod_sandbox(sb["id"])
                    except Exception as e:  # noqa: BLE001 - clean up what can be
                        log(f"removing sandbox {sb['id'][:12]}: {e}")
            except Exception as e:  # noqa: BLE001
                log(f"listing sandboxes: {e}")
            self.rt.close()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in self.shim_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Node:
    """One test's node: a tmpfs work dir, containerd, the kubelet's
    directories (pod logs, the agent's state), a cgroup prefix of its own.
    Paths the DaemonSet takes from the host are remapped to the test's
    where the node's own would be shared with other tests or machines
    (/var/log/pods, /var/lib/termline); kernel ones are the host's."""

    def __init__(self, name, layout, systemd_cgroup=False):
        self.name = name
        self.layout = layout
        self.prefix = f"termline-rt-{os.getpid()}"
        self.work = f"/run/termline-rt-{os.getpid()}"
        self.node_name = f"rt-node-{layout}"
        self.systemd_cgroup = systemd_cgroup
        self.containerd = None
        self.tmpfs = []

    def __enter__(self):
        shutil.rmtree(os.path.join(E.BUILD, "tests", "runtime", f"{self.name}.failed"), ignore_errors=True)
        own_mount_namespace()
        os.makedirs(self.work, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=4g", "tmpfs", self.work], check=True)
        self.pod_logs = os.path.join(self.work, "var-log-pods")
        self.state = os.path.join(self.work, "var-lib-termline")
        for d in (self.pod_logs, self.state):
            os.makedirs(d)
        remove_bridge()
        self.containerd = Containerd(self.work, self.systemd_cgroup).start()
        self.rt = self.containerd.rt
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            self.dump()
        if self.containerd:
            self.containerd.stop()
        for root in cgroup_hierarchies():
            top = os.path.join(root, self.prefix)
            if os.path.isdir(top):
                kill_cgroup(top)
                for d, _, _ in sorted(os.walk(top, topdown=False), key=lambda w: -w[0].count("/")):
                    E.remove_dirs([d], wait=5)
        remove_bridge()
        # lazily: a shim that is still exiting keeps the tmpfs busy
        subprocess.run(["umount", "--recursive", "--lazy", self.work], capture_output=True)
        E.remove_dirs([self.work])
        return False

    def dump(self):
        """What a failed run leaves for its reader: the logs' tails here,
        the agent's state, the Pods' logs and containerd's log under
        BUILD/tests/runtime/<test>.failed/."""
        keep = os.path.join(E.BUILD, "tests", "runtime", f"{self.name}.failed")
        shutil.rmtree(keep, ignore_errors=True)
        for d in (self.state, self.pod_logs):
            shutil.copytree(d, os.path.join(keep, os.path.basename(d)), symlinks=True, dirs_exist_ok=True)
        if self.containerd:
            shutil.copy(self.containerd.log_path, keep)
        print(f"runtime: the failed run's files: {keep}", flush=True)
        paths = [self.containerd.log_path] if self.containerd else []
        for root, _, files in os.walk(self.pod_logs):
            paths += [os.path.join(root, f) for f in files]
        for p in paths:
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            print(f"---- {p} (last 4000 bytes)\n{text[-4000:]}", flush=True)

    def cgroup_parent(self, qos, uid):
        """The Pod's cgroup as the kubelet names it (REFERENCE: cgroup
        paths), under this node's prefix."""
        if self.layout == "systemd":
            u = uid.replace("-", "_")
            return (f"/{self.prefix}/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{u}.slice"
                    if qos != "guaranteed" else f"/{self.prefix}/kubepods.slice/kubepods-pod{u}.slice")
        return (f"/{self.prefix}/kubepods/{qos}/pod{uid}" if qos != "guaranteed"
                else f"/{self.prefix}/kubepods/pod{uid}")

    def mount_tmpfs(self, name, size):
        """An emptyDir with medium Memory: the kubelet mounts a tmpfs."""
        d = os.path.join(self.work, "tmpfs", name)
        os.makedirs(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], check=True)
        return d


def remove_bridge():
    if os.path.exists(f"/sys/class/net/{BRIDGE}"):
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)


def kill_cgroup(top):
    """Every process left below top (a failed run's containers)."""
    try:
        with open(os.path.join(top, "cgroup.kill"), "w") as f:
            f.write("1")
        return
    except OSError:
        pass
    for d, _, _ in os.walk(top):
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                for pid in f:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
        except OSError:
            pass


class Pod:
    """A Pod as the kubelet makes it through the CRI: its sandbox (network
    from CNI), then its containers with their logs under
    <pod logs>/<ns>_<name>_<uid>/<container>/0.log, written by containerd."""

    def __init__(self, node, namespace, name, qos="besteffort", uid=None, labels=None):
        self.node = node
        self.namespace, self.name = namespace, name
        self.uid = uid or str(uuid.uuid4())
        self.qos = qos
        self.labels = labels or {}
        self.log_dir = os.path.join(node.pod_logs, f"{namespace}_{name}_{self.uid}")
        self.cgroup_parent = node.cgroup_parent(qos, self.uid)
        self.sandbox_id = None
        self.ip = None
        self.containers = {}  # name -> id

    def sandbox_config(self):
        return cri.pod_sandbox_config(
            self.name, self.uid, self.namespace, self.log_dir, self.cgroup_parent,
            labels=dict(self.labels, **{"io.kubernetes.pod.name": self.name,
                                        "io.kubernetes.pod.namespace": self.namespace,
                                        "io.kubernetes.pod.uid": self.uid}))

    def run_sandbox(self):
        os.makedirs(self.log_dir, exist_ok=True)
        self.sandbox_id = self.node.rt.run_pod_sandbox(self.sandbox_config())
        st = self.node.rt.pod_sandbox_status(self.sandbox_id, verbose=True)
        self.ip = st["ip"]
        self.sandbox_pid = json.loads(st["info"].get("info", "{}")).get("pid")
        if not self.ip:
            raise AssertionError(f"sandbox of {self.name} has no IP from CNI")
        log(f"Pod {self.namespace}/{self.name} uid {self.uid}: sandbox {self.sandbox_id[:12]} "
            f"(pid {self.sandbox_pid}), IP {self.ip}, cgroup parent {self.cgroup_parent}")
        return self

    def create(self, cname, image, **kw):
        cfg = cri.container_config(
            cname, image, f"{cname}/0.log",
            labels={"io.kubernetes.container.name": cname, "io.kubernetes.pod.name": self.name,
                    "io.kubernetes.pod.namespace": self.namespace, "io.kubernetes.pod.uid": self.uid}, **kw)
        cid = self.node.rt.create_container(self.sandbox_id, cfg, self.sandbox_config())
        self.containers[cname] = cid
        return cid

    def start(self, cname):
        self.node.rt.start_container(self.containers[cname])

    def status(self, cname):
        return self.node.rt.container_status(self.containers[cname], verbose=True)

    def pid(self, cname):
        """The container's main process as the host sees it (containerd's
        verbose status)."""
        info = json.loads(self.status(cname)["info"].get("info", "{}"))
        return info.get("pid")

    def remove(self):
        """What the kubelet does once the containers have stopped."""
        self.node.rt.stop_pod_sandbox(self.sandbox_id)
        self.node.rt.remove_pod_sandbox(self.sandbox_id)


# ---- the DaemonSet, from its manifest ----

def _quantity_milli(q):
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def _quantity_bytes(q):
    q = str(q)
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9}
    for u, m in units.items():
        if q.endswith(u):
            return int(float(q[:-len(u)]) * m)
    return int(q)


def load_daemonset():
    import yaml
    with open(MANIFEST, encoding="utf-8") as f:
        return yaml.safe_load(f)


class AgentPod(Pod):
    """termlined's DaemonSet Pod: the container, its securityContext, its
    volumes and resources read from manifests/daemonset.yaml and passed
    to the CRI as the kubelet passes them. host_paths remaps the
    hostPath volumes the test keeps apart from the host's."""

    def __init__(self, node, api_host, api_port, ca_cert, token, extra_args=()):
        ds = load_daemonset()
        self.spec = ds["spec"]["template"]["spec"]
        self.container = self.spec["containers"][0]
        res = self.container.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        qos = "guaranteed" if req and req == lim else ("burstable" if req or lim else "besteffort")
        super().__init__(node, "termline", "termlined-" + uuid.uuid4().hex[:5], qos=qos,
                         labels=ds["spec"]["template"]["metadata"].get("labels"))
        self.api_host, self.api_port = api_host, api_port
        self.ca_cert, self.token = ca_cert, token
        self.extra_args = list(extra_args)
        self.image = normalize_image(self.container["image"])

    def security(self):
        """LinuxContainerSecurityContext from the container's (and the
        Pod's) securityContext: what the kubelet passes. No
        seccompProfile means Unconfined there (the kubelet's default
        without --seccomp-default)."""
        sc = self.container.get("securityContext", {})
        psc = self.spec.get("securityContext", {})
        caps = sc.get("capabilities", {})
        prof = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        seccomp = {"RuntimeDefault": cri.SECCOMP_RUNTIME_DEFAULT, "Unconfined": cri.SECCOMP_UNCONFINED,
                   None: cri.SECCOMP_UNCONFINED}[prof]
        return cri.security_context(
            cap_add=caps.get("add", []), cap_drop=caps.get("drop", []),
            privileged=bool(sc.get("privileged", False)),
            run_as_user=sc.get("runAsUser", psc.get("runAsUser")),
            readonly_rootfs=bool(sc.get("readOnlyRootFilesystem", False)),
            no_new_privs=sc.get("allowPrivilegeEscalation", True) is False,
            seccomp=seccomp)

    def resources(self):
        res = self.container.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        period = 100000
        return cri.resources(
            cpu_period=period if "cpu" in lim else 0,
            cpu_quota=_quantity_milli(lim["cpu"]) * period // 1000 if "cpu" in lim else 0,
            cpu_shares=max(2, _quantity_milli(req.get("cpu", lim.get("cpu", "0"))) * 1024 // 1000),
            memory_limit=_quantity_bytes(lim["memory"]) if "memory" in lim else 0)

    def volumes(self):
        """host path per volume name, as the kubelet prepares them."""
        out = {}
        remap = {"/var/log/pods": self.node.pod_logs, "/var/lib/termline": self.node.state}
        for v in self.spec.get("volumes", []):
            if "hostPath" in v:
                out[v["name"]] = remap.get(v["hostPath"]["path"], v["hostPath"]["path"])
            elif "configMap" in v:
                d = os.path.join(self.node.work, "configmap", v["name"])
                os.makedirs(d, exist_ok=True)
                shutil.copy(CONFIG_YAML, os.path.join(d, "config.yaml"))
                out[v["name"]] = d
            elif "emptyDir" in v:
                ed = v["emptyDir"] or {}
                if ed.get("medium") == "Memory":
                    out[v["name"]] = self.node.mount_tmpfs(v["name"], ed.get("sizeLimit", "64Mi").replace("i", ""))
                else:
                    out[v["name"]] = os.path.join(self.node.work, "emptydir", v["name"])
                    os.makedirs(out[v["name"]])
            else:
                raise AssertionError(f"{MANIFEST}: volume {v['name']}: a kind the test does not make")
        return out

    def mounts(self):
        vols = self.volumes()
        prop = {None: cri.PROPAGATION_PRIVATE, "None": cri.PROPAGATION_PRIVATE,
                "HostToContainer": cri.PROPAGATION_HOST_TO_CONTAINER,
                "Bidirectional": cri.PROPAGATION_BIDIRECTIONAL}
        out = [cri.mount(m["mountPath"], vols[m["name"]], readonly=bool(m.get("readOnly")),
                         propagation=prop[m.get("mountPropagation")])
               for m in self.container.get("volumeMounts", [])]
        # The ServiceAccount's projected token, as the admission plugin
        # adds it to every Pod and the kubelet mounts it.
        sa = os.path.join(self.node.work, "serviceaccount", self.uid)
        os.makedirs(sa)
        shutil.copy(self.ca_cert, os.path.join(sa, "ca.crt"))
        with open(os.path.join(sa, "token"), "w") as f:
            f.write(self.token)
        with open(os.path.join(sa, "namespace"), "w") as f:
            f.write(self.namespace)
        out.append(cri.mount("/var/run/secrets/kubernetes.io/serviceaccount", sa, readonly=True))
        return out

    def envs(self):
        env = {}
        for e in self.container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
                env[e["name"]] = self.node.node_name
            else:
                raise AssertionError(f"{MANIFEST}: env {e['name']}: a source the test does not fill")
        env["KUBERNETES_SERVICE_HOST"] = self.api_host
        env["KUBERNETES_SERVICE_PORT"] = str(self.api_port)
        return env

    def create_agent(self):
        args = list(self.container.get("args", [])) + self.extra_args
        return self.create(self.container["name"], self.image, command=self.container.get("command", []),
                           args=args, envs=self.envs(), mounts=self.mounts(), security=self.security(),
                           res=self.resources())
