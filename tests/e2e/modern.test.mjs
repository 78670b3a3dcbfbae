// MCP 2026-07-28 beside 2025-11-25: the official SDK v2 client
// (@modelcontextprotocol/client) pinned to 2026-07-28 and in auto mode
// over stdio and Streamable HTTP, a v1 (2025-11-25) client on the same
// endpoint at the same time, and the revision's HTTP rules checked by
// hand (status codes, error codes, headers, no session ids).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import net from "node:net";
import path from "node:path";
import { PARLEYD, baseArgs, startDaemon, tmpdir } from "./lib.mjs";

const MODERN = "2026-07-28";
const PIN = { versionNegotiation: { mode: { pin: MODERN } } };
const META = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
};

let daemon, url;
before(async () => {
  daemon = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp"]);
  url = `http://127.0.0.1:${/\(port (\d+)\)/.exec(daemon.log())[1]}/mcp`;
});
after(async () => {
  assert.equal(await daemon.stop(), 0);
});

function stdioTransport() {
  return new StdioClientTransport({ command: PARLEYD, args: baseArgs(["--stdio", "--toolsets", "conformance"]), stderr: "pipe" });
}

// What a client of either revision should see of the conformance toolset
// (v1 takes a result schema before the options of callTool).
async function exercise(client, v1 = false) {
  const tools = await client.listTools();
  assert.ok(tools.tools.some((t) => t.name === "test_simple_text"));
  const again = await client.listTools();
  assert.deepEqual(again.tools.map((t) => t.name), tools.tools.map((t) => t.name), "a deterministic order");
  const call = await client.callTool({ name: "test_simple_text", arguments: {} });
  assert.equal(call.content[0].text, "This is a simple text response for testing.");
  const err = await client.callTool({ name: "test_error_handling", arguments: {} });
  assert.equal(err.isError, true);
  const res = await client.listResources();
  assert.ok(res.resources.some((r) => r.uri === "test://static-text"));
  const read = await client.readResource({ uri: "test://static-text" });
  assert.equal(read.contents[0].uri, "test://static-text");
  const prompts = await client.listPrompts();
  assert.ok(prompts.prompts.some((p) => p.name === "test_simple_prompt"));
  const prompt = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b" } });
  assert.match(JSON.stringify(prompt.messages), /a.*b/);
  const templates = await client.listResourceTemplates();
  assert.ok(templates.resourceTemplates.length > 0);
  // Progress arrives on the request's own stream.
  const seen = [];
  const onprogress = (p) => seen.push(p.progress);
  const params = { name: "test_tool_with_progress", arguments: {} };
  await (v1 ? client.callTool(params, undefined, { onprogress }) : client.callTool(params, { onprogress }));
  assert.ok(seen.length >= 2 && seen.every((v, i) => i === 0 || v > seen[i - 1]), JSON.stringify(seen));
  // A resource that does not exist: -32602 in 2026-07-28 (-32002 before).
  await assert.rejects(client.readResource({ uri: "test://nope" }), (e) => e.code === (client.getNegotiatedProtocolVersion?.() === MODERN ? -32602 : -32002));
}

test("stdio: the SDK v2 client pinned to 2026-07-28 lists, calls, reads and gets prompts", async () => {
  const client = new Client({ name: "v2-pinned", version: "1.0.0" }, PIN);
  await client.connect(stdioTransport());
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(client.getServerVersion().name, "parley");
    await exercise(client);
  } finally {
    await client.close();
  }
});

