// soak.mjs SECONDS PARLEYD: the soak run behind bench/soak.sh. parleyd
// syncs a steady stream of Bot API updates with photos from the emulator
// into a cluster of its own, configured like the embedded default
// (durability on, the embedded tuning: pg_cluster.sh with
// PARLEY_PG_EMBEDDED), while MCP clients (the official TypeScript SDK, half over
// Streamable HTTP, half over a Unix socket) call a mix of tools in closed
// loops. Every 10 s it samples parleyd's RSS and open descriptors, the
// database pools' connections, the sync-job and media queues, calls/s,
// errors and p99 latency of the window, and prints a line. It fails (exit
// 1) when, after the warm-up, RSS or descriptors grow beyond a bound, or
// when any call fails, the daemon logs a warning or an error, or a
// generated message is missing from the archive at the end.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, "..", "tests", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");
const { Client } = await import(path.join(sdk, "client", "index.js"));
const { StreamableHTTPClientTransport } = await import(path.join(sdk, "client", "streamableHttp.js"));
const { ReadBuffer, serializeMessage } = await import(path.join(sdk, "shared", "stdio.js"));

const [seconds, parleyd] = [Number(process.argv[2] ?? 3600), process.argv[3]];
const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-soak."));
fs.chmodSync(work, 0o755);
const pgDir = path.join(work, "pg");
const cluster = path.join(here, "..", "tests", "harness", "pg_cluster.sh");
execFileSync(cluster, ["start", pgDir], { env: { ...process.env, PARLEY_PG_EMBEDDED: parleyd }, stdio: ["ignore", "ignore", "inherit"] });
process.on("exit", () => {
  try {
    execFileSync(cluster, ["destroy", pgDir], { stdio: "ignore" });
  } catch {}
  fs.rmSync(work, { recursive: true, force: true });
});
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 8); // half HTTP, half Unix socket
const SAMPLE_MS = 10000;
const WARMUP_S = Math.min(120, Math.max(30, seconds / 10));
const RSS_GROWTH_MAX_MB = 24; // after the warm-up
const FDS_GROWTH_MAX = 16;

// The SDK has no Unix socket transport: newline-delimited JSON-RPC on a
// net socket, with the SDK's own framing helpers (as its stdio transport).
class UnixSocketTransport {
  constructor(file) {
    this.file = file;
    this.buf = new ReadBuffer();
  }
  async start() {
    this.sock = net.connect(this.file);
    this.sock.on("data", (d) => {
      this.buf.append(d);
      for (let m; (m = this.buf.readMessage()) !== null;) this.onmessage?.(m);
    });
    this.sock.on("error", (e) => this.onerror?.(e));
    this.sock.on("close", () => this.onclose?.());
    await once(this.sock, "connect");
  }
  async send(message) {
    this.sock.write(serializeMessage(message));
  }
  async close() {
    this.sock.end();
  }
}

