/* tools: the telegram toolset's table: each tool's schemas, annotations,
 * handler and the SQL function that answers it (src/db/sql/telegram/). */
#include "toolsets/telegram/telegram.h"
#include "mcp/schema.h"
#include "toolsets/sqltool.h"
#include "toolsets/telegram/tg_toolset.h"

#define RO       (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define WRITE    (MCP_TOOL_IDEMPOTENT)
#define DESTRUCT (MCP_TOOL_DESTRUCTIVE | MCP_TOOL_OPEN_WORLD)
#define SEND     (MCP_TOOL_OPEN_WORLD)

#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define NOARGS "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
/* A chat or person named by numeric id or @username: one schema per type
 * (a list-valued "type" is refused by several clients). */
#define ID_TYPES "\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]"
#define CHAN(desc)                                                                                 \
    "\"channelId\":{" ID_TYPES ",\"description\":\"" desc " (numeric id or @username)\"}"
#define USER                                                                                       \
    "\"userId\":{" ID_TYPES ",\"description\":\"User (numeric id or "                              \
    "@username)\"}"
#define LIMIT(d)                                                                                   \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" MCP_SCHEMA_INT32_MAX              \
    ",\"description\":\"Default " #d "; larger values are capped (the answer says so)\"}"
#define SOURCE                                                                                     \
    "\"source\":{\"type\":\"string\",\"enum\":[\"archive\",\"live\",\"both\"],\"description\":"    \
    "\"archive (default) reads the store; live reads through the signed-in Telegram user "         \
    "account and stores what it read; both merges the two\"}"
/* A date argument: what parley_when reads (src/db/sql/when.sql). */
#define DATE(n, d)                                                                                 \
    "\"" n "\":{\"type\":\"string\",\"description\":\"" d                                          \
    ": today, yesterday, last week, 3 days ago, 2026-01-31, 2026-01-31T18:00:00Z or epoch "        \
    "seconds; days are local to the configured timezone, and a day as toDate is included "         \
    "whole\"}"
#define TAGS   "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1}}"
#define TAGSRC "\"source\":{\"type\":\"string\",\"enum\":[\"manual\",\"auto\"]}"
#define MSGID                                                                                      \
    "\"messageId\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" MCP_SCHEMA_INT32_MAX "}"
#define TOPIC                                                                                      \
    "\"topicId\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" MCP_SCHEMA_INT32_MAX            \
    ",\"description\":\"Forum topic id\"}"

#define OUT_OBJ "{\"type\":\"object\"}"
#define OUT_LIST(key)                                                                              \
    "{\"type\":\"object\",\"properties\":{\"" key "\":{\"type\":\"array\"},\"limit\":{\"type\":"   \
    "\"integer\"},\"limitCapped\":{\"type\":\"boolean\"}},\"required\":[\"" key "\"]}"
/* An answer whose key k1 is always there, of type t (a JSON Schema). */
#define OUT_KEY(k1, t)                                                                             \
    "{\"type\":\"object\",\"properties\":{\"" k1 "\":" t "},\"required\":[\"" k1 "\"]}"
#define T_INT   "{\"type\":\"integer\"}"
#define T_BOOL  "{\"type\":\"boolean\"}"
#define T_OBJ   "{\"type\":\"object\"}"
#define T_ARRAY "{\"type\":\"array\"}"

