/* recall: the recall toolset's context, handlers and table (see
 * recall.h). A hit's "next" names a tool of its own surface only when the
 * caller may call it (mcp_call_serves_tool): the SQL gets which, per
 * call, in its context. A memory-lane database is another PostgreSQL: its
 * search runs first and its hits go to the store's SQL, which merges the
 * two lists (reciprocal rank fusion: the two rank on different scales). */
#include "toolsets/recall/recall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "toolsets/sqltool.h"

/* The longest timezone setting the context JSON carries. */
#define RECALL_TZ_MAX 128

typedef struct recall_ctx_s {
    archive_t *archive;
    memory_source_t *lane; /* a memory-lane database, or NULL */
    char timezone[RECALL_TZ_MAX];
} recall_ctx_t;

/* Which toolset opens each source: a caller whose token names toolsets
 * recalls from the sources of those it names (docs/recall.md). */
static const struct {
    const char *source;  /* as src/db/sql/sources.sql names it, or "memory" */
    const char *toolset; /* a toolset that reads it */
} source_owners[] = {
    {"telegram", "telegram"}, {"telegram", "inline"}, {"chatwise", "chatwise"},
    {"agents", "memory"},     {"memory", "memory"},   {"bluesky", "bluesky"},
};

/* The sources the caller may recall from, as a JSON array, or NULL for
 * every one: a caller without a token, or with one that names no toolset
 * of a source (toolsets=recall alone: an explicit grant of a read-only
 * search over everything), recalls from all; a token that names some
 * (toolsets=recall,chatwise) from theirs alone. */
