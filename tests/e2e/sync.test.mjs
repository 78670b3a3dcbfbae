// Live sync through the Bot API emulator: updates arrive in the archive in
// real time; with injected faults (429 with retry_after, 409, 500, an HTML
// body, a dropped connection) and a kill -9 of the daemon in the middle of
// ingest followed by a restart, the archive holds exactly the generated
// messages, each at its latest edit — none lost, none duplicated. Sending
// from an MCP client goes through the emulator and is stored; per-chat
// pacing is honoured; the token never shows in logs or results.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { controlAt, psqlAt, startDaemon, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_sync_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const TOKEN = "123456:TESTSECRET-never-in-logs";
let emu, api;

const psql = (sql, dbname = db) => psqlAt(pgDir, dbname, sql);
const control = (p, body) => controlAt(api, p, body);

let dataDir;
function daemon(extra = [], env = {}) {
  dataDir = tmpdir("parley-sync-");
  return startDaemon([
    "--db", url, "--data-dir", dataDir,
    "--telegram-bot-token", TOKEN, "--telegram-api-url", api, "--telegram-poll-timeout-s", "1",
    "--listen", "http://127.0.0.1:0/mcp", "--toolsets", "telegram", ...extra,
  ], env);
}

function archived() {
  const rows = psql("SELECT chat_id || ':' || id || ':' || coalesce(text, '') FROM messages WHERE NOT outgoing ORDER BY 1");
  return rows ? rows.split("\n") : [];
}

async function expectedRows() {
  return (await control("/control/expected")).map(([c, i, t]) => `${c}:${i}:${t}`).sort();
}

