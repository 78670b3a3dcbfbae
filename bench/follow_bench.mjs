// follow_bench.mjs PROBES RATE: the measurement of bench/follow.sh (see
// there). Needs PARLEYD, PARLEY_BENCH_DB and PARLEY_BENCH_WORK.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, "..", "tests", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(path.join(sdk, "index.js"));
const { StdioClientTransport } = await import(path.join(sdk, "stdio.js"));

const [probes, rate] = process.argv.slice(2).map(Number);
const { PARLEYD, PARLEY_BENCH_DB: db, PARLEY_BENCH_WORK: work } = process.env;
const projects = path.join(work, "projects");
const proj = path.join(projects, "-home-dev-bench");
fs.mkdirSync(proj, { recursive: true });
let seq = 0;
const line = (sid, text) => JSON.stringify({
  type: "user", sessionId: sid, uuid: `u-${sid}-${++seq}`, cwd: "/home/dev/bench",
  timestamp: new Date(Date.UTC(2026, 0, 1) + seq).toISOString(), message: { role: "user", content: text },
}) + "\n";
const word = (i) => `probe${i.toString(36)}zq${(i * 7919).toString(36)}`;
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The floor first, alone: one line appended, then the import of the folder.
const floorDir = path.join(work, "floor");
fs.mkdirSync(path.join(floorDir, "p"), { recursive: true });
const floorFile = path.join(floorDir, "p", "f.jsonl");
fs.writeFileSync(floorFile, line("floor", "warm up"));
spawnSync(PARLEYD, ["import", "claude-code", floorDir, "--db", db, "--log-level", "warn"]);
const floor = [];
for (let i = 0; i < 20; i++) {
  fs.appendFileSync(floorFile, line("floor", `floor line ${i}`));
  const t0 = process.hrtime.bigint();
  spawnSync(PARLEYD, ["import", "claude-code", floorDir, "--db", db, "--log-level", "warn"]);
  floor.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
floor.sort((a, b) => a - b);
const t0 = process.hrtime.bigint();
spawnSync(PARLEYD, ["version"]);
const start = Number(process.hrtime.bigint() - t0) / 1e6;

const transport = new StdioClientTransport({
  command: PARLEYD,
  args: ["serve", "--stdio", "--db", db, "--claude-code-dir", projects, "--toolsets", "memory", "--log-level", "warn"],
  stderr: "inherit",
});
const client = new Client({ name: "follow-bench", version: "1" });
await client.connect(transport);
const probeFile = path.join(proj, "probe.jsonl");
const busyFile = path.join(proj, "busy.jsonl");
fs.writeFileSync(probeFile, line("probe", "start"));
fs.writeFileSync(busyFile, line("busy", "start"));
await sleep(1500);
let writing = true, written = 0;
const writer = (async () => {
  const every = 1000 / rate, began = Date.now();
  while (writing) {
    fs.appendFileSync(busyFile, line("busy", `another agent's line ${written} about the deployment`));
    written++;
    const due = began + written * every;
    await sleep(Math.max(0, due - Date.now()));
  }
})();
const lat = [];
for (let i = 0; i < probes; i++) {
  const w = word(i);
  fs.appendFileSync(probeFile, line("probe", `the probe ${w} is here`));
  const t = process.hrtime.bigint();
  for (;;) {
    const r = await client.callTool({ name: "search_messages", arguments: { query: w, limit: 1 } });
    if (r.structuredContent?.messages?.length) break;
    if (Number(process.hrtime.bigint() - t) / 1e6 > 30000) throw new Error(`probe ${i} not found in 30 s`);
    await sleep(5);
  }
  lat.push(Number(process.hrtime.bigint() - t) / 1e6);
  await sleep(300);
}
writing = false;
await writer;
await client.close();
lat.sort((a, b) => a - b);
const f = (x) => x.toFixed(1);
console.log(`probes=${probes} other_writer_lines_per_s=${rate} other_writer_lines=${written}`);
console.log(`append_to_searchable_ms_p50=${f(pct(lat, 50))} p90=${f(pct(lat, 90))} p99=${f(pct(lat, 99))} max=${f(lat[lat.length - 1])}`);
console.log(`debounce_ms=100 share_of_p50=${f((100 / pct(lat, 50)) * 100)}%`);
console.log(`floor_import_one_line_ms_p50=${f(pct(floor, 50))} p90=${f(pct(floor, 90))} (process start ${f(start)} ms of it)`);
console.log(`follower_vs_floor_p50=${(pct(lat, 50) / Math.max(1, pct(floor, 50) - start)).toFixed(2)}`);
