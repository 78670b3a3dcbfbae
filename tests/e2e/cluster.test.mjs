// Many daemons, one address: three parleyd on one database and one data
// directory (one requestState key) behind HAProxy (round robin, no
// stickiness), driven by the official SDK v2 client pinned to MCP
// 2026-07-28: lists, calls spread over every daemon, a multi-round tool
// and the Bluesky login (XRPC emulator) by multi round-trip requests whose
// rounds land on different daemons, a listen that hears a write, then one
// daemon killed with SIGKILL and the next requests answered by the others.
// A 2025-11-25 client goes through a second HAProxy frontend that sticks
// each Mcp-Session-Id to its daemon, as docs/deployment.md shows. The
// third daemon reads through a streaming replica of the test's primary
// (pg_basebackup -R, --db-ro): a write made elsewhere is found there once
// replayed, and its answers say how far behind the replica is.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startDaemon, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `parley_cluster_${process.pid}`;
const conn = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const PASSWORD = "abcd-efgh-ijkl-mnop";
const PIN = { versionNegotiation: { mode: { pin: "2026-07-28" } } };
const psql = (sql, dbname = db) =>
  execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], { encoding: "utf8" }).trim();

const work = tmpdir("parley-cluster-");
const daemons = [];
let emu, haproxy, lb, lbSticky;
// Its own directory under the system's temporary one: as root, the
// replica runs as postgres, who cannot enter the test's private work dir.
const replicaDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-replica-"));

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}
const portOf = (d) => Number(/\(port (\d+)\)/.exec(d.log())[1]);

