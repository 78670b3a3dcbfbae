#!/usr/bin/env node
// demo_archive.mjs: writes the demo archive tools/demo imports into an
// empty store: a whole-account Telegram Desktop export (DIR/result.json) of
// a dozen chats and about 3,000 messages in English, Russian, Chinese and
// Japanese, with replies, links, a forum with topics, a channel, personal
// chats and contacts; a ChatWise app.db (DIR/chatwise/app.db: a few
// AI-assistant chats; made with the sqlite3 command); and Claude Code
// transcripts (DIR/agents/PROJECT/SESSION.jsonl: two projects' sessions).
// The Lisbon offsite is talked about in all three, for recall.
// Deterministic but for its dates, which are relative to today: the same
// content every time, its newest message (in Weekend Hikes) yesterday at
// 18:00 local time, the ChatWise chats and the agents' sessions in the
// days before, so "today", "yesterday" and "last week" find something.
//
//   node tools/demo_archive.mjs DIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: demo_archive.mjs DIR");
  process.exit(2);
}

let seed = 7;
function rand() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const fill = (s, slots) => s.replace(/\{(\w+)\}/g, (_, k) => pick(slots[k]));

const LANG = {
  en: {
    slots: {
      thing: ["the staging deploy", "the search index", "the backup job", "the release notes", "the database migration",
        "the load test", "the API gateway", "the nightly build", "the design review", "the on-call rota"],
      when: ["today", "tomorrow morning", "on Friday", "after lunch", "next week", "tonight"],
      who: ["Alice", "Bob", "Chen", "Dana", "Omar", "Priya"],
      n: ["2", "3", "5", "12", "40", "95"],
    },
    lines: ["Is {thing} done yet?", "{thing} failed again, looking into it", "I moved {thing} to {when}",
      "{who} will review {thing} {when}", "Latency went down by {n}% after {thing}", "Can someone pair with me on {thing}?",
      "Heads up: {thing} is blocked on {who}", "Great work on {thing}, thanks {who}!", "Notes from the meeting about {thing} are in the doc",
      "We need {n} more reviewers for {thing}", "Rolling back {thing}, the error rate doubled", "Coffee {when}?",
      "Reminder: retro {when}", "{thing} is green now", "Who owns {thing}?", "Lunch {when} with {who}?"],
  },
  ru: {
    slots: {
      thing: ["релиз", "миграцию базы", "резервное копирование", "поиск по архиву", "новый сервер", "отчёт", "встречу"],
      when: ["сегодня", "завтра утром", "в пятницу", "после обеда", "на следующей неделе", "вечером"],
      who: ["Марина", "Олег", "Ира", "Павел", "Света"],
      book: ["«Мастер и Маргарита»", "«Анна Каренина»", "«Пикник на обочине»", "«Мы»", "«Война и мир»"],
    },
    lines: ["Привет! Кто посмотрит {thing} {when}?", "{who}, спасибо за {thing}", "Переносим {thing} на {when}",
      "Я дочитал {book}, очень понравилось", "Обсудим {book} {when}?", "{thing} готов, можно проверять",
      "Что-то сломалось после того, как мы запустили {thing}", "Отличная работа, {who}!", "Кто идёт на встречу {when}?",
      "Давайте начнём {book} в следующем месяце", "Напомните мне про {thing} {when}", "Спасибо всем, до завтра"],
  },
  zh: {
    slots: {
      thing: ["数据迁移", "搜索索引", "周报", "服务器升级", "数据库备份", "性能测试"],
      when: ["今天", "明天上午", "周五", "下周"],
      who: ["小王", "李娜", "张伟", "陈静"],
    },
    lines: ["{thing}完成了吗？", "{who}负责{thing}", "{thing}推迟到{when}", "{thing}出了问题，正在排查",
      "谢谢{who}，{thing}很顺利", "{when}开会讨论{thing}", "请大家{when}之前看一下{thing}", "数据检索速度提高了"],
  },
  ja: {
    slots: {
      thing: ["会議", "資料", "リリース", "デプロイ", "検索機能", "週報"],
      when: ["今日", "明日", "金曜日", "来週"],
      who: ["田中さん", "佐藤さん", "鈴木さん", "山本さん"],
    },
    lines: ["{thing}の準備はできましたか？", "{who}が{thing}を担当します", "{thing}は{when}に延期します",
      "{thing}の確認をお願いします", "{when}の{thing}、よろしくお願いします", "ありがとうございます、{who}",
      "東京オフィスで{thing}をします", "検索機能がとても速くなりました"],
  },
};

const PEOPLE = [
  [2001, "Alice", "Chen"], [2002, "Bob", "Miller"], [2003, "Dana", "Scott"], [2004, "Omar", "Haddad"],
  [2005, "Priya", "Nair"], [2006, "Марина", "Соколова"], [2007, "Олег", "Петров"], [2008, "Ира", "Ким"],
  [2009, "王", "伟"], [2010, "李", "娜"], [2011, "田中", "一郎"], [2012, "佐藤", "花子"],
];
const ME = [2000, "Sam", "Demo"];
const name = (p) => `${p[1]} ${p[2]}`;
// The chats are made on a fixed clock from T0, then moved as a whole so
// that the newest message is at NEWEST (seconds).
const T0 = Date.UTC(2026, 0, 5, 8) / 1000;
const NEWEST = (() => {
  const d = new Date();
  d.setDate(d.getDate() - 1);
  d.setHours(18, 0, 0, 0);
  return Math.floor(d.getTime() / 1000);
})();

