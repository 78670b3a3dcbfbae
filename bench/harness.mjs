#!/usr/bin/env node
// harness.mjs: the benchmark harness behind bench/run. In one run, on one
// throw-away PostgreSQL cluster:
//   1. generates the synthetic archive (gen_archive.mjs) and loads it with
//      `parleyd import telegram-export` (the real import path);
//   2. builds a fixed mix of tool calls from it (channelsList, messagesList,
//      messagesSearch with full text, messagesContext, in turn);
//   3. checks that parley and the peers answer those calls alike, in both
//      revisions;
//   4. drives N concurrent MCP sessions (parley-loadgen) at parley and at the
//      peer (peers/ts-sdk-peer.mjs: the official TypeScript SDK and pg) over
//      each transport, and pgbench through the same SQL at the same
//      concurrency, recording throughput, latency percentiles, errors, and
//      each server's CPU time and peak RSS; then the trivial and the
//      database mix again in MCP 2026-07-28 (loadgen --protocol 2026-07-28,
//      Unix socket and HTTP) at parley and at the SDK v2 peer
//      (peers/ts-sdk-v2-peer.mjs), each beside its 2025-11-25 run; beside
//      the trivial call, its floors: a throw-away nginx (one worker)
//      answering parleyd's captured answer over HTTP, and a minimal echo
//      (parley-echo-floor) answering it on a Unix socket, each driven by
//      parley-loadgen --raw with the same request bytes;
//   5. opens idle sessions (Unix socket, HTTP) and measures parleyd's RSS
//      per session;
//   6. writes results/<date>.json and results/<date>.md, and with
//      --update-readme puts the table into bench/README.md.
// Exits non-zero if a run had errors, did no work, or the answers differ.
// What bench/scale measures too (the cluster, the import, parleyd serve,
// the load generator, the query classes) is in lib.mjs, shared.
//
//   node harness.mjs --parleyd BIN --loadgen BIN [--smoke] [--out DIR]
//        [--messages N] [--chats N] [--sessions 1,16,...] [--transports unix,tcp,http]
//        [--seconds S] [--idle N,...] [--update-readme]
//        [--modern-sessions 1,16,...] [--modern-trivial-sessions 1,16,...]
//        [--modern-transports unix,http] [--nginx BIN] [--echo-floor BIN]
//
// --nginx (or PARLEY_BENCH_NGINX): the nginx binary of the HTTP floor
// (default: nginx on PATH or /usr/sbin/nginx; none: the floor is skipped,
// saying so). --echo-floor: the Unix-socket floor's server (default:
// parley-echo-floor beside --loadgen; none: skipped likewise).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {
  children, cli, destroyCluster, here, importOtherSources, killChildren, kv, loadArchive, measureRun, percentile,
  psqlAt, recallCalls, recallClasses, say, searchCalls, searchClasses, serveArgs, startCluster, startProcess, status,
  stop, updateReadme, writeCalls,
} from "./lib.mjs";

const { flag, opt } = cli();
const smoke = flag("smoke");
const cfg = {
  parleyd: opt("parleyd"),
  loadgen: opt("loadgen"),
  out: opt("out", path.join(here, "results")),
  messages: Number(opt("messages", smoke ? 3000 : 1000000)),
  chats: Number(opt("chats", smoke ? 30 : 1000)),
  sessions: opt("sessions", smoke ? "4" : "1,16,64,256,1024").split(",").map(Number),
  transports: opt("transports", smoke ? "unix,http" : "unix,tcp,http").split(","),
  seconds: Number(opt("seconds", smoke ? 1.5 : 10)),
  idle: opt("idle", smoke ? "200" : "10000").split(",").map(Number),
  idleMax: opt("idle-max", smoke ? "" : "unix:19000,http:50000"),
  // The transport-bound mix: a trivial tool (test_simple_text) on each server.
  trivialSessions: opt("trivial-sessions", smoke ? "4" : "1,16,64,256").split(",").map(Number),
  trivialTransports: opt("trivial-transports", "unix,http").split(","),
  // MCP 2026-07-28 (parley beside the SDK v2 peer): the same mixes at the
  // same session counts unless told otherwise, over these transports.
  modernSessions: opt("modern-sessions", opt("sessions", smoke ? "4" : "1,16,64,256,1024")).split(",").map(Number),
  modernTrivialSessions: opt("modern-trivial-sessions", opt("trivial-sessions", smoke ? "4" : "1,16,64,256")).split(",").map(Number),
  modernTransports: opt("modern-transports", "unix,http").split(","),
  pgbenchMaxClients: 250, // the test cluster's max_connections is 300
};
if (!cfg.parleyd || !cfg.loadgen) {
  console.error("usage: harness.mjs --parleyd BIN --loadgen BIN [--smoke] [...]");
  process.exit(2);
}
// The floors' servers: found here, started once parleyd is up (section 3b).
const lookPath = (name) =>
  [...(process.env.PATH ?? "").split(":").filter(Boolean), "/usr/sbin", "/usr/local/sbin"]
    .map((d) => path.join(d, name)).find((f) => { try { fs.accessSync(f, fs.constants.X_OK); return true; } catch { return false; } });
cfg.nginx = opt("nginx", process.env.PARLEY_BENCH_NGINX ?? lookPath("nginx") ?? "");
cfg.echoFloor = opt("echo-floor", path.join(path.dirname(cfg.loadgen), "parley-echo-floor"));

