// MCP over stdio with the official SDK client: lifecycle, pagination,
// calls, argument validation, progress, logging, cancellation, elicitation
// and sampling, resources and prompts, and exit 0 when stdin ends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import fs from "node:fs";
import path from "node:path";
import { PARLEYD, baseArgs, stdioClient, textOf, tmpdir } from "./lib.mjs";

const CONF = ["--toolsets", "conformance"];

test("initialize negotiates 2025-11-25 and declares capabilities", async () => {
  const { client } = await stdioClient(CONF);
  try {
    assert.equal(client.getServerVersion().name, "parley");
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools && caps.logging && caps.resources && caps.prompts);
    assert.equal(caps.resources.subscribe, true);
    assert.ok(client.getInstructions().length > 20);
  } finally {
    await client.close();
  }
});

test("tools/list pages with cursors; a bad cursor is -32602", async () => {
  const { client } = await stdioClient([...CONF, "--list-page-size", "5"]);
  try {
    const names = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      assert.ok(page.tools.length <= 5);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    assert.ok(pages >= 3, `expected several pages, got ${pages}`);
    assert.equal(new Set(names).size, names.length, "no tool listed twice");
    assert.ok(names.includes("test_simple_text") && names.includes("json_schema_2020_12_tool"));
    for (const n of names) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/);
    await assert.rejects(client.listTools({ cursor: "not-a-cursor" }), (e) => {
      assert.ok(e instanceof McpError);
      assert.equal(e.code, -32602);
      return true;
    });
  } finally {
    await client.close();
  }
});

test("tools/call: results, schema validation as isError, unknown tool", async () => {
  const { client } = await stdioClient(CONF);
  try {
    const r = await client.callTool({ name: "test_simple_text", arguments: {} });
    assert.equal(textOf(r), "This is a simple text response for testing.");
    const img = await client.callTool({ name: "test_image_content", arguments: {} });
    assert.equal(img.content[0].type, "image");
    assert.equal(img.content[0].mimeType, "image/png");
    const err = await client.callTool({ name: "test_error_handling", arguments: {} });
    assert.equal(err.isError, true);
    // Missing required argument: a result with isError naming the field.
    const bad = await client.callTool({ name: "test_sampling", arguments: {} });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /prompt/);
    // Wrong type: names the field and the expected type.
    const bad2 = await client.callTool({ name: "test_sampling", arguments: { prompt: 42 } });
    assert.equal(bad2.isError, true);
    assert.match(textOf(bad2), /prompt: expected a string/);
    // additionalProperties: false is enforced.
    const bad3 = await client.callTool({
      name: "json_schema_2020_12_tool",
      arguments: { name: "x", extra: 1 },
    });
    assert.equal(bad3.isError, true);
    assert.match(textOf(bad3), /extra/);
    await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (e) => {
      assert.equal(e.code, -32602);
      assert.match(e.message, /no_such_tool/);
      return true;
    });
    // The session survived every bad call.
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
});

test("progress notifications are monotonic and arrive before the result", async () => {
  const { client } = await stdioClient(CONF);
  try {
    const seen = [];
    const r = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p.progress),
    });
    assert.deepEqual(seen, [0, 50, 100]);
    assert.ok(textOf(r).length > 0);
  } finally {
    await client.close();
  }
});

test("logging/setLevel filters notifications/message", async () => {
  const { client } = await stdioClient(CONF);
  try {
    const msgs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => msgs.push(n.params));
    assert.deepEqual(await client.setLoggingLevel("debug"), {});
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    assert.equal(msgs.length, 3);
    assert.equal(msgs[0].level, "info");
    assert.equal(msgs[0].data, "Tool execution started");
    msgs.length = 0;
    await client.setLoggingLevel("error");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    assert.equal(msgs.length, 0);
    await assert.rejects(client.setLoggingLevel("loud"), (e) => e.code === -32602);
  } finally {
    await client.close();
  }
});

test("elicitation: accept, decline, cancel, and a client without the capability", async () => {
  const { client } = await stdioClient(CONF, { elicitation: {} });
  let answer;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    assert.equal(req.params.requestedSchema.type, "object");
    return answer;
  });
  try {
    answer = { action: "accept", content: { username: "ann", email: "ann@example.com" } };
    let r = await client.callTool({ name: "test_elicitation", arguments: { message: "Who?" } });
    assert.match(textOf(r), /action=accept, content=\{"username":"ann"/);
    answer = { action: "decline" };
    r = await client.callTool({ name: "test_elicitation", arguments: { message: "Who?" } });
    assert.match(textOf(r), /action=decline/);
    answer = { action: "cancel" };
    r = await client.callTool({ name: "test_elicitation", arguments: { message: "Who?" } });
    assert.match(textOf(r), /action=cancel/);
  } finally {
    await client.close();
  }
  const plain = await stdioClient(CONF, {});
  try {
    const r = await plain.client.callTool({ name: "test_elicitation", arguments: { message: "x" } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /does not support elicitation/);
  } finally {
    await plain.client.close();
  }
});

