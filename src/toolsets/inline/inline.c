/* inline: the inline toolset's context, handler and table (see inline.h). */
#include "toolsets/inline/inline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolsets/sqltool.h"

/* The system's time zone database, for checking the timezone setting. */
#define INLINE_ZONEINFO "/usr/share/zoneinfo"

typedef struct inline_ctx_s {
    archive_t *archive;
    char sql_ctx[160]; /* {"timezone": ...}: what the SQL functions get as ctx */
} inline_ctx_t;

/* Every tool: its SQL function answers. */
static void inline_tool(mcp_call_t *c)
{
    inline_ctx_t *ic = mcp_call_context(c);
    sqltool_run(c, ic->archive, sqltool_mode(c), c->tool->def->sql_function, NULL, ic->sql_ctx,
                sqltool_done, c);
}

/* ---- definitions ------------------------------------------------------------ */

#define RO    (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define WRITE (MCP_TOOL_IDEMPOTENT)

#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define NOARGS "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
#define CHAT_ID                                                                                    \
    "\"chatId\":{\"type\":\"integer\",\"description\":\"A chat's id (see conversations_list)\"}"
#define USER_ID                                                                                    \
    "\"userId\":{\"type\":\"integer\",\"description\":\"A person's id: their direct chat "         \
    "(instead "                                                                                    \
    "of chatId)\"}"
#define LIMIT(d, cap)                                                                              \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" #cap                              \
    ",\"description\":\"Default " #d "\"}"
#define TIME(n, d)                                                                                 \
    "\"" n "\":{\"type\":[\"string\",\"integer\"],\"description\":\"" d                            \
    ": today, yesterday, 3d ago, 12h ago, 2026-01-31, 2026-01-31T18:00:00Z or epoch seconds; "     \
    "days are local to the configured timezone\"}"
#define SINCE TIME("since", "From (inclusive)")
#define UNTIL TIME("until", "Until (a day given here is included whole)")
#define CONTENT                                                                                    \
    "\"content\":{\"type\":\"string\",\"enum\":[\"all\",\"links\",\"media\",\"photos\","           \
    "\"videos\","                                                                                  \
    "\"documents\",\"files\"]}"

#define OUT_ITEMS                                                                                  \
    "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\"}},\"required\":["          \
    "\"items\"]}"

