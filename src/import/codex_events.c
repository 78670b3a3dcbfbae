/* codex_events: Codex CLI rollout records to transcript events (see
 * codex_events.h). */
#include "import/codex_events.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/agent_events.h"
#include "util/log.h"

#define CE_TAG "import"

bool codex_events_is_rollout(const char *name)
{
    size_t n = strlen(name);
    return n > 14 && strncmp(name, "rollout-", 8) == 0 && strcmp(name + n - 6, ".jsonl") == 0;
}

static bool is_uuid(const char *s)
{
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if ((i == 8 || i == 13 || i == 18 || i == 23) ? c != '-' : !hex)
            return false;
    }
    return true;
}

void codex_events_session(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n > 6 && strcmp(name + n - 6, ".jsonl") == 0)
        n -= 6;
    if (n >= 37 && name[n - 37] == '-' && is_uuid(name + n - 36)) {
        snprintf(out, cap, "%.36s", name + n - 36);
        return;
    }
    snprintf(out, cap, "%.*s", (int)(n > 1000 ? 1000 : n), name);
}

/* ---- pieces of a record ---------------------------------------------------- */

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Context Codex puts in the history as a user message: not the user's words. */
static bool injected(const char *text)
{
    while (*text == ' ' || *text == '\n' || *text == '\r' || *text == '\t')
        text++;
    return starts(text, "<environment_context>") || starts(text, "<user_instructions>") ||
           starts(text, "# AGENTS.md instructions");
}

/* A new event of the session (a new reference to its fields is not taken). */
static json_t *event(const char *type, const char *session, json_t *ts)
{
    json_t *e = json_pack("{s:s, s:s}", "type", type, "sessionId", session);
    if (e && ts && json_is_string(ts))
        json_object_set(e, "timestamp", ts);
    return e;
}

/* The event e with message {role, content: blocks} (blocks taken). */
static json_t *with_message(json_t *e, const char *role, json_t *blocks)
{
    if (e == NULL || blocks == NULL) {
        json_decref(e);
        json_decref(blocks);
        return NULL;
    }
    json_object_set_new(e, "message", json_pack("{s:s, s:o}", "role", role, "content", blocks));
    return e;
}

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

/* A message item's text parts as text blocks ([] when it has none);
 * *all_injected: every part is injected context. */
static json_t *message_blocks(json_t *content, bool *all_injected)
{
    json_t *blocks = json_array();
    *all_injected = true;
    if (json_is_string(content)) {
        *all_injected = injected(json_string_value(content));
        json_array_append_new(blocks, text_block(json_string_value(content)));
        return blocks;
    }
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part)
    {
        const char *text = str(part, "text");
        const char *type = str(part, "type");
        /* input_text, output_text (and any part with text); images and
         * parts without text are left out. */
        if (text == NULL || (type && strcmp(type, "input_image") == 0))
            continue;
        if (!injected(text))
            *all_injected = false;
        json_array_append_new(blocks, text_block(text));
    }
    return blocks;
}

/* A tool's output as text: a string, the text parts of a list of content
 * items (an image as "[image]"), an older {content, success} object's
 * content, or the value's JSON. */
static json_t *output_text(json_t *out)
{
    if (json_is_string(out))
        return json_incref(out);
    if (json_is_object(out) && json_is_string(json_object_get(out, "content")))
        return json_incref(json_object_get(out, "content"));
    if (json_is_array(out)) {
        size_t cap = 256, used = 0, i;
        char *buf = malloc(cap);
        json_t *item;
        if (buf == NULL)
            return NULL;
        buf[0] = '\0';
        json_array_foreach(out, i, item)
        {
            const char *t = str(item, "text");
            size_t tl = t ? json_string_length(json_object_get(item, "text")) : 7;
            if (t == NULL)
                t = "[image]";
            if (used + tl + 2 > cap) {
                while (used + tl + 2 > cap)
                    cap *= 2;
                char *nb = realloc(buf, cap);
                if (nb == NULL) {
                    free(buf);
                    return NULL;
                }
                buf = nb;
            }
            if (used > 0)
                buf[used++] = '\n';
            memcpy(buf + used, t, tl);
            used += tl;
            buf[used] = '\0';
        }
        json_t *s = json_stringn_nocheck(buf, used);
        free(buf);
        return s;
    }
    char *dumped = out ? json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_t *s = json_string(dumped ? dumped : "");
    free(dumped);
    return s;
}

