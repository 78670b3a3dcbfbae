// codex_import: `parleyd import codex DIR` over Codex CLI rollouts as Codex
// writes them (tests/harness/gen_codex.mjs: date folders, session_meta,
// turn_context, the user's and the agent's words both as response_item
// messages and as the event_msg records that repeat them, reasoning with
// a summary and encrypted_content, a function call and a custom tool call
// with their outputs, a compacted item, a malformed line), then the
// memory toolset and recall over the store: the sessions are agents'
// sessions grouped by their working directory; the words are one message,
// not two; the encrypted reasoning is never text; a call and its output
// are paired; the compaction is the latest continuation; a second import
// adds nothing and a line appended is read by the next; a linked rollout
// is skipped and named, never read.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const gen = path.join(here, "..", "harness", "gen_codex.mjs");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_codex_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-codex-");
const dir = path.join(work, "sessions");
const LEDGER = "5f3a9c1e-7b2d-4e8f-9a01-0c4d2e6b8a11";
const SECRET = "ENCRYPTED-reasoning";
const WORDS = "Migrate the billing tables to the ledger schema.";
let client;

function psql(sql) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", db, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
function importCodex(d = dir) {
  const r = spawnSync(PARLEYD, ["import", "codex", d, "--db", url, "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stderr;
}
async function call(name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, undefined, `${name}: ${textOf(r)}`);
  return r.structuredContent;
}

before(async () => {
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `CREATE DATABASE ${db}`]);
  execFileSync("node", [gen, dir]);
});

after(async () => {
  await client?.close();
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
});

test("import codex: rollouts under date folders, the malformed line named, counted", () => {
  const out = importCodex();
  assert.match(out, new RegExp(`rollout-2026-02-03T09-00-00-${LEDGER}\\.jsonl:13: not a JSON object`));
  assert.match(out, /imported 2 transcript files \(2 with new lines\): 28 lines, 2 new sessions, 15 messages, 3 context heaps; 1 malformed line skipped/);
  assert.doesNotMatch(out, /notes\.jsonl/, "a file not named rollout-*.jsonl is not a session");
  // Sessions of the agents' source, their own account, one a rollout.
  assert.equal(psql(`SELECT string_agg(c.external_id || ' ' || (c.extra ->> 'source') || ' ' || c.title, ', ' ORDER BY c.title)
    FROM chats c JOIN accounts a ON a.id = c.account_id WHERE c.kind = 'agent_session' AND a.handle = 'codex'`),
  `${LEDGER} codex atlas, 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d codex weather-app`);
  assert.match(importCodex(), /2 transcript files \(0 with new lines\): 0 lines, 0 new sessions, 0 messages/,
    "the same rollouts again add nothing");
});

