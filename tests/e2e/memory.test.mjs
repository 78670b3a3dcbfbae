// The memory toolset end to end over a memory-lane (Django) database whose
// import order is the reverse of the real order (gen_memory_lane.mjs):
// every tool through the official SDK client, the bootstrap prompt,
// bootstrap_memory within its budget, clear errors, an unreachable
// database, and proof that parley writes nothing there.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const store = `e2e_memstore_${process.pid}`;
const lane = `e2e_memlane_${process.pid}`;
const url = (db) => `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-memory-");
let client;
const FOUNDATION = "Compacting Meta-Conversation (Era 1)";

function psql(sql, dbname) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

// Everything in the memory database, to prove nothing was written.
function snapshot() {
  return psql(`SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
      SELECT row(m.*)::text AS x FROM conversations_message m
      UNION ALL SELECT row(e.*)::text FROM eras e UNION ALL SELECT row(h.*)::text FROM context_heaps h
      UNION ALL SELECT row(c.*)::text FROM compacting_actions c) s`, lane) + "|" +
    psql("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace", lane);
}

async function call(name, args = {}, c = client) {
  const r = await c.callTool({ name, arguments: args });
  if (r.isError) return { error: textOf(r) };
  assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent, "text and structuredContent agree");
  return r.structuredContent;
}

let before0;
before(async () => {
  psql(`CREATE DATABASE ${store}`, "postgres");
  psql(`CREATE DATABASE ${lane}`, "postgres");
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", lane, "-f", path.join(here, "..", "harness", "memory_lane_schema.sql")]);
  const data = execFileSync("node", [path.join(here, "..", "harness", "gen_memory_lane.mjs")], { encoding: "utf8" });
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", lane], { input: data });
  before0 = snapshot();
  ({ client } = await stdioClient(["--db", url(store), "--toolsets", "memory", "--memory-db", url(lane),
    "--data-dir", path.join(work, "data")]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${store} WITH (FORCE)`, "postgres");
  psql(`DROP DATABASE IF EXISTS ${lane} WITH (FORCE)`, "postgres");
});

test("the latest continuation is the latest said, not the latest imported", async () => {
  const c = await call("get_latest_continuation");
  assert.equal(c.content, "Continuation: search works; now the bootstrap tool.");
  assert.equal(c.era_name, "Post-N Era");
  assert.equal(c.message_number, 0);
  assert.equal(c.timestamp, "2025-10-01T20:00:00.000Z");
});

test("messages before: true predecessors, newest first, typed, paged", async () => {
  const c = await call("get_latest_continuation");
  const b = await call("get_messages_before", { reference_id: c.message_id, limit: 4 });
  assert.deepEqual(b.messages.map((m) => m.content), [
    "Implemented ranking with ts_rank.",
    "Search should rank by relevance.",
    "Continuation: we deployed the archive; next is search.",
    "[tool_result] total 0",
  ]);
  assert.deepEqual(b.messages.map((m) => m.message_type), ["text", "text", "text", "tool_result"]);
  assert.equal(b.count, 4);
  const next = await call("get_messages_before", { reference_id: b.next_reference_id, limit: 10 });
  assert.deepEqual(next.messages.map((m) => m.message_type), ["tool_use", "text", "thought", "text"]);
  assert.equal(next.messages[0].content, '[tool_use Bash] {"command": "ls -la /srv"}');
  assert.equal(next.messages[2].content, "[thinking] Justin wants the archive deployed before anything else.");
  assert.equal(next.next_reference_id ?? null, null, "the last page says so");
  const byTime = await call("get_messages_before", { reference_timestamp: "2025-10-01T13:30:00Z" });
  assert.deepEqual(byTime.messages.map((m) => m.message_number), [1, 0]);
  assert.match((await call("get_messages_before", { reference_id: "00000000-0000-4000-8000-999999999999" })).error,
    /reference_id: no message/);
});

