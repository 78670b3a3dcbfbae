// The inline toolset end to end: a whole-account export (generated, dates
// relative to now) imported into a fresh database, parleyd over stdio with
// the official SDK client. The spec's prompts in two calls each, the Dena
// case (the direct chat over a group titled "Dena X Mo"), dotted names,
// unread state after an import and after new messages, bad arguments, and
// the names the importer stores.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, stdioClient, textOf, tmpdir, PROTOCOL } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_inline_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-inline-");
let client;
let chats; // title -> chat id
let servers = []; // local HTTP servers for files_upload
let port;

const PDF = Buffer.from("%PDF-1.4\nparley test\n%%EOF\n");
// One handler on 127.0.0.1 (refused: loopback) and 127.0.0.2 (allowed for the test).
function handler(req, res) {
  if (req.url === "/ok.pdf") return res.end(PDF);
  if (req.url === "/big") return res.end(Buffer.alloc(2 << 20, 7));
  if (req.url === "/slow") { res.writeHead(200); res.write("%PDF-"); return; } // never ends
  if (req.url === "/redirect-ok") { res.writeHead(302, { location: "/ok.pdf" }); return res.end(); }
  if (req.url === "/redirect-creds") { res.writeHead(302, { location: `http://user:pw@127.0.0.2:${port}/ok.pdf` }); return res.end(); }
  if (req.url === "/redirect-local") { res.writeHead(302, { location: `http://127.0.0.1:${port}/ok.pdf` }); return res.end(); }
  res.writeHead(500);
  res.end("no");
}

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

async function call(name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) return { error: textOf(r) };
  assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent, "text and structuredContent agree");
  return r.structuredContent;
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  execFileSync("node", [path.join(here, "..", "harness", "gen_tg_export.mjs"), "inline", path.join(work, "export")]);
  execFileSync(PARLEYD, ["import", "telegram-export", path.join(work, "export"), "--db", url, "--data-dir", path.join(work, "data")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const a = http.createServer(handler);
  await new Promise((r) => a.listen(0, "127.0.0.2", r));
  port = a.address().port;
  const b = http.createServer(handler);
  await new Promise((r) => b.listen(port, "127.0.0.1", r));
  servers = [a, b];
  ({ client } = await stdioClient(["--db", url, "--toolsets", "inline", "--data-dir", path.join(work, "data"),
    "--url-allow-http", "--url-allow-addresses", "127.0.0.2", "--inline-upload-max-mb", "1", "--url-timeout-s", "5"]));
  const all = await call("conversations_list", { limit: 100 });
  chats = Object.fromEntries(all.items.map((c) => [c.title, c.chatId]));
});

after(async () => {
  for (const srv of servers) {
    srv.closeAllConnections?.();
    srv.close();
  }
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("lists the tools with underscores, schemas and annotations", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["account_me", "conversations_create", "conversations_get", "conversations_list",
    "files_get", "files_upload", "messages_context", "messages_list", "messages_mark_read", "messages_search",
    "messages_send", "messages_send_batch", "messages_send_media", "messages_unread", "people_search"]);
  for (const t of tools) {
    assert.ok(t.outputSchema, t.name);
    assert.equal(typeof t.annotations.readOnlyHint, "boolean");
  }
});

test("the Dena case: the direct chat, and the group when asked for it", async () => {
  const r = await call("conversations_list", { query: "Dena" });
  assert.equal(r.bestMatch, 2001);
  assert.equal(r.items[0].kind, "dm");
  assert.equal(r.items[0].peer.name, "Dena Karimi");
  assert.ok(r.items[0].match.reasons.includes("directChat"));
  assert.ok(r.items.some((c) => c.chatId === chats["Dena X Mo"]));
  assert.ok(r.items.some((c) => c.chatId === chats["News about Dena"]));
  const g = await call("conversations_list", { query: "Dena X" });
  assert.equal(g.bestMatch, chats["Dena X Mo"]);
  // Dotted names are accepted on tools/call.
  const dotted = await call("conversations.list", { query: "dena" });
  assert.equal(dotted.bestMatch, 2001);
});

