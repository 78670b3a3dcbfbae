#!/usr/bin/env node
// sync_bench.mjs: live-sync figures against the Bot API emulator. Run by
// bench/sync.sh (which starts the cluster, the emulator and parleyd).
//   node sync_bench.mjs API_URL PGHOST DAEMON_PID [UPDATES] [SAMPLES]
// Prints key=value lines: ingest rate (updates/s from the emulator into
// the archive), update-to-stored latency (p50/p99 over SAMPLES single
// updates), media download throughput (MEDIA_FILES new files of MEDIA_MB
// each, from the ingest of their messages until every file is in the
// store) beside `curl --parallel` fetching the same files with the same
// concurrency (4), and parleyd's peak RSS before and after the downloads.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [api, pgHost, pid, nArg, sArg, mfArg, mmArg] = process.argv.slice(2);
const MEDIA_FILES = Number(mfArg ?? 40);
const MEDIA_MB = Number(mmArg ?? 8);
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

// Stored: the offset parleyd commits with each batch (one row, read by
// key; counting messages would load the database the benchmark measures),
// and, where batches are staged before they are applied (a parleyd with
// bot_update_batches), no staged batch that may hold the update (a table of
// a few rows). pauseMs between probes (0: back to back, for latency).
const staging = (await query("SELECT to_regclass('bot_update_batches') IS NOT NULL;")) === "t";
async function waitStored(lastUpdateId, pauseMs) {
  const id = Number(lastUpdateId);
  const sql = staging
    ? `SELECT coalesce(max((cursor ->> 'offset')::bigint), 0) > ${id} AND NOT EXISTS (SELECT 1 FROM bot_update_batches WHERE first_update_id <= ${id}) FROM sync_state WHERE stream = 'updates';`
    : `SELECT coalesce(max((cursor ->> 'offset')::bigint), 0) > ${id} FROM sync_state WHERE stream = 'updates';`;
  for (;;) {
    if ((await query(sql)) === "t") return;
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
}

// CPU time (clock ticks, user + system) of a process and its children (its
// own, its reaped children's, its live children's), as bench/floor_twin.sh's
// floor_twin_cpu_ticks: the cluster's (its postmaster) and parleyd's.
function cpuTicks(p) {
  let total = 0;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    let st;
    try {
      st = fs.readFileSync(`/proc/${d}/stat`, "utf8");
    } catch {
      continue;
    }
    const f = st.slice(st.lastIndexOf(") ") + 2).split(" ");
    if (d === String(p)) total += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    else if (f[1] === String(p)) total += Number(f[11]) + Number(f[12]);
  }
  return total;
}
const postmaster = Number(fs.readFileSync(path.join(pgHost, "pg", "data", "postmaster.pid"), "utf8").split("\n")[0]);

const before = Number(await query("SELECT count(*) FROM messages;"));
const cpu0 = [cpuTicks(postmaster), cpuTicks(pid)];
let t0 = process.hrtime.bigint();
const gen = await control("/control/generate", { n: N, chats: 50, editEvery: 0 });
await waitStored(gen.lastUpdateId, 20); // probes of their own would load the database
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const stored = Number(await query("SELECT count(*) FROM messages;")) - before;
if (stored !== N) {
  console.error(`sync_bench: ${stored} of ${N} updates stored`);
  process.exit(1);
}
const dbTicks = cpuTicks(postmaster) - cpu0[0];
const daemonTicks = cpuTicks(pid) - cpu0[1];
const hz = 100; // getconf CLK_TCK on Linux
console.log(`updates=${N} ingest_seconds=${secs.toFixed(2)} ingest_updates_per_s=${Math.round(N / secs)}`);
console.log(`ingest_db_cpu_us_per_update=${Math.round((dbTicks / hz) * 1e6 / N)} ingest_parleyd_cpu_us_per_update=${Math.round((daemonTicks / hz) * 1e6 / N)}`);
// The rows ingest stored, for bench/sync.sh's COPY floor (FLOOR_ROWS_FILE,
// FLOOR_COLS: where, and which columns).
if (process.env.FLOOR_ROWS_FILE) {
  execFileSync("psql", ["-X", "-q", "-h", pgHost, "-U", "parley", "-d", "postgres", "-c",
    `\\copy (SELECT ${process.env.FLOOR_COLS} FROM messages) TO '${process.env.FLOOR_ROWS_FILE}'`]);
}

const lat = [];
for (let i = 0; i < SAMPLES; i++) {
  t0 = process.hrtime.bigint();
  const one = await control("/control/generate", { n: 1, chats: 50, editEvery: 0, seed: i + 7 });
  await waitStored(one.lastUpdateId, 0);
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * (lat.length - 1)))].toFixed(2);
console.log(`latency_samples=${SAMPLES} update_to_stored_p50_ms=${pct(0.5)} p99_ms=${pct(0.99)} max_ms=${lat[lat.length - 1].toFixed(2)}`);
const hwm = () => /VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1];
console.log(`parleyd_peak_rss_kib=${hwm()}`);

// Media: MEDIA_FILES new files, downloaded into the store in the background.
if (MEDIA_FILES === 0) {
  psql.stdin.end();
  process.exit(0);
}
const bytes = MEDIA_FILES * MEDIA_MB * 1024 * 1024;
t0 = process.hrtime.bigint();
await control("/control/generate", { n: MEDIA_FILES, chats: 10, editEvery: 0, photoEvery: 1, photoSize: MEDIA_MB * 1024 * 1024 });
for (;;) {
  const done = Number(await query("SELECT count(*) FROM media WHERE file_unique_id LIKE 'sized%' AND state = 'done';"));
  if (done >= MEDIA_FILES) break;
  await new Promise((r) => setTimeout(r, 20));
}
const msecs = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(`media_files=${MEDIA_FILES} media_mb_each=${MEDIA_MB} parley_seconds=${msecs.toFixed(2)} parley_mb_per_s=${(bytes / 1048576 / msecs).toFixed(1)}`);
console.log(`parleyd_peak_rss_after_media_kib=${hwm()}`);
// The same files with curl --parallel, 4 at a time, to disk.
const ids = (await query("SELECT string_agg(file_id, ' ') FROM media WHERE file_unique_id LIKE 'sized%';")).split(" ");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-curl-"));
const args = ["-sS", "--no-progress-meter", "--fail", "--parallel", "--parallel-max", "4"];
ids.forEach((id, i) => args.push("-o", path.join(dir, `f${i}`), `${api}/file/bot123456:BENCH/photos/${id}`));
t0 = process.hrtime.bigint();
execFileSync("curl", args);
const csecs = Number(process.hrtime.bigint() - t0) / 1e9;
fs.rmSync(dir, { recursive: true, force: true });
console.log(`curl_parallel_seconds=${csecs.toFixed(2)} curl_mb_per_s=${(bytes / 1048576 / csecs).toFixed(1)} parley_vs_curl=${(csecs / msecs).toFixed(2)}`);
psql.stdin.end();
