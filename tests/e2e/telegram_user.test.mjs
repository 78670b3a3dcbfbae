// A Telegram user account through TDLib, tried as a new user would, against
// the fake libtdjson (tests/support/fake_tdjson*.c: a scripted account with
// a login code and a 2FA password): `parleyd login telegram` with a wrong
// code fails clearly and with the right code and password signs in, and
// one that cannot reach Telegram says what it waits for and fails within
// 10 s; the
// account's directory is private; serve reports the account, lists its
// chats, backfills exactly the newest `depth` messages of a 1,000-message
// chat through a FloodWait (visible in syncJobsList), stores live
// messages, edits and deletions once, sends through sendMessage, and the
// next run starts signed in without asking; a kill -9 in the middle of a
// backfill resumes from the last page stored.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { call, deliver, dropAccounts, haveFake, tdMsg as tdMsgOf, tdText, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

const API_HASH = "0123456789abcdef-api-hash-secret";
const BIG = -1001234567890;
const BIG2 = -1005555555555;
const BOB = 42;
let a, dataDir, psql;

const script = {
  phone: "+15550001",
  code: "12345",
  password: "hunter2",
  password_hint: "pet",
  user: { id: 777000111, first_name: "Ada", last_name: "Lovelace", username: "ada", phone_number: "15550001" },
  users: [{ id: BOB, first_name: "Bob", username: "bob" }],
  chats: [
    { id: BOB, type: "private", user_id: BOB, title: "Bob", messages: 30 },
    { id: -4001, type: "basic_group", title: "Team", messages: 10, senders: [BOB, 777000111] },
    { id: BIG, type: "supergroup", title: "Big group", messages: 1000, senders: [BOB] },
    // Big enough (100 pages) that a kill seen mid-backfill lands mid-backfill:
    // with 1,000 (20 pages) the rest could be stored between the count read
    // and the kill on a fast run.
    { id: BIG2, type: "supergroup", title: "Second big", messages: 5000, senders: [BOB] },
    { id: -1009876543210, type: "channel", title: "News", username: "newsch", messages: 5 },
  ],
  load_chats_per_call: 2,
  history_page_max: 50,
  flood_wait: { method: "getChatHistory", after_calls: 3, seconds: 2 },
};

const login = (input) => tgLogin(a, input);
const serve = () => tgServe(a);
const tdMsg = (chat, sid, text, extra = {}) => tdMsgOf(chat, sid, text, BOB, extra);

before(() => {
  haveFake();
  a = tgAccount(script, { apiHash: API_HASH });
  dataDir = a.data;
  psql = a.psql;
});

after(dropAccounts);

test("login: a wrong code fails clearly; the code and the 2FA password sign in", async () => {
  const wrong = await login("00000\n");
  assert.notEqual(wrong.code, 0);
  assert.match(wrong.out, /code Telegram sent to \+15550001/);
  assert.match(wrong.err, /login failed: the code is wrong/);
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001", "db.key")), "a failed sign-in is no account");
  // ... and leaves nothing behind: no db.key.pending, no td/.
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001")), "a failed sign-in leaves no directory");
  const noAnswer = await login("");
  assert.notEqual(noAnswer.code, 0);
  assert.match(noAnswer.err, /end of input/);
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "15550001")), "a cancelled sign-in leaves no directory");
  // An account name is never taken for an option: it starts with a letter or digit.
  const dash = await tgLogin(a, "", ["--account", "-rf"]);
  assert.notEqual(dash.code, 0, dash.err);
  assert.match(dash.err, /account: '-rf' is not a name \(a letter or digit, then letters, digits, _ and -/);
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "-rf")));

  const ok = await login("12345\nhunter2\n");
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /password \(two-step verification, hint: pet\)/);
  assert.match(ok.out, /signed in as Ada Lovelace, @ada \(user id 777000111\)/);
  assert.ok(!ok.err.includes(API_HASH) && !ok.out.includes(API_HASH), "the api_hash is never shown");
  assert.ok(!ok.err.includes("hunter2"), "the password is never logged");

  // Private to the daemon's user: the account's directory, TDLib's, the key.
  const dir = path.join(dataDir, "telegram", "15550001");
  for (const d of [path.join(dataDir, "telegram"), dir, path.join(dir, "td")])
    assert.equal(fs.statSync(d).mode & 0o777, 0o700, d);
  assert.equal(fs.statSync(path.join(dir, "db.key")).mode & 0o777, 0o600);
  assert.ok(!fs.readFileSync(path.join(dir, "db.key")).includes(Buffer.from("hunter2")));
  assert.equal(psql("SELECT kind || ':' || handle || ':' || external_id FROM accounts WHERE kind = 'telegram_user'"),
    "telegram_user:15550001:777000111");

  // One Telegram user is one account: the same user under another name is
  // refused, naming the account that has it, and leaves nothing behind:
  // no directory, and no session on Telegram's side (logged out, not
  // merely closed).
  const endings = path.join(dataDir, "..", "endings");
  const again = await tgLogin({ ...a, env: { ...a.env, FAKE_TDJSON_ENDINGS: endings } }, "12345\nhunter2\n",
    ["--account", "ada2"]);
  assert.notEqual(again.code, 0);
  assert.match(again.err, /the Telegram user 777000111 is signed in already as the account '15550001'/);
  assert.ok(!fs.existsSync(path.join(dataDir, "telegram", "ada2")), "the refused sign-in left its directory");
  assert.match(fs.readFileSync(endings, "utf8"), /^logOut .*\/telegram\/ada2\/td$/m, "the refused session was logged out");
  assert.equal(psql("SELECT string_agg(handle, ',') FROM accounts WHERE kind = 'telegram_user'"), "15550001");
});

