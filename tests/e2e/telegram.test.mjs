// The telegram toolset end to end: a fresh database with imported exports
// (generated ones, and the samples in ../shared when present), parleyd over stdio with
// the official SDK client; every tool's happy path, bad arguments, unknown
// ids, empty results, the connector-only tools, and read-only mode.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, stdioClient, textOf, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const FIX = path.join(here, "..", "..", "..", "shared", "fixtures", "telegram-export");
const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_tg_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-tg-");
const F = -1000001234567; // the generated forum
let client;

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}

function importExport(p) {
  execFileSync(PARLEYD, ["import", "telegram-export", p, "--db", url, "--data-dir", path.join(work, "data")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
}

async function call(name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) return { error: textOf(r) };
  assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent, "text and structuredContent agree");
  return r.structuredContent;
}

before(async () => {
  psql(`CREATE DATABASE ${db}`, "postgres");
  const gen = path.join(here, "..", "harness", "gen_tg_export.mjs");
  execFileSync("node", [gen, "edge", path.join(work, "edge")]);
  execFileSync("node", [gen, "groups", path.join(work, "groups")]);
  const shared = fs.existsSync(path.join(FIX, "private_group_small.json"))
    ? [path.join(FIX, "private_group_small.json"), path.join(FIX, "private_group_services.json")]
    : [];
  for (const p of [
    path.join(work, "groups", "small.json"),
    path.join(work, "groups", "services.json"),
    path.join(work, "edge", "forum"),
    path.join(work, "edge", "account"),
    ...shared,
  ])
    importExport(p);
  ({ client } = await stdioClient(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data")]));
});

after(async () => {
  await client?.close();
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

test("lists 43 tools with schemas and annotations", async () => {
  const { tools } = await client.listTools();
  assert.equal(tools.length, 43);
  for (const t of tools) {
    assert.ok(t.outputSchema, `${t.name} has an outputSchema`);
    assert.equal(t.inputSchema.type, "object");
    assert.equal(typeof t.annotations.readOnlyHint, "boolean");
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.equal(byName.messagesSearch.annotations.readOnlyHint, true);
  assert.equal(byName.messagesSend.annotations.openWorldHint, true);
  assert.equal(byName.groupsLeave.annotations.destructiveHint, true);
});

test("health and auth", async () => {
  const s = await call("serverStatus");
  assert.equal(s.ftsEnabled, true);
  assert.equal(s.realtimeActive, false);
  assert.equal(typeof s.queueSize, "number");
  assert.ok(s.daemon.sessions >= 1);
  assert.equal((await call("authStatus")).authenticated, false);
});

test("channels: list, get by id and @username, metadata, unknown ids", async () => {
  const l = await call("channelsList", { limit: 3 });
  assert.equal(l.channels.length, 3);
  const all = await call("channelsList", { includeInactive: true, limit: 100000 });
  assert.equal(all.limitCapped, true);
  assert.equal(all.limit, 500);
  assert.ok(all.channels.some((c) => c.channelId === -321 && c.active === false));
  assert.ok(!(await call("channelsList", { limit: 100 })).channels.some((c) => c.channelId === -321));
  psql(`UPDATE chats SET username = 'builders' WHERE id = ${F}`);
  const g = await call("channelsGet", { channelId: "@builders" });
  assert.equal(g.channelId, F);
  assert.equal(g.messageCount, 28);
  assert.equal(g.type, "forum");
  assert.equal((await call("channelsGet", { channelId: String(F) })).title, "Builders");
  const m = await call("channelsMetadataGet", { channelId: F });
  assert.equal(m.peerTitle, "Builders");
  assert.equal(m.username, "@builders");
  const bad = await call("channelsGet", { channelId: "@nobody_here" });
  assert.match(bad.error, /channelId: no chat "@nobody_here".*channelsList/);
  const badType = await call("channelsGet", { channelId: true });
  assert.match(badType.error, /channelId: expected/);
  const missing = await call("channelsGet", {});
  assert.match(missing.error, /channelId/);
});

test("channels: sync flag and tags (manual, search, auto)", async () => {
  assert.deepEqual(await call("channelsSetSync", { channelId: F, enabled: true }), { channelId: F, syncEnabled: true });
  assert.equal((await call("channelsGet", { channelId: F })).syncEnabled, true);
  const t = await call("channelsTagsSet", { channelId: F, tags: ["Hardware", "team", "team"] });
  assert.deepEqual(t.tags, ["hardware", "team"]);
  const list = await call("channelsTagsList", { channelId: F });
  assert.deepEqual(list.tags.map((x) => x.tag), ["hardware", "team"]);
  const s = await call("channelsTagsSearch", { tag: "TEAM" });
  assert.deepEqual(s.channels.map((c) => c.channelId), [F]);
  assert.deepEqual((await call("channelsTagsSearch", { tag: "none-such" })).channels, []);
  const auto = await call("channelsTagsAuto", { channelIds: [-20002] });
  assert.match(auto.method, /ts_stat/);
  const tags = auto.channels?.[0]?.tags;
  assert.ok(tags.length > 0, "auto tags derived");
  for (const x of tags) {
    assert.equal(x.source, "auto");
    assert.ok(x.confidence > 0 && x.confidence <= 1);
  }
  const autoList = await call("channelsTagsList", { channelId: -20002, source: "auto" });
  assert.ok(autoList.tags?.length > 0, JSON.stringify(autoList));
  const bad = await call("channelsTagsSet", { channelId: F, tags: "x" });
  assert.match(bad.error, /tags: expected an array/);
});

test("topics", async () => {
  const t = await call("topicsList", { channelId: F });
  assert.deepEqual(t.topics.map((x) => x.title).sort(), ["Hardware", "Software and tools"]);
  assert.equal(t.topics.find((x) => x.topicId === 10).messageCount, 4);
  assert.deepEqual((await call("topicsSearch", { channelId: F, query: "soft" })).topics.map((x) => x.topicId), [20]);
  assert.deepEqual((await call("topicsSearch", { channelId: F, query: "zzzz" })).topics, []);
  assert.deepEqual((await call("topicsList", { channelId: -5550001 })).topics, []);
});

test("messages: list, get, context, dates", async () => {
  const l = await call("messagesList", { channelId: F, topicId: 10 });
  assert.deepEqual(l.messages.map((m) => m.messageId), [45, 12, 11, 10]);
  const d = await call("messagesList", { channelId: F, fromDate: "2026-01-01T00:04:00Z", toDate: "2026-01-01T00:04:40Z" });
  assert.deepEqual(d.messages.map((m) => m.messageId), [46, 45, 44, 43, 42]);
  const bad = await call("messagesList", { fromDate: "last tuesday" });
  assert.match(bad.error, /fromDate: "last tuesday" is not a time; use now, today, yesterday, last week/);
  // date words, as every tool reads them: the forum's messages are from 2026-01-01
  const since = (fromDate, toDate) => call("messagesList", { channelId: F, topicId: 10, fromDate, toDate });
  assert.deepEqual((await since("yesterday")).messages, []);
  assert.deepEqual((await since("100000 days ago", "today")).messages.map((m) => m.messageId), [45, 12, 11, 10]);
  assert.deepEqual((await since("2026-01-01", "2026-01-01")).messages.map((m) => m.messageId), [45, 12, 11, 10]);
  const found = await call("messagesSearch", { query: "", channelIds: [F], fromDate: "last week" });
  assert.equal(found.error, undefined, JSON.stringify(found));
  const g = await call("messagesGet", { channelId: F, messageId: 21 });
  assert.equal(g.message.text, "see https://example.org/x now");
  assert.equal(g.message.hasLink, true);
  assert.match((await call("messagesGet", { channelId: F, messageId: 999 })).error, /no message 999/);
  const c = await call("messagesContext", { channelId: F, messageId: 30, before: 2, after: 3 });
  assert.deepEqual(c.before.map((m) => m.messageId), [21, 22]);
  assert.equal(c.target.messageId, 30);
  assert.deepEqual(c.after.map((m) => m.messageId), [31, 32, 33]);
  const live = await call("messagesList", { channelId: F, source: "live" });
  assert.match(live.error, /needs a connected Telegram account/);
  assert.match((await call("messagesList", { source: "sometimes" })).error, /source: expected one of/);
});

test("messagesSearch: text, phrases, exclusion, CJK, Russian, regex, tags, snippets, caps", async () => {
  let r = await call("messagesSearch", { query: "hardware" });
  assert.equal(r.messages[0].snippet, "first in **hardware**");
  r = await call("messagesSearch", { query: "выпускаем" });
  assert.equal(r.messages.length, 1);
  r = await call("messagesSearch", { query: "検索" });
  assert.equal(r.mode, "substring");
  assert.equal(r.messages[0].messageId, 45);
  r = await call("messagesSearch", { query: "\"first export\"" });
  assert.equal(r.messages.length, 0);
  r = await call("messagesSearch", { regex: "^see HTTPS" });
  assert.equal(r.messages.length, 1);
  r = await call("messagesSearch", { regex: "^see HTTPS", caseInsensitive: false });
  assert.equal(r.messages.length, 0);
  r = await call("messagesSearch", { regex: "([" });
  assert.match(r.error, /regex: "\(\[" is not a valid regular expression/);
  r = await call("messagesSearch", { tags: ["hardware"], query: "general" });
  assert.deepEqual(r.messages.map((m) => m.channelId), [F]);
  r = await call("messagesSearch", { channelIds: ["@builders"], topicId: 20, limit: 1000 });
  assert.equal(r.limitCapped, true);
  assert.deepEqual(r.messages.map((m) => m.messageId).sort((a, b) => a - b), [20, 21, 22]);
  r = await call("messagesSearch", { query: "nothing-like-this-anywhere" });
  assert.deepEqual(r.messages, []);
  assert.equal(r.total, 0);
  // Out-of-range integers are named by field, never PostgreSQL's raw error.
  r = await call("messagesSearch", { query: "general", limit: 1e12 });
  assert.match(r.error, /limit: expected a value between 1 and 2147483647, got 1000000000000/);
  r = await call("messagesGet", { channelId: F, messageId: 1e20 });
  assert.match(r.error, /messageId: expected a value between 1 and 2147483647/);
  r = await call("messagesSearch", { channelIds: [1e20], query: "x" });
  assert.match(r.error, /channelIds\[0\]: expected .*integer between -9007199254740991 and 9007199254740991|channelIds/);
  assert.doesNotMatch(r.error, /out of range for type/);
  // Search text is bounded: 40,000 words or a 1 MiB regex are refused by
  // name at once instead of holding PostgreSQL.
  r = await call("messagesSearch", { query: "ab ".repeat(40000), fuzzy: true });
  assert.match(r.error, /query: expected a string of at most 1000 characters/);
  r = await call("messagesSearch", { regex: "a".repeat(1 << 20) });
  assert.match(r.error, /regex: expected a string of at most 1000 characters/);
  // Within 1,000 characters, the words are bounded too (fuzzy fewer).
  r = await call("messagesSearch", { query: "ab ".repeat(33) });
  assert.match(r.error, /query: 33 words in all; this search takes at most 32/);
  r = await call("messagesSearch", { query: "ab ".repeat(13), fuzzy: true });
  assert.match(r.error, /query: 13 words in all; this search takes at most 12/);
  r = await call("messagesSearch", { query: "hardware ".repeat(12), fuzzy: true });
  assert.equal(r.error, undefined);
});

test("media: download under the export root, refused outside it", async () => {
  const ok = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "reports/" });
  assert.match(ok.error ?? "", /outputPath/); // the directory does not exist yet
  const d = await call("mediaDownload", { channelId: F, messageId: 38 });
  assert.equal(d.bytes, 5);
  assert.equal(d.mimeType, "application/pdf");
  assert.equal(fs.readFileSync(d.path, "utf8"), '"bin"');
  assert.ok(d.path.startsWith(path.join(work, "data", "exports")));
  assert.match((await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "../escape.pdf" })).error, /not allowed/);
  assert.match((await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "/etc/passwd" })).error, /outside the export root/);
  fs.symlinkSync("/tmp", path.join(work, "data", "exports", "link"));
  assert.match((await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "link/x.pdf" })).error, /outside the export root/);
  // The copy never writes into what the destination names: a hard link to a
  // file elsewhere is replaced, not written through; a FIFO or a symbolic
  // link there is refused without waiting.
  const exports = path.join(work, "data", "exports");
  const outside = tmpdir("parley-tg-outside-");
  fs.writeFileSync(path.join(outside, "victim.txt"), "KEEP");
  fs.linkSync(path.join(outside, "victim.txt"), path.join(exports, "hard.pdf"));
  const hard = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "hard.pdf" });
  assert.equal(hard.bytes, 5, JSON.stringify(hard));
  assert.equal(fs.readFileSync(path.join(exports, "hard.pdf"), "utf8"), '"bin"');
  assert.equal(fs.readFileSync(path.join(outside, "victim.txt"), "utf8"), "KEEP");
  execFileSync("mkfifo", [path.join(exports, "pipe.pdf")]);
  let t;
  const stuck = new Promise((_, reject) => { t = setTimeout(() => reject(new Error("mediaDownload into a FIFO got no answer in 30 s")), 30000); });
  const fifo = await Promise.race([call("mediaDownload", { channelId: F, messageId: 38, outputPath: "pipe.pdf" }), stuck]).finally(() => clearTimeout(t));
  assert.match(fifo.error, /pipe\.pdf exists and is not a regular file/);
  fs.symlinkSync(path.join(outside, "victim.txt"), path.join(exports, "sym.pdf"));
  assert.match((await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "sym.pdf" })).error, /is a symbolic link/);
  assert.equal(fs.readFileSync(path.join(outside, "victim.txt"), "utf8"), "KEEP");
  // A directory gets the file's own name; an absolute path inside the root is taken.
  fs.mkdirSync(path.join(exports, "reports"));
  const inDir = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "reports/" });
  assert.equal(path.dirname(inDir.path), fs.realpathSync(path.join(exports, "reports")), JSON.stringify(inDir));
  const abs = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: path.join(exports, "reports", "abs.pdf") });
  assert.equal(fs.readFileSync(abs.path, "utf8"), '"bin"');
  assert.deepEqual(fs.readdirSync(path.join(exports, "reports")).filter((f) => f.startsWith(".parley")), [], "no temporary file left");
  assert.match((await call("mediaDownload", { channelId: F, messageId: 33 })).error, /not in the media store/);
  assert.match((await call("mediaDownload", { channelId: F, messageId: 30 })).error, /has no file/);
});

