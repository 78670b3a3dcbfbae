#!/usr/bin/env node
// botapi_emulator.mjs: a loopback Telegram Bot API server for tests and
// benchmarks. It implements getMe, getUpdates (offset confirmation, long
// polling), sendMessage, setChatTitle, leaveChat and getChat as the Bot
// API documentation describes them; generates traffic on demand; and
// injects faults on the next getUpdates calls.
//
//   node botapi_emulator.mjs            prints {"port": N} on stdout
//
// Control (JSON over HTTP, not part of the Bot API):
//   POST /control/generate {"n": 100, "chats": 5, "editEvery": 7, "channelEvery": 11,
//                           "seed": 1}  appends n updates (messages, some edits
//                           of earlier ones, some channel posts)
//   POST /control/fileRate {"bytesPerSecond": 1000000}  serve files slowly
//   POST /control/faults   {"faults": ["429", "500", "html", "drop", "409", "slow"]}
//   POST /control/fileFaults {"rate": 0.5, "kinds": ["timeout", "500", "reset", "truncate"],
//                           "seed": 1}  a fraction (rate) of getFile calls and file
//                           downloads fail, each in one of the kinds, picked at
//                           random: "timeout" never answers (a download sends its
//                           headers, then nothing), "500" a server error, "reset"
//                           closes the connection mid-answer (a download: after half
//                           its body, Content-Length announced), "truncate" sends half
//                           the body without Content-Length and ends it cleanly (only
//                           the size getFile announced shows it). rate 0 stops.
//   POST /control/holdSends {"chat": -100}  sendMessage to that chat is not answered
//                           until released (the daemon's send queue waits behind it)
//   POST /control/releaseSends  answers the held sends, holds no more
//   GET  /control/heldSends  {"held": n}: sends held now
//   GET  /control/fileInfo  {file_unique_id: {size, sha256}} of every file generated
//   GET  /control/expected  the messages the archive must hold: [[chat, id, text], ...]
//   GET  /control/sent      the messages sent through sendMessage, with times
//   GET  /control/stats     counters (getChat: calls by chat_id)
import crypto from "node:crypto";
import http from "node:http";

const BOT = { id: 700000001, is_bot: true, first_name: "Parley Test", username: "parley_test_bot" };
const updates = []; // all generated, in order
let confirmed = 0; // updates below this offset are confirmed
let nextUpdateId = 1000;
let faults = [];
const waiting = new Set();
const expected = new Map(); // "chat:id" -> text
const expectedFiles = new Map(); // "chat:id" -> file_unique_id, or "error" (too big)
const sent = [];
const calls = []; // administration methods called
let holdChat = null; // sendMessage to this chat waits for releaseSends
const heldSends = []; // answers to send on release
const stats = { getUpdates: 0, faults: 0, sendMessage: 0, getFile: 0, downloads: 0, downloadsServed: 0, fileFaults: {}, getChat: {} };
const nextMessageId = new Map();
const knownIds = new Map(); // chat id -> message ids generated in it (edits pick one)
let clock = 1767225600; // 2026-01-01

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

function chatOf(i) {
  return i % 2 === 0
    ? { id: -1001000000000 - i, title: `Group ${i}`, type: "supergroup" }
    : { id: -1002000000000 - i, title: `Channel ${i}`, type: "channel" };
}

function newId(chat) {
  const n = (nextMessageId.get(chat) ?? 0) + 1;
  nextMessageId.set(chat, n);
  return n;
}

// Files: deterministic bytes per file_unique_id.
const files = new Map(); // file_id -> {unique, size}
function fileBytes(unique, size) {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (unique.charCodeAt(i % unique.length) + i) & 0xff;
  return b;
}

let fileRate = 0; // bytes a second when serving files (0: as fast as possible)
let fileFaults = { rate: 0, kinds: [], pick: Math.random };
const held = new Set(); // answers never sent ("timeout" faults), ended on rate 0
// The fault for this getFile or download, or null.
function fileFault(where) {
  if (!fileFaults.rate || fileFaults.pick() >= fileFaults.rate) return null;
  const kind = fileFaults.kinds[Math.floor(fileFaults.pick() * fileFaults.kinds.length)];
  stats.fileFaults[`${where}:${kind}`] = (stats.fileFaults[`${where}:${kind}`] ?? 0) + 1;
  return kind;
}
let sizedFiles = 0;

