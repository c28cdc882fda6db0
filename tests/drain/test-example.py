#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""manifests/examples/prestop-gate.yaml keeps its promises: the init
container copies termline-wait from the termline image into the emptyDir the
app mounts, the preStop runs it from there with flags it accepts, POD_UID and
HOST_IP come from the downward API, the grace period covers the gate's
timeout plus time for the app to stop, and the DaemonSet publishes the port
termline-wait calls on the node's address."""
import os
import re
import socket
import subprocess
import sys

import yaml

SRC = os.environ.get("TERMLINE_SOURCE_ROOT", ".")
BUILD = os.environ.get("TERMLINE_BUILD_ROOT", "build")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def seconds(d):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", d)
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[m.group(2)]


with open(os.path.join(SRC, "manifests", "examples", "prestop-gate.yaml"), encoding="utf-8") as f:
    dep = yaml.safe_load(f)
spec = dep["spec"]["template"]["spec"]
init = spec["initContainers"][0]
app = next(c for c in spec["containers"] if c["name"] == "app")
vol = next(v for v in spec["volumes"] if "emptyDir" in v)
init_mount = next(m for m in init["volumeMounts"] if m["name"] == vol["name"])
app_mount = next(m for m in app["volumeMounts"] if m["name"] == vol["name"])
check(init["image"].startswith("termline/termlined:"), "init container runs the termline image")
check(init["command"][:2] == ["cp", "/usr/bin/termline-wait"] and init["command"][2].startswith(init_mount["mountPath"] + "/"),
      f"init container copies termline-wait into the emptyDir: {init['command']}")
cmd = app["lifecycle"]["preStop"]["exec"]["command"]
installed = init["command"][2].replace(init_mount["mountPath"], app_mount["mountPath"], 1)
check(cmd[0] == installed, f"preStop runs the copy ({cmd[0]} vs {installed})")
env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in app["env"] if "valueFrom" in e}
check(env.get("POD_UID") == "metadata.uid" and env.get("HOST_IP") == "status.hostIP", f"downward API: {env}")
flags = dict(a[2:].split("=", 1) for a in cmd[1:])
grace = spec["terminationGracePeriodSeconds"]
check(grace >= seconds(flags["timeout"]) + 5, f"grace {grace}s leaves the app no time after a {flags['timeout']} gate")
check(seconds(flags["fallback"]) < seconds(flags["timeout"]), "the fallback sleep is shorter than the gate's timeout")

# The preStop's own flags are accepted (bad usage would be exit 2): run it
# against a port where nothing listens, with a short fallback appended.
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
r = subprocess.run([os.path.join(BUILD, "tools", "termline-wait")] + cmd[1:] + ["--fallback=100ms", f"--port={port}"],
                   env={"POD_UID": "0d7a1b2c-0000-4000-8000-00000000e7a1", "HOST_IP": "127.0.0.1"},
                   capture_output=True, text=True, timeout=30)
check(r.returncode == 1 and "fallback" in r.stderr, f"the example's flags: exit {r.returncode}: {r.stderr!r}")

with open(os.path.join(SRC, "manifests", "daemonset.yaml"), encoding="utf-8") as f:
    ds = yaml.safe_load(f)
ports = ds["spec"]["template"]["spec"]["containers"][0]["ports"]
check(any(p.get("hostPort") == 9440 and p.get("containerPort") == 9440 for p in ports),
      "the DaemonSet publishes 9440 on the node's address (hostPort)")
if failures:
    sys.exit(1)
print("example ok")
