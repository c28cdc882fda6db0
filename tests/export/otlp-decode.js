// SPDX-License-Identifier: Apache-2.0
// node otlp-decode.js --signal traces|logs --format protobuf|json [--modules DIR] < BODY
// Prints the request decoded with the official definitions (otlp-lib.js)
// as one JSON line; exit 1 with the reason when it does not decode.
"use strict";
const fs = require("fs");
const lib = require("./otlp-lib");

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

try {
  const root = lib.loadRoot(arg("--modules"));
  const out = lib.decode(root, arg("--signal", "traces"), arg("--format", "protobuf"), fs.readFileSync(0));
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (e) {
  process.stderr.write(`otlp-decode: ${e.message}\n`);
  process.exit(1);
}
