// lib.mjs: the pieces bench/harness.mjs (bench/run) and bench/scale.mjs
// (bench/scale) share, so that both measure the same thing the same way:
//   - the command line (flag, opt) and the progress line (say);
//   - the child processes (startProcess, stop, killChildren) and the /proc
//     readers of their CPU time and RSS (cpuSeconds, status, resetPeak);
//   - the throw-away cluster users get by default (startCluster: the
//     embedded cluster of `parleyd migrate` through
//     tests/harness/pg_cluster.sh with PARLEY_PG_EMBEDDED, durability on;
//     destroyCluster; psqlAt; conninfoAt);
//   - the dataset (loadArchive: gen_archive.mjs, then `parleyd import
//     telegram-export`, timed; importOtherSources: the demo's ChatWise
//     chats and agent transcripts, which recall searches beside it);
//   - parleyd serve (serveArgs, startParleyd on a Unix socket and more URLs);
//   - the load generator (loadgen: one parley-loadgen run and its result
//     line and failures; measureRun: the same with the server's CPU time
//     and peak RSS around it; percentile);
//   - the query classes measured at one session (searchClasses,
//     recallClasses, searchCalls, recallCalls).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.dirname(here);
const pgCluster = path.join(root, "tests/harness/pg_cluster.sh");

// ---- command line ----
export function cli(argv = process.argv.slice(2)) {
  return {
    argv,
    flag: (name) => argv.includes(`--${name}`),
    opt: (name, dflt) => {
      const i = argv.indexOf(`--${name}`);
      return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
    },
  };
}
export const say = (s) => process.stderr.write(`bench: ${s}\n`);

// ---- processes ----
// Every process started here, killed by killChildren (the scripts call it
// on exit).
export const children = [];
export function killChildren() {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
}

