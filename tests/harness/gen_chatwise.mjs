#!/usr/bin/env node
// gen_chatwise.mjs: a ChatWise app.db (SQLite; tables chat and message as
// the app keeps them), made with the sqlite3 command, for the ChatWise
// import and toolset tests.
//
//   node gen_chatwise.mjs FILE [NOW_MS] [grow]
//
// Chats, by age from NOW_MS (default: now): "Rust async runtimes" (10 days,
// times in seconds), "Rust borrow checker" (45 days, milliseconds), "虚拟列表
// 滚动优化" (5 days, Chinese, milliseconds), "Trip to Lisbon" (120 days,
// seconds), "周末购物清单" (3 days, everyday life, Chinese) and "Deploy notes"
// (20 days) whose messages carry tool calls in
// both shapes ({server_name, tool_name, arguments: JSON text} and {server,
// tool, args: object}) and tool results as JSON text and as an object.
// Three chats open with the same system prompt. One message names a chat
// that is not in the file. With "grow", one message is added to the Rust
// async chat and the Lisbon chat is renamed (an incremental import writes
// just those two).
import { execFileSync } from "node:child_process";
import fs from "node:fs";

const [, , file, nowArg, mode] = process.argv;
if (!file) {
  console.error("usage: gen_chatwise.mjs FILE [NOW_MS] [grow]");
  process.exit(2);
}
const NOW = Number(nowArg) || Date.now();
const DAY = 86400000;
const q = (v) => (v === null || v === undefined ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
const SYSTEM = "You are a helpful assistant. Answer briefly and cite sources.";

const chats = [];
const messages = [];
function chat(id, title, ageDays, unit, msgs) {
  const base = NOW - ageDays * DAY;
  const t = (ms) => (unit === "s" ? Math.floor(ms / 1000) : ms);
  chats.push([id, title, t(base), t(base + msgs.length * 60000)]);
  msgs.forEach((m, i) => {
    messages.push([m.id ?? `${id}-m${i + 1}`, m.chat ?? id, m.role, m.content, t(base + i * 60000),
      m.meta === undefined ? null : typeof m.meta === "string" ? m.meta : JSON.stringify(m.meta), null]);
  });
}

chat("chat-rust-async-0001", "Rust async runtimes", 10, "s", [
  { role: "system", content: SYSTEM },
  { role: "user", content: "How does the tokio runtime schedule async tasks in Rust?" },
  { role: "assistant", content: "Tokio uses a work-stealing scheduler: each worker thread has a local queue of tasks." },
  { role: "user", content: "rust 异步 和 线程 有什么区别?" },
  { role: "assistant", content: "异步任务在少量线程上协作调度, 线程由操作系统抢占调度." },
]);
chat("chat-rust-borrow-0002", "Rust borrow checker", 45, "ms", [
  { role: "system", content: SYSTEM },
  { role: "user", content: "Why does the borrow checker reject two mutable references?" },
  { role: "assistant", content: "Rust forbids aliasing mutable references so data races cannot happen." },
]);
chat("chat-virtual-list-0003", "虚拟列表滚动优化", 5, "ms", [
  { role: "system", content: SYSTEM },
  { role: "user", content: "虚拟列表滚动很卡, 一万条数据怎么优化?" },
  { role: "assistant", content: "只渲染可视区域的行, 用固定行高计算偏移, 滚动时复用 DOM 节点." },
]);
chat("chat-groceries-0006", "周末购物清单", 3, "ms", [
  { role: "user", content: "帮我列一个周末去超市的购物清单, 日常生活用品为主." },
  { role: "assistant", content: "牙膏, 洗衣液, 纸巾, 鸡蛋, 牛奶, 水果." },
]);
chat("chat-lisbon-0004", mode === "grow" ? "Trip to Lisbon and Porto" : "Trip to Lisbon", 120, "s", [
  { role: "user", content: "Plan three days in Lisbon with pastel de nata stops." },
  { role: "assistant", content: "Day one: Belém, the tower and the monastery; pastéis at the old bakery." },
]);
chat("chat-deploy-0005", "Deploy notes", 20, "s", [
  { role: "user", content: "Check the disk usage on the build server." },
  {
    role: "assistant", content: "Running the check.",
    meta: {
      toolCall: { "call-a": { server_name: "shell", tool_name: "run", arguments: JSON.stringify({ command: "df -h /srv" }) } },
      toolResult: JSON.stringify({ content: [{ type: "text", text: "/dev/sda1 80% used of 200G (kubernetes images)" }] }),
    },
  },
  {
    role: "assistant", content: "Looking up the cleanup policy.",
    meta: {
      toolCall: { "call-b": { server: "docs", tool: "search", args: { query: "image retention" } } },
      toolResult: { content: [{ type: "text", text: "Images older than 30 days are pruned nightly." }] },
    },
  },
  { id: "orphan-msg-0001", chat: "chat-deleted-9999", role: "user", content: "A message whose chat was deleted." },
]);
if (mode === "grow") {
  const base = Math.floor((NOW - 10 * DAY) / 1000);
  messages.push(["chat-rust-async-0001-m6", "chat-rust-async-0001", "user", "And what about async-std?", base + 3600, null, null]);
}

const sql = [
  "PRAGMA journal_mode=WAL;",
  "CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);",
  "CREATE TABLE message (id text PRIMARY KEY NOT NULL, chatId text, role text, content text, createdAt integer, meta text, generatedFiles text);",
  ...chats.map((c) => `INSERT INTO chat VALUES (${c.map(q).join(", ")});`),
  ...messages.map((m) => `INSERT INTO message VALUES (${m.map(q).join(", ")});`),
].join("\n");
fs.rmSync(file, { force: true });
fs.rmSync(`${file}-wal`, { force: true });
fs.rmSync(`${file}-shm`, { force: true });
execFileSync("sqlite3", [file], { input: sql });
