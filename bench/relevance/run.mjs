#!/usr/bin/env node
// run.mjs: the relevance benchmark (see bench/relevance/run, which builds
// parleyd and starts the cluster). Loads the generated archive and the
// planted messages (corpus.json) through `parleyd import`: the Telegram
// ones as an export, those of corpus source "chatwise" as a ChatWise app.db
// and those of source "agents" as a Claude Code transcript, all into one
// store. Then asks every query of queries.json (the official SDK client over
// stdio, limit 10) twice: "before", with word forms off (search_languages =
// '', the exact words), and "after", with the default list brought in by
// serve in the background (its time is the migration's on this archive).
// A query asks messagesSearch (orderBy "rank"), or recall when it names it
// ('tool': the cross_source class, over every source). Reports recall@10,
// MRR, false hits and latency per class, and for the typo class what the
// answers said about near spellings, when they say it.
//
//   node run.mjs --parleyd BIN --pg DIR --messages N --out FILE_PREFIX
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
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
// The planted Telegram chat: message id i + 1 is tgCorpus[i].
const tgCorpus = corpus.filter((m) => !m.source);
const byText = new Map(corpus.map((m) => [m.text, m.key]));
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

// The messages a query is labelled over: the planted Telegram chat's for
// messagesSearch, every source's for recall.
const scope = (q) => (q.tool === "recall" ? corpus : tgCorpus);

