#!/usr/bin/env node
// scale.mjs: growth measured, not guessed (bench/scale). For each archive
// size, one after the other, on a throw-away cluster of its own (the one
// users get by default: parleyd's embedded settings, durability on):
//   1. generates the archive (gen_archive.mjs, a chat per 1,000 messages)
//      and imports it with `parleyd import telegram-export` (timed: the
//      rows, then the word forms the import builds), the demo's other
//      sources beside it (recall searches them);
//   2. starts `parleyd serve` (HTTP on a free local port, and a Unix
//      socket), waits until the search is
//      in its steady state (the word forms in use, the phrases' pairs index
//      and every index a migration asked for built, the vocabulary merged),
//      then VACUUM ANALYZE;
//   3. records the store: bytes per message of `messages` (heap, TOAST and
//      indexes) and of the database, and each index of `messages`;
//   4. measures every query class at one session over HTTP (--transport
//      unix: the Unix socket) with parley-loadgen, the calls and seconds
//      bench/run uses: messagesSearch
//      per class (newest first and by rank), regex, recall per class, and a
//      chat's history and context deep in the biggest chats;
//   5. for a class whose p95 is 50 ms or more, or grew faster than the
//      archive since the first size, captures the plans of its calls
//      (auto_explain through psql: every statement over 1 ms, nested ones
//      too, with buffers);
//   6. removes the cluster.
// Then writes results/scale-<date>.json and .md (p95 per class at each
// size beside the archive's growth, the store, the plans); with
// --update-readme puts the .md into bench/README.md between the
// bench:scale markers.
//
//   node scale.mjs --parleyd BIN --loadgen BIN [--sizes N,N,...]
//        [--per-chat N] [--seconds S] [--plans-ms MS] [--transport http|unix]
//        [--out DIR] [--smoke] [--update-readme]
//
// Defaults: --sizes 1000000,2000000,5000000, --per-chat 1000 (messages a
// chat: 5,000 chats at 5M), --seconds 10, --plans-ms 50 (the p95 from which
// a class's plans are captured whatever its growth). --smoke: sizes
// 3000,6000, 1.5 s runs, --plans-ms 10. The results are written after
// each size (a later size that fails leaves the earlier ones, and says
// why). Exits non-zero if a size failed or a run had errors or did no work.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {
  cli, destroyCluster, here, importOtherSources, killChildren, loadArchive, measureRun, psqlAt, recallCalls,
  recallClasses, say, searchCalls, searchClasses, startCluster, startParleyd, stop, updateReadme, writeCalls,
} from "./lib.mjs";

const { flag, opt } = cli();
const smoke = flag("smoke");
const cfg = {
  parleyd: opt("parleyd"),
  loadgen: opt("loadgen"),
  out: opt("out", path.join(here, "results")),
  sizes: opt("sizes", smoke ? "3000,6000" : "1000000,2000000,5000000").split(",").map(Number).sort((a, b) => a - b),
  perChat: Number(opt("per-chat", 1000)),
  // What the calls go over: HTTP (Streamable HTTP, as agents over the
  // network meet it; the issue's figures) or the Unix socket.
  transport: opt("transport", "http"),
  seconds: Number(opt("seconds", smoke ? 1.5 : 10)),
  // A class's plans are captured at a size where its p95 is this or more
  // (in a smoke run less, so that the capture runs).
  slowMs: Number(opt("plans-ms", smoke ? 10 : 50)),
  // ... and only statements that took longer than this.
  planMinMs: 1,
  // How long serve may take to reach the steady state after an import.
  readyTimeoutMs: 3600e3,
};
if (!cfg.parleyd || !cfg.loadgen || cfg.sizes.some((n) => !(n > 0)) || !["http", "unix"].includes(cfg.transport)) {
  console.error("usage: scale.mjs --parleyd BIN --loadgen BIN [--sizes N,N,...] [--per-chat N] [--seconds S] [--plans-ms MS] [--transport http|unix] [--out DIR] [--smoke] [--update-readme]");
  process.exit(2);
}

