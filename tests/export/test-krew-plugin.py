#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubectl-termline as krew installs it: plugins/termline.yaml is a valid
krew Plugin manifest for this version, and `tools/dev release` builds the
archive it names (kubectl-termline and LICENSE at its top, byte for byte
the same when built again) and the manifest with that archive's URL and
sha256; the binary in it runs."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

import yaml

SRC = os.environ.get("TERMLINE_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("TERMLINE_BUILD_ROOT", os.path.join(SRC, "build"))
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def project_version():
    with open(os.path.join(SRC, "meson.build"), encoding="utf-8") as f:
        return re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)


def check_manifest(m, version, what):
    assert m["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and m["kind"] == "Plugin", what
    assert m["metadata"]["name"] == "termline", what
    s = m["spec"]
    assert s["version"] == "v" + version, (what, s["version"], version)
    assert s["homepage"].startswith("https://"), what
    assert 0 < len(s["shortDescription"]) <= 50 and s["description"].strip(), what
    assert s["platforms"], what
    for p in s["platforms"]:
        labels = p["selector"]["matchLabels"]
        assert labels["os"] == "linux" and labels["arch"] in ("amd64", "arm64"), (what, labels)
        assert p["uri"].startswith("https://") and p["uri"].endswith(".tar.gz"), (what, p["uri"])
        assert f"v{version}" in p["uri"] and f"linux_{labels['arch']}" in p["uri"], (what, p["uri"])
        assert HEX64.match(p["sha256"]), (what, p["sha256"])
        assert p["bin"] == "kubectl-termline", what
        froms = [f["from"] for f in p["files"]]
        assert p["bin"] in froms and "LICENSE" in froms and all(f["to"] == "." for f in p["files"]), what
    return s["platforms"]


def release(out):
    r = subprocess.run([os.path.join(SRC, "tools", "dev"), "release", out], capture_output=True, text=True,
                       env=dict(os.environ, TERMLINE_BUILD_DIR=BUILD), timeout=120)
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stdout.strip().splitlines() if " " in ln)
    archive = [ln for ln in r.stdout.splitlines() if ln.endswith(".tar.gz")][0]
    return archive, lines["sha256"], lines["manifest"]


def main():
    version = project_version()
    with open(os.path.join(SRC, "plugins", "termline.yaml"), encoding="utf-8") as f:
        check_manifest(yaml.safe_load(f), version, "plugins/termline.yaml")
    work = tempfile.mkdtemp(prefix="termline-release-")
    try:
        archive, sha, manifest = release(os.path.join(work, "a"))
        with open(archive, "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == sha, "the printed sha256 is not the archive's"
        with open(manifest, encoding="utf-8") as f:
            (p,) = check_manifest(yaml.safe_load(f), version, manifest)
        assert p["sha256"] == sha and p["uri"].rsplit("/", 1)[1] == os.path.basename(archive), p
        with tarfile.open(archive) as t:
            members = {m.name: m for m in t.getmembers()}
            assert sorted(members) == sorted(f["from"] for f in p["files"]), sorted(members)
            assert members["kubectl-termline"].mode & 0o111 and members["kubectl-termline"].isfile()
            with open(os.path.join(SRC, "LICENSE"), "rb") as f:
                assert t.extractfile("LICENSE").read() == f.read(), "LICENSE differs from the repository's"
            t.extract("kubectl-termline", work)
        r = subprocess.run([os.path.join(work, "kubectl-termline"), "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "termline" in r.stdout, (r.returncode, r.stderr)
        # the same files, the same bytes
        archive2, sha2, _ = release(os.path.join(work, "b"))
        assert sha2 == sha, "tools/dev release is not reproducible"
        print(f"ok: {os.path.basename(archive)} sha256 {sha}: kubectl-termline and LICENSE, manifest valid")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
