#!/usr/bin/env node
// demo.mjs: the part of tools/demo that talks to parleyd once it serves.
// Through the official MCP TypeScript SDK (tests/node_modules) it starts a
// second parleyd on stdio over the same store (every toolset), imports the
// demo archive (tools/demo_archive.mjs: a Telegram export, ChatWise chats,
// agent transcripts) when the store holds no messages, then prints the
// client configuration snippets and a few example calls, each with its
// answer under it (recall across the three sources among them).
//
//   node tools/demo.mjs PARLEYD URL [parleyd options...]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const [parleyd, url, ...opts] = process.argv.slice(2);
const req = createRequire(path.join(root, "tests", "package.json"));
const sdk = async (p) => import(pathToFileURL(req.resolve(`@modelcontextprotocol/sdk/${p}`)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

// Options that choose the store go to every parleyd; the others (listen,
// tokens, TLS) only to the serving one.
const storeOpts = [];
for (let i = 0; i < opts.length; i++) {
  const m = /^--(data-dir|db|config|pg-bindir|pg-user)(=.*)?$/.exec(opts[i]);
  if (!m) continue;
  storeOpts.push(opts[i]);
  if (!m[2] && i + 1 < opts.length) storeOpts.push(opts[++i]);
}

async function connect() {
  const client = new Client({ name: "parley-demo", version: "1" });
  await client.connect(new StdioClientTransport({
    command: parleyd, args: ["serve", "--stdio", "--log-level", "warn", "--toolsets", "all", ...storeOpts],
    stderr: "inherit",
  }));
  return client;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}

let client = await connect();
const status = await call(client, "serverStatus", {});
if (!status.messages) {
  await client.close();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-demo-"));
  try {
    execFileSync(process.execPath, [path.join(root, "tools", "demo_archive.mjs"), dir], { stdio: "inherit" });
    for (const [kind, what] of [["telegram-export", "result.json"], ["chatwise", "chatwise/app.db"], ["claude-code", "agents"]])
      execFileSync(parleyd, ["import", kind, path.join(dir, what), "--log-level", "warn", ...storeOpts], { stdio: "inherit" });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log("demo archive imported");
  client = await connect();
}

const chats = await call(client, "channelsList", { limit: 20 });
const search = await call(client, "messagesSearch", { query: "deploy", limit: 3 });
const cjk = await call(client, "messagesSearch", { query: "検索", limit: 2 });
const first = search.messages[0];
const contextArgs = { channelId: first?.channelId, messageId: first?.messageId, before: 1, after: 1 };
const context = await call(client, "messagesContext", contextArgs);
const recallArgs = { query: "Lisbon offsite", limit: 5 };
const recall = await call(client, "recall", recallArgs);
const opened = recall.hits.find((h) => h.source === "chatwise")?.next;
const openedAnswer = opened ? await call(client, opened.tool, opened.arguments) : null;
await client.close();
const line = (m) => `    ${m.channelId}/${m.messageId} ${m.date.slice(0, 16)}: ${m.snippet ?? m.text}`;
const ctxLines = [...context.before, context.target, ...context.after].map(
  (m) => `    ${m.messageId} ${m.senderName ?? ""}: ${typeof m.text === "string" ? m.text : JSON.stringify(m.text)}`);
const cwLines = openedAnswer?.messages?.map((m) => `    ${m.role}: ${m.content}`) ?? [];

const desktop = {
  mcpServers: { parley: { command: path.resolve(parleyd), args: ["serve", "--stdio", ...storeOpts] } },
};
console.log(`
parley serves ${chats.channels.length} chats at ${url}

Claude Desktop (claude_desktop_config.json), over stdio:
${JSON.stringify(desktop, null, 2)}

Any Streamable HTTP client: ${url}
  (the default selection: recall, the one search, and the tools recall cannot
  replace; ${url}/telegram serves the telegram toolset whole, ${url}/all every
  toolset: docs/tools.md)

MCP Inspector (Node.js 22.19 or later; tests/node_modules/.bin has one and the Inspector):
  npx @modelcontextprotocol/inspector                  (then connect to ${url})
  npx @modelcontextprotocol/inspector --cli ${url} --transport http --method tools/list
  PATH=${path.join(root, "tests", "node_modules", ".bin")}:$PATH mcp-inspector --cli ${url} --transport http --method tools/list

Your agents' own sessions, followed as they are written (add to parleyd's arguments):
  --claude-code-dir ~/.claude/projects --codex-dir ~/.codex/sessions
  and for a new session's context: parleyd bootstrap --project DIR (or --hook)

A few calls (tools/call name and arguments; the telegram ones at ${url}/telegram):
  channelsList {"limit": 20}
${chats.channels.map((c) => `    ${String(c.channelId).padEnd(15)} ${c.type.padEnd(11)} ${c.title}`).join("\n")}
  messagesSearch {"query": "deploy", "limit": 3}          ${search.total}${search.totalCapped ? "+" : ""} hits
${search.messages.map(line).join("\n")}
  messagesSearch {"query": "検索", "limit": 2}
${cjk.messages.map(line).join("\n")}
  messagesContext ${JSON.stringify(contextArgs)}
${ctxLines.join("\n")}
  recall ${JSON.stringify(recallArgs)}          one search over every source
${recall.hits.map((h) => `    [${h.source}] ${h.title}, ${h.date}: ${h.snippet}`).join("\n")}
${opened ? `  ${opened.tool} ${JSON.stringify(opened.arguments)}          the ChatWise hit, opened where it lives
${cwLines.join("\n")}
` : ""}
parleyd keeps serving; Ctrl-C stops it.
`);