test("last message I sent to Dena: two calls", async () => {
  const { bestMatch } = await call("conversations_list", { query: "Dena" });
  const m = await call("messages_list", { chatId: bestMatch, direction: "sent", limit: 1 });
  assert.equal(m.items.length, 1);
  assert.equal(m.items[0].text, "yes, see you Friday at noon");
  assert.equal(m.items[0].out, true);
  assert.equal(m.items[0].uri, `inline://chat/2001/message/4`);
  // The same by person, and paging back.
  const byUser = await call("messages_list", { userId: 2001, limit: 2 });
  assert.deepEqual(byUser.items.map((x) => x.messageId), [4, 3]);
  const next = await call("messages_list", { userId: 2001, limit: 2, offsetId: byUser.nextOffsetId });
  assert.deepEqual(next.items.map((x) => x.messageId), [2, 1]);
});

test("links in the marketing thread from yesterday: two calls", async () => {
  const { bestMatch } = await call("conversations_list", { query: "marketing" });
  assert.equal(bestMatch, chats.Marketing);
  const r = await call("messages_search", { chatId: bestMatch, content: "links", since: "yesterday", until: "yesterday" });
  assert.deepEqual(r.items.map((x) => x.messageId), [2]);
  assert.equal(r.items[0].hasLink, true);
  const q = await call("messages_search", { chatId: bestMatch, query: "campaign" });
  assert.deepEqual(q.items.map((x) => x.messageId), [2]);
});

test("unread: an import is read; new messages are unread until marked", async () => {
  assert.deepEqual((await call("messages_unread", {})).items, []);
  const m = chats.Marketing;
  psql(`INSERT INTO messages (chat_id, id, sender_id, sender_name, date, text)
        VALUES (${m}, 10, 2003, 'Mo Reza', now() - interval '1 day', 'new since the import')`);
  const y = await call("messages_unread", { since: "2d ago" });
  assert.equal(y.scannedChats, 1);
  assert.deepEqual(y.items.map((x) => [x.chatId, x.messageId]), [[m, 10]]);
  assert.equal((await call("conversations_get", { chatId: m })).unreadCount, 1);
  const mark = await call("messages_mark_read", { chatId: m });
  assert.deepEqual(mark, { chatId: m, readMaxId: 10, unreadCount: 0 });
  assert.deepEqual((await call("messages_unread", {})).items, []);
});

test("people, the account, and context", async () => {
  const p = await call("people_search", { query: "karimi" });
  assert.equal(p.items[0].name, "Dena Karimi"); // not "Dena Karimi Karimi"
  assert.equal(p.items[0].chatId, 2001);
  const me = await call("account_me");
  assert.equal(me.user.userId, 1000);
  assert.equal(me.timezone, "UTC");
  const c = await call("messages_context", { chatId: 2001, messageId: 3, before: 1, after: 1 });
  assert.deepEqual([c.before.map((x) => x.messageId), c.target.messageId, c.after.map((x) => x.messageId)], [[2], 3, [4]]);
});

test("resources: a chat and a message by URI; an unknown one is not found", async () => {
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
    ["inline://chat/{chatId}", "inline://chat/{chatId}/message/{messageId}", "inline://file/{fileId}"]);
  const m = await client.readResource({ uri: "inline://chat/2001/message/4" });
  assert.equal(m.contents[0].mimeType, "application/json");
  assert.equal(JSON.parse(m.contents[0].text).text, "yes, see you Friday at noon");
  const c = await client.readResource({ uri: "inline://chat/2001" });
  assert.equal(JSON.parse(c.contents[0].text).peer.name, "Dena Karimi");
  // Not found: -32002 in 2025-11-25, -32602 in 2026-07-28.
  const notFound = PROTOCOL === "2026-07-28" ? -32602 : -32002;
  await assert.rejects(client.readResource({ uri: "inline://chat/2001/message/999" }), (e) => e.code === notFound);
  await assert.rejects(client.readResource({ uri: "inline://chat/abc" }), (e) => e.code === notFound);
});

