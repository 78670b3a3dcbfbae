// MCP over Unix and TCP sockets (newline-delimited JSON-RPC): sessions on
// both, many at once, a 0600 socket, a stale socket file replaced, a bad
// message survived, a client that never reads kept within memory bounds,
// and binding beyond loopback refused without tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { PARLEYD, baseArgs, rssKiB, startDaemon, tmpdir } from "./lib.mjs";

// A line-oriented JSON-RPC client on a socket.
function lineClient(sock) {
  let buf = "";
  const waiters = new Map();
  const lines = [];
  sock.setEncoding("utf8");
  sock.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const msg = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      lines.push(msg);
      if (msg.id !== undefined && waiters.has(msg.id)) {
        waiters.get(msg.id)(msg);
        waiters.delete(msg.id);
      }
    }
  });
  return {
    lines,
    request(id, method, params) {
      const p = new Promise((r) => waiters.set(id, r));
      sock.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return p;
    },
    raw(text) {
      sock.write(text);
    },
  };
}

function connect(opts) {
  return new Promise((resolve, reject) => {
    const s = net.connect(opts, () => resolve(s));
    s.on("error", reject);
  });
}

async function session(opts) {
  const sock = await connect(opts);
  const c = lineClient(sock);
  const init = await c.request(1, "initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "socket-test", version: "1" },
  });
  assert.equal(init.result.protocolVersion, "2025-11-25");
  sock.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  return { sock, c };
}

test("unix and tcp sockets serve sessions; bad input is survived", async () => {
  const dir = tmpdir();
  const sockPath = path.join(dir, "mcp.sock");
  // A stale socket file from a process killed while listening is replaced.
  const holder = spawn(process.execPath, [
    "-e",
    `require("net").createServer().listen(${JSON.stringify(sockPath)}, () => console.log("up"))`,
  ]);
  await once(holder.stdout, "data");
  holder.kill("SIGKILL");
  await once(holder, "exit");
  assert.ok(fs.statSync(sockPath).isSocket());
  const d = await startDaemon([
    "--toolsets", "conformance",
    "--listen", `unix:${sockPath},tcp://127.0.0.1:0`,
  ]);
  try {
    assert.equal(fs.statSync(sockPath).mode & 0o777, 0o600);
    const port = Number(/tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(d.log())[1]);
    const u = await session({ path: sockPath });
    const list = await u.c.request(2, "tools/list", {});
    assert.ok(list.result.tools.length >= 10);
    const call = await u.c.request(3, "tools/call", { name: "test_simple_text", arguments: {} });
    assert.equal(call.result.content[0].text, "This is a simple text response for testing.");
    u.c.raw("this is not json\n");
    u.c.raw('{"jsonrpc":"2.0","id":4,"method":"nope"}\n');
    const pong = await u.c.request(5, "ping", {});
    assert.deepEqual(pong.result, {});
    const errs = u.c.lines.filter((l) => l.error).map((l) => l.error.code);
    assert.deepEqual(errs, [-32700, -32601]);
    // An oversized message gets an error and the session goes on.
    u.c.raw(`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"${"x".repeat(5 << 20)}"}}\n`);
    const pong2 = await u.c.request(7, "ping", {});
    assert.deepEqual(pong2.result, {});
    assert.ok(u.c.lines.some((l) => l.error && /larger than/.test(l.error.message)));
    u.sock.destroy();
    const t = await session({ host: "127.0.0.1", port });
    const tp = await t.c.request(2, "ping", {});
    assert.deepEqual(tp.result, {});
    t.sock.destroy();
  } finally {
    assert.equal(await d.stop(), 0);
  }
  assert.equal(fs.existsSync(sockPath), false, "the socket file is removed on exit");
});