static const mcp_tool_def_t tools[] = {
    {"conversations.list", "Find or list conversations",
     "Recent chats, or the chats matching query (a person's name or username, a title, or a chat "
     "id), ranked: a direct chat with a person beats a group that mentions them. Each item has "
     "match {score, reasons}; bestMatch is the chat id to use when one clearly leads (else "
     "null). Use it first, then messages_list or messages_search with that chatId.",
     OBJ("\"query\":{\"type\":\"string\"},\"unreadOnly\":{\"type\":\"boolean\"},\"sort\":{"
         "\"type\":\"string\",\"enum\":[\"relevance\",\"recent\",\"unread\"],\"description\":"
         "\"Default: relevance with a query, else recent\"}," LIMIT(20, 100),
         ""),
     "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\"},\"bestMatch\":{\"type\":["
     "\"integer\",\"null\"]}},\"required\":[\"items\",\"bestMatch\"]}",
     RO, inline_tool, "parley_inline_conversations_list"},
    {"conversations.get", "Get a conversation",
     "One chat: kind, title, the person of a direct chat, last message, unread count, message "
     "count.",
     OBJ(CHAT_ID "," USER_ID, ""), "{\"type\":\"object\",\"required\":[\"chatId\"]}", RO,
     inline_tool, "parley_inline_conversations_get"},
    {"messages.list", "List messages",
     "A chat's messages (chatId, or userId for the direct chat with a person), newest first. "
     "direction sent|received; since/until; unreadOnly; content. Page back with offsetId = "
     "the answer's nextOffsetId.",
     OBJ(CHAT_ID "," USER_ID ",\"direction\":{\"type\":\"string\",\"enum\":[\"sent\",\"received\","
                 "\"all\"]}," SINCE "," UNTIL ",\"unreadOnly\":{\"type\":\"boolean\"}," CONTENT
                 ",\"offsetId\":{\"type\":\"integer\"}," LIMIT(50, 200),
         ""),
     OUT_ITEMS, RO, inline_tool, "parley_inline_messages_list"},
    {"messages.search", "Search one chat",
     "Search within one chat (chatId or userId): query in web-search syntax (words, \\\"phrases"
     "\\\", OR, -word; CJK by substring), content and since/until. Without a query: the chat's "
     "history filtered by content and time.",
     OBJ(CHAT_ID "," USER_ID ",\"query\":{\"type\":\"string\"}," CONTENT "," SINCE "," UNTIL
                 "," LIMIT(50, 200),
         ""),
     OUT_ITEMS, RO, inline_tool, "parley_inline_messages_search"},
    {"messages.unread", "Unread messages",
     "Messages others sent that are above each chat's read marker, across chats, newest first; "
     "since/until and content narrow them. Answers {scannedChats, items}.",
     OBJ(SINCE "," UNTIL "," CONTENT "," LIMIT(50, 200), ""),
     "{\"type\":\"object\",\"properties\":{\"scannedChats\":{\"type\":\"integer\"},\"items\":{"
     "\"type\":\"array\"}},\"required\":[\"scannedChats\",\"items\"]}",
     RO, inline_tool, "parley_inline_messages_unread"},
    {"messages.context", "Messages around one", "Messages before and after one, in time order.",
     OBJ(CHAT_ID "," USER_ID ",\"messageId\":{\"type\":\"integer\"},\"before\":{\"type\":"
                 "\"integer\",\"minimum\":0,\"maximum\":100},\"after\":{\"type\":\"integer\","
                 "\"minimum\":0,\"maximum\":100}",
         "\"messageId\""),
     "{\"type\":\"object\",\"required\":[\"before\",\"target\",\"after\"]}", RO, inline_tool,
     "parley_inline_messages_context"},
    {"messages.mark_read", "Mark as read",
     "Moves a chat's read marker up to maxId (default: its newest message); it never moves "
     "back. Answers the marker and the unread count.",
     OBJ(CHAT_ID "," USER_ID ",\"maxId\":{\"type\":\"integer\"}", ""),
     "{\"type\":\"object\",\"required\":[\"chatId\",\"readMaxId\",\"unreadCount\"]}", WRITE,
     inline_tool, "parley_inline_messages_mark_read"},
    {"people.search", "Find people",
     "People by name, username, alias or phone number, each with the id of their direct chat "
     "when there is one.",
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1}," LIMIT(20, 100), "\"query\""), OUT_ITEMS,
     RO, inline_tool, "parley_inline_people_search"},
    {"account.me", "Who am I", "The account's own user and its connected accounts.", NOARGS,
     "{\"type\":\"object\"}", RO, inline_tool, "parley_inline_account_me"},
};

const mcp_toolset_t toolset_inline_mcp = {
    .name = "inline",
    .description = "Task-first chat tools: ranked conversation lookup, history, search, unread",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};

/* ---- context ---------------------------------------------------------------- */

/* An IANA zone name the system knows (no "..", no leading '/'). */
static bool zone_known(const char *tz)
{
    if (strcmp(tz, "UTC") == 0)
        return true;
    if (tz[0] == '\0' || tz[0] == '/' || strstr(tz, "..") != NULL)
        return false;
    for (const char *p = tz; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '/' || *p == '_' || *p == '-' || *p == '+'))
            return false;
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", INLINE_ZONEINFO, tz);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int inline_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    for (int i = 0; i < toolset_inline_mcp.ntools; i++) {
        const mcp_tool_def_t *d = &toolset_inline_mcp.tools[i];
        if (!archive_fn_valid(d->sql_function)) {
            snprintf(err, errcap, "inline: tool %s names no valid SQL function", d->name);
            return UV_EINVAL;
        }
    }
    /* Read once at start-up, before anything is served: a stat. */
    if (!zone_known(env->cfg->timezone)) {
        snprintf(err, errcap,
                 "timezone: '%s' is not a time zone of this system (an IANA name such as "
                 "Europe/Berlin, or UTC)",
                 env->cfg->timezone);
        return UV_EINVAL;
    }
    inline_ctx_t *ic = calloc(1, sizeof *ic);
    if (ic == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    ic->archive = env->archive;
    snprintf(ic->sql_ctx, sizeof ic->sql_ctx, "{\"timezone\":\"%s\"}", env->cfg->timezone);
    *out = ic;
    return 0;
}

void inline_close(void *ctx)
{
    free(ctx);
}
