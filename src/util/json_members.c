/* json_members: several members of an object in one pass (see
 * json_members.h). */
#include "util/json_members.h"

#include <string.h>

void json_members(const json_t *obj, const char *const *names, size_t n, json_t **out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (!json_is_object(obj))
        return;
    json_t *o = (json_t *)obj; /* jansson's iterators take a non-const object */
    for (void *it = json_object_iter(o); it != NULL; it = json_object_iter_next(o, it)) {
        /* A key is a C string: jansson refuses a NUL in one. */
        const char *k = json_object_iter_key(it);
        for (size_t i = 0; i < n; i++) {
            if (k[0] == names[i][0] && strcmp(k, names[i]) == 0) {
                out[i] = json_object_iter_value(it);
                break;
            }
        }
    }
}
