// import_robustness: hostile inputs to `parleyd import claude-code`,
// `parleyd import chatwise` (and serve's ChatWise follower) and `parleyd
// import telegram-export` (a 24 MiB message, a NUL: fast, named). One bad row,
// line or directory entry is skipped, named (file and line, or table and
// row id) and counted, and the import goes on to exit 0: a timestamp that
// is not a time or is out of range, a message of ~1.8 MB of distinct words
// (over tsvector's 1 MB; the text is stored whole), a line over the piece
// size and one over the line limit, a huge ChatWise message (stored
// truncated), a value PostgreSQL refuses. Special files never block: a
// FIFO, a symlink loop, a directory named x.jsonl, a /dev/zero symlink
// are skipped; a FIFO given as the ChatWise database is refused at once,
// and serve following one stops on SIGTERM. A transcript that shrank is
// read again from its start, nothing stored twice. A ChatWise "message"
// that is a view (an endless one) or a virtual table is refused at once by
// name, and so is a column SQLite computes at every read (generated);
// serve following such a file stops on SIGTERM (a statement of any
// length is interrupted by the guard: tests/unit/test_chatwise_import.c).
// On the code before,
// the FIFO cases block until the test's timeout.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, tmpdir } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_improb_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-improb-");
const LIMIT = 60000; // ms: only reached when something blocks (the old code)

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  }).trim();
}
function parleyd(args) {
  const r = spawnSync(PARLEYD, [...args, "--db", url, "--data-dir", path.join(work, "data")], {
    encoding: "utf8",
    timeout: LIMIT,
    killSignal: "SIGKILL", // a blocked import ignores SIGTERM (the old code)
    maxBuffer: 64 << 20,
  });
  assert.equal(r.signal, null, `parleyd ${args.join(" ")} blocked: ${r.stderr}`);
  return { status: r.status, out: r.stderr };
}
const importAgents = (dir) => parleyd(["import", "claude-code", dir]);
const importChatwise = (p) => parleyd(["import", "chatwise", p]);

// Distinct words, about 1.8 MB: over tsvector's 1 MB of lexemes.
const manyWords = (tag) => Array.from({ length: 120000 }, (_, i) => `${tag}${i.toString(36)}x${(i * 7919).toString(16)}zz`).join(" ");

let seq = 0;
function event(sid, text, extra = {}) {
  seq++;
  return JSON.stringify({
    type: "user", sessionId: sid, uuid: `uuid-${sid}-${seq}`, cwd: "/home/dev/robust",
    timestamp: new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString(),
    message: { role: "user", content: text }, ...extra,
  });
}
const countText = (sid) => psql(`SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.external_id = '${sid}'`);

before(() => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  // The schema first, so that each test's import runs alone.
  const r = spawnSync(PARLEYD, ["migrate", "--db", url, "--data-dir", path.join(work, "data")], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
});

