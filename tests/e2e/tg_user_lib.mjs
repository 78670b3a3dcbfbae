// Helpers for the Telegram user-account tests: a scripted account of the
// fake libtdjson (tests/support/fake_tdjson*.c) with a database and a data
// directory of its own, `parleyd login telegram`, a daemon serving it and
// MCP clients of it over Streamable HTTP (with the capabilities a test
// declares), tool calls that must succeed or fail, and updates dropped
// into the fake's inbox.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PARLEYD, psqlAt, startDaemon, textOf, tmpdir } from "./lib.mjs";

export const FAKE = process.env.FAKE_TDJSON;
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const made = [];

export function haveFake() {
  assert.ok(FAKE && fs.existsSync(FAKE), "FAKE_TDJSON names the fake libtdjson");
}

// An account of the fake: script (merged over a default, with its inbox
// directory set), a data directory and a new database, or the database
// `db` names (another account's, then left to that account to drop).
// Returns {data, inbox, db, psql, env, settings, phone, script}.
export function tgAccount(script, { apiHash = "test-api-hash", db } = {}) {
  const dir = tmpdir("parley-tguser-");
  const inbox = tmpdir("parley-tdinbox-");
  const file = path.join(dir, "account.json");
  const full = { inbox, ...script };
  fs.writeFileSync(file, JSON.stringify(full));
  if (!db) {
    db = `e2e_tguser_${process.pid}_${made.length}`;
    psqlAt(pgDir, "postgres", `CREATE DATABASE ${db}`);
    made.push(db);
  }
  const data = path.join(dir, "data");
  return {
    data, inbox, db, script: full, phone: full.phone,
    psql: (sql) => psqlAt(pgDir, db, sql),
    env: { FAKE_TDJSON_SCRIPT: file },
    settings: ["--db", `host=${pgDir} port=5432 user=parley dbname=${db}`, "--data-dir", data,
      "--telegram-tdjson", FAKE, "--telegram-api-id", "12345", "--telegram-api-hash", apiHash],
    // Rewrites the fake's script as a.script with changes over it (none:
    // back to a.script); the fake reads it when a daemon starts.
    rescript(changes = {}) {
      fs.writeFileSync(file, JSON.stringify({ ...full, ...changes }));
    },
  };
}

// Drops the databases the accounts made (call from after()).
export function dropAccounts() {
  for (const db of made.splice(0)) psqlAt(pgDir, "postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
}

// parleyd login telegram for account a with input on stdin; {code, out, err}.
export async function tgLogin(a, input, extra = []) {
  const child = spawn(PARLEYD, ["login", "telegram", "--phone", a.phone, ...a.settings, ...extra], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...a.env },
  });
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.stdin.end(input);
  const [code] = await once(child, "exit");
  return { code, out, err };
}

// A daemon serving account a (telegram toolset; extra: more flags), with
// d.port and d.url (its MCP endpoint).
export async function tgDaemon(a, extra = []) {
  const d = await startDaemon([...a.settings, "--listen", "http://127.0.0.1:0/mcp", "--toolsets", "telegram", ...extra], a.env);
  d.port = /\(port (\d+)\)/.exec(d.log())[1];
  d.url = `http://127.0.0.1:${d.port}/mcp`;
  return d;
}

// An MCP client of daemon d over Streamable HTTP, declaring capabilities
// (elicitation, say).
export async function tgClient(d, capabilities = {}) {
  const c = new Client({ name: "tg-user", version: "1" }, { capabilities });
  await c.connect(new StreamableHTTPClientTransport(new URL(d.url)));
  return c;
}

// A daemon serving account a and a client of it: {d, c, port}.
export async function tgServe(a, extra = [], { capabilities } = {}) {
  const d = await tgDaemon(a, extra);
  return { d, c: await tgClient(d, capabilities), port: d.port };
}

// A tool call that must succeed: its structuredContent.
export async function call(c, name, args = {}) {
  const r = await c.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${textOf(r)}`);
  return r.structuredContent;
}

// A tool call that must fail (isError): its text, which says why.
export async function refused(c, name, args = {}) {
  const r = await c.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} should fail: ${textOf(r)}`);
  return textOf(r);
}

// Polls fn until it returns something truthy (returned), or fails after ms.
export async function until(what, fn, ms = 60000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Drops updates into the fake's inbox (written aside, renamed in).
export function deliver(a, updates) {
  const tmp = path.join(a.inbox, `.u${Date.now()}${Math.random()}`);
  fs.writeFileSync(tmp, JSON.stringify(updates));
  fs.renameSync(tmp, path.join(a.inbox, `u${Date.now()}${Math.random()}.json`));
}

export const tdText = (t) => ({ "@type": "messageText", text: { "@type": "formattedText", text: t, entities: [] } });

// A TDLib message of chat with server id sid, sent by user from.
export const tdMsg = (chat, sid, text, from, extra = {}) => ({
  "@type": "message", id: sid * 1048576, chat_id: chat, date: 1800000000 + sid,
  sender_id: { "@type": "messageSenderUser", user_id: from }, is_outgoing: false, edit_date: 0,
  reply_to: null, message_thread_id: 0, content: tdText(text), ...extra,
});