test("media: a record pointing outside the store, or a file that is not what its sha256 says, is not served", async () => {
  const row = psql(`SELECT local_path || '|' || sha256 FROM media WHERE chat_id = ${F} AND message_id = 38`);
  const [local, sha] = row.split("|");
  try {
    // Someone with write access to the database points the row at /etc/passwd.
    psql(`UPDATE media SET local_path = '../../../../../../../etc/passwd' WHERE chat_id = ${F} AND message_id = 38`);
    let r = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "passwd-copy" });
    assert.match(r.error, /does not name a file of the media store/);
    assert.equal(fs.existsSync(path.join(work, "data", "exports", "passwd-copy")), false);
    psql(`UPDATE media SET local_path = '${local}' WHERE chat_id = ${F} AND message_id = 38`);
    // The stored file changed on disk: its content no longer matches.
    const stored = path.join(work, "data", "media", local);
    const good = fs.readFileSync(stored);
    fs.chmodSync(stored, 0o644);
    fs.writeFileSync(stored, "tampered");
    r = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "tampered.pdf" });
    assert.match(r.error, /does not match its sha256/);
    assert.equal(fs.existsSync(path.join(work, "data", "exports", "tampered.pdf")), false);
    fs.writeFileSync(stored, good);
    r = await call("mediaDownload", { channelId: F, messageId: 38, outputPath: "good.pdf" });
    assert.equal(r.bytes, 5, JSON.stringify(r));
  } finally {
    psql(`UPDATE media SET local_path = '${local}', sha256 = '${sha}' WHERE chat_id = ${F} AND message_id = 38`);
  }
});

