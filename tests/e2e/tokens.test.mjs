// Bearer tokens bound every method, not only tools: a daemon serving the
// inline, memory and conformance toolsets over HTTP, four tokens (all
// toolsets; memory alone; conformance read-only; inline alone), and every
// MCP method that lists, reads, watches or completes something asked with
// each of them through the official SDK client. A token never sees or
// reaches what another toolset offers: a memory-only token cannot read a
// chat by any method.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { once } from "node:events";
import net from "node:net";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as Client2026, StreamableHTTPClientTransport as Http2026 } from "@modelcontextprotocol/client";
import { startDaemon, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_tokens_${process.pid}`;
const dburl = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-tokens-");
let daemon;
let url;

const TOKENS = {
  all: "all-toolsets-token-0123456789",
  memory: "memory-only-token-0123456789",
  confRo: "conformance-ro-token-0123456789",
  inline: "inline-only-token-0123456789",
};

function psql(sql, dbname) {
  execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql]);
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  execFileSync("node", [path.join(here, "..", "harness", "gen_tg_export.mjs"), "inline", path.join(work, "export")]);
  execFileSync(PARLEYD_BIN(), ["import", "telegram-export", path.join(work, "export"), "--db", dburl, "--data-dir", path.join(work, "data")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const file = path.join(work, "tokens");
  fs.writeFileSync(
    file,
    `${TOKENS.all}\n${TOKENS.memory} toolsets=memory\n${TOKENS.confRo} toolsets=conformance read_only\n` +
      `${TOKENS.inline} toolsets=inline\n`,
    { mode: 0o600 },
  );
  daemon = await startDaemon([
    "--db", dburl,
    "--data-dir", path.join(work, "data"),
    "--toolsets", "inline,memory,conformance",
    "--listen", "http://127.0.0.1:0/mcp",
    "--token-file", file,
  ]);
  const port = /\(port (\d+)\)/.exec(daemon.log())[1];
  url = `http://127.0.0.1:${port}/mcp`;
});

after(async () => {
  assert.equal(await daemon?.stop(), 0);
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

function PARLEYD_BIN() {
  return process.env.PARLEYD;
}

async function connect(token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "tokens-e2e", version: "1" });
  await client.connect(transport);
  return client;
}

const reached = (r) => (Array.isArray(r.content) ? "reached" : "no content");

// What each method shows or answers for a client: a summary to compare,
// or the JSON-RPC error code it got.
const PROBES = {
  "tools/list": async (c) => (await c.listTools()).tools.map((t) => t.name),
  // A tool answers ("reached", its result or its isError guidance) or is
  // unknown to the token (-32602).
  "tools/call inline": async (c) => reached(await c.callTool({ name: "conversations_list", arguments: { limit: 1 } })),
  "tools/call memory": async (c) => reached(await c.callTool({ name: "get_era_summary", arguments: {} })),
  "tools/call conformance": async (c) => reached(await c.callTool({ name: "test_simple_text", arguments: {} })),
  "tools/call writing": async (c) => reached(await c.callTool({ name: "messages_send", arguments: { chatId: 2001, text: "hi" } })),
  "resources/list": async (c) => (await c.listResources()).resources.map((r) => r.uri),
  "resources/templates/list": async (c) => (await c.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate),
  "resources/read chat": async (c) => (await c.readResource({ uri: "inline://chat/2001" })).contents.length,
  "resources/read message": async (c) =>
    JSON.parse((await c.readResource({ uri: "inline://chat/2001/message/4" })).contents[0].text).text,
  "resources/read test": async (c) => (await c.readResource({ uri: "test://static-text" })).contents.length,
  "resources/subscribe chat": async (c) => Object.keys(await c.subscribeResource({ uri: "inline://chat/2001" })).length,
  "prompts/list": async (c) => (await c.listPrompts()).prompts.map((p) => p.name).sort(),
  "prompts/get memory": async (c) => (await c.getPrompt({ name: "bootstrap" })).messages.length > 0,
  "prompts/get conformance": async (c) => (await c.getPrompt({ name: "test_simple_prompt" })).messages.length > 0,
  "completion/complete prompt": async (c) =>
    (await c.complete({ ref: { type: "ref/prompt", name: "test_prompt_with_arguments" }, argument: { name: "arg1", value: "x" } }))
      .completion.values.length,
  "completion/complete resource": async (c) =>
    (await c.complete({ ref: { type: "ref/resource", uri: "inline://chat/{chatId}" }, argument: { name: "chatId", value: "2" } }))
      .completion.values.length,
};

async function probe(c, name) {
  try {
    return await PROBES[name](c);
  } catch (e) {
    if (typeof e.code === "number") return { error: e.code };
    throw e;
  }
}

