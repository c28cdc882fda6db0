#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Installs the OTLP receiver's npm packages (package.json and
package-lock.json, exactly as locked) into DIR/node_modules and touches
STAMP: npm-ci.py DIR STAMP package.json package-lock.json"""
import os
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    out, stamp, pkg, lock = sys.argv[1:]
    npm = shutil.which("npm")
    if not npm:
        print("npm-ci.py: npm not found (tools/dev deps installs nodejs and npm)", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(pkg, os.path.join(out, "package.json"))
    shutil.copyfile(lock, os.path.join(out, "package-lock.json"))
    # Node trusts its own CA list, not the system's: a machine whose
    # registry is reached through a proxy with a local CA (added to the
    # system's store by update-ca-certificates) needs the system's bundle.
    env = dict(os.environ)
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    if "NODE_EXTRA_CA_CERTS" not in env and os.path.exists(bundle):
        env["NODE_EXTRA_CA_CERTS"] = bundle
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                       cwd=out, env=env)
    if r.returncode != 0:
        print(f"npm-ci.py: npm ci in {out} failed ({r.returncode})", file=sys.stderr)
        return 1
    with open(stamp, "w", encoding="utf-8"):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