test("without a connector, sending and creating say what is possible", async () => {
  assert.match((await call("messages_send", { chatId: 2001, text: "hi" })).error, /needs a connected Telegram account/);
  assert.match((await call("messages_send", { userId: 999, text: "hi" })).error, /userId: no direct chat/);
  assert.match((await call("conversations_create", { title: "Release" })).error, /create the chat in a Telegram app/);
});

test("files_upload: base64 and data: URLs, content-addressed, with a record and a resource", async () => {
  const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.from("not really an image")]);
  const up = await call("files_upload", { base64: png.toString("base64"), fileName: "../../pic.png" });
  assert.equal(up.kind, "photo");
  assert.equal(up.mimeType, "image/png");
  assert.equal(up.size, png.length);
  assert.equal(up.fileName, "pic.png");
  assert.equal(up.fileUniqueId, crypto.createHash("sha256").update(png).digest("hex"));
  const again = await call("files.upload", { base64: png.toString("base64") });
  assert.equal(again.fileId, up.fileId, "the same bytes are one file");
  const got = await call("files_get", { fileId: up.fileId });
  assert.equal(got.uri, `inline://file/${up.fileId}`);
  const res = await client.readResource({ uri: got.uri });
  assert.equal(JSON.parse(res.contents[0].text).fileUniqueId, up.fileUniqueId);
  const doc = await call("files_upload", { base64: `data:text/plain;base64,${Buffer.from("hello").toString("base64")}` });
  assert.deepEqual([doc.kind, doc.mimeType, doc.size], ["document", "text/plain", 5]);
  assert.match((await call("files_upload", { base64: "***" })).error, /base64: character 0 is not base64/);
  assert.match((await call("files_upload", {})).error, /exactly one of base64/);
  assert.match((await call("files_upload", { base64: "aGk=", url: "https://example.org/x" })).error, /exactly one of base64/);
  assert.match((await call("files_upload", { base64: Buffer.alloc(1_200_000).toString("base64") })).error, /larger than the 1 MB allowed/);
  assert.match((await call("files_get", { fileId: "nope" })).error, /fileId: no file "nope"/);
});