test("the memory tools over Codex sessions: one message a turn, no encrypted reasoning, calls paired, the compaction continues", async () => {
  ({ client } = await stdioClient(["--db", url, "--toolsets", "memory,recall", "--data-dir", path.join(work, "data")]));
  // The words said once (response_item), not again for their event_msg.
  assert.equal(psql(`SELECT count(*) FROM messages WHERE text = '${WORDS}'`), "1");
  const found = await call("search_messages", { query: "migrate billing tables" });
  assert.deepEqual(found.messages.map((m) => m.content), [WORDS]);
  assert.equal(found.messages[0].sender_id, "user");
  assert.equal(found.messages[0].era_name, "atlas", "a session's era is its working directory's");
  // The reasoning's summary is a thought; its encrypted_content is no text anywhere.
  assert.equal(psql(`SELECT count(*) FROM messages WHERE text LIKE '%${SECRET}%' OR extra::text LIKE '%${SECRET}%'`), "0");
  const era = await call("get_era_summary", { era_name: "atlas" });
  const contents = era.messages.map((m) => m.content);
  assert.ok(contents.includes("[thinking] **Planning the migration**\n\nInspect the existing migrations before writing one."), contents.join("\n"));
  assert.ok(!contents.some((c) => c.includes("gAAAA")), "no encrypted reasoning");
  // Codex's injected context is not the user's words.
  const ctx = era.messages.find((m) => m.content.startsWith("<environment_context>"));
  assert.equal(ctx.sender_id, "system");
  // The call, then its output, paired by call_id.
  const i = contents.findIndex((c) => c.startsWith("[tool_use shell]"));
  assert.match(contents[i], /"command": \["bash", "-lc", "ls migrations"\]/);
  assert.match(contents[i + 1], /^\[tool_result\] \{"output":"001_init\.sql\\n002_billing\.sql\\n"/);
  assert.equal(psql(`SELECT string_agg(u.tool_calls ->> 'name', ',' ORDER BY u.tool_calls ->> 'name') FROM messages u
    JOIN messages r ON r.chat_id = u.chat_id AND r.kind = 'tool_result' AND r.tool_results ->> 'tool_use_id' = u.tool_calls ->> 'id'
    WHERE u.kind = 'tool_use'`), "apply_patch,shell");
  // The compaction's summary is the continuation, in a new context heap.
  const cont = await call("get_latest_continuation");
  assert.match(cont.content, /^Summary: the billing tables moved to the ledger schema/);
  assert.equal(cont.era_name, "atlas");
  const heap = await call("get_context_heap", { heap_id: cont.context_heap_id });
  assert.equal(heap.heap.type, "POST_COMPACTING");
  assert.deepEqual(heap.messages.map((m) => m.content), [cont.content, "Now write the reconciliation report.",
    "The reconciliation report compares ledger totals nightly."]);
  const before = await call("get_messages_before", { reference_id: cont.message_id, limit: 1 });
  assert.equal(before.messages[0].content, "The ledger migration goes in 003_ledger.sql.");
  // recall: each turn one hit (the user's, the agent's, the summary's).
  const r = await call("recall", { query: "reconciliation report" });
  assert.equal(r.total, 3, JSON.stringify(r.hits));
  assert.ok(r.hits.every((h) => h.source === "agents"));
  assert.equal(r.hits.filter((h) => /Now write the/.test(h.snippet)).length, 1);
  const other = await call("search_messages", { query: "Celsius" });
  assert.deepEqual(other.messages.map((m) => [m.content, m.era_name]).sort(), [
    ["Show the forecast in Celsius.", "weather-app"], ["The forecast shows Celsius now.", "weather-app"]]);
  assert.equal((await call("search_messages", { query: "not a rollout" })).count, 0);
});

test("a line appended is read by the next import; nothing is read twice", async () => {
  execFileSync("node", [gen, dir, "grow"]);
  assert.match(importCodex(), /\(1 with new lines\): 4 lines, 0 new sessions, 2 messages/);
  assert.match(importCodex(), /\(0 with new lines\): 0 lines, 0 new sessions, 0 messages/);
  const recent = await call("get_recent_work", { limit: 2 });
  assert.deepEqual(recent.messages.map((m) => m.content), ["Added a currency column; amounts keep their currency now.",
    "Add a currency column to the ledger."]);
  assert.match((await call("get_latest_continuation")).content, /^Summary: the billing tables moved/);
  assert.equal(psql(`SELECT count(*) FROM messages WHERE text = 'Add a currency column to the ledger.'`), "1");
});

test("a linked rollout or date folder is skipped and named, never read", () => {
  const d = path.join(work, "linked");
  const outside = path.join(work, "outside");
  fs.mkdirSync(path.join(d, "2026", "02", "04"), { recursive: true });
  fs.mkdirSync(outside, { recursive: true });
  const name = "rollout-2026-02-04T09-00-00-11111111-2222-4333-8444-555555555555.jsonl";
  fs.writeFileSync(path.join(outside, name), JSON.stringify({ timestamp: "2026-02-04T09:00:00Z", type: "response_item",
    payload: { type: "message", role: "user", content: [{ type: "input_text", text: "outside words" }] } }) + "\n");
  fs.symlinkSync(path.join(outside, name), path.join(d, "2026", "02", "04", name));
  fs.symlinkSync(outside, path.join(d, "2026", "02", "05"));
  const out = importCodex(d);
  assert.match(out, new RegExp(`04/${name}: a symbolic link, not followed`));
  assert.match(out, /02\/05: a symbolic link, not followed/);
  assert.match(out, /imported 0 transcript files .* 1 file skipped/);
  assert.equal(psql("SELECT count(*) FROM messages WHERE text = 'outside words'"), "0");
});
