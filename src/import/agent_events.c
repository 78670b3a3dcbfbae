/* agent_events: transcript lines to events (see agent_events.h). */
#include "import/agent_events.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define AE_TAG "import"

static bool digits(const char *s, size_t n, size_t at, size_t count, int *out)
{
    if (at + count > n)
        return false;
    int v = 0;
    for (size_t i = 0; i < count; i++) {
        if (s[at + i] < '0' || s[at + i] > '9')
            return false;
        v = v * 10 + (s[at + i] - '0');
    }
    *out = v;
    return true;
}

bool agent_events_time_ok(const char *s, size_t n)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec, zh, zm;
    if (!digits(s, n, 0, 4, &y) || n < 10 || s[4] != '-' || !digits(s, n, 5, 2, &mo) ||
        s[7] != '-' || !digits(s, n, 8, 2, &d))
        return false;
    if (y < 1 || mo < 1 || mo > 12 || d < 1)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return false;
    size_t i = 10;
    if (i == n)
        return true;
    if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
        return false;
    if (!digits(s, n, i + 1, 2, &h) || i + 3 >= n || s[i + 3] != ':' ||
        !digits(s, n, i + 4, 2, &mi) || h > 23 || mi > 59)
        return false;
    i += 6;
    if (i < n && s[i] == ':') {
        if (!digits(s, n, i + 1, 2, &sec) || sec > 59)
            return false;
        i += 3;
        if (i < n && s[i] == '.') {
            size_t f = 0;
            while (i + 1 + f < n && s[i + 1 + f] >= '0' && s[i + 1 + f] <= '9')
                f++;
            if (f < 1 || f > 9)
                return false;
            i += 1 + f;
        }
    }
    if (i == n)
        return true;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n)
        return true;
    if (s[i] != '+' && s[i] != '-')
        return false;
    if (!digits(s, n, i + 1, 2, &zh) || zh > 14)
        return false;
    i += 3;
    if (i == n)
        return true;
    if (s[i] == ':')
        i++;
    return digits(s, n, i, 2, &zm) && zm <= 59 && i + 2 == n;
}

/* NULL when ev's timestamp is absent, null or a time; else what it is, for
 * the warning. */
static const char *bad_time(json_t *ev, char *out, size_t cap)
{
    json_t *ts = json_object_get(ev, "timestamp");
    if (ts == NULL || json_is_null(ts))
        return NULL;
    if (json_is_string(ts)) {
        if (agent_events_time_ok(json_string_value(ts), json_string_length(ts)))
            return NULL;
        snprintf(out, cap, "\"%.60s\"%s", json_string_value(ts),
                 json_string_length(ts) > 60 ? "..." : "");
        return out;
    }
    char *text = json_dumps(ts, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, cap, "%.60s", text ? text : "a value");
    free(text);
    return out;
}

json_t *agent_events__line(const char **p, const char *end, const char *path, uint64_t *line,
                           uint64_t *lines, uint64_t *malformed)
{
    const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    if (nl == NULL)
        nl = end;
    size_t n = (size_t)(nl - s);
    *p = nl < end ? nl + 1 : end;
    (*line)++;
    (*lines)++;
    size_t blank = 0;
    while (blank < n && (s[blank] == ' ' || s[blank] == '\t' || s[blank] == '\r'))
        blank++;
    if (blank == n)
        return NULL;
    json_error_t je;
    json_t *v = json_loadb(s, n, 0, &je);
    if (json_is_object(v))
        return v;
    json_decref(v);
    (*malformed)++;
    log_warn(AE_TAG, "%s:%llu: not a JSON object (%s); skipped", path, (unsigned long long)*line,
             v ? "a value that is not an object" : je.text);
    return NULL;
}

char *agent_events_parse(const char *buf, size_t len, const char *path, uint64_t first_line,
                         uint64_t *lines, uint64_t *malformed)
{
    json_t *events = json_array();
    uint64_t line = first_line;
    *lines = *malformed = 0;
    for (const char *p = buf, *end = buf + len; p < end;) {
        json_t *ev = agent_events__line(&p, end, path, &line, lines, malformed);
        if (ev == NULL)
            continue;
        char what[80];
        if (bad_time(ev, what, sizeof what) != NULL) {
            json_decref(ev);
            (*malformed)++;
            log_warn(AE_TAG, "%s:%llu: timestamp %s is not an ISO 8601 time; skipped", path,
                     (unsigned long long)line, what);
            continue;
        }
        json_array_append_new(events,
                              json_pack("{s:I, s:o}", "line", (json_int_t)line, "event", ev));
    }
    char *text = events ? json_dumps(events, JSON_COMPACT) : NULL;
    json_decref(events);
    return text;
}

/* A file not read further (thread pool): warned, counted in read_after. */
