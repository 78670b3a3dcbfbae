#!/usr/bin/env node
// gen_archive.mjs: the benchmark's synthetic archive, as a whole-account
// Telegram Desktop JSON export (so it is loaded through the real import
// path). Deterministic for a given seed: the same arguments give the same
// bytes.
//
//   node gen_archive.mjs FILE [MESSAGES=1000000] [CHATS=1000] [SEED=1]
//
// Chats: groups, supergroups, channels and personal chats; their sizes
// follow a Zipf-like law (a few large chats, many small ones), every chat
// holding at least one message. Text: English (60% of chats), Russian (25%)
// and CJK (15%); the number of words per message is log-normal (median
// about 9, long tail to 200). About 15% of messages reply to an earlier
// message of their chat, 6% carry a photo and 3% a document (recorded as
// not included in the export), 5% a link. Written as it is generated:
// memory stays flat.
import fs from "node:fs";

const [, , file, mArg, cArg, sArg] = process.argv;
if (!file) {
  console.error("usage: gen_archive.mjs FILE [MESSAGES] [CHATS] [SEED]");
  process.exit(2);
}
const MESSAGES = Number(mArg ?? 1000000);
const CHATS = Math.min(Number(cArg ?? 1000), MESSAGES);
let seed = Number(sArg ?? 1) >>> 0;