async function waitArchived(want, ms = 60000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = archived();
    if (got.length === want.length && got.join("\n") === want.join("\n")) return got;
    if (Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function emulator() {
  const child = spawn(process.execPath, [path.join(here, "..", "harness", "botapi_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(child.stdout, "data");
  const base = `http://127.0.0.1:${JSON.parse(line).port}`;
  const ctl = async (p, body) => (await fetch(`${base}${p}`, body ? { method: "POST", body: JSON.stringify(body) } : {})).json();
  return {
    child,
    api: base,
    control: ctl,
    expected: async () => (await ctl("/control/expected")).map(([c, i, t]) => `${c}:${i}:${t}`).sort(),
  };
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  const e = await emulator();
  emu = e.child;
  api = e.api;
});

after(async () => {
  emu?.kill();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("PostgreSQL stopped and started mid-ingest: nothing lost, nothing twice", async () => {
  // A cluster of its own, to stop under the daemon.
  const harness = path.join(here, "..", "harness", "pg_cluster.sh");
  const dir = tmpdir("parley-pgsync-");
  execFileSync(harness, ["start", dir]);
  const own = `host=${dir} port=5432 user=parley dbname=postgres`;
  const q = (sql) => execFileSync("psql", ["-X", "-q", "-At", "-h", dir, "-U", "parley", "-d", "postgres", "-c", sql], { encoding: "utf8" }).trim();
  const e = await emulator(); // its own, so the other tests' expectations stay theirs
  const d = await startDaemon([
    "--db", own, "--data-dir", tmpdir("parley-sync-"), "--db-query-timeout-ms", "3000",
    "--telegram-bot-token", TOKEN, "--telegram-api-url", e.api, "--telegram-poll-timeout-s", "1",
  ]);
  try {
    await e.control("/control/generate", { n: 200, chats: 4, editEvery: 6 });
    await new Promise((r) => setTimeout(r, 100));
    execFileSync(harness, ["stop", dir]);
    await e.control("/control/generate", { n: 200, chats: 4, editEvery: 5 });
    await new Promise((r) => setTimeout(r, 1500));
    execFileSync(harness, ["start", dir]);
    const want = await e.expected();
    const deadline = Date.now() + 60000;
    let got;
    for (;;) {
      const rows = q("SELECT chat_id || ':' || id || ':' || coalesce(text, '') FROM messages WHERE NOT outgoing ORDER BY 1");
      got = rows ? rows.split("\n") : [];
      if (got.join("\n") === want.join("\n") || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.deepEqual(got, want);
    assert.match(d.log(), /storing updates failed|reading the update offset failed|connection/i);
  } finally {
    await d.stop();
    e.child.kill();
    execFileSync(harness, ["destroy", dir]);
  }
});

test("updates arrive exactly once through faults and a kill -9", async () => {
  let d = await daemon();
  try {
    await control("/control/generate", { n: 150, chats: 6, editEvery: 5 });
    await control("/control/faults", { faults: ["429", "500", "html", "drop", "409"] });
    await control("/control/generate", { n: 150, chats: 6, editEvery: 7 });
    const want = await expectedRows();
    const got = await waitArchived(want);
    assert.deepEqual(got, want);
    assert.match(d.log(), /rate limited by Telegram \(429\)/);
    assert.match(d.log(), /409 conflict/);
    assert.match(d.log(), /not JSON/);
    // Kill -9 in the middle of the next batch, then restart.
    await control("/control/generate", { n: 400, chats: 6, editEvery: 6 });
    await new Promise((r) => setTimeout(r, 150));
    d.child.kill("SIGKILL");
    await once(d.child, "exit");
    await control("/control/generate", { n: 100, chats: 6, editEvery: 4 });
    d = await daemon();
    const want2 = await expectedRows();
    assert.deepEqual(await waitArchived(want2), want2);
    // The stored offset matches what the emulator has confirmed.
    const stats = await control("/control/stats");
    assert.equal(stats.updates, 800);
    assert.equal(Number(psql("SELECT cursor->>'offset' FROM sync_state")), 1000 + 800);
    assert.doesNotMatch(d.log(), /TESTSECRET/);
  } finally {
    await d.stop();
  }
});

test("batches staged beside the next poll: nothing lost or doubled across kill -9, none left staged, each small batch stored", async () => {
  // A batch is staged with its offset, the next getUpdates goes out while
  // it is applied: kill -9 while batches are in flight, twice, then
  // restart; the restart applies what was staged and polls from the
  // staged offset.
  let d = await daemon();
  try {
    for (const wait of [150, 400]) {
      await control("/control/generate", { n: 3000, chats: 8, editEvery: 4 });
      await new Promise((r) => setTimeout(r, wait));
      d.child.kill("SIGKILL");
      await once(d.child, "exit");
      d = await daemon();
    }
    const want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    const stats = await control("/control/stats");
    assert.equal(Number(psql("SELECT cursor->>'offset' FROM sync_state WHERE stream = 'updates'")), 1000 + stats.updates);
    assert.equal(psql("SELECT count(*) FROM bot_update_batches"), "0");
    // Small batches, each waited for: each is stored without a later one
    // to push it. One update goes in one transaction with its offset; 11
    // (past TG_BOT_DIRECT_MAX) are staged, and an apply's count of what is
    // left, taken before a batch staged beside it, must not leave that
    // batch waiting.
    for (let i = 0; i < 30; i++) {
      await control("/control/generate", { n: i % 2 ? 11 : 1, chats: 8, editEvery: 0, seed: 300 + i });
      const one = await expectedRows();
      assert.deepEqual(await waitArchived(one, 10000), one, `small batch ${i} not stored:\n${d.log()}`);
    }
    assert.equal(psql("SELECT count(*) FROM bot_update_batches"), "0");
  } finally {
    await d.stop();
  }
});

test("photos are downloaded into the media store, deduplicated, with the size limit", async () => {
  const d = await daemon();
  try {
    await control("/control/generate", { n: 60, chats: 3, editEvery: 0, photoEvery: 2 });
    const want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    const files = await control("/control/files");
    const deadline = Date.now() + 30000;
    let rows;
    for (;;) {
      rows = psql("SELECT chat_id || ':' || message_id || '|' || state || '|' || coalesce(sha256, '') || '|' || coalesce(error, '') FROM media WHERE file_id IS NOT NULL ORDER BY 1").split("\n").filter(Boolean);
      if (rows.length >= files.length && rows.every((r) => /\|(done|error)\|/.test(r))) break;
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    const state = Object.fromEntries(rows.map((r) => [r.split("|")[0], r]));
    const shaOf = new Map();
    for (const [key, unique] of files) {
      const row = state[key];
      assert.ok(row, `media row for ${key}`);
      if (unique === "error") {
        assert.match(row, /\|error\|\|.*20 MB/);
        continue;
      }
      assert.match(row, /\|done\|[0-9a-f]{64}\|$/);
      const sha = row.split("|")[2];
      if (shaOf.has(unique)) assert.equal(sha, shaOf.get(unique), "same file, same sha");
      shaOf.set(unique, sha);
    }
    const stored = Number(psql("SELECT count(DISTINCT sha256) FROM media WHERE state = 'done'"));
    assert.equal(stored, new Set(files.map(([, u]) => u).filter((u) => u !== "error")).size);
    // mediaDownload serves a stored file.
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const c = new Client({ name: "media", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const [chat, msg] = files.find(([, u]) => u !== "error")[0].split(":").map(Number);
    const dl = await c.callTool({ name: "mediaDownload", arguments: { channelId: chat, messageId: msg } });
    assert.ok(!dl.isError, textOf(dl));
    assert.ok(dl.structuredContent.bytes >= 20000);
    await c.close();
  } finally {
    await d.stop();
  }
});

test("concurrent media downloads keep memory bounded", async () => {
  // Under AddressSanitizer freed memory waits in a quarantine (256 MB by
  // default) before reuse; keep it small so RSS shows what is really held.
  const d = await daemon([], { ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ""}:quarantine_size_mb=4` });
  try {
    const hwm = () => Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${d.child.pid}/status`, "utf8"))[1]);
    const size = 8 * 1024 * 1024;
    const files = 12;
    const doneCount = () => Number(psql("SELECT count(*) FROM media WHERE file_unique_id LIKE 'sized%' AND state = 'done'"));
    const waitDone = async (n) => {
      const deadline = Date.now() + 60000;
      while (doneCount() < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(doneCount(), n);
    };
    // Warm up (pools, buffers) with one file, then measure the peak over the rest.
    const base = doneCount();
    await control("/control/generate", { n: 1, chats: 2, editEvery: 0, photoEvery: 1, photoSize: size });
    await waitDone(base + 1);
    const before = hwm();
    await control("/control/generate", { n: files, chats: 3, editEvery: 0, photoEvery: 1, photoSize: size });
    await waitDone(base + 1 + files);
    const grown = (hwm() - before) / 1024;
    // Four transfers of 8 MB at once would need 32 MB if bodies were held.
    assert.ok(grown < 24, `peak RSS grew by ${grown.toFixed(1)} MB over ${files} downloads of 8 MB`);
    const sizes = psql("SELECT DISTINCT file_size FROM media WHERE file_unique_id LIKE 'sized%' AND state = 'done'");
    assert.equal(sizes, String(size));
  } finally {
    await d.stop();
  }
});

test("mediaDownload of a file still arriving waits for it, with progress", async () => {
  const d = await daemon();
  try {
    const size = 6 * 1024 * 1024;
    await control("/control/fileRate", { bytesPerSecond: 2 * 1024 * 1024 });
    await control("/control/generate", { n: 1, chats: 1, editEvery: 0, photoEvery: 1, photoSize: size });
    const want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    const key = (await control("/control/files")).at(-1)[0];
    const [chat, msg] = key.split(":").map(Number);
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const c = new Client({ name: "media-wait", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const seen = [];
    const dl = await c.callTool({ name: "mediaDownload", arguments: { channelId: chat, messageId: msg, outputPath: "slow.jpg" } },
      undefined, { onprogress: (p) => seen.push(p), timeout: 60000 });
    assert.ok(!dl.isError, textOf(dl));
    assert.equal(dl.structuredContent.bytes, size);
    assert.equal(fs.statSync(dl.structuredContent.path).size, size);
    assert.ok(seen.length >= 3, `progress notifications: ${seen.length}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, "monotonic");
    assert.equal(seen[0].total, size);
    assert.match(seen[0].message, /downloaded [\d.]+ of 6\.0 MB/);
    // A message without a file says so.
    const none = await c.callTool({ name: "mediaDownload", arguments: { channelId: chat, messageId: 999999 } });
    assert.equal(none.isError, true);
    assert.match(textOf(none), /has no file/);
    await c.close();
  } finally {
    await control("/control/fileRate", { bytesPerSecond: 0 });
    await d.stop();
  }
});

test("sending from an MCP client, paced per chat; realtime on and off; status", async () => {
  const d = await daemon();
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const c = new Client({ name: "send", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const chat = psql("SELECT id FROM chats WHERE kind = 'supergroup' ORDER BY id LIMIT 1");
    const results = await Promise.all([1, 2, 3].map((i) => c.callTool({ name: "messagesSend", arguments: { channelId: Number(chat), text: `hello ${i}` } })));
    for (const r of results) {
      assert.ok(!r.isError, textOf(r));
      assert.equal(r.structuredContent.channelId, Number(chat));
    }
    const sent = (await control("/control/sent")).filter((s) => String(s.chat_id) === chat);
    assert.equal(sent.length, 3);
    assert.ok(sent[2].at - sent[0].at >= 1800, "about one message a second per chat");
    assert.equal(Number(psql(`SELECT count(*) FROM messages WHERE chat_id = ${chat} AND outgoing`)), 3);
    // About thirty a second overall: 30 chats at once still go out paced.
    psql("INSERT INTO chats (id, kind, title) SELECT -300000 - g, 'group', 'Paced ' || g FROM generate_series(1, 30) g");
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      c.callTool({ name: "messagesSend", arguments: { channelId: -300001 - i, text: `burst ${i}` } })));
    assert.ok(burst.every((r) => !r.isError), textOf(burst.find((r) => r.isError) ?? burst[0]));
    const times = (await control("/control/sent")).filter((x) => x.chat_id <= -300001 && x.chat_id >= -300030).map((x) => x.at).sort((x, y) => x - y);
    assert.equal(times.length, 30);
    // 34 ms apart at the daemon; allow for jitter on the way.
    assert.ok(times[29] - times[0] >= 29 * 34 * 0.8, `30 sends within ${times[29] - times[0]} ms`);
    const status = await c.callTool({ name: "serverStatus", arguments: {} });
    assert.equal(status.structuredContent.realtimeActive, true);
    const auth = await c.callTool({ name: "authStatus", arguments: {} });
    assert.equal(auth.structuredContent.authenticated, true);
    const off = await c.callTool({ name: "syncRealtimeSet", arguments: { enabled: false } });
    assert.equal(off.structuredContent.realtimeActive, false);
    await control("/control/generate", { n: 5, chats: 2 });
    await new Promise((r) => setTimeout(r, 1500));
    const before = archived().length;
    const on = await c.callTool({ name: "syncRealtimeSet", arguments: { enabled: true } });
    assert.equal(on.structuredContent.realtimeActive, true);
    const want = await expectedRows();
    assert.equal((await waitArchived(want)).length, want.length);
    assert.ok(want.length > before, "nothing was fetched while realtime was off");
    // Group administration where a bot can; a clear refusal where it cannot.
    const rename = await c.callTool({ name: "groupsRename", arguments: { channelId: Number(chat), name: "Renamed" } });
    assert.deepEqual(rename.structuredContent, { channelId: Number(chat), name: "Renamed" });
    const link = await c.callTool({ name: "groupsInviteLinkGet", arguments: { channelId: Number(chat) } });
    assert.match(link.structuredContent.inviteLink, /^https:\/\/t\.me\/\+emulated/);
    const revoke = await c.callTool({ name: "groupsInviteLinkRevoke", arguments: { channelId: Number(chat) } });
    assert.equal(revoke.structuredContent.previousRevoked, true);
    psql("INSERT INTO users (id, first_name) VALUES (13, 'Ghost'), (14, 'Kicked') ON CONFLICT DO NOTHING");
    const rm = await c.callTool({ name: "groupsMembersRemove", arguments: { channelId: Number(chat), userIds: [13, 14] } });
    assert.deepEqual(rm.structuredContent.removed, [14]);
    assert.equal(rm.structuredContent.failed[0].userId, 13);
    assert.match(rm.structuredContent.failed[0].error, /user not found/);
    const calls = (await control("/control/calls")).map((x) => x.method);
    assert.deepEqual(calls, ["setChatTitle", "exportChatInviteLink", "exportChatInviteLink", "banChatMember", "banChatMember", "unbanChatMember"]);
    for (const [tool, args, re] of [
      ["groupsMembersAdd", { channelId: Number(chat), userIds: [1] }, /cannot add members/],
      ["groupsJoin", { invite: "https://t.me/+x" }, /cannot join a group by invite/],
      ["channelsSearch", { query: "x" }, /cannot list or search its dialogs/],
      ["messagesList", { source: "live" }, /cannot read chat history/],
    ]) {
      const r = await c.callTool({ name: tool, arguments: args });
      assert.equal(r.isError, true, tool);
      assert.match(textOf(r), re, tool);
    }
    // A file from the upload root, streamed as multipart; paths outside refused.
    const up = path.join(dataDir, "uploads");
    fs.mkdirSync(up, { recursive: true });
    fs.writeFileSync(path.join(up, "report.txt"), "x".repeat(300000));
    const sf = await c.callTool({ name: "messagesSendFile", arguments: { channelId: Number(chat), filePath: "report.txt", caption: "the report" } });
    assert.ok(!sf.isError, textOf(sf));
    const doc = (await control("/control/sent")).find((x) => x.document);
    assert.equal(doc.document.name, "report.txt");
    assert.equal(doc.document.size, 300000);
    assert.equal(doc.caption, "the report");
    assert.equal(psql(`SELECT text || '|' || media_kind FROM messages WHERE chat_id = ${chat} AND id = ${sf.structuredContent.messageId}`), "the report|document");
    // One answer for a file outside the root, whether it exists or not, and
    // for a missing one: the answer does not tell which files exist.
    const answers = [];
    for (const p of ["../../../../../../etc/passwd", "../../../../../../etc/nonexistent", "/etc/passwd", "/etc/nonexistent", "missing.txt"]) {
      const r = await c.callTool({ name: "messagesSendFile", arguments: { channelId: Number(chat), filePath: p } });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /is not a file in the upload root/);
      answers.push(textOf(r).replace(p, "PATH"));
    }
    assert.equal(new Set(answers).size, 1, answers.join("\n"));
    // The job queue: a history backfill is not possible for a bot (idle,
    // saying why); a metadata job refreshes the chat with getChat.
    const job = await c.callTool({ name: "syncJobsAdd", arguments: { channelId: Number(chat), depth: 100 } });
    assert.ok(!job.isError, textOf(job));
    psql(`INSERT INTO sync_jobs (class, channel, chat_id) VALUES ('telegram.metadata', '${chat}', ${chat})`);
    const until = Date.now() + 15000;
    let jobs;
    for (;;) {
      jobs = psql("SELECT class || '|' || status || '|' || coalesce(error, '') FROM sync_jobs ORDER BY id").split("\n");
      if (jobs.every((j) => j.includes("|idle|")) || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(jobs[0], /^telegram\.sync\|idle\|a bot account cannot read chat history/);
    assert.match(jobs[1], /^telegram\.metadata\|idle\|$/);
    assert.equal(psql(`SELECT title || '|' || (metadata_updated_at IS NOT NULL) FROM chats WHERE id = ${chat}`), "Emulated|true");
    // channelsMetadataRefresh: fresh chats skipped unless forced; a chat
    // Telegram refuses is reported and the others go on; progress per chat.
    const skip = await c.callTool({ name: "channelsMetadataRefresh", arguments: { channelIds: [Number(chat)] } });
    assert.ok(!skip.isError, textOf(skip));
    assert.deepEqual([skip.structuredContent.channels, skip.structuredContent.skipped], [[], 1]);
    psql("INSERT INTO chats (id, kind, title, account_id) SELECT 4242, 'private', 'Gone', id FROM accounts WHERE kind = 'telegram_bot'");
    const steps = [];
    const forced = await c.callTool({ name: "channelsMetadataRefresh", arguments: { channelIds: [Number(chat), 4242], force: true } },
      undefined, { onprogress: (p) => steps.push(p.progress) });
    assert.ok(!forced.isError, textOf(forced));
    assert.deepEqual(steps, [0, 1]);
    const rec = forced.structuredContent.channels[0];
    assert.deepEqual([rec.channelId, rec.peerTitle, rec.username, rec.about, rec.memberCount],
      [Number(chat), "Emulated", "@emulated", "An emulated group", 42]);
    assert.deepEqual(forced.structuredContent.failed, [{ channelId: 4242, error: "Telegram refused it: Bad Request: chat not found" }]);
    const some = await c.callTool({ name: "channelsMetadataRefresh", arguments: { onlyMissing: true, limit: 1000 } });
    assert.ok(!some.isError, textOf(some));
    assert.equal(some.structuredContent.limitCapped, true);
    assert.ok(some.structuredContent.channels.length >= 1, "chats never refreshed are refreshed");
    assert.ok(some.structuredContent.channels.every((x) => x.channelId !== Number(chat)), "onlyMissing skips refreshed chats");
    const unknown = await c.callTool({ name: "channelsMetadataRefresh", arguments: { channelIds: ["@nobody"] } });
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /@nobody/);
    // groupsInfo: the archive's record, and what the Bot API says now.
    const info = await c.callTool({ name: "groupsInfo", arguments: { channelId: Number(chat) } });
    assert.ok(!info.isError, textOf(info));
    assert.equal(info.structuredContent.channelId, Number(chat));
    assert.ok(info.structuredContent.messageCount >= 3);
    assert.equal(info.structuredContent.live.chat.description, "An emulated group");
    assert.equal(info.structuredContent.live.memberCount, 42);
    assert.deepEqual(info.structuredContent.live.administrators.map((x) => x.status), ["creator", "administrator"]);
    // /metrics shows the queue, the connector and the downloads.
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const re of [/^parley_sync_jobs\{class="telegram.metadata",status="pending"\} \d+$/m,
                      /^parley_sync_jobs\{class="telegram.sync",status="in_progress"\} \d+$/m,
                      /^parley_sync_jobs_running\{class="telegram.sync"\} 0$/m,
                      /^parley_telegram_updates_applied_total [1-9]\d*$/m,
                      /^parley_telegram_send_queue 0$/m,
                      /^parley_media_downloads_active \d+$/m])
      assert.match(metrics, re);
    const leave = await c.callTool({ name: "groupsLeave", arguments: { channelId: Number(chat) } });
    assert.deepEqual(leave.structuredContent, { channelId: Number(chat), left: true });
    const bad = await c.callTool({ name: "messagesSend", arguments: { channelId: "@nobody", text: "x" } });
    assert.equal(bad.isError, true);
    assert.doesNotMatch(JSON.stringify([results, status, auth]), /TESTSECRET/);
    await c.close();
  } finally {
    await d.stop();
  }
  assert.doesNotMatch(d.log(), /TESTSECRET/);
});

test("inline tools send through the connector, each item of a batch answered", async () => {
  const d = await daemon(["--toolsets", "inline"]);
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const c = new Client({ name: "inline-send", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    psql("INSERT INTO chats (id, kind, title) VALUES (-400777, 'group', 'Inline target') ON CONFLICT DO NOTHING");
    const one = await c.callTool({ name: "messages_send", arguments: { chatId: -400777, text: "hi from inline" } });
    assert.ok(!one.isError, textOf(one));
    assert.equal(one.structuredContent.chatId, -400777);
    assert.match(one.structuredContent.uri, /^inline:\/\/chat\/-400777\/message\/\d+$/);
    const batch = await c.callTool({ name: "messages.send_batch", arguments: { items: [
      { chatId: -400777, text: "one" }, { chatId: 5, text: "two" }, { chatId: -400777, text: "three" }] } });
    assert.ok(!batch.isError, textOf(batch));
    assert.deepEqual(batch.structuredContent.results.map((r) => r.ok), [true, false, true]);
    assert.match(batch.structuredContent.results[1].error, /chatId: no chat 5/);
    const sent = (await control("/control/sent")).filter((x) => x.chat_id === -400777).map((x) => x.text);
    assert.deepEqual(sent, ["hi from inline", "one", "three"]);
    const create = await c.callTool({ name: "conversations_create", arguments: { title: "Release" } });
    assert.equal(create.isError, true);
    assert.match(textOf(create), /cannot create chats.*Create the chat in a Telegram app/);
    // A file uploaded, then sent as a document with its caption and reply target.
    const up = await c.callTool({ name: "files_upload", arguments: { base64: Buffer.from("report body").toString("base64"), fileName: "report.txt" } });
    assert.ok(!up.isError, textOf(up));
    const media = await c.callTool({ name: "messages_send_media", arguments: {
      chatId: -400777, fileId: up.structuredContent.fileId, caption: "the report", replyToMessageId: one.structuredContent.messageId } });
    assert.ok(!media.isError, textOf(media));
    const doc = (await control("/control/sent")).find((x) => x.chat_id === -400777 && x.document);
    assert.deepEqual([doc.document.name, doc.document.size, doc.caption], ["report.txt", 11, "the report"]);
    assert.match((await c.callTool({ name: "messages_send_media", arguments: { chatId: -400777, fileId: "nope" } })).content[0].text,
      /fileId: no file "nope"/);
    // Plain http is refused unless the daemon allows it (tests only).
    const plain = await c.callTool({ name: "files_upload", arguments: { url: "http://example.org/x.pdf" } });
    assert.equal(plain.isError, true);
    assert.match(textOf(plain), /refused/);
    const nodm = await c.callTool({ name: "messages_send", arguments: { userId: 424242, text: "x" } });
    assert.equal(nodm.isError, true);
    assert.match(textOf(nodm), /userId: no direct chat with user 424242/);
    await c.close();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("two daemons on one database: one polls, the other stands by and takes over", async () => {
  // The daemons of the earlier tests gave the poller lease back as they stopped.
  assert.equal(psql("SELECT count(*) FROM sync_state WHERE stream = 'poller'"), "0");
  const a = await daemon();
  const b = await daemon();
  try {
    await control("/control/generate", { n: 100, chats: 3, editEvery: 9 });
    const want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    const logs = () => a.log() + b.log();
    const deadline = Date.now() + 10000;
    while (!/standing by/.test(logs()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.match(logs(), /another daemon polls this bot; standing by/);
    assert.doesNotMatch(logs(), /409 conflict/);
    // The poller stops cleanly: the other takes over.
    const owner = psql("SELECT cursor ->> 'owner' FROM sync_state WHERE stream = 'poller'");
    const poller = owner.endsWith(`:${a.child.pid}`) ? a : b;
    assert.ok(owner.endsWith(`:${poller.child.pid}`), `lease owner ${owner}`);
    const other = poller === a ? b : a;
    assert.equal(await poller.stop(), 0);
    await control("/control/generate", { n: 50, chats: 3, editEvery: 0 });
    const want2 = await expectedRows();
    assert.deepEqual(await waitArchived(want2, 30000), want2);
    // The log line may reach us a little after the rows do.
    for (let i = 0; i < 50 && !/took over polling this bot/.test(other.log()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(other.log(), /took over polling this bot/, `poller ${poller.child.pid} owner ${owner}\n--- poller:\n${poller.log()}\n--- other ${other.child.pid}:\n${other.log()}`);
  } finally {
    await a.stop();
    await b.stop();
  }
});

test("an apply that fails leaves the poller alone: a standby stays standing by, takes over at once, and the staged batches are applied once", async () => {
  // The apply of staged batches retries on a timer of its own: a failed
  // apply once sent the daemon into the poller's backoff, so a standby
  // stopped standing by and, when the poller died, took over only when
  // that backoff (up to 30 s) ran out.
  const upstream = async (d) => {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const c = new Client({ name: "status", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    try {
      return (await c.callTool({ name: "serverStatus", arguments: {} })).structuredContent.upstream;
    } finally {
      await c.close();
    }
  };
  const a = await daemon();
  let b;
  try {
    await control("/control/generate", { n: 20, chats: 2, editEvery: 0 });
    let want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    psql(`CREATE FUNCTION e2e_apply_fault() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected apply fault'; END $$;
          CREATE TRIGGER e2e_apply_fault BEFORE INSERT OR UPDATE ON messages
            FOR EACH STATEMENT EXECUTE FUNCTION e2e_apply_fault()`);
    await control("/control/generate", { n: 40, chats: 2, editEvery: 7 });
    for (let i = 0; i < 100 && !/applying updates failed/.test(a.log()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(a.log(), /applying updates failed: .*injected apply fault/);
    assert.ok(Number(psql("SELECT count(*) FROM bot_update_batches")) > 0, "batches staged");
    assert.equal(await upstream(a), "polling");
    // A daemon started now finds batches staged and tries them too.
    b = await daemon();
    const failures = () => (b.log().match(/applying updates failed/g) ?? []).length;
    for (let i = 0; i < 100 && failures() < 2; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(failures() >= 2, b.log());
    assert.match(b.log(), /another daemon polls this bot; standing by/);
    for (let i = 0; i < 8; i++) {
      assert.equal(await upstream(b), "standby", b.log());
      await new Promise((r) => setTimeout(r, 500));
    }
    // The poller dies and the fault clears: the standby takes over at once.
    a.child.kill("SIGKILL");
    await once(a.child, "exit");
    psql("DROP TRIGGER e2e_apply_fault ON messages; DROP FUNCTION e2e_apply_fault()");
    await control("/control/generate", { n: 20, chats: 2, editEvery: 3 });
    want = await expectedRows();
    assert.deepEqual(await waitArchived(want, 5000), want, `not archived within 5 s of the takeover:\n${b.log()}`);
    assert.equal(psql("SELECT count(*) FROM bot_update_batches"), "0");
    const stats = await control("/control/stats");
    assert.equal(Number(psql("SELECT cursor->>'offset' FROM sync_state WHERE stream = 'updates'")), 1000 + stats.updates);
  } finally {
    psql("DROP TRIGGER IF EXISTS e2e_apply_fault ON messages; DROP FUNCTION IF EXISTS e2e_apply_fault()");
    if (a.child.exitCode === null && a.child.signalCode === null) await a.stop();
    await b?.stop();
  }
});

test("kill -9: a restart polls again within 5 s, and so does a standby, nothing lost or doubled", async () => {
  // The poller holds an advisory lock on its own connection: PostgreSQL
  // releases it the moment the process dies, not when a lease runs out.
  let a = await daemon();
  let b;
  try {
    await control("/control/generate", { n: 60, chats: 3, editEvery: 5 });
    let want = await expectedRows();
    assert.deepEqual(await waitArchived(want), want);
    a.child.kill("SIGKILL");
    await once(a.child, "exit");
    await control("/control/generate", { n: 60, chats: 3, editEvery: 4 });
    want = await expectedRows();
    a = await daemon(); // ready: the store is reachable; from here the clock runs
    assert.deepEqual(await waitArchived(want, 5000), want, `not archived within 5 s of the restart:\n${a.log()}`);
    assert.doesNotMatch(a.log(), /standing by/);
    // A standby daemon takes over when the poller dies.
    b = await daemon();
    for (let i = 0; i < 100 && !/standing by/.test(b.log()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(b.log(), /another daemon polls this bot; standing by/);
    a.child.kill("SIGKILL");
    await once(a.child, "exit");
    await control("/control/generate", { n: 60, chats: 3, editEvery: 3 });
    want = await expectedRows();
    assert.deepEqual(await waitArchived(want, 5000), want, `the standby did not take over within 5 s:\n${b.log()}`);
    // The log line may reach us a little after the rows do.
    for (let i = 0; i < 50 && !/took over polling this bot/.test(b.log()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(b.log(), /took over polling this bot/);
    // Exactly once: the stored offset is what the emulator confirmed, and
    // every message is there once (archived() lists rows, the primary key
    // makes doubles impossible; the count says nothing was skipped).
    const stats = await control("/control/stats");
    assert.equal(Number(psql("SELECT cursor->>'offset' FROM sync_state WHERE stream = 'updates'")), 1000 + stats.updates);
    const owner = psql("SELECT cursor ->> 'owner' FROM sync_state WHERE stream = 'poller'");
    assert.ok(owner.endsWith(`:${b.child.pid}`), `lease row ${owner}`);
  } finally {
    if (a.child.exitCode === null && a.child.signalCode === null) await a.stop();
    await b?.stop();
  }
});
