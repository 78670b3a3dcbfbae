#!/usr/bin/env node
// sync_bench.mjs: live-sync figures against the Bot API emulator. Run by
// bench/sync.sh (which starts the cluster, the emulator and parleyd).
//   node sync_bench.mjs API_URL PGHOST DAEMON_PID [UPDATES] [SAMPLES]
// Prints key=value lines: ingest rate (updates/s from the emulator into
// the archive) and update-to-stored latency (p50/p99 over SAMPLES single
// updates), and parleyd's peak RSS.
import { spawn } from "node:child_process";
import fs from "node:fs";

const [api, pgHost, pid, nArg, sArg] = process.argv.slice(2);
const N = Number(nArg ?? 20000);
const SAMPLES = Number(sArg ?? 200);

// One psql session, queried line by line (a round trip of about a millisecond).
const psql = spawn("psql", ["-X", "-q", "-At", "-h", pgHost, "-U", "parley", "-d", "postgres"], { stdio: ["pipe", "pipe", "inherit"] });
let pending = [];
let buf = "";
psql.stdout.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    pending.shift()?.(line);
  }
});
const query = (sql) => new Promise((r) => { pending.push(r); psql.stdin.write(sql + "\n"); });
const control = async (p, body) => (await fetch(`${api}${p}`, body ? { method: "POST", body: JSON.stringify(body) } : {})).json();

async function waitCount(n) {
  for (;;) {
    if (Number(await query("SELECT count(*) FROM messages WHERE NOT outgoing;")) >= n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

const before = Number(await query("SELECT count(*) FROM messages;"));
let t0 = process.hrtime.bigint();
await control("/control/generate", { n: N, chats: 50, editEvery: 0 });
await waitCount(before + N);
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(`updates=${N} ingest_seconds=${secs.toFixed(2)} ingest_updates_per_s=${Math.round(N / secs)}`);

const lat = [];
let count = before + N;
for (let i = 0; i < SAMPLES; i++) {
  t0 = process.hrtime.bigint();
  await control("/control/generate", { n: 1, chats: 50, editEvery: 0, seed: i + 7 });
  count += 1;
  for (;;) {
    if (Number(await query("SELECT count(*) FROM messages WHERE NOT outgoing;")) >= count) break;
  }
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * (lat.length - 1)))].toFixed(2);
console.log(`latency_samples=${SAMPLES} update_to_stored_p50_ms=${pct(0.5)} p99_ms=${pct(0.99)} max_ms=${lat[lat.length - 1].toFixed(2)}`);
const hwm = /VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1];
console.log(`parleyd_peak_rss_kib=${hwm}`);
psql.stdin.end();
