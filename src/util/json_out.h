/* json_out: writes a jansson tree as compact JSON text into a buf_t.
 *
 * What every answer parleyd sends goes through: the JSON-RPC envelope's id
 * and result. jansson's own encoder (2.14) checks each dump for cycles with
 * a hash table it allocates per dump and a key it formats with snprintf
 * for every object and array: about a fifth of a trivial tool call's
 * instructions (bench/README.md, "Per-call work of parleyd").
 * Trees parley builds are acyclic; a depth bound stands in for the check.
 *
 * The text is what json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes,
 * byte for byte (tests/unit/test_json_out.c): keys in the object's order
 * (insertion order, as jansson without JSON_SORT_KEYS), strings escaped as
 * jansson escapes them (buf_append_json_escaped), reals formatted by
 * jansson itself. */
#ifndef PARLEY_UTIL_JSON_OUT_H
#define PARLEY_UTIL_JSON_OUT_H

#include <jansson.h>

#include "util/buf.h"

/* Containers nested deeper than this are refused: as deep as jansson's
 * parser reads (JSON_PARSER_MAX_DEPTH), so any tree read from a client can
 * be written back. A cycle ends here too. */
#define JSON_OUT_MAX_DEPTH 2048

/* Appends v's text to b. Returns 0, UV_EINVAL (v is NULL, nests deeper
 * than JSON_OUT_MAX_DEPTH, or holds a real jansson cannot write: NaN or
 * infinity), UV_ENOBUFS (past b's limit) or UV_ENOMEM. On failure b holds
 * part of the text: the caller discards it. */
int json_out_append(buf_t *b, const json_t *v);

#endif
