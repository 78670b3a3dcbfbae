// The memory toolset end to end over its two sources: a memory-lane
// (Django) database whose import order is the reverse of the real order
// (gen_memory_lane.mjs), and parley's own store filled by `parleyd import
// claude-code` from generated transcripts (gen_transcripts.mjs: compaction,
// sidechain, thinking, tool use, a malformed line; imported again and
// grown). Every tool through the official SDK client, the bootstrap
// prompt, bootstrap_memory within its budget, clear errors, an unreachable
// database, and proof that parley writes nothing to the Django one.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, stdioClient, textOf, tmpdir } from "./lib.mjs";

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
  // Past 32 bits too: capped, not a database error.
  const huge = await call("get_recent_work", { limit: 1e12 });
  assert.equal(huge.limit, 1000);
  assert.equal(huge.limit_capped, true);
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

test("agents' transcripts: imported incrementally, then the same tools over parley's store", async () => {
  const dir = path.join(work, "transcripts");
  const gen = path.join(here, "..", "harness", "gen_transcripts.mjs");
  execFileSync("node", [gen, dir]);
  const run = (args) => {
    const r = spawnSync(PARLEYD, ["import", "claude-code", dir, "--db", url(store), "--data-dir", path.join(work, "data"), ...args], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return r.stderr;
  };
  const first = run([]);
  assert.match(first, /aaaaaaaa-0000-4000-8000-000000000002\.jsonl:4: not a JSON object/);
  assert.match(first, /3 new sessions, 14 messages, 4 context heaps; 1 malformed line skipped/);
  assert.match(run([]), /0 lines, 0 new sessions, 0 messages/, "the same files again change nothing");
  execFileSync("node", [gen, dir, "grow"]);
  assert.match(run([]), /\(1 with new lines\): 3 lines, 0 new sessions, 3 messages/);
  const { client: c } = await stdioClient(["--db", url(store), "--toolsets", "memory", "--data-dir", path.join(work, "data")]);
  try {
    const cont = await call("get_latest_continuation", {}, c);
    assert.match(cont.content, /^This session is being continued/);
    assert.equal(cont.era_name, "parley");
    const before = await call("get_messages_before", { reference_id: cont.message_id, limit: 4 }, c);
    assert.deepEqual(before.messages.map((m) => m.content), ["A sidechain note.", "Search will rank by relevance.",
      "Next we build search.", "Footer fixed."]);
    const heap = await call("get_context_heap", { heap_id: cont.context_heap_id }, c);
    assert.equal(heap.heap.type, "POST_COMPACTING");
    assert.deepEqual(heap.messages.map((m) => m.message_type), ["text", "text", "text", "thought", "text"]);
    const era = await call("get_era_summary", { era_name: "parley" }, c);
    assert.equal(era.messages[0].content, "Let's deploy the archive today.");
    assert.deepEqual(era.messages.slice(1, 4).map((m) => m.message_type), ["thought", "text", "tool_use"]);
    assert.equal(era.messages[3].content, '[tool_use Bash] {"command": "ls /srv"}');
    const found = await call("search_messages", { query: "footer" }, c);
    assert.deepEqual(found.messages.map((m) => m.content).sort(), ["Fix the footer.", "Footer fixed."]);
    assert.equal(found.messages[0].era_name, "my-website", "an era is named after the working directory");
    const recent = await call("get_recent_work", { limit: 1 }, c);
    assert.equal(recent.messages[0].content, "Bootstrap keeps the newest work within the budget.");
    const ca = await call("get_compacting_actions", {}, c);
    assert.equal(ca.count, 1);
    assert.match(ca.compacting_actions[0].summary, /^This session is being continued/);
    const t = await call("get_timeline", { from: "2026-01-10T09:50:00Z", to: "2026-01-10T10:00:00Z" }, c);
    assert.deepEqual(t.messages.map((m) => m.content), ["Fix the footer.", "Footer fixed."]);
    assert.match((await call("get_timeline", { from_block: 1 }, c)).error, /no block heights/);
    assert.equal((await call("get_message_by_id", { message_id: cont.message_id }, c)).content, cont.content);
    const boot = await call("bootstrap_memory", { era_name: "parley" }, c);
    assert.match(boot.continuation.content, /^This session is being continued/);
    assert.equal(boot.era.name, "parley");
    // Without era_name: the earliest era of the project worked on last,
    // and the whole answer within the budget (4 characters a token).
    for (const token_budget of [1000, 2000, 30000]) {
      const r = await c.callTool({ name: "bootstrap_memory", arguments: { token_budget } });
      assert.equal(r.isError, undefined, textOf(r));
      const found = r.structuredContent;
      assert.equal(found.era?.name, "parley", JSON.stringify(found.left_out));
      assert.ok(textOf(r).length <= token_budget * 4, `${textOf(r).length} characters for ${token_budget} tokens`);
      assert.equal(found.approx_tokens, Math.ceil(textOf(r).length / 4));
      if (token_budget === 30000) assert.ok(found.era_messages.length > 0);
    }
  } finally {
    await c.close();
  }
});

test("an eras file names eras, by project folder or by working directory", async () => {
  const dir = path.join(work, "transcripts");
  const eras = path.join(work, "eras.json");
  const run = (file) => spawnSync(PARLEYD, ["import", "claude-code", dir, "--eras", file, "--db", url(store),
    "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  const missing = spawnSync(PARLEYD, ["import", "claude-code", path.join(work, "no-such-dir"), "--db", url(store),
    "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no-such-dir: No such file or directory/);
  fs.writeFileSync(eras, '["not", "an object"]');
  let r = run(eras);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /eras file .*eras\.json: expected an object \{"KEY": "Era name"\}/);
  r = run(path.join(work, "missing.json"));
  assert.equal(r.status, 1);
  assert.match(r.stderr, /eras file .*missing\.json: No such file or directory/);
  fs.writeFileSync(eras, JSON.stringify({ "-home-dev-parley": "Parley, the archive", "/home/dev/my-website": "Website" }));
  r = run(eras);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /2 era\(s\) renamed/);
  const { client: c } = await stdioClient(["--db", url(store), "--toolsets", "memory", "--data-dir", path.join(work, "data")]);
  try {
    assert.equal((await call("get_latest_continuation", {}, c)).era_name, "Parley, the archive");
    assert.equal((await call("search_messages", { query: "footer" }, c)).messages[0].era_name, "Website");
  } finally {
    await c.close();
  }
});

test("without agents' sessions, or with a memory database unreachable, the tools say so", async () => {
  const emptyDb = `e2e_memempty_${process.pid}`;
  psql(`CREATE DATABASE ${emptyDb}`, "postgres");
  const none = await stdioClient(["--db", url(emptyDb), "--toolsets", "memory", "--data-dir", path.join(work, "data2")]);
  try {
    assert.match((await call("get_latest_continuation", {}, none.client)).error, /no continuation message yet.*import claude-code/);
    assert.equal((await call("get_recent_work", {}, none.client)).count, 0);
  } finally {
    await none.client.close();
    psql(`DROP DATABASE IF EXISTS ${emptyDb} WITH (FORCE)`, "postgres");
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
