#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The deployment in manifests/ renders and keeps its promises: read-only
RBAC, a DaemonSet with only the capabilities it needs, and a ConfigMap that
termlined accepts.

usage: test-manifests.py MANIFESTS_DIR CONFIG_CHECK

Renders with `kubectl kustomize`. kubectl is no Debian package; where it is
missing the same checks run on the files themselves, with the namespace and
the generated ConfigMap put in place as kustomize would."""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

ALLOWED_VERBS = {"get", "list", "watch"}
REQUIRED_CAPS = {"BPF", "PERFMON"}
# Any capability beyond these needs a reason written next to it in
# daemonset.yaml and an update here.
ALLOWED_CAPS = REQUIRED_CAPS | {"DAC_READ_SEARCH"}
NAMESPACE = "termline"
NAME_LABEL = ("app.kubernetes.io/name", "termline")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def render_with_kubectl(kubectl, mdir):
    p = subprocess.run([kubectl, "kustomize", mdir], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        sys.exit(f"kubectl kustomize {mdir} failed with status {p.returncode}")
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def render_by_hand(mdir):
    """What kustomize does to these files, for the checks below."""
    with open(os.path.join(mdir, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    docs = []
    for res in k.get("resources", []):
        with open(os.path.join(mdir, res)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    for gen in k.get("configMapGenerator", []):
        data = {}
        for fname in gen.get("files", []):
            with open(os.path.join(mdir, fname)) as f:
                data[os.path.basename(fname)] = f.read()
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": gen["name"]}, "data": data})
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for d in docs:
        md = d.setdefault("metadata", {})
        if d["kind"] not in cluster_scoped and k.get("namespace"):
            md["namespace"] = k["namespace"]
        for lab in k.get("labels", []):
            md.setdefault("labels", {}).update(lab.get("pairs", {}))
            if d["kind"] == "DaemonSet" and lab.get("includeSelectors"):
                d["spec"]["selector"]["matchLabels"].update(lab["pairs"])
                d["spec"]["template"]["metadata"]["labels"].update(lab["pairs"])
            if d["kind"] == "Service" and lab.get("includeSelectors"):
                d["spec"]["selector"].update(lab["pairs"])
    return docs


def one(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    check(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0] if found else None


def check_rbac(docs):
    role = one(docs, "ClusterRole")
    if not role:
        return
    resources = set()
    for rule in role.get("rules", []):
        verbs = set(rule.get("verbs", []))
        check(verbs and verbs <= ALLOWED_VERBS, f"ClusterRole verbs {sorted(verbs)} go beyond get/list/watch")
        check("*" not in rule.get("resources", []) and "*" not in rule.get("apiGroups", []),
              "ClusterRole uses a wildcard")
        check(not rule.get("nonResourceURLs"), "ClusterRole grants non-resource URLs")
        for g in rule.get("apiGroups", []):
            for r in rule.get("resources", []):
                resources.add((g, r))
    check(resources == {("", "pods"), ("discovery.k8s.io", "endpointslices")},
          f"ClusterRole covers {sorted(resources)}, expected pods and endpointslices only")
    binding = one(docs, "ClusterRoleBinding")
    sa = one(docs, "ServiceAccount")
    if binding and sa:
        check(binding["roleRef"]["name"] == role["metadata"]["name"], "binding names another role")
        check({"kind": "ServiceAccount", "name": sa["metadata"]["name"],
               "namespace": sa["metadata"]["namespace"]} in binding.get("subjects", []),
              "binding does not name the agent's ServiceAccount")
    for d in docs:
        check(d["kind"] not in ("Role", "RoleBinding"), f"unexpected {d['kind']}")


def check_daemonset(docs, config_check):
    ds = one(docs, "DaemonSet")
    if not ds:
        return
    pod = ds["spec"]["template"]["spec"]
    check(ds["spec"]["selector"]["matchLabels"].items() <=
          ds["spec"]["template"]["metadata"]["labels"].items(),
          "DaemonSet selector does not match its template")
    check(not pod.get("hostPID"), "hostPID is set (tracepoints do not need it)")
    check(not pod.get("hostNetwork"), "hostNetwork is set")
    check(pod.get("priorityClassName") == "system-node-critical", "priorityClassName is not system-node-critical")
    check({"operator": "Exists"} in pod.get("tolerations", []), "no toleration with operator Exists")
    sa = one(docs, "ServiceAccount")
    check(sa and pod.get("serviceAccountName") == sa["metadata"]["name"], "Pod does not use the ServiceAccount")

    containers = pod.get("containers", [])
    check(len(containers) == 1, "expected one container")
    c = containers[0]
    sc = c.get("securityContext", {})
    caps = sc.get("capabilities", {})
    added = set(caps.get("add", []))
    check(caps.get("drop") == ["ALL"], "capabilities do not drop ALL")
    check(REQUIRED_CAPS <= added, f"capabilities {sorted(added)} lack BPF or PERFMON")
    check(added <= ALLOWED_CAPS, f"capabilities {sorted(added - ALLOWED_CAPS)} are not justified")
    check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem is not true")
    check(sc.get("privileged") is not True, "container is privileged")
    check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
    check(sc.get("runAsUser") == 0, "runAsUser is not 0")

    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          "NODE_NAME does not come from spec.nodeName")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(ports.get("http-metrics") == 9440, "no container port http-metrics 9440")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == path and get.get("port") in ("http-metrics", 9440),
              f"{probe} is not GET {path} on 9440")
    res = c.get("resources", {})
    for part in ("requests", "limits"):
        check({"cpu", "memory"} <= set(res.get(part, {})), f"resources.{part} lacks cpu or memory")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    host_paths = {}
    for path, m in mounts.items():
        v = volumes.get(m["name"])
        check(v is not None, f"mount {path} names no volume")
        if v and "hostPath" in v:
            host_paths[v["hostPath"]["path"]] = m
    for hp in ("/sys/fs/cgroup", "/sys/kernel/btf", "/sys/kernel/tracing", "/var/log/pods", "/var/lib/termline"):
        check(hp in host_paths, f"no hostPath mount of {hp}")
    if "/var/log/pods" in host_paths:
        check(host_paths["/var/log/pods"].get("readOnly") is True, "/var/log/pods is not read-only")
    for hp, m in host_paths.items():
        if hp != "/var/lib/termline":
            check(m.get("readOnly") is True, f"hostPath {hp} is writable")

    # The config file as the container sees it: the ConfigMap key under the
    # mount that --config names.
    args = c.get("args", []) + c.get("command", [])
    conf_args = [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
    check(len(conf_args) == 1, "the container is not started with --config=FILE")
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    if not conf_args:
        return
    conf_dir, conf_key = os.path.split(conf_args[0])
    m = mounts.get(conf_dir)
    if not check(m is not None, f"nothing mounted at {conf_dir}"):
        return
    cm_name = volumes[m["name"]].get("configMap", {}).get("name")
    cm = cms.get(cm_name)
    if not check(cm is not None and conf_key in cm.get("data", {}),
                 f"ConfigMap {cm_name} with key {conf_key} is not part of the deployment"):
        return
    text = cm["data"][conf_key]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([config_check, path], capture_output=True, text=True,
                           env=dict(os.environ, NODE_NAME="node-1"))
        if not check(p.returncode == 0, f"termlined rejects the ConfigMap's config.yaml: {p.stderr.strip()}"):
            return
        settings = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
        # Inside the container /sys/fs/cgroup is the Pod's own cgroup
        # namespace: the host tree must be named where it is mounted.
        cg = settings.get("cgroup-root", "")
        check(cg in mounts or any(cg.startswith(mp + "/") for mp in mounts
                                  if volumes[mounts[mp]["name"]].get("hostPath", {}).get("path") == "/sys/fs/cgroup"),
              f"cgroup-root {cg!r} is not the host cgroup mount")
        check(settings.get("state-dir") in mounts, "state-dir is not a mounted volume")
        check(settings.get("pod-logs-dir") in mounts, "pod-logs-dir is not a mounted volume")
        check(settings.get("listen", "").endswith(":9440"), "listen is not on port 9440")

        # The check itself must be able to fail: a wrong key is refused.
        with open(path, "w") as f:
            f.write(text + "\nlinger_s: 10\n")
        p = subprocess.run([config_check, path], capture_output=True, text=True)
        check(p.returncode == 2 and "unknown key 'linger_s'" in p.stderr,
              "config-check accepted an unknown key")


def check_service(docs):
    svc = one(docs, "Service")
    ds = one(docs, "DaemonSet")
    if not svc or not ds:
        return
    ports = svc["spec"].get("ports", [])
    check(any(p.get("name") == "http-metrics" and p.get("port") == 9440 for p in ports),
          "Service has no port http-metrics 9440")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    check(svc["spec"].get("selector") and svc["spec"]["selector"].items() <= labels.items(),
          "Service selector does not select the agent Pods")


def check_common(docs):
    kinds = sorted(d["kind"] for d in docs)
    check(kinds == sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                           "ConfigMap", "DaemonSet", "Service"]), f"unexpected set of objects {kinds}")
    ns = one(docs, "Namespace")
    check(ns and ns["metadata"]["name"] == NAMESPACE, "Namespace is not termline")
    for d in docs:
        md = d["metadata"]
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            check(md.get("namespace") == NAMESPACE, f"{d['kind']} {md['name']} is not in namespace termline")
        check(md.get("labels", {}).get(NAME_LABEL[0]) == NAME_LABEL[1],
              f"{d['kind']} {md['name']} lacks the label {NAME_LABEL[0]}")


def check_user_rbac(mdir):
    """manifests/user-rbac.yaml, the CLI user's role (docs/cli.md): read-only,
    pods/proxy only in the agents' namespace, and not deployed with the agent."""
    with open(os.path.join(mdir, "kustomization.yaml")) as f:
        check("user-rbac.yaml" not in yaml.safe_load(f).get("resources", []),
              "user-rbac.yaml is the users' role, not part of the agent's kustomization")
    with open(os.path.join(mdir, "user-rbac.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    proxy = set()
    for d in docs:
        check(d["kind"] in ("ClusterRole", "Role"), f"user-rbac.yaml: unexpected {d['kind']}")
        for rule in d.get("rules", []):
            check(set(rule["verbs"]) <= ALLOWED_VERBS, f"user-rbac.yaml: {d['kind']} allows {rule['verbs']}")
            if "pods/proxy" in rule.get("resources", []):
                proxy.add((d["kind"], d["metadata"].get("namespace"), tuple(rule["verbs"])))
    check(proxy == {("Role", NAMESPACE, ("get",))},
          f"user-rbac.yaml: pods/proxy must be get, in a Role of namespace {NAMESPACE} only: {proxy}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mdir, config_check = sys.argv[1], sys.argv[2]
    kubectl = shutil.which("kubectl") or ("/usr/bin/kubectl" if os.access("/usr/bin/kubectl", os.X_OK) else None)
    if kubectl:
        docs = render_with_kubectl(kubectl, mdir)
        print(f"rendered with {kubectl} kustomize: {len(docs)} objects")
    else:
        docs = render_by_hand(mdir)
        print(f"kubectl not found: checked the files of {mdir} as kustomize would combine them")
    check_common(docs)
    check_rbac(docs)
    check_daemonset(docs, config_check)
    check_service(docs)
    check_user_rbac(mdir)
    for f in failures:
        print(f"FAIL: {f}")
    print(f"{'manifests: ' + str(len(failures)) + ' problem(s)' if failures else 'manifests: all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
