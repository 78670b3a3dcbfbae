// An index a migration asks for is built in the background while parleyd
// serves (issue #47, item 4; src/db/index_build.c): a store of messages,
// a build declared on messages whose index expression sleeps (so that it
// takes several seconds, like an index on millions of rows), then serve:
// it answers a search and takes a write while the build runs, logs the
// build's progress, and marks it done.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, stdioClient, textOf, tmpdir, psqlAt } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_index_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-index-");
const psql = (sql) => psqlAt(pgDir, db, sql);
const ROWS = 4000; // 2 ms a row to build: about 8 s
let served;

const serve = () =>
  stdioClient(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data")]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, ms = 60000) {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const building = () =>
  psql("SELECT count(*) FROM pg_stat_progress_create_index WHERE relid = 'messages'::regclass") === "1";

before(async () => {
  psqlAt(pgDir, "postgres", `CREATE DATABASE ${db}`);
  execFileSync(PARLEYD, ["migrate", "--db", url], { stdio: ["ignore", "ignore", "pipe"] });
  psql("INSERT INTO chats (id, kind, title) VALUES (-1, 'group', 'Crew')");
  psql(`INSERT INTO messages (chat_id, id, date, text) SELECT -1, i, now() - i * interval '1 minute',
        CASE WHEN i = 77 THEN 'the zanzibar report' ELSE 'note ' || i END
        FROM generate_series(1, ${ROWS}) i`);
  // A first start brings the search's own indexes in (their builder is
  // another one), so that the build below runs alone.
  const first = await serve();
  await waitFor("the search's indexes", () => psql("SELECT parley_search_pairs_ready()") === "t");
  await first.client.close();
  psql(`CREATE FUNCTION e2e_slow(i bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS
        $$ BEGIN PERFORM pg_sleep(0.001); RETURN i; END $$`);
  psql(`SELECT parley_index_build('messages_e2e_slow_idx',
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_e2e_slow_idx ON messages (e2e_slow(id))')`);
});

after(async () => {
  await served?.client.close();
  psqlAt(pgDir, "postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  fs.rmSync(work, { recursive: true, force: true });
});

test("serve answers and takes writes while it builds an index on messages", async () => {
  served = await serve();
  const { client, log } = served;
  await waitFor("the build to start", building, 30000);
  const r = await client.callTool({ name: "messagesSearch", arguments: { query: "zanzibar" } });
  assert.equal(r.isError, undefined, textOf(r));
  assert.deepEqual(r.structuredContent.messages.map((m) => m.text), ["the zanzibar report"]);
  const t0 = Date.now();
  psql("INSERT INTO messages (chat_id, id, date, text) VALUES (-1, 100000, now(), 'written meanwhile')");
  const took = Date.now() - t0;
  assert.ok(building(), "the build was over before the call and the write: make it slower");
  assert.ok(took < 1500, `a write waited ${took} ms for the build`);
  await waitFor("the build to be done", () =>
    psql("SELECT state FROM schema_index_builds WHERE name = 'messages_e2e_slow_idx'") === "done");
  // The daemon's stderr arrives between the polls (psql blocks).
  await waitFor("the log's last line", () => /on messages built \(/.test(log.join("")), 10000);
  const text = log.join("");
  assert.match(text, /index messages_e2e_slow_idx on messages: building it concurrently/);
  assert.match(text, /index messages_e2e_slow_idx on messages: building index: [a-z ]+, \d+ % \(\d+ of \d+ (blocks|tuples)\), \d+ s/);
  assert.match(text, /index messages_e2e_slow_idx on messages built \(/);
  assert.equal(psql("SELECT indisvalid FROM pg_index WHERE indexrelid = 'messages_e2e_slow_idx'::regclass"), "t");
  // Still serving.
  const again = await client.callTool({ name: "messagesSearch", arguments: { query: "meanwhile" } });
  assert.deepEqual(again.structuredContent.messages.map((m) => m.text), ["written meanwhile"]);
});
