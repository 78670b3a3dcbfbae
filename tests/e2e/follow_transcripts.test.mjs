// follow_transcripts: serve --claude-code-dir follows a projects folder as
// Claude Code writes it (a temporary folder here, never the machine's
// own): a transcript there at start, a new session file, appended lines,
// a line written in two parts (stored once complete), a session
// rewritten shorter and one replaced by another file (each read again
// from its start, nothing doubled), a compaction (the latest
// continuation), a restart and a kill -9 (resuming at the offset the
// store keeps), and two daemons on one folder (one follows; the other
// takes over when it is killed). Each change must be found within 5 s;
// the rescan is 60 s, so the kernel's events are what find them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startDaemon, tmpdir } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_follow_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-follow-");
const projects = path.join(work, "projects");
const proj = path.join(projects, "-home-dev-followed");
const LIMIT = 5000;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
const count = (word) => Number(psql(`SELECT count(*) FROM messages WHERE text LIKE '%${word}%'`));

let seq = 0;
function line(sid, text, extra = {}) {
  seq++;
  return JSON.stringify({
    type: "user", sessionId: sid, uuid: `u-${sid}-${seq}`, cwd: "/home/dev/followed",
    timestamp: new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString(),
    message: { role: "user", content: text }, ...extra,
  }) + "\n";
}

