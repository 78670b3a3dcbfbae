#!/usr/bin/env node
// mcp_probe.mjs: keeps calling one tool on parleyd's Unix socket and writes
// one line per attempt, for tests that check a daemon never stops answering
// (tests/integration/rolling_upgrade.sh). Raw newline-delimited JSON-RPC
// (the socket transport), 2025-11-25: initialize, notifications/initialized,
// then tools/call every INTERVAL ms on the same connection; a lost
// connection is opened again.
//
//   node mcp_probe.mjs SOCKET OUT TOOL ARGS_JSON EXPECT [INTERVAL_MS]
//
// Each line of OUT: "<unix ms> ok" when the call answered within 5 s, was
// no error and its text holds EXPECT; "<unix ms> fail <why>" otherwise.
// Runs until SIGTERM.
import fs from "node:fs";
import net from "node:net";

const [, , sock, out, tool, argsJson, expect, intervalArg] = process.argv;
const interval = Number(intervalArg || 100);
const CALL_TIMEOUT_MS = 5000;
const args = JSON.parse(argsJson);
const log = fs.openSync(out, "a");
const note = (what) => fs.writeSync(log, `${Date.now()} ${what}\n`);
let stopping = false;
process.on("SIGTERM", () => {
  stopping = true;
  fs.closeSync(log);
  process.exit(0);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One connection: requests by id, answers resolved as lines arrive.
function connect() {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(sock);
    const waiting = new Map();
    let buf = "";
    let nextId = 1;
    const failAll = (why) => {
      for (const w of waiting.values()) w.reject(new Error(why));
      waiting.clear();
    };
    c.setEncoding("utf8");
    c.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        const w = waiting.get(m.id);
        if (w && (m.result !== undefined || m.error !== undefined)) {
          waiting.delete(m.id);
          w.resolve(m);
        }
      }
    });
    c.on("error", (e) => { failAll(e.message); reject(e); });
    c.on("close", () => failAll("connection closed"));
    c.on("connect", () => {
      const conn = {
        closed: false,
        send(method, params) {
          const id = nextId++;
          return new Promise((res, rej) => {
            const t = setTimeout(() => { waiting.delete(id); rej(new Error("no answer within 5 s")); }, CALL_TIMEOUT_MS);
            waiting.set(id, { resolve: (m) => { clearTimeout(t); res(m); }, reject: (e) => { clearTimeout(t); rej(e); } });
            c.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
          });
        },
        notify(method) { c.write(JSON.stringify({ jsonrpc: "2.0", method }) + "\n"); },
        close() { c.destroy(); },
      };
      c.on("close", () => { conn.closed = true; });
      resolve(conn);
    });
  });
}

while (!stopping) {
  let conn;
  try {
    conn = await connect();
    const init = await conn.send("initialize", {
      protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "mcp_probe", version: "1" } });
    if (init.error) throw new Error(`initialize: ${init.error.message}`);
    conn.notify("notifications/initialized");
    while (!stopping && !conn.closed) {
      const m = await conn.send("tools/call", { name: tool, arguments: args });
      const text = m.result?.content?.[0]?.text ?? "";
      if (m.error) note(`fail error ${m.error.code} ${m.error.message}`);
      else if (m.result.isError) note(`fail isError ${text.slice(0, 200)}`);
      else if (!text.includes(expect)) note(`fail unexpected ${text.slice(0, 200)}`);
      else note("ok");
      await sleep(interval);
    }
  } catch (e) {
    note(`fail ${e.message}`);
    await sleep(interval);
  } finally {
    conn?.close();
  }
}
