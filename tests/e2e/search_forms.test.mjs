// Word forms in the archive search end to end (issue #18): a fresh
// database with an imported export, parleyd bringing in the default
// search_languages (english,russian) in the background, then messagesSearch
// through the official SDK client: English and Russian forms, exact
// phrases, exclusions, exact forms ranked first, irregular forms (issue
// #30: mouse finds mice); switching the forms off and an unknown
// configuration refused at start.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, stdioClient, textOf, tmpdir, psqlAt } from "./lib.mjs";

const pgDir = process.env.PARLEY_TEST_PG_DIR;
const db = `e2e_forms_${process.pid}`;
const url = `host=${pgDir} port=5432 user=parley dbname=${db}`;
const work = tmpdir("parley-forms-");
const psql = (sql) => psqlAt(pgDir, db, sql);
let client, transport;

const TEXTS = [
  "we deployed the servers",
  "the servers deployed themselves",
  "deploy the server again",
  "an employee joined",
  "встреча в Москве завтра",
  "Москва слезам не верит",
  "error ERR_CONN_42 on k8s-node-3",
  "two mice ran away",
  "the children were late",
  "two better monitors",
  "люди пришли",
];

function writeExport(file) {
  const t0 = 1767225600; // 2026-01-01
  const messages = TEXTS.map((text, i) => {
    const sec = t0 + i * 3600;
    return {
      id: i + 1, type: "message", date: new Date(sec * 1000).toISOString().slice(0, 19),
      date_unixtime: String(sec), from: "Ann", from_id: "user1001", text,
      text_entities: [{ type: "plain", text }],
    };
  });
  fs.writeFileSync(file, JSON.stringify({ name: "Forms", type: "private_group", id: 4242, messages }));
}

async function serve(extra = []) {
  return stdioClient(["--db", url, "--toolsets", "telegram", "--data-dir", path.join(work, "data"), ...extra]);
}

async function search(args) {
  const r = await client.callTool({ name: "messagesSearch", arguments: args });
  assert.equal(r.isError, undefined, textOf(r));
  return r.structuredContent.messages.map((m) => m.text);
}

async function waitLanguages(want) {
  const deadline = Date.now() + 30000;
  while (psql("SELECT parley_search_languages()") !== want) {
    if (Date.now() > deadline) throw new Error(`search_languages never became "${want}"`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  psqlAt(pgDir, "postgres", `CREATE DATABASE ${db}`);
  const file = path.join(work, "forms.json");
  writeExport(file);
  execFileSync(PARLEYD, ["import", "telegram-export", file, "--db", url, "--data-dir", path.join(work, "data")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  ({ client, transport } = await serve());
  await waitLanguages("english,russian");
});

after(async () => {
  await client?.close();
  psqlAt(pgDir, "postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  fs.rmSync(work, { recursive: true, force: true });
});

test("word forms: the issue's examples through messagesSearch", async () => {
  assert.ok((await search({ query: "deploy server" })).includes("we deployed the servers"));
  assert.deepEqual(await search({ query: "москва" }), ["Москва слезам не верит", "встреча в Москве завтра"]);
  assert.deepEqual(await search({ query: "\"deployed the servers\"" }), ["we deployed the servers"]);
  assert.deepEqual(await search({ query: "employ" }), []);
  assert.deepEqual(await search({ query: "deploy -servers" }), []);
  assert.deepEqual(await search({ query: "ERR_CONN_42" }), ["error ERR_CONN_42 on k8s-node-3"]);
  // By rank: the messages with "servers" as written come before "server".
  const ranked = await search({ query: "servers", orderBy: "rank" });
  assert.deepEqual(ranked.slice(0, 2).sort(), ["the servers deployed themselves", "we deployed the servers"]);
  assert.equal(ranked.at(-1), "deploy the server again");
});

test("irregular forms: the issue's examples through messagesSearch", async () => {
  assert.deepEqual(await search({ query: "mouse" }), ["two mice ran away"]);
  assert.deepEqual(await search({ query: "child" }), ["the children were late"]);
  assert.deepEqual(await search({ query: "good monitor" }), ["two better monitors"]);
  assert.deepEqual(await search({ query: "человек" }), ["люди пришли"]);
  assert.deepEqual(await search({ query: "ran -mouse" }), []);
  assert.deepEqual(await search({ query: "\"mouse ran\"" }), []);
});

test("word forms: rows written later are found in every form", async () => {
  psql("INSERT INTO messages (chat_id, id, date, text) SELECT chat_id, 100, now(), 'deploying databases' FROM messages LIMIT 1");
  assert.deepEqual(await search({ query: "database deployment" }), ["deploying databases"]);
});

test("search_languages: '' matches words as written; an unknown configuration stops serve", async () => {
  await client.close();
  ({ client, transport } = await serve(["--search-languages", ""]));
  await waitLanguages("");
  assert.deepEqual(await search({ query: "deploy server" }), ["deploy the server again"]);
  await client.close();
  const r = spawnSync(PARLEYD, ["serve", "--db", url, "--listen", `unix:${path.join(work, "sock")}`,
    "--search-languages", "english,klingon", "--data-dir", path.join(work, "data")], { encoding: "utf8", timeout: 20000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /"klingon" is not a text search configuration of this database; it has .*english/);
  ({ client, transport } = await serve());
  await waitLanguages("english,russian");
  assert.ok((await search({ query: "deploy server" })).includes("we deployed the servers"));
});
