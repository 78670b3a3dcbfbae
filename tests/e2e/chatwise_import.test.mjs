// chatwise_import: `parleyd import chatwise` over a generated app.db
// (gen_chatwise.mjs): chats and messages with roles and text ids, times in
// seconds and in milliseconds, tool calls and results in both shapes kept
// structured with the results' text apart; a second import writes nothing,
// a grown file only what changed; a file the app holds a write transaction
// on is read as committed; a missing or non-SQLite file fails and writes
// nothing.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_chatwise_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-chatwise-");
const appDb = path.join(work, "ChatWise", "app.db");
const gen = path.join(here, "..", "harness", "gen_chatwise.mjs");
const NOW = Date.UTC(2026, 10, 1, 12);

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
function importFile(p) {
  const r = spawnSync(PARLEYD, ["import", "chatwise", p, "--db", url, "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  return { status: r.status, out: r.stderr };
}
const everything = () => psql(`SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
    SELECT row(c.*)::text AS x FROM chats c UNION ALL SELECT row(m.*)::text FROM messages m) s`);

before(() => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  fs.mkdirSync(path.dirname(appDb), { recursive: true });
  execFileSync("node", [gen, appDb, String(NOW)]);
});

after(() => {
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("a missing file or one that is not SQLite fails and writes nothing", () => {
  let r = importFile(path.join(work, "nope.db"));
  assert.equal(r.status, 1);
  assert.match(r.out, /nope\.db: No such file or directory/);
  r = importFile(work); // a folder without app.db
  assert.equal(r.status, 1);
  assert.match(r.out, /app\.db: No such file or directory/);
  const junk = path.join(work, "junk.db");
  fs.writeFileSync(junk, "this is not a database, just text long enough to have a header............\n".repeat(20));
  r = importFile(junk);
  assert.equal(r.status, 1);
  assert.match(r.out, /junk\.db: not a SQLite database/);
  const other = path.join(work, "other.db");
  execFileSync("sqlite3", [other], { input: "CREATE TABLE notes (id integer);" });
  r = importFile(other);
  assert.equal(r.status, 1);
  assert.match(r.out, /other\.db: no table chat: this is not a ChatWise database/);
  assert.equal(psql("SELECT count(*) FROM chats WHERE kind = 'ai_chat'"), "0");
});

test("chats and messages imported: roles, ids, both time units, tool calls", () => {
  const r = importFile(path.dirname(appDb)); // the folder holding app.db
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /imported 6 chats \(6 new or changed\), 19 messages \(18 new or changed\), 2 with tool calls; 1 without their chat skipped/);
  assert.equal(psql("SELECT kind || ':' || title FROM chats WHERE external_id = 'chat-virtual-list-0003'"), "ai_chat:虚拟列表滚动优化");
  // seconds and milliseconds give the same kind of time: the age the generator used
  assert.equal(psql(`SELECT string_agg(c.external_id || '=' || round(extract(epoch FROM to_timestamp(${NOW / 1000}) - m.date) / 86400), ',' ORDER BY c.external_id)
    FROM chats c JOIN messages m ON m.chat_id = c.id AND m.id = 1 WHERE c.kind = 'ai_chat'`),
    "chat-deploy-0005=20,chat-groceries-0006=3,chat-lisbon-0004=120,chat-rust-async-0001=10,chat-rust-borrow-0002=45,chat-virtual-list-0003=5");
  assert.equal(psql(`SELECT string_agg(m.id || ':' || m.role || ':' || m.external_id, ',' ORDER BY m.id)
    FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.external_id = 'chat-rust-borrow-0002'`),
    "1:system:chat-rust-borrow-0002-m1,2:user:chat-rust-borrow-0002-m2,3:assistant:chat-rust-borrow-0002-m3");
  const calls = JSON.parse(psql(`SELECT jsonb_agg(tool_calls ORDER BY m.id) FROM messages m JOIN chats c ON c.id = m.chat_id
    WHERE c.external_id = 'chat-deploy-0005' AND tool_calls IS NOT NULL`));
  assert.deepEqual(calls, [
    [{ id: "call-a", server: "shell", tool: "run", arguments: { command: "df -h /srv" } }],
    [{ id: "call-b", server: "docs", tool: "search", arguments: { query: "image retention" } }],
  ]);
  assert.equal(psql(`SELECT string_agg(tool_text, ' / ' ORDER BY m.id) FROM messages m JOIN chats c ON c.id = m.chat_id
    WHERE c.external_id = 'chat-deploy-0005'`), "/dev/sda1 80% used of 200G (kubernetes images) / Images older than 30 days are pruned nightly.");
  assert.equal(psql("SELECT count(*) FROM messages WHERE external_id = 'orphan-msg-0001'"), "0");
  assert.equal(psql(`SELECT last_message_id FROM chats WHERE external_id = 'chat-rust-async-0001'`), "5");
});

test("importing again writes nothing; a grown file writes what changed", () => {
  const before = everything();
  const r = importFile(appDb);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /6 chats \(0 new or changed\), 19 messages \(0 new or changed\)/);
  assert.equal(everything(), before);
  execFileSync("node", [gen, appDb, String(NOW), "grow"]);
  const g = importFile(appDb);
  assert.equal(g.status, 0, g.out);
  assert.match(g.out, /6 chats \(1 new or changed\), 20 messages \(1 new or changed\)/);
  assert.equal(psql("SELECT title FROM chats WHERE external_id = 'chat-lisbon-0004'"), "Trip to Lisbon and Porto");
  assert.equal(psql(`SELECT m.id || ':' || m.text FROM messages m JOIN chats c ON c.id = m.chat_id
    WHERE m.external_id = 'chat-rust-async-0001-m6'`), "6:And what about async-std?");
});

test("a file the app is writing is read as committed", async () => {
  // The app (a sqlite3 process) holds an open write transaction with a new message.
  const app = spawn("sqlite3", [appDb], { stdio: ["pipe", "pipe", "pipe"] });
  app.stdin.write("BEGIN IMMEDIATE;\nINSERT INTO message VALUES ('uncommitted-1', 'chat-lisbon-0004', 'user', 'not yet', 1, NULL, NULL);\nSELECT 'held';\n");
  await new Promise((resolve) => app.stdout.once("data", resolve));
  try {
    const r = importFile(appDb);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /20 messages \(0 new or changed\)/);
    assert.equal(psql("SELECT count(*) FROM messages WHERE external_id = 'uncommitted-1'"), "0");
  } finally {
    app.stdin.end("COMMIT;\n");
    await new Promise((resolve) => app.once("exit", resolve));
  }
  const r = importFile(appDb);
  assert.match(r.out, /21 messages \(1 new or changed\)/);
});

test("a NUL byte, a missing role or a time out of range do not stop the import", () => {
  execFileSync("sqlite3", [appDb], {
    input: "INSERT INTO message VALUES ('odd-1', 'chat-lisbon-0004', NULL, 'a' || char(0) || 'b', 1e20, NULL, NULL);",
  });
  const r = importFile(appDb);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /22 messages \(1 new or changed\)/);
  assert.equal(psql("SELECT text || ' ' || outgoing || ' ' || (role IS NULL) FROM messages WHERE external_id = 'odd-1'"), "a\uFFFDb false true");
});