test("contacts: search, get, alias, tags, notes", async () => {
  let r = await call("contactsSearch", { query: "ann" });
  assert.equal(r.contacts[0].userId, 1001);
  r = await call("contactsSearch", { query: "+1 222" });
  assert.equal(r.contacts[0].userId, 1002);
  assert.deepEqual((await call("contactsSearch", { query: "qqqqqqq" })).contacts, []);
  const g = await call("contactsGet", { userId: 1001 });
  assert.equal(g.isContact, true);
  assert.ok(g.messageCount > 0);
  assert.match((await call("contactsGet", { userId: 424242 })).error, /no user 424242.*contactsSearch/);
  assert.deepEqual(await call("contactsAliasSet", { userId: 1001, alias: "Annie" }), { userId: 1001, alias: "Annie" });
  assert.equal((await call("contactsSearch", { query: "annie" })).contacts[0].alias, "Annie");
  assert.deepEqual(await call("contactsAliasRemove", { userId: 1001 }), { userId: 1001, removed: true });
  assert.deepEqual((await call("contactsTagsAdd", { userId: 1001, tags: ["Friend", "work"] })).tags, ["friend", "work"]);
  assert.deepEqual((await call("contactsTagsRemove", { userId: 1001, tags: ["work"] })).tags, ["friend"]);
  assert.deepEqual(await call("contactsNotesSet", { userId: 1001, notes: "met in 2020" }), { userId: 1001, notes: "met in 2020" });
  assert.equal((await call("contactsGet", { userId: 1001 })).notes, "met in 2020");
  assert.match((await call("contactsAliasSet", { userId: 1001 })).error, /alias/);
});

