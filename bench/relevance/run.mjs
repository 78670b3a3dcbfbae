#!/usr/bin/env node
// run.mjs: the relevance benchmark (see bench/relevance/run, which builds
// parleyd and starts the cluster). Loads the generated archive and the
// planted messages (corpus.json) through `parleyd import`, then asks every
// query of queries.json through messagesSearch (the official SDK client
// over stdio, orderBy "rank", limit 10) twice: "before", with word forms
// off (search_languages = '', the exact words), and "after", with the
// default list brought in by serve in the background (its time is the
// migration's on this archive). Reports recall@10, MRR, false hits and
// latency per class.
//
//   node run.mjs --parleyd BIN --pg DIR --messages N --out FILE_PREFIX
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const req = createRequire(path.join(here, "..", "peers", "package.json"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = req("@modelcontextprotocol/sdk/client/stdio.js");

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const PARLEYD = opt.parleyd;
const PG = opt.pg;
const N = Number(opt.messages ?? 1000000);
const REPEAT = Number(opt.repeat ?? 5);
const url = `host=${PG} port=5432 user=parley dbname=bench`;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-relevance-"));
const corpus = JSON.parse(fs.readFileSync(path.join(here, "corpus.json"), "utf8")).messages;
const queries = JSON.parse(fs.readFileSync(path.join(here, "queries.json"), "utf8")).queries;
const CHAT = 777000;
const psql = (sql) =>
  execFileSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", PG, "-U", "parley", "-d", "bench", "-c", sql], {
    encoding: "utf8",
  }).trim();
const log = (s) => console.error(`[relevance] ${s}`);

// ---- the labels ------------------------------------------------------------
// Text as words separated by single spaces, lower case, for whole-word and
// phrase checks.
const norm = (t) => ` ${t.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim()} `;
const has = (text, words) => norm(text).includes(` ${norm(words).trim()} `);

function labels(q) {
  const rel = [];
  const not = [];
  for (const m of corpus) {
    const l = new Set(m.lemmas);
    const positive = (q.all ?? []).every((x) => l.has(x)) && (!q.any || q.any.some((x) => l.has(x)));
    if (!positive) continue;
    const ok = !(q.none ?? []).some((x) => l.has(x)) && (!q.phrase || has(m.text, q.phrase)) &&
      (!q.none_phrase || !has(m.text, q.none_phrase));
    if (!ok) not.push(m.key);
    else if (!q.exact || q.q.split(/\s+/).every((w) => has(m.text, w))) rel.push(m.key);
  }
  return { rel, not };
}

// ---- loading ---------------------------------------------------------------
function plantedExport(file) {
  const t0 = Date.UTC(2023, 0, 1) / 1000;
  const span = 2 * 365 * 86400;
  const messages = corpus.map((m, i) => {
    const sec = Math.round(t0 + ((i * 7919) % corpus.length) * (span / corpus.length));
    return {
      id: i + 1, type: "message", date: new Date(sec * 1000).toISOString().slice(0, 19), date_unixtime: String(sec),
      from: "Relevance", from_id: "user990001", text: m.text, text_entities: [{ type: "plain", text: m.text }],
    };
  });
  fs.writeFileSync(file, JSON.stringify({ name: "Relevance", type: "private_supergroup", id: CHAT, messages }));
}

function load() {
  const archive = path.join(work, "archive.json");
  const planted = path.join(work, "planted.json");
  log(`generating ${N} messages`);
  execFileSync(process.execPath, [path.join(here, "..", "gen_archive.mjs"), archive, String(N), String(Math.max(10, Math.round(N / 1000))), "1"]);
  plantedExport(planted);
  const t = Date.now();
  for (const f of [archive, planted])
    execFileSync(PARLEYD, ["import", "telegram-export", f, "--db", url, "--search-languages", "", "--data-dir", path.join(work, "data")], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  const seconds = (Date.now() - t) / 1000;
  psql("VACUUM ANALYZE");
  log(`imported in ${seconds.toFixed(1)} s`);
  return { seconds, stored: Number(psql("SELECT count(*) FROM messages")) };
}

// ---- asking ----------------------------------------------------------------
async function serve(languages) {
  const transport = new StdioClientTransport({
    command: PARLEYD,
    args: ["serve", "--stdio", "--db", url, "--toolsets", "telegram", "--search-languages", languages, "--data-dir", path.join(work, "data")],
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d.toString()));
  const client = new Client({ name: "relevance", version: "1.0.0" });
  await client.connect(transport);
  return { client, log: () => stderr };
}

async function search(client, q) {
  const t = process.hrtime.bigint();
  const r = await client.callTool({ name: "messagesSearch", arguments: { query: q, orderBy: "rank", limit: 10 } });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.isError) throw new Error(`${q}: ${r.content.map((c) => c.text).join(" ")}`);
  const keys = r.structuredContent.messages.map((m) =>
    Number(m.channelId) === -1000000000000 - CHAT || Number(m.channelId) === CHAT || String(m.channelId).endsWith(String(CHAT))
      ? corpus[m.messageId - 1]?.key ?? "?"
      : "·");
  return { keys, ms };
}

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : 0;
};