static const mcp_tool_def_t tools[] = {
    /* auth / health */
    {"authStatus", "Auth status", "Whether a Telegram account is connected, and which.", NOARGS,
     "{\"type\":\"object\",\"properties\":{\"authenticated\":{\"type\":\"boolean\"}},"
     "\"required\":[\"authenticated\"]}",
     RO, tg_ts_generic, "parley_tg_auth_status"},
    /* authLogin answers by itself (auth.c, through the connector); the SQL
     * function named is authStatus', whose answer it changes. */
    {"authLogin", "Sign a Telegram account in",
     "Signs a Telegram user account in while parley serves, so that its chats, history and "
     "sending become available without a restart. Needs a client with MCP elicitation (URL "
     "mode): the phone number is asked by a form when not given, the login code and then the "
     "two-step verification password on a one-time local page, never in the chat. A wrong code "
     "answers isError with Telegram's reason; call again for a new code. Without elicitation it "
     "says how to sign in on the server (parleyd login telegram).",
     OBJ("\"phone\":{\"type\":\"string\",\"maxLength\":31,\"description\":\"The account's "
         "phone number with its country code (+15551234567); asked when left out\"},"
         "\"account\":{\"type\":\"string\",\"maxLength\":63,"
         "\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9_-]*$\",\"description\":\"A name for the "
         "account (a letter or digit, then letters, digits, _ and -); one Telegram user is one "
         "account; default: the phone's digits\"}",
         ""),
     "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"},"
     "\"message\":{\"type\":\"string\"},\"account\":{\"type\":\"object\"}},"
     "\"required\":[\"status\"]}",
     MCP_TOOL_OPEN_WORLD, tg_ts_auth_login, "parley_tg_auth_status"},
    {"serverStatus", "Server status",
     "Diagnostics: realtime sync state (the live connector's: polling, standby while another "
     "daemon polls, backoff, conflict, unauthorized, stopped), updates received and not yet "
     "stored, sync queue size, jobs in progress, full-text search, last sync time, and the "
     "daemon's own figures.",
     NOARGS,
     "{\"type\":\"object\",\"properties\":{\"realtimeActive\":{\"type\":\"boolean\"},"
     "\"upstream\":{\"type\":\"string\"},\"stagedBatches\":{\"type\":\"integer\"},"
     "\"queueSize\":{\"type\":\"integer\"},\"jobsInProgress\":{\"type\":\"integer\"},"
     "\"ftsEnabled\":{\"type\":\"boolean\"}},\"required\":[\"realtimeActive\",\"queueSize\","
     "\"jobsInProgress\",\"ftsEnabled\"]}",
     RO, tg_ts_generic, "parley_tg_server_status"},
    /* sync */
    {"syncJobsList", "List sync jobs", "Sync jobs, optionally by status or chat.",
     OBJ("\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\",\"idle\","
         "\"error\"]}," CHAN("Chat") "," LIMIT(50),
         ""),
     OUT_LIST("jobs"), RO, tg_ts_generic, "parley_tg_sync_jobs_list"},
    {"syncJobsAdd", "Add a sync job",
     "Schedules the sync of a chat (run by the live sync when a connector is configured).",
     OBJ(CHAN("Chat to sync") ",\"depth\":{\"type\":\"integer\",\"minimum\":1,"
                              "\"maximum\":" MCP_SCHEMA_INT32_MAX ",\"description\":"
                              "\"Messages to fetch back (default 1000)\"}," DATE(
                                  "minDate", "Oldest date to fetch") ",\"enableRealtime\":{"
                                                                     "\"type\":\"boolean\"}",
         "\"channelId\""),
     OUT_KEY("job", T_OBJ), WRITE, tg_ts_generic, "parley_tg_sync_jobs_add"},
    {"syncJobsRetry", "Retry sync jobs", "Sets failed or idle jobs back to pending.",
     OBJ("\"jobId\":{\"type\":\"integer\"}," CHAN("Chat") ",\"allErrors\":{\"type\":\"boolean\"}",
         ""),
     OUT_KEY("updated", T_INT), WRITE, tg_ts_generic, "parley_tg_sync_jobs_retry"},
    {"syncJobsCancel", "Cancel sync jobs", "Stops jobs (status idle, realtime off).",
     OBJ("\"jobId\":{\"type\":\"integer\"}," CHAN("Chat"), ""), OUT_KEY("canceled", T_INT),
     MCP_TOOL_DESTRUCTIVE, tg_ts_generic, "parley_tg_sync_jobs_cancel"},
    {"syncRealtimeSet", "Realtime updates", "Turns realtime updates on or off (needs a connector).",
     OBJ("\"enabled\":{\"type\":\"boolean\"}", "\"enabled\""), OUT_KEY("realtimeActive", T_BOOL),
     WRITE | MCP_TOOL_OPEN_WORLD, tg_ts_realtime_set, "parley_tg_sync_realtime_set"},
    /* channels */
    {"channelsList", "List chats", "Chats in the archive, most recently active first.",
     OBJ(LIMIT(50) ",\"includeInactive\":{\"type\":\"boolean\",\"description\":\"Also chats left "
                   "or deleted\"}",
         ""),
     OUT_LIST("channels"), RO, tg_ts_generic, "parley_tg_channels_list"},
    {"channelsSearch", "Search dialogs",
     "Live search of the signed-in user account's dialogs, then of public chats (needs a "
     "Telegram user account); the chats found are stored.",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         ",\"minLength\":1}," LIMIT(100),
         "\"query\""),
     OUT_LIST("channels"), RO | MCP_TOOL_OPEN_WORLD, tg_ts_channels_search,
     "parley_tg_channels_search"},
    {"channelsGet", "Get a chat", "A chat's record, message count and sync jobs.",
     OBJ(CHAN("Chat"), "\"channelId\""), OUT_KEY("channelId", T_INT), RO, tg_ts_generic,
     "parley_tg_channels_get"},
    {"channelsSetSync", "Enable sync", "Marks a chat for sync (or not).",
     OBJ(CHAN("Chat") ",\"enabled\":{\"type\":\"boolean\"}", "\"channelId\",\"enabled\""),
     OUT_KEY("syncEnabled", T_BOOL), WRITE, tg_ts_generic, "parley_tg_channels_set_sync"},
    {"channelsMetadataGet", "Chat metadata", "Title, username and description of a chat.",
     OBJ(CHAN("Chat"), "\"channelId\""), OUT_KEY("channelId", T_INT), RO, tg_ts_generic,
     "parley_tg_channels_metadata_get"},
    {"channelsMetadataRefresh", "Refresh metadata",
     "Fetches chat metadata (title, username, description, member count) from Telegram and "
     "stores it (needs a connector): the chats named in channelIds, else the connector's chats "
     "least recently refreshed first. Chats refreshed within the hour are skipped unless force; "
     "onlyMissing keeps chats never refreshed. Answers the refreshed records, the chats that "
     "failed and why, and how many were skipped.",
     OBJ("\"channelIds\":{\"type\":\"array\",\"items\":{" ID_TYPES
         "}}," LIMIT(20) ",\"force\":{\"type\":\"boolean\"},\"onlyMissing\":{\"type\":\"boolean\"}",
         ""),
     OUT_LIST("channels"), WRITE | MCP_TOOL_OPEN_WORLD, tg_ts_metadata_refresh,
     "parley_tg_channels_metadata_refresh"},
    {"channelsTagsSet", "Set chat tags", "Replaces a chat's tags of one source (default manual).",
     OBJ(CHAN("Chat") "," TAGS "," TAGSRC, "\"channelId\",\"tags\""), OUT_KEY("tags", T_ARRAY),
     WRITE, tg_ts_generic, "parley_tg_channels_tags_set"},
    {"channelsTagsList", "List chat tags", "A chat's tags with source and confidence.",
     OBJ(CHAN("Chat") "," TAGSRC, "\"channelId\""), OUT_KEY("tags", T_ARRAY), RO, tg_ts_generic,
     "parley_tg_channels_tags_list"},
    {"channelsTagsSearch", "Chats by tag", "Chats carrying a tag.",
     OBJ("\"tag\":{\"type\":\"string\",\"minLength\":1}," TAGSRC "," LIMIT(100), "\"tag\""),
     OUT_LIST("channels"), RO, tg_ts_generic, "parley_tg_channels_tags_search"},
    {"channelsTagsAuto", "Auto-tag chats",
     "Derives tags from each chat's most distinctive words against the whole archive (ts_stat "
     "document frequencies), stored with source auto and a confidence.",
     OBJ("\"channelIds\":{\"type\":\"array\",\"items\":{" ID_TYPES "}}," LIMIT(
             50) ",\"source\":{\"type\":\"string\",\"enum\":[\"auto\"]},\"refreshMetadata\":{"
                 "\"type\":"
                 "\"boolean\"}",
         ""),
     OUT_LIST("channels"), WRITE, tg_ts_generic, "parley_tg_channels_tags_auto"},
    /* topics */
    {"topicsList", "List topics", "Forum topics of a chat, most recently active first.",
     OBJ(CHAN("Forum chat") "," LIMIT(100), "\"channelId\""), OUT_LIST("topics"), RO, tg_ts_generic,
     "parley_tg_topics_list"},
    {"topicsSearch", "Search topics", "Forum topics whose title matches.",
     OBJ(CHAN("Forum chat") ",\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
                            ",\"minLength\":1}," LIMIT(100),
         "\"channelId\",\"query\""),
     OUT_LIST("topics"), RO, tg_ts_generic, "parley_tg_topics_search"},
    /* messages */
    {"messagesList", "List messages", "Messages, newest first, by chat, topic and dates.",
     OBJ(CHAN("Chat") "," TOPIC "," SOURCE
                      "," DATE("fromDate", "From") "," DATE("toDate", "To") "," LIMIT(50),
         ""),
     OUT_LIST("messages"), RO, tg_ts_live_read, "parley_tg_messages_list"},
    {"messagesGet", "Get a message", "One message.",
     OBJ(CHAN("Chat") "," MSGID "," SOURCE, "\"channelId\",\"messageId\""),
     OUT_KEY("message", T_OBJ), RO, tg_ts_live_read, "parley_tg_messages_get"},
    {"messagesContext", "Message context", "Messages before and after one message, in time order.",
     OBJ(CHAN("Chat") "," MSGID ",\"before\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":200},"
                      "\"after\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":200}," SOURCE,
         "\"channelId\",\"messageId\""),
     "{\"type\":\"object\",\"properties\":{\"before\":{\"type\":\"array\"},\"target\":{\"type\":"
     "\"object\"},\"after\":{\"type\":\"array\"}},\"required\":[\"before\",\"target\",\"after\"]}",
     RO, tg_ts_live_read, "parley_tg_messages_context"},
    {"messagesSearch", "Search messages",
     "Full-text search (web syntax: words, \"phrases\", OR, -word; CJK by substring), regex "
     "filter, chats, tags, topic and dates; hits carry a snippet with matches in **. A word "
     "found nowhere is read as the archive's word one letter away: such hits have match "
     "\"near\", and corrections say which word was read as which.",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         "},\"regex\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX "}," SOURCE
         ",\"channelIds\":{\"type\":\"array\",\"items\":{" ID_TYPES "}},"
         "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}," TOPIC
         "," DATE("fromDate", "From") "," DATE("toDate", "To") "," LIMIT(
             100) ",\"caseInsensitive\":{\"type\":\"boolean\"},"
                  "\"fuzzy\":{\"type\":\"boolean\"},\"kind\":{\"type\":\"string\","
                  "\"enum\":[\"links\",\"media\",\"photos\",\"videos\",\"documents\","
                  "\"files\"]},\"orderBy\":{\"type\":\"string\",\"enum\":[\"time\","
                  "\"rank\"]}",
         ""),
     OUT_LIST("messages"), RO | SQLTOOL_SEARCH, tg_ts_live_read, "parley_tg_messages_search"},
    {"messagesSend", "Send a message", "Sends a text message (needs a connector).",
     OBJ(CHAN("Chat") ",\"text\":{\"type\":\"string\",\"minLength\":1}," TOPIC
                      ",\"replyToMessageId\":{\"type\":\"integer\"}",
         "\"channelId\",\"text\""),
     OUT_KEY("messageId", T_INT), SEND, tg_ts_messages_send, "parley_tg_messages_send"},
    {"messagesSendFile", "Send a file", "Sends a file (needs a connector).",
     OBJ(CHAN("Chat") ",\"filePath\":{\"type\":\"string\",\"minLength\":1},\"caption\":{\"type\":"
                      "\"string\"},\"filename\":{\"type\":\"string\"}," TOPIC,
         "\"channelId\",\"filePath\""),
     OUT_KEY("messageId", T_INT), SEND, tg_ts_messages_send_file, "parley_tg_messages_send_file"},
    /* media */
    {"mediaDownload", "Download media",
     "Copies a message's stored file under the export root (outputPath: a file or directory "
     "inside it).",
     OBJ(CHAN("Chat") "," MSGID ",\"outputPath\":{\"type\":\"string\"}",
         "\"channelId\",\"messageId\""),
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":"
     "\"integer\"},\"mimeType\":{\"type\":\"string\"},\"downloadedAt\":{\"type\":\"string\"}},"
     "\"required\":[\"path\",\"bytes\",\"mimeType\",\"downloadedAt\"]}",
     MCP_TOOL_IDEMPOTENT, tg_ts_media_download, "parley_tg_media_download"},
    /* contacts */
    {"contactsSearch", "Search contacts", "People by name, username, alias or phone (fuzzy).",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         ",\"minLength\":1}," LIMIT(50),
         "\"query\""),
     OUT_LIST("contacts"), RO, tg_ts_generic, "parley_tg_contacts_search"},
    {"contactsGet", "Get a contact", "A person's record and activity.", OBJ(USER, "\"userId\""),
     OUT_KEY("userId", T_INT), RO, tg_ts_generic, "parley_tg_contacts_get"},
    {"contactsAliasSet", "Set alias", "A local alias for a person.",
     OBJ(USER ",\"alias\":{\"type\":\"string\",\"minLength\":1}", "\"userId\",\"alias\""),
     OUT_KEY("alias", "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}"), WRITE,
     tg_ts_generic, "parley_tg_contacts_alias_set"},
    {"contactsAliasRemove", "Remove alias", "Removes a person's alias.", OBJ(USER, "\"userId\""),
     OUT_KEY("removed", T_BOOL), WRITE, tg_ts_generic, "parley_tg_contacts_alias_remove"},
    {"contactsTagsAdd", "Tag a contact", "Adds tags to a person.",
     OBJ(USER "," TAGS, "\"userId\",\"tags\""), OUT_KEY("tags", T_ARRAY), WRITE, tg_ts_generic,
     "parley_tg_contacts_tags_add"},
    {"contactsTagsRemove", "Untag a contact", "Removes tags from a person.",
     OBJ(USER "," TAGS, "\"userId\",\"tags\""), OUT_KEY("tags", T_ARRAY), WRITE, tg_ts_generic,
     "parley_tg_contacts_tags_remove"},
    {"contactsNotesSet", "Set notes", "Local notes about a person (empty clears them).",
     OBJ(USER ",\"notes\":{\"type\":\"string\"}", "\"userId\",\"notes\""), OUT_KEY("userId", T_INT),
     WRITE, tg_ts_generic, "parley_tg_contacts_notes_set"},
    /* groups */
    {"groupsList", "List groups", "Groups, supergroups, forums and channels, optionally by title.",
     OBJ("\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX "}," LIMIT(100), ""),
     OUT_LIST("groups"), RO, tg_ts_generic, "parley_tg_groups_list"},
    {"groupsInfo", "Group info",
     "A group's record, counts, members and most active senders from the archive; with a "
     "connector also \"live\": the chat, its member count and administrators as Telegram has "
     "them now (\"liveError\" says when that part failed).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_KEY("channelId", T_INT), RO | MCP_TOOL_OPEN_WORLD,
     tg_ts_groups_info, "parley_tg_groups_info"},
    {"groupsRename", "Rename a group", "Renames a group (needs a connector).",
     OBJ(CHAN("Group") ",\"name\":{\"type\":\"string\",\"minLength\":1}", "\"channelId\",\"name\""),
     OUT_KEY("name", "{\"type\":\"string\"}"), DESTRUCT, tg_ts_group_admin,
     "parley_tg_groups_rename"},
    {"groupsMembersAdd", "Add members", "Adds members (needs a connector).",
     OBJ(CHAN("Group") ",\"userIds\":{\"type\":\"array\",\"minItems\":1,\"items\":{" ID_TYPES "}}",
         "\"channelId\",\"userIds\""),
     OUT_KEY("failed", T_ARRAY), DESTRUCT, tg_ts_group_admin, "parley_tg_groups_members_add"},
    {"groupsMembersRemove", "Remove members", "Removes members (needs a connector).",
     OBJ(CHAN("Group") ",\"userIds\":{\"type\":\"array\",\"minItems\":1,\"items\":{" ID_TYPES "}}",
         "\"channelId\",\"userIds\""),
     OUT_KEY("removed", T_ARRAY), DESTRUCT, tg_ts_group_admin, "parley_tg_groups_members_remove"},
    {"groupsInviteLinkGet", "Invite link",
     "A group's invite link (needs a connector). The Bot API has no way to read it without "
     "exporting a new primary link, which replaces the previous one: not served in read-only "
     "mode.",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_OBJ, DESTRUCT, tg_ts_group_admin,
     "parley_tg_groups_invite_link_get"},
    {"groupsInviteLinkRevoke", "Revoke invite link", "Revokes the invite link (needs a connector).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_OBJ, DESTRUCT, tg_ts_group_admin,
     "parley_tg_groups_invite_link_revoke"},
    {"groupsJoin", "Join a group", "Joins by invite link or username (needs a connector).",
     OBJ("\"invite\":{\"type\":\"string\",\"minLength\":1}", "\"invite\""), OUT_OBJ, SEND,
     tg_ts_group_admin, "parley_tg_groups_join"},
    {"groupsLeave", "Leave a group", "Leaves a group (needs a connector).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_KEY("left", T_BOOL), DESTRUCT, tg_ts_group_admin,
     "parley_tg_groups_leave"},
};

const mcp_toolset_t toolset_telegram_mcp = {
    .name = "telegram",
    .description = "Telegram chats, messages, topics, contacts and groups (vNext schema)",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};
