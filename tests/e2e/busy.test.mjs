// Calls that wait on the database, end to end. The read-only pool's queue
// bound (db_queue_max): a tool call past it is answered at once with
// isError naming the setting, and the calls in front of it are answered
// once the database is free again. Streamable HTTP: an answer that comes
// while the POST is held (HTTP_JSON_HOLD_MS) is one JSON body, one that
// takes longer comes on an SSE stream started when the hold ends; an
// HTTP/2 stream its client resets while held is let go (the answer, when
// it comes, is kept for the session, and nothing else breaks). The
// pool is one connection held by a lock taken from psql, so that which call
// runs, waits or is refused follows from the order of the requests alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http2 from "node:http2";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startDaemon, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_busy_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-busy-");
let client;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

// Polls the database until sql answers "t".
async function until(sql) {
  while (psql(sql) !== "t") await new Promise((r) => setTimeout(r, 50));
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  execFileSync("node", [path.join(here, "..", "harness", "gen_tg_export.mjs"), "groups", path.join(work, "groups")]);
  execFileSync(process.env.PARLEYD, ["import", "telegram-export", path.join(work, "groups", "small.json"), "--db", url,
    "--data-dir", path.join(work, "data")], { stdio: ["ignore", "ignore", "pipe"] });
  ({ client } = await stdioClient(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data"),
    "--db-ro-pool-size", "1", "--db-queue-max", "1"]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("a call past db_queue_max is refused at once, naming the setting; the calls before it are answered", async (t) => {
  // psql holds chats locked: the pool's one connection, running the first
  // call, waits for it.
  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill()); // the lock ends with it, also after a failure
  holder.stdin.write("BEGIN;\nLOCK TABLE chats IN ACCESS EXCLUSIVE MODE;\n");
  await until("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'chats'::regclass AND mode = 'AccessExclusiveLock' AND granted)");
  const first = client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  await until(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = '${db}' AND wait_event_type = 'Lock')`);
  // The second waits in the queue (its one place); the third finds it full.
  const second = client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  const third = await client.callTool({ name: "messagesList", arguments: { channelId: 1, limit: 5 } });
  assert.equal(third.isError, true, JSON.stringify(third));
  assert.match(textOf(third), /busy.*db_queue_max.*retry/, textOf(third));
  holder.stdin.end("COMMIT;\n");
  const a = await first;
  assert.ok(!a.isError, textOf(a));
  assert.ok(Array.isArray(a.structuredContent.channels) && a.structuredContent.channels.length > 0, JSON.stringify(a));
  const b = await second;
  assert.ok(!b.isError, textOf(b));
  // Free again: the next call is answered.
  const c = await client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  assert.ok(!c.isError, textOf(c));
});

test("over HTTP, a database answer within the hold is one JSON body; a later one comes on an SSE stream", async (t) => {
  const daemon = await startDaemon(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data"),
    "--listen", "http://127.0.0.1:0/mcp"]);
  t.after(() => daemon.stop());
  const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1];
  const mcp = `http://127.0.0.1:${port}/mcp`;
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const init = await fetch(mcp, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "hold", version: "1" } } }) });
  assert.equal(init.status, 200);
  const h = { ...headers, "mcp-session-id": init.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
  await fetch(mcp, { method: "POST", headers: h, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
  const call = (id) => fetch(mcp, { method: "POST", headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "channelsList", arguments: { limit: 5 } } }) });

  // Answered by the database at once: after the POST's handler returned,
  // within the hold.
  const quick = await call(2);
  assert.equal(quick.headers.get("content-type"), "application/json");
  const q = await quick.json();
  assert.equal(q.id, 2);
  assert.ok(q.result.structuredContent.channels.length > 0, JSON.stringify(q));

  // Held up by a lock past the hold: the SSE stream starts (priming event),
  // the answer follows on it once the lock is gone.
  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill());
  holder.stdin.write("BEGIN;\nLOCK TABLE chats IN ACCESS EXCLUSIVE MODE;\n");
  await until("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'chats'::regclass AND mode = 'AccessExclusiveLock' AND granted)");
  const started = Date.now();
  const slow = await call(3);
  const waited = Date.now() - started;
  assert.equal(slow.headers.get("content-type"), "text/event-stream");
  assert.ok(waited >= 900, `the stream started after ${waited} ms, before the hold ended`);
  holder.stdin.end("COMMIT;\n");
  const text = await slow.text();
  assert.match(text, /^id: \S+\nretry: \d+\ndata: \n\n/, text.slice(0, 200));
  const data = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)));
  assert.equal(data.length, 1, text.slice(0, 300));
  assert.equal(data[0].id, 3);
  assert.ok(data[0].result.structuredContent.channels.length > 0);
});

test("over HTTP/2, a held request whose client resets its stream is let go; the session goes on", async (t) => {
  const tlsDir = process.env.PARLEY_TEST_TLS_DIR;
  const daemon = await startDaemon(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data"),
    "--tls-cert", path.join(tlsDir, "cert.pem"), "--tls-key", path.join(tlsDir, "key.pem"),
    "--listen", "https://127.0.0.1:0/mcp"]);
  t.after(() => daemon.stop());
  const port = /https:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1];
  const h2 = http2.connect(`https://127.0.0.1:${port}`, { ca: fs.readFileSync(path.join(tlsDir, "cert.pem")), servername: "localhost" });
  t.after(() => h2.close());
  const base = { ":method": "POST", ":path": "/mcp", "content-type": "application/json", accept: "application/json, text/event-stream" };
  const post = (body, extra = {}) => {
    const req = h2.request({ ...base, ...extra });
    const done = new Promise((resolve, reject) => {
      let head, data = "";
      req.setEncoding("utf8");
      req.on("response", (hd) => (head = hd));
      req.on("data", (d) => (data += d));
      req.on("end", () => resolve({ head, data }));
      req.on("error", reject);
    });
    req.end(JSON.stringify(body));
    return { req, done };
  };
  const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "h2", version: "1" } } }).done;
  const sid = init.head["mcp-session-id"];
  assert.match(sid, /^[0-9a-f]{64}$/);
  const hs = { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  await post({ jsonrpc: "2.0", method: "notifications/initialized" }, hs).done;
  const call = (id) => post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "channelsList", arguments: { limit: 5 } } }, hs);

  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill());
  holder.stdin.write("BEGIN;\nLOCK TABLE chats IN ACCESS EXCLUSIVE MODE;\n");
  await until("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'chats'::regclass AND mode = 'AccessExclusiveLock' AND granted)");
  const held = call(2);
  held.done.catch(() => {});
  await until(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = '${db}' AND wait_event_type = 'Lock')`);
  held.req.close(http2.constants.NGHTTP2_CANCEL); // within the hold: no header was sent
  await new Promise((r) => setTimeout(r, 300));
  holder.stdin.end("COMMIT;\n");
  await new Promise((r) => setTimeout(r, 300)); // the answer comes, for a request that is gone
  const next = await call(3).done;
  assert.equal(next.head["content-type"], "application/json");
  const n = JSON.parse(next.data);
  assert.equal(n.id, 3);
  assert.ok(n.result.structuredContent.channels.length > 0, next.data);
  assert.equal(await daemon.stop(), 0, daemon.log().slice(-2000));
});