const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-"));
fs.chmodSync(work, 0o755);
const pg = path.join(work, "pg");
const orphans = []; // processes that are not our children (nginx's worker)
function cleanup() {
  for (const pid of orphans) try { process.kill(pid, "SIGKILL"); } catch {}
  killChildren();
  destroyCluster(pg);
  fs.rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
process.on("SIGINT", () => process.exit(130));

const psql = psqlAt(pg);

// ---- a minimal MCP client over Streamable HTTP (for the answer check) ----
async function mcpHttp(url) {
  let sid;
  let id = 0;
  async function post(body) {
    const r = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
        ...(sid ? { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" } : {}) },
      body: JSON.stringify(body),
    });
    sid = sid ?? r.headers.get("mcp-session-id");
    const text = await r.text();
    if (!text) return null;
    if ((r.headers.get("content-type") ?? "").includes("text/event-stream")) {
      const data = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join("");
      return JSON.parse(data);
    }
    return JSON.parse(text);
  }
  await post({ jsonrpc: "2.0", id: ++id, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } } });
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  return { call: (name, args) => post({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }) };
}

// The same in MCP 2026-07-28: no initialize, the envelope on every request,
// over HTTP the revision's headers.
const MODERN = "2026-07-28";
const modernMeta = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} };
function mcpHttpModern(url) {
  let id = 0;
  return {
    async call(name, args) {
      const r = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
          "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
        body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args, _meta: modernMeta } }),
      });
      const text = await r.text();
      if ((r.headers.get("content-type") ?? "").includes("text/event-stream"))
        return JSON.parse(text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join(""));
      return JSON.parse(text);
    },
    close() {},
  };
}
// ... and over a Unix socket (newline-delimited JSON-RPC, one request at a time).
async function mcpSocketModern(file) {
  const sock = net.createConnection(file);
  await once(sock, "connect");
  let buf = "";
  let waiting;
  sock.setEncoding("utf8");
  sock.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const m = JSON.parse(line);
      if (m.id !== undefined && waiting) waiting(m);
    }
  });
  let id = 0;
  return {
    call(name, args) {
      return new Promise((resolve) => {
        waiting = resolve;
        sock.write(JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args, _meta: modernMeta } }) + "\n");
      });
    },
    close: () => sock.destroy(),
  };
}

// ---- 1. dataset ----
const results = {
  date: new Date().toISOString(),
  smoke,
  machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?", memGiB: Math.round(os.totalmem() / 2 ** 30), kernel: os.release() },
  config: { ...cfg, parleyd: undefined, loadgen: undefined, out: undefined },
  dataset: {},
  runs: [],
  trivial: [],
  trivial_2026: [],
  search: [],
  notes: [],
  comparisons: [],
  comparisons_2026: [],
  idle: [],
  problems: [],
};
// The cluster users get by default (parleyd's embedded settings, durability on).
startCluster(pg, cfg.parleyd);
results.dataset = loadArchive({ parleyd: cfg.parleyd, pg, work, messages: cfg.messages, chats: cfg.chats });
if (results.dataset.storedMessages !== cfg.messages) results.problems.push(`imported ${results.dataset.storedMessages} messages, generated ${cfg.messages}`);
// The other sources recall searches beside it.
results.dataset.otherSources = importOtherSources({ parleyd: cfg.parleyd, pg, work });
psql("VACUUM ANALYZE");

// ---- 2. the call mix ----
// The telegram toolset's calls name the Telegram archive's chats (it
// refuses the other sources' chats).
const chats = psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM chats WHERE parley_source_of(kind) = 'telegram'")
  .split(",").map(Number);
const points = psql("SELECT string_agg(chat_id || ':' || id, ',') FROM (SELECT chat_id, id FROM messages " +
  "WHERE id % 37 = 1 AND chat_id IN (SELECT id FROM chats WHERE parley_source_of(kind) = 'telegram') " +
  "ORDER BY chat_id, id LIMIT 2000) m").split(",").map((p) => p.split(":").map(Number));
const words = ["database", "release", "meeting", "coffee", "replica", "встреча", "сервер", "кофе", "数据", "検索", "deploy OR backup", "\"search index\""];
const calls = [];
for (let i = 0; i < 2000; i++) {
  const [chat, msg] = points[i % points.length];
  switch (i % 4) {
    case 0: calls.push({ name: "channelsList", arguments: { limit: 20 } }); break;
    case 1: calls.push({ name: "messagesList", arguments: { channelId: chats[(i * 13) % chats.length], limit: 20 } }); break;
    // every word in turn (i % 12 at i % 4 == 2 named three of the twelve
    // until 2026-11-26: meeting, сервер and deploy OR backup)
    case 2: calls.push({ name: "messagesSearch", arguments: { query: words[(i >> 2) % words.length], limit: 20 } }); break;
    default: calls.push({ name: "messagesContext", arguments: { channelId: chat, messageId: msg, before: 5, after: 5 } });
  }
}
const callsFile = path.join(work, "calls.jsonl");
fs.writeFileSync(callsFile, calls.map((c) => JSON.stringify(c)).join("\n") + "\n");
// The same calls for pgbench, looked up by number.
psql("CREATE TABLE bench_calls (i integer PRIMARY KEY, tool text NOT NULL, args jsonb NOT NULL)");
const copyFile = path.join(work, "calls.copy");
fs.writeFileSync(copyFile, calls.map((c, i) => `${i}\t${c.name}\t${JSON.stringify(c.arguments).replace(/\\/g, "\\\\")}`).join("\n") + "\n");
psql(`\\copy bench_calls FROM '${copyFile}'`);
const pgbenchScript = path.join(work, "calls.sql");
// Each tool is its own SQL function (parley_tg_<tool>): CASE runs only the
// branch of the call's tool.
const toolNames = [...new Set(calls.map((c) => c.name))];
const dispatch = toolNames.map((t) => `WHEN '${t}' THEN parley_tg_${t.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase())}(args, '{}'::jsonb)`).join(" ");
// Each client runs the calls in the order the load generator's session of
// its number does (session k from call k * 7919, one after another: its
// variable n counts the client's calls), not drawn at random: at one
// session a draw of some 2,500 calls of this mix (searches of about 15 ms
// beside lists of 1) moves the mean by some 4 % from run to run.
fs.writeFileSync(pgbenchScript, `\\set i (:client_id * 7919 + :n) % ${calls.length}\n` +
  `SELECT (CASE tool ${dispatch} END)::text FROM bench_calls WHERE i = :i;\n\\set n :n + 1\n`);