function stamp(sec) {
  return { date: new Date(sec * 1000).toISOString().slice(0, 19), date_unixtime: String(sec) };
}

function textOf(t) {
  // Telegram Desktop: "text" is a string, or an array when it has entities.
  const m = /https:\/\/\S+/.exec(t);
  if (!m) return { text: t, text_entities: [{ type: "plain", text: t }] };
  const before = t.slice(0, m.index), link = m[0], after = t.slice(m.index + link.length);
  const ents = [before && { type: "plain", text: before }, { type: "link", text: link }, after && { type: "plain", text: after }].filter(Boolean);
  return { text: ents.map((e) => (e.type === "plain" ? e.text : e)), text_entities: ents };
}

// A chat of n messages in lang by members; opts: channel, forum topics.
function chat(id, title, type, lang, members, n, opts = {}) {
  const msgs = [];
  let clock = T0 + id * 37;
  let next = 1;
  const topicIds = [];
  if (opts.topics) {
    msgs.push({ id: next++, type: "service", ...stamp(clock), actor: name(members[0]), actor_id: `user${members[0][0]}`,
      action: "create_group", title, text: "", text_entities: [] });
    for (const t of opts.topics) {
      clock += 60;
      topicIds.push(next);
      msgs.push({ id: next++, type: "service", ...stamp(clock), actor: name(members[0]), actor_id: `user${members[0][0]}`,
        action: "topic_created", title: t, text: "", text_entities: [] });
    }
  }
  const L = LANG[lang];
  for (let i = 0; i < n; i++) {
    clock += 30 + Math.floor(rand() * 5400);
    const who = pick(members);
    let t = fill(pick(L.lines), L.slots);
    if (rand() < 0.05) t += ` https://example.org/${lang}/${id}/${next}`;
    const m = { id: next, type: "message", ...stamp(clock), ...textOf(t) };
    if (opts.channel) Object.assign(m, { from: title, from_id: `channel${id}` });
    else Object.assign(m, { from: name(who), from_id: `user${who[0]}` });
    if (opts.topics) m.reply_to_message_id = pick(topicIds); // a message in a topic
    else if (msgs.length > 2 && rand() < 0.15) m.reply_to_message_id = msgs[Math.floor(rand() * msgs.length)].id;
    msgs.push(m);
    next++;
  }
  return { name: title, type, id, messages: msgs };
}

const P = (i) => PEOPLE[i];
const chats = [
  chat(910001, "Platform Team", "private_supergroup", "en", [ME, P(0), P(1), P(2), P(3)], 600),
  chat(910002, "Release Forum", "public_supergroup", "en", [P(0), P(4), P(1), ME], 400,
    { topics: ["Announcements", "Bugs", "Ideas"] }),
  chat(910003, "Ops Alerts", "private_channel", "en", [ME], 200, { channel: true }),
  chat(910004, "Книжный клуб", "private_group", "ru", [ME, P(5), P(6), P(7)], 300),
  chat(910005, "Команда бэкенда", "private_supergroup", "ru", [P(5), P(6), P(7), ME], 300),
  chat(910006, "東京オフィス", "private_group", "ja", [P(10), P(11), ME], 200),
  chat(910007, "数据团队", "private_supergroup", "zh", [P(8), P(9), ME], 200),
  chat(2001, "Alice Chen", "personal_chat", "en", [ME, P(0)], 150),
  chat(2006, "Марина Соколова", "personal_chat", "ru", [ME, P(5)], 150),
  chat(910010, "Weekend Hikes", "private_group", "en", [ME, P(2), P(3), P(4)], 200),
  chat(910011, "Parley News", "public_channel", "en", [ME], 100, { channel: true }),
  chat(910012, "Mixed Lounge", "public_supergroup", "ru", [ME, P(6), P(8), P(11)], 100),
];
// The lounge speaks every language.
for (const [i, lang] of [[0, "en"], [1, "zh"], [2, "ja"]]) {
  const extra = chat(910012, "", "", lang, [P(6), P(8), P(11)], 35 + i * 5);
  for (const m of extra.messages) m.id += 1000 * (i + 1);
  chats[11].messages.push(...extra.messages);
}
chats[11].messages.sort((a, b) => a.id - b.id);

// Recall's example: one plan, talked about in every source.
{
  const hikes = chats[9].messages;
  const last = Number(hikes.at(-1).date_unixtime);
  hikes.push({ id: hikes.at(-1).id + 1, type: "message", ...stamp(last + 600), from: name(P(2)), from_id: `user${P(2)[0]}`,
    ...textOf("Booked the venue for the Lisbon offsite in May, Alfama, 20 people") });
}

