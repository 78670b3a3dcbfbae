// The read-only pool's queue bound end to end (db_queue_max): a tool call
// past it is answered at once with isError naming the setting, and the
// calls in front of it are answered once the database is free again. The
// pool is one connection held by a lock taken from psql, so that which call
// runs, waits or is refused follows from the order of the requests alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_busy_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-busy-");
let client;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

// Polls the database until sql answers "t".
async function until(sql) {
  while (psql(sql) !== "t") await new Promise((r) => setTimeout(r, 50));
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  execFileSync("node", [path.join(here, "..", "harness", "gen_tg_export.mjs"), "groups", path.join(work, "groups")]);
  execFileSync(process.env.PARLEYD, ["import", "telegram-export", path.join(work, "groups", "small.json"), "--db", url,
    "--data-dir", path.join(work, "data")], { stdio: ["ignore", "ignore", "pipe"] });
  ({ client } = await stdioClient(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data"),
    "--db-ro-pool-size", "1", "--db-queue-max", "1"]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("a call past db_queue_max is refused at once, naming the setting; the calls before it are answered", async (t) => {
  // psql holds chats locked: the pool's one connection, running the first
  // call, waits for it.
  const holder = spawn("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", db], { stdio: ["pipe", "ignore", "inherit"] });
  t.after(() => holder.kill()); // the lock ends with it, also after a failure
  holder.stdin.write("BEGIN;\nLOCK TABLE chats IN ACCESS EXCLUSIVE MODE;\n");
  await until("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'chats'::regclass AND mode = 'AccessExclusiveLock' AND granted)");
  const first = client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  await until(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = '${db}' AND wait_event_type = 'Lock')`);
  // The second waits in the queue (its one place); the third finds it full.
  const second = client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  const third = await client.callTool({ name: "messagesList", arguments: { channelId: 1, limit: 5 } });
  assert.equal(third.isError, true, JSON.stringify(third));
  assert.match(textOf(third), /busy.*db_queue_max.*retry/, textOf(third));
  holder.stdin.end("COMMIT;\n");
  const a = await first;
  assert.ok(!a.isError, textOf(a));
  assert.ok(Array.isArray(a.structuredContent.channels) && a.structuredContent.channels.length > 0, JSON.stringify(a));
  const b = await second;
  assert.ok(!b.isError, textOf(b));
  // Free again: the next call is answered.
  const c = await client.callTool({ name: "channelsList", arguments: { limit: 5 } });
  assert.ok(!c.isError, textOf(c));
});