function generate({ n = 100, chats = 5, editEvery = 7, channelEvery = 0, photoEvery = 0, photoSize = 0, seed = 1 }) {
  const r = rng(seed + updates.length);
  const words = ["alpha", "beta", "пельмени", "数据", "https://example.org", "hello", "sync", "parley"];
  const made = [];
  for (let k = 0; k < n; k++) {
    clock += 1;
    const ci = Math.floor(r() * chats);
    const chat = chatOf(ci);
    const text = Array.from({ length: 3 + Math.floor(r() * 6) }, () => words[Math.floor(r() * words.length)]).join(" ");
    const isChannel = chat.type === "channel";
    const known = knownIds.get(chat.id) ?? [];
    if (editEvery && k % editEvery === editEvery - 1 && known.length > 0) {
      const id = known[Math.floor(r() * known.length)];
      const key = `${chat.id}:${id}`;
      const newText = `${text} (edited ${k})`;
      const m = { message_id: id, date: clock - 100, edit_date: clock, chat, text: newText };
      if (!isChannel) m.from = { id: 5000 + ci, is_bot: false, first_name: `User${ci}` };
      made.push({ update_id: nextUpdateId++, [isChannel ? "edited_channel_post" : "edited_message"]: m });
      expected.set(key, newText);
      continue;
    }
    const id = newId(chat.id);
    const m = { message_id: id, date: clock, chat, text };
    if (photoEvery && k % photoEvery === 0) {
      // Every third photo repeats an earlier file (the same file_unique_id);
      // one in ten is larger than the public Bot API serves.
      // photoSize: every photo a new file of that size.
      const big = !photoSize && k % (photoEvery * 10) === photoEvery * 5;
      const unique = photoSize ? `sized${sizedFiles++}` : big ? `big${k}` : `u${k % 3 === 0 && k > 0 ? k - photoEvery : k}`;
      // The same file (file_unique_id) always has the same bytes.
      const size = photoSize || (big ? 30 * 1024 * 1024 : 20000 + (Number(unique.slice(1)) % 7) * 1000);
      const fileId = `f${k}-${updates.length}`;
      files.set(fileId, { unique, size });
      m.photo = [{ file_id: `${fileId}-s`, file_unique_id: `${unique}-s`, width: 90, height: 90, file_size: 100 },
                 { file_id: fileId, file_unique_id: unique, width: 800, height: 600, file_size: size }];
      m.caption = m.text;
      delete m.text;
      expectedFiles.set(`${chat.id}:${id}`, big ? "error" : unique);
    }
    if (isChannel) m.sender_chat = { id: chat.id, title: chat.title, type: "channel" };
    else m.from = { id: 5000 + ci, is_bot: false, first_name: `User${ci}` };
    made.push({ update_id: nextUpdateId++, [isChannel ? "channel_post" : "message"]: m });
    expected.set(`${chat.id}:${id}`, text);
    if (!knownIds.has(chat.id)) knownIds.set(chat.id, []);
    knownIds.get(chat.id).push(id);
  }
  for (const u of made) updates.push(u);
  for (const w of waiting) w();
  return { generated: made.length, lastUpdateId: nextUpdateId - 1 };
}

function reply(res, status, obj, headers = {}) {
  const body = typeof obj === "string" ? obj : JSON.stringify(obj);
  res.writeHead(status, { "content-type": typeof obj === "string" ? "text/html" : "application/json", ...headers });
  res.end(body);
}

function apiError(res, code, description, parameters) {
  reply(res, code, { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) });
}