after(() => {
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("claude-code: special entries are skipped with a warning, never opened blocking", () => {
  const dir = path.join(work, "special");
  const proj = path.join(dir, "-home-dev-robust");
  fs.mkdirSync(proj, { recursive: true });
  execFileSync("mkfifo", [path.join(proj, "fifo.jsonl")]);
  execFileSync("mkfifo", [path.join(dir, "top.jsonl")]);
  fs.symlinkSync("loop.jsonl", path.join(proj, "loop.jsonl"));
  fs.mkdirSync(path.join(proj, "dir.jsonl"));
  fs.symlinkSync("/dev/zero", path.join(proj, "zero.jsonl"));
  fs.writeFileSync(path.join(proj, "real.jsonl"), event("sess-special", "a real line") + "\n");
  fs.symlinkSync("real.jsonl", path.join(proj, "link.jsonl")); // a symlink, even to a file inside, is not read
  const r = importAgents(dir);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /fifo\.jsonl: a FIFO, not a regular file; skipped/);
  assert.match(r.out, /top\.jsonl: a FIFO, not a regular file; skipped/);
  assert.match(r.out, /loop\.jsonl: a symbolic link, not followed .*; skipped/);
  assert.match(r.out, /zero\.jsonl: a symbolic link, not followed .*; skipped/);
  assert.match(r.out, /link\.jsonl: a symbolic link, not followed .*; skipped/);
  assert.match(r.out, /dir\.jsonl: a directory, not a regular file; skipped/);
  assert.match(r.out, /imported 1 transcript file .*6 files skipped \(not regular or unreadable\)/);
  assert.equal(countText("sess-special"), "1");
});

test("claude-code: bad timestamps, a refused value and huge lines are skipped by line; the rest stored", () => {
  const dir = path.join(work, "bad");
  const proj = path.join(dir, "-home-dev-robust");
  fs.mkdirSync(proj, { recursive: true });
  const sid = "sess-bad";
  const big = manyWords("w");
  const lines = [
    event(sid, "first"),                                          // 1
    event(sid, "not a time", { timestamp: "not a time" }),        // 2
    event(sid, "far past", { timestamp: -1e300 }),                // 3
    event(sid, "month 13", { timestamp: "2026-13-01T00:00:00Z" }),// 4
    event(sid, big),                                              // 5: ~1.8 MB of distinct words
    event(sid, "refused", { isCompactSummary: "perhaps" }),       // 6: not a boolean to PostgreSQL
    event(sid, "x".repeat(5 << 20) + " five mebibytes"),          // 7: a line over the 4 MiB piece
    event(sid, "y".repeat(17 << 20)),                             // 8: over the 16 MiB line limit
    event(sid, "last"),                                           // 9
  ];
  const file = path.join(proj, `${sid}.jsonl`);
  fs.writeFileSync(file, lines.join("\n") + "\n");
  const r = importAgents(dir);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /sess-bad\.jsonl:2: timestamp "not a time" is not an ISO 8601 time; skipped/);
  assert.match(r.out, /sess-bad\.jsonl:3: timestamp -1[.0-9]*e\+?300 is not an ISO 8601 time; skipped/);
  assert.match(r.out, /sess-bad\.jsonl:4: timestamp "2026-13-01T00:00:00Z" is not an ISO 8601 time; skipped/);
  assert.match(r.out, /sess-bad\.jsonl:6: not stored \(invalid input syntax for type boolean: "perhaps"\); skipped/);
  assert.match(r.out, /sess-bad\.jsonl:8: a line of more than 16 MiB \(\d+ bytes\); skipped/);
  assert.match(r.out, /9 lines, 1 new session, 4 messages, 1 context heaps; 3 malformed lines skipped, 1 over 16 MiB skipped, 1 not stored/);
  assert.equal(psql(`SELECT string_agg(left(m.text, 12) || ':' || octet_length(m.text), ',' ORDER BY m.id)
    FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.external_id = '${sid}'`),
    `first:5,${big.slice(0, 12)}:${big.length},xxxxxxxxxxxx:${(5 << 20) + 15},last:4`);
  // The big text is stored whole; its words are searchable as far as they fit.
  assert.equal(psql(`SELECT count(*) FROM messages WHERE tsv @@ 'w0x0zz'::tsquery`), "1");
  assert.equal(psql(`SELECT count(*) FROM messages WHERE tsv @@ 'five'::tsquery`), "1");
  // Again: nothing new, nothing failed.
  const again = importAgents(dir);
  assert.equal(again.status, 0, again.out);
  assert.match(again.out, /0 lines, 0 new sessions, 0 messages/);
});

test("claude-code: a transcript that shrank is read again from its start, nothing stored twice", () => {
  const dir = path.join(work, "shrink");
  const proj = path.join(dir, "-home-dev-robust");
  fs.mkdirSync(proj, { recursive: true });
  const sid = "sess-shrink";
  const file = path.join(proj, `${sid}.jsonl`);
  const ten = Array.from({ length: 10 }, (_, i) => event(sid, `line ${i + 1}`));
  fs.writeFileSync(file, ten.join("\n") + "\n");
  let r = importAgents(dir);
  assert.equal(r.status, 0, r.out);
  assert.equal(countText(sid), "10");
  // Cut to 5, 2 appended: shorter than what was read.
  fs.writeFileSync(file, [...ten.slice(0, 5), event(sid, "new 1"), event(sid, "new 2")].join("\n") + "\n");
  r = importAgents(dir);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /sess-shrink\.jsonl: rewritten \(\d+ bytes; \d+ were read before/);
  assert.match(r.out, /\(1 with new lines\): 7 lines, 0 new sessions, 2 messages.*1 read again from the start/);
  assert.equal(countText(sid), "12");
  // Rewritten, not shorter: the offset falls inside a line.
  const longer = [event(sid, "rewritten " + "z".repeat(2000)), ...ten.slice(0, 5), event(sid, "new 3")];
  fs.writeFileSync(file, longer.join("\n") + "\n");
  r = importAgents(dir);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /rewritten/);
  assert.equal(countText(sid), "14");
  r = importAgents(dir);
  assert.match(r.out, /0 lines, 0 new sessions, 0 messages/);
  assert.equal(psql(`SELECT count(*) - count(DISTINCT m.external_id) FROM messages m JOIN chats c ON c.id = m.chat_id
    WHERE c.external_id = '${sid}'`), "0");
});