test("cancelling a call waiting on the client stops it and sends no response", async () => {
  const { client } = await stdioClient(CONF, { elicitation: {} });
  let serverCancelled;
  const cancelledSeen = new Promise((r) => (serverCancelled = r));
  let elicited;
  const elicitSeen = new Promise((r) => (elicited = r));
  client.setRequestHandler(ElicitRequestSchema, (req, extra) => {
    elicited();
    // Never answers; the server must withdraw the request when the call is
    // cancelled.
    return new Promise((resolve) => {
      extra.signal.addEventListener("abort", () => {
        serverCancelled();
        resolve({ action: "cancel" });
      });
    });
  });
  try {
    const ac = new AbortController();
    const call = client.callTool({ name: "test_elicitation", arguments: { message: "m" } }, undefined, {
      signal: ac.signal,
    });
    await elicitSeen;
    ac.abort("changed my mind");
    await assert.rejects(call);
    await cancelledSeen;
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
});

test("a client that never answers an elicitation gets a timeout result", async () => {
  const { client } = await stdioClient([...CONF, "--request-timeout-ms", "300"], { elicitation: {} });
  client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {}));
  try {
    const r = await client.callTool({ name: "test_elicitation", arguments: { message: "m" } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /timed out/);
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
});

test("sampling goes to the client and back", async () => {
  const { client } = await stdioClient(CONF, { sampling: {} });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    assert.equal(req.params.messages[0].content.text, "Say hi");
    return { role: "assistant", content: { type: "text", text: "hi there" }, model: "m" };
  });
  try {
    const r = await client.callTool({ name: "test_sampling", arguments: { prompt: "Say hi" } });
    assert.equal(textOf(r), "LLM response: hi there");
  } finally {
    await client.close();
  }
});

test("resources and prompts", async () => {
  const { client } = await stdioClient(CONF);
  try {
    const res = await client.listResources();
    assert.ok(res.resources.some((r) => r.uri === "test://static-text"));
    const tpl = await client.listResourceTemplates();
    assert.equal(tpl.resourceTemplates[0].uriTemplate, "test://template/{id}/data");
    const read = await client.readResource({ uri: "test://template/123/data" });
    assert.equal(JSON.parse(read.contents[0].text).id, "123");
    await assert.rejects(client.readResource({ uri: "test://nope" }), (e) => e.code === -32002);
    assert.deepEqual(await client.subscribeResource({ uri: "test://watched-resource" }), {});
    assert.deepEqual(await client.unsubscribeResource({ uri: "test://watched-resource" }), {});
    const prompts = await client.listPrompts();
    assert.equal(prompts.prompts.length, 5);
    const p = await client.getPrompt({
      name: "test_prompt_with_arguments",
      arguments: { arg1: "A1", arg2: "B2" },
    });
    assert.match(p.messages[0].content.text, /arg1='A1', arg2='B2'/);
    await assert.rejects(
      client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "A1" } }),
      (e) => e.code === -32602 && /arg2/.test(e.message),
    );
    const comp = await client.complete({
      ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
      argument: { name: "arg1", value: "t" },
    });
    assert.ok(Array.isArray(comp.completion.values));
  } finally {
    await client.close();
  }
});

test("stdio: stdout carries only MCP, and stdin EOF exits 0", async () => {
  const child = spawn(PARLEYD, baseArgs(["--stdio", ...CONF]), { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
  // A final message without a newline is still answered at EOF.
  child.stdin.end('{"jsonrpc":"2.0","id":2,"method":"ping"}');
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
  const lines = out.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines, [
    { jsonrpc: "2.0", id: 1, result: {} },
    { jsonrpc: "2.0", id: 2, result: {} },
  ]);
});

test("stdio: stdin and stdout may be regular files", async () => {
  const dir = tmpdir();
  const input = path.join(dir, "in.jsonl");
  const output = path.join(dir, "out.jsonl");
  fs.writeFileSync(
    input,
    [
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"file","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":9}}}',
      '{"jsonrpc":"2.0","id":3,"method":"tools/list"}',
    ].join("\n") + "\n",
  );
  const inFd = fs.openSync(input, "r");
  const outFd = fs.openSync(output, "w");
  const child = spawn(PARLEYD, baseArgs(["--stdio", ...CONF]), { stdio: [inFd, outFd, "pipe"] });
  const [code] = await once(child, "exit");
  fs.closeSync(inFd);
  fs.closeSync(outFd);
  assert.equal(code, 0);
  const lines = fs.readFileSync(output, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines[0].id, 1);
  // The call still running at EOF is answered before the exit.
  const progress = lines.filter((l) => l.method === "notifications/progress");
  assert.deepEqual(progress.map((p) => p.params.progress), [0, 50, 100]);
  assert.ok(lines.some((l) => l.id === 2 && l.result));
  assert.equal(lines.find((l) => l.id === 3).result.tools.length, 28);
});

test("a database that does not exist fails start-up at once with the server's message", () => {
  const db = process.env.PARLEY_TEST_PG.replace(/dbname=\S+/, "dbname=parley_no_such_db");
  // The query and connect timeouts are long: only an immediate refusal ends
  // this within spawnSync's own limit.
  const r = spawnSync(PARLEYD, ["serve", "--stdio", "--db", db, "--db-query-timeout-ms", "120000", "--data-dir", tmpdir()], {
    input: "",
    encoding: "utf8",
    timeout: 60000,
  });
  assert.notEqual(r.status, 0, r.stderr);
  assert.equal(r.signal, null, "killed by the timeout: the refusal was retried");
  assert.match(r.stderr, /database "parley_no_such_db" does not exist/);
});
