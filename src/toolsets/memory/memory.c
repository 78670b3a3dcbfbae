/* memory: the memory toolset's context, handlers, prompt and table (see
 * memory.h). */
#include "toolsets/memory/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/memory_boot.h"
#include "archive/memory_source.h"
#include "mcp/call.h"
#include "mcp/schema.h"
#include "toolsets/sqltool.h"

typedef struct memory_ctx_s {
    memory_source_t *src; /* NULL: no source configured */
} memory_ctx_t;

static memory_source_t *source_of(mcp_call_t *c)
{
    memory_ctx_t *mc = mcp_call_context(c);
    if (mc->src == NULL) {
        mcp_call_finish_error(c, "No memory source is configured.");
        return NULL;
    }
    return mc->src;
}

static void fail(mcp_call_t *c, archive_err_t err, const char *message)
{
    if (err == ARCHIVE_ERR_BUSY)
        mcp_call_finish_error(c, "%s; retry in a moment.", message);
    else
        mcp_call_finish_error(c, "%s", message);
}

static void source_cancel(mcp_call_t *c)
{
    memory_source_t *src = ((memory_ctx_t *)mcp_call_context(c))->src;
    if (c->data)
        src->cancel(src->impl, c->data);
}

/* Answers json; one with "error" is the caller's mistake. */
static void tool_done(void *data, int status, const char *json, archive_err_t err,
                      const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0) {
        fail(c, err, message);
        return;
    }
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    if (json_is_null(v) && strcmp(c->tool->def->sql_function, "latest_continuation") == 0) {
        json_decref(v);
        mcp_call_finish_error(c, "There is no continuation message yet (no compacting happened, "
                                 "or no sessions were imported: parleyd import claude-code, or "
                                 "parleyd import codex DIR); "
                                 "get_recent_work shows the latest messages.");
        return;
    }
    const char *e = json_string_value(json_object_get(v, "error"));
    if (e != NULL)
        mcp_call_finish_error(c, "%s", e);
    else if (!json_is_object(v))
        mcp_call_finish_error(c, "The memory source answered nothing usable.");
    else
        mcp_call_finish_json(c, json, strlen(json));
    json_decref(v);
}

static void memory_tool(mcp_call_t *c)
{
    memory_source_t *src = source_of(c);
    if (src == NULL)
        return;
    if ((c->tool->def->annotations & SQLTOOL_SEARCH) &&
        !sqltool_query_bounded(c, "query", false, false))
        return;
    char *args = json_dumps(c->args, JSON_COMPACT);
    void *h = NULL;
    int rc =
        args ? src->call(src->impl, c->tool->def->sql_function, args, tool_done, c, &h) : UV_ENOMEM;
    free(args);
    if (rc != 0) {
        mcp_call_finish_error(c, "The memory source is busy (%s); retry in a moment.",
                              uv_strerror(rc));
        return;
    }
    c->data = h;
    c->on_cancel = source_cancel;
}

/* ---- bootstrap_memory -------------------------------------------------------- */

/* The sequence and its budget are the domain's (archive/memory_boot.h,
 * memory_fit.h), shared with `parleyd bootstrap`. */

static void boot_progress(void *data, int step, int total)
{
    mcp_call_progress(data, step, total, NULL);
}

static void boot_cancel(mcp_call_t *c)
{
    if (c->data)
        memory_boot_cancel(c->data);
}

static void boot_done(void *data, int status, const char *json, archive_err_t err,
                      const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0)
        fail(c, err, message);
    else
        mcp_call_finish_json(c, json, strlen(json));
}

static void bootstrap_memory(mcp_call_t *c)
{
    memory_source_t *src = source_of(c);
    if (src == NULL)
        return;
    json_int_t budget = json_integer_value(json_object_get(c->args, "token_budget"));
    memory_boot_opts_t o = {
        .token_budget = budget > 0 ? (long)budget : MEMORY_BOOTSTRAP_BUDGET,
        .era_name = json_string_value(json_object_get(c->args, "era_name")),
        .progress = boot_progress,
    };
    memory_boot_t *b = NULL;
    int rc = memory_boot_start(src, &o, boot_done, c, &b);
    if (rc != 0) {
        mcp_call_finish_error(c, "The memory source is busy (%s); retry in a moment.",
                              uv_strerror(rc));
        return;
    }
    c->data = b;
    c->on_cancel = boot_cancel;
}

