// Telegram user accounts under faults, against the fake libtdjson: several
// accounts in one daemon, each with its own directory and client; two
// daemons on one database run the account's TDLib client one at a time
// (the other stands by and takes over within seconds of a kill -9); a
// TDLib client that stops answering fails the backfill's request after
// telegram_td_timeout_s and the job is retried, never hung; a TDLib error
// (a chat TDLib does not know) ends the job with TDLib's reason.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD } from "./lib.mjs";
import { call, deliver, dropAccounts, haveFake, tdMsg, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

function account(extra = {}) {
  return tgAccount({
    phone: "+15550002", code: "22222",
    user: { id: 777000222, first_name: "Grace", phone_number: "15550002" },
    users: [{ id: 43, first_name: "Carl" }],
    chats: [
      { id: 43, type: "private", user_id: 43, title: "Carl", messages: 5 },
      { id: -1002222222222, type: "supergroup", title: "Group", messages: 200, senders: [43] },
    ],
    ...extra,
  });
}

async function login(a, extra = []) {
  const r = await tgLogin(a, "22222\n", extra);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /signed in as Grace/);
}

const serve = (a, extra = []) => tgServe(a, extra);

const liveMsg = (sid, text) => ({ "@type": "updateNewMessage", message: tdMsg(43, sid, text, 43) });

before(haveFake);
after(dropAccounts);

test("two daemons: one runs the account, the other stands by and takes over after a kill -9", async () => {
  const a = account();
  await login(a);
  const one = await serve(a);
  let two;
  try {
    await until("the first daemon to run the account", () => /account 15550002: this daemon runs it/.test(one.d.log()));
    two = await serve(a);
    await until("the chats", () => a.psql("SELECT count(*) FROM chats") === "2");
    await new Promise((r) => setTimeout(r, 1500));
    assert.doesNotMatch(two.d.log(), /this daemon runs it/, "the second stands by");
    deliver(a, [liveMsg(6, "through the first")]);
    await until("the first's live message", () => a.psql("SELECT count(*) FROM messages WHERE chat_id = 43 AND id = 6") === "1");

    one.d.child.kill("SIGKILL");
    await once(one.d.child, "exit");
    await until("the takeover", () => /account 15550002: this daemon runs it/.test(two.d.log()), 30000);
    deliver(a, [liveMsg(7, "through the second")]);
    await until("the second's live message", () => a.psql("SELECT text FROM messages WHERE chat_id = 43 AND id = 7") === "through the second");
    const auth = await call(two.c, "authStatus");
    assert.equal(auth.authenticated, true);
  } finally {
    if (one.d.child.exitCode === null) one.d.child.kill("SIGKILL");
    if (two) assert.equal(await two.d.stop(), 0);
  }
});

test("a TDLib client that stops answering: the request times out and the job is retried", async () => {
  const a = account({ stall_methods: ["getChatHistory"] });
  await login(a);
  const { d, c } = await serve(a, ["--telegram-td-timeout-s", "1"]);
  try {
    await until("the chats", () => a.psql("SELECT count(*) FROM chats") === "2");
    await call(c, "syncJobsAdd", { channelId: -1002222222222, depth: 50 });
    const job = await until("the timed-out attempt", async () => {
      const j = (await call(c, "syncJobsList", { channelId: -1002222222222 })).jobs[0];
      return j.error && j.status === "pending" ? j : null;
    }, 30000);
    assert.match(job.error, /getChatHistory: .*timed out/i);
    assert.ok(job.attempts >= 1);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a TDLib error ends the job with TDLib's reason", async () => {
  const a = account();
  await login(a);
  const { d, c } = await serve(a);
  try {
    await until("the chats", () => a.psql("SELECT count(*) FROM chats") === "2");
    // A chat the store knows (an import, say) and the account does not.
    a.psql("INSERT INTO chats (id, kind, title) VALUES (-1003333333333, 'supergroup', 'Imported only')");
    await call(c, "syncJobsAdd", { channelId: -1003333333333, depth: 50 });
    const job = await until("the failed job", async () => {
      const j = (await call(c, "syncJobsList", { channelId: -1003333333333 })).jobs[0];
      return j.status === "error" ? j : null;
    }, 30000);
    assert.match(job.error, /getChatHistory: Chat not found/);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("several accounts: each signed in under its name, all run, the first signed in is the default", async () => {
  const a = account();
  const bad = spawn(PARLEYD, ["login", "telegram", "--phone", "+15550002", "--account", "no/slashes", ...a.settings], {
    stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...a.env },
  });
  let badErr = "";
  bad.stderr.on("data", (d) => (badErr += d));
  bad.stdin.end("");
  const [badCode] = await once(bad, "exit");
  assert.notEqual(badCode, 0);
  assert.match(badErr, /account: 'no\/slashes' is not a name/);

  await login(a, ["--account", "work"]);
  // "home" is another Telegram user (one user is one account): the fake
  // signs its directory in as user 777000333.
  a.rescript({ user: { ...a.script.user, id: 777000333 } });
  await login(a, ["--account", "home"]);
  a.rescript();
  for (const name of ["work", "home"])
    assert.equal(fs.statSync(path.join(a.data, "telegram", name)).mode & 0o777, 0o700);
  assert.equal(a.psql("SELECT string_agg(handle || ':' || is_default, ',' ORDER BY id) FROM accounts WHERE kind = 'telegram_user'"), "work:true,home:false");
  const { d, c } = await serve(a);
  try {
    await until("both accounts running", () => /account home: this daemon runs it/.test(d.log()) && /account work: this daemon runs it/.test(d.log()));
    await until("the chats", () => a.psql("SELECT count(*) FROM chats") === "2");
    const auth = await call(c, "authStatus");
    assert.equal(auth.account, "work");
    await call(c, "syncJobsAdd", { channelId: -1002222222222, depth: 20 });
    assert.equal(a.psql("SELECT a.handle FROM sync_jobs j JOIN accounts a ON a.id = j.account_id"), "work");
    await until("the job under the default account", async () => (await call(c, "syncJobsList", { channelId: -1002222222222 })).jobs[0].status === "idle");
    assert.equal(a.psql("SELECT count(*) FROM messages WHERE chat_id = -1002222222222 AND id > 180"), "20");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
