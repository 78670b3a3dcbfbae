// chatwise: the chatwise toolset through the official SDK over a generated
// app.db (gen_chatwise.mjs, ages relative to now) imported with parleyd
// import chatwise: the spec's three scenarios, a scripted agent that
// follows the guidance, each parameter changing the answer as documented,
// gather_chats' common alignment, resolve_ids, and errors that say what to
// change.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_chatwise_tools_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-chatwise-tools-");
const appDb = path.join(work, "app.db");
let client;

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) return { error: textOf(r) };
  return r.structuredContent;
}
const ids = (r) => r.results.map((x) => x.chatId);

before(async () => {
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `CREATE DATABASE ${db}`]);
  execFileSync("node", [path.join(here, "..", "harness", "gen_chatwise.mjs"), appDb]);
  const r = spawnSync(PARLEYD, ["import", "chatwise", appDb, "--db", url, "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  ({ client } = await stdioClient(["--db", url, "--toolsets", "chatwise", "--data-dir", path.join(work, "data")]));
});

after(async () => {
  await client?.close();
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
  fs.rmSync(work, { recursive: true, force: true });
});

test("the three tools are listed with schemas", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["gather_chats", "resolve_ids", "search_conversations"]);
  for (const t of tools) assert.equal(t.annotations.readOnlyHint, true);
});

test("scenario A: Rust in the last 60 days, then the top chats in full", async () => {
  const r = await call("search_conversations", { intent_query: "rust", time_window: "60d", precision_mode: "basic", scope: "both" });
  assert.equal(r.status, "ok");
  assert.deepEqual(ids(r), ["chat-rust-async-0001", "chat-rust-borrow-0002"], "the Lisbon chat is 120 days old");
  assert.deepEqual(r.topChatIds, ["chat-rust-async-0001", "chat-rust-borrow-0002"]);
  const snip = r.results[0].snippets.find((s) => s.source === "content");
  assert.match(snip.text, /rust/i);
  // times as the spec fixes them, epoch milliseconds, each with an ISO copy
  const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
  assert.equal(typeof snip.createdAt, "number");
  assert.equal(new Date(snip.createdAt).toISOString(), snip.createdAtIso);
  const range = r.results[0].timeRange;
  assert.equal(typeof range.from, "number");
  assert.equal(typeof range.to, "number");
  assert.match(range.fromIso, ISO);
  assert.equal(new Date(range.to).toISOString(), range.toIso);
  assert.ok(Date.now() - range.to < 61 * 86400e3, "within the 60 days asked");
  assert.ok(r.results[0].snippets.some((s) => s.source === "title"));
  assert.ok(range.from <= range.to);
  assert.equal(r.guidance.stopIf, "confidence >= 0.75 || topChatIds.length <= 2");
  const next = r.guidance.nextActions.find((a) => a.tool === "gather_chats");
  assert.deepEqual(next.args.chatIds, r.topChatIds);
  const g = await call("gather_chats", { chatIds: r.topChatIds.slice(0, 2), includeTools: true });
  assert.deepEqual(g.meta.map((m) => m.id), r.topChatIds);
  assert.equal(g.commonAlignment.length, 1);
  assert.equal(g.commonAlignment[0].role, "system");
  assert.match(g.commonAlignment[0].content, /^You are a helpful assistant/);
  assert.deepEqual(g.commonAlignment[0].refs.map((x) => [x.chatIdx, x.index]), [[0, 0], [1, 0]]);
  assert.equal(g.narrative.filter((m) => m.chatIdx === 1).length, 3);
});

test("scenario B: everyday life in the last month, without a preset topic", async () => {
  const r = await call("search_conversations", { intent_query: "生活 / 日常 / life / travel / shopping", time_window: "30d", precision_mode: "basic" });
  assert.equal(r.topChatIds[0], "chat-groceries-0006");
  const g = await call("gather_chats", { chatIds: r.topChatIds.slice(0, 1), includeTools: false });
  assert.equal(g.chat.title, "周末购物清单");
  assert.equal(g.chat.messageCount, 2);
});

test("scenario C: a vague Chinese description, converging through the guidance in two calls", async () => {
  // A scripted agent: search; follow the first next action until it is gather_chats.
  let args = { intent_query: "虚拟列表滚动很卡", precision_mode: "basic" };
  let r = await call("search_conversations", args);
  let calls = 1;
  while (!(r.confidence >= 0.75 || r.topChatIds.length <= 2) && calls < 3) {
    const a = r.guidance.nextActions[0];
    r = await call(a.tool, a.args);
    calls++;
  }
  assert.equal(r.topChatIds[0], "chat-virtual-list-0003");
  const gather = r.guidance.nextActions.find((a) => a.tool === "gather_chats");
  const g = await call("gather_chats", gather.args);
  calls++;
  assert.ok(calls <= 2, `converged in ${calls} calls`);
  assert.match(g.messages[1].content, /虚拟列表滚动很卡/);
  assert.equal(typeof g.messages[1].createdAt, "number");
  assert.equal(new Date(g.messages[1].createdAt).toISOString(), g.messages[1].createdAtIso);
  assert.equal(typeof g.chat.timeRange.from, "number");
  // Mixed scripts.
  const mixed = await call("search_conversations", { intent_query: "rust 异步" });
  assert.deepEqual(mixed.topChatIds, ["chat-rust-async-0001"]);
  assert.match(mixed.results[0].snippets[0].text, /rust 异步/);
});

