// faults: tool calls under load while PostgreSQL is stopped and started.
// Four MCP clients (the official SDK over Streamable HTTP) call tools in a
// loop against one daemon on a cluster of the test's own. While the
// database is down every call still ends, as a tool error that says to
// retry (never a hang, a JSON-RPC error or a lost session); once it is back
// every client is served again without reconnecting. The recovery time is
// printed (figures in bench/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startDaemon, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = path.join(here, "..", "harness", "pg_cluster.sh");

test("tool calls through a PostgreSQL stop and start: retryable errors while down, served again after", async () => {
  const dir = tmpdir("parley-pgfault-");
  execFileSync(harness, ["start", dir]);
  const own = `host=${dir} port=5432 user=parley dbname=postgres`;
  const d = await startDaemon([
    "--db", own, "--data-dir", tmpdir("parley-fault-"), "--toolsets", "telegram",
    "--db-query-timeout-ms", "2000", "--db-connect-timeout-ms", "1000",
    "--listen", "http://127.0.0.1:0/mcp",
  ]);
  const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(d.log())[1];
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const clients = [];
  let phase = "up";
  // A call is counted in the phase it started and ended in; one the stop
  // or the start overtook (in flight when the phase changed) in "edge",
  // which is asserted nothing of: it may fail either way.
  const seen = { up: { ok: 0, err: 0 }, down: { ok: 0, err: 0 }, back: { ok: 0, err: 0 }, edge: { ok: 0, err: 0 } };
  const errors = new Set();
  let slowest = 0;
  let stop = false;
  let firstOkAfterStart = 0;
  const servedAfter = new Set();
  let startedAt = 0;
  try {
    for (let i = 0; i < 4; i++) {
      const c = new Client({ name: `fault-${i}`, version: "1" });
      await c.connect(new StreamableHTTPClientTransport(url));
      clients.push(c);
    }
    const loops = clients.map(async (c, i) => {
      while (!stop) {
        const p0 = phase;
        const t0 = Date.now();
        const r = await c.callTool({ name: i % 2 ? "channelsList" : "messagesSearch", arguments: i % 2 ? { limit: 5 } : { query: "hello" } });
        slowest = Math.max(slowest, Date.now() - t0);
        const p = phase === p0 ? p0 : "edge";
        if (r.isError) {
          seen[p].err++;
          errors.add(textOf(r).replace(/\(.*\)/, "(…)"));
        } else {
          seen[p].ok++;
          if (p === "back") {
            if (!firstOkAfterStart) firstOkAfterStart = Date.now() - startedAt;
            servedAfter.add(i);
          }
        }
        await new Promise((res) => setTimeout(res, 20));
      }
    });
    await new Promise((r) => setTimeout(r, 1500));
    execFileSync(harness, ["stop", dir]);
    phase = "down";
    // A call while down ends at its deadline (2 s, after a connect of up
    // to 1 s); one in flight at the stop may end that late into the
    // window: 7 s leave room for at least one whole call after it (4 s
    // did not on a loaded machine: every client's one call crossed both
    // edges).
    await new Promise((r) => setTimeout(r, 7000));
    execFileSync(harness, ["start", dir]);
    startedAt = Date.now();
    phase = "back";
    const deadline = Date.now() + 30000;
    while (servedAfter.size < clients.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const allBack = Date.now() - startedAt;
    stop = true;
    await Promise.all(loops);
    console.log(`faults: ${JSON.stringify(seen)}; slowest call ${slowest} ms; first success ${firstOkAfterStart} ms and every client ${allBack} ms after the start`);
    assert.ok(seen.up.ok > 0 && seen.up.err === 0, JSON.stringify(seen));
    assert.ok(seen.down.err > 0, "calls while down answered");
    for (const e of errors) assert.match(e, /busy or unreachable|retry/i, e);
    assert.equal(servedAfter.size, clients.length, `not every client was served again: ${JSON.stringify(seen)}\n${d.log().slice(-3000)}`);
    // Every call ended within its deadline plus the connect timeout.
    assert.ok(slowest < 2000 + 1000 + 2000, `a call took ${slowest} ms`);
  } finally {
    stop = true;
    for (const c of clients) await c.close().catch(() => {});
    assert.equal(await d.stop(), 0);
    execFileSync(harness, ["destroy", dir]);
  }
});
