// MCP 2026-07-28 over HTTP: an error's status follows what it says, not
// which part of the daemon found it. A request that is not a valid
// request (-32700, -32600, or a malformed _meta envelope: -32602) is 400
// whether the transport's checks or the session find it; an unknown method
// is 404 (-32601); a missing client capability 400 (-32021); the errors of
// a method's own handling (an unknown tool, a resource not found, a bad
// cursor: -32602) stay in band with 200, as in the SDK's reference server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startDaemon } from "./lib.mjs";

const MODERN = "2026-07-28";
const META = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} };
let daemon, url;
before(async () => {
  daemon = await startDaemon(["--toolsets", "conformance", "--listen", "http://127.0.0.1:0/mcp"]);
  url = `http://127.0.0.1:${/\(port (\d+)\)/.exec(daemon.log())[1]}/mcp`;
});
after(async () => {
  assert.equal(await daemon.stop(), 0);
});

async function post(m, method = m.method, name = m.params?.name ?? m.params?.uri) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream",
    "mcp-protocol-version": MODERN, "mcp-method": method };
  if (name !== undefined) headers["mcp-name"] = String(name);
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(m) });
  return { status: r.status, body: await r.json() };
}

test("a request that is not a valid request is 400, whichever check finds it", async () => {
  const cases = [
    ["jsonrpc 1.0", { jsonrpc: "1.0", id: 1, method: "tools/list", params: { _meta: META } }, "tools/list"],
    ["no jsonrpc", { id: 1, method: "tools/list", params: { _meta: META } }, "tools/list"],
    ["a method with a NUL", { jsonrpc: "2.0", id: 1, method: "tools/list\u0000x", params: { _meta: META } }, "tools/list"],
    ["params not an object", { jsonrpc: "2.0", id: 1, method: "tools/list", params: 5 }, "tools/list"],
    ["no clientCapabilities", { jsonrpc: "2.0", id: 1, method: "tools/list",
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN } } }, "tools/list"],
  ];
  for (const [what, m, method] of cases) {
    const r = await post(m, method);
    assert.ok([-32600, -32602].includes(r.body.error?.code), `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
  }
});

test("a method's own errors stay in band (200), an unknown method is 404", async () => {
  const inBand = [
    ["an unknown tool", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "nope", arguments: {}, _meta: META } }],
    ["a resource not found", { jsonrpc: "2.0", id: 1, method: "resources/read", params: { uri: "test://nope", _meta: META } }],
    ["a bad cursor", { jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "zz", _meta: META } }],
  ];
  for (const [what, m] of inBand) {
    const r = await post(m);
    assert.equal(r.body.error?.code, -32602, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.status, 200, what);
  }
  const r = await post({ jsonrpc: "2.0", id: 1, method: "nope/nope", params: { _meta: META } });
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, -32601);
});
