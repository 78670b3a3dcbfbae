// Fair shares between principals, end to end: one token (or, without
// tokens, one endpoint) holds at most principal_session_share percent of
// max_sessions — 2026-07-28 listens and requests, 2025-11-25 sessions and
// socket connections alike — so a narrow token's hundreds of listens
// leave the daemon serving another token.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import tls from "node:tls";
import net from "node:net";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fileURLToPath } from "node:url";
import { startDaemon, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

const MODERN = "2026-07-28";
const PIN = { versionNegotiation: { mode: { pin: MODERN } } };
const META = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
};
const NARROW = "narrow-conformance-token-0123456789";
const FULL = "full-access-token-0123456789";

// One POST on a connection of its own, resolved once the response's head
// (and, for a JSON answer, its body) is in: { status, type, body, req }.
// An SSE response stays open (req.destroy() ends it).
// token null: none. The promise has abort(): closes the request before
// its response's head came.
function post(url, token, id, method, params = {}, extra = {}) {
  const body = JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } });
  let req;
  const p = new Promise((resolve, reject) => {
    req = http.request(url, {
      method: "POST",
      agent: false,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...extra,
      },
    }, (res) => {
      const type = res.headers["content-type"];
      if (type === "text/event-stream") {
        res.once("data", () => resolve({ status: res.statusCode, type, req }));
        return;
      }
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, type, body: text ? JSON.parse(text) : null, headers: res.headers, req }));
    });
    req.on("error", (e) => (req.destroyed ? resolve({ status: 0, aborted: true }) : reject(e)));
    req.end(body);
  });
  p.abort = () => req.destroy();
  return p;
}

test("one narrow token's 400 listens leave a 300-slot daemon serving another token", async (t) => {
  const work = tmpdir("parley-fair-");
  const tokens = path.join(work, "tokens");
  fs.writeFileSync(tokens, `${NARROW} toolsets=conformance read_only\n${FULL}\n`, { mode: 0o600 });
  const daemon = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp",
    "--token-file", tokens, "--max-sessions", "300"]);
  t.after(() => daemon.stop());
  const url = `http://127.0.0.1:${/\(port (\d+)\)/.exec(daemon.log())[1]}/mcp`;

  const listens = [];
  t.after(() => listens.forEach((l) => l.req.destroy()));
  for (let i = 0; i < 400; i++)
    listens.push(await post(url, NARROW, i + 1, "subscriptions/listen", { notifications: { toolsListChanged: true } }));
  const open = listens.filter((l) => l.status === 200 && l.type === "text/event-stream");
  const refused = listens.filter((l) => l.status === 429);
  // principal_session_share's default, 50%: 150 of the 300 slots.
  assert.equal(open.length, 150, `listens open: ${open.length}`);
  assert.equal(refused.length, 250, `statuses: ${[...new Set(listens.map((l) => l.status))]}`);
  assert.equal(refused[0].headers["retry-after"], "1");
  assert.equal(refused[0].body.error.code, -32000);
  assert.match(refused[0].body.error.message, /this token.*150.*principal_session_share.*close one/);
  // The narrow token's 2025-11-25 session is refused the same way.
  const legacy = await fetch(url, { method: "POST", headers: { "content-type": "application/json",
    accept: "application/json, text/event-stream", authorization: `Bearer ${NARROW}` },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } }) });
  assert.equal(legacy.status, 429);

  // The other token is served in both revisions.
  const headers = { Authorization: `Bearer ${FULL}` };
  const modern = new Client({ name: "other-token", version: "1" }, PIN);
  await modern.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const tools = await modern.listTools();
  assert.ok(tools.tools.some((x) => x.name === "test_simple_text"));
  const call = await modern.callTool({ name: "test_simple_text", arguments: {} });
  assert.equal(call.content[0].text, "This is a simple text response for testing.");
  await modern.close();
  const v1 = new ClientV1({ name: "other-token-v1", version: "1" }, { capabilities: {} });
  await v1.connect(new HttpV1(new URL(url), { requestInit: { headers } }));
  assert.ok((await v1.listTools()).tools.length > 0);
  await v1.close();

  // Listens closed give their slots back.
  for (const l of open.slice(0, 10)) l.req.destroy();
  const deadline = Date.now() + 20000;
  let again;
  do {
    again = await post(url, NARROW, 1000, "subscriptions/listen", { notifications: {} });
    if (again.status === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < deadline);
  assert.equal(again.status, 200, "a closed listen's slot is given back");
  again.req.destroy();
  const metrics = await (await fetch(url.replace(/\/mcp$/, "/metrics"), { headers })).text();
  const refusedTotal = Number(/parley_sessions_refused_total\{reason="principal_share"\} (\d+)/.exec(metrics)?.[1]);
  assert.ok(refusedTotal >= 251, metrics);
});