/* A tool call's arguments: the JSON they hold, else the string itself. */
static json_t *arguments(json_t *args)
{
    if (json_is_string(args)) {
        json_t *parsed =
            json_loadb(json_string_value(args), json_string_length(args), JSON_DECODE_ANY, NULL);
        if (parsed)
            return parsed;
    }
    return args ? json_incref(args) : json_object();
}

static json_t *tool_use(const char *session, json_t *ts, const char *id, const char *name,
                        json_t *input)
{
    json_t *b = json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", id ? id : "", "name",
                          name ? name : "tool", "input", input ? input : json_object());
    return with_message(event("assistant", session, ts), "assistant",
                        b ? json_pack("[o]", b) : NULL);
}

static json_t *tool_result(const char *session, json_t *ts, const char *call_id, json_t *text)
{
    json_t *b = json_pack("{s:s, s:s, s:o}", "type", "tool_result", "tool_use_id",
                          call_id ? call_id : "", "content", text ? text : json_string(""));
    return with_message(event("user", session, ts), "user", b ? json_pack("[o]", b) : NULL);
}

/* A response item as an event; NULL when it is none. */
static json_t *response_item(json_t *p, const char *session, json_t *ts)
{
    const char *type = str(p, "type");
    if (type == NULL)
        return NULL;
    if (strcmp(type, "message") == 0) {
        const char *role = str(p, "role");
        bool ctx;
        json_t *blocks = message_blocks(json_object_get(p, "content"), &ctx);
        if (blocks == NULL || json_array_size(blocks) == 0) {
            json_decref(blocks);
            return NULL;
        }
        const char *kind = role && strcmp(role, "assistant") == 0      ? "assistant"
                           : role && strcmp(role, "user") == 0 && !ctx ? "user"
                                                                       : "system";
        return with_message(event(kind, session, ts), kind, blocks);
    }
    if (strcmp(type, "reasoning") == 0) {
        /* The summary's and the reasoning's own text; never
         * encrypted_content. */
        json_t *blocks = json_array();
        const char *lists[] = {"summary", "content"};
        for (int k = 0; k < 2 && blocks; k++) {
            size_t i;
            json_t *part;
            json_array_foreach(json_object_get(p, lists[k]), i, part)
            {
                const char *text = str(part, "text");
                if (text && text[0])
                    json_array_append_new(
                        blocks, json_pack("{s:s, s:s}", "type", "thinking", "thinking", text));
            }
        }
        if (blocks == NULL || json_array_size(blocks) == 0) {
            json_decref(blocks);
            return NULL;
        }
        return with_message(event("assistant", session, ts), "assistant", blocks);
    }
    if (strcmp(type, "function_call") == 0)
        return tool_use(session, ts, str(p, "call_id"), str(p, "name"),
                        arguments(json_object_get(p, "arguments")));
    if (strcmp(type, "custom_tool_call") == 0)
        return tool_use(session, ts, str(p, "call_id"), str(p, "name"),
                        arguments(json_object_get(p, "input")));
    if (strcmp(type, "local_shell_call") == 0) {
        json_t *a = json_object_get(p, "action");
        return tool_use(session, ts, str(p, "call_id") ? str(p, "call_id") : str(p, "id"),
                        "local_shell", a ? json_incref(a) : NULL);
    }
    if (strcmp(type, "web_search_call") == 0) {
        json_t *a = json_object_get(p, "action");
        return tool_use(session, ts, str(p, "id"), "web_search", a ? json_incref(a) : NULL);
    }
    if (strcmp(type, "function_call_output") == 0 || strcmp(type, "custom_tool_call_output") == 0)
        return tool_result(session, ts, str(p, "call_id"),
                           output_text(json_object_get(p, "output")));
    /* ghost_snapshot, compaction (encrypted), other: nothing to read. */
    return NULL;
}

