// import_beneath: an importer reads only inside what it was given. A
// Telegram export whose files/ folder is a symbolic link to a folder
// outside it, a file that is a link, a path through "..", an absolute
// path outside: nothing of theirs is stored, each message is named in a
// warning, and the rest imports (exit 0). A Claude Code projects folder
// whose project is a link to a folder outside it, or whose transcript is
// a link (to a file outside or inside): skipped and named, never read.
// On the code before, the linked private key is stored (and the linked
// transcripts are read).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, tmpdir } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_beneath_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-beneath-");
const data = path.join(work, "data");

function psql(sql, dbname = db) {
  return execFileSync("psql", ["-X", "-q", "-At", "-h", pgDir, "-U", "parley", "-d", dbname, "-c", sql], {
    encoding: "utf8",
  }).trim();
}
function parleyd(args) {
  const r = spawnSync(PARLEYD, [...args, "--db", url, "--data-dir", data], {
    encoding: "utf8",
    timeout: 60000,
    killSignal: "SIGKILL",
  });
  assert.equal(r.signal, null, `parleyd ${args.join(" ")} did not end: ${r.stderr}`);
  return { status: r.status, out: r.stderr };
}

// Every file of the media store, with its bytes.
function stored() {
  const root = path.join(data, "media");
  const out = [];
  if (!fs.existsSync(root)) return out;
  for (const d of fs.readdirSync(root)) {
    const sub = path.join(root, d);
    if (d.startsWith(".") || !fs.statSync(sub).isDirectory()) continue;
    for (const f of fs.readdirSync(sub)) out.push(fs.readFileSync(path.join(sub, f), "utf8"));
  }
  return out;
}

before(() => {
  psql(`CREATE DATABASE ${db}`, "postgres");
});

after(() => {
  psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, "postgres");
});

const SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not for the archive";

test("telegram export: files reached through a link or out of the folder are not stored; the rest is", () => {
  const outside = tmpdir("parley-beneath-outside-");
  fs.writeFileSync(path.join(outside, "id_rsa"), SECRET, { mode: 0o600 });
  const exp = path.join(work, "export");
  fs.mkdirSync(path.join(exp, "photos"), { recursive: true });
  fs.symlinkSync(outside, path.join(exp, "files")); // files -> a folder outside
  fs.writeFileSync(path.join(exp, "photos", "ok.jpg"), "a photo inside");
  fs.symlinkSync(path.join(outside, "id_rsa"), path.join(exp, "photos", "link.jpg"));
  fs.symlinkSync("ok.jpg", path.join(exp, "photos", "inner-link.jpg")); // a link even inside
  const t = 1767225600;
  const m = (id, extra) => ({
    id, type: "message", date: new Date((t + id) * 1000).toISOString().slice(0, 19),
    date_unixtime: String(t + id), from: "Ann", from_id: "user1001", text: `message ${id}`,
    text_entities: [{ type: "plain", text: `message ${id}` }], ...extra,
  });
  fs.writeFileSync(path.join(exp, "result.json"), JSON.stringify({
    name: "Beneath", type: "private_group", id: 4242, messages: [
      m(1, { file: "files/id_rsa", file_name: "id_rsa", mime_type: "application/octet-stream", file_size: 10 }),
      m(2, { photo: "photos/link.jpg", width: 1, height: 1 }),
      m(3, { photo: "photos/inner-link.jpg", width: 1, height: 1 }),
      m(4, { file: "photos/../files/id_rsa", file_name: "k", mime_type: "text/plain", file_size: 10 }),
      m(5, { file: path.join(outside, "id_rsa"), file_name: "k2", mime_type: "text/plain", file_size: 10 }),
      m(6, { photo: "photos/ok.jpg", width: 1, height: 1 }),
    ],
  }));
  const r = parleyd(["import", "telegram-export", exp]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /6 messages/);
  assert.match(r.out, /1 files stored/, r.out);
  for (const id of [1, 2, 3])
    assert.match(r.out, new RegExp(`message ${id}: file "[^"]+": a symbolic link: files are read only inside the export folder`), r.out);
  assert.match(r.out, /message 4: file "photos\/\.\.\/files\/id_rsa": the path leaves the export folder/);
  assert.match(r.out, /message 5: file "[^"]+id_rsa": the path leaves the export folder/);
  assert.deepEqual(stored(), ["a photo inside"]);
  assert.equal(psql(`SELECT string_agg(message_id || ':' || state, ',' ORDER BY message_id) FROM media WHERE chat_id = (SELECT id FROM chats WHERE title = 'Beneath')`),
    "1:error,2:error,3:error,4:error,5:error,6:done");
});

test("claude-code: a linked project folder or transcript is skipped and named, never read", () => {
  const outside = tmpdir("parley-beneath-cc-outside-");
  const line = (sid, text) => JSON.stringify({
    type: "user", sessionId: sid, uuid: `u-${sid}`, cwd: "/home/dev/x", timestamp: "2026-01-01T00:00:00Z",
    message: { role: "user", content: text },
  }) + "\n";
  fs.mkdirSync(path.join(outside, "-home-dev-elsewhere"));
  fs.writeFileSync(path.join(outside, "-home-dev-elsewhere", "s-out.jsonl"), line("s-out", "outside the folder"));
  fs.writeFileSync(path.join(outside, "s-file.jsonl"), line("s-file", "a linked file"));
  const dir = path.join(work, "projects");
  const proj = path.join(dir, "-home-dev-x");
  fs.mkdirSync(proj, { recursive: true });
  fs.writeFileSync(path.join(proj, "s-in.jsonl"), line("s-in", "inside"));
  fs.symlinkSync(path.join(outside, "-home-dev-elsewhere"), path.join(dir, "-home-dev-linked"));
  fs.symlinkSync(path.join(outside, "s-file.jsonl"), path.join(proj, "s-file.jsonl"));
  fs.symlinkSync("s-in.jsonl", path.join(proj, "s-again.jsonl"));
  fs.symlinkSync(path.join(outside, "s-file.jsonl"), path.join(dir, "top.jsonl"));
  const r = parleyd(["import", "claude-code", dir]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /-home-dev-linked: a symbolic link, not followed/);
  assert.match(r.out, /s-file\.jsonl: a symbolic link, not followed/);
  assert.match(r.out, /s-again\.jsonl: a symbolic link, not followed/);
  assert.match(r.out, /top\.jsonl: a symbolic link, not followed/);
  assert.match(r.out, /imported 1 transcript file/);
  const sessions = psql(`SELECT string_agg(external_id, ',' ORDER BY external_id) FROM chats WHERE external_id LIKE 's-%'`);
  assert.equal(sessions, "s-in");
});