test("without tokens an endpoint is the principal: with a share set, a socket endpoint's clients leave slots for another endpoint", async (t) => {
  const work = tmpdir("parley-fair-");
  const sock = path.join(work, "mcp.sock");
  // Without tokens the share is 100 unless set (every client is the one user).
  const daemon = await startDaemon(["--toolsets", "conformance", "--listen", `unix:${sock},tcp://127.0.0.1:0`,
    "--max-sessions", "8", "--principal-session-share", "50"]);
  t.after(() => daemon.stop());
  const port = /tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(daemon.log())[1];
  // An initialized session on a socket, or null when the daemon closed it.
  const session = (opts) => new Promise((resolve) => {
    const s = net.connect(opts);
    let buf = "";
    s.on("data", (d) => {
      buf += d;
      if (buf.includes("\n")) resolve(s);
    });
    s.on("close", () => resolve(null));
    s.on("error", () => resolve(null));
    s.on("connect", () => s.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "s", version: "1" } } }) + "\n"));
  });
  const held = [];
  t.after(() => held.forEach((s) => s?.destroy()));
  for (let i = 0; i < 6; i++) held.push(await session({ path: sock }));
  assert.equal(held.filter(Boolean).length, 4, "the unix endpoint holds half of max_sessions");
  const tcp = [];
  for (let i = 0; i < 3; i++) tcp.push(await session({ host: "127.0.0.1", port: Number(port) }));
  t.after(() => tcp.forEach((s) => s?.destroy()));
  assert.equal(tcp.filter(Boolean).length, 3, "another endpoint is still served");
  assert.match(daemon.log(), /refusing a connection: this endpoint holds 4 sessions.*principal_session_share/);
});

