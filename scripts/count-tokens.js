#!/usr/bin/env node
// Counts tokens with npm's js-tiktoken, an implementation independent of the Rust crate mcpeval
// counts with: reads a JSON array of texts on stdin, writes
// {"o200k_base": [n, ...], "cl100k_base": [n, ...]} (every text as ordinary text: a special
// token's spelling counts as the characters it is). The package comes from
// scripts/install-token-reference; its directory is the first argument.
"use strict";
const path = require("path");
const dir = process.argv[2];
if (!dir) {
  console.error("usage: count-tokens.js JS_TIKTOKEN_INSTALL_DIR < texts.json");
  process.exit(2);
}
const { getEncoding } = require(path.resolve(dir, "node_modules/js-tiktoken"));
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  const out = {};
  for (const name of ["o200k_base", "cl100k_base"]) {
    const encoding = getEncoding(name);
    out[name] = texts.map((text) => encoding.encode(text, [], []).length);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
