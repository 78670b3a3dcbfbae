// The agent's surface (docs/tools.md): on a store holding every source
// (a Telegram export, ChatWise chats, Claude Code transcripts: the demo
// archive) with a Bluesky service configured, the default selection —
// stdio with no --toolsets, HTTP at the endpoint's own path — lists at
// most 25 tools in at most 20,000 characters, recall among them, at most
// two named for searching, no two names alike but for case or separators,
// exactly the table of docs/tools.md; recall's hits name calls the
// default serves, and they open the hit. Each toolset is whole by name
// (--toolsets) and by URL (/mcp/telegram, /mcp/telegram,memory) in both
// revisions, as docs/tools.md lists it; /mcp/nosuch is 404; a token's
// toolsets still bound a URL's selection; a tool the default leaves out
// says where it is served.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PARLEYD, startDaemon, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_surface_${process.pid}`;
const dburl = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-surface-");
const dataDir = path.join(work, "data");
// A Bluesky service that is configured (so its toolset is served) but
// never reached: listing tools does not call it.
const BSKY = ["--bluesky-service", "http://127.0.0.1:9"];
const TOKENS = { memory: "tok-memory-0123456789abcdef", all: "tok-all-0123456789abcdef" };
let daemon, base;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

// docs/tools.md: the default's names, and each toolset's names.
function documented() {
  const text = fs.readFileSync(path.join(root, "docs", "tools.md"), "utf8");
  const out = { default: [], toolsets: {} };
  let section = null;
  for (const line of text.split("\n")) {
    if (line === "## The default") section = out.default;
    else if (line.startsWith("### ")) section = out.toolsets[line.slice(4).trim()] = [];
    else if (line.startsWith("## ")) section = null;
    const m = /^\| `([^`]+)` \|/.exec(line);
    if (m && section) section.push(m[1]);
  }
  return out;
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

async function stdioTools(extra) {
  const { client } = await stdioClient(["--db", dburl, "--data-dir", dataDir, ...BSKY, ...extra]);
  try {
    return await listAll(client);
  } finally {
    await client.close();
  }
}

async function httpClient(p, revision, token) {
  const opts = token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : undefined;
  if (revision === "2026-07-28") {
    const c = new Client({ name: "surface", version: "1" }, { versionNegotiation: { mode: { pin: revision } } });
    await c.connect(new StreamableHTTPClientTransport(new URL(base + p), opts));
    return c;
  }
  const c = new ClientV1({ name: "surface", version: "1" }, { capabilities: {} });
  await c.connect(new HttpV1(new URL(base + p), opts));
  return c;
}

const names = (tools) => tools.map((t) => t.name).sort();
const norm = (n) => n.toLowerCase().replace(/[-_.]/g, "");

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  const demo = path.join(work, "demo");
  execFileSync("node", [path.join(root, "tools", "demo_archive.mjs"), demo], { stdio: "ignore" });
  for (const [source, p] of [["telegram-export", demo], ["chatwise", path.join(demo, "chatwise", "app.db")],
    ["claude-code", path.join(demo, "agents")]]) {
    const r = spawnSync(PARLEYD, ["import", source, p, "--db", dburl, "--data-dir", dataDir], { encoding: "utf8" });
    assert.equal(r.status, 0, `${source}: ${r.stderr}`);
  }
  const file = path.join(work, "tokens");
  fs.writeFileSync(file, `${TOKENS.all}\n${TOKENS.memory} toolsets=memory,recall\n`, { mode: 0o600 });
  daemon = await startDaemon(["--db", dburl, "--data-dir", dataDir, ...BSKY, "--listen", "http://127.0.0.1:0/mcp",
    "--token-file", file]);
  base = `http://127.0.0.1:${/\(port (\d+)\)/.exec(daemon.log())[1]}`;
});

