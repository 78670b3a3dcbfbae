/* codex_events: the records of Codex CLI's session rollouts (JSON Lines,
 * SESSIONS/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, one {timestamp, type,
 * payload} record a line) as the events of agents' transcripts that
 * parley_agent_ingest stores (src/db/sql/memory/agent_import.sql, the
 * shape agent_events.h gives for Claude Code's): pure parsing, no I/O, so
 * that the fuzz target transcripts drives it alone.
 *
 * What a record becomes (each event carries the session's id, the
 * record's timestamp, and depends on that record alone, so reading a line
 * again gives the same event and it is stored once):
 * - session_meta: a "session_meta" event (id, cwd, cli_version as version,
 *   originator, source, model_provider, git), a service row the memory
 *   tools leave out; the session's working directory is its project;
 * - response_item message: a user, assistant or system event whose blocks
 *   are the input_text/output_text parts (images are left out); the
 *   developer role, and a user message that is context Codex injected
 *   (<environment_context>, <user_instructions>, AGENTS.md instructions),
 *   are system events;
 * - response_item reasoning: an assistant event with a thinking block per
 *   summary or reasoning text; encrypted_content is never read as text (a
 *   reasoning item with no text is no event);
 * - function_call, custom_tool_call, local_shell_call, web_search_call: an
 *   assistant event with a tool_use block {id: call_id, name, input: the
 *   arguments parsed when they are JSON}; function_call_output and
 *   custom_tool_call_output: a user event with a tool_result block
 *   {tool_use_id: call_id, content: the output as text}: paired by call_id;
 * - compacted: a system compact_boundary event (a new context heap) whose
 *   message, the summary, is the heap's continuation (isCompactSummary);
 * - event_msg (user_message and agent_message repeat response_item
 *   messages' words; the rest is progress), turn_context, a compaction
 *   item (encrypted) and other items: no event.
 * Rollouts older than the {type, payload} records (a first line that is
 * the session's meta without "type", then bare response items, and
 * {"record_type": ...} lines) are read the same way. */
#ifndef PARLEY_IMPORT_CODEX_EVENTS_H
#define PARLEY_IMPORT_CODEX_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The events of a piece of a rollout of the session session (an id, see
 * codex_events_session), from the file's untrusted bytes; buf, len, path,
 * first_line, *lines and *malformed as agent_events_parse's: a line that
 * is not blank must be a JSON object with a string "type" (or an older
 * rollout's meta line) whose timestamp, when present and not null, is an
 * ISO 8601 time, and whose payload, when the type needs one, is an
 * object; else it is counted in *malformed, named with path and its
 * number, and skipped. Returns the JSON text [{"line": N, "event": {...}},
 * ...] (the caller frees it), or NULL when out of memory. */
char *codex_events_parse(const char *buf, size_t len, const char *path, const char *session,
                         uint64_t first_line, uint64_t *lines, uint64_t *malformed);

/* Whether name (a file name, no folder) is a rollout's: "rollout-" ...
 * ".jsonl". */
__attribute__((warn_unused_result)) bool codex_events_is_rollout(const char *name);

/* The session id of a rollout file name: the UUID that ends
 * rollout-<time>-<uuid>.jsonl (as Codex names it), else the name without
 * ".jsonl". Copied into out (cap bytes, truncated). */
void codex_events_session(const char *name, char *out, size_t cap);

#endif
