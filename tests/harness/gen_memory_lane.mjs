#!/usr/bin/env node
// gen_memory_lane.mjs: SQL for a memory-lane database (schema:
// memory_lane_schema.sql) whose import order is the reverse of the real
// order: created_at falls as "timestamp" rises, so a tool that orders by
// created_at answers the wrong continuation. Three context heaps in two
// eras: the foundational era ("Compacting Meta-Conversation (Era 1)",
// 5 messages), then two post-compacting heaps, each opened by a
// continuation message; thoughts, tool uses and tool results among them;
// block heights on the later ones. Deterministic.
//
//   node gen_memory_lane.mjs > data.sql
const ids = { n: 0 };
const uuid = () => `00000000-0000-4000-8000-${String(++ids.n).padStart(12, "0")}`;
const T0 = Date.UTC(2025, 9, 1, 12); // 2025-10-01 12:00Z
const q = (v) => (v === null || v === undefined ? "NULL" : `'${String(v).replace(/'/g, "''")}'`);
const out = [];
out.push("INSERT INTO conversation_participants (name, participant_type) VALUES ('justin', 'human'), ('magent', 'ai');");
const era1 = uuid(), era2 = uuid();
out.push(`INSERT INTO eras (id, name, created_at, is_current) VALUES
  (${q(era1)}, 'Compacting Meta-Conversation (Era 1)', '2025-10-01', false),
  (${q(era2)}, 'Post-N Era', '2025-10-20', true);`);
const heaps = [[uuid(), "fresh", era1], [uuid(), "post_compacting", era2], [uuid(), "post_compacting", era2]];
for (const [id, type, era] of heaps)
  out.push(`INSERT INTO context_heaps (id, type, created_at, era_id) VALUES (${q(id)}, ${q(type)}, '2025-11-01', ${q(era)});`);
const msgs = [];
const plan = [
  // heap, sender, kind, text
  [0, "justin", "text", "We start the memory project: deploy the archive first."],
  [0, "magent", "thought", "Justin wants the archive deployed before anything else."],
  [0, "magent", "text", "Agreed. I will write the deployment plan."],
  [0, "magent", "tool_use", "ls -la /srv"],
  [0, "justin", "tool_result", "total 0"],
  [1, "magent", "text", "Continuation: we deployed the archive; next is search."],
  [1, "justin", "text", "Search should rank by relevance."],
  [1, "magent", "text", "Implemented ranking with ts_rank."],
  [2, "magent", "text", "Continuation: search works; now the bootstrap tool."],
  [2, "justin", "text", "Make bootstrap fit a token budget."],
  [2, "magent", "thought", "The budget means trimming older work first."],
  [2, "magent", "text", "Bootstrap keeps the newest work within the budget."],
];
const num = [0, 0, 0];
plan.forEach(([h, sender, kind, text], i) => {
  const id = uuid();
  const ts = T0 + i * 3600_000; // an hour apart, in real order
  const created = new Date(Date.UTC(2025, 10, 30) - i * 60_000).toISOString(); // imported in reverse
  let content;
  if (kind === "thought") content = [{ type: "thinking", thinking: text, signature: "sig" }];
  else if (kind === "tool_use") content = [{ type: "tool_use", id: `tu${i}`, name: "Bash", input: { command: text } }];
  else if (kind === "tool_result") content = [{ type: "tool_result", tool_use_id: `tu${i - 1}`, content: text }];
  else content = [{ type: "text", text }];
  const cont = num[h] === 0 && h > 0;
  msgs.push({ id, h, ts, cont });
  out.push(`INSERT INTO conversations_message (id, message_number, content, "timestamp", eth_blockheight, created_at,
    is_continuation_message, context_heap_id, sender_id) VALUES (${q(id)}, ${num[h]++}, ${q(JSON.stringify(content))}, ${ts},
    ${h === 2 ? 21000000 + i : "NULL"}, ${q(created)}, ${cont}, ${q(heaps[h][0])}, ${q(sender)});`);
  if (kind === "thought") out.push(`INSERT INTO conversations_thought VALUES (${q(id)}, 'sig');`);
  if (kind === "tool_use") out.push(`INSERT INTO conversations_tooluse VALUES (${q(id)}, 'Bash', 'tu${i}');`);
  if (kind === "tool_result") out.push(`INSERT INTO conversations_toolresult VALUES (${q(id)}, 'tu${i - 1}', false);`);
});
for (const h of [1, 2]) {
  const c = msgs.find((m) => m.h === h && m.cont);
  out.push(`INSERT INTO compacting_actions (id, compact_trigger, pre_compact_tokens, created_at, context_heap_id, continuation_message_id)
    VALUES (${q(uuid())}, 'auto', ${150000 + h}, '2025-11-30', ${q(heaps[h][0])}, ${q(c.id)});`);
}
console.log(out.join("\n"));
