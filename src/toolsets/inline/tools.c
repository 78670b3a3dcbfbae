/* tools: the inline toolset's table: each tool's schemas, annotations,
 * handler and SQL function (src/db/sql/inline/), and its resource
 * templates. */
#include "toolsets/inline/inline.h"
#include "toolsets/inline/inline_internal.h"
#include "toolsets/sqltool.h"

#define RO    (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define WRITE (MCP_TOOL_IDEMPOTENT)
#define SEND  (MCP_TOOL_OPEN_WORLD)

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
    "\"" n "\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"description\":\"" d     \
    ": today, yesterday, last week, 3 days ago, 12h ago, 2026-01-31, 2026-01-31T18:00:00Z or "     \
    "epoch seconds; "                                                                              \
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
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         "},\"unreadOnly\":{\"type\":\"boolean\"},\"sort\":{"
         "\"type\":\"string\",\"enum\":[\"relevance\",\"recent\",\"unread\"],\"description\":"
         "\"Default: relevance with a query, else recent\"}," LIMIT(20, 100),
         ""),
     "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\"},\"bestMatch\":{\"anyOf\":"
     "[{"
     "\"type\":\"integer\"},{\"type\":\"null\"}]}},\"required\":[\"items\",\"bestMatch\"]}",
     RO, inline_tool, "parley_inline_conversations_list"},
    {"conversations.get", "Get a conversation",
     "One chat: kind, title, the person of a direct chat, last message, unread count, message "
     "count.",
     OBJ(CHAT_ID "," USER_ID, ""),
     "{\"type\":\"object\",\"properties\":{\"chatId\":{\"type\":\"integer\"}},\"required\":["
     "\"chatId\"]}",
     RO, inline_tool, "parley_inline_conversations_get"},
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
     "Search within one chat (chatId or userId): query in web-search syntax (words, \"phrases"
     "\", OR, -word; CJK by substring), content and since/until. Without a query: the chat's "
     "history filtered by content and time.",
     OBJ(CHAT_ID "," USER_ID ",\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
                 "}," CONTENT "," SINCE "," UNTIL "," LIMIT(50, 200),
         ""),
     OUT_ITEMS, RO | SQLTOOL_SEARCH, inline_tool, "parley_inline_messages_search"},
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
     "{\"type\":\"object\",\"properties\":{\"before\":{\"type\":\"array\"},\"target\":{\"type\":"
     "\"object\"},\"after\":{\"type\":\"array\"}},"
     "\"required\":[\"before\",\"target\",\"after\"]}",
     RO, inline_tool, "parley_inline_messages_context"},
    {"messages.mark_read", "Mark as read",
     "Moves a chat's read marker up to maxId (default: its newest message); it never moves "
     "back. Answers the marker and the unread count.",
     OBJ(CHAT_ID "," USER_ID ",\"maxId\":{\"type\":\"integer\"}", ""),
     "{\"type\":\"object\",\"properties\":{\"chatId\":{\"type\":\"integer\"},\"readMaxId\":{"
     "\"type\":\"integer\"},\"unreadCount\":{\"type\":\"integer\"}},"
     "\"required\":[\"chatId\",\"readMaxId\",\"unreadCount\"]}",
     WRITE, inline_tool, "parley_inline_messages_mark_read"},
    {"people.search", "Find people",
     "People by name, username, alias or phone number, each with the id of their direct chat "
     "when there is one.",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         ",\"minLength\":1}," LIMIT(20, 100),
         "\"query\""),
     OUT_ITEMS, RO, inline_tool, "parley_inline_people_search"},
    {"messages.send", "Send a message",
     "Sends text to a chat (chatId) or a person (userId: their direct chat), optionally as a "
     "reply (needs a connected account). Answers the sent message's chatId, messageId, date and "
     "uri.",
     OBJ(CHAT_ID "," USER_ID ",\"text\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
                 "\"replyToMessageId\":{\"type\":\"integer\"}",
         "\"text\""),
     "{\"type\":\"object\",\"properties\":{\"chatId\":{\"type\":\"integer\"},\"messageId\":{"
     "\"type\":\"integer\"}},"
     "\"required\":[\"chatId\",\"messageId\"]}",
     SEND, inline_messages_send, "parley_inline_messages_send"},
    {"messages.send_batch", "Send several messages",
     "Sends up to 20 messages in order, paced like single sends; each is answered in results "
     "(ok with messageId, or the error), and one failing does not stop the others.",
     OBJ("\"items\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":20,\"items\":{\"type\":"
         "\"object\",\"properties\":{" CHAT_ID "," USER_ID ",\"text\":{\"type\":\"string\","
         "\"minLength\":1,\"maxLength\":4096},\"replyToMessageId\":{\"type\":\"integer\"}},"
         "\"required\":[\"text\"],\"additionalProperties\":false}}",
         "\"items\""),
     "{\"type\":\"object\",\"properties\":{\"results\":{\"type\":\"array\"}},\"required\":["
     "\"results\"]}",
     SEND, inline_messages_send_batch, "parley_inline_messages_send_batch"},
    {"conversations.create", "Create a conversation",
     "Creates a group or channel with a title (needs a connected account that can create chats; "
     "the answer says what to do instead when it cannot).",
     OBJ("\"title\":{\"type\":\"string\",\"minLength\":1},\"kind\":{\"type\":\"string\","
         "\"enum\":[\"group\",\"channel\"]},\"userIds\":{\"type\":\"array\",\"items\":{"
         "\"type\":\"integer\"}}",
         "\"title\""),
     "{\"type\":\"object\"}", SEND, inline_conversations_create,
     "parley_inline_conversations_create"},
    {"files.upload", "Upload a file",
     "Stores a file to send later with messages_send_media: exactly one of base64 (the bytes, "
     "or a data: URL) or url (https; never a local or private address). fileName and mimeType "
     "are derived when absent. Answers fileId, kind (photo|video|document), fileUniqueId, size, "
     "mimeType, fileName.",
     OBJ("\"base64\":{\"type\":\"string\",\"minLength\":1},\"url\":{\"type\":\"string\","
         "\"minLength\":1},\"fileName\":{\"type\":\"string\"},\"mimeType\":{\"type\":"
         "\"string\"}",
         ""),
     "{\"type\":\"object\",\"properties\":{\"fileId\":{\"type\":\"string\"},\"kind\":{\"type\":"
     "\"string\"},\"fileUniqueId\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
     "\"mimeType\":{\"type\":\"string\"},\"fileName\":{\"type\":\"string\"}},"
     "\"required\":[\"fileId\",\"kind\",\"fileUniqueId\",\"size\",\"mimeType\",\"fileName\"]}",
     MCP_TOOL_OPEN_WORLD | MCP_TOOL_IDEMPOTENT, inline_files_upload, "parley_inline_files_get"},
    {"files.get", "A file's record",
     "An uploaded file's metadata and its resource URI (inline://file/{fileId}).",
     OBJ("\"fileId\":{\"type\":\"string\",\"minLength\":1}", "\"fileId\""),
     "{\"type\":\"object\",\"properties\":{\"fileId\":{\"type\":\"string\"}},\"required\":["
     "\"fileId\"]}",
     RO, inline_tool, "parley_inline_files_get"},
    {"messages.send_media", "Send a file",
     "Sends an uploaded file (fileId from files_upload) to a chat (chatId) or a person (userId), "
     "with an optional caption and reply target (needs a connected account).",
     OBJ(CHAT_ID "," USER_ID ",\"fileId\":{\"type\":\"string\",\"minLength\":1},\"caption\":"
                 "{\"type\":\"string\",\"maxLength\":1024},\"replyToMessageId\":{\"type\":"
                 "\"integer\"}",
         "\"fileId\""),
     "{\"type\":\"object\",\"properties\":{\"chatId\":{\"type\":\"integer\"},\"messageId\":{"
     "\"type\":\"integer\"}},"
     "\"required\":[\"chatId\",\"messageId\"]}",
     SEND, inline_messages_send_media, "parley_inline_messages_send_media"},
    {"account.me", "Who am I", "The account's own user and its connected accounts.", NOARGS,
     "{\"type\":\"object\"}", RO, inline_tool, "parley_inline_account_me"},
};

static const mcp_resource_def_t resources[] = {
    {"inline://chat/{chatId}", "chat", "A conversation",
     "A chat as conversations_get answers it (JSON).", "application/json", inline_resource_read,
     inline_resource_watch},
    {"inline://chat/{chatId}/message/{messageId}", "message", "A message",
     "One message as messages_list answers it (JSON).", "application/json", inline_resource_read,
     inline_resource_watch},
    {"inline://file/{fileId}", "file", "An uploaded file",
     "An uploaded file's record as files_get answers it (JSON).", "application/json",
     inline_resource_read, inline_resource_watch},
};

const mcp_toolset_t toolset_inline_mcp = {
    .name = "inline",
    .description = "Task-first chat tools: ranked conversation lookup, history, search, unread, "
                   "sending",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
    .resources = resources,
    .nresources = (int)(sizeof resources / sizeof resources[0]),
};