// The tools/call requests a daemon answered (its /metrics), or -1 when it
// does not answer.
async function callsAt(d) {
  try {
    const m = await (await fetch(`http://127.0.0.1:${portOf(d)}/metrics`)).text();
    return Number(/parley_requests_total\{method="tools\/call"\} (\d+)/.exec(m)?.[1] ?? 0);
  } catch {
    return -1;
  }
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  psql("SELECT 1"); // the database answers
  emu = spawn(process.execPath, [path.join(here, "..", "harness", "xrpc_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const line = await new Promise((resolve) => readline.createInterface({ input: emu.stdout }).once("line", resolve));
  const xrpc = `http://127.0.0.1:${JSON.parse(line).port}`;
  const dataDir = path.join(work, "data");
  // The third daemon reads through a streaming replica of the primary.
  execFileSync(path.join(here, "..", "harness", "pg_replica.sh"), ["start", pgDir, replicaDir], { stdio: ["ignore", "ignore", "inherit"] });
  const replica = `host=${replicaDir} port=5432 user=parley dbname=${db}`;
  // One after another: the first creates the schema and the key files.
  for (let i = 0; i < 3; i++)
    daemons.push(await startDaemon(["--db", conn, "--data-dir", dataDir, "--bluesky-service", xrpc,
      "--toolsets", "conformance,inline,bluesky", "--listen", "http://127.0.0.1:0/mcp",
      ...(i === 2 ? ["--db-ro", replica] : [])]));
  const [p1, p2] = [await freePort(), await freePort()];
  const servers = daemons.map((d, i) => `  server d${i} 127.0.0.1:${portOf(d)} check inter 300ms fall 1 rise 2`).join("\n");
  const cfg = `global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  retries 3
  option redispatch
  option httpchk GET /healthz
frontend modern
  bind 127.0.0.1:${p1}
  default_backend daemons
frontend legacy
  bind 127.0.0.1:${p2}
  default_backend sticky
backend daemons
  balance roundrobin
${servers}
backend sticky
  balance roundrobin
  stick-table type string len 64 size 10k expire 30m
  stick match req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
${servers}
`;
  const cfgPath = path.join(work, "haproxy.cfg");
  fs.writeFileSync(cfgPath, cfg);
  haproxy = spawn("haproxy", ["-db", "-f", cfgPath], { stdio: ["ignore", "inherit", "inherit"] });
  lb = `http://127.0.0.1:${p1}/mcp`;
  lbSticky = `http://127.0.0.1:${p2}/mcp`;
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${p1}/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 100) throw new Error("haproxy did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  psql("INSERT INTO chats (id, kind, title) VALUES (5151, 'group', 'Cluster')");
});

after(async () => {
  haproxy?.kill();
  for (const d of daemons) if (d.child.exitCode === null && d.child.signalCode === null) assert.equal(await d.stop(), 0);
  emu?.kill();
  execFileSync(path.join(here, "..", "harness", "pg_replica.sh"), ["destroy", replicaDir]);
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("one address, three daemons: every answer right, whichever daemon gives it, one killed mid-run", async () => {
  const client = new Client({ name: "v2-behind-haproxy", version: "1.0.0" }, { ...PIN, capabilities: { elicitation: { form: {}, url: {} } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(lb)));
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (let i = 0; i < 2; i++) assert.deepEqual((await client.listTools()).tools.map((t) => t.name), names);
    const before = await Promise.all(daemons.map(callsAt));
    for (let i = 0; i < 6; i++)
      assert.equal(textOf(await client.callTool({ name: "test_simple_text", arguments: {} })), "This is a simple text response for testing.");
    const spread = (await Promise.all(daemons.map(callsAt))).map((n, i) => n - before[i]);
    assert.ok(spread.every((n) => n >= 1), `every daemon answered calls: ${spread}`);

    // Multi round-trip requests whose rounds land on different daemons.
    client.setRequestHandler("elicitation/create", async (req) => {
      const props = Object.keys(req.params.requestedSchema?.properties ?? {});
      if (props.includes("color")) return { action: "accept", content: { color: "blue" } };
      if (props.includes("name")) return { action: "accept", content: { name: "Alice" } };
      if (props.includes("handle")) return { action: "accept", content: { handle: "alice.test" } };
      // the Bluesky password page (URL mode): the user types it there
      const post = await fetch(req.params.url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `secret=${encodeURIComponent(PASSWORD)}`,
      });
      assert.equal(post.status, 200);
      return { action: "accept" };
    });
    const mr = await client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
    assert.equal(textOf(mr), "Multi-round complete for Alice who likes blue");
    const login = await client.callTool({ name: "login", arguments: {} });
    assert.equal(login.isError ?? false, false, textOf(login));
    assert.match(textOf(login), /Logged in to Bluesky as @alice\.test/);
    // The session is in the store: any daemon serves the account.
    for (let i = 0; i < 3; i++) {
      const p = await client.callTool({ name: "profile", arguments: { handle: "alice.test" } });
      assert.equal(p.isError ?? false, false, textOf(p));
      assert.match(textOf(p), /Alice Example/);
    }

    // A listen through the balancer hears a write.
    const heard = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => heard.push(n.params.uri));
    const sub = await client.listen({ resourceSubscriptions: ["inline://chat/5151"] });
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (5151, 1, now(), 'one')");
    for (let i = 0; i < 200 && !heard.includes("inline://chat/5151"); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(heard.includes("inline://chat/5151"), "the listener heard the write");
    await sub.close();

    // SIGKILL one daemon; HAProxy sends the next requests to the others.
    const victim = daemons[1];
    victim.child.kill("SIGKILL");
    await new Promise((r) => victim.child.once("exit", r));
    for (let i = 0; i < 9; i++)
      assert.equal(textOf(await client.callTool({ name: "test_simple_text", arguments: {} })), "This is a simple text response for testing.");
    const mr2 = await client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
    assert.equal(textOf(mr2), "Multi-round complete for Alice who likes blue");
    assert.equal(await callsAt(victim), -1);
  } finally {
    await client.close();
  }
});

test("a 2025-11-25 session behind the sticky frontend stays on its daemon", async () => {
  const client = new ClientV1({ name: "v1-sticky", version: "1.0.0" }, { capabilities: {} });
  const t = new HttpV1(new URL(lbSticky));
  await client.connect(t);
  try {
    assert.ok(t.sessionId);
    for (let i = 0; i < 6; i++)
      assert.equal(textOf(await client.callTool({ name: "test_simple_text", arguments: {} })), "This is a simple text response for testing.");
    assert.ok((await client.listTools()).tools.length > 0);
  } finally {
    await client.close();
  }
});

test("through a streaming replica: another writer's message is found once replayed, with the lag", async () => {
  const viaReplica = daemons[2];
  const client = new Client({ name: "v2-replica-reader", version: "1.0.0" }, PIN);
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${portOf(viaReplica)}/mcp`)));
  try {
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (5151, 77, now(), 'read through the replica')");
    let r;
    for (let i = 0; i < 200; i++) {
      r = await client.callTool({ name: "messages_list", arguments: { chatId: 5151, limit: 5 } });
      if (JSON.stringify(r.structuredContent).includes("read through the replica")) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.match(JSON.stringify(r.structuredContent), /read through the replica/);
    const lag = r.structuredContent.replica;
    assert.ok(lag && Number.isInteger(lag.lagMs) && lag.replayedAt, JSON.stringify(r.structuredContent).slice(0, 400));
    assert.match(textOf(r), /"replica"/, "the model reads it too");
    // A daemon on the primary says nothing of a replica.
    const direct = new Client({ name: "v2-primary-reader", version: "1.0.0" }, PIN);
    await direct.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${portOf(daemons[0])}/mcp`)));
    const p = await direct.callTool({ name: "messages_list", arguments: { chatId: 5151, limit: 5 } });
    assert.equal(p.structuredContent.replica, undefined);
    await direct.close();
  } finally {
    await client.close();
  }
});