async function measure(client) {
  const per = [];
  for (const q of queries) {
    const { rel, not } = labels(q);
    const first = await search(client, q.q);
    const times = [first.ms];
    for (let i = 1; i < REPEAT; i++) times.push((await search(client, q.q)).ms);
    const top = first.keys;
    const found = rel.filter((k) => top.includes(k)).length;
    const recall = rel.length ? found / Math.min(10, rel.length) : 1;
    const rank = top.findIndex((k) => rel.includes(k));
    per.push({
      class: q.class, q: q.q, unlabelled: !!q.unlabelled, relevant: rel.length, recall, rr: rank >= 0 ? 1 / (rank + 1) : rel.length ? 0 : 1,
      falseHits: top.filter((k) => not.includes(k)).length, times, top,
    });
  }
  const classes = {};
  for (const r of per) (classes[r.class] ??= []).push(r);
  const summary = Object.entries(classes).map(([cls, rs]) => ({
    class: cls, queries: rs.length, labelled: !rs[0].unlabelled,
    recall: rs.reduce((a, r) => a + r.recall, 0) / rs.length,
    mrr: rs.reduce((a, r) => a + r.rr, 0) / rs.length,
    falseHits: rs.reduce((a, r) => a + r.falseHits, 0),
    p50: pct(rs.flatMap((r) => r.times), 50), p95: pct(rs.flatMap((r) => r.times), 95),
  }));
  return { per, summary };
}

async function languagesNow() {
  return psql("SELECT parley_search_languages()");
}

// ---- the run ---------------------------------------------------------------
const started = new Date().toISOString().slice(0, 19) + "Z";
const loaded = load();

log("before: search_languages = ''");
let s = await serve("");
while ((await languagesNow()) !== "") await new Promise((r) => setTimeout(r, 100));
const before = await measure(s.client);
await s.client.close();

log("after: search_languages = english,russian (brought in by serve)");
const t0 = Date.now();
s = await serve("english,russian");
const during = [];
while ((await languagesNow()) !== "english,russian") {
  during.push((await search(s.client, "invoices")).ms); // serve answers meanwhile
  await new Promise((r) => setTimeout(r, 500));
}
const migration = { seconds: (Date.now() - t0) / 1000, probes: during.length, probeP95: pct(during, 95) };
// The builder's log lines, without the periodic progress ones but the last.
const lines = s.log().split("\n").filter((l) => /\[search\]/.test(l)).map((l) => l.replace(/^\S+ \S+\s+\[search\] /, ""));
const steps = lines.filter((l, i) => !/ of about /.test(l) || !/ of about /.test(lines[i + 1] ?? ""));
log(`in use after ${migration.seconds.toFixed(1)} s`);
const after = await measure(s.client);
await s.client.close();

const sizes = psql(
  "SELECT pg_size_pretty(pg_relation_size('messages_tsv_idx')) || ' / ' || pg_size_pretty(pg_relation_size('messages_forms_idx')) " +
    "|| ' / ' || pg_size_pretty(pg_table_size('messages'))");
const cpu = `${os.cpus().length} cores, ${os.cpus()[0].model.trim()}`;
const result = { started, cpu, messages: N, stored: loaded.stored, import_seconds: loaded.seconds, migration, steps, sizes, before, after };
fs.writeFileSync(`${opt.out}.json`, JSON.stringify(result, null, 1));

const f2 = (x) => x.toFixed(2);
const f0 = (x) => x.toFixed(0);
let md = `Relevance run of ${started} (${cpu}), ${loaded.stored.toLocaleString("en")} messages ` +
  `(${N.toLocaleString("en")} generated + ${corpus.length} planted), ${queries.length} queries, ` +
  `latency over ${REPEAT} calls of each through messagesSearch at one session:\n\n` +
  "| class | queries | recall@10 before | after | MRR before | after | false hits before | after | p50 ms before | after | p95 ms before | after |\n" +
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
for (const a of after.summary) {
  const b = before.summary.find((x) => x.class === a.class);
  const l = (x) => (a.labelled ? f2(x) : "–");
  md += `| ${a.class} | ${a.queries} | ${l(b.recall)} | ${l(a.recall)} | ${l(b.mrr)} | ${l(a.mrr)} | ${b.falseHits} | ${a.falseHits} | ` +
    `${f0(b.p50)} | ${f0(a.p50)} | ${f0(b.p95)} | ${f0(a.p95)} |\n`;
}
md += `\nBringing the word forms in on this archive: in use ${migration.seconds.toFixed(1)} s after serve started ` +
  `(${steps.join("; ")}); meanwhile serve answered ${migration.probes} searches, p95 ${f0(migration.probeP95)} ms. ` +
  `Index sizes (exact / forms) and table: ${sizes}. Import (forms off): ${loaded.seconds.toFixed(1)} s.\n`;
const misses = after.per.filter((r) => !r.unlabelled && (r.recall < 1 || r.falseHits > 0)).map((r) =>
  `- ${r.class} \`${r.q}\`: recall ${f2(r.recall)}, false hits ${r.falseHits} (top: ${r.top.join(" ")})`);
if (misses.length) md += `\nQueries below full recall or with false hits, after:\n\n${misses.join("\n")}\n`;
fs.writeFileSync(`${opt.out}.md`, md);
console.log(md);
fs.rmSync(work, { recursive: true, force: true });
