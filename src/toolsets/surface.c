/* surface: the default selection's table (see surface.h). */
#include "toolsets/surface.h"

const mcp_brief_def_t surface_default[] = {
    /* The one search, and the one timeline, over every source. */
    {"recall", "recall", NULL,
     "The one search over everything parley holds: Telegram chats, ChatWise AI chats, agents' "
     "past sessions, a memory-lane database, Bluesky posts. Words match in all their forms; "
     "\"phrases\", OR, -word. Start here to find anything that was said; each hit's next is the "
     "call that opens it."},
    {"recall", "recall_timeline", NULL,
     "What happened in a time window across every source: counts and the most active chats. "
     "For \"what was going on last week\"; to find words, use recall."},
    /* Telegram: what recall cannot do (the inline surface's task-first tools). */
    {"inline", "conversations.list", "telegram_chats",
     "Telegram: find a chat by a person's name, @username or title (ranked; bestMatch is the "
     "chatId to use), or list recent or unread chats. Gives the chatId the other telegram_ "
     "tools take."},
    {"inline", "messages.list", "telegram_history",
     "Telegram: a chat's history, newest first (chatId, or userId for a person's direct chat; "
     "since/until, sent/received, links/media). Page back with offsetId = nextOffsetId. To "
     "find words, use recall."},
    {"inline", "messages.unread", "telegram_unread",
     "Telegram: unread messages across chats, newest first."},
    {"inline", "messages.context", "telegram_open",
     "Telegram: open a message (a recall hit's next) with the messages before and after it."},
    {"inline", "messages.mark_read", "telegram_mark_read",
     "Telegram: move a chat's read marker up (default: to its newest message)."},
    {"inline", "messages.send", "telegram_send",
     "Telegram: send a text message to a chat (chatId) or a person (userId); replyToMessageId "
     "replies."},
    {"inline", "files.upload", "telegram_upload",
     "Telegram: store a file (base64, or an https url) to send with telegram_send_file."},
    {"inline", "messages.send_media", "telegram_send_file",
     "Telegram: send a stored file (fileId from telegram_upload) to a chat or a person, with "
     "an optional caption."},
    {"telegram", "authLogin", "telegram_login",
     "Telegram: sign your own account in while parley serves (the phone number by a form; the "
     "code and the 2FA password on a one-time local page, never in the chat)."},
    /* ChatWise AI chats. */
    {"chatwise", "gather_chats", "chatwise_open",
     "ChatWise AI chats: open 1-20 chats (a recall hit's chatId) in full; several are aligned "
     "on the messages they share (a common system prompt)."},
    /* Agents' own past sessions. */
    {"memory", "bootstrap_memory", "memory_bootstrap",
     "Your own past sessions: recover your context in one call (the latest continuation, the "
     "work before it, the foundational era) within token_budget. Call it first in a new "
     "session."},
    {"memory", "get_message_by_id", "memory_open",
     "Your own past sessions: one message in full (a recall hit's next), with its session and "
     "era."},
    /* Bluesky, live. */
    {"bluesky", "login", "bluesky_login",
     "Bluesky: sign in with an app password (asked through your client, never in the chat)."},
    {"bluesky", "profile", "bluesky_profile", "Bluesky: a person's profile, live."},
    {"bluesky", "search", "bluesky_search",
     "Bluesky: search posts on the whole network, live (recall searches only the posts parley "
     "holds)."},
};

const int surface_default_count = (int)(sizeof surface_default / sizeof surface_default[0]);
