// SPDX-License-Identifier: Apache-2.0
// The tests' OTLP/HTTP receiver: POST /v1/traces and /v1/logs, decoded with
// the official definitions (otlp-lib.js), each request written as one JSON
// line to --out:
//   {"n", "time" (ms since the epoch), "path", "contentType", "bytes",
//    "fault", "status", "error", "request" (the decoded request, when
//    answered 2xx)}
// Faults (--faults, comma-separated, one per request in arrival order; then
// every request is answered 200):
//   429:S        429 with Retry-After: S
//   429date:S    429 with Retry-After: the HTTP-date S seconds from now
//   503 502 504 500 400 413   that status, a short text body
//   slow:MS      answer 200 after MS milliseconds
//   disconnect   close the connection without an answer
//   partial:N    200 with partial_success rejecting N
//   ok           200
// A request that does not decode is answered 400 (and recorded with its
// error) whatever the faults say.
//   node otlp-receiver.js --port-file F --out F [--faults SPEC] [--modules DIR]
"use strict";
const fs = require("fs");
const http = require("http");
const lib = require("./otlp-lib");

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

const root = lib.loadRoot(arg("--modules"));
const out = fs.openSync(arg("--out"), "a");
const faults = (arg("--faults", "") || "").split(",").filter((s) => s);
const MAX_BODY = 64 << 20;
let n = 0;

function record(o) {
  fs.writeSync(out, JSON.stringify(o) + "\n");
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on("end", () => {
    const k = n++;
    const fault = k < faults.length ? faults[k] : "ok";
    const signal = req.url === "/v1/traces" ? "traces" : req.url === "/v1/logs" ? "logs" : null;
    const ctype = (req.headers["content-type"] || "").split(";")[0].trim();
    const format = ctype === "application/x-protobuf" ? "protobuf" : ctype === "application/json" ? "json" : null;
    const rec = { n: k, time: Date.now(), path: req.url, contentType: ctype, bytes: size, fault,
                  method: req.method, headers: req.headers };
    let decoded = null;
    try {
      if (req.method !== "POST") throw new Error(`method ${req.method}`);
      if (!signal) throw new Error(`path ${req.url}`);
      if (!format) throw new Error(`content type ${ctype}`);
      if (size > MAX_BODY) throw new Error("body too large");
      decoded = lib.decode(root, signal, format, Buffer.concat(chunks));
    } catch (e) {
      rec.status = 400;
      rec.error = e.message;
      record(rec);
      res.writeHead(400, { "Content-Type": "text/plain" });
      res.end(`bad request: ${e.message}\n`);
      return;
    }
    const [kind, val] = fault.split(":");
    const ok = (rejected) => {
      rec.status = 200;
      rec.request = decoded;
      if (rejected) rec.rejected = rejected;
      record(rec);
      res.writeHead(200, { "Content-Type": ctype });
      res.end(lib.response(root, signal, format, rejected, rejected ? "rejected by the test" : ""));
    };
    if (kind === "ok") ok(0);
    else if (kind === "partial") ok(Number(val));
    else if (kind === "slow") setTimeout(() => ok(0), Number(val));
    else if (kind === "disconnect") {
      rec.status = 0;
      record(rec);
      req.socket.destroy();
    } else if (kind === "429" || kind === "429date") {
      rec.status = 429;
      record(rec);
      const after = kind === "429" ? val : new Date(Date.now() + Number(val) * 1000).toUTCString();
      res.writeHead(429, { "Retry-After": after, "Content-Type": "text/plain" });
      res.end("slow down\n");
    } else {
      rec.status = Number(kind);
      record(rec);
      res.writeHead(rec.status, { "Content-Type": "text/plain" });
      res.end(`injected ${kind}\n`);
    }
  });
});

server.keepAliveTimeout = 5000;
server.listen(0, "127.0.0.1", () => {
  fs.writeFileSync(arg("--port-file"), String(server.address().port));
});
process.on("SIGTERM", () => process.exit(0));