function labels(q) {
  const rel = [];
  const not = [];
  for (const m of scope(q)) {
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

// A typo query's false hit: a hit that holds, for none of the query's
// slips, the lemma meant (a planted message: in its lemmas; a generated
// one: the word as written, the generator does not inflect) or the slip.
function typoFalse(q, hit) {
  const m = corpus.find((x) => x.key === hit.key);
  return !Object.entries(q.slips).some(([slip, lemma]) =>
    (m ? m.lemmas.includes(lemma) : has(hit.text ?? "", lemma)) || has(hit.text ?? "", slip));
}

// ---- loading ---------------------------------------------------------------
function plantedExport(file) {
  const t0 = Date.UTC(2023, 0, 1) / 1000;
  const span = 2 * 365 * 86400;
  const messages = tgCorpus.map((m, i) => {
    const sec = Math.round(t0 + ((i * 7919) % tgCorpus.length) * (span / tgCorpus.length));
    return {
      id: i + 1, type: "message", date: new Date(sec * 1000).toISOString().slice(0, 19), date_unixtime: String(sec),
      from: "Relevance", from_id: "user990001", text: m.text, text_entities: [{ type: "plain", text: m.text }],
    };
  });
  fs.writeFileSync(file, JSON.stringify({ name: "Relevance", type: "private_supergroup", id: CHAT, messages }));
}

// The planted ChatWise chat: an app.db with the app's two tables (as
// tests/harness/gen_chatwise.mjs writes them), one chat, times in ms.
function plantedChatwise(file) {
  const rows = corpus.filter((m) => m.source === "chatwise");
  const t0 = Date.UTC(2025, 2, 1, 9);
  const q = (v) => (typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
  const sql = [
    "CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);",
    "CREATE TABLE message (id text PRIMARY KEY NOT NULL, chatId text, role text, content text, createdAt integer, meta text, generatedFiles text);",
    `INSERT INTO chat VALUES ('relevance-0001', 'Outdoor gear', ${t0}, ${t0 + rows.length * 60000});`,
    ...rows.map((m, i) => `INSERT INTO message VALUES (${q(`relevance-m${i + 1}`)}, 'relevance-0001', ${q(m.role ?? "user")}, ` +
      `${q(m.text)}, ${t0 + i * 60000}, NULL, NULL);`),
  ].join("\n");
  execFileSync("sqlite3", [file], { input: sql });
}

// The planted agent session: DIR/PROJECT/SESSION.jsonl as Claude Code
// writes it (tests/harness/gen_transcripts.mjs), user lines as strings and
// assistant lines as text blocks.
function plantedTranscripts(dir) {
  const sid = "5e1e0a9c-0000-4000-8000-000000000001";
  const cwd = "/home/dev/relevance";
  const t0 = Date.UTC(2025, 5, 1, 9);
  let parent = null;
  const lines = corpus.filter((m) => m.source === "agents").map((m, i) => {
    const uuid = `5e1e0a9c-1111-4000-8000-${String(i + 1).padStart(12, "0")}`;
    const message = m.role === "assistant"
      ? { role: "assistant", model: "claude-x", content: [{ type: "text", text: m.text }] }
      : { role: "user", content: m.text };
    const line = { parentUuid: parent, isSidechain: false, userType: "external", cwd, sessionId: sid, version: "2.0.14",
      gitBranch: "main", type: message.role, timestamp: new Date(t0 + i * 60000).toISOString(), message, uuid };
    parent = uuid;
    return JSON.stringify(line);
  });
  fs.mkdirSync(path.join(dir, "-home-dev-relevance"), { recursive: true });
  fs.writeFileSync(path.join(dir, "-home-dev-relevance", `${sid}.jsonl`), lines.join("\n") + "\n");
}

// The by_text queries' counts in the archive (generated + planted
// Telegram): messages holding both words, and the phrase word for word.
// Read from the export, one message a line.
async function phraseCounts(archive) {
  const qs = queries.filter((q) => q.by_text);
  const counts = new Map(qs.map((q) => [q.q, { both: 0, phrase: 0 }]));
  const count = (text) => {
    const t = norm(text);
    for (const q of qs) {
      const c = counts.get(q.q);
      if (q.phrase.split(" ").every((w) => t.includes(` ${w} `))) c.both++;
      if (t.includes(` ${norm(q.phrase).trim()} `)) c.phrase++;
    }
  };
  if (!qs.length) return counts;
  const rl = readline.createInterface({ input: fs.createReadStream(archive, { encoding: "utf8" }), crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.startsWith("   {")) continue;
    const m = JSON.parse(line.replace(/,$/, ""));
    count(Array.isArray(m.text) ? m.text.map((e) => (typeof e === "string" ? e : e.text)).join("") : m.text);
  }
  for (const m of tgCorpus) count(m.text);
  return counts;
}

async function load() {
  const archive = path.join(work, "archive.json");
  const planted = path.join(work, "planted.json");
  const chatwise = path.join(work, "chatwise", "app.db");
  const transcripts = path.join(work, "transcripts");
  log(`generating ${N} messages`);
  execFileSync(process.execPath, [path.join(here, "..", "gen_archive.mjs"), archive, String(N), String(Math.max(10, Math.round(N / 1000))), "1"]);
  plantedExport(planted);
  fs.mkdirSync(path.dirname(chatwise), { recursive: true });
  plantedChatwise(chatwise);
  plantedTranscripts(transcripts);
  const phrases = await phraseCounts(archive);
  const t = Date.now();
  const imp = (...args) =>
    execFileSync(PARLEYD, ["import", ...args, "--db", url, "--search-languages", "", "--data-dir", path.join(work, "data")], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  for (const f of [archive, planted]) imp("telegram-export", f);
  const seconds = (Date.now() - t) / 1000;
  imp("chatwise", chatwise);
  imp("claude-code", transcripts);
  psql("VACUUM ANALYZE");
  log(`imported in ${seconds.toFixed(1)} s`);
  const bySource = psql("SELECT string_agg(s || ' ' || n, ', ' ORDER BY s) FROM (SELECT parley_source_of(c.kind) AS s, count(*) AS n " +
    "FROM messages m JOIN chats c ON c.id = m.chat_id GROUP BY 1) x");
  return { seconds, stored: Number(psql("SELECT count(*) FROM messages")), bySource, phrases };
}

// ---- asking ----------------------------------------------------------------
// recall's toolset and those of the surfaces its hits open in.
const TOOLSETS = "telegram,recall,chatwise,memory";

async function serve(languages) {
  const transport = new StdioClientTransport({
    command: PARLEYD,
    args: ["serve", "--stdio", "--db", url, "--toolsets", TOOLSETS, "--search-languages", languages, "--data-dir", path.join(work, "data")],
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d.toString()));
  const client = new Client({ name: "relevance", version: "1.0.0" });
  await client.connect(transport);
  return { client, log: () => stderr };
}

// What an answer says about near spellings, read defensively (the field
// names are the near-spelling work's, not known here): the answer's fields
// named like corrections, near matches, spelling, "read as", "did you
// mean" or suggestions, and how many hits are marked as near matches (a
// field so named that is set, or a match, kind or mode field whose value
// is "near", "fuzzy" or "approximate").
const NEAR_KEY = /correct|near|spell|readAs|didYouMean|suggest|approx/i;
function nearOf(sc, hits) {
  const fields = {};
  for (const [k, v] of Object.entries(sc ?? {}))
    if (NEAR_KEY.test(k) && v !== undefined && v !== null && v !== false && !(Array.isArray(v) && !v.length)) fields[k] = v;
  const marked = (hits ?? []).filter((h) =>
    Object.entries(h ?? {}).some(([k, v]) =>
      (NEAR_KEY.test(k) && v !== false && v !== null && v !== undefined) ||
      (/match|kind|mode/i.test(k) && typeof v === "string" && /^(near|fuzzy|approximate)([ _-]?match)?$/i.test(v)))).length;
  return Object.keys(fields).length || marked ? { fields, marked } : null;
}

// One call: the hits as {key, text} (key: the planted message's, "·" for
// any other message, "?" for an unknown one of the planted chat).
async function call(client, q) {
  const recall = q.tool === "recall";
  const t = process.hrtime.bigint();
  const r = await client.callTool(recall
    ? { name: "recall", arguments: { query: q.q, limit: 10 } }
    : { name: "messagesSearch", arguments: { query: q.q, orderBy: "rank", limit: 10 } });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.isError) throw new Error(`${q.q}: ${r.content.map((c) => c.text).join(" ")}`);
  return { r: r.structuredContent, ms };
}

function hitsOf(q, sc) {
  if (q.tool !== "recall")
    return sc.messages.map((m) => ({
      key: Number(m.channelId) === -1000000000000 - CHAT || Number(m.channelId) === CHAT || String(m.channelId).endsWith(String(CHAT))
        ? tgCorpus[m.messageId - 1]?.key ?? "?"
        : "·",
      text: m.text ?? "",
    }));
  // recall's ref is SOURCE:CHAT/MESSAGE (store ids): the text from the store.
  const refs = (sc.hits ?? []).map((h) => /^(\w+):(-?\d+)\/(-?\d+)$/.exec(h.ref ?? "")).map((x) => (x ? [x[1], x[2], x[3]] : null));
  const ids = refs.filter(Boolean);
  const texts = new Map();
  if (ids.length)
    for (const row of JSON.parse(psql(`SELECT coalesce(json_agg(json_build_array(chat_id::text || '/' || id::text, text)), '[]') ` +
      `FROM messages WHERE (chat_id, id) IN (${ids.map(([, c, m]) => `(${Number(c)}, ${Number(m)})`).join(", ")})`)))
      texts.set(row[0], row[1] ?? "");
  return refs.map((x, i) => {
    const text = x ? texts.get(`${x[1]}/${x[2]}`) ?? "" : "";
    return { key: byText.get(text) ?? byText.get(text.trim()) ?? "·", text, source: x?.[0] ?? sc.hits[i].source };
  });
}

async function search(client, q) {
  const { r, ms } = await call(client, q);
  const hits = hitsOf(q, r);
  return { hits, keys: hits.map((h) => h.key), ms, near: nearOf(r, q.tool === "recall" ? r.hits : r.messages) };
}

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : 0;
};

async function measure(client, phrases) {
  const per = [];
  for (const q of queries) {
    const { rel, not } = labels(q);
    const first = await search(client, q);
    const times = [first.ms];
    for (let i = 1; i < REPEAT; i++) times.push((await call(client, q)).ms);
    const top = first.keys;
    let recall, rank, falseHits, relevant;
    if (q.by_text) {
      // Judged by the text: the phrase word for word, over every message
      // holding it (generated ones too).
      const ok = first.hits.map((h) => has(h.text, q.phrase));
      relevant = phrases.get(q.q).phrase;
      recall = relevant ? ok.filter(Boolean).length / Math.min(10, relevant) : 1;
      rank = ok.indexOf(true);
      falseHits = ok.filter((x) => !x).length;
    } else {
      relevant = rel.length;
      const found = rel.filter((k) => top.includes(k)).length;
      recall = rel.length ? found / Math.min(10, rel.length) : 1;
      rank = top.findIndex((k) => rel.includes(k));
      falseHits = top.filter((k) => not.includes(k)).length;
      if (q.slips) falseHits = first.hits.filter((h) => !rel.includes(h.key) && (not.includes(h.key) || typoFalse(q, h))).length;
    }
    per.push({
      class: q.class, q: q.q, unlabelled: !!q.unlabelled, relevant, recall, rr: rank >= 0 ? 1 / (rank + 1) : relevant ? 0 : 1,
      falseHits, times, top, near: first.near,
      ...(q.tool === "recall" ? { sources: first.hits.map((h) => (h.key === "·" ? "·" : h.source)) } : {}),
    });
  }
  const classes = {};
  for (const r of per) (classes[r.class] ??= []).push(r);
  const summary = Object.entries(classes).map(([cls, rs]) => ({
    class: cls, queries: rs.length, labelled: !rs[0].unlabelled,
    recall: rs.reduce((a, r) => a + r.recall, 0) / rs.length,
    mrr: rs.reduce((a, r) => a + r.rr, 0) / rs.length,
    falseHits: rs.reduce((a, r) => a + r.falseHits, 0),
    // The first call of each query (cold caches after loading or
    // bringing the forms in) apart from the other REPEAT - 1.
    p50: pct(rs.flatMap((r) => r.times.slice(1)), 50), p95: pct(rs.flatMap((r) => r.times.slice(1)), 95),
    firstMax: Math.max(...rs.map((r) => r.times[0])),
  }));
  return { per, summary };
}

async function languagesNow() {
  return psql("SELECT parley_search_languages()");
}

// ---- the run ---------------------------------------------------------------
const started = new Date().toISOString().slice(0, 19) + "Z";
const loaded = await load();

log("before: search_languages = ''");
let s = await serve("");
while ((await languagesNow()) !== "") await new Promise((r) => setTimeout(r, 100));
const before = await measure(s.client, loaded.phrases);
await s.client.close();

log("after: search_languages = english,russian (brought in by serve)");
const t0 = Date.now();
s = await serve("english,russian");
const during = [];
while ((await languagesNow()) !== "english,russian") {
  during.push((await call(s.client, { q: "invoices" })).ms); // serve answers meanwhile
  await new Promise((r) => setTimeout(r, 500));
}
const migration = { seconds: (Date.now() - t0) / 1000, probes: during.length, probeP95: pct(during, 95) };
// The builder's log lines, without the periodic progress ones but the last.
const lines = s.log().split("\n").filter((l) => /\[search\]/.test(l)).map((l) => l.replace(/^\S+ \S+\s+\[search\] /, ""));
const steps = lines.filter((l, i) => !/ of about /.test(l) || !/ of about /.test(lines[i + 1] ?? ""));
log(`in use after ${migration.seconds.toFixed(1)} s`);
const after = await measure(s.client, loaded.phrases);
await s.client.close();

const sizes = psql(
  "SELECT pg_size_pretty(pg_relation_size('messages_tsv_idx')) || ' / ' || pg_size_pretty(pg_relation_size('messages_forms_idx')) " +
    "|| ' / ' || pg_size_pretty(pg_table_size('messages'))");
const cpu = `${os.cpus().length} cores, ${os.cpus()[0].model.trim()}`;
const phrases = Object.fromEntries(loaded.phrases);
const result = { started, cpu, messages: N, stored: loaded.stored, by_source: loaded.bySource, import_seconds: loaded.seconds, phrases,
  migration, steps, sizes, before, after };
fs.writeFileSync(`${opt.out}.json`, JSON.stringify(result, null, 1));

const f2 = (x) => x.toFixed(2);
const f0 = (x) => x.toFixed(0);
let md = `Relevance run of ${started} (${cpu}), ${loaded.stored.toLocaleString("en")} messages ` +
  `(${N.toLocaleString("en")} generated + ${corpus.length} planted; by source: ${loaded.bySource}), ${queries.length} queries, ` +
  `latency through messagesSearch (recall for cross_source) at one session: p50 and p95 over the ` +
  `${REPEAT - 1} calls of each query after its first, and the slowest first call of the class (cold caches):\n\n` +
  "| class | queries | recall@10 before | after | MRR before | after | false hits before | after | p50 ms before | after | p95 ms before | after | first call max ms before | after |\n" +
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
for (const a of after.summary) {
  const b = before.summary.find((x) => x.class === a.class);
  const l = (x) => (a.labelled ? f2(x) : "–");
  md += `| ${a.class} | ${a.queries} | ${l(b.recall)} | ${l(a.recall)} | ${l(b.mrr)} | ${l(a.mrr)} | ${b.falseHits} | ${a.falseHits} | ` +
    `${f0(b.p50)} | ${f0(a.p50)} | ${f0(b.p95)} | ${f0(a.p95)} | ${f0(b.firstMax)} | ${f0(a.firstMax)} |\n`;
}
md += `\nBringing the word forms in on this archive: in use ${migration.seconds.toFixed(1)} s after serve started ` +
  `(${steps.join("; ")}); meanwhile serve answered ${migration.probes} searches, p95 ${f0(migration.probeP95)} ms. ` +
  `Index sizes (exact / forms) and table: ${sizes}. Import (forms off): ${loaded.seconds.toFixed(1)} s.\n`;
const misses = after.per.filter((r) => !r.unlabelled && (r.recall < 1 || r.falseHits > 0)).map((r) =>
  `- ${r.class} \`${r.q}\`: recall ${f2(r.recall)}, false hits ${r.falseHits} (top: ${r.top.join(" ")})`);
if (misses.length) md += `\nQueries below full recall or with false hits, after:\n\n${misses.join("\n")}\n`;
const counts = Object.entries(phrases).map(([q, c]) => `\`${q}\`: ${c.both.toLocaleString("en")} hold both words, ${c.phrase.toLocaleString("en")} the phrase`);
if (counts.length) md += `\nphrase_common, in the archive (generated + planted Telegram): ${counts.join("; ")}.\n`;
const xs = after.per.filter((r) => r.sources).map((r) => `- \`${r.q}\`: ${r.top.map((k, i) => `${k}(${r.sources[i]})`).join(" ") || "no hits"}`);
if (xs.length) md += `\ncross_source (recall), the hits after, with their source:\n\n${xs.join("\n")}\n`;
const near = [["before", before], ["after", after]].flatMap(([when, m]) => m.per.filter((r) => r.class === "typo" && r.near)
  .map((r) => `- ${when} \`${r.q}\`: ${JSON.stringify(r.near.fields).slice(0, 400)}${r.near.marked ? `, ${r.near.marked} hit(s) marked near` : ""}`));
md += near.length ? `\nTypo: what the answers said about near spellings:\n\n${near.join("\n")}\n`
  : "\nTypo: no answer reported near spellings (no corrections field, no hit marked near).\n";
fs.writeFileSync(`${opt.out}.md`, md);
console.log(md);
fs.rmSync(work, { recursive: true, force: true });
