/* memory_fit: bootstrap_memory's answer within a token budget, as JSON or
 * plain text (see memory_fit.h). */
#include "archive/memory_fit.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

int memory_fit_init(memory_fit_t *f, long tokens, const char *project)
{
    f->limit = tokens * MEMORY_CHARS_PER_TOKEN;
    f->budget = f->limit - MEMORY_BOOT_WRAPPER;
    f->out = json_pack("{s:I, s:I, s:{}}", "token_budget", (json_int_t)tokens, "approx_tokens",
                       (json_int_t)0, "left_out");
    if (f->out && project)
        json_object_set_new(f->out, "project", json_string(project));
    return f->out ? 0 : UV_ENOMEM;
}

void memory_fit_free(memory_fit_t *f)
{
    json_decref(f->out);
    f->out = NULL;
}

/* The characters v takes in the answer (compact JSON), or LONG_MAX. */
static long json_chars(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    long n = s ? (long)strlen(s) : LONG_MAX;
    free(s);
    return n;
}

/* Keeps items of arr (in order) while they fit; returns how many. */
static size_t keep_fitting(memory_fit_t *f, json_t *arr, json_t *kept)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        long len = json_chars(m) + 1; /* and its comma */
        if (len > f->budget)
            break;
        f->budget -= len;
        json_array_append(kept, m);
        n++;
    }
    return n;
}

/* How many bytes of text (at most n) end at a character boundary. */
static size_t utf8_cut(const char *text, size_t n)
{
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--;
    return n;
}

void memory_fit_continuation(memory_fit_t *f, json_t *v)
{
    json_t *left = json_object_get(f->out, "left_out");
    if (!json_is_object(v)) {
        json_object_set_new(f->out, "continuation", json_null());
        return;
    }
    long len = json_chars(v);
    if (len <= f->budget) {
        f->budget -= len;
        json_object_set(f->out, "continuation", v);
        return;
    }
    const char *text = json_string_value(json_object_get(v, "content"));
    json_t *cut = json_deep_copy(v);
    long room = f->budget - (len - (long)(text ? strlen(text) : 0)) - 8;
    if (cut == NULL || text == NULL || room <= 0) {
        json_decref(cut);
        json_object_set_new(f->out, "continuation", json_null());
        json_object_set_new(left, "continuation",
                            json_pack("{s:s}", "how", "get_latest_continuation"));
        return;
    }
    /* Cut at a character boundary (UTF-8), and leave room for escapes. */
    size_t n = utf8_cut(text, (size_t)room / 2);
    json_object_set_new(cut, "content", json_stringn(text, n));
    json_object_set_new(cut, "content_cut", json_true());
    f->budget -= json_chars(cut);
    json_object_set_new(f->out, "continuation", cut);
    json_object_set_new(left, "continuation",
                        json_pack("{s:s}", "how", "get_latest_continuation for all of it"));
}

void memory_fit_before(memory_fit_t *f, json_t *v)
{
    json_t *left = json_object_get(f->out, "left_out");
    json_t *all = json_object_get(v, "messages");
    json_t *kept = json_array();
    size_t n = keep_fitting(f, all, kept);
    json_object_set_new(f->out, "messages_before", kept);
    /* More before them: some left out here, or a next page (a string;
     * null when the page was the last). */
    if (n < json_array_size(all) || json_is_string(json_object_get(v, "next_reference_id"))) {
        json_t *last = json_array_get(kept, json_array_size(kept) - 1);
        json_object_set_new(
            left, "messages_before",
            json_pack(
                "{s:s, s:O}", "how", "get_messages_before with reference_id = next_reference_id",
                "next_reference_id",
                last ? json_object_get(last, "id")
                     : json_object_get(json_object_get(f->out, "continuation"), "message_id")));
    }
}

void memory_fit_era(memory_fit_t *f, json_t *v)
{
    json_t *left = json_object_get(f->out, "left_out");
    if (json_object_get(v, "error") || !json_is_object(v)) {
        json_object_set_new(f->out, "era", json_null());
        if (json_object_get(v, "error"))
            json_object_set(left, "era", json_object_get(v, "error"));
        return;
    }
    json_object_set(f->out, "era", json_object_get(v, "era"));
    f->budget -= json_chars(json_object_get(v, "era"));
    json_t *all = json_object_get(v, "messages");
    json_t *kept = json_array();
    size_t n = keep_fitting(f, all, kept);
    json_object_set_new(f->out, "era_messages", kept);
    json_int_t total = json_integer_value(json_object_get(v, "total"));
    if ((json_int_t)n < total)
        json_object_set_new(
            left, "era_messages",
            json_pack("{s:s, s:I, s:I}", "how",
                      "get_era_summary with the era's name and offset = next_offset", "next_offset",
                      (json_int_t)n, "not_included", total - (json_int_t)n));
}