test("a misspelling answers with its near reading, marked; fuzzy and expansion find it too", async () => {
  const r = await call("search_conversations", { intent_query: "tokoi" });
  assert.deepEqual(r.topChatIds, ["chat-rust-async-0001"]);
  assert.equal(r.results[0].near, true);
  assert.deepEqual(r.corrections, [{ from: "tokoi", to: "tokio" }]);
  assert.match(r.notes[0], /read as tokoi → tokio/);
  // A word with no near spelling finds nothing; the guidance offers fuzzy.
  const none = await call("search_conversations", { intent_query: "qqzzxx" });
  assert.equal(none.results.length, 0);
  assert.equal(none.confidence, 0);
  const retry = none.guidance.nextActions[0];
  assert.equal(retry.tool, "search_conversations");
  assert.equal(retry.args.precision_mode, "fuzzy");
  const f = await call("search_conversations", { intent_query: "tokoi", precision_mode: "fuzzy" });
  assert.deepEqual(f.topChatIds, ["chat-rust-async-0001"]);
  const e = await call("search_conversations", { intent_query: "tokoi", expand: "auto" });
  assert.deepEqual(e.guidance.state.expandedTerms, { tokoi: ["tokio"] });
  assert.equal(e.iterations_used, 2);
  assert.deepEqual(e.topChatIds, ["chat-rust-async-0001"]);
});

test("each parameter changes the answer as documented", async () => {
  const s = (a) => call("search_conversations", a);
  // expand: related words drawn from the matching chats
  const ex = await s({ intent_query: "tokio", expand: "auto" });
  assert.ok(ex.guidance.state.expandedTerms.tokio.includes("async"));
  // include_tools_in_search: tool results' text
  const withTools = await s({ intent_query: "kubernetes" });
  assert.deepEqual(withTools.topChatIds, ["chat-deploy-0005"]);
  assert.equal(withTools.results[0].snippets[0].source, "tool");
  assert.equal((await s({ intent_query: "kubernetes", include_tools_in_search: false })).results.length, 0);
  // scope
  const titles = await s({ intent_query: "rust", scope: "title" });
  assert.ok(titles.results.every((r) => r.snippets.every((x) => x.source === "title")));
  assert.equal((await s({ intent_query: "tokio", scope: "title" })).results.length, 0);
  // role_filter
  const asst = await s({ intent_query: "rust", role_filter: ["assistant"], scope: "content" });
  assert.deepEqual(ids(asst), ["chat-rust-borrow-0002"]);
  assert.ok(asst.results[0].snippets.every((x) => x.role === "assistant"));
  // exclude_terms: chats with the word are left out
  assert.deepEqual(ids(await s({ intent_query: "rust", exclude_terms: ["TOKIO"] })), ["chat-rust-borrow-0002"]);
  assert.deepEqual(ids(await s({ intent_query: "rust", exclude_terms: ["TOKIO"] })).length, 1);
  // match: all terms in the chat as a whole
  assert.equal((await s({ intent_query: ["rust", "borrow"] })).results.length, 2);
  assert.deepEqual(ids(await s({ intent_query: ["rust", "borrow"], match: "all" })), ["chat-rust-borrow-0002"]);
  // limits and the snippet window
  assert.equal((await s({ intent_query: "rust", limit_chats: 1 })).results.length, 1);
  const one = await s({ intent_query: "rust", limit_snippets_per_chat: 1 });
  assert.ok(one.results.every((r) => r.snippets.length === 1));
  const narrow = await s({ intent_query: "work-stealing", snippet_window: 10 });
  assert.ok([...narrow.results[0].snippets[0].text.replaceAll("…", "")].length <= 10 + "work-stealing".length);
  // time_window as epochs (seconds): the last 7 days only
  const now = Math.floor(Date.now() / 1000);
  const week = await s({ intent_query: ["虚拟列表", "rust"], time_window: { start: now - 7 * 86400, end: now } });
  assert.deepEqual(ids(week), ["chat-virtual-list-0003"]);
  // and as words, the same the other tools read
  assert.deepEqual(ids(await s({ intent_query: ["虚拟列表", "rust"], time_window: { start: "7 days ago", end: "today" } })),
                   ["chat-virtual-list-0003"]);
  assert.deepEqual(ids(await s({ intent_query: ["虚拟列表", "rust"], time_window: "last week" })), ["chat-virtual-list-0003"]);
  // response_mode text: a listing to read plus the guidance
  const r = await client.callTool({ name: "search_conversations", arguments: { intent_query: "rust", response_mode: "text" } });
  assert.match(textOf(r), /^2 chat\(s\) for rust; confidence/);
  assert.match(textOf(r), /Guidance: stop if/);
  assert.equal(r.structuredContent.status, "ok");
});

