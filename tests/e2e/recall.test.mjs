// recall: one search over every source of one store. A Telegram export, a
// ChatWise app.db and Claude Code transcripts are imported into one
// database, a Bluesky post stored as the connector stores them, and one
// word planted in each; recall finds it in every source, ranked as one
// list, each hit with a `next` call whose answer shows the hit; sources,
// since/until and limit narrow it; a caller whose token cannot call a
// surface's tools gets no `next` for that surface; recall_timeline groups
// a window by source. A token recalls from the sources of the toolsets
// it names (toolsets=recall,chatwise: ChatWise alone), or from every one
// when it names recall alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PARLEYD, PROTOCOL, startDaemon, stdioClient, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = path.join(here, "..", "harness");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_recall_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-recall-");
const WORD = "quokkafest";
let client;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
function imp(...args) {
  execFileSync(PARLEYD, ["import", ...args, "--db", url, "--data-dir", path.join(work, "data")], { stdio: "pipe" });
}
async function call(name, args, c = client) {
  const r = await c.callTool({ name, arguments: args });
  if (r.isError) return { error: r.content[0].text };
  return { ...r.structuredContent, text: r.content[0].text };
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  // Telegram: a group export with the word in one more message.
  execFileSync("node", [path.join(harness, "gen_tg_export.mjs"), "groups", path.join(work, "tg")]);
  const small = path.join(work, "tg", "small.json");
  const ex = JSON.parse(fs.readFileSync(small, "utf8"));
  const m = ex.messages.find((x) => x.type === "message" && typeof x.text === "string");
  const text = `Tickets for the ${WORD} picnic are booked`;
  ex.messages.push({ ...m, id: 990001, date: "2025-06-01T12:00:00", date_unixtime: "1748779200", text,
    text_entities: [{ type: "plain", text }] });
  fs.writeFileSync(small, JSON.stringify(ex));
  imp("telegram-export", small);
  // ChatWise: one more message in a chat.
  const app = path.join(work, "cw", "app.db");
  fs.mkdirSync(path.dirname(app), { recursive: true });
  execFileSync("node", [path.join(harness, "gen_chatwise.mjs"), app]);
  execFileSync("sqlite3", [app], { input: `INSERT INTO message (id, chatId, role, content, createdAt)
    SELECT 'planted-m1', chatId, 'user', 'What should I pack for the ${WORD} weekend?', createdAt + 60
    FROM message WHERE chatId = 'chat-rust-async-0001' ORDER BY createdAt DESC LIMIT 1;` });
  imp("chatwise", app);
  // Agents: one more user line in a session.
  const tr = path.join(work, "tr");
  execFileSync("node", [path.join(harness, "gen_transcripts.mjs"), tr]);
  const file = path.join(tr, "-home-dev-my-website", "bbbbbbbb-0000-4000-8000-000000000003.jsonl");
  const last = JSON.parse(fs.readFileSync(file, "utf8").trim().split("\n").at(-1));
  fs.appendFileSync(file, JSON.stringify({ ...last, parentUuid: last.uuid, uuid: "99999999-0000-4000-8000-000000000001",
    type: "user", timestamp: "2026-01-10T10:30:00.000Z", message: { role: "user", content: `Add the ${WORD} banner to the footer.` } }) + "\n");
  imp("claude-code", tr);
  // Bluesky: a post as the connector stores it.
  psql(`SELECT parley_bsky_store_posts(NULL, '[{"uri": "at://did:plc:abc/app.bsky.feed.post/3kx", "cid": "c1",
    "author": {"did": "did:plc:abc", "handle": "ann.bsky.social", "displayName": "Ann"},
    "record": {"text": "Photos from the ${WORD} parade", "createdAt": "2026-02-01T08:00:00Z"},
    "indexedAt": "2026-02-01T08:00:00Z"}]'::jsonb)`);
  ({ client } = await stdioClient(["--db", url, "--data-dir", path.join(work, "data"), "--toolsets", "telegram,chatwise,memory,recall"]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("one word planted in every source: one ranked list, each hit opened in its own surface", async () => {
  const r = await call("recall", { query: WORD });
  assert.equal(r.error, undefined, r.error);
  assert.deepEqual(r.hits.map((h) => h.source).sort(), ["agents", "bluesky", "chatwise", "telegram"]);
  assert.equal(r.total, 4);
  for (const h of r.hits) {
    assert.match(h.snippet, new RegExp(`\\*\\*${WORD}\\*\\*`, "i"), JSON.stringify(h));
    assert.match(h.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(h.title && h.ref.startsWith(`${h.source}:`), JSON.stringify(h));
    assert.equal(typeof h.rank, "number");
  }
  // Ranked as every search ranks: best first.
  const ranks = r.hits.map((h) => h.rank);
  assert.deepEqual(ranks, [...ranks].sort((a, b) => b - a));
  // Every hit but Bluesky's (its toolset is not served here) opens in its
  // surface, and that answer holds the hit.
  const expectTool = { telegram: "messagesContext", chatwise: "gather_chats", agents: "get_message_by_id" };
  for (const h of r.hits) {
    if (h.source === "bluesky") {
      assert.equal(h.next, undefined);
      continue;
    }
    assert.equal(h.next.tool, expectTool[h.source]);
    const opened = await call(h.next.tool, h.next.arguments);
    assert.equal(opened.error, undefined, `${h.next.tool}: ${opened.error}`);
    assert.match(JSON.stringify(opened), new RegExp(WORD), `${h.source}: ${h.next.tool} does not show the hit`);
  }
  // The text answer lists every hit with its call.
  assert.match(r.text, /4 hit\(s\)/);
  assert.match(r.text, /open: messagesContext/);
});

test("sources, dates and limit narrow; mistakes say what to change", async () => {
  let r = await call("recall", { query: WORD, sources: ["chatwise", "agents"] });
  assert.deepEqual(r.hits.map((h) => h.source).sort(), ["agents", "chatwise"]);
  r = await call("recall", { query: WORD, since: "2026-01-01", until: "2026-01-31" });
  assert.deepEqual(r.hits.map((h) => h.source), ["agents"]);
  r = await call("recall", { query: WORD, until: "2025-12-31" });
  assert.ok(r.hits.every((h) => h.date < "2026"), JSON.stringify(r.hits));
  r = await call("recall", { query: WORD, limit: 2 });
  assert.equal(r.hits.length, 2);
  assert.equal(r.total, 4);
  r = await call("recall", { query: WORD, sources: ["memory"] });
  assert.deepEqual(r.hits, []);
  assert.match(r.text, /No hits/);
  r = await call("recall", { query: WORD, since: "last blue moon" });
  assert.match(r.error, /since: "last blue moon" is not a time; use now, today, yesterday, last week/);
  r = await call("recall", { query: "   " });
  assert.match(r.error, /query: give the words/);
  r = await call("recall", { query: "pack weekend" });
  assert.deepEqual(r.hits.map((h) => h.source), ["chatwise"]);
});

test("no next call for a surface the caller cannot use", async () => {
  const { client: only } = await stdioClient(["--db", url, "--data-dir", path.join(work, "data"), "--toolsets", "recall"]);
  try {
    const r = await call("recall", { query: WORD }, only);
    assert.equal(r.hits.length, 4);
    assert.ok(r.hits.every((h) => h.next === undefined), JSON.stringify(r.hits));
  } finally {
    await only.close();
  }
});

test("recall_timeline: a window across sources, grouped by source", async () => {
  let r = await call("recall_timeline", { since: "2026-01-10", until: "2026-01-11" });
  assert.equal(r.error, undefined, r.error);
  assert.deepEqual(r.sources.map((g) => g.source), ["agents"]);
  assert.equal(r.sources[0].chats, 3);
  assert.ok(r.sources[0].top.some((t) => t.lastText?.includes(WORD)), JSON.stringify(r.sources[0].top));
  r = await call("recall_timeline", { since: "2000-01-01" });
  assert.deepEqual(r.sources.map((g) => g.source), ["agents", "bluesky", "chatwise", "telegram"]);
  for (const g of r.sources) assert.ok(g.messages > 0 && g.top.length > 0);
  assert.match(r.text, /\[telegram\] \d+ message\(s\) in \d+ chat\(s\)/);
  r = await call("recall_timeline", { since: "2000-01-01", sources: ["bluesky"], limit: 1 });
  assert.deepEqual(r.sources.map((g) => [g.source, g.messages, g.top.length]), [["bluesky", 1, 1]]);
  r = await call("recall_timeline", { since: "2026-02-02", until: "2026-02-01" });
  assert.match(r.error, /is not after since/);
});

// An HTTP client with a bearer token, speaking the suite's revision.
async function tokenClient(url, token) {
  const headers = { requestInit: { headers: { authorization: `Bearer ${token}` } } };
  if (PROTOCOL === "2026-07-28") {
    const v2 = await import("@modelcontextprotocol/client");
    const c = new v2.Client({ name: "recall-token", version: "1" }, { versionNegotiation: { mode: { pin: PROTOCOL } } });
    await c.connect(new v2.StreamableHTTPClientTransport(new URL(url), headers));
    return c;
  }
  const c = new Client({ name: "recall-token", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), headers));
  return c;
}

test("a token recalls from the sources of the toolsets it names; recall alone is every source", async () => {
  const TOK = { cw: "recall-chatwise-token-0123456789", all: "recall-alone-token-0123456789",
    tg: "recall-telegram-token-0123456789", mem: "recall-memory-token-0123456789" };
  const file = path.join(work, "tokens");
  fs.writeFileSync(file, `${TOK.cw} toolsets=recall,chatwise\n${TOK.all} toolsets=recall\n` +
    `${TOK.tg} toolsets=recall,telegram\n${TOK.mem} toolsets=memory,recall\n`, { mode: 0o600 });
  const d = await startDaemon(["--db", url, "--data-dir", path.join(work, "data"), "--toolsets", "telegram,chatwise,memory,recall",
    "--listen", "http://127.0.0.1:0/mcp", "--token-file", file]);
  const at = `http://127.0.0.1:${/\(port (\d+)\)/.exec(d.log())[1]}/mcp`;
  const sourcesOf = (r) => r.hits.map((h) => h.source).sort();
  const groupsOf = (r) => r.sources.map((g) => g.source);
  try {
    const cw = await tokenClient(at, TOK.cw);
    let r = await call("recall", { query: WORD }, cw);
    assert.equal(r.error, undefined, r.error);
    assert.deepEqual(sourcesOf(r), ["chatwise"]);
    assert.doesNotMatch(r.text, /\[telegram\]|\[agents\]|\[bluesky\]/);
    r = await call("recall_timeline", { since: "2000-01-01" }, cw);
    assert.deepEqual(groupsOf(r), ["chatwise"]);
    // Asked by name, a source it may not read is refused, saying which it may.
    r = await call("recall", { query: WORD, sources: ["telegram"] }, cw);
    assert.match(r.error, /sources: telegram is not open to this caller.*may recall from chatwise/);
    r = await call("recall_timeline", { since: "2000-01-01", sources: ["chatwise", "bluesky"] }, cw);
    assert.match(r.error, /sources: bluesky is not open/);
    await cw.close();

    const tg = await tokenClient(at, TOK.tg);
    assert.deepEqual(sourcesOf(await call("recall", { query: WORD }, tg)), ["telegram"]);
    assert.deepEqual(groupsOf(await call("recall_timeline", { since: "2000-01-01" }, tg)), ["telegram"]);
    await tg.close();

    const mem = await tokenClient(at, TOK.mem);
    assert.deepEqual(sourcesOf(await call("recall", { query: WORD }, mem)), ["agents"]);
    await mem.close();

    // recall alone: an explicit grant of the read-only search over all.
    const all = await tokenClient(at, TOK.all);
    r = await call("recall", { query: WORD }, all);
    assert.deepEqual(sourcesOf(r), ["agents", "bluesky", "chatwise", "telegram"]);
    assert.ok(r.hits.every((h) => h.next === undefined), "no surface to open a hit in");
    assert.deepEqual(groupsOf(await call("recall_timeline", { since: "2000-01-01" }, all)), ["agents", "bluesky", "chatwise", "telegram"]);
    await all.close();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