test("login: with Telegram out of reach it says what it waits for, then fails within 10 s", async () => {
  // TDLib connecting and never answering the phone number: a machine
  // without a network, as the fake plays it.
  const off = tgAccount({ ...script, stall_methods: ["setAuthenticationPhoneNumber"],
    connection_state: "connectionStateConnecting" }, { apiHash: API_HASH });
  const t0 = Date.now();
  const r = await tgLogin(off, "");
  const took = Date.now() - t0;
  assert.notEqual(r.code, 0, r.err);
  assert.match(r.err, /waiting for Telegram \(TDLib\) to answer the sign-in request \(the phone number\): 5 s; connecting to Telegram's servers/);
  assert.match(r.err, /login failed: cannot reach Telegram: no answer to the sign-in request \(the phone number\) in 10 s, and TDLib is not connected \(connecting to Telegram's servers\)/);
  assert.ok(took < 20000, `the login took ${took} ms to fail`);
  assert.ok(!fs.existsSync(path.join(off.data, "telegram", "15550001")), "the failed sign-in left its directory");
  // The application's settings are checked before any work: at once.
  const bare = await tgLogin({ ...off, settings: off.settings.slice(0, 4) }, "");
  assert.equal(bare.code, 1);
  assert.match(bare.err, /needs --telegram-api-id and --telegram-api-hash/);
});

test("serve: the account, its chats, a backfill through a FloodWait, live updates, sending", async () => {
  const { d, c } = await serve();
  try {
    const auth = await call(c, "authStatus");
    assert.equal(auth.authenticated, true);
    assert.equal(auth.userId, "777000111");
    assert.equal(auth.phone, "15550001");
    assert.equal(auth.sessionPath, path.join(dataDir, "telegram", "15550001"));
    assert.ok(auth.lastLoginAt);

    // Every chat, loaded two a call until TDLib says all are.
    const chats = await until("the chats", async () => {
      const l = await call(c, "channelsList", { limit: 50 });
      const list = l.channels ?? l.items ?? [];
      return list.length >= 5 ? list : null;
    });
    const titles = chats.map((x) => x.title ?? x.peerTitle).sort();
    assert.deepEqual(titles, ["Big group", "Bob", "News", "Second big", "Team"]);
    assert.equal(psql(`SELECT kind FROM chats WHERE id = ${BIG}`), "supergroup");
    assert.equal(psql("SELECT kind FROM chats WHERE id = -1009876543210"), "channel");

    // Backfill exactly the newest 300 of 1,000, through a FloodWait.
    const added = await call(c, "syncJobsAdd", { channelId: BIG, depth: 300 });
    assert.equal(added.job.channelId, BIG);
    let sawWait = null;
    const done = await until("the backfill", async () => {
      const l = await call(c, "syncJobsList", { channelId: BIG });
      const j = l.jobs[0];
      if (j.waiting === "floodWait" && !sawWait) sawWait = j;
      return j.status === "idle" ? j : null;
    });
    assert.ok(sawWait, "syncJobsList showed the FloodWait");
    assert.ok(sawWait.resumesAt, "with when the job resumes");
    assert.match(sawWait.error, /FloodWait/);
    assert.equal(done.attempts <= 2, true, `a FloodWait is not a failed attempt (${done.attempts})`);
    assert.equal(psql(`SELECT count(*) || ':' || min(id) || ':' || max(id) FROM messages WHERE chat_id = ${BIG}`), "300:701:1000");
    assert.equal(done.fetched, 300, "fetched counts each message once");
    assert.equal(psql(`SELECT text FROM messages WHERE chat_id = ${BIG} AND id = 701`), "Big group message 701");

    // Live: a new message, its edit, another one deleted for good, and an
    // eviction from TDLib's cache (not a deletion).
    deliver(a, [
      { "@type": "updateNewMessage", message: tdMsg(BOB, 31, "live one") },
      { "@type": "updateNewMessage", message: tdMsg(BOB, 32, "live two") },
    ]);
    await until("the live messages", () => psql(`SELECT count(*) FROM messages WHERE chat_id = ${BOB} AND id IN (31, 32)`) === "2");
    deliver(a, [
      { "@type": "updateMessageContent", chat_id: BOB, message_id: 31 * 1048576, new_content: tdText("live one, edited") },
      { "@type": "updateMessageEdited", chat_id: BOB, message_id: 31 * 1048576, edit_date: 1800000100, reply_markup: null },
      { "@type": "updateDeleteMessages", chat_id: BOB, message_ids: [32 * 1048576], is_permanent: true, from_cache: false },
      { "@type": "updateDeleteMessages", chat_id: BOB, message_ids: [31 * 1048576], is_permanent: false, from_cache: true },
    ]);
    await until("the edit and the deletion", () =>
      psql(`SELECT string_agg(id || '=' || text, ',' ORDER BY id) FROM messages WHERE chat_id = ${BOB} AND id >= 31`) === "31=live one, edited");
    assert.equal(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BOB} AND id = 31`), "1", "stored once");

    // Sending through the account.
    const sent = await call(c, "messagesSend", { channelId: BOB, text: "hello from parley" });
    assert.equal(sent.channelId, BOB);
    assert.ok(Number.isInteger(sent.messageId) && sent.messageId > 31, JSON.stringify(sent));
    await until("the sent message stored", () =>
      psql(`SELECT text || ':' || outgoing FROM messages WHERE chat_id = ${BOB} AND id = ${sent.messageId}`) === "hello from parley:true");

    // Realtime off: updates are not stored; on again: they are.
    assert.equal((await call(c, "syncRealtimeSet", { enabled: false })).realtimeActive, false);
    deliver(a, [{ "@type": "updateNewMessage", message: tdMsg(BOB, 40, "while off") }]);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BOB} AND id = 40`), "0");
    assert.equal((await call(c, "syncRealtimeSet", { enabled: true })).realtimeActive, true);
    deliver(a, [{ "@type": "updateNewMessage", message: tdMsg(BOB, 41, "on again") }]);
    await until("the message after realtime on", () => psql(`SELECT count(*) FROM messages WHERE chat_id = ${BOB} AND id = 41`) === "1");

    // A job canceled, then retried.
    await call(c, "syncJobsAdd", { channelId: -4001, depth: 5 });
    const canceled = await call(c, "syncJobsCancel", { channelId: -4001 });
    assert.equal(canceled.canceled, 1);
    const retried = await call(c, "syncJobsRetry", { channelId: -4001 });
    assert.equal(retried.updated, 1);
    await until("the retried job", async () => (await call(c, "syncJobsList", { channelId: -4001 })).jobs[0].status === "idle");
    assert.equal(psql("SELECT count(*) FROM messages WHERE chat_id = -4001 AND id BETWEEN 6 AND 10"), "5");

    // minDate: only what is newer (News: messages 1..5, a minute apart).
    const since = new Date((1700000000 + 3 * 60) * 1000).toISOString();
    await call(c, "syncJobsAdd", { channelId: -1009876543210, minDate: since });
    await until("the minDate backfill", async () => (await call(c, "syncJobsList", { channelId: -1009876543210 })).jobs[0].status === "idle");
    assert.equal(psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM messages WHERE chat_id = -1009876543210"), "3,4,5");

    // The account's figures.
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /parley_telegram_user_accounts\{state="running"\} 1/);
    assert.match(metrics, /parley_telegram_user_updates_stored_total [1-9]/);
    assert.ok(!d.log().includes(API_HASH), "the api_hash is never logged");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("the next run starts signed in without asking; a kill -9 mid-backfill resumes", async () => {
  let { d, c } = await serve();
  try {
    await call(c, "syncJobsAdd", { channelId: BIG2, depth: 5000 });
    // Killed once some pages are stored, well before the end.
    await until("a few pages", () => {
      const n = Number(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BIG2}`));
      return n >= 150 && n < 2000;
    });
  } finally {
    d.child.kill("SIGKILL");
    await once(d.child, "exit");
  }
  const before = Number(psql(`SELECT (cursor ->> 'count')::int FROM sync_jobs WHERE chat_id = ${BIG2}`));
  assert.ok(before > 0 && before < 5000, `the cursor holds the pages stored (${before})`);

  ({ d, c } = await serve());
  try {
    assert.doesNotMatch(d.log(), /code Telegram sent/);
    const auth = await call(c, "authStatus");
    assert.equal(auth.authenticated, true, JSON.stringify(auth));
    const job = await until("the resumed backfill", async () => {
      const j = (await call(c, "syncJobsList", { channelId: BIG2 })).jobs[0];
      return j.status === "idle" ? j : null;
    }, 90000);
    assert.equal(job.fetched, 5000, JSON.stringify(job));
    assert.equal(psql(`SELECT count(*) || ':' || count(DISTINCT id) || ':' || min(id) FROM messages WHERE chat_id = ${BIG2}`), "5000:5000:1");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
