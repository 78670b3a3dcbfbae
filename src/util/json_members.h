/* json_members: several members of a small JSON object found in one pass
 * over it. A message's objects (the JSON-RPC envelope, a request's params)
 * hold a handful of members, and a handler reads most of them: one pass
 * that compares keys costs less than a json_object_get each, which hashes
 * its key (bench/README.md, "Per-call work"). */
#ifndef PARLEY_UTIL_JSON_MEMBERS_H
#define PARLEY_UTIL_JSON_MEMBERS_H

#include <jansson.h>
#include <stddef.h>

/* out[i]: obj's member named names[i] (borrowed), what json_object_get
 * would give: NULL when there is none, or for every name when obj is not
 * an object. names: n distinct names. */
void json_members(const json_t *obj, const char *const *names, size_t n, json_t **out);

#endif
