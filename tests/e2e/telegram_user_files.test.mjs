// Files through a Telegram user account, against the fake libtdjson
// (tests/support/fake_tdjson_files.c): messagesSendFile sends the file the
// toolset opened as a document (TDLib reads it by a name of its own in the
// account's outbox, named as the file is sent: the fake keeps the bytes it
// read), and mediaDownload of a message's
// document downloads it with downloadFile into the media store, then
// copies it under the export root; a download TDLib refuses answers
// isError with its reason and is recorded as failed. A send while the
// account is still starting is refused with what to do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { textOf } from "./lib.mjs";
import { call, deliver, dropAccounts, haveFake, refused, tdMsg, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

const BOB = 42;
const ME = 777000111;
const DOC_UID = "AgADdocUNIQUE";
let a, dataDir, psql, tdDir;

const script = {
  phone: "+15550001",
  code: "12345",
  user: { id: ME, first_name: "Ada", username: "ada", phone_number: "15550001" },
  users: [{ id: BOB, first_name: "Bob", username: "bob" }],
  chats: [{ id: BOB, type: "private", user_id: BOB, title: "Bob", messages: 3 }],
  // File 502 is refused by TDLib.
  download_errors: { 502: { code: 400, message: "FILE_REFERENCE_EXPIRED" } },
};

// A message of Bob's with a document: TDLib's shapes (file id, size,
// remote ids).
const docMsg = (sid, fileId, size, name) => tdMsg(BOB, sid, "", BOB, {
  content: {
    "@type": "messageDocument",
    document: {
      "@type": "document", file_name: name, mime_type: "application/pdf",
      thumbnail: { "@type": "thumbnail", width: 90, height: 90,
        file: { "@type": "file", id: fileId + 1000, size: 10, expected_size: 10,
          remote: { "@type": "remoteFile", id: `thumb-${fileId}`, unique_id: `thumbu-${fileId}` } } },
      document: { "@type": "file", id: fileId, size, expected_size: size,
        remote: { "@type": "remoteFile", id: `BQACAgIAAx-${fileId}`, unique_id: fileId === 501 ? DOC_UID : `u-${fileId}` } },
    },
    caption: { "@type": "formattedText", text: `here is ${name}`, entities: [] },
  },
});

before(() => {
  haveFake();
  a = tgAccount(script, { apiHash: "0123456789abcdef" });
  dataDir = a.data;
  psql = a.psql;
  tdDir = path.join(dataDir, "telegram", "15550001", "td");
});

after(dropAccounts);

// A daemon serving the account, once it is signed in and serving: {d, c}.
// (authStatus is authenticated already while the daemon starts the
// account's TDLib client from its session: state "starting".)
async function serve(extra = []) {
  const s = await tgServe(a, extra);
  await until("the account ready", async () => (await call(s.c, "authStatus")).state === "ready");
  return s;
}

const sentLines = () => fs.readFileSync(path.join(tdDir, "fake_sent.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));

test("files through the account: messagesSendFile, mediaDownload, a refused download", async () => {
  const signed = await tgLogin(a, "12345\n");
  assert.equal(signed.code, 0, signed.err);
  // What sends of a daemon killed mid-send left in the outbox goes; what a
  // live process's sends hold stays.
  const outbox = path.join(dataDir, "telegram", "15550001", "outbox");
  fs.mkdirSync(path.join(outbox, "send-2147483000-abcdef"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(outbox, "send-2147483000-abcdef", "left.bin"), "left");
  fs.mkdirSync(path.join(outbox, `send-${process.pid}-abcdef`), { mode: 0o700 });
  const { d, c } = await serve();
  try {
    await until("the chat", () => psql(`SELECT count(*) FROM chats WHERE id = ${BOB}`) === "1");

    // Sending a file: TDLib reads what the toolset opened and checked.
    const uploads = path.join(dataDir, "uploads");
    fs.mkdirSync(uploads, { recursive: true });
    const bytes = crypto.randomBytes(200 * 1024 + 7);
    fs.writeFileSync(path.join(uploads, "report.bin"), bytes);
    const sent = await call(c, "messagesSendFile", { channelId: BOB, filePath: "report.bin", caption: "the report", filename: "Q3 report.bin" });
    assert.ok(Number.isInteger(sent.messageId) && sent.messageId > 3, JSON.stringify(sent));
    const lines = sentLines();
    assert.equal(lines.length, 1);
    // TDLib resolves the path it is given and reads by the path it finds:
    // it is given the open file under a name of its own in the account's
    // outbox (not the toolset's path, which may name another file by now).
    assert.equal(lines[0].name, "Q3 report.bin");
    assert.ok(lines[0].real.startsWith(fs.realpathSync(path.join(dataDir, "telegram", "15550001", "outbox"))), lines[0].real);
    assert.equal(lines[0].size, bytes.length);
    assert.equal(lines[0].caption, "the report");
    assert.ok(fs.readFileSync(path.join(tdDir, "fake_sent", String(lines[0].n))).equals(bytes), "the bytes sent are the file's");
    // Stored once with its final id, as a document with TDLib's remote id.
    await until("the sent document stored", () =>
      psql(`SELECT m.outgoing || ':' || f.kind || ':' || f.file_id FROM messages m JOIN media f ON f.chat_id = m.chat_id AND f.message_id = m.id
            WHERE m.chat_id = ${BOB} AND m.id = ${sent.messageId}`) === "true:document:sent-1");
    await until("the outbox's name removed once sent", () => fs.readdirSync(outbox).join() === `send-${process.pid}-abcdef`);
    fs.rmdirSync(path.join(outbox, `send-${process.pid}-abcdef`));

    // A message with a document arrives; mediaDownload downloads it through
    // the account into the media store, then copies it to the export root.
    deliver(a, [{ "@type": "updateNewMessage", message: docMsg(10, 501, 300000, "spec.pdf") },
                { "@type": "updateNewMessage", message: docMsg(11, 502, 1234, "gone.pdf") }]);
    await until("the documents stored", () =>
      psql(`SELECT string_agg(message_id || '=' || file_id, ',' ORDER BY message_id) FROM media WHERE chat_id = ${BOB} AND message_id IN (10, 11)`) ===
        "10=BQACAgIAAx-501,11=BQACAgIAAx-502");
    const want = Buffer.alloc(300000);
    for (let i = 0; i < want.length; i++) want[i] = DOC_UID.charCodeAt(i % DOC_UID.length);
    const progress = [];
    const r = await c.callTool({ name: "mediaDownload", arguments: { channelId: BOB, messageId: 10 } }, undefined,
      { onprogress: (p) => progress.push(p) });
    assert.ok(!r.isError, textOf(r));
    const got = r.structuredContent;
    assert.equal(got.bytes, 300000);
    assert.equal(got.mimeType, "application/pdf");
    assert.ok(got.path.startsWith(path.join(dataDir, "exports")), got.path);
    assert.ok(fs.readFileSync(got.path).equals(want), "the export holds the downloaded bytes");
    const sha = crypto.createHash("sha256").update(want).digest("hex");
    assert.equal(psql(`SELECT state || ':' || sha256 || ':' || local_path || ':' || file_size FROM media WHERE chat_id = ${BOB} AND message_id = 10`),
      `done:${sha}:${sha.slice(0, 2)}/${sha}:300000`);
    assert.ok(fs.readFileSync(path.join(dataDir, "media", sha.slice(0, 2), sha)).equals(want), "the media store holds it");
    assert.ok(progress.length >= 1, "progress was reported");
    assert.equal(fs.existsSync(path.join(tdDir, "files", "501")), false, "TDLib's own copy is deleted");

    // Downloaded once: the second call answers from the store.
    const again = await call(c, "mediaDownload", { channelId: BOB, messageId: 10, outputPath: "again.pdf" });
    assert.ok(fs.readFileSync(again.path).equals(want));
    assert.equal(fs.readFileSync(path.join(tdDir, "fake_downloads"), "utf8").trim(), "1");

    // TDLib refuses the other one: isError with its reason, recorded.
    assert.match(await refused(c, "mediaDownload", { channelId: BOB, messageId: 11 }),
      /could not be downloaded \(state error\): downloadFile failed: FILE_REFERENCE_EXPIRED/);
    assert.equal(psql(`SELECT state || ':' || error FROM media WHERE chat_id = ${BOB} AND message_id = 11`),
      "error:downloadFile failed: FILE_REFERENCE_EXPIRED");
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0);
  }
});

// An upload root on another file system: no hard link into the outbox, so
// the open file is copied there; the bytes and the name are the same.
test("messagesSendFile through the account from another file system", async (t) => {
  const shm = "/dev/shm";
  if (!fs.existsSync(shm) || fs.statSync(shm).dev === fs.statSync(dataDir).dev) {
    t.skip("no second file system at /dev/shm");
    return;
  }
  const root = fs.mkdtempSync(path.join(shm, "parley-tgufiles-"));
  try {
    const bytes = crypto.randomBytes(700 * 1024 + 3);
    fs.writeFileSync(path.join(root, "far.bin"), bytes);
    const { d, c } = await serve(["--upload-root", root]);
    try {
      const sent = await call(c, "messagesSendFile", { channelId: BOB, filePath: "far.bin" });
      assert.ok(Number.isInteger(sent.messageId), JSON.stringify(sent));
      const last = sentLines().at(-1);
      assert.equal(last.name, "far.bin");
      assert.equal(last.size, bytes.length);
      assert.ok(fs.readFileSync(path.join(tdDir, "fake_sent", String(last.n))).equals(bytes), "the copy sent holds the file's bytes");
    } finally {
      await c.close();
      assert.equal(await d.stop(), 0);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

// While the daemon is still signing the account in from its session
// (TDLib's getMe unanswered: state "starting"), a send is refused with what
// to do, not a socket error. (Bob's chat is in the archive from the first
// test: channelId resolves there.)
test("messagesSendFile and messagesSend while the account is still starting", async () => {
  a.rescript({ stall_methods: ["getMe"] });
  const { d, c } = await tgServe(a);
  try {
    await until("the account starting", async () => (await call(c, "authStatus")).state === "starting");
    fs.mkdirSync(path.join(dataDir, "uploads"), { recursive: true });
    fs.writeFileSync(path.join(dataDir, "uploads", "early.txt"), "early");
    for (const [tool, args] of [["messagesSendFile", { channelId: BOB, filePath: "early.txt" }],
      ["messagesSend", { channelId: BOB, text: "too early" }]]) {
      const why = await refused(c, tool, args);
      assert.match(why, new RegExp(`^${tool} failed: no Telegram account is signed in and serving here now\\. authStatus gives its state: "starting" turns "ready"`), why);
    }
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0);
    a.rescript();
  }
});

// A download that outlasts the wait for TDLib's answer (1 s here) is asked
// for again while it progresses: TDLib joins the running download, and the
// file is downloaded once.
test("mediaDownload through the account: a download longer than the answer timeout", async () => {
  a.rescript({ download_ms: 2500 });
  const { d, c } = await serve(["--telegram-td-timeout-s", "1"]);
  try {
    deliver(a, [{ "@type": "updateNewMessage", message: docMsg(12, 503, 100000, "slow.pdf") }]);
    await until("the document stored", () => psql(`SELECT count(*) FROM media WHERE chat_id = ${BOB} AND message_id = 12`) === "1");
    const before = Number(fs.readFileSync(path.join(tdDir, "fake_downloads"), "utf8"));
    const progress = [];
    const r = await c.callTool({ name: "mediaDownload", arguments: { channelId: BOB, messageId: 12 } }, undefined,
      { onprogress: (p) => progress.push(p.progress), timeout: 60000 });
    assert.ok(!r.isError, textOf(r));
    assert.equal(r.structuredContent.bytes, 100000);
    const want = Buffer.alloc(100000);
    for (let i = 0; i < want.length; i++) want[i] = "u-503".charCodeAt(i % 5);
    assert.ok(fs.readFileSync(r.structuredContent.path).equals(want));
    assert.equal(Number(fs.readFileSync(path.join(tdDir, "fake_downloads"), "utf8")), before + 1, "downloaded once");
    assert.ok(progress.length >= 2, `progress: ${progress}`);
  } finally {
    await c.close();
    assert.equal(await d.stop(), 0);
    a.rescript();
  }
});