async function getUpdates(req, res, args) {
  stats.getUpdates++;
  const offset = Number(args.offset ?? 0);
  if (offset > confirmed) confirmed = offset;
  const fault = faults.shift();
  if (fault) {
    stats.faults++;
    if (fault === "429") return apiError(res, 429, "Too Many Requests: retry after 1", { retry_after: 1 });
    if (fault === "409") return apiError(res, 409, "Conflict: terminated by other getUpdates request");
    if (fault === "500") return apiError(res, 500, "Internal Server Error");
    if (fault === "html") return reply(res, 502, "<html><body>Bad Gateway</body></html>");
    if (fault === "drop") return req.socket.destroy();
    if (fault === "slow") await new Promise((r) => setTimeout(r, 1500));
  }
  // update_ids are consecutive from the first: the pending ones start at an index.
  const pending = () => {
    const from = updates.length ? Math.max(0, confirmed - updates[0].update_id) : 0;
    return updates.slice(from, from + Number(args.limit ?? 100));
  };
  let out = pending();
  if (out.length === 0) {
    const timeout = Math.min(Number(args.timeout ?? 0), 50) * 1000;
    await new Promise((resolve) => {
      const done = () => {
        waiting.delete(done);
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(done, timeout);
      waiting.add(done);
      res.on("close", done);
    });
    out = pending();
  }
  if (!res.writableEnded && !res.destroyed) reply(res, 200, { ok: true, result: out });
}

function sendMessage(res, args) {
  stats.sendMessage++;
  if (args.chat_id === undefined || !args.text) return apiError(res, 400, "Bad Request: message text is empty");
  const chatId = Number(args.chat_id);
  const chat = chatId > 0 ? { id: chatId, type: "private", first_name: "Someone" } : { id: chatId, type: "supergroup", title: "Sent To" };
  const m = {
    message_id: newId(chatId) + 1000000,
    date: Math.floor(Date.now() / 1000),
    chat,
    from: BOT,
    text: args.text,
  };
  if (args.message_thread_id) {
    m.message_thread_id = args.message_thread_id;
    m.is_topic_message = true;
  }
  if (args.reply_parameters?.message_id) m.reply_to_message = { message_id: args.reply_parameters.message_id, chat, date: m.date };
  sent.push({ at: Date.now(), chat_id: chatId, text: args.text, message_id: m.message_id });
  reply(res, 200, { ok: true, result: m });
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (d) => chunks.push(d));
  req.on("end", async () => {
    const rawBody = Buffer.concat(chunks);
    const body = rawBody.toString("utf8");
    const url = new URL(req.url, "http://x");
    let args = {};
    try {
      const multipart = (req.headers["content-type"] ?? "").startsWith("multipart/");
      args = body && !multipart ? JSON.parse(body) : Object.fromEntries(url.searchParams);
    } catch {
      return apiError(res, 400, "Bad Request: can't parse JSON");
    }
    if (url.pathname === "/control/generate") return reply(res, 200, generate(args));
    if (url.pathname === "/control/fileRate") {
      fileRate = Number(args.bytesPerSecond ?? 0);
      return reply(res, 200, { fileRate });
    }
    if (url.pathname === "/control/holdSends") {
      holdChat = Number(args.chat);
      return reply(res, 200, { holdChat });
    }
    if (url.pathname === "/control/releaseSends") {
      holdChat = null;
      const n = heldSends.length;
      for (const f of heldSends.splice(0)) f();
      return reply(res, 200, { released: n });
    }
    if (url.pathname === "/control/heldSends") return reply(res, 200, { held: heldSends.length });
    if (url.pathname === "/control/faults") {
      faults.push(...(args.faults ?? []));
      return reply(res, 200, { queued: faults.length });
    }
    if (url.pathname === "/control/fileFaults") {
      fileFaults = { rate: Number(args.rate ?? 0), kinds: args.kinds ?? ["timeout", "500", "reset", "truncate"], pick: rng(Number(args.seed ?? 1)) };
      if (!fileFaults.rate) for (const r of held) r.destroy();
      return reply(res, 200, { rate: fileFaults.rate, kinds: fileFaults.kinds });
    }
    if (url.pathname === "/control/fileInfo") {
      const out = {};
      for (const f of files.values())
        out[f.unique] ??= { size: f.size, sha256: crypto.createHash("sha256").update(fileBytes(f.unique, f.size)).digest("hex") };
      return reply(res, 200, out);
    }
    if (url.pathname === "/control/expected") return reply(res, 200, [...expected].map(([k, text]) => [...k.split(":").map(Number), text]));
    if (url.pathname === "/control/sent") return reply(res, 200, sent);
    if (url.pathname === "/control/calls") return reply(res, 200, calls);
    if (url.pathname === "/control/files") return reply(res, 200, [...expectedFiles]);
    const fm = /^\/file\/bot[^/]+\/(.+)$/.exec(url.pathname);
    if (fm) {
      const f = files.get(fm[1].replace(/^photos\//, ""));
      if (!f) return apiError(res, 404, "Not Found");
      stats.downloads++;
      const bytes = fileBytes(f.unique, f.size);
      const fault = fileFault("download");
      if (fault === "500") return apiError(res, 500, "Internal Server Error");
      if (fault === "timeout") {
        res.writeHead(200, { "content-type": "image/jpeg", "content-length": f.size });
        res.flushHeaders();
        held.add(res.socket);
        res.socket.on("close", () => held.delete(res.socket));
        return;
      }
      if (fault === "reset") {
        res.writeHead(200, { "content-type": "image/jpeg", "content-length": f.size });
        return res.write(bytes.subarray(0, f.size >> 1), () => res.socket.destroy());
      }
      if (fault === "truncate") {
        // Close-delimited: no Content-Length, no chunking; the end looks clean.
        res.socket.write("HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\nconnection: close\r\n\r\n");
        return res.socket.end(bytes.subarray(0, f.size >> 1));
      }
      stats.downloadsServed++;
      res.writeHead(200, { "content-type": "image/jpeg", "content-length": f.size });
      if (!fileRate) return res.end(bytes);
      // Paced: a chunk every 100 ms.
      const chunk = Math.max(1, Math.floor(fileRate / 10));
      let off = 0;
      const step = () => {
        if (res.destroyed) return;
        res.write(bytes.subarray(off, off + chunk));
        off += chunk;
        if (off >= bytes.length) res.end();
        else setTimeout(step, 100);
      };
      return step();
    }
    if (url.pathname === "/control/stats") return reply(res, 200, { ...stats, confirmed, updates: updates.length });
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!m) return apiError(res, 404, "Not Found");
    if (m[1] === "bad") return apiError(res, 401, "Unauthorized");
    switch (m[2]) {
      case "getMe":
        return reply(res, 200, { ok: true, result: BOT });
      case "getUpdates":
        return getUpdates(req, res, args);
      case "sendMessage":
        if (holdChat !== null && Number(args.chat_id) === holdChat) return void heldSends.push(() => sendMessage(res, args));
        return sendMessage(res, args);
      case "sendDocument": {
        // multipart/form-data: the fields and the file's name and size.
        const ct = req.headers["content-type"] ?? "";
        const boundary = /boundary=(.+)$/.exec(ct)?.[1];
        if (!boundary) return apiError(res, 400, "Bad Request: multipart expected");
        const parts = rawBody.toString("latin1").split(`--${boundary}`).slice(1, -1);
        const fields = {};
        let file = null;
        for (const p of parts) {
          const [head, ...rest] = p.split("\r\n\r\n");
          const data = rest.join("\r\n\r\n").replace(/\r\n$/, "");
          const name = /name="([^"]+)"/.exec(head)?.[1];
          const filename = /filename="([^"]+)"/.exec(head)?.[1];
          if (filename) file = { name: filename, size: Buffer.byteLength(data, "latin1"), head: data.slice(0, 16),
                                 sha256: crypto.createHash("sha256").update(Buffer.from(data, "latin1")).digest("hex") };
          else if (name) fields[name] = data;
        }
        if (!file) return apiError(res, 400, "Bad Request: there is no document in the request");
        const chatId = Number(fields.chat_id);
        const chat = chatId > 0 ? { id: chatId, type: "private", first_name: "Someone" } : { id: chatId, type: "supergroup", title: "Sent To" };
        const m = { message_id: newId(chatId) + 1000000, date: Math.floor(Date.now() / 1000), chat, from: BOT,
                    document: { file_id: `doc${sent.length}`, file_unique_id: `udoc${sent.length}`, file_name: file.name, file_size: file.size },
                    ...(fields.caption ? { caption: fields.caption } : {}) };
        sent.push({ at: Date.now(), chat_id: chatId, document: file, caption: fields.caption, message_id: m.message_id });
        return reply(res, 200, { ok: true, result: m });
      }
      case "setChatTitle":
      case "leaveChat":
      case "unbanChatMember":
        calls.push({ method: m[2], args });
        return reply(res, 200, { ok: true, result: true });
      case "banChatMember":
        calls.push({ method: m[2], args });
        if (Number(args.user_id) === 13) return apiError(res, 400, "Bad Request: user not found");
        return reply(res, 200, { ok: true, result: true });
      case "exportChatInviteLink":
        calls.push({ method: m[2], args });
        return reply(res, 200, { ok: true, result: `https://t.me/+emulated${calls.length}` });
      case "getFile": {
        stats.getFile++;
        const fault = fileFault("getFile");
        if (fault === "500") return apiError(res, 500, "Internal Server Error");
        if (fault === "timeout") {
          held.add(req.socket);
          req.socket.on("close", () => held.delete(req.socket));
          return;
        }
        if (fault === "reset") return req.socket.destroy();
        if (fault === "truncate") {
          res.writeHead(200, { "content-type": "application/json" });
          return res.end('{"ok":true,"result":{"file_id":');
        }
        const f = files.get(args.file_id);
        if (!f) return apiError(res, 400, "Bad Request: invalid file_id");
        if (f.size > 20 * 1024 * 1024) return apiError(res, 400, "Bad Request: file is too big");
        return reply(res, 200, { ok: true, result: { file_id: args.file_id, file_unique_id: f.unique, file_size: f.size, file_path: `photos/${args.file_id}` } });
      }
      case "getChat":
        stats.getChat[String(args.chat_id)] = (stats.getChat[String(args.chat_id)] || 0) + 1;
        if (Number(args.chat_id) === 4242) return apiError(res, 400, "Bad Request: chat not found");
        return reply(res, 200, { ok: true, result: { id: Number(args.chat_id), type: "supergroup", title: "Emulated", description: "An emulated group", username: "emulated" } });
      case "getChatMemberCount":
        return reply(res, 200, { ok: true, result: 42 });
      case "getChatAdministrators":
        return reply(res, 200, { ok: true, result: [
          { status: "creator", user: { id: 7, is_bot: false, first_name: "Owner" } },
          { status: "administrator", user: BOT, can_delete_messages: true } ] });
      default:
        return apiError(res, 404, "Not Found: method not found");
    }
  });
});

server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on("SIGTERM", () => process.exit(0));
