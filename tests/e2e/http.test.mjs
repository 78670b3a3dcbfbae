// MCP Streamable HTTP with the official SDK client and raw fetch: sessions,
// JSON and SSE answers, pagination, progress, logging, cancellation,
// elicitation, resumption with Last-Event-ID, DELETE, the HTTP error
// statuses, DNS-rebinding protection (Host and Origin), bearer tokens,
// /healthz and /metrics.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { spawnSync } from "node:child_process";
import { PARLEYD, baseArgs, startDaemon, textOf, tmpdir } from "./lib.mjs";

let daemon;
let url;

before(async () => {
  daemon = await startDaemon([
    "--toolsets", "conformance",
    "--listen", "http://127.0.0.1:0/mcp",
    "--list-page-size", "4",
  ]);
  const port = /http:\/\/127\.0\.0\.1:0\/mcp \(port (\d+)\)/.exec(daemon.log())[1];
  url = `http://127.0.0.1:${port}/mcp`;
});

after(async () => {
  assert.equal(await daemon.stop(), 0);
});

async function connect(caps = {}, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "http-e2e", version: "1" }, { capabilities: caps });
  await client.connect(transport);
  return { client, transport };
}

const JSON_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

function initBody(id = 1) {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
}

test("session, pagination, calls, progress and logging over HTTP", async () => {
  const { client, transport } = await connect();
  try {
    assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(names.length, 28);
    await assert.rejects(client.listTools({ cursor: "bogus" }), (e) => e.code === -32602);
    assert.equal(textOf(await client.callTool({ name: "test_simple_text", arguments: {} })),
      "This is a simple text response for testing.");
    const seen = [];
    await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    assert.deepEqual(seen, [0, 50, 100]);
    const logs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params.data));
    await client.setLoggingLevel("info");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(logs, ["Tool execution started", "Tool processing data", "Tool execution completed"]);
    const bad = await client.callTool({ name: "test_elicitation", arguments: {} });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /message/);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

test("elicitation accepted, declined, cancelled and unsupported; cancel stops a call", async () => {
  const { client, transport } = await connect({ elicitation: {} });
  let answer;
  let hang = false;
  client.setRequestHandler(ElicitRequestSchema, (req, extra) => {
    if (!hang) return answer;
    return new Promise((resolve) => extra.signal.addEventListener("abort", () => resolve({ action: "cancel" })));
  });
  try {
    for (const action of ["accept", "decline", "cancel"]) {
      answer = action === "accept" ? { action, content: { username: "u", email: "e@x.org" } } : { action };
      const r = await client.callTool({ name: "test_elicitation", arguments: { message: "m" } });
      assert.match(textOf(r), new RegExp(`action=${action}`));
    }
    hang = true;
    const ac = new AbortController();
    const call = client.callTool({ name: "test_elicitation", arguments: { message: "m" } }, undefined, {
      signal: ac.signal,
    });
    setTimeout(() => ac.abort(), 200);
    await assert.rejects(call);
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
  const plain = await connect({});
  try {
    const r = await plain.client.callTool({ name: "test_elicitation", arguments: { message: "m" } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /does not support elicitation/);
  } finally {
    await plain.client.close();
  }
});

test("a cut stream is resumed with Last-Event-ID", async () => {
  const { client, transport } = await connect();
  try {
    const r = await client.callTool({ name: "test_reconnection", arguments: {} });
    assert.match(textOf(r), /Reconnection test completed successfully/);
  } finally {
    await client.close();
  }
  // The same by hand: the POST stream ends after its priming event; a GET
  // with that event's id gets the result.
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  const h = { ...JSON_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  const post = await fetch(url, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "test_reconnection", arguments: {} } }),
  });
  assert.equal(post.headers.get("content-type"), "text/event-stream");
  const text = await post.text();
  const lastId = /id: (\S+)/.exec(text)[1];
  assert.match(text, /retry: \d+/);
  assert.doesNotMatch(text, /"result"/);
  await new Promise((r) => setTimeout(r, 300));
  const get = await fetch(url, { headers: { ...h, accept: "text/event-stream", "last-event-id": lastId } });
  assert.equal(get.status, 200);
  const replay = await get.text();
  assert.match(replay, /"id":7,"result"/);
  const del = await fetch(url, { method: "DELETE", headers: h });
  assert.equal(del.status, 200);
  const after = await fetch(url, { method: "POST", headers: h, body: '{"jsonrpc":"2.0","id":8,"method":"ping"}' });
  assert.equal(after.status, 404);
});