// ---- 3. servers ----
const sock = path.join(work, "parley.sock");
const peerSock = path.join(work, "peer.sock");
const peerV2Sock = path.join(work, "peer-v2.sock");
// Five TCP ports below Linux's ephemeral range (32768-60999), so that no
// client socket of a test running beside this one holds them; taken again
// at another place if one is in use all the same.
let port, urls, parley, peer, peerV2;
for (let attempt = 1; ; attempt++) {
  port = 20000 + Math.floor(Math.random() * 12000);
  urls = {
    parley: { unix: `unix:${sock}`, tcp: `tcp://127.0.0.1:${port}`, http: `http://127.0.0.1:${port + 1}/mcp` },
    "ts-sdk-peer": { unix: `unix:${peerSock}`, tcp: `tcp://127.0.0.1:${port + 2}`, http: `http://127.0.0.1:${port + 3}/mcp` },
    "ts-sdk-v2-peer": { unix: `unix:${peerV2Sock}`, http: `http://127.0.0.1:${port + 4}/mcp` },
  };
  try {
    parley = await startProcess(cfg.parleyd, serveArgs({ pg, dataDir: path.join(work, "data"),
      listen: [urls.parley.unix, urls.parley.tcp, urls.parley.http] }), () => fs.existsSync(sock));
    peer = await startProcess(process.execPath, [path.join(here, "peers/ts-sdk-peer.mjs"), "--db", `postgresql://parley@/bench?host=${pg}`,
      "--pool", "4", "--unix", peerSock, "--tcp", String(port + 2), "--http", String(port + 3)], (out) => /"ready":true/.test(out));
    peerV2 = await startProcess(process.execPath, [path.join(here, "peers/ts-sdk-v2-peer.mjs"), "--db", `postgresql://parley@/bench?host=${pg}`,
      "--pool", "4", "--unix", peerV2Sock, "--http", String(port + 4)], (out) => /"ready":true/.test(out));
    break;
  } catch (e) {
    if (attempt >= 5 || !/address already in use|EADDRINUSE/.test(String(e.message))) throw e;
    say(`port ${port}..${port + 4} in use: trying others`);
    for (const p of [parley, peer]) if (p) await stop(p);
    parley = peer = undefined;
    for (const f of [sock, peerSock, peerV2Sock]) fs.rmSync(f, { force: true });
  }
}
const pids = { parley: parley.child.pid, "ts-sdk-peer": peer.child.pid, "ts-sdk-v2-peer": peerV2.child.pid };

// The answers agree: the peer in 2025-11-25 over HTTP, and parley and the
// SDK v2 peer in 2026-07-28 over HTTP and the Unix socket, each with parley's
// 2025-11-25 answer.
{
  const a = await mcpHttp(urls.parley.http);
  const others = {
    "ts-sdk-peer (2025-11-25, http)": await mcpHttp(urls["ts-sdk-peer"].http),
    "parley (2026-07-28, http)": mcpHttpModern(urls.parley.http),
    "parley (2026-07-28, unix)": await mcpSocketModern(sock),
    "ts-sdk-v2-peer (2026-07-28, http)": mcpHttpModern(urls["ts-sdk-v2-peer"].http),
    "ts-sdk-v2-peer (2026-07-28, unix)": await mcpSocketModern(peerV2Sock),
  };
  for (const c of calls.slice(0, 12)) {
    const x = await a.call(c.name, c.arguments);
    const sx = JSON.stringify(x?.result?.structuredContent);
    if (!x?.result || x.result.isError || sx === undefined) {
      results.problems.push(`parley: ${c.name} failed or gave no structuredContent: ${JSON.stringify(x).slice(0, 300)}`);
      continue;
    }
    for (const [who, b] of Object.entries(others)) {
      const y = await b.call(c.name, c.arguments);
      if (JSON.stringify(y?.result?.structuredContent) !== sx)
        results.problems.push(`${c.name} ${JSON.stringify(c.arguments)}: parley (2025-11-25, http) and ${who} answer differently: ${JSON.stringify(y).slice(0, 300)}`);
    }
  }
  for (const b of Object.values(others)) b.close?.();
  say(`answers checked: ${results.problems.length ? "DIFFER" : "alike"}`);
}

