/* memory: the memory toolset's context, handlers, prompt and table (see
 * memory.h). */
#include "toolsets/memory/memory.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                                 "or no sessions were imported: parleyd import claude-code); "
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

/* The sequence: the latest continuation, the messages before it, the
 * foundational era; kept within token_budget (continuation first, then the
 * newest work, then the era from its start), with what was left out and how
 * to page for it. The budget counts the whole answer (its JSON text, about
 * MEMORY_CHARS_PER_TOKEN characters a token), not only the messages'
 * contents. */
typedef struct boot_s {
    mcp_call_t *call;
    json_t *out;
    long budget; /* characters left */
    long limit;  /* characters in all */
    int step;
} boot_t;

static void boot_step(boot_t *b);

/* The characters v takes in the answer (compact JSON), or LONG_MAX. */
static long json_chars(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    long n = s ? (long)strlen(s) : LONG_MAX;
    free(s);
    return n;
}

/* Keeps items of arr (in order) while they fit; returns how many. */
static size_t keep_fitting(boot_t *b, json_t *arr, json_t *kept)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        long len = json_chars(m) + 1; /* and its comma */
        if (len > b->budget)
            break;
        b->budget -= len;
        json_array_append(kept, m);
        n++;
    }
    return n;
}

/* The continuation, its content cut to what the budget leaves when all of
 * it does not fit (left_out says how to read the rest). */
static void keep_continuation(boot_t *b, json_t *v, json_t *left)
{
    long len = json_chars(v);
    if (len <= b->budget) {
        b->budget -= len;
        json_object_set(b->out, "continuation", v);
        return;
    }
    const char *text = json_string_value(json_object_get(v, "content"));
    json_t *cut = json_deep_copy(v);
    long room = b->budget - (len - (long)(text ? strlen(text) : 0)) - 8;
    if (cut == NULL || text == NULL || room <= 0) {
        json_decref(cut);
        json_object_set_new(b->out, "continuation", json_null());
        json_object_set_new(left, "continuation",
                            json_pack("{s:s}", "how", "get_latest_continuation"));
        return;
    }
    /* Cut at a character boundary (UTF-8), and leave room for escapes. */
    size_t n = (size_t)room / 2;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--;
    json_object_set_new(cut, "content", json_stringn(text, n));
    json_object_set_new(cut, "content_cut", json_true());
    b->budget -= json_chars(cut);
    json_object_set_new(b->out, "continuation", cut);
    json_object_set_new(left, "continuation",
                        json_pack("{s:s}", "how", "get_latest_continuation for all of it"));
}

static void boot_got(void *data, int status, const char *json, archive_err_t err,
                     const char *message)
{
    boot_t *b = data;
    mcp_call_t *c = b->call;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0) {
        fail(c, err, message);
        json_decref(b->out);
        free(b);
        return;
    }
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    json_t *left = json_object_get(b->out, "left_out");
    if (b->step == 0) { /* the continuation */
        if (json_is_object(v))
            keep_continuation(b, v, left);
        else
            json_object_set_new(b->out, "continuation", json_null());
    } else if (b->step == 1) { /* the work before it, newest first */
        json_t *all = json_object_get(v, "messages");
        json_t *kept = json_array();
        size_t n = keep_fitting(b, all, kept);
        json_object_set_new(b->out, "messages_before", kept);
        if (n < json_array_size(all) || json_object_get(v, "next_reference_id")) {
            json_t *last = json_array_get(kept, json_array_size(kept) - 1);
            json_object_set_new(
                left, "messages_before",
                json_pack(
                    "{s:s, s:O}", "how",
                    "get_messages_before with reference_id = next_reference_id",
                    "next_reference_id",
                    last ? json_object_get(last, "id")
                         : json_object_get(json_object_get(b->out, "continuation"), "message_id")));
        }
    } else { /* the foundational era, from its start */
        if (json_object_get(v, "error")) {
            json_object_set_new(b->out, "era", json_null());
            json_object_set(left, "era", json_object_get(v, "error"));
        } else {
            json_object_set(b->out, "era", json_object_get(v, "era"));
            b->budget -= json_chars(json_object_get(v, "era"));
            json_t *all = json_object_get(v, "messages");
            json_t *kept = json_array();
            size_t n = keep_fitting(b, all, kept);
            json_object_set_new(b->out, "era_messages", kept);
            json_int_t total = json_integer_value(json_object_get(v, "total"));
            if ((json_int_t)n < total)
                json_object_set_new(
                    left, "era_messages",
                    json_pack("{s:s, s:I, s:I}", "how",
                              "get_era_summary with the era's name and offset = next_offset",
                              "next_offset", (json_int_t)n, "not_included", total - (json_int_t)n));
        }
    }
    json_decref(v);
    b->step++;
    boot_step(b);
}

/* The answer as text, within the budget: the wrapper (reserved for at
 * the start) is measured now; should it not fit after all, messages go
 * from the end (the era's last, then the oldest work) until it does. */