after(async () => {
  assert.equal(await daemon?.stop(), 0);
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("the default over stdio: at most 25 tools in 20,000 characters, one search, as docs/tools.md says", async () => {
  const tools = await stdioTools([]);
  const chars = JSON.stringify(tools).length;
  assert.ok(tools.length <= 25, `${tools.length} tools`);
  assert.ok(chars <= 20000, `${chars} characters`);
  assert.ok(tools.some((t) => t.name === "recall"));
  const searching = tools.filter((t) => /search/i.test(t.name) || t.name === "recall").map((t) => t.name);
  assert.ok(searching.length <= 2, `named for searching: ${searching}`);
  const seen = new Map();
  for (const t of tools) {
    assert.ok(!seen.has(norm(t.name)), `${t.name} and ${seen.get(norm(t.name))} differ only by case or separators`);
    seen.set(norm(t.name), t.name);
  }
  assert.deepEqual(names(tools), [...documented().default].sort(), "docs/tools.md's default table");
  // Every default tool says when to use it rather than recall, in a line or two.
  for (const t of tools) assert.ok(t.description.length <= 300, `${t.name}: ${t.description.length} characters`);
});

test("the default's recall hits name calls it serves, and those open them", async () => {
  const { client } = await stdioClient(["--db", dburl, "--data-dir", dataDir, ...BSKY]);
  try {
    const listed = new Set(names(await listAll(client)));
    const r = await client.callTool({ name: "recall", arguments: { query: "Lisbon", limit: 30 } });
    assert.ok(!r.isError, textOf(r));
    const hits = r.structuredContent.hits;
    const sources = new Set(hits.map((h) => h.source));
    for (const s of ["telegram", "chatwise", "agents"]) assert.ok(sources.has(s), `a ${s} hit for Lisbon`);
    for (const s of ["telegram", "chatwise", "agents"]) {
      const h = hits.find((x) => x.source === s && x.next);
      assert.ok(h, `a ${s} hit with a next call`);
      assert.ok(listed.has(h.next.tool), `${s}: next ${h.next.tool} is listed`);
      const opened = await client.callTool({ name: h.next.tool, arguments: h.next.arguments });
      assert.ok(!opened.isError, `${h.next.tool}: ${textOf(opened)}`);
    }
    // A tool of a served toolset that the default leaves out says where it is.
    const out = await client.callTool({ name: "messagesSearch", arguments: { query: "Lisbon" } }).catch((e) => e);
    assert.match(String(out.message ?? textOf(out)), /not in the default selection.*telegram/);
    // A default tool answers under its toolset's names too (hints in answers use them).
    const byOwnName = await client.callTool({ name: "messages_unread", arguments: {} });
    assert.ok(!byOwnName.isError, textOf(byOwnName));
  } finally {
    await client.close();
  }
});

test("every toolset whole by name, as docs/tools.md lists it", async () => {
  const doc = documented().toolsets;
  for (const ts of ["recall", "telegram", "inline", "memory", "chatwise", "bluesky"]) {
    const tools = await stdioTools(["--toolsets", ts]);
    assert.deepEqual(names(tools), [...doc[ts]].sort(), `${ts}: docs/tools.md`);
  }
  const all = await stdioTools(["--toolsets", "all"]);
  assert.equal(all.length, Object.values(doc).flat().length);
});

for (const revision of ["2025-11-25", "2026-07-28"]) {
  test(`HTTP ${revision}: /mcp serves the default, /mcp/telegram and /mcp/telegram,memory their toolsets whole`, async () => {
    const doc = documented();
    const check = async (p, want, token = TOKENS.all) => {
      const c = await httpClient(p, revision, token);
      try {
        assert.deepEqual(names(await listAll(c)), [...want].sort(), p);
      } finally {
        await c.close();
      }
    };
    await check("/mcp", doc.default);
    await check("/mcp/telegram", doc.toolsets.telegram);
    await check("/mcp/telegram,memory", [...doc.toolsets.telegram, ...doc.toolsets.memory]);
    // A token still bounds what a path selects: memory and recall only.
    await check("/mcp/telegram,memory", doc.toolsets.memory, TOKENS.memory);
    await check("/mcp", ["recall", "recall_timeline", "memory_bootstrap", "memory_open"], TOKENS.memory);
    // An unknown toolset is 404, naming what is served.
    const r = await fetch(`${base}/mcp/nosuch`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKENS.all}`, "content-type": "application/json",
        accept: "application/json, text/event-stream", "mcp-protocol-version": revision },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    assert.equal(r.status, 404);
    assert.match(await r.text(), /no toolset 'nosuch'.*telegram/);
  });
}