static json_t *session_meta(json_t *p, const char *session, json_t *ts)
{
    json_t *e = event("session_meta", session, ts);
    static const char *const keys[] = {"id", "cwd", "originator", "source", "model_provider",
                                       "git"};
    for (size_t i = 0; e && i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(p, keys[i]);
        if (v && !json_is_null(v))
            json_object_set(e, keys[i], v);
    }
    if (e && json_is_string(json_object_get(p, "cli_version")))
        json_object_set(e, "version", json_object_get(p, "cli_version"));
    return e;
}

static json_t *compacted(json_t *p, const char *session, json_t *ts)
{
    json_t *e = event("system", session, ts);
    if (e == NULL)
        return NULL;
    json_object_set_new(e, "subtype", json_string("compact_boundary"));
    json_object_set_new(e, "content", json_string("Conversation compacted"));
    const char *summary = str(p, "message");
    if (summary == NULL || summary[0] == '\0')
        return e; /* a boundary without words (a remote compaction) */
    json_object_set_new(e, "isCompactSummary", json_true());
    return with_message(e, "assistant", json_pack("[o]", text_block(summary)));
}

/* Why line's record is malformed, or NULL; *out its event (NULL: none). */
static const char *record(json_t *r, const char *session, json_t **out)
{
    *out = NULL;
    json_t *ts = json_object_get(r, "timestamp");
    if (ts && !json_is_null(ts) &&
        !(json_is_string(ts) &&
          agent_events_time_ok(json_string_value(ts), json_string_length(ts))))
        return "its timestamp is not an ISO 8601 time";
    const char *type = str(r, "type");
    json_t *p = json_object_get(r, "payload");
    if (type == NULL) {
        if (json_object_get(r, "record_type"))
            return NULL; /* an older rollout's state line */
        if (str(r, "id") == NULL)
            return "no \"type\"";
        *out = session_meta(r, session, ts); /* an older rollout's first line */
        return NULL;
    }
    bool needs = strcmp(type, "session_meta") == 0 || strcmp(type, "response_item") == 0 ||
                 strcmp(type, "compacted") == 0 || strcmp(type, "turn_context") == 0 ||
                 strcmp(type, "event_msg") == 0;
    if (needs && !json_is_object(p))
        return "its payload is not an object";
    if (strcmp(type, "session_meta") == 0)
        *out = session_meta(p, session, ts);
    else if (strcmp(type, "response_item") == 0)
        *out = response_item(p, session, ts);
    else if (strcmp(type, "compacted") == 0)
        *out = compacted(p, session, ts);
    else if (!needs && p == NULL)
        *out = response_item(r, session, ts); /* an older rollout's bare item */
    /* turn_context, event_msg (its messages repeat response items'),
     * other records: no event. */
    return NULL;
}

char *codex_events_parse(const char *buf, size_t len, const char *path, const char *session,
                         uint64_t first_line, uint64_t *lines, uint64_t *malformed)
{
    json_t *events = json_array();
    uint64_t line = first_line;
    *lines = *malformed = 0;
    for (const char *p = buf, *end = buf + len; events && p < end;) {
        json_t *r = agent_events__line(&p, end, path, &line, lines, malformed);
        if (r == NULL)
            continue;
        json_t *ev;
        const char *why = record(r, session, &ev);
        json_decref(r);
        if (why != NULL) {
            (*malformed)++;
            log_warn(CE_TAG, "%s:%llu: not a Codex record (%s); skipped", path,
                     (unsigned long long)line, why);
            continue;
        }
        if (ev != NULL)
            json_array_append_new(events,
                                  json_pack("{s:I, s:o}", "line", (json_int_t)line, "event", ev));
    }
    char *text = events ? json_dumps(events, JSON_COMPACT) : NULL;
    json_decref(events);
    return text;
}