char *memory_fit_json(memory_fit_t *f)
{
    json_object_set_new(
        f->out, "note",
        json_string(json_object_size(json_object_get(f->out, "left_out")) > 0
                        ? "Kept within the token budget (the whole answer): the "
                          "continuation, then the newest work, then the foundational era "
                          "from its start; left_out says what was not included and how to "
                          "page for it."
                        : "Everything fit within the token budget."));
    json_t *kinds[] = {json_object_get(f->out, "era_messages"),
                       json_object_get(f->out, "messages_before")};
    for (;;) {
        char *text = json_dumps(f->out, JSON_COMPACT);
        if (text == NULL)
            return NULL;
        long len = (long)strlen(text);
        json_int_t approx =
            (json_int_t)((len + MEMORY_CHARS_PER_TOKEN - 1) / MEMORY_CHARS_PER_TOKEN);
        if (json_integer_value(json_object_get(f->out, "approx_tokens")) != approx) {
            /* approx_tokens is part of the text: once more with its value. */
            json_object_set_new(f->out, "approx_tokens", json_integer(approx));
            free(text);
            continue;
        }
        if (len <= f->limit)
            return text;
        free(text);
        size_t k = 0;
        while (k < 2 && json_array_size(kinds[k]) == 0)
            k++;
        if (k == 2) /* nothing left to drop: the wrapper alone is over */
            return json_dumps(f->out, JSON_COMPACT);
        json_array_remove(kinds[k], json_array_size(kinds[k]) - 1);
        json_object_set_new(json_object_get(f->out, "left_out"),
                            k == 0 ? "era_messages_cut" : "messages_before_cut",
                            json_string("shortened to fit the budget; page as above"));
    }
}

bool memory_fit_empty(const json_t *answer)
{
    return !json_is_object(json_object_get(answer, "continuation")) &&
           json_array_size(json_object_get(answer, "messages_before")) == 0 &&
           json_array_size(json_object_get(answer, "era_messages")) == 0;
}

/* ---- plain text ------------------------------------------------------------------ */

/* A text of at most cap bytes being written. */
typedef struct text_s {
    char *s;
    size_t len, cap;
    bool full; /* something was left out for want of room */
} text_t;

/* Appends the whole of what printf makes, or nothing when it does not fit
 * (then full). */
__attribute__((format(printf, 2, 3))) static bool put(text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n > t->cap - t->len) {
        t->full = true;
        return false;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
    return true;
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* One message: "- [when] who: content" (the content of a thought or a
 * tool's message says what it is). Whole, or not at all. */
static bool put_message(text_t *t, const json_t *m)
{
    return put(t, "- [%s] %s: %s\n", str_of(m, "created_at"), str_of(m, "sender_id"),
               str_of(m, "content"));
}

/* Messages while they fit; how many. */
static size_t put_messages(text_t *t, const json_t *arr)
{
    size_t i, n = 0;
    const json_t *m;
    json_array_foreach(arr, i, m)
    {
        if (!put_message(t, m))
            break;
        n++;
    }
    return n;
}

char *memory_fit_text(const json_t *answer, long limit)
{
    text_t t = {.cap = limit > 0 ? (size_t)limit : 0};
    t.s = malloc(t.cap + 1);
    if (t.s == NULL)
        return NULL;
    t.s[0] = '\0';
    const json_t *cont = json_object_get(answer, "continuation");
    const char *project = json_string_value(json_object_get(answer, "project"));
    if (project)
        put(&t, "Memory of earlier sessions in %s (the latest continuation first).\n\n", project);
    else
        put(&t, "Memory of earlier sessions (the latest continuation first).\n\n");
    if (json_is_object(cont)) {
        put(&t, "## Continuation: where the last session left off (%s, message %s)\n",
            str_of(cont, "timestamp"), str_of(cont, "message_id"));
        const char *content = str_of(cont, "content");
        size_t n = strlen(content), room = t.cap - t.len;
        if (n + 1 > room) { /* cut: the rest is in get_latest_continuation */
            n = room > 1 ? utf8_cut(content, room - 1) : 0;
            t.full = true;
        }
        memcpy(t.s + t.len, content, n);
        t.len += n;
        t.s[t.len] = '\0';
        put(&t, "\n");
        if (json_is_true(json_object_get(cont, "content_cut")))
            put(&t, "[cut to fit the budget: get_latest_continuation has all of it]\n");
    } else {
        put(&t, "## No continuation yet (no session of this project was compacted)\n");
    }
    const json_t *before = json_object_get(answer, "messages_before");
    if (json_array_size(before) > 0 && put(&t, "\n## The work before it (newest first)\n"))
        put_messages(&t, before);
    const json_t *era = json_object_get(answer, "era");
    const json_t *era_msgs = json_object_get(answer, "era_messages");
    if (json_is_object(era) && json_array_size(era_msgs) > 0 &&
        put(&t, "\n## The foundational era \"%s\" (from its start)\n", str_of(era, "name")))
        put_messages(&t, era_msgs);
    /* What was left out, and how to page for it, while it fits. */
    const json_t *left = json_object_get(answer, "left_out");
    if (json_object_size(left) > 0 && put(&t, "\n## Left out (the memory tools page for it)\n")) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)left, key, v)
        {
            const json_t *ref = json_object_get(v, "next_reference_id");
            const json_t *off = json_object_get(v, "next_offset");
            if (json_is_string(v))
                put(&t, "- %s: %s\n", key, json_string_value(v));
            else if (json_is_string(ref))
                put(&t, "- %s: %s (%s)\n", key, str_of(v, "how"), json_string_value(ref));
            else if (json_is_integer(off))
                put(&t, "- %s: %s (%lld)\n", key, str_of(v, "how"),
                    (long long)json_integer_value(off));
            else
                put(&t, "- %s: %s\n", key, str_of(v, "how"));
        }
    }
    t.s[t.len] = '\0';
    return t.s;
}