const CHATWISE_SCHEMA = `CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);
CREATE TABLE message (id text PRIMARY KEY NOT NULL, chatId text, role text, content text, createdAt integer, meta text, generatedFiles text);`;
const MAX_VALUE = 8 << 20; // CHATWISE_IMPORT_MAX_VALUE

test("chatwise: a FIFO is refused at once, given or as app.db", () => {
  const fifo = path.join(work, "cw.fifo");
  execFileSync("mkfifo", [fifo]);
  let r = importChatwise(fifo);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /cw\.fifo: a FIFO, not a regular file; refused/);
  const folder = path.join(work, "cwfolder");
  fs.mkdirSync(folder);
  execFileSync("mkfifo", [path.join(folder, "app.db")]);
  r = importChatwise(folder);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /app\.db: a FIFO, not a regular file; refused/);
});

test("chatwise: times out of range, a huge message, 1.8 MB of words, a refused row: named, the rest stored", () => {
  const file = path.join(work, "bad-app.db");
  const words = manyWords("c");
  fs.writeFileSync(path.join(work, "words.txt"), words);
  execFileSync("sqlite3", [file], {
    input: `${CHATWISE_SCHEMA}
INSERT INTO chat VALUES ('c-ok', 'fine', 1767225600000, 1767225600000);
INSERT INTO chat VALUES ('c-old', 'far past', -1e15, 1767225600000);
INSERT INTO message VALUES ('m-1', 'c-ok', 'user', 'hello there', 1767225601000, NULL, NULL);
INSERT INTO message VALUES ('m-old', 'c-ok', 'user', 'long ago', -1e15, NULL, NULL);
INSERT INTO message VALUES ('m-words', 'c-ok', 'assistant', CAST(readfile('${path.join(work, "words.txt")}') AS TEXT), 1767225602000, NULL, NULL);
INSERT INTO message VALUES ('m-huge', 'c-ok', 'assistant', printf('%.*c', 40000000, 'x'), 1767225603000, NULL, NULL);
INSERT INTO message VALUES ('m-' || hex(randomblob(50000)), 'c-ok', 'user', 'an id too long for an index', 1767225604000, NULL, NULL);
INSERT INTO message VALUES ('m-2', 'c-old', 'user', 'still here', 1767225605000, NULL, NULL);
`,
  });
  // An import's batch is long work, not a tool's query: it has its own time
  // limit, and a short --db-query-timeout-ms (a slow machine's 30 s) fails
  // none of it.
  const r = parleyd(["import", "chatwise", file, "--db-query-timeout-ms", "1500"]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /table chat, row id c-old: a time that is not one .*; stored without it/);
  assert.match(r.out, /table message, row id m-old: a time that is not one .*; stored without it \(dated as its chat\)/);
  assert.match(r.out, new RegExp(`table message, row id m-huge: content of 40000000 bytes stored cut to ${MAX_VALUE} bytes`));
  assert.match(r.out, /table message, row id m-[0-9A-F]{78}\.\.\.: not stored \(index row/);
  assert.match(r.out, /imported 2 chats \(2 new or changed\), 6 messages \(5 new or changed\), 0 with tool calls; 0 without their chat skipped, 1 not stored; 1 with a value cut to 8 MiB, 2 with a time left out/);
  assert.equal(psql(`SELECT string_agg(m.external_id || ':' || octet_length(m.text), ',' ORDER BY m.external_id)
    FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.kind = 'ai_chat'`),
    `m-1:11,m-2:10,m-huge:${MAX_VALUE},m-old:8,m-words:${words.length}`);
  assert.equal(psql(`SELECT extra -> 'truncated' ->> 'content' FROM messages WHERE external_id = 'm-huge'`), "40000000");
  assert.equal(psql(`SELECT m.date = c.date FROM messages m, messages c WHERE m.external_id = 'm-old' AND c.external_id = 'm-1'`) !== "", true);
  assert.equal(psql(`SELECT count(*) FROM messages WHERE tsv @@ 'c0x0zz'::tsquery`), "1");
  // Again: the same warnings, nothing written.
  const again = importChatwise(file);
  assert.equal(again.status, 0, again.out);
  assert.match(again.out, /6 messages \(0 new or changed\)/);
});

test("serve: a FIFO as chatwise_db is not opened, and SIGTERM stops serve", { timeout: LIMIT }, async () => {
  const fifo = path.join(work, "serve.fifo");
  execFileSync("mkfifo", [fifo]);
  const child = spawn(PARLEYD, ["serve", "--stdio", "--db", url, "--data-dir", path.join(work, "data-serve"),
    "--toolsets", "chatwise", "--chatwise-db", fifo, "--log-level", "debug"], { stdio: ["pipe", "pipe", "pipe"] });
  let log = "";
  child.stderr.on("data", (d) => (log += d.toString()));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  while (!/serve\.fifo: not a regular file; not imported/.test(log)) {
    if (child.exitCode !== null) throw new Error(`parleyd exited early:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGTERM");
  const { code } = await exited;
  assert.equal(code, 0, log);
});

// app.db files whose message is no table: an endless recursive view (on
// the code before, the import ran until killed, its memory growing) and a
// virtual table.
const ENDLESS_VIEW = `CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);
CREATE VIEW message AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
  SELECT 'm-' || n AS id, 'c-1' AS chatId, 'user' AS role, 'again' AS content, n AS createdAt,
         NULL AS meta, NULL AS generatedFiles FROM r;`;
// A table with a generated column (named rowid, so that "ORDER BY rowid"
// reads it): computed for every row, about a minute in all, before the
// first batch; refused now. (Added after the rows: an INSERT would
// compute it.)
const SLOW_TABLE = `CREATE TABLE chat (id text PRIMARY KEY NOT NULL, title text, createdAt integer, updatedAt integer);
CREATE TABLE message (n integer, id text, chatId text, role text, content text, createdAt integer,
  meta text, generatedFiles text);
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 40000)
  INSERT INTO message (n, id, chatId, role, content, createdAt) SELECT n, 'm-' || n, 'c-1', 'user', 'slow', 1767225600000 + n FROM r;
ALTER TABLE message ADD COLUMN rowid integer AS (n + length(hex(zeroblob(1000000 + n))));`;

test("chatwise: a view or a virtual table as message is refused at once, by name", () => {
  const view = path.join(work, "view-app.db");
  execFileSync("sqlite3", [view], { input: ENDLESS_VIEW });
  const started = Date.now();
  const r = spawnSync(PARLEYD, ["import", "chatwise", view, "--db", url, "--data-dir", path.join(work, "data")], {
    encoding: "utf8", timeout: 20000, killSignal: "SIGKILL",
  });
  assert.equal(r.signal, null, `the import of an endless view did not end: ${r.stderr}`);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /view-app\.db: message is a view, not a table; refused/);
  assert.ok(Date.now() - started < 15000);
  const virt = path.join(work, "virtual-app.db");
  execFileSync("sqlite3", [virt], {
    input: `CREATE TABLE chat (id text, title text, createdAt integer, updatedAt integer);
CREATE VIRTUAL TABLE message USING fts5(id, chatId, role, content, createdAt);`,
  });
  const v = importChatwise(virt);
  assert.equal(v.status, 1, v.out);
  assert.match(v.out, /virtual-app\.db: message is a virtual table, not a table; refused/);
});

// Starts `parleyd ARGS`, waits until its log matches ready, sends SIGTERM
// and answers how long it took to exit (ms), with its code and log.
async function stopWhen(args, ready, limit = 30000) {
  const child = spawn(PARLEYD, args, { stdio: ["pipe", "pipe", "pipe"] });
  let log = "";
  child.stderr.on("data", (d) => (log += d.toString()));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + limit;
  while (!ready.test(log)) {
    if (child.exitCode !== null) throw new Error(`parleyd exited early:\n${log}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`parleyd never logged ${ready}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 1000)); // well inside the long statement
  const sent = Date.now();
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 20000);
  const { code, signal } = await exited;
  clearTimeout(killer);
  return { ms: Date.now() - sent, code, signal, log };
}

test("chatwise: a column SQLite computes at every read (generated) is refused at once, by name", () => {
  // On the code before, each row's value took a second and a megabyte
  // (a gigabyte with a bigger zeroblob), far beyond the file's size.
  const file = path.join(work, "slow-app.db");
  execFileSync("sqlite3", [file], { input: SLOW_TABLE });
  const started = Date.now();
  const r = importChatwise(file);
  assert.equal(r.status, 1, r.out);
  assert.match(r.out, /slow-app\.db: column rowid of message is generated \(computed by SQLite at every read\), not stored/);
  assert.ok(Date.now() - started < 15000);
});

test("serve: following an endless view logs it refused and stops on SIGTERM", { timeout: LIMIT }, async () => {
  const view = path.join(work, "serve-view.db");
  execFileSync("sqlite3", [view], { input: ENDLESS_VIEW });
  const v = await stopWhen(["serve", "--stdio", "--db", url, "--data-dir", path.join(work, "data-serve"),
    "--toolsets", "chatwise", "--chatwise-db", view], /serve-view\.db: message is a view, not a table; refused/);
  assert.equal(v.signal, null, v.log);
  assert.equal(v.code, 0, v.log);
  assert.ok(v.ms < 5000, `serve took ${v.ms} ms to stop:\n${v.log}`);
});

// Telegram exports: one bad message is left out or repaired and named,
// the rest imported, exit 0.
const tgMessage = (id, text, extra = {}) => ({
  id, type: "message", date: "2026-01-01T00:00:00", date_unixtime: String(1767225600 + Number(id) * 60),
  from: "Ann", from_id: "user501", text, ...extra,
});
function writeExport(name, chatId, messages) {
  const file = path.join(work, name);
  fs.writeFileSync(file, JSON.stringify({ name, type: "personal_chat", id: chatId, messages }));
  return file;
}
const tgTexts = (chatId) => psql(`SELECT string_agg(id || ':' || left(text, 20), ',' ORDER BY id) FROM messages WHERE chat_id = ${chatId}`);

test("telegram-export: a 24 MiB message and a NUL cost what they are, named; the rest imported", { timeout: LIMIT }, () => {
  const file = writeExport("tg-big.json", 501, [
    tgMessage(1, "first"),
    tgMessage(2, "x".repeat(24 << 20)),
    tgMessage(3, "third \u0000 nul"),
    tgMessage(4, ["a", { type: "bold", text: "y".repeat(20 << 20) }]),
    tgMessage(5, "fifth"),
  ]);
  // On the reader before: minutes (yajl read the unfinished string again
  // with every 2 KiB), then the whole import failed at the first one.
  const r = spawnSync(PARLEYD, ["import", "telegram-export", file, "--db", url, "--data-dir", path.join(work, "data")], {
    encoding: "utf8", timeout: 20000, killSignal: "SIGKILL", maxBuffer: 64 << 20,
  });
  assert.equal(r.signal, null, `the import did not end within 20 s: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /tg-big\.json: message 2 at byte \d+: larger than 16 MiB; the message was left out/);
  assert.match(r.stderr, /tg-big\.json: message 4 at byte \d+: larger than 16 MiB; the message was left out/);
  assert.match(r.stderr, /tg-big\.json: message 3: "text" held a NUL character \(\\u0000\) at byte \d+; stored as U\+FFFD/);
  assert.match(r.stderr, /imported 1 chat, 3 messages \(3 new or changed\).*; 2 messages left out, 1 repaired/);
  assert.equal(tgTexts(501), "1:first,3:third \uFFFD nul,5:fifth");
});

