// bluesky: the bluesky toolset through the official SDK against the XRPC
// emulator (tests/harness/xrpc_emulator.mjs): the tool surface (exactly
// login, profile, search; "prompt_id" nowhere), login by argument, by
// elicitation (the handle by form, the app password on the local page by
// URL mode; accept, decline, cancel), the guidance a client without
// elicitation gets, sessions kept across restarts (no second
// createSession), refresh on expiry, the rate limit, the Markdown (every
// content line quoted, threads with compact references), posts kept in the
// archive, and secrets kept out of logs, results and the database.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_bluesky_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-bluesky-");
const dataDir = path.join(work, "data");
const PASSWORD = "abcd-efgh-ijkl-mnop";
const ROOT = "at://did:plc:alice000000000000000000/app.bsky.feed.post/3l5tkrnrau727";
const FEATURES = "at://did:plc:alice000000000000000000/app.bsky.feed.post/3l5teuw5gk527";
let emu, base;
const sessions = []; // every client opened, closed at the end
const allText = []; // every tools/list and result seen, for the prompt_id check

async function control(p, body) {
  const r = await fetch(`${base}/control/${p}`, body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return r.json();
}

function psql(sql) {
  return execFileSync("psql", ["-X", "-q", "-t", "-A", "-h", pgDir, "-U", "parley", "-d", db, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

async function open(caps = {}) {
  const s = await stdioClient(
    ["--db", url, "--toolsets", "bluesky", "--data-dir", dataDir, "--bluesky-service", base],
    caps,
  );
  sessions.push(s);
  return s;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  allText.push(JSON.stringify(r));
  return r;
}

before(async () => {
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `CREATE DATABASE ${db}`]);
  emu = spawn(process.execPath, [path.join(here, "..", "harness", "xrpc_emulator.mjs")], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise((resolve) => readline.createInterface({ input: emu.stdout }).once("line", resolve));
  base = `http://127.0.0.1:${JSON.parse(line).port}`;
});

after(async () => {
  for (const s of sessions) await s.client.close().catch(() => {});
  // a daemon that died says why (sanitizer reports included)
  for (const s of sessions) {
    const text = s.log.join("");
    if (/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/.test(text)) console.error(text);
  }
  emu?.kill();
  execFileSync("psql", ["-X", "-q", "-h", pgDir, "-U", "parley", "-d", "postgres", "-c", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
  fs.rmSync(work, { recursive: true, force: true });
});

test("exactly login, profile and search, with the spec's parameters and no prompt_id", async () => {
  const { client } = await open();
  const { tools } = await client.listTools();
  allText.push(JSON.stringify(tools));
  assert.deepEqual(tools.map((t) => t.name).sort(), ["login", "profile", "search"]);
  const props = Object.fromEntries(tools.map((t) => [t.name, Object.keys(t.inputSchema.properties).sort()]));
  assert.deepEqual(props.login, ["command", "handle", "password", "port", "service"]);
  assert.deepEqual(props.profile, ["account", "handle"]);
  assert.deepEqual(props.search, ["account", "cursor", "limit", "query"]);
  assert.deepEqual(tools.find((t) => t.name === "login").inputSchema.properties.command.enum, ["list", "default", "delete"]);
  assert.match(tools.find((t) => t.name === "login").description, /list, default and delete/);
  assert.doesNotMatch(JSON.stringify(tools), /prompt_id/);
});

test("a client without elicitation gets isError guidance and nothing is asked", async () => {
  const { client } = await open();
  const r = await call(client, "login", {});
  assert.equal(r.isError, true);
  const t = textOf(r);
  assert.match(t, /app password/);
  assert.match(t, /never the main account password/);
  assert.match(t, /https:\/\/bsky\.app\/settings\/app-passwords/);
  assert.match(t, /OAuth/);
  // a form-only client (elicitation: {}) cannot get the password either
  const form = await open({ elicitation: {} });
  let asked = 0;
  form.client.setRequestHandler(ElicitRequestSchema, async () => (asked++, { action: "cancel" }));
  const r2 = await call(form.client, "login", { handle: "alice.test" });
  assert.equal(r2.isError, true);
  assert.match(textOf(r2), /URL mode/);
  assert.equal(asked, 0);
  assert.equal((await control("stats")).createSession, 0);
});

test("a handle that is not one is refused before it reaches a log, the page or the service", async () => {
  const { client, log } = await open({ elicitation: { form: {}, url: {} } });
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => (asked++, { action: "cancel" }));
  for (const handle of [
    "alice.test\n2026-01-01T00:00:00.000Z INFO  [bsky] logged in as @admin",
    "<b>alice</b>.test",
    "alice",
    "alice..test",
    "-alice.test",
    "alice.123",
    "did:plc:",
    "did:PLC:abc",
  ]) {
    for (const args of [{ handle }, { handle, password: PASSWORD }, { command: "default", handle }]) {
      const r = await call(client, "login", args);
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.match(textOf(r), /handle: not a Bluesky handle/);
    }
  }
  assert.equal(asked, 0, "no page or form was opened");
  assert.equal((await control("stats")).createSession, 0);
  assert.doesNotMatch(log.join(""), /logged in as @admin/);
});

test("without an account, search says to log in", async () => {
  const { client } = await open();
  const r = await call(client, "search", { query: "markdown" });
  assert.equal(r.isError ?? false, false); // the (empty) archive answers, with the reason
  assert.match(textOf(r), /no Bluesky account is logged in/);
  assert.match(textOf(r), /call login/);
  const p = await call(client, "profile", {});
  assert.equal(p.isError, true);
  assert.match(textOf(p), /login/);
});

test("login with a password argument: wrong password, then right; the session is sealed", async () => {
  const { client, log } = await open();
  const bad = await call(client, "login", { handle: "alice.test", password: "wrong-pass-word-xxxx" });
  assert.equal(bad.isError, true);
  assert.match(textOf(bad), /refused the login/);
  assert.match(textOf(bad), /app password/);
  const r = await call(client, "login", { handle: "alice.test", password: PASSWORD });
  assert.equal(r.isError ?? false, false, textOf(r));
  assert.match(textOf(r), /Logged in to Bluesky as @alice\.test/);
  assert.equal(r.structuredContent.account.handle, "alice.test");
  assert.equal(r.structuredContent.account.default, true);
  assert.equal((await control("stats")).createSession, 2);
  // sealed at rest: the key file is 0600, the row holds no token in clear
  assert.equal(fs.statSync(path.join(dataDir, "credentials.key")).mode & 0o777, 0o600);
  const cred = psql("SELECT encode(credentials, 'escape') FROM accounts WHERE handle = 'alice.test'");
  assert.ok(cred.length > 40);
  assert.doesNotMatch(cred, /eyJ|refresh|access/);
  // never logged, never returned
  assert.doesNotMatch(log.join(""), new RegExp(PASSWORD));
  assert.doesNotMatch(log.join("") + allText.join(""), /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/);
});

test("search answers Markdown with every content line quoted, and keeps the posts", async () => {
  const { client } = await open();
  const r = await call(client, "search", { query: "markdown", limit: 5 });
  assert.equal(r.isError ?? false, false, textOf(r));
  const t = textOf(r);
  assert.match(t, /^# Search · "markdown" · 5 posts/);
  assert.match(t, /\nResults: 5 posts/);
  assert.match(t, /More: pass cursor/);
  assert.equal(r.structuredContent.posts.length, 5);
  assert.ok(r.structuredContent.cursor);
  // the cursor the answer mentions pages on: the next posts, then the end
  const cursor = /More: pass cursor "([^"]+)"/.exec(t)[1];
  assert.equal(cursor, r.structuredContent.cursor);
  const seen = new Set(r.structuredContent.posts.map((p) => p.uri));
  let page = await call(client, "search", { query: "markdown", limit: 5, cursor });
  assert.equal(page.isError ?? false, false, textOf(page));
  assert.equal(page.structuredContent.posts.length, 5);
  for (const p of page.structuredContent.posts) assert.ok(!seen.has(p.uri), `${p.uri} on both pages`);
  page = await call(client, "search", { query: "markdown", limit: 10, cursor: page.structuredContent.cursor });
  assert.equal(page.structuredContent.posts.length, 5, "fifteen posts: the last five");
  assert.equal(page.structuredContent.cursor, undefined);
  assert.doesNotMatch(textOf(page), /More: pass cursor/);
  // each post: a header, quoted lines, a stats line
  const blocks = t.split("\n\n").slice(1, 6);
  for (const b of blocks) {
    const lines = b.split("\n");
    assert.match(lines[0], /^@[a-z.]+\.test\/[a-z2-7]{13}/);
    assert.ok(lines.slice(1, -1).every((l) => l === ">" || l.startsWith("> ")), b);
    assert.match(lines.at(-1), /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  }
  // the proxy header went with the read calls
  const st = await control("stats");
  assert.equal(st.missingProxy, 0);
  assert.ok(st.calls["app.bsky.feed.searchPosts"] >= 1);
  // kept in the archive: feed chats, messages keyed by at-URI
  const uris = r.structuredContent.posts.map((p) => `'${p.uri}'`).join(",");
  assert.equal(psql(`SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.kind = 'feed' AND m.external_id IN (${uris})`), "5");
  // findable offline by the archive's own full-text search
  assert.equal(psql("SELECT count(*) > 0 FROM messages WHERE tsv @@ plainto_tsquery('simple', 'markdown') AND external_id LIKE 'at://%'"), "t");
});

test("the bluesky.refresh job keeps the default account's own posts in the archive", async () => {
  // queued at the login; alice has 9 posts in the emulator
  const deadline = Date.now() + 20000;
  let n = "0";
  while (Date.now() < deadline) {
    n = psql("SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.kind = 'feed' AND c.username = 'alice.test'");
    if (n === "9") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(n, "9");
  assert.equal(psql("SELECT status || ' ' || fetched FROM sync_jobs WHERE class = 'bluesky.refresh'"), "idle 9");
  // one message per post, with ids JSON clients hold exactly
  assert.equal(psql("SELECT bool_and(m.id < 2 ^ 53) AND count(DISTINCT m.external_id) = 9 FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.username = 'alice.test'"), "t");
});

test("a post's own Markdown stays inside the quote", async () => {
  const { client } = await open();
  const r = await call(client, "search", { query: FEATURES });
  const t = textOf(r);
  assert.match(t, /@alice\.test\/3l5teuw5gk527\n> Check out my project!\n> ## Features\n> - Fast\n> - Simple\n/);
  assert.doesNotMatch(t, /^## Features/m);
  assert.doesNotMatch(t, /^- Fast/m);
});

test("a thread link answers the thread with indent and compact references", async () => {
  const { client } = await open();
  const r = await call(client, "search", { query: ROOT });
  const t = textOf(r);
  assert.match(t, /^# Thread · 6 posts\n\n@alice\.test\/3l5tkrnrau727\n> Hot take: Markdown > JSON for LLM tools\n👍 234  ♻️ 89  💬 45  2024-10-06T10:15:33Z\n/);
  assert.match(t, /\n└─@a\/…u727 → @bob\.test\/3l5tkucncwa2f\n> Agree! But what about content escaping\?\n/);
  assert.match(t, /\n  └─@b\/…a2f → @bob\.test\/3l5tkxa422b2f\n|\n  └─@b\/…wa2f → @bob\.test\/3l5tkxa422b2f\n/);
  assert.match(t, /\n└─@a\/…u727 → @carol\.test\/3l5tl3twbac2l\n/);
  assert.match(t, /\n    └─@a\/…d27 → @carol\.test\/3l5tleiieee2l\n|\n    └─@a\/…6d27 → @carol\.test\/3l5tleiieee2l\n/);
  assert.equal(r.structuredContent.posts.length, 6);
  // the same thread through a bsky.app link with a handle (resolveHandle)
  const r2 = await call(client, "search", { query: "https://bsky.app/profile/alice.test/post/3l5tkrnrau727" });
  assert.equal(textOf(r2), t);
  assert.ok((await control("stats")).calls["com.atproto.identity.resolveHandle"] >= 1);
});

test("profile: the default account's own, and another's", async () => {
  const { client } = await open();
  const r = await call(client, "profile", {});
  const t = textOf(r);
  assert.match(t, /^# @alice\.test/);
  assert.match(t, /https:\/\/bsky\.app\/profile\/alice\.test/);
  assert.match(t, /DID: did:plc:alice000000000000000000/);
  assert.match(t, /followers · \d+ following · \d+ posts/);
  assert.match(t, /## Recent posts/);
  assert.equal(r.structuredContent.profile.handle, "alice.test");
  const b = await call(client, "profile", { handle: "@bob.test" });
  assert.match(textOf(b), /^# @bob\.test/);
  const none = await call(client, "profile", { handle: "nobody.test" });
  assert.equal(none.isError, true);
  assert.match(textOf(none), /Profile not found/);
});

test("after a restart the stored session serves without a new login; expiry refreshes it", async () => {
  const before = await control("stats");
  const { client } = await open(); // a new parleyd on the same database and data directory
  const r = await call(client, "search", { query: "simple" });
  assert.equal(r.isError ?? false, false, textOf(r));
  let st = await control("stats");
  assert.equal(st.createSession, before.createSession);
  // the access token expires upstream: one refresh, the call succeeds
  await control("expire", {});
  const r2 = await call(client, "search", { query: "markdown", limit: 3 });
  assert.equal(r2.isError ?? false, false, textOf(r2));
  st = await control("stats");
  assert.equal(st.refreshSession, before.refreshSession + 1, JSON.stringify([st, before, textOf(r2).slice(0, 300)]));
  assert.equal(st.createSession, before.createSession);
  // the rotated session was stored: another restart still works without login
  await control("expire", {});
  const { client: c3 } = await open();
  const r3 = await call(c3, "search", { query: "weekend" });
  assert.equal(r3.isError ?? false, false, textOf(r3));
  assert.equal((await control("stats")).createSession, before.createSession);
});

test("a session about to expire is refreshed before the call, not after a failure", async () => {
  await control("config", { accessTtlS: 60 }); // inside parley's two-minute margin
  const { client } = await open();
  const r = await call(client, "login", { handle: "carol.test", password: PASSWORD });
  assert.equal(r.isError ?? false, false, textOf(r));
  const before = await control("stats");
  const s = await call(client, "search", { account: "carol.test", query: "weekend" });
  assert.equal(s.isError ?? false, false, textOf(s));
  const st = await control("stats");
  assert.equal(st.refreshSession, before.refreshSession + 1);
  assert.equal(st.calls["app.bsky.feed.searchPosts"], before.calls["app.bsky.feed.searchPosts"] + 1);
  await control("config", { accessTtlS: 7200 });
});

test("login by elicitation: the handle by form, the password on the page by URL mode", async () => {
  const { client, log } = await open({ elicitation: { form: {}, url: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    if (req.params.mode !== "url") return { action: "accept", content: { handle: "bob.test" } };
    // the user's browser: the form, then the password
    const page = await fetch(req.params.url);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /type="password"/);
    assert.match(html, /bob\.test/);
    const post = await fetch(req.params.url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `secret=${encodeURIComponent(PASSWORD)}`,
    });
    assert.equal(post.status, 200);
    return { action: "accept" };
  });
  const r = await call(client, "login", {});
  assert.equal(r.isError ?? false, false, textOf(r));
  assert.match(textOf(r), /Logged in to Bluesky as @bob\.test/);
  assert.equal(asked.length, 2);
  assert.equal(asked[0].mode ?? "form", "form");
  assert.deepEqual(Object.keys(asked[0].requestedSchema.properties), ["handle"]);
  assert.equal(asked[1].mode, "url");
  assert.match(asked[1].url, /^http:\/\/127\.0\.0\.1:\d+\/p\/[A-Za-z0-9_-]{43}$/);
  assert.ok(asked[1].elicitationId);
  // the password never went through the client
  assert.doesNotMatch(JSON.stringify(asked), new RegExp(PASSWORD));
  assert.doesNotMatch(log.join(""), new RegExp(PASSWORD));
  // the page is used up
  const again = await fetch(asked[1].url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "secret=x",
  }).catch(() => ({ status: 0 }));
  assert.ok(again.status === 410 || again.status === 0);
  // alice stays the default; list shows both
  const l = await call(client, "login", { command: "list" });
  assert.deepEqual(l.structuredContent.accounts.map((a) => [a.handle, a.default]), [["alice.test", true], ["bob.test", false], ["carol.test", false]]);
  assert.match(textOf(l), /@alice\.test \(default\)/);
});

test("the password typed on the page before the client answers also logs in", async () => {
  const { client } = await open({ elicitation: { form: {}, url: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    await fetch(req.params.url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(req.params.url).origin },
      body: `secret=${encodeURIComponent(PASSWORD)}`,
    });
    await new Promise((r) => setTimeout(r, 300)); // the user takes a moment to close the dialog
    return { action: "accept" };
  });
  const r = await call(client, "login", { handle: "carol.test" });
  assert.equal(r.isError ?? false, false, textOf(r));
  assert.match(textOf(r), /@carol\.test/);
});

// The user's browser on a password page: types secret, then follows the
// "Checking" page's reloads until it shows the login's outcome.
async function typeOnPage(pageUrl, secret) {
  const post = await fetch(pageUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `secret=${encodeURIComponent(secret)}`,
  });
  assert.equal(post.status, 200);
  const checking = await post.text();
  assert.match(checking, /Checking/);
  assert.match(checking, /<meta http-equiv="refresh" content="1; url=\/p\//);
  for (let i = 0; i < 400; i++) {
    const page = await fetch(pageUrl);
    assert.equal(page.status, 200);
    const html = await page.text();
    if (!/Checking/.test(html)) return html;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the password page kept checking");
}

test("a wrong password on the page: the page says so and takes another; the right one signs in", async () => {
  const { client, log } = await open({ elicitation: { form: {}, url: {} } });
  let browser;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    browser = (async () => {
      const wrong = await typeOnPage(req.params.url, "wrong-pass-word-xxxx");
      const right = await typeOnPage(req.params.url, PASSWORD);
      return { url: req.params.url, wrong, right };
    })();
    await browser;
    return { action: "accept" };
  });
  const r = await call(client, "login", { handle: "carol.test" });
  const { url: pageUrl, wrong, right } = await browser;
  // refused: said so, and the form again
  assert.match(wrong, /Bluesky refused the login: (AuthenticationRequired: )?Invalid identifier or password/);
  assert.match(wrong, /try again/);
  assert.match(wrong, /type="password"/);
  assert.doesNotMatch(wrong, /Received/);
  // the right one: signed in, and the call says so
  assert.match(right, /Signed in to Bluesky as @carol\.test/);
  assert.doesNotMatch(right, /type="password"/);
  assert.equal(r.isError ?? false, false, textOf(r));
  assert.match(textOf(r), /Logged in to Bluesky as @carol\.test/);
  // used up; neither password in the log
  const again = await fetch(pageUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "secret=x",
  }).catch(() => ({ status: 0 }));
  assert.ok(again.status === 410 || again.status === 0);
  assert.doesNotMatch(log.join(""), new RegExp(PASSWORD));
  assert.doesNotMatch(log.join(""), /wrong-pass-word/);
});

test("decline and cancel are answered as what they are; nothing is stored", async () => {
  for (const [mode, action, word] of [
    ["form", "decline", /declined/],
    ["form", "cancel", /dismissed/],
    ["url", "decline", /declined/],
    ["url", "cancel", /dismissed/],
  ]) {
    const { client } = await open({ elicitation: { form: {}, url: {} } });
    let pageUrl;
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      if ((req.params.mode ?? "form") !== mode) return { action: "accept", content: { handle: "dave.test" } };
      pageUrl = req.params.url;
      return { action };
    });
    const r = await call(client, "login", {});
    assert.equal(r.isError ?? false, false);
    assert.match(textOf(r), word);
    assert.match(textOf(r), /nothing was stored/);
    assert.equal(r.structuredContent.status, action === "decline" ? "declined" : "cancelled");
    if (pageUrl) { // the page was withdrawn
      const p = await fetch(pageUrl).catch(() => ({ status: 0 }));
      assert.notEqual(p.status, 200);
    }
  }
  assert.equal(psql("SELECT count(*) FROM accounts WHERE handle = 'dave.test'"), "0");
});

test("login list, default and delete; search as another account", async () => {
  const logins = (await control("stats")).createSession;
  const { client } = await open(); // a new parleyd: bob's session came by elicitation
  const asBob = await call(client, "search", { account: "bob.test", query: "markdown", limit: 2 });
  assert.equal(asBob.isError ?? false, false, textOf(asBob));
  assert.equal((await control("stats")).createSession, logins);
  const d = await call(client, "login", { command: "default", handle: "bob.test" });
  assert.match(textOf(d), /@bob\.test is now the default/);
  const p = await call(client, "profile", {});
  assert.match(textOf(p), /^# @bob\.test/);
  const asCarol = await call(client, "search", { account: "carol.test", query: "weekend" });
  assert.equal(asCarol.isError ?? false, false, textOf(asCarol));
  const missing = await call(client, "search", { account: "nobody.test", query: "x" });
  assert.equal(missing.isError ?? false, false); // the archive answers, saying why
  assert.match(textOf(missing), /no Bluesky account nobody\.test/);
  const del = await call(client, "login", { command: "delete", handle: "bob.test" });
  assert.match(textOf(del), /Forgot @bob\.test/);
  assert.match(textOf(del), /The default is now @/);
  const l = await call(client, "login", { command: "list" });
  assert.deepEqual(l.structuredContent.accounts.map((a) => a.handle).sort(), ["alice.test", "carol.test"]);
  const bad = await call(client, "login", { command: "delete", handle: "bob.test" });
  assert.equal(bad.isError, true);
  assert.match(textOf(bad), /no Bluesky account bob\.test/);
  const noHandle = await call(client, "login", { command: "default" });
  assert.equal(noHandle.isError, true);
  assert.match(textOf(noHandle), /needs handle/);
});

test("createSession's rate limit is reported with its reset time", async () => {
  const st = await control("stats");
  await control("config", { createSessionLimit: 0 });
  const { client } = await open();
  const r = await call(client, "login", { handle: "alice.test", password: PASSWORD });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /rate-limits logins \(createSession\); it resets at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in \d+ min\)/);
  await control("config", { createSessionLimit: 30 });
  assert.ok((await control("stats")).createSession > st.createSession);
});

test("a service the model names is shown to the user where the password is asked", async () => {
  const { client } = await open({ elicitation: { form: {}, url: {} } });
  let asked;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked = req.params;
    const page = await (await fetch(req.params.url)).text();
    assert.match(page, /https:\/\/pds\.example\.net/);
    assert.match(page, /WARNING/);
    return { action: "decline" };
  });
  const r = await call(client, "login", { handle: "alice.test", service: "https://pds.example.net" });
  assert.match(textOf(r), /declined/);
  assert.match(asked.message, /WARNING: it will be sent to https:\/\/pds\.example\.net/);
});

test("a service named by a tool goes through the address policy", async () => {
  const { client } = await open();
  const r = await call(client, "login", { handle: "alice.test", password: PASSWORD, service: "http://127.0.0.1:9/" });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /service URL was refused/);
});