test("token x method: each token sees and reaches only its own toolsets", async () => {
  const seen = {};
  for (const [who, token] of Object.entries(TOKENS)) {
    const c = await connect(token);
    seen[who] = {};
    for (const name of Object.keys(PROBES)) seen[who][name] = await probe(c, name);
    await c.close();
  }
  const has = (who, name) => !(seen[who][name] && typeof seen[who][name] === "object" && "error" in seen[who][name]);
  // Everything is there for the token of every toolset.
  for (const name of Object.keys(PROBES)) assert.ok(has("all", name), `all: ${name} ${JSON.stringify(seen.all[name])}`);
  assert.equal(seen.all["resources/read message"], "yes, see you Friday at noon");
  const allTools = seen.all["tools/list"];
  assert.ok(allTools.includes("conversations_list") && allTools.includes("get_era_summary") && allTools.includes("test_simple_text"));

  // memory alone: no chat by any method.
  const m = seen.memory;
  assert.ok(m["tools/list"].includes("get_era_summary") && !m["tools/list"].includes("conversations_list"));
  assert.equal(m["tools/call memory"], "reached");
  assert.deepEqual(m["tools/call writing"], { error: -32602 });
  assert.deepEqual(m["tools/call conformance"], { error: -32602 });
  assert.deepEqual(m["tools/call inline"], { error: -32602 });
  assert.deepEqual(m["resources/list"], []);
  assert.deepEqual(m["resources/templates/list"], []);
  for (const r of ["resources/read chat", "resources/read message", "resources/read test", "resources/subscribe chat"])
    assert.deepEqual(m[r], { error: -32002 }, r);
  assert.deepEqual(m["prompts/list"], ["bootstrap"]);
  assert.equal(m["prompts/get memory"], true);
  assert.deepEqual(m["prompts/get conformance"], { error: -32602 });
  assert.deepEqual(m["completion/complete prompt"], { error: -32602 });
  assert.deepEqual(m["completion/complete resource"], { error: -32002 });

  // conformance read-only: its reads, prompts and completions; no writing
  // tool; nothing of inline or memory.
  const r = seen.confRo;
  assert.ok(!r["tools/list"].includes("conversations_list") && !r["tools/list"].includes("get_era_summary"));
  assert.equal(r["tools/call conformance"], "reached");
  assert.deepEqual(r["tools/call writing"], { error: -32602 });
  assert.deepEqual(r["tools/call inline"], { error: -32602 });
  assert.ok(r["resources/list"].every((u) => u.startsWith("test://")) && r["resources/list"].length > 0);
  assert.ok(r["resources/templates/list"].every((u) => u.startsWith("test://")));
  assert.equal(r["resources/read test"], 1);
  assert.deepEqual(r["resources/read chat"], { error: -32002 });
  assert.deepEqual(r["resources/subscribe chat"], { error: -32002 });
  assert.ok(!r["prompts/list"].includes("bootstrap") && r["prompts/list"].includes("test_simple_prompt"));
  assert.deepEqual(r["prompts/get memory"], { error: -32602 });
  assert.equal(r["prompts/get conformance"], true);
  assert.equal(r["completion/complete prompt"], 0);
  assert.deepEqual(r["completion/complete resource"], { error: -32002 });

  // inline alone: its chats, no prompt of another toolset.
  const i = seen.inline;
  assert.equal(i["resources/read message"], "yes, see you Friday at noon");
  assert.equal(i["tools/call writing"], "reached"); // it says what it needs
  assert.equal(i["resources/subscribe chat"], 0);
  assert.deepEqual(i["resources/read test"], { error: -32002 });
  assert.deepEqual(i["prompts/list"], []);
  assert.deepEqual(i["prompts/get memory"], { error: -32602 });
  assert.deepEqual(i["tools/call memory"], { error: -32602 });
  assert.equal(i["completion/complete resource"], 0);
  assert.deepEqual(i["completion/complete prompt"], { error: -32602 });
});

