// Key and settings files are opened without blocking and must be regular
// files: a FIFO named as the requestState key (state_key_file) or lying
// in the data directory as credentials.key is refused at once, naming it,
// and the daemon exits instead of waiting in open() for a writer that
// never comes. (The config and token files: tests/integration/cli_usage.sh.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, baseArgs, tmpdir } from "./lib.mjs";

function run(args, timeout = 30000) {
  const t0 = Date.now();
  const r = spawnSync(PARLEYD, args, { encoding: "utf8", timeout, killSignal: "SIGKILL", input: "" });
  return { ...r, ms: Date.now() - t0 };
}

test("a FIFO as state_key_file is refused at once", () => {
  const dir = tmpdir("parley-secret-");
  const fifo = path.join(dir, "state.fifo");
  execFileSync("mkfifo", [fifo]);
  const r = run(baseArgs(["--data-dir", path.join(dir, "data"), "--toolsets", "conformance", "--stdio", "--state-key-file", fifo]));
  assert.equal(r.signal, null, `parleyd hung on the FIFO (killed after ${r.ms} ms):\n${r.stderr}`);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /state\.fifo: a FIFO, not a regular file/);
});

test("a state_key_file others can read is refused", () => {
  const dir = tmpdir("parley-secret-");
  const key = path.join(dir, "state.key");
  fs.writeFileSync(key, Buffer.alloc(32, 7), { mode: 0o644 });
  fs.chmodSync(key, 0o644);
  const r = run(baseArgs(["--data-dir", path.join(dir, "data"), "--toolsets", "conformance", "--stdio", "--state-key-file", key]));
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /state\.key: holds a secret and others can read it \(mode 0644\); chmod 600 it/);
});

test("a FIFO as DATA_DIR/credentials.key is refused at once", () => {
  const dir = tmpdir("parley-secret-");
  const data = path.join(dir, "data");
  fs.mkdirSync(data, { mode: 0o700 });
  execFileSync("mkfifo", ["-m", "600", path.join(data, "credentials.key")]);
  // login telegram loads the credentials key before anything else.
  const r = run(["login", "telegram", "--data-dir", data, "--db", process.env.PARLEY_TEST_PG, "--phone", "+15550001",
    "--telegram-api-id", "12345", "--telegram-api-hash", "0123456789abcdef0123456789abcdef"]);
  assert.equal(r.signal, null, `parleyd hung on the FIFO (killed after ${r.ms} ms):\n${r.stderr}`);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /credentials\.key: a FIFO, not a regular file/);
});