test("prompt_id appears in no list and no result", () => {
  assert.ok(allText.length > 20);
  for (const t of allText) assert.doesNotMatch(t, /prompt_id/);
});

test("no daemon of this file reported a memory error", async () => {
  for (const s of sessions.splice(0)) {
    const pid = s.transport.pid;
    await s.client.close().catch(() => {});
    for (let i = 0; i < 100 && pid; i++) { // until it exited (and wrote its report)
      try { process.kill(pid, 0); } catch { break; }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.doesNotMatch(s.log.join(""), /ERROR: AddressSanitizer|runtime error:|LeakSanitizer/);
  }
});

// MCP 2026-07-28: the same login by multi round-trip requests, with the
// official SDK v2 client pinned to the revision (it answers each round
// through its elicitation handler and calls again with the requestState).
async function openModern(extra = {}) {
  const { Client } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const { PARLEYD } = await import("./lib.mjs");
  const log = [];
  const t = new StdioClientTransport({
    command: PARLEYD,
    args: ["serve", "--stdio", "--db", url, "--toolsets", "bluesky", "--data-dir", dataDir, "--bluesky-service", base],
    stderr: "pipe",
  });
  t.stderr?.on("data", (d) => log.push(d.toString()));
  const client = new Client(
    { name: "v2-pinned", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { form: {}, url: {} } }, ...extra },
  );
  await client.connect(t);
  sessions.push({ client, log });
  return { client, log };
}