test("stdio: the SDK v2 client in auto mode stays on 2026-07-28", async () => {
  const client = new Client({ name: "v2-auto", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(stdioTransport());
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    await exercise(client);
  } finally {
    await client.close();
  }
});

test("HTTP: SDK v2 pinned and a v1 (2025-11-25) session on one endpoint at once", async () => {
  const modern = new Client({ name: "v2-pinned", version: "1.0.0" }, PIN);
  await modern.connect(new StreamableHTTPClientTransport(new URL(url)));
  const legacy = new ClientV1({ name: "v1", version: "1.0.0" }, { capabilities: {} });
  const lt = new HttpV1(new URL(url));
  await legacy.connect(lt);
  try {
    assert.equal(modern.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(legacy.getServerVersion().name, "parley");
    assert.ok(lt.sessionId, "the 2025-11-25 client has its session");
    await Promise.all([exercise(modern), exercise(legacy, true)]);
    const auto = new Client({ name: "v2-auto", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await auto.connect(new StreamableHTTPClientTransport(new URL(url)));
    assert.equal(auto.getNegotiatedProtocolVersion(), MODERN);
    await auto.close();
  } finally {
    await modern.close();
    await legacy.close();
  }
});

// A raw 2026-07-28 POST: headers as the revision requires them.
function post(body, headers = {}) {
  const m = JSON.parse(body);
  const name = m.params?.name ?? m.params?.uri;
  const h = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
    "mcp-method": m.method,
    ...(name !== undefined ? { "mcp-name": name } : {}),
    ...headers,
  };
  for (const k of Object.keys(h)) if (h[k] === null) delete h[k];
  return fetch(url, { method: "POST", headers: h, body });
}
const req = (method, params = {}, meta = META) => JSON.stringify({ jsonrpc: "2.0", id: 7, method, params: { ...params, _meta: meta } });

test("HTTP: server/discover, results' fields, no session id", async () => {
  const r = await post(req("server/discover"));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("mcp-session-id"), null);
  const d = (await r.json()).result;
  assert.deepEqual(d.supportedVersions.slice(0, 2), [MODERN, "2025-11-25"]);
  assert.equal(d.resultType, "complete");
  assert.equal(d._meta["io.modelcontextprotocol/serverInfo"].name, "parley");
  assert.ok(d.capabilities.tools && d.capabilities.resources && d.capabilities.prompts);
  assert.equal(typeof d.ttlMs, "number");
  assert.equal(d.cacheScope, "public");
  const l = await (await post(req("tools/list"))).json();
  assert.equal(l.result.resultType, "complete");
  assert.ok(l.result.ttlMs > 0);
  const rd = await (await post(req("resources/read", { uri: "test://static-text" }))).json();
  assert.equal(rd.result.ttlMs, 0);
  assert.equal(rd.result.cacheScope, "private");
});

test("HTTP: the revision's errors and statuses", async () => {
  const bad = { ...META, "io.modelcontextprotocol/protocolVersion": "2099-01-01" };
  let r = await post(req("tools/list", {}, bad), { "mcp-protocol-version": "2099-01-01" });
  assert.equal(r.status, 400);
  let e = (await r.json()).error;
  assert.equal(e.code, -32022);
  assert.deepEqual(e.data.supported.slice(0, 2), [MODERN, "2025-11-25"]);
  assert.equal(e.data.requested, "2099-01-01");

  const noCaps = { "io.modelcontextprotocol/protocolVersion": MODERN };
  r = await post(req("tools/list", {}, noCaps));
  assert.equal(r.status, 400);
  e = (await r.json()).error;
  assert.equal(e.code, -32602);
  assert.match(e.message, /clientCapabilities/);

  // The modern header without an envelope: -32602, not a 2025 answer.
  r = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }));
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32602);

  r = await post(req("tools/list"), { "mcp-protocol-version": "2025-11-25" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32020);
  r = await post(req("tools/list"), { "mcp-method": "prompts/list" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32020);
  r = await post(req("tools/list"), { "mcp-method": null });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32020);
  r = await post(req("tools/call", { name: "test_simple_text", arguments: {} }), { "mcp-name": "test_error_handling" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32020);
  // The base64 form of Mcp-Name is decoded before the comparison.
  r = await post(req("tools/call", { name: "test_simple_text", arguments: {} }), {
    "mcp-name": `=?base64?${Buffer.from("test_simple_text").toString("base64")}?=`,
  });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).result.content[0].type, "text");

  // Methods of 2025-11-25 alone, and unknown ones: 404 with -32601.
  for (const m of ["ping", "logging/setLevel", "resources/subscribe", "initialize", "nope"]) {
    r = await post(req(m, m === "resources/subscribe" ? { uri: "test://static-text" } : {}));
    assert.equal(r.status, 404, m);
    assert.equal((await r.json()).error.code, -32601, m);
  }
  // A handler's own error stays in band: an unknown tool is 200 with -32602.
  r = await post(req("tools/call", { name: "nope", arguments: {} }));
  assert.equal(r.status, 200);
  assert.equal((await r.json()).error.code, -32602);

  // GET and DELETE without a 2025-11-25 session: 405, POST only.
  for (const method of ["GET", "DELETE"]) {
    r = await fetch(url, { method, headers: { accept: "text/event-stream", "mcp-protocol-version": MODERN } });
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.get("allow"), "POST");
  }
  // An Mcp-Session-Id on a 2026-07-28 request is ignored.
  r = await post(req("tools/list"), { "mcp-session-id": "whatever" });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("mcp-session-id"), null);
});

