// Signing a Telegram user account in while parleyd serves (authLogin),
// against the fake libtdjson (tests/support/fake_tdjson*.c: a scripted
// account with a login code and a 2FA password): a daemon started with no
// account; a client without elicitation is told to use `parleyd login
// telegram`; a client with elicitation gives the phone by form and types
// the code, then the password, on the one-time local page (a wrong code
// first: isError with Telegram's reason); the account then serves in the
// same daemon (authStatus, channelsList) and the next start runs it. The
// same sign-in by multi round-trip requests under MCP 2026-07-28.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { psqlAt, startDaemon, textOf, tmpdir } from "./lib.mjs";

const FAKE = process.env.FAKE_TDJSON;
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_tglogin_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const psql = (sql) => psqlAt(pgDir, db, sql);
const API_HASH = "0123456789abcdef-api-hash-secret";
const CODE = "24680";
const PASSWORD = "correct-horse-battery";
let dataDir, scriptPath;
const daemons = [];

const script = (phone, id, first) => ({
  phone,
  code: CODE,
  password: PASSWORD,
  password_hint: "pet",
  user: { id, first_name: first, last_name: "Tester", username: first.toLowerCase(), phone_number: phone.slice(1) },
  users: [{ id: 42, first_name: "Bob", username: "bob" }],
  chats: [
    { id: 42, type: "private", user_id: 42, title: "Bob", messages: 3 },
    { id: -4001, type: "basic_group", title: "Team", messages: 2, senders: [42] },
    { id: -1009876543210, type: "channel", title: "News", username: "newsch", messages: 2 },
  ],
});

const settings = () => [
  "--db", url, "--data-dir", dataDir, "--telegram-tdjson", FAKE,
  "--telegram-api-id", "12345", "--telegram-api-hash", API_HASH, "--toolsets", "telegram",
];

async function serve() {
  const d = await startDaemon([...settings(), "--listen", "http://127.0.0.1:0/mcp"], { FAKE_TDJSON_SCRIPT: scriptPath });
  daemons.push(d);
  d.url = `http://127.0.0.1:${/\(port (\d+)\)/.exec(d.log())[1]}/mcp`;
  return d;
}

async function connect(d, capabilities = {}) {
  const c = new Client({ name: "tg-login", version: "1" }, { capabilities });
  await c.connect(new StreamableHTTPClientTransport(new URL(d.url)));
  return c;
}

