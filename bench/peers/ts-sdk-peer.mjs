#!/usr/bin/env node
// ts-sdk-peer.mjs: what a user would otherwise build — the four telegram
// tools the benchmark drives (channelsList, messagesList, messagesSearch,
// messagesContext), and the trivial test_simple_text of parley's
// conformance toolset (the same fixed text, no database: the transport-bound
// mix), served with the official MCP TypeScript SDK (McpServer)
// and the pg client, over a Unix socket and TCP (newline-delimited JSON-RPC,
// the SDK's stdio transport on each connection) and Streamable HTTP (the
// SDK's StreamableHTTPServerTransport, one per session). Each tool runs the
// same SQL as parley (the tool's function, parley_tg_<tool>, on the same
// database), so the difference measured is the server, not the query.
//
//   node ts-sdk-peer.mjs --db CONNINFO_URL [--pool N] [--unix PATH] [--tcp PORT] [--http PORT]
//
// Prints {"ready": true} on stdout once listening.
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, v, i, a) => (v.startsWith("--") ? [...acc, [v.slice(2), a[i + 1]]] : acc), []),
);
const pool = new pg.Pool({ connectionString: args.db, max: Number(args.pool ?? 4) });

const channel = z.union([z.number().int(), z.string()]);
const tools = {
  channelsList: { limit: z.number().int().min(1).optional(), includeInactive: z.boolean().optional() },
  messagesList: { channelId: channel.optional(), topicId: z.number().int().optional(), fromDate: z.string().optional(), toDate: z.string().optional(), limit: z.number().int().min(1).optional() },
  messagesSearch: { query: z.string().optional(), channelIds: z.array(channel).optional(), limit: z.number().int().min(1).optional() },
  messagesContext: { channelId: channel, messageId: z.number().int(), before: z.number().int().min(0).optional(), after: z.number().int().min(0).optional() },
};

// The SQL function that answers a tool, as parley's table names it.
const sqlFunction = (tool) => "parley_tg_" + tool.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());

function newServer() {
  const server = new McpServer({ name: "ts-sdk-peer", version: "1.0.0" });
  for (const [name, shape] of Object.entries(tools)) {
    server.registerTool(name, { description: `${name} over the parley archive`, inputSchema: shape, annotations: { readOnlyHint: true } },
      async (a) => {
        try {
          const r = await pool.query(`SELECT ${sqlFunction(name)}($1::jsonb, '{}'::jsonb)::text AS j`, [JSON.stringify(a)]);
          const text = r.rows[0].j;
          return { content: [{ type: "text", text }], structuredContent: JSON.parse(text) };
        } catch (e) {
          return { content: [{ type: "text", text: String(e.message) }], isError: true };
        }
      });
  }
  server.registerTool("test_simple_text", { description: "Returns a simple text response.", annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: "text", text: "This is a simple text response for testing." }] }));
  return server;
}

// Sockets: one server and one stdio-style transport per connection.
function serveStream(listener) {
  listener.on("connection", (sock) => {
    const server = newServer();
    const t = new StdioServerTransport(sock, sock);
    sock.on("close", () => server.close().catch(() => {}));
    sock.on("error", () => {});
    server.connect(t).catch(() => sock.destroy());
  });
}

if (args.unix) {
  fs.rmSync(args.unix, { force: true });
  const l = net.createServer();
  serveStream(l);
  await new Promise((r) => l.listen(args.unix, r));
}
if (args.tcp) {
  const l = net.createServer({ noDelay: true });
  serveStream(l);
  await new Promise((r) => l.listen(Number(args.tcp), "127.0.0.1", r));
}
if (args.http) {
  const sessions = new Map();
  const readBody = (req) => new Promise((res, rej) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => res(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined));
    req.on("error", rej);
  });
  const srv = http.createServer(async (req, res) => {
    try {
      const id = req.headers["mcp-session-id"];
      const body = req.method === "POST" ? await readBody(req) : undefined;
      let t = id ? sessions.get(id) : undefined;
      if (!t && req.method === "POST" && !id && isInitializeRequest(body)) {
        t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: true,
          onsessioninitialized: (sid) => sessions.set(sid, t),
        });
        t.onclose = () => t.sessionId && sessions.delete(t.sessionId);
        await newServer().connect(t);
      }
      if (!t) {
        res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: id ? "unknown session" : "no session" }, id: null }));
        return;
      }
      await t.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: String(e.message) }, id: null }));
    }
  });
  srv.keepAliveTimeout = 60000;
  await new Promise((r) => srv.listen(Number(args.http), "127.0.0.1", r));
}
console.log(JSON.stringify({ ready: true }));
process.on("SIGTERM", () => process.exit(0));
