#!/usr/bin/env node
// gen_transcripts.mjs: agent session transcripts as Claude Code writes them
// (DIR/PROJECT/SESSION.jsonl, one JSON event per line), for the import of
// agents' past sessions (parleyd import claude-code DIR).
//
//   node gen_transcripts.mjs DIR [grow|long]
//
// Project "parley" has two sessions: the first with thinking, tool use and
// a tool result; the second compacted halfway (a compact_boundary system
// event, then a user message marked isCompactSummary: the continuation),
// with a sidechain message, an unknown event type and one malformed line.
// Project "website" has one short session. With "grow", the second session
// gets three more lines (an incremental import reads only those). With
// "long", project "/home/dev/long" has one long session too: 120 messages
// of about 400 characters, a compaction whose summary is about 3,000
// characters, then 40 more messages (far more than a small token budget).
import fs from "node:fs";
import path from "node:path";

const [, , dir, mode] = process.argv;
const T0 = Date.UTC(2026, 0, 10, 9);
let n = 0;
const uuid = () => `11111111-2222-4333-8444-${String(++n).padStart(12, "0")}`;
const at = (min) => new Date(T0 + min * 60000).toISOString();

function session(sid, cwd, events) {
  let parent = null;
  return events.map((e) => {
    if (typeof e === "string") return e; // a raw (malformed) line
    const u = e.uuid ?? uuid();
    const line = { parentUuid: parent, isSidechain: false, userType: "external", cwd, sessionId: sid,
      version: "2.0.14", gitBranch: "main", ...e, uuid: u };
    parent = u;
    return JSON.stringify(line);
  });
}
const user = (min, content, extra = {}) => ({ type: "user", timestamp: at(min), message: { role: "user", content }, ...extra });
const asst = (min, content) => ({ type: "assistant", timestamp: at(min), message: { role: "assistant", model: "claude-x", content } });

const s1 = session("aaaaaaaa-0000-4000-8000-000000000001", "/home/dev/parley", [
  { type: "summary", summary: "Setting up the archive", leafUuid: "x" },
  user(0, "Let's deploy the archive today."),
  asst(1, [{ type: "thinking", thinking: "The user wants a deployment plan.", signature: "s" },
           { type: "text", text: "I will check the server first." },
           { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls /srv" } }]),
  user(2, [{ type: "tool_result", tool_use_id: "toolu_1", content: "archive\nbackups" }]),
  asst(3, [{ type: "text", text: "The archive directory is there; deploying now." }]),
]);
const s2head = [
  user(100, "Next we build search."),
  asst(101, [{ type: "text", text: "Search will rank by relevance." }]),
  { type: "assistant", timestamp: at(102), isSidechain: true, message: { role: "assistant", content: [{ type: "text", text: "A sidechain note." }] } },
  '{"type": "user", "timestamp": broken',
  { type: "system", subtype: "compact_boundary", timestamp: at(103), content: "Conversation compacted", compactMetadata: { trigger: "auto", preTokens: 155000 } },
  user(104, "This session is being continued from a previous conversation. Summary: search ranks by relevance; next is bootstrap.", { isCompactSummary: true }),
  { type: "file-history-snapshot", timestamp: at(104), snapshot: { files: 3 } },
  asst(105, [{ type: "text", text: "Continuing with the bootstrap tool." }]),
];
const s2tail = [
  user(106, "Make it fit a token budget."),
  asst(107, [{ type: "thinking", thinking: "Trim older work first.", signature: "s" }]),
  asst(108, [{ type: "text", text: "Bootstrap keeps the newest work within the budget." }]),
];
const s2 = session("aaaaaaaa-0000-4000-8000-000000000002", "/home/dev/parley", mode === "grow" ? [...s2head, ...s2tail] : s2head);
const s3 = session("bbbbbbbb-0000-4000-8000-000000000003", "/home/dev/my-website", [
  user(50, "Fix the footer."),
  asst(51, [{ type: "text", text: "Footer fixed." }]),
]);
const write = (proj, sid, lines) => {
  fs.mkdirSync(path.join(dir, proj), { recursive: true });
  fs.writeFileSync(path.join(dir, proj, `${sid}.jsonl`), lines.join("\n") + "\n");
};
write("-home-dev-parley", "aaaaaaaa-0000-4000-8000-000000000001", s1);
write("-home-dev-parley", "aaaaaaaa-0000-4000-8000-000000000002", s2);
write("-home-dev-my-website", "bbbbbbbb-0000-4000-8000-000000000003", s3);
if (mode === "long") {
  const para = (i) => `Step ${i}: ` + "we measured the queue, the pool and the index again; ".repeat(7);
  const events = [];
  for (let i = 0; i < 120; i++) events.push(i % 2 ? asst(200 + i, [{ type: "text", text: para(i) }]) : user(200 + i, para(i)));
  events.push({ type: "system", subtype: "compact_boundary", timestamp: at(330), content: "Conversation compacted", compactMetadata: { trigger: "auto", preTokens: 150000 } });
  events.push(user(331, "LONG-CONTINUATION: this session is being continued from a previous conversation. " +
    "Summary of the work so far: ".concat("the bootstrap prints the continuation first, then the newest work. ".repeat(45)) + "END-OF-SUMMARY", { isCompactSummary: true }));
  for (let i = 0; i < 40; i++) events.push(i % 2 ? asst(332 + i, [{ type: "text", text: para(1000 + i) }]) : user(332 + i, para(1000 + i)));
  write("-home-dev-long", "cccccccc-0000-4000-8000-000000000004", session("cccccccc-0000-4000-8000-000000000004", "/home/dev/long", events));
}