// ---- 3b. the floors ----
// What one request/answer costs on this kernel without any MCP: over HTTP,
// nginx answering a fixed body; over the Unix socket, parley-echo-floor
// answering a fixed line. Both answer with the bytes parleyd answers the
// trivial call (tools/call test_simple_text) with, captured here, and
// parley-loadgen --raw drives them with the same request bytes (no
// initialize, no session), checking every answer against those bytes. A
// floor that cannot run is skipped, saying why (results.floors).
const TRIVIAL = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}';
const INIT_2025 = JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } } });
const INITIALIZED_2025 = '{"jsonrpc":"2.0","method":"notifications/initialized"}';
const HTTP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
async function trivialAnswerHttp(url) {
  const r0 = await fetch(url, { method: "POST", headers: HTTP_HEADERS, body: INIT_2025 });
  await r0.arrayBuffer();
  const h = { ...HTTP_HEADERS, "mcp-session-id": r0.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
  await (await fetch(url, { method: "POST", headers: h, body: INITIALIZED_2025 })).arrayBuffer();
  const r = await fetch(url, { method: "POST", headers: h, body: TRIVIAL });
  return { status: r.status, type: r.headers.get("content-type"), body: Buffer.from(await r.arrayBuffer()) };
}
// The answer line (without its newline) to each line sent, over a Unix socket.
async function trivialAnswerSocket(file) {
  const sock = net.createConnection(file);
  await once(sock, "connect");
  let buf = Buffer.alloc(0);
  const lines = [];
  sock.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    let nl;
    while ((nl = buf.indexOf(10)) >= 0) {
      lines.push(buf.subarray(0, nl));
      buf = buf.subarray(nl + 1);
    }
  });
  const next = async () => {
    const deadline = Date.now() + 10000;
    while (!lines.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    return lines.shift();
  };
  sock.write(INIT_2025 + "\n");
  await next();
  sock.write(INITIALIZED_2025 + "\n" + TRIVIAL + "\n");
  const answer = await next();
  sock.destroy();
  return answer;
}
const freePort = () => new Promise((resolve, reject) => {
  const srv = net.createServer().listen(0, "127.0.0.1", () => {
    const p = srv.address().port;
    srv.close(() => resolve(p));
  }).on("error", reject);
});
// A process's children (nginx's worker): /proc/PID/task/PID/children, or
// where the kernel lacks it, every process's parent in /proc/N/stat.
function childrenOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((d) => {
      try {
        return Number(fs.readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1].split(" ")[1]) === pid;
      } catch {
        return false;
      }
    }).map(Number);
  }
}
results.floors = {};
const floors = {}; // transport -> { server, expect (file of the answer's bytes) }
{
  const dir = path.join(work, "floors");
  fs.mkdirSync(dir, { recursive: true });
  // HTTP: nginx.
  const a = await trivialAnswerHttp(urls.parley.http);
  const skipHttp = (why) => {
    results.floors.http = { server: "nginx", skipped: why };
    say(`HTTP floor (nginx) skipped: ${why}`);
  };
  if (a.status !== 200 || !a.body.length) skipHttp(`parleyd answered the trivial call with HTTP ${a.status}`);
  else if (!cfg.nginx || !fs.existsSync(cfg.nginx))
    skipHttp(`no nginx${cfg.nginx ? ` at ${cfg.nginx}` : " on PATH or in /usr/sbin"}: install it with \`apt-get install nginx-light\` ` +
      "(bench/run does so when run as root, except with --smoke), or name it with --nginx BIN or PARLEY_BENCH_NGINX");
  else if (a.body.includes("$")) skipHttp("the answer holds a $, which nginx's return would read as a variable");
  else {
    const expect = path.join(dir, "http-answer.json");
    fs.writeFileSync(expect, a.body);
    const ngx = path.join(dir, "nginx");
    fs.mkdirSync(path.join(ngx, "tmp"), { recursive: true });
    // nginx -V prints its version and build to stderr.
    const v = spawnSync(cfg.nginx, ["-V"], { encoding: "utf8" });
    const info = `${v.stdout}${v.stderr}`;
    const version = /nginx\/[\d.]+/.exec(info) ?? ["nginx"];
    const temps = ["client_body", "proxy", "fastcgi", "scgi", "uwsgi"]
      .filter((m) => m === "client_body" || !info.includes(`--without-http_${m}_module`))
      .map((m) => `    ${m}_temp_path ${path.join(ngx, "tmp", m)};`);
    const body = a.body.toString("utf8").replace(/\\/g, "\\\\").replace(/'/g, "\\'");
    let started;
    for (let attempt = 1; !started; attempt++) {
      const nport = await freePort();
      fs.writeFileSync(path.join(ngx, "nginx.conf"), [
        "# The HTTP floor of bench/run (written by bench/harness.mjs).",
        "# One worker: parleyd is one loop on one core.",
        "daemon off;", "master_process on;", "worker_processes 1;",
        `pid ${path.join(ngx, "nginx.pid")};`, `error_log ${path.join(ngx, "error.log")} warn;`,
        "events {", "    worker_connections 8192;", "}",
        "http {", "    access_log off;", ...temps,
        "    keepalive_requests 1000000000;", "    keepalive_timeout 300s;",
        "    server {", `        listen 127.0.0.1:${nport};`,
        "        location = /mcp {",
        `            default_type "${a.type ?? "application/json"}";`,
        `            return 200 '${body}';`,
        "        }", "    }", "}", ""].join("\n"));
      try {
        const p = await startProcess(cfg.nginx, ["-p", ngx + "/", "-c", path.join(ngx, "nginx.conf"), "-e", path.join(ngx, "error.log")],
          () => fs.existsSync(path.join(ngx, "nginx.pid")));
        started = { p, port: nport };
      } catch (e) {
        const log = fs.existsSync(path.join(ngx, "error.log")) ? fs.readFileSync(path.join(ngx, "error.log"), "utf8") : "";
        if (attempt < 5 && /Address already in use/.test(log + e.message)) continue;
        skipHttp(`nginx did not start: ${(e.message + log).slice(-600)}`);
        break;
      }
    }
    if (started) {
      const master = started.p.child.pid;
      let worker;
      for (const deadline = Date.now() + 10000; !worker && Date.now() < deadline; await new Promise((r) => setTimeout(r, 20)))
        worker = childrenOf(master)[0];
      if (worker) orphans.push(worker);
      urls.nginx = { http: `http://127.0.0.1:${started.port}/mcp` };
      const b = worker ? await fetch(urls.nginx.http, { method: "POST", headers: HTTP_HEADERS, body: TRIVIAL }) : null;
      const bb = b ? Buffer.from(await b.arrayBuffer()) : null;
      if (!worker) skipHttp("nginx started no worker");
      else if (b.status !== 200 || !bb.equals(a.body) || b.headers.get("content-type") !== a.type) {
        // The harness's own fault (the body's quoting, the type): a problem.
        skipHttp(`nginx answers otherwise than parleyd: HTTP ${b.status}, ${b.headers.get("content-type")}, ${bb.toString().slice(0, 200)}`);
        results.problems.push(`HTTP floor: ${results.floors.http.skipped}`);
      } else {
        pids.nginx = [master, worker];
        floors.http = { server: "nginx", expect, stop: started.p };
        results.floors.http = { server: "nginx", version: version[0], workers: 1, answer_bytes: a.body.length, content_type: a.type };
        say(`HTTP floor: ${version[0]}, one worker, answering ${a.body.length} bytes of ${a.type} on port ${started.port}`);
      }
      if (!floors.http) {
        await stop(started.p);
        orphans.length = 0;
      }
    }
  }
  // The Unix socket: parley-echo-floor.
  const line = await trivialAnswerSocket(sock);
  const skipUnix = (why) => {
    results.floors.unix = { server: "echo-floor", skipped: why };
    say(`Unix-socket floor (parley-echo-floor) skipped: ${why}`);
  };
  if (!line?.length) skipUnix("parleyd gave no answer line to the trivial call");
  else if (!fs.existsSync(cfg.echoFloor)) skipUnix(`no ${cfg.echoFloor} (built beside parley-loadgen: bench/CMakeLists.txt)`);
  else {
    const expect = path.join(dir, "unix-answer.json");
    fs.writeFileSync(expect, line);
    const echoSock = path.join(dir, "echo.sock");
    try {
      const p = await startProcess(cfg.echoFloor, [echoSock, expect], (out) => /ready/.test(out));
      urls["echo-floor"] = { unix: `unix:${echoSock}` };
      pids["echo-floor"] = p.child.pid;
      floors.unix = { server: "echo-floor", expect, stop: p };
      results.floors.unix = { server: "echo-floor", answer_bytes: line.length + 1 };
      say(`Unix-socket floor: parley-echo-floor answering ${line.length + 1} bytes`);
    } catch (e) {
      skipUnix(`it did not start: ${e.message.slice(-600)}`);
    }
  }
}

// ---- 4. workload ----
// One loadgen run against one server; CPU per call is the server's user +
// system time over the calls answered.
// protocol: the revision the load generator speaks.
function measure(mix, server, transport, n, extra, protocol = "2025-11-25") {
  const r = measureRun({ bin: cfg.loadgen, url: urls[server][transport], pid: pids[server], sessions: n, seconds: cfg.seconds, label: server,
    extra: [...extra, ...(protocol === MODERN ? ["--protocol", MODERN] : [])] });
  const run = { mix, protocol, server, transport, sessions: n, ...r };
  results.runs.push(run);
  say(`${mix} ${protocol} ${server} ${transport} x${n}: ${run.rps} req/s, p99 ${run.p99_ms} ms, ${run.cpu_us_per_call} µs CPU/call, ${run.errors} errors`);
  if (run.errors > 0 || run.requests === 0) results.problems.push(`${mix} ${protocol} ${server} ${transport} x${n}: ${run.errors} errors, ${run.requests} requests` +
    (run.failures ?? []).map((f) => `; ${f.count}× ${f.kind} (first: \`${f.first.slice(0, 160).replace(/`/g, "'")}\`)`).join(""));
  return run;
}
const findRun = (mix, protocol, server, transport, n) =>
  results.runs.find((r) => r.mix === mix && r.protocol === protocol && r.server === server && r.transport === transport && r.sessions === n);
