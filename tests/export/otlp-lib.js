// SPDX-License-Identifier: Apache-2.0
// Decoding what termline sends with the OTLP definitions as a real
// implementation ships them: the protobufjs code OpenTelemetry JS generates
// from the official opentelemetry-proto files, inside the npm package
// @opentelemetry/otlp-transformer (build/src/generated/root.js; the package
// uses it to encode, its static-module code decodes as well).
//
// Both encodings decode to one normal form: the proto3 JSON mapping with
// 64-bit integers as strings, enums as numbers, traceId/spanId/parentSpanId
// as lower-case hex (as OTLP/JSON writes them) and other bytes as base64.
"use strict";
const path = require("path");

function loadRoot(modulesDir) {
  const dir = modulesDir || process.env.TERMLINE_OTLP_NODE_MODULES;
  if (!dir) throw new Error("no node_modules: pass --modules or set TERMLINE_OTLP_NODE_MODULES");
  return require(path.resolve(dir, "@opentelemetry", "otlp-transformer", "build", "src", "generated", "root"));
}

function types(root) {
  const c = root.opentelemetry.proto.collector;
  return {
    traces: { req: c.trace.v1.ExportTraceServiceRequest, resp: c.trace.v1.ExportTraceServiceResponse },
    logs: { req: c.logs.v1.ExportLogsServiceRequest, resp: c.logs.v1.ExportLogsServiceResponse },
  };
}

const ID_KEYS = new Set(["traceId", "spanId", "parentSpanId"]);

// Walks a plain object and converts the id fields with f.
function mapIds(o, f) {
  if (Array.isArray(o)) return o.map((v) => mapIds(v, f));
  if (o && typeof o === "object") {
    const out = {};
    for (const [k, v] of Object.entries(o)) out[k] = ID_KEYS.has(k) && typeof v === "string" ? f(v) : mapIds(v, f);
    return out;
  }
  return o;
}

const b64ToHex = (s) => Buffer.from(s, "base64").toString("hex");
const hexToB64 = (s) => {
  if (!/^([0-9a-f]{2})*$/.test(s)) throw new Error(`id ${JSON.stringify(s)} is not lower-case hex`);
  return Buffer.from(s, "hex").toString("base64");
};

const TO_OBJECT = { longs: String, enums: Number, bytes: String, defaults: false };

function normal(Type, msg) {
  return mapIds(Type.toObject(msg, TO_OBJECT), b64ToHex);
}

// The first place two normal forms differ, or null.
function diff(a, b, where = "") {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${where || "/"}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a && typeof a === "object") {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      if (!(k in a) || !(k in b)) return `${where}/${k}: only in ${k in a ? "the request" : "the decoded message"}`;
      const d = diff(a[k], b[k], `${where}/${k}`);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

// Decodes a request body. format "protobuf" or "json". JSON is read as
// OTLP/JSON and checked against the definitions: converted to the message
// (ids from hex), encoded, decoded again; any key the definitions do not
// have, or value of the wrong type, makes the round trip differ.
function decode(root, signal, format, buf) {
  const T = types(root)[signal].req;
  if (format === "protobuf") {
    const msg = T.decode(buf);
    const err = T.verify(msg);
    if (err) throw new Error(`not a valid ${signal} request: ${err}`);
    return normal(T, msg);
  }
  const obj = JSON.parse(buf.toString("utf8"));
  const msg = T.fromObject(mapIds(obj, hexToB64));
  const back = normal(T, T.decode(T.encode(msg).finish()));
  const d = diff(obj, back);
  if (d) throw new Error(`not OTLP/JSON as the definitions have it: ${d}`);
  return back;
}

function response(root, signal, format, rejected, message) {
  const R = types(root)[signal].resp;
  const key = signal === "traces" ? "rejectedSpans" : "rejectedLogRecords";
  const body = rejected ? { partialSuccess: { [key]: String(rejected), errorMessage: message || "" } } : {};
  if (format === "json") return Buffer.from(JSON.stringify(body));
  return Buffer.from(R.encode(R.fromObject(body)).finish());
}

module.exports = { loadRoot, decode, response, diff };