// mulberry32: small, fast, deterministic.
function rand() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
function normal() {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

export const VOCAB = {
  en: ("release deploy database index query latency server client archive message channel group " +
    "search replica backup cluster migration schema token session stream socket protocol memory " +
    "thread queue worker benchmark throughput kernel network packet router storage snapshot " +
    "coffee lunch meeting weekend project deadline review design document meetup travel train " +
    "ticket weather football music concert movie garden kitchen recipe bread cheese apple summer " +
    "winter morning evening tomorrow yesterday today great thanks please sorry maybe really " +
    "the and for with this that from have will about there their which would could should").split(" "),
  ru: ("привет спасибо пожалуйста сегодня завтра вчера встреча проект релиз сервер база данных " +
    "индекс запрос поиск архив сообщение канал группа реплика кластер миграция схема сессия поток " +
    "память очередь нагрузка сеть хранилище снимок кофе обед выходные дедлайн документ поездка " +
    "поезд билет погода футбол музыка концерт фильм сад кухня рецепт хлеб сыр яблоко лето зима " +
    "утро вечер отлично конечно может быть очень когда где почему как это что").split(" "),
  cjk: ("数据 检索 服务器 数据库 索引 查询 延迟 归档 消息 频道 群组 副本 集群 迁移 会话 内存 队列 " +
    "网络 存储 快照 咖啡 午饭 会议 周末 项目 文档 旅行 火车 天气 音乐 电影 今日 明日 東京 大阪 " +
    "検索 会議 週末 写真 資料 確認 予定 連絡 報告 開発 設計").split(" "),
};
const LANGS = ["en", "en", "en", "en", "en", "en", "en", "en", "en", "en", "en", "en",
  "ru", "ru", "ru", "ru", "ru", "cjk", "cjk", "cjk"];
const TYPES = ["private_supergroup", "public_supergroup", "private_group", "public_channel",
  "private_channel", "personal_chat"];
const USERS = 500;
const FIRST = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Fay", "Gus", "Ира", "Олег", "Маша", "Ken", "Yui"];

function text(lang) {
  const words = Math.max(1, Math.min(200, Math.round(Math.exp(2.2 + 0.8 * normal()))));
  const v = VOCAB[lang];
  const out = [];
  for (let i = 0; i < words; i++) out.push(pick(v));
  return lang === "cjk" ? out.join(rand() < 0.5 ? "" : " ") : out.join(" ");
}

// Chat sizes: Zipf-like weights, at least one message each.
const weights = Array.from({ length: CHATS }, (_, i) => 1 / Math.pow(i + 1, 0.8));
const wsum = weights.reduce((a, b) => a + b, 0);
const sizes = weights.map((w) => 1 + Math.floor(((MESSAGES - CHATS) * w) / wsum));
let rest = MESSAGES - sizes.reduce((a, b) => a + b, 0);
for (let i = 0; rest > 0; i = (i + 1) % CHATS, rest--) sizes[i]++;

const fd = fs.openSync(file, "w");
let pending = "";
const put = (s) => {
  pending += s;
  if (pending.length > 1 << 20) {
    fs.writeSync(fd, pending);
    pending = "";
  }
};

put('{\n "about": "parley benchmark archive",\n "personal_information": {"user_id": 1000, ' +
  '"first_name": "Bench", "last_name": "User", "phone_number": "+00000000000", "username": "@bench"},\n');
put(' "contacts": {"about": "", "list": [');
for (let u = 0; u < 50; u++)
  put(`${u ? "," : ""}\n  {"user_id": ${1001 + u}, "first_name": "${FIRST[u % FIRST.length]}", ` +
    `"last_name": "Contact${u}", "phone_number": "+1555${String(u).padStart(7, "0")}", "date": "2022-01-01T10:00:00", "date_unixtime": "1641031200"}`);
put("\n ]},\n \"chats\": {\"about\": \"\", \"list\": [\n");

let clock = 1672531200; // 2023-01-01
for (let c = 0; c < CHATS; c++) {
  const lang = LANGS[c % LANGS.length];
  const type = TYPES[c % TYPES.length];
  const id = 2000000 + c;
  const name = `${lang === "ru" ? "Чат" : lang === "cjk" ? "群" : "Chat"} ${c}`;
  put(`${c ? ",\n" : ""}  {"name": ${JSON.stringify(name)}, "type": "${type}", "id": ${id}, "messages": [\n`);
  for (let m = 1; m <= sizes[c]; m++) {
    clock += 1 + Math.floor(rand() * 30);
    const u = type === "personal_chat" ? (m % 2 ? 1000 : 1001 + (c % 50)) : 1000 + Math.floor(rand() * USERS);
    const d = new Date(clock * 1000).toISOString().slice(0, 19);
    const msg = { id: m, type: "message", date: d, date_unixtime: String(clock) };
    if (type.endsWith("channel")) Object.assign(msg, { from: name, from_id: `channel${id}` });
    else Object.assign(msg, { from: `${FIRST[u % FIRST.length]} ${u}`, from_id: `user${u}` });
    if (m > 1 && rand() < 0.15) msg.reply_to_message_id = 1 + Math.floor(rand() * (m - 1));
    let t = text(lang);
    const r = rand();
    if (r < 0.06) {
      Object.assign(msg, { photo: "(File not included. Change data exporting settings to download.)",
        photo_file_size: 50000 + Math.floor(rand() * 200000), width: 1280, height: 960 });
    } else if (r < 0.09) {
      Object.assign(msg, { file: "(File not included. Change data exporting settings to download.)",
        file_name: `report-${c}-${m}.pdf`, file_size: 10000 + Math.floor(rand() * 1000000), mime_type: "application/pdf" });
    }
    const entities = [{ type: "plain", text: t }];
    if (rand() < 0.05) {
      const link = `https://example.org/${lang}/${m}`;
      entities.push({ type: "plain", text: " " }, { type: "link", text: link });
      t = `${t} ${link}`;
    }
    msg.text = entities.length === 1 ? t : entities.map((e) => (e.type === "plain" ? e.text : e));
    msg.text_entities = entities;
    put(`${m > 1 ? ",\n" : ""}   ${JSON.stringify(msg)}`);
  }
  put("\n  ]}");
}
put("\n ]},\n \"left_chats\": {\"about\": \"\", \"list\": []}\n}\n");
fs.writeSync(fd, pending);
fs.closeSync(fd);
