// Live reads through a Telegram user account, against the fake libtdjson
// (tests/support/fake_tdjson*.c): channelsSearch searches the account's
// dialogs and public chats (merged, deduplicated, a chat not in the store
// stored); messagesList, messagesGet, messagesContext and messagesSearch
// with source "live" read through TDLib, store what they read and answer
// in the archive's shape; "both" merges archive and live without
// duplicates; bad arguments and a FloodWait answer isError saying what to
// do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { call, dropAccounts, haveFake, refused, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

const BOB = 42;
const BIG = -1001234567890;
const NEWS = -1009876543210;
const OPEN = -1007777777777; // public, not joined

const script = {
  phone: "+15550002",
  code: "12345",
  user: { id: 777000222, first_name: "Ada", username: "ada2", phone_number: "15550002" },
  users: [{ id: BOB, first_name: "Bob", username: "bob" }],
  chats: [
    { id: BOB, type: "private", user_id: BOB, title: "Bob", messages: 30 },
    { id: BIG, type: "supergroup", title: "Big group", messages: 1000, senders: [BOB] },
    { id: NEWS, type: "channel", title: "News", username: "newsch", messages: 5 },
    { id: OPEN, type: "channel", title: "Open news", username: "opennews", messages: 3, public: true },
  ],
  history_page_max: 50,
  flood_wait: { method: "searchChatMessages", after_calls: 1, seconds: 30 },
};

const ids = (msgs) => msgs.map((m) => m.messageId);

before(haveFake);
after(dropAccounts);