/* ---- the bootstrap prompt ---------------------------------------------------- */

static void bootstrap_prompt(mcp_call_t *c)
{
    const char *text =
        "You are starting with no memory of earlier sessions. Recover it before you answer:\n"
        "1. Call bootstrap_memory (token_budget fits what you can read; default 30000). It "
        "returns the latest continuation message (the summary written when your last session "
        "was compacted), the work right before it (newest first), and the foundational era's "
        "messages, and says in left_out what did not fit and how to page for it.\n"
        "2. Or step by step: get_latest_continuation; get_messages_before with reference_id = "
        "its message_id (limit 300); get_era_summary with the foundational era: era_name = "
        "\"" MEMORY_FOUNDATION_ERA "\" in a memory-lane database, the project's name for "
        "imported transcripts (bootstrap_memory finds it by itself).\n"
        "3. For what you need later: get_recent_work (the very latest messages), search_messages "
        "(full text), get_context_heap (one session's messages in order), get_timeline (a time "
        "range), get_compacting_actions (every compaction with its summary), get_message_by_id.\n"
        "Messages are ordered by when they were said. Read the continuation first: it is where "
        "you left off.";
    mcp_call_finish_result(c,
                           json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description",
                                     "How to recover your memory from earlier sessions", "messages",
                                     "role", "user", "content", "type", "text", "text", text));
}

/* ---- definitions -------------------------------------------------------------- */

#define RO (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define LIMIT(d)                                                                                   \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Default " #d                  \
    "; at most 1000 (the answer says when capped)\"}"
#define OFFSET                                                                                     \
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" MCP_SCHEMA_INT32_MAX             \
    ",\"description\":\"Page: next_offset\"}"
#define OUT_MESSAGES                                                                               \
    "{\"type\":\"object\",\"properties\":{\"messages\":{\"type\":\"array\"},\"count\":{\"type\":"  \
    "\"integer\"}},\"required\":[\"messages\",\"count\"]}"