async function typePassword(pageUrl, secret = PASSWORD) {
  const post = await fetch(pageUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `secret=${encodeURIComponent(secret)}`,
  });
  assert.equal(post.status, 200);
}

test("2026-07-28: login by multi round-trip requests (handle by form, password on the page)", async () => {
  const { client, log } = await openModern();
  assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
  const asked = [];
  client.setRequestHandler("elicitation/create", async (req) => {
    asked.push(req.params);
    if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { handle: "bob.test" } };
    await typePassword(req.params.url);
    return { action: "accept" };
  });
  const r = await client.callTool({ name: "login", arguments: {} });
  assert.equal(r.isError ?? false, false, textOf(r));
  assert.match(textOf(r), /Logged in to Bluesky as @bob\.test/);
  assert.equal(asked.length, 2);
  assert.deepEqual(Object.keys(asked[0].requestedSchema.properties), ["handle"]);
  assert.equal(asked[1].mode, "url");
  assert.match(asked[1].url, /^http:\/\/127\.0\.0\.1:\d+\/p\/[A-Za-z0-9_-]{43}$/);
  assert.doesNotMatch(JSON.stringify(asked), new RegExp(PASSWORD));
  assert.doesNotMatch(log.join(""), new RegExp(PASSWORD));
  assert.equal(psql("SELECT count(*) FROM accounts WHERE handle = 'bob.test' AND enabled"), "1");

  // A wrong password typed on the page: the page says so and takes
  // another; the right one logs in.
  let seen;
  client.setRequestHandler("elicitation/create", async (req) => {
    const wrong = await typeOnPage(req.params.url, "wrong-pass-word-xxxx");
    const right = await typeOnPage(req.params.url, PASSWORD);
    seen = { wrong, right };
    return { action: "accept" };
  });
  const retried = await client.callTool({ name: "login", arguments: { handle: "bob.test" } });
  assert.match(seen.wrong, /Bluesky refused the login: (AuthenticationRequired: )?Invalid identifier or password/);
  assert.match(seen.wrong, /type="password"/);
  assert.match(seen.right, /Signed in to Bluesky as @bob\.test/);
  assert.equal(retried.isError ?? false, false, textOf(retried));
  assert.match(textOf(retried), /Logged in to Bluesky as @bob\.test/);
  assert.doesNotMatch(log.join(""), /wrong-pass-word/);

  // Declined: an outcome, nothing stored, the page withdrawn.
  let pageUrl;
  client.setRequestHandler("elicitation/create", async (req) => {
    pageUrl = req.params.url;
    return { action: "decline" };
  });
  const d = await client.callTool({ name: "login", arguments: { handle: "frank.test" } });
  assert.equal(d.structuredContent.status, "declined");
  const p = await fetch(pageUrl).catch(() => ({ status: 0 }));
  assert.notEqual(p.status, 200);
  assert.equal(psql("SELECT count(*) FROM accounts WHERE handle = 'frank.test'"), "0");
});

