# SPDX-License-Identifier: Apache-2.0
"""The subset of the kubelet's container runtime API (CRI, gRPC service
runtime.v1.RuntimeService) that termline's runtime tests use, with the
protobuf wire encoding written out by hand for exactly these messages.

Field numbers are those of k8s.io/cri-api pkg/apis/runtime/v1/api.proto.
Transport is Debian's python3-grpcio on the runtime's unix socket; requests
and responses cross it as bytes (no generated code, no descriptors).

Encoding (protobuf, proto3): a field is a varint key (number << 3 | wire
type) then its value; wire type 0 is a varint (int32/int64/uint32/bool/enum,
negative ints as 10-byte two's complement), 2 a length-delimited string,
bytes or message. A map<string,string> is a repeated message {1: key,
2: value}. proto3 omits fields equal to their default; a message field that
is set is written even when empty.
"""

import grpc

SERVICE = "/runtime.v1.RuntimeService/"

# enum ContainerState
CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED, CONTAINER_UNKNOWN = 0, 1, 2, 3
# enum MountPropagation
PROPAGATION_PRIVATE, PROPAGATION_HOST_TO_CONTAINER, PROPAGATION_BIDIRECTIONAL = 0, 1, 2
# enum NamespaceMode
NS_POD, NS_CONTAINER, NS_NODE = 0, 1, 2
# SecurityProfile.ProfileType
SECCOMP_RUNTIME_DEFAULT, SECCOMP_UNCONFINED, SECCOMP_LOCALHOST = 0, 1, 2


# ---- encoding ----

def _varint(n):
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num, wire):
    return _varint(num << 3 | wire)


def f_int(num, n):
    return _key(num, 0) + _varint(int(n)) if n else b""


def f_bool(num, b):
    return f_int(num, 1 if b else 0)


def f_bytes(num, b):
    return _key(num, 2) + _varint(len(b)) + b if b else b""


def f_str(num, s):
    return f_bytes(num, s.encode()) if s else b""


def f_msg(num, body):
    """A set message field: written even when body is empty; None: unset."""
    return b"" if body is None else _key(num, 2) + _varint(len(body)) + body


def f_strs(num, items):
    return b"".join(_key(num, 2) + _varint(len(s.encode())) + s.encode() for s in items or ())


def f_map(num, d):
    return b"".join(f_msg(num, f_str(1, k) + f_str(2, v)) for k, v in sorted((d or {}).items()))


# ---- decoding ----

def decode(buf):
    """{field number: [values]}: ints for varints, bytes for the rest."""
    out, i, n = {}, 0, len(buf)

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    while i < n:
        k = varint()
        num, wire = k >> 3, k & 7
        if wire == 0:
            v = varint()
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            ln = varint()
            if i + ln > n:
                raise ValueError("truncated field")
            v, i = bytes(buf[i:i + ln]), i + ln
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(num, []).append(v)
    return out


def _one(d, num, default):
    v = d.get(num)
    return v[-1] if v else default


def _str(d, num):
    return _one(d, num, b"").decode()


def _int64(d, num):
    v = _one(d, num, 0)
    return v - (1 << 64) if v >= 1 << 63 else v


def _map(d, num):
    out = {}
    for e in d.get(num, []):
        kv = decode(e)
        out[_str(kv, 1)] = _str(kv, 2)
    return out


# ---- messages (only the fields used) ----

def pod_sandbox_config(name, uid, namespace, log_directory, cgroup_parent, hostname=None, labels=None,
                       annotations=None, attempt=0):
    """PodSandboxConfig: metadata{1 name, 2 uid, 3 namespace, 4 attempt},
    2 hostname, 3 log_directory, 6 labels, 7 annotations,
    8 linux{1 cgroup_parent, 2 security_context{1 namespace_options}}.
    The Pod's network, PID and IPC namespaces are the Pod's own (POD)."""
    meta = f_str(1, name) + f_str(2, uid) + f_str(3, namespace) + f_int(4, attempt)
    nsopts = f_int(1, NS_POD) + f_int(2, NS_CONTAINER) + f_int(3, NS_POD)
    linux = f_str(1, cgroup_parent) + f_msg(2, f_msg(1, nsopts))
    return (f_msg(1, meta) + f_str(2, hostname or name) + f_str(3, log_directory) + f_map(6, labels) +
            f_map(7, annotations) + f_msg(8, linux))


def mount(container_path, host_path, readonly=False, propagation=PROPAGATION_PRIVATE):
    """Mount{1 container_path, 2 host_path, 3 readonly, 5 propagation}."""
    return f_str(1, container_path) + f_str(2, host_path) + f_bool(3, readonly) + f_int(5, propagation)


def security_context(cap_add=(), cap_drop=(), privileged=False, run_as_user=None, readonly_rootfs=False,
                     no_new_privs=False, seccomp=SECCOMP_RUNTIME_DEFAULT):
    """LinuxContainerSecurityContext: 1 capabilities{1 add, 2 drop},
    2 privileged, 3 namespace_options{2 pid: CONTAINER}, 5 run_as_user{1},
    7 readonly_rootfs, 11 no_new_privs, 15 seccomp{1 profile_type}."""
    caps = f_strs(1, cap_add) + f_strs(2, cap_drop)
    nsopts = f_int(1, NS_POD) + f_int(2, NS_CONTAINER) + f_int(3, NS_POD)
    return (f_msg(1, caps) + f_bool(2, privileged) + f_msg(3, nsopts) +
            (f_msg(5, f_int(1, run_as_user)) if run_as_user is not None else b"") +
            f_bool(7, readonly_rootfs) + f_bool(11, no_new_privs) + f_msg(15, f_int(1, seccomp)))


