#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the HTTP/2 fuzzers' seed corpora from the recorded connections
of this directory and RFC 7541's examples:

    tests/capture/corpus/hpack/    fuzz-hpack's input (tests/capture/fuzz-hpack.c)
    tests/capture/corpus/h2/       fuzz-h2-conn's (fuzz-h2-conn.c)
    tests/capture/corpus/h2-pair/  fuzz-h2-pair's: the kernel's TL_HTTP_REC_H2
                                   records (bpf/include/termline-http.h)

    tests/capture/h2/make-seeds.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "corpus")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

RFC = {  # RFC 7541 Appendix C: (limit bits of fuzz-hpack's byte 0, blocks)
    "rfc-c3": (0, ["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
                   "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"]),
    "rfc-c4": (0, ["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
                   "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"]),
    "rfc-c5": (0x10, [
        "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54"
        "6e1768747470733a2f2f7777772e6578616d706c652e636f6d",
        "4803333037c1c0bf",
        "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f"
        "3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076"
        "657273696f6e3d31"]),
    "rfc-c6": (0x10, [
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f"
        "0b97c8e9ae82ae43d3",
        "4883640effc1c0bf",
        "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335df"
        "dfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007"]),
}


def load(name):
    d = open(os.path.join(HERE, name), "rb").read()
    magic = b"termline-h2-capture 1\n"
    assert d.startswith(magic)
    at, out = len(magic), []
    while at < len(d):
        nl = d.index(b"\n", at)
        dr, ts, n = map(int, d[at:nl].split())
        at = nl + 1
        out.append((dr, ts, d[at:at + n]))
        at += n + 1
    return [c for c in out if c[0] < 2]


def frames(data):
    """(type, flags, sid, payload) of a direction's byte stream."""
    i = len(PREFACE) if data.startswith(PREFACE) else 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        yield data[i + 3], data[i + 4], int.from_bytes(data[i + 5:i + 9], "big") & 0x7fffffff, \
            data[i + 9:i + 9 + n]
        i += 9 + n


def write(sub, name, b):
    d = os.path.join(CORPUS, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(b)


def hpack_seeds(caps):
    for name, (ctl, blocks) in RFC.items():
        out = bytes([ctl, 5])
        for h in blocks:
            b = bytes.fromhex(h)
            out += bytes([len(b)]) + b
        write("hpack", name, out)
    # the first blocks of each side of the captures, in order (the table
    # carries over)
    for cap, chunks in caps.items():
        for dr in (0, 1):
            stream = b"".join(c[2] for c in chunks if c[0] == dr)
            out = bytes([0, 3])
            for t, fl, sid, p in frames(stream):
                if t == 1 and len(out) < 1500:
                    if fl & 0x8:
                        p = p[1:len(p) - p[0]]
                    if fl & 0x20:
                        p = p[5:]
                    if len(p) < 256:
                        out += bytes([len(p)]) + p
            write("hpack", "%s-%s" % (cap, ("client", "server")[dr]), out)


def conn_seeds(caps):
    for cap, chunks in caps.items():
        for ctl, start, tag in ((0, 0, "whole"), (0x4, 3, "mid"), (0x1, 0, "bounded")):
            out = bytes([ctl])
            for dr, ts, data in chunks[start:]:
                out += bytes([dr | 0x8]) + struct.pack(">H", len(data)) + data
            write("h2", "%s-%s" % (cap, tag), out)


def kernel_records(chunks, tracked_server=True):
    """The TL_HTTP_REC_H2 records http.bpf.c writes for each call: frame
    headers and the payload bytes it copies in segments, the rest said as
    skipped."""
    cap = {1: 16384, 5: 16384, 9: 16384, 3: 4, 4: 256, 7: 72}
    state = {0: None, 1: None}
    recs = []
    for dr, ts, data in chunks:
        st = state[dr]
        if st is None:
            st = state[dr] = {"hn": 0, "hdr": b"", "left": 0, "copy": 0, "pre": 0}
            if data.startswith(b"PRI "):
                st["left"] = st["copy"] = 24
        segs = []  # [copy bytes, skip]

        def copy(b):
            if segs and segs[-1][1] == 0:
                segs[-1][0] += b
            else:
                segs.append([bytearray(b), 0])

        def skip(n):
            if not segs:
                segs.append([bytearray(), 0])
            segs[-1][1] += n
        i = 0
        while i < len(data):
            if st["left"] == 0:
                k = min(9 - st["hn"], len(data) - i)
                st["hdr"] += data[i:i + k]
                st["hn"] += k
                copy(data[i:i + k])
                i += k
                if st["hn"] == 9:
                    h = st["hdr"]
                    n = int.from_bytes(h[0:3], "big")
                    st["left"], st["copy"] = n, min(n, cap.get(h[3], 0))
                    st["hn"], st["hdr"] = 0, b""
                continue
            k = min(st["left"], len(data) - i)
            if st["copy"]:
                k = min(k, st["copy"])
                copy(data[i:i + k])
                st["copy"] -= k
            else:
                skip(k)
            st["left"] -= k
            i += k
        body = b"".join(struct.pack("<IHBB", sk, len(cp), 0, 0) + bytes(cp) for cp, sk in segs)
        read = (dr == 0) == tracked_server
        recs.append((0x1 if read else 0, body))
    return recs


def pair_seeds(caps):
    for cap, chunks in caps.items():
        for server, tag in ((True, "server"), (False, "client")):
            out = bytes([0x4 | (0x8 if server else 0)])
            for flags, body in kernel_records(chunks, server):
                out += struct.pack(">HH", flags, len(body)) + body
            write("h2-pair", "%s-%s" % (cap, tag), out)


def main():
    caps = {"h2load": load("h2load.cap"), "grpc": load("grpc.cap")}
    hpack_seeds(caps)
    conn_seeds(caps)
    pair_seeds(caps)


if __name__ == "__main__":
    main()
