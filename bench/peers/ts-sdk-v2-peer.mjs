#!/usr/bin/env node
// ts-sdk-v2-peer.mjs: the peer for MCP 2026-07-28 — the same tools as
// ts-sdk-peer.mjs (channelsList, messagesList, messagesSearch and
// messagesContext, each running parley's SQL function parley_tg_<tool> with
// the pg client, and the trivial test_simple_text with the same fixed text),
// served with the official MCP TypeScript SDK v2 (@modelcontextprotocol/server)
// the way its serving guide says: one McpServer factory, served
//   - over a Unix socket and TCP (newline-delimited JSON-RPC) by serveStdio
//     with a StdioServerTransport on each connection (one instance per
//     connection, its era chosen by the connection's first message), and
//   - over Streamable HTTP by createMcpHandler (a fresh instance and a
//     per-request transport for every POST: the revision is stateless),
//     mounted on node:http with toNodeHandler (@modelcontextprotocol/node).
// Both serve 2025-11-25 as well (the SDK's defaults: a stateless legacy
// fallback over HTTP, a pinned legacy instance on a stream); the benchmark
// drives them with 2026-07-28 only.
//
//   node ts-sdk-v2-peer.mjs --db CONNINFO_URL [--pool N] [--unix PATH] [--tcp PORT] [--http PORT]
//
// Prints {"ready": true} on stdout once listening.
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import pg from "pg";
import { z } from "zod";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio } from "@modelcontextprotocol/server/stdio";
import { toNodeHandler } from "@modelcontextprotocol/node";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, v, i, a) => (v.startsWith("--") ? [...acc, [v.slice(2), a[i + 1]]] : acc), []),
);
const pool = new pg.Pool({ connectionString: args.db, max: Number(args.pool ?? 4) });

const channel = z.union([z.number().int(), z.string()]);
const tools = {
  channelsList: z.object({ limit: z.number().int().min(1).optional(), includeInactive: z.boolean().optional() }),
  messagesList: z.object({ channelId: channel.optional(), topicId: z.number().int().optional(), fromDate: z.string().optional(), toDate: z.string().optional(), limit: z.number().int().min(1).optional() }),
  messagesSearch: z.object({ query: z.string().optional(), channelIds: z.array(channel).optional(), limit: z.number().int().min(1).optional() }),
  messagesContext: z.object({ channelId: channel, messageId: z.number().int(), before: z.number().int().min(0).optional(), after: z.number().int().min(0).optional() }),
};

// The SQL function that answers a tool, as parley's table names it.
const sqlFunction = (tool) => "parley_tg_" + tool.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());

// The factory both serving entries call: once per connection (streams) and
// once per request (HTTP).
function newServer() {
  const server = new McpServer({ name: "ts-sdk-v2-peer", version: "1.0.0" });
  for (const [name, schema] of Object.entries(tools)) {
    server.registerTool(name, { description: `${name} over the parley archive`, inputSchema: schema, annotations: { readOnlyHint: true } },
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

// Sockets: serveStdio over a stdio-style transport on each connection.
function serveStream(listener) {
  listener.on("connection", (sock) => {
    sock.on("error", () => {});
    const handle = serveStdio(newServer, { transport: new StdioServerTransport(sock, sock), onerror: () => {} });
    sock.on("close", () => handle.close().catch(() => {}));
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
  const handler = toNodeHandler(createMcpHandler(newServer));
  const srv = http.createServer((req, res) => {
    if (new URL(req.url, "http://x").pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    handler(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  srv.keepAliveTimeout = 60000;
  await new Promise((r) => srv.listen(Number(args.http), "127.0.0.1", r));
}
console.log(JSON.stringify({ ready: true }));
process.on("SIGTERM", () => process.exit(0));