const ratio = (x, y, digits = 2) => (x && y ? +(x / y).toFixed(digits) : null);
for (const n of cfg.trivialSessions)
  for (const transport of cfg.trivialTransports) {
    const p = measure("trivial", "parley", transport, n, ["--tool", "test_simple_text"]);
    const q = measure("trivial", "ts-sdk-peer", transport, n, ["--tool", "test_simple_text"]);
    // The transport's floor (section 3b), same sessions and seconds.
    const fl = floors[transport];
    const f = fl ? measure("trivial", fl.server, transport, n, ["--tool", "test_simple_text", "--raw", "--expect", fl.expect], "raw") : null;
    results.trivial.push({ transport, sessions: n, parley_rps: p.rps, peer_rps: q.rps, parley_cpu_us: p.cpu_us_per_call, peer_cpu_us: q.cpu_us_per_call,
      parley_sys_us: p.sys_us_per_call, floor_sys_us: f?.sys_us_per_call ?? null,
      peer_vs_parley_cpu: p.cpu_us_per_call ? +(q.cpu_us_per_call / p.cpu_us_per_call).toFixed(1) : null, parley_p99_ms: p.p99_ms, peer_p99_ms: q.p99_ms,
      floor: fl?.server ?? null, floor_rps: f?.rps ?? null, floor_p99_ms: f?.p99_ms ?? null, floor_cpu_us: f?.cpu_us_per_call ?? null,
      parley_vs_floor_cpu: ratio(p.cpu_us_per_call, f?.cpu_us_per_call),
      // The most peer/parley can be for a server that costs what the floor
      // does: the peer's CPU per call over the floor's.
      peer_vs_floor_cpu: ratio(q.cpu_us_per_call, f?.cpu_us_per_call, 1) });
  }
// The same in MCP 2026-07-28: parley beside the SDK v2 peer.
for (const n of cfg.modernTrivialSessions)
  for (const transport of cfg.modernTransports) {
    const p = measure("trivial", "parley", transport, n, ["--tool", "test_simple_text"], MODERN);
    const q = measure("trivial", "ts-sdk-v2-peer", transport, n, ["--tool", "test_simple_text"], MODERN);
    const old = findRun("trivial", "2025-11-25", "parley", transport, n);
    const f = floors[transport] ? findRun("trivial", "raw", floors[transport].server, transport, n) : null;
    results.trivial_2026.push({ transport, sessions: n, parley_rps: p.rps, peer_rps: q.rps, parley_cpu_us: p.cpu_us_per_call, peer_cpu_us: q.cpu_us_per_call,
      parley_sys_us: p.sys_us_per_call,
      peer_vs_parley_cpu: ratio(q.cpu_us_per_call, p.cpu_us_per_call, 1), parley_p99_ms: p.p99_ms, peer_p99_ms: q.p99_ms,
      parley_rps_vs_2025: ratio(p.rps, old?.rps), floor_cpu_us: f?.cpu_us_per_call ?? null, parley_vs_floor_cpu: ratio(p.cpu_us_per_call, f?.cpu_us_per_call),
      peer_vs_floor_cpu: ratio(q.cpu_us_per_call, f?.cpu_us_per_call, 1) });
  }