// A watch is bound by what the token may read, per chat's source: the
// inline toolset reads a message service's chats only, so an inline-only
// token that asks to watch a ChatWise chat or an agent session by its
// inline:// URI is told "not found" (resources/subscribe, as
// resources/read says) or not honoured (subscriptions/listen), and hears
// nothing of writes there; a Telegram chat is watched as before.
test("an inline-only token watches no chat of another source, in both revisions", async () => {
  psql("INSERT INTO chats (id, kind, title) VALUES (990001, 'ai_chat', 'A ChatWise chat'), " +
    "(990002, 'agent_session', 'An agent session') ON CONFLICT DO NOTHING", db);
  const foreign = ["inline://chat/990001", "inline://chat/990002", "inline://chat/990001/message/1"];
  const own = "inline://chat/2001";
  const wait = async (cond, what) => {
    for (const deadline = Date.now() + 10000; !cond(); await new Promise((r) => setTimeout(r, 25)))
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  };

  // 2025-11-25: resources/subscribe is refused with resources/read's error.
  const v1 = await connect(TOKENS.inline);
  const heardV1 = [];
  v1.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => heardV1.push(n.params.uri));
  for (const uri of foreign) {
    await assert.rejects(v1.readResource({ uri }), (e) => e.code === -32002, `read ${uri}`);
    await assert.rejects(v1.subscribeResource({ uri }), (e) => e.code === -32002, `subscribe ${uri}`);
  }
  await v1.subscribeResource({ uri: own });

  // 2026-07-28: subscriptions/listen honours only the Telegram chat.
  const v2 = new Client2026({ name: "tokens-listen", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await v2.connect(new Http2026(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKENS.inline}` } } }));
  const heardV2 = [];
  v2.setNotificationHandler("notifications/resources/updated", (n) => heardV2.push(n.params.uri));
  const sub = await v2.listen({ resourceSubscriptions: [...foreign, own] });
  assert.deepEqual(sub.honoredFilter, { resourceSubscriptions: [own] });
  // A listen of foreign chats alone honours nothing.
  const none = await v2.listen({ resourceSubscriptions: foreign });
  assert.deepEqual(none.honoredFilter, {});
  try {
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (990001, 1, now(), 'chatwise'), " +
      "(990002, 1, now(), 'agent')", db);
    psql("INSERT INTO messages (chat_id, id, date, text) VALUES (2001, 900001, now(), 'telegram')", db);
    await wait(() => heardV1.includes(own) && heardV2.includes(own), "the Telegram chat's update");
    await new Promise((r) => setTimeout(r, 300));
    for (const uri of foreign) {
      assert.ok(!heardV1.includes(uri), `2025-11-25 heard ${uri}`);
      assert.ok(!heardV2.includes(uri), `2026-07-28 heard ${uri}`);
    }
  } finally {
    await none.close();
    await sub.close();
    await v2.close();
    await v1.close();
  }
});

// With tokens, every endpoint but the owner-only unix: socket needs one. A
// tcp:// endpoint cannot carry one: serve refuses it, naming it, unless
// allow_anonymous does; an http:// endpoint allow_anonymous names answers
// without a token while the others still ask for one.
test("a tcp:// endpoint is refused with tokens unless allow_anonymous names it", async () => {
  const file = path.join(work, "tokens-conformance");
  fs.writeFileSync(file, `${TOKENS.all}\n`, { mode: 0o600 });
  const args = ["--db", dburl, "--data-dir", path.join(work, "data"), "--toolsets", "conformance", "--token-file", file];
  const refused = spawnSync(PARLEYD_BIN(), ["serve", ...args, "--listen", "tcp://127.0.0.1:0,http://127.0.0.1:0/mcp"], {
    encoding: "utf8",
    timeout: 30000, // a daemon that serves instead of refusing is stopped
  });
  assert.equal(refused.status, 2, "a usage error, before any work");
  assert.match(refused.stderr, /tcp:\/\/127\.0\.0\.1:0: with --token-file every endpoint but a unix: socket needs a bearer token/);
  assert.match(refused.stderr, /--allow-anonymous/);
  assert.doesNotMatch(refused.stderr, /ready/);

  const sock = path.join(work, "mcp.sock");
  const d = await startDaemon(
    [...args, "--listen", `unix:${sock},tcp://127.0.0.1:0,http://127.0.0.1:0/mcp,http://127.0.0.1:0/open`],
    { PARLEY_ALLOW_ANONYMOUS: "tcp://127.0.0.1:0, http://127.0.0.1:0/open" },
  );
  try {
    const portOf = (ep) => Number(new RegExp(`${ep.replace(/[/.]/g, "\\$&")} \\(port (\\d+)\\)`).exec(d.log())[1]);
    assert.match(d.log(), /tcp:\/\/127\.0\.0\.1:0: served without a token \(allow_anonymous\)/);
    // The tcp:// endpoint named: a session without a token.
    const tcp = await rawSession({ host: "127.0.0.1", port: portOf("tcp://127.0.0.1:0") });
    assert.ok(tcp.tools.includes("test_simple_text"));
    // The unix: socket: owner-only, no token.
    const unix = await rawSession({ path: sock });
    assert.ok(unix.tools.includes("test_simple_text"));
    // The http:// endpoint named: the SDK client without a token.
    const open = new Client({ name: "tokens-e2e", version: "1" });
    await open.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${portOf("http://127.0.0.1:0/open")}/open`)));
    assert.ok((await open.listTools()).tools.some((t) => t.name === "test_simple_text"));
    await open.close();
    // The other http:// endpoint still asks for one.
    const r = await fetch(`http://127.0.0.1:${portOf("http://127.0.0.1:0/mcp")}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } }),
    });
    assert.equal(r.status, 401);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

// initialize and tools/list over a newline-delimited socket; the tools' names.
async function rawSession(where) {
  const s = net.connect(where);
  await once(s, "connect");
  let buf = "";
  const lines = [];
  s.on("data", (d) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  const answer = async (id) => {
    for (let t = 0; t < 600; t++) {
      const m = lines.find((l) => l.id === id);
      if (m) return m;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no answer to ${id}`);
  };
  s.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) + "\n");
  assert.ok((await answer(1)).result, "initialized");
  s.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  s.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }) + "\n");
  const list = await answer(2);
  s.destroy();
  return { tools: list.result.tools.map((t) => t.name) };
}
