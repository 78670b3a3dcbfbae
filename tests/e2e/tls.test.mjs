// TLS: newline-delimited MCP over tcp:// with a certificate, and
// Streamable HTTP over https:// with the SDK client (NODE_EXTRA_CA_CERTS
// trusts the test certificate); a plaintext client on the TLS port is
// dropped; TLS without a certificate is refused at start.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import tls from "node:tls";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PARLEYD, baseArgs, startDaemon, textOf } from "./lib.mjs";

const dir = process.env.PARLEY_TEST_TLS_DIR;
const cert = path.join(dir, "cert.pem");
const key = path.join(dir, "key.pem");

function rpcOver(sock) {
  let buf = "";
  const waiting = new Map();
  sock.setEncoding("utf8");
  sock.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      waiting.get(m.id)?.(m);
    }
  });
  return (id, method, params) =>
    new Promise((r) => {
      waiting.set(id, r);
      sock.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
}

test("tcp+TLS and https", async () => {
  const d = await startDaemon([
    "--toolsets", "conformance",
    "--tls-cert", cert, "--tls-key", key,
    "--listen", "tcp://127.0.0.1:0,https://127.0.0.1:0/mcp",
  ]);
  try {
    const tcpPort = Number(/tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(d.log())[1]);
    const httpsPort = Number(/https:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(d.log())[1]);
    // Verified TLS session with newline-delimited JSON-RPC.
    const sock = tls.connect({ port: tcpPort, host: "127.0.0.1", ca: fs.readFileSync(cert), servername: "localhost" });
    await new Promise((r, j) => { sock.once("secureConnect", r); sock.once("error", j); });
    assert.equal(sock.authorized, true);
    const rpc = rpcOver(sock);
    const init = await rpc(1, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "tls", version: "1" } });
    assert.equal(init.result.serverInfo.name, "parley");
    const call = await rpc(2, "tools/call", { name: "test_simple_text", arguments: {} });
    assert.equal(call.result.content[0].text, "This is a simple text response for testing.");
    // A large answer crosses many TLS records.
    const list = await rpc(3, "tools/list", {});
    assert.equal(list.result.tools.length, 28);
    sock.destroy();
    // Plaintext on the TLS port: the connection is closed, the daemon goes on.
    const plain = net.connect(tcpPort, "127.0.0.1");
    plain.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    await new Promise((r) => plain.on("close", r));
    // https with the official SDK client.
    const t = new StreamableHTTPClientTransport(new URL(`https://localhost:${httpsPort}/mcp`));
    const c = new Client({ name: "https", version: "1" });
    await c.connect(t);
    assert.equal(textOf(await c.callTool({ name: "test_simple_text", arguments: {} })),
      "This is a simple text response for testing.");
    await c.close();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("TLS endpoints need a certificate; a bad one stops the start", () => {
  let r = spawnSync(PARLEYD, baseArgs(["--listen", "https://127.0.0.1:0/mcp"]), { encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /TLS needs --tls-cert FILE and --tls-key FILE/);
  r = spawnSync(PARLEYD, baseArgs(["--listen", "https://127.0.0.1:0/mcp", "--tls-cert", key, "--tls-key", key]), { encoding: "utf8" });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /certificate .*key\.pem/);
});

// The key is a secret: one others can read is refused, a FIFO at once
// (never waited on), both before any work (exit 2).
test("a TLS key others can read, or a FIFO, is refused at start", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "parley-tls-"));
  const open = path.join(tmp, "key.pem");
  fs.copyFileSync(key, open);
  fs.chmodSync(open, 0o644);
  const fifo = path.join(tmp, "key.fifo");
  execFileSync("mkfifo", [fifo]);
  for (const [file, why] of [[open, /tls_key .*key\.pem: holds a secret and others can read it \(mode 0644\); chmod 600 it/],
    [fifo, /tls_key .*key\.fifo: a FIFO, not a regular file/]]) {
    const r = spawnSync(PARLEYD, baseArgs(["--listen", "https://127.0.0.1:0/mcp", "--tls-cert", cert, "--tls-key", file]),
      { encoding: "utf8", timeout: 30000, killSignal: "SIGKILL" });
    assert.equal(r.signal, null, `parleyd hung on ${file}`);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, why);
  }
});