for (const fl of Object.values(floors)) await stop(fl.stop);
orphans.length = 0; // nginx's worker ended with its master
// Search latency per query class, one session (Unix socket): each class's
// queries alone, newest first and by relevance.
for (const [cls, qs] of Object.entries(searchClasses)) {
  const file = path.join(work, `search-${cls.replace(/\W+/g, "-")}.jsonl`);
  writeCalls(file, searchCalls(cls, qs));
  const r = measure("search", "parley", "unix", 1, ["--calls", file]);
  results.search.push({ class: cls, queries: qs, requests: r.requests, p50_ms: r.p50_ms, p95_ms: r.p95_ms, p99_ms: r.p99_ms });
  if (!smoke && r.p95_ms >= 50) results.notes.push(`search ${cls}: p95 ${r.p95_ms} ms at one session (goal: under 50 ms)`);
}
// recall: the same words over every source at once (one ranked list).
results.recall = [];
for (const [cls, qs] of Object.entries(recallClasses)) {
  const file = path.join(work, `recall-${cls.replace(/\W+/g, "-")}.jsonl`);
  writeCalls(file, recallCalls(qs));
  const r = measure("recall", "parley", "unix", 1, ["--calls", file]);
  results.recall.push({ class: cls, queries: qs, requests: r.requests, p50_ms: r.p50_ms, p95_ms: r.p95_ms, p99_ms: r.p99_ms });
  if (!smoke && r.p95_ms >= 50) results.notes.push(`recall ${cls}: p95 ${r.p95_ms} ms at one session (goal: under 50 ms)`);
}
for (const n of cfg.sessions) {
  for (const transport of cfg.transports)
    for (const server of ["parley", "ts-sdk-peer"]) measure("database", server, transport, n, ["--calls", callsFile]);
  // The database's own limit: the same SQL through pgbench.
  const clients = Math.min(n, cfg.pgbenchMaxClients);
  const prefix = path.join(work, `pgb${n}`);
  const out = execFileSync("/usr/lib/postgresql/15/bin/pgbench", ["-n", "-M", "prepared", "-D", "n=0", "-c", String(clients), "-j", String(Math.min(clients, os.cpus().length)),
    "-T", String(Math.max(1, Math.round(cfg.seconds))), "-f", pgbenchScript, "-l", "--log-prefix", prefix, "-h", pg, "-U", "parley", "bench"], { encoding: "utf8", cwd: work });
  const lat = [];
  for (const f of fs.readdirSync(work).filter((f) => f.startsWith(`pgb${n}.`)))
    for (const line of fs.readFileSync(path.join(work, f), "utf8").split("\n"))
      if (line) lat.push(Number(line.split(" ")[2]) / 1000);
  lat.sort((x, y) => x - y);
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1] ?? 0);
  const failed = Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0);
  const run = { server: "pgbench", transport: "libpq", sessions: n, clients, requests: lat.length, errors: failed, rps: Math.round(tps),
    p50_ms: +percentile(lat, 0.5).toFixed(3), p95_ms: +percentile(lat, 0.95).toFixed(3), p99_ms: +percentile(lat, 0.99).toFixed(3) };
  results.runs.push(run);
  say(`pgbench x${clients}: ${run.rps} tps, p99 ${run.p99_ms} ms`);
  if (run.errors > 0 || run.requests === 0) results.problems.push(`pgbench x${clients}: ${run.errors} errors`);
  for (const transport of cfg.transports) {
    const p = findRun("database", "2025-11-25", "parley", transport, n);
    const q = findRun("database", "2025-11-25", "ts-sdk-peer", transport, n);
    results.comparisons.push({ transport, sessions: n, parley_rps: p.rps, peer_rps: q.rps, pgbench_tps: run.rps,
      parley_vs_peer: q.rps ? +(p.rps / q.rps).toFixed(2) : null, parley_vs_pgbench: run.rps ? +(p.rps / run.rps).toFixed(2) : null,
      parley_p99_ms: p.p99_ms, peer_p99_ms: q.p99_ms, pgbench_p99_ms: run.p99_ms });
  }
}
// The database mix in MCP 2026-07-28: parley beside the SDK v2 peer (pgbench
// as measured above at the same concurrency, where it was).
for (const n of cfg.modernSessions)
  for (const transport of cfg.modernTransports) {
    const p = measure("database", "parley", transport, n, ["--calls", callsFile], MODERN);
    const q = measure("database", "ts-sdk-v2-peer", transport, n, ["--calls", callsFile], MODERN);
    const pgb = results.runs.find((r) => r.server === "pgbench" && r.sessions === n);
    const old = findRun("database", "2025-11-25", "parley", transport, n);
    results.comparisons_2026.push({ transport, sessions: n, parley_rps: p.rps, peer_rps: q.rps, pgbench_tps: pgb?.rps ?? null,
      parley_vs_peer: ratio(p.rps, q.rps), parley_vs_pgbench: ratio(p.rps, pgb?.rps), parley_rps_vs_2025: ratio(p.rps, old?.rps),
      parley_p99_ms: p.p99_ms, peer_p99_ms: q.p99_ms, pgbench_p99_ms: pgb?.p99_ms ?? null });
  }

