#!/usr/bin/env node
// capture.mjs: writes bench/parse/requests/*.json, the request bodies the
// benchmark sends, as parley-loadgen sends them: it runs the load
// generator (one session, Unix socket) against a stand-in server that
// answers every request with an empty result and keeps what it received,
// once per request class of bench/harness.mjs (the trivial call, the
// database mix, each in MCP 2025-11-25 and 2026-07-28; initialize and
// ping; server/discover). The database mix's calls are the four tools of
// harness.mjs's mix, with arguments of the shape it generates (its chat
// and message numbers come from the synthetic archive; these are typical
// ones). tools/list is not sent by the load generator: its two files are
// the shape a client sends, written here in the load generator's style.
//
//   node bench/parse/capture.mjs BUILD_DIR/parley-loadgen
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const loadgen = process.argv[2];
if (!loadgen) {
  console.error("usage: capture.mjs PARLEY_LOADGEN");
  process.exit(2);
}
const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "requests");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "parse-capture-"));
const sock = path.join(work, "s");
const seen = [];
const server = net.createServer((c) => {
  let buf = "";
  c.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      seen.push(line);
      const m = JSON.parse(line);
      if (m.id !== undefined) c.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }) + "\n");
    }
  });
  c.on("error", () => {});
});
await new Promise((r) => server.listen(sock, r));

// The database mix: harness.mjs's four tools in turn (i % 4).
const calls = [
  { name: "channelsList", arguments: { limit: 20 } },
  { name: "messagesList", arguments: { channelId: 13, limit: 20 } },
  { name: "messagesSearch", arguments: { query: "встреча", limit: 20 } },
  { name: "messagesContext", arguments: { channelId: 7, messageId: 3997, before: 5, after: 5 } },
];
const callsFile = path.join(work, "calls.jsonl");
fs.writeFileSync(callsFile, calls.map((c) => JSON.stringify(c)).join("\n") + "\n");

// Runs the load generator briefly; the lines it sent, in order.
function run(args) {
  seen.length = 0;
  return new Promise((resolve, reject) => {
    // (asynchronous: the stand-in server runs on this loop)
    const p = spawn(loadgen, ["--url", `unix:${sock}`, "--sessions", "1", "--seconds", "0.2", ...args],
      { stdio: ["ignore", "pipe", "inherit"] });
    p.on("exit", (code) => (code === 0 ? resolve([...seen]) : reject(new Error(`loadgen ${args.join(" ")}: exit ${code}`))));
  });
}

const files = {};
const legacy = await run([]);
files["2025-initialize"] = legacy[0];
files["2025-initialized"] = legacy[1];
files["2025-ping"] = legacy[2];
files["2025-trivial"] = (await run(["--tool", "test_simple_text"]))[2];
const db = await run(["--calls", callsFile]);
calls.forEach((c, i) => (files[`2025-db-${c.name}`] = db[2 + i]));
files["2026-discover"] = (await run(["--protocol", "2026-07-28"]))[0];
files["2026-trivial"] = (await run(["--protocol", "2026-07-28", "--tool", "test_simple_text"]))[0];
const dbm = await run(["--protocol", "2026-07-28", "--calls", callsFile]);
calls.forEach((c, i) => (files[`2026-db-${c.name}`] = dbm[i]));
// tools/list, in the load generator's style (not sent by it).
files["2025-tools-list"] = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
const meta = JSON.parse(files["2026-discover"]).params._meta;
files["2026-tools-list"] = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":${JSON.stringify(meta)}}}`;
server.close();
fs.rmSync(work, { recursive: true, force: true });

fs.mkdirSync(out, { recursive: true });
for (const [name, text] of Object.entries(files)) {
  if (typeof text !== "string") throw new Error(`no ${name} captured`);
  JSON.parse(text);
  fs.writeFileSync(path.join(out, `${name}.json`), text);
}
console.log(`capture.mjs: ${Object.keys(files).length} requests in ${out}`);
