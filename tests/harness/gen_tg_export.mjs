#!/usr/bin/env node
// gen_tg_export.mjs: writes Telegram Desktop JSON exports for the import
// tests, in the formats Telegram Desktop produces.
//
//   gen_tg_export.mjs edge DIR        edge cases: DIR/forum/result.json (a forum
//                                     supergroup: topics, reply chains, every
//                                     media type, files present and missing),
//                                     DIR/old.json (about 2020: integer from_id,
//                                     no date_unixtime, no text_entities),
//                                     DIR/account/result.json (whole account:
//                                     chats.list, left_chats.list, contacts),
//                                     DIR/forum_v2.json (a later export of the
//                                     forum: edits and new messages)
//   gen_tg_export.mjs groups DIR      two single-chat exports ("Export chat
//                                     history"): DIR/small.json (a basic group:
//                                     create_group, English and Russian text)
//                                     and DIR/services.json (a group with
//                                     service actions, polls, media, reactions,
//                                     forwards, an unsupported message)
//   gen_tg_export.mjs inline DIR      a whole-account export for the inline
//                                     toolset (DIR/result.json): the self user,
//                                     a contact "Dena Karimi" and her direct
//                                     chat, a group "Dena X Mo", a channel
//                                     "News about Dena", and "Marketing" with
//                                     links yesterday (dates relative to now, UTC)
//   gen_tg_export.mjs big FILE N      one chat with N messages, streamed
import fs from "node:fs";
import path from "node:path";

const [, , mode, out, count] = process.argv;

function ts(sec) {
  const d = new Date(sec * 1000);
  return { date: d.toISOString().slice(0, 19), date_unixtime: String(sec) };
}

function msg(id, sec, from, fromId, text, extra = {}) {
  return {
    id,
    type: "message",
    ...ts(sec),
    from,
    from_id: fromId,
    text,
    text_entities: typeof text === "string" ? (text ? [{ type: "plain", text }] : []) : text.map((t) =>
      typeof t === "string" ? { type: "plain", text: t } : t),
    ...extra,
  };
}

function service(id, sec, actor, actorId, action, extra = {}) {
  return { id, type: "service", ...ts(sec), actor, actor_id: actorId, action, text: "", text_entities: [], ...extra };
}