test("live reads through the user account: dialogs, history, one message, context, search", async () => {
  const a = tgAccount(script, { apiHash: "0123456789abcdef" });
  const psql = a.psql;
  const signed = await tgLogin(a, "12345\n");
  assert.equal(signed.code, 0, signed.err);

  const { d, c } = await tgServe(a);
  try {
    await until("the chats", async () => (await call(c, "channelsList", { limit: 50 })).channels.length >= 3);
    assert.equal(psql(`SELECT count(*) FROM chats WHERE id = ${OPEN}`), "0", "a chat not joined is not listed");

    // channelsSearch: the account's chat first, then the public one (News is
    // found by both searches: once), the public chat stored.
    const found = await call(c, "channelsSearch", { query: "news" });
    assert.deepEqual(found.channels.map((x) => x.channelId), [NEWS, OPEN]);
    assert.equal(found.channels[0].title, "News");
    assert.equal(found.channels[1].type, "channel");
    assert.equal(psql(`SELECT title || ':' || kind FROM chats WHERE id = ${OPEN}`), "Open news:channel");
    assert.deepEqual((await call(c, "channelsSearch", { query: "news", limit: 1 })).channels.map((x) => x.channelId), [NEWS]);
    assert.deepEqual((await call(c, "channelsSearch", { query: "no such chat" })).channels, []);
    assert.match(await refused(c, "channelsSearch", { query: "   " }), /query: give words/);

    // messagesList live: the newest of the chat as Telegram has it, stored,
    // in the archive's shape.
    const before = Number(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BIG}`));
    assert.ok(before <= 1, `only the last message is stored yet (${before})`);
    const live = await call(c, "messagesList", { channelId: BIG, source: "live", limit: 5 });
    assert.deepEqual(ids(live.messages), [1000, 999, 998, 997, 996]);
    assert.equal(live.messages[4].text, "Big group message 996");
    assert.equal(live.messages[4].senderId, BOB);
    assert.equal(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BIG}`), "5");
    const arch = await call(c, "messagesList", { channelId: BIG, limit: 5 });
    assert.deepEqual(live.messages, arch.messages, "the live answer has the archive's shape");
    // A longer list pages back through TDLib's short pages.
    const long = await call(c, "messagesList", { channelId: BIG, source: "live", limit: 120 });
    assert.equal(long.messages.length, 120);
    assert.deepEqual([long.messages[0].messageId, long.messages[119].messageId], [1000, 881]);
    assert.equal(new Set(ids(long.messages)).size, 120);
    // both: the archive and Telegram merged, without duplicates.
    psql(`DELETE FROM messages WHERE chat_id = ${BIG} AND id > 990`);
    const both = await call(c, "messagesList", { channelId: BIG, source: "both", limit: 15 });
    assert.deepEqual(ids(both.messages), Array.from({ length: 15 }, (_, i) => 1000 - i));
    assert.match(await refused(c, "messagesList", { source: "live" }), /channelId: messagesList with source "live" reads one chat/);

    // messagesGet and messagesContext live.
    const one = await call(c, "messagesGet", { channelId: BIG, messageId: 500, source: "live" });
    assert.equal(one.message.text, "Big group message 500");
    assert.equal(psql(`SELECT text FROM messages WHERE chat_id = ${BIG} AND id = 500`), "Big group message 500");
    assert.match(await refused(c, "messagesGet", { channelId: BIG, messageId: 5000, source: "live" }),
      /Telegram has no message 5000 in chat/);
    const ctx = await call(c, "messagesContext", { channelId: BIG, messageId: 300, before: 2, after: 3, source: "live" });
    assert.deepEqual([ids(ctx.before), ctx.target.messageId, ids(ctx.after)], [[298, 299], 300, [301, 302, 303]]);

    // messagesSearch in one chat (searchChatMessages) and across chats
    // (searchMessages: a chat not joined is not searched).
    const inBob = await call(c, "messagesSearch", { query: "Bob message 2", source: "live", channelIds: [BOB] });
    assert.deepEqual(ids(inBob.messages).sort((a, b) => a - b), [2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
    assert.equal(inBob.messages[0].channelTitle, "Bob");
    assert.equal(inBob.messages[0].match, "live");
    assert.equal(inBob.mode, "live");
    assert.equal(psql(`SELECT count(*) FROM messages WHERE chat_id = ${BOB} AND id IN (2, 20, 29)`), "3");
    const across = await call(c, "messagesSearch", { query: "news message", source: "live" });
    assert.deepEqual(across.messages.map((m) => `${m.channelId}:${m.messageId}`),
      [5, 4, 3, 2, 1].map((i) => `${NEWS}:${i}`));
    // Dates bound Telegram's own search: the newest three up to message 500's date.
    const dated = await call(c, "messagesSearch", { query: "big group message", source: "live", limit: 3, toDate: String(1700000000 + 500 * 60) });
    assert.deepEqual(ids(dated.messages), [500, 499, 498]);
    assert.match(await refused(c, "messagesSearch", { query: "x", source: "live", fromDate: "not a date" }), /fromDate/);
    const regex = await call(c, "messagesSearch", { query: "news message", regex: "message [12]$", source: "live" });
    assert.deepEqual(ids(regex.messages), [2, 1]);
    // both: the archive's hits and Telegram's, once each.
    // (The archive also holds the public chat's last message, stored with it.)
    const merged = await call(c, "messagesSearch", { query: "news message", source: "both" });
    const keys = merged.messages.map((m) => `${m.channelId}:${m.messageId}`);
    assert.equal(new Set(keys).size, keys.length, `no duplicates: ${keys}`);
    assert.deepEqual(keys.filter((k) => k.startsWith(`${NEWS}:`)), [5, 4, 3, 2, 1].map((i) => `${NEWS}:${i}`));
    assert.equal(merged.source, "both");
    assert.match(await refused(c, "messagesSearch", { regex: "x", source: "live" }), /query: messagesSearch with source "live" needs words/);

    // A FloodWait: the second searchChatMessages waits 30 seconds.
    const wait = await refused(c, "messagesSearch", { query: "Bob", source: "live", channelIds: [BOB] });
    const secs = Number(/FloodWait\): wait (\d+) seconds/.exec(wait)?.[1]);
    assert.ok(secs >= 1 && secs <= 30, wait);

    // The archive answers as before.
    assert.equal((await call(c, "messagesGet", { channelId: BIG, messageId: 300 })).message.messageId, 300);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