test("2026-07-28: a service the model names is shown to the user on the password page", async () => {
  const { client } = await openModern();
  let page, message;
  client.setRequestHandler("elicitation/create", async (req) => {
    message = req.params.message;
    page = await (await fetch(req.params.url)).text();
    return { action: "decline" };
  });
  const r = await client.callTool({ name: "login", arguments: { handle: "alice.test", service: "https://pds.example.net" } });
  assert.equal(r.structuredContent.status, "declined", textOf(r));
  assert.match(page, /WARNING: it will be sent to https:\/\/pds\.example\.net/);
  assert.match(page, /Type it only if you trust that service/);
  assert.match(message, /pds\.example\.net/);
});

test("2026-07-28: a client without URL-mode elicitation gets the guidance, nothing is asked", async () => {
  const { client } = await openModern({ capabilities: { elicitation: { form: {} } } });
  let asked = 0;
  client.setRequestHandler("elicitation/create", async () => {
    asked++;
    return { action: "cancel" };
  });
  const r = await client.callTool({ name: "login", arguments: { handle: "bob.test" } });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /URL mode/);
  assert.equal(asked, 0);
});

test("2026-07-28: the last round answered by another daemon learns the outcome from the store", async () => {
  // Two daemons on one database and data directory; the raw rounds go to
  // A, then B, as a round-robin balancer would send them.
  const { startDaemon } = await import("./lib.mjs");
  const args = ["--db", url, "--toolsets", "bluesky", "--data-dir", dataDir, "--bluesky-service", base, "--listen", "http://127.0.0.1:0/mcp"];
  const a = await startDaemon(args), b = await startDaemon(args);
  try {
    const at = (d) => `http://127.0.0.1:${/\(port (\d+)\)/.exec(d.log())[1]}/mcp`;
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {}, url: {} } },
    };
    let id = 0;
    const rpc = async (u, params) => {
      const r = await fetch(u, {
        method: "POST",
        headers: {
          "content-type": "application/json", accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "login",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "login", ...params, _meta: meta } }),
      });
      const text = await r.text();
      const line = text.startsWith("{") ? text : text.split("\n").filter((l) => l.startsWith("data: ")).at(-1).slice(6);
      return JSON.parse(line);
    };
    const r1 = await rpc(at(a), { arguments: { handle: "carol.test" } });
    assert.equal(r1.result.resultType, "input_required", JSON.stringify(r1));
    const page = r1.result.inputRequests.password_page;
    assert.equal(page.method, "elicitation/create");
    assert.equal(page.params.mode, "url");
    assert.ok(r1.result.requestState);
    assert.doesNotMatch(r1.result.requestState, /carol/, "the state is sealed");
    await typePassword(page.params.url);
    // Round 3 on B, which does not hold the page: it asks the store.
    const r2 = await rpc(at(b), {
      arguments: { handle: "carol.test" },
      inputResponses: { password_page: { action: "accept" } },
      requestState: r1.result.requestState,
    });
    assert.equal(r2.result.resultType, "complete", JSON.stringify(r2));
    assert.match(r2.result.content[0].text, /Logged in to Bluesky as @carol\.test/);
    // Two round threes on one page: one waits (accept), the other
    // declines; both learn the decline, the page is withdrawn.
    const r4 = await rpc(at(a), { arguments: { handle: "bob.test" } });
    const st4 = r4.result.requestState;
    const waiting = rpc(at(a), { arguments: { handle: "bob.test" }, inputResponses: { password_page: { action: "accept" } }, requestState: st4 });
    await new Promise((res) => setTimeout(res, 300));
    const declined = await rpc(at(a), { arguments: { handle: "bob.test" }, inputResponses: { password_page: { action: "decline" } }, requestState: st4 });
    assert.equal(declined.result.structuredContent.status, "declined");
    assert.equal((await waiting).result.structuredContent.status, "declined");
    const gone = await fetch(r4.result.inputRequests.password_page.params.url).catch(() => ({ status: 0 }));
    assert.notEqual(gone.status, 200);
    // A state for other arguments does not open.
    const other = await rpc(at(b), { arguments: { handle: "alice.test" }, inputResponses: { password_page: { action: "accept" } }, requestState: st4 });
    assert.equal(other.error.code, -32602);
    // A changed state is refused before the tool runs.
    const forged = r1.result.requestState.replace(/.$/, (ch) => (ch === "A" ? "B" : "A"));
    const r3 = await rpc(at(b), { arguments: { handle: "carol.test" }, inputResponses: { password_page: { action: "accept" } }, requestState: forged });
    assert.equal(r3.error.code, -32602);
    assert.match(r3.error.message, /requestState/);
  } finally {
    const ca = await a.stop(), cb = await b.stop();
    assert.equal(ca, 0, a.log().slice(-3000));
    assert.equal(cb, 0, b.log().slice(-3000));
  }
});