function forum(edited) {
  const t0 = 1767225600; // 2026-01-01
  const m = [
    service(1, t0, "Ann", "user1001", "create_group", { title: "Builders", members: ["Bob"] }),
    service(2, t0 + 10, "Ann", "user1001", "migrate_from_group", { title: "Builders" }),
    service(10, t0 + 60, "Ann", "user1001", "topic_created", { title: "Hardware", icon_emoji_id: 5 }),
    msg(11, t0 + 70, "Bob", "user1002", "first in hardware", { reply_to_message_id: 10 }),
    msg(12, t0 + 80, "Ann", "user1001", "a reply in the chain", { reply_to_message_id: 11 }),
    service(20, t0 + 90, "Bob", "user1002", "topic_created", { title: "Software" }),
    msg(21, t0 + 100, "Bob", "user1002", ["see ", { type: "link", text: "https://example.org/x" }, " now"], { reply_to_message_id: 20 }),
    service(22, t0 + 110, "Ann", "user1001", "topic_edit", { title: "Software and tools", reply_to_message_id: 20 }),
    msg(30, t0 + 120, "Ann", "user1001", "general chatter"),
    msg(31, t0 + 130, "Ann", "user1001", "photo", { photo: "photos/photo_1.jpg", photo_file_size: 3, width: 1, height: 1 }),
    msg(32, t0 + 140, "Bob", "user1002", "video", { file: "video_files/v.mp4", file_name: "v.mp4", file_size: 9, thumbnail: "video_files/v.mp4_thumb.jpg", media_type: "video_file", mime_type: "video/mp4", duration_seconds: 12, width: 640, height: 360 }),
    msg(33, t0 + 150, "Bob", "user1002", "", { file: "(File not included. Change data exporting settings to download.)", media_type: "voice_message", mime_type: "audio/ogg", duration_seconds: 3, file_size: 1000 }),
    msg(34, t0 + 160, "Bob", "user1002", "", { file: "stickers/s.webp", file_size: 5, media_type: "sticker", sticker_emoji: "👍", mime_type: "image/webp", width: 512, height: 512 }),
    msg(35, t0 + 170, "Ann", "user1001", "", { file: "round_video_messages/r.mp4", media_type: "video_message", mime_type: "video/mp4", duration_seconds: 5, file_size: 7 }),
    msg(36, t0 + 180, "Ann", "user1001", "", { file: "files/a.gif.mp4", media_type: "animation", mime_type: "video/mp4", file_size: 4 }),
    msg(37, t0 + 190, "Ann", "user1001", "", { file: "files/song.mp3", media_type: "audio_file", mime_type: "audio/mpeg", performer: "X", title: "Y", duration_seconds: 200, file_size: 6 }),
    msg(38, t0 + 200, "Ann", "user1001", "the doc", { file: "files/report.pdf", file_name: "report.pdf", mime_type: "application/pdf", file_size: 8 }),
    msg(39, t0 + 210, "Bob", "user1002", "", { file: "(File exceeds maximum size. Change data exporting settings to download.)", file_name: "huge.iso", mime_type: "application/octet-stream", file_size: 9999999999 }),
    msg(40, t0 + 220, "Ann", "user1001", "", { location_information: { latitude: 52.5, longitude: 13.4 } }),
    msg(41, t0 + 230, "Bob", "user1002", "", { contact_information: { first_name: "Cy", last_name: "D", phone_number: "+100" } }),
    msg(42, t0 + 240, "Ann", "user1001", "Вопрос: что купить?", { poll: { question: "?", closed: false, total_voters: 1, answers: [{ text: "a", voters: 1, chosen: true }] } }),
    msg(43, t0 + 250, "Channel", "channel777", "posted by a channel", { forwarded_from: "News", saved_from: "News", via_bot: "@helper", author: "Ed" }),
    msg(44, t0 + 260, "Bob", "user1002", "reacted", { reactions: [{ type: "emoji", count: 2, emoji: "🔥" }], inline_bot_buttons: [[{ type: "url", text: "open", data: "https://x" }]] }),
    msg(45, t0 + 270, "Ann", "user1001", "日本語のテキストです。検索できますか", { reply_to_message_id: 12 }),
    service(46, t0 + 280, "Ann", "user1001", "pin_message", { message_id: 30 }),
    service(47, t0 + 290, "Bob", "user1002", "phone_call", { duration_seconds: 60, discard_reason: "hangup" }),
    { id: 48, type: "unsupported", ...ts(t0 + 300) },
    msg(49, t0 + 310, "Bob", "user1002", "edited later", { edited: ts(t0 + 320).date, edited_unixtime: String(t0 + 320) }),
  ];
  if (edited) {
    m[m.length - 1] = msg(49, t0 + 310, "Bob", "user1002", "edited twice", { edited: ts(t0 + 400).date, edited_unixtime: String(t0 + 400) });
    m.push(msg(50, t0 + 500, "Ann", "user1001", "new after the first export", { reply_to_message_id: 21 }));
  }
  return { name: "Builders", type: "public_supergroup", id: 1234567, messages: m };
}

function old() {
  // About 2020: from_id an integer, dates local, no date_unixtime, no
  // text_entities, text as an array.
  return {
    name: "Old Friend",
    type: "personal_chat",
    id: 55501,
    messages: [
      { id: 1, type: "message", date: "2020-01-01T12:00:00", from: "Old Friend", from_id: 55501, text: "happy new year" },
      { id: 2, type: "message", date: "2020-01-01T12:05:00", from: "Me", from_id: 42, text: ["look ", { type: "bold", text: "here" }, ": ", { type: "link", text: "http://old.example" }], reply_to_message_id: 1 },
      { id: 3, type: "message", date: "2020-01-02T08:00:00", from: "Old Friend", from_id: 55501, photo: "photos/p.jpg", width: 10, height: 10, text: "" },
    ],
  };
}