test("HTTP: progress on the request's own SSE stream, without event ids", async () => {
  const r = await post(req("tools/call", { name: "test_tool_with_progress", arguments: {} }, { ...META, progressToken: "p1" }));
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /text\/event-stream/);
  assert.equal(r.headers.get("x-accel-buffering"), "no");
  const text = await r.text();
  assert.doesNotMatch(text, /^id:/m, "no event ids: streams are not resumable");
  const msgs = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  assert.ok(msgs.filter((m) => m.method === "notifications/progress").length >= 2);
  const last = msgs.at(-1);
  assert.equal(last.id, 7);
  assert.equal(last.result.resultType, "complete");
});

test("stdio: a connection that began with 2026-07-28 refuses a request without the envelope", async () => {
  const t = stdioTransport();
  const got = [];
  t.onmessage = (m) => got.push(m);
  await t.start();
  await t.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: META } });
  await t.send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
  await t.send({ jsonrpc: "2.0", id: 3, method: "ping" });
  const deadline = Date.now() + 20000;
  while (got.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await t.close();
  const by = Object.fromEntries(got.map((m) => [m.id, m]));
  assert.equal(by[1].result.resultType, "complete");
  assert.equal(by[2].error.code, -32602);
  assert.equal(by[3].error.code, -32602);
});

// One request over a newline-delimited socket (a new connection): its answer.
async function overSocket(where, message) {
  const sock = net.connect(where);
  let buf = "";
  try {
    return await new Promise((resolve, reject) => {
      sock.on("error", reject);
      sock.on("data", (d) => {
        buf += d.toString();
        for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) {
          const m = JSON.parse(buf.slice(0, i));
          if (m.id === message.id) resolve(m);
        }
      });
      sock.write(JSON.stringify(message) + "\n");
    });
  } finally {
    sock.destroy();
  }
}

// A requestState is bound to its principal; without a token, that is the
// transport and endpoint: a state sealed on one Unix socket opens neither
// on another socket nor over HTTP (nor the other way), and opens again on
// its own endpoint (a new connection, as another daemon would see it).
test("anonymous requestStates open only on the endpoint that sealed them", async () => {
  const dir = tmpdir("parley-principals-");
  const a = path.join(dir, "a.sock"), b = path.join(dir, "b.sock");
  const d = await startDaemon(["--toolsets", "conformance", "--data-dir", path.join(dir, "data"),
    "--listen", `unix:${a},unix:${b},http://127.0.0.1:0/mcp`]);
  const at = `http://127.0.0.1:${/\(port (\d+)\)/.exec(d.log())[1]}/mcp`;
  const meta = { ...META, "io.modelcontextprotocol/clientCapabilities": { elicitation: {} } };
  const ask = (id, extra = {}) => ({ jsonrpc: "2.0", id, method: "tools/call",
    params: { name: "test_input_required_result_request_state", arguments: {}, ...extra, _meta: meta } });
  const answer = (state) => ({ inputResponses: { confirm: { action: "accept", content: { ok: true } } }, requestState: state });
  const overHttp = async (m) => (await fetch(at, { method: "POST", body: JSON.stringify(m), headers: {
    "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call", "mcp-name": m.params.name } })).json();
  const text = (r) => r.result?.content?.[0]?.text;
  try {
    const onA = (await overSocket(a, ask(1))).result.requestState;
    const onHttp = (await overHttp(ask(2))).result.requestState;
    assert.ok(onA && onHttp);
    for (const [where, send, state] of [["socket b", (m) => overSocket(b, m), onA], ["HTTP", overHttp, onA],
      ["socket a", (m) => overSocket(a, m), onHttp]]) {
      const r = await send(ask(3, answer(state)));
      assert.equal(r.error?.code, -32602, `${where}: ${JSON.stringify(r)}`);
      assert.match(r.error.message, /requestState integrity check failed/);
    }
    assert.equal(text(await overSocket(a, ask(4, answer(onA)))), "state-ok: requestState validated");
    assert.equal(text(await overHttp(ask(5, answer(onHttp)))), "state-ok: requestState validated");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});
