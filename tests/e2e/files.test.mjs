// files: the files parleyd reads or writes on a client's behalf, against a
// hostile client (issue #25). messagesSendFile opens the file once, when it
// checks it, and sends what it opened: a file swapped for a symbolic link
// to a file outside the upload root, or for a FIFO, after the check and
// before the paced send queue gets to it changes nothing (the original
// bytes are sent; nothing waits on the FIFO). The ordering is made
// deterministic: the Bot API emulator holds an earlier send, so the file
// waits in the queue (seen in /metrics) while it is swapped. Symbolic
// links, "..", FIFOs and directories are refused at the check.
// (mediaDownload's destination is tested in telegram.test.mjs, where the
// archive has stored files.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { controlAt, psqlAt, startDaemon, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_files_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
let emu, api, daemon, client, port, dataDir, up, outside;

const psql = (sql, dbname = db) => psqlAt(pgDir, dbname, sql);
const control = (p, body) => controlAt(api, p, body);
const sha256 = (b) => crypto.createHash("sha256").update(b).digest("hex");

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  emu = spawn(process.execPath, [path.join(here, "..", "harness", "botapi_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(emu.stdout, "data");
  api = `http://127.0.0.1:${JSON.parse(line).port}`;
  dataDir = tmpdir("parley-files-");
  up = path.join(dataDir, "uploads");
  fs.mkdirSync(up, { recursive: true });
  outside = tmpdir("parley-files-outside-");
  fs.writeFileSync(path.join(outside, "secret.txt"), "SECRET outside the upload root\n");
  daemon = await startDaemon([
    "--db", url, "--data-dir", dataDir, "--toolsets", "telegram",
    "--telegram-bot-token", "123456:FILES", "--telegram-api-url", api, "--telegram-poll-timeout-s", "1",
    "--listen", "http://127.0.0.1:0/mcp",
  ]);
  port = /\(port (\d+)\)/.exec(daemon.log())[1];
  psql("INSERT INTO chats (id, kind, title) SELECT -4200000 - g, 'group', 'Files ' || g FROM generate_series(1, 9) g");
  client = new Client({ name: "files", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
});

after(async () => {
  await client?.close().catch(() => {});
  if (daemon && daemon.child.exitCode === null) {
    // A daemon whose loop is blocked ignores SIGTERM (the failure this
    // file tests for): do not hang the suite on it.
    const killer = setTimeout(() => daemon.child.kill("SIGKILL"), 15000);
    await daemon.stop();
    clearTimeout(killer);
  }
  emu?.kill();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

// Polls cond until it holds; fails naming what did not happen.
async function until(what, cond, ms = 30000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${daemon.log().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// p, or a failure saying the daemon stopped answering.
function answered(p, what) {
  let t;
  const stuck = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`${what} got no answer in 30 s: the daemon's loop is blocked`)), 30000);
  });
  return Promise.race([p, stuck]).finally(() => clearTimeout(t));
}

async function sendQueue() {
  const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(/^parley_telegram_send_queue (\d+)$/m.exec(m)?.[1]);
}

async function sendFile(args) {
  return client.callTool({ name: "messagesSendFile", arguments: args });
}

// A message to chat is held by the emulator; then messagesSendFile of name
// (to another chat) is checked and queued behind it; then swap replaces the
// file; then the held message goes. Returns the sendFile result.
async function sendFileSwappedInQueue(chat, name, swap) {
  await control("/control/holdSends", { chat });
  const first = client.callTool({ name: "messagesSend", arguments: { channelId: chat, text: "ahead in the queue" } });
  await until("the first send to be held", async () => (await control("/control/heldSends")).held === 1);
  const file = sendFile({ channelId: chat - 1, filePath: name, caption: name });
  await until("the file to be checked and queued", async () => (await sendQueue()) === 1);
  swap(path.join(up, name));
  await control("/control/releaseSends");
  const [r1, r2] = await Promise.all([answered(first, "messagesSend"), answered(file, "messagesSendFile")]);
  assert.ok(!r1.isError, textOf(r1));
  return r2;
}

async function sentDocument(caption) {
  return (await control("/control/sent")).find((x) => x.document && x.caption === caption)?.document;
}

test("messagesSendFile: a file swapped for a symlink to a file outside the root after the check: the checked bytes are sent", async () => {
  const original = Buffer.from("ORIGINAL bytes checked in the upload root\n".repeat(100));
  fs.writeFileSync(path.join(up, "swap-link.txt"), original);
  const r = await sendFileSwappedInQueue(-4200001, "swap-link.txt", (p) => {
    fs.rmSync(p);
    fs.symlinkSync(path.join(outside, "secret.txt"), p);
  });
  assert.ok(!r.isError, textOf(r));
  const doc = await sentDocument("swap-link.txt");
  assert.equal(doc.name, "swap-link.txt");
  assert.equal(doc.sha256, sha256(original), "the bytes checked were sent, not the symlink's target");
  assert.ok(!doc.head.startsWith("SECRET"));
});

test("messagesSendFile: a file swapped for a FIFO after the check: the checked bytes are sent, nothing waits on the FIFO", async () => {
  const original = Buffer.from("ORIGINAL bytes before the FIFO\n");
  fs.writeFileSync(path.join(up, "swap-fifo.txt"), original);
  const r = await sendFileSwappedInQueue(-4200003, "swap-fifo.txt", (p) => {
    fs.rmSync(p);
    execFileSync("mkfifo", [p]);
  });
  assert.ok(!r.isError, textOf(r));
  assert.equal((await sentDocument("swap-fifo.txt")).sha256, sha256(original));
  // The daemon still answers.
  const s = await answered(client.callTool({ name: "serverStatus", arguments: {} }), "serverStatus");
  assert.ok(!s.isError, textOf(s));
});

test("messagesSendFile: symbolic links, '..', FIFOs and directories are refused at the check", async () => {
  fs.writeFileSync(path.join(up, "plain.txt"), "plain\n");
  fs.symlinkSync(path.join(up, "plain.txt"), path.join(up, "link-inside.txt"));
  fs.symlinkSync(path.join(outside, "secret.txt"), path.join(up, "link-outside.txt"));
  fs.symlinkSync(outside, path.join(up, "dirlink"));
  fs.mkdirSync(path.join(up, "sub"));
  fs.writeFileSync(path.join(up, "sub", "nested.txt"), "nested\n");
  execFileSync("mkfifo", [path.join(up, "pipe")]);
  const chat = -4200005;
  for (const p of ["link-inside.txt", "link-outside.txt", "dirlink/secret.txt", "sub/../plain.txt", "../uploads/plain.txt", path.join(outside, "secret.txt")]) {
    const r = await answered(sendFile({ channelId: chat, filePath: p }), p);
    assert.equal(r.isError, true, p);
    assert.match(textOf(r), /is not a file in the upload root .*symbolic links are not followed/, p);
  }
  for (const p of ["pipe", "sub", "."]) {
    const r = await answered(sendFile({ channelId: chat, filePath: p }), p);
    assert.equal(r.isError, true, p);
    assert.match(textOf(r), /is not a regular file|is not a file in the upload root/, p);
  }
  assert.match(textOf(await sendFile({ channelId: chat, filePath: "pipe" })), /filePath: pipe is not a regular file/);
  // Plain files, relative and absolute inside the root, are sent.
  for (const [p, caption] of [["sub/nested.txt", "nested"], [path.join(up, "./sub//nested.txt"), "nested-abs"]]) {
    const r = await answered(sendFile({ channelId: chat, filePath: p, caption }), p);
    assert.ok(!r.isError, textOf(r));
    assert.equal((await sentDocument(caption)).name, "nested.txt");
  }
  const sent = (await control("/control/sent")).filter((x) => x.document);
  assert.ok(sent.every((x) => !x.document.head.startsWith("SECRET")), "nothing outside the root was sent");
});
