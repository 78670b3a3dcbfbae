/* chatwise: the chatwise toolset's context, handlers and table (see
 * chatwise.h). */
#include "toolsets/chatwise/chatwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "toolsets/sqltool.h"

typedef struct chatwise_ctx_s {
    archive_t *archive;
    char *sql_ctx; /* {"timezone": the timezone setting}: of date words in arguments */
} chatwise_ctx_t;

/* search_conversations: with response_mode "text" the SQL function adds
 * "text", the answer to read (sqltool_done_text). */
static void chatwise_search(mcp_call_t *c)
{
    chatwise_ctx_t *cc = mcp_call_context(c);
    const char *mode = json_string_value(json_object_get(c->args, "precision_mode"));
    const char *expand = json_string_value(json_object_get(c->args, "expand"));
    if (!sqltool_query_bounded(c, "intent_query", mode && strcmp(mode, "fuzzy") == 0,
                               expand && strcmp(expand, "auto") == 0))
        return;
    sqltool_run(c, cc->archive, ARCHIVE_SEARCH, c->tool->def->sql_function, NULL, cc->sql_ctx,
                sqltool_done_text, c);
}

static void chatwise_tool(mcp_call_t *c)
{
    chatwise_ctx_t *cc = mcp_call_context(c);
    sqltool_run(c, cc->archive, ARCHIVE_READ, c->tool->def->sql_function, NULL, cc->sql_ctx,
                sqltool_done, c);
}

#define RO (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
/* A time argument: a date word (today, yesterday, last week, 3 days ago), a
 * date, an ISO date-time, or epoch seconds or milliseconds. */
#define WHEN                                                                                       \
    "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"description\":\"today, "          \
    "yesterday, last week, 3 days ago, 2026-01-31, 2026-01-31T18:00:00Z, or epoch seconds or "     \
    "milliseconds\"}"
#define STR_ARRAY "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"

static const mcp_tool_def_t tools[] = {
    {"search_conversations", "Find chats by intent",
     "Intent-based search over the imported AI-assistant chats, aggregated per chat (title, id, "
     "hits, time range, snippets), with a confidence (0-1: how much of the query the top chat "
     "covers and how clearly it stands out) and guidance: stopIf, and nextActions with ready "
     "arguments (retry fuzzy or with expand auto when nothing stands out; gather_chats on "
     "topChatIds when it does). intent_query is a phrase, several separated by / or , , or an "
     "array; every word of a phrase must occur in a message. Chinese and mixed queries work.",
     OBJ("\"intent_query\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         "},{\"type\":\"array\",\"maxItems\":20,\"items\":{\"type\":\"string\","
         "\"maxLength\":" TOOL_QUERY_MAX "}}],"
         "\"description\":\"Words or phrases: \\\"rust\\\", \\\"虚拟列表滚动很卡\\\", "
         "[\\\"idea\\\",\\\"想法\\\"]\"},"
         "\"time_window\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"object\","
         "\"properties\":{\"start\":" WHEN ",\"end\":" WHEN "}}],"
         "\"description\":\"7d, 30d, 60d, 90d, all (default), a time to search from (today, "
         "yesterday, last week, 3 days ago, 2026-01-31), or {start, end}: times (also epoch "
         "seconds or milliseconds; a day as end is included whole)\"},"
         "\"precision_mode\":{\"type\":\"string\",\"enum\":[\"basic\",\"fuzzy\"],"
         "\"description\":\"basic (default): words at word starts, CJK as substrings; fuzzy: "
         "close spellings too\"},"
         "\"expand\":{\"type\":\"string\",\"enum\":[\"off\",\"auto\"],\"description\":\"auto: "
         "add related words drawn from the matching chats and close spellings "
         "(guidance.state.expandedTerms)\"},"
         "\"include_tools_in_search\":{\"type\":\"boolean\",\"description\":\"Search tool "
         "results' text too (default true)\"},"
         "\"scope\":{\"type\":\"string\",\"enum\":[\"content\",\"title\",\"both\"]},"
         "\"role_filter\":" STR_ARRAY ",\"exclude_terms\":" STR_ARRAY ","
         "\"match\":{\"type\":\"string\",\"enum\":[\"any\",\"all\"],\"description\":\"all: "
         "a chat must have every term (anywhere in it)\"},"
         "\"limit_chats\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50},"
         "\"limit_snippets_per_chat\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":20},"
         "\"snippet_window\":{\"type\":\"integer\",\"minimum\":8,\"maximum\":1000},"
         "\"response_mode\":{\"type\":\"string\",\"enum\":[\"json\",\"text\"]}",
         "\"intent_query\""),
     "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"},\"confidence\":{"
     "\"type\":\"number\"},\"topChatIds\":{\"type\":\"array\"},\"results\":{\"type\":\"array\"},"
     "\"guidance\":{\"type\":\"object\"}},\"required\":[\"status\",\"confidence\",\"topChatIds\","
     "\"results\",\"guidance\"]}",
     RO, chatwise_search, "parley_cw_search_conversations"},
    {"gather_chats", "Read whole chats",
     "The full timeline of one chat ({chat, messages}), or of several ({meta, narrative, "
     "commonAlignment}: the messages, by role and content, present in every chat given, with "
     "where they are). includeTools (default true) adds each message's tool calls and results. "
     "A chat id may be a unique prefix.",
     OBJ("\"chatIds\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
         "\"maxItems\":20},\"includeTools\":{\"type\":\"boolean\"}",
         "\"chatIds\""),
     "{\"type\":\"object\"}", RO, chatwise_tool, "parley_cw_gather_chats"},
    {"resolve_ids", "Resolve id prefixes",
     "The chats and messages whose ids start with the prefixes given; an ambiguous prefix "
     "answers every candidate (at most 50) and ambiguous: true.",
     OBJ("\"chatIdPrefix\":{\"type\":\"string\",\"minLength\":1},\"messageIdPrefix\":{\"type\":"
         "\"string\",\"minLength\":1}",
         ""),
     "{\"type\":\"object\"}", RO, chatwise_tool, "parley_cw_resolve_ids"},
};

static const mcp_toolset_t toolset_chatwise_mcp = {
    .name = "chatwise",
    .description = "Intent search over AI-assistant chats (ChatWise), with guidance",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};

static int chatwise_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    int rc = sqltool_check_table(&toolset_chatwise_mcp, err, errcap);
    if (rc != 0)
        return rc;
    chatwise_ctx_t *cc = calloc(1, sizeof *cc);
    if (cc == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    cc->archive = env->archive;
    if ((cc->sql_ctx = toolset_env_sql_ctx(env)) == NULL) {
        free(cc);
        snprintf(err, errcap, "out of memory (or a timezone that is not UTF-8)");
        return UV_ENOMEM;
    }
    *out = cc;
    return 0;
}

static void chatwise_close(void *ctx)
{
    chatwise_ctx_t *cc = ctx;
    if (cc != NULL)
        free(cc->sql_ctx);
    free(cc);
}

const toolset_t toolset_chatwise = {
    .mcp = &toolset_chatwise_mcp,
    .open = chatwise_open,
    .close = chatwise_close,
    .auto_sources = "chatwise",
    .auto_settings = "chatwise_db",
};
