#!/usr/bin/env node
// measure.mjs: what each tool costs an agent's context: starts parleyd
// serve over stdio with the arguments given (a store, a selection) and
// prints, per tool of its tools/list, the characters of its JSON entry
// and of its description, inputSchema and outputSchema, then the count
// and the total (the JSON of the tools array, as the default is held to:
// docs/tools.md). Uses the official MCP SDK client of tests/.
//
//   PARLEYD=build/parleyd node tools/measure.mjs --db URL [--toolsets telegram] ...
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, "..", "tests", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(path.join(sdk, "index.js"));
const { StdioClientTransport } = await import(path.join(sdk, "stdio.js"));

const parleyd = process.env.PARLEYD || path.join(here, "..", "build", "parleyd");
const transport = new StdioClientTransport({
  command: parleyd,
  args: ["serve", "--stdio", ...process.argv.slice(2)],
  stderr: "inherit",
});
const client = new Client({ name: "measure", version: "1.0.0" });
await client.connect(transport);
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
await client.close();

const len = (v) => (v === undefined ? 0 : JSON.stringify(v).length);
const rows = tools.map((t) => [t.name, len(t), (t.description ?? "").length, len(t.inputSchema), len(t.outputSchema)]);
rows.sort((a, b) => b[1] - a[1]);
const w = Math.max(4, ...rows.map((r) => r[0].length));
console.log(`${"tool".padEnd(w)}  ${"entry".padStart(6)}  ${"descr".padStart(6)}  ${"input".padStart(6)}  ${"output".padStart(6)}`);
for (const r of rows) console.log(`${r[0].padEnd(w)}  ${r.slice(1).map((n) => String(n).padStart(6)).join("  ")}`);
console.log(`${tools.length} tools, ${JSON.stringify(tools).length} characters of tools/list (the tools array)`);