test("telegram-export: an unreadable date, impossible ids and sizes, a second copy of an id: named, the rest imported", () => {
  const file = writeExport("tg-bad.json", 502, [
    tgMessage(1, "one"),
    tgMessage(2, "undatable", { date: "x", date_unixtime: "x" }),
    tgMessage(0, "zero"),
    tgMessage(-5, "negative"),
    tgMessage(3, "sized", { file: "files/a.bin", file_size: -1, mime_type: "application/octet-stream" }),
    tgMessage(4, "first copy"),
    tgMessage(4, "second copy", { edited: "2026-01-02T00:00:00", edited_unixtime: "1767312000" }),
    tgMessage(5, "five"),
  ]);
  const r = parleyd(["import", "telegram-export", file]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /tg-bad\.json: message 2: "date" is not a date \(x\) at byte \d+; the message was left out/);
  assert.match(r.out, /tg-bad\.json: message 0: "id" is not a message id \(ids are above 0\) at byte \d+; the message was left out/);
  assert.match(r.out, /tg-bad\.json: message -5: "id" is not a message id/);
  assert.match(r.out, /tg-bad\.json: message 3: "file_size" -1 is not a size; stored without it \(at byte \d+\)/);
  assert.match(r.out, /tg-bad\.json: chat tg-bad\.json: message id 4 is given more than once; the copy edited last was kept, the others left out/);
  assert.match(r.out, /imported 1 chat, 4 messages \(4 new or changed\).*; 4 messages left out, 1 repaired/);
  assert.equal(tgTexts(502), "1:one,3:sized,4:second copy,5:five");
  assert.equal(psql("SELECT count(*) FROM messages WHERE chat_id = 502 AND date < '2000-01-01'"), "0");
  assert.equal(psql("SELECT coalesce(file_size::text, 'null') FROM media WHERE chat_id = 502 AND message_id = 3"), "null");
});