// Every date moved so that the newest message is NEWEST.
{
  let newest = 0;
  for (const c of chats) for (const m of c.messages) newest = Math.max(newest, Number(m.date_unixtime));
  const shift = NEWEST - newest;
  for (const c of chats) for (const m of c.messages) Object.assign(m, stamp(Number(m.date_unixtime) + shift));
}

const archive = {
  about: "parley demo archive (generated by tools/demo_archive.mjs)",
  personal_information: { user_id: ME[0], first_name: ME[1], last_name: ME[2], phone_number: "+1 555 0100", username: "@sam_demo", bio: "" },
  contacts: {
    about: "",
    list: PEOPLE.map((p, i) => ({ user_id: p[0], first_name: p[1], last_name: p[2], phone_number: `+1 555 01${String(i + 10).padStart(2, "0")}`, ...stamp(NEWEST - 400 * 86400) })),
  },
  chats: { about: "", list: chats },
  left_chats: { about: "", list: [] },
};
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, "result.json"), JSON.stringify(archive, null, 1));
const total = chats.reduce((a, c) => a + c.messages.length, 0);
console.log(`demo archive: ${chats.length} chats, ${total} messages in ${path.join(dir, "result.json")}`);

// ChatWise: chats as the app keeps them (times in milliseconds).
const q = (v) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
const CW = [
  ["cw-offsite", "Lisbon offsite agenda", [
    ["user", "Draft a two-day agenda for our team's Lisbon offsite, 20 people."],
    ["assistant", "Day one: strategy in the morning, a walk through Alfama, dinner in Bairro Alto. Day two: workshops and a retro."],
    ["user", "Add a budget line for the venue."],
    ["assistant", "Venue: about 1,800 EUR for two days; catering 35 EUR a head a day."]]],
  ["cw-sql", "Postgres index advice", [
    ["user", "Which index makes ORDER BY date DESC LIMIT 20 fast on a messages table?"],
    ["assistant", "A btree on (chat_id, date DESC) when you filter by chat; on date alone otherwise."]]],
  ["cw-ru", "Рецепт борща", [
    ["user", "Как сварить борщ на шесть человек?"],
    ["assistant", "Свёкла, капуста, картофель, морковь и лук; варить бульон два часа."]]],
];
// The three chats on the sixth, fifth and fourth day before yesterday.
const cwAt = (NEWEST - 6 * 86400 - 9 * 3600) * 1000;
const cwSql = ["CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);",
  "CREATE TABLE message (id text PRIMARY KEY NOT NULL, chatId text, role text, content text, createdAt integer, meta text, generatedFiles text);"];
CW.forEach(([id, title, msgs], i) => {
  const t0 = cwAt + i * 86400000;
  cwSql.push(`INSERT INTO chat VALUES (${[id, title, t0, t0 + msgs.length * 60000].map(q).join(", ")});`);
  msgs.forEach(([role, content], k) =>
    cwSql.push(`INSERT INTO message VALUES (${[`${id}-m${k + 1}`, id, role, content, t0 + k * 60000, null, null].map(q).join(", ")});`));
});
const cwFile = path.join(dir, "chatwise", "app.db");
fs.mkdirSync(path.dirname(cwFile), { recursive: true });
fs.rmSync(cwFile, { force: true });
execFileSync("sqlite3", [cwFile], { input: cwSql.join("\n") });

// Claude Code: one JSON event a line, as the agent writes them.
const AG = [
  ["-home-sam-offsite-site", "/home/sam/offsite-site", "aaaaaaaa-0000-4000-8000-00000000d001", [
    ["user", "Make a landing page for the Lisbon offsite with the agenda and the venue."],
    ["assistant", "Created index.html with the agenda, a map of Alfama and the venue's address."],
    ["user", "Add an RSVP form that posts to the sheet."],
    ["assistant", "Added the form; it posts to the sheet's web hook."]]],
  ["-home-sam-parley", "/home/sam/parley", "aaaaaaaa-0000-4000-8000-00000000d002", [
    ["user", "Why is the nightly build slower since Monday?"],
    ["assistant", "The test suite now runs under sanitizers; the build itself is unchanged."]]],
];
let agUuid = 0;
AG.forEach(([project, cwd, sid, turns], i) => {
  const t0 = (NEWEST - (3 - i) * 86400 - 4 * 3600) * 1000; // three and two days before yesterday
  let parent = null;
  const lines = turns.map(([role, text], k) => {
    const uuid = `bbbbbbbb-0000-4000-8000-${String(++agUuid).padStart(12, "0")}`;
    const e = { parentUuid: parent, isSidechain: false, userType: "external", cwd, sessionId: sid, version: "2.0.14",
      gitBranch: "main", type: role, timestamp: new Date(t0 + k * 120000).toISOString(),
      message: role === "user" ? { role, content: text } : { role, model: "claude-x", content: [{ type: "text", text }] }, uuid };
    parent = uuid;
    return JSON.stringify(e);
  });
  fs.mkdirSync(path.join(dir, "agents", project), { recursive: true });
  fs.writeFileSync(path.join(dir, "agents", project, `${sid}.jsonl`), lines.join("\n") + "\n");
});
console.log(`demo archive: ${CW.length} ChatWise chats, ${AG.length} agent sessions`);