test("gather_chats: one chat with tools; resolve_ids by prefix", async () => {
  const g = await call("gather_chats", { chatIds: ["chat-deploy"] });
  assert.equal(g.chat.id, "chat-deploy-0005");
  assert.deepEqual(g.messages[1].tools, {
    calls: [{ server: "shell", tool: "run", args: { command: "df -h /srv" } }],
    results: [{ text: "/dev/sda1 80% used of 200G (kubernetes images)" }],
  });
  assert.equal((await call("gather_chats", { chatIds: ["chat-deploy"], includeTools: false })).messages[1].tools, undefined);
  const amb = await call("resolve_ids", { chatIdPrefix: "chat-rust" });
  assert.equal(amb.ambiguous, true);
  assert.deepEqual(amb.chats.map((c) => c.id), ["chat-rust-async-0001", "chat-rust-borrow-0002"]);
  const m = await call("resolve_ids", { messageIdPrefix: "chat-deploy-0005-m2" });
  assert.deepEqual(m.messages.map((x) => [x.id, x.chatId]), [["chat-deploy-0005-m2", "chat-deploy-0005"]]);
});

test("bad arguments say what to change", async () => {
  assert.match((await call("search_conversations", { intent_query: "  " })).error, /intent_query: give words/);
  assert.match((await call("search_conversations", { intent_query: "x", time_window: "soon" })).error, /time_window: one of 7d, 30d/);
  assert.match((await call("search_conversations", { intent_query: "x", time_window: { start: 5, end: 1 } })).error, /start before end/);
  assert.match((await call("gather_chats", { chatIds: ["chat-rust"] })).error, /no single chat for chat-rust; use resolve_ids/);
  assert.match((await call("gather_chats", { chatIds: ["nope"] })).error, /no single chat for nope/);
  assert.match((await call("resolve_ids", {})).error, /give chatIdPrefix or messageIdPrefix/);
  // the session survives
  assert.equal((await call("search_conversations", { intent_query: "rust" })).status, "ok");
});

test("a search's work is bounded before the database: words, fuzzy and expansion", async () => {
  // The probe's case: 20 phrases of 1,000 characters, fuzzy, expand auto.
  const phrase = Array.from({ length: 150 }, (_, i) => `w${i}x`).join(" ").slice(0, 1000);
  const heavy = { intent_query: Array(20).fill(phrase), precision_mode: "fuzzy", expand: "auto" };
  assert.match((await call("search_conversations", heavy)).error,
    /intent_query: \d+ words in all; this search takes at most 6 .*split the search/);
  const words = (n) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");
  assert.equal((await call("search_conversations", { intent_query: words(32) })).status, "ok");
  assert.match((await call("search_conversations", { intent_query: words(33) })).error, /33 words in all; this search takes at most 32/);
  assert.match((await call("search_conversations", { intent_query: words(13), precision_mode: "fuzzy" })).error, /at most 12/);
  assert.match((await call("search_conversations", { intent_query: ["rust", "x".repeat(65)] })).error,
    /a word of 65 characters; at most 64/);
  assert.equal((await call("search_conversations", { intent_query: words(6), precision_mode: "fuzzy", expand: "auto" })).status, "ok");
});

test("serve with chatwise_db follows the app's file", async () => {
  const db2 = `${db}_follow`;
  const url2 = url.replace(`dbname=${db}`, `dbname=${db2}`);
  const file = path.join(work, "follow", "app.db");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  execFileSync("node", [path.join(here, "..", "harness", "gen_chatwise.mjs"), file]);
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `CREATE DATABASE ${db2}`]);
  const { client: c } = await stdioClient(["--db", url2, "--toolsets", "chatwise", "--data-dir", path.join(work, "data2"),
    "--chatwise-db", path.dirname(file), "--chatwise-interval-s", "1"]);
  const search = async (q) => (await c.callTool({ name: "search_conversations", arguments: { intent_query: q } })).structuredContent;
  const until = async (q, want) => {
    for (let i = 0; i < 100; i++) {
      const r = await search(q);
      if (r.topChatIds.includes(want)) return r;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.fail(`${want} never found for ${q}`);
  };
  try {
    await until("rust", "chat-rust-async-0001"); // the first import, at start
    execFileSync("sqlite3", [file], {
      input: `INSERT INTO chat VALUES ('chat-new-0007', 'Sourdough starter', ${Date.now()}, ${Date.now()});
              INSERT INTO message VALUES ('chat-new-0007-m1', 'chat-new-0007', 'user', 'How often do I feed a sourdough starter?', ${Date.now()}, NULL, NULL);`,
    });
    const r = await until("sourdough", "chat-new-0007");
    assert.equal(r.results[0].title, "Sourdough starter");
  } finally {
    await c.close();
    execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `DROP DATABASE IF EXISTS ${db2} WITH (FORCE)`]);
  }
});