function account() {
  const t = 1700000000;
  return {
    about: "Here is the data you requested.",
    personal_information: { user_id: 42, first_name: "Me", last_name: "", phone_number: "+1 555", username: "@me", bio: "" },
    contacts: {
      about: "contacts",
      list: [
        { user_id: 1001, first_name: "Ann", last_name: "Lee", phone_number: "+1 111", date: "2020-01-01T00:00:00", date_unixtime: "1577836800" },
        { user_id: 1002, first_name: "Bob", last_name: "", phone_number: "+1 222", date: "2020-01-01T00:00:00", date_unixtime: "1577836800" },
      ],
    },
    frequent_contacts: { about: "", list: [{ id: 1001, category: "people", type: "user", name: "Ann", rating: 1.5 }] },
    chats: {
      about: "chats",
      list: [
        { name: "Ann", type: "personal_chat", id: 1001, messages: [msg(1, t, "Ann", "user1001", "hi from ann"), msg(2, t + 5, "Me", "user42", "hi ann")] },
        { type: "saved_messages", id: 42, messages: [msg(7, t + 10, "Me", "user42", "note to self")] },
        { name: "Bot", type: "bot_chat", id: 9001, messages: [] },
        { name: "Announcements", type: "public_channel", id: 888, messages: [msg(100, t + 20, "Announcements", "channel888", "release 1.0")] },
      ],
    },
    left_chats: {
      about: "left",
      list: [{ name: "Gone Group", type: "private_group", id: 321, messages: [msg(5, t + 30, "Bob", "user1002", "bye")] }],
    },
    other_data: { about: "", changes_log: [] },
  };
}

function write(file, obj) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(obj, null, 1));
}

// A basic group, as "Export chat history" writes it.
function smallGroup() {
  const t0 = 1735725600; // 2025-01-01 10:00
  return {
    name: "Small group",
    type: "private_group",
    id: 5550001,
    messages: [
      service(603440, t0, "Kim", "user5001", "create_group", { title: "Small group", members: ["Lee"] }),
      msg(603441, t0 + 60, "Kim", "user5001", "Good morning, is the build green?"),
      msg(603442, t0 + 120, "Lee", "user5002", "It is, and the release notes are drafted."),
      msg(603443, t0 + 180, "Kim", "user5001", "Привет, это сообщение на русском."),
      msg(603444, t0 + 240, "Lee", "user5002", "Отлично, выпускаем релиз завтра утром."),
    ],
  };
}

// A group with the service actions, media and extras exports carry.
function servicesGroup() {
  const t0 = 1769932800; // 2026-02-01 08:00
  const A = ["Alex Doe", "user30001"];
  const B = ["Beth Roe", "user30002"];
  const m = [
    service(1, t0, ...A, "create_group", { title: "Crew", members: ["Beth Roe"] }),
    service(2, t0 + 60, ...A, "edit_group_title", { title: "Release Crew" }),
    service(3, t0 + 120, ...A, "edit_group_photo", { photo: "photos/group.jpg", width: 64, height: 64 }),
    service(4, t0 + 180, ...A, "invite_members", { members: ["Carl Poe"] }),
    service(5, t0 + 240, "Dana Moe", "user30004", "join_group_by_link", { inviter: "Alex Doe" }),
    msg(6, t0 + 300, ...A, "Welcome to the deployment channel: deployment reports go here."),
    msg(7, t0 + 360, ...B, "Which deployment pipeline do we use for staging deployment?"),
    msg(8, t0 + 420, ...A, "The deployment pipeline with canary deployment and pipeline checks."),
    msg(9, t0 + 480, ...B, "Poll: when is the retro?", { poll: { question: "When is the retro?", closed: false, total_voters: 2, answers: [{ text: "Monday", voters: 1, chosen: true }, { text: "Friday", voters: 1, chosen: false }] } }),
    service(10, t0 + 540, ...A, "pin_message", { message_id: 8 }),
    msg(11, t0 + 600, ...B, "Forwarded: pipeline status is green", { forwarded_from: "Build Bot" }),
    msg(12, t0 + 660, ...A, "Replying to the pinned pipeline note", { reply_to_message_id: 8 }),
    msg(13, t0 + 720, ...B, "Shared photo", { photo: "photos/shared.jpg", photo_file_size: 10, width: 10, height: 10 }),
    msg(14, t0 + 780, ...A, "Shared document", { file: "files/plan.pdf", file_name: "plan.pdf", file_size: 20, mime_type: "application/pdf" }),
    msg(15, t0 + 840, ...B, "File too large", { file: "(File exceeds maximum size. Change data exporting settings to download.)", file_name: "big.iso", file_size: 9000000000, mime_type: "application/octet-stream" }),
    msg(16, t0 + 900, ...A, "Deployment done, pipeline green", { reactions: [{ type: "emoji", count: 2, emoji: "🎉", recent: [{ from: "Beth Roe", from_id: "user30002", date: "2026-02-01T08:16:00" }] }] }),
    msg(17, t0 + 960, ...B, "Meeting point", { location_information: { latitude: 52.52, longitude: 13.4 } }),
    service(18, t0 + 1020, ...A, "remove_members", { members: ["Carl Poe"] }),
    { id: 19, type: "unsupported" },
  ];
  return { name: "Release Crew", type: "private_group", id: 20002, messages: m };
}