// ---- 5. idle sessions ----
async function idle(transport, n) {
  const pid = pids.parley;
  const before = status(pid, "VmRSS");
  const child = spawn(cfg.loadgen, ["--url", urls.parley[transport], "--sessions", String(n), "--seconds", "2", "--idle", "--label", "idle"], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => { err += d; process.stderr.write(d); });
  const deadline = Date.now() + 300000;
  while (!/idle_ready=\d+/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const during = status(pid, "VmRSS");
  await once(child, "exit").catch(() => {});
  const r = kv(out.trim().split("\n").pop());
  const row = { transport, sessions: n, ready: r.ready ?? 0, errors: r.errors ?? 0, rss_before_kib: before, rss_during_kib: during,
    kib_per_session: r.ready ? +((during - before) / r.ready).toFixed(2) : null };
  const failures = [...err.matchAll(/^loadgen: failed (\d+): (.*?); first: (.*)$/gm)].map((m) => ({ count: Number(m[1]), kind: m[2], first: m[3] }));
  if (failures.length) row.failures = failures;
  results.idle.push(row);
  say(`idle ${transport}: ${row.ready}/${n} sessions, ${row.kib_per_session} KiB each`);
  return row;
}
for (const n of cfg.idle)
  for (const transport of ["unix", "http"]) {
    const row = await idle(transport, n);
    if (row.ready !== n) results.problems.push(`idle ${transport}: ${row.ready} of ${n} sessions` +
      (row.failures ?? []).map((f) => `; ${f.count}× ${f.kind}`).join(""));
  }
for (const spec of cfg.idleMax.split(",").filter(Boolean)) {
  const [transport, n] = spec.split(":");
  const row = await idle(transport, Number(n));
  row.max_attempt = true;
}
results.parleyd_peak_rss_kib = status(pids.parley, "VmHWM");
await stop(parley);
await stop(peer);
await stop(peerV2);

// ---- 6. report ----
const fmt = (x) => (x === null || x === undefined ? "–" : typeof x === "number" ? x.toLocaleString("en-US") : x);
const md = [];
// CPU per call with its kernel part: "24.7 (12.1)".
const withSys = (cpu, sys) => (cpu === null || cpu === undefined ? "–" : `${fmt(cpu)}${sys === null || sys === undefined ? "" : ` (${fmt(sys)})`}`);
md.push(`Run of ${results.date}${smoke ? " (smoke)" : ""}: ${results.machine.cores} cores (${results.machine.cpu}), ${results.machine.memGiB} GiB; ` +
  `${fmt(results.dataset.storedMessages)} messages in ${fmt(cfg.chats)} chats, imported at ${fmt(results.dataset.importMsgsPerSec)} msg/s; ` +
  `${cfg.seconds} s per run; pgbench clients capped at ${cfg.pgbenchMaxClients}.`, "");
md.push("MCP 2025-11-25 (each session `initialize`s first; the peer: TypeScript SDK v1).", "");
md.push("Transport-bound mix (`test_simple_text`, no database). The floor: what one request/answer costs with no MCP at all, " +
  "driven by the same load generator with the same request bytes (`--raw`: no `initialize`, no session) and answered with " +
  "the bytes of parleyd's answer: over HTTP nginx with one worker (parleyd is one loop), over the Unix socket " +
  "`parley-echo-floor` (one libuv loop, a fixed line per line read). parley/floor: parleyd's CPU per call over the floor's " +
  "CPU per request (1.25 = 125 % of the floor; CPU is user and system time, the system part, the kernel's, in brackets); peer/parley: the peer's CPU per call over parleyd's; peer/floor: the peer's " +
  "CPU per call over the floor's, the most peer/parley can be for a server that costs what the floor does.", "");
for (const [t, f] of Object.entries(results.floors ?? {}))
  md.push(f.skipped ? `- ${t} floor (${f.server}): skipped: ${f.skipped}` :
    `- ${t} floor: ${f.version ?? f.server}${f.workers ? `, ${f.workers} worker` : ""}, answering ${f.answer_bytes} bytes${f.content_type ? ` of ${f.content_type}` : ""}`);
md.push("");
md.push("| transport | sessions | parley req/s | parley p99 ms | parley µs CPU/call (kernel) | floor | floor req/s | floor µs CPU/req (kernel) | parley/floor CPU | TS SDK peer req/s | peer p99 ms | peer µs CPU/call | peer/parley CPU | peer/floor CPU |");
md.push("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const t of results.trivial)
  md.push(`| ${t.transport} | ${fmt(t.sessions)} | ${fmt(t.parley_rps)} | ${t.parley_p99_ms} | ${withSys(t.parley_cpu_us, t.parley_sys_us)} | ${t.floor ?? "–"} | ${fmt(t.floor_rps)} | ${withSys(t.floor_cpu_us, t.floor_sys_us)} | ${fmt(t.parley_vs_floor_cpu)} | ` +
    `${fmt(t.peer_rps)} | ${t.peer_p99_ms} | ${fmt(t.peer_cpu_us)} | ${fmt(t.peer_vs_parley_cpu)} | ${fmt(t.peer_vs_floor_cpu)} |`);
md.push("", "Search latency per query class (`messagesSearch`, one session, Unix socket; each query newest first and by relevance):", "");
md.push("| class | queries | calls | p50 ms | p95 ms | p99 ms |", "|---|---|---:|---:|---:|---:|");
for (const r of results.search)
  md.push(`| ${r.class} | ${r.queries.map((q) => "`" + q + "`").join(", ")} | ${fmt(r.requests)} | ${r.p50_ms} | ${r.p95_ms} | ${r.p99_ms} |`);
md.push("", `recall latency per query class (one session, Unix socket; every source: ${results.dataset.otherSources ?? "?"} beside the Telegram archive):`, "");
md.push("| class | queries | calls | p50 ms | p95 ms | p99 ms |", "|---|---|---:|---:|---:|---:|");
for (const r of results.recall ?? [])
  md.push(`| ${r.class} | ${r.queries.map((q) => "`" + q + "`").join(", ")} | ${fmt(r.requests)} | ${r.p50_ms} | ${r.p95_ms} | ${r.p99_ms} |`);
md.push("", "Database-bound mix (channelsList, messagesList, messagesSearch, messagesContext):", "");
md.push("| transport | sessions | parley req/s | p50 / p95 / p99 ms | µs CPU/call (kernel) | peak RSS MiB | TS SDK peer req/s | peer p99 ms | peer µs CPU/call (kernel) | peer RSS MiB | pgbench tps | pgbench p99 ms | parley/peer | parley/pgbench |");
md.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const c of results.comparisons) {
  const p = findRun("database", "2025-11-25", "parley", c.transport, c.sessions);
  const q = findRun("database", "2025-11-25", "ts-sdk-peer", c.transport, c.sessions);
  md.push(`| ${c.transport} | ${fmt(c.sessions)} | ${fmt(c.parley_rps)} | ${p.p50_ms} / ${p.p95_ms} / ${p.p99_ms} | ${withSys(p.cpu_us_per_call, p.sys_us_per_call)} | ${(p.peak_rss_kib / 1024).toFixed(1)} | ` +
    `${fmt(c.peer_rps)} | ${q.p99_ms} | ${withSys(q.cpu_us_per_call, q.sys_us_per_call)} | ${(q.peak_rss_kib / 1024).toFixed(1)} | ${fmt(c.pgbench_tps)} | ${c.pgbench_p99_ms} | ${fmt(c.parley_vs_peer)} | ${fmt(c.parley_vs_pgbench)} |`);
}
md.push("", "MCP 2026-07-28 (no `initialize`; the envelope in every request's `_meta`, over HTTP its headers and no session; the peer: TypeScript SDK v2, " +
  "`@modelcontextprotocol/server`; \"2026/2025\": parley's req/s over its 2025-11-25 run above, same transport and sessions; " +
  "parley/floor and peer/floor: over the floor's CPU per request measured above at the same sessions).", "");
md.push("Transport-bound mix (`test_simple_text`, no database):", "");
md.push("| transport | sessions | parley req/s | parley p99 ms | parley µs CPU/call (kernel) | parley/floor CPU | TS SDK v2 peer req/s | peer p99 ms | peer µs CPU/call | peer/parley CPU | peer/floor CPU | parley 2026/2025 req/s |");
md.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const t of results.trivial_2026)
  md.push(`| ${t.transport} | ${fmt(t.sessions)} | ${fmt(t.parley_rps)} | ${t.parley_p99_ms} | ${withSys(t.parley_cpu_us, t.parley_sys_us)} | ${fmt(t.parley_vs_floor_cpu)} | ${fmt(t.peer_rps)} | ${t.peer_p99_ms} | ${fmt(t.peer_cpu_us)} | ${fmt(t.peer_vs_parley_cpu)} | ${fmt(t.peer_vs_floor_cpu)} | ${fmt(t.parley_rps_vs_2025)} |`);
