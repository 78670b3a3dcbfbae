// Searches share the database fairly between principals (tokens): a
// daemon over HTTP with two tokens of the telegram toolset, a chat whose
// messages PostgreSQL's regex engine takes long to match a back-reference
// against (each ends in the "x" the regex wants). Token A's two
// back-reference regexes are refused before any SQL runs, with isError
// saying what to write instead, while token B's plain searches answer
// within 3 s; a regex that runs past search_regex_timeout_ms is stopped
// and answered isError saying how to make it cheaper.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startDaemon, textOf, tmpdir } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_search_fair_${process.pid}`;
const dburl = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-search-fair-");
const CHAT = -7100;
const TOKENS = { a: "regex-token-a-0123456789abcdef", b: "plain-token-b-0123456789abcdef" };
let daemon;
let url;
const clients = [];

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

async function until(sql) {
  while (psql(sql) !== "t") await new Promise((r) => setTimeout(r, 50));
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  const file = path.join(work, "tokens");
  fs.writeFileSync(file, `${TOKENS.a} toolsets=telegram read_only\n${TOKENS.b} toolsets=telegram\n`, { mode: 0o600 });
  daemon = await startDaemon([
    "--db", dburl,
    "--data-dir", path.join(work, "data"),
    "--toolsets", "telegram",
    "--listen", "http://127.0.0.1:0/mcp",
    "--token-file", file,
    // Without the guard, a back-reference runs to this limit.
    "--db-query-timeout-ms", "20000",
    "--search-regex-timeout-ms", "1500",
  ]);
  url = `http://127.0.0.1:${/\(port (\d+)\)/.exec(daemon.log())[1]}/mcp`;
  // (The daemon made the schema.) 2,000 messages of some 90 characters,
  // each ending in x: "(.*)(.*)(.*)\3\2\1x" costs about a quarter of a
  // second each.
  psql(`INSERT INTO chats (id, kind, title) VALUES (${CHAT}, 'group', 'Planning');
        INSERT INTO messages (chat_id, id, date, text)
        SELECT ${CHAT}, g, timestamptz '2026-01-01' + g * interval '1 minute',
               'message ' || g || ' about the plan for the next meeting with the team, notes and links x'
        FROM generate_series(1, 2000) g`);
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  assert.equal(await daemon?.stop(), 0);
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

async function connect(token) {
  const client = new Client({ name: "search-fair", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  }));
  clients.push(client);
  return client;
}

// A tool call and the milliseconds it took.
async function timed(client, args) {
  const t0 = Date.now();
  const r = await client.callTool({ name: "messagesSearch", arguments: args }, undefined, { timeout: 60000 });
  return { r, ms: Date.now() - t0 };
}

test("two back-reference regexes of token A finish within 10 s while token B's plain searches answer within 3 s", async () => {
  const a = await connect(TOKENS.a);
  const b = await connect(TOKENS.b);
  const warm = await timed(b, { query: "meeting", limit: 5 });
  assert.ok(!warm.r.isError, textOf(warm.r));
  const heavy = [
    timed(a, { regex: "(.*)(.*)(.*)\\3\\2\\1x", limit: 20 }),
    timed(a, { regex: "(.*)(.*)(.*)\\3\\2\\1x", channelIds: [CHAT], limit: 20 }),
  ];
  await new Promise((r) => setTimeout(r, 200));
  for (const query of ["meeting", "plan", "notes links"]) {
    const { r, ms } = await timed(b, { query, limit: 5 });
    assert.ok(!r.isError, textOf(r));
    assert.ok(r.structuredContent.messages.length > 0, JSON.stringify(r.structuredContent));
    assert.ok(ms < 3000, `token B's search for "${query}" took ${ms} ms`);
  }
  for (const { r, ms } of await Promise.all(heavy)) {
    assert.ok(ms < 10000, `token A's regex took ${ms} ms`);
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(textOf(r), /^regex: \\[123] at character \d+ is a back-reference.*abab or \(ab\)\{2\}/s, textOf(r));
  }
  // Nothing of A's reached PostgreSQL: no backend matches the regex.
  assert.equal(psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${db}' AND pid <> pg_backend_pid() AND query LIKE '%messages_search%' AND state = 'active'`), "0");
  // A regex without one is searched.
  const ok = await timed(a, { regex: "plan for the next", limit: 3 });
  assert.ok(!ok.r.isError, textOf(ok.r));
  assert.equal(ok.r.structuredContent.messages.length, 3);
});

test("a regex search that runs past search_regex_timeout_ms is stopped and told how to make the regex cheaper", async (t) => {
  const a = await connect(TOKENS.a);
  // psql holds the messages locked: the search runs (holding its
  // connection), waiting for the lock, past its regex time limit.
  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill());
  holder.stdin.write("BEGIN;\nLOCK TABLE messages IN ACCESS EXCLUSIVE MODE;\n");
  await until("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'messages'::regclass AND mode = 'AccessExclusiveLock' AND granted)");
  const { r, ms } = await timed(a, { regex: "plan.*notes", limit: 5 });
  holder.stdin.end("ROLLBACK;\n");
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(textOf(r), /^regex: matching it took too long \(.*1500 ms.*search_regex_timeout_ms\).*anchor it/s, textOf(r));
  assert.ok(ms < 10000, `answered after ${ms} ms`); // the limit told by the message above, not timed
  // The connection was given back: the next search is answered.
  const next = await timed(a, { regex: "plan.*notes", limit: 5 });
  assert.ok(!next.r.isError, textOf(next.r));
});
