// auto: the default selection serves what has something to serve (its
// compact surface: docs/tools.md). On an empty store only recall; a setting that names a source
// (chatwise_db) serves its toolset from the start; data that arrives while
// a session is open (an import by another process) brings its toolset,
// and the session is told (notifications/tools/list_changed); `all` and a
// list are served as they are.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { PARLEYD, stdioClient, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = path.join(here, "..", "harness");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_auto_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-auto-");
const app = path.join(work, "cw", "app.db");

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
const open = (extra = []) => stdioClient(["--db", url, "--data-dir", path.join(work, "data"), ...extra]);
const names = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();
async function until(pred, what) {
  for (let i = 0; i < 200; i++) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(() => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  fs.mkdirSync(path.dirname(app), { recursive: true });
  execFileSync("node", [path.join(harness, "gen_chatwise.mjs"), app]);
});

after(() => {
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("an empty store serves recall alone; data that arrives brings its toolset, and the session is told", async () => {
  const { client } = await open();
  try {
    assert.deepEqual(await names(client), ["recall", "recall_timeline"]);
    assert.equal(client.getServerCapabilities().tools.listChanged, true);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed++);
    execFileSync(PARLEYD, ["import", "chatwise", app, "--db", url, "--data-dir", path.join(work, "data")], { stdio: "pipe" });
    await until(() => changed > 0, "notifications/tools/list_changed");
    assert.deepEqual(await names(client), ["chatwise_open", "recall", "recall_timeline"]);
    const r = await client.callTool({ name: "recall", arguments: { query: "rust", sources: ["chatwise"] } });
    assert.equal(r.isError, undefined);
    assert.ok(r.structuredContent.hits.length > 0);
  } finally {
    await client.close();
  }
  // A daemon started now serves chatwise from the start (the others are
  // still held back).
  const { client: again } = await open();
  try {
    assert.deepEqual(await names(again), ["chatwise_open", "recall", "recall_timeline"]);
  } finally {
    await again.close();
  }
});

test("a setting that names a source serves its toolset before it has data", async () => {
  const { client } = await open(["--memory-db", url]);
  try {
    const n = await names(client);
    // The chatwise data of the test before is there too; no telegram.
    assert.deepEqual(n, ["chatwise_open", "memory_bootstrap", "memory_open", "recall", "recall_timeline"]);
  } finally {
    await client.close();
  }
});

test("all and explicit lists are served as they are", async () => {
  const { client } = await open(["--toolsets", "all"]);
  try {
    const n = await names(client);
    for (const t of ["messagesSearch", "conversations_list", "get_recent_work", "search_conversations", "recall"])
      assert.ok(n.includes(t), t);
    assert.equal(client.getServerCapabilities().tools.listChanged, false);
  } finally {
    await client.close();
  }
  const { client: one } = await open(["--toolsets", "telegram"]);
  try {
    const n = await names(one);
    assert.ok(n.includes("messagesSearch") && !n.includes("recall"), n.join(","));
  } finally {
    await one.close();
  }
});