test("--listen given twice serves both endpoints", async () => {
  const sockPath = path.join(tmpdir(), "twice.sock");
  const d = await startDaemon([
    "--toolsets", "conformance",
    "--listen", `unix:${sockPath}`,
    "--listen", "http://127.0.0.1:0/mcp",
  ]);
  try {
    const u = await session({ path: sockPath });
    assert.deepEqual((await u.c.request(2, "ping", {})).result, {});
    u.sock.destroy();
    const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(d.log())[1];
    const client = new Client({ name: "twice", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const r = await client.callTool({ name: "test_simple_text", arguments: {} });
    assert.equal(r.content[0].text, "This is a simple text response for testing.");
    await client.close();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("many concurrent tcp sessions", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "tcp://127.0.0.1:0"]);
  try {
    const port = Number(/tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(d.log())[1]);
    const n = 200;
    const sessions = await Promise.all(
      Array.from({ length: n }, () => session({ host: "127.0.0.1", port })),
    );
    const results = await Promise.all(
      sessions.map((s, i) =>
        s.c.request(100 + i, "tools/call", { name: "test_simple_text", arguments: {} }),
      ),
    );
    assert.equal(results.filter((r) => r.result?.content?.[0]?.type === "text").length, n);
    for (const s of sessions) s.sock.destroy();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a connection that never initializes is closed; one that did stays", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "tcp://127.0.0.1:0", "--init-timeout-ms", "1000"]);
  try {
    const port = Number(/tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(d.log())[1]);
    const silent = await connect({ host: "127.0.0.1", port });
    const closed = once(silent, "close");
    const live = await session({ host: "127.0.0.1", port });
    const t0 = Date.now();
    await closed;
    const waited = Date.now() - t0;
    assert.ok(waited >= 800 && waited < 10000, `closed after ${waited} ms`);
    assert.match(d.log(), /closing: no initialize within 1000 ms/);
    // The initialized session outlives the limit.
    await new Promise((r) => setTimeout(r, 1500));
    const r = await live.c.request(2, "ping", {});
    assert.deepEqual(r.result, {});
    live.sock.destroy();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a client that never reads cannot grow the daemon's memory", async () => {
  const d = await startDaemon([
    "--toolsets", "conformance",
    "--listen", "tcp://127.0.0.1:0",
    "--output-hard-limit", "4194304",
  ]);
  try {
    const port = Number(/tcp:\/\/127\.0\.0\.1:0 \(port (\d+)\)/.exec(d.log())[1]);
    const before = rssKiB(d.child.pid);
    const sock = await connect({ host: "127.0.0.1", port });
    sock.pause(); // never read
    const msg =
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) + "\n";
    const chunk = msg.repeat(1000);
    let closed = false;
    sock.on("close", () => (closed = true));
    sock.on("error", () => (closed = true));
    // Write ~200 MB of requests (each answered with a few KB), or until the
    // daemon disconnects us.
    for (let i = 0; i < 2000 && !closed; i++) {
      if (!sock.write(chunk)) await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 500));
    const after = rssKiB(d.child.pid);
    const growth = after - before;
    // Kernel socket buffers take some, the output cap 4 MiB, the input
    // buffer 4 MiB + slack: far below what was sent.
    assert.ok(growth < 64 * 1024, `RSS grew by ${growth} KiB`);
    assert.ok(
      closed || /does not read its responses|pausing reading/.test(d.log()),
      "the daemon paused or disconnected the client",
    );
    sock.destroy();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a call answered at once while the session is one below its in-flight cap is answered once", async () => {
  const d = await startDaemon(["--toolsets", "conformance", "--listen", "tcp://127.0.0.1:0"]);
  try {
    const port = Number(/\(port (\d+)\)/.exec(d.log())[1]);
    const sock = await connect({ host: "127.0.0.1", port });
    const c = lineClient(sock);
    await c.request(0, "initialize", {
      protocolVersion: "2025-11-25",
      capabilities: { elicitation: {} },
      clientInfo: { name: "cap", version: "1" },
    });
    // 63 calls wait for elicitation answers that never come (the cap is 64).
    for (let i = 1; i < 64; i++)
      c.raw(JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "test_elicitation", arguments: { message: "m" } } }) + "\n");
    await new Promise((r) => setTimeout(r, 300));
    const r = await c.request(1000, "tools/call", { name: "test_simple_text", arguments: {} });
    assert.equal(r.result.content[0].text, "This is a simple text response for testing.");
    const pong = await c.request(1001, "ping", {});
    assert.deepEqual(pong.result, {});
    assert.equal(c.lines.filter((l) => l.id === 1000).length, 1);
    sock.destroy();
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("binding beyond loopback without tokens is refused", () => {
  const r = spawnSync(PARLEYD, baseArgs(["--listen", "http://0.0.0.0:0/mcp"]), { encoding: "utf8" });
  assert.equal(r.status, 2, "a usage error, before any work");
  assert.match(r.stderr, /refusing to listen beyond loopback without bearer tokens/);
  // tcp:// carries no credentials: loopback only, tokens or not.
  const t = spawnSync(PARLEYD, baseArgs(["--listen", "tcp://0.0.0.0:0"]), { encoding: "utf8" });
  assert.equal(t.status, 2);
  assert.match(t.stderr, /tcp:\/\/ endpoints bind to loopback only/);
  const r2 = spawnSync(PARLEYD, baseArgs(["--listen", "gopher://x"]), { encoding: "utf8" });
  assert.notEqual(r2.status, 0);
  assert.match(r2.stderr, /unknown endpoint/);
});