test("HTTP errors: session header, bad JSON, batches, methods, media types", async () => {
  const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  let r = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: ping });
  assert.equal(r.status, 400);
  assert.match((await r.json()).error.message, /Mcp-Session-Id/);
  r = await fetch(url, { method: "POST", headers: { ...JSON_HEADERS, "mcp-session-id": "f00" }, body: ping });
  assert.equal(r.status, 404);
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  assert.equal(init.status, 200);
  const sid = init.headers.get("mcp-session-id");
  const h = { ...JSON_HEADERS, "mcp-session-id": sid };
  r = await fetch(url, { method: "POST", headers: h, body: "{oops" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32700);
  r = await fetch(url, { method: "POST", headers: h, body: `[${ping}]` });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32600);
  r = await fetch(url, { method: "POST", headers: h, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
  assert.equal(r.status, 202);
  r = await fetch(url, { method: "POST", headers: h, body: '{"jsonrpc":"2.0","id":2,"method":"nope"}' });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).error.code, -32601);
  r = await fetch(url, { method: "POST", headers: { ...h, "mcp-protocol-version": "1999-01-01" }, body: ping });
  assert.equal(r.status, 400);
  r = await fetch(url, { method: "POST", headers: { ...h, "content-type": "text/plain" }, body: ping });
  assert.equal(r.status, 415);
  r = await fetch(url, { method: "PUT", headers: h, body: ping });
  assert.equal(r.status, 405);
  r = await fetch(url, { method: "POST", headers: h, body: ping });
  assert.deepEqual(await r.json(), { jsonrpc: "2.0", id: 1, result: {} });
  r = await fetch(url.replace("/mcp", "/elsewhere"));
  assert.equal(r.status, 404);
});

test("HTTP: a cancelled call ends its stream; bad ids and notification-initialize are refused", async () => {
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  const h = { ...JSON_HEADERS, "mcp-session-id": sid };
  // Without the elicitation capability test_elicitation answers at once, so
  // use the logging tool and cancel it while it runs.
  const post = fetch(url, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "test_tool_with_logging", arguments: {} } }),
  });
  await new Promise((r) => setTimeout(r, 20));
  const c = await fetch(url, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5 } }),
  });
  assert.equal(c.status, 202);
  const body = await (await post).text(); // ends instead of hanging
  assert.doesNotMatch(body, /"id":5,"result"/);
  for (const bad of ['{"jsonrpc":"2.0","id":null,"method":"ping"}', '{"jsonrpc":"2.0","id":{},"method":"ping"}']) {
    const r = await fetch(url, { method: "POST", headers: h, body: bad });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32600);
  }
  const n = await fetch(url, {
    method: "POST",
    headers: JSON_HEADERS,
    body: '{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}',
  });
  assert.equal(n.status, 400);
  assert.equal(n.headers.get("mcp-session-id"), null);
});