test("groups and sync jobs", async () => {
  const g = await call("groupsList", { query: "crew" });
  assert.deepEqual(g.groups.map((x) => x.channelId), [-20002]);
  const i = await call("groupsInfo", { channelId: F });
  assert.equal(i.topicCount, 2);
  assert.ok(i.activeSenders.length >= 2);
  for (const [tool, args] of [
    ["groupsRename", { channelId: F, name: "x" }],
    ["groupsMembersAdd", { channelId: F, userIds: [1] }],
    ["groupsMembersRemove", { channelId: F, userIds: [1] }],
    ["groupsInviteLinkGet", { channelId: F }],
    ["groupsInviteLinkRevoke", { channelId: F }],
    ["groupsJoin", { invite: "https://t.me/+abc" }],
    ["groupsLeave", { channelId: F }],
    ["messagesSend", { channelId: F, text: "hi" }],
    ["messagesSendFile", { channelId: F, filePath: "/tmp/x" }],
    ["channelsSearch", { query: "x" }],
    ["channelsMetadataRefresh", {}],
    ["syncRealtimeSet", { enabled: true }],
  ]) {
    const r = await call(tool, args);
    assert.match(r.error ?? "", /needs a connected Telegram account.*;/, tool);
  }
  const add = await call("syncJobsAdd", { channelId: F, depth: 10 });
  assert.equal(add.job.status, "pending");
  assert.equal(add.job.depth, 10);
  // the chat's id as every other tool answers it: an integer, even when named as a string
  assert.equal(add.job.channelId, F);
  const again = await call("syncJobsAdd", { channelId: String(F), depth: 10 });
  assert.equal(again.job.channelId, F);
  const jobs = await call("syncJobsList", { status: "pending" });
  assert.equal(jobs.jobs.length, 1);
  const cancel = await call("syncJobsCancel", { channelId: F });
  assert.equal(cancel.canceled, 1);
  assert.equal((await call("syncJobsList", { status: "idle" })).jobs.length, 1);
  const retry = await call("syncJobsRetry", { jobId: add.job.jobId });
  assert.deepEqual(retry.jobIds, [add.job.jobId]);
  assert.match((await call("syncJobsRetry", {})).error, /give jobId, channelId, or allErrors/);
  assert.match((await call("syncJobsList", { status: "done" })).error, /status: expected one of/);
});

