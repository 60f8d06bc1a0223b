#!/usr/bin/env node
// The `mcpeval` command of the npm package: runs the prebuilt binary of this platform, which
// npm installed from the optional dependency `@mcpeval/cli-<platform>-<arch>`, with the same
// arguments, standard streams and exit code (a signal that ends it ends this process the same way).
"use strict";

const { spawnSync } = require("node:child_process");
const path = require("node:path");

const platformPackage = `@mcpeval/cli-${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "mcpeval.exe" : "mcpeval";

function binary() {
  try {
    const manifest = require.resolve(`${platformPackage}/package.json`);
    return path.join(path.dirname(manifest), "bin", exe);
  } catch {
    process.stderr.write(
      `mcpeval: no prebuilt binary for ${process.platform}-${process.arch}: the package ` +
        `${platformPackage} is not installed (npm skips optional dependencies with ` +
        `--omit=optional or --no-optional; and not every platform has one). Install from ` +
        `source instead: cargo install mcpeval\n`
    );
    process.exit(1);
  }
}

const result = spawnSync(binary(), process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  process.stderr.write(`mcpeval: cannot run the binary: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