export async function startProcess(cmd, args, readyRe, env = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.push(child);
  let out = "";
  // Keep the start and the last 64 KiB of the output (for errors).
  const keep = (d) => (out = (out + d).length > 1 << 17 ? out.slice(0, 1 << 15) + "\n...\n" + (out + d).slice(-(1 << 16)) : out + d);
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const deadline = Date.now() + 60000;
  while (!readyRe(out)) {
    if (child.exitCode !== null) throw new Error(`${cmd} exited early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`${cmd} did not get ready:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, log: () => out };
}

export async function stop(p) {
  if (p.child.exitCode !== null) return;
  p.child.kill("SIGTERM");
  await once(p.child, "exit");
}

// /proc figures of a process, or of a server's processes (an array of
// pids: their sum): CPU seconds (user + system; sys: the system part, the
// kernel's, alone) and peak RSS.
export function cpuSeconds(pid, sys = false) {
  if (Array.isArray(pid)) return pid.reduce((sum, p) => sum + cpuSeconds(p, sys), 0);
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((sys ? 0 : Number(f[11])) + Number(f[12])) / 100;
}
export const status = (pid, key) => Array.isArray(pid) ? pid.reduce((sum, p) => sum + status(p, key), 0) :
  Number(new RegExp(`${key}:\\s+(\\d+)`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
export const resetPeak = (pid) => {
  for (const p of [].concat(pid))
    try {
      fs.writeFileSync(`/proc/${p}/clear_refs`, "5");
    } catch {}
};

// ---- the cluster ----
// The cluster users get by default (parleyd's embedded settings, durability
// on) in DIR, with a database "bench" migrated by parleyd.
export function startCluster(pg, parleyd, db = "bench") {
  execFileSync(pgCluster, ["start", pg], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, PARLEY_PG_EMBEDDED: parleyd } });
  psqlAt(pg)(`CREATE DATABASE ${db}`, "postgres");
  execFileSync(parleyd, ["migrate", "--db", conninfoAt(pg, db), "--log-level", "warn"], { stdio: "inherit" });
}
export function destroyCluster(pg) {
  try {
    execFileSync(pgCluster, ["destroy", pg], { stdio: "ignore" });
  } catch {}
}
export const conninfoAt = (pg, db = "bench") => `host=${pg} port=5432 user=parley dbname=${db}`;
// psql on the cluster in pg: one statement, its rows unaligned.
export const psqlAt = (pg) => (sql, db = "bench") =>
  execFileSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", pg, "-U", "parley", "-d", db, "-c", sql], { encoding: "utf8", maxBuffer: 1 << 28 }).trim();

// ---- the dataset ----
// Generates MESSAGES in CHATS (gen_archive.mjs, seed 1) into work, imports
// them through `parleyd import telegram-export` and removes the export.
// Returns the dataset's figures: the import's seconds cover the whole
// command, the word forms it builds after the rows included (startedAt:
// when it started). log: a file the import's stderr goes to (default: this
// process's stderr).
export function loadArchive({ parleyd, pg, work, messages, chats, log, logLevel = "warn" }) {
  const psql = psqlAt(pg);
  const exportFile = path.join(work, "result.json");
  say(`generating ${messages} messages in ${chats} chats`);
  execFileSync(process.execPath, [path.join(here, "gen_archive.mjs"), exportFile, String(messages), String(chats), "1"]);
  const dataset = { messages, chats, exportBytes: fs.statSync(exportFile).size };
  say("importing through parleyd import telegram-export");
  const fd = log ? fs.openSync(log, "a") : "inherit";
  dataset.startedAt = new Date().toISOString();
  const t0 = process.hrtime.bigint();
  try {
    execFileSync(parleyd, ["import", "telegram-export", exportFile, "--db", conninfoAt(pg), "--log-level", logLevel], { stdio: ["ignore", "ignore", fd] });
  } catch (e) {
    if (log) process.stderr.write(fs.readFileSync(log, "utf8").slice(-4000));
    throw e;
  } finally {
    if (log) fs.closeSync(fd);
  }
  const importSecs = Number(process.hrtime.bigint() - t0) / 1e9;
  fs.rmSync(exportFile);
  const stored = Number(psql("SELECT count(*) FROM messages"));
  dataset.importSeconds = +importSecs.toFixed(2);
  dataset.importMsgsPerSec = Math.round(stored / importSecs);
  dataset.storedMessages = stored;
  return dataset;
}

// The other sources recall searches beside the Telegram archive: the
// demo's ChatWise chats and agent transcripts (tools/demo_archive.mjs),
// through their importers. Returns them as "chatwise N messages, ...".
export function importOtherSources({ parleyd, pg, work }) {
  const demo = path.join(work, "demo");
  execFileSync(process.execPath, [path.join(root, "tools", "demo_archive.mjs"), demo], { stdio: "ignore" });
  for (const [kind, what] of [["chatwise", "chatwise/app.db"], ["claude-code", "agents"]])
    execFileSync(parleyd, ["import", kind, path.join(demo, what), "--db", conninfoAt(pg), "--log-level", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
  fs.rmSync(demo, { recursive: true, force: true });
  return psqlAt(pg)("SELECT string_agg(s || ' ' || n || ' messages', ', ' ORDER BY s) FROM " +
    "(SELECT parley_source_of(c.kind) AS s, count(*) AS n FROM messages m JOIN chats c ON c.id = m.chat_id " +
    "WHERE parley_source_of(c.kind) <> 'telegram' GROUP BY 1) x");
}

// ---- parleyd serve ----
// The arguments of the daemon both scripts measure: every toolset they
// call, warnings only, sessions unbounded, listening on listen (a list of
// URLs: unix:PATH, tcp://IP:PORT, http://IP:PORT/mcp).
export const serveArgs = ({ pg, dataDir, listen }) => ["serve", "--db", conninfoAt(pg), "--data-dir", dataDir,
  "--toolsets", "telegram,recall,conformance", "--log-level", "warn", "--max-sessions", "1000000", "--listen", listen.join(",")];
// parleyd serve on the Unix socket sock and the URLs also (ready once the
// socket is there: serve opens its listeners together).
export const startParleyd = ({ parleyd, pg, dataDir, sock, also = [] }) =>
  startProcess(parleyd, serveArgs({ pg, dataDir, listen: [`unix:${sock}`, ...also] }), () => fs.existsSync(sock));

// ---- the load generator ----
export function kv(line) {
  return Object.fromEntries(line.trim().split(/\s+/).map((p) => p.split("=")).map(([k, v]) => [k, isNaN(Number(v)) ? v : Number(v)]));
}

// Its result line, and with errors what failed: parley-loadgen prints, at
// the end, a line per kind of failure to stderr ("loadgen: failed COUNT:
// KIND; first: EXAMPLE"), passed on here and kept as failures [{count,
// kind, first}].
export function loadgen(bin, url, sessions, seconds, label, extra = []) {
  const r = spawnSync(bin, ["--url", url, "--sessions", String(sessions), "--seconds", String(seconds), "--label", label, ...extra],
    { encoding: "utf8", maxBuffer: 1 << 26 });
  if (r.stderr) process.stderr.write(r.stderr);
  const last = (r.stdout ?? "").trim().split("\n").pop();
  if (r.error || !last) throw new Error(`parley-loadgen: ${r.error ?? `no result (exit ${r.status})`}`);
  const failures = [];
  for (const m of (r.stderr ?? "").matchAll(/^loadgen: failed (\d+): (.*?); first: (.*)$/gm))
    failures.push({ count: Number(m[1]), kind: m[2], first: m[3] });
  return { ...kv(last), failures };
}

// One loadgen run against the server of pid (a pid or an array of them);
// CPU per call is the server's user + system time over the calls answered.
// A loadgen that could not run counts as one error and no requests.
export function measureRun({ bin, url, pid, sessions, seconds, label, extra = [] }) {
  resetPeak(pid);
  const cpu0 = cpuSeconds(pid);
  const sys0 = cpuSeconds(pid, true);
  let r;
  try {
    r = loadgen(bin, url, sessions, seconds, label, extra);
  } catch (e) {
    say(String(e.message));
    r = kv("errors=1 requests=0");
  }
  const cpu = cpuSeconds(pid) - cpu0;
  const sys = cpuSeconds(pid, true) - sys0;
  const calls = r.requests_all ?? r.requests;
  return { requests: r.requests ?? 0, errors: r.errors ?? 1, rps: r.rps ?? 0,
    p50_ms: r.p50_ms, p95_ms: r.p95_ms, p99_ms: r.p99_ms, cpu_s: +cpu.toFixed(2),
    // The server's CPU is read around the whole run, warm-up included:
    // per call answered in all of it (requests_all), not in the measured
    // window only (which overstated it by about (S + 1) / S before
    // 2026-11-26 21:30, every server alike).
    cpu_us_per_call: calls ? +((cpu * 1e6) / calls).toFixed(1) : null,
    // of it in the kernel (system time): the wake-ups, reads and writes
    sys_us_per_call: calls ? +((sys * 1e6) / calls).toFixed(1) : null, peak_rss_kib: status(pid, "VmHWM"),
    ...(r.failures?.length ? { failures: r.failures } : {}) };
}

export function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * (sorted.length - 1)))] : 0;
}