async function call(c, name, args = {}) {
  const r = await c.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${textOf(r)}`);
  return r.structuredContent;
}

async function until(what, fn, ms = 60000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The user's browser on the login page: types secret, then follows the
// "Checking" page's reloads until it shows what came of it.
async function typeOnPage(pageUrl, secret) {
  const post = await fetch(pageUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `secret=${encodeURIComponent(secret)}`,
  });
  assert.equal(post.status, 200);
  assert.match(await post.text(), /Checking/);
  for (let i = 0; i < 800; i++) {
    const page = await fetch(pageUrl);
    assert.equal(page.status, 200);
    const html = await page.text();
    if (!/Checking/.test(html)) return html;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the login page kept checking");
}

before(() => {
  assert.ok(FAKE && fs.existsSync(FAKE), "FAKE_TDJSON names the fake libtdjson");
  psqlAt(pgDir, "postgres", `CREATE DATABASE ${db}`);
  dataDir = tmpdir("parley-tglogin-");
  scriptPath = path.join(tmpdir("parley-tglscript-"), "account.json");
  fs.writeFileSync(scriptPath, JSON.stringify(script("+15550001", 777000111, "Ada")));
});

after(async () => {
  for (const d of daemons) {
    await d.stop();
    if (/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/.test(d.log())) console.error(d.log());
  }
  psqlAt(pgDir, "postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
});

test("a client without elicitation is told to sign in on the server; nothing is asked", async () => {
  const d = await serve();
  const c = await connect(d);
  try {
    const { tools } = await c.listTools();
    const login = tools.find((t) => t.name === "authLogin");
    assert.ok(login, "authLogin is listed");
    assert.deepEqual(Object.keys(login.inputSchema.properties).sort(), ["account", "phone"]);
    assert.equal((await call(c, "authStatus")).authenticated, false);
    const r = await c.callTool({ name: "authLogin", arguments: { phone: "+15550001" } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /elicitation with URL mode/);
    assert.match(textOf(r), /parleyd login telegram --phone \+NNN/);
    assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001")), "no account directory was made");
    // form mode alone cannot take the code either
    const f = await connect(d, { elicitation: {} });
    let asked = 0;
    f.setRequestHandler(ElicitRequestSchema, async () => (asked++, { action: "cancel" }));
    const r2 = await f.callTool({ name: "authLogin", arguments: {} });
    assert.equal(r2.isError, true);
    assert.match(textOf(r2), /parleyd login telegram/);
    assert.equal(asked, 0);
    await f.close();
  } finally {
    await c.close();
    await d.stop();
  }
});

test("authLogin: the phone by form, a wrong code, then the code and the 2FA password on the page; the account serves at once", async () => {
  let d = await serve();
  let c = await connect(d, { elicitation: { form: {}, url: {} } });
  try {
    // A wrong code: the page says so, the call answers isError with the reason.
    const asked = [];
    let seen = {};
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone: "+1 555 0001" } };
      const page = await fetch(req.params.url);
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /type="password"/);
      assert.match(html, /login code/);
      // the user's browser goes on while the client answers
      seen.browser = typeOnPage(req.params.url, "00000").then((h) => (seen.wrong = h));
      await seen.browser;
      return { action: "accept" };
    });
    const wrong = await c.callTool({ name: "authLogin", arguments: {} });
    await seen.browser;
    assert.equal(wrong.isError, true, textOf(wrong));
    assert.match(textOf(wrong), /the code is wrong \(PHONE_CODE_INVALID\)/);
    assert.match(textOf(wrong), /call authLogin again/);
    assert.match(seen.wrong, /The sign-in failed: .*the code is wrong/);
    assert.equal(asked.length, 2);
    assert.deepEqual(Object.keys(asked[0].requestedSchema.properties), ["phone"]);
    assert.equal(asked[1].mode, "url");
    assert.match(asked[1].url, /^http:\/\/127\.0\.0\.1:\d+\/p\/[A-Za-z0-9_-]{43}$/);
    assert.match(asked[1].message, /\+1 555 0001|\+15550001/);
    assert.equal((await call(c, "authStatus")).authenticated, false);
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0, d.log());
  }
  // A restart finds the directory the failed sign-in made: no account (its
  // key waits as db.key.pending), and authLogin signs it in with that key.
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001", "db.key")), "a failed sign-in is no account");
  assert.ok(fs.existsSync(path.join(dataDir, "telegram", "15550001", "db.key.pending")));
  d = await serve();
  c = await connect(d, { elicitation: { form: {}, url: {} } });
  try {
    const asked = [];
    let seen = {};
    assert.equal((await call(c, "authStatus")).authenticated, false);

    // Again: the code, then the password the page asks for next.
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone: "+15550001" } };
      seen.browser = (async () => {
        seen.afterCode = await typeOnPage(req.params.url, CODE);
        seen.done = await typeOnPage(req.params.url, PASSWORD);
      })();
      await seen.browser;
      return { action: "accept" };
    });
    const ok = await c.callTool({ name: "authLogin", arguments: {} });
    await seen.browser;
    assert.equal(ok.isError ?? false, false, textOf(ok));
    assert.match(seen.afterCode, /The code was accepted/);
    assert.match(seen.afterCode, /two-step verification password \(hint: pet\)/);
    assert.match(seen.afterCode, /type="password"/);
    assert.match(seen.done, /Signed in to Telegram/);
    assert.equal(ok.structuredContent.status, "signed_in");
    assert.equal(ok.structuredContent.account.userId, "777000111");
    assert.equal(ok.structuredContent.account.account, "15550001");
    assert.match(textOf(ok), /Signed in to Telegram as Ada Tester, @ada \(user id 777000111\)/);
    // neither the code nor the password went through the client or the log
    assert.doesNotMatch(JSON.stringify(asked), new RegExp(`${CODE}|${PASSWORD}`));
    assert.doesNotMatch(d.log(), new RegExp(`${CODE}|${PASSWORD}|${API_HASH}`));

    // The account serves in this daemon: authStatus, then its chats.
    const auth = await until("the account", async () => {
      const a = await call(c, "authStatus");
      return a.authenticated && a.userId === "777000111" ? a : null;
    });
    assert.equal(auth.kind, "user");
    assert.match(d.log(), /TDLib 1\.8\.99-fake loaded; 0 user accounts signed in/);
    assert.ok(fs.existsSync(path.join(dataDir, "telegram", "15550001", "db.key")), "signed in: db.key");
    assert.equal(auth.sessionPath, path.join(dataDir, "telegram", "15550001"));
    const chats = await until("the chats", async () => {
      const l = await call(c, "channelsList", { limit: 50 });
      return l.channels.length >= 3 ? l.channels : null;
    });
    assert.deepEqual(chats.map((x) => x.title).sort(), ["Bob", "News", "Team"]);
    await until("serverStatus says realtime", async () => (await call(c, "serverStatus")).realtimeActive);
    assert.equal(psql("SELECT handle || ':' || external_id FROM accounts WHERE kind = 'telegram_user'"), "15550001:777000111");
    const dir = path.join(dataDir, "telegram", "15550001");
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);

    // Signed in already: said so, nothing asked.
    asked.length = 0;
    const again = await c.callTool({ name: "authLogin", arguments: { phone: "+15550001" } });
    assert.equal(again.isError, true);
    assert.match(textOf(again), /signed in already/);
    assert.equal(asked.length, 0);
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0, d.log());
  }
  // The next start runs it without asking anything.
  const d2 = await serve();
  const c2 = await connect(d2);
  try {
    await until("the account after a restart", async () => {
      const a = await call(c2, "authStatus");
      return a.authenticated && a.userId === "777000111";
    });
  } finally {
    await c2.close();
    await d2.stop();
  }
});

test("2026-07-28: authLogin by multi round-trip requests (phone by form, code and password on the page)", async () => {
  // Another account of the scripted fake, in a data directory of its own.
  dataDir = tmpdir("parley-tglogin2-");
  fs.writeFileSync(scriptPath, JSON.stringify(script("+15550002", 777000222, "Grace")));
  const d = await serve();
  const { Client: V2, StreamableHTTPClientTransport: HttpV2 } = await import("@modelcontextprotocol/client");
  const c = new V2(
    { name: "v2-pinned", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { form: {}, url: {} } } },
  );
  await c.connect(new HttpV2(new URL(d.url)));
  try {
    assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
    const asked = [];
    const seen = {};
    c.setRequestHandler("elicitation/create", async (req) => {
      asked.push(req.params);
      if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone: "+15550002" } };
      seen.browser = (async () => {
        seen.afterCode = await typeOnPage(req.params.url, CODE);
        seen.done = await typeOnPage(req.params.url, PASSWORD);
      })();
      await seen.browser;
      return { action: "accept" };
    });
    const r = await c.callTool({ name: "authLogin", arguments: { account: "grace" } });
    await seen.browser;
    assert.equal(r.isError ?? false, false, textOf(r));
    assert.equal(r.structuredContent.status, "signed_in");
    assert.equal(r.structuredContent.account.account, "grace");
    assert.match(seen.afterCode, /two-step verification password/);
    assert.match(seen.done, /Signed in to Telegram/);
    assert.equal(asked.length, 2);
    assert.equal(asked[1].mode, "url");
    assert.equal(psql("SELECT handle || ':' || external_id FROM accounts WHERE handle = 'grace'"), "grace:777000222");
    assert.ok(fs.existsSync(path.join(dataDir, "telegram", "grace", "db.key")));

    // Declined: an outcome, the page withdrawn, nothing signed in.
    let pageUrl;
    c.setRequestHandler("elicitation/create", async (req) => {
      if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone: "+15550002" } };
      pageUrl = req.params.url;
      return { action: "decline" };
    });
    const no = await c.callTool({ name: "authLogin", arguments: { account: "grace2" } });
    assert.equal(no.structuredContent.status, "declined", textOf(no));
    const p = await fetch(pageUrl).catch(() => ({ status: 0 }));
    assert.notEqual(p.status, 200);
    assert.equal(psql("SELECT count(*) FROM accounts WHERE handle = 'grace2'"), "0");
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0, d.log());
  }
});