test("files_upload: strict base64, a valid media type, a plain file name", async () => {
  // Padding only ends the data, only to fill the last group of four; a lone
  // character in the last group is no byte. Unpadded groups stay accepted.
  for (const [b64, re] of [
    ["====", /base64: no data/],
    ["A", /base64: the data ends in a group of one character, which is no whole byte \(1 characters/],
    ["aGk=aGk", /base64: character 4 follows '=' padding/],
    ["aGkxY", /base64: the data ends in a group of one character/],
    ["aGk=A", /base64: character 4 follows '=' padding/],
    ["=aGk", /base64: character 1 follows '=' padding/],
    ["aG=", /base64: the '=' padding does not fit/],
    ["aGk===", /base64: the '=' padding does not fit/],
    ["data:text/plain;base64,====", /base64: no data/],
  ]) {
    const r = await call("files_upload", { base64: b64 });
    assert.ok(r.error, `${b64} was stored`);
    assert.match(r.error, re, b64);
  }
  const hi = await call("files_upload", { base64: "aGk", fileName: "hi.txt" });
  assert.deepEqual([hi.size, hi.fileName], [2, "hi.txt"]);
  // mimeType: type/subtype with parameters, nothing else.
  for (const m of ["text/plain\r\nX-Injected: 1", "text/plain\n", "text", "/plain", "text/", "text/pl ain", "tëxt/plain",
    "text/plain; charset", "text/plain; a=\"b", "x".repeat(200) + "/y"]) {
    const r = await call("files_upload", { base64: "aGk=", mimeType: m });
    assert.ok(r.error, `${JSON.stringify(m)} was stored`);
    assert.match(r.error, /mimeType: not a media type; give type\/subtype/, m);
  }
  const typed = await call("files_upload", { base64: "aGk=", mimeType: "text/plain; charset=\"utf-8\"" });
  assert.equal(typed.mimeType, 'text/plain; charset="utf-8"');
  assert.match((await call("files_upload", { base64: "data:text/pl\u0001ain;base64,aGk=" })).error, /data: URL's media type/);
  // fileName: no control or bidirectional control character, no NUL.
  for (const [name, re] of [
    ["\u202Efdp.exe", /fileName: character 0 is a bidirectional control character \(it changes how the name is shown\) \(U\+202E\)/],
    ["report\u2066.pdf", /fileName: character 6 is a bidirectional control character.*U\+2066/],
    ["a\u200Fb", /bidirectional control.*U\+200F/],
    ["line\nbreak.txt", /fileName: character 4 is a control character \(U\+000A\)/],
    ["c1\u0085.txt", /control character \(U\+0085\)/],
    ["a\u0000b", /fileName: a string without NUL characters/],
  ]) {
    const r = await call("files_upload", { base64: "aGk=", fileName: name });
    assert.ok(r.error, `${JSON.stringify(name)} was stored`);
    assert.match(r.error, re, JSON.stringify(name));
  }
  assert.match((await call("files_upload", { base64: "aGk=", mimeType: "text/plain\u0000x" })).error, /mimeType: a string without NUL/);
  assert.equal(psql("SELECT count(*) FROM uploads WHERE file_name ~ '[\\x01-\\x1f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]' OR mime_type ~ '[\\r\\n]' OR file_name = 'a'"), "0");
});

test("files_upload from a URL: fetched when allowed, every SSRF case refused", async () => {
  const ok = await call("files_upload", { url: `http://127.0.0.2:${port}/ok.pdf` });
  assert.ok(!ok.error, ok.error);
  assert.deepEqual([ok.kind, ok.mimeType, ok.fileName, ok.size], ["document", "application/pdf", "ok.pdf", PDF.length]);
  const redirected = await call("files_upload", { url: `http://127.0.0.2:${port}/redirect-ok` });
  assert.equal(redirected.fileId, ok.fileId);
  for (const [u, re] of [
    [`http://127.0.0.1:${port}/ok.pdf`, /refused.*loopback/],
    [`http://127.0.0.2:${port}/redirect-local`, /refused.*loopback/],
    [`http://user:secret@127.0.0.2:${port}/ok.pdf`, /refused.*credentials/],
    // A redirect hop passes the same URL check as the first URL.
    [`http://127.0.0.2:${port}/redirect-creds`, /url refused: redirect refused: credentials in the URL are not allowed/],
    ["http://10.1.2.3/x", /refused.*private/],
    ["http://192.168.1.1/x", /refused.*private/],
    ["http://169.254.169.254/latest/meta-data", /refused.*link-local/],
    ["http://100.64.0.1/x", /refused.*carrier-grade NAT/],
    ["http://224.0.0.1/x", /refused.*multicast/],
    ["http://0.0.0.0/x", /refused/],
    [`http://[::1]:${port}/ok.pdf`, /refused.*loopback/],
    [`http://[::ffff:127.0.0.1]:${port}/ok.pdf`, /refused/],
    ["http://[fd00::1]/x", /refused.*(unique-local|private)/],
    ["ftp://127.0.0.2/x", /refused/],
  ]) {
    const r = await call("files_upload", { url: u });
    assert.ok(r.error, `${u} was fetched`);
    assert.match(r.error, re, u);
    assert.ok(!r.error.includes("secret"), "credentials never echoed");
  }
  assert.match((await call("files_upload", { url: `http://127.0.0.2:${port}/big` })).error, /larger than the 1 MB allowed/);
  assert.match((await call("files_upload", { url: `http://127.0.0.2:${port}/missing` })).error, /HTTP 500/);
  const t0 = Date.now();
  assert.match((await call("files_upload", { url: `http://127.0.0.2:${port}/slow` })).error, /did not answer in time/);
  assert.ok(Date.now() - t0 < 20000);
});

test("bad arguments name what to change", async () => {
  assert.match((await call("messages_list", {})).error, /give chatId, or userId/);
  assert.match((await call("messages_list", { userId: 999 })).error, /userId: no direct chat with user 999/);
  assert.match((await call("messages_list", { chatId: 2001, since: "soon" })).error, /since: "soon" is not a time/);
  assert.match((await call("messages_list", { chatId: 2001, direction: "up" })).error, /direction/);
  assert.match((await call("conversations_list", { limit: 1000 })).error, /limit/);
});
