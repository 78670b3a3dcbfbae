// A bot and a user account together on one store (the Bot API emulator and
// the fake libtdjson): both keep their chats in sync; a chat both see is
// one chat and each message one row, and an older version of a message
// (the account's backfill of a chat the bot already stored) never replaces
// a newer one; a message to the account's private chat goes through the
// account, not the bot; history is backfilled through the account.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { call, dropAccounts, haveFake, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const TOKEN = "123456:TESTSECRET-bot-and-account";
const GROUP = -1001000000000; // the emulator's "Group 0"; the account is in it too
const BOB = 42;
let emu, api;

async function control(p, body) {
  const r = await fetch(`${api}${p}`, body ? { method: "POST", body: JSON.stringify(body) } : {});
  return r.json();
}

before(async () => {
  haveFake();
  emu = spawn(process.execPath, [path.join(here, "..", "harness", "botapi_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(emu.stdout, "data");
  api = `http://127.0.0.1:${JSON.parse(line).port}`;
});

after(() => {
  emu?.kill();
  dropAccounts();
});

test("a bot and an account on one store: one chat, one row per message, newer versions kept, sends routed by chat", async () => {
  const a = tgAccount({
    phone: "+15550003", code: "33333",
    user: { id: 777000333, first_name: "Alan", phone_number: "15550003" },
    users: [{ id: BOB, first_name: "Bob" }],
    chats: [
      { id: BOB, type: "private", user_id: BOB, title: "Bob", messages: 5 },
      { id: GROUP, type: "supergroup", title: "Group 0", messages: 3, senders: [BOB] },
    ],
  });
  const li = await tgLogin(a, "33333\n");
  assert.equal(li.code, 0, li.err);

  // The bot's traffic first: Group 0's messages 1..n, dated 2026.
  await control("/control/generate", { n: 12, chats: 1, editEvery: 0 });
  const want = (await control("/control/expected")).filter(([c]) => c === GROUP);
  assert.ok(want.length >= 3);
  const { d, c } = await tgServe(a, ["--telegram-bot-token", TOKEN, "--telegram-api-url", api, "--telegram-poll-timeout-s", "1"]);
  try {
    await until("the bot's messages", () => a.psql(`SELECT count(*) FROM messages WHERE chat_id = ${GROUP}`) === String(want.length));
    await until("the account's chats", () => a.psql(`SELECT count(*) FROM chats WHERE id IN (${BOB}, ${GROUP})`) === "2");
    assert.equal(a.psql(`SELECT count(*) FROM chats WHERE id = ${GROUP}`), "1", "one chat");
    assert.equal((await call(c, "authStatus")).kind, "user");

    // The account backfills Group 0: its older copies of messages 1..3 are
    // stored once each and do not replace the bot's newer ones.
    await call(c, "syncJobsAdd", { channelId: GROUP, depth: 10 });
    await until("the backfill", async () => (await call(c, "syncJobsList", { channelId: GROUP })).jobs[0].status === "idle");
    assert.equal(a.psql(`SELECT count(*) || ':' || count(DISTINCT id) FROM messages WHERE chat_id = ${GROUP}`), `${want.length}:${want.length}`);
    for (const [, id, text] of want.slice(0, 3))
      assert.equal(a.psql(`SELECT text FROM messages WHERE chat_id = ${GROUP} AND id = ${id}`), text, `message ${id} kept the bot's newer version`);

    // Bob's chat is the account's: the message goes through the account.
    const sent = await call(c, "messagesSend", { channelId: BOB, text: "via the account" });
    assert.equal(sent.channelId, BOB);
    const viaBot = (await control("/control/sent")).filter((s) => s.chat_id === BOB);
    assert.equal(viaBot.length, 0, "not through the bot");
    await until("the sent message", () => a.psql(`SELECT text FROM messages WHERE chat_id = ${BOB} AND outgoing AND id = ${sent.messageId}`) === "via the account");

    // The bot still sends to the chats that are its own.
    const owner = a.psql(`SELECT a.kind FROM chats c JOIN accounts a ON a.id = c.account_id WHERE c.id = ${GROUP}`);
    await call(c, "messagesSend", { channelId: GROUP, text: "to the group" });
    const toGroup = (await control("/control/sent")).filter((s) => s.chat_id === GROUP);
    assert.equal(toGroup.length, owner === "telegram_bot" ? 1 : 0, `the group's sender follows its account (${owner})`);
    assert.ok(!d.log().includes(TOKEN), "the token is never logged");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
