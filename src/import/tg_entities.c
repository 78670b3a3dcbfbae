/* tg_entities: the entities a Telegram Desktop export message keeps (see
 * tg_entities.h): its text_entities, or the parts of an array text, unless
 * every run is plain text; and whether they hold a link. */
#include "import/tg_entities.h"

#include <string.h>
#include <uv.h>

static bool link_entity(const json_t *e)
{
    const char *type = json_string_value(json_object_get(e, "type"));
    return type && (strcmp(type, "link") == 0 || strcmp(type, "text_link") == 0);
}

/* entities @? '$[*] ? (@.type == "link" || @.type == "text_link")' (lax:
 * an array element is unwrapped once). */
static bool entities_link(const json_t *ents)
{
    for (size_t i = 0; i < json_array_size(ents); i++) {
        const json_t *e = json_array_get(ents, i);
        if (json_is_object(e) && link_entity(e))
            return true;
        if (json_is_array(e))
            for (size_t k = 0; k < json_array_size(e); k++)
                if (json_is_object(json_array_get(e, k)) && link_entity(json_array_get(e, k)))
                    return true;
    }
    return false;
}

/* Whether every run of ents is {"type": "plain", "text": ...} (or, with
 * strings, a bare string, as an array text holds them): such a list says no
 * more than the text, which is their concatenation (Telegram Desktop writes
 * one for every message: 146 bytes a message of a generated archive, more
 * than the text itself), so it is not stored. */
static bool entities_plain(const json_t *ents, bool strings)
{
    for (size_t i = 0; i < json_array_size(ents); i++) {
        const json_t *e = json_array_get(ents, i);
        if (strings && json_is_string(e))
            continue;
        const char *type = json_string_value(json_object_get(e, "type"));
        if (!json_is_object(e) || type == NULL || strcmp(type, "plain") != 0 ||
            json_object_size(e) != 1u + (json_object_get(e, "text") != NULL))
            return false;
    }
    return true;
}

int tg_entities_of(const json_t *m, json_t **out, bool *link)
{
    *out = NULL;
    *link = false;
    const json_t *te = json_object_get(m, "text_entities");
    const json_t *t = json_object_get(m, "text");
    if (json_is_array(te)) {
        *link = entities_link(te);
        if (!entities_plain(te, false))
            *out = json_incref((json_t *)te);
        return 0;
    }
    if (!json_is_array(t) || entities_plain(t, true))
        return 0;
    json_t *arr = json_array();
    if (arr == NULL)
        return UV_ENOMEM;
    for (size_t i = 0; i < json_array_size(t); i++) {
        json_t *e = json_array_get(t, i);
        int rc =
            json_is_string(e)
                ? json_array_append_new(arr, json_pack("{s:s,s:O}", "type", "plain", "text", e))
                : json_array_append(arr, e);
        if (rc != 0) {
            json_decref(arr);
            return UV_ENOMEM;
        }
    }
    *link = entities_link(arr);
    *out = arr;
    return 0;
}