static const mcp_tool_def_t tools[] = {
    {"get_latest_continuation", "Latest continuation",
     "The most recent continuation message (the summary a compaction left): where the last "
     "session left off. message_id, content, timestamp (when it was said), context_heap_id, "
     "era_name, message_number.",
     OBJ("", ""),
     "{\"type\":\"object\",\"properties\":{\"message_id\":{\"type\":\"string\"},\"content\":{"
     "\"type\":\"string\"},\"timestamp\":{\"type\":\"string\"}},"
     "\"required\":[\"message_id\",\"content\",\"timestamp\"]}",
     RO, memory_tool, "latest_continuation"},
    {"get_messages_before", "Messages before",
     "Messages said before a message (reference_id) or a time (reference_timestamp), "
     "newest first, content in full with message_type text|thought|tool_use|tool_result. Page "
     "back with reference_id = next_reference_id.",
     OBJ("\"reference_id\":{\"type\":\"string\"},\"reference_timestamp\":{\"type\":\"string\","
         "\"description\":\"ISO date-time; with the imported transcripts also today, "
         "yesterday, last week, 3 days ago, 2026-01-31 (UTC days) or epoch seconds\"}," LIMIT(300),
         ""),
     OUT_MESSAGES, RO, memory_tool, "messages_before"},
    {"get_era_summary", "Era summary",
     "All messages of an era (era_id or era_name) in message_number order — the foundational "
     "era holds the summaries everything else builds on. Pages with offset.",
     OBJ("\"era_id\":{\"type\":\"string\"},\"era_name\":{\"type\":\"string\"}," LIMIT(
             500) "," OFFSET,
         ""),
     OUT_MESSAGES, RO, memory_tool, "era_summary"},
    {"get_context_heap", "Context heap",
     "All messages of one context heap (a session, or what followed a compaction) in "
     "message_number order, with the heap's type (FRESH|POST_COMPACTING|SPLIT_POINT).",
     OBJ("\"heap_id\":{\"type\":\"string\"}," LIMIT(500) "," OFFSET, "\"heap_id\""), OUT_MESSAGES,
     RO, memory_tool, "context_heap"},
    {"search_messages", "Search memory",
     "Full-text search (English stemming) over your own past sessions' messages (the imported "
     "agent transcripts, or the memory-lane database) -- not other chats (recall searches every "
     "source) -- best first, with relevance_score and a snippet (matches in **); says whether "
     "an index served it.",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         ",\"minLength\":1}," LIMIT(50),
         "\"query\""),
     OUT_MESSAGES, RO | SQLTOOL_SEARCH, memory_tool, "search_messages"},
    {"get_recent_work", "Recent work",
     "The most recent messages across all context heaps, newest first (by when they were "
     "said).",
     OBJ(LIMIT(50), ""), OUT_MESSAGES, RO, memory_tool, "recent_work"},
    {"get_compacting_actions", "Compactions",
     "Every compaction, newest first, with its trigger, token count and the summary it left "
     "(the continuation message).",
     OBJ(LIMIT(50), ""),
     "{\"type\":\"object\",\"properties\":{\"compacting_actions\":{\"type\":\"array\"},\"count\":{"
     "\"type\":\"integer\"}},"
     "\"required\":[\"compacting_actions\",\"count\"]}",
     RO, memory_tool, "compacting_actions"},
    {"get_timeline", "Timeline",
     "Messages in time order within from/to (ISO) or from_block/to_block (Ethereum block "
     "height, where the source has it). Page on with after_id = next_after_id.",
     OBJ("\"from\":{\"type\":\"string\"},\"to\":{\"type\":\"string\"},\"from_block\":{"
         "\"type\":\"integer\"},\"to_block\":{\"type\":\"integer\"},\"after_id\":{\"type\":"
         "\"string\"}," LIMIT(300),
         ""),
     OUT_MESSAGES, RO, memory_tool, "timeline"},
    {"get_message_by_id", "One message", "One message in full, with its type and context.",
     OBJ("\"message_id\":{\"type\":\"string\",\"minLength\":1}", "\"message_id\""),
     "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"content\":{\"type\":"
     "\"string\"}},"
     "\"required\":[\"id\",\"content\"]}",
     RO, memory_tool, "message_by_id"},
    {"bootstrap_memory", "Bootstrap memory",
     "Recovers context in one call: the latest continuation, the work before it (newest "
     "first) and the foundational era (era_name; default: memory-lane's \"" MEMORY_FOUNDATION_ERA
     "\", or the earliest era of the project worked on last in imported transcripts), the "
     "whole answer kept within token_budget (default 30000; about 4 characters a token); "
     "left_out says what did not fit and how to page for it.",
     OBJ("\"token_budget\":{\"type\":\"integer\",\"minimum\":1000,\"maximum\":1000000},"
         "\"era_name\":{\"type\":\"string\"}",
         ""),
     "{\"type\":\"object\",\"properties\":{\"continuation\":{\"anyOf\":[{\"type\":\"object\"},"
     "{\"type\":\"null\"}]},\"token_budget\":{\"type\":\"integer\"},\"approx_tokens\":{\"type\":"
     "\"integer\"}},"
     "\"required\":[\"continuation\",\"token_budget\",\"approx_tokens\"]}",
     RO, bootstrap_memory, "latest_continuation"},
};

static const mcp_prompt_def_t prompts[] = {
    {"bootstrap", "Recover your memory",
     "How an agent with an empty context recovers its earlier sessions with the memory tools.",
     NULL, bootstrap_prompt},
};

static const mcp_toolset_t toolset_memory_mcp = {
    .name = "memory",
    .description = "An agent recovers its own past: continuation, work before it, eras, search",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
    .prompts = prompts,
    .nprompts = (int)(sizeof prompts / sizeof prompts[0]),
};

/* ---- context ---------------------------------------------------------------------- */

static int memory_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    memory_ctx_t *mc = calloc(1, sizeof *mc);
    if (mc == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    mc->src = env->memory;
    *out = mc;
    return 0;
}

static void memory_close(void *ctx)
{
    free(ctx);
}

const toolset_t toolset_memory = {
    .mcp = &toolset_memory_mcp,
    .open = memory_open,
    .close = memory_close,
    .auto_sources = "agents",
    .auto_settings = "memory_db,claude_code_dir,codex_dir",
};
