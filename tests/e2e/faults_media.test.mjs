// faults_media: the Bot API flaps while media downloads run. The emulator
// answers a fraction of getFile calls and file downloads with no answer at
// all, a 500, a connection reset in the middle of the body, or a body cut
// short that otherwise looks complete (no Content-Length, a clean end);
// meanwhile two MCP clients (the official SDK over Streamable HTTP) keep
// calling tools. Then the faults stop. Every file must end up in the media
// store exactly once with the right sha256 and size (checked in the
// database, on disk, and through mediaDownload), no partial file may be
// left in the store, every message is archived once, every tool call is
// answered within a generous bound, and the retries show in /metrics, in
// the attempts recorded and in the log (a few lines, not one per failure).
//
// Then the disk fills up under the media store. Filling a real disk or
// mounting a small tmpfs needs privileges CI does not have, and a test-only
// cap in the store would test a code path of its own; instead the daemon's
// file size limit (RLIMIT_FSIZE, set on the running process with prlimit,
// no privilege needed) is lowered below the size of the files: the kernel
// then cuts the download's writes short and fails the next with EFBIG,
// exactly as a full disk does with ENOSPC (a partial write, then an
// error), through the same write calls (parleyd ignores SIGXFSZ, so the
// write fails instead of the process dying). Every download fails while
// the limit holds: no partial file may stay in the store, the jobs must
// stay queued and be retried, the log must say so once (not once per
// attempt), tool calls must keep working; once the limit is lifted every
// file must be stored.
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
const db = `e2e_faults_media_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
let emu, api;

const psql = (sql, dbname = db) => psqlAt(pgDir, dbname, sql);
const control = (p, body) => controlAt(api, p, body);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every file under dir, relative to it.
function listFiles(dir, rel = "") {
  const out = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const p = path.join(rel, e.name);
    if (e.isDirectory()) out.push(...listFiles(dir, p));
    else out.push(p);
  }
  return out;
}

const sha256 = (buf) => crypto.createHash("sha256").update(buf).digest("hex");

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  emu = spawn(process.execPath, [path.join(here, "..", "harness", "botapi_emulator.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(emu.stdout, "data");
  api = `http://127.0.0.1:${JSON.parse(line).port}`;
});