// A TCP port of 127.0.0.1 free now (the kernel's pick, released for serve).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-scale-"));
fs.chmodSync(work, 0o755);
let pg; // the current size's cluster
process.on("exit", () => {
  killChildren();
  if (pg) destroyCluster(pg);
  fs.rmSync(work, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

const results = {
  date: new Date().toISOString(),
  smoke,
  machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?", memGiB: Math.round(os.totalmem() / 2 ** 30), kernel: os.release() },
  config: { ...cfg, parleyd: undefined, loadgen: undefined, out: undefined },
  sizes: [],
  problems: [],
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const seconds = (t0) => +((Date.now() - t0) / 1000).toFixed(1);

// The SQL a call runs: its tool's function (parley_tg_<tool> of the
// telegram toolset, parley_recall_recall), as parleyd calls it.
const toolSql = (c) => {
  const fn = c.name === "recall" ? "parley_recall_recall" : `parley_tg_${c.name.replace(/[A-Z]/g, (x) => "_" + x.toLowerCase())}`;
  return `SELECT ${fn}($j$${JSON.stringify(c.arguments)}$j$::jsonb, '{}'::jsonb)`;
};

// The import's phases from its log (info): the rows (until its summary),
// the word forms' index, the phrases' pairs index, the vocabulary merge;
// seconds, each null when its lines are not there.
function importPhases(startedAt, lines) {
  const at = (re) => {
    const l = lines.find((x) => re.test(x));
    return l ? Date.parse(l.split(" ")[0]) : NaN;
  };
  const span = (a, b) => (Number.isFinite(a) && Number.isFinite(b) ? +((b - a) / 1000).toFixed(1) : null);
  const formsIn = at(/word forms .* in use/);
  return {
    rows: span(Date.parse(startedAt), at(/imported \d+ chats/)),
    forms_index: span(at(/building the index of messages\.forms/), at(/index of messages\.forms built/)),
    pairs_index: span(at(/building the index of phrase word pairs/), at(/index of phrase word pairs built/)),
    vocabulary: span(formsIn, at(/merged into the fuzzy search's vocabulary/)),
  };
}

// The plans of a call: auto_explain in a psql session of its own, every
// statement (nested ones too) with its timing and buffers; kept: those over
// planMinMs, slowest first. The call runs twice and the second is kept, as
// parleyd's connections run it: its functions compiled, their plans cached.
function plansOf(call) {
  const settings = ["LOAD 'auto_explain'", "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on", "SET auto_explain.log_level = notice",
    "SET client_min_messages = notice"];
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", pg, "-U", "parley", "-d", "bench", "-o", "/dev/null",
    ...settings.flatMap((s) => ["-c", s]), "-c", toolSql(call), "-c", "SET auto_explain.log_min_duration = 0", "-c", toolSql(call)],
  { encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0) return { error: (r.stderr || String(r.error)).slice(-2000) };
  const statements = r.stderr.split(/^NOTICE: {2}/m).slice(1)
    .map((t) => ({ ms: Number(/^duration: ([\d.]+) ms/.exec(t)?.[1] ?? 0), plan: t.trimEnd() }))
    .filter((s) => s.ms > cfg.planMinMs).sort((a, b) => b.ms - a.ms);
  return { statements };
}

// Until the search is in its steady state: the word forms the import asked
// for in use, the phrases' pairs index built, no index a migration asked
// for pending, the vocabulary merged. serve finishes what the import left.
async function steady(psql) {
  const t0 = Date.now();
  const sql = "SELECT concat_ws(', ', " +
    "CASE WHEN EXISTS (SELECT 1 FROM search_forms WHERE target AND NOT active) THEN 'word forms not in use' END, " +
    "CASE WHEN NOT parley_search_pairs_ready() THEN 'pairs index not built' END, " +
    "CASE WHEN EXISTS (SELECT 1 FROM schema_index_builds WHERE state = 'pending') THEN 'index builds pending' END, " +
    "CASE WHEN EXISTS (SELECT 1 FROM search_words_new) THEN 'vocabulary not merged' END)";
  let waiting = psql(sql);
  for (let last = 0; waiting; waiting = psql(sql)) {
    if (Date.now() - t0 > cfg.readyTimeoutMs) throw new Error(`serve did not reach the steady state in ${cfg.readyTimeoutMs / 1000} s: ${waiting}`);
    if (Date.now() - last > 30000) {
      say(`waiting: ${waiting}`);
      last = Date.now();
    }
    await sleep(500);
  }
  return { seconds: seconds(t0), forms: psql("SELECT coalesce(string_agg(languages, ';'), '') FROM search_forms WHERE active") };
}

// The store: messages (heap, TOAST, each index) and the database, per message.
function store(psql) {
  const [n, total, heap, indexes, db] = psql("SELECT count(*), pg_total_relation_size('messages'), pg_relation_size('messages'), " +
    "pg_indexes_size('messages'), pg_database_size(current_database()) FROM messages").split("|").map(Number);
  const perMsg = (b) => +(b / n).toFixed(1);
  const indexList = psql("SELECT i.indexrelid::regclass || ':' || pg_relation_size(i.indexrelid) FROM pg_index i " +
    "WHERE i.indrelid = 'messages'::regclass ORDER BY pg_relation_size(i.indexrelid) DESC, 1").split("\n").filter(Boolean)
    .map((l) => {
      const [name, bytes] = l.split(":");
      return { name, bytes: Number(bytes), per_message: perMsg(Number(bytes)) };
    });
  return { messages: n, messages_bytes: total, heap_bytes: heap, toast_bytes: total - heap - indexes, index_bytes: indexes, database_bytes: db,
    bytes_per_message: perMsg(total), heap_per_message: perMsg(heap), index_per_message: perMsg(indexes),
    database_per_message: perMsg(db), indexes: indexList };
}

// The classes beyond the search: a chat's history and context deep in the
// biggest chats (old messages: the first fifth of each chat by date).
function historyClasses(psql) {
  const big = psql("SELECT m.chat_id || ':' || count(*) FROM messages m JOIN chats c ON c.id = m.chat_id " +
    "WHERE parley_source_of(c.kind) = 'telegram' GROUP BY m.chat_id ORDER BY count(*) DESC, m.chat_id LIMIT 5")
    .split("\n").map((l) => l.split(":").map(Number));
  const [chat, count] = big[0];
  const at = (c, n, f) => psql(`SELECT id || '|' || to_char(date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ` +
    `FROM messages WHERE chat_id = ${c} ORDER BY date, id OFFSET ${Math.floor(n * f)} LIMIT 1`).split("|");
  const old = [0.02, 0.05, 0.1, 0.15, 0.2];
  const deep = old.map((f) => ({ name: "messagesList", arguments: { channelId: chat, toDate: at(chat, count, f)[1], limit: 20 } }));
  const context = big.flatMap(([c, n]) => old.slice(0, 4).map((f) =>
    ({ name: "messagesContext", arguments: { channelId: c, messageId: Number(at(c, n, f)[0]), before: 5, after: 5 } })));
  return {
    biggest: { chat, messages: count },
    classes: {
      "history newest (biggest chat)": [{ name: "messagesList", arguments: { channelId: chat, limit: 20 } }],
      "history deep (biggest chat)": deep,
      "context deep (5 biggest chats)": context,
    },
  };
}

// ---- one size ----
let parley; // the current size's parleyd serve
async function measureSize(size) {
  const { messages, chats } = size;
  const dir = path.join(work, String(messages));
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, 0o755);
  pg = path.join(dir, "pg");
  const psql = psqlAt(pg);
  say(`---- ${messages} messages in ${chats} chats ----`);
  startCluster(pg, cfg.parleyd);
  const log = path.join(dir, "import.log");
  size.dataset = loadArchive({ parleyd: cfg.parleyd, pg, work: dir, messages, chats, log, logLevel: "info" });
  if (size.dataset.storedMessages !== messages) results.problems.push(`${messages}: imported ${size.dataset.storedMessages} messages`);
  // The import's own phases (its log lines about the word forms and indexes).
  size.importLog = fs.readFileSync(log, "utf8").split("\n").filter((l) => /word forms|index|pairs|vocabulary|imported/i.test(l)).slice(-20);
  size.dataset.phases = importPhases(size.dataset.startedAt, size.importLog);
  size.dataset.otherSources = importOtherSources({ parleyd: cfg.parleyd, pg, work: dir });
  say(`imported in ${size.dataset.importSeconds} s (${size.dataset.importMsgsPerSec} msg/s)`);

  const sock = path.join(dir, "parley.sock");
  const port = await freePort();
  const http = `http://127.0.0.1:${port}/mcp`;
  parley = await startParleyd({ parleyd: cfg.parleyd, pg, dataDir: path.join(dir, "data"), sock, also: [http] });
  const url = cfg.transport === "http" ? http : `unix:${sock}`;
  size.steady = await steady(psql);
  const t0 = Date.now();
  psql("VACUUM ANALYZE");
  size.vacuumAnalyzeSeconds = seconds(t0);
  size.store = store(psql);
  say(`steady after ${size.steady.seconds} s (forms ${size.steady.forms || "none"}), VACUUM ANALYZE ${size.vacuumAnalyzeSeconds} s; ` +
    `${size.store.bytes_per_message} bytes a message in messages, ${size.store.database_per_message} in the database`);

  const classes = {};
  for (const [cls, qs] of Object.entries(searchClasses)) classes[cls] = searchCalls(cls, qs);
  for (const [cls, qs] of Object.entries(recallClasses)) classes[`recall ${cls}`] = recallCalls(qs);
  const hist = historyClasses(psql);
  size.biggestChat = hist.biggest;
  Object.assign(classes, hist.classes);

  size.classes = {};
  for (const [cls, calls] of Object.entries(classes)) {
    const file = path.join(dir, `${cls.replace(/\W+/g, "-")}.jsonl`);
    writeCalls(file, calls);
    const r = measureRun({ bin: cfg.loadgen, url, pid: parley.child.pid, sessions: 1, seconds: cfg.seconds, label: cls, extra: ["--calls", file] });
    size.classes[cls] = { calls: calls.length, requests: r.requests, errors: r.errors, p50_ms: r.p50_ms, p95_ms: r.p95_ms, p99_ms: r.p99_ms,
      ...(r.failures ? { failures: r.failures } : {}) };
    say(`${messages} ${cls}: p50 ${r.p50_ms} / p95 ${r.p95_ms} / p99 ${r.p99_ms} ms, ${r.requests} calls, ${r.errors} errors`);
    if (r.errors > 0 || r.requests === 0) results.problems.push(`${messages} ${cls}: ${r.errors} errors, ${r.requests} calls` +
      (r.failures ?? []).map((f) => `; ${f.count}× ${f.kind} (first: \`${f.first.slice(0, 160).replace(/`/g, "'")}\`)`).join(""));
  }
  await stop(parley);
  parley = undefined;

  // The plans of the classes that are slow here or grew faster than the
  // archive since the first size measured.
  const first = results.sizes.find((s) => s.classes && s !== size);
  for (const [cls, c] of Object.entries(size.classes)) {
    const base = first?.classes[cls]?.p95_ms;
    const grew = base > 0 && c.p95_ms / base > messages / first.messages;
    if (!(c.p95_ms >= cfg.slowMs || grew)) continue;
    c.why_plans = [c.p95_ms >= cfg.slowMs ? `p95 ≥ ${cfg.slowMs} ms` : null,
      grew ? `p95 ×${(c.p95_ms / base).toFixed(1)} for ×${(messages / first.messages).toFixed(1)} messages` : null].filter(Boolean).join("; ");
    c.plans = classes[cls].map((call) => ({ call, sql: toolSql(call), ...plansOf(call) }));
    say(`${messages} ${cls}: plans captured (${c.why_plans})`);
  }
}

// ---- report ----
const fmt = (x) => (x === null || x === undefined ? "–" : typeof x === "number" ? x.toLocaleString("en-US") : x);
const human = (n) => (n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n));
const mib = (b) => (b / 2 ** 20).toFixed(1);
// The table: p95 per class at each size measured, the store, the plans.
function report() {
  const S = results.sizes.filter((s) => s.classes);
  if (!S.length) return ["No size was measured.", "", "Problems:", ...results.problems.map((p) => `- ${p}`)].join("\n") + "\n";
  const first = S[0];
  const last = S[S.length - 1];
  const sizeRatio = last.messages / first.messages;
  const md = [];
  md.push(`Run of ${results.date}${smoke ? " (smoke)" : ""}: ${results.machine.cores} cores (${results.machine.cpu}), ${results.machine.memGiB} GiB; ` +
    `sizes ${S.map((s) => `${fmt(s.messages)} messages in ${fmt(s.chats)} chats`).join(", ")}, each imported into a cluster of its own ` +
    `(the embedded default, durability on); one session over ${cfg.transport === "http" ? "HTTP" : "the Unix socket"}, ${cfg.seconds} s per class.`, "");
  md.push(`p95 ms per class at each size; growth: p95 at ${human(last.messages)} over p95 at ${human(first.messages)}, beside the archive's ×${+sizeRatio.toFixed(2)}. ` +
    `**Bold**: a p95 whose plans are below (${cfg.slowMs} ms or more, or grown faster than the archive since the first size), a growth above the archive's.`, "");
  md.push(`| class | calls | ${S.map((s) => `p95 ${human(s.messages)}`).join(" | ")} | growth | archive |`);
  md.push(`|---|---:|${S.map(() => "---:").join("|")}|---:|---:|`);
  const classNames = Object.keys(first.classes ?? {});
  for (const cls of classNames) {
    const p = S.map((s) => s.classes?.[cls]?.p95_ms);
    const growth = p[0] > 0 && p[p.length - 1] !== undefined ? p[p.length - 1] / p[0] : null;
    const flagged = growth !== null && growth > sizeRatio;
    const cell = (x, s) => (s.classes?.[cls]?.plans ? `**${fmt(x)}**` : fmt(x));
    md.push(`| ${cls} | ${first.classes[cls].calls} | ${p.map((x, i) => cell(x, S[i])).join(" | ")} | ` +
      `${growth === null ? "–" : (flagged ? `**×${growth.toFixed(2)}**` : `×${growth.toFixed(2)}`)} | ×${+sizeRatio.toFixed(2)} |`);
  }
  md.push("", "p50 / p95 / p99 ms:", "");
  md.push(`| class | ${S.map((s) => human(s.messages)).join(" | ")} |`, `|---|${S.map(() => "---:").join("|")}|`);
  for (const cls of classNames)
    md.push(`| ${cls} | ${S.map((s) => { const c = s.classes?.[cls]; return c ? `${c.p50_ms} / ${c.p95_ms} / ${c.p99_ms}` : "–"; }).join(" | ")} |`);
  md.push("", "The import and the store (bytes a message: `pg_total_relation_size('messages')` and `pg_database_size` over the rows of `messages`):", "");
  md.push(`| | ${S.map((s) => human(s.messages)).join(" | ")} |`, `|---|${S.map(() => "---:").join("|")}|`);
  const row = (label, f) => md.push(`| ${label} | ${S.map((s) => { try { return fmt(f(s)); } catch { return "–"; } }).join(" | ")} |`);
  row("import s (rows, then word forms)", (s) => s.dataset.importSeconds);
  row("import msg/s", (s) => s.dataset.importMsgsPerSec);
  row("… rows s", (s) => s.dataset.phases.rows);
  row("… word forms index s", (s) => s.dataset.phases.forms_index);
  row("… phrase pairs index s", (s) => s.dataset.phases.pairs_index);
  row("… vocabulary merge s", (s) => s.dataset.phases.vocabulary);
  row("serve to steady state s", (s) => s.steady.seconds);
  row("VACUUM ANALYZE s", (s) => s.vacuumAnalyzeSeconds);
  row("biggest chat (messages)", (s) => s.biggestChat.messages);
  row("messages: bytes a message", (s) => s.store.bytes_per_message);
  row("… heap", (s) => s.store.heap_per_message);
  row("… TOAST", (s) => +(s.store.toast_bytes / s.store.messages).toFixed(1));
  row("… indexes", (s) => s.store.index_per_message);
  row("database: bytes a message", (s) => s.store.database_per_message);
  row("database MiB", (s) => mib(s.store.database_bytes));
  md.push("", "Indexes of `messages`, MiB (bytes a message):", "");
  md.push(`| index | ${S.map((s) => human(s.messages)).join(" | ")} |`, `|---|${S.map(() => "---:").join("|")}|`);
  for (const ix of last.store?.indexes ?? [])
    md.push(`| ${ix.name} | ${S.map((s) => { const i = s.store?.indexes.find((x) => x.name === ix.name); return i ? `${mib(i.bytes)} (${i.per_message})` : "–"; }).join(" | ")} |`);
  // The plans: per flagged class and size, its slowest call's statements in
  // full, the others' totals in a line (all of them in the JSON).
  const planned = S.flatMap((s) => Object.entries(s.classes ?? {}).filter(([, c]) => c.plans).map(([cls, c]) => ({ s, cls, c })));
  if (planned.length) {
    md.push("", `Plans (auto_explain, analyze and buffers, nested statements; statements over ${cfg.planMinMs} ms, slowest first) ` +
      "of each class that grew faster than the archive or took 50 ms or more, at the sizes where it did: its slowest call in full, " +
      "the other calls' slowest statement in a line.");
    for (const { s, cls, c } of planned) {
      const byTime = [...c.plans].sort((a, b) => (b.statements?.[0]?.ms ?? 0) - (a.statements?.[0]?.ms ?? 0));
      const top = byTime[0];
      md.push("", `#### ${cls} at ${human(s.messages)} (${c.why_plans})`, "");
      md.push(`Slowest call: \`${JSON.stringify(top.call.arguments)}\` (\`${top.call.name}\`):`, "");
      md.push("```", ...(top.error ? [`error: ${top.error}`] : top.statements.map((st) => st.plan)), "```");
      for (const p of byTime.slice(1))
        md.push(`- \`${JSON.stringify(p.call.arguments)}\`: ${p.error ? `error: ${p.error.split("\n")[0]}` : `${p.statements[0]?.ms ?? "under " + cfg.planMinMs} ms`}`);
    }
  }
  if (results.problems.length) md.push("", "Problems:", ...results.problems.map((p) => `- ${p}`));
  return md.join("\n") + "\n";
}

// Writes the results so far (after each size) and the table.
function write() {
  const table = report();
  fs.mkdirSync(cfg.out, { recursive: true });
  const stamp = `scale-${results.date.replace(/[:]/g, "-").replace(/\..*/, "")}${smoke ? "-smoke" : ""}`;
  fs.writeFileSync(path.join(cfg.out, `${stamp}.json`), JSON.stringify(results, null, 1) + "\n");
  fs.writeFileSync(path.join(cfg.out, `${stamp}.md`), table);
  say(`wrote ${path.join(cfg.out, stamp)}.json and .md`);
  return table;
}

// ---- the sizes, one after the other ----
for (const messages of cfg.sizes) {
  const size = { messages, chats: Math.max(1, Math.round(messages / cfg.perChat)) };
  results.sizes.push(size);
  try {
    await measureSize(size);
  } catch (e) {
    size.error = String(e.stack ?? e).slice(0, 8000);
    results.problems.push(`${messages} messages: ${String(e.message ?? e).split("\n")[0]}`);
    say(`${messages} messages failed: ${size.error}`);
  }
  if (parley) await stop(parley);
  parley = undefined;
  if (pg) destroyCluster(pg);
  pg = undefined;
  write();
}
const table = report();
process.stdout.write(table);
if (flag("update-readme")) updateReadme("scale", table);
if (results.problems.length) {
  console.error(`bench: ${results.problems.length} problem(s):\n${results.problems.join("\n")}`);
  process.exit(1);
}