static char *boot_text(boot_t *b)
{
    json_t *kinds[] = {json_object_get(b->out, "era_messages"),
                       json_object_get(b->out, "messages_before")};
    for (;;) {
        char *text = json_dumps(b->out, JSON_COMPACT);
        if (text == NULL)
            return NULL;
        long len = (long)strlen(text);
        json_int_t approx =
            (json_int_t)((len + MEMORY_CHARS_PER_TOKEN - 1) / MEMORY_CHARS_PER_TOKEN);
        if (json_integer_value(json_object_get(b->out, "approx_tokens")) != approx) {
            /* approx_tokens is part of the text: once more with its value. */
            json_object_set_new(b->out, "approx_tokens", json_integer(approx));
            free(text);
            continue;
        }
        if (len <= b->limit)
            return text;
        free(text);
        size_t k = 0;
        while (k < 2 && json_array_size(kinds[k]) == 0)
            k++;
        if (k == 2) /* nothing left to drop: the wrapper alone is over */
            return json_dumps(b->out, JSON_COMPACT);
        json_array_remove(kinds[k], json_array_size(kinds[k]) - 1);
        json_object_set_new(json_object_get(b->out, "left_out"),
                            k == 0 ? "era_messages_cut" : "messages_before_cut",
                            json_string("shortened to fit the budget; page as above"));
    }
}

static void boot_step(boot_t *b)
{
    mcp_call_t *c = b->call;
    memory_source_t *src = ((memory_ctx_t *)mcp_call_context(c))->src;
    if (b->step == 3 || c->cancelled) {
        json_object_set_new(
            b->out, "note",
            json_string(json_object_size(json_object_get(b->out, "left_out")) > 0
                            ? "Kept within the token budget (the whole answer): the "
                              "continuation, then the newest work, then the foundational era "
                              "from its start; left_out says what was not included and how to "
                              "page for it."
                            : "Everything fit within the token budget."));
        char *text = boot_text(b);
        json_decref(b->out);
        free(b);
        if (text == NULL) {
            mcp_call_finish_error(c, "out of memory");
            return;
        }
        mcp_call_finish_json(c, text, strlen(text));
        free(text);
        return;
    }
    mcp_call_progress(c, b->step, 3, NULL);
    const char *what;
    json_t *args;
    if (b->step == 0) {
        what = "latest_continuation";
        args = json_object();
    } else if (b->step == 1) {
        what = "messages_before";
        json_t *cont = json_object_get(b->out, "continuation");
        if (json_is_object(cont))
            args = json_pack("{s:O, s:i}", "reference_id", json_object_get(cont, "message_id"),
                             "limit", MEMORY_BOOT_FETCH);
        else
            args = json_pack("{s:s, s:i}", "reference_timestamp", "9999-12-31T00:00:00Z", "limit",
                             MEMORY_BOOT_FETCH);
    } else {
        what = "era_summary";
        const char *era = json_string_value(json_object_get(c->args, "era_name"));
        /* The foundational era: the one named; else memory-lane's by its
         * name, and in parley's store the earliest era of the project
         * worked on last (imported transcripts have one era a project). */
        if (era != NULL || strcmp(src->name, "store") != 0)
            args = json_pack("{s:s, s:i}", "era_name", era ? era : MEMORY_FOUNDATION_ERA, "limit",
                             MEMORY_BOOT_FETCH);
        else
            args = json_pack("{s:b, s:i}", "foundational", 1, "limit", MEMORY_BOOT_FETCH);
    }
    char *text = args ? json_dumps(args, JSON_COMPACT) : NULL;
    json_decref(args);
    void *h = NULL;
    int rc = text ? src->call(src->impl, what, text, boot_got, b, &h) : UV_ENOMEM;
    free(text);
    if (rc != 0) {
        json_decref(b->out);
        free(b);
        mcp_call_finish_error(c, "The memory source is busy (%s); retry in a moment.",
                              uv_strerror(rc));
        return;
    }
    c->data = h;
    c->on_cancel = source_cancel;
}

static void bootstrap_memory(mcp_call_t *c)
{
    if (source_of(c) == NULL)
        return;
    json_int_t budget = json_integer_value(json_object_get(c->args, "token_budget"));
    if (budget <= 0)
        budget = MEMORY_BOOTSTRAP_BUDGET;
    boot_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    b->call = c;
    b->limit = (long)budget * MEMORY_CHARS_PER_TOKEN;
    b->budget = b->limit - MEMORY_BOOT_WRAPPER;
    b->out = json_pack("{s:I, s:I, s:{}}", "token_budget", budget, "approx_tokens", (json_int_t)0,
                       "left_out");
    boot_step(b);
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

const mcp_toolset_t toolset_memory_mcp = {
    .name = "memory",
    .description = "An agent recovers its own past: continuation, work before it, eras, search",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
    .prompts = prompts,
    .nprompts = (int)(sizeof prompts / sizeof prompts[0]),
};

/* ---- context ---------------------------------------------------------------------- */

int memory_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
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

void memory_close(void *ctx)
{
    free(ctx);
}