after(() => {
  emu?.kill();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

// A daemon syncing the emulator's bot on the test database, retrying
// failed downloads after at most 2 s, a download failing after stallS
// seconds without a byte; served over HTTP.
function botDaemon(dataDir, stallS) {
  return startDaemon([
    "--db", url, "--data-dir", dataDir, "--toolsets", "telegram",
    "--telegram-bot-token", "123456:FAULTS", "--telegram-api-url", api, "--telegram-poll-timeout-s", "1",
    "--telegram-media-stall-s", String(stallS), "--telegram-media-retry-max-s", "2",
    "--listen", "http://127.0.0.1:0/mcp",
  ]);
}

test("media downloads through a flapping Bot API: each file stored once, intact; calls served throughout", async () => {
  const dataDir = tmpdir("parley-fmedia-");
  const d = await botDaemon(dataDir, 2);
  const port = /\(port (\d+)\)/.exec(d.log())[1];
  const mcpUrl = new URL(`http://127.0.0.1:${port}/mcp`);
  const clients = [];
  let stop = false;
  const calls = { ok: 0, err: [], slowest: 0 };
  try {
    await control("/control/fileFaults", { rate: 0.5, seed: 7 });
    for (let i = 0; i < 2; i++) {
      const c = new Client({ name: `fmedia-${i}`, version: "1" });
      await c.connect(new StreamableHTTPClientTransport(mcpUrl));
      clients.push(c);
    }
    // Tool calls all along: the daemon stays responsive while downloads fail.
    const loops = clients.map(async (c, i) => {
      const mix = [["messagesSearch", { query: "parley" }], ["channelsList", { limit: 5 }], ["serverStatus", {}]];
      for (let k = i; !stop; k++) {
        const [name, args] = mix[k % mix.length];
        const t0 = Date.now();
        try {
          const r = await c.callTool({ name, arguments: args });
          if (r.isError) calls.err.push(`${name}: ${textOf(r)}`);
          else calls.ok++;
        } catch (e) {
          calls.err.push(`${name}: ${e.message}`);
        }
        calls.slowest = Math.max(calls.slowest, Date.now() - t0);
        await sleep(50);
      }
    });
    // Photos (some the same file twice, some too large for the Bot API) and
    // larger files, until every kind of fault has hit both getFile and the
    // downloads at least once.
    await control("/control/generate", { n: 40, chats: 3, editEvery: 0, photoEvery: 2 });
    const kinds = ["timeout", "500", "reset", "truncate"];
    const want = [...kinds.map((k) => `download:${k}`), ...kinds.map((k) => `getFile:${k}`)];
    let stats;
    for (let round = 0; round < 40; round++) {
      stats = await control("/control/stats");
      if (want.every((k) => stats.fileFaults[k] > 0)) break;
      await control("/control/generate", { n: 4, chats: 3, editEvery: 0, photoEvery: 1, photoSize: 300000 + round });
      await sleep(1500);
    }
    assert.deepEqual(want.filter((k) => !(stats.fileFaults[k] > 0)), [], `faults not injected: ${JSON.stringify(stats)}`);
    // Retries are under way: rows wait for their next attempt.
    const waiting = Number(psql("SELECT count(*) FROM media WHERE state = 'error' AND next_attempt_at IS NOT NULL"));
    const failing = d.log();
    await control("/control/fileFaults", { rate: 0 });

    // Everything settles: each file done, or (too large) an error saying so.
    const files = await control("/control/files");
    const info = await control("/control/fileInfo");
    const deadline = Date.now() + 90000;
    let rows;
    for (;;) {
      rows = psql("SELECT chat_id || ':' || message_id || '|' || state || '|' || coalesce(sha256, '') || '|' || coalesce(file_size, 0) || '|' || attempts || '|' || coalesce(error, '') FROM media WHERE file_id IS NOT NULL ORDER BY 1")
        .split("\n").filter(Boolean);
      if (rows.length >= files.length && rows.every((r) => /\|(done|error)\|/.test(r)) &&
          rows.filter((r) => /\|error\|/.test(r)).every((r) => /20 MB/.test(r))) break;
      if (Date.now() > deadline) break;
      await sleep(500);
    }
    stop = true;
    await Promise.all(loops);
    const byKey = Object.fromEntries(rows.map((r) => [r.split("|")[0], r.split("|")]));
    const shas = new Set();
    for (const [key, unique] of files) {
      const row = byKey[key];
      assert.ok(row, `no media row for ${key}`);
      if (unique === "error") {
        assert.equal(row[1], "error", row.join("|"));
        assert.match(row[5], /20 MB/);
        continue;
      }
      assert.equal(row[1], "done", `${key} (${unique}): ${row.join("|")}`);
      assert.equal(row[2], info[unique].sha256, `${key} (${unique}) sha256`);
      assert.equal(Number(row[3]), info[unique].size, `${key} (${unique}) size`);
      shas.add(row[2]);
    }
    // The store holds each file exactly once, intact, and nothing else: no
    // partial download, no half-copied file.
    const media = path.join(dataDir, "media");
    const stored = listFiles(media).sort();
    assert.deepEqual(stored, [...shas].map((s) => path.join(s.slice(0, 2), s)).sort());
    for (const f of stored) assert.equal(sha256(fs.readFileSync(path.join(media, f))), path.basename(f), f);
    // mediaDownload serves the right bytes.
    const c = clients[0];
    for (const [key, unique] of files.filter(([, u]) => u !== "error").slice(0, 12)) {
      const [chat, msg] = key.split(":").map(Number);
      const dl = await c.callTool({ name: "mediaDownload", arguments: { channelId: chat, messageId: msg, outputPath: `f-${chat}-${msg}.jpg` } });
      assert.ok(!dl.isError, textOf(dl));
      assert.equal(dl.structuredContent.bytes, info[unique].size);
      assert.equal(sha256(fs.readFileSync(dl.structuredContent.path)), info[unique].sha256);
    }
    // No message lost or doubled.
    const expected = (await control("/control/expected")).map(([ch, i, t]) => `${ch}:${i}:${t}`).sort();
    const archivedRows = psql("SELECT chat_id || ':' || id || ':' || coalesce(text, '') FROM messages ORDER BY 1").split("\n");
    assert.deepEqual(archivedRows, expected);
    // The daemon answered every call, none slowly, while downloads failed.
    assert.deepEqual(calls.err, []);
    assert.ok(calls.ok > 20, `calls answered: ${calls.ok}`);
    assert.ok(calls.slowest < 10000, `a call took ${calls.slowest} ms`);
    // Retries are visible: rows waiting for their next attempt during the
    // faults, attempts recorded, failures counted, and a few log lines.
    assert.ok(waiting > 0 || /media downloads are failing/.test(failing), "no retry pending during the faults");
    assert.ok(Number(psql("SELECT max(attempts) FROM media WHERE state = 'done'")) > 1, "no file took more than one attempt");
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const failures = Number(/^parley_media_download_failures_total\{reason="upstream"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(failures >= 8, `failures counted: ${failures}\n${metrics}`);
    const lines = d.log().split("\n").filter((l) => /media downloads are failing/.test(l));
    assert.ok(lines.length >= 1 && lines.length <= 4, `${lines.length} log lines about failing downloads:\n${lines.join("\n")}`);
    for (let i = 0; i < 50 && !/media downloads succeed again/.test(d.log()); i++) await sleep(100);
    assert.match(d.log(), /media downloads succeed again/);
    console.log(`faults_media: ${JSON.stringify(stats.fileFaults)}; ${failures} failed attempts, max attempts ${psql("SELECT max(attempts) FROM media")}; ${calls.ok} calls, slowest ${calls.slowest} ms`);
  } finally {
    stop = true;
    await control("/control/fileFaults", { rate: 0 }).catch(() => {});
    for (const c of clients) await c.close().catch(() => {});
    assert.equal(await d.stop(), 0);
  }
});

test("a full disk under the media store: no partial file, one log line, retried until there is space", async () => {
  const dataDir = tmpdir("parley-enospc-");
  const d = await botDaemon(dataDir, 5);
  const pid = d.child.pid;
  const port = /\(port (\d+)\)/.exec(d.log())[1];
  const c = new Client({ name: "enospc", version: "1" });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const metric = async (reason) => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(new RegExp(`^parley_media_download_failures_total\\{reason="${reason}"\\} (\\d+)$`, "m").exec(text)[1]);
    };
    // Files of 1.5 MB (so that the writes fail while the body still
    // arrives); the daemon may write files of 64 KB at most.
    execFileSync("prlimit", ["--pid", String(pid), "--fsize=65536:"]);
    const before = new Set((await control("/control/files")).map(([k]) => k));
    await control("/control/generate", { n: 6, chats: 2, editEvery: 0, photoEvery: 1, photoSize: 1500000 });
    const files = (await control("/control/files")).filter(([k]) => !before.has(k));
    assert.equal(files.length, 6);
    // Several rounds of attempts fail (each retried after its wait); tool
    // calls are answered meanwhile.
    const deadline = Date.now() + 60000;
    while ((await metric("store")) < 3 * files.length && Date.now() < deadline) {
      const r = await c.callTool({ name: "channelsList", arguments: { limit: 5 } });
      assert.ok(!r.isError, textOf(r));
      await sleep(300);
    }
    const failed = await metric("store");
    assert.ok(failed >= 3 * files.length, `store failures: ${failed}\n${d.log().slice(-2000)}`);
    const keys = files.map(([k]) => `'${k}'`).join(",");
    const states = () => psql(`SELECT state || ':' || count(*) FROM media WHERE chat_id || ':' || message_id IN (${keys}) GROUP BY state ORDER BY 1`);
    assert.doesNotMatch(states(), /done/);
    const s = await c.callTool({ name: "serverStatus", arguments: {} });
    assert.ok(!s.isError, textOf(s));
    // One clear line for the whole episode, naming the cause.
    const lines = d.log().split("\n").filter((l) => /media store cannot keep/.test(l));
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], /ERROR.*file too large.*retried/i);
    assert.equal(await metric("upstream"), 0);

    // Space again: every file is stored, once, intact; nothing else is left.
    execFileSync("prlimit", ["--pid", String(pid), "--fsize=unlimited:"]);
    const info = await control("/control/fileInfo");
    const until = Date.now() + 60000;
    while (!/^done:6$/.test(states()) && Date.now() < until) await sleep(300);
    assert.equal(states(), "done:6");
    const rows = psql(`SELECT sha256 || '|' || file_size || '|' || file_unique_id FROM media WHERE chat_id || ':' || message_id IN (${keys})`).split("\n");
    for (const r of rows) {
      const [sha, size, unique] = r.split("|");
      assert.deepEqual([sha, Number(size)], [info[unique].sha256, info[unique].size], r);
    }
    const media = path.join(dataDir, "media");
    const stored = listFiles(media).sort();
    assert.deepEqual(stored, rows.map((r) => r.split("|")[0]).map((x) => path.join(x.slice(0, 2), x)).sort());
    for (const f of stored) assert.equal(sha256(fs.readFileSync(path.join(media, f))), path.basename(f), f);
    // The log line may reach us a little after the rows do.
    for (let i = 0; i < 50 && !/media store keeps downloaded files again/.test(d.log()); i++) await sleep(100);
    assert.match(d.log(), /media store keeps downloaded files again/);
    console.log(`enospc: ${failed} attempts failed while the store was full; all ${files.length} stored after`);
  } finally {
    await c.close().catch(() => {});
    assert.equal(await d.stop(), 0);
  }
});