def resources(cpu_period=0, cpu_quota=0, cpu_shares=0, memory_limit=0, oom_score_adj=0):
    """LinuxContainerResources{1 cpu_period, 2 cpu_quota, 3 cpu_shares,
    4 memory_limit_in_bytes, 5 oom_score_adj}."""
    return (f_int(1, cpu_period) + f_int(2, cpu_quota) + f_int(3, cpu_shares) + f_int(4, memory_limit) +
            f_int(5, oom_score_adj))


def container_config(name, image, log_path, command=(), args=(), envs=None, mounts=(), labels=None,
                     annotations=None, security=None, res=None, attempt=0):
    """ContainerConfig: 1 metadata{1 name, 2 attempt}, 2 image{1 image},
    3 command, 4 args, 6 envs{1 key, 2 value}, 7 mounts, 9 labels,
    10 annotations, 11 log_path, 15 linux{1 resources, 2 security_context}."""
    envs_b = b"".join(f_msg(6, f_str(1, k) + f_bytes(2, v.encode())) for k, v in (envs or {}).items())
    linux = (f_msg(1, res) if res is not None else b"") + (f_msg(2, security) if security is not None else b"")
    return (f_msg(1, f_str(1, name) + f_int(2, attempt)) + f_msg(2, f_str(1, image)) + f_strs(3, command) +
            f_strs(4, args) + envs_b + b"".join(f_msg(7, m) for m in mounts) + f_map(9, labels) +
            f_map(10, annotations) + f_str(11, log_path) + f_msg(15, linux))


class Runtime:
    """A CRI client on a unix socket. Every call raises grpc.RpcError on a
    runtime error, with the runtime's message."""

    def __init__(self, socket_path, timeout=60):
        self.channel = grpc.insecure_channel("unix://" + socket_path)
        self.timeout = timeout

    def close(self):
        self.channel.close()

    def call(self, method, request, timeout=None):
        fn = self.channel.unary_unary(SERVICE + method)
        return decode(fn(request, timeout=timeout or self.timeout))

    def version(self):
        """VersionRequest{1 version} -> {runtime_name, runtime_version, runtime_api_version}."""
        d = self.call("Version", f_str(1, "v1"))
        return {"version": _str(d, 1), "runtimeName": _str(d, 2), "runtimeVersion": _str(d, 3),
                "runtimeApiVersion": _str(d, 4)}

    def run_pod_sandbox(self, config, runtime_handler=""):
        """RunPodSandboxRequest{1 config, 2 runtime_handler} -> {1 pod_sandbox_id}."""
        return _str(self.call("RunPodSandbox", f_msg(1, config) + f_str(2, runtime_handler)), 1)

    def pod_sandbox_status(self, sandbox_id, verbose=False):
        """PodSandboxStatusResponse{1 status{1 id, 3 state, 5 network{1 ip}}, 2 info}."""
        d = self.call("PodSandboxStatus", f_str(1, sandbox_id) + f_bool(2, verbose))
        st = decode(_one(d, 1, b""))
        net = decode(_one(st, 5, b""))
        return {"id": _str(st, 1), "state": _one(st, 3, 0), "ip": _str(net, 1), "info": _map(d, 2)}

    def stop_pod_sandbox(self, sandbox_id):
        self.call("StopPodSandbox", f_str(1, sandbox_id))

    def remove_pod_sandbox(self, sandbox_id):
        self.call("RemovePodSandbox", f_str(1, sandbox_id))

    def list_pod_sandbox(self):
        """ListPodSandboxResponse{1 items: PodSandbox{1 id, 2 metadata{1 name, 2 uid, 3 namespace}}}."""
        out = []
        for item in self.call("ListPodSandbox", b"").get(1, []):
            p = decode(item)
            md = decode(_one(p, 2, b""))
            out.append({"id": _str(p, 1), "name": _str(md, 1), "uid": _str(md, 2), "namespace": _str(md, 3)})
        return out

    def create_container(self, sandbox_id, config, sandbox_config):
        """CreateContainerRequest{1 pod_sandbox_id, 2 config, 3 sandbox_config} -> {1 container_id}."""
        return _str(self.call("CreateContainer", f_str(1, sandbox_id) + f_msg(2, config) +
                              f_msg(3, sandbox_config)), 1)

    def start_container(self, container_id):
        self.call("StartContainer", f_str(1, container_id))

    def stop_container(self, container_id, timeout_s):
        """StopContainerRequest{1 container_id, 2 timeout}: the stop signal,
        then SIGKILL once timeout seconds have passed. The call returns when
        the container has exited."""
        self.call("StopContainer", f_str(1, container_id) + f_int(2, timeout_s), timeout=timeout_s + 60)

    def remove_container(self, container_id):
        self.call("RemoveContainer", f_str(1, container_id))

    def container_status(self, container_id, verbose=False):
        """ContainerStatusResponse{1 status{1 id, 3 state, 5 started_at,
        6 finished_at, 7 exit_code, 10 reason, 15 log_path}, 2 info}."""
        d = self.call("ContainerStatus", f_str(1, container_id) + f_bool(2, verbose))
        st = decode(_one(d, 1, b""))
        return {"id": _str(st, 1), "state": _one(st, 3, 0), "startedAt": _int64(st, 5),
                "finishedAt": _int64(st, 6), "exitCode": _int64(st, 7), "reason": _str(st, 10),
                "logPath": _str(st, 15), "info": _map(d, 2)}
