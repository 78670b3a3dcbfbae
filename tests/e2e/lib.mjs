// Helpers for the end-to-end tests: they drive the real parleyd with the
// official MCP TypeScript SDK client, against the shared test PostgreSQL.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const PARLEYD = process.env.PARLEYD;
export const PG = process.env.PARLEY_TEST_PG;
if (!PARLEYD || !PG) throw new Error("run through ctest (PARLEYD and PARLEY_TEST_PG unset)");

// A new directory under the system's temporary one, removed when the test
// process exits (kept with PARLEY_TEST_KEEP=1, to look at after a failure).
const madeDirs = [];
process.on("exit", () => {
  if (process.env.PARLEY_TEST_KEEP === "1") return;
  for (const d of madeDirs) {
    try {
      fs.rmSync(d, { recursive: true, force: true });
    } catch {
      // a daemon may still hold a file; the directory stays
    }
  }
});

export function tmpdir(prefix = "parley-e2e-") {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(d);
  return d;
}

// Arguments every daemon in these tests gets.
export function baseArgs(extra = []) {
  return ["serve", "--db", PG, "--log-level", "debug", ...extra];
}

// The revision the tests' clients speak: PARLEY_TEST_PROTOCOL=2026-07-28
// (ctest's *_2026 variants) makes stdioClient the official SDK v2 client
// pinned to it; else the v1 client and 2025-11-25.
export const PROTOCOL = process.env.PARLEY_TEST_PROTOCOL || "2025-11-25";

// A connected SDK client over stdio; stderr is kept for diagnostics.
export async function stdioClient(extra = [], clientCaps = {}, name = "e2e") {
  const modern = PROTOCOL === "2026-07-28";
  const v2 = modern ? await import("@modelcontextprotocol/client") : null;
  const Transport = modern ? (await import("@modelcontextprotocol/client/stdio")).StdioClientTransport : StdioClientTransport;
  const transport = new Transport({
    command: PARLEYD,
    args: baseArgs(["--stdio", ...extra]),
    stderr: "pipe",
  });
  const log = [];
  transport.stderr?.on("data", (d) => log.push(d.toString()));
  const client = modern
    ? new v2.Client({ name, version: "1.0.0" }, { capabilities: clientCaps, versionNegotiation: { mode: { pin: PROTOCOL } } })
    : new Client({ name, version: "1.0.0" }, { capabilities: clientCaps });
  await client.connect(transport);
  if (modern && client.getNegotiatedProtocolVersion() !== PROTOCOL)
    throw new Error(`the client speaks ${client.getNegotiatedProtocolVersion()}, not ${PROTOCOL}`);
  return { client, transport, log };
}

// Starts parleyd in the background and resolves once it logs "ready".
// env: variables added to the daemon's environment.
export async function startDaemon(extra = [], env = {}) {
  const child = spawn(PARLEYD, baseArgs(extra), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let log = "";
  child.stderr.on("data", (d) => (log += d.toString()));
  const deadline = Date.now() + 60000;
  while (!/ready \(schema version/.test(log)) {
    if (child.exitCode !== null) throw new Error(`parleyd exited early:\n${log}`);
    if (Date.now() > deadline) throw new Error(`parleyd did not get ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      return code;
    },
  };
}

// Resident memory of a process in KiB.
export function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

export function textOf(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// psql -At on a database of the test cluster at host; returns the output.
export function psqlAt(host, db, sql) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", host, "-U", "parley", "-d", db, "-c", sql], { encoding: "utf8" }).trim();
}

// A control call of an emulator (tests/harness/*_emulator.mjs) at api.
export async function controlAt(api, p, body) {
  const r = await fetch(`${api}${p}`, body ? { method: "POST", body: JSON.stringify(body) } : {});
  return r.json();
}