static json_t *allowed_sources(const mcp_call_t *c)
{
    if (!mcp_call_policy_scoped(c))
        return NULL;
    json_t *out = json_array();
    for (size_t i = 0; i < sizeof source_owners / sizeof source_owners[0]; i++) {
        if (!mcp_call_policy_names(c, source_owners[i].toolset))
            continue;
        bool have = false;
        size_t j;
        json_t *v;
        json_array_foreach(out, j, v)
        {
            have = have || strcmp(json_string_value(v), source_owners[i].source) == 0;
        }
        if (!have)
            json_array_append_new(out, json_string(source_owners[i].source));
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The context for the SQL: the time zone, the tool that opens a hit of
 * each source for this caller, and the sources it may recall from
 * ("allowed"; absent: every one) (src/db/sql/recall.sql). Returns a
 * malloc'd string or NULL. */
static char *sql_context(mcp_call_t *c)
{
    recall_ctx_t *rc = mcp_call_context(c);
    json_t *next = json_object();
    /* Telegram-style chats open in the telegram toolset, else in the
     * inline one (both read the same chats). Each under the name the
     * caller's session lists it (the default selection renames some). */
    const char *name;
    if ((name = mcp_call_tool_name(c, "messagesContext")) != NULL) {
        json_object_set_new(next, "telegram", json_string(name));
        json_object_set_new(next, "telegram_takes", json_string("channelId"));
    } else if ((name = mcp_call_tool_name(c, "messages.context")) != NULL) {
        json_object_set_new(next, "telegram", json_string(name));
        json_object_set_new(next, "telegram_takes", json_string("chatId"));
    }
    if ((name = mcp_call_tool_name(c, "gather_chats")) != NULL)
        json_object_set_new(next, "chatwise", json_string(name));
    /* The memory toolset reads the store's agents unless a memory-lane
     * database is its source; then it opens that one's hits. */
    if ((name = mcp_call_tool_name(c, "get_message_by_id")) != NULL)
        json_object_set_new(next, rc->lane ? "memory" : "agents", json_string(name));
    if ((name = mcp_call_tool_name(c, "search")) != NULL)
        json_object_set_new(next, "bluesky", json_string(name));
    json_t *ctx = json_pack("{s:s, s:o, s:o*}", "timezone", rc->timezone, "next", next, "allowed",
                            allowed_sources(c));
    char *s = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
    json_decref(ctx);
    return s;
}

/* Runs the tool's SQL function with args (the call's, or NULL for them). */
static void run_sql(mcp_call_t *c, const char *args)
{
    recall_ctx_t *rc = mcp_call_context(c);
    char *ctx = sql_context(c);
    if (ctx == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    sqltool_run(c, rc->archive, ARCHIVE_SEARCH, c->tool->def->sql_function, args, ctx,
                sqltool_done_text, c);
    free(ctx);
}

/* True when the call's "sources" asks for the memory-lane database (or
 * for every source), and the caller may recall from it. */
static bool wants_lane(const mcp_call_t *c)
{
    json_t *allowed = allowed_sources(c);
    bool may = allowed == NULL;
    size_t k;
    json_t *a;
    json_array_foreach(allowed, k, a)
    {
        may = may || strcmp(json_string_value(a), "memory") == 0;
    }
    json_decref(allowed);
    if (!may)
        return false;
    const json_t *s = json_object_get(c->args, "sources");
    if (!json_is_array(s) || json_array_size(s) == 0)
        return true;
    size_t i;
    const json_t *e;
    json_array_foreach(s, i, e)
    {
        if (json_is_string(e) && strcmp(json_string_value(e), "memory") == 0)
            return true;
    }
    return false;
}

static void lane_cancel(mcp_call_t *c)
{
    recall_ctx_t *rc = mcp_call_context(c);
    if (c->data)
        rc->lane->cancel(rc->lane->impl, c->data);
}

/* The memory-lane search answered: its messages (or why none) join the
 * call's arguments as "_lane" / "_laneError" for the store's SQL. */
static void lane_done(void *data, int status, const char *json, archive_err_t err,
                      const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    (void)err;
    if (c->cancelled) {
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    json_t *args = json_deep_copy(c->args);
    json_t *v = status == 0 ? json_loads(json, 0, NULL) : NULL;
    const json_t *msgs = json_object_get(v, "messages");
    if (json_is_array(msgs))
        json_object_set(args, "_lane", (json_t *)msgs);
    else
        json_object_set_new(args, "_laneError",
                            json_string(status != 0 ? message
                                        : json_string_value(json_object_get(v, "error"))
                                            ? json_string_value(json_object_get(v, "error"))
                                            : "no answer"));
    json_decref(v);
    char *s = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    if (s == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    run_sql(c, s);
    free(s);
}

static void recall_search(mcp_call_t *c)
{
    recall_ctx_t *rc = mcp_call_context(c);
    if (!sqltool_query_bounded(c, "query", false, false))
        return;
    if (rc->lane == NULL || !wants_lane(c)) {
        run_sql(c, NULL);
        return;
    }
    json_t *q = json_pack("{s:O, s:O?}", "query", json_object_get(c->args, "query"), "limit",
                          json_object_get(c->args, "limit"));
    char *args = q ? json_dumps(q, JSON_COMPACT) : NULL;
    json_decref(q);
    void *h = NULL;
    int st = args ? rc->lane->call(rc->lane->impl, "search_messages", args, lane_done, c, &h)
                  : UV_ENOMEM;
    free(args);
    if (st != 0) {
        mcp_call_finish_error(c, "The memory database is busy (%s); retry in a moment.",
                              uv_strerror(st));
        return;
    }
    c->data = h;
    c->on_cancel = lane_cancel;
}

static void recall_timeline(mcp_call_t *c)
{
    run_sql(c, NULL);
}

#define RO (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define SOURCES                                                                                    \
    "\"sources\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"telegram\","       \
    "\"chatwise\",\"agents\",\"memory\",\"bluesky\"]},\"description\":\"Which sources (default "   \
    "all): telegram (message-service chats), chatwise (AI-assistant chats), agents (imported "     \
    "agent transcripts), memory (a memory-lane database), bluesky (Bluesky posts)\"}"
#define TIME(key, what)                                                                            \
    "\"" key "\":{\"type\":\"string\",\"description\":\"" what ": today, yesterday, last week, "   \
    "3 days ago, 2026-01-31, 2026-01-31T18:00:00Z or epoch seconds; days are local to the "        \
    "configured timezone\"}"
#define HIT_OUT                                                                                    \
    "{\"type\":\"object\",\"properties\":{\"source\":{\"type\":\"string\"},\"title\":{\"type\":"   \
    "\"string\"},\"date\":{\"type\":\"string\"},\"snippet\":{\"type\":\"string\"},\"ref\":{"       \
    "\"type\":\"string\"},\"rank\":{\"type\":\"number\"},\"next\":{\"type\":\"object\","           \
    "\"properties\":{\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"}}}},"       \
    "\"required\":[\"source\",\"title\",\"date\",\"ref\"]}"

static const mcp_tool_def_t tools[] = {
    {"recall", "Recall across every source",
     "One search over everything parley holds: message-service chats (telegram), AI-assistant "
     "chats (chatwise), imported agent transcripts (agents), a memory-lane database (memory) "
     "and "
     "Bluesky posts (bluesky); one list ranked as every search ranks (words in their forms; "
     "web "
     "syntax: words, \"phrases\", OR, -word). Each hit has its source, title, date, snippet, "
     "ref and next: the call of a tool of its own surface that opens it.",
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" TOOL_QUERY_MAX
         ",\"description\":\"What to recall: words, \\\"a phrase\\\", -excluded\"},"
         "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"Hits "
         "(default 20)\"}," SOURCES "," TIME("since", "From (inclusive)") "," TIME(
             "until", "To (exclusive; a day given ends with that day)"),
         "\"query\""),
     "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"total\":{\"type\":"
     "\"integer\"},\"hits\":{\"type\":\"array\",\"items\":" HIT_OUT "}},\"required\":[\"query\","
     "\"total\",\"hits\"]}",
     RO, recall_search, "parley_recall_recall"},
    {"recall_timeline", "What happened, across sources",
     "What happened in a window across every source, grouped by source: how many messages, in "
     "how many chats, and the most active chats with their first and last message in the "
     "window.",
     OBJ(TIME("since", "Start (inclusive)") "," TIME(
             "until",
             "End (exclusive; default now)") "," SOURCES
                                             ",\"limit\":{\"type\":\"integer\",\"minimum\":1,"
                                             "\"maximum\":50,\"description\":\"Chats "
                                             "a source (default 10)\"}",
         "\"since\""),
     "{\"type\":\"object\",\"properties\":{\"since\":{\"type\":\"string\"},\"until\":{\"type\":"
     "\"string\"},\"sources\":{\"type\":\"array\"}},\"required\":[\"since\",\"until\","
     "\"sources\"]}",
     RO, recall_timeline, "parley_recall_timeline"},
};

static const mcp_toolset_t toolset_recall_mcp = {
    .name = "recall",
    .description = "One search and one timeline over every source in the store",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};

static int recall_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    int rc = sqltool_check_table(&toolset_recall_mcp, err, errcap);
    if (rc != 0)
        return rc;
    if (strlen(env->timezone) >= RECALL_TZ_MAX || strpbrk(env->timezone, "\"\\") != NULL) {
        snprintf(err, errcap, "timezone: '%.64s' is not a time zone name", env->timezone);
        return UV_EINVAL;
    }
    recall_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    ctx->archive = env->archive;
    /* The store's own agent transcripts are searched in the store; only a
     * memory-lane database is asked separately. */
    if (env->memory != NULL && strcmp(env->memory->name, "store") != 0)
        ctx->lane = env->memory;
    snprintf(ctx->timezone, sizeof ctx->timezone, "%s", env->timezone);
    *out = ctx;
    return 0;
}

static void recall_close(void *ctx)
{
    free(ctx);
}

const toolset_t toolset_recall = {
    .mcp = &toolset_recall_mcp,
    .open = recall_open,
    .close = recall_close,
};
