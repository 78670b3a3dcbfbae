// Sources stay in their surfaces (issue #28; docs/architecture.md, "Sources
// and surfaces"): one store holds a Telegram Desktop export, a ChatWise
// app.db, Claude Code transcripts and Bluesky posts, each with the word
// "marmalade" and a word and a title of its own. parleyd serves every
// toolset over stdio; every list, search and unread tool of every toolset
// is called, and no answer holds another source's chats or messages (their
// planted words, titles, ids, the assistants' system prompt), while each
// surface finds its own; another source's chat asked for by id is refused,
// naming the tools that read it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, PROTOCOL, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = path.join(here, "..", "harness");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_surfaces_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-surfaces-");
const dataDir = path.join(work, "data");
const NOW = Date.now();
const DAY = 86400000;

// What each source's rows carry, planted below.
const COMMON = "marmalade";
const WORD = { telegram: "zanzibarite", chatwise: "kumquatory", agents: "frobnicular", bluesky: "skylarkish" };
const TITLE = {
  telegram: "Zanzibarite Club",
  chatwise: "Kumquatory Notes",
  agents: "frobnicular-lab", // the project folder names the sessions
  bluesky: "Skylarkish Bird",
};
const SYSTEM = "You are a helpful assistant"; // the ChatWise chats' system prompt
const SURFACES = ["telegram", "chatwise", "agents", "bluesky"];
let client;
let markers; // source -> strings only that source's rows hold
let ids; // source -> a chat id of it

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

function parleyImport(source, p) {
  const r = spawnSync(PARLEYD, ["import", source, p, "--db", url, "--data-dir", dataDir], { encoding: "utf8" });
  assert.equal(r.status, 0, `${source}: ${r.stderr}`);
}

// A tool's answer as text (structuredContent and the text agree), or
// {error} for isError.
async function call(name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) return { error: textOf(r) };
  return { text: textOf(r), data: r.structuredContent };
}

// The answer of a tool of surface `own`: no other source's marker in it.
function assertOnly(own, name, answer) {
  assert.equal(answer.error, undefined, `${name}: ${answer.error}`);
  for (const s of SURFACES) {
    if (s === own) continue;
    for (const m of markers[s]) assert.ok(!answer.text.includes(m), `${name} (${own}) shows ${s}'s "${m}":\n${answer.text.slice(0, 2000)}`);
  }
}

function writeTelegram(dir) {
  execFileSync("node", [path.join(harness, "gen_tg_export.mjs"), "inline", dir]);
  const file = path.join(dir, "result.json");
  const exp = JSON.parse(fs.readFileSync(file, "utf8"));
  const sec = Math.floor((NOW - DAY) / 1000);
  const text = `${WORD.telegram} ${COMMON} from the message service`;
  exp.chats.list.push({
    name: TITLE.telegram, type: "private_group", id: 600, messages: [{
      id: 1, type: "message", date: new Date(sec * 1000).toISOString().slice(0, 19), date_unixtime: String(sec),
      from: "Mo Reza", from_id: "user2003", text, text_entities: [{ type: "plain", text }],
    }],
  });
  fs.writeFileSync(file, JSON.stringify(exp));
  return file;
}

function writeChatwise(appDb) {
  fs.mkdirSync(path.dirname(appDb), { recursive: true });
  execFileSync("node", [path.join(harness, "gen_chatwise.mjs"), appDb, String(NOW)]);
  const t = NOW - 2 * DAY;
  execFileSync("sqlite3", [appDb], {
    input: `INSERT INTO chat VALUES ('chat-planted-0007', '${TITLE.chatwise}', ${t}, ${t + 60000});
INSERT INTO message VALUES ('chat-planted-0007-m1', 'chat-planted-0007', 'system', '${SYSTEM}. Be brief.', ${t}, NULL, NULL);
INSERT INTO message VALUES ('chat-planted-0007-m2', 'chat-planted-0007', 'user', '${WORD.chatwise} ${COMMON} from the assistant chat', ${t + 60000}, NULL, NULL);`,
  });
}

