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
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { textOf } from "./lib.mjs";
import { call, dropAccounts, haveFake, refused, tgAccount, tgClient, tgDaemon, until } from "./tg_user_lib.mjs";

const API_HASH = "0123456789abcdef-api-hash-secret";
const CODE = "24680";
const PASSWORD = "correct-horse-battery";
let a, dataDir, psql;
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

// A daemon serving account acc (signed in or not), stopped and checked
// for sanitizer reports after the tests.
async function serve(acc = a) {
  const d = await tgDaemon(acc);
  daemons.push(d);
  return d;
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

// The user answering authLogin's elicitations: the phone by form, then on
// the page the code and the password (seen.afterCode and seen.done: what
// the page said after each; seen.browser: the browser's work). asked gets
// each request's params.
const signIn = (phone, asked, seen) => async (req) => {
  asked.push(req.params);
  if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone } };
  seen.browser = (async () => {
    seen.afterCode = await typeOnPage(req.params.url, CODE);
    seen.done = await typeOnPage(req.params.url, PASSWORD);
  })();
  await seen.browser;
  return { action: "accept" };
};

before(() => {
  haveFake();
  a = tgAccount(script("+15550001", 777000111, "Ada"), { apiHash: API_HASH });
  dataDir = a.data;
  psql = a.psql;
});

after(async () => {
  for (const d of daemons) {
    await d.stop();
    if (/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/.test(d.log())) console.error(d.log());
  }
  dropAccounts();
});

test("a client without elicitation is told to sign in on the server; nothing is asked", async () => {
  const d = await serve();
  const c = await tgClient(d);
  try {
    const { tools } = await c.listTools();
    const login = tools.find((t) => t.name === "authLogin");
    assert.ok(login, "authLogin is listed");
    assert.deepEqual(Object.keys(login.inputSchema.properties).sort(), ["account", "phone"]);
    assert.equal((await call(c, "authStatus")).authenticated, false);
    const r = await refused(c, "authLogin", { phone: "+15550001" });
    assert.match(r, /elicitation with URL mode/);
    assert.match(r, /parleyd login telegram --phone \+NNN/);
    assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001")), "no account directory was made");
    // form mode alone cannot take the code either
    const f = await tgClient(d, { elicitation: {} });
    let asked = 0;
    f.setRequestHandler(ElicitRequestSchema, async () => (asked++, { action: "cancel" }));
    assert.match(await refused(f, "authLogin"), /parleyd login telegram/);
    assert.equal(asked, 0);
    await f.close();
  } finally {
    await c.close();
    await d.stop();
  }
});

test("authLogin: the phone by form, a wrong code, then the code and the 2FA password on the page; the account serves at once", async () => {
  let d = await serve();
  let c = await tgClient(d, { elicitation: { form: {}, url: {} } });
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
    const wrong = await refused(c, "authLogin");
    await seen.browser;
    assert.match(wrong, /the code is wrong \(PHONE_CODE_INVALID\)/);
    assert.match(wrong, /call authLogin again/);
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
  // The failed sign-in left nothing (no db.key.pending, no td/); a restart
  // finds no account, and authLogin signs it in afresh.
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001")), "a failed sign-in leaves no directory");
  const endings = path.join(dataDir, "..", "endings");
  d = await serve({ ...a, env: { ...a.env, FAKE_TDJSON_ENDINGS: endings } });
  c = await tgClient(d, { elicitation: { form: {}, url: {} } });
  try {
    const asked = [];
    let seen = {};
    assert.equal((await call(c, "authStatus")).authenticated, false);

    // Again: the code, then the password the page asks for next.
    c.setRequestHandler(ElicitRequestSchema, signIn("+15550001", asked, seen));
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
    assert.match(await refused(c, "authLogin", { phone: "+15550001" }), /signed in already/);
    assert.equal(asked.length, 0);

    // The same Telegram user under another name: refused once Telegram
    // says who it is, naming the account that has it; nothing is left (no
    // directory, no row, no second client).
    seen = {};
    c.setRequestHandler(ElicitRequestSchema, signIn("+15550001", asked, seen));
    const dup = await c.callTool({ name: "authLogin", arguments: { phone: "+15550001", account: "ada2" } });
    await seen.browser;
    assert.equal(dup.isError, true, textOf(dup));
    assert.match(textOf(dup), /the Telegram user 777000111 is signed in already as the account '15550001'/);
    await until("the refused sign-in's directory removed", async () => !fs.existsSync(path.join(dataDir, "telegram", "ada2")));
    // ... and no session on Telegram's side: logged out, not merely closed.
    assert.match(fs.readFileSync(endings, "utf8"), /^logOut .*\/telegram\/ada2\/td$/m);
    assert.equal(psql("SELECT string_agg(handle, ',') FROM accounts WHERE kind = 'telegram_user'"), "15550001");
    // A name must not start with '-' (or '_').
    for (const bad of ["-rf", "_x"])
      assert.match(await refused(c, "authLogin", { phone: "+15550001", account: bad }), /account/);
    assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "-rf")));
    assert.equal((await call(c, "authStatus")).userId, "777000111");
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0, d.log());
  }
  // The next start runs it without asking anything.
  const d2 = await serve();
  const c2 = await tgClient(d2);
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

test("authLogin with Telegram out of reach: the daemon says what it waits for, the call fails within 10 s saying so", async () => {
  // TDLib connecting and never answering the phone number: a machine
  // without a network, as the fake plays it.
  const off = tgAccount({ ...script("+15550003", 777000333, "Cy"), stall_methods: ["setAuthenticationPhoneNumber"],
    connection_state: "connectionStateConnecting" }, { apiHash: API_HASH });
  const d = await serve(off);
  const c = await tgClient(d, { elicitation: { form: {}, url: {} } });
  try {
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      if ((req.params.mode ?? "form") === "form") return { action: "accept", content: { phone: "+15550003" } };
      return { action: "decline" };
    });
    const t0 = Date.now();
    const r = await refused(c, "authLogin");
    const took = Date.now() - t0;
    assert.match(r, /cannot reach Telegram: no answer to the sign-in request \(the phone number\) in 10 s, and TDLib is not connected \(connecting to Telegram's servers\)/);
    assert.ok(took < 20000, `authLogin took ${took} ms to fail`);
    assert.match(d.log(), /waiting for Telegram \(TDLib\) to answer the sign-in request \(the phone number\): 5 s; connecting to Telegram's servers/);
    assert.ok(!fs.existsSync(path.join(off.data, "telegram", "15550003")), "the failed sign-in left its directory");
    assert.equal((await call(c, "authStatus")).authenticated, false);
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0, d.log());
  }
});

test("2026-07-28: authLogin by multi round-trip requests (phone by form, code and password on the page)", async () => {
  // Another account of the scripted fake, in a data directory of its own
  // (the same database).
  const g = tgAccount(script("+15550002", 777000222, "Grace"), { apiHash: API_HASH, db: a.db });
  const d = await serve(g);
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
    c.setRequestHandler("elicitation/create", signIn("+15550002", asked, seen));
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
    assert.ok(fs.existsSync(path.join(g.data, "telegram", "grace", "db.key")));

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