md.push("", "Database-bound mix (channelsList, messagesList, messagesSearch, messagesContext; pgbench from the table above):", "");
md.push("| transport | sessions | parley req/s | p50 / p95 / p99 ms | µs CPU/call (kernel) | peak RSS MiB | TS SDK v2 peer req/s | peer p99 ms | peer µs CPU/call (kernel) | peer RSS MiB | parley/peer | parley/pgbench | parley 2026/2025 req/s |");
md.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const c of results.comparisons_2026) {
  const p = findRun("database", MODERN, "parley", c.transport, c.sessions);
  const q = findRun("database", MODERN, "ts-sdk-v2-peer", c.transport, c.sessions);
  md.push(`| ${c.transport} | ${fmt(c.sessions)} | ${fmt(c.parley_rps)} | ${p.p50_ms} / ${p.p95_ms} / ${p.p99_ms} | ${withSys(p.cpu_us_per_call, p.sys_us_per_call)} | ${(p.peak_rss_kib / 1024).toFixed(1)} | ` +
    `${fmt(c.peer_rps)} | ${q.p99_ms} | ${withSys(q.cpu_us_per_call, q.sys_us_per_call)} | ${(q.peak_rss_kib / 1024).toFixed(1)} | ${fmt(c.parley_vs_peer)} | ${fmt(c.parley_vs_pgbench)} | ${fmt(c.parley_rps_vs_2025)} |`);
}
md.push("", "| idle sessions | transport | held | parleyd RSS before → during (MiB) | KiB per session |", "|---:|---|---:|---:|---:|");
for (const r of results.idle)
  md.push(`| ${fmt(r.sessions)}${r.max_attempt ? " (max attempt)" : ""} | ${r.transport} | ${fmt(r.ready)} | ${(r.rss_before_kib / 1024).toFixed(1)} → ${(r.rss_during_kib / 1024).toFixed(1)} | ${fmt(r.kib_per_session)} |`);
if (results.notes.length) md.push("", "Goals not reached:", ...results.notes.map((p) => `- ${p}`));
if (results.problems.length) md.push("", "Problems:", ...results.problems.map((p) => `- ${p}`));
const table = md.join("\n") + "\n";

fs.mkdirSync(cfg.out, { recursive: true });
const stamp = results.date.replace(/[:]/g, "-").replace(/\..*/, "");
fs.writeFileSync(path.join(cfg.out, `${stamp}${smoke ? "-smoke" : ""}.json`), JSON.stringify(results, null, 1) + "\n");
fs.writeFileSync(path.join(cfg.out, `${stamp}${smoke ? "-smoke" : ""}.md`), table);
process.stdout.write(table);
if (flag("update-readme")) updateReadme("run", table);
if (results.problems.length) {
  console.error(`bench: ${results.problems.length} problem(s):\n${results.problems.join("\n")}`);
  process.exit(1);
}