test("era summary by message_number; context heap with its type", async () => {
  const e = await call("get_era_summary", { era_name: FOUNDATION });
  assert.equal(e.era.name, FOUNDATION);
  assert.deepEqual(e.messages.map((m) => m.message_number), [0, 1, 2, 3, 4]);
  assert.equal(e.count, 5);
  const byId = await call("get_era_summary", { era_id: e.era.id, limit: 2, offset: 2 });
  assert.deepEqual(byId.messages.map((m) => m.message_number), [2, 3]);
  assert.equal(byId.next_offset, 4);
  assert.match((await call("get_era_summary", { era_name: "Nope" })).error, /no era Nope; eras: Compacting/);
  const c = await call("get_latest_continuation");
  const h = await call("get_context_heap", { heap_id: c.context_heap_id });
  assert.equal(h.heap.type, "POST_COMPACTING");
  assert.deepEqual(h.messages.map((m) => m.message_number), [0, 1, 2, 3]);
  assert.match((await call("get_context_heap", { heap_id: "x" })).error, /heap_id: no context heap/);
});

test("search, recent work, compactions, timeline, one message", async () => {
  const s = await call("search_messages", { query: "deployed archive" });
  assert.ok(s.messages.length >= 1);
  assert.match(s.messages[0].snippet, /\*\*deploy/);
  assert.ok(s.messages[0].relevance_score > 0);
  assert.match(s.scan, /^sequential/);
  const r = await call("get_recent_work", { limit: 2 });
  assert.deepEqual(r.messages.map((m) => m.content), ["Bootstrap keeps the newest work within the budget.",
    "[thinking] The budget means trimming older work first."]);
  const capped = await call("get_recent_work", { limit: 5000 });
  assert.equal(capped.limit, 1000);
  assert.equal(capped.limit_capped, true);
  const ca = await call("get_compacting_actions");
  assert.equal(ca.count, 2);
  assert.equal(ca.compacting_actions[0].summary, "Continuation: search works; now the bootstrap tool.");
  const t = await call("get_timeline", { from: "2025-10-01T13:00:00Z", to: "2025-10-01T15:00:00Z" });
  assert.deepEqual(t.messages.map((m) => m.created_at), ["2025-10-01T13:00:00.000Z", "2025-10-01T14:00:00.000Z"]);
  const blocks = await call("get_timeline", { from_block: 21000009, to_block: 21000010 });
  assert.equal(blocks.count, 2);
  const one = await call("get_message_by_id", { message_id: r.messages[0].id });
  assert.equal(one.content, r.messages[0].content);
  assert.match((await call("get_message_by_id", { message_id: "nope" })).error, /message_id: no message nope/);
});

test("bootstrap_memory in one call, within its budget; the prompt tells the sequence", async () => {
  const b = await call("bootstrap_memory", { token_budget: 1000 });
  assert.equal(b.continuation.content, "Continuation: search works; now the bootstrap tool.");
  assert.ok(b.approx_tokens <= 1000, `${b.approx_tokens} tokens`);
  assert.equal(b.messages_before[0].content, "Implemented ranking with ts_rank.");
  assert.equal(b.era.name, FOUNDATION);
  const small = await call("bootstrap_memory", { token_budget: 1000 });
  assert.deepEqual(small, b, "the same answer twice");
  const tiny = await call("bootstrap_memory", { token_budget: 1000, era_name: "Post-N Era" });
  assert.equal(tiny.era.name, "Post-N Era");
  const { messages } = await client.getPrompt({ name: "bootstrap" });
  assert.match(messages[0].content.text, /bootstrap_memory/);
  assert.match(messages[0].content.text, /get_latest_continuation/);
});

test("parley wrote nothing to the memory database", async () => {
  assert.equal(snapshot(), before0);
});

test("without a memory database, or with one unreachable, the tools say so", async () => {
  const none = await stdioClient(["--db", url(store), "--toolsets", "memory", "--data-dir", path.join(work, "data")]);
  try {
    assert.match((await call("get_recent_work", {}, none.client)).error, /No memory source: start parleyd with --memory-db/);
  } finally {
    await none.client.close();
  }
  const gone = await stdioClient(["--db", url(store), "--toolsets", "memory", "--data-dir", path.join(work, "data"),
    "--memory-db", `host=${pgDir} port=5432 user=parley dbname=no_such_db_${process.pid}`, "--db-query-timeout-ms", "2000"]);
  try {
    assert.match((await call("get_recent_work", {}, gone.client)).error, /memory database is unreachable|does not exist/);
    // The rest of the daemon serves on.
    assert.ok((await gone.client.listTools()).tools.length > 0);
  } finally {
    await gone.client.close();
  }
});
