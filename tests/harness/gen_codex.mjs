#!/usr/bin/env node
// gen_codex.mjs: Codex CLI session rollouts as Codex writes them
// (DIR/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, one {timestamp, type,
// payload} record a line; the shape of codex-rs/protocol: RolloutLine,
// RolloutItem, ResponseItem, EventMsg, CompactedItem), for the import of
// agents' past sessions (parleyd import codex DIR).
//
//   node gen_codex.mjs DIR [grow]
//
// Session "ledger" (cwd /home/dev/atlas): session_meta, the context Codex
// injects as a user message, turn_context, the user's words both as a
// response_item message and as the event_msg user_message that repeats
// them, reasoning with a summary and encrypted_content, a function_call
// and its function_call_output (paired by call_id), the assistant's
// answer (and its event_msg agent_message), token counts, one malformed
// line, a compacted item (the continuation), then more turns. Session
// "weather" (cwd /home/dev/weather-app, a day earlier): a custom tool call
// (apply_patch) and its output. A file not named rollout-*.jsonl is
// beside them (not a rollout: not read). With "grow", the "ledger" rollout
// gets four more lines (an incremental import reads only those).
import fs from "node:fs";
import path from "node:path";

const [, , dir, mode] = process.argv;
const T0 = Date.UTC(2026, 1, 3, 9);
const at = (min) => new Date(T0 + min * 60000).toISOString();
export const LEDGER = "5f3a9c1e-7b2d-4e8f-9a01-0c4d2e6b8a11";
export const WEATHER = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
export const SECRET = "gAAAAABo-ENCRYPTED-reasoning-zq7xv";

const rec = (min, type, payload) => JSON.stringify({ timestamp: at(min), type, payload });
const msg = (min, role, text) => rec(min, "response_item", { type: "message", role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }] });
const user = (min, text) => [msg(min, "user", text),
  rec(min, "event_msg", { type: "user_message", message: text, images: [] })];
const agent = (min, text) => [msg(min, "assistant", text),
  rec(min, "event_msg", { type: "agent_message", message: text })];
const meta = (min, id, cwd) => rec(min, "session_meta", { id, timestamp: at(min), cwd,
  originator: "codex_cli_rs", cli_version: "0.46.0", instructions: null, source: "cli",
  model_provider: "openai", git: { commit_hash: "3e1f0c2", branch: "main", repository_url: "git@example.com:dev/atlas.git" } });
const turn = (min, cwd) => rec(min, "turn_context", { cwd, approval_policy: "on-request",
  sandbox_policy: { type: "workspace-write", network_access: false, exclude_tmpdir_env_var: false, exclude_slash_tmp: false },
  model: "gpt-5-codex", effort: "medium", summary: "auto" });
const tokens = (min) => rec(min, "event_msg", { type: "token_count", info: null, rate_limits: null });

const ledgerHead = [
  meta(0, LEDGER, "/home/dev/atlas"),
  msg(0, "user", "<environment_context>\n  <cwd>/home/dev/atlas</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"),
  turn(1, "/home/dev/atlas"),
  ...user(1, "Migrate the billing tables to the ledger schema."),
  rec(2, "response_item", { type: "reasoning", summary: [{ type: "summary_text",
    text: "**Planning the migration**\n\nInspect the existing migrations before writing one." }],
    content: null, encrypted_content: SECRET }),
  rec(2, "event_msg", { type: "agent_reasoning", text: "**Planning the migration**\n\nInspect the existing migrations before writing one." }),
  rec(3, "response_item", { type: "function_call", name: "shell",
    arguments: JSON.stringify({ command: ["bash", "-lc", "ls migrations"], workdir: "/home/dev/atlas" }), call_id: "call_ls_01" }),
  rec(3, "response_item", { type: "function_call_output", call_id: "call_ls_01",
    output: JSON.stringify({ output: "001_init.sql\n002_billing.sql\n", metadata: { exit_code: 0, duration_seconds: 0.1 } }) }),
  ...agent(4, "The ledger migration goes in 003_ledger.sql."),
  tokens(4),
  '{"timestamp": "2026-02-03T09:05:00.000Z", "type": "response_item", "payload": broken',
  rec(6, "compacted", { message: "Summary: the billing tables moved to the ledger schema (003_ledger.sql); next is the reconciliation report.",
    replacement_history: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Migrate the billing tables to the ledger schema." }] }] }),
  rec(6, "event_msg", { type: "context_compacted" }),
  turn(7, "/home/dev/atlas"),
  ...user(7, "Now write the reconciliation report."),
  rec(8, "response_item", { type: "reasoning", summary: [], content: null, encrypted_content: SECRET + "-2" }),
  ...agent(8, "The reconciliation report compares ledger totals nightly."),
];
const ledgerTail = [
  ...user(9, "Add a currency column to the ledger."),
  ...agent(10, "Added a currency column; amounts keep their currency now."),
];
const weather = [
  meta(0, WEATHER, "/home/dev/weather-app"),
  ...user(1, "Show the forecast in Celsius."),
  rec(2, "response_item", { type: "custom_tool_call", status: "completed", call_id: "call_patch_7", name: "apply_patch",
    input: "*** Begin Patch\n*** Update File: src/units.js\n-const unit = 'F';\n+const unit = 'C';\n*** End Patch" }),
  rec(2, "response_item", { type: "custom_tool_call_output", call_id: "call_patch_7", output: "Success. Updated the following files:\nM src/units.js" }),
  ...agent(3, "The forecast shows Celsius now."),
];

const day = (d) => path.join(dir, "2026", "02", d);
const write = (folder, name, lines) => {
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, name), lines.join("\n") + "\n");
};
// weather is a day before ledger: its times too.
const shift = (lines, days) => lines.map((l) => l.replace(/"(2026-02-03)T/g, () => `"2026-02-0${3 - days}T`));
write(day("02"), `rollout-2026-02-02T09-00-00-${WEATHER}.jsonl`, shift(weather, 1));
write(day("03"), `rollout-2026-02-03T09-00-00-${LEDGER}.jsonl`, mode === "grow" ? [...ledgerHead, ...ledgerTail] : ledgerHead);
write(day("03"), "notes.jsonl", [rec(0, "response_item", { type: "message", role: "user", content: [{ type: "input_text", text: "not a rollout" }] })]);