test("/metrics answers a full-access token or one marked metrics, not a narrowed one", async (t) => {
  const work = tmpdir("parley-fair-");
  const tokens = path.join(work, "tokens");
  const MARKED = "narrow-but-metrics-token-0123456789", RO = "all-toolsets-read-only-0123456789";
  fs.writeFileSync(tokens, `${NARROW} toolsets=conformance read_only\n${FULL}\n${MARKED} toolsets=conformance metrics\n` +
    `${RO} read_only\n`, { mode: 0o600 });
  const daemon = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp,http://127.0.0.1:0/open",
    "--token-file", tokens, "--allow-anonymous", "http://127.0.0.1:0/open"]);
  t.after(() => daemon.stop());
  const [port, open] = [...daemon.log().matchAll(/\(port (\d+)\)/g)].map((m) => m[1]);
  const metrics = (p, token) => fetch(`http://127.0.0.1:${p}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  for (const token of [NARROW, RO]) {
    const r = await metrics(port, token);
    assert.equal(r.status, 403, token);
    const body = await r.json();
    assert.match(body.error.message, /metrics needs a token with every toolset.*marked metrics/);
  }
  assert.equal((await metrics(port, null)).status, 401);
  for (const token of [FULL, MARKED]) {
    const r = await metrics(port, token);
    assert.equal(r.status, 200, token);
    assert.match(await r.text(), /parley_sessions_opened_total/);
  }
  // An anonymous loopback endpoint serves it without a token, as its MCP path.
  assert.equal((await metrics(open, null)).status, 200);
});

// Polls psql until sql answers "t"; false after ms.
async function within(psql, sql, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (psql(sql) === "t") return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

test("a closed HTTP stream cancels its database query within a second", async (t) => {
  const work = tmpdir("parley-fair-");
  const pgDir = process.env.PARLEY_TEST_PG_DIR;
  const db = `e2e_fair_${process.pid}`;
  const dburl = `host=${pgDir} port=5432 user=parley dbname=${db}`;
  const psql = (sql, dbname = db) =>
    execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], { encoding: "utf8" }).trim();
  psql(`CREATE DATABASE ${db}`, "postgres");
  t.after(() => psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres"));
  execFileSync("node", [path.join(here, "..", "harness", "gen_tg_export.mjs"), "groups", path.join(work, "groups")]);
  execFileSync(process.env.PARLEYD, ["import", "telegram-export", path.join(work, "groups", "small.json"), "--db", dburl,
    "--data-dir", path.join(work, "data")], { stdio: ["ignore", "ignore", "pipe"] });
  const tlsDir = process.env.PARLEY_TEST_TLS_DIR;
  const daemon = await startDaemon(["--db", dburl, "--toolsets", "telegram", "--data-dir", path.join(work, "data"),
    "--listen", "http://127.0.0.1:0/mcp,https://127.0.0.1:0/mcp",
    "--tls-cert", path.join(tlsDir, "cert.pem"), "--tls-key", path.join(tlsDir, "key.pem")]);
  t.after(() => daemon.stop());
  const url = `http://127.0.0.1:${/http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1]}/mcp`;
  const tlsPort = Number(/https:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1]);

  // psql holds chats locked: a call's query waits for it until cancelled.
  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill());
  holder.stdin.write("BEGIN;\nLOCK TABLE chats IN ACCESS EXCLUSIVE MODE;\n");
  assert.ok(await within(psql, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'chats'::regclass AND mode = 'AccessExclusiveLock' AND granted)", 10000));
  const waiting = (n) => `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}' AND wait_event_type = 'Lock') = ${n}`;
  const call = (id) => post(url, null, id, "tools/call", { name: "channelsList", arguments: { limit: 5 } }, { "mcp-name": "channelsList" });

  // Closed while held (no header sent yet), then once its SSE stream runs.
  for (const [id, after] of [[1, 0], [2, 2500]]) {
    const pending = call(id);
    assert.ok(await within(psql, waiting(1), 10000), "the call's query waits for the lock");
    let res = null;
    if (after > 0) {
      res = await pending;
      assert.equal(res.type, "text/event-stream", "the hold ended: an SSE stream");
    }
    await new Promise((r) => setTimeout(r, Math.max(0, after - 2000)));
    const closed = Date.now();
    if (res) res.req.destroy();
    else pending.abort();
    assert.ok(await within(psql, waiting(0), 2000),
      `the query still waits ${Date.now() - closed} ms after its stream closed`);
  }
  // Over TLS, a client that ends its side properly (close_notify, then
  // FIN) leaves unread bytes before the end of the stream: still noticed.
  {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call",
      params: { name: "channelsList", arguments: { limit: 5 }, _meta: META } });
    const sock = tls.connect({ host: "127.0.0.1", port: tlsPort, rejectUnauthorized: false });
    await new Promise((r) => sock.once("secureConnect", r));
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${tlsPort}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: ${MODERN}\r\nMcp-Method: tools/call\r\n` +
      `Mcp-Name: channelsList\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    assert.ok(await within(psql, waiting(1), 10000), "the TLS call's query waits for the lock");
    const closed = Date.now();
    sock.end(); // close_notify, then FIN
    assert.ok(await within(psql, waiting(0), 2000),
      `over TLS the query still waits ${Date.now() - closed} ms after its client ended the stream`);
    sock.destroy();
  }
  holder.stdin.end("COMMIT;\n");
  const ok = await call(3);
  assert.equal(ok.status, 200);
  assert.ok(ok.body.result.structuredContent.channels.length > 0, JSON.stringify(ok.body));
});
