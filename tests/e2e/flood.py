#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Sends itself SIGUSR1 (to a handler) as fast as it can for N seconds and
prints how many it sent: two kernel events each (process.signal,
process.signal_delivered)."""
import os
import signal
import sys
import time

signal.signal(signal.SIGUSR1, lambda s, f: None)
end = time.monotonic() + float(sys.argv[1])
n = 0
pid = os.getpid()
while time.monotonic() < end:
    for _ in range(1000):
        os.kill(pid, signal.SIGUSR1)
    n += 1000
print(n)