test("DNS rebinding: a foreign Host or Origin is refused", async () => {
  const port = new URL(url).port;
  // fetch cannot forge Host; use a raw request.
  const net = await import("node:net");
  const raw = (hostHeader, origin) =>
    new Promise((resolve, reject) => {
      const body = initBody();
      const s = net.connect(Number(port), "127.0.0.1", () => {
        s.write(
          `POST /mcp HTTP/1.1\r\nHost: ${hostHeader}\r\n` +
            (origin ? `Origin: ${origin}\r\n` : "") +
            `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      let data = "";
      s.on("data", (d) => (data += d));
      s.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(data)[1])));
      s.on("error", reject);
    });
  assert.equal(await raw("evil.example.com", "http://evil.example.com"), 403);
  assert.equal(await raw(`evil.example.com:${port}`, null), 403);
  assert.equal(await raw(`127.0.0.1:${port}`, "http://evil.example.com"), 403);
  assert.equal(await raw(`localhost:${port}`, `http://localhost:${port}`), 200);
  assert.equal(await raw(`127.0.0.1:${port}`, null), 200);
});

test("/healthz and /metrics", async () => {
  const h = await fetch(url.replace("/mcp", "/healthz"));
  assert.equal(h.status, 200);
  assert.deepEqual(await h.json(), { status: "ok" });
  const m = await (await fetch(url.replace("/mcp", "/metrics"))).text();
  assert.match(m, /^parley_sessions\{transport="http"\} \d+$/m);
  assert.match(m, /^parley_requests_total\{method="tools\/call"\} [1-9]\d*$/m);
  assert.match(m, /^parley_call_duration_seconds_bucket\{le="\+Inf"\} [1-9]\d*$/m);
  assert.match(m, /^parley_db_pool\{pool="ro",state="queued"\} \d+$/m);
  assert.match(m, /^parley_errors_total \d+$/m);
});

test("bearer tokens: 401 without, toolsets and read-only per token", async () => {
  const dir = tmpdir();
  const file = path.join(dir, "tokens");
  fs.writeFileSync(
    file,
    "# tokens\nfull-access-token-0123456789\nlimited-token-0123456789 toolsets=conformance read_only\n",
    { mode: 0o600 },
  );
  const d = await startDaemon([
    "--toolsets", "conformance",
    "--listen", "http://127.0.0.1:0/mcp",
    "--token-file", file,
  ]);
  try {
    const port = /\(port (\d+)\)/.exec(d.log())[1];
    const u = `http://127.0.0.1:${port}/mcp`;
    const r = await fetch(u, { method: "POST", headers: JSON_HEADERS, body: initBody() });
    assert.equal(r.status, 401);
    assert.equal(r.headers.get("www-authenticate"), "Bearer");
    const bad = await fetch(u, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: "Bearer wrong-token-0123456789" },
      body: initBody(),
    });
    assert.equal(bad.status, 401);
    const t = new StreamableHTTPClientTransport(new URL(u), {
      requestInit: { headers: { authorization: "Bearer full-access-token-0123456789" } },
    });
    const c = new Client({ name: "tok", version: "1" });
    await c.connect(t);
    assert.equal((await c.listTools()).tools.length, 28);
    await c.close();
    assert.doesNotMatch(d.log(), /full-access-token/, "tokens are never logged");
  } finally {
    assert.equal(await d.stop(), 0);
  }
  // A token naming a toolset that is not served stops the start.
  fs.writeFileSync(file, "some-long-token-0123456789 toolsets=telegramx\n", { mode: 0o600 });
  const r = spawnSync(PARLEYD, baseArgs(["--listen", "http://127.0.0.1:0/mcp", "--token-file", file]), {
    encoding: "utf8",
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /toolset 'telegramx', which is not served/);
  assert.doesNotMatch(r.stderr, /some-long-token/);
  // Beyond loopback with tokens is allowed.
  fs.writeFileSync(file, "some-long-token-0123456789\n", { mode: 0o600 });
  const open = await startDaemon(["--listen", "http://0.0.0.0:0/mcp", "--token-file", file]);
  assert.equal(await open.stop(), 0);
});

test("strict parsing: authorities, duplicate headers, media types, Accept, Last-Event-ID", async () => {
  const port = new URL(url).port;
  const net = await import("node:net");
  const raw = (headers) =>
    new Promise((resolve, reject) => {
      const body = initBody();
      const s = net.connect(Number(port), "127.0.0.1", () => {
        s.write(
          `POST /mcp HTTP/1.1\r\n${headers.join("\r\n")}\r\n` +
            `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      let data = "";
      s.on("data", (d) => (data += d));
      s.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 0)));
      s.on("error", reject);
    });
  // A port must be digits; userinfo is not a loopback authority.
  assert.equal(await raw(["Host: localhost:evil.com"]), 403);
  assert.equal(await raw([`Host: 127.0.0.1:${port}`, "Origin: http://localhost:1@evil.com"]), 403);
  assert.equal(await raw([`Host: 127.0.0.1:${port}`, `Origin: http://localhost:${port}/path`]), 403);
  // A second Origin after a good one.
  assert.equal(await raw([`Host: 127.0.0.1:${port}`, `Origin: http://localhost:${port}`, "Origin: http://evil.com"]), 400);
  assert.equal(await raw([`Host: 127.0.0.1:${port}`, `Origin: http://localhost:${port}`]), 200);

  const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  const h = { ...JSON_HEADERS, "mcp-session-id": sid };
  let r = await fetch(url, { method: "POST", headers: { ...h, "content-type": "application/jsonfoo" }, body: ping });
  assert.equal(r.status, 415);
  r = await fetch(url, { method: "POST", headers: { ...h, "content-type": "application/json; charset=utf-8" }, body: ping });
  assert.equal(r.status, 200);
  // "The client MUST include an Accept header, listing both".
  const noAccept = { ...h };
  delete noAccept.accept;
  r = await fetch(url, { method: "POST", headers: { ...noAccept, accept: "" }, body: ping });
  assert.equal(r.status, 406);
  r = await fetch(url, { method: "POST", headers: { ...h, accept: "application/json" }, body: ping });
  assert.equal(r.status, 406);
  r = await fetch(url, { method: "POST", headers: { ...h, accept: "*/*" }, body: ping });
  assert.equal(r.status, 200);
  // An event id this session never sent starts a fresh stream and is not echoed.
  for (const bad of ["99999-1", "0-0x10", "-1-1", "1", "18446744073709551616-0"]) {
    const i2 = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
    const h2 = { ...JSON_HEADERS, "mcp-session-id": i2.headers.get("mcp-session-id") };
    const ac = new AbortController();
    const get = await fetch(url, { headers: { ...h2, accept: "text/event-stream", "last-event-id": bad }, signal: ac.signal });
    assert.equal(get.status, 200, bad);
    const reader = get.body.getReader();
    const { value } = await reader.read();
    const first = new TextDecoder().decode(value);
    ac.abort();
    assert.doesNotMatch(first, /99999|18446744073709551615|0x10/, first);
    await new Promise((res) => setTimeout(res, 50));
  }
});

// Writes text on a fresh connection and collects everything the server
// sends until it closes the connection (closed: true) or 3 s pass with the
// connection still open (closed: false).
async function exchange(port, text) {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    let data = "";
    const s = net.connect(port, "127.0.0.1", () => s.write(text));
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ data, closed: false });
    }, 3000);
    s.on("data", (d) => (data += d));
    s.on("close", () => {
      clearTimeout(timer);
      resolve({ data, closed: true });
    });
    s.on("error", (e) => (e.code === "ECONNRESET" ? null : reject(e)));
  });
}

const statuses = (data) => [...data.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

test("request smuggling and single-valued headers: 400 and the connection closed", async () => {
  const port = Number(new URL(url).port);
  const host = `Host: 127.0.0.1:${port}\r\n`;
  const mcp = "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  const hidden = `GET /healthz HTTP/1.1\r\n${host}\r\n`;
  // Content-Length and Transfer-Encoding: the chunked body ends at once and
  // a second request follows inside what Content-Length counts.
  const chunked = `0\r\n\r\n${hidden}`;
  let r = await exchange(
    port,
    `POST /mcp HTTP/1.1\r\n${host}${mcp}Content-Length: ${chunked.length}\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${chunked}`,
  );
  assert.deepEqual(statuses(r.data), [400], r.data);
  assert.ok(r.closed, "the connection is closed");
  // Two different Content-Lengths, the second request after the shorter.
  const body = initBody();
  r = await exchange(
    port,
    `POST /mcp HTTP/1.1\r\n${host}${mcp}Content-Length: ${body.length}\r\n` +
      `Content-Length: ${body.length + hidden.length}\r\n\r\n${body}${hidden}`,
  );
  assert.deepEqual(statuses(r.data), [400], r.data);
  assert.ok(r.closed);
  // The same on the other paths, in either order, on a kept-alive
  // connection's second request, and for other framing faults.
  r = await exchange(port, `GET /healthz HTTP/1.1\r\n${host}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n`);
  assert.deepEqual(statuses(r.data), [400], r.data);
  assert.ok(r.closed);
  r = await exchange(
    port,
    `GET /healthz HTTP/1.1\r\n${host}\r\n` +
      `POST /mcp HTTP/1.1\r\n${host}${mcp}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${hidden}`,
  );
  assert.deepEqual(statuses(r.data), [200, 400], r.data);
  assert.ok(r.closed);
  for (const bad of [
    "Content-Length: 5\r\nContent-Length: 5\r\n",
    "Content-Length: +5\r\n",
    "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    host,
  ]) {
    r = await exchange(port, `POST /mcp HTTP/1.1\r\n${host}${mcp}${bad}\r\n0\r\n\r\n${hidden}`);
    assert.deepEqual(statuses(r.data), [400], `${bad}: ${r.data}`);
    assert.ok(r.closed, bad);
  }
  // Headers that must come once and that a check reads.
  for (const dup of [
    "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n",
    "Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n",
    "Content-Type: text/plain\r\n",
    "MCP-Protocol-Version: 2025-11-25\r\nMCP-Protocol-Version: 2025-06-18\r\n",
  ]) {
    r = await exchange(
      port,
      `POST /mcp HTTP/1.1\r\n${host}${mcp}${dup}Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    assert.deepEqual(statuses(r.data), [400], `${dup}: ${r.data}`);
    assert.match(r.data, /more than one/);
    assert.ok(r.closed, dup);
  }
  // Connections closed before a complete request are no longer counted as
  // pending (they were, and past http_max_pending_conns of them every new
  // connection was dropped as the oldest pending one).
  for (let i = 0; i < 270; i += 30) {
    const batch = await Promise.all(
      Array.from({ length: 30 }, () => exchange(port, `GET /healthz HTTP/1.1\r\n${host}${host}\r\n`)),
    );
    for (const b of batch) assert.ok(b.closed && statuses(b.data)[0] === 400, b.data);
  }
  assert.equal((await fetch(url.replace("/mcp", "/healthz"))).status, 200);
  // A well-formed request on a kept-alive connection is answered and the
  // connection stays open.
  r = await exchange(port, `POST /mcp HTTP/1.1\r\n${host}${mcp}Content-Length: ${body.length}\r\n\r\n${body}`);
  assert.deepEqual(statuses(r.data), [200], r.data);
  assert.equal(r.closed, false);
});

test("Accept and Content-Type are media types; ports are ports; JSON keys once", async () => {
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  const sid = init.headers.get("mcp-session-id");
  const h = { ...JSON_HEADERS, "mcp-session-id": sid };
  const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  for (const accept of [
    "application/jsonx, text/event-stream",
    "application/json;q=0, text/event-stream",
    "application/json, text/event-stream; q=0",
    "*/*;q=0",
    "application/json, text/event-streamer",
  ]) {
    const r = await fetch(url, { method: "POST", headers: { ...h, accept }, body: ping });
    assert.equal(r.status, 406, accept);
  }
  for (const accept of ["application/json;q=0.5, text/event-stream;q=1", "application/*, text/*", "*/*"]) {
    const r = await fetch(url, { method: "POST", headers: { ...h, accept }, body: ping });
    assert.equal(r.status, 200, accept);
  }
  const port = new URL(url).port;
  for (const origin of ["http://localhost:99999", "http://localhost:0", "http://localhost:"]) {
    const r = await fetch(url, { method: "POST", headers: { ...h, origin }, body: ping });
    assert.equal(r.status, 403, origin);
  }
  let r = await fetch(url, { method: "POST", headers: { ...h, origin: `http://localhost:${port}` }, body: ping });
  assert.equal(r.status, 200);
  // '"method":"ping","method":"tools/list"' is not run as either.
  r = await fetch(url, {
    method: "POST",
    headers: h,
    body: '{"jsonrpc":"2.0","id":2,"method":"ping","method":"tools/list"}',
  });
  assert.equal(r.status, 400);
  const e = await r.json();
  assert.equal(e.error.code, -32700);
  assert.match(e.error.message, /duplicate/);
});

test("a GET stream cut by the client is taken over at once by the next GET, with or without Last-Event-ID", async () => {
  const init = await fetch(url, { method: "POST", headers: JSON_HEADERS, body: initBody() });
  const h = { ...JSON_HEADERS, "mcp-session-id": init.headers.get("mcp-session-id"), accept: "text/event-stream" };
  for (const extra of [{}, { "last-event-id": "12345-1" }, {}]) {
    const ac = new AbortController();
    const get = await fetch(url, { headers: { ...h, ...extra }, signal: ac.signal });
    assert.equal(get.status, 200, JSON.stringify(extra));
    ac.abort(); // the server sees nothing until it next writes
  }
  // Two open at once: the newer one wins, the older one ends.
  const first = await fetch(url, { headers: h });
  const second = await fetch(url, { headers: h });
  assert.equal(second.status, 200);
  const reader = first.body.getReader();
  for (;;) if ((await reader.read()).done) break;
  await second.body.cancel();
});

test("slowloris: connections that never complete a request cannot hold the endpoint", async () => {
  const port = Number(new URL(url).port);
  const net = await import("node:net");
  // 300 connections that send half a request line and stop (the cap is 256).
  const socks = [];
  const ended = new Set();
  for (let i = 0; i < 300; i++) {
    const s = net.connect(port, "127.0.0.1");
    await once(s, "connect");
    s.write("POST /mcp HT");
    s.on("error", () => ended.add(i));
    s.on("close", () => ended.add(i));
    socks.push(s);
  }
  // The oldest were dropped to make room; a real client is served. On a
  // new connection of its own (agent: false): fetch would reuse a
  // keep-alive connection of an earlier test, older than the 300 and so
  // rightly among those dropped.
  const http = await import("node:http");
  const status = await new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: JSON_HEADERS, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("error", reject);
    req.end(initBody());
  });
  assert.equal(status, 200);
  for (let i = 0; i < 50 && ended.size < 44; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(ended.size >= 44, `only ${ended.size} of the oldest were dropped`);
  assert.ok([...ended].every((i) => i < 300 - 256 + 1), `a recent connection was dropped: ${[...ended].sort((a, b) => b - a)[0]}`);
  for (const s of socks) s.destroy();
});