// The inline toolset's prompts over a whole account; times relative to now.
function inlineAccount() {
  const now = Math.floor(Date.now() / 1000);
  const today0 = now - (now % 86400);
  const yday = today0 - 86400;
  const me = ["Sam Me", "user1000"], dena = ["Dena Karimi", "user2001"], mo = ["Mo Reza", "user2003"];
  return {
    about: "inline test account",
    personal_information: { user_id: 1000, first_name: "Sam", last_name: "Me", phone_number: "+1 555 0000", username: "@sam", bio: "" },
    contacts: {
      about: "",
      list: [
        { user_id: 2001, first_name: "Dena", last_name: "Karimi", phone_number: "+1 555 2001", ...ts(yday) },
        { user_id: 2003, first_name: "Mo", last_name: "Reza", phone_number: "+1 555 2003", ...ts(yday) },
      ],
    },
    chats: {
      about: "",
      list: [
        { name: "Dena Karimi", type: "personal_chat", id: 2001, messages: [
          msg(1, yday - 7200, ...dena, "hi Sam"),
          msg(2, yday - 3600, ...me, "hello Dena"),
          msg(3, yday + 3600, ...dena, "are we still on for Friday?"),
          msg(4, yday + 7200, ...me, "yes, see you Friday at noon"),
        ] },
        { name: "Dena X Mo", type: "private_group", id: 300, messages: [
          service(1, yday - 86400, ...mo, "create_group", { title: "Dena X Mo", members: ["Dena Karimi"] }),
          msg(2, yday - 80000, ...mo, "welcome, Dena"),
        ] },
        { name: "News about Dena", type: "public_channel", id: 400, messages: [
          msg(1, yday - 50000, "News about Dena", "channel400", "Dena joined the team"),
        ] },
        { name: "Marketing", type: "private_supergroup", id: 500, messages: [
          msg(1, yday - 40000, ...mo, "old plan https://example.org/old"),
          msg(2, yday + 36000, ...mo, ["the campaign draft: ", { type: "link", text: "https://example.org/draft" }]),
          msg(3, yday + 40000, ...dena, "looks good, no link"),
        ] },
      ],
    },
    left_chats: { about: "", list: [] },
  };
}

if (mode === "inline") {
  write(path.join(out, "result.json"), inlineAccount());
} else if (mode === "groups") {
  write(path.join(out, "small.json"), smallGroup());
  write(path.join(out, "services.json"), servicesGroup());
} else if (mode === "edge") {
  write(path.join(out, "forum", "result.json"), forum(false));
  for (const f of ["photos/photo_1.jpg", "video_files/v.mp4", "files/report.pdf"])
    write(path.join(out, "forum", f), "bin");
  write(path.join(out, "old.json"), old());
  write(path.join(out, "account", "result.json"), account());
  write(path.join(out, "forum_v2.json"), forum(true));
} else if (mode === "big") {
  // Streamed so the generator's own memory stays flat too.
  const n = Number(count);
  const fd = fs.openSync(out, "w");
  fs.writeSync(fd, '{\n "name": "Big Chat",\n "type": "private_supergroup",\n "id": 99001,\n "messages": [\n');
  const words = ["alpha", "beta", "gamma", "delta", "привет", "мир", "数据", "检索", "https://example.org/p", "lorem", "ipsum"];
  let batch = [];
  const t0 = 1600000000;
  for (let i = 1; i <= n; i++) {
    const text = Array.from({ length: 8 + (i % 12) }, (_, k) => words[(i * 7 + k * 3) % words.length]).join(" ");
    batch.push(JSON.stringify(msg(i, t0 + i * 7, `User ${i % 50}`, `user${1000 + (i % 50)}`, text, i % 10 === 0 ? { reply_to_message_id: i - 1 } : {}), null, 1));
    if (batch.length === 1000 || i === n) {
      fs.writeSync(fd, batch.join(",\n") + (i === n ? "\n" : ",\n"));
      batch = [];
    }
  }
  fs.writeSync(fd, " ]\n}\n");
  fs.closeSync(fd);
} else {
  console.error("usage: gen_tg_export.mjs edge DIR | groups DIR | inline DIR | big FILE N");
  process.exit(2);
}