// ---- the query classes (one session each) ----
// messagesSearch per query class: each class's queries alone, newest first
// and by relevance.
export const searchClasses = {
  "english word": ["database", "release", "meeting", "coffee", "replica"],
  "russian word": ["встреча", "сервер", "кофе"],
  "cjk": ["数据", "検索"],
  "or": ["deploy OR backup"],
  "phrase": ["\"search index\""],
  // several common words, each in its forms (issue #47: two words of 8 %
  // of the messages each meet in about 1.4 %)
  "two words": ["meeting coffee", "release database", "встреча кофе"],
  "exclusion": ["database -release"],
  "fuzzy": ["databse"],
  // regex alone, over every chat: the class the trigram index of
  // messages.text serves (bench/README.md "The cost of a row").
  "regex": ["data.?base", "ser(ver|vers) down"],
};
// recall: the same words over every source at once (one ranked list).
export const recallClasses = { "english word": searchClasses["english word"], "russian word": searchClasses["russian word"],
  "cjk": searchClasses.cjk, "phrase": searchClasses.phrase, "two words": searchClasses["two words"] };
// A class's calls ({name, arguments}), as the load generator's --calls
// file holds them one a line.
export function searchCalls(cls, qs) {
  const calls = [];
  for (const q of qs) {
    if (cls === "regex") {
      // newest first only: a regex alone has no rank
      calls.push({ name: "messagesSearch", arguments: { regex: q, limit: 20 } });
      continue;
    }
    calls.push({ name: "messagesSearch", arguments: { query: q, limit: 20, ...(cls === "fuzzy" ? { fuzzy: true } : {}) } });
    calls.push({ name: "messagesSearch", arguments: { query: q, limit: 20, orderBy: "rank", ...(cls === "fuzzy" ? { fuzzy: true } : {}) } });
  }
  return calls;
}
export const recallCalls = (qs) => qs.map((q) => ({ name: "recall", arguments: { query: q, limit: 20 } }));
export const writeCalls = (file, calls) => fs.writeFileSync(file, calls.map((c) => JSON.stringify(c)).join("\n") + "\n");

// Puts table into bench/README.md between its bench:NAME:begin and
// bench:NAME:end markers (the part a run owns).
export function updateReadme(name, table) {
  const readme = path.join(here, "README.md");
  const text = fs.readFileSync(readme, "utf8");
  const begin = `<!-- bench:${name}:begin -->`;
  const end = `<!-- bench:${name}:end -->`;
  const a = text.indexOf(begin);
  const b = text.indexOf(end);
  if (a < 0 || b < 0) throw new Error(`bench/README.md lacks the ${begin} ... ${end} markers`);
  fs.writeFileSync(readme, text.slice(0, a + begin.length) + "\n" + table + text.slice(b));
}