function writeTranscripts(dir) {
  execFileSync("node", [path.join(harness, "gen_transcripts.mjs"), dir]);
  const sid = "bbbbbbbb-0000-4000-8000-000000000009";
  const at = (min) => new Date(NOW - 3 * DAY + min * 60000).toISOString();
  const base = { isSidechain: false, userType: "external", cwd: `/home/dev/${TITLE.agents}`, sessionId: sid, version: "2.0.14" };
  const lines = [
    { ...base, type: "user", uuid: "cccccccc-0000-4000-8000-000000000001", parentUuid: null, timestamp: at(0),
      message: { role: "user", content: `${WORD.agents} ${COMMON} from the agent session` } },
    { ...base, type: "assistant", uuid: "cccccccc-0000-4000-8000-000000000002", parentUuid: "cccccccc-0000-4000-8000-000000000001",
      timestamp: at(1), message: { role: "assistant", model: "claude-x", content: [{ type: "text", text: `Noted: ${WORD.agents}.` }] } },
  ];
  fs.mkdirSync(path.join(dir, TITLE.agents), { recursive: true });
  fs.writeFileSync(path.join(dir, TITLE.agents, `${sid}.jsonl`), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}

// Posts as the Bluesky connector stores them (parley_bsky_store_posts, the
// function its search and refresh job call), without a network.
function storeBluesky() {
  const post = {
    uri: "at://did:plc:skylarkbird/app.bsky.feed.post/3kplanted", cid: "bafyplanted",
    author: { did: "did:plc:skylarkbird", handle: "skylark.bsky.social", displayName: TITLE.bluesky },
    record: { text: `${WORD.bluesky} ${COMMON} from the feed`, createdAt: new Date(NOW - 4 * DAY).toISOString() },
    likeCount: 1, repostCount: 0, replyCount: 0, quoteCount: 0,
  };
  psql(`SELECT parley_bsky_store_posts(NULL, '${JSON.stringify([post]).replaceAll("'", "''")}'::jsonb)`);
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  parleyImport("telegram-export", writeTelegram(path.join(work, "telegram")));
  const appDb = path.join(work, "ChatWise", "app.db");
  writeChatwise(appDb);
  parleyImport("chatwise", appDb);
  writeTranscripts(path.join(work, "transcripts"));
  parleyImport("claude-code", path.join(work, "transcripts"));
  storeBluesky();

  // Each source's markers, from the store: its planted word and title, and
  // what only its rows hold.
  const rows = (sql) => psql(sql).split("\n").filter(Boolean);
  const titles = (s) => rows(`SELECT DISTINCT title FROM chats WHERE parley_source_of(kind) = '${s}' AND title IS NOT NULL`);
  markers = {
    telegram: [WORD.telegram, ...titles("telegram")],
    chatwise: [WORD.chatwise, SYSTEM, ...titles("chatwise"), "chat-rust-async-0001"],
    // the project names ("parley", "website") are too common to look for:
    // the sessions' ids are the agents' own
    agents: [WORD.agents, TITLE.agents, ...rows("SELECT external_id FROM chats WHERE kind = 'agent_session'")],
    bluesky: [WORD.bluesky, TITLE.bluesky, "skylark.bsky.social", "did:plc:skylarkbird"],
  };
  assert.ok(markers.telegram.includes(TITLE.telegram));
  assert.ok(markers.chatwise.includes(TITLE.chatwise));
  assert.equal(markers.agents.length, 2 + 4, "four agent sessions");
  ids = {};
  for (const s of SURFACES)
    ids[s] = psql(`SELECT min(id) FROM chats WHERE parley_source_of(kind) = '${s}' AND title = '${TITLE[s]}'`);
  ids.agents = psql("SELECT id FROM chats WHERE kind = 'agent_session' AND title = 'frobnicular-lab'");
  for (const s of SURFACES) {
    assert.match(ids[s], /^-?\d+$/, `a chat of ${s}`);
    ids[s] = Number(ids[s]);
  }
  // An import is read; a message that came since (as live sync stores
  // one) is unread, as are the assistants' and agents' messages, which have
  // no read marker at all.
  psql(`INSERT INTO messages (chat_id, id, sender_id, sender_name, date, text)
        VALUES (${ids.telegram}, 2, 2003, 'Mo Reza', now() - interval '1 hour', 'new: ${WORD.telegram} again')`);

  ({ client } = await stdioClient(["--db", url, "--toolsets", "all", "--data-dir", dataDir]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("the store holds every source, and the telegram toolset sees Telegram's chats only", async () => {
  assert.equal(psql("SELECT string_agg(DISTINCT parley_source_of(kind), ',' ORDER BY parley_source_of(kind)) FROM chats"),
    "agents,bluesky,chatwise,telegram");
  const list = await call("channelsList", { includeInactive: true, limit: 500 });
  assertOnly("telegram", "channelsList", list);
  assert.ok(list.text.includes(TITLE.telegram));
  assert.equal(list.data.channels.length, Number(psql("SELECT count(*) FROM chats WHERE parley_source_of(kind) = 'telegram'")));
  assert.ok(list.data.channels.every((c) => c.type !== "ai_chat" && c.type !== "agent_session" && c.type !== "feed"));
  const groups = await call("groupsList", { limit: 500 });
  assertOnly("telegram", "groupsList", groups);
  assert.ok(groups.text.includes(TITLE.telegram));
  const status = await call("serverStatus");
  assertOnly("telegram", "serverStatus", status);
  assert.equal(status.data.chats, Number(psql("SELECT count(*) FROM chats WHERE parley_source_of(kind) = 'telegram'")));
  assert.equal(status.data.messages, Number(psql(
    "SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE parley_source_of(c.kind) = 'telegram'")));
  assertOnly("telegram", "syncJobsList", await call("syncJobsList", { limit: 500 }));
  const auto = await call("channelsTagsAuto", {});
  assertOnly("telegram", "channelsTagsAuto", auto);
  const tag = auto.data.channels.flatMap((c) => c.tags)[0]?.tag;
  if (tag) assertOnly("telegram", "channelsTagsSearch", await call("channelsTagsSearch", { tag }));
});

test("telegram: messages listed and searched are Telegram's", async () => {
  const list = await call("messagesList", { limit: 500 });
  assertOnly("telegram", "messagesList", list);
  assert.ok(list.text.includes(WORD.telegram));
  for (const [args, what] of [
    [{ query: COMMON }, "word"],
    [{ query: COMMON, orderBy: "rank" }, "by rank"],
    [{ query: "marmelade", fuzzy: true }, "fuzzy"],
    [{ regex: COMMON }, "regex"],
    [{ query: "assistant" }, "a word of the assistants' prompt"],
    [{ limit: 500 }, "no query"],
  ]) {
    const r = await call("messagesSearch", args);
    assertOnly("telegram", `messagesSearch ${what}`, r);
    if (what !== "a word of the assistants' prompt") assert.ok(r.text.includes(WORD.telegram), `messagesSearch ${what} finds Telegram's`);
  }
  for (const s of ["chatwise", "agents", "bluesky"]) {
    const r = await call("messagesSearch", { query: WORD[s] });
    assert.deepEqual(r.data.messages, [], `messagesSearch ${WORD[s]}`);
  }
  const people = await call("contactsSearch", { query: "Skylark" });
  assertOnly("telegram", "contactsSearch", people);
  assert.deepEqual(people.data.contacts, []);
  const dena = await call("contactsSearch", { query: "Dena" });
  assert.ok(dena.data.contacts.some((c) => c.firstName === "Dena"));
});

test("telegram: another source's chat by id is refused, naming its tools", async () => {
  const cw = await call("channelsGet", { channelId: ids.chatwise });
  assert.match(cw.error, /channelId: chat .* is an AI-assistant chat \(ChatWise\).*chatwise tools/);
  assert.ok(!cw.error.includes(TITLE.chatwise));
  const ag = await call("messagesList", { channelId: ids.agents });
  assert.match(ag.error, /is an agent session.*memory tools/);
  const bs = await call("messagesSearch", { query: COMMON, channelIds: [ids.telegram, ids.bluesky] });
  assert.match(bs.error, /is a Bluesky feed.*bluesky tools/);
  assert.match((await call("groupsInfo", { channelId: ids.chatwise })).error, /AI-assistant chat/);
  const own = await call("messagesSearch", { query: COMMON, channelIds: [ids.telegram] });
  assertOnly("telegram", "messagesSearch in a chat", own);
  assert.equal(own.data.messages.length, 1);
});

test("inline: conversations, unread and people are Telegram's", async () => {
  const all = await call("conversations_list", { limit: 100 });
  assertOnly("telegram", "conversations_list", all);
  assert.ok(all.text.includes(TITLE.telegram));
  assert.ok(all.data.items.every((c) => ["dm", "group", "channel"].includes(c.kind)));
  for (const s of ["chatwise", "agents", "bluesky"]) {
    const r = await call("conversations_list", { query: TITLE[s] });
    assertOnly("telegram", `conversations_list ${TITLE[s]}`, r);
    assert.deepEqual(r.data.items, []);
  }
  const unreadSorted = await call("conversations_list", { sort: "unread", unreadOnly: true, limit: 100 });
  assertOnly("telegram", "conversations_list unreadOnly", unreadSorted);
  const unread = await call("messages_unread", { limit: 200 });
  assertOnly("telegram", "messages_unread", unread);
  assert.ok(unread.text.includes(WORD.telegram), "Telegram's unread message is there");
  assert.equal(unread.data.scannedChats <= all.data.items.length, true);
  const people = await call("people_search", { query: "skylark" });
  assertOnly("telegram", "people_search", people);
  assert.deepEqual(people.data.items, []);
  const search = await call("messages_search", { chatId: ids.telegram, query: COMMON });
  assertOnly("telegram", "messages_search", search);
  assert.equal(search.data.items.length, 1);
  assertOnly("telegram", "messages_list", await call("messages_list", { chatId: ids.telegram }));
});

test("inline: another source's chat by id is refused, and is no resource", async () => {
  const cw = await call("messages_search", { chatId: ids.chatwise, query: COMMON });
  assert.match(cw.error, /chatId: chat .* is an AI-assistant chat.*conversations_list/);
  assert.match((await call("conversations_get", { chatId: ids.agents })).error, /agent session.*memory tools/);
  assert.match((await call("messages_list", { chatId: ids.bluesky })).error, /Bluesky feed/);
  assert.match((await call("messages_mark_read", { chatId: ids.chatwise })).error, /AI-assistant chat/);
  const notFound = PROTOCOL === "2026-07-28" ? -32602 : -32002;
  for (const s of ["chatwise", "agents", "bluesky"])
    await assert.rejects(client.readResource({ uri: `inline://chat/${ids[s]}` }), (e) => e.code === notFound);
  const own = await client.readResource({ uri: `inline://chat/${ids.telegram}` });
  assert.ok(own.contents[0].text.includes(TITLE.telegram));
});

test("chatwise: its own chats only", async () => {
  const r = await call("search_conversations", { intent_query: COMMON, time_window: "all" });
  assertOnly("chatwise", "search_conversations", r);
  assert.ok(r.text.includes(WORD.chatwise));
  for (const s of ["telegram", "agents", "bluesky"]) {
    const o = await call("search_conversations", { intent_query: WORD[s], time_window: "all" });
    assert.deepEqual([o.data.results, o.data.topChatIds], [[], []], `search_conversations ${WORD[s]}`);
  }
  const ids_ = await call("resolve_ids", { chatIdPrefix: "chat-" });
  assertOnly("chatwise", "resolve_ids", ids_);
  const g = await call("gather_chats", { chatIds: ["chat-planted-0007"] });
  assertOnly("chatwise", "gather_chats", g);
  assert.ok(g.text.includes(WORD.chatwise));
});

test("memory: agent sessions only", async () => {
  const s = await call("search_messages", { query: COMMON });
  assertOnly("agents", "search_messages", s);
  assert.ok(s.text.includes(WORD.agents));
  assert.equal(s.data.messages.length, 1);
  for (const w of [WORD.telegram, WORD.chatwise, WORD.bluesky])
    assert.deepEqual((await call("search_messages", { query: w })).data.messages, []);
  const recent = await call("get_recent_work", { limit: 1000 });
  assertOnly("agents", "get_recent_work", recent);
  assert.ok(recent.text.includes(WORD.agents));
  assertOnly("agents", "get_timeline", await call("get_timeline", { limit: 1000 }));
  assertOnly("agents", "get_compacting_actions", await call("get_compacting_actions", {}));
  assertOnly("agents", "get_latest_continuation", await call("get_latest_continuation", {}));
});

test("bluesky: its own posts only", async () => {
  const r = await call("search", { query: COMMON });
  assertOnly("bluesky", "search", r);
  assert.ok(r.text.includes(WORD.bluesky));
  for (const s of ["telegram", "chatwise", "agents"]) {
    const o = await call("search", { query: WORD[s] });
    assert.match(o.text, /· 0 posts/, `search ${WORD[s]}`);
  }
});
