// subscriptions/listen (MCP 2026-07-28) with the official SDK v2 client:
// two daemons on one database, a listener on each; a write by another
// writer (psql, as another daemon or an import would) reaches both as
// notifications/resources/updated through the store's NOTIFY; the filter
// is honoured (a resource the listener did not ask for is not sent); a
// 2025-11-25 session's resources/subscribe hears the same write; closing
// a listen ends it, and a daemon's shutdown ends it gracefully.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { PARLEYD, startDaemon } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `parley_listen_${process.pid}`;
const conn = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const PIN = { versionNegotiation: { mode: { pin: "2026-07-28" } } };
const psql = (sql, dbname = db) =>
  execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], { encoding: "utf8" }).trim();

let a, b, urlA, urlB;
before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  const args = (port) => ["--db", conn, "--toolsets", "inline", "--listen", `http://127.0.0.1:${port}/mcp`];
  a = await startDaemon(args(0));
  b = await startDaemon(args(0));
  urlA = `http://127.0.0.1:${/\(port (\d+)\)/.exec(a.log())[1]}/mcp`;
  urlB = `http://127.0.0.1:${/\(port (\d+)\)/.exec(b.log())[1]}/mcp`;
  psql("INSERT INTO chats (id, kind, title) VALUES (4242, 'group', 'Listeners'), (4343, 'group', 'Other')");
});
after(async () => {
  if (a) assert.equal(await a.stop(), 0);
  if (b) assert.equal(await b.stop(), 0);
  psql(`DROP DATABASE IF EXISTS ${db}`, "postgres");
});

// Collects the URIs of resources/updated a v2 client hears.
function heard(client) {
  const uris = [];
  client.setNotificationHandler("notifications/resources/updated", (n) => uris.push(n.params.uri));
  return uris;
}
async function until(cond, what, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test("a write reaches listeners on every daemon of the database, as each asked", async () => {
  const ca = new Client({ name: "listener-a", version: "1" }, PIN);
  await ca.connect(new StreamableHTTPClientTransport(new URL(urlA)));
  const cb = new Client({ name: "listener-b", version: "1" }, PIN);
  await cb.connect(new StreamableHTTPClientTransport(new URL(urlB)));
  const v1 = new ClientV1({ name: "legacy", version: "1" }, { capabilities: {} });
  await v1.connect(new HttpV1(new URL(urlB)));
  try {
    const got = heard(ca), gotB = heard(cb), gotV1 = [];
    v1.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => gotV1.push(n.params.uri));
    const subA = await ca.listen({ resourceSubscriptions: ["inline://chat/4242", "nope://x"], toolsListChanged: true });
    // What is not a resource of this server, and list changes of lists
    // that never change, are not honoured.
    assert.deepEqual(subA.honoredFilter, { resourceSubscriptions: ["inline://chat/4242"] });
    const subB = await cb.listen({ resourceSubscriptions: ["inline://chat/4242/message/1"] });
    await v1.subscribeResource({ uri: "inline://chat/4242" });

    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (4242, 1, now(), 'first')");
    await until(() => got.includes("inline://chat/4242"), "daemon A's listener");
    await until(() => gotB.includes("inline://chat/4242/message/1"), "daemon B's listener");
    await until(() => gotV1.includes("inline://chat/4242"), "the 2025-11-25 subscription");
    // Another chat's write is not sent to these listeners.
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (4343, 1, now(), 'elsewhere')");
    // An edit of the message reaches B again; a rolled back one does not.
    const before = gotB.length;
    psql("BEGIN; UPDATE messages SET text = 'never' WHERE chat_id = 4242 AND id = 1; ROLLBACK");
    psql("UPDATE messages SET text = 'edited', edit_date = now() WHERE chat_id = 4242 AND id = 1");
    await until(() => gotB.length === before + 1, "the edit");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(gotB.length, before + 1, "one notification for the edit, none for the rollback");
    assert.ok(!got.some((u) => u.includes("4343")) && !gotB.some((u) => u.includes("4343")));

    // Closing a listen ends it: the next write is not heard.
    await subA.close();
    assert.equal(await subA.closed, "local");
    const n = got.length;
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (4242, 2, now(), 'second')");
    await until(() => gotV1.filter((u) => u === "inline://chat/4242").length >= 2, "the second write");
    assert.equal(got.length, n);
    await subB.close();
  } finally {
    await ca.close();
    await cb.close();
    await v1.close();
  }
});

test("stdio: a listen ends gracefully when the daemon stops", async () => {
  const t = new StdioClientTransport({
    command: PARLEYD,
    args: ["serve", "--stdio", "--db", conn, "--toolsets", "inline,conformance"],
    stderr: "pipe",
  });
  const c = new Client({ name: "stdio-listener", version: "1" }, PIN);
  await c.connect(t);
  const got = heard(c);
  const lists = [];
  c.setNotificationHandler("notifications/tools/list_changed", () => lists.push("tools"));
  const sub = await c.listen({ resourceSubscriptions: ["inline://chat/4343"], toolsListChanged: true });
  assert.deepEqual(sub.honoredFilter, { toolsListChanged: true, resourceSubscriptions: ["inline://chat/4343"] });
  psql("INSERT INTO messages (chat_id, id, date, text) VALUES (4343, 2, now(), 'to stdio')");
  await until(() => got.includes("inline://chat/4343"), "the stdio listener");
  await c.callTool({ name: "test_trigger_tool_change", arguments: {} });
  await until(() => lists.length === 1, "tools/list_changed");
  // SIGTERM: the daemon answers the listen with a complete result first.
  t._process.kill("SIGTERM");
  assert.equal(await sub.closed, "graceful");
  await c.close();
});