test("read-only mode hides every tool that writes", async () => {
  const ro = await stdioClient(["--db", url, "--toolsets", "telegram", "--read-only", "--data-dir", path.join(work, "data")]);
  try {
    const { tools } = await ro.client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes("messagesSearch") && names.includes("channelsList"));
    for (const w of ["messagesSend", "contactsAliasSet", "channelsTagsSet", "syncJobsAdd", "groupsLeave", "mediaDownload", "groupsInviteLinkGet"])
      assert.ok(!names.includes(w), `${w} hidden`);
    for (const t of tools) assert.equal(t.annotations.readOnlyHint, true);
    await assert.rejects(ro.client.callTool({ name: "contactsAliasSet", arguments: { userId: 1, alias: "x" } }), (e) => e.code === -32602);
  } finally {
    await ro.client.close();
  }
});

test("an older export after a newer one keeps the newer edit (the newest version wins)", async () => {
  // The forum was imported as first exported (message 49 edited once).
  const before = (await call("messagesGet", { channelId: F, messageId: 49 })).message;
  assert.equal(before.text, "edited later");
  const firstEdit = Date.parse(before.editDate);
  // The later export: its edit is applied.
  importExport(path.join(work, "edge", "forum_v2.json"));
  const newer = (await call("messagesGet", { channelId: F, messageId: 49 })).message;
  assert.equal(newer.text, "edited twice");
  const secondEdit = Date.parse(newer.editDate);
  assert.ok(secondEdit > firstEdit, "the later edit date");
  // The first export again, after the later one: the later edit stays.
  importExport(path.join(work, "edge", "forum"));
  const after = (await call("messagesGet", { channelId: F, messageId: 49 })).message;
  assert.equal(after.text, "edited twice");
  assert.equal(Date.parse(after.editDate), secondEdit);
  const found = await call("messagesSearch", { query: "twice" });
  assert.deepEqual(found.messages.map((m) => [m.channelId, m.messageId]), [[F, 49]]);
});