async function until(what, pred, limit = LIMIT) {
  const t0 = Date.now();
  for (;;) {
    if (await pred()) return Date.now() - t0;
    if (Date.now() - t0 > limit) assert.fail(`${what}: not within ${limit} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const codex = path.join(work, "codex-sessions");
const serveArgs = () => ["--db", url, "--data-dir", path.join(work, "data"), "--claude-code-dir", projects,
  "--codex-dir", codex, "--transcripts-rescan-s", "60", "--listen", "http://127.0.0.1:0/mcp"];

// A tool's structured answer from the daemon now serving (the default
// selection: recall and the memory tools, as an agent would call them).
async function tool(name, args) {
  const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1];
  const client = new Client({ name: "follow", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  try {
    return (await client.callTool({ name, arguments: args })).structuredContent;
  } finally {
    await client.close();
  }
}
let daemon;

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  fs.mkdirSync(proj, { recursive: true });
  fs.mkdirSync(codex, { recursive: true });
  fs.writeFileSync(path.join(proj, "s-start.jsonl"), line("s-start", "present at start walrus"));
  daemon = await startDaemon(serveArgs());
});

after(async () => {
  if (process.env.PARLEY_TEST_KEEP === "1") fs.writeFileSync(path.join(work, "daemon.log"), daemon?.log() ?? "");
  await daemon?.stop();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("a transcript present at start, a new file, appended lines and a line completed later", async () => {
  await until("the transcript present at start", () => count("walrus") === 1);
  // As an agent finds it: recall over the default selection (on a fresh
  // store the daemon is still bringing in the word forms at first:
  // "formsPending", docs/search.md).
  let hits = [];
  await until("recall finds it", async () => (hits = (await tool("recall", { query: "walrus" })).hits).length === 1);
  assert.equal(hits[0].source, "agents");
  const f = path.join(proj, "s-new.jsonl");
  fs.writeFileSync(f, line("s-new", "a new session narwhal"));
  await until("a new session file", () => count("narwhal") === 1);
  fs.appendFileSync(f, line("s-new", "appended one okapi") + line("s-new", "appended two okapi"));
  await until("two appended lines", () => count("okapi") === 2);
  // A line written in two parts: nothing of it until its newline.
  const whole = line("s-new", "written in two parts quokka");
  fs.appendFileSync(f, whole.slice(0, 40));
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(count("quokka"), 0, "half a line is not read");
  fs.appendFileSync(f, whole.slice(40));
  await until("the line once complete", () => count("quokka") === 1);
  // A new project folder is watched too.
  const other = path.join(projects, "-home-dev-other");
  fs.mkdirSync(other);
  await new Promise((r) => setTimeout(r, 300));
  fs.writeFileSync(path.join(other, "s-other.jsonl"), line("s-other", "another project tapir"));
  await until("a session in a new project folder", () => count("tapir") === 1);
});

test("codex: a rollout written into a new date folder is found, the user's words once", async () => {
  const rec = (type, payload) => JSON.stringify({ timestamp: "2026-03-01T09:00:00.000Z", type, payload }) + "\n";
  const id = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";
  const day = path.join(codex, "2026", "03", "01");
  fs.mkdirSync(day, { recursive: true });
  fs.writeFileSync(path.join(day, `rollout-2026-03-01T09-00-00-${id}.jsonl`),
    rec("session_meta", { id, timestamp: "2026-03-01T09:00:00.000Z", cwd: "/home/dev/atlas", originator: "codex_cli_rs",
      cli_version: "0.46.0" }) +
    rec("response_item", { type: "message", role: "user", content: [{ type: "input_text", text: "follow the ledger binturong" }] }) +
    rec("event_msg", { type: "user_message", message: "follow the ledger binturong", images: [] }));
  await until("the Codex rollout", () => count("binturong") === 1);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(count("binturong"), 1, "the words repeated by event_msg are one message");
});

test("a session rewritten shorter, and one replaced by another file, are read again; nothing doubles", async () => {
  const f = path.join(proj, "s-rewrite.jsonl");
  fs.writeFileSync(f, line("s-rw", "first gecko") + line("s-rw", "second gecko") + line("s-rw", "third gecko"));
  await until("the session", () => count("gecko") === 3);
  const iguana = line("s-rw", "only iguana");
  fs.writeFileSync(f, iguana);
  await until("the session rewritten shorter", () => count("iguana") === 1);
  assert.equal(count("gecko"), 3, "what was stored stays, once");
  // Replaced: a longer file renamed over it (another inode), whose byte
  // at the old offset ends a line too (its first line is the same).
  const longer = iguana + line("s-rw", "replaced axolotl");
  fs.writeFileSync(f + ".tmp", longer);
  fs.renameSync(f + ".tmp", f);
  await until("the replaced file", () => count("axolotl") === 1);
  assert.equal(count("iguana"), 1, "read again from its start, nothing doubled");
});

test("a compaction is the latest continuation as soon as it is written", async () => {
  const f = path.join(proj, "s-compact.jsonl");
  fs.writeFileSync(f, line("s-compact", "before the compaction"));
  await until("the session", () => count("before the compaction") === 1);
  fs.appendFileSync(f, JSON.stringify({ type: "system", subtype: "compact_boundary", sessionId: "s-compact",
    uuid: "u-boundary", timestamp: new Date(Date.UTC(2026, 0, 2)).toISOString(), content: "Conversation compacted",
    compactMetadata: { trigger: "auto", preTokens: 150000 } }) + "\n" +
    line("s-compact", "Summary: the follower is done; next the codex importer pangolin", { isCompactSummary: true }));
  await until("the continuation", () =>
    psql("SELECT parley_memory_latest_continuation('{}', '{}') ->> 'content'").includes("pangolin"));
  // As the agent's bootstrap sees it.
  const boot = await tool("memory_bootstrap", { token_budget: 2000 });
  assert.match(JSON.stringify(boot.continuation), /pangolin/);
});

test("a restart and a kill -9 resume at the offset the store keeps", async () => {
  const f = path.join(proj, "s-restart.jsonl");
  fs.writeFileSync(f, line("s-rs", "before the stop lemur"));
  await until("the session", () => count("lemur") === 1);
  assert.equal(await daemon.stop(), 0);
  fs.appendFileSync(f, line("s-rs", "while stopped lemur"));
  daemon = await startDaemon(serveArgs());
  await until("the line written while stopped", () => count("lemur") === 2);
  daemon.child.kill("SIGKILL");
  await new Promise((r) => daemon.child.once("exit", r));
  fs.appendFileSync(f, line("s-rs", "after the kill lemur"));
  daemon = await startDaemon(serveArgs());
  await until("the line written after the kill", () => count("lemur") === 3);
  assert.equal(count("before the stop lemur"), 1);
});

test("two daemons on one folder: one follows, the other takes over when it is killed", async () => {
  const second = await startDaemon(serveArgs());
  try {
    await until("the second daemon waiting", () => /another daemon follows it/.test(second.log()), 10000);
    daemon.child.kill("SIGKILL");
    await new Promise((r) => daemon.child.once("exit", r));
    daemon = null;
    fs.writeFileSync(path.join(proj, "s-takeover.jsonl"), line("s-to", "after the takeover civet"));
    await until("the line, by the daemon that took over", () => count("civet") === 1, 10000);
  } finally {
    daemon = second;
  }
});