const psql = (sql) => execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", sql], { encoding: "utf8" }).trim();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The emulator.
const emu = spawn(process.execPath, [path.join(here, "..", "tests", "harness", "botapi_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
const api = `http://127.0.0.1:${JSON.parse((await once(emu.stdout, "data"))[0]).port}`;
const control = async (p, body) => (await fetch(`${api}${p}`, body ? { method: "POST", body: JSON.stringify(body) } : {})).json();

// The daemon.
const sock = path.join(work, "mcp.sock");
const daemon = spawn(parleyd, ["serve", "--db", `host=${pgDir} port=5432 user=parley dbname=postgres`, "--data-dir", path.join(work, "data"),
  "--log-level", "info", "--toolsets", "telegram", "--telegram-bot-token", "123456:SOAK", "--telegram-api-url", api,
  "--telegram-poll-timeout-s", "5", "--listen", `unix:${sock}`, "--listen", "http://127.0.0.1:0/mcp"], { stdio: ["ignore", "ignore", "pipe"] });
let log = "";
daemon.stderr.on("data", (d) => (log += d.toString()));
for (let i = 0; !/ready \(schema version/.test(log); i++) {
  if (daemon.exitCode !== null || i > 600) throw new Error(`parleyd did not start:\n${log}`);
  await sleep(100);
}
const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(log)[1];
const pid = daemon.pid;

// Updates: a steady stream (10 a second, every fifth with a photo, edits).
let stopping = false;
await control("/control/generate", { n: 20, chats: 6, editEvery: 7, photoEvery: 5 });
const feeder = (async () => {
  while (!stopping) {
    await control("/control/generate", { n: 10, chats: 6, editEvery: 7, photoEvery: 5 });
    await sleep(1000);
  }
})();
await sleep(2000);
const chats = psql("SELECT id FROM chats ORDER BY id").split("\n").map(Number);

// Clients.
const window = { calls: 0, errors: 0, lat: [] };
const errors = [];
const clients = [];
for (let i = 0; i < CLIENTS; i++) {
  const c = new Client({ name: `soak-${i}`, version: "1" });
  await c.connect(i % 2 ? new UnixSocketTransport(sock) : new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  clients.push(c);
}
const mix = (k) => [
  ["channelsList", { limit: 10 }],
  ["messagesSearch", { query: k % 3 ? "parley" : "пельмени OR 数据" }],
  ["messagesList", { channelId: chats[k % chats.length], limit: 50 }],
  ["serverStatus", {}],
  ["messagesContext", { channelId: chats[k % chats.length], messageId: 1 }],
][k % 5];
const loops = clients.map(async (c, i) => {
  for (let k = i; !stopping; k++) {
    const [name, args] = mix(k);
    const t0 = performance.now();
    try {
      const r = await c.callTool({ name, arguments: args });
      if (r.isError) throw new Error(r.content?.[0]?.text ?? "isError");
    } catch (e) {
      window.errors++;
      if (errors.length < 5) errors.push(`${name}: ${e.message}`);
    }
    window.lat.push(performance.now() - t0);
    window.calls++;
    await sleep(20);
  }
});

const rssMB = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const fds = () => fs.readdirSync(`/proc/${pid}/fd`).length;
async function gauges() {
  const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const num = (re) => [...m.matchAll(re)].reduce((s, x) => s + Number(x[1]), 0);
  return {
    pool: `${num(/^parley_db_pool\{pool="rw",state="(?:ready|busy)"\} (\d+)$/gm)}+${num(/^parley_db_pool\{pool="ro",state="(?:ready|busy)"\} (\d+)$/gm)}`,
    jobs: num(/^parley_sync_jobs\{class="[^"]+",status="pending"\} (\d+)$/gm),
  };
}

const samples = [];
const t0 = Date.now();
let base = null;
const header = "t_s\trss_mb\tfds\tpool_rw+ro\tjobs_pending\tmedia_queue\tmessages\tcalls_s\terrors\tp99_ms";
console.log(header);
while (Date.now() - t0 < seconds * 1000) {
  await sleep(SAMPLE_MS - ((Date.now() - t0) % SAMPLE_MS));
  const w = { ...window };
  window.calls = 0;
  window.errors = 0;
  window.lat = [];
  const lat = w.lat.sort((a, b) => a - b);
  const g = await gauges();
  const s = {
    t: Math.round((Date.now() - t0) / 1000), rss: rssMB(), fds: fds(), pool: g.pool, jobs: g.jobs,
    media: Number(psql("SELECT count(*) FROM media WHERE state NOT IN ('done', 'error', 'unavailable')")),
    messages: Number(psql("SELECT count(*) FROM messages")),
    callsPerS: w.calls / (SAMPLE_MS / 1000), errors: w.errors, p99: lat.length ? lat[Math.floor(lat.length * 0.99)] : 0,
  };
  samples.push(s);
  if (base === null && s.t >= WARMUP_S) base = s;
  console.log([s.t, s.rss.toFixed(1), s.fds, s.pool, s.jobs, s.media, s.messages, s.callsPerS.toFixed(0), s.errors, s.p99.toFixed(1)].join("\t"));
}

stopping = true;
await feeder;
await Promise.all(loops);
// Everything generated arrives.
const want = (await control("/control/expected")).length;
let got = 0;
for (let i = 0; i < 300 && (got = Number(psql("SELECT count(*) FROM messages"))) < want; i++) await sleep(100);
for (const c of clients) await c.close().catch(() => {});
daemon.kill("SIGTERM");
const [code] = await once(daemon, "exit");
emu.kill();

const after = samples.filter((s) => base && s.t >= base.t);
const rssMax = Math.max(...after.map((s) => s.rss));
const fdsMax = Math.max(...after.map((s) => s.fds));
const all = samples.reduce((a, s) => a + s.callsPerS * (SAMPLE_MS / 1000), 0);
const problems = [];
if (!base) problems.push(`the run (${seconds} s) is shorter than the warm-up (${WARMUP_S} s)`);
else {
  if (rssMax - base.rss > RSS_GROWTH_MAX_MB) problems.push(`RSS grew by ${(rssMax - base.rss).toFixed(1)} MB after the warm-up (bound ${RSS_GROWTH_MAX_MB})`);
  if (fdsMax - base.fds > FDS_GROWTH_MAX) problems.push(`descriptors grew by ${fdsMax - base.fds} after the warm-up (bound ${FDS_GROWTH_MAX})`);
}
const errs = samples.reduce((a, s) => a + s.errors, 0);
if (errs) problems.push(`${errs} calls failed: ${errors.join("; ")}`);
const bad = log.split("\n").filter((l) => /^\S+ (WARN|ERROR)/.test(l));
if (bad.length) problems.push(`parleyd logged ${bad.length} warnings or errors: ${bad.slice(0, 5).join(" | ")}`);
if (got !== want) problems.push(`${got} messages archived of ${want}`);
if (code !== 0) problems.push(`parleyd exited ${code}`);
console.log(`summary: ${seconds} s, ${CLIENTS} clients (${Math.ceil(CLIENTS / 2)} HTTP, ${Math.floor(CLIENTS / 2)} Unix), ${all} calls, ${errs} errors, ` +
  `${got} messages archived of ${want}; after the ${WARMUP_S} s warm-up RSS ${base?.rss.toFixed(1)} -> max ${rssMax.toFixed(1)} MB, ` +
  `fds ${base?.fds} -> max ${fdsMax}; p99 max ${Math.max(...samples.map((s) => s.p99)).toFixed(1)} ms`);
if (problems.length) {
  console.log(`FAIL: ${problems.join("; ")}`);
  process.exit(1);
}
console.log("PASS");
